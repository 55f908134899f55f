"""Tests of the brute-force discrimination-pattern oracle (tests/_pattern_oracle.py)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction as F

import numpy as np
import pytest
from _pattern_oracle import (
    all_assignments,
    all_pattern_assignments,
    count_patterns,
    discrimination_patterns,
    divergence,
    dominates,
    enumerate_patterns,
    is_extension,
    joint_table,
    maximal,
    minimal,
    pareto,
    score_pattern,
    top_k,
    well_separated,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from pcfair.circuit import CircuitBuilder, Vtree

# ---------------------------------------------------------------------------- model helpers


def nb_table(rng, cards, decision, zeros=False, alpha=0.7):
    """A naive-Bayes joint P(D) Π P(Z_i | D) as an array of shape ``cards``.

    With ``zeros`` some conditional entries are set to 0, so some patterns have P(x, y) = 0."""
    prior = rng.dirichlet([2.0, 2.0])
    cpts = {}
    for v, k in enumerate(cards):
        if v == decision:
            continue
        cpt = rng.dirichlet(np.full(k, alpha), size=2)
        if zeros:
            for d in range(2):
                if k > 1 and rng.random() < 0.5:
                    cpt[d, rng.integers(k)] = 0.0
                    cpt[d] /= cpt[d].sum()
        cpts[v] = cpt
    table = np.zeros(cards)
    for a in itertools.product(*[range(k) for k in cards]):
        d = a[decision]
        p = prior[d]
        for v, cpt in cpts.items():
            p *= cpt[d, a[v]]
        table[a] = p
    return table


def dense_table(rng, cards, alpha=0.5):
    """An arbitrary strictly positive joint (no independences)."""
    return rng.dirichlet(np.full(int(np.prod(cards)), alpha)).reshape(cards)


def random_problem(rng, n_features, max_card=3):
    """(cards, decision, sensitive): n_features categorical features, one of them 3-valued
    when max_card >= 3, and a binary decision at a random position."""
    feats = [int(rng.integers(2, max_card + 1)) for _ in range(n_features)]
    if max_card >= 3:
        feats[int(rng.integers(n_features))] = 3
    decision = int(rng.integers(n_features + 1))
    cards = feats[:decision] + [2] + feats[decision:]
    z = [v for v in range(len(cards)) if v != decision]
    k = int(rng.integers(1, len(z) + 1))
    sensitive = sorted(int(s) for s in rng.choice(z, size=k, replace=False))
    return cards, decision, sensitive


def state_extensions(p, cards, decision, sensitive):
    """Every extension of ``p``, generated directly (independently of ``is_extension``): keep
    p's assignments, give each other variable of Z a state (absent, in y, or in x if
    sensitive), and drop p itself."""
    free = [v for v in range(len(cards)) if v != decision and v not in p.x and v not in p.y]
    options = []
    for v in free:
        opts = [None] + [("y", a) for a in range(cards[v])]
        if v in sensitive:
            opts += [("x", a) for a in range(cards[v])]
        options.append(opts)
    for combo in itertools.product(*options):
        if all(c is None for c in combo):
            continue
        x, y = dict(p.x), dict(p.y)
        for v, c in zip(free, combo):
            if c is not None:
                (x if c[0] == "x" else y)[v] = c[1]
        yield x, y


def state_contractions(p):
    """Every valid contraction of ``p`` (x stays non-empty), generated directly: keep a subset
    of p's assignments, dropping at least one."""
    items = [("x", v, a) for v, a in p.x.items()] + [("y", v, a) for v, a in p.y.items()]
    for n in range(len(items)):
        for kept in itertools.combinations(items, n):
            x = {v: a for side, v, a in kept if side == "x"}
            y = {v: a for side, v, a in kept if side == "y"}
            if x:
                yield x, y


def key_of(x, y):
    return (tuple(sorted(x.items())), tuple(sorted(y.items())))


def keys(records):
    return {r.key for r in records}


# ---------------------------------------------------------------------------- counting


def test_count_compas_figure():
    # spec §1: 7 binary features, 4 sensitive, D last: 5^4 · 3^3 − 3^7
    assert count_patterns([2] * 8, 7, [0, 1, 2, 3]) == 5**4 * 3**3 - 3**7 == 14_688


