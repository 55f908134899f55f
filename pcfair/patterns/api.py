"""Discrimination patterns: the public API (:func:`certify`, :func:`find_patterns`,
:func:`pattern_census`, :func:`sample_patterns`).

Definitions follow ``pc-certifier.md``: a pattern ``(x, y)`` has a non-empty assignment ``x`` of
sensitive variables and an assignment ``y`` of other features; its score is
``Δ = P(d | x, y) − P(d | y)`` and it discriminates when ``|Δ| > δ`` (strict). Patterns with
``P(x, y) = 0`` are undefined and never reported.

The arguments are checked once here (:mod:`pcfair.patterns._arguments`); which engine answers
is decided by the engine table (:mod:`pcfair.patterns.engines`, whose docstring has the
table of engines and how ``engine="auto"`` chooses); results are built by
:mod:`pcfair.patterns.results`. A run stopped by ``time_limit`` is marked incomplete and never
certifies "fair". The sampling miner, which never certifies, has its own function,
:func:`sample_patterns`.
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from pcfair._keywords import positional_options
from pcfair.circuit.circuit import Circuit
from pcfair.errors import OptionError
from pcfair.patterns import engines
from pcfair.patterns._arguments import (
    KINDS,
    RANKS,
    Problem,
    Request,
    as_circuit,
    check_fraction,
    resolve_problem,
    resolve_request,
)
from pcfair.patterns.lattice import DEFAULT_MAX_BYTES
from pcfair.patterns.results import (
    Certificate,
    Pattern,
    PatternSet,
    readable_patterns,
    to_certificate,
    to_pattern_set,
)
from pcfair.patterns.search_types import SearchOptions
from pcfair.patterns.support import (
    SUPPORTED_WITNESS_SECONDS,
    distinct_by_rows,
    rare_below,
    with_row_counts,
)
from pcfair.tables.recipe import model_frame

__all__ = ["Certificate", "KINDS", "Pattern", "PatternSet", "RANKS", "as_circuit", "certify",
           "find_patterns", "pattern_census", "sample_patterns", "supported_witness"]


@positional_options("kind", "k", "rank_by")
def find_patterns(pc: Circuit, decision, sensitive, delta: float, *, kind: str = "all",
                  k: int | None = None, rank_by: str = "discrimination", favorable=None,
                  engine: str = "auto", time_limit: float | None = None,
                  count_only: bool = False, max_bytes: int = DEFAULT_MAX_BYTES,
                  progress: bool | None = None,
                  search_options: SearchOptions = SearchOptions(),
                  n_jobs: int = 1, executor=None, out=None,
                  min_support: float = 0.0, data=None,
                  distinct_rows: bool = False) -> PatternSet:
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
    favorable : value, optional
        The favourable decision value. Needed unless the decision's values are 0 and 1
        (then 1: :func:`pcfair.inference.quotient.implicit_favorable`); a decision such as
        ``["<=50K", ">50K"]`` without it is refused, never guessed.
    engine : {"auto", "lattice", "search", "naive_bayes_search", "tree_search", \
"python_search"}
        ``"auto"`` (default) picks by cost (:mod:`pcfair.patterns.engines`); ``"lattice"``
        scans every pattern (``"dense"`` is its old name); ``"search"`` runs the branch and
        bound (compiled where one applies).
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
    distinct_rows : bool, default False
        With ``kind="topk"`` and ``data``: the ``k`` best patterns of which no two match the
        same rows of ``data`` (rephrasings such as ``s=1 | a=0`` and ``s=1 | a=0, b=1`` where
        every row with ``a=0`` has ``b=1``). Of patterns with the same rows the higher-ranked
        is kept (on a tie of the ranking, the engine's first). Patterns that match no row are
        never merged with each other ("no rows" says nothing about whom they describe); they
        are kept like any other. The engine is asked for ``k`` patterns, then for twice as
        many, and so on, until ``k`` are distinct or its list runs out; ``time_limit`` covers
        every round, and a run it cuts is incomplete. ``stats["distinct_rows"]`` says how
        many patterns were merged away (``merged``), how many the last round listed
        (``fetched``) and the rounds. Any other ``kind``, or ``count_only``, is an
        :class:`~pcfair.errors.OptionError`, as is a missing ``data``.

    Returns
    -------
    PatternSet
        With ``engine="search"``, ``kind="minimal"`` raises :class:`SpecError` (it needs the
        lattice engine) and ``"maximal"`` first finds every pattern, then searches each one's
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

    With ``distinct_rows``, rephrasings of the same rows count once: every row of this table
    has ``z=0``, so ``s=0`` describes the people ``s=0 | z=0`` does, and is left out;
    ``s=0 | z=1`` matches no row and stays:

    >>> import pandas as pd
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1], "z": [0, 1]})
    >>> pc = b.build(b.decision([
    ...     (b.indicator("d", 1), b.product(b.categorical("s", [0.2, 0.8]),
    ...                                     b.categorical("z", [0.9, 0.1])), 0.5),
    ...     (b.indicator("d", 0), b.product(b.categorical("s", [0.6, 0.4]),
    ...                                     b.categorical("z", [0.8, 0.2])), 0.5)]))
    >>> table = pd.DataFrame({"s": [0, 1, 1], "z": [0, 0, 0]})
    >>> top = find_patterns(pc, "d", ["s"], 0.1, kind="topk", k=3, data=table,
    ...                     distinct_rows=True)
    >>> [(p.text(), p.rows) for p in top], top.stats["distinct_rows"]["merged"]
    ([('s=0 | z=0', 1), ('s=0 | z=1', 0), ('s=1', 2)], 1)
    """
    problem = resolve_problem(pc, decision, sensitive, favorable)
    name = engines.check_engine(engine, kind)
    request = resolve_request(kind, delta, engine=name, k=k, rank_by=rank_by,
                              min_support=min_support, count_only=count_only, out=out,
                              time_limit=time_limit, n_jobs=n_jobs, executor=executor,
                              progress=progress, max_bytes=max_bytes,
                              search_options=search_options)
    if distinct_rows:
        _check_distinct_rows(request, data)
    data = None if data is None else model_frame(problem.pc, data)  # fails before the work
    if distinct_rows:
        found = _distinct_top(problem, request, data)
    else:
        res = engines.answer(problem, request)
        found = to_pattern_set(problem.pc, problem.d, problem.fav, res, kind, request.delta,
                               rank_by, count_only, request.deadline)
    return with_row_counts(found, problem.pc, data)


