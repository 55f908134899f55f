"""Branch and bound over discrimination patterns (Algorithm 1 of the paper, improved).

Variables are decided in a fixed order, sensitive ones first: each is put in ``x`` (with each
value; sensitive variables only), in ``y`` (with each value), or excluded. Every pattern is
generated exactly once (at the node that decides its last variable) and scored by marginal
queries. A node's subtree is pruned when the bound of ``pc-certifier.md`` §4,

    UB = max(max_u P(d|x,y,u) − min_u P(d|y,u),  max_u P(d|y,u) − min_u P(d|x,y,u)),

(``u`` complete assignments of the undecided variables; excluded variables, and ``X`` in the
``P(d|y,u)`` terms, marginalised) cannot beat the threshold: δ when enumerating or certifying,
``max(δ, k-th best |Δ|)`` for top-k, the Pareto front's level at the node's probability for
Pareto mining. For top-k by divergence, :func:`divergence_bound` (proved in its docstring;
the bound quoted in ``pc-certifier.md`` §2 is not sound for the closed form and is not used)
prunes as well. The bounds are :class:`pcfair.patterns.bounds.Bound` implementations, each
proved in its docstring: the paper's :class:`~pcfair.patterns.bounds.QuotientBound` (from the
pairwise quotient pass, so the circuit must be deterministic and structured-decomposable,
checked), and the tighter coupled bounds below; :func:`pcfair.patterns.bounds.select_bound`
picks the tightest that applies (``SearchOptions.bound`` forces one).

Improvements over the paper's search, each sound and each switchable (:class:`SearchOptions`;
``benchmarks/bench_patterns.py`` measures them against :data:`PAPER`):

- **ordering**: sensitive variables first (required), each group by decreasing mutual
  information with the decision under the circuit, so influential variables are decided early
  and the bounds tighten sooner (the paper: file order);
- **shared bounds**: the ``P(d|y,u)`` extremes depend only on ``y`` and the undecided variables,
  which siblings share (the ``x`` children and the excluded child of a node): computed once;
- **best first**: for top-k and Pareto mining, children are visited by decreasing score so the
  threshold rises early;
- **seeding**: a top-k search starts from the best patterns of a short run of the sampling
  miner (exact scores of real patterns, so the threshold is sound from the start; the result
  does not depend on the sampler's luck, only the speed does);
- **naive Bayes bound**: when the circuit is naive Bayes in ``D`` (checked on its structure),
  disclosing features shifts the log-odds additively, ``logit P(d|x',y') = t + s`` with
  ``t = logit P(d|y')``, so ``Δ = σ(t + s) − σ(t)``; with ``t`` and ``s`` boxed by the
  per-feature log-odds of the undecided variables, the bound is that function's maximum over
  the box (at ``t = −s/2`` clipped), which couples the two terms the quotient bound maximises
  apart (see :class:`~pcfair.patterns.bounds.NaiveBayesBound`);
- **tree bound**: when the circuit is a decision-rooted tree-augmented model (a Chow-Liu tree
  learned by :func:`pcfair.learn.learn_pc`, recognised exactly on its structure), the same
  coupling over the decision's subtrees, with exact values for subtrees that are fully
  decided (see :class:`~pcfair.patterns.bounds.TreeBound`);
- **fused bounds**: both quotient passes of a node in one compiled call (always on).

The query's deadline stops the search; the result then says it is incomplete.
"""

from __future__ import annotations

import bisect
import contextlib
import heapq
import math
import time

import numpy as np

from pcfair._progress import progress_bar
from pcfair.circuit.properties import require_tractable_marginals
from pcfair.patterns._arguments import Problem
from pcfair.patterns.bounds import Bound, select_bound
from pcfair.patterns.results import HANDOVER_SECONDS
from pcfair.patterns.sampling import found_patterns, sample_search
from pcfair.patterns.scores import (
    THRESHOLD_ATOL,
    ScoredPattern,
    discriminates,
    log_support,
    pattern_divergences,
    pattern_marginals,
)
from pcfair.patterns.search_types import SearchQuery, SearchResult, pattern_key, search_order