def test_count_kary_by_hand():
    # sex (3 values, sensitive), age (2 values), D: (2·3+1)(2+1) − (3+1)(2+1) = 21 − 12 = 9
    assert count_patterns([3, 2, 2], 2, [0]) == 9
    # no sensitive variable: no pattern
    assert count_patterns([3, 2, 2], 2, []) == 0


@settings(max_examples=60, deadline=None)
@given(
    feats=st.lists(st.integers(1, 4), min_size=1, max_size=4),
    data=st.data(),
)
def test_count_formula_against_subset_sum(feats, data):
    """The closed form equals Σ over non-empty X ⊆ S and Y ⊆ Z \\ X of Π card."""
    decision = data.draw(st.integers(0, len(feats)))
    cards = feats[:decision] + [2] + feats[decision:]
    z = [v for v in range(len(cards)) if v != decision]
    sensitive = data.draw(st.lists(st.sampled_from(z), unique=True))
    total = 0
    for nx in range(1, len(sensitive) + 1):
        for xs in itertools.combinations(sensitive, nx):
            rest = [v for v in z if v not in xs]
            for ny in range(len(rest) + 1):
                for ys in itertools.combinations(rest, ny):
                    total += math.prod(cards[v] for v in xs + ys)
    assert count_patterns(cards, decision, sensitive) == total
    assert sum(1 for _ in all_pattern_assignments(cards, decision, sensitive)) == total


@pytest.mark.parametrize("seed", range(8))
def test_count_formula_against_enumeration(seed):
    rng = np.random.default_rng(seed)
    cards, decision, sensitive = random_problem(rng, n_features=int(rng.integers(2, 5)))
    zeros = seed % 2 == 1
    table = nb_table(rng, cards, decision, zeros=zeros)
    recs = enumerate_patterns(table, cards, decision, sensitive)
    assert len(recs) + recs.n_undefined == count_patterns(cards, decision, sensitive)
    if not zeros:
        assert recs.n_undefined == 0
    assert len(keys(recs)) == len(recs)  # each pattern once
    z = set(range(len(cards))) - {decision}
    for r in recs:
        assert r.x and set(r.x) <= set(sensitive)
        assert not set(r.x) & set(r.y) and set(r.y) <= z
        assert all(0 <= val < cards[v] for v, val in {**r.x, **r.y}.items())
        assert r.probability > 0


def test_undefined_patterns_are_counted_not_returned():
    # S (sensitive) and Y with P(S=1, Y=1) = 0: the patterns (S=1, Y=1) are undefined
    table = np.array([[[0.1, 0.2], [0.15, 0.15]], [[0.25, 0.15], [0.0, 0.0]]])  # [s, y, d]
    recs = enumerate_patterns(table, [2, 2, 2], 2, [0])
    assert recs.n_undefined == 1
    assert key_of({0: 1}, {1: 1}) not in keys(recs)
    assert len(recs) == count_patterns([2, 2, 2], 2, [0]) - 1


# ---------------------------------------------------------------------------- hand examples

# Variables: 0 = S (sensitive), 1 = Y, 2 = D (favourable d = 1). Weights out of 64 (so every
# probability below is exact in binary floating point and the exact ties stay exact), [s, y, d].
HAND = {
    (0, 0, 1): 2, (0, 0, 0): 6,    # S=0, Y=0:  8 rows, P(d | S=0, Y=0) = 2/8
    (0, 1, 1): 3, (0, 1, 0): 3,    # S=0, Y=1:  6 rows, P(d | S=0, Y=1) = 3/6
    (1, 0, 1): 6, (1, 0, 0): 2,    # S=1, Y=0:  8 rows, P(d | S=1, Y=0) = 6/8
    (1, 1, 1): 24, (1, 1, 0): 18,  # S=1, Y=1: 42 rows, P(d | S=1, Y=1) = 24/42
}


def hand_table(weights, total):
    t = np.zeros((2, 2, 2))
    for idx, w in weights.items():
        t[idx] = float(F(w, total))
    return t


