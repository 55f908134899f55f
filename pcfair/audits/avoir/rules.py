"""Numeric propagation rules and three-valued (Kleene) logic for AVOIR claims.

A claim ``X : (Ê, ε, δ)`` says ``Pr[|Ê − E[X]| ≥ ε] ≤ δ``. The rules (paper Fig. 5, KDD Fig. 7)
derive claims for sums, products, inverses and ratios of expectations; a comparison with a
constant turns a claim into a three-valued verdict, and ``&``/``|`` combine verdicts with Kleene
logic. The functions work elementwise on numpy arrays (one entry per check time), and the
:class:`Claim` dataclass gives a readable scalar interface over them::

    X = Claim(0.8, 0.05, 0.01); Y = Claim(0.5, 0.1, 0.02)
    X - Y          # Claim(value=0.3, epsilon=0.15, delta=0.03)
    X / Y          # Claim(value=1.6, epsilon=0.525, delta=0.03)  (VeriFair's ratio rule)
    compare(X - Y, "<", 0.5)    # (True, 0.03)

Rules (``|·|`` keeps them valid for signed intermediate values):

==========  =======================  =============================================  ===========
node        value                    ε                                              δ
==========  =======================  =============================================  ===========
constant c  c                        0                                              0
X ± Y       Ê_X ± Ê_Y                ε_X + ε_Y                                      δ_X + δ_Y
X × Y       Ê_X·Ê_Y                  ε_X·ε_Y + |Ê_X|·ε_Y + |Ê_Y|·ε_X                δ_X + δ_Y
X⁻¹         1/Ê                      ε / (|Ê|·(|Ê| − ε)) if |Ê| > ε, else ∞         δ (1 if ∞)
X / Y       Ê_X/Ê_Y                  |Ê_X|·ε_inv + ε_X/|Ê_Y| + ε_X·ε_inv             δ_X + δ_Y
==========  =======================  =============================================  ===========

with ``ε_inv = ε_Y / (|Ê_Y|·(|Ê_Y| − ε_Y))``. Every δ is capped at 1.

Comparison verdicts use the interval ``[Ê − ε, Ê + ε]`` and a strict margin ``tol``:

======  ========================  ========================
op      True if                   False if
======  ========================  ========================
X > c   Ê − ε − c > tol           c − (Ê + ε) > tol
X < c   c − (Ê + ε) > tol         Ê − ε − c > tol
X == c  never                     abs(Ê − c) − ε > tol
X != c  abs(Ê − c) − ε > tol      never
======  ========================  ========================

Notes
-----
The paper prints the False rule as "X < c : (F, δ)"; it is ``X > c : (F, δ)`` (recorded in the
spec's list of discrepancies). The reference evaluator derives Boolean values from point
estimates, which reports ``F ∨ undetermined`` as decided; pcfair uses Kleene logic, so that case
stays undetermined.

A verdict's δ can be charged two ways (``charge``): ``"used"`` charges only the leaves a verdict
actually depends on (``F ∧ ?`` carries the F child's δ), ``"all"`` charges every leaf below the
node (the paper's rule). The δ *shown* for a node is always the sum over all leaves below it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from pcfair.audits.avoir.errors import MonitorSettingError

__all__ = [
    "FALSE",
    "TRUE",
    "UNDETERMINED",
    "Claim",
    "compare",
    "compare_arrays",
    "kleene_and",
    "kleene_or",
    "margin",
    "point_truth",
    "propagate",
]

#: Truth codes used in arrays: True, False and undetermined.
TRUE, FALSE, UNDETERMINED = np.int8(1), np.int8(0), np.int8(-1)

DEFAULT_TOL = 1e-6
_COMPARISONS = (">", "<", "==", "!=")


def _cap(d):
    return np.minimum(d, 1.0)


def propagate(op: str, va: ArrayLike, ea: ArrayLike, da: ArrayLike, vb: ArrayLike,
              eb: ArrayLike, db: ArrayLike, *, finite: bool = False
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Apply one binary propagation rule elementwise.

    Parameters
    ----------
    op : {"+", "-", "*", "/"}
        The operation between the two child claims.
    va, ea, da, vb, eb, db : array-like
        Values, half-widths and failure probabilities of the left and right children.
    finite : bool, default False
        Replace an infinite ratio half-width by a large finite one (for the optimiser, which
        cannot handle ``inf``); the monitor's verdicts always use ``finite=False``.

    Returns
    -------
    value, epsilon, delta : numpy.ndarray

    Examples
    --------
    >>> from pcfair.audits.avoir.rules import propagate
    >>> [round(float(x), 6) for x in propagate("*", 0.8, 0.05, 0.01, 0.5, 0.1, 0.02)]
    [0.4, 0.11, 0.03]
    """
    va, ea, da, vb, eb, db = (np.asarray(x, dtype=float) for x in (va, ea, da, vb, eb, db))
    delta = _cap(da + db)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        if op in ("+", "-"):
            value = va + vb if op == "+" else va - vb
            eps = ea + eb
        elif op == "*":
            value = va * vb
            eps = ea * eb + np.abs(va) * eb + np.abs(vb) * ea
            eps = np.where(np.isinf(ea) | np.isinf(eb), np.inf, eps)
        elif op == "/":
            abs_b = np.abs(vb)
            gap = abs_b - eb
            value = va / vb
            if finite:
                safe_gap = np.maximum(gap, 1e-12)
                safe_b = np.maximum(abs_b, 1e-12)
                e_inv = eb / (safe_b * safe_gap)
                eps = np.abs(va) * e_inv + ea / safe_b + ea * e_inv
            else:
                ok = gap > 0
                e_inv = np.where(ok, eb / (abs_b * gap), np.inf)
                eps = np.where(ok, np.abs(va) * e_inv + ea / abs_b + ea * e_inv, np.inf)
                eps = np.where(ok & (np.isinf(ea) | np.isnan(eps)), np.inf, eps)
                delta = np.where(ok, delta, 1.0)
        else:
            raise MonitorSettingError(f"unknown operation {op!r}; expected one of + - * /")
    eps = np.where(np.isnan(eps), np.inf, eps)
    return value, eps, delta


