"""Mitigation by retraining on generated group members (RQ3 of TestSGD, spec Sec. 5).

For the worst rule set R: generate members of R with the sampler, keep those to which the
*original* model gives the label the group receives less often than the rest (the label
that counters the bias), label them so, retrain on the training set plus the first n of
them, and re-score R. n grows along a schedule (50 up to 10% of |D| by default); the setting
with the lowest score whose accuracy does not drop (beyond a tolerance) is kept.

The paper leaves open the schedule, whether retraining fine-tunes or starts afresh (the
caller's ``refit`` decides) and where accuracy is measured (``X_test``/``y_test``, else the
training set).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pcfair.audits._result import AuditResult
from pcfair.errors import DataError, SpecError

from .rules import RuleSet
from .scoring import GroupScore, group_fairness_score
from .specs import resolve_specs
from .streams import GroupSampler, SampleStream, concat_batches, seed_sequence, slice_batch
from .tabular_sampler import TabularPerturbationSampler

__all__ = ["mitigate", "MitigationResult", "default_schedule"]


def default_schedule(n_rows: int, steps: int = 6) -> list[int]:
    """Geometric schedule of added instances from 50 to 10% of ``n_rows``.

    Examples
    --------
    >>> default_schedule(20000)
    [50, 105, 219, 457, 956, 2000]
    """
    hi = max(1, int(0.1 * n_rows))
    lo = min(50, hi)
    return sorted({int(round(v)) for v in np.geomspace(lo, hi, num=steps)})


@dataclass(frozen=True, repr=False)
class MitigationResult(AuditResult):
    """Outcome of :func:`mitigate`.

    Attributes
    ----------
    rule_set : RuleSet
    counter_label : label or None
        Label given to the added instances (None if the kept instances carry several
        non-favourable labels, each its own).
    before, after : GroupScore
        Score of R under the original and the chosen model.
    accuracy_before, accuracy_after : float
    n_added : int
        Instances added for the chosen model (0: the original is kept).
    model : object
        What ``refit`` returned for the chosen setting (the original ``predict`` if 0).
    predict : callable
        The chosen model's predict.
    steps : pandas.DataFrame
        One row per setting tried: ``n_added``, ``score``, ``p_group``, ``p_rest``,
        ``margin``, ``accuracy``, ``eligible``.

    Examples
    --------
    :func:`mitigate` returns one; its example reads ``res.before.score`` and
    ``res.after.score``.
    """

    rule_set: RuleSet
    counter_label: Any
    before: GroupScore
    after: GroupScore
    accuracy_before: float
    accuracy_after: float
    n_added: int
    model: Any
    predict: Callable[[Any], Any]
    steps: pd.DataFrame

    method = "testsgd"

    def to_frame(self) -> pd.DataFrame:
        """One row per setting tried (a copy of :attr:`steps`)."""
        return self.steps.copy()

    def headline(self) -> dict:
        return {"rule_set": self.rule_set.render(), "n_added": self.n_added,
                "score_before": self.before.score, "score_after": self.after.score,
                "accuracy_before": self.accuracy_before, "accuracy_after": self.accuracy_after}

    def _plot(self, ax):
        """The rule set's score and the accuracy against the number of added instances."""
        ax.plot(self.steps["n_added"], self.steps["score"], "o-", label="score f")
        ax.plot(self.steps["n_added"], self.steps["accuracy"], "s--", label="accuracy")
        ax.axvline(self.n_added, color="0.5", lw=1, ls=":", label="chosen")
        ax.set_xlabel("instances added")
        ax.set_title(self.rule_set.render(), fontsize=9)
        ax.legend(fontsize=8)
        return ax


def _as_predict(model: Any) -> Callable[[Any], Any]:
    if hasattr(model, "predict"):
        return model.predict
    if callable(model):
        return model
    raise DataError(f"refit must return a model with .predict or a callable, got {type(model).__name__}")


def _labels(predict: Callable[[Any], Any], batch: Any) -> np.ndarray:
    out = np.asarray(predict(batch))
    if out.ndim == 2:
        out = out[:, 0] if out.shape[1] == 1 else np.argmax(out, axis=1)
    if out.ndim != 1 or out.shape[0] != len(batch):
        raise DataError(f"predict returned shape {out.shape} for {len(batch)} inputs")
    return out


def _accuracy(predict: Callable[[Any], Any], X: Any, y: np.ndarray) -> float:
    return float(np.mean(_labels(predict, X) == y))