__all__ = ["divergence_bound", "search"]


class _Stop(Exception):
    """Raised inside the recursion to end the search (first witness, or the time limit)."""


class _Front:
    """Points ``(P, |Δ|)`` seen so far; ``level(p)`` is the best ``|Δ|`` among points more
    probable than ``p`` by a margin (the staircase a Pareto candidate must beat)."""

    def __init__(self) -> None:
        self.points: list[tuple[float, float]] = []
        self._dirty = False
        self._neg_p = np.zeros(0)
        self._best = np.zeros(0)

    def add(self, prob: float, abs_score: float) -> None:
        self.points.append((prob, abs_score))
        self._dirty = True

    def level(self, prob: float) -> float:
        if self._dirty:
            pts = sorted(self.points, key=lambda t: -t[0])
            self._neg_p = np.array([-p for p, _ in pts])
            self._best = np.maximum.accumulate(np.array([a for _, a in pts]))
            self._dirty = False
        # strictly more probable by a relative margin: ties are left to the final filter
        i = bisect.bisect_left(self._neg_p, -(prob * (1 + 1e-9) + 1e-15))
        return float(self._best[i - 1]) if i > 0 else -math.inf


def bernoulli_kl(q: float, c: float) -> float:
    """``KL(Bernoulli(q) ‖ Bernoulli(c))`` in nats, with ``0·log 0 = 0`` and +inf where ``c``
    puts zero mass on an outcome ``q`` gives mass to.

    Examples
    --------
    >>> round(bernoulli_kl(0.5, 0.25), 6), bernoulli_kl(1.0, 0.0), bernoulli_kl(0.0, 0.0)
    (0.143841, inf, 0.0)
    """
    out = 0.0
    for a, b in ((q, c), (1.0 - q, 1.0 - c)):
        if a > 0:
            if b <= 0:
                return math.inf
            out += a * math.log(a / b)
    return max(out, 0.0)


def divergence_bound(p_xy: float, a_min: float, a_max: float, r_min: float, r_max: float,
                     delta: float) -> float:
    """An upper bound on the divergence score of every extension of a search node.

    Parameters: ``p_xy`` = P(x, y) of the node (``P(y)`` while ``x`` is empty), ``[a_min,
    a_max]`` a range of ``P(d | x', y')`` over the node's extensions ``(x', y')``, and
    ``[r_min, r_max]`` a range of ``b̄ = P(d | y', ¬x')``, where ``¬x'`` is "some variable of
    ``x'`` takes another value".

    Theorem. Every extension ``(x', y')`` with ``|Δ| > δ`` has
    ``Div(x', y') ≤ p_xy · max(KL(a_max ‖ r_min + δ), KL(a_min ‖ r_max − δ))``, a side taken
    only where its second argument lies strictly inside the first's reach (``a_max > r_min + δ``,
    resp. ``a_min < r_max − δ``); KL is :func:`bernoulli_kl`.

    Proof. Write ``q = P(d | x', y')`` and ``ρ = P(x' | y') < 1`` (``ρ = 1`` gives Δ = 0). Then
    ``P(d | y') = ρq + (1 − ρ)b̄``, so ``Δ = (1 − ρ)(q − b̄)``. The closed form of §2 is the KL
    divergence of the ``Q`` that keeps every mass outside ``x'y'`` and ``P(x', y')``, moving
    ``q`` to ``q'``: ``Div = P(x', y')·KL(q ‖ q')``. Under ``Q``, ``P_Q(d | y') = ρq' + (1 − ρ)b̄``
    (``b̄`` is a conditional outside ``x'y'``, unchanged), so ``Δ_Q = (1 − ρ)(q' − b̄)``, and the
    closed form puts ``Δ_Q = δ``: ``q' = b̄ + δ/(1 − ρ)``. For ``Δ > δ`` this gives
    ``b̄ + δ ≤ q' < q``. ``KL(q ‖ c)`` decreases in ``c`` on ``[0, q]`` (its derivative is
    ``(c − q)/(c(1 − c)) ≤ 0``) and increases in ``q`` on ``[c, 1]``, so
    ``KL(q ‖ q') ≤ KL(q ‖ b̄ + δ) ≤ KL(a_max ‖ r_min + δ)``, the chain staying in the monotone
    range because ``a_max ≥ q > b̄ + δ ≥ r_min + δ``. With ``P(x', y') ≤ P(x, y) = p_xy``
    (an extension only adds conditions) the positive side follows; for ``Δ < −δ``,
    ``q < q' ≤ b̄ − δ`` and the mirror argument gives ``KL(a_min ‖ r_max − δ)``. ∎

    The spec's counterexample (naive Bayes, P(d) = .99, δ = .01, pattern ``s=0 | a=0``,
    divergence 0.1597) is covered: there ``b̄ = P(d | a=0, s=1)`` is far below
    ``P(d | a=0)``, which is what the quoted bound used. Rounding: the result is inflated by
    a relative 1e-9, so conditionals rounded by a few ulps cannot make it fall below a true
    value.

    Examples
    --------
    >>> round(divergence_bound(0.5, 0.2, 0.9, 0.1, 0.6, 0.05), 4)
    0.6993
    """
    best = 0.0
    hi, lo = r_min + delta, r_max - delta
    if a_max > hi:
        best = max(best, bernoulli_kl(a_max, hi))
    if a_min < lo:
        best = max(best, bernoulli_kl(a_min, lo))
    return p_xy * best * (1.0 + 1e-9)