def _check_distinct_rows(request: Request, data) -> None:
    """Refuse ``distinct_rows=True`` where it has no meaning (see :func:`find_patterns`)."""
    if data is None:
        raise OptionError("distinct_rows=True needs data=: the table (e.g. the training "
                          "data) whose rows tell the patterns apart")
    if request.kind != "topk":
        raise OptionError(f"distinct_rows=True lists a top-k: it goes with kind='topk', not "
                          f"{request.kind!r}")
    if request.count_only:
        raise OptionError("distinct_rows=True lists the patterns; it does not go with "
                          "count_only=True")


def _distinct_top(problem: Problem, request: Request, data: pd.DataFrame) -> PatternSet:
    """The top ``request.k`` patterns that match pairwise-distinct rows of ``data``: the
    engine's top-k without the rephrasings (:func:`~pcfair.patterns.support.distinct_by_rows`),
    asked again for twice as many while fewer than ``k`` are distinct, the engine's list was
    full, and its deadline (one for every round) has not passed."""
    fetch, rounds = request.k, 0
    while True:
        rounds += 1
        res = engines.answer(problem, request.but(k=fetch))
        found = to_pattern_set(problem.pc, problem.d, problem.fav, res, request.kind,
                               request.delta, request.rank_by, False, request.deadline)
        kept, merged = distinct_by_rows(problem.pc, found.patterns, data, request.k)
        settled = len(kept) == request.k or len(found.patterns) < fetch
        if settled or not found.complete or request.expired():
            break
        fetch *= 2
    stats = {**found.stats, "distinct_rows": {"merged": merged, "fetched": len(found.patterns),
                                              "rounds": rounds}}
    return dataclasses.replace(found, patterns=kept, count=len(kept), stats=stats,
                               complete=found.complete and settled)


