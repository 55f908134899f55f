"""Discrimination patterns: the public API (``find_patterns``, ``certify``) and result types.

Definitions follow ``pc-certifier.md``: a pattern ``(x, y)`` has a non-empty assignment ``x`` of
sensitive variables and an assignment ``y`` of other features; its score is
``Δ = P(d | x, y) − P(d | y)`` and it discriminates when ``|Δ| > δ`` (strict). Patterns with
``P(x, y) = 0`` are undefined and never reported.

Engines: ``"dense"`` (every pattern by table look-ups; any smooth, decomposable circuit whose
tables fit the memory budget; complete; every kind) and ``"search"`` (branch and bound with the
quotient bound; deterministic, structured-decomposable circuits; every kind but ``"minimal"``,
and certification). ``"auto"`` picks dense when it fits, else search. A search stopped by
``time_limit`` is marked incomplete and never certifies "fair". The sampling miner, which never
certifies, has its own function, :func:`sample_patterns`.
"""

from __future__ import annotations

import csv
import json
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from pcfair.circuit.circuit import Circuit
from pcfair.circuit.derived import derived
from pcfair.errors import OptionError, SpecError, SummariesOmittedWarning, VariableError
from pcfair.circuit.properties import require_tractable_marginals
from pcfair.inference.marginals import normalized
from pcfair.inference.quotient import decision_evidence
from pcfair.patterns.bounds import NaiveBayesBound
from pcfair.patterns.dense import LatticeTooLarge, pareto_mask
from pcfair.patterns.executors import resolve_n_jobs
from pcfair.patterns.lattice import (
    DEFAULT_MAX_BYTES,
    LatticePlan,
    LatticeQuery,
    ScanResult,
    final_front,
    make_plan,
    scan,
    summary_bytes,
    summary_counts,
    summary_patterns,
)
from pcfair.patterns.scores import (
    THRESHOLD_ATOL,
    ScoredPattern,
    pattern_divergences,
    pattern_marginals,
)
from pcfair.patterns.parallel import parallel_search
from pcfair.patterns.search import SearchOptions, pattern_key, search
from pcfair.patterns.support import read_table, with_row_counts

KINDS = ("all", "topk", "maximal", "minimal", "pareto")
RANKS = ("discrimination", "divergence")


@dataclass(frozen=True)
class Pattern:
    """One discrimination pattern with readable ``x`` and ``y`` (names → labels).

    ``rows`` is the number of rows of a data set that match ``x ∪ y``, when the result was
    asked with ``data=`` (see :mod:`pcfair.patterns.support`), else None."""

    x: dict
    y: dict
    score: float
    probability: float
    divergence: float
    rows: int | None = None

    @property
    def abs_score(self) -> float:
        return abs(self.score)

    @property
    def size(self) -> int:
        return len(self.x) + len(self.y)

    def text(self) -> str:
        """``race=Black, sex=Male | age=<25`` style."""
        xs = ", ".join(f"{k}={v}" for k, v in self.x.items())
        ys = ", ".join(f"{k}={v}" for k, v in self.y.items())
        return xs + (f" | {ys}" if ys else "")

    def to_dict(self) -> dict:
        out = {"x": _jsonable(self.x), "y": _jsonable(self.y), "score": self.score,
               "abs_score": self.abs_score, "probability": self.probability,
               "divergence": self.divergence}
        if self.rows is not None:
            out["rows"] = self.rows
        return out


def _jsonable(d: dict) -> dict:
    return {str(k): (v.item() if isinstance(v, np.generic) else v) for k, v in d.items()}