def search(problem: Problem, query: SearchQuery, *, start: tuple[dict, dict] | None = None,
           member: set | None = None, assume_deterministic: bool = False) -> SearchResult:
    """Branch-and-bound search of ``query`` (every mode of :class:`SearchQuery`) on
    ``problem``.

    This is the search in Python, for every bound and mode; the engine table
    (:mod:`pcfair.patterns.engines`) runs a compiled search instead where one applies
    (``options.compiled``).

    Parameters
    ----------
    problem : Problem
        The circuit, the decision, its favourable value and the sensitive variables.
    query : SearchQuery
        What is asked, as the API checked it.
    start : tuple of dict, optional
        ``(x, y)``: begin the search at this pattern (its extensions only).
    member : set, optional
        The :func:`pattern_key` of the patterns an ``"extension"`` query looks for.
    assume_deterministic : bool, default False
        Take the circuit as deterministic without checking
        (:func:`pcfair.patterns.bounds.select_bound`).

    Returns
    -------
    SearchResult
        The patterns and the search's statistics.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.2, 0.8]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.6, 0.4]), 0.5)]))
    >>> res = search(Problem(pc, 0, 1, [1]), SearchQuery(0.1, progress=False))
    >>> sorted(round(p.score, 4) for p in res.patterns)
    [-0.25, 0.1667]
    """
    bound, order, root = _set_up(problem, query, start, assume_deterministic)
    res = SearchResult(order=list(order), bound=bound.name)
    t0 = time.perf_counter()
    tally = _Tally(problem, query, member, res)
    if query.mode == "topk" and query.options.seed_runs > 0 and start is None:
        tally.seed()
    _walk(problem, query, bound, order, root, tally)
    if query.mode == "topk":
        res.patterns = tally.top_patterns()
    res.bounds = bound.calls
    res.seconds = time.perf_counter() - t0
    return res


def _set_up(problem: Problem, query: SearchQuery, start: tuple[dict, dict] | None,
            assume_deterministic: bool) -> tuple[Bound, list[int], tuple[dict, dict]]:
    """The bound the search prunes with, the order of the variables it decides (those of
    ``start`` left out) and its root ``(x, y)``."""
    pc, d, fav, sensitive = problem
    options = query.options
    require_tractable_marginals(pc)
    bound = select_bound(pc, d, fav, options.bound, naive_bayes=options.naive_bayes_bound,
                         assume_deterministic=assume_deterministic, share=options.share_bounds)
    order = query.order
    if order is None:
        order = search_order(pc, d, fav, sensitive, options.ordering)
    x0, y0 = start if start is not None else ({}, {})
    order = [v for v in order if v not in x0 and v not in y0]
    return bound, order, (dict(x0), dict(y0))


