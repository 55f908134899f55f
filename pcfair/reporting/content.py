"""Everything a report shows, computed once and shared by the HTML and markdown formats.

:func:`gather` runs the public certifier API (``certify``, ``find_patterns``,
``pattern_census``, ``sample_patterns``, ``fairness_metrics``) and keeps the results in a
:class:`ReportContent`. Each step that an engine cannot do (e.g. summaries from the
branch-and-bound engine) is recorded with the engine's reason instead of failing the report.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from pcfair._random import check_random_state
from pcfair.circuit.circuit import Circuit
from pcfair.errors import PCFairError

__all__ = ["FrontPoints", "PatternTable", "ReportContent", "ReportOptionError", "SampledRun",
           "gather"]


class ReportOptionError(PCFairError, ValueError):
    """An option of :func:`pcfair.report` is out of range or of the wrong type."""


#: Pattern tables of the report, in order: title, what a row is, and what the table means
#: (``pc-certifier.md`` §2-3).
TABLES = {
    "top_discrimination": (
        "Top patterns by discrimination score", "top patterns by discrimination score",
        ("The patterns with the largest |Δ| = |P(d | x, y) − P(d | y)|: for the people "
         "described by y, disclosing the sensitive values x moves the probability of the "
         "favourable decision the most.")),
    "top_divergence": (
        "Top patterns by divergence", "top patterns by divergence",
        ("The patterns whose removal would change the model the most: the divergence is the "
         "smallest KL divergence from the model to one where the pattern no longer "
         "discriminates (Choi et al. 2020), so it weighs the score by how many people the "
         "pattern describes.")),
    "maximal": (
        "Maximal patterns", "maximal patterns",
        ("A maximal pattern discriminates but none of its extensions does: once the person "
         "discloses any further feature, whatever its value, the discrimination disappears.")),
    "minimal": (
        "Minimal patterns", "minimal patterns",
        ("A minimal pattern discriminates together with every one of its extensions, and no "
         "smaller pattern does: it stands for a whole region of people who are treated "
         "unfairly whatever else they disclose.")),
    "pareto": (
        "Pareto-optimal patterns", "Pareto-optimal patterns",
        ("A Pareto-optimal pattern is beaten by no other discrimination pattern on both the "
         "score |Δ| and the probability P(x, y): together they trace the trade-off between how "
         "strongly and how many people are affected (strict definition: a pattern that ties "
         "another on probability and loses on score is dominated).")),
}
#: find_patterns arguments of each table (kind, rank_by).
_QUERIES = {"top_discrimination": ("topk", "discrimination"),
            "top_divergence": ("topk", "divergence"), "maximal": ("maximal", "discrimination"),
            "minimal": ("minimal", "discrimination"), "pareto": ("pareto", "discrimination")}
#: Errors an engine raises for a query it cannot answer; the report says why and goes on.
_UNAVAILABLE = (ValueError, NotImplementedError, PCFairError)
SUMMARY_KINDS = ("maximal", "minimal", "pareto")


@dataclass
class PatternTable:
    """One pattern table of the report: every pattern the engine returned, and how many to
    show. ``unavailable`` holds the engine's reason when it could not produce the table."""

    key: str
    title: str
    noun: str
    explanation: str
    patterns: list = field(default_factory=list)
    count: int | None = None
    complete: bool = True
    engine: str | None = None
    limit: int = 25
    unavailable: str | None = None

    @property
    def shown(self) -> list:
        """The rows printed (at most ``limit``)."""
        return self.patterns[: self.limit]


@dataclass
class FrontPoints:
    """The grey cloud of the Pareto-front figure: ``(P(x, y), |Δ|)`` of the discrimination
    patterns at δ (all ``total`` of them, or a uniform random sample when the set is too large
    to list); the figure draws at most ``max_points`` of them."""

    probability: np.ndarray
    abs_score: np.ndarray
    total: int
    complete: bool
    engine: str
    max_points: int

    @property
    def shown(self) -> int:
        """Grey points drawn (a uniform random sample when fewer than ``total``)."""
        return min(len(self.probability), self.max_points, self.total)


@dataclass
class SampledRun:
    """A sampling-miner run shown beside the exact results."""

    patterns: Any  # PatternSet of every pattern the sampler found
    front: list
    topk_found: int | None
    topk_size: int
    front_on_exact: int | None
    exact_front_size: int | None

    @property
    def best_abs_score(self) -> float:
        """Largest |Δ| the sampler found (NaN when it found none)."""
        return max((p.abs_score for p in self.patterns), default=float("nan"))


