"""Brute-force oracle for discrimination patterns (a test helper, not a test module).

Written straight from the definitions of ``shared/specs/pc-certifier.md`` §1–§3, with no search,
no bounds and no pcfair code other than :meth:`Circuit.log_marginal` (used only to tabulate the
joint distribution). Every probability is a sum over the rows of the full joint table, taken with
:func:`math.fsum` (correctly rounded, so it does not depend on the order of the rows or on how
many zero rows a mask selects: two patterns that select the same rows get bit-identical
probabilities, which matters for the strict Pareto ties).

Conventions
-----------
* Variables are numbered ``0 .. V-1``; ``cards[v]`` is the number of values of ``v``; a value is
  its 0-based index. ``decision`` is the index of the binary ``D``, ``favorable`` the index of
  ``d`` (the other value is ``¬d``). ``Z`` is every variable except ``D``.
* A pattern is a pair of dicts ``x = {var: value}`` (non-empty, sensitive vars only) and
  ``y = {var: value}`` (vars of ``Z`` not in ``x``).
* ``enumerate_patterns`` returns every pattern with ``P(x, y) > 0`` (a :class:`PatternList`);
  patterns with ``P(x, y) = 0`` are undefined (spec §1) and only counted, in
  ``PatternList.n_undefined``.
* The summaries (:func:`maximal`, :func:`minimal`, :func:`pareto`) take that full list and
  quantify over it. So an extension with ``P = 0`` is ignored when asking "is every extension in
  Σ?" (it describes nobody, and it is not a pattern of the distribution). The spec does not say
  this in so many words; the authors' code instead counts a zero-probability extension as "not
  in Σ" (its score is NaN). The two agree on strictly positive distributions.
* ``minimal`` reads spec §3 as: let ``Up(p)`` = "p ∈ Σ and every extension of p is in Σ";
  ``p`` is minimal iff ``Up(p)`` and no valid contraction ``c`` (``x_c ≠ ∅``) has ``Up(c)``.
  (The same reading as the authors' ``get_minimal_patterns``: a node is "full" only if it is
  itself a pattern and all its extensions are.)

Checked once (by hand, not in the suite: the model is not shipped) on the authors' published
COMPAS circuit ``compas_good.psdd`` (D = "8", sensitive "4".."7"): 7,445 / 2,388 / 1,164
patterns at δ = .01 / .05 / .1, 170 / 74 / 0 maximal, 103 / 10 / 1 minimal, top |Δ| 0.2236, as
spec §3 states; strict Pareto fronts of 36 / 26 at δ = .05 / .1 (38 / 28 when ties on
probability are kept, as the authors' code does and the paper reports).

Near the threshold, rounding decides: see :func:`well_separated` before comparing engines.

Cost: enumeration is O(#patterns × #rows); the summaries compare pairs of patterns, O(|Σ| ×
#patterns). A 7-feature binary model (14,688 patterns, 256 rows) takes tens of seconds.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

# --------------------------------------------------------------------------------------------
# the joint table


def all_assignments(cards) -> np.ndarray:
    """Every complete assignment, one row each, in ``itertools.product`` order (the last
    variable changes fastest; the same order as a C-order ``reshape(-1)`` of an array of shape
    ``cards``)."""
    return np.array(list(itertools.product(*[range(int(k)) for k in cards])),
                    dtype=np.int32).reshape(-1, len(cards))


def joint_table(circuit) -> tuple[np.ndarray, np.ndarray]:
    """``(assignments [N, V] int32, probs [N])``: the circuit's value on every complete
    assignment, by ``circuit.log_marginal`` (no evidence is missing, so nothing is summed out)."""
    cards = [int(k) for k in circuit.variables.cardinalities]
    assignments = all_assignments(cards)
    probs = np.exp(np.asarray(circuit.log_marginal(assignments), dtype=np.float64))
    return assignments, probs


def _as_table(model, cards):
    """``(assignments, probs)`` from a Circuit, an ``(assignments, probs)`` pair, or an array
    of shape ``cards`` holding ``P(v0, v1, ...)``. Probabilities are divided by their total."""
    if hasattr(model, "log_marginal"):
        assignments, probs = joint_table(model)
        model_cards = [int(k) for k in model.variables.cardinalities]
        if list(cards) != model_cards:
            raise ValueError(f"cards {list(cards)} do not match the circuit's {model_cards}")
    elif isinstance(model, tuple) and len(model) == 2:
        assignments = np.asarray(model[0], dtype=np.int32)
        probs = np.asarray(model[1], dtype=np.float64)
    else:
        arr = np.asarray(model, dtype=np.float64)
        if list(arr.shape) != list(cards):
            raise ValueError(f"a table of shape {arr.shape} does not match cards {list(cards)}")
        assignments = all_assignments(cards)
        probs = arr.reshape(-1)
    if assignments.shape != (int(np.prod(cards)), len(cards)) or probs.shape != (len(assignments),):
        raise ValueError("the table must hold one row per complete assignment")
    if np.any(probs < 0) or not np.all(np.isfinite(probs)):
        raise ValueError("probabilities must be finite and non-negative")
    total = math.fsum(probs.tolist())
    if total <= 0:
        raise ValueError("the table has no probability mass")
    return assignments, probs / total


def _prob(assignments, probs, event: dict) -> float:
    """P(event) = the sum of the rows that agree with every ``var: value`` of ``event``."""
    mask = np.ones(len(assignments), dtype=bool)
    for var, value in event.items():
        mask &= assignments[:, var] == value
    return math.fsum(probs[mask].tolist())


# --------------------------------------------------------------------------------------------
# scores


def divergence(p_dxy: float, p_xy: float, p_dy: float, p_y: float, delta: float) -> float:
    """Spec §2's closed form: the least KL(P‖Q) over Q that agree with P outside ``x y`` and
    have ``|Δ_Q(x, y)| ≤ δ``. Zero when ``|Δ| ≤ δ``.

    ``a1 = P(d,x,y)``, ``a0 = P(¬d,x,y)``; ``r`` is the mass moved from ``¬d x y`` to ``d x y``
    (negative: the other way); ``0·log(0/…)`` is 0. It is ``inf`` in the one case where Q must
    empty a block that P fills (δ = 0 and ``P(d, y) = P(d, x, y)``, or the same for ``¬d``);
    there rounding may instead give a huge finite value.
    """
    if delta < 0:
        raise ValueError("delta must be non-negative")
    score = p_dxy / p_xy - p_dy / p_y
    if abs(score) <= delta:
        return 0.0
    a1 = p_dxy
    a0 = p_xy - p_dxy
    denom = 1.0 / p_xy - 1.0 / p_y
    # |Δ| > δ ≥ 0 needs P(y) > P(x, y) (else the rows of x y and of y coincide and Δ = 0)
    assert denom > 0, (p_xy, p_y, score)
    if score > delta:
        r = (delta - score) / denom
    else:
        r = (-delta - score) / denom
    div = 0.0
    for a, moved in ((a1, a1 + r), (a0, a0 - r)):
        if a > 0:
            # moved ≤ 0 only when δ = 0 and the fix needs Q(d, x, y) = 0 (or Q(¬d, x, y) = 0):
            # all of y's d-mass (¬d-mass) lies in x y. KL(P‖Q) is then infinite.
            div += math.inf if moved <= 0 else a * math.log(a / moved)
    return max(div, 0.0)  # KL ≥ 0; rounding can give −1e-17 when |Δ| barely exceeds δ


@dataclass
class PatternRecord:
    """One pattern ``(x, y)`` with ``P(x, y) > 0`` and its scores."""

    x: dict          # {sensitive var: value}, non-empty
    y: dict          # {var of Z \\ X: value}
    delta: float     # signed Δ(x, y) = P(d | x, y) − P(d | y)
    probability: float  # P(x, y)
    divergence: float   # spec §2, at the δ given to enumerate_patterns
    p_dxy: float     # P(d, x, y)
    p_dy: float      # P(d, y)
    p_y: float       # P(y)

    @property
    def abs_delta(self) -> float:
        return abs(self.delta)

    @property
    def key(self) -> tuple:
        """A hashable identity: (sorted x items, sorted y items)."""
        return (tuple(sorted(self.x.items())), tuple(sorted(self.y.items())))

    def size(self) -> int:
        return len(self.x) + len(self.y)


class PatternList(list):
    """The list of all defined patterns, plus what was enumerated to get it."""

    def __init__(self, records, *, cards, decision, sensitive, favorable, delta, n_undefined):
        super().__init__(records)
        self.cards = list(cards)
        self.decision = decision
        self.sensitive = list(sensitive)
        self.favorable = favorable
        self.delta = delta
        self.n_undefined = n_undefined  # patterns with P(x, y) = 0, skipped


def _states(var: int, card: int, sensitive: bool) -> list:
    """A variable's states in a pattern: absent, in y with each value, in x with each value."""
    out = [None] + [("y", v) for v in range(card)]
    if sensitive:
        out += [("x", v) for v in range(card)]
    return out