@dataclass
class PatternSet:
    """Patterns of one kind, with the engine, completeness and statistics of the run."""

    kind: str
    delta: float
    engine: str
    complete: bool
    count: int
    patterns: list[Pattern] = field(default_factory=list)
    stats: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.patterns)

    def __iter__(self):
        return iter(self.patterns)

    def __getitem__(self, i):
        return self.patterns[i]

    def to_frame(self) -> pd.DataFrame:
        """One row per pattern: readable ``x``/``y`` text, the dicts, Δ, |Δ|, P(x,y),
        divergence and size (and ``rows``, the matching rows of the data, when asked with
        ``data=``)."""
        rows = [{"x": ", ".join(f"{k}={v}" for k, v in p.x.items()),
                 "y": ", ".join(f"{k}={v}" for k, v in p.y.items()),
                 "x_dict": p.x, "y_dict": p.y, "score": p.score, "abs_score": p.abs_score,
                 "probability": p.probability, "divergence": p.divergence, "size": p.size,
                 "rows": p.rows}
                for p in self.patterns]
        cols = ["x", "y", "x_dict", "y_dict", "score", "abs_score", "probability",
                "divergence", "size"]
        if any(p.rows is not None for p in self.patterns):
            cols.append("rows")
        return pd.DataFrame(rows, columns=cols)

    def to_dict(self, include_patterns: bool = True) -> dict:
        out = {"kind": self.kind, "delta": self.delta, "complete": self.complete,
               "engine": self.engine, "count": self.count, "stats": self.stats}
        if include_patterns:
            out["patterns"] = [p.to_dict() for p in self.patterns]
        return out

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_dict(), **kwargs)


@dataclass(frozen=True)
class Certificate:
    """Result of :func:`certify`. ``fair`` is True only when a complete engine found no
    pattern, False with a ``witness`` when one exists, None when the run was incomplete.

    ``max_abs_score`` is the largest ``|Δ|`` the run established: the model's largest exactly
    when ``max_abs_exact`` (a complete lattice scan), else the largest among the patterns the
    search scored (a lower bound; with ``fair`` True every ``|Δ|`` is also at most ``delta``).
    None when nothing was established."""

    fair: bool | None
    complete: bool
    delta: float
    engine: str
    witness: Pattern | None
    max_abs_score: float | None
    stats: dict
    max_abs_exact: bool = True

    def to_dict(self) -> dict:
        return {"fair": self.fair, "complete": self.complete, "delta": self.delta,
                "engine": self.engine, "witness": None if self.witness is None
                else self.witness.to_dict(), "max_abs_score": self.max_abs_score,
                "max_abs_exact": self.max_abs_exact, "stats": self.stats}


def as_circuit(model) -> Circuit:
    """The circuit of ``model``: a :class:`Circuit`, a model file for :func:`pcfair.load`, or a
    fitted :class:`pcfair.PCClassifier` (its ``circuit_``, whose decision is named after the
    training target). Anything else is a :class:`TypeError` saying what is accepted.

    Examples
    --------
    >>> as_circuit(3.0)
    Traceback (most recent call last):
    ...
    TypeError: expected a pcfair Circuit, a model file path or a fitted PCClassifier, got float...
    """
    import os

    if isinstance(model, Circuit):
        return model
    if isinstance(model, (str, os.PathLike)):
        from pcfair.circuit.io import load

        loaded = load(model)
        if not isinstance(loaded, Circuit):
            raise TypeError(f"{model} holds a vtree, not a circuit")
        return loaded
    fitted = getattr(model, "circuit_", None)
    if isinstance(fitted, Circuit):
        return fitted
    hint = (" (fit it first)" if hasattr(model, "fit") and hasattr(model, "predict_proba")
            and type(model).__name__ == "PCClassifier" else
            "; other models can be audited with pcfair.audits" if hasattr(model, "predict")
            else "")
    raise TypeError("expected a pcfair Circuit, a model file path or a fitted PCClassifier, "
                    f"got {type(model).__name__}{hint}")


def _resolve(circuit: Circuit, decision, sensitive, favorable, delta):
    """Check the arguments; return the circuit of the normalised distribution (checked for
    exact marginals, cached on the circuit so repeated calls share compiled plans), the
    decision, its favourable value and the sensitive variables."""
    circuit = as_circuit(circuit)
    d, fav, _ = decision_evidence(circuit, decision, favorable)
    if isinstance(sensitive, (str, int)):
        sensitive = [sensitive]
    sens = [circuit.variables.index(s) for s in sensitive]
    if not sens:
        raise VariableError("at least one sensitive variable is needed")
    if d in sens:
        raise VariableError("the decision variable cannot be sensitive")
    if not 0 <= float(delta) < 1:
        raise OptionError(f"delta must be in [0, 1), got {delta}")
    require_tractable_marginals(circuit)
    return derived(circuit, "normalized", lambda: normalized(circuit)), d, fav, sorted(set(sens))


