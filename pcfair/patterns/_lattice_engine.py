"""The lattice engine's adapter in the engine table (:mod:`pcfair.patterns.engines`): every
pattern scored by table look-ups, chunk by chunk (:mod:`pcfair.patterns.lattice`), on any
smooth, decomposable circuit whose chunk fits ``max_bytes``; it answers every kind, and
counts at several thresholds in one pass (:meth:`LatticeEngine.census`).

Its cost is estimated from a probe of chunks of the same model and query
(:func:`pcfair.patterns.lattice.probe_cost`, :data:`LATTICE_PROBE_SECONDS`) applied to its
plan; a run is split into chunks of about :data:`CHUNK_SECONDS` each, so its bar moves and its
deadline is met.
"""

from __future__ import annotations

import csv
import math
import os
import sys
import warnings
from dataclasses import dataclass
from typing import Literal

import numpy as np

from pcfair.circuit.circuit import Circuit
from pcfair.errors import LatticeTooLarge, SummariesOmittedWarning
from pcfair.inference.smallest import log_smallest_probability
from pcfair.patterns._arguments import Problem, Request
from pcfair.patterns._engine_base import POOL_START_SECONDS, Estimate, fit_jobs
from pcfair.patterns.lattice import (
    LatticePlan,
    LatticeQuery,
    ScanCost,
    ScanRun,
    final_front,
    make_plan,
    probability_floor,
    probe_cost,
    scan,
    summary_bytes,
    summary_counts,
    summary_patterns,
)
from pcfair.patterns.results import (
    HANDOVER_SECONDS,
    EngineResult,
    power_of_ten_text,
    readable_patterns,
)
from pcfair.patterns.scores import (
    THRESHOLD_ATOL,
    ScoredPattern,
    log_normalizer,
    pattern_marginals,
)

#: Seconds of the lattice's probe (a fifth of the time left, if less).
LATTICE_PROBE_SECONDS = 0.5
#: Target seconds of one lattice chunk (the bar moves, the deadline is checked).
CHUNK_SECONDS = 2.0
#: A lattice engine run asked for by name is probed for its chunking beyond this many
#: patterns or rows of tables (smaller scans take well under a second).
SIZING_POINTS = 50_000_000
SIZING_ROWS = 200_000
#: The most chunks a lattice run is split into.
MAX_CHUNKS = 100_000


def _lattice_query(request: Request) -> LatticeQuery:
    """The lattice's query for a request (the listing and summaries as the kind asks)."""
    kind, k, by_div = request.kind, request.k, request.rank_by == "divergence"
    if kind == "certify":
        return LatticeQuery(deltas=(request.delta,), k_top=1, min_support=request.min_support)
    return LatticeQuery(
        deltas=(request.delta,), min_support=request.min_support,
        listing=kind == "all" and (not request.count_only or request.out is not None),
        k_top=k if kind == "topk" and not by_div else 0,
        k_div=k if kind == "topk" and by_div else 0,
        pareto=kind == "pareto", summaries=kind in ("maximal", "minimal"))


def _workers(request: Request, chunks: int) -> int:
    if request.executor is not None:
        return max(1, chunks)  # unknown; the executor's own
    return max(1, min(request.n_jobs, chunks))


def plan_lattice(problem: Problem, request: Request) -> tuple[LatticePlan | None, str]:
    """The lattice's plan, or None and why (one chunk does not fit ``max_bytes``)."""
    try:
        return make_plan(problem.pc, problem.d, problem.fav, problem.sens,
                         request.max_bytes), ""
    except LatticeTooLarge as exc:
        return None, str(exc)


def _chunking(problem: Problem, request: Request, plan: LatticePlan, seconds: float
              ) -> tuple[ScanCost, int]:
    """The scan's cost model (a probe of about ``seconds``) and the chunks that make each
    about :data:`CHUNK_SECONDS` (never fewer than the plan's; at most 100,000)."""
    pc = problem.pc
    log_z = log_normalizer(float(pc.log_marginal(None)[0]))
    cost = probe_cost(pc, plan, _lattice_query(request), log_z, seconds=seconds)
    chunks = max(plan.num_chunks, cost.chunks_for(plan.num_points, CHUNK_SECONDS))
    return cost, min(chunks, MAX_CHUNKS)


