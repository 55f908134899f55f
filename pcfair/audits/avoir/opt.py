"""The δ-allocation optimiser of AVOIR (optimised bounds, "OB") and the equal split ("VF").

At a check time every leaf ``i`` has an estimate ``Ê_i`` and a count ``n_i``. AVOIR-OB solves
(paper eq. 2, Appendix A.2)::

    minimise   Σ_i δ_i
    subject to ε_i = w_i·ε(δ_i, n_i)                       (the concentration bound)
               g_k(ε) ≤ margin_k − tol                     for every comparison k used
               |Ê_d| − ε_d ≥ tol                           for every ratio denominator d used
               0 < δ_i ≤ 1

where ``g_k`` is the propagated half-width of comparison ``k`` and ``margin_k`` the room between
its point estimate and threshold on the side the point estimate is on. A specification with
``&``/``|`` is proved by a *set* of comparisons (a witness): ``A & B`` true needs both, ``A & B``
false needs either, and dually for ``|``; the optimiser enumerates the minimal witnesses (the
disjunct choices) and keeps the best. Each is solved with SLSQP in ``u = ln δ`` with analytic
gradients, from several starts when the problem may be non-convex (products and ratios).

Two safeguards make the answer trustworthy:

* the equal split ``δ_i = Δ/L`` (VeriFair's allocation, AVOIR-VF) is always a candidate, so the
  optimised monitor never stops later than the baseline (the paper's Theorem 2) even when a local
  solver fails;
* every candidate is re-checked with the numeric rules and Kleene logic of
  :mod:`~pcfair.audits.avoir.rules`; a solver answer that fails the re-check gives no verdict.

Notes
-----
The allocation is chosen from the data at the stopping time, while the adaptive Hoeffding
guarantee holds for a δ fixed in advance; a union bound over a data-dependent allocation is not
formally covered (spec §2.6; the crude valid bound is ``L·Δ``). ``split="equal"`` is provably
valid. pcfair reproduces the paper's algorithm faithfully and documents the gap.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.optimize import minimize

from pcfair.audits.avoir._program import Program
from pcfair.audits.avoir.ast import Spec, parse_spec
from pcfair.audits.avoir.bounds import AdaptiveHoeffding, ConcentrationBound, get_bound
from pcfair.audits.avoir.errors import MonitorSettingError
from pcfair.audits.avoir.rules import DEFAULT_TOL, UNDETERMINED, margin

__all__ = ["Allocation", "allocate", "equal_split"]

_U_MIN = math.log(1e-300)
_MAX_WITNESSES = 4096
SPLITS = ("optimized", "equal")


@dataclass(frozen=True)
class Allocation:
    """Result of one allocation problem.

    Attributes
    ----------
    verdict : bool or None
        The certified truth value, or None if no allocation with ``Σδ ≤ Δ`` decides the spec.
    failure_prob : float
        The δ charged to the verdict (``Σ δ_i`` over the leaves used); 1.0 without a verdict.
    failure_probs : numpy.ndarray of shape (L,)
        δ per leaf occurrence (0 for leaves the verdict does not use, i.e. no claim on them).
    source : str
        ``"optimized"``, ``"equal"`` or ``"none"``: which candidate won.

    Examples
    --------
    >>> from pcfair.audits.avoir.opt import allocate
    >>> a = allocate("E[r] > 0.5", [0.9], [400], failure_prob=0.1)
    >>> a.verdict, a.decided, a.source
    (True, True, 'optimized')
    """

    verdict: bool | None
    failure_prob: float
    failure_probs: np.ndarray
    source: str

    @property
    def decided(self) -> bool:
        """Whether a verdict was certified."""
        return self.verdict is not None


def _check_budget(failure_prob: float) -> float:
    try:
        d = float(failure_prob)
    except (TypeError, ValueError) as err:
        raise MonitorSettingError(f"failure_prob must be a number in (0, 1), got {failure_prob!r}") from err
    if not 0.0 < d < 1.0:
        raise MonitorSettingError(f"failure_prob (the overall failure probability Δ) must lie in (0, 1), "
                                  f"got {failure_prob!r}")
    return d


def equal_split(n_leaves: int, failure_prob: float) -> np.ndarray:
    """VeriFair's allocation ``δ_i = Δ / L`` for ``L`` leaf occurrences.

    Examples
    --------
    >>> from pcfair.audits.avoir.opt import equal_split
    >>> equal_split(4, 0.15).tolist()
    [0.0375, 0.0375, 0.0375, 0.0375]
    """
    return np.full(int(n_leaves), _check_budget(failure_prob) / int(n_leaves))


# ---------------------------------------------------------------------------------------------
# witnesses
# ---------------------------------------------------------------------------------------------

def _witnesses(prog: Program, truth: np.ndarray, i: int, target: bool) -> list[frozenset]:
    node = prog.nodes[i]
    if node.kind == "cmp":
        return [frozenset({(i, target)})] if bool(truth[i]) == target else []
    a, b = node.children
    conj = (node.kind == "and") == target  # both children needed with the same target
    wa = _witnesses(prog, truth, a, target)
    wb = _witnesses(prog, truth, b, target)
    if conj:
        out = [x | y for x, y in itertools.product(wa, wb)]
    else:
        out = wa + wb
    out = list(dict.fromkeys(out))
    if len(out) > _MAX_WITNESSES:
        raise MonitorSettingError(
            f"the specification has more than {_MAX_WITNESSES} ways to be decided; "
            "simplify it or use split='equal'")
    return out


def _minimal(sets: list[frozenset]) -> list[frozenset]:
    sets = sorted(set(sets), key=len)
    out: list[frozenset] = []
    for s in sets:
        if not any(t <= s for t in out):
            out.append(s)
    return out


# ---------------------------------------------------------------------------------------------
# one witness: an NLP in u = ln δ
# ---------------------------------------------------------------------------------------------

class _WitnessProblem:
    """Constraints of one witness as functions of ``u = ln δ`` over the leaves it uses."""

    def __init__(self, prog: Program, values: np.ndarray, counts: np.ndarray,
                 witness: frozenset, bound: ConcentrationBound, tol: float):
        self.prog = prog
        self.values = values
        self.bound = bound
        self.tol = tol
        cmps = sorted(witness)
        leaves: set[int] = set()
        divs: set[int] = set()
        for k, _side in cmps:
            leaves.update(prog.leaves_below[k])
            divs.update(prog.div_below[k])
        self.J = np.asarray(sorted(leaves), dtype=np.intp)
        self.pos = {j: p for p, j in enumerate(self.J)}
        self.cmps = [(k, bool(side)) for k, side in cmps]
        self.divs = sorted(divs)
        self.margins = np.asarray([float(margin(prog.nodes[k].op, values[k], prog.nodes[k].c,
                                                side)) for k, side in self.cmps])
        self.n = counts[self.J].astype(float)
        self.w = prog.widths[self.J]
        self.convex = all(prog.convex_cmp[k] for k, _ in self.cmps)
        needed: set[int] = set()
        for k, _ in self.cmps:
            needed.add(k)
            needed.update(prog._descendants(k))
        self.order = [i for i in reversed(range(len(prog.nodes))) if i in needed]
        self._memo = None
        self._ah = None
        if isinstance(bound, AdaptiveHoeffding):
            log_term = 0.6 * np.log(np.log(self.n) / math.log(1.1) + 1.0)
            self._ah = log_term + (5.0 / 9.0) * math.log(24.0)

    def leaf_eps(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if self._ah is not None:
            # closed form of the adaptive Hoeffding bound in u = ln δ (hot path)
            e = np.sqrt((self._ah - (5.0 / 9.0) * u) / self.n)
            return self.w * e, -(5.0 / 18.0) * self.w / (self.n * e)
        d = np.exp(u)
        eps = self.w * self.bound.epsilon(d, self.n)
        deps = self.w * self.bound.depsilon_dlogdelta(d, self.n)
        return np.asarray(eps, dtype=float), np.asarray(deps, dtype=float)

    def node_eps(self, u: np.ndarray):
        """Half-width of every needed node and its gradient with respect to u (memoised)."""
        key = u.tobytes()
        if self._memo is not None and self._memo[0] == key:
            return self._memo[1]
        out = self._node_eps(u)
        self._memo = (key, out)
        return out

    def _node_eps(self, u: np.ndarray):
        eps_leaf, deps_leaf = self.leaf_eps(u)
        m = len(self.J)
        prog, vals = self.prog, self.values
        eps: dict[int, float] = {}
        grad: dict[int, np.ndarray] = {}
        zero = np.zeros(m)
        for i in self.order:
            node = prog.nodes[i]
            if node.kind == "leaf":
                p = self.pos[node.leaf]
                eps[i] = float(eps_leaf[p])
                g = zero.copy()
                g[p] = deps_leaf[p]
                grad[i] = g
            elif node.kind == "const":
                eps[i], grad[i] = 0.0, zero
            elif node.kind == "op":
                a, b = node.children
                ea, eb, ga, gb = eps[a], eps[b], grad[a], grad[b]
                va, vb = abs(vals[a]), abs(vals[b])
                if node.op in ("+", "-"):
                    eps[i], grad[i] = ea + eb, ga + gb
                elif node.op == "*":
                    eps[i] = ea * eb + va * eb + vb * ea
                    grad[i] = (eb + vb) * ga + (ea + va) * gb
                else:  # "/"
                    gap = max(vb - eb, 1e-12)
                    sb = max(vb, 1e-12)
                    e_inv = eb / (sb * gap)
                    de_inv = 1.0 / gap**2
                    eps[i] = va * e_inv + ea / sb + ea * e_inv
                    grad[i] = (1.0 / sb + e_inv) * ga + (va + ea) * de_inv * gb
            elif node.kind == "cmp":
                eps[i], grad[i] = eps[node.children[0]], grad[node.children[0]]
        return eps, grad

    def constraints(self, u: np.ndarray) -> np.ndarray:
        eps, _ = self.node_eps(u)
        out = [self.margins[p] - eps[k] - self.tol for p, (k, _) in enumerate(self.cmps)]
        for d in self.divs:
            den = self.prog.nodes[d].children[1]
            out.append(abs(self.values[den]) - eps[den] - self.tol)
        return np.asarray(out)

    def constraints_jac(self, u: np.ndarray) -> np.ndarray:
        _, grad = self.node_eps(u)
        rows = [-grad[k] for k, _ in self.cmps]
        for d in self.divs:
            rows.append(-grad[self.prog.nodes[d].children[1]])
        return np.vstack(rows)

    def solve(self, budget: float) -> np.ndarray | None:
        """Minimal-Σδ allocation over ``self.J`` (δ per used leaf) or None if infeasible."""
        m = len(self.J)
        if m == 0 or np.any(~(self.margins > self.tol)):
            return None
        # exact pruning: ε is non-increasing in δ and every rule is increasing in its children's
        # ε, so if giving every used leaf the whole budget fails, every split with Σδ ≤ Δ fails.
        if np.min(self.constraints(np.full(m, math.log(budget)))) < 0:
            return None
        starts = [np.full(m, math.log(budget / m))]
        if not self.convex or m > 2:
            inv_n = 1.0 / np.maximum(self.n, 1.0)
            starts.append(np.log(budget * inv_n / inv_n.sum()))
            starts.append(np.log(budget * self.n / self.n.sum()))
        best = None
        cons = {"type": "ineq", "fun": self.constraints, "jac": self.constraints_jac}
        for u0 in starts:
            res = minimize(
                lambda u: float(np.exp(u).sum()), u0, jac=lambda u: np.exp(u),
                method="SLSQP", bounds=[(_U_MIN, 0.0)] * m, constraints=[cons],
                options={"ftol": 1e-13, "maxiter": 300},
            )
            u = np.clip(res.x, _U_MIN, 0.0)
            if np.min(self.constraints(u)) < -1e-12:
                continue
            total = float(np.exp(u).sum())
            if best is None or total < best[0]:
                best = (total, u)
            # a convex problem has one optimum; otherwise try the other starts only when the
            # answer is near the budget, where a better local optimum could change the verdict
            if self.convex or best[0] > 1.5 * budget:
                break
        return None if best is None else np.exp(best[1])


def _solve_witness(prog, values, counts, witness, bound, tol, budget) -> np.ndarray | None:
    """Solve one witness; returns δ for every leaf occurrence (0 where unused) or None."""
    problem = _WitnessProblem(prog, values, counts, witness, bound, tol)
    d = problem.solve(budget)
    if d is None:
        return None
    out = np.zeros(prog.n_leaves)
    out[problem.J] = d
    return out


# ---------------------------------------------------------------------------------------------
# allocation with re-check
# ---------------------------------------------------------------------------------------------

def _recheck(prog, est, counts, deltas, bound, tol, charge, budget, target) -> float | None:
    ev = prog.evaluate(est[None, :], counts[None, :], deltas, bound, tol=tol, charge=charge)
    t = int(ev.root_truth[0])
    charged = float(ev.root_charged[0])
    if t == UNDETERMINED or bool(t) != target or not charged <= budget * (1 + 1e-12):
        return None
    return charged


def _allocate(prog: Program, est: np.ndarray, counts: np.ndarray, budget: float, *,
              split: str, bound: ConcentrationBound, tol: float, charge: str) -> Allocation:
    L = prog.n_leaves
    values, truth = prog.point_values(est)
    target = bool(truth[0])
    none = Allocation(None, 1.0, np.zeros(L), "none")
    candidates: list[tuple[float, np.ndarray, str]] = []
    eq = np.full(L, budget / L)
    charged = _recheck(prog, est, counts, eq, bound, tol, charge, budget, target)
    if charged is not None:
        candidates.append((charged, eq, "equal"))
    if split == "optimized":
        # cheap necessary condition: decided when every leaf gets the whole budget
        display = np.full(L, budget)
        ev = prog.evaluate(est[None, :], counts[None, :], display, bound, tol=tol, charge=charge)
        if int(ev.root_truth[0]) != UNDETERMINED:
            for witness in _minimal(_witnesses(prog, truth, 0, target)):
                # a hair above tol, so that the solver's answer passes the strict re-check
                d = _solve_witness(prog, values, counts, witness, bound, tol + 1e-8, budget)
                if d is None:
                    continue
                accepted = None
                for bump in (0.0, 1e-9, 1e-7, 1e-5):  # tiny polish if the solver is a hair off
                    trial = np.minimum(d * (1.0 + bump), 1.0)
                    accepted = _recheck(prog, est, counts, trial, bound, tol, charge,
                                        budget, target)
                    if accepted is not None:
                        candidates.append((accepted, trial, "optimized"))
                        break
    if not candidates:
        return none
    charged, deltas, source = min(candidates, key=lambda c: c[0])
    return Allocation(target, charged, deltas, source)


def allocate(spec: Spec | str, estimates: ArrayLike, counts: ArrayLike, *,
             failure_prob: float = 0.1, split: str = "optimized", bound: str | ConcentrationBound = "adaptive_hoeffding",
             tol: float = DEFAULT_TOL, failure_charge: str = "used") -> Allocation:
    """Solve AVOIR's allocation problem for one state of the leaf estimates.

    Parameters
    ----------
    spec : Spec or str
        The specification (text is parsed with :func:`~pcfair.audits.avoir.parse_spec`).
    estimates, counts : array-like of shape (L,)
        Ê_i and n_i for each leaf occurrence, in the order of ``spec.leaves()``.
    failure_prob : float, default 0.1
        The overall failure probability Δ.
    split : {"optimized", "equal"}, default "optimized"
        AVOIR-OB (the optimiser, with the equal split as a candidate) or AVOIR-VF.
    bound : str or ConcentrationBound, default "adaptive_hoeffding"
    tol : float, default 1e-6
        Strict margin of every comparison verdict.
    failure_charge : {"used", "all"}, default "used"
        How a Boolean verdict is charged (see :mod:`~pcfair.audits.avoir.rules`).

    Returns
    -------
    Allocation

    Raises
    ------
    MonitorSettingError
        For Δ outside (0, 1), an unknown split, or arrays of the wrong length.

    Examples
    --------
    The paper's worked example: the equal split is infeasible, the optimum is not.

    >>> from pcfair.audits.avoir.opt import allocate
    >>> psi = "E[r | s == 1] - E[r | s == 0] < 0.1"
    >>> allocate(psi, [0.8, 0.5], [1550, 310], failure_prob=0.1, split="equal").verdict is None
    True
    >>> a = allocate(psi, [0.8, 0.5], [1550, 310], failure_prob=0.1)
    >>> ratio = a.failure_probs[1] / a.failure_probs[0]
    >>> a.verdict, round(a.failure_prob, 3), round(float(ratio), 2)
    (False, 0.096, 2.35)
    """
    if isinstance(spec, str):
        spec = parse_spec(spec)
    if not isinstance(spec, Spec):
        raise MonitorSettingError(f"spec must be a Spec or its text form, got {spec!r}")
    budget = _check_budget(failure_prob)
    if split not in SPLITS:
        raise MonitorSettingError(f"split must be one of {SPLITS}, got {split!r}")
    prog = Program(spec)
    est = np.asarray(estimates, dtype=float).ravel()
    n = np.asarray(counts, dtype=float).ravel()
    if est.shape != (prog.n_leaves,) or n.shape != (prog.n_leaves,):
        raise MonitorSettingError(
            f"estimates and counts need one entry per leaf occurrence ({prog.n_leaves}: "
            f"{[str(x) for x in prog.leaves]}), got {est.size} and {n.size}")
    if np.any(~(n >= 0)):
        raise MonitorSettingError(f"counts must be >= 0, got {n.tolist()}")
    return _allocate(prog, est, n, budget, split=split, bound=get_bound(bound), tol=float(tol),
                     charge=failure_charge)