@dataclass
class ReportContent:
    """Everything :func:`pcfair.report` prints (see :func:`gather`)."""

    title: str
    decision: str
    favorable: Any
    sensitive: list[str]
    delta: float
    deltas: tuple[float, ...]
    k: int
    engine: str
    time_limit: float | None
    circuit: Circuit
    properties: Any
    metrics: Any
    metrics_error: str | None
    certificate: Any
    counts: pd.DataFrame
    tables: dict[str, PatternTable]
    front: FrontPoints | None
    front_unavailable: str | None
    sampled: SampledRun | None
    seconds: float = 0.0
    #: When the witness describes (almost) nobody: the run for one that describes somebody
    #: (:func:`pcfair.patterns.api.supported_witness`).
    supported: Any = None
    #: With ``credible``: the level, the draws, the witness and the top-k patterns with their
    #: credible intervals, and the probability of δ-fairness (:mod:`pcfair.patterns.uncertainty`).
    uncertainty: dict | None = None
    notes: list[str] = field(default_factory=list)
    #: The least ``P(x, y)`` of a pattern counted or listed (0: every pattern).
    min_support: float = 0.0


def _pattern_key(p) -> tuple:
    """Hashable identity of a pattern (its readable ``x`` and ``y``)."""
    return (tuple(sorted((str(k), str(v)) for k, v in p.x.items())),
            tuple(sorted((str(k), str(v)) for k, v in p.y.items())))