def estimate_lattice(problem: Problem, request: Request, plan: LatticePlan | None = None,
                     why: str = "") -> tuple[Estimate, LatticePlan | None, int]:
    """The lattice's estimate for ``request`` (a probe of :data:`LATTICE_PROBE_SECONDS`), its
    plan (``plan`` if given, else made; None where a chunk does not fit ``max_bytes``, with
    ``why``) and the chunks a run should use."""
    if plan is None and not why:
        plan, why = plan_lattice(problem, request)
    if plan is None:
        return Estimate("lattice", None, True, why, applies=False), None, 1
    left = request.time_left()
    probe = LATTICE_PROBE_SECONDS if left is None else min(LATTICE_PROBE_SECONDS, left / 5)
    cost, chunks = _chunking(problem, request, plan, probe)
    one = cost.seconds(plan.num_points, chunks)
    workers = _workers(request, chunks)
    seconds = one / workers + (POOL_START_SECONDS if workers > 1 else 0.0)
    note = (f"{plan.num_points:,} patterns at {plan.num_points / one:,.0f} a second in "
            f"{chunks:,} chunk(s) (probe)" + (f" on {workers} processes" if workers > 1 else ""))
    if request.kind in ("maximal", "minimal"):
        seconds *= 1.5  # the closures and a second pass for the summaries' scores
    floor = probability_floor(problem.pc)
    if floor:
        low = power_of_ten_text(log_smallest_probability(problem.pc) / math.log(10), 2)
        note += (f"; incomplete: patterns with P(x,y) < {floor:g} are left out (the model's "
                 f"probabilities go down to {low})")
    return Estimate("lattice", seconds, not floor, note), plan, chunks


