"""Pruning bounds of the branch-and-bound search, behind one protocol.

A search node is a partial pattern: ``x`` and ``y`` (decided variables with their values), the
variables decided *excluded* (marginalised), and the undecided ``free`` ones. An *extension*
``(x', y')`` decides every free variable: into ``x'`` with a value (sensitive ones only), into
``y'`` with a value, or excluded. A :class:`Bound` gives, for a node, an upper bound ``ub`` on
``|Δ(x', y')| = |P(d | x', y') − P(d | y')|`` over every extension with ``P(x', y') > 0``, a
range ``[a_min, a_max]`` of ``P(d | x', y')`` and a range of ``P(d | y', ¬x')`` (asked only by
top-k by divergence; see :func:`pcfair.patterns.search.divergence_bound`) — or None when no
extension has positive probability. Three implementations, each proved in its docstring:

- :class:`QuotientBound`: the paper's bound (``pc-certifier.md`` §4) from the pairwise quotient
  pass; any deterministic, structured-decomposable circuit;
- :class:`NaiveBayesBound`: the coupled bound of a circuit that is naive Bayes in ``D``;
- :class:`TreeBound`: the coupled bound of a circuit that is a *decision-rooted tree-augmented
  model* (a Chow-Liu tree learned by :func:`pcfair.learn.learn_pc`, a naive Bayes, or any tree
  Bayesian network re-rooted at ``D``), recognised exactly on the circuit's structure.

:func:`select_bound` picks the tightest one that applies (naive Bayes, then tree, then
quotient: each is at most the next on the circuits both apply to, as the docstrings show), or
the one :class:`~pcfair.patterns.search.SearchOptions` ``bound`` forces.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from pcfair.circuit.circuit import CATEGORICAL, INDICATOR, PRODUCT, SUM, Circuit
from pcfair.circuit.sharing import structural_ids
from pcfair.errors import EvidenceError, OptionError
from pcfair.inference.marginals import log_marginals, node_log_values
from pcfair.inference.quotient import _sigmoid, conditional_range, self_plan
from pcfair.inference.smallest import log_smallest_probability
from pcfair.patterns import _bound_kernels as K
from pcfair.patterns import _search_kernels as SK
from pcfair.patterns._tree_mass_kernels import linear_is_exact
from pcfair.patterns._tree_records import BoxWork, TreeModel

__all__ = ["BOUNDS", "NaiveBayesBound", "QuotientBound", "TreeBound", "coupled_bound",
           "select_bound"]

#: The bounds :class:`~pcfair.patterns.search.SearchOptions` ``bound`` can force.
BOUNDS = ("auto", "quotient", "naive_bayes", "tree")


@dataclass(frozen=True)
class NodeBound:
    """What a bound says about a search node: ``ub`` ≥ every extension's ``|Δ|``;
    ``[a_min, a_max]`` ∋ every extension's ``P(d | x', y')``; ``rest()`` a range containing
    every extension's ``P(d | y', ¬x')`` (computed on demand)."""

    ub: float
    a_min: float
    a_max: float
    rest: Callable[[], tuple[float, float]]


class Bound(Protocol):
    """A pruning bound (see the module docstring). ``calls`` counts the bound evaluations."""

    name: str
    calls: int

    def node(self, x: dict, y: dict, free: Sequence[int], sensitive: set) -> NodeBound | None:
        """The bound of the node ``(x, y)`` with undecided variables ``free`` (in search
        order), or None when no extension has positive probability."""
        ...


def coupled_bound(t_lo: float, t_hi: float, s_lo: float, s_hi: float) -> float:
    """Max of ``|σ(t + s) − σ(t)|`` over the box ``[t_lo, t_hi] × [s_lo, s_hi]``.

    Proof. For fixed ``s > 0``, ``f(t) = σ(t + s) − σ(t)`` has ``f'(t) = σ'(t + s) − σ'(t)``,
    and ``σ'`` is even and decreasing in ``|t|``, so ``f' > 0`` iff ``|t + s| < |t|`` iff
    ``t < −s/2``: ``f`` is unimodal with its peak at ``−s/2``, so its max over ``[t_lo, t_hi]``
    is at ``−s/2`` clipped to the interval. ``f`` grows with ``s`` for every ``t``, so the
    positive side is at ``s = s_hi``; ``σ(t) − σ(t + s)`` for ``s < 0`` is the mirror image.
    Infinite ends are handled by ``σ`` (a ``t`` or
    ``t + s`` of ±inf is a conditional of 0 or 1): where a sum would be ``inf − inf`` the
    bound falls back to the box's corners, ``max(σ(t_hi + s_hi) − σ(t_lo), σ(t_hi) −
    σ(t_lo + s_lo))``, which is ≥ the max because ``σ(t + s) − σ(t)`` ≤ ``σ(t_hi + s_hi) −
    σ(t_lo)`` on the box (monotone in each of ``t + s`` and ``t``). The arithmetic is the
    compiled :func:`pcfair.patterns._search_kernels.coupled_bound`, which the compiled
    searches call as well.

    Examples
    --------
    >>> round(coupled_bound(-5.0, 5.0, 0.0, 2.0), 4)  # at t = -1: σ(1) − σ(−1)
    0.4621
    """
    return float(SK.coupled_bound(t_lo, t_hi, s_lo, s_hi))