def test_hand_example_scores():
    # P(d) = (2+3+6+24)/64 = 35/64;  P(d|S=0) = (2+3)/14 = 5/14;  P(d|S=1) = (6+24)/50 = 3/5;
    # P(d|Y=0) = (2+6)/16 = 1/2;  P(d|Y=1) = (3+24)/48 = 9/16.
    expected = {
        key_of({0: 0}, {}): (F(5, 14) - F(35, 64), F(14, 64)),
        key_of({0: 1}, {}): (F(3, 5) - F(35, 64), F(50, 64)),
        key_of({0: 0}, {1: 0}): (F(2, 8) - F(1, 2), F(8, 64)),
        key_of({0: 1}, {1: 0}): (F(6, 8) - F(1, 2), F(8, 64)),
        key_of({0: 0}, {1: 1}): (F(3, 6) - F(9, 16), F(6, 64)),
        key_of({0: 1}, {1: 1}): (F(24, 42) - F(9, 16), F(42, 64)),
    }
    # the same, simplified by hand
    assert [e[0] for e in expected.values()] == [
        F(-85, 448), F(17, 320), F(-1, 4), F(1, 4), F(-1, 16), F(1, 112)]
    recs = enumerate_patterns(hand_table(HAND, 64), [2, 2, 2], decision=2, sensitive=[0])
    assert recs.n_undefined == 0
    got = {r.key: r for r in recs}
    assert set(got) == set(expected)  # 5·3 − 3·3 = 6 patterns
    for k, (delta, prob) in expected.items():
        assert got[k].delta == pytest.approx(float(delta), abs=1e-15)
        assert got[k].probability == float(prob)


def test_hand_example_favorable_zero_flips_sign():
    table = hand_table(HAND, 64)
    pos = {r.key: r for r in enumerate_patterns(table, [2, 2, 2], 2, [0], 1, 0.1)}
    neg = {r.key: r for r in enumerate_patterns(table, [2, 2, 2], 2, [0], 0, 0.1)}
    assert pos.keys() == neg.keys()
    for k in pos:
        assert neg[k].delta == pytest.approx(-pos[k].delta, abs=1e-15)
        assert neg[k].divergence == pytest.approx(pos[k].divergence, rel=1e-12, abs=1e-15)


def test_hand_example_summaries():
    recs = enumerate_patterns(hand_table(HAND, 64), [2, 2, 2], 2, [0])
    # (|Δ|, P): S0 (.190, .219), S1 (.053, .781), S0Y0 (.25, .125), S1Y0 (.25, .125),
    #           S0Y1 (.0625, .094), S1Y1 (.009, .656)
    s0, s1 = key_of({0: 0}, {}), key_of({0: 1}, {})
    s0y0, s1y0, s0y1 = key_of({0: 0}, {1: 0}), key_of({0: 1}, {1: 0}), key_of({0: 0}, {1: 1})
    assert keys(discrimination_patterns(recs, 0.1)) == {s0, s0y0, s1y0}
    assert keys(discrimination_patterns(recs, 0.05)) == {s0, s1, s0y0, s1y0, s0y1}
    # S0 and S1 each have an extension in Σ; the others are complete assignments of Z = {S, Y}
    assert maximal(recs, 0.1) == [] and maximal(recs, 0.05) == []
    # δ = .1: S0 has an extension (S0Y1) outside Σ, so S0Y0 is minimal; S1Y0's only valid
    # contraction S1 is not in Σ.
    assert keys(minimal(recs, 0.1)) == {s0y0, s1y0}
    # δ = .05: both extensions of S0 are in Σ, so S0 is minimal and S0Y0, S0Y1 are not;
    # S1 has S1Y1 outside Σ, so S1Y0 stays minimal.
    assert keys(minimal(recs, 0.05)) == {s0, s1y0}
    # S0Y0 and S1Y0 tie exactly on |Δ| = 1/4 and P = 1/8: the strict Definition 5 drops both
    # (the authors' code would keep them).
    assert keys(pareto(recs, 0.1)) == {s0}
    # Δ strictly above δ: at δ = 1/4 exactly, S0Y0 and S1Y0 are not patterns
    assert keys(discrimination_patterns(recs, 0.25)) == set()
    assert [r.key for r in top_k(recs, 0.1, 2)] == sorted([s0y0, s1y0])
    assert [r.key for r in top_k(recs, 0.1, 10)][2:] == [s0]
    assert [r.key for r in top_k(recs, 0.05, 10)][3:] == [s0y1, s1]


