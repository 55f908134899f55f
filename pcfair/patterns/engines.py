"""The engine table: which engine answers a pattern request, and how each one runs.

This is the one module that decides. :func:`pcfair.certify`, :func:`pcfair.find_patterns`,
the fair learner's oracle and the CLI hand it a checked :class:`~._arguments.Problem` and
:class:`~._arguments.Request` and get back one :class:`~.results.EngineResult`.

The concrete engines (:data:`ENGINES`), each answering ``run(problem, request)``:

================== ===================================================== =================
name               what it is                                            answers
================== ===================================================== =================
``lattice``        every pattern scored by table look-ups, chunk by      every kind; exact
                   chunk (:mod:`.lattice`); any smooth, decomposable     ``max |Δ|``
                   circuit whose chunk fits ``max_bytes``
``naive_bayes_     compiled branch and bound, O(1) coupled bound         certify, all, topk
search``           (:mod:`.naive_bayes_search`); naive Bayes in ``D``
``tree_search``    compiled branch and bound with the tree bound         certify, all, topk
                   (:mod:`.tree_search`); decision-rooted tree models
``python_search``  branch and bound in Python with the tightest bound    certify, all, topk,
                   that applies (:mod:`.search`); deterministic,         pareto, maximal
                   structured-decomposable circuits
``sample``         the sampling miner (:mod:`.sampling`); never complete witnesses only
================== ===================================================== =================

Names users pass (``engine=``): ``"auto"``, ``"lattice"`` (``"dense"`` is its old name),
``"search"`` (the first of ``naive_bayes_search``, ``tree_search``, ``python_search`` that
applies; ``SearchOptions(compiled=False)`` leaves the compiled ones out) or a concrete name.
Results say the family (``"lattice"`` or ``"search"``) in ``engine`` and the concrete engine
in ``stats["engine"]``.

How ``"auto"`` chooses (:func:`choose`), cheapest complete engine first:

0. **A glance.** Where the lattice has over :data:`GLANCE_POINTS` patterns, the search runs
   for :data:`GLANCE_SECONDS` first: an answer then (most witnesses take a few nodes) is the
   cheapest there is, and no estimate is made.
1. **Estimates.** The lattice's cost comes from a probe of chunks of the same model and
   query (:func:`pcfair.patterns.lattice.probe_cost`, :data:`LATTICE_PROBE_SECONDS`: a
   set-up per chunk and a cost per pattern) applied to its plan, split over the processes
   that will run it; it does not apply where one chunk does not fit ``max_bytes``. A branch
   and bound's cost cannot be known before it runs: it is measured by a *probe*, a run of the
   search itself for :data:`PROBE_SECONDS`; where the lattice would run after it (its
   estimate within the time left), a search's probe runs for :data:`PROBE_SHARE` of that
   estimate if longer, never over half of it: a search that fails its probe then costs at
   most a quarter more than the lattice alone, and one that finishes answers (the tree
   search proves the binarized German CLT fair in seconds, against the lattice's 40).
2. **Quick lattice.** A lattice estimated at most :data:`QUICK_SECONDS` runs at once.
3. **Witness first** (certification). The probe is the search's first-witness mode, or the
   sampler where no search applies: a witness answers "unfair" at once; a search that ends
   without one has proved the model fair.
4. **Probe** (other kinds). A search that finishes its probe has answered.
5. **Exhaustive pass.** The lattice when its estimate is within the time left (or, with no
   ``time_limit``, within :data:`AUTO_LATTICE_SECONDS`); else the search, with the time
   left (its cost unknown, the lattice's estimate longer); else whichever applies.

The choice, its reason and every estimate are in ``stats["choice"]``; a run estimated over
:data:`ANNOUNCE_SECONDS` says its engine, estimate and how to stop it before it starts (on
standard error, when progress is shown). The lattice is split into chunks of about
:data:`CHUNK_SECONDS` each, so its bar moves and its deadline is met.

Every run takes one deadline (:attr:`Request.deadline`, a :func:`time.time` value); each
phase runs with the time left, and a run it stops keeps what it established and is marked
incomplete: never "fair".
"""