def all_pattern_assignments(cards, decision, sensitive):
    """Every pattern ``(x, y)`` (x non-empty) as a pair of dicts, P(x, y) = 0 included."""
    z = [v for v in range(len(cards)) if v != decision]
    per_var = [_states(v, cards[v], v in set(sensitive)) for v in z]
    for combo in itertools.product(*per_var):
        x, y = {}, {}
        for var, state in zip(z, combo):
            if state is None:
                continue
            (x if state[0] == "x" else y)[var] = state[1]
        if x:
            yield x, y


def score_pattern(assignments, probs, decision, favorable, x: dict, y: dict):
    """``(Δ, P(d,x,y), P(x,y), P(d,y), P(y))`` by sums over the table (Δ is None if P(x,y)=0)."""
    d = {decision: favorable}
    p_xy = _prob(assignments, probs, {**x, **y})
    p_dxy = _prob(assignments, probs, {**x, **y, **d})
    p_y = _prob(assignments, probs, y)
    p_dy = _prob(assignments, probs, {**y, **d})
    if p_xy == 0:
        return None, p_dxy, p_xy, p_dy, p_y
    return p_dxy / p_xy - p_dy / p_y, p_dxy, p_xy, p_dy, p_y


def _check_problem(cards, decision, sensitive, favorable=1):
    cards = [int(k) for k in cards]
    if not 0 <= decision < len(cards):
        raise ValueError("decision out of range")
    if cards[decision] != 2:
        raise ValueError("the decision variable must be binary")
    if favorable not in (0, 1):
        raise ValueError("favorable must be 0 or 1")
    sensitive = sorted(set(int(s) for s in sensitive))
    if decision in sensitive:
        raise ValueError("the decision cannot be sensitive")
    if any(not 0 <= s < len(cards) for s in sensitive):
        raise ValueError("sensitive variable out of range")
    return cards, sensitive