#: ``engine="auto"`` scans the lattice up to this many points whatever the circuit.
AUTO_DENSE_POINTS = 5_000_000_000
#: ... and up to this many where the circuit is not naive Bayes in the decision: about four
#: minutes on one process at the lattice engine's 8–9 × 10^8 points a second (German's 8.1 ×
#: 10^10 points: 37 s on two), where the search's bound may not prune (German's CLT).
AUTO_DENSE_POINTS_MAX = 200_000_000_000
#: Points a second a process is assumed to scan when ``"auto"`` weighs a scan against a
#: ``time_limit`` (a conservative figure; ``benchmarks/README.md`` has the measured ones).
AUTO_SCAN_RATE = 500_000_000


def _engine(engine: str, pc: Circuit, d: int, fav: int, sens: list[int], max_bytes: int,
            time_limit: float | None = None, n_jobs: int = 1) -> str:
    """The engine to run. ``"auto"`` scans the lattice (``"dense"``) when one chunk fits
    ``max_bytes`` and the lattice has at most :data:`AUTO_DENSE_POINTS` points, or at most
    :data:`AUTO_DENSE_POINTS_MAX` where the circuit is not naive Bayes in the decision (a naive
    Bayes has the compiled search, whose coupled bound proves German-size models in under a
    second) and no ``time_limit`` cuts the scan short (at :data:`AUTO_SCAN_RATE` points a
    second on each of ``n_jobs`` processes: a scan stopped early has looked at its first
    chunks only, while the search visits the most promising patterns first); otherwise it
    searches."""
    if engine == "sample":
        raise OptionError("sampling never certifies and has its own function: "
                         "use sample_patterns(...)")
    if engine != "auto" and engine not in ENGINES:
        names = ", ".join(repr(e) for e in ("auto", *ENGINES))
        raise OptionError(f"unknown engine {engine!r} (expected one of {names})")
    if engine == "auto":
        card = pc.variables.cardinalities
        points = np.prod([2.0 * card[v] + 1 if v in sens else card[v] + 1.0
                          for v in range(pc.num_variables) if v != d])
        if points > AUTO_DENSE_POINTS:
            scan = points / (AUTO_SCAN_RATE * max(1, int(n_jobs)))
            if (points > AUTO_DENSE_POINTS_MAX
                    or (time_limit is not None and scan > time_limit)
                    or NaiveBayesBound.from_circuit(pc, d, fav) is not None):
                return "search"
        try:
            make_plan(pc, d, fav, sens, max_bytes)
        except LatticeTooLarge:
            return "search"
        return "dense"
    return engine


def _lattice_patterns(pc: Circuit, plan: LatticePlan, d: int, fav: int, idx, scores,
                      delta: float, divergences=None) -> list[Pattern]:
    """Patterns at global lattice indices with the scores (and divergences, if given) that
    selected them in the scan, so that a pattern is reported with the numbers that decided
    it (a second computation can land a few ulps on the other side of ``δ``); probabilities
    and missing divergences come from queries, the latter with the given scores."""
    pairs = [plan.decode(int(i)) for i in idx]
    if not pairs:
        return []
    m = pattern_marginals(pc, d, fav, pairs)
    items = [ScoredPattern(x, y, float(s), float(p))
             for (x, y), s, p in zip(pairs, scores, m.p_xy)]
    found = _search_patterns(pc, d, fav, items, delta)
    if divergences is not None:
        found = [Pattern(p.x, p.y, p.score, p.probability, float(dv))
                 for p, dv in zip(found, divergences)]
    return found


def _listed_patterns(pc: Circuit, plan: LatticePlan, listing: tuple) -> list[Pattern]:
    """Patterns of a scan's listing (index, Δ, P(x, y), divergence arrays)."""
    lab = pc.variables
    out = []
    for i, s, p, dv in zip(*listing):
        x, y = plan.decode(int(i))
        out.append(Pattern(x={lab.names[v]: lab.domains[v][val] for v, val in x.items()},
                           y={lab.names[v]: lab.domains[v][val] for v, val in y.items()},
                           score=float(s), probability=float(p), divergence=float(dv)))
    return out


def _csv_sink(handle, pc: Circuit, plan: LatticePlan):
    """A scan sink writing each chunk's listing as CSV rows (header first)."""
    writer = csv.writer(handle)
    writer.writerow(["x", "y", "score", "probability", "divergence"])

    def sink(listing: tuple) -> None:
        for p in _listed_patterns(pc, plan, listing):
            writer.writerow([", ".join(f"{a}={b}" for a, b in p.x.items()),
                             ", ".join(f"{a}={b}" for a, b in p.y.items()),
                             repr(p.score), repr(p.probability), repr(p.divergence)])

    return sink