from __future__ import annotations

import csv
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial

import numpy as np

from pcfair._progress import show_progress
from pcfair.circuit.circuit import Circuit
from pcfair.errors import LatticeTooLarge, OptionError, PCFairError, SpecError
from pcfair.inference.smallest import log_smallest_probability
from pcfair.patterns._arguments import (
    Problem,
    Request,
    resolve_problem,
    resolve_request,
)
from pcfair.patterns.bounds import NaiveBayesBound, TreeBound, select_bound
from pcfair.patterns.lattice import (
    LatticePlan,
    LatticeQuery,
    ScanCost,
    final_front,
    make_plan,
    probability_floor,
    probe_cost,
    scan,
    summary_bytes,
    summary_patterns,
)
from pcfair.patterns.naive_bayes_search import search_naive_bayes
from pcfair.patterns.parallel import parallel_search
from pcfair.patterns.results import (
    HANDOVER_SECONDS,
    EngineResult,
    power_of_ten_text,
    readable_patterns,
)
from pcfair.patterns.sampling import found_patterns, sample_search
from pcfair.patterns.scores import ScoredPattern, log_normalizer, pattern_marginals
from pcfair.patterns.search import search
from pcfair.patterns.search_types import SearchResult, pattern_key
from pcfair.patterns.summaries import pareto_mask
from pcfair.patterns.tree_search import search_tree

#: Lattices over this many patterns (a tenth of a second or more to scan) let the search try
#: first for :data:`GLANCE_SECONDS`: most witnesses, and many proofs, take it a few nodes.
GLANCE_POINTS = 100_000_000
GLANCE_SECONDS = 0.1
#: A lattice estimated at most this many seconds runs without a probe of the search.
QUICK_SECONDS = 1.0
#: Seconds of the lattice's probe (a fifth of the time left, if less).
LATTICE_PROBE_SECONDS = 0.5
#: The probe of a branch and bound (its witness hunt, for a certification): this many
#: seconds, or this share of the lattice's estimate where that is longer (at most half of it).
PROBE_SECONDS = 2.0
PROBE_SHARE = 0.25
#: Without a ``time_limit``, ``"auto"`` scans the lattice when it is estimated at most this
#: long; beyond it the search, whose cost is unknown but often far less, runs instead.
AUTO_LATTICE_SECONDS = 900.0
#: Runs estimated longer than this say so before they start (when progress is shown).
ANNOUNCE_SECONDS = 30.0
#: Target seconds of one lattice chunk (the bar moves, the deadline is checked).
CHUNK_SECONDS = 2.0
#: A lattice engine run asked for by name is probed for its chunking beyond this many
#: patterns or rows of tables (smaller scans take well under a second).
SIZING_POINTS = 50_000_000
SIZING_ROWS = 200_000
#: The most chunks a lattice run is split into.
MAX_CHUNKS = 100_000
#: Seconds a pool of worker processes takes to start (added to parallel estimates).
POOL_START_SECONDS = 2.0
#: The kinds each concrete engine answers.
SEARCH_KINDS = {"naive_bayes_search": ("certify", "all", "topk"),
                "tree_search": ("certify", "all", "topk"),
                "python_search": ("certify", "all", "topk", "pareto", "maximal")}
#: Names ``engine=`` accepts besides the concrete engines.
FAMILIES = ("auto", "lattice", "search")
#: Old names still accepted.
ALIASES = {"dense": "lattice"}


# ------------------------------------------------------------------------------- estimates
@dataclass(frozen=True)
class Estimate:
    """One engine's answer to "what would you cost": ``seconds`` (None: not known before it
    runs), whether it gives a ``complete`` answer to this request, and how the figure was
    made or why the engine does not apply (``applies`` False)."""

    engine: str
    seconds: float | None
    complete: bool
    note: str
    applies: bool = True

    def to_dict(self) -> dict:
        return {"seconds": self.seconds, "complete": self.complete, "applies": self.applies,
                "note": self.note}