def enumerate_patterns(model, cards, decision, sensitive, favorable=1, delta=0.0) -> PatternList:
    """Every pattern with ``P(x, y) > 0``, scored.

    ``model``: a pcfair Circuit, an ``(assignments, probs)`` pair (e.g. from
    :func:`joint_table`), or an array of shape ``cards`` with ``P(v0, ..., v_{V-1})``.
    ``delta`` is only used for each record's ``divergence``.
    """
    cards, sensitive = _check_problem(cards, decision, sensitive, favorable)
    assignments, probs = _as_table(model, cards)
    records, n_undefined = [], 0
    for x, y in all_pattern_assignments(cards, decision, sensitive):
        score, p_dxy, p_xy, p_dy, p_y = score_pattern(assignments, probs, decision, favorable, x, y)
        if score is None:
            n_undefined += 1
            continue
        records.append(PatternRecord(
            x=x, y=y, delta=score, probability=p_xy,
            divergence=divergence(p_dxy, p_xy, p_dy, p_y, delta),
            p_dxy=p_dxy, p_dy=p_dy, p_y=p_y,
        ))
    return PatternList(records, cards=cards, decision=decision, sensitive=sensitive,
                       favorable=favorable, delta=delta, n_undefined=n_undefined)


def count_patterns(cards, decision, sensitive) -> int:
    """The number of patterns (defined or not): a sensitive variable with k values has 2k+1
    states (absent, in y, in x), a non-sensitive one k+1; minus the patterns with empty x."""
    cards, sensitive = _check_problem(cards, decision, sensitive)
    z = [v for v in range(len(cards)) if v != decision]
    with_any_x = math.prod(2 * cards[v] + 1 if v in sensitive else cards[v] + 1 for v in z)
    empty_x = math.prod(cards[v] + 1 for v in z)
    return with_any_x - empty_x


# --------------------------------------------------------------------------------------------
# Σ and the summaries


def is_discriminating(record, delta) -> bool:
    """``|Δ| > δ`` (strict)."""
    return abs(record.delta) > delta


def well_separated(records, delta, eps=1e-9) -> bool:
    """True iff no pattern has ``|Δ|`` within ``eps`` of ``δ``.

    Membership of Σ for a pattern with ``|Δ| ≈ δ`` is decided by rounding (at δ = 0 a
    mathematically zero Δ comes out as ±1e-17), so two correct engines can disagree on it and
    on every summary that depends on it. Compare engines only where this holds."""
    return all(abs(abs(r.delta) - delta) > eps for r in records)


def discrimination_patterns(records, delta) -> list:
    """Σ: the records with ``|Δ| > δ``."""
    return [r for r in records if is_discriminating(r, delta)]


def is_extension(big, small) -> bool:
    """``big ⊒ small``: ``small.x ⊆ big.x``, ``small.y ⊆ big.y`` (as sets of var=value items),
    and at least one inclusion strict. ``small`` is then a contraction of ``big``."""
    return (small.x.items() <= big.x.items() and small.y.items() <= big.y.items()
            and (small.x != big.x or small.y != big.y))


def _n_features(records, cards):
    if cards is None:
        cards = getattr(records, "cards", None)
    if cards is None:
        raise ValueError("pass cards (or a PatternList from enumerate_patterns)")
    return len(cards) - 1


def maximal(records, delta, cards=None) -> list:
    """Spec §3: ``p ∈ Σ``, not a complete assignment of Z, and no extension of ``p`` in Σ.

    ``records`` must be the full output of :func:`enumerate_patterns`."""
    n_z = _n_features(records, cards)
    sigma = discrimination_patterns(records, delta)
    out = []
    for p in sigma:
        if p.size() == n_z:
            continue
        if not any(is_extension(q, p) for q in sigma):
            out.append(p)
    return out


def _up_closed(records, delta) -> list:
    """The patterns p with ``p ∈ Σ`` and every (defined) extension of p in Σ."""
    sigma = discrimination_patterns(records, delta)
    return [p for p in sigma
            if all(is_discriminating(q, delta) for q in records if is_extension(q, p))]


def minimal(records, delta, cards=None) -> list:
    """Spec §3: ``p ∈ Σ`` with every extension in Σ, and no valid contraction with that same
    property (see the module docstring for the exact reading).

    ``records`` must be the full output of :func:`enumerate_patterns` (all have non-empty x, so
    every contraction found among them is a valid one)."""
    up = _up_closed(records, delta)
    return [p for p in up if not any(is_extension(p, c) for c in up)]


def pareto(records, delta, cards=None, tol=0.0) -> list:
    """Spec §3, Definition 5 (strict): ``p ∈ Σ`` such that for every other ``q ∈ Σ``,
    ``|Δ(p)| > |Δ(q)|`` or ``P(p) > P(q)``. Exact ties on both leave neither on the front.
    ``tol`` > 0 counts values within ``tol`` as ties (floating point separates patterns that
    tie mathematically by a few ulps)."""
    sigma = discrimination_patterns(records, delta)
    out = []
    for i, p in enumerate(sigma):
        if all(abs(p.delta) > abs(q.delta) + tol or p.probability > q.probability + tol
               for j, q in enumerate(sigma) if j != i):
            out.append(p)
    return out