def run_lattice(problem: Problem, request: Request, plan: LatticePlan | None = None,
                chunks: int | None = None) -> EngineResult:
    """The request by the lattice engine. A certification stops at its first witness chunk
    unless ``request.exact_max``. ``chunks`` (from an estimate) splits the scan into chunks
    of about :data:`CHUNK_SECONDS`; without it a scan that may be long is probed for that
    (:func:`_sizing_chunks`)."""
    pc, d, fav = problem.pc, problem.d, problem.fav
    request = fit_jobs(request)
    kind = request.kind
    query = _lattice_query(request)
    min_chunks = 1
    if not query.summaries:  # the summaries' bitmap is filled chunk by chunk either way
        min_chunks = chunks if chunks is not None else _sizing_chunks(problem, request)
    if plan is not None and min_chunks > plan.num_chunks:
        plan = None  # re-planned finer by scan
    handle = sink = None
    if request.out is not None:
        if plan is None:
            plan = make_plan(pc, d, fav, problem.sens, request.max_bytes,
                             min_chunks=max(min_chunks, 64 if request.n_jobs != 1 else 1))
        handle = open(request.out, "w", newline="", encoding="utf-8")
        sink = _csv_sink(handle, pc, plan, request.delta)
    # chunks whose bound cannot matter are skipped (lattice.chunk_bounds): by the threshold,
    # or by the k-th best |Δ| for top-k by discrimination; never when the exact max is asked
    prune = None if request.exact_max else (
        "topk" if kind == "topk" and request.rank_by != "divergence" else "threshold")
    try:
        run = scan(problem, query, ScanRun(
            max_bytes=request.max_bytes, n_jobs=request.n_jobs, executor=request.executor,
            deadline=request.deadline, progress=request.progress, sink=sink, plan=plan,
            min_chunks=min_chunks, until_witness=kind == "certify" and not request.exact_max,
            handover=0.0 if request.out is not None else HANDOVER_SECONDS, prune=prune))
    except BaseException:  # an error or Ctrl-C: the file is not the answer, keep it aside
        if handle is not None:
            handle.close()
            _set_aside(request.out)
        raise
    if handle is not None:
        handle.close()
    res = run.result
    stats = {"engine": "lattice", **run.stats, "complete": run.complete,
             "set_aside": int(res.rare[0])}
    if kind == "certify":
        found = int(res.counts[0]) > 0
        items = (_lattice_items(pc, run.plan, d, fav, res.top[1][:1], res.top[2][:1])
                 if found else [])
        # every chunk to its end, every pattern scored (no floor)
        exact = (run.stats["chunks_done"] == run.stats["chunks"]
                 and "probability_floor" not in run.stats)
        return EngineResult("lattice", items=items, complete=run.complete or found,
                            max_abs=res.best if (exact or found) else None,
                            max_abs_exact=exact, stats=stats)
    divergences = None
    complete = run.complete
    if kind == "all":
        count = int(res.counts[0])
        listing = res.listing
        left = request.time_left()
        if left is not None and len(listing[0]) * HANDOVER_SECONDS > left:
            # the patterns that can still be handed over in time, in index order; the count
            # keeps every one found, the listing says it is cut
            keep = int(left / HANDOVER_SECONDS)
            stats["patterns_not_listed"] = len(listing[0]) - keep
            listing = tuple(column[:keep] for column in listing)
            complete = False
        items, divergences = ([], None) if request.count_only or request.out is not None \
            else _listed_items(run.plan, listing)
    else:
        if kind == "topk":
            by_div = request.rank_by == "divergence"
            heap = res.div[0] if by_div else res.top
            idx, scores = heap[1], heap[2]
            divergences = heap[0] if by_div else None
        elif kind == "pareto":
            front = final_front(res.fronts[0])
            idx, scores = front[2], front[3]
        else:
            idx, scores = summary_patterns(pc, run, kind, query, n_jobs=request.n_jobs,
                                           executor=request.executor,
                                           scores=not request.count_only)
        count = len(idx)
        items = [] if request.count_only and kind != "topk" else \
            _lattice_items(pc, run.plan, d, fav, idx, scores)
    # a skipped chunk's patterns are at most the threshold: the best is exact when the scan
    # kept a pattern above it (or skipped nothing), else only a lower bound
    exact = run.complete and (not run.stats["chunks_pruned"] or prune == "topk" or count > 0)
    if "probability_floor" in stats:
        # the scan's divergences sum masses that may lie below its floor: the hand-over
        # computes those of the patterns it keeps from log-space queries instead
        divergences = None
    return EngineResult("lattice", items=items, complete=complete, count=count,
                        divergences=divergences, max_abs=res.best if run.complete else None,
                        max_abs_exact=exact, stats=stats)


def _sizing_chunks(problem: Problem, request: Request) -> int:
    """The chunks of a lattice run asked for by name: from a 0.1 s probe where the scan may
    be long enough for its chunking to matter (over :data:`SIZING_POINTS` patterns or
    :data:`SIZING_ROWS` rows of tables, i.e. marginal queries), else 1."""
    plan = make_plan(problem.pc, problem.d, problem.fav, problem.sens, request.max_bytes)
    if plan.num_points <= SIZING_POINTS and plan.chunk_rows() * plan.num_chunks <= SIZING_ROWS:
        return 1
    return _chunking(problem, request, plan, 0.1)[1]


def _lattice_items(pc: Circuit, plan: LatticePlan, d: int, fav: int, idx, scores) -> list:
    """Index-form patterns at global lattice indices, with the scores that selected them in
    the scan and their probabilities from queries."""
    pairs = [plan.decode(int(i)) for i in idx]
    if not pairs:
        return []
    m = pattern_marginals(pc, d, fav, pairs)
    return [ScoredPattern(x, y, float(s), float(p), float(lp))
            for (x, y), s, p, lp in zip(pairs, scores, m.p_xy, m.log_p_xy)]