@dataclass
class Choice:
    """What ``"auto"`` decided: the engine, why, and every estimate it weighed."""

    engine: str
    reason: str
    estimates: dict

    def to_dict(self) -> dict:
        return {"engine": self.engine, "reason": self.reason,
                "estimates": {k: e.to_dict() for k, e in self.estimates.items()}}


def check_engine(engine: str, kind: str) -> str:
    """The engine name ``engine=`` gives, aliases resolved; :class:`OptionError` for an unknown
    one, for ``"sample"`` (it never certifies: :func:`pcfair.sample_patterns`) and
    :class:`~pcfair.errors.SpecError` for a kind the engine cannot answer.

    Examples
    --------
    >>> check_engine("dense", "topk")
    'lattice'
    """
    if engine == "sample":
        raise OptionError("sampling never certifies and has its own function: "
                          "use sample_patterns(...)")
    name = ALIASES.get(engine, engine)
    if name not in FAMILIES and name not in SEARCH_KINDS:
        names = ", ".join(repr(e) for e in (*FAMILIES, *SEARCH_KINDS, *ALIASES))
        raise OptionError(f"unknown engine {engine!r} (expected one of {names})")
    if kind == "minimal" and name not in ("auto", "lattice"):
        raise SpecError(
            "minimal patterns need every extension of a pattern checked to discriminate, which "
            "the branch-and-bound bound (an upper bound on |Δ|) cannot prove: use "
            "engine='lattice' (raise max_bytes if the lattice does not fit)")
    if name in SEARCH_KINDS and kind not in SEARCH_KINDS[name]:
        raise OptionError(f"engine {name!r} answers {SEARCH_KINDS[name]}, not {kind!r}")
    return name


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


def _plan(problem: Problem, request: Request) -> tuple[LatticePlan | None, str]:
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
        plan, why = _plan(problem, request)
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


# ---------------------------------------------------------------------------- the searches
def search_engine(problem: Problem, request: Request) -> tuple[str | None, str]:
    """The concrete branch and bound ``engine="search"`` runs for this request (None where
    none applies), and why the others do not."""
    opts = request.search_options
    why = []
    kind = request.kind if request.kind != "maximal" else "all"
    if opts.compiled and kind in SEARCH_KINDS["naive_bayes_search"]:
        for compiled in ("naive_bayes_search", "tree_search"):
            if _compiled_applies(compiled, problem, opts):
                return compiled, ""
        why.append("not naive Bayes or a decision-rooted tree (no compiled search)")
    reason = _python_search_refusal(problem, request)
    if reason is None:
        return "python_search", ""
    return None, "; ".join(why + [reason])


def _compiled_applies(name: str, problem: Problem, opts) -> bool:
    """Whether the compiled search ``name`` recognises the circuit and ``opts`` (the bound
    forced, the naive-Bayes bound switched off) allow it; a naive Bayes is a tree too."""
    if name == "naive_bayes_search":
        return (opts.naive_bayes_bound and opts.bound in ("auto", "naive_bayes")
                and NaiveBayesBound.from_circuit(problem.pc, problem.d, problem.fav)
                is not None)
    return (opts.bound in ("auto", "tree")
            and TreeBound.from_circuit(problem.pc, problem.d, problem.fav) is not None)


def _python_search_refusal(problem: Problem, request: Request, *, raise_it: bool = False
                           ) -> str | None:
    """Why the Python search cannot run (its bound needs a deterministic,
    structured-decomposable circuit), or None; with ``raise_it``, the bound's own error (a
    :class:`~pcfair.errors.StructureError` naming the missing property) is raised instead,
    for a search asked for by name."""
    if request.kind not in SEARCH_KINDS["python_search"]:
        return f"the search does not answer {request.kind!r}"
    opts = request.search_options
    try:
        select_bound(problem.pc, problem.d, problem.fav, opts.bound,
                     naive_bayes=opts.naive_bayes_bound, share=opts.share_bounds)
    except PCFairError as exc:
        if raise_it:
            raise
        return f"no search bound applies: {exc}"
    return None