def dominates(q, p) -> bool:
    """``q`` beats ``p`` in the sense of Definition 5: ``|Δ(q)| ≥ |Δ(p)|`` and ``P(q) ≥ P(p)``
    (so ``p`` fails the Pareto condition against ``q``)."""
    return abs(q.delta) >= abs(p.delta) and q.probability >= p.probability


def rank_score(record, rank_by="discrimination", delta=0.0) -> float:
    """``|Δ|``, or the divergence at ``delta`` (recomputed, whatever δ the record was made
    with)."""
    if rank_by == "discrimination":
        return abs(record.delta)
    if rank_by == "divergence":
        return divergence(record.p_dxy, record.probability, record.p_dy, record.p_y, delta)
    raise ValueError(f"rank_by must be 'discrimination' or 'divergence', not {rank_by!r}")


def top_k(records, delta, k, rank_by="discrimination") -> list:
    """The ``k`` patterns of Σ with the highest score, best first (fewer if |Σ| < k).

    Ties are broken by the pattern's key, arbitrarily but deterministically: compare engines on
    the scores, and on identities only above the k-th score."""
    sigma = discrimination_patterns(records, delta)
    ranked = sorted(sigma, key=lambda r: (-rank_score(r, rank_by, delta), r.key))
    return ranked[:k]


# ============================================================================================
# Vectorised brute force for the property suite (tests/patterns/test_random_models.py).
#
# The same definitions as above, computed on numpy arrays so that thousands of random models fit
# in the test budget. Independent of the engines' algorithms: every probability is a sum of the
# rows of the normalised joint table selected by a pattern's mask (a mask-matrix product), the
# summaries compare pairs of patterns through their per-variable states, and the divergence is
# the closed form of spec §2 evaluated from the four masses P(d,x,y), P(¬d,x,y), P(d,y,¬x),
# P(¬d,y,¬x), each summed directly (no subtraction), so a mass that is zero is exactly zero.
# Cross-checked against the slow functions above in the suite.

from fractions import Fraction  # noqa: E402

#: relative tolerance of the Pareto tie rule (two values tie when |a − b| ≤ PARETO_RTOL·max)
PARETO_RTOL = 1e-9


def normalised_joint(circuit) -> tuple[np.ndarray, np.ndarray]:
    """``(assignments, probs)``: the circuit's function on every complete assignment divided by
    its total, computed in log space (``exp(log f − max)`` then divided by the exact sum), so
    circuits whose normaliser overflows or underflows a float give the right distribution."""
    cards = [int(k) for k in circuit.variables.cardinalities]
    assignments = all_assignments(cards)
    logf = np.asarray(circuit.log_marginal(assignments), dtype=np.float64)
    if np.any(np.isnan(logf)) or np.any(logf == np.inf):
        raise ValueError("the circuit's log-values are NaN or +inf")
    m = float(np.max(logf))
    if m == -np.inf:
        raise ValueError("the circuit has no mass")
    probs = np.exp(logf - m)
    return assignments, probs / math.fsum(probs.tolist())


def _exact_param(logw: float, max_denominator: int) -> Fraction:
    if logw == -math.inf:
        return Fraction(0)
    f = Fraction(math.exp(logw)).limit_denominator(max_denominator)
    if abs(float(f) - math.exp(logw)) > 1e-12:
        raise ValueError(f"parameter {math.exp(logw)!r} is not a fraction with denominator "
                         f"<= {max_denominator}")
    return f


def exact_joint(circuit, max_denominator: int = 1 << 12) -> tuple[np.ndarray, np.ndarray]:
    """``(assignments, probs)`` with ``probs`` an object array of :class:`Fraction`: the circuit
    evaluated exactly on every complete assignment, each parameter (sum weight, leaf entry) read
    back as the fraction with denominator ≤ ``max_denominator`` nearest to ``exp(log θ)`` (so a
    circuit built from dyadic or other small-denominator parameters is evaluated exactly), then
    divided by the exact total."""
    from pcfair.circuit.circuit import CATEGORICAL, INDICATOR, PRODUCT, SUM

    cards = [int(k) for k in circuit.variables.cardinalities]
    A = all_assignments(cards)
    n_rows = len(A)
    vals: list = [None] * circuit.num_nodes
    one, zero = Fraction(1), Fraction(0)
    for i in range(circuit.num_nodes):
        k = int(circuit.kind[i])
        if k == INDICATOR:
            col = A[:, int(circuit.var[i])]
            vals[i] = np.array([one if c == int(circuit.value[i]) else zero for c in col],
                               dtype=object)
        elif k == CATEGORICAL:
            lo, ln = int(circuit.param_ptr[i]), int(circuit.param_len[i])
            table = [_exact_param(float(w), max_denominator) for w in circuit.params[lo:lo + ln]]
            col = A[:, int(circuit.var[i])]
            vals[i] = np.array([table[c] for c in col], dtype=object)
        else:
            lo, hi = int(circuit.edge_ptr[i]), int(circuit.edge_ptr[i + 1])
            if k == PRODUCT:
                acc = np.array([one] * n_rows, dtype=object)
                for e in range(lo, hi):
                    acc = acc * vals[int(circuit.edge_a[e])]
            elif k == SUM:
                acc = np.array([zero] * n_rows, dtype=object)
                for e in range(lo, hi):
                    w = _exact_param(float(circuit.edge_logw[e]), max_denominator)
                    term = vals[int(circuit.edge_a[e])] * w
                    if int(circuit.edge_b[e]) >= 0:
                        term = term * vals[int(circuit.edge_b[e])]
                    acc = acc + term
            else:  # pragma: no cover
                raise ValueError(f"unknown node kind {k}")
            vals[i] = acc
    probs = vals[circuit.root]
    total = sum(probs, zero)
    if total <= 0:
        raise ValueError("the circuit has no mass")
    return A, np.array([p / total for p in probs], dtype=object)