def margin(op: str, value: ArrayLike, c: float, side: ArrayLike) -> np.ndarray:
    """Signed room between the point estimate and the threshold for proving ``side``.

    A comparison ``term op c`` is proved to have truth ``side`` exactly when
    ``margin − ε > tol``; ``-inf`` marks an impossible side (``==`` is never True and ``!=``
    never False).

    Examples
    --------
    >>> from pcfair.audits.avoir.rules import margin
    >>> round(float(margin(">", 0.3, 0.1, True)), 6)
    0.2
    """
    value = np.asarray(value, dtype=float)
    side = np.asarray(side, dtype=bool)
    if op == ">":
        out = np.where(side, value - c, c - value)
    elif op == "<":
        out = np.where(side, c - value, value - c)
    elif op == "==":
        out = np.where(side, -np.inf, np.abs(value - c))
    elif op == "!=":
        out = np.where(side, np.abs(value - c), -np.inf)
    else:
        raise MonitorSettingError(f"unknown comparison {op!r}; expected one of {_COMPARISONS}")
    return np.where(np.isnan(out), -np.inf, out)


def point_truth(op: str, value: ArrayLike, c: float) -> np.ndarray:
    """Truth of ``value op c`` at the point estimate (bool array; NaN compares False)."""
    value = np.asarray(value, dtype=float)
    with np.errstate(invalid="ignore"):
        if op == ">":
            return value > c
        if op == "<":
            return value < c
        if op == "==":
            return value == c
        if op == "!=":
            return ~(value == c) & ~np.isnan(value)
    raise MonitorSettingError(f"unknown comparison {op!r}; expected one of {_COMPARISONS}")


def compare_arrays(op: str, value: ArrayLike, eps: ArrayLike, c: float,
                   tol: float = DEFAULT_TOL) -> np.ndarray:
    """Three-valued verdicts of ``term op c`` elementwise, as int8 codes (1, 0, -1)."""
    value = np.asarray(value, dtype=float)
    eps = np.asarray(eps, dtype=float)
    with np.errstate(invalid="ignore"):
        is_true = margin(op, value, c, True) - eps > tol
        is_false = margin(op, value, c, False) - eps > tol
    out = np.full(np.broadcast(value, eps).shape, UNDETERMINED, dtype=np.int8)
    out[np.broadcast_to(is_false, out.shape)] = FALSE
    out[np.broadcast_to(is_true, out.shape)] = TRUE
    return out


def _kleene(op: str, ta, da, tb, db, charge: str):
    ta = np.asarray(ta, dtype=np.int8)
    tb = np.asarray(tb, dtype=np.int8)
    da = np.asarray(da, dtype=float)
    db = np.asarray(db, dtype=float)
    if charge not in ("used", "all"):
        raise MonitorSettingError(f"failure_charge must be 'used' or 'all', got {charge!r}")
    dominant, other = (FALSE, TRUE) if op == "&" else (TRUE, FALSE)
    a_dom, b_dom = ta == dominant, tb == dominant
    both_other = (ta == other) & (tb == other)
    truth = np.where(a_dom | b_dom, dominant, np.where(both_other, other, UNDETERMINED))
    total = _cap(da + db)
    if charge == "all":
        charged = total
    else:
        charged = np.where(a_dom & b_dom, np.minimum(da, db),
                           np.where(a_dom, da, np.where(b_dom, db, total)))
    return truth.astype(np.int8), charged


