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
prunes as well. The bounds come from the pairwise quotient pass, so the circuit must be
deterministic and structured-decomposable (checked).

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
  apart (see :class:`NaiveBayesBound`);
- **fused bounds**: both quotient passes of a node in one compiled call (always on).

A ``time_limit`` stops the search; the result then says it is incomplete.
"""

from __future__ import annotations

import bisect
import contextlib
import heapq
import math
import sys
import time
from dataclasses import dataclass, field

import numpy as np

from pcfair.circuit.circuit import SUM, Circuit
from pcfair.circuit.derived import derived
from pcfair.circuit.properties import require_tractable_marginals
from pcfair.errors import EvidenceError, OptionError
from pcfair.inference.marginals import log_marginals, node_log_values
from pcfair.inference.quotient import _sigmoid, conditional_range, self_plan
from pcfair.patterns.scores import (
    THRESHOLD_ATOL,
    ScoredPattern,
    discriminates,
    log_normalizer,
    pattern_divergences,
    pattern_marginals,
)

MODES = ("all", "first", "topk", "pareto", "extension")


@dataclass(frozen=True)
class SearchOptions:
    """Switches for the search's improvements (see the module docstring)."""

    ordering: str = "influence"  # or "index": sensitive first, then the circuit's order
    share_bounds: bool = True
    best_first: bool = True
    seed_runs: int = 20  # sampling-miner runs whose patterns pre-fill a top-k (0: off)
    naive_bayes_bound: bool = True  # the coupled bound when the circuit is naive Bayes in D


#: The paper's search: file order, no shared bounds, children in generation order, no seeding,
#: the quotient bound only.
PAPER = SearchOptions(ordering="index", share_bounds=False, best_first=False, seed_runs=0,
                      naive_bayes_bound=False)


@dataclass
class SearchResult:
    """Patterns found (:class:`~pcfair.patterns.scores.ScoredPattern`), plus statistics;
    ``best`` is the largest ``|Δ|`` among the patterns the run scored (a lower bound on the
    model's largest)."""

    patterns: list = field(default_factory=list)
    complete: bool = True
    nodes: int = 0
    bounds: int = 0
    pruned: int = 0
    seconds: float = 0.0
    order: list = field(default_factory=list)
    best: float = 0.0


class _Stop(Exception):
    """Raised inside the recursion to end the search (first witness, or the time limit)."""


def progress_bar(progress: bool | None, desc: str):
    """A tqdm counter, shown when ``progress`` is True, or None and stderr is a terminal."""
    from tqdm import tqdm  # the text bar: tqdm.auto wants ipywidgets inside notebooks

    show = sys.stderr.isatty() if progress is None else bool(progress)
    return tqdm(desc=desc, unit=" nodes", disable=not show, mininterval=0.5)


def decision_information(circuit: Circuit, d: int, variables: list[int]) -> np.ndarray:
    """Mutual information ``I(V; D)`` (nats) under the circuit for each variable ``V``."""
    card = circuit.variables.cardinalities
    out = np.zeros(len(variables))
    for j, v in enumerate(variables):
        k = int(card[v])
        rows = np.full((2 * k, circuit.num_variables), -1, np.int32)
        rows[:, v] = np.repeat(np.arange(k), 2)
        rows[:, d] = np.tile([0, 1], k)
        lp = log_marginals(circuit, rows)
        top = log_normalizer(float(lp.max()))  # refuses a circuit of mass zero
        joint = np.exp(lp - top).reshape(k, 2)  # any constant factor cancels here
        joint /= joint.sum()
        indep = joint.sum(axis=1, keepdims=True) * joint.sum(axis=0, keepdims=True)
        pos = joint > 0
        out[j] = float(np.sum(joint[pos] * np.log(joint[pos] / indep[pos])))
    return out


def search_order(circuit: Circuit, d: int, fav: int, sensitive: list[int],
                 ordering: str = "influence") -> list[int]:
    """The variable order: sensitive variables first, then the others; within each group by
    decreasing mutual information with the decision (``"influence"``) or by index."""
    sens = sorted(set(sensitive))
    rest = [v for v in range(circuit.num_variables) if v != d and v not in set(sens)]
    if ordering == "index":
        return sens + rest
    if ordering != "influence":
        raise OptionError(f"ordering must be 'influence' or 'index', not {ordering!r}")
    info = decision_information(circuit, d, sens + rest)
    key = dict(zip(sens + rest, info))
    return (sorted(sens, key=lambda v: -key[v]) + sorted(rest, key=lambda v: -key[v]))


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