@dataclass
class PatternArrays:
    """Every pattern ``(x, y)`` (``P(x, y) = 0`` included, see ``defined``) as arrays.

    ``states[i, j]`` is the state of feature ``features[j]`` in pattern ``i``: 0 absent,
    ``1 + a`` in ``y`` with value ``a``, ``1 + k + a`` in ``x`` with value ``a`` (``k`` its
    number of values). ``a1, a0, b1, b0`` are ``P(d,x,y), P(¬d,x,y), P(d,y,¬x), P(¬d,y,¬x)``
    (floats, or :class:`Fraction` with ``exact``); ``delta`` is
    ``(a1·b0 − a0·b1) / (P(x,y)·P(y))`` = ``P(d|x,y) − P(d|y)`` (NaN where undefined)."""

    cards: list
    decision: int
    sensitive: list
    features: list
    states: np.ndarray
    keys: list
    a1: np.ndarray
    a0: np.ndarray
    b1: np.ndarray
    b0: np.ndarray
    p_xy: np.ndarray
    p_y: np.ndarray
    delta: np.ndarray
    defined: np.ndarray
    complete: np.ndarray  # a complete assignment of Z

    @property
    def abs_delta(self) -> np.ndarray:
        return np.abs(np.nan_to_num(np.asarray(self.delta, dtype=np.float64)))

    def __len__(self) -> int:
        return len(self.keys)

    def divergence(self, delta: float) -> np.ndarray:
        """Spec §2 at threshold ``delta`` for every pattern (0 where undefined or |Δ| ≤ δ)."""
        return np.array([divergence_masses(*m, delta) if ok else 0.0 for m, ok in
                         zip(zip(self.a1, self.a0, self.b1, self.b0), self.defined)])

    def describe(self, i: int) -> str:
        x, y = self.keys[i]
        return (f"x={dict(x)} y={dict(y)} Δ={float(self.delta[i])!r} "
                f"P(x,y)={float(self.p_xy[i])!r}"
                f" a1={float(self.a1[i])!r} a0={float(self.a0[i])!r} b1={float(self.b1[i])!r}"
                f" b0={float(self.b0[i])!r}")


def _row_masks(A, cards, feats, states):
    """Which rows of the joint table ``A`` each pattern state selects: ``(x y, y ¬x)``, one
    row of masks per state (a state codes each feature as 0 absent, ``1..k`` in ``y``,
    ``k+1..2k`` in ``x``)."""
    m_xy = np.ones((len(states), len(A)), bool)
    m_y = np.ones((len(states), len(A)), bool)
    for j, v in enumerate(feats):
        k = cards[v]
        s = states[:, j:j + 1]
        col = A[:, v][None, :]
        val = np.where(s > k, s - k - 1, s - 1)
        match = col == val
        m_xy &= (s == 0) | match
        m_y &= (s == 0) | (s > k) | match
    return m_xy, m_y & ~m_xy


def pattern_arrays(model, cards, decision, sensitive, favorable=1, exact=False,
                   chunk: int = 512) -> PatternArrays:
    """Every pattern of ``model`` scored by brute force (see :class:`PatternArrays`).

    ``model``: a Circuit (its joint by :func:`normalised_joint`, or :func:`exact_joint` with
    ``exact``), an ``(assignments, probs)`` pair, or an array of shape ``cards``."""
    cards, sensitive = _check_problem(cards, decision, sensitive, favorable)
    if hasattr(model, "log_marginal"):
        A, P = exact_joint(model) if exact else normalised_joint(model)
    elif isinstance(model, tuple):
        A = np.asarray(model[0], np.int32)
        P = np.asarray(model[1], dtype=object if exact else float)
    else:
        A, P = _as_table(model, cards)
    if not exact:
        P = np.asarray(P, np.float64)
        P = P / math.fsum(P.tolist())
    feats = [v for v in range(len(cards)) if v != decision]
    sset = set(sensitive)
    per_var = [list(range(1 + cards[v] + (cards[v] if v in sset else 0))) for v in feats]
    states = np.array(list(itertools.product(*per_var)), dtype=np.int32).reshape(-1, len(feats))
    in_x = np.zeros(states.shape, bool)
    for j, v in enumerate(feats):
        in_x[:, j] = states[:, j] > cards[v]
    states = states[in_x.any(axis=1)]
    in_x = in_x[in_x.any(axis=1)]
    n = len(states)
    keys, complete = [], np.zeros(n, bool)
    for i in range(n):
        x, y = [], []
        for j, v in enumerate(feats):
            s = int(states[i, j])
            if s == 0:
                continue
            if s <= cards[v]:
                y.append((v, s - 1))
            else:
                x.append((v, s - cards[v] - 1))
        keys.append((tuple(x), tuple(y)))
        complete[i] = bool(np.all(states[i] > 0))
    is_d = A[:, decision] == favorable
    dt = object if exact else np.float64
    a1, a0, b1, b0 = (np.empty(n, dtype=dt) for _ in range(4))
    Pd = np.where(is_d, P, 0 * P[0]).astype(dt)
    Pn = np.where(~is_d, P, 0 * P[0]).astype(dt)
    for lo in range(0, n, chunk):
        st = states[lo:lo + chunk]
        m_xy, m_ynx = _row_masks(A, cards, feats, st)
        if exact:
            for name, mask, vec in (("a1", m_xy, Pd), ("a0", m_xy, Pn), ("b1", m_ynx, Pd),
                                    ("b0", m_ynx, Pn)):
                arr = {"a1": a1, "a0": a0, "b1": b1, "b0": b0}[name]
                for r in range(len(st)):
                    arr[lo + r] = sum(vec[mask[r]], Fraction(0))
        else:
            a1[lo:lo + len(st)] = m_xy.astype(np.float64) @ Pd
            a0[lo:lo + len(st)] = m_xy.astype(np.float64) @ Pn
            b1[lo:lo + len(st)] = m_ynx.astype(np.float64) @ Pd
            b0[lo:lo + len(st)] = m_ynx.astype(np.float64) @ Pn
    p_xy = a1 + a0
    p_y = p_xy + b1 + b0
    defined = np.array([p > 0 for p in p_xy], bool)
    if exact:
        delta = np.array([(a1[i] * b0[i] - a0[i] * b1[i]) / (p_xy[i] * p_y[i]) if defined[i]
                          else None for i in range(n)], dtype=object)
    else:
        with np.errstate(invalid="ignore", divide="ignore"):
            delta = np.where(defined, (a1 * b0 - a0 * b1) / (p_xy * p_y), np.nan)
    return PatternArrays(cards, decision, sensitive, feats, states, keys, a1, a0, b1, b0,
                         p_xy, p_y, delta, defined, complete)