def mitigate(
    refit: Callable[[Any, np.ndarray], Any],
    X: Any,
    y: Sequence[Any],
    rule_set: RuleSet,
    *,
    predict: Callable[[Any], Any],
    sampler: GroupSampler | None = None,
    sensitive: Any = None,
    schedule: Sequence[int] | None = None,
    favorable: Any = 1,
    X_test: Any = None,
    y_test: Sequence[Any] | None = None,
    accuracy_tolerance: float = 0.0,
    sample_thr: int = 1000,
    error_thr: float = 0.05,
    confidence: float = 0.95,
    interval: str = "wald",
    max_draw_rounds: int = 50,
    random_state: int | np.random.Generator | None = None,
) -> MitigationResult:
    """Reduce the discrimination against ``rule_set`` by retraining with generated members.

    Parameters
    ----------
    refit : callable
        ``refit(X_augmented, y_augmented)`` trains a model and returns it (an object with
        ``predict``, or a predict callable). Training from scratch or fine-tuning is up to it.
    X : pandas.DataFrame or list of str
        The training inputs D.
    y : array-like
        The training labels.
    rule_set : RuleSet
        R, normally the top-1 rule set of :func:`audit`.
    predict : callable
        The original model's predict.
    sampler : GroupSampler, optional
        A fitted sampler; default: the perturbation sampler fitted on ``X`` and ``sensitive``.
    sensitive : sequence or mapping, optional
        Sensitive features, needed when ``sampler`` is not given.
    schedule : sequence of int, optional
        Numbers of instances to add (default :func:`default_schedule`).
    favorable : label
    X_test, y_test : optional
        Where accuracy is measured (default: the training data).
    accuracy_tolerance : float
        Largest accuracy drop still counted as "not reducing accuracy" (0 in the paper).
    sample_thr, error_thr, confidence, interval
        For re-scoring R with Algorithm 2; every model is scored on the same sample streams.
    max_draw_rounds : int
        Rounds of generation (of ``max(schedule)`` candidates each) before settling for
        fewer instances than the schedule asks for.
    random_state : int, Generator or None

    Returns
    -------
    MitigationResult

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from sklearn.linear_model import LogisticRegression
    >>> from pcfair.audits.testsgd import CategoricalRule, RuleSet
    >>> rng = np.random.default_rng(0)
    >>> X = pd.DataFrame({"g": rng.integers(0, 2, 2000), "x": rng.integers(0, 100, 2000)})
    >>> y = ((X["x"] > 50) & ((X["g"] == 0) | (rng.random(2000) < 0.3))).astype(int).to_numpy()
    >>> refit = lambda X_, y_: LogisticRegression().fit(X_, y_)
    >>> res = mitigate(refit, X, y, RuleSet([CategoricalRule("g", (1,))]), predict=refit(X, y).predict,
    ...                sensitive={"g": "categorical"}, schedule=[50, 200], random_state=0)
    >>> bool(res.after.score <= res.before.score)
    True
    """
    y = np.asarray(y)
    if len(y) != len(X):
        raise DataError(f"X has {len(X)} rows but y has {len(y)} labels")
    if sampler is None:
        if sensitive is None:
            raise SpecError("pass sensitive= (or a fitted sampler) so the sampler knows what to keep fixed")
        if not isinstance(X, pd.DataFrame):
            raise DataError("pass a fitted sampler for text data")
        sampler = TabularPerturbationSampler().fit(X, resolve_specs(X, sensitive))
    schedule = default_schedule(len(X)) if schedule is None else sorted({int(n) for n in schedule})
    if not schedule or schedule[0] < 1:
        raise SpecError(f"schedule must hold positive counts, got {schedule}")
    X_eval, y_eval = (X, y) if X_test is None else (X_test, np.asarray(y_test))
    score_seed, draw_seed = seed_sequence(random_state).spawn(2)
    score_kw = dict(
        favorable=favorable, sample_thr=sample_thr, error_thr=error_thr, confidence=confidence, interval=interval
    )

    def score(pred: Callable[[Any], Any]) -> GroupScore:
        return group_fairness_score(pred, sampler, rule_set, random_state=score_seed, **score_kw)

    before = score(predict)
    acc_before = _accuracy(predict, X_eval, y_eval)
    rows = [dict(n_added=0, score=before.score, p_group=before.p_group, p_rest=before.p_rest,
                 margin=before.margin, accuracy=acc_before, eligible=True)]
    candidates = [(0, before, acc_before, predict, predict)]
    counter = None
    if before.difference != 0:
        # The group gets the favourable label less often: add members the model labels favourable;
        # otherwise add members it labels unfavourable.
        want_favorable = before.difference < 0
        counter = favorable if want_favorable else None
        need = schedule[-1]
        stream = SampleStream(sampler, rule_set, True, draw_seed)
        kept_x, kept_y, total = [], [], 0
        for _ in range(max_draw_rounds):
            batch = stream.take(need)
            labels = _labels(predict, batch)
            keep = (labels == favorable) if want_favorable else (labels != favorable)
            idx = np.flatnonzero(keep)
            if idx.size:
                kept_x.append(batch.iloc[idx].reset_index(drop=True) if isinstance(batch, pd.DataFrame)
                              else [batch[i] for i in idx])
                kept_y.append(labels[idx])
                total += idx.size
            if total >= need:
                break
        if total < need:
            warnings.warn(
                f"only {total} generated members of {rule_set.render()!r} carry the counter label; "
                f"the schedule is cut at {total}", RuntimeWarning, stacklevel=2,
            )
            schedule = [n for n in schedule if n <= total]
        if kept_x:
            added_x = concat_batches(kept_x)
            added_y = np.concatenate(kept_y)
            if not want_favorable and len(set(added_y.tolist())) == 1:
                counter = added_y[0]
            for n_add in schedule:
                X_aug = concat_batches([X.reset_index(drop=True) if isinstance(X, pd.DataFrame) else list(X),
                                        slice_batch(added_x, 0, n_add)])
                y_aug = np.concatenate([y, added_y[:n_add].astype(y.dtype, copy=False)])
                model = refit(X_aug, y_aug)
                pred = _as_predict(model)
                s = score(pred)
                acc = _accuracy(pred, X_eval, y_eval)
                eligible = acc >= acc_before - accuracy_tolerance - 1e-12
                rows.append(dict(n_added=n_add, score=s.score, p_group=s.p_group, p_rest=s.p_rest,
                                 margin=s.margin, accuracy=acc, eligible=eligible))
                if eligible:
                    candidates.append((n_add, s, acc, model, pred))
    best = min(candidates, key=lambda c: (c[1].score, c[0]))
    return MitigationResult(
        rule_set=rule_set, counter_label=counter, before=before, after=best[1],
        accuracy_before=acc_before, accuracy_after=best[2], n_added=best[0], model=best[3],
        predict=best[4], steps=pd.DataFrame(rows),
    )