def _scan_stats(run: ScanResult) -> dict:
    """The scan's statistics, with the patterns set aside by ``min_support`` (first δ)."""
    return {**run.stats, "complete": run.complete, "set_aside": int(run.result.rare[0])}


def _check_support(min_support: float) -> float:
    if not 0 <= float(min_support) < 1:
        raise OptionError(f"min_support must be in [0, 1), got {min_support}")
    return float(min_support)


def _search_stats(results) -> dict:
    results = results if isinstance(results, list) else [results]
    return {"nodes": sum(r.nodes for r in results),
            "bound_evaluations": sum(r.bounds for r in results),
            "pruned": sum(r.pruned for r in results),
            "seconds": sum(r.seconds for r in results)}


def _search_patterns(pc: Circuit, d: int, fav: int, items: list, delta: float
                     ) -> list[Pattern]:
    if not items:
        return []
    lab = pc.variables
    div = pattern_divergences(pc, d, fav, [it[:2] for it in items],
                              np.array([it.score for it in items]), delta)
    return [Pattern(x={lab.names[v]: lab.domains[v][val] for v, val in sorted(it.x.items())},
                    y={lab.names[v]: lab.domains[v][val] for v, val in sorted(it.y.items())},
                    score=float(it.score), probability=float(it.probability),
                    divergence=float(dv))
            for it, dv in zip(items, div)]


def _search_kind(pc: Circuit, d: int, fav: int, sens: list[int], delta: float, kind: str,
                 k: int, rank_by: str, time_limit: float | None, progress: bool | None,
                 options: SearchOptions, n_jobs: int, executor=None,
                 min_support: float = 0.0) -> tuple[list, bool, list]:
    """Items, completeness and the runs of the search engine for one ``kind``."""
    if kind == "minimal":
        raise SpecError(
            "minimal patterns need every extension of a pattern checked to discriminate, which "
            "the branch-and-bound bound (an upper bound on |Δ|) cannot prove: use "
            "engine='dense' (raise max_bytes if the lattice does not fit)")
    if kind in ("all", "topk", "pareto"):
        mode = {"all": "all", "topk": "topk", "pareto": "pareto"}[kind]
        res = parallel_search(pc, d, fav, sens, delta, n_jobs=n_jobs, executor=executor,
                              mode=mode, k=k, min_support=min_support,
                              rank_by=rank_by, time_limit=time_limit, progress=progress,
                              options=options)
        items = res.patterns
        if kind == "pareto" and items:
            keep = pareto_mask(np.abs([it.score for it in items]),
                               np.array([it.probability for it in items]),
                               np.ones(len(items), bool))
            items = [it for it, kept in zip(items, keep) if kept]
        return items, res.complete, [res]
    # maximal: every pattern, then for each one a search of its extensions for another
    t0 = time.perf_counter()
    deadline = None if time_limit is None else t0 + float(time_limit)
    res = parallel_search(pc, d, fav, sens, delta, n_jobs=n_jobs, executor=executor, mode="all",
                          min_support=min_support,
                          time_limit=time_limit, progress=progress, options=options)
    runs, complete = [res], res.complete
    member = {pattern_key(it.x, it.y) for it in res.patterns}
    n_features = pc.num_variables - 1
    items = []
    for it in res.patterns:
        if len(it.x) + len(it.y) == n_features:
            continue  # a complete assignment is never maximal
        sub = search(pc, d, fav, sens, delta, mode="extension", start=(it.x, it.y),
                     min_support=min_support,
                     member=member, deadline=deadline, progress=False, order=res.order,
                     options=options)
        runs.append(sub)
        if not sub.complete:
            complete = False
            break
        if not sub.patterns:
            items.append(it)
    return items, complete, runs