def divergence_masses(a1, a0, b1, b0, delta: float) -> float:
    """Spec §2's divergence from the four masses ``a1 = P(d,x,y)``, ``a0 = P(¬d,x,y)``,
    ``b1 = P(d,y,¬x)``, ``b0 = P(¬d,y,¬x)``: ``P(x,y)·KL(q ‖ q')`` with ``q = P(d|x,y)`` and
    ``q' = P(d|y,¬x) ± δ·P(y)/P(y,¬x)`` (the value of ``Q(d|x,y)`` that puts ``Δ`` at
    ``±δ``, the sign of Δ). This is the closed form ``a1·log(a1/(a1+r)) + a0·log(a0/(a0−r))``
    rewritten: ``a1 + r = P(x,y)·q'`` and ``a0 − r = P(x,y)·(1 − q')``.

    Zero where ``|Δ| ≤ δ``; ``+inf`` exactly where the fix must empty a block P fills:
    δ = 0 and ``P(d,y,¬x) = 0`` (Δ > 0, then ``q' = 0``) or ``P(¬d,y,¬x) = 0`` (Δ < 0,
    ``q' = 1``)."""
    a1, a0, b1, b0 = (float(v) for v in (a1, a0, b1, b0))
    p_xy = a1 + a0
    p_ynx = b1 + b0
    p_y = p_xy + p_ynx
    if p_xy <= 0:
        return 0.0
    score = (a1 * b0 - a0 * b1) / (p_xy * p_y)
    if abs(score) <= delta or p_ynx <= 0:
        return 0.0
    if score > 0:
        q1 = (b1 + delta * p_y) / p_ynx      # Q(d | x, y)
        q0 = (b0 - delta * p_y) / p_ynx      # Q(¬d | x, y)
    else:
        q1 = (b1 - delta * p_y) / p_ynx
        q0 = (b0 + delta * p_y) / p_ynx
    div = 0.0
    for a, q in ((a1, q1), (a0, q0)):
        if a > 0:
            if q <= 0:
                return math.inf
            div += a * math.log((a / p_xy) / q)
    return max(div, 0.0)


def exact_max_abs_delta(arrays: PatternArrays) -> Fraction:
    """The exact ``max |Δ|`` over defined patterns of an ``exact`` :class:`PatternArrays`."""
    vals = [abs(d) for d, ok in zip(arrays.delta, arrays.defined) if ok]
    return max(vals) if vals else Fraction(0)


def bands(arrays: PatternArrays, delta: float, margin: float = 1e-9):
    """``(clear, border)`` masks: ``clear`` = defined with ``|Δ| > δ + margin`` (every engine
    must report it), ``border`` = defined with ``| |Δ| − δ | ≤ margin`` (rounding decides)."""
    a = arrays.abs_delta
    clear = arrays.defined & (a > delta + margin)
    border = arrays.defined & (np.abs(a - delta) <= margin)
    return clear, border


def threshold_bands(arrays: PatternArrays, delta: float, below: float = 1e-13,
                    above: float = 1e-10):
    """``(clear, border)`` for engines whose rule is ``|Δ| > δ + atol`` with ``atol`` = 1e-12:
    ``clear`` = ``|Δ| > δ + above`` (must be reported), ``border`` = ``δ + below < |Δ| ≤ δ +
    above`` (rounding of the engine's Δ decides); every other defined pattern, including those
    with ``|Δ|`` mathematically equal to δ (e.g. Δ = 0 at δ = 0, computed as ±1e-17), must NOT
    be reported. Sound as long as the oracle's and the engine's Δ are within ``atol − below``
    (9e-13) of the true value, i.e. a few hundred ulps."""
    a = arrays.abs_delta
    clear = arrays.defined & (a > delta + above)
    border = arrays.defined & (a > delta + below) & ~clear
    return clear, border