def test_hand_example_divergence():
    table = hand_table(HAND, 64)
    recs = {r.key: r for r in enumerate_patterns(table, [2, 2, 2], 2, [0], delta=0.1)}
    # S0Y0: Δ = −1/4 < −δ, p_xy = 1/8, p_y = 1/4, a1 = 2/64, a0 = 6/64
    r = (F(-1, 10) - F(-1, 4)) / (1 / F(1, 8) - 1 / F(1, 4))
    assert r == F(3, 80)
    # after the move: P_Q(d | x, y) = (2/64 + r) / (1/8) = 11/20, P_Q(d | y) = (1/8 + r) / (1/4)
    # = 13/20, so Δ_Q = −1/10 = −δ
    assert (F(2, 64) + r) / F(1, 8) - (F(1, 8) + r) / F(1, 4) == F(-1, 10)
    a1, a0 = F(2, 64), F(6, 64)
    expected = float(a1) * math.log(a1 / (a1 + r)) + float(a0) * math.log(a0 / (a0 - r))
    assert recs[key_of({0: 0}, {1: 0})].divergence == pytest.approx(expected, rel=1e-12)
    assert recs[key_of({0: 1}, {1: 1})].divergence == 0.0  # |Δ| = 1/112 ≤ δ


# D ⟂ S | Y, with S and Y dependent: the single-attribute patterns discriminate, the complete
# ones do not (Δ = 0). Weights out of 40, [s, y, d].
SIMPSON = {
    (0, 0, 1): 2, (0, 0, 0): 6,    # P(d | S=0, Y=0) = 1/4 = P(d | Y=0) = 3/12
    (0, 1, 1): 3, (0, 1, 0): 1,    # P(d | S=0, Y=1) = 3/4 = P(d | Y=1) = 21/28
    (1, 0, 1): 1, (1, 0, 0): 3,
    (1, 1, 1): 18, (1, 1, 0): 6,
}


def test_hand_example_maximal():
    recs = {r.key: r for r in enumerate_patterns(hand_table(SIMPSON, 40), [2, 2, 2], 2, [0])}
    # P(d) = 24/40 = 3/5;  P(d|S=0) = 5/12;  P(d|S=1) = 19/28
    s0, s1 = key_of({0: 0}, {}), key_of({0: 1}, {})
    assert recs[s0].delta == pytest.approx(float(F(5, 12) - F(3, 5)), abs=1e-15)  # −11/60
    assert recs[s1].delta == pytest.approx(float(F(19, 28) - F(3, 5)), abs=1e-15)  # 11/140
    for k, rec in recs.items():
        if rec.y:
            assert rec.delta == pytest.approx(0.0, abs=1e-12)
    lst = list(recs.values())
    assert keys(maximal(lst, 0.05, cards=[2, 2, 2])) == {s0, s1}
    assert keys(maximal(lst, 0.1, cards=[2, 2, 2])) == {s0}
    assert minimal(lst, 0.05) == []
    assert keys(pareto(lst, 0.05)) == {s0, s1}  # (.183, .3) and (.079, .7)


# ---------------------------------------------------------------------------- divergence