class NaiveBayesBound:
    """The coupled bound for a circuit that is naive Bayes in the decision.

    ``from_circuit`` recognises ``P(D) Π_z P(z | D)`` on the circuit's structure: a root sum
    whose elements are a factor over ``D`` alone pinning one value and a factor over the other
    variables in which every sum with more than one element has a one-variable scope (a fully
    factorised distribution); it returns None otherwise, and when a log-odds is infinite.
    ``w[v][k] = log P(v=k | d) − log P(v=k | ¬d)``, ``prior = log P(d) − log P(¬d)``.

    Soundness: for an extension ``(x', y')`` of the node ``(x, y)``,
    ``logit P(d | y') = prior + Σ_{y'} w = t`` and ``logit P(d | x', y') = t + s`` with
    ``s = Σ_{x'} w``. Each undecided variable adds ``w`` or nothing to ``t`` (and, if sensitive,
    possibly to ``s`` instead), so ``t ∈ [T_lo, T_hi]``, ``s ∈ [S_lo, S_hi]`` (a box containing
    every reachable pair). ``σ(t + s) − σ(t)`` grows with ``s`` and, for fixed ``s > 0``, is
    unimodal in ``t`` with its peak at ``−s/2``: the maximum over the box is at ``s = S_hi`` and
    ``t`` = ``−S_hi/2`` clipped to ``[T_lo, T_hi]`` (symmetrically for negative scores).

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1], "z": [0, 1]})
    >>> def given(ps, pz):
    ...     return b.product(b.categorical("s", ps), b.categorical("z", pz))
    >>> pc = b.build(b.decision([(b.indicator("d", 1), given([.2, .8], [.5, .5]), .5),
    ...                          (b.indicator("d", 0), given([.6, .4], [.3, .7]), .5)]))
    >>> nb = NaiveBayesBound.from_circuit(pc, 0, 1)
    >>> [round(float(v), 4) for v in nb.w[1]]
    [-1.0986, 0.6931]
    """

    def __init__(self, prior: float, w: list[np.ndarray]) -> None:
        self.prior = prior
        self.w = w

    @classmethod
    def from_circuit(cls, circuit: Circuit, d: int, fav: int) -> "NaiveBayesBound | None":
        """The bound of ``circuit`` for decision ``d = fav``, or None (cached on the circuit:
        a maximal-pattern search asks once per pattern)."""
        return derived(circuit, ("naive_bayes_bound", d, fav),
                       lambda: cls._detect(circuit, d, fav))

    @classmethod
    def _detect(cls, circuit: Circuit, d: int, fav: int) -> "NaiveBayesBound | None":
        r = circuit.root
        if circuit.kind[r] != SUM:
            return None
        scopes = circuit.scopes()
        dbit = 1 << d
        pinned = {}
        for value in range(int(circuit.variables.cardinalities[d])):
            ev = np.full(circuit.num_variables, -1, np.int32)
            ev[d] = value
            pinned[value] = node_log_values(circuit, ev)
        values, rests = [], []
        for e in range(circuit.edge_ptr[r], circuit.edge_ptr[r + 1]):
            a, b = int(circuit.edge_a[e]), int(circuit.edge_b[e])
            if b < 0 or circuit.edge_logw[e] == -np.inf:
                return None
            dfac, rest = (a, b) if scopes[a] == dbit else (b, a) if scopes[b] == dbit else (-1, -1)
            if dfac < 0:
                return None
            on = [v for v in pinned if pinned[v][dfac] > -np.inf]
            if len(on) != 1:
                return None
            values.append(on[0])
            rests.append(rest)
        if sorted(values) != [0, 1]:
            return None
        stack, seen = list(rests), set()
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            lo, hi = circuit.edge_ptr[i], circuit.edge_ptr[i + 1]
            if circuit.kind[i] == SUM and hi - lo > 1 and bin(scopes[i]).count("1") > 1:
                return None  # a mixture over several variables: not fully factorised
            for e in range(lo, hi):
                stack.append(int(circuit.edge_a[e]))
                if circuit.edge_b[e] >= 0:
                    stack.append(int(circuit.edge_b[e]))
        card = circuit.variables.cardinalities
        rows = [np.full(circuit.num_variables, -1, np.int32) for _ in range(2)]
        rows[0][d], rows[1][d] = fav, 1 - fav
        for v in range(circuit.num_variables):
            if v == d:
                continue
            for k in range(int(card[v])):
                for dv in (fav, 1 - fav):
                    r_ = np.full(circuit.num_variables, -1, np.int32)
                    r_[v], r_[d] = k, dv
                    rows.append(r_)
        lp = log_marginals(circuit, np.array(rows))
        prior = float(lp[0] - lp[1])
        w: list[np.ndarray] = []
        i = 2
        for v in range(circuit.num_variables):
            if v == d:
                w.append(np.zeros(0))
                continue
            k = int(card[v])
            pair = lp[i: i + 2 * k].reshape(k, 2)
            w.append((pair[:, 0] - lp[0]) - (pair[:, 1] - lp[1]))
            i += 2 * k
        if not np.isfinite(prior) or not all(np.all(np.isfinite(a)) for a in w):
            return None
        return cls(prior, w)

    def ranges(self, x: dict, y: dict, free: list[int], sensitive: set
               ) -> tuple[float, float, float, float]:
        """``(T_lo, T_hi, S_lo, S_hi)`` over the extensions of ``(x, y)`` by ``free``."""
        t = self.prior + sum(float(self.w[v][k]) for v, k in y.items())
        s = sum(float(self.w[v][k]) for v, k in x.items())
        t_lo = t_hi = t
        s_lo = s_hi = s
        for v in free:
            lo, hi = min(0.0, float(self.w[v].min())), max(0.0, float(self.w[v].max()))
            t_lo, t_hi = t_lo + lo, t_hi + hi
            if v in sensitive:
                s_lo, s_hi = s_lo + lo, s_hi + hi
        return t_lo, t_hi, s_lo, s_hi

    def rest_range(self, x: dict, t_lo: float, t_hi: float) -> tuple[float, float]:
        """Log-odds range of ``P(d | y', x'')`` for every extension ``y'`` of the node and
        every assignment ``x''`` of the variables of ``x`` (and of the undecided ones): the
        ``t`` box widened by each ``x`` variable's full range of ``w``. It contains
        ``logit P(d | y', ¬x')``, a mixture of such terms (see :func:`divergence_bound`)."""
        lo = t_lo + sum(float(self.w[v].min()) for v in x)
        hi = t_hi + sum(float(self.w[v].max()) for v in x)
        return lo, hi

    @staticmethod
    def bound(t_lo: float, t_hi: float, s_lo: float, s_hi: float) -> float:
        """Max of ``|σ(t + s) − σ(t)|`` over the box."""
        sig = _sigmoid
        best = 0.0
        if s_hi > 0:
            t = min(max(-s_hi / 2, t_lo), t_hi)
            best = max(best, sig(t + s_hi) - sig(t))
        if s_lo < 0:
            t = min(max(-s_lo / 2, t_lo), t_hi)
            best = max(best, sig(t) - sig(t + s_lo))
        return best


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


