"""The group fairness score with sequential sampling: Algorithm 2 of TestSGD (Sec. 4.2).

For a rule set R, Algorithm 2 draws members of R and of not-R in pairs, and once more than
``sample_thr`` pairs are drawn it stops at the first count ``num`` whose margin

    eps = z sqrt(p_R (1 - p_R) / num) + z sqrt(p_notR (1 - p_notR) / num)

is at most ``error_thr``, returning f = |p_R - p_notR| (Def. 4.1) with joint confidence
delta^2 (Theorem 4.2). Since sqrt(p (1 - p)) <= 1/2, the Wald rule stops by
``max(sample_thr + 1, ceil((z / error_thr)^2))`` pairs: 1537 for the paper's parameters.

:func:`group_fairness_score` draws the two sample streams in blocks, predicts in batches, and
finds the stopping count from cumulative hit counts; on the same streams it returns exactly
what the one-pair-at-a-time loop, :func:`sequential_group_fairness_score`, returns.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from pcfair._clock import expired
from pcfair.errors import DataError, SpecError

from . import _kernels
from .rules import RuleSet
from .errors import EmptyGroupError
from .streams import CHUNK_SIZE, GroupSampler, SampleStream, concat_batches, seed_sequence, slice_batch

__all__ = [
    "GroupScore",
    "group_fairness_score",
    "sequential_group_fairness_score",
    "score_from_counts",
    "max_sample_size",
    "INTERVALS",
]

INTERVALS = _kernels.INTERVALS

Predict = Callable[[Any], Any]

#: Default largest number of inputs per model call (rule sets are grouped up to it).
DEFAULT_BATCH_ROWS = 65536
#: Most rule sets sharing a model call (bounds the buffered sample plans).
MAX_RULE_SETS_PER_CALL = 256


@dataclass(frozen=True)
class GroupScore:
    """The outcome of Algorithm 2 for one rule set.

    Attributes
    ----------
    rule_set : RuleSet or None
        The group R.
    score : float
        f = |p_group - p_rest| (Def. 4.1).
    difference : float
        p_group - p_rest; negative when the group gets the favourable label less often.
    p_group, p_rest : float
        Estimated rates of the favourable label in R and in not-R (the paper's phi_r, phi_notr).
    margin_group, margin_rest, margin : float
        eps_R, eps_notR and eps = eps_R + eps_notR.
    n_samples : int
        num, samples per group at the stop.
    n_queries : int
        Inputs the model was asked to label (at least 2 * n_samples).
    hits_group, hits_rest : int
        Favourable predictions among the n_samples samples of each group.
    confidence : float
        Joint confidence delta_R * delta_notR (0.9025 at 95% per group).
    interval : str
        ``"wald"`` (the paper), ``"wilson"`` or ``"clopper_pearson"``.
    converged : bool
        False if the sample cap was reached with eps > error_thr (only possible with
        ``max_samples`` or a non-Wald interval).
    sampler : str
        Name of the sampler that drew the samples.
    support : float
        Support of R in D when known (NaN otherwise).

    Examples
    --------
    >>> s = score_from_counts(283, 91, 1000)
    >>> s.score, s.n_samples, s.confidence
    (0.19199999999999998, 1000, 0.9025)
    """

    rule_set: RuleSet | None
    score: float
    difference: float
    p_group: float
    p_rest: float
    margin_group: float
    margin_rest: float
    margin: float
    n_samples: int
    n_queries: int
    hits_group: int
    hits_rest: int
    confidence: float
    interval: str
    converged: bool
    sampler: str
    support: float = math.nan

    def to_dict(self) -> dict[str, Any]:
        """Plain-data view, with the rule set rendered as text."""
        out = asdict(self)
        out["rule_set"] = None if self.rule_set is None else self.rule_set.render()
        return out


@dataclass(frozen=True)
class _Settings:
    favorable: Any
    sample_thr: int
    error_thr: float
    confidence: float
    z: float
    interval: str
    first_check: int
    cap: int


def max_sample_size(sample_thr: int = 1000, error_thr: float = 0.05, z: float = 1.96) -> int:
    """The Wald stopping rule's worst case, ``max(sample_thr + 1, ceil((z / error_thr)^2))``.

    Examples
    --------
    >>> max_sample_size(1000, 0.05, 1.96)
    1537
    """
    return max(int(sample_thr) + 1, math.ceil((z / error_thr) ** 2))


def _settings(
    favorable: Any,
    sample_thr: int,
    error_thr: float,
    confidence: float,
    z: float | None,
    interval: str,
    check_from: int | None,
    max_samples: int | None,
) -> _Settings:
    if interval not in INTERVALS:
        raise SpecError(f"interval={interval!r} is not one of {list(INTERVALS)}")
    if int(sample_thr) != sample_thr or sample_thr < 0:
        raise SpecError(f"sample_thr must be a non-negative integer, got {sample_thr}")
    if not (error_thr > 0):
        raise SpecError(f"error_thr must be positive, got {error_thr}")
    if not (0.0 < confidence < 1.0):
        raise SpecError(f"confidence must be in (0, 1), got {confidence}")
    zz = _kernels.z_value(confidence) if z is None else float(z)
    if not (zz > 0):
        raise SpecError(f"z must be positive, got {z}")
    first = int(sample_thr) + 1 if check_from is None else int(check_from)
    if first < 1:
        raise SpecError(f"check_from must be >= 1, got {check_from}")
    bound = max(first, math.ceil((zz / error_thr) ** 2))
    if max_samples is None:
        cap = bound if interval == "wald" else max(first, 2 * bound)
    else:
        cap = int(max_samples)
        if cap < first:
            raise SpecError(f"max_samples={max_samples} is below the first check at {first} samples")
    return _Settings(favorable, int(sample_thr), float(error_thr), float(confidence), zz, interval, first, cap)


def _as_hits(result: Any, expected: int, favorable: Any) -> np.ndarray:
    """Turn a model's output into favourable-label hits (argmax over class scores if 2-D)."""
    arr = np.asarray(result)
    if arr.ndim == 2:
        arr = arr[:, 0] if arr.shape[1] == 1 else np.argmax(arr, axis=1)
    if arr.ndim != 1:
        raise DataError(f"predict must return one label per input, got an array of shape {arr.shape}")
    if arr.shape[0] != expected:
        raise DataError(f"predict returned {arr.shape[0]} labels for {expected} inputs")
    if arr.size and isinstance(favorable, str) != isinstance(arr[0], (str, np.str_)):
        raise DataError(
            f"predict returns labels such as {arr[0]!r}, which cannot equal favorable={favorable!r}"
        )
    return np.asarray(arr == favorable, dtype=bool)


def predict_hits(predict: Predict, batch: Any, favorable: Any, batch_size: int | None = None) -> np.ndarray:
    """Favourable-label hits of ``predict`` on ``batch``, calling it on slices of ``batch_size``."""
    n = len(batch)
    if batch_size is None or n <= batch_size:
        return _as_hits(predict(batch), n, favorable)
    parts = [
        _as_hits(predict(slice_batch(batch, i, min(i + batch_size, n))), min(i + batch_size, n) - i, favorable)
        for i in range(0, n, batch_size)
    ]
    return np.concatenate(parts)


def score_from_counts(
    hits_group: int,
    hits_rest: int,
    num: int,
    *,
    z: float = 1.96,
    interval: str = "wald",
    confidence: float = 0.95,
    rule_set: RuleSet | None = None,
    n_queries: int | None = None,
    converged: bool = True,
    sampler: str = "",
    support: float = math.nan,
) -> GroupScore:
    """Score, rates and margins from favourable counts among ``num`` samples per group.

    This is lines 9-11 and 17 of Algorithm 2.

    Examples
    --------
    >>> s = score_from_counts(283, 91, 1000)          # the paper's Census example
    >>> round(s.margin_group, 6), round(s.margin_rest, 6), round(s.score, 3)
    (0.02792, 0.017826, 0.192)
    """
    if interval not in INTERVALS:
        raise SpecError(f"interval={interval!r} is not one of {list(INTERVALS)}")
    if num < 1 or not (0 <= hits_group <= num) or not (0 <= hits_rest <= num):
        raise SpecError(f"counts ({hits_group}, {hits_rest}) must lie in [0, num={num}], num >= 1")
    eps = _kernels.margins(
        np.array([hits_group, hits_rest]), np.array([num, num]), interval=interval, z=z, confidence=confidence
    )
    p_g, p_r = hits_group / num, hits_rest / num
    return GroupScore(
        rule_set=rule_set,
        score=abs(p_g - p_r),
        difference=p_g - p_r,
        p_group=p_g,
        p_rest=p_r,
        margin_group=float(eps[0]),
        margin_rest=float(eps[1]),
        margin=float(eps[0] + eps[1]),
        n_samples=int(num),
        n_queries=int(2 * num if n_queries is None else n_queries),
        hits_group=int(hits_group),
        hits_rest=int(hits_rest),
        confidence=confidence**2,
        interval=interval,
        converged=converged,
        sampler=sampler,
        support=support,
    )


def _streams(sampler: GroupSampler, rule_set: RuleSet, random_state: Any, chunk_size: int):
    seq_group, seq_rest = seed_sequence(random_state).spawn(2)
    return (
        SampleStream(sampler, rule_set, True, seq_group, chunk_size=chunk_size),
        SampleStream(sampler, rule_set, False, seq_rest, chunk_size=chunk_size),
    )


def _next_target(n: int, hits_g: int, hits_r: int, st: _Settings) -> int:
    """How many samples per group to have after the next block: the Wald rule's estimate."""
    pg, pr = hits_g / n, hits_r / n
    need = (st.z / st.error_thr) ** 2 * (math.sqrt(pg * (1 - pg)) + math.sqrt(pr * (1 - pr))) ** 2
    return min(st.cap, max(n + 32, math.ceil(need * 1.02) + 1))


class _Run:
    """The state of Algorithm 2 on one rule set while blocks of samples are labelled."""

    def __init__(self, sampler: GroupSampler, rule_set: RuleSet, random_state: Any, st: _Settings,
                 chunk_size: int, support: float):
        self.rule_set = rule_set
        self.support = support
        self.stream_group, self.stream_rest = _streams(sampler, rule_set, random_state, chunk_size)
        self.hits_group = np.zeros(0, dtype=bool)
        self.hits_rest = np.zeros(0, dtype=bool)
        self.n = 0
        self.target = st.first_check
        self.queries = 0
        self.result: GroupScore | None = None
        self.error: Exception | None = None

    def update(self, hits_group: np.ndarray, hits_rest: np.ndarray, st: _Settings, sampler_name: str) -> None:
        self.queries += hits_group.size + hits_rest.size
        self.hits_group = np.concatenate([self.hits_group, hits_group])
        self.hits_rest = np.concatenate([self.hits_rest, hits_rest])
        cum_g, cum_r = np.cumsum(self.hits_group), np.cumsum(self.hits_rest)
        stop = _kernels.first_stop(
            cum_g, cum_r, max(self.n + 1, st.first_check), self.target,
            error_thr=st.error_thr, interval=st.interval, z=st.z, confidence=st.confidence,
        )
        if stop or self.target >= st.cap:
            num = stop or self.target
            self.result = score_from_counts(
                int(cum_g[num - 1]), int(cum_r[num - 1]), num,
                z=st.z, interval=st.interval, confidence=st.confidence, rule_set=self.rule_set,
                n_queries=self.queries, converged=bool(stop), sampler=sampler_name, support=self.support,
            )
            return
        self.n = self.target
        self.target = _next_target(self.n, int(cum_g[-1]), int(cum_r[-1]), st)

    def cut(self, st: _Settings, sampler_name: str) -> None:
        """Score the samples drawn so far (a time limit stopped the sampling): the result
        has ``converged`` False; a run with no labelled sample keeps no result."""
        num = self.hits_group.size
        if num == 0 or self.error is not None:
            return
        self.result = score_from_counts(
            int(self.hits_group.sum()), int(self.hits_rest.sum()), num,
            z=st.z, interval=st.interval, confidence=st.confidence, rule_set=self.rule_set,
            n_queries=self.queries, converged=False, sampler=sampler_name, support=self.support,
        )


def _materialize(sampler: GroupSampler, blocks: list) -> Any:
    """One batch of every block's group samples then rest samples, run after run."""
    plans_only = all(run.stream_group.uses_plans and run.stream_rest.uses_plans for run, *_ in blocks)
    if plans_only and getattr(sampler, "plans_need_rule_set", True) is False:
        return sampler.materialize(None, np.concatenate([p for _, _, pg, pr in blocks for p in (pg, pr)]))
    parts = []
    for run, _, pg, pr in blocks:
        for stream, raw in ((run.stream_group, pg), (run.stream_rest, pr)):
            parts.append(sampler.materialize(run.rule_set, raw) if stream.uses_plans else raw)
    return concat_batches(parts)


def score_many(
    predict: Predict,
    sampler: GroupSampler,
    rule_sets: Sequence[RuleSet],
    seeds: Sequence[Any],
    st: _Settings,
    *,
    supports: Sequence[float] | None = None,
    batch_size: int | None = None,
    chunk_size: int = CHUNK_SIZE,
    on_done: Callable[[], None] | None = None,
    deadline: float | None = None,
) -> list[GroupScore | Exception | None]:
    """Run Algorithm 2 on many rule sets, labelling blocks of several rule sets per model call.

    Rule set ``i`` draws from streams seeded by ``seeds[i]``, so its result does not depend
    on which rule sets share a model call (provided ``predict`` labels each input on its
    own). Returns, per rule set, its :class:`GroupScore` or the :class:`EmptyGroupError`
    that stopped it. ``deadline`` (a :func:`time.time` value) is checked after every model
    call: a rule set it catches while sampling is scored on the samples drawn so far
    (``converged`` False, its margin wider than ``error_thr``), and one never sampled is
    None.
    """
    rows = DEFAULT_BATCH_ROWS if batch_size is None else int(batch_size)
    if rows < 1:
        raise SpecError(f"batch_size must be >= 1, got {batch_size}")
    per_wave = min(MAX_RULE_SETS_PER_CALL, max(1, rows // (2 * st.first_check)))
    name = getattr(sampler, "name", type(sampler).__name__)
    supports = [math.nan] * len(rule_sets) if supports is None else list(supports)
    results: list[GroupScore | Exception] = []
    for start in range(0, len(rule_sets), per_wave):
        runs = [
            _Run(sampler, rule_sets[i], seeds[i], st, chunk_size, float(supports[i]))
            for i in range(start, min(start + per_wave, len(rule_sets)))
        ]
        active = runs
        while active:
            blocks = []
            for run in active:
                need = run.target - run.n
                try:
                    blocks.append((run, need, run.stream_group.take_raw(need), run.stream_rest.take_raw(need)))
                except EmptyGroupError as err:
                    run.error = err
            if blocks:
                hits = predict_hits(predict, _materialize(sampler, blocks), st.favorable, batch_size)
                offset = 0
                for run, need, _, _ in blocks:
                    run.update(hits[offset : offset + need], hits[offset + need : offset + 2 * need], st, name)
                    offset += 2 * need
            for run in active:
                if (run.result is not None or run.error is not None) and on_done is not None:
                    on_done()
            active = [r for r in active if r.result is None and r.error is None]
            if active and expired(deadline):
                for run in active:
                    run.cut(st, name)
                break
        results.extend(r.result if r.result is not None else r.error for r in runs)
        if expired(deadline) and start + per_wave < len(rule_sets):
            results.extend([None] * (len(rule_sets) - start - per_wave))
            break
    return results


def group_fairness_score(
    predict: Predict,
    sampler: GroupSampler,
    rule_set: RuleSet,
    *,
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
    support: float = math.nan,
) -> GroupScore:
    """Estimate the group fairness score of ``rule_set`` with Algorithm 2 (batched).

    Parameters
    ----------
    predict : callable
        Maps a batch (a DataFrame, or a list of texts) to labels, or to class scores of
        shape (n, q) whose argmax column is the label.
    sampler : GroupSampler
        A fitted sampler (e.g. :class:`TabularPerturbationSampler`).
    rule_set : RuleSet
        The group R.
    favorable : label
        l, the favourable label.
    sample_thr : int
        Minimum samples per group; the stopping rule is first checked at ``sample_thr + 1``.
    error_thr : float
        Stop once eps = eps_R + eps_notR <= error_thr.
    confidence : float
        delta, the confidence of each group's estimate (joint confidence delta^2).
    z : float, optional
        The normal quantile; default: :func:`~pcfair.audits.testsgd._kernels.z_value` of
        ``confidence`` (1.96 at 0.95, as in the paper).
    interval : {"wald", "wilson", "clopper_pearson"}
        ``"wald"`` is the paper's Eq. 7; the other two are labelled extensions.
    check_from : int, optional
        First sample count at which the rule is checked (default ``sample_thr + 1``, as in
        Algorithm 2; the paper's worked example checks at ``sample_thr``).
    max_samples : int, optional
        Cap on samples per group (default: the Wald bound; twice it for the extensions).
    batch_size : int, optional
        Largest number of inputs per call to ``predict`` (default 65536).
    chunk_size : int
        Samples a stream draws per sampler call (part of the stream's definition).
    random_state : int, Generator or None
        Seeds the two sample streams.
    support : float
        Support of R, copied into the result.

    Returns
    -------
    GroupScore

    Raises
    ------
    EmptyGroupError
        R or not-R has no row of D to seed it.

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.audits.testsgd import CategoricalRule, RuleSet, SensitiveSpec
    >>> from pcfair.audits.testsgd.tabular_sampler import TabularPerturbationSampler
    >>> df = pd.DataFrame({"g": ["F", "M"] * 50, "x": range(100)})
    >>> sampler = TabularPerturbationSampler().fit(df, [SensitiveSpec.categorical("g", ["F", "M"])])
    >>> R = RuleSet([CategoricalRule("g", ("F",))])
    >>> s = group_fairness_score(lambda b: (b["g"] == "M").astype(int), sampler, R, random_state=0)
    >>> s.score, s.n_samples, s.margin
    (1.0, 1001, 0.0)
    """
    st = _settings(favorable, sample_thr, error_thr, confidence, z, interval, check_from, max_samples)
    out = score_many(
        predict, sampler, [rule_set], [random_state], st, supports=[support],
        batch_size=batch_size, chunk_size=chunk_size,
    )[0]
    if isinstance(out, Exception):
        raise out
    return out


def sequential_group_fairness_score(
    predict: Predict,
    sampler: GroupSampler,
    rule_set: RuleSet,
    *,
    favorable: Any = 1,
    sample_thr: int = 1000,
    error_thr: float = 0.05,
    confidence: float = 0.95,
    z: float | None = None,
    interval: str = "wald",
    check_from: int | None = None,
    max_samples: int | None = None,
    chunk_size: int = 1,
    random_state: int | np.random.Generator | None = None,
    support: float = math.nan,
) -> GroupScore:
    """Algorithm 2 as the paper writes it: one pair of samples and two model calls per step.

    A reference for :func:`group_fairness_score` (same parameters). With the same
    ``random_state`` and ``chunk_size`` both return the same result; the default
    ``chunk_size=1`` also draws every sample with its own sampler call, as the paper's loop
    does.

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.audits.testsgd import CategoricalRule, RuleSet, SensitiveSpec
    >>> from pcfair.audits.testsgd.tabular_sampler import TabularPerturbationSampler
    >>> df = pd.DataFrame({"g": ["F", "M"] * 50, "x": range(100)})
    >>> sampler = TabularPerturbationSampler().fit(df, [SensitiveSpec.categorical("g", ["F", "M"])])
    >>> R = RuleSet([CategoricalRule("g", ("F",))])
    >>> sequential_group_fairness_score(lambda b: [1] * len(b), sampler, R, sample_thr=10).n_samples
    11
    """
    st = _settings(favorable, sample_thr, error_thr, confidence, z, interval, check_from, max_samples)
    stream_g, stream_r = _streams(sampler, rule_set, random_state, chunk_size)
    hits_g = hits_r = num = 0
    eps = math.inf
    converged = True
    while eps > st.error_thr:
        x = stream_g.take(1)
        x_rest = stream_r.take(1)
        hits_g += int(_as_hits(predict(x), 1, st.favorable)[0])
        hits_r += int(_as_hits(predict(x_rest), 1, st.favorable)[0])
        num += 1
        if num >= st.first_check:
            m = _kernels.margins(
                np.array([hits_g, hits_r]), np.array([num, num]),
                interval=st.interval, z=st.z, confidence=st.confidence,
            )
            eps = float(m[0] + m[1])
            if eps <= st.error_thr:
                break
        if num >= st.cap:
            converged = False
            break
    return score_from_counts(
        hits_g, hits_r, num, z=st.z, interval=st.interval, confidence=st.confidence,
        rule_set=rule_set, n_queries=2 * num, converged=converged,
        sampler=getattr(sampler, "name", type(sampler).__name__), support=support,
    )
