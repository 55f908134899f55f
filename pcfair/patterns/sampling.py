"""The sampling miner (Algorithm 2 of the paper, and the memoized Algorithm 4 of its appendix).

Each run starts from the empty pattern and adds one assignment at a time until every feature is
decided: a sensitive feature may join ``x`` or ``y``, another feature joins ``y``. Among the
one-step extensions it picks one with probability proportional to ``score ** power``, with
``score = |Δ|`` (0 for a non-pattern: ``x`` empty or ``P(x, y) = 0``) and
``power = 1 + i / (n − 1)`` at step ``i`` of ``n``, so later steps are greedier. Every explored
pattern with ``|Δ| > δ`` is recorded.

The memoized variant caches every pattern's score and keeps, for each visited pattern, a running
mean of the best score seen below it, updated backwards along the path after each run; a visited
extension is then drawn by that mean instead of its own score. Sampling never certifies: its
results are always incomplete.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from pcfair._clock import expired
from pcfair._random import check_random_state
from pcfair.circuit.properties import require_tractable_marginals
from pcfair.errors import OptionError
from pcfair.patterns._arguments import Problem
from pcfair.patterns.scores import ScoredPattern, discriminates, log_support, pattern_marginals
from pcfair.patterns.search_types import SearchQuery

__all__ = ["found_patterns", "sample_search"]


@dataclass
class SamplingResult:
    """Patterns found ``{(x_items, y_items): (Δ, P(x, y), P(d, x, y), P(y), log P(x, y))}``
    and statistics."""

    found: dict = field(default_factory=dict)
    runs: int = 0
    explored: int = 0
    seconds: float = 0.0
    first_seen: dict = field(default_factory=dict)  # pattern -> (explored, seconds) when found


def found_patterns(found: dict) -> list[ScoredPattern]:
    """The patterns of a :attr:`SamplingResult.found` as index-form
    :class:`~pcfair.patterns.scores.ScoredPattern` items, in the order found."""
    return [ScoredPattern(dict(kx), dict(ky), v[0], v[1], v[4]) for (kx, ky), v in found.items()]


def sample_search(problem: Problem, query: SearchQuery, *, runs: int | None = None,
                  memo: bool = True, random_state=None) -> SamplingResult:
    """Run the sampling miner on ``problem`` until ``runs`` runs or the query's deadline (one
    is needed); of the query it reads the threshold, the minimum support and the deadline.

    Parameters
    ----------
    problem : Problem
        The circuit, the decision, its favourable value and the sensitive variables.
    query : SearchQuery
        What is asked (``delta``, ``min_support``, ``deadline``).
    runs : int, optional
        Runs from the empty pattern (None: until the deadline).
    memo : bool, default True
        The memoized variant (Algorithm 4): draw visited extensions by the mean of the best
        score found below them.
    random_state : None, int or numpy.random.Generator
        The draws' randomness (:func:`pcfair._random.check_random_state`).

    Returns
    -------
    SamplingResult
        The patterns found and the run's statistics.

    Raises
    ------
    OptionError
        Neither ``runs`` nor a deadline.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.2, 0.8]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.6, 0.4]), 0.5)]))
    >>> sample_search(Problem(pc, 0, 1, [1]), SearchQuery(0.1), runs=3, random_state=0).runs
    3
    """
    circuit, d, fav, sensitive = problem
    delta, deadline = query.delta, query.deadline
    if runs is None and deadline is None:
        raise OptionError("give runs= or a deadline (sampling has no natural end)")
    require_tractable_marginals(circuit)
    rng = check_random_state(random_state)
    n_vars = circuit.num_variables
    card = [int(c) for c in circuit.variables.cardinalities]
    sens = set(sensitive)
    features = [v for v in range(n_vars) if v != d]
    n = len(features)
    cache: dict[tuple, tuple[float, ...]] = {}
    mean: dict[tuple, tuple[float, int]] = {}
    res = SamplingResult()
    log_ms = log_support(query.min_support)
    t0 = time.perf_counter()

    def key(x: dict, y: dict) -> tuple:
        return tuple(sorted(x.items())), tuple(sorted(y.items()))

    def score_many(cands: list[tuple[dict, dict]]) -> list[tuple[float, ...]]:
        todo = [c for c in cands if key(*c) not in cache]
        if todo:
            m = pattern_marginals(circuit, d, fav, todo)
            for i, c in enumerate(todo):
                # a non-pattern (x empty) or an undefined one scores 0
                cache[key(*c)] = ((0.0, 0.0, 0.0, 0.0, -np.inf) if np.isnan(m.score[i]) else
                                  (float(m.score[i]), float(m.p_xy[i]), float(m.p_dxy[i]),
                                   float(m.p_y[i]), float(m.log_p_xy[i])))
                res.explored += 1
        return [cache[key(*c)] for c in cands]

    while True:
        if runs is not None and res.runs >= runs:
            break
        if expired(deadline):
            break
        x: dict = {}
        y: dict = {}
        path = []
        for step in range(n):
            cands = []
            for v in features:
                if v in x or v in y:
                    continue
                for val in range(card[v]):
                    if v in sens:
                        cands.append(({**x, v: val}, y))
                    cands.append((x, {**y, v: val}))
            scores = score_many(cands)
            for (cx, cy), sc in zip(cands, scores):
                k = key(cx, cy)
                if (discriminates(abs(sc[0]), delta) and sc[4] >= log_ms
                        and k not in res.found):
                    res.found[k] = sc
                    res.first_seen[k] = (res.explored, time.perf_counter() - t0)
            power = 1.0 + step / max(n - 1, 1)
            weights = np.array([
                (mean[key(*c)][0] if memo and key(*c) in mean else abs(s)) ** power
                for c, (s, *_) in zip(cands, scores)
            ])
            total = weights.sum()
            probs = weights / total if total > 0 else np.full(len(cands), 1.0 / len(cands))
            x, y = cands[int(rng.choice(len(cands), p=probs))]
            path.append(key(x, y))
        res.runs += 1
        if memo:  # back up the best score found below each visited pattern
            best = 0.0
            for k in reversed(path):
                best = max(best, abs(cache[k][0]))
                m, c = mean.get(k, (0.0, 0))
                mean[k] = (m + (best - m) / (c + 1), c + 1)
    res.seconds = time.perf_counter() - t0
    return res
