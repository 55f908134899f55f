"""The engine table: which engine answers a pattern request, and how each one runs.

This is the one module that decides. :func:`pcfair.certify`, :func:`pcfair.find_patterns`,
the fair learner's oracle and the CLI hand it a checked :class:`~._arguments.Problem` and
:class:`~._arguments.Request` and get back one :class:`~.results.EngineResult`.

The concrete engines (:data:`ENGINES`, name → adapter): each adapter
(:class:`~._engine_base.Engine`) says which ``kinds`` it answers, whether it ``can_run`` a
request (True, or the reason it cannot), what it would cost (``estimate``) and answers it
(``run(problem, request)``). The lattice's adapter is in :mod:`._lattice_engine`, the searches'
in :mod:`._search_engine`, the sampler's in :mod:`._sample_engine`; this module keeps the
names, the table and the ``auto`` policy. A new engine is one adapter and one line of the
table.

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
``sample``         the sampling miner (:mod:`.sampling`); never complete a witness hunt;
                   (:func:`pcfair.sample_patterns`, ``auto``'s witness   all, topk, pareto
                   hunt where no search applies)
================== ===================================================== =================

Counts at several thresholds (:func:`pcfair.pattern_census`, :func:`census`) are one pass of
the lattice, or, for ``engine="search"`` and under ``"auto"`` where one chunk of the lattice
does not fit ``max_bytes``, searches (:func:`~._search_engine.search_census`). Whether an
engine's counts are that cheap is :func:`lists_all`.

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
   query (:func:`pcfair.patterns.lattice.probe_cost`,
   :data:`~._lattice_engine.LATTICE_PROBE_SECONDS`: a
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
:data:`~._lattice_engine.CHUNK_SECONDS` each, so its bar moves and its deadline is met.

Every run takes one deadline (:attr:`Request.deadline`, a :func:`time.time` value); each
phase runs with the time left, and a run it stops keeps what it established and is marked
incomplete: never "fair".
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, replace

from pcfair._progress import show_progress
from pcfair.errors import OptionError, SpecError
from pcfair.patterns._arguments import (
    Problem,
    Request,
    resolve_problem,
    resolve_request,
)
from pcfair.patterns._engine_base import Engine, Estimate
from pcfair.patterns._lattice_engine import LatticeEngine
from pcfair.patterns._sample_engine import SampleEngine
from pcfair.patterns._search_engine import (
    NAIVE_BAYES_SEARCH,
    PYTHON_SEARCH,
    TREE_SEARCH,
    search_census,
)
from pcfair.patterns.lattice import LatticePlan, summary_bytes
from pcfair.patterns.results import EngineResult

__all__ = ["ALIASES", "ENGINES", "ENGINE_NAMES", "FAMILIES", "GLANCE_SECONDS", "PROBE_SECONDS",
           "PROBE_SHARE", "QUICK_SECONDS", "SEARCH_KINDS", "answer", "census", "check_engine",
           "decide", "engine_for_repeats", "estimate_engines", "is_sampler", "lists_all",
           "lists_by_lattice", "probe_length", "question", "sample_listing", "search_engine"]

#: Lattices over this many patterns (a tenth of a second or more to scan) let the search try
#: first for :data:`GLANCE_SECONDS`: most witnesses, and many proofs, take it a few nodes.
GLANCE_POINTS = 100_000_000
GLANCE_SECONDS = 0.1
#: A lattice estimated at most this many seconds runs without a probe of the search.
QUICK_SECONDS = 1.0
#: The probe of a branch and bound (its witness hunt, for a certification): this many
#: seconds, or this share of the lattice's estimate where that is longer (at most half of it).
PROBE_SECONDS = 2.0
PROBE_SHARE = 0.25
#: Without a ``time_limit``, ``"auto"`` scans the lattice when it is estimated at most this
#: long; beyond it the search, whose cost is unknown but often far less, runs instead.
AUTO_LATTICE_SECONDS = 900.0
#: Runs estimated longer than this say so before they start (when progress is shown).
ANNOUNCE_SECONDS = 30.0

# ------------------------------------------------------------------------------- the table
#: The concrete engines, name → adapter (:class:`~._engine_base.Engine`); ``"sample"`` hunts
#: witnesses for ``"auto"`` and runs :func:`pcfair.sample_patterns`, and is never asked for by
#: ``engine=``. The searches are in the order ``engine="search"`` tries them.
ENGINES: dict[str, Engine] = {
    "lattice": LatticeEngine(),
    "naive_bayes_search": NAIVE_BAYES_SEARCH,
    "tree_search": TREE_SEARCH,
    "python_search": PYTHON_SEARCH,
    "sample": SampleEngine(seconds=PROBE_SECONDS),
}
#: The kinds each concrete search answers when asked for by name.
SEARCH_KINDS = {name: e.kinds for name, e in ENGINES.items() if e.family == "search"}
#: Names ``engine=`` accepts besides the concrete engines.
FAMILIES = ("auto", "lattice", "search")
#: Old names still accepted.
ALIASES = {"dense": "lattice"}
#: Every name ``engine=`` (and the CLI's ``--engine``) accepts.
ENGINE_NAMES = (*FAMILIES, *SEARCH_KINDS, *ALIASES)


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
    if name not in ENGINE_NAMES:
        names = ", ".join(repr(e) for e in ENGINE_NAMES)
        raise OptionError(f"unknown engine {engine!r} (expected one of {names})")
    if kind == "minimal" and name not in ("auto", "lattice"):
        raise SpecError(
            "minimal patterns need every extension of a pattern checked to discriminate, which "
            "the branch-and-bound bound (an upper bound on |Δ|) cannot prove: use "
            "engine='lattice' (raise max_bytes if the lattice does not fit)")
    if name in SEARCH_KINDS and kind not in SEARCH_KINDS[name]:
        raise OptionError(f"engine {name!r} answers {SEARCH_KINDS[name]}, not {kind!r}")
    return name


def question(model, decision, sensitive, kind: str, delta: float, *, favorable=None,
             engine: str = "auto", **options) -> tuple[Problem, Request]:
    """The problem and the request the table reads, from the pattern API's arguments, checked
    once (:func:`check_engine`, then :func:`~pcfair.patterns._arguments.resolve_problem` and
    ``resolve_request``, which take ``options``): for callers above the API that ask the table
    about a question (the report) without answering it through :func:`pcfair.find_patterns`.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.2, 0.8]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.6, 0.4]), 0.5)]))
    >>> problem, request = question(pc, "d", ["s"], "all", 0.05, engine="dense")
    >>> request.engine, request.kind
    ('lattice', 'all')
    """
    problem = resolve_problem(model, decision, sensitive, favorable)
    request = resolve_request(kind, delta, engine=check_engine(engine, kind), **options)
    return problem, request


def lists_all(name: str) -> bool:
    """Whether the concrete engine ``name`` (a result's ``stats["engine"]``; a family name is
    not one) scores every
    pattern in one pass, so that a count next to its answer is cheap.

    Examples
    --------
    >>> lists_all("lattice"), lists_all("tree_search"), lists_all("search")
    (True, False, False)
    """
    return name in ENGINES and ENGINES[name].lists_all


def is_sampler(engine: str) -> bool:
    """Whether ``engine`` names the sampling miner (the CLI's ``patterns --engine sample``,
    :func:`pcfair.sample_patterns`), which never certifies and is no ``engine=`` of the exact
    queries.

    Examples
    --------
    >>> is_sampler("sample"), is_sampler("auto")
    (True, False)
    """
    return engine in ENGINES and ENGINES[engine].family == "sample"


def search_engine(problem: Problem, request: Request) -> tuple[str | None, str]:
    """The concrete branch and bound ``engine="search"`` runs for this request (None where
    none applies), and why the others do not: the first search of the table that can run
    it (``SearchOptions(compiled=False)`` leaves the compiled ones out)."""
    why = []
    for name, adapter in ENGINES.items():
        if adapter.family != "search" or (adapter.compiled
                                          and not request.search_options.compiled):
            continue
        ok = adapter.can_run(problem, request)
        if ok is True:
            return name, ""
        why.append(f"{name}: {ok}")
    return None, "; ".join(why)


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
            if request.kind in PYTHON_SEARCH.kinds:
                PYTHON_SEARCH.require(problem, request)  # the bound's own error
            raise SpecError(f"no branch-and-bound search applies: {why}; use "
                            "engine='lattice'")
    else:
        ENGINES[name].require(problem, request)
    res = ENGINES[name].run(problem, request)
    res.stats["choice"] = Choice(name, f"engine={request.engine!r} was asked for", {}).to_dict()
    return res


def census(problem: Problem, request: Request, deltas: tuple[float, ...], ks: tuple[int, ...],
           summaries: bool) -> tuple[list[dict], dict]:
    """The rows of :func:`pcfair.pattern_census` and its frame's attributes (``engine``: the
    concrete engine that counted): one pass of the lattice for ``"auto"`` and ``"lattice"``;
    by searches (:func:`~._search_engine.search_census`) for ``"search"`` or a concrete search,
    and for ``"auto"`` where one chunk of the lattice does not fit ``max_bytes``."""
    name = request.engine
    lattice = ENGINES["lattice"]
    if name == "lattice" or (name == "auto" and lattice.can_run(problem, request) is True):
        return lattice.census(problem, request, deltas, ks, summaries)
    return search_census(problem, request.but(engine="search" if name == "auto" else name),
                         deltas, ks, summaries, answer)


def sample_listing(problem: Problem, request: Request, max_points: int, rng) -> tuple:
    """A uniform random sample of at most ``max_points`` patterns of ``request.delta`` from
    the lattice's listing (a report's front of a set too large to list): their ``P(x, y)``,
    their ``|Δ|``, the number of patterns and whether the scan finished
    (:func:`~._lattice_engine.listing_sample`)."""
    return ENGINES["lattice"].listing_sample(problem, request, max_points, rng)


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
    res = ENGINES[name].run(problem, request.within(seconds).but(progress=False))
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
    lattice = ENGINES["lattice"]
    plan, unfit = lattice.plan(problem, request)
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
    lat, plan, chunks = lattice.estimate_planned(problem, request, plan, unfit)
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
            hunt = ENGINES["sample"].run(problem, request.within(probe))
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
            res = ENGINES["lattice"].run(problem, request, plan=dec.plan, chunks=dec.chunks)
        else:
            _announce(chosen, None, request, dec.choice.reason)
            res = ENGINES[chosen].run(problem, request)
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