# ------------------------------------------------------------------------ the paper's bound
class QuotientBound:
    """The paper's bound (``pc-certifier.md`` §4), by the pairwise quotient pass:

        ub = max(max_u P(d|x,y,u) − min_u P(d|y,u),  max_u P(d|y,u) − min_u P(d|x,y,u)),

    ``u`` complete assignments of the free variables (excluded variables, and ``X`` in the
    ``P(d|y,u)`` terms, marginalised). Sound: every ``P(d | x', y')`` of an extension is a
    mixture of ``P(d | x, y, u)`` over the completions ``u`` that agree with it (so within
    ``[min_u, max_u]``), and every ``P(d | y')`` is likewise within the ``P(d|y,u)`` range;
    ``|Δ|`` is at most the larger distance between the two ranges. ``P(d | y', ¬x')`` is a
    mixture of ``P(d | y', x'')`` over assignments ``x''`` of ``x'``'s variables, within the
    range with ``x``'s variables free as well. The ``P(d|y,u)`` ranges depend on ``y`` and the
    free variables only, which siblings share: kept (``share=True``) in a bounded cache.

    Needs a deterministic, structured-decomposable circuit (:func:`self_plan` refuses others).
    """

    name = "quotient"

    def __init__(self, circuit: Circuit, d: int, fav: int, assume_deterministic: bool = False,
                 share: bool = True) -> None:
        self.circuit, self.d, self.fav, self.share = circuit, d, fav, share
        self.plan = self_plan(circuit, assume_deterministic)
        self.root = self.plan.entry(circuit.root, circuit.root)
        self.calls = 0
        self._cache: dict = {}

    def _range(self, ev: np.ndarray, free: np.ndarray) -> tuple[float, float] | None:
        self.calls += 1
        try:
            return conditional_range(self.circuit, self.plan, self.root, self.d, self.fav, ev,
                                     free)
        except EvidenceError:
            return None  # probability zero: no extension is a defined pattern

    def _shared(self, key: tuple, compute):
        if not self.share:
            return compute()
        if key not in self._cache:
            if len(self._cache) > 100_000:
                self._cache.clear()
            self._cache[key] = compute()
        return self._cache[key]

    def node(self, x: dict, y: dict, free: Sequence[int], sensitive: set) -> NodeBound | None:
        n = self.circuit.num_variables
        mask = np.zeros(n, bool)
        mask[list(free)] = True
        ev_y = np.full(n, -1, np.int32)
        for v, val in y.items():
            ev_y[v] = val
        y_key = (tuple(sorted(y.items())), tuple(free))
        b = self._shared(y_key, lambda: self._range(ev_y, mask))
        if b is None:
            return None
        if x:
            ev_xy = ev_y.copy()
            for v, val in x.items():
                ev_xy[v] = val
            a = self._range(ev_xy, mask)
            if a is None:
                return None
        else:
            a = b

        def rest() -> tuple[float, float]:
            wide = mask.copy()
            wide[list(x)] = True
            r = self._shared(y_key + (tuple(sorted(x)),), lambda: self._range(ev_y, wide))
            return (0.0, 1.0) if r is None else r

        return NodeBound(max(a[1] - b[0], b[1] - a[0]), a[0], a[1], rest)