def _check_options(delta: float, deltas: Sequence[float], k: int, fmt: str, sampled,
                   max_patterns_per_table: int, max_front_points: int,
                   time_limit: float | None) -> tuple[float, ...]:
    """Validate the report options; returns the sorted thresholds including ``delta``."""
    from pcfair.patterns import PatternSet

    if fmt not in ("html", "markdown"):
        raise ReportOptionError(f"format must be 'html' or 'markdown', not {fmt!r}")
    try:
        values = [float(delta), *(float(x) for x in deltas)]
    except (TypeError, ValueError) as err:
        raise ReportOptionError(f"thresholds must be numbers: {err}") from err
    bad = [x for x in values if not 0 <= x < 1]
    if bad:
        raise ReportOptionError(f"thresholds must be in [0, 1), got {bad[0]}")
    for name, value in (("k", k), ("max_patterns_per_table", max_patterns_per_table),
                        ("max_front_points", max_front_points)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
            raise ReportOptionError(f"{name} must be a positive integer, got {value!r}")
    if time_limit is not None and not float(time_limit) > 0:
        raise ReportOptionError(f"time_limit must be positive seconds, got {time_limit!r}")
    runs = sampled is None or isinstance(sampled, PatternSet) or (
        isinstance(sampled, (int, np.integer)) and not isinstance(sampled, bool) and sampled > 0)
    if not runs:
        raise ReportOptionError("sampled must be a PatternSet from sample_patterns or a "
                                f"positive number of sampling runs, got {sampled!r}")
    return tuple(sorted(set(values)))


def _table(key: str, run, limit: int) -> PatternTable:
    title, noun, explanation = TABLES[key]
    try:
        ps = run()
    except _UNAVAILABLE as err:
        return PatternTable(key, title, noun, explanation, limit=limit,
                            unavailable=f"{type(err).__name__}: {err}")
    return PatternTable(key, title, noun, explanation, patterns=list(ps.patterns),
                        count=ps.count, complete=ps.complete, engine=ps.engine, limit=limit)


def _counts_dense(pc, decision, sensitive, deltas, favorable, engine, time_limit, run_on
                  ) -> pd.DataFrame:
    from pcfair.patterns import pattern_census

    census = pattern_census(pc, decision, sensitive, deltas=deltas, ks=(1,), favorable=favorable,
                            engine=engine, time_limit=time_limit, **run_on)
    frame = census[["delta", "patterns", *SUMMARY_KINDS]].copy()
    # False where the lattice left out the patterns below its probability floor
    frame["complete"] = census["complete"].astype(bool)
    frame["engine"] = census.attrs["engine"]
    return frame


def _counts_search(pc, decision, sensitive, deltas, delta, tables, all_at_delta, kw):
    """Pattern counts per δ by counting searches; summary counts only at the report's δ (from
    its tables, when the engine could produce them)."""
    from pcfair.patterns import find_patterns

    rows = []
    for d in deltas:
        if d == delta and all_at_delta is not None:
            ps = all_at_delta
        else:
            ps = find_patterns(pc, decision, sensitive, d, kind="all", count_only=True, **kw)
        row = {"delta": d, "patterns": ps.count, "complete": ps.complete, "engine": ps.engine}
        for kind in SUMMARY_KINDS:
            t = tables[kind]
            row[kind] = t.count if d == delta and t.unavailable is None else np.nan
            if d == delta and t.unavailable is None and not t.complete:
                row["complete"] = False
        rows.append(row)
    return pd.DataFrame(rows, columns=["delta", "patterns", *SUMMARY_KINDS, "complete",
                                       "engine"])


def _counts_by_lattice(pc, decision, sensitive, delta: float, engine: str, kw: dict) -> bool:
    """Whether the counts per δ come from one lattice census (every count and summary count
    at every δ in one pass) rather than from a counting query per δ: where the engine table
    lists every pattern at the smallest δ by the lattice
    (:func:`pcfair.patterns.engines.lists_by_lattice`)."""
    from pcfair.patterns import engines

    problem, request = engines.question(pc, decision, sensitive, "all", delta,
                                        favorable=kw["favorable"], engine=engine,
                                        time_limit=kw["time_limit"], n_jobs=kw["n_jobs"],
                                        min_support=kw["min_support"], progress=False)
    return engines.lists_by_lattice(problem, request)


def _dense_points(pc, decision, sensitive, delta, favorable, max_points, rng, time_limit,
                  run_on) -> FrontPoints:
    """A uniform random sample of the discrimination patterns of a set too large to list:
    read straight from the lattice engine's listing arrays by the engine table (listing
    millions of patterns as objects would take minutes)."""
    from pcfair.patterns import engines

    problem, request = engines.question(pc, decision, sensitive, "all", delta,
                                        favorable=favorable, engine="lattice",
                                        time_limit=time_limit, **run_on)
    prob, score, count, complete = engines.sample_listing(problem, request, max_points, rng)
    return FrontPoints(prob, score, count, complete, "lattice", max_points)


def _listed_points(ps, max_points: int) -> FrontPoints:
    """Every pattern of a listing (the figure draws a sample of at most ``max_points``)."""
    return FrontPoints(np.array([p.probability for p in ps.patterns], float),
                       np.array([p.abs_score for p in ps.patterns], float), ps.count,
                       ps.complete, ps.engine, max_points)


def _sampled(pc, decision, sensitive, delta, favorable, sampled, random_state, tables):
    from pcfair.patterns import sample_patterns
    from pcfair.patterns.summaries import pareto_mask

    if not hasattr(sampled, "patterns"):
        sampled = sample_patterns(pc, decision, sensitive, delta, favorable=favorable,
                                  runs=int(sampled), random_state=random_state)
    pats = list(sampled.patterns)
    a = np.array([p.abs_score for p in pats], float)
    prob = np.array([p.probability for p in pats], float)
    front = [p for p, keep in zip(pats, pareto_mask(a, prob, np.ones(len(pats), bool))) if keep]
    found = {_pattern_key(p) for p in pats}
    top, exact = tables["top_discrimination"], tables["pareto"]
    top_ok = top.unavailable is None and top.complete
    front_ok = exact.unavailable is None and exact.complete
    exact_front = {_pattern_key(p) for p in exact.patterns}
    return SampledRun(
        patterns=sampled, front=front,
        topk_found=sum(_pattern_key(p) in found for p in top.patterns) if top_ok else None,
        topk_size=len(top.patterns),
        front_on_exact=(sum(_pattern_key(p) in exact_front for p in front) if front_ok
                        else None),
        exact_front_size=len(exact.patterns) if front_ok else None)


def _as_list(sensitive) -> list[str]:
    return [sensitive] if isinstance(sensitive, (str, int)) else list(sensitive)


def _uncertainty(pc, decision, sensitive, delta, cert, supported, k, kw, credible, draws,
                 data, random_state) -> dict:
    """The witness, the supported witness (where there is one) and the top-k with credible
    intervals, and the probability of δ-fairness, from the parameter posterior (the model's
    counts, else ``data`` as its training rows)."""
    from pcfair.patterns import find_patterns
    from pcfair.patterns.uncertainty import fairness_probability, with_intervals

    train = None if pc.counts is not None else data
    top = find_patterns(pc, decision, sensitive, delta, kind="topk", k=k, **kw)
    options = {"credible": credible, "draws": draws, "data": train,
               "random_state": random_state}
    witness = with_intervals(cert, pc, **options).witness
    supported = (None if supported is None or supported.witness is None else
                 with_intervals(supported, pc, **options).witness)
    top = with_intervals(top, pc, **options)
    chance = fairness_probability(pc, decision, sensitive, delta, draws=draws,
                                  favorable=kw["favorable"], data=train, engine=kw["engine"],
                                  time_limit=kw["time_limit"], random_state=random_state,
                                  min_support=kw["min_support"], n_jobs=kw["n_jobs"],
                                  executor=kw["executor"])
    return {"level": credible, "draws": draws, "witness": witness, "supported": supported,
            "top": top.patterns, "fairness": chance}


def gather(pc: Circuit, decision, sensitive, delta: float, *, favorable=None,
           deltas: Sequence[float] = (0.01, 0.05, 0.1), k: int = 10, fmt: str = "html",
           engine: str = "auto", time_limit: float | None = None, sampled=None,
           max_patterns_per_table: int = 25, max_front_points: int = 20_000,
           title: str | None = None, random_state=0, n_jobs: int = 1,
           executor=None, min_support: float = 0.0, data=None, credible: float | None = None,
           draws: int = 200) -> ReportContent:
    """Compute everything a report shows (the arguments are those of :func:`pcfair.report`).

    Returns
    -------
    ReportContent

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.2, 0.8]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.6, 0.4]), 0.5)]))
    >>> c = gather(pc, "d", ["s"], 0.1)
    >>> c.certificate.fair, c.counts["patterns"].tolist(), c.tables["maximal"].count
    (False, [2, 2, 2], 0)
    """
    from pcfair.patterns import certify, fairness_metrics, find_patterns
    from pcfair.patterns.api import supported_witness

    t0 = time.perf_counter()
    all_deltas = _check_options(delta, deltas, k, fmt, sampled, max_patterns_per_table,
                                max_front_points, time_limit)
    delta = float(delta)
    sensitive = _as_list(sensitive)
    rng = check_random_state(random_state)
    run_on = {"n_jobs": n_jobs, "executor": executor, "min_support": min_support}
    if data is not None:  # raw rows, read by the model's recipe
        from pcfair.tables.recipe import model_frame
        from pcfair.patterns.api import as_circuit

        data = model_frame(as_circuit(pc), data)
    cert = certify(pc, decision, sensitive, delta, favorable=favorable, engine=engine,
                   time_limit=time_limit, data=data, **run_on)
    supported = supported_witness(pc, decision, sensitive, delta, cert, favorable=favorable,
                                  engine=engine, data=data, **run_on)
    favorable = cert.favorable  # the value used, named in the report
    try:
        metrics, metrics_error = fairness_metrics(pc, decision, sensitive, favorable,
                                                  random_state=random_state), None
    except _UNAVAILABLE as err:
        metrics, metrics_error = None, f"{type(err).__name__}: {err}"
    # each query goes to the engine table on its own: under "auto" a top-k may be the
    # search's while the minimal patterns are the lattice's (no engine is kept for all)
    kw = {"favorable": favorable, "engine": engine, "time_limit": time_limit, **run_on}

    def query(key):
        kind, rank = _QUERIES[key]
        return lambda: find_patterns(pc, decision, sensitive, delta, kind=kind,
                                     k=k if kind == "topk" else None, rank_by=rank, data=data,
                                     **kw)

    tables = {key: _table(key, query(key), max_patterns_per_table) for key in TABLES}
    dense = _counts_by_lattice(pc, decision, sensitive, min(all_deltas), engine, kw)
    counts = (_counts_dense(pc, decision, sensitive, all_deltas, favorable, engine, time_limit,
                            run_on) if dense else None)
    # a dense set too large to list is sampled from the lattice; anything else is listed
    listable = not dense or int(
        counts.loc[counts["delta"] == delta, "patterns"].iloc[0]) <= max_front_points
    front, front_unavailable, all_run = None, None, None
    if listable:
        try:
            all_run = find_patterns(pc, decision, sensitive, delta, kind="all", **kw)
            front = _listed_points(all_run, max_front_points)
        except _UNAVAILABLE as err:
            front_unavailable = f"{type(err).__name__}: {err}"
    else:
        front = _dense_points(pc, decision, sensitive, delta, favorable, max_front_points, rng,
                              time_limit, run_on)
    if not dense:
        counts = _counts_search(pc, decision, sensitive, all_deltas, delta, tables, all_run, kw)
    run = None if sampled is None else _sampled(pc, decision, sensitive, delta, favorable,
                                                 sampled, random_state, tables)
    uncertainty = None if credible is None else _uncertainty(
        pc, decision, sensitive, delta, cert, supported, k, kw, credible, draws, data,
        random_state)
    return ReportContent(
        title=title or "pcfair fairness report", decision=str(decision), favorable=favorable,
        sensitive=[str(s) for s in sensitive], delta=delta, deltas=all_deltas, k=int(k),
        engine=engine, time_limit=time_limit, circuit=pc, properties=pc.properties(),
        metrics=metrics, metrics_error=metrics_error, certificate=cert, counts=counts,
        tables=tables, front=front, front_unavailable=front_unavailable, sampled=run,
        seconds=time.perf_counter() - t0, supported=supported, uncertainty=uncertainty,
        min_support=float(min_support))