@positional_options("favorable", "engine", "time_limit")
def certify(pc: Circuit, decision, sensitive, delta: float, *, favorable=None,
            engine: str = "auto", time_limit: float | None = None,
            max_bytes: int = DEFAULT_MAX_BYTES, progress: bool | None = None,
            search_options: SearchOptions = SearchOptions(), n_jobs: int = 1,
            executor=None, min_support: float = 0.0, data=None,
            exact_max: bool = False) -> Certificate:
    """Prove ``pc`` δ-fair (no discrimination pattern) or return a witness.

    Parameters are those of :func:`find_patterns` (with ``data``, the witness carries its row
    count). Every engine stops at the first witness: ``"auto"`` hunts for one (seconds)
    before any exhaustive pass, the lattice stops at its first chunk with a pattern, the
    search at its first pattern (on ``n_jobs`` processes every worker stops once one has one;
    scripts need the ``if __name__ == "__main__":`` guard, see ``n_jobs`` there).

    exact_max : bool, default False
        Also establish the model's exact largest ``|Δ|`` (:attr:`Certificate.max_abs_score`
        with ``max_abs_exact``): the lattice then scans to the end even after a witness.
        ``find_patterns(..., kind="topk", k=1)`` gives the pattern itself.

    Returns
    -------
    Certificate
        ``fair`` is True only from a complete engine that found no pattern. ``stats`` says
        which engine answered (``stats["engine"]``) and, with ``engine="auto"``, why
        (``stats["choice"]``: the reason and every engine's estimate).

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.45, 0.55]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.5, 0.5]), 0.5)]))
    >>> certify(pc, "d", "s", 0.05).fair, certify(pc, "d", "s", 0.01).fair
    (True, False)
    """
    problem = resolve_problem(pc, decision, sensitive, favorable)
    request = resolve_request("certify", delta, engine=engines.check_engine(engine, "certify"),
                              min_support=min_support, exact_max=exact_max,
                              time_limit=time_limit, n_jobs=n_jobs, executor=executor,
                              progress=progress, max_bytes=max_bytes,
                              search_options=search_options)
    data = None if data is None else model_frame(problem.pc, data)  # fails before the work
    res = engines.answer(problem, request)
    cert = to_certificate(problem.pc, problem.d, problem.fav, res, request.delta)
    return with_row_counts(cert, problem.pc, data)


def supported_witness(pc, decision, sensitive, delta: float, cert, *,
                      time_limit: float = SUPPORTED_WITNESS_SECONDS, min_support: float = 0.0,
                      **options):
    """A witness that describes somebody, when ``cert``'s witness does not: ``P(x, y) <
    rare_below(pc)`` while ``min_support`` did not already set such patterns aside. Returns
    None when no such run is needed, else a :class:`~pcfair.patterns.api.Certificate` at
    ``min_support = rare_below(pc)``: its ``witness`` the pattern of largest ``|Δ|`` among
    those with that support (a top-1, so the strongest discrimination among the patterns
    that describe somebody, not the first one met, which may describe two rows; where
    ``time_limit`` cuts the run, the best it found); ``fair`` True when none exists, None when
    the time ran out before one was found. ``options`` are :func:`pcfair.certify`'s
    (``favorable``, ``engine``, ``n_jobs``, ``executor``, ``data``).

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1], "z": [0, 1]})
    >>> pc = b.build(b.decision([
    ...     (b.indicator("d", 1), b.product(b.categorical("s", [0.5, 0.5]),
    ...                                     b.categorical("z", [1 - 1e-6, 1e-6])), 0.99),
    ...     (b.indicator("d", 0), b.product(b.categorical("s", [0.9, 0.1]),
    ...                                     b.categorical("z", [1 - 99e-6, 99e-6])), 0.01)]))
    >>> cert = certify(pc, "d", "s", 0.05)
    >>> cert.witness.probability < 1e-4          # only a context of 2e-6 discriminates
    True
    >>> supported_witness(pc, "d", "s", 0.05, cert).fair   # none that describes somebody
    True
    """
    rare = rare_below(as_circuit(pc))
    if cert.witness is None or cert.witness.probability >= rare or min_support >= rare:
        return None
    problem = resolve_problem(pc, decision, sensitive, options.pop("favorable", None))
    data = options.pop("data", None)
    engine = engines.check_engine(options.pop("engine", "auto"), "topk")
    request = resolve_request("topk", delta, engine=engine, k=1, min_support=rare,
                              time_limit=time_limit, **options)
    data = None if data is None else model_frame(problem.pc, data)
    res = engines.answer(problem, request)
    found = to_certificate(problem.pc, problem.d, problem.fav, res, request.delta)
    return with_row_counts(found, problem.pc, data)