class _Tally:
    """What the search keeps as it goes (the patterns of its mode, the top-k heap, the
    Pareto front) and the threshold a node's bound must beat (:meth:`cut`)."""

    def __init__(self, problem: Problem, query: SearchQuery, member: set | None,
                 res: SearchResult) -> None:
        self.problem, self.query, self.member, self.res = problem, query, member, res
        self.mode, self.k, self.delta = query.mode, query.k, query.delta
        self.divergence_rank = query.mode == "topk" and query.rank_by == "divergence"
        self.log_ms = log_support(query.min_support)
        self.top: list[tuple[float, int, ScoredPattern]] = []  # min-heap (key, tie, pattern)
        self.in_top: set = set()
        self.front = _Front()
        self.counter = 0

    def divergences(self, patterns: list[tuple[dict, dict]], score: np.ndarray) -> np.ndarray:
        """The divergence scores of ``patterns`` (of scores ``score``)."""
        pc, d, fav, _ = self.problem
        return pattern_divergences(pc, d, fav, patterns, score, self.delta)

    def cut(self, ub: float, a_min: float, a_max: float, rest, p_xy: float) -> bool:
        """Prune given the score bound ``ub``, the range of P(d|x',y') and a function giving
        the range of P(d|y',¬x') (asked only for top-k by divergence). The bound and the
        scores it bounds are computed differently (quotient pass, marginal queries), so it is
        inflated by a relative 1e-9 before it is compared: rounding must not prune a pattern
        whose computed score lies a few ulps above it."""
        ub = ub * (1.0 + 1e-9) + 1e-300
        if ub <= self.delta + THRESHOLD_ATOL:
            return True
        top = self.top
        if self.mode == "topk":
            if len(top) < self.k:
                return False
            if not self.divergence_rank:
                return ub <= top[0][0]
            r_min, r_max = rest()
            return divergence_bound(p_xy, a_min, a_max, r_min, r_max, self.delta) <= top[0][0]
        if self.mode == "pareto":
            return self.front.level(p_xy) > ub + 1e-12
        return False

    def record(self, item: ScoredPattern, div: float) -> None:
        """Keep ``item`` (of divergence ``div``) where the mode counts it; :class:`_Stop`
        where it settles the search."""
        s = item.score
        res, mode = self.res, self.mode
        res.best = max(res.best, abs(s))
        if mode == "extension":
            if pattern_key(item.x, item.y) in self.member:
                res.patterns.append(item)
                raise _Stop
            return
        if not discriminates(abs(s), self.delta) or item.log_probability < self.log_ms:
            return
        if mode == "topk":
            self._push(item, div)
        elif mode == "pareto":
            if self.front.level(item.probability) <= abs(s) * (1 + 1e-9) + 1e-12:
                res.patterns.append(item)
                self.front.add(item.probability, abs(s))
        else:
            res.patterns.append(item)
            if mode == "first":
                raise _Stop

    def _push(self, item: ScoredPattern, div: float) -> None:
        """``item`` into the top-k heap, where it is better than the ``k``-th."""
        pk = pattern_key(item.x, item.y)
        if pk in self.in_top:
            return  # a seeded pattern, met again
        self.counter += 1
        top = self.top
        entry = (div if self.divergence_rank else abs(item.score), -self.counter, item)
        if len(top) < self.k:
            heapq.heappush(top, entry)
            self.in_top.add(pk)
        elif entry[0] > top[0][0]:
            gone = heapq.heapreplace(top, entry)
            self.in_top.discard(pattern_key(gone[2].x, gone[2].y))
            self.in_top.add(pk)

    def seed(self) -> None:
        """Pre-fill the top-k with the patterns of a short run of the sampling miner (a tenth
        of the time left)."""
        query = self.query
        deadline = query.deadline
        budget = None if deadline is None else max(0.0, 0.1 * (deadline - time.time()))
        sampled = SearchQuery(query.delta).within(budget)
        found = sample_search(self.problem, sampled, runs=query.options.seed_runs, memo=True,
                              random_state=0).found
        items = found_patterns(found)
        if items:
            divs = (self.divergences([it[:2] for it in items],
                                     np.array([it.score for it in items]))
                    if self.divergence_rank else np.zeros(len(items)))
            for it, dv in zip(items, divs):
                self.record(it, float(dv))

    def top_patterns(self) -> list[ScoredPattern]:
        """The top-k, best first."""
        return [entry[2] for entry in sorted(self.top, key=lambda e: (-e[0], -e[1]))]