def _listed_items(plan: LatticePlan, listing: tuple) -> tuple[list, np.ndarray]:
    """Index-form patterns and divergences of a scan's listing (index, Δ, P(x, y),
    divergence arrays)."""
    with np.errstate(divide="ignore"):
        logs = np.log(np.asarray(listing[2], float))
    items = [ScoredPattern(*plan.decode(int(i)), float(s), float(p), float(lp))
             for i, s, p, lp in zip(listing[0], listing[1], listing[2], logs)]
    return items, np.asarray(listing[3], float)


def _set_aside(out) -> None:
    """Rename an unfinished CSV of patterns to ``NAME.partial`` and say so (the rows written
    are real patterns, but not all of them)."""
    partial = f"{out}.partial"
    os.replace(out, partial)
    print(f"pcfair: the run stopped before its end; the patterns written so far are in "
          f"{partial}", file=sys.stderr, flush=True)


def _csv_sink(handle, pc: Circuit, plan: LatticePlan, delta: float):
    """A scan sink writing each chunk's listing as CSV rows (header first); the divergences
    are the scan's, or from log-space queries where the scan has a floor (see
    :func:`run_lattice`)."""
    writer = csv.writer(handle)
    writer.writerow(["x", "y", "score", "probability", "divergence"])
    floored = probability_floor(pc) > 0

    def sink(listing: tuple) -> None:
        items, divs = _listed_items(plan, listing)
        for p in readable_patterns(pc, plan.decision, plan.favorable, items, delta,
                                   None if floored else divs):
            writer.writerow([", ".join(f"{a}={b}" for a, b in p.x.items()),
                             ", ".join(f"{a}={b}" for a, b in p.y.items()),
                             repr(p.score), repr(p.probability), repr(p.divergence)])

    return sink


def lattice_census(problem: Problem, request: Request, deltas: tuple[float, ...],
                   ks: tuple[int, ...], summaries: bool) -> tuple[list[dict], dict]:
    """The rows of :func:`pcfair.pattern_census` (one per δ of ``deltas``) from one pass of
    the lattice, and the frame's attributes (``probability_floor`` where the scan has one).
    Maximal and minimal counts need a bitmap of the lattice: where it exceeds ``max_bytes``
    (or there are more than 15 thresholds) they are None, with a
    :class:`~pcfair.errors.SummariesOmittedWarning`. :class:`~pcfair.errors.LatticeTooLarge`
    where one chunk does not fit ``max_bytes``."""
    pc, d, fav, sens = problem
    kmax = max(ks)
    plan = make_plan(pc, d, fav, sens, request.max_bytes)
    need = summary_bytes(plan, len(deltas))
    want = summaries and need is not None and need <= request.max_bytes
    if summaries and not want:
        why = (f"more than 15 thresholds ({len(deltas)}) in one pass" if need is None else
               f"their bitmap of the lattice ({plan.num_points:,} points) needs "
               f"{need / 2**20:,.0f} MiB, over max_bytes ({request.max_bytes / 2**20:,.0f} MiB)")
        warnings.warn(f"maximal and minimal counts are left out (None): {why}; the other "
                      "columns are computed as usual", SummariesOmittedWarning, stacklevel=5)
    query = LatticeQuery(deltas=deltas, k_top=kmax, k_div=kmax, pareto=True, summaries=want,
                         min_support=request.min_support)
    run = scan(problem, query, ScanRun(max_bytes=request.max_bytes, n_jobs=request.n_jobs,
                                       executor=request.executor, deadline=request.deadline,
                                       progress=request.progress))
    res = run.result
    counts = summary_counts(run) if want else None
    rows = []
    for i, delta in enumerate(deltas):
        row = {"delta": delta, "patterns": int(res.counts[i]), "set_aside": int(res.rare[i])}
        if want:
            row["maximal"], row["minimal"] = (int(counts[k][i]) for k in ("maximal", "minimal"))
        else:
            row["maximal"] = row["minimal"] = None
        row["pareto"] = len(final_front(res.fronts[i])[0])
        top_abs = res.top[0][res.top[0] > delta + THRESHOLD_ATOL]
        for name, values in (("abs_score", top_abs), ("divergence", res.div[i][0])):
            for k in ks:
                row[f"top{k}_{name}"] = float(values[k - 1]) if len(values) >= k else float("nan")
        row["complete"] = run.complete
        rows.append(row)
    attrs = {"engine": "lattice"}
    if "probability_floor" in run.stats:
        attrs["probability_floor"] = run.stats["probability_floor"]
    return rows, attrs