def find_patterns(pc: Circuit, decision, sensitive, delta: float, kind: str = "all",
                  k: int | None = None, rank_by: str = "discrimination", *, favorable=1,
                  engine: str = "auto", time_limit: float | None = None,
                  count_only: bool = False, max_bytes: int = DEFAULT_MAX_BYTES,
                  progress: bool | None = None,
                  search_options: SearchOptions = SearchOptions(),
                  n_jobs: int = 1, executor=None, out=None,
                  min_support: float = 0.0, data=None) -> PatternSet:
    """Find discrimination patterns of ``pc`` (see the module docstring).

    Parameters
    ----------
    pc : Circuit, path or fitted PCClassifier
        The model (see :func:`as_circuit`).
    decision : str
        The binary decision variable ``D``.
    sensitive : str or sequence of str
        Sensitive variables (``x`` ranges over their joint assignments).
    delta : float
        Threshold; a pattern discriminates when ``|Δ| > delta`` (up to a rounding tolerance of
        1e-12, :data:`pcfair.patterns.scores.THRESHOLD_ATOL`).
    kind : {"all", "topk", "maximal", "minimal", "pareto"}
    k : int, optional
        For ``"topk"``: how many (default 10).
    rank_by : {"discrimination", "divergence"}
        Ordering of ``"topk"`` (and of every returned list).
    favorable : value, default 1
    engine : {"auto", "dense", "search"}
    time_limit : float, optional
        Wall-clock seconds for either engine; a run stopped by it is marked incomplete.
    count_only : bool
        Return the count without materialising patterns.
    max_bytes : int
        Memory budget of one lattice chunk (and of the score array that maximal and minimal
        patterns need: 8 bytes a lattice point).
    progress : bool, optional
        Show a progress counter for long searches (default: when stderr is a terminal).
    search_options : SearchOptions
        The search engine's improvements (ordering, shared bounds, best-first) and its
        pruning bound (``bound``: by default the tightest that applies, naive Bayes, tree or
        quotient, :mod:`pcfair.patterns.bounds`); the defaults are all on,
        :data:`pcfair.patterns.search.PAPER` is the paper's search.
    n_jobs : int, default 1
        Local processes for either engine (``-1``: every core): the lattice's chunks or the
        search's shares; pays for runs longer than a few seconds. ``time_limit`` still counts
        from the call, starting the workers included. Workers are spawned and import your
        main script, so a script must make these calls under ``if __name__ == "__main__":``;
        without the guard the work runs in one process, with a ``RuntimeWarning``.
    executor : concurrent.futures.Executor, dask.distributed.Client or str, optional
        Run the chunks (or shares) there instead: any executor, a Dask client, or a Dask
        scheduler's address such as ``"tcp://10.0.0.5:8786"`` (``pip install
        pcfair[distributed]``). Partial results merge exactly, so every backend gives the
        same answer (see :func:`pcfair.patterns.executors.map_chunks`).
    min_support : float, default 0
        Set aside patterns with ``P(x, y) < min_support`` (they describe too few people to
        act on): they are not reported, not counted among the patterns (the lattice engine
        counts them in ``stats["set_aside"]``), and do not take part in the summaries.
    out : path, optional
        With ``kind="all"`` and the lattice engine: write every pattern to this CSV file as
        the chunks finish (columns ``x``, ``y``, ``score``, ``probability``, ``divergence``;
        chunk order) instead of keeping them; the result holds the count only. For sets too
        large for memory.
    data : DataFrame or CSV path, optional
        A table of the model's variables (e.g. its training data): every returned pattern
        then carries ``rows``, the number of rows matching ``x ∪ y``
        (:func:`pcfair.patterns.support.count_rows`).

    Returns
    -------
    PatternSet
        With ``engine="search"``, ``kind="minimal"`` raises :class:`SpecError` (it needs the
        dense engine) and ``"maximal"`` first finds every pattern, then searches each one's
        extensions.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.2, 0.8]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.6, 0.4]), 0.5)]))
    >>> ps = find_patterns(pc, "d", ["s"], 0.1)
    >>> [(p.text(), round(p.score, 4)) for p in ps]
    [('s=0', -0.25), ('s=1', 0.1667)]
    """
    if kind not in KINDS:
        raise OptionError(f"kind must be one of {KINDS}, not {kind!r}")
    if rank_by not in RANKS:
        raise OptionError(f"rank_by must be one of {RANKS}, not {rank_by!r}")
    pc, d, fav, sens = _resolve(pc, decision, sensitive, favorable, delta)
    min_support = _check_support(min_support)
    data = None if data is None else read_table(data)
    name = _engine(engine, pc, d, fav, sens, max_bytes, time_limit, resolve_n_jobs(n_jobs))
    request = _Request(pc, d, fav, sens, float(delta), time_limit, progress, n_jobs, executor,
                       min_support, max_bytes, search_options)
    found = ENGINES[name].find(request, kind, 10 if k is None else int(k), rank_by,
                               count_only, out)
    return with_row_counts(found, pc, data)