@pytest.mark.parametrize("seed", range(4))
def test_divergence_closed_form_removes_the_pattern(seed):
    rng = np.random.default_rng(100 + seed)
    cards, decision, sensitive = random_problem(rng, n_features=3)
    table = dense_table(rng, cards)
    A, P = all_assignments(cards), table.reshape(-1)
    fav = int(seed % 2)
    for delta in (0.0, 0.02, 0.08):
        recs = enumerate_patterns(table, cards, decision, sensitive, favorable=fav, delta=delta)
        n_checked = 0
        for rec in recs:
            if abs(rec.delta) <= delta:
                assert rec.divergence == 0.0
                continue
            assert rec.divergence > 0
            # spec §2 / Choi et al.: move mass r from ¬d x y to d x y, proportionally
            p_xy, p_y = rec.probability, rec.p_y
            a1, a0 = rec.p_dxy, p_xy - rec.p_dxy
            c = 1 / p_xy - 1 / p_y
            r = ((delta if rec.delta > 0 else -delta) - rec.delta) / c
            in_xy = np.all([A[:, v] == val for v, val in {**rec.x, **rec.y}.items()], axis=0)
            is_d = A[:, decision] == fav
            Q = P.copy()
            Q[in_xy & is_d] *= (a1 + r) / a1
            Q[in_xy & ~is_d] *= (a0 - r) / a0
            assert np.all(Q >= 0) and math.isclose(Q.sum(), 1.0, rel_tol=1e-12)
            assert np.array_equal(Q[~in_xy], P[~in_xy])  # Q agrees with P outside x y
            delta_q = score_pattern(A, Q, decision, fav, rec.x, rec.y)[0]
            assert abs(delta_q) == pytest.approx(delta, abs=1e-9)
            kl = float(np.sum(P * np.log(P / Q)))
            assert kl == pytest.approx(rec.divergence, rel=1e-7, abs=1e-13)
            # any other feasible mass shift r' (|Δ_Q| ≤ δ) costs at least as much
            lo, hi = (-delta - rec.delta) / c, (delta - rec.delta) / c
            for r2 in np.linspace(max(lo, -a1), min(hi, a0), 7)[1:-1]:
                kl2 = a1 * math.log(a1 / (a1 + r2)) + a0 * math.log(a0 / (a0 - r2))
                assert kl2 >= rec.divergence - 1e-15
            n_checked += 1
        if delta == 0.0:
            assert n_checked > 0


def test_divergence_function_edge_cases():
    # |Δ| ≤ δ: zero, including at equality
    assert divergence(0.1, 0.2, 0.3, 0.6, 0.0) == 0.0  # Δ = 0.5 − 0.5
    assert divergence(0.15, 0.2, 0.3, 0.6, 0.25) == 0.0  # Δ = 0.75 − 0.5 = δ
    # a pattern with P(d, x, y) = P(x, y) (a0 = 0): the a0 term is 0·log(0/…) = 0
    div = divergence(0.2, 0.2, 0.3, 0.6, 0.1)
    r = (0.1 - 0.5) / (1 / 0.2 - 1 / 0.6)
    assert div == pytest.approx(0.2 * math.log(0.2 / (0.2 + r)))
    with pytest.raises(ValueError):
        divergence(0.1, 0.2, 0.3, 0.6, -0.1)
    # δ = 0 and all of y's d-mass inside x y: Q must empty the block d x y, KL(P‖Q) = ∞
    assert divergence(0.2, 0.3, 0.2, 0.6, 0.0) == math.inf
    # never negative, even where |Δ| exceeds δ only by rounding
    # (these sums, from a circuit with D ⟂ S, give Δ = −1.4e-17 and a raw closed form of −4e-17)
    sums = (0.08093160821830821, 0.7645927985372971, 0.10584929438667783, 1.0)
    assert sums[0] / sums[1] - sums[2] / sums[3] < 0
    assert divergence(*sums, 0.0) == 0.0


def test_well_separated():
    recs = enumerate_patterns(hand_table(HAND, 64), [2, 2, 2], 2, [0])
    assert well_separated(recs, 0.1)
    assert not well_separated(recs, 0.25)  # S0Y0 and S1Y0 have |Δ| = 1/4 exactly
    assert not well_separated(recs, 0.25 + 1e-12)


# ---------------------------------------------------------------------------- summaries


def chain_table(rng, cards, decision, sensitive):
    """S → M → D and the other features depending on D only, so D ⟂ S | M: patterns that fix
    M stop discriminating, which gives maximal patterns. ``sensitive[0]`` is S; M is the first
    other feature."""
    z = [v for v in range(len(cards)) if v != decision]
    s = sensitive[0]
    m = next(v for v in z if v != s)
    p_s = rng.dirichlet(np.ones(cards[s]))
    p_m = rng.dirichlet(np.full(cards[m], 0.5), size=cards[s])
    p_d = rng.dirichlet([1.0, 1.0], size=cards[m])
    rest = {v: rng.dirichlet(np.ones(cards[v]), size=2) for v in z if v not in (s, m)}
    table = np.zeros(cards)
    for a in itertools.product(*[range(k) for k in cards]):
        p = p_s[a[s]] * p_m[a[s], a[m]] * p_d[a[m], a[decision]]
        for v, cpt in rest.items():
            p *= cpt[a[decision], a[v]]
        table[a] = p
    return table


