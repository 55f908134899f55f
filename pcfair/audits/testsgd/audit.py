"""The TestSGD audit: mine frequent rule sets, score each with Algorithm 2, rank by score."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from pcfair.errors import DataError, SpecError

from pcfair._clock import deadline_from
from pcfair.audits._clock import time_limit_note
from pcfair.audits._model import as_model
from pcfair.audits._result import AuditResult

from .circuit_sampler import PCConditionalSampler
from .errors import SkippedRuleSetWarning
from .mining import frequent_rule_sets
from .rules import RuleSet
from .scoring import GroupScore, _Settings, _settings, score_many
from .specs import resolve_specs
from .streams import CHUNK_SIZE, GroupSampler, seed_sequence
from .tabular_sampler import TabularPerturbationSampler
from .text_sampler import TermReplacementSampler

__all__ = ["audit", "score_rule_sets", "scores_to_frame", "flagged", "RESULT_COLUMNS",
           "TestSGDResult", "circuit_sampler"]

#: Columns of the frame :func:`audit` returns, in order.
RESULT_COLUMNS = (
    "rule_set", "score", "p_group", "p_rest", "margin", "n_samples", "support",
    "difference", "margin_group", "margin_rest", "n_queries", "confidence",
    "interval", "converged", "sampler", "size",
)

FLAG_MODES = ("point", "conservative")


def _warn_skipped(reason: str, texts: list[str]) -> None:
    if texts:
        shown = "; ".join(texts[:3]) + (" ..." if len(texts) > 3 else "")
        warnings.warn(
            f"skipped {len(texts)} rule set(s) {reason}: {shown}", SkippedRuleSetWarning, stacklevel=3
        )


def score_rule_sets(
    rule_sets: Sequence[RuleSet],
    predict: Callable[[Any], Any],
    sampler: GroupSampler,
    *,
    supports: Sequence[float] | None = None,
    favorable: Any = 1,
    sample_thr: int = 1000,
    error_thr: float = 0.05,
    confidence: float = 0.95,
    z: float | None = None,
    interval: str = "wald",
    check_from: int | None = None,
    max_samples: int | None = None,
    batch_size: int | None = None,
    chunk_size: int = CHUNK_SIZE,
    random_state: int | np.random.Generator | None = None,
    progress: bool = False,
) -> list[GroupScore]:
    """Run Algorithm 2 on each rule set, each with its own independent sample streams.

    Rule set ``i`` uses the ``i``-th child of ``random_state``'s seed sequence, so its score
    does not depend on the other rule sets or on ``batch_size``. Rule sets one of whose
    groups cannot be sampled are skipped with a :class:`SkippedRuleSetWarning`.

    Parameters
    ----------
    rule_sets : sequence of RuleSet
    predict, sampler, favorable, sample_thr, error_thr, confidence, z, interval, check_from,
    max_samples, batch_size, chunk_size
        As in :func:`~pcfair.audits.testsgd.group_fairness_score`.
    supports : sequence of float, optional
        Support of each rule set, copied into the results.
    random_state : int, Generator or None
    progress : bool
        Show a tqdm progress bar.

    Returns
    -------
    list of GroupScore
        In the order of ``rule_sets`` (skipped ones left out).

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.audits.testsgd import CategoricalRule, RuleSet, SensitiveSpec
    >>> from pcfair.audits.testsgd.tabular_sampler import TabularPerturbationSampler
    >>> df = pd.DataFrame({"g": ["F", "M"] * 50, "x": range(100)})
    >>> sampler = TabularPerturbationSampler().fit(df, [SensitiveSpec.categorical("g", ["F", "M"])])
    >>> sets = [RuleSet([CategoricalRule("g", (v,))]) for v in ("F", "M")]
    >>> [s.score for s in score_rule_sets(sets, lambda b: (b["g"] == "F").astype(int), sampler)]
    [1.0, 1.0]
    """
    st = _settings(favorable, sample_thr, error_thr, confidence, z, interval, check_from, max_samples)
    return _score(rule_sets, predict, sampler, st, supports=supports, batch_size=batch_size,
                  chunk_size=chunk_size, random_state=random_state, progress=progress)[0]


def _score(
    rule_sets: Sequence[RuleSet],
    predict: Callable[[Any], Any],
    sampler: GroupSampler,
    st: _Settings,
    *,
    supports: Sequence[float] | None,
    batch_size: int | None,
    chunk_size: int,
    random_state: int | np.random.Generator | None,
    progress: bool,
    deadline: float | None = None,
) -> tuple[list[GroupScore], int]:
    """:func:`score_rule_sets` on checked settings, and the number of rule sets that
    ``deadline`` (a :func:`time.time` value) left unscored."""
    rule_sets = list(rule_sets)
    if supports is None:
        supports = [math.nan] * len(rule_sets)
    if len(supports) != len(rule_sets):
        raise DataError(f"{len(supports)} supports given for {len(rule_sets)} rule sets")
    children = seed_sequence(random_state).spawn(len(rule_sets))
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(rule_sets), desc="TestSGD", unit="rule set")
    try:
        results = score_many(
            predict, sampler, rule_sets, children, st, supports=supports, batch_size=batch_size,
            chunk_size=chunk_size, on_done=None if bar is None else (lambda: bar.update(1)),
            deadline=deadline,
        )
    finally:
        if bar is not None:
            bar.close()
    out = [r for r in results if isinstance(r, GroupScore)]
    skipped = [rs.render() for rs, r in zip(rule_sets, results) if isinstance(r, Exception)]
    _warn_skipped("whose group or complement cannot be sampled", skipped)
    return out, sum(r is None for r in results)


def scores_to_frame(scores: Sequence[GroupScore]) -> pd.DataFrame:
    """Rank scores into the audit frame (highest score first; ties: larger support, then text).

    The frame's index holds the :class:`RuleSet` objects (named ``"rules"``); the
    ``rule_set`` column holds their text.

    Examples
    --------
    >>> from pcfair.audits.testsgd.scoring import score_from_counts
    >>> scores_to_frame([score_from_counts(283, 91, 1000)])[["score", "margin"]].round(4).to_dict("records")
    [{'score': 0.192, 'margin': 0.0457}]
    """
    rows = []
    for s in scores:
        d = s.to_dict()
        d["size"] = 0 if s.rule_set is None else len(s.rule_set)
        rows.append(d)
    frame = pd.DataFrame(rows, columns=list(RESULT_COLUMNS))
    frame.index = pd.Index([s.rule_set for s in scores], dtype=object, name="rules")
    if len(frame):
        order = sorted(
            range(len(frame)),
            key=lambda i: (-frame["score"].iat[i], -np.nan_to_num(frame["support"].iat[i], nan=-1.0),
                           str(frame["rule_set"].iat[i])),
        )
        frame = frame.iloc[order]
    frame = frame.astype({"n_samples": np.int64, "n_queries": np.int64, "size": np.int64, "converged": bool})
    return frame


def flagged(results: pd.DataFrame, xi: float, *, mode: str = "point") -> pd.DataFrame:
    """Rule sets reported as discriminated against at tolerance ``xi`` (Def. 2.3).

    Parameters
    ----------
    results : pandas.DataFrame
        The frame from :func:`audit`.
    xi : float
        The tolerance; the paper never fixes a number.
    mode : {"point", "conservative"}
        ``"point"`` (the paper): score > xi. ``"conservative"``: score - margin > xi.

    Examples
    --------
    >>> from pcfair.audits.testsgd.scoring import score_from_counts
    >>> res = scores_to_frame([score_from_counts(283, 91, 1000)])
    >>> len(flagged(res, 0.15)), len(flagged(res, 0.15, mode="conservative"))
    (1, 0)
    """
    if mode not in FLAG_MODES:
        raise SpecError(f"mode={mode!r} is not one of {list(FLAG_MODES)}")
    value = results["score"] if mode == "point" else results["score"] - results["margin"]
    return results[value > xi]


def circuit_sampler(circuit, data: pd.DataFrame) -> PCConditionalSampler:
    """A :class:`PCConditionalSampler` drawing the circuit's variables among ``data``'s
    columns, in the data's representation: a column that holds the codes ``0..k-1`` of a
    circuit variable whose values are labels (a binarized table beside a labelled circuit)
    gets those codes back.

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"sex": ["0 (Male)", "1 (Female)"], "d": [0, 1]})
    >>> pc = b.build(b.product(b.categorical("sex", [0.5, 0.5]), b.categorical("d", [0.3, 0.7])))
    >>> circuit_sampler(pc, pd.DataFrame({"sex": [0, 1]})).decoders
    {'sex': {'0 (Male)': 0, '1 (Female)': 1}}
    """
    names = [str(n) for n in circuit.names]
    columns = [c for c in data.columns if c in names]
    decoders = {}
    for c in columns:
        domain = list(circuit.variables.domains[names.index(c)])
        values = set(pd.unique(data[c].dropna()))
        codes = set(range(len(domain)))
        if values and not values & set(domain) and all(
                isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values) \
                and values <= codes:
            decoders[c] = {label: i for i, label in enumerate(domain)}
    return PCConditionalSampler(circuit, columns=columns, decoders=decoders or None)


class TestSGDResult(AuditResult):
    """The rule sets TestSGD scored, highest score first (:func:`audit`).

    Attributes
    ----------
    table : pandas.DataFrame
        Columns :data:`RESULT_COLUMNS`; the index holds the :class:`RuleSet` objects.
    favorable : object
        The favourable label l.
    model : str
        What was tested.
    complete : bool
        False when a time limit stopped the scoring: the rule sets it caught while sampling
        are scored on the samples drawn so far (``converged`` False), the ones it never
        reached are not in the table; ``notes`` say how many.
    notes : tuple of str
        What the time limit cut.

    Examples
    --------
    >>> from pcfair.audits.testsgd.scoring import score_from_counts
    >>> res = TestSGDResult(scores_to_frame([score_from_counts(283, 91, 1000)]))
    >>> res
    TestSGDResult(method='testsgd', n_rule_sets=1, top='None', top_score=0.192, complete=True; 1 rows)
    >>> len(res.flagged(0.15)), len(res.flagged(0.15, mode="conservative"))
    (1, 0)
    """

    __test__ = False  # not a pytest test class
    method = "testsgd"

    def __init__(self, table: pd.DataFrame, *, favorable: Any = 1, model: str = "",
                 complete: bool = True, notes: Sequence[str] = ()):
        self.table = table
        self.favorable = favorable
        self.model = model
        self.complete = complete
        self.notes = tuple(notes)

    def to_frame(self) -> pd.DataFrame:
        """The scored rule sets (a copy of :attr:`table`)."""
        return self.table.copy()

    def flagged(self, xi: float, *, mode: str = "point") -> pd.DataFrame:
        """The rule sets flagged at tolerance ``xi`` (see :func:`flagged`)."""
        return flagged(self.table, xi, mode=mode)

    def headline(self) -> dict:
        top = self.table.iloc[0] if len(self.table) else None
        return {"n_rule_sets": len(self.table),
                "top": None if top is None else str(top["rule_set"]),
                "top_score": None if top is None else float(top["score"]),
                "complete": self.complete}

    def to_dict(self) -> dict:
        """The headline numbers, the notes of a run a time limit cut, and the rows."""
        out = super().to_dict()
        out["notes"] = list(self.notes)
        return out

    def _plot(self, ax, xi: float | None = None, mode: str = "point", top: int | None = 20):
        """Scores with their margins, one bar per rule set; with ``xi``, flagged ones red
        (:func:`pcfair.plot.testsgd_scores`)."""
        from pcfair.plot import testsgd_scores

        return testsgd_scores(self.table, xi=xi, mode=mode, top=top, ax=ax)


def audit(
    data: pd.DataFrame,
    model: Any = None,
    *,
    sensitive: Any,
    outcome: str | None = None,
    favorable: Any = 1,
    sup_thr: float = 0.05,
    sample_thr: int = 1000,
    error_thr: float = 0.05,
    confidence: float = 0.95,
    bins: int = 10,
    sampler: GroupSampler | None = None,
    random_state: int | np.random.Generator | None = None,
    text_column: str | None = None,
    domains: Mapping[str, tuple[float, float]] | None = None,
    interval: str = "wald",
    z: float | None = None,
    check_from: int | None = None,
    support_mode: str = "conjunction",
    categorical_rules: str = "subsets",
    range_rules: str = "contiguous",
    include_full_range: bool = False,
    min_complement_support: float = 0.0,
    max_values: int = 16,
    batch_size: int | None = None,
    progress: bool = False,
    time_limit: float | None = None,
    deadline: float | None = None,
) -> TestSGDResult:
    """Test a model for subtle group discrimination with TestSGD.

    Mines the frequent rule sets over the sensitive features (Algorithm 1), estimates each
    one's group fairness score f = |P(M(x) = l | R) - P(M(x) = l | not R)| by sequential
    sampling within a margin (Algorithm 2), and ranks them by f.

    Parameters
    ----------
    data : pandas.DataFrame of shape (n_rows, n_columns)
        The dataset D, in the form ``predict`` takes (drop the label column); for text, a
        frame with the documents in ``text_column``.
    model : Circuit, PCClassifier, estimator or callable
        The tested model M (see :func:`pcfair.audits._model.as_model`): its favourable
        decisions are ``P(favorable | x) >= 0.5``. A callable gets a DataFrame with D's
        columns or a list of texts and returns labels (or class scores, reduced by argmax) or
        probabilities of ``favorable``. Stored predictions are refused: TestSGD queries M
        on new inputs.
    sensitive : sequence or mapping
        The sensitive features; see :func:`~pcfair.audits.testsgd.resolve_specs`. For text,
        term-category names (``["gender", "religion"]``) or a mapping name -> terms.
    outcome : str, optional
        The variable a circuit model predicts (its decision variable).
    favorable : label
        l, the favourable label (``True``/1 in the paper's experiments).
    sup_thr : float
        theta, the minimum support of a rule set (5%).
    sample_thr : int
        Minimum samples per group (1000).
    error_thr : float
        Margin the score is estimated within (0.05).
    confidence : float
        Confidence of each group's estimate (0.95, so z = 1.96 and joint 0.9025).
    bins : int
        K, equal-width bins of continuous features (10).
    sampler : GroupSampler or "circuit", optional
        Default: :class:`TabularPerturbationSampler` (structured) or
        :class:`TermReplacementSampler` (text), the paper's samplers.
        :class:`PCConditionalSampler` draws from a probabilistic circuit instead;
        ``"circuit"`` builds one from the model's own circuit (a Circuit or a PCClassifier).
    random_state : int, Generator or None
    text_column : str, optional
        Text data: the column with the documents.
    domains : mapping, optional
        ``(lo, hi)`` of continuous features (default: data min and max); e.g. ``(0, 100)``
        for age gives the paper's round bin edges.
    interval, z, check_from
        See :func:`~pcfair.audits.testsgd.group_fairness_score`.
    support_mode, categorical_rules, range_rules, include_full_range, max_values
        See :func:`~pcfair.audits.testsgd.frequent_rule_sets`.
    min_complement_support : float
        Skip rule sets whose complement is rarer than this in D (0: only empty complements,
        which cannot be sampled, are skipped).
    batch_size : int, optional
        Largest number of inputs per ``predict`` call (default 65536); several rule sets
        share a call. ``predict`` must label each input independently of the others.
    progress : bool
        Show a progress bar.
    time_limit : float, optional
        Seconds of wall-clock time, checked after every call of the model (a block of
        samples for up to 256 rule sets). At the limit, the rule sets being sampled are scored
        on the samples drawn so far (``converged`` False: their margin is wider than
        ``error_thr``), the ones not reached are left out, and the result has ``complete``
        False with a note saying how many.
    deadline : float, optional
        A :func:`time.time` value, overriding ``time_limit`` (one clock for several calls).

    Returns
    -------
    TestSGDResult
        ``.table`` (also ``to_frame()``): one row per scored rule set, highest score first,
        with columns :data:`RESULT_COLUMNS`: ``rule_set`` (text), ``score`` (f), ``p_group``,
        ``p_rest``, ``margin`` (eps), ``n_samples`` (per group), ``support``,
        ``difference`` (p_group - p_rest), ``margin_group``, ``margin_rest``,
        ``n_queries``, ``confidence`` (joint), ``interval``, ``converged``, ``sampler`` and
        ``size``. The index holds the :class:`RuleSet` objects.

    Warns
    -----
    SkippedRuleSetWarning
        Frequent rule sets with an empty (or too rare) complement, or an empty group.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"sex": rng.choice(["F", "M"], 400), "x": rng.integers(0, 10, 400)})
    >>> predict = lambda b: ((b["sex"] == "M") | (b["x"] > 7)).astype(int)
    >>> res = audit(df, predict, sensitive=["sex"], random_state=0).to_frame()
    >>> sorted(res["rule_set"]), bool(res["score"].iloc[0] > 0.6)
    (['sex=F', 'sex=M'], True)
    """
    if not isinstance(data, pd.DataFrame):
        raise DataError(f"data must be a pandas DataFrame, got {type(data).__name__}")
    if not 0.0 <= min_complement_support <= 1.0:
        raise SpecError(f"min_complement_support must be in [0, 1], got {min_complement_support}")
    deadline = deadline_from(time_limit, deadline)
    m = as_model(model, outcome=outcome, favorable=favorable)
    m.require_inputs("TestSGD")
    specs = resolve_specs(data, sensitive, bins=bins, domains=domains, text_column=text_column)
    mined = frequent_rule_sets(
        data, specs, sup_thr=sup_thr, support_mode=support_mode, categorical_rules=categorical_rules,
        range_rules=range_rules, include_full_range=include_full_range, max_values=max_values,
    )
    n = len(data)
    empty_rest = mined["count"].to_numpy() >= n
    rare_rest = (1.0 - mined["support"].to_numpy()) < min_complement_support
    empty_group = mined["count"].to_numpy() == 0
    drop = empty_rest | rare_rest | empty_group
    _warn_skipped("with an empty complement in the data", mined.loc[empty_rest, "text"].tolist())
    _warn_skipped(
        f"with complement support below {min_complement_support}",
        mined.loc[rare_rest & ~empty_rest, "text"].tolist(),
    )
    _warn_skipped("with no member in the data", mined.loc[empty_group & ~empty_rest, "text"].tolist())
    kept = mined[~drop]
    if isinstance(sampler, str):
        if sampler != "circuit":
            raise SpecError(f"sampler={sampler!r}: pass a GroupSampler or 'circuit'")
        if m.circuit is None:
            raise SpecError("sampler='circuit' needs a model with a circuit (a Circuit or a "
                            "fitted PCClassifier)")
        sampler = circuit_sampler(m.circuit, data)
    if sampler is None:
        text = any(s.kind == "term_category" for s in specs)
        sampler = TermReplacementSampler() if text else TabularPerturbationSampler()
    sampler.fit(data, specs)
    st = _settings(True, sample_thr, error_thr, confidence, z, interval, check_from, None)
    scores, unscored = _score(
        kept["rule_set"].tolist(), m.hits, sampler, st, supports=kept["support"].tolist(),
        batch_size=batch_size, chunk_size=CHUNK_SIZE, random_state=random_state,
        progress=progress, deadline=deadline,
    )
    notes = []
    partial = sum(not s.converged and s.n_samples < st.cap for s in scores)  # cut while sampling
    if unscored or partial:
        notes.append(f"{time_limit_note(len(kept) - unscored, len(kept), 'rule sets scored')}; "
                     f"{partial} of them on fewer samples than the stopping rule needs "
                     "(converged False)")
    return TestSGDResult(scores_to_frame(scores), favorable=favorable, model=m.name,
                         complete=not notes, notes=notes)