def pattern_key(x: dict, y: dict) -> tuple:
    """A hashable key of a pattern (index form)."""
    return tuple(sorted(x.items())), tuple(sorted(y.items()))


def search(circuit: Circuit, d: int, fav: int, sensitive: list[int], delta: float, *,
           mode: str = "all", k: int = 10, rank_by: str = "discrimination",
           time_limit: float | None = None, deadline: float | None = None,
           assume_deterministic: bool = False, progress: bool | None = None,
           options: SearchOptions = SearchOptions(), order: list[int] | None = None,
           start: tuple[dict, dict] | None = None, member: set | None = None,
           partition: tuple[int, int, int] | None = None,
           min_support: float = 0.0) -> SearchResult:
    """Branch-and-bound search.

    Patterns with ``P(x, y) < min_support`` are not patterns here (set aside), and a node
    below it is pruned with its subtree (every extension is rarer still); the search does not
    count the patterns it so sets aside.

    ``mode``: ``"all"`` (every pattern with |Δ| > δ), ``"first"`` (stop at the first one:
    certification), ``"topk"`` (the ``k`` best by ``rank_by``: ``"discrimination"`` |Δ| or
    ``"divergence"``), ``"pareto"`` (the strict Pareto front of the patterns, by |Δ| and
    P(x, y)), ``"extension"`` (is some strict extension of ``start`` in ``member``, a set of
    :func:`pattern_key`: stops at the first). ``start`` begins the search at a pattern
    (its extensions only). ``progress`` shows a counter of visited nodes (default: when stderr
    is a terminal). ``deadline`` (a ``time.perf_counter`` value) overrides ``time_limit``.
    ``partition = (w, n, depth)``: explore only the subtrees below ``depth`` whose node hashes
    to ``w`` modulo ``n`` (one worker's share; see :func:`pcfair.patterns.parallel.parallel_search`).
    """
    if mode not in MODES:
        raise OptionError(f"mode must be one of {MODES}, not {mode!r}")
    if rank_by not in ("discrimination", "divergence"):
        raise OptionError(f"rank_by must be 'discrimination' or 'divergence', not {rank_by!r}")
    if options.naive_bayes_bound and start is None and partition is None \
            and mode in ("all", "first", "topk"):
        # naive Bayes: every quantity is incremental and the bound O(1): the compiled search
        from pcfair.patterns.naive_bayes_search import search_naive_bayes

        fast = search_naive_bayes(circuit, d, fav, sensitive, delta, mode=mode, k=k,
                                  rank_by=rank_by, time_limit=time_limit, deadline=deadline,
                                  options=options, order=order, min_support=min_support,
                                  progress=progress)
        if fast is not None:
            return fast
    require_tractable_marginals(circuit)
    plan = self_plan(circuit, assume_deterministic)
    root = plan.entry(circuit.root, circuit.root)
    n = circuit.num_variables
    card = [int(c) for c in circuit.variables.cardinalities]
    sens = set(sensitive)
    if order is None:
        order = search_order(circuit, d, fav, sensitive, options.ordering)
    x0, y0 = start if start is not None else ({}, {})
    order = [v for v in order if v not in x0 and v not in y0]
    res = SearchResult(order=list(order))
    t0 = time.perf_counter()
    if deadline is None and time_limit is not None:
        deadline = t0 + float(time_limit)
    divergence_rank = mode == "topk" and rank_by == "divergence"
    top: list[tuple[float, int, tuple]] = []  # min-heap of (key, tie, pattern) for topk
    front = _Front()
    counter = [0]
    y_cache: dict = {}
    nb = NaiveBayesBound.from_circuit(circuit, d, fav) if options.naive_bayes_bound else None

    def rng(ev: np.ndarray, free: np.ndarray) -> tuple[float, float] | None:
        res.bounds += 1
        try:
            return conditional_range(circuit, plan, root, d, fav, ev, free)
        except EvidenceError:
            return None  # probability zero: no extension is a defined pattern

    def shared(key: tuple, compute):
        """A bound that depends only on ``key``, shared between siblings."""
        if not options.share_bounds:
            return compute()
        if key not in y_cache:
            if len(y_cache) > 100_000:
                y_cache.clear()
            y_cache[key] = compute()
        return y_cache[key]

    def prune(x: dict, y: dict, depth: int, p_xy: float) -> bool:
        """Whether no extension decided below this node can count (see the module doc)."""
        if nb is not None:
            res.bounds += 1
            t_lo, t_hi, s_lo, s_hi = nb.ranges(x, y, order[depth:], sens)

            def rest_nb() -> tuple[float, float]:
                lo, hi = nb.rest_range(x, t_lo, t_hi)
                return _sigmoid(lo), _sigmoid(hi)

            return cut(NaiveBayesBound.bound(t_lo, t_hi, s_lo, s_hi),
                       _sigmoid(t_lo + s_lo), _sigmoid(t_hi + s_hi), rest_nb, p_xy)
        free = np.zeros(n, bool)
        free[order[depth:]] = True
        ev_y = np.full(n, -1, np.int32)
        for v, val in y.items():
            ev_y[v] = val
        y_key = tuple(sorted(y.items()))
        b = shared((y_key, depth), lambda: rng(ev_y, free))
        if b is None:
            return True
        if x:
            ev_xy = ev_y.copy()
            for v, val in x.items():
                ev_xy[v] = val
            a = rng(ev_xy, free)
            if a is None:
                return True
        else:
            a = b

        def rest_quotient() -> tuple[float, float]:
            # P(d | y, x'', u) over every assignment of x's variables and the undecided ones
            wide = free.copy()
            wide[list(x)] = True
            r = shared((y_key, depth, tuple(sorted(x))), lambda: rng(ev_y, wide))
            return (0.0, 1.0) if r is None else r

        a_min, a_max = a
        b_min, b_max = b
        return cut(max(a_max - b_min, b_max - a_min), a_min, a_max, rest_quotient, p_xy)

    def cut(ub: float, a_min: float, a_max: float, rest, p_xy: float) -> bool:
        """Prune given the score bound ``ub``, the range of P(d|x',y') and a function giving
        the range of P(d|y',¬x') (asked only for top-k by divergence). The bound and the
        scores it bounds are computed differently (quotient pass, marginal queries), so it is
        inflated by a relative 1e-9 before it is compared: rounding must not prune a pattern
        whose computed score lies a few ulps above it."""
        ub = ub * (1.0 + 1e-9) + 1e-300
        if ub <= delta + THRESHOLD_ATOL:
            return True
        if mode == "topk":
            if len(top) < k:
                return False
            if not divergence_rank:
                return ub <= top[0][0]
            r_min, r_max = rest()
            return divergence_bound(p_xy, a_min, a_max, r_min, r_max, delta) <= top[0][0]
        if mode == "pareto":
            return front.level(p_xy) > ub + 1e-12
        return False

    in_top: set = set()

    def record(item: ScoredPattern, div: float) -> None:
        s = item.score
        res.best = max(res.best, abs(s))
        if mode == "extension":
            if pattern_key(item.x, item.y) in member:
                res.patterns.append(item)
                raise _Stop
            return
        if not discriminates(abs(s), delta) or item.probability < min_support:
            return
        if mode == "topk":
            pk = pattern_key(item.x, item.y)
            if pk in in_top:
                return  # a seeded pattern, met again
            counter[0] += 1
            entry = (div if divergence_rank else abs(s), -counter[0], item)
            if len(top) < k:
                heapq.heappush(top, entry)
                in_top.add(pk)
            elif entry[0] > top[0][0]:
                gone = heapq.heapreplace(top, entry)
                in_top.discard(pattern_key(gone[2].x, gone[2].y))
                in_top.add(pk)
        elif mode == "pareto":
            if front.level(item.probability) <= abs(s) * (1 + 1e-9) + 1e-12:
                res.patterns.append(item)
                front.add(item.probability, abs(s))
        else:
            res.patterns.append(item)
            if mode == "first":
                raise _Stop

    def divergences(patterns: list[tuple[dict, dict]], score: np.ndarray) -> np.ndarray:
        return pattern_divergences(circuit, d, fav, patterns, score, delta)

    bar = progress_bar(progress, "branch and bound")

    def visit(x: dict, y: dict, depth: int, p_xy: float) -> None:
        res.nodes += 1
        if res.nodes % 256 == 0:
            bar.update(256)
        if deadline is not None and time.perf_counter() > deadline:
            res.complete = False
            raise _Stop
        if depth == len(order):
            return
        if (partition is not None and depth == partition[2]
                and hash((pattern_key(x, y), depth)) % partition[1] != partition[0]):
            return  # another worker's subtree
        if not x and not any(v in sens for v in order[depth:]):
            return  # no sensitive variable left to put in x
        if (x or y) and (p_xy < min_support or prune(x, y, depth, p_xy)):
            res.pruned += 1
            return
        z = order[depth]
        children = [({**x, z: val}, y) for val in range(card[z])] if z in sens else []
        children += [(x, {**y, z: val}) for val in range(card[z])]
        m = pattern_marginals(circuit, d, fav, children)
        div = divergences(children, m.score) if divergence_rank else None
        idx = range(len(children))
        if options.best_first and mode in ("topk", "pareto"):
            key = div if divergence_rank else np.nan_to_num(np.abs(m.score), nan=-1.0)
            idx = np.argsort(-key, kind="stable")
        for i in idx:
            if m.p_xy[i] <= 0:
                continue  # P(x, y) = 0: neither it nor its extensions are defined
            nx, ny = children[i]
            if nx:
                record(ScoredPattern(nx, ny, float(m.score[i]), float(m.p_xy[i])),
                       float(div[i]) if div is not None else 0.0)
            visit(nx, ny, depth + 1, float(m.p_xy[i]))
        visit(x, y, depth + 1, p_xy)

    if mode == "topk" and options.seed_runs > 0 and start is None:
        from pcfair.patterns.sampling import sample_search

        budget = None if deadline is None else max(0.0, 0.1 * (deadline - time.perf_counter()))
        found = sample_search(circuit, d, fav, sensitive, delta, runs=options.seed_runs,
                              time_limit=budget, memo=True, random_state=0).found
        items = [ScoredPattern(dict(kx), dict(ky), v[0], v[1]) for (kx, ky), v in found.items()]
        if items:
            divs = (divergences([it[:2] for it in items], np.array([it.score for it in items]))
                    if divergence_rank else np.zeros(len(items)))
            for it, dv in zip(items, divs):
                record(it, float(dv))
    start_m = pattern_marginals(circuit, d, fav, [(x0, y0)])
    with bar, contextlib.suppress(_Stop):
        visit(dict(x0), dict(y0), 0, float(start_m.p_xy[0]))
    if mode == "topk":
        res.patterns = [entry[2] for entry in sorted(top, key=lambda e: (-e[0], -e[1]))]
    res.seconds = time.perf_counter() - t0
    return res