def _runner(name: str):
    return {"naive_bayes_search": search_naive_bayes, "tree_search": search_tree,
            "python_search": search}[name]


def _search_stats(runs: list[SearchResult], name: str) -> dict:
    return {"engine": name, "nodes": sum(r.nodes for r in runs),
            "bound_evaluations": sum(r.bounds for r in runs),
            "pruned": sum(r.pruned for r in runs), "seconds": sum(r.seconds for r in runs),
            "bound": runs[0].bound if runs else ""}


def _run_split(name: str, problem: Problem, request: Request, mode: str) -> SearchResult:
    """One search ``mode`` by ``name``, split over processes where the engine can be (the
    naive-Bayes search runs here: it takes less time than starting workers)."""
    opts = request.search_options
    jobs = 1 if name == "naive_bayes_search" else request.n_jobs
    executor = None if name == "naive_bayes_search" else request.executor
    return parallel_search(_runner(name), problem.pc, problem.d, problem.fav, problem.sens,
                           request.delta, n_jobs=jobs, executor=executor, mode=mode,
                           k=request.k, rank_by=request.rank_by,
                           time_limit=request.time_left(), progress=request.progress,
                           min_support=request.min_support, ordering=opts.ordering,
                           options=opts)


def _fit_jobs(request: Request) -> Request:
    """The request on one process where the time left would not even start a pool of
    workers (under twice :data:`POOL_START_SECONDS`): the work then gets the whole time."""
    left = request.time_left()
    if request.n_jobs > 1 and left is not None and left < 2 * POOL_START_SECONDS:
        return request.but(n_jobs=1)
    return request


def run_search(name: str, problem: Problem, request: Request) -> EngineResult:
    """The request by the concrete search ``name``."""
    request = _fit_jobs(request)
    kind = request.kind
    if kind == "maximal":
        return _search_maximal(name, problem, request)
    mode = "first" if kind == "certify" else kind
    res = _run_split(name, problem, request, mode)
    items = res.patterns
    if kind == "pareto" and items:
        keep = pareto_mask(np.abs([it.score for it in items]),
                           np.array([it.probability for it in items]),
                           np.ones(len(items), bool))
        items = [it for it, kept in zip(items, keep) if kept]
    complete = res.complete or (kind == "certify" and bool(items))
    return EngineResult("search", items=items, complete=complete,
                        max_abs=res.best if res.best > 0 else None, max_abs_exact=False,
                        stats=_search_stats([res], name))


def _search_maximal(name: str, problem: Problem, request: Request) -> EngineResult:
    """Maximal patterns by search: every pattern, then for each one a search of its
    extensions for another (the Python search's extension mode)."""
    pc, d, fav = problem.pc, problem.d, problem.fav
    res = _run_split(name, problem, request, "all")
    runs, complete = [res], res.complete
    member = {pattern_key(it.x, it.y) for it in res.patterns}
    n_features = pc.num_variables - 1
    items = []
    deadline = request.deadline
    for it in res.patterns:
        if len(it.x) + len(it.y) == n_features:
            continue  # a complete assignment is never maximal
        sub = search(pc, d, fav, problem.sens, request.delta, mode="extension",
                     start=(it.x, it.y), min_support=request.min_support, member=member,
                     deadline=deadline, progress=False, order=res.order,
                     options=request.search_options)
        runs.append(sub)
        if not sub.complete:
            complete = False
            break
        if not sub.patterns:
            items.append(it)
    return EngineResult("search", items=items, complete=complete,
                        stats=_search_stats(runs, name))


def hunt_witness(problem: Problem, request: Request) -> EngineResult:
    """Look for a witness with the sampling miner until the request's deadline (for
    :data:`PROBE_SECONDS` without one); complete only with a witness, which settles a
    certification (its absence says nothing)."""
    t0 = time.perf_counter()
    found = sample_search(problem.pc, problem.d, problem.fav, problem.sens, request.delta,
                          time_limit=(PROBE_SECONDS if request.deadline is None
                                      else request.time_left()), memo=True, random_state=0,
                          min_support=request.min_support).found
    items = found_patterns(found)
    items.sort(key=lambda it: -abs(it.score))
    return EngineResult("sample", items=items[:1], complete=bool(items),
                        max_abs=abs(items[0].score) if items else None,
                        stats={"engine": "sample", "explored": len(found),
                               "seconds": time.perf_counter() - t0})