def _extension_matrix(states_small: np.ndarray, states_big: np.ndarray) -> np.ndarray:
    """``E[i, j]``: pattern ``big[j]`` extends or equals ``small[i]`` (every feature of
    ``small[i]`` has the same state in ``big[j]``)."""
    return np.all((states_small[:, None, :] == 0) | (states_small[:, None, :] == states_big[None]),
                  axis=2)


def summary_masks(arrays: PatternArrays, member: np.ndarray, rtol: float = PARETO_RTOL,
                  chunk: int = 256) -> dict:
    """``maximal``, ``minimal``, ``pareto`` masks (spec §3) for the set Σ given as a boolean
    ``member`` mask over the defined patterns (so a caller can fix the membership of patterns
    at the threshold). Quantifiers range over defined patterns only, as in :func:`maximal`.
    Pareto uses the relative tie rule of :func:`pareto_relative`."""
    member = np.asarray(member, bool) & arrays.defined
    st = arrays.states
    defined = arrays.defined
    n = len(st)
    idx_m = np.flatnonzero(member)
    maximal_ = np.zeros(n, bool)
    up = np.zeros(n, bool)
    for lo in range(0, len(idx_m), chunk):
        rows = idx_m[lo:lo + chunk]
        E = _extension_matrix(st[rows], st)                 # [rows, all]
        E[np.arange(len(rows)), rows] = False               # strict extensions
        has_member_ext = (E & member[None]).any(axis=1)
        maximal_[rows] = ~has_member_ext & ~arrays.complete[rows]
        up[rows] = ~(E & defined[None] & ~member[None]).any(axis=1)
    minimal_ = np.zeros(n, bool)
    idx_up = np.flatnonzero(up)
    for lo in range(0, len(idx_up), chunk):
        rows = idx_up[lo:lo + chunk]
        C = _extension_matrix(st[idx_up], st[rows])          # C[c, r]: rows[r] ⊒ idx_up[c]
        C[np.searchsorted(idx_up, rows), np.arange(len(rows))] = False
        minimal_[rows] = ~C.any(axis=0)
    return {"patterns": member, "maximal": maximal_, "minimal": minimal_,
            "pareto": pareto_relative(arrays.abs_delta, arrays.p_xy.astype(np.float64), member,
                                      rtol)}


def pareto_relative(abs_delta: np.ndarray, prob: np.ndarray, member: np.ndarray,
                    rtol: float = PARETO_RTOL, score_slack: float = 0.0,
                    prob_slack: float = 0.0) -> np.ndarray:
    """The strict Pareto front (spec §3, Definition 5) with relative ties: two probabilities tie
    when ``|p − q| ≤ rtol·max(p, q)``, two scores likewise. ``i`` is on the front iff every
    other member ``j`` has a score smaller beyond the tie or a probability smaller beyond the tie.
    ``score_slack`` (absolute) and ``prob_slack`` (relative to max(p, q)) widen (> 0) or narrow
    (< 0) the ties, to see whether rounding could change the answer."""
    a = np.asarray(abs_delta, np.float64)
    p = np.asarray(prob, np.float64)
    idx = np.flatnonzero(member)
    out = np.zeros(len(a), bool)
    if len(idx) == 0:
        return out
    ai, pi = a[idx], p[idx]
    ma = np.maximum(ai[:, None], ai[None, :])
    mp = np.maximum(pi[:, None], pi[None, :])
    better_a = (ai[:, None] - ai[None, :]) > rtol * ma + score_slack
    better_p = (pi[:, None] - pi[None, :]) > (rtol + prob_slack) * mp
    ok = better_a | better_p
    np.fill_diagonal(ok, True)
    out[idx] = ok.all(axis=1)
    return out


def pareto_ambiguous(abs_delta: np.ndarray, prob: np.ndarray, member: np.ndarray,
                     rtol: float = PARETO_RTOL, score_err: float = 1e-13,
                     prob_rel_err: float = 1e-11) -> bool:
    """True when rounding could change the front: the fronts computed with every tie widened
    by the errors (scores: ``score_err`` absolute, probabilities: ``prob_rel_err`` relative)
    and with every tie narrowed by them differ from the plain one."""
    plain = pareto_relative(abs_delta, prob, member, rtol)
    for sign in (1.0, -1.0):
        other = pareto_relative(abs_delta, prob, member, rtol, sign * score_err,
                                sign * prob_rel_err)
        if not np.array_equal(plain, other):
            return True
    return False


# --------------------------------------------------------------------------------------------
# log space: probabilities far below the range of doubles


def log_joint(circuit) -> tuple[np.ndarray, np.ndarray]:
    """``(assignments, logp)``: the log-probability of every complete assignment, normalised
    by a log-sum-exp over the rows themselves (not by the circuit's ``log Z``), −inf exactly
    where the circuit gives 0."""
    cards = [int(k) for k in circuit.variables.cardinalities]
    assignments = all_assignments(cards)
    logf = np.asarray(circuit.log_marginal(assignments), dtype=np.float64)
    m = float(np.max(logf))
    if not np.isfinite(m):
        raise ValueError("the circuit has no mass, or its log-values are +inf")
    log_z = m + math.log(math.fsum(np.exp(logf - m).tolist()))
    return assignments, logf - log_z