@positional_options("ks")
def pattern_census(pc: Circuit, decision, sensitive, deltas=(0.01, 0.05, 0.1), *,
                   ks=(1, 10, 100), favorable=None, engine: str = "auto",
                   max_bytes: int = DEFAULT_MAX_BYTES, summaries: bool = True, n_jobs: int = 1,
                   executor=None, time_limit: float | None = None,
                   progress: bool | None = None, min_support: float = 0.0,
                   search_options: SearchOptions = SearchOptions()) -> pd.DataFrame:
    """Counts and summaries at several thresholds, from one pass of the lattice engine where
    it fits, else by the search.

    One row per δ: numbers of discrimination patterns, maximal, minimal and Pareto-optimal
    patterns, and the k-th best ``|Δ|`` and divergence for each ``k`` in ``ks``, and whether
    the run completed (``time_limit``). The frame's ``attrs["engine"]`` names the concrete
    engine that counted.

    With ``engine="auto"`` (default) or ``"lattice"`` one lattice pass answers. Maximal and
    minimal counts need a bitmap of the lattice in memory (1 byte a point for up to 3
    thresholds, :func:`pcfair.patterns.lattice.summary_bytes`): they are None with
    ``summaries=False``, and None with a :class:`~pcfair.errors.SummariesOmittedWarning` when
    the bitmap exceeds ``max_bytes`` (or there are more than 15 thresholds); the other
    columns stream in bounded memory. On a model whose probabilities go below the lattice's
    floor (:func:`pcfair.patterns.lattice.probability_floor`) the patterns below it are not
    counted: ``complete`` is False and ``attrs["probability_floor"]`` names it.

    With ``engine="search"`` (or a concrete search), and under ``"auto"`` where one chunk of
    the lattice does not fit ``max_bytes``, the search answers
    (:func:`pcfair.patterns._search_engine.search_census`): one listing at the smallest δ
    gives the counts, top ``|Δ|`` and Pareto counts of every δ, a top-k search per δ the
    divergence columns, a maximal search per δ (with ``summaries``) the maximal counts where
    a search answers them; minimal counts need the lattice (None), and ``set_aside`` is None
    with a ``min_support``. Where ``time_limit`` stops a search, the row says
    ``complete=False`` (its counts are then lower bounds). The other parameters are those
    of :func:`find_patterns`.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.2, 0.8]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.6, 0.4]), 0.5)]))
    >>> pattern_census(pc, "d", ["s"], deltas=(0.1, 0.2), ks=(1,))["patterns"].tolist()
    [2, 1]
    >>> pattern_census(pc, "d", ["s"], deltas=(0.1, 0.2), ks=(1,),
    ...                engine="search")["patterns"].tolist()
    [2, 1]
    """
    problem = resolve_problem(pc, decision, sensitive, favorable)
    deltas = tuple(check_fraction(x, "delta") for x in deltas)
    request = resolve_request("all", min(deltas), engine=engines.check_engine(engine, "all"),
                              min_support=min_support, time_limit=time_limit, n_jobs=n_jobs,
                              executor=executor, progress=progress, max_bytes=max_bytes,
                              search_options=search_options)
    rows, attrs = engines.census(problem, request, deltas, tuple(ks), summaries)
    frame = pd.DataFrame(rows)
    frame.attrs.update(attrs)
    return frame


def sample_patterns(pc: Circuit, decision, sensitive, delta: float, *, kind: str = "all",
                    k: int | None = None, favorable=None, time_limit: float | None = None,
                    runs: int | None = None, memo: bool = True,
                    random_state=None, min_support: float = 0.0) -> PatternSet:
    """Mine patterns by sampling (see :mod:`pcfair.patterns.sampling`); never certifies.

    ``kind`` is ``"all"``, ``"topk"`` (by |Δ|) or ``"pareto"`` (the strict front of the sampled
    patterns). The result is always marked incomplete; ``stats`` gives runs, patterns explored,
    seconds, and when the best pattern found was first seen. The engine table's ``"sample"``
    entry runs it, with these settings.

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
    if kind not in ("all", "topk", "pareto"):
        raise OptionError("sampling offers kind 'all', 'topk' or 'pareto'")
    problem = resolve_problem(pc, decision, sensitive, favorable)
    pc, d, fav = problem.pc, problem.d, problem.fav
    request = resolve_request(kind, delta, k=k, min_support=min_support, time_limit=time_limit)
    sampler = dataclasses.replace(engines.ENGINES["sample"], seconds=None, runs=runs, memo=memo,
                                  random_state=random_state)
    res = sampler.run(problem, request)
    return PatternSet(kind=kind, delta=request.delta, engine=res.engine, complete=False,
                      count=len(res.items), stats=res.stats,
                      patterns=readable_patterns(pc, d, fav, res.items, request.delta),
                      decision=pc.variables.names[d], favorable=pc.variables.domains[d][fav])