# ----------------------------------------------------------------------------- the lattice
def run_lattice(problem: Problem, request: Request, plan: LatticePlan | None = None,
                chunks: int | None = None) -> EngineResult:
    """The request by the lattice engine. A certification stops at its first witness chunk
    unless ``request.exact_max``. ``chunks`` (from an estimate) splits the scan into chunks
    of about :data:`CHUNK_SECONDS`; without it a scan that may be long is probed for that
    (:func:`_sizing_chunks`)."""
    pc, d, fav = problem.pc, problem.d, problem.fav
    request = _fit_jobs(request)
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
        run = scan(pc, d, fav, problem.sens, query, max_bytes=request.max_bytes,
                   n_jobs=request.n_jobs, executor=request.executor,
                   time_limit=request.time_left(), progress=request.progress, sink=sink,
                   plan=plan, min_chunks=min_chunks,
                   until_witness=kind == "certify" and not request.exact_max,
                   handover=0.0 if request.out is not None else HANDOVER_SECONDS,
                   prune=prune)
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


# ------------------------------------------------------------------------------- the table
#: The concrete engines: ``ENGINES[name](problem, request)`` answers the request with an
#: :class:`~pcfair.patterns.results.EngineResult` (``"sample"`` only hunts witnesses).
ENGINES: dict[str, Callable[[Problem, Request], EngineResult]] = {
    "lattice": run_lattice,
    "naive_bayes_search": partial(run_search, "naive_bayes_search"),
    "tree_search": partial(run_search, "tree_search"),
    "python_search": partial(run_search, "python_search"),
    "sample": hunt_witness,
}


def answer(problem: Problem, request: Request) -> EngineResult:
    """The request by the engine it names: ``"auto"`` by :func:`choose`, ``"search"`` by
    :func:`search_engine`, a concrete engine as it is. ``stats["choice"]`` says which and
    why. A certification with ``exact_max`` whose engine stopped at a witness (its largest
    ``|Δ|`` a bound) goes on to :func:`_establish_max`."""
    res = _answer(problem, request)
    if request.kind == "certify" and request.exact_max and not res.max_abs_exact:
        res = _establish_max(problem, request, res)
    return res


def _establish_max(problem: Problem, request: Request, res: EngineResult) -> EngineResult:
    """``res`` with the exact largest ``|Δ|``: the top-1 pattern at δ = 0 by the same engine
    name (under ``"auto"`` the lattice where it is cheap, else the search's top-1), with the
    time left. Where that run does not finish, ``max_abs`` stays a lower bound (the larger
    of the two runs') and ``stats["max_abs_note"]`` says why.

    The top-1 at δ = 0 (with the request's min-support) ranges over every defined pattern
    with that support, so its ``|Δ|``, when complete, is the maximum :attr:`max_abs` means;
    no pattern discriminating at δ = 0 means every ``|Δ|`` is 0 (up to the threshold's
    tolerance, :data:`~pcfair.patterns.scores.THRESHOLD_ATOL`)."""
    top = _answer(problem, request.but(kind="topk", k=1, rank_by="discrimination",
                                       delta=0.0, exact_max=False, count_only=False))
    found = abs(top.items[0].score) if top.items else 0.0
    stats = {**res.stats, "max_abs_engine": top.stats.get("engine", top.engine)}
    if top.complete and not top.stats.get("probability_floor"):
        stats["max_abs_seconds"] = top.stats.get("seconds")
        return replace(res, max_abs=found, max_abs_exact=True, stats=stats)
    bound = max(found, res.max_abs or 0.0)
    why = ("left out the patterns below its probability floor" if top.complete else
           "stopped at the time limit")
    stats["max_abs_note"] = (f"the top-1 run for the exact largest |Δ| ({stats['max_abs_engine']}"
                             f") {why}: the value is a lower bound")
    return replace(res, max_abs=bound if bound > 0 else res.max_abs, max_abs_exact=False,
                   stats=stats)