@pytest.mark.parametrize("seed", range(12))
def test_summary_properties(seed):
    rng = np.random.default_rng(200 + seed)
    cards, decision, sensitive = random_problem(rng, n_features=int(rng.integers(2, 4)))
    kind = ("nb-zeros", "nb", "lattice", "chain")[seed % 4]
    if kind == "nb-zeros":
        table = nb_table(rng, cards, decision, zeros=True)
    elif kind == "nb":
        table = nb_table(rng, cards, decision)
    elif kind == "lattice":
        table = dense_table(rng, cards)
    else:
        if len(sensitive) == len(cards) - 1:
            sensitive = sensitive[:-1] or sensitive
        table = chain_table(rng, cards, decision, sensitive)
    recs = enumerate_patterns(table, cards, decision, sensitive)
    by_key = {r.key: r for r in recs}
    n_z = len(cards) - 1
    # thresholds halfway between distinct |Δ| values (clear of rounding noise and of ties at δ),
    # so Σ ranges from almost everything to a few patterns; and δ = 0
    levels = sorted({round(abs(r.delta), 9) for r in recs if abs(r.delta) > 1e-9})
    mids = [(a + b) / 2 for a, b in zip(levels, levels[1:])]
    deltas = {0.0} | {mids[int(q * (len(mids) - 1))] for q in (0.1, 0.4, 0.7, 0.9)}
    n_max = n_min = 0
    for delta in sorted(deltas):
        sigma = discrimination_patterns(recs, delta)
        in_sigma = {r.key for r in sigma}
        assert in_sigma == {r.key for r in recs if abs(r.delta) > delta}

        def ext_keys(p):
            """Defined extensions of p, generated from the variables' states."""
            out = [key_of(x, y) for x, y in state_extensions(p, cards, decision, sensitive)]
            return [k for k in out if k in by_key]

        # is_extension agrees with the generated extensions
        for p in recs[:40]:
            assert {q.key for q in recs if is_extension(q, p)} == set(ext_keys(p))

        mx = keys(maximal(recs, delta))
        for p in sigma:
            has_disc_ext = any(k in in_sigma for k in ext_keys(p))
            assert (p.key in mx) == (p.size() < n_z and not has_disc_ext)

        up = {p.key for p in sigma if all(k in in_sigma for k in ext_keys(p))}
        mn = keys(minimal(recs, delta))
        for p in sigma:  # minimal = up-closed with no up-closed valid contraction
            has_up_contraction = any(key_of(x, y) in up for x, y in state_contractions(p))
            assert (p.key in mn) == (p.key in up and not has_up_contraction)
        for k in mn:  # so every extension of a minimal pattern discriminates
            assert all(e in in_sigma for e in ext_keys(by_key[k]))
        for k in up:  # every up-closed pattern lies above some minimal one (or is one)
            assert k in mn or any(is_extension(by_key[k], by_key[m]) for m in mn)
        assert not mx & mn  # a minimal pattern is never maximal

        po = pareto(recs, delta)
        po_keys = keys(po)
        for p in po:
            for q in po:
                if q is not p:
                    assert not dominates(q, p)
        ties = len({(abs(r.delta), r.probability) for r in sigma}) < len(sigma)
        for p in sigma:
            if p.key in po_keys:
                continue
            assert any(dominates(q, p) for q in sigma if q is not p)
            if not ties:  # then domination is a strict order and a front member dominates p
                assert any(dominates(q, p) for q in po)
        if sigma and not ties:  # the top score is on the front
            best = max(sigma, key=lambda r: abs(r.delta))
            assert abs(best.delta) == max(abs(q.delta) for q in po)
        n_max += len(mx)
        n_min += len(mn)
    if kind == "chain":
        assert n_max > 0  # the chain models exercise the maximal patterns
    assert n_min > 0