def _search_find(r: "_Request", kind: str, k: int, rank_by: str, count_only: bool,
                 out) -> PatternSet:
    """:func:`find_patterns` by the branch-and-bound search (``out`` is the lattice's)."""
    items, complete, runs = _search_kind(r.pc, r.d, r.fav, r.sens, r.delta, kind, k, rank_by,
                                         r.time_limit, r.progress, r.search_options, r.n_jobs,
                                         r.executor, r.min_support)
    found = _search_patterns(r.pc, r.d, r.fav, items, r.delta)
    key = (lambda p: -p.abs_score) if rank_by == "discrimination" else (lambda p: -p.divergence)
    found.sort(key=key)
    return PatternSet(kind=kind, delta=r.delta, engine="search", complete=complete,
                      count=len(found), stats=_search_stats(runs),
                      patterns=[] if count_only else found)


def _dense_find(r: "_Request", kind: str, k: int, rank_by: str, count_only: bool,
                out) -> PatternSet:
    """:func:`find_patterns` by the lattice engine."""
    pc, d, fav, sens, delta = r.pc, r.d, r.fav, r.sens, r.delta
    min_support, max_bytes, n_jobs, executor = r.min_support, r.max_bytes, r.n_jobs, r.executor
    by_div = rank_by == "divergence"
    if out is not None and kind != "all":
        raise OptionError("out= writes the patterns of kind='all'")
    query = LatticeQuery(
        deltas=(delta,), min_support=min_support, listing=kind == "all" and not count_only,
        k_top=k if kind == "topk" and not by_div else 0,
        k_div=k if kind == "topk" and by_div else 0,
        pareto=kind == "pareto", summaries=kind in ("maximal", "minimal"))
    sink = handle = None
    if out is not None:
        query = LatticeQuery(deltas=(delta,), min_support=min_support, listing=True)
        handle = open(out, "w", newline="", encoding="utf-8")
        sink = _csv_sink(handle, pc, make_plan(pc, d, fav, sens, max_bytes))
    try:
        run = scan(pc, d, fav, sens, query, max_bytes=max_bytes, n_jobs=n_jobs,
                   executor=executor, time_limit=r.time_limit, progress=r.progress, sink=sink)
    finally:
        if handle is not None:
            handle.close()
    res = run.result
    if kind == "all":
        count = int(res.counts[0])
        found = [] if count_only or out is not None else \
            _listed_patterns(pc, run.plan, res.listing)
    else:
        divergences = None
        if kind == "topk":
            heap = res.div[0] if by_div else res.top
            idx, scores = heap[1], heap[2]
            divergences = heap[0] if by_div else None
        elif kind == "pareto":
            front = final_front(res.fronts[0])
            idx, scores = front[2], front[3]
        else:
            idx, scores = summary_patterns(pc, run, kind, query, n_jobs=n_jobs,
                                           executor=executor, scores=not count_only)
        count = len(idx)
        found = [] if count_only and kind != "topk" else \
            _lattice_patterns(pc, run.plan, d, fav, idx, scores, delta, divergences)
    found.sort(key=(lambda p: -p.divergence) if by_div else (lambda p: -p.abs_score))
    return PatternSet(kind=kind, delta=delta, engine="dense", complete=run.complete,
                      count=count, patterns=[] if count_only else found,
                      stats=_scan_stats(run))