def _masked_logsumexp(mask: np.ndarray, logp: np.ndarray) -> np.ndarray:
    """``log Σ_{r: mask[i, r]} exp(logp[r])`` for each row ``i`` of ``mask`` (−inf for none)."""
    vals = np.where(mask, logp[None, :], -np.inf)
    top = vals.max(axis=1)
    safe = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(divide="ignore"):
        return np.where(np.isfinite(top),
                        safe + np.log(np.exp(vals - safe[:, None]).sum(axis=1)), -np.inf)


@dataclass
class LogPatternArrays(PatternArrays):
    """:class:`PatternArrays` computed in log space (:func:`pattern_arrays_log`):
    ``log_a1, log_a0, log_b1, log_b0`` the logs of the four masses, ``log_p_xy`` of
    ``P(x, y)``. ``defined`` and ``delta`` come from the logs, so a pattern whose probability
    is below the double range is defined and scored exactly; the linear fields are the
    exponentials (0.0 where they underflow)."""

    log_a1: np.ndarray = None
    log_a0: np.ndarray = None
    log_b1: np.ndarray = None
    log_b0: np.ndarray = None
    log_p_xy: np.ndarray = None

    def divergence(self, delta: float) -> np.ndarray:
        """Spec §2 at ``delta`` (as :func:`divergence_masses`: ``P(x, y)·KL(q ‖ q')``) in
        decimal arithmetic of 40 digits and an exponent range far beyond doubles', from the
        logs of the masses: exact for patterns far below the double range (the result is
        rounded to a double at the end: 0.0 where ``P(x, y)·KL`` itself underflows)."""
        import decimal

        ctx = decimal.Context(prec=40, Emin=-10**8, Emax=10**8)

        def e(log_value: float):
            return ctx.exp(decimal.Decimal(log_value)) if log_value > -math.inf \
                else decimal.Decimal(0)

        out = np.zeros(len(self.keys))
        dl = decimal.Decimal(delta)
        for i in np.flatnonzero(self.defined):
            s = float(self.delta[i])
            a1, a0, b1, b0 = (e(float(v[i])) for v in (self.log_a1, self.log_a0,
                                                         self.log_b1, self.log_b0))
            p_xy, p_nx = a1 + a0, b1 + b0
            if abs(s) <= delta or p_nx == 0:
                continue
            shift = dl * (p_xy + p_nx) / p_nx  # δ·P(y) / P(y, ¬x)
            if s < 0:
                shift = -shift
            q1, q0 = b1 / p_nx + shift, b0 / p_nx - shift  # Q(d | x, y), Q(¬d | x, y)
            kl, infinite = decimal.Decimal(0), False
            for a, q in ((a1, q1), (a0, q0)):
                if a > 0:
                    if q <= 0:
                        infinite = True
                        break
                    kl += a / p_xy * ctx.ln(a / p_xy / q)
            out[i] = math.inf if infinite else float(max(p_xy * kl, decimal.Decimal(0)))
        return out


def _sigmoid_of_difference(l1: np.ndarray, l0: np.ndarray) -> np.ndarray:
    """``e^{l1} / (e^{l1} + e^{l0})`` from logs (NaN where both are −inf)."""
    with np.errstate(invalid="ignore", over="ignore"):
        t = l1 - l0  # +inf, −inf or NaN (both −inf)
        return np.where(t >= 0, 1.0 / (1.0 + np.exp(-np.abs(t))),
                        np.exp(-np.abs(t)) / (1.0 + np.exp(-np.abs(t))))


def pattern_arrays_log(model, cards, decision, sensitive, favorable=1,
                       chunk: int = 256) -> LogPatternArrays:
    """Every pattern of the circuit ``model`` scored by brute force in log space: the same
    patterns and fields as :func:`pattern_arrays`, but each mass a masked log-sum-exp of the
    rows' log-probabilities (:func:`log_joint`) and ``Δ = σ(l_dxy − l_¬dxy) − σ(l_dy −
    l_¬dy)``, so it agrees with :func:`pattern_arrays` where nothing underflows and stays exact
    where the linear oracle reads 0."""
    cards, sensitive = _check_problem(cards, decision, sensitive, favorable)
    A, logp = log_joint(model)
    lin = pattern_arrays((A, np.exp(logp)), cards, decision, sensitive, favorable)
    feats = lin.features
    is_d = A[:, decision] == favorable
    n = len(lin.keys)
    logs = np.empty((4, n))
    for lo in range(0, n, chunk):
        st = lin.states[lo:lo + chunk]
        m_xy, m_ynx = _row_masks(A, cards, feats, st)
        for r, (mask, side) in enumerate(((m_xy, is_d), (m_xy, ~is_d), (m_ynx, is_d),
                                          (m_ynx, ~is_d))):
            logs[r, lo:lo + len(st)] = _masked_logsumexp(mask & side[None, :], logp)
    la1, la0, lb1, lb0 = logs
    log_p_xy = np.logaddexp(la1, la0)
    defined = log_p_xy > -np.inf
    delta = _sigmoid_of_difference(la1, la0) - _sigmoid_of_difference(
        np.logaddexp(la1, lb1), np.logaddexp(la0, lb0))
    delta = np.where(defined, delta, np.nan)
    a1, a0, b1, b0 = np.exp(logs)
    return LogPatternArrays(cards, decision, sensitive, feats, lin.states, lin.keys, a1, a0,
                            b1, b0, a1 + a0, a1 + a0 + b1 + b0, delta, defined, lin.complete,
                            la1, la0, lb1, lb0, log_p_xy)