def listing_sample(problem: Problem, request: Request, max_points: int, rng
                   ) -> tuple[np.ndarray, np.ndarray, int, bool]:
    """A uniform random sample of at most ``max_points`` of the patterns of
    ``request.delta``, read straight from the lattice's listing arrays (listing millions of
    patterns as objects would take minutes): their ``P(x, y)``, their ``|Δ|``, how many
    patterns there are and whether the scan finished."""
    run = scan(problem, LatticeQuery(deltas=(request.delta,), listing=True,
                                     min_support=request.min_support),
               ScanRun(n_jobs=request.n_jobs, executor=request.executor,
                       deadline=request.deadline))
    _, score, prob, _ = run.result.listing
    pick = np.sort(rng.choice(len(score), size=min(max_points, len(score)), replace=False))
    return prob[pick], np.abs(score[pick]), len(score), run.complete


@dataclass(frozen=True)
class LatticeEngine:
    """The lattice in the engine table: every kind, where one chunk fits ``max_bytes``; the
    only engine that :attr:`lists_all` (its counts at any threshold come from one pass).

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> from pcfair.patterns._arguments import resolve_problem, resolve_request
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.2, 0.8]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.6, 0.4]), 0.5)]))
    >>> problem = resolve_problem(pc, "d", ["s"], None)
    >>> engine = LatticeEngine()
    >>> engine.can_run(problem, resolve_request("all", 0.1))
    True
    >>> engine.run(problem, resolve_request("all", 0.1, progress=False)).count
    2
    """

    name: str = "lattice"
    family: str = "lattice"
    kinds: tuple[str, ...] = ("certify", "all", "topk", "maximal", "minimal", "pareto")
    lists_all: bool = True

    def can_run(self, problem: Problem, request: Request) -> Literal[True] | str:
        """True, or why not (the kind, or one chunk that does not fit ``max_bytes``)."""
        if request.kind not in self.kinds:
            return f"the lattice does not answer {request.kind!r}"
        plan, why = plan_lattice(problem, request)
        return True if plan is not None else why

    def estimate(self, problem: Problem, request: Request) -> Estimate | None:
        """:func:`estimate_lattice` (a probe of :data:`LATTICE_PROBE_SECONDS`)."""
        return estimate_lattice(problem, request)[0]

    def plan(self, problem: Problem, request: Request) -> tuple[LatticePlan | None, str]:
        """:func:`plan_lattice`: the plan, or None and why."""
        return plan_lattice(problem, request)

    def estimate_planned(self, problem: Problem, request: Request, plan: LatticePlan | None,
                         why: str) -> tuple[Estimate, LatticePlan | None, int]:
        """:func:`estimate_lattice` with the plan made (or refused, ``why``) already."""
        return estimate_lattice(problem, request, plan, why)

    def require(self, problem: Problem, request: Request) -> None:
        """Nothing: a lattice run refuses a chunk over ``max_bytes`` itself
        (:class:`~pcfair.errors.LatticeTooLarge`)."""

    def run(self, problem: Problem, request: Request, plan: LatticePlan | None = None,
            chunks: int | None = None) -> EngineResult:
        """:func:`run_lattice` (``plan`` and ``chunks`` from an estimate, when made)."""
        return run_lattice(problem, request, plan=plan, chunks=chunks)

    def listing_sample(self, problem: Problem, request: Request, max_points: int, rng
                       ) -> tuple[np.ndarray, np.ndarray, int, bool]:
        """:func:`listing_sample`."""
        return listing_sample(problem, request, max_points, rng)

    def census(self, problem: Problem, request: Request, deltas: tuple[float, ...],
               ks: tuple[int, ...], summaries: bool) -> tuple[list[dict], dict]:
        """:func:`lattice_census`."""
        return lattice_census(problem, request, deltas, ks, summaries)
