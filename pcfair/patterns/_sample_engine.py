"""The sampling miner's adapter in the engine table (:mod:`pcfair.patterns.engines`): the
sampler of :mod:`pcfair.patterns.sampling`, never complete. It answers ``"all"``, ``"topk"``
(by ``|Δ|``) and ``"pareto"`` (the strict front of the sampled patterns) for
:func:`pcfair.sample_patterns`, and ``"certify"`` as ``engine="auto"``'s witness hunt where no
search applies (complete only with a witness, which settles a certification; its absence says
nothing).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from pcfair.errors import OptionError
from pcfair.patterns._arguments import Problem, Request
from pcfair.patterns._engine_base import Estimate
from pcfair.patterns.results import EngineResult
from pcfair.patterns.sampling import found_patterns, sample_search
from pcfair.patterns.search_types import SearchQuery
from pcfair.patterns.summaries import pareto_mask


@dataclass(frozen=True)
class SampleEngine:
    """The sampler: ``runs`` runs, or until the request's deadline (``seconds`` from the
    start without one; at least one of the two is needed), ``memo`` and ``random_state`` as
    :func:`~pcfair.patterns.sampling.sample_search` takes them. The table's entry hunts
    witnesses; :func:`pcfair.sample_patterns` runs a copy with its own settings
    (:func:`dataclasses.replace`).

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> from pcfair.patterns._arguments import resolve_problem, resolve_request
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.2, 0.8]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.6, 0.4]), 0.5)]))
    >>> problem = resolve_problem(pc, "d", ["s"], None)
    >>> res = SampleEngine(runs=5).run(problem, resolve_request("all", 0.1))
    >>> res.complete, len(res.items)
    (False, 2)
    """

    seconds: float | None = None
    runs: int | None = None
    memo: bool = True
    random_state: object = 0
    name: str = "sample"
    family: str = "sample"
    kinds: tuple[str, ...] = ("certify", "all", "topk", "pareto")
    lists_all: bool = False

    def can_run(self, problem: Problem, request: Request) -> Literal[True] | str:
        """True for the kinds it answers (any circuit with tractable marginals)."""
        return True if request.kind in self.kinds else \
            f"the sampler does not answer {request.kind!r}"

    def require(self, problem: Problem, request: Request) -> None:
        """:class:`~pcfair.errors.OptionError` for a kind it does not answer."""
        why = self.can_run(problem, request)
        if why is not True:
            raise OptionError(why)

    def estimate(self, problem: Problem, request: Request) -> Estimate | None:
        """None: the sampler runs until its runs or its time are spent, and is never
        complete."""
        return None

    def run(self, problem: Problem, request: Request) -> EngineResult:
        """Sample; the patterns in order of ``|Δ|``, best first (a certification keeps the
        best one, and is complete where it has one)."""
        query = SearchQuery.from_request(request)
        if request.deadline is None:
            query = query.within(self.seconds)
        res = sample_search(problem, query, runs=self.runs, memo=self.memo,
                            random_state=self.random_state)
        items = found_patterns(res.found)
        items.sort(key=lambda it: -abs(it.score))
        kind = request.kind
        if kind in ("certify", "topk"):
            items = items[:1 if kind == "certify" else request.k]
        elif kind == "pareto" and items:
            keep = pareto_mask(np.array([abs(it.score) for it in items]),
                               np.array([it.probability for it in items]),
                               np.ones(len(items), bool))
            items = [it for it, kept in zip(items, keep) if kept]
        stats = {"engine": self.name, "runs": res.runs, "explored": res.explored,
                 "seconds": res.seconds}
        if res.found:
            best = max(res.found, key=lambda kk: abs(res.found[kk][0]))
            stats["best_first_seen_explored"], stats["best_first_seen_seconds"] = \
                res.first_seen[best]
        return EngineResult(self.name, items=items, complete=kind == "certify" and bool(items),
                            max_abs=abs(items[0].score) if items else None, stats=stats)