def _answer(problem: Problem, request: Request) -> EngineResult:
    if request.engine == "auto":
        return choose(problem, request)
    name = request.engine
    if request.out is not None and name != "lattice":
        raise OptionError("out= streams the patterns of the lattice engine: use "
                          "engine='lattice' or 'auto'")
    if name == "search":
        name, why = search_engine(problem, request)
        if name is None:
            _python_search_refusal(problem, request, raise_it=True)
            raise SpecError(f"no branch-and-bound search applies: {why}; use "
                            "engine='lattice'")
    elif name == "python_search":
        _python_search_refusal(problem, request, raise_it=True)
    elif name != "lattice" and not _compiled_applies(name, problem, request.search_options):
        raise SpecError(f"engine {name!r} does not apply: the circuit is not one it "
                        "recognises (or SearchOptions forces another bound)")
    res = ENGINES[name](problem, request)
    res.stats["choice"] = Choice(name, f"engine={request.engine!r} was asked for", {}).to_dict()
    return res


@dataclass
class _Decision:
    """What :func:`decide` found: the choice, the lattice's estimate and plan, and the
    probe's result where it already answers the request."""

    choice: Choice
    lattice: Estimate
    plan: LatticePlan | None
    chunks: int = 1
    answered: EngineResult | None = None
    probe: EngineResult | None = None  # the search's unfinished glance or probe


def _probe(name: str, problem: Problem, request: Request, seconds: float, what: str
           ) -> tuple[EngineResult, Estimate, str]:
    """Run the search ``name`` for at most ``seconds`` (no bar): its result, its estimate
    (the time it took where it finished, else unknown) and a phrase for the reason."""
    t1 = time.perf_counter()
    res = run_search(name, problem, request.within(seconds).but(progress=False))
    spent = time.perf_counter() - t1
    nodes = res.stats["nodes"]
    if not res.complete:
        return res, Estimate(name, None, True, f"not finished after a {spent:.2f} s {what} "
                                               f"({nodes:,} nodes)"), ""
    done = "found a witness" if request.kind == "certify" and res.items else "finished"
    return (res, Estimate(name, spent, True, f"finished its {what} ({nodes:,} nodes)"),
            f"the search {done} within its {seconds:.2g} s {what} ({spent:.2f} s)")


def probe_length(lattice_seconds: float | None, search: bool, left: float | None,
                 cap: float | None = None) -> float:
    """Seconds of the probe before the exhaustive pass (step 3–4 of the module docstring):
    :data:`PROBE_SECONDS`, or for a search where the lattice (estimated at
    ``lattice_seconds``; None where it does not apply) would run after it, :data:`PROBE_SHARE`
    of its estimate if longer, at most half of it; never over the time ``left`` or ``cap``.

    Examples
    --------
    >>> probe_length(40.0, True, None), probe_length(40.0, False, None)
    (10.0, 2.0)
    >>> probe_length(3.0, True, None), probe_length(4000.0, True, None)
    (1.5, 2.0)
    """
    probe = PROBE_SECONDS
    budget = AUTO_LATTICE_SECONDS if left is None else left
    if search and lattice_seconds is not None and lattice_seconds <= budget:
        probe = max(probe, PROBE_SHARE * lattice_seconds)
    if lattice_seconds is not None:
        probe = min(probe, lattice_seconds / 2)
    for c in (left, cap):
        if c is not None:
            probe = min(probe, c)
    return probe