def certify(pc: Circuit, decision, sensitive, delta: float, favorable=1, engine: str = "auto",
            time_limit: float | None = None, *, max_bytes: int = DEFAULT_MAX_BYTES,
            progress: bool | None = None,
            search_options: SearchOptions = SearchOptions(), n_jobs: int = 1,
            executor=None, min_support: float = 0.0, data=None) -> Certificate:
    """Prove ``pc`` δ-fair (no discrimination pattern) or return a witness.

    Parameters are those of :func:`find_patterns` (with ``data``, the witness carries its row
    count); ``engine="search"`` stops at the first witness (``n_jobs`` processes: every worker stops once one has one; scripts need the
    ``if __name__ == "__main__":`` guard, see ``n_jobs`` there).

    Returns
    -------
    Certificate
        ``fair`` is True only from a complete engine that found no pattern.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.45, 0.55]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.5, 0.5]), 0.5)]))
    >>> certify(pc, "d", "s", 0.05).fair, certify(pc, "d", "s", 0.01).fair
    (True, False)
    """
    pc, d, fav, sens = _resolve(pc, decision, sensitive, favorable, delta)
    min_support = _check_support(min_support)
    data = None if data is None else read_table(data)
    name = _engine(engine, pc, d, fav, sens, max_bytes, time_limit, resolve_n_jobs(n_jobs))
    request = _Request(pc, d, fav, sens, float(delta), time_limit, progress, n_jobs, executor,
                       min_support, max_bytes, search_options)
    return with_row_counts(ENGINES[name].certify(request), pc, data)


def _search_certify(r: "_Request") -> Certificate:
    """:func:`certify` by the branch-and-bound search (stops at the first witness)."""
    pc, d, fav = r.pc, r.d, r.fav
    res = parallel_search(pc, d, fav, r.sens, r.delta, n_jobs=r.n_jobs, mode="first",
                          time_limit=r.time_limit, progress=r.progress,
                          options=r.search_options, executor=r.executor,
                          min_support=r.min_support)
    witness = (_search_patterns(pc, d, fav, res.patterns[:1], r.delta)[0]
               if res.patterns else None)
    fair = False if witness is not None else (True if res.complete else None)
    return Certificate(fair=fair, complete=res.complete or witness is not None,
                       delta=r.delta, engine="search", witness=witness,
                       max_abs_score=res.best if res.best > 0 else None,
                       stats=_search_stats(res), max_abs_exact=False)


def _dense_certify(r: "_Request") -> Certificate:
    """:func:`certify` by the lattice engine."""
    pc, d, fav = r.pc, r.d, r.fav
    run = scan(pc, d, fav, r.sens, LatticeQuery(deltas=(r.delta,), k_top=1,
                                                min_support=r.min_support),
               max_bytes=r.max_bytes, n_jobs=r.n_jobs, executor=r.executor,
               time_limit=r.time_limit, progress=r.progress)
    res = run.result
    found = int(res.counts[0]) > 0
    witness = (_lattice_patterns(pc, run.plan, d, fav, res.top[1][:1], res.top[2][:1],
                                 r.delta)[0] if found else None)
    fair = False if found else (True if run.complete else None)
    return Certificate(fair=fair, complete=run.complete or found, delta=r.delta,
                       engine="dense", witness=witness,
                       max_abs_score=res.best if run.complete else None,
                       stats=_scan_stats(run), max_abs_exact=run.complete)


@dataclass(frozen=True)
class _Request:
    """What every engine is asked with: the resolved model and the run's settings."""

    pc: Circuit
    d: int
    fav: int
    sens: list
    delta: float
    time_limit: float | None
    progress: bool | None
    n_jobs: int
    executor: object
    min_support: float
    max_bytes: int
    search_options: SearchOptions


@dataclass(frozen=True)
class Engine:
    """An exact engine of :func:`find_patterns` and :func:`certify`: ``find(request, kind, k,
    rank_by, count_only, out)`` returns a :class:`PatternSet`, ``certify(request)`` a
    :class:`Certificate` (without row counts: the API adds them)."""

    find: Callable
    certify: Callable


#: The exact engines by name (``engine=`` of :func:`find_patterns` and :func:`certify`;
#: ``"auto"`` picks one, :func:`_engine`).
ENGINES: dict[str, Engine] = {
    "dense": Engine(find=_dense_find, certify=_dense_certify),
    "search": Engine(find=_search_find, certify=_search_certify),
}


