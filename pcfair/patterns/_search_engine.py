"""The branch-and-bound adapters of the engine table (:mod:`pcfair.patterns.engines`):

* ``naive_bayes_search``: the compiled search with the O(1) coupled bound
  (:mod:`pcfair.patterns.naive_bayes_search`), on naive Bayes in ``D``;
* ``tree_search``: the compiled search with the tree bound (:mod:`pcfair.patterns.tree_search`),
  on decision-rooted tree models;
* ``python_search``: the search in Python with the tightest bound that applies
  (:mod:`pcfair.patterns.search`), on deterministic, structured-decomposable circuits.

Their cost is not known before they run (``estimate`` is None: the engine table measures it
by a probe). :func:`search_census` answers :func:`pcfair.pattern_census` by searches where the
lattice does not fit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from pcfair.errors import PCFairError, SpecError
from pcfair.patterns._arguments import Problem, Request
from pcfair.patterns._engine_base import Estimate, fit_jobs
from pcfair.patterns.bounds import NaiveBayesBound, TreeBound, select_bound
from pcfair.patterns.naive_bayes_search import search_naive_bayes
from pcfair.patterns.parallel import parallel_search
from pcfair.patterns.results import EngineResult
from pcfair.patterns.scores import THRESHOLD_ATOL, discriminates, pattern_divergences
from pcfair.patterns.search import search
from pcfair.patterns.search_types import SearchQuery, SearchResult, pattern_key
from pcfair.patterns.summaries import pareto_mask
from pcfair.patterns.tree_search import search_tree

#: The kinds a compiled search answers when asked for by name (under ``engine="search"`` it
#: also lists the patterns of a maximal query, whose extensions the Python search checks).
COMPILED_KINDS = ("certify", "all", "topk")


def _search_stats(runs: list[SearchResult], name: str) -> dict:
    return {"engine": name, "nodes": sum(r.nodes for r in runs),
            "bound_evaluations": sum(r.bounds for r in runs),
            "pruned": sum(r.pruned for r in runs), "seconds": sum(r.seconds for r in runs),
            "bound": runs[0].bound if runs else ""}


@dataclass(frozen=True)
class SearchEngine:
    """A branch and bound in the engine table: ``runner`` is its search function
    (``runner(problem, query)`` with a :class:`~.search_types.SearchQuery`), ``splits`` whether its runs are
    split over processes (the naive-Bayes search runs here: it takes less time than starting
    workers). The Python search's adapter is :class:`PythonSearch`; the compiled ones apply
    where ``recognises`` the circuit and the request's :class:`SearchOptions` (``compiled``:
    ``SearchOptions(compiled=False)`` leaves them out).

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> from pcfair.patterns._arguments import resolve_problem, resolve_request
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.2, 0.8]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.6, 0.4]), 0.5)]))
    >>> problem = resolve_problem(pc, "d", ["s"], None)
    >>> TREE_SEARCH.can_run(problem, resolve_request("all", 0.1))
    True
    >>> len(TREE_SEARCH.run(problem, resolve_request("all", 0.1, progress=False)).items)
    2
    """

    name: str
    runner: Callable[[Problem, SearchQuery], SearchResult]
    recognises: Callable[[Problem, object], bool]
    kinds: tuple[str, ...] = COMPILED_KINDS
    splits: bool = True
    compiled: bool = True
    family: str = "search"
    lists_all: bool = False

    def can_run(self, problem: Problem, request: Request) -> Literal[True] | str:
        """True where the kind is one it answers (a maximal query's listing included) and it
        recognises the circuit and the options, else why not."""
        if request.kind not in (*self.kinds, "maximal"):
            return f"the {self.name} does not answer {request.kind!r}"
        if not self.recognises(problem, request.search_options):
            return ("the circuit is not one it recognises (or SearchOptions forces another "
                    "bound)")
        return True

    def require(self, problem: Problem, request: Request) -> None:
        """:class:`~pcfair.errors.SpecError` where :meth:`can_run` says no."""
        why = self.can_run(problem, request)
        if why is not True:
            raise SpecError(f"engine {self.name!r} does not apply: {why}")

    def estimate(self, problem: Problem, request: Request) -> Estimate | None:
        """None: a branch and bound's cost is known only once it runs (the engine table
        measures it by a probe)."""
        return None

    def run(self, problem: Problem, request: Request) -> EngineResult:
        """The request by this search; maximal patterns are its listing, then for each one
        the Python search of its extensions."""
        request = fit_jobs(request)
        kind = request.kind
        if kind == "maximal":
            return self._maximal(problem, request)
        res = self._run_split(problem, request, SearchQuery.from_request(request))
        items = res.patterns
        if kind == "pareto" and items:
            keep = pareto_mask(np.abs([it.score for it in items]),
                               np.array([it.probability for it in items]),
                               np.ones(len(items), bool))
            items = [it for it, kept in zip(items, keep) if kept]
        complete = res.complete or (kind == "certify" and bool(items))
        return EngineResult("search", items=items, complete=complete,
                            max_abs=res.best if res.best > 0 else None, max_abs_exact=False,
                            stats=_search_stats([res], self.name))

    def _run_split(self, problem: Problem, request: Request,
                   query: SearchQuery) -> SearchResult:
        """The search of ``query``, split over the request's processes where the engine can
        be."""
        return parallel_search(self.runner, problem, query,
                               n_jobs=request.n_jobs if self.splits else 1,
                               executor=request.executor if self.splits else None)

    def _maximal(self, problem: Problem, request: Request) -> EngineResult:
        """Maximal patterns by search: every pattern, then for each one a search of its
        extensions for another (the Python search's extension mode)."""
        res = self._run_split(problem, request, SearchQuery.from_request(request, "all"))
        runs, complete = [res], res.complete
        member = {pattern_key(it.x, it.y) for it in res.patterns}
        n_features = problem.pc.num_variables - 1
        extension = SearchQuery.from_request(request, "extension").but(progress=False,
                                                                       order=res.order)
        items = []
        for it in res.patterns:
            if len(it.x) + len(it.y) == n_features:
                continue  # a complete assignment is never maximal
            sub = search(problem, extension, start=(it.x, it.y), member=member)
            runs.append(sub)
            if not sub.complete:
                complete = False
                break
            if not sub.patterns:
                items.append(it)
        return EngineResult("search", items=items, complete=complete,
                            stats=_search_stats(runs, self.name))


@dataclass(frozen=True)
class PythonSearch(SearchEngine):
    """The branch and bound in Python (:func:`pcfair.patterns.search.search`): every kind
    but minimal, wherever a search bound applies (a deterministic, structured-decomposable
    circuit, :func:`pcfair.patterns.bounds.select_bound`)."""

    name: str = "python_search"
    runner: Callable[[Problem, SearchQuery], SearchResult] = search
    recognises: Callable[[Problem, object], bool] = lambda problem, opts: True
    kinds: tuple[str, ...] = ("certify", "all", "topk", "pareto", "maximal")
    compiled: bool = False

    def can_run(self, problem: Problem, request: Request) -> Literal[True] | str:
        """True where a search bound applies to the circuit, else why not."""
        if request.kind not in self.kinds:
            return f"the search does not answer {request.kind!r}"
        try:
            self.require(problem, request)
        except PCFairError as exc:
            return f"no search bound applies: {exc}"
        return True

    def require(self, problem: Problem, request: Request) -> None:
        """The bound's own error (a :class:`~pcfair.errors.StructureError` naming the missing
        property) where no search bound applies."""
        opts = request.search_options
        select_bound(problem.pc, problem.d, problem.fav, opts.bound,
                     naive_bayes=opts.naive_bayes_bound, share=opts.share_bounds)


def _naive_bayes(problem: Problem, opts) -> bool:
    """The naive-Bayes search applies: naive Bayes in ``D``, its bound neither switched off
    nor another forced."""
    return (opts.naive_bayes_bound and opts.bound in ("auto", "naive_bayes")
            and NaiveBayesBound.from_circuit(problem.pc, problem.d, problem.fav) is not None)


def _tree(problem: Problem, opts) -> bool:
    """The tree search applies: a decision-rooted tree model (a naive Bayes is one too),
    another bound not forced."""
    return (opts.bound in ("auto", "tree")
            and TreeBound.from_circuit(problem.pc, problem.d, problem.fav) is not None)


NAIVE_BAYES_SEARCH = SearchEngine("naive_bayes_search", search_naive_bayes, _naive_bayes,
                                  splits=False)
TREE_SEARCH = SearchEngine("tree_search", search_tree, _tree)
PYTHON_SEARCH = PythonSearch()


def search_census(problem: Problem, request: Request, deltas: tuple[float, ...],
                  ks: tuple[int, ...], summaries: bool,
                  answer: Callable[[Problem, Request], EngineResult]
                  ) -> tuple[list[dict], dict]:
    """The rows of :func:`pcfair.pattern_census` by searches (``answer`` runs a request
    through the engine table, the request's engine a search): one listing of every pattern
    at the smallest δ gives the counts, the k-th best ``|Δ|`` and the Pareto fronts of every
    δ (the patterns with ``|Δ| > δ``); a top-k by divergence per δ the divergence columns;
    with ``summaries``, a maximal query per δ the maximal counts where a search answers it.
    Minimal patterns need the lattice (None). A row whose runs stopped (the deadline, one for
    every run) says ``complete=False``: its counts are then lower bounds."""
    pc, d, fav, _ = problem
    kmax = max(ks)
    listing = answer(problem, request.but(kind="all", delta=min(deltas), count_only=False))
    scores = np.abs([it.score for it in listing.items])
    probs = np.array([it.probability for it in listing.items], float)
    rows = []
    for delta in deltas:
        keep = discriminates(scores, delta)
        row = {"delta": delta, "patterns": int(keep.sum()),
               "set_aside": 0 if request.min_support == 0 else None}
        complete = listing.complete
        row["maximal"] = None
        if summaries:
            try:
                maximal = answer(problem, request.but(kind="maximal", delta=delta))
            except PCFairError:
                pass  # no search answers maximal patterns here: left out (None)
            else:
                row["maximal"], complete = len(maximal.items), complete and maximal.complete
        row["minimal"] = None
        row["pareto"] = int(pareto_mask(scores[keep], probs[keep], np.ones(keep.sum(), bool)
                                        ).sum()) if keep.any() else 0
        top = answer(problem, request.but(kind="topk", rank_by="divergence", k=kmax,
                                          delta=delta))
        divs = pattern_divergences(pc, d, fav, [(it.x, it.y) for it in top.items],
                                   np.array([it.score for it in top.items], float), delta)
        complete = complete and top.complete
        top_abs = np.sort(scores[scores > delta + THRESHOLD_ATOL])[::-1]
        for name, values in (("abs_score", top_abs), ("divergence", np.sort(divs)[::-1])):
            for k in ks:
                row[f"top{k}_{name}"] = float(values[k - 1]) if len(values) >= k else float("nan")
        row["complete"] = complete
        rows.append(row)
    return rows, {"engine": listing.stats.get("engine", listing.engine)}