def decide(problem: Problem, request: Request, probe_cap: float | None = None) -> _Decision:
    """The choice of ``engine="auto"`` (see the module docstring), after the estimates and
    the probe (at most ``probe_cap`` seconds, when given); where the probe answered, its
    result."""
    name, why = search_engine(problem, request)
    estimates: dict = {}
    plan, unfit = _plan(problem, request)
    probed = None  # the search's latest unfinished run: kept if the time runs out later
    if (name is not None and request.out is None
            and (plan is None or plan.num_points > GLANCE_POINTS)):
        glance = GLANCE_SECONDS if request.deadline is None else \
            min(GLANCE_SECONDS, request.time_left())
        res, estimates[name], reason = _probe(name, problem, request, glance, "glance")
        if res.complete:
            lat = Estimate("lattice", None, plan is not None,
                           "not estimated: the search answered first", applies=plan is not None)
            estimates["lattice"] = lat
            return _Decision(Choice(name, f"{reason}, before any estimate", estimates), lat,
                             plan, answered=res)
        probed = res
    lat, plan, chunks = estimate_lattice(problem, request, plan, unfit)
    estimates["lattice"] = lat

    def decision(engine: str, reason: str, answered: EngineResult | None = None) -> _Decision:
        return _Decision(Choice(engine, reason, estimates), lat, plan, chunks, answered,
                         probed)

    # a lattice that cannot score every pattern (its floor) runs only where nothing else does
    exact = lat.applies and lat.complete
    if exact and lat.seconds <= QUICK_SECONDS:
        return decision("lattice", f"the lattice is estimated at {lat.seconds:.2g} s "
                                   f"(≤ {QUICK_SECONDS:g} s): scanned at once")
    if lat.applies and request.out is not None:
        return decision("lattice", "out= streams the lattice's patterns to a file")
    probe = probe_length(lat.seconds if exact else None, name is not None,
                         request.time_left(), probe_cap)
    if name is None:
        estimates["search"] = Estimate("search", None, False, why, applies=False)
        if request.kind == "certify" and probe > 0:
            hunt = hunt_witness(problem, request.within(probe))
            if hunt.items:
                return decision("sample", f"the sampler found a witness in its {probe:.2g} s "
                                          "hunt (no search applies)", hunt)
    elif probe > 0:
        res, estimates[name], reason = _probe(name, problem, request, probe, "probe")
        if res.complete:
            return decision(name, reason, res)
        probed = res
    left = request.time_left()
    budget = AUTO_LATTICE_SECONDS if left is None else left
    within = ("the time left" if request.deadline is not None else
              f"{AUTO_LATTICE_SECONDS:g} s (no time_limit)")
    if exact and lat.seconds <= budget:
        return decision("lattice", f"the lattice, estimated at {lat.seconds:,.1f} s, is "
                                   f"within {within}" + ("" if name is None else
                                                         "; the search did not finish its "
                                                         "probe"))
    if name is not None:
        lat_text = (f"estimated at {lat.seconds:,.0f} s" if exact else
                    "cannot score every pattern (its floor)" if lat.applies else "does not fit")
        return decision(name, f"the lattice {lat_text}, over {within}: the search runs with "
                              "the time left")
    if lat.applies:
        return decision("lattice", f"the only engine that applies ({why})")
    raise SpecError(f"no engine answers this request: the lattice does not fit "
                    f"({lat.note}); {why}")


def choose(problem: Problem, request: Request) -> EngineResult:
    """``engine="auto"``: :func:`decide`, then run the chosen engine with the time left
    (unless the probe answered); ``stats["choice"]`` says which and why."""
    t0 = time.perf_counter()
    dec = decide(problem, request)
    chosen = dec.choice.engine
    res = dec.answered
    if res is None:
        if chosen == "lattice":
            lat = dec.lattice
            _announce("lattice", lat.seconds, request, lat.note)
            res = run_lattice(problem, request, plan=dec.plan, chunks=dec.chunks)
        else:
            _announce(chosen, None, request, dec.choice.reason)
            res = ENGINES[chosen](problem, request)
            probe = dec.probe
            if probe is not None and not res.complete and \
                    probe.stats["nodes"] > res.stats["nodes"]:
                res = probe  # the time ran out: the probe established more
    res.stats["choice"] = {**dec.choice.to_dict(), "seconds": time.perf_counter() - t0}
    return res