def pattern_census(pc: Circuit, decision, sensitive, deltas=(0.01, 0.05, 0.1),
                   ks=(1, 10, 100), *, favorable=1, max_bytes: int = DEFAULT_MAX_BYTES,
                   summaries: bool = True, n_jobs: int = 1, executor=None,
                   time_limit: float | None = None, progress: bool | None = None,
                   min_support: float = 0.0) -> pd.DataFrame:
    """Counts and summaries at several thresholds from one pass of the lattice engine.

    One row per δ: numbers of discrimination patterns, maximal, minimal and Pareto-optimal
    patterns, and the k-th best ``|Δ|`` and divergence for each ``k`` in ``ks``, and whether
    the pass completed (``time_limit``). Maximal and minimal counts need a bitmap of the
    lattice in memory (1 byte a point for up to 3 thresholds, :func:`pcfair.patterns.lattice.
    summary_bytes`): they are None with ``summaries=False``, and None with a
    :class:`~pcfair.errors.SummariesOmittedWarning` when the bitmap exceeds ``max_bytes`` (or
    there are more than 15 thresholds); the other columns stream in bounded memory.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.2, 0.8]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.6, 0.4]), 0.5)]))
    >>> pattern_census(pc, "d", ["s"], deltas=(0.1, 0.2), ks=(1,))["patterns"].tolist()
    [2, 1]
    """
    pc, d, fav, sens = _resolve(pc, decision, sensitive, favorable, min(deltas))
    deltas = tuple(float(x) for x in deltas)
    kmax = max(ks)
    plan = make_plan(pc, d, fav, sens, max_bytes)
    need = summary_bytes(plan, len(deltas))
    want = summaries and need is not None and need <= max_bytes
    if summaries and not want:
        why = (f"more than 15 thresholds ({len(deltas)}) in one pass" if need is None else
               f"their bitmap of the lattice ({plan.num_points:,} points) needs "
               f"{need / 2**20:,.0f} MiB, over max_bytes ({max_bytes / 2**20:,.0f} MiB)")
        warnings.warn(f"maximal and minimal counts are left out (None): {why}; the other "
                      "columns are computed as usual", SummariesOmittedWarning, stacklevel=2)
    query = LatticeQuery(deltas=deltas, k_top=kmax, k_div=kmax, pareto=True, summaries=want,
                         min_support=_check_support(min_support))
    run = scan(pc, d, fav, sens, query, max_bytes=max_bytes, n_jobs=n_jobs, executor=executor,
               time_limit=time_limit, progress=progress)
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
    return pd.DataFrame(rows)


def sample_patterns(pc: Circuit, decision, sensitive, delta: float, *, kind: str = "all",
                    k: int | None = None, favorable=1, time_limit: float | None = None,
                    runs: int | None = None, memo: bool = True,
                    random_state=None, min_support: float = 0.0) -> PatternSet:
    """Mine patterns by sampling (see :mod:`pcfair.patterns.sampling`); never certifies.

    ``kind`` is ``"all"``, ``"topk"`` (by |Δ|) or ``"pareto"`` (the strict front of the sampled
    patterns). The result is always marked incomplete; ``stats`` gives runs, patterns explored,
    seconds, and when the best pattern found was first seen.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.2, 0.8]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.6, 0.4]), 0.5)]))
    >>> ps = sample_patterns(pc, "d", ["s"], 0.1, runs=5, random_state=0)
    >>> ps.complete, sorted(p.text() for p in ps)
    (False, ['s=0', 's=1'])
    """
    from pcfair.patterns.sampling import sample_search

    if kind not in ("all", "topk", "pareto"):
        raise OptionError("sampling offers kind 'all', 'topk' or 'pareto'")
    pc, d, fav, sens = _resolve(pc, decision, sensitive, favorable, delta)
    res = sample_search(pc, d, fav, sens, float(delta), runs=runs, time_limit=time_limit,
                        memo=memo, random_state=random_state,
                        min_support=_check_support(min_support))
    items = [ScoredPattern(dict(kx), dict(ky), v[0], v[1]) for (kx, ky), v in res.found.items()]
    items.sort(key=lambda it: -abs(it.score))
    if kind == "topk":
        items = items[: 10 if k is None else int(k)]
    elif kind == "pareto" and items:
        a = np.array([abs(it.score) for it in items])
        p = np.array([it.probability for it in items])
        keep = pareto_mask(a, p, np.ones(len(items), bool))
        items = [it for it, kept in zip(items, keep) if kept]
    stats = {"runs": res.runs, "explored": res.explored, "seconds": res.seconds}
    if res.found:
        best = max(res.found, key=lambda kk: abs(res.found[kk][0]))
        stats["best_first_seen_explored"], stats["best_first_seen_seconds"] = res.first_seen[best]
    return PatternSet(kind=kind, delta=float(delta), engine="sample", complete=False,
                      count=len(items), stats=stats,
                      patterns=_search_patterns(pc, d, fav, items, float(delta)))