@pytest.mark.parametrize("rank_by", ["discrimination", "divergence"])
def test_top_k(rank_by):
    rng = np.random.default_rng(7)
    cards, decision, sensitive = [2, 3, 2, 2], 2, [0, 1]
    table = dense_table(rng, cards)
    delta = 0.03
    recs = enumerate_patterns(table, cards, decision, sensitive, delta=delta)
    sigma = discrimination_patterns(recs, delta)
    score = (lambda r: abs(r.delta)) if rank_by == "discrimination" else (lambda r: r.divergence)
    want = sorted((score(r) for r in sigma), reverse=True)
    for k in (1, 5, len(sigma), len(sigma) + 3):
        got = top_k(recs, delta, k, rank_by=rank_by)
        assert [score(r) for r in got] == want[:k]
    # divergence is recomputed at the δ asked for, whatever δ the records were made with
    other = enumerate_patterns(table, cards, decision, sensitive, delta=0.0)
    assert [r.key for r in top_k(other, delta, 5, "divergence")] == \
        [r.key for r in top_k(recs, delta, 5, "divergence")]
    with pytest.raises(ValueError):
        top_k(recs, delta, 3, rank_by="probability")


# ---------------------------------------------------------------------------- circuits


def tiny_circuit():
    """D at the root; sex and a 3-valued age independent given D."""
    b = CircuitBuilder({"sex": ["F", "M"], "age": ["<25", "25-45", ">45"], "d": [0, 1]})
    root = b.decision([
        (b.indicator("d", 1), b.product(b.categorical("sex", [0.4, 0.6]),
                                        b.categorical("age", [0.3, 0.5, 0.2])), 0.45),
        (b.indicator("d", 0), b.product(b.categorical("sex", [0.55, 0.45]),
                                        b.categorical("age", [0.5, 0.2, 0.3])), 0.55),
    ])
    return b.build(root, vtree=Vtree.from_nested((2, (0, 1))))


def test_joint_table_of_a_tiny_circuit():
    pc = tiny_circuit()
    A, P = joint_table(pc)
    # the same model by hand, in the order (sex, age, d), last variable fastest
    p_d = [0.55, 0.45]
    p_sex = [[0.55, 0.45], [0.4, 0.6]]          # [d][sex]
    p_age = [[0.5, 0.2, 0.3], [0.3, 0.5, 0.2]]  # [d][age]
    rows, probs = [], []
    for sex in range(2):
        for age in range(3):
            for d in range(2):
                rows.append((sex, age, d))
                probs.append(p_d[d] * p_sex[d][sex] * p_age[d][age])
    assert A.tolist() == [list(r) for r in rows]
    np.testing.assert_allclose(P, probs, rtol=1e-12)
    assert math.isclose(P.sum(), 1.0, rel_tol=1e-12)

    cards, decision, sensitive = [2, 3, 2], 2, [0]
    from_pc = enumerate_patterns(pc, cards, decision, sensitive, delta=0.01)
    from_table = enumerate_patterns(np.array(probs).reshape(cards), cards, decision, sensitive,
                                    delta=0.01)
    from_pair = enumerate_patterns((A, P), cards, decision, sensitive, delta=0.01)
    assert len(from_pc) == count_patterns(cards, decision, sensitive) == 5 * 4 - 3 * 4
    for a, b, c in zip(from_pc, from_table, from_pair):
        assert a.key == b.key == c.key
        assert a.delta == pytest.approx(b.delta, abs=1e-12) == c.delta
        assert a.probability == pytest.approx(b.probability, rel=1e-12)
        assert a.divergence == pytest.approx(b.divergence, rel=1e-9, abs=1e-15)
    # and against the circuit's own conditionals
    rec = {r.key: r for r in from_pc}[key_of({0: 1}, {1: 0})]
    want = pc.conditional({"d": 1}, {"sex": "M", "age": "<25"}) - \
        pc.conditional({"d": 1}, {"age": "<25"})
    assert rec.delta == pytest.approx(want, abs=1e-12)


def test_input_validation():
    table = np.full((2, 2, 2), 1 / 8)
    with pytest.raises(ValueError):
        enumerate_patterns(table, [2, 2, 2], 2, [2])     # D cannot be sensitive
    with pytest.raises(ValueError):
        enumerate_patterns(table, [2, 2, 2], 2, [0], favorable=2)
    with pytest.raises(ValueError):
        enumerate_patterns(table, [2, 3, 2], 2, [0])     # shape mismatch
    with pytest.raises(ValueError):
        count_patterns([2, 3], 1, [0])                   # D must be binary
    with pytest.raises(ValueError):
        enumerate_patterns(tiny_circuit(), [2, 2, 2], 2, [0])