def engine_for_repeats(problem: Problem, request: Request) -> str:
    """The one concrete engine that answers ``request`` on many models of ``problem``'s shape
    (posterior draws): the engine asked for, or under ``"auto"`` the engine :func:`choose`
    runs on ``problem`` itself (its ``stats["engine"]``), or the lattice where that is the
    sampler (a witness hunt, never complete: a repeat must be exact, and the sampler runs only
    where no search applies). The models share the structure, so the engine that answers
    fastest on one applies to all; weighing the engines again for each (the probes) would
    cost most of the time.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.45, 0.55]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.5, 0.5]), 0.5)]))
    >>> problem = resolve_problem(pc, "d", ["s"], None)
    >>> engine_for_repeats(problem, resolve_request("certify", 0.05, progress=False))
    'lattice'
    """
    if request.engine != "auto":
        return request.engine
    res = choose(problem, request.but(progress=False))
    name = res.stats.get("engine", res.engine)
    return "lattice" if name == "sample" else name


def lists_by_lattice(problem: Problem, request: Request) -> bool:
    """Whether ``request`` is answered by the lattice: the engine asked for, or under
    ``"auto"`` the choice of :func:`decide` (estimates and probes, about a second; a probe
    that answers counts as the search's). A caller that needs several results of the same
    model (a report's counts at every δ) then takes them from one lattice pass.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.45, 0.55]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.5, 0.5]), 0.5)]))
    >>> problem = resolve_problem(pc, "d", ["s"], None)
    >>> lists_by_lattice(problem, resolve_request("all", 0.01, engine="search"))
    False
    >>> lists_by_lattice(problem, resolve_request("all", 0.01, progress=False))
    True
    """
    if request.engine != "auto":
        return ALIASES.get(request.engine, request.engine) == "lattice"
    return decide(problem, request.but(progress=False)).choice.engine == "lattice"


def _announce(engine: str, seconds: float | None, request: Request, note: str) -> None:
    """Say what a long run is before it starts (standard error, when progress is shown)."""
    if not show_progress(request.progress):
        return
    if seconds is not None and seconds <= ANNOUNCE_SECONDS:
        return
    cost = f"estimated {seconds:,.0f} s" if seconds is not None else "cost unknown"
    limit = ("" if request.deadline is None else
             f"; stops at the time limit in {request.time_left():,.0f} s")
    print(f"pcfair: the {engine} engine runs ({cost}; {note}){limit}. Stop it with Ctrl-C, or "
          "set time_limit= (--time-limit); a run stopped early says it is incomplete.",
          file=sys.stderr, flush=True)


def estimate_engines(model, decision, sensitive, delta: float, *, kind: str = "certify",
                     favorable=None, k: int = 10, rank_by: str = "discrimination",
                     n_jobs: int = 1, min_support: float = 0.0, max_bytes: int = 1 << 30,
                     probe: float = 0.5) -> dict:
    """What ``engine="auto"`` would weigh for this request, without running it: each engine's
    estimate (the lattice's from a probe of :data:`LATTICE_PROBE_SECONDS`, the search's from
    a glance and a probe of at most ``probe`` seconds), the engine ``"auto"`` would run (or
    that answered during the probes), why, the lattice's size and chunk memory, and this
    call's own ``seconds`` (about a second; ``pcfair certify --dry-run`` prints it).

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.45, 0.55]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.5, 0.5]), 0.5)]))
    >>> estimate_engines(pc, "d", ["s"], 0.05)["engine"]
    'lattice'
    """
    t0 = time.perf_counter()
    problem = resolve_problem(model, decision, sensitive, favorable)
    request = resolve_request(kind, delta, k=k, rank_by=rank_by, n_jobs=n_jobs,
                              min_support=min_support, max_bytes=max_bytes, progress=False)
    dec = decide(problem, request, probe_cap=probe)
    out = dec.choice.to_dict()
    out["lattice_points"] = None if dec.plan is None else dec.plan.num_points
    out["chunk_bytes"] = None if dec.plan is None else dec.plan.chunk_bytes()
    out["summary_bytes"] = None if dec.plan is None else summary_bytes(dec.plan, 3)
    out["seconds"] = time.perf_counter() - t0
    return out