# ---------------------------------------------------------------------- naive Bayes bound
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
    every reachable pair), and the max of ``|Δ| = |σ(t + s) − σ(t)|`` over the box is
    :func:`coupled_bound`'s. It is at most the quotient bound: that one bounds ``σ(t + s)`` and
    ``σ(t)`` each over its own range, which contains the box's.

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

    name = "naive_bayes"

    def __init__(self, prior: float, w: list[np.ndarray]) -> None:
        self.prior = prior
        self.w = w
        self.calls = 0

    @classmethod
    def from_circuit(cls, circuit: Circuit, d: int, fav: int) -> "NaiveBayesBound | None":
        """The bound of ``circuit`` for decision ``d = fav``, or None (cached on the circuit:
        a maximal-pattern search asks once per pattern)."""
        return _cached(circuit, ("naive_bayes_bound", d, fav),
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
            with np.errstate(invalid="ignore"):  # a zero-probability value: NaN, refused below
                w.append((pair[:, 0] - lp[0]) - (pair[:, 1] - lp[1]))
            i += 2 * k
        if not np.isfinite(prior) or not all(np.all(np.isfinite(a)) for a in w):
            return None
        return cls(prior, w)

    def ranges(self, x: dict, y: dict, free: Sequence[int], sensitive: set
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
        ``logit P(d | y', ¬x')``, a mixture of such terms."""
        lo = t_lo + sum(float(self.w[v].min()) for v in x)
        hi = t_hi + sum(float(self.w[v].max()) for v in x)
        return lo, hi

    @staticmethod
    def bound(t_lo: float, t_hi: float, s_lo: float, s_hi: float) -> float:
        """Max of ``|σ(t + s) − σ(t)|`` over the box (:func:`coupled_bound`)."""
        return coupled_bound(t_lo, t_hi, s_lo, s_hi)

    def node(self, x: dict, y: dict, free: Sequence[int], sensitive: set) -> NodeBound:
        self.calls += 1
        t_lo, t_hi, s_lo, s_hi = self.ranges(x, y, free, sensitive)

        def rest() -> tuple[float, float]:
            lo, hi = self.rest_range(x, t_lo, t_hi)
            return _sigmoid(lo), _sigmoid(hi)

        return NodeBound(coupled_bound(t_lo, t_hi, s_lo, s_hi), _sigmoid(t_lo + s_lo),
                         _sigmoid(t_hi + s_hi), rest)


# ------------------------------------------------------------------------------ tree bound
class TreeBound:
    r"""The coupled bound of a decision-rooted tree-augmented model.

    **The model.** ``P(D = δ, z) = P(δ) Π_v θ_δ(z_v | z_pa(v))`` for ``δ`` in ``{d, ¬d}``: the
    features form a forest (``pa(v)`` a feature, or none for the forest's roots, the
    "children of ``D``"), shared by both decision values, each with its own conditionals.
    A Chow-Liu tree compiled by :func:`pcfair.learn.learn_pc` is one (a tree-augmented naive
    Bayes, whose tables depend on ``D`` everywhere; *not* a tree over ``D`` and the features),
    a naive Bayes is one (no feature edges), and so is every tree Bayesian network over
    ``D`` and the features: an undirected tree distribution re-rooted at ``D`` is
    ``P(D) Π_v P(v | pa(v))`` with ``D``'s neighbours as roots and tables that depend on
    ``D`` only there.

    **Recognition** (:meth:`from_circuit`; exact, so a circuit that is not such a model never
    gets this bound). The circuit's root must be a sum whose elements are ``[D = δ] · R_δ``
    (one per value); each ``R_δ`` a *forest*: a product, or a one-element sum with no
    indicator factor (a constant times its factors), of *tree nodes*; a tree node for ``v`` is
    a categorical leaf over ``v``, an indicator of ``v``, or a sum whose elements are
    ``[v = k] · F_k`` with distinct ``k`` and ``F_k`` a forest. Reading the circuit this way,
    with ``Z_n`` each node's mass, a tree node ``t`` for ``v`` computes
    ``Z_t · θ_t(z_v) Π_{f ∈ F_{z_v}} f(z)/Z_f`` with ``θ_t(k) ∝ w_k Z_{F_k}`` (induction from
    the leaves), so ``R_δ`` is a tree-structured distribution (times its mass) *provided* the
    tree node met for a variable ``c`` below parent value ``k`` under ``D = δ`` is the same
    node wherever it is met, every variable has one parent, the children of ``v`` are the same
    variables for every ``k`` and ``δ``, and every feature is covered. All of this is checked
    (node identity, not numerical closeness), and anything else returns None. Node identity is
    what :func:`pcfair.learn.learn_pc` produces (its compiler memoises the node of each
    ``(v, parent value, δ)``) and what the JSON and PSDD loaders keep; a node repeated
    instead of shared (a PSDD compiled from the tree without memoisation) counts as the node
    it repeats when the two are structurally identical
    (:func:`pcfair.circuit.sharing.structural_ids`); a circuit in which ``D``
    is not at the root, or a Strudel-grown one (which splits nodes by context), is refused and
    keeps the quotient bound.

    **Subtree log-likelihood ratios.** For evidence ``e`` and a feature ``v``, let
    ``m_δ(v, j; e) = P_δ(e_{sub(v)} | pa(v) = j)`` and ``g(v, j; e) = log m_d − log m_¬d``. Then
    ``logit P(d | e) = π + Σ_{roots r} g(r; e)`` with ``π = logit P(d)`` (the roots' subtrees
    are independent given ``D``), and

    - (P1) no variable of ``sub(v)`` observed: ``m_δ = 1``, ``g = 0``;
    - (P2) ``v`` observed with value ``k``: ``g(v, j) = ℓ_v(k, j) + Σ_{c ∈ ch(v)} g(c, k)`` with
      ``ℓ_v(k, j) = log θ_d(k | j) − log θ_¬d(k | j)`` (the children's subtrees are independent
      given ``v`` and ``D``);
    - (P3) ``v`` not observed: ``exp g(v, j) = Σ_k a_k / Σ_k b_k`` with
      ``a_k = θ_d(k|j) Π_c m_d(c, k)``, ``b_k`` likewise under ``¬d``, so by the mediant
      inequality ``g(v, j) ∈ [min_k ρ_k, max_k ρ_k]``, ``ρ_k = log a_k − log b_k = ℓ_v(k, j) +
      Σ_c g(c, k)``, over the ``k`` with ``a_k + b_k > 0`` (a ratio ``a/0`` being +inf).

    **The box of a search node.** For an extension ``(x', y')`` write ``A = logit P(d | y')``
    and ``B = logit P(d | x', y')``, and per subtree ``g_A = g(·; y')``, ``g_B = g(·; x', y')``.
    The kernel (:func:`._bound_kernels.tree_box`) computes, bottom-up, for every ``v`` and
    parent value ``j``, intervals ``[A]``, ``[B]``, ``[D]``, ``[p_d]``, ``[p_¬d]`` (below) and
    flags, claimed to satisfy, *for every extension*: ``g_A ∈ [A]`` whenever the subtree's
    ``A``-evidence has positive probability under ``d`` or ``¬d`` (given ``pa = j``),
    ``g_B ∈ [B]`` likewise for the ``B``-evidence, ``g_B − g_A ∈ [D]`` when both have,
    ``p_δ ∈ [p_δ]`` when the ``A``-evidence has under ``δ``; and a flag ``imp_A`` (``imp_B``)
    set only when that evidence has probability zero under both for every extension. Proof by induction
    over the tree, the children's claims holding for every value ``k`` of ``v`` at once (an
    extension decides each variable independently, so it restricts to an extension of every
    subtree):

    - *No undecided variable in* ``sub(v)``: the evidence is fixed, so ``g_A``, ``g_B`` are
      computed exactly from the messages ``m_δ`` (by (P2), (P3) as sums, in log space), the
      flags exactly. This is where a subtree whose future evidence cannot change contributes
      its exact current value.
    - Otherwise the interval is the hull over the cases an extension can realise at ``v``:
      decided ``y`` with value ``k`` (only that case), decided ``x`` with ``k``, decided
      excluded; an undecided ``v``: ``y`` with any ``k``, excluded, and if sensitive ``x``
      with any ``k``. Per case, with the sums ``Σ_c [·](c, k)`` of the children's intervals:

      * ``v`` in ``y`` with ``k`` (observed on both sides): by (P2) ``g_A = ℓ + Σ_c g_A(c, k)``,
        ``g_B = ℓ + Σ_c g_B(c, k)``, ``g_B − g_A = Σ_c (g_B − g_A)(c, k)``: the sums of the
        intervals contain them (a sum of values each in its interval);
      * ``v`` in ``x`` with ``k`` (observed in ``B`` only): ``g_B`` as above; ``g_A`` by (P3)
        lies in the mixture interval ``[min_k ρ^A_lo(k), max_k ρ^A_hi(k)]``; ``g_B − g_A`` in the
        difference of the two intervals;
      * ``v`` excluded (observed on neither side): both by (P3); the difference of intervals,
        except when ``sub(v)`` holds no variable that is or can become part of ``x'`` — then
        the two evidences agree on ``sub(v)`` and ``g_B − g_A = 0`` exactly.

      **Sharper differences.** The kernel also keeps, per subtree, intervals of
      ``p_δ = log m_δ(·; x', y') − log m_δ(·; y') ≤ 0`` (the log-probability of the ``x'``
      evidence of the subtree given its ``y'`` evidence, under ``δ``; ``0`` where the subtree
      cannot hold ``x'``, exact where it is fully decided), with the same case analysis:
      ``v`` in ``y``: ``p = Σ_c p(c, k)``; ``v`` excluded: ``e^p = Σ_k π_k Π_c e^{p(c, k)}``
      with ``π`` the posterior of ``v`` under ``δ`` given the ``y'`` evidence below, so ``p``
      lies in the mixture interval (mediant); ``v`` in ``x`` with ``k``:
      ``p = log P_δ(v = k | y' below, j) + Σ_c p(c, k)``. The posterior of ``v = k`` is
      ``θ(k) M_k / Σ_k' θ(k') M_k'`` (``M`` the product of the children's messages), and
      each child's ratio ``m(c, k') / m(c, k) = Σ_l θ(l|k') R_l / Σ_l θ(l|k) R_l`` lies within
      ``[min_l, max_l] θ(l|k')/θ(l|k)`` (mediant; exactly ``θ(l|k')/θ(l|k)`` when ``c`` is in
      ``y`` with ``l``, and 1 when ``c``'s subtree holds no evidence): bounds on the
      posterior follow. Then two more intervals contain ``g_B − g_A``, and the kernel keeps
      the intersection: for ``v`` excluded, ``e^{g_B − g_A} = E_α[U] / E_β[W]`` with
      ``U_k = Π_c e^{p_d(c, k)}``, ``W_k = Π_c e^{p_¬d(c, k)}`` and ``α``, ``β`` the posteriors
      of ``v`` under ``d``, ``¬d`` (divide ``Σ a_k U_k / Σ b_k W_k`` by ``Σ a_k / Σ b_k``),
      so ``g_B − g_A ∈ [min_k log U_k − max_k log W_k, max_k log U_k − min_k log W_k]``; for
      ``v`` in ``x`` with ``k``, ``g_B − g_A = log α_k − log β_k + Σ_c (g_B − g_A)(c, k)``.
      Extended reals throughout: a ``p`` of −inf (``x'`` impossible below) keeps the lower
      ends at −inf, and a ``k`` where the ``x'`` value has ``θ = 0`` gives ``p = −inf``.

      **Two more intervals of** ``g_B − g_A`` **for** ``v`` **excluded** (kept by
      intersection). Write ``D_k = Σ_c (g_B − g_A)(c, k)``; per child,
      ``p_d − p_¬d = g_B − g_A``, so ``U_k = W_k e^{D_k}``.

      * (H) ``e^{g_B − g_A} = Σ_k α_k U_k / Σ_k β_k W_k`` is a mediant of the fractions
        ``α_k U_k / (β_k W_k)`` over the ``k`` where they are not both ``0`` (``n/0`` being
        +inf), so its log lies between their smallest and largest logs,
        ``log α_k − log β_k + D_k``: the hull over ``k`` of the ``x``-case intervals above.
      * (M) ``α`` lies in the simplex cut by the box ``α_k ∈ [e^{q_lo}, e^{q_hi}]`` (the
        posterior bounds, over the values in the mixture), and where ``α_k > 0``,
        ``U_k ∈ [e^{Σ_c p_d lo(c, k)}, e^{Σ_c p_d hi(c, k)}]`` (``0`` where the ``B``
        evidence below is impossible). The true ``α`` is in that set, so ``Σ_k α_k U_k``
        lies between the least and the greatest of ``Σ_k w_k c_k`` over it with ``c`` the
        ends of ``U``; whatever ``U_k`` is where ``α_k = 0`` does not matter, since the
        true ``α`` puts no weight there. Each is a linear programme over a cut simplex,
        solved greedily (:func:`._bound_kernels._weighted_extreme`); likewise
        ``Σ_k β_k W_k`` under ``¬d``, and ``D`` lies between ``log min num − log max den``
        and ``log max num − log min den``. Where the cut simplex is empty by rounding,
        the plain simplex's bound (``max_k`` / ``min_k``) is used. Unlike the intervals
        above it weighs the values ``k`` by their posteriors instead of taking the
        extremes, and it is exact when the posteriors are exact and every child's
        subtree is decided (a variable excluded just above a decided ``x``).

      **Rule C (contraction), a third interval for** ``v`` **excluded.** Write ``d_H(u, w) =
      max_k log(u_k/w_k) − min_k log(u_k/w_k)`` (Hilbert's projective distance of positive
      vectors) and ``τ(T) = tanh(Δ(T)/4)`` for a positive matrix with projective diameter
      ``Δ(T) = max log T[j,k] T[j',k'] / (T[j,k'] T[j',k])``: Birkhoff–Hopf's theorem says
      ``d_H(Tu, Tw) ≤ τ(T) d_H(u, w)``, and any nonnegative ``T`` (``τ = 1``) gives
      ``d_H(Tu, Tw) ≤ d_H(u, w)`` on the rows where ``Tw > 0`` (each ``(Tu)_j/(Tw)_j`` is a
      weighted mean of the ``u_k/w_k``); a positive diagonal scaling leaves ``d_H`` unchanged.

      * *Oscillations.* Per subtree and decision value, ``ω_δ(v)`` bounds ``p_δ(v, j) −
        p_δ(v, j')`` over the parent values where the subtree's ``y'`` evidence has positive
        probability, for every extension (:func:`._bound_kernels._oscillation`); it is +inf
        whenever ``[p_δ]`` reaches −inf, so a finite ``ω`` means every ``U``, ``W`` below is
        positive. ``v`` in ``y`` with ``k``: ``p_δ(v, j) = Σ_c p_δ(c, k)`` does not depend on
        ``j``, ``ω = 0``. ``v`` excluded: ``e^{p_δ(v, j)} = (T M U)_j / (T M 1)_j`` with ``T`` the
        table ``θ_δ(k | j)``, ``M = diag(Π_c m_δ(c, k))`` the ``y'`` messages and ``U_k = Π_c
        e^{p_δ(c, k)}``, so ``ω ≤ τ(T) d_H(U, 1) ≤ τ(T) Σ_c ω_δ(c)`` (``TM`` has ``T``'s
        diameter). ``v`` in ``x`` with ``k``: ``p_δ(v, j) = log θ_δ(k|j) − log Σ_l θ_δ(l|j)
        M_l + const``, and the mediant inequality bounds its spread by ``Δ_k = max_{j, j', l}
        log θ(k|j) − log θ(k|j') + log θ(l|j') − log θ(l|j)`` (:func:`_observed_spread`),
        or, when no child's subtree can hold ``A`` evidence (``M = 1``, the sum is 1), by the
        spread of ``log θ_δ(k | ·)`` itself.
        Undecided: the largest of its cases. A decided subtree: the spread of its exact values.
      * *The difference.* For ``v`` excluded with finite ``ω``'s, the true ``α``, ``β`` are
        positive on the same values (a ratio ``α_k/β_k`` that could be 0 or +inf makes the
        hull of ``ℓ_k + A_k`` infinite and the rule is skipped) and ``U_k = W_k e^{D_k}``
        there, with ``D_k ∈ [min_k D_k, max_k D_k]`` from the children's ``[D]``. Then
        ``log Σ_k α_k U_k − log Σ_k β_k W_k = log Σ_k α_k U_k − log Σ_k β_k U_k e^{−D_k}``
        lies within ``max_k D_k + log(Σ α U / Σ β U)`` above and ``min_k D_k + log(Σ α U / Σ β
        U)`` below, and ``|log(Σ α U / Σ β U)| = d_H(PU, P1)`` for the ``2 × K`` matrix ``P =
        [α; β]`` (rows summing to 1), at most ``τ(P) d_H(U, 1) ≤ τ(P) Σ_c ω_d(c)``. ``Δ(P) =
        max_{k, k'} (ρ_k − ρ_k')`` with ``ρ_k = log α_k − log β_k = ℓ_k + A_k + const``, so
        ``Δ(P)`` is at most the width of the hull of ``ℓ_k + [A](c, k)`` over ``k``. The same
        holds with ``W`` and ``ω_¬d``; the smaller of the two sums is used. The width of
        ``ρ`` is also at most ``spread_k ℓ_k + Σ_c ω_A(c)`` (below), which the rule takes
        where it is smaller. This is what
        makes a sensitive variable deep in the tree cheap to bound: its influence shrinks by
        ``τ`` at every excluded ancestor, where the other intervals add up the ancestors'
        worst cases.
      * *The log-likelihood spreads* ``ω_A(v) ≥ g_A(v, j) − g_A(v, j')`` (parent values where
        the ``y'`` evidence below has positive probability under both decision values).
        ``v`` in ``y`` with ``k``: ``g_A(v, j) = ℓ_v(k, j) + const``, so the spread of
        ``ℓ_v(k, ·)``. ``v`` unobserved on the ``A`` side: ``g_A(v, j) = log E_{w_j}
        [e^{ℓ_v(k, j) + A_k}]`` with ``w_j ∝ θ_¬d(k|j) M_¬d,k`` (divide ``Σ θ_d M_d`` by
        ``Σ θ_¬d M_¬d``); writing ``ℓ_v(k, j) = m_k + ε_kj`` with ``m_k`` the mid-range over
        ``j`` and ``|ε| ≤ h``, ``g_A(v, j)`` is within ``h`` of ``log E_{w_j} e^{m_k + A_k}``,
        whose spread over ``j`` is at most ``τ(θ_¬d) (spread_k m_k + Σ_c ω_A(c))``
        (Birkhoff, as above); so ``ω_A ≤ τ (spread m + Σ_c ω_A(c)) + 2h`` (the same with
        ``θ_d`` and the weights ``∝ θ_d M_d``: the smaller ``τ`` is used), and ``0`` when
        no child's subtree can hold ``A`` evidence. +inf where ``[A]`` reaches an infinite end.
      * *The* ``x`` *case* (``v`` in ``x`` with ``k``): ``log α_k − log β_k = ρ_k − log E_β
        e^{ρ}``, so it lies within ``[min_l (ℓ_k − ℓ_l), max_l (ℓ_k − ℓ_l)] ± Σ_c ω_A(c)``,
        intersected with the posteriors' bounds.

      Where ``v`` is unobserved on a side and no child's subtree can hold evidence on that
      side (every variable below ``v`` decided excluded), that side's ratio is exactly ``0``
      by (P1), which replaces the mixture interval (on a leaf ``v``: always). With this, on a
      naive Bayes (every feature a root and a leaf) the box is exactly the naive-Bayes box.

      A value ``k`` with ``θ_d(k|j) = θ_¬d(k|j) = 0``, or whose child has ``imp`` set, has
      ``a_k = b_k = 0`` for every extension and is left out of mixtures and cases; a case
      with no value left is impossible; ``imp`` is set when every case is. Leaving out a
      ``k`` that happens to be impossible only for some extensions is not needed: keeping
      its interval in a min/max only widens. Sums ``inf − inf`` (undefined) widen to the
      infinite end (−inf for a lower end, +inf for an upper one).

    **Detached evidence below an observed variable (rule E).** For ``v`` in ``y`` with value
    ``a``,
    ``m_δ(v, j) = θ_δ(a | j) F_δ`` with ``F_δ = Π_c m_δ(c, a)`` the same for every ``j`` (for
    the ``A`` evidence and for the ``B`` evidence alike). A factor common to all values of a
    variable passes unchanged through its parent's sum (P3), ``Σ_k θ(k | i) F x_k = F Σ_k
    θ(k | i) x_k``, and through every product (P2), so each message above ``v`` is ``F_δ``
    times the message of the evidence with ``v``'s children's subtrees emptied (written with
    a hat), and at the roots ``A = Â + log F^A_d − log F^A_¬d = Â + Σ_c g_A(c, a)``, ``B = B̂ +
    Σ_c g_B(c, a)``, ``B − A = (B̂ − Â) + Σ_c (g_B − g_A)(c, a)``. The kernel therefore keeps
    ``Σ_c [A](c, a)``, ``Σ_c [B](c, a)`` and ``Σ_c [D](c, a)`` aside, adds them once at the
    roots (the evidence impossible where a child's is), and gives ``v``'s own slots the exact
    values of the hatted evidence: ``g_A = g_B = ℓ_v(a, j)``, ``D = 0``, ``p_δ = 0``, messages
    ``log θ_δ(a | j)``; for its ancestors ``v`` counts as decided and as holding no ``x``.
    Applied at every observed variable, bottom up, every claim below is a claim about the
    hatted evidence, and the parts set aside add. This is what makes a subtree exact whose
    undecided variables all lie below observed ones: an excluded ancestor's posteriors, and
    hence its ``D``, no longer see the evidence below ``v`` (which, given ``v`` and the
    decision, is independent of everything above). Ratios of messages at two values of a
    variable, and the oscillations of rule C, are the same for both evidences (the factor
    cancels), which the brute-force tests check on the full evidence.

    Where a child's subtree has no undecided variable, the posterior bounds use its exact
    message ratio ``m(c, k') / m(c, k)`` (from the exact messages) instead of the mediant.

    At the roots, ``A ∈ π + Σ_r [A](r)``, ``B ∈ π + Σ_r [B](r)``, ``B − A ∈ Σ_r [D](r)`` (plus
    the detached parts) for every extension with ``P(x', y') > 0`` (then ``P(y') > 0`` too, as
    ``y' ⊆ x' ∪ y'``).

    **The bound.** ``Δ = σ(B) − σ(A) = σ(A + S) − σ(A)`` with ``S = B − A``: every reachable
    ``(A, S)`` lies in the box ``[A] × [D]``, so ``|Δ| ≤`` :func:`coupled_bound` of that box;
    and ``σ(B) − σ(A)`` is increasing in ``B`` and decreasing in ``A``, so also
    ``|Δ| ≤ max(σ(B_hi) − σ(A_lo), σ(A_hi) − σ(B_lo))``; ``ub`` is the smaller of the two.
    This is the brief's "a_c = b_c for subtrees that cannot hold x', the coupled part shifts
    both sides by the same amount": a subtree that cannot hold ``x'`` contributes ``0`` to
    ``[D]``, so ``S`` ranges over the ``x``-side subtrees only, as in the naive-Bayes bound (on
    a naive Bayes the two coincide). It is at most the quotient bound up to the second
    form's ranges, which are those the quotient pass maximises (the pass takes the same
    maxima over ``v``'s elements), tightened where a subtree is exact.

    ``[a_min, a_max] = σ(π + [B])`` contains ``P(d | x', y')``. For the divergence ranking,
    ``P(d | y', ¬x')`` is a mixture of ``P(d | y', x'')`` over assignments ``x''`` of ``x'``'s
    variables other than ``x'``: each is ``σ(A)`` for the extension that puts those variables
    in ``y`` with the values ``x''``, so the ``[A]`` interval computed with ``x``'s variables
    made undecided (and the undecided sensitive ones kept undecided) contains them all:
    :func:`pcfair.patterns.search.divergence_bound` stays sound with it.

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.learn import learn_pc
    >>> df = pd.DataFrame({"d": [0, 1, 1, 0, 1, 0], "s": [0, 1, 1, 0, 0, 1],
    ...                    "z": [1, 1, 0, 0, 1, 0]})
    >>> pc = learn_pc(df, "d")
    >>> tb = TreeBound.from_circuit(pc, 0, 1)
    >>> nb = tb.node({}, {}, [1, 2], {1})
    >>> 0 < nb.ub <= 1
    True
    """

    name = "tree"
    #: The box's rules H, M, C and E (bits of :data:`._bound_kernels.RULES_ALL`); fewer bits
    #: evaluate the box without some, which ``benchmarks/bench_tree_order.py`` measures.
    rules: int = K.RULES_ALL

    def __init__(self, d: int, fav: int, log_prior: np.ndarray, parent: np.ndarray,
                 card: np.ndarray, log_theta: dict) -> None:
        self.d, self.fav = d, fav
        #: whether the compiled search's messages may be linear
        #: (:func:`pcfair.patterns._tree_mass_kernels.linear_is_exact`; set by
        #: :meth:`from_circuit`, False, the always-exact log-space pass, for a model given
        #: directly)
        self.linear = False
        #: ``[log P(d), log P(¬d)]``, normalised
        self.log_prior = np.array([log_prior[fav], log_prior[1 - fav]], float)
        self.log_prior -= np.logaddexp(*self.log_prior)
        #: ``π = logit P(d)``
        self.prior = float(log_prior[fav] - log_prior[1 - fav])
        self.calls = 0
        n = len(card)
        self.parent = parent.astype(np.int64)  # −1: a child of D (and at D itself)
        features = [v for v in range(n) if v != d]
        children: dict[int, list[int]] = {v: [] for v in range(n)}
        for v in features:
            if parent[v] >= 0:
                children[int(parent[v])].append(v)
        post: list[int] = []

        def walk(v: int) -> None:  # iterative post-order
            stack = [(v, False)]
            while stack:
                u, done = stack.pop()
                if done:
                    post.append(u)
                    continue
                stack.append((u, True))
                stack.extend((c, False) for c in reversed(children[u]))

        for v in features:
            if parent[v] < 0:
                walk(v)
        self.post = np.array(post, np.int64)
        self.card = card.astype(np.int64)
        self.kp = np.array([int(card[parent[v]]) if parent[v] >= 0 else 1 for v in range(n)],
                           np.int64)
        self.toff = np.zeros(n, np.int64)
        self.moff = np.zeros(n, np.int64)
        t = m = 0
        for v in range(n):
            self.toff[v], self.moff[v] = t, m
            if v != d:
                t += int(self.kp[v] * card[v])
                m += int(self.kp[v])
        self.lt1 = np.full(max(t, 1), -np.inf)
        self.lt0 = np.full(max(t, 1), -np.inf)
        for v in features:
            for j in range(int(self.kp[v])):
                s = int(self.toff[v] + j * card[v])
                self.lt1[s: s + int(card[v])] = log_theta[v][fav][j]
                self.lt0[s: s + int(card[v])] = log_theta[v][1 - fav][j]
        self.th1, self.th0 = np.exp(self.lt1), np.exp(self.lt0)
        self.ctr = self.contraction()
        self.ch_ptr = np.zeros(n + 1, np.int64)
        for v in range(n):
            self.ch_ptr[v + 1] = self.ch_ptr[v] + len(children[v])
        self.ch_idx = np.array([c for v in range(n) for c in children[v]] or [0], np.int64)
        self.slots = max(m, 1)
        self._buffers()

    def contraction(self) -> np.ndarray:
        """Rule C's tables (``ctr`` of :func:`._bound_kernels.tree_box`), per feature ``v``
        (zeros for a child of ``D``: one parent value, nothing to spread over):

        - ``ctr[v, q, 0]``, ``q`` 0 for ``d`` and 1 for ``¬d``: the contraction coefficient
          of ``v``'s table (:func:`_contraction_coefficient`); ``ctr[v, q, 2 + k]`` the
          spread ``Δ_k`` of its value ``k`` observed (:func:`_observed_spread`),
          ``ctr[v, q, 1]`` their largest;
        - ``ctr[v, 2, 2 + k]``: the spread over the parent's values ``j`` of ``ℓ_v(k, j) =
          log θ_d(k|j) − log θ_¬d(k|j)``, ``ctr[v, 2, 1]`` their largest;
        - ``ctr[v, 3, 0]``: the spread over ``k`` of the mid-ranges ``m_k`` of ``ℓ_v(k, ·)``,
          ``ctr[v, 3, 1]``: twice the largest half-range (+inf where a ``θ`` is zero);
        - ``ctr[v, 4 + q, 2 + k]``: the spread over ``j`` of ``log θ_δ(k | j)`` (+inf with a
          zero), ``ctr[v, 4 + q, 1]`` their largest."""
        n = len(self.card)
        ctr = np.zeros((n, 6, int(self.card.max(initial=1)) + 2))
        for v in range(n):
            kv, kp = int(self.card[v]), int(self.kp[v])
            if v == self.d or kp < 2:
                continue
            tables = [lt[self.toff[v]: self.toff[v] + kp * kv].reshape(kp, kv)
                      for lt in (self.lt1, self.lt0)]
            for q, table in enumerate(tables):
                ctr[v, q, 0] = _contraction_coefficient(table)
                ctr[v, q, 2: 2 + kv] = _observed_spread(table)
                ctr[v, q, 1] = ctr[v, q, 2: 2 + kv].max()
                with np.errstate(invalid="ignore"):
                    leaf = table.max(axis=0) - table.min(axis=0)
                leaf[~np.isfinite(table).all(axis=0)] = np.inf
                ctr[v, 4 + q, 2: 2 + kv] = leaf
                ctr[v, 4 + q, 1] = leaf.max()
            with np.errstate(invalid="ignore"):
                ell = tables[0] - tables[1]  # [j, k]
            if not np.all(np.isfinite(ell)):
                ctr[v, 2, 1:] = np.inf
                ctr[v, 3, :2] = np.inf
                continue
            top, bottom = ell.max(axis=0), ell.min(axis=0)
            ctr[v, 2, 2: 2 + kv] = top - bottom
            ctr[v, 2, 1] = (top - bottom).max()
            mid = (top + bottom) / 2
            ctr[v, 3, 0] = mid.max() - mid.min()
            ctr[v, 3, 1] = (top - bottom).max()
        return ctr

    def kernel_model(self) -> TreeModel:
        """The recognised model as the compiled tree kernels take it (:attr:`linear` says
        whether its messages may be linear)."""
        return TreeModel(self.post, self.parent, self.card, self.kp, self.toff, self.lt1,
                         self.lt0, self.th1, self.th0, self.ctr, self.ch_ptr, self.ch_idx,
                         self.moff, self.log_prior)

    def _buffers(self) -> None:
        n, m = len(self.card), self.slots
        self._box = np.zeros((m, K.BOX_COLUMNS))
        self._imp = np.zeros((m, K.IMP_COLUMNS), np.bool_)
        self._lm = np.zeros((m, 4))
        self._flags = np.zeros((n, 4), np.bool_)
        self._out = np.zeros(8)
        self._rr, self._mix = self.scratch()

    def scratch(self) -> tuple[np.ndarray, np.ndarray]:
        """Fresh scratch of the box kernel's mixture rules: the child-ratio table and the
        mixture rows (:func:`._bound_kernels.tree_box`'s ``rr`` and ``mix``)."""
        k = max(int(self.card.max()), 1)
        return np.zeros((2, k, k, 4)), np.zeros((k, 10))

    def fresh(self) -> "TreeBound":
        """A copy with its own work buffers and call counter (the recognised model is shared,
        so concurrent searches on one circuit do not share state)."""
        other = copy.copy(self)
        other.calls = 0
        other._buffers()
        return other

    @classmethod
    def from_circuit(cls, circuit: Circuit, d: int, fav: int) -> "TreeBound | None":
        """The bound of ``circuit`` for the binary decision ``d = fav``, or None when the
        circuit is not recognised as a decision-rooted tree-augmented model (see the class
        docstring; cached on the circuit)."""
        return _cached(circuit, ("tree_bound", d, fav), lambda: cls._detect(circuit, d, fav))

    @classmethod
    def _detect(cls, circuit: Circuit, d: int, fav: int) -> "TreeBound | None":
        parsed = _parse_tree_model(circuit, d)
        if parsed is None:
            return None
        prior, parent, log_theta = parsed
        if prior[fav] == prior[1 - fav] == -np.inf:
            return None  # a circuit of mass zero
        tb = cls(d, fav, prior, parent, circuit.variables.cardinalities, log_theta)
        # the compiled search's masses in linear space where that is exact (recognition is
        # exact: the circuit's smallest probability is the tree model's)
        tb.linear = linear_is_exact(log_smallest_probability(circuit))
        return tb

    def box(self, x: dict, y: dict, free: Sequence[int], sensitive: set,
            x_free: bool = False) -> np.ndarray:
        """``[A_lo, A_hi, B_lo, B_hi, D_lo, D_hi, impA, impB]`` of the node (the subtree
        intervals summed over the roots, without ``π``); ``x_free`` makes ``x``'s variables
        undecided (not sensitive) for the divergence ranking's ``¬x`` range."""
        n = len(self.card)
        st = np.zeros(n, np.int64)
        val = np.zeros(n, np.int64)
        for v, k in y.items():
            st[v], val[v] = K.IN_Y, k
        for v, k in x.items():
            st[v], val[v] = (K.FREE, 0) if x_free else (K.IN_X, k)
        for v in free:
            st[v] = K.FREE_SENS if v in sensitive else K.FREE
        work = BoxWork(self._box, self._imp, self._lm, self._flags, self._out,
                       np.ones(n, np.bool_), self._rr, self._mix)
        K.tree_box(st, val, self.kernel_model(), work, self.rules)
        return self._out.copy()

    def node(self, x: dict, y: dict, free: Sequence[int], sensitive: set) -> NodeBound | None:
        self.calls += 1
        ub, a_min, a_max = K.node_bound(self.box(x, y, free, sensitive), self.prior)
        if ub < 0:
            return None

        def rest() -> tuple[float, float]:
            return K.rest_range(self.box(x, y, free, sensitive, x_free=True), self.prior)

        return NodeBound(float(ub), float(a_min), float(a_max), rest)


def _contraction_coefficient(log_table: np.ndarray) -> float:
    """Birkhoff's contraction coefficient ``τ = tanh(Δ/4)`` of the table ``T[j, k] =
    θ(k | j)`` (logs; rows the parent's values), ``Δ = max log T[j,k] T[j',k'] / (T[j,k']
    T[j',k])`` its projective diameter: for positive vectors ``u``, ``w`` the Hilbert distance
    ``d(Tu, Tw) ≤ τ d(u, w)`` (Birkhoff–Hopf), where ``d(u, w) = max_k log(u_k/w_k) −
    min_k log(u_k/w_k)``. With a zero entry the diameter is infinite and ``τ = 1``: every
    ``(Tu)_j / (Tw)_j`` is then still a weighted mean of the ``u_k / w_k``, so ``d`` does not
    grow (a sub-matrix's diameter is at most the whole one's, so restricting ``u``, ``w`` to a
    support keeps the bound).

    >>> round(_contraction_coefficient(np.log([[0.9, 0.1], [0.1, 0.9]])), 9)  # tanh(log 3)
    0.8
    """
    if not np.all(np.isfinite(log_table)):
        return 1.0
    diff = log_table[:, None, :] - log_table[None, :, :]  # [j, j', k]
    diam = float((diff.max(axis=2) - diff.min(axis=2)).max())
    return float(np.tanh(diam / 4.0))


def _observed_spread(log_table: np.ndarray) -> np.ndarray:
    """Per value ``k``, ``Δ_k = max_{j, j', l} log θ(k|j) − log θ(k|j') + log θ(l|j') −
    log θ(l|j)`` (logs; rows the parent's values), over the ``l`` with ``θ(l|j) + θ(l|j') >
    0``; +inf where some ``θ(k|j)`` is zero. It bounds the spread over ``j`` of
    ``log θ(k|j) − log Σ_l θ(l|j) w_l`` for any weights ``w ≥ 0`` (mediant: the ratio of the
    sums at ``j'`` and ``j`` is at most ``max_l θ(l|j')/θ(l|j)``), the ``p`` of ``v``
    observed with ``k`` on one side only.

    >>> _observed_spread(np.log([[0.5, 0.5], [0.5, 0.5]]))
    array([0., 0.])
    """
    with np.errstate(invalid="ignore"):
        gain = log_table[None, :, :] - log_table[:, None, :]  # [j, j', l]: L[j', l] − L[j, l]
    gain = np.where(np.isnan(gain), -np.inf, gain).max(axis=2)  # [j, j']
    spread = np.empty(log_table.shape[1])
    for k in range(log_table.shape[1]):
        col = log_table[:, k]
        if not np.all(np.isfinite(col)):
            spread[k] = np.inf
            continue
        spread[k] = float((col[:, None] - col[None, :] + gain).max())
    return spread


def _parse_tree_model(circuit: Circuit, d: int):
    """``(log prior by decision value, parent, log θ)`` of a decision-rooted tree-augmented
    circuit (``log_theta[v][δ][j]`` the row ``log θ_δ(v = · | pa = j)``), or None (see
    :class:`TreeBound`: every condition is checked on node identities, two structurally
    identical nodes counting as one: :func:`pcfair.circuit.sharing.structural_ids`)."""
    kind, var, value = circuit.kind, circuit.var, circuit.value
    ep, ea, eb, ew = circuit.edge_ptr, circuit.edge_a, circuit.edge_b, circuit.edge_logw
    card = [int(c) for c in circuit.variables.cardinalities]
    n = circuit.num_variables
    if card[d] != 2 or n < 2:
        return None
    logz = node_log_values(circuit, np.full(n, -1, np.int32))
    same = structural_ids(circuit)  # a sub-circuit written twice counts as one node
    root = circuit.root
    if kind[root] != SUM:
        return None

    def split(e: int) -> tuple[int, int] | None:
        """The element as (indicator, rest), rest −1 when there is none."""
        a, b = int(ea[e]), int(eb[e])
        if kind[a] == INDICATOR:
            return a, b
        if b >= 0 and kind[b] == INDICATOR:
            return b, a
        return None

    def forest(i: int) -> list[int]:
        out, stack = [], [i]
        while stack:
            u = stack.pop()
            if kind[u] == PRODUCT:
                stack.extend(int(ea[e]) for e in range(ep[u], ep[u + 1]))
            elif kind[u] == SUM and ep[u + 1] - ep[u] == 1 and split(int(ep[u])) is None:
                stack.append(int(ea[ep[u]]))
                if eb[ep[u]] >= 0:
                    stack.append(int(eb[ep[u]]))
            else:
                out.append(u)
        return out

    def rest_logz(r: int) -> float:
        return float(logz[r]) if r >= 0 else 0.0

    def tree_node(t: int):
        """(v, logits over v's values, forests by value or None where the value is absent)."""
        if kind[t] == CATEGORICAL:
            v = int(var[t])
            p = circuit.params[circuit.param_ptr[t]: circuit.param_ptr[t] + circuit.param_len[t]]
            return v, np.asarray(p, float), [[] for _ in range(card[v])]
        if kind[t] == INDICATOR:
            v = int(var[t])
            lg = np.full(card[v], -np.inf)
            lg[int(value[t])] = 0.0
            return v, lg, [[] if k == int(value[t]) else None for k in range(card[v])]
        if kind[t] != SUM:
            return None
        v = -1
        lg, kids = None, None
        for e in range(ep[t], ep[t + 1]):
            s = split(e)
            if s is None:
                return None
            ind, rest = s
            if v < 0:
                v = int(var[ind])
                lg = np.full(card[v], -np.inf)
                kids = [None] * card[v]
            k = int(value[ind])
            if int(var[ind]) != v or kids[k] is not None:
                return None
            lg[k] = float(ew[e]) + rest_logz(rest)
            kids[k] = forest(rest) if rest >= 0 else []
        return v, lg, kids

    prior = np.full(2, -np.inf)
    parent = np.full(n, -2, np.int64)
    parent[d] = -1
    children: dict[int, frozenset] = {}
    node_of: dict[tuple[int, int, int], int] = {}
    tables: dict[tuple[int, int, int], np.ndarray] = {}
    roots_by_value: dict[int, frozenset] = {}
    for e in range(ep[root], ep[root + 1]):
        s = split(e)
        if s is None or int(var[s[0]]) != d:
            return None
        ind, rest = s
        dv = int(value[ind])
        if dv in roots_by_value:
            return None
        prior[dv] = float(ew[e]) + rest_logz(rest)
        tops = forest(rest) if rest >= 0 else []
        stack = [(t, -1, 0) for t in tops]
        top_vars = []
        while stack:
            t, pv, j = stack.pop()
            parsed = tree_node(t)
            if parsed is None:
                return None
            v, lg, kids = parsed
            if v == d or (parent[v] != -2 and parent[v] != pv):
                return None
            parent[v] = pv
            if pv < 0:
                top_vars.append(v)
            key = (v, dv, j)
            if key in node_of:
                if same[node_of[key]] != same[t]:
                    return None
                continue
            node_of[key] = t
            top = float(np.max(lg))
            tables[key] = (lg - top - math.log(float(np.sum(np.exp(lg - top))))
                           if top > -np.inf else np.full(card[v], -math.log(card[v])))
            for k, f in enumerate(kids):
                if f is None:
                    continue
                parsed_kids = [tree_node(c) for c in f]
                if any(p is None for p in parsed_kids):
                    return None
                kv = [p[0] for p in parsed_kids]
                ks = frozenset(kv)
                if len(ks) != len(kv) or children.setdefault(v, ks) != ks:
                    return None
                stack.extend((c, v, k) for c in f)
        if len(set(top_vars)) != len(top_vars):
            return None
        roots_by_value[dv] = frozenset(top_vars)
    if len(set(roots_by_value.values())) > 1:
        return None
    features = [v for v in range(n) if v != d]
    if any(parent[v] == -2 for v in features):
        return None  # a feature outside the tree: not a distribution over every variable
    for v in features:  # a leaf variable met only as a leaf must have no children elsewhere
        children.setdefault(v, frozenset())
    log_theta = {}
    for v in features:
        kp = card[int(parent[v])] if parent[v] >= 0 else 1
        log_theta[v] = [[tables.get((v, dv, j), np.full(card[v], -math.log(card[v])))
                         for j in range(kp)] for dv in range(2)]
    return prior, parent, log_theta


def _cached(circuit: Circuit, key: tuple, compute):
    """A value derived from ``circuit``, computed once (:mod:`pcfair.circuit.derived`)."""
    from pcfair.circuit.derived import derived

    return derived(circuit, key, compute)


def select_bound(circuit: Circuit, d: int, fav: int, choice: str = "auto", *,
                 naive_bayes: bool = True, assume_deterministic: bool = False,
                 share: bool = True) -> "Bound":
    """The bound the search prunes with: ``choice`` ``"auto"`` picks the tightest that
    applies — :class:`NaiveBayesBound` (when ``naive_bayes``), then :class:`TreeBound`, then
    :class:`QuotientBound`; ``"naive_bayes"``, ``"tree"`` or ``"quotient"`` force one
    (:class:`~pcfair.errors.OptionError` where it does not apply).

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.learn import learn_pc
    >>> df = pd.DataFrame({"d": [0, 1, 1, 0], "s": [0, 1, 1, 0], "z": [1, 1, 0, 0]})
    >>> select_bound(learn_pc(df, "d"), 0, 1).name
    'tree'
    >>> select_bound(learn_pc(df, "d"), 0, 1, "quotient").name
    'quotient'
    """
    if choice not in BOUNDS:
        raise OptionError(f"bound must be one of {BOUNDS}, not {choice!r}")
    if choice in ("auto", "naive_bayes") and (naive_bayes or choice == "naive_bayes"):
        nb = NaiveBayesBound.from_circuit(circuit, d, fav)
        if nb is not None:
            return NaiveBayesBound(nb.prior, nb.w)
        if choice == "naive_bayes":
            raise OptionError("the naive-Bayes bound needs a circuit that is naive Bayes in "
                              "the decision (NaiveBayesBound.from_circuit)")
    if choice in ("auto", "tree"):
        tb = TreeBound.from_circuit(circuit, d, fav)
        if tb is not None:
            return tb.fresh()
        if choice == "tree":
            raise OptionError("the tree bound needs a decision-rooted tree-augmented circuit "
                              "(TreeBound.from_circuit)")
    return QuotientBound(circuit, d, fav, assume_deterministic, share)