def kleene_and(ta: ArrayLike, da: ArrayLike, tb: ArrayLike, db: ArrayLike,
               charge: str = "used") -> tuple[np.ndarray, np.ndarray]:
    """Kleene AND of two verdicts with their charged failure probabilities.

    Parameters
    ----------
    ta, tb : array-like of int8
        Truth codes (1 True, 0 False, -1 undetermined).
    da, db : array-like of float
        The δ charged to each child's verdict.
    charge : {"used", "all"}
        ``"used"``: a False child decides alone and carries only its own δ; ``"all"``: always
        ``da + db``.

    Returns
    -------
    truth : numpy.ndarray of int8
    delta : numpy.ndarray of float

    Examples
    --------
    >>> from pcfair.audits.avoir.rules import kleene_and
    >>> t, d = kleene_and(0, 0.01, -1, 0.02)
    >>> int(t), float(d)
    (0, 0.01)
    """
    return _kleene("&", ta, da, tb, db, charge)


def kleene_or(ta: ArrayLike, da: ArrayLike, tb: ArrayLike, db: ArrayLike,
              charge: str = "used") -> tuple[np.ndarray, np.ndarray]:
    """Kleene OR of two verdicts with their charged failure probabilities.

    Examples
    --------
    >>> from pcfair.audits.avoir.rules import kleene_or
    >>> int(kleene_or(0, 0.01, -1, 0.02)[0])   # False or undetermined stays undetermined
    -1
    """
    return _kleene("|", ta, da, tb, db, charge)


@dataclass(frozen=True)
class Claim:
    """A claim ``(value, epsilon, delta)`` about an expectation term.

    Arithmetic between claims applies the propagation rules; numbers are constants
    ``(c, 0, 0)``.

    Examples
    --------
    >>> from pcfair.audits.avoir.rules import Claim
    >>> X, Y = Claim(0.8, 0.05, 0.01), Claim(0.5, 0.1, 0.02)
    >>> (X / Y).rounded()
    Claim(value=1.6, epsilon=0.525, delta=0.03)
    """

    value: float
    epsilon: float
    delta: float

    @classmethod
    def constant(cls, c: float) -> Claim:
        """The exact claim ``(c, 0, 0)``."""
        return cls(float(c), 0.0, 0.0)

    @property
    def lower(self) -> float:
        """``value − epsilon``."""
        return self.value - self.epsilon

    @property
    def upper(self) -> float:
        """``value + epsilon``."""
        return self.value + self.epsilon

    def rounded(self, digits: int = 9) -> Claim:
        """A copy with every field rounded (for display and doctests)."""
        return Claim(*(round(float(x), digits) if np.isfinite(x) else float(x)
                       for x in (self.value, self.epsilon, self.delta)))

    def _binary(self, op: str, other) -> Claim:
        o = other if isinstance(other, Claim) else Claim.constant(other)
        v, e, d = propagate(op, self.value, self.epsilon, self.delta,
                            o.value, o.epsilon, o.delta)
        return Claim(float(v), float(e), float(d))

    def _rbinary(self, op: str, other) -> Claim:
        return Claim.constant(other)._binary(op, self)

    def __add__(self, other):
        return self._binary("+", other)

    def __radd__(self, other):
        return self._rbinary("+", other)

    def __sub__(self, other):
        return self._binary("-", other)

    def __rsub__(self, other):
        return self._rbinary("-", other)

    def __mul__(self, other):
        return self._binary("*", other)

    def __rmul__(self, other):
        return self._rbinary("*", other)

    def __truediv__(self, other):
        return self._binary("/", other)

    def __rtruediv__(self, other):
        return self._rbinary("/", other)

    def inverse(self) -> Claim:
        """``1 / self``: ``(1/Ê, ε/(|Ê|(|Ê|−ε)), δ)``; ``(…, inf, 1)`` if ``|Ê| <= ε``."""
        return Claim.constant(1.0)._binary("/", self)


def compare(claim: Claim, op: str, c: float, tol: float = DEFAULT_TOL) -> tuple[bool | None, float]:
    """Verdict of ``claim op c``: ``(True | False | None, delta)``.

    ``None`` means undetermined; its δ is reported as 1 (no claim).

    Examples
    --------
    >>> from pcfair.audits.avoir.rules import Claim, compare
    >>> D = Claim(0.3, 0.15, 0.03)
    >>> compare(D, "<", 0.5), compare(D, "<", 0.4)
    ((True, 0.03), (None, 1.0))
    """
    code = int(compare_arrays(op, claim.value, claim.epsilon, c, tol))
    if code == UNDETERMINED:
        return None, 1.0
    return bool(code), float(claim.delta)