def _walk(problem: Problem, query: SearchQuery, bound: Bound, order: list[int],
          root: tuple[dict, dict], tally: _Tally) -> None:
    """Visit the nodes below ``root`` depth first in ``order``, pruning by ``bound`` and
    ``tally``'s threshold and recording the patterns in ``tally``, until the tree is done or
    the search stops (:class:`_Stop`: a witness, the deadline)."""
    pc, d, fav, sensitive = problem
    card = [int(c) for c in pc.variables.cardinalities]
    sens = set(sensitive)
    res, record, cut = tally.res, tally.record, tally.cut
    deadline, partition = query.deadline, query.partition
    log_ms, divergence_rank = tally.log_ms, tally.divergence_rank
    best_first = query.options.best_first and query.mode in ("topk", "pareto")
    bar = progress_bar(query.progress, "branch and bound")

    def prune(x: dict, y: dict, depth: int, lp_xy: float) -> bool:
        """Whether no extension decided below this node can count (see the module doc)."""
        nb = bound.node(x, y, tuple(order[depth:]), sens)
        if nb is None:
            return True  # probability zero: no extension is a defined pattern
        return cut(nb.ub, nb.a_min, nb.a_max, nb.rest, math.exp(lp_xy))

    def visit(x: dict, y: dict, depth: int, lp_xy: float) -> None:
        """Visit the node ``(x, y)`` at ``depth`` (``lp_xy`` its ``log P(x, y)``: support and
        definedness are decided in logs, so a pattern below the double range is neither
        dropped as undefined nor kept below ``min_support``)."""
        res.nodes += 1
        if res.nodes % 256 == 0:
            bar.update(256)
        # stop early enough to hand over what was found within the deadline
        if deadline is not None and \
                time.time() + HANDOVER_SECONDS * len(res.patterns) > deadline:
            res.complete = False
            raise _Stop
        if depth == len(order):
            return
        if (partition is not None and depth == partition[2]
                and hash((pattern_key(x, y), depth)) % partition[1] != partition[0]):
            return  # another worker's subtree
        if not x and not any(v in sens for v in order[depth:]):
            return  # no sensitive variable left to put in x
        if (x or y) and (lp_xy < log_ms or prune(x, y, depth, lp_xy)):
            res.pruned += 1
            return
        z = order[depth]
        children = [({**x, z: val}, y) for val in range(card[z])] if z in sens else []
        children += [(x, {**y, z: val}) for val in range(card[z])]
        m = pattern_marginals(pc, d, fav, children)
        div = tally.divergences(children, m.score) if divergence_rank else None
        idx = range(len(children))
        if best_first:
            key = div if divergence_rank else np.nan_to_num(np.abs(m.score), nan=-1.0)
            idx = np.argsort(-key, kind="stable")
        for i in idx:
            lp = float(m.log_p_xy[i])
            if lp == -math.inf:
                continue  # P(x, y) = 0: neither it nor its extensions are defined
            nx, ny = children[i]
            if nx:
                record(ScoredPattern(nx, ny, float(m.score[i]), float(m.p_xy[i]), lp),
                       float(div[i]) if div is not None else 0.0)
            visit(nx, ny, depth + 1, lp)
        visit(x, y, depth + 1, lp_xy)

    x0, y0 = root
    start_m = pattern_marginals(pc, d, fav, [(x0, y0)])
    with bar, contextlib.suppress(_Stop):
        visit(x0, y0, 0, float(start_m.log_p_xy[0]))
