"""The search's pruning bounds (pcfair.patterns.bounds) against brute force.

Random decision-rooted tree-augmented models (Chow-Liu-shaped circuits with random tables, and
tree Bayesian networks with the decision at the root or deep inside, re-rooted at the decision),
with zero, 1e-12 and tied parameters: the tree bound of random search nodes must cover every
extension's |Δ|, P(d | x', y') and P(d | y', ¬x'), computed from the circuit's joint table;
circuits that are not such models must be refused; and the search with the tree bound must agree
with the dense engine.
"""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from _pcgen import random_psdd
from pcfair.circuit import CircuitBuilder
from pcfair.circuit.variables import Variables
from pcfair.errors import OptionError
from pcfair.learn.clt import TreeStructure, compile_tree
from pcfair.patterns import certify, find_patterns
from pcfair.patterns.bounds import (NaiveBayesBound, QuotientBound, TreeBound,
                                    _contraction_coefficient, _observed_spread, coupled_bound,
                                    select_bound)
from pcfair.patterns._arguments import Problem
from pcfair.patterns.search import search
from pcfair.patterns.search_types import SearchOptions, SearchQuery

TOL = 1e-9


# ------------------------------------------------------------------------------ the models
def _rows(rng, shape, zeros: bool, tiny: bool) -> np.ndarray:
    """Random conditional tables along the last axis, with zeros / 1e-12 entries on demand."""
    t = rng.dirichlet(np.ones(shape[-1]), size=shape[:-1])
    if zeros:
        t = np.where(rng.random(t.shape) < 0.25, 0.0, t)
    if tiny:
        t = np.where(rng.random(t.shape) < 0.25, 1e-12, t)
    t[t.sum(axis=-1) == 0] = 1.0
    return t / t.sum(axis=-1, keepdims=True)


def _variables(cards) -> Variables:
    return Variables([f"x{i}" for i in range(len(cards))], [tuple(range(c)) for c in cards])


def random_tan(rng, cards, zeros=False, tiny=False, ties=False):
    """A Chow-Liu-shaped circuit (decision x0): a random feature tree, tables that depend on
    the decision everywhere (``ties``: some variables with equal tables under both values)."""
    n = len(cards)
    feats = list(rng.permutation(np.arange(1, n)))
    parent = np.full(n, -1, np.int64)
    parent[feats[0]] = 0
    for i, v in enumerate(feats[1:], 1):
        parent[v] = feats[rng.integers(0, i)]
    tables = {}
    for v in feats:
        kp = cards[parent[v]]
        t = _rows(rng, (2, kp, cards[v]), zeros, tiny)
        if ties and rng.random() < 0.5:
            t[1] = t[0]
        tables[int(v)] = t
    prior = _rows(rng, (2,), zeros and rng.random() < 0.2, False)
    tree = TreeStructure(0, tuple(range(1, n)), parent, np.zeros((n - 1, n - 1)))
    return compile_tree(_variables(cards), tree, prior, tables)


def tree_bn(rng, cards, depth_of_decision: str, zeros=False, tiny=False):
    """A tree Bayesian network over every variable, rooted elsewhere when
    ``depth_of_decision == "deep"`` (the decision x0 an inner node), compiled after re-rooting
    it at x0 (the decision's neighbours hang below the first one with tables that ignore it).
    Returns the circuit and the network's joint table (to check the compilation)."""
    n = len(cards)
    nodes = list(rng.permutation(n))
    if depth_of_decision == "root":
        nodes.remove(0)
        nodes = [0] + nodes
    else:  # x0 somewhere inside, with a parent and (when possible) a child
        nodes.remove(0)
        nodes.insert(1 + int(rng.integers(0, max(1, n - 2))), 0)
    par = {nodes[0]: -1}
    for i, v in enumerate(nodes[1:], 1):
        par[v] = nodes[int(rng.integers(0, i))]
    joint = np.ones(cards)
    for v in nodes:
        if par[v] < 0:
            t = _rows(rng, (cards[v],), zeros, tiny)
            shape = [1] * n
            shape[v] = cards[v]
            joint = joint * t.reshape(shape)
        else:
            u = par[v]
            t = _rows(rng, (cards[u], cards[v]), zeros, tiny)
            shape = [1] * n
            shape[u], shape[v] = cards[u], cards[v]
            joint = joint * (t if u < v else t.T).reshape(shape)
    # re-root at x0: undirected edges, parents towards x0
    adj = {v: set() for v in range(n)}
    for v, u in par.items():
        if u >= 0:
            adj[u].add(v)
            adj[v].add(u)
    towards = {0: -1}
    stack = [0]
    while stack:
        u = stack.pop()
        for w in adj[u]:
            if w not in towards:
                towards[w] = u
                stack.append(w)
    hubs = sorted(adj[0])
    parent = np.full(n, -1, np.int64)
    for v in range(1, n):
        parent[v] = towards[v] if towards[v] != 0 else hubs[0]
    parent[hubs[0]] = 0
    tables = {}
    for v in range(1, n):
        u = int(parent[v])
        if u == 0 or v in hubs:  # a neighbour of x0: P(v | x0), whatever its parent's value
            m = _marginal(joint, [0, v])[:, None, :].repeat(cards[u], axis=1)
        else:
            m = _marginal(joint, [0, u, v])
        tot = m.sum(axis=2, keepdims=True)
        with np.errstate(invalid="ignore", divide="ignore"):
            tables[v] = np.where(tot > 0, m / tot, 1.0 / cards[v])
    prior = joint.sum(axis=tuple(range(1, n)))
    tree = TreeStructure(0, tuple(range(1, n)), parent, np.zeros((n - 1, n - 1)))
    return compile_tree(_variables(cards), tree, prior, tables), joint


def _marginal(joint, keep: list[int]) -> np.ndarray:
    """The marginal table of ``keep``'s variables, axes in ``keep``'s order."""
    m = joint.sum(axis=tuple(a for a in range(joint.ndim) if a not in keep))
    order = sorted(keep)
    return np.transpose(m, [order.index(a) for a in keep])


def joint_table(pc) -> np.ndarray:
    cards = [int(c) for c in pc.variables.cardinalities]
    rows = np.array(list(itertools.product(*[range(c) for c in cards])), np.int32)
    p = np.exp(pc.log_marginal(rows))
    return (p / p.sum()).reshape(cards)


# --------------------------------------------------------------------- brute-force checker
def _mass(joint, ev: dict) -> float:
    idx = tuple(ev.get(v, slice(None)) for v in range(joint.ndim))
    return float(joint[idx].sum())


def _mass_not(joint, ev: dict, x: dict) -> float:
    """P(ev, ¬x): summed over the cells where some variable of x takes another value (no
    difference of masses, so tiny probabilities keep their precision)."""
    keep = np.ones(joint.shape, bool)
    for v, k in ev.items():
        keep &= (np.arange(joint.shape[v]) == k).reshape([-1 if a == v else 1
                                                          for a in range(joint.ndim)])
    match = np.ones(joint.shape, bool)
    for v, k in x.items():
        match &= (np.arange(joint.shape[v]) == k).reshape([-1 if a == v else 1
                                                           for a in range(joint.ndim)])
    return float(joint[keep & ~match].sum())


def check_node(pc, joint, d, fav, sens, x, y, free):
    """Every extension of the node against the tree bound's answer; returns the true max."""
    tb = TreeBound.from_circuit(pc, d, fav)
    assert tb is not None
    got = tb.node(x, y, free, set(sens))
    box = tb.box(x, y, free, set(sens))
    osc = tb._box[:, 10:13].copy()  # rule C's oscillations of this node's box
    options = []
    for v in free:
        opts = [("y", k) for k in range(joint.shape[v])] + [("e", 0)]
        if v in sens:
            opts += [("x", k) for k in range(joint.shape[v])]
        options.append(opts)
    best, defined = 0.0, 0
    for choice in itertools.product(*options):
        xx, yy = dict(x), dict(y)
        for v, (where, k) in zip(free, choice):
            if where == "x":
                xx[v] = k
            elif where == "y":
                yy[v] = k
        p_xy = _mass(joint, {**xx, **yy})
        if not xx or p_xy <= 0:
            continue
        defined += 1
        p_y = _mass(joint, yy)
        a = _mass(joint, {**xx, **yy, d: fav}) / p_xy
        b = _mass(joint, {**yy, d: fav}) / p_y
        best = max(best, abs(a - b))
        assert got is not None, "a defined extension was declared impossible"
        _inside_box(box, tb.prior, a, b, (x, y, free, xx, yy))
        _within_oscillation(tb, osc, joint, d, fav, y, xx, yy)
        assert abs(a - b) <= got.ub + TOL, (x, y, free, xx, yy, a - b, got.ub)
        assert got.a_min - TOL <= a <= got.a_max + TOL
        p_not = _mass_not(joint, yy, xx)
        if p_not > 0:
            rest = _mass_not(joint, {**yy, d: fav}, xx) / p_not
            lo, hi = got.rest()
            assert lo - 1e-7 <= rest <= hi + 1e-7, (rest, lo, hi)
    if got is None:
        assert defined == 0
    return best, got


def _logit(p: float) -> float:
    with np.errstate(divide="ignore"):
        return float(np.log(p) - np.log1p(-p))


def _inside_box(box, prior, a, b, where):
    """The extension's ``A = logit P(d | y') − π``, ``B = logit P(d | x', y') − π`` and
    ``B − A`` (when both are finite) lie in the bound's intervals (to rounding: the brute force
    computes logits of probabilities, which lose digits near 0 and 1)."""
    def near(lo, val, hi):
        if not np.isfinite(val):
            return (lo <= val <= hi) or not np.isfinite(lo if val < 0 else hi)
        tol = 1e-6 * max(1.0, abs(val))
        return lo - tol <= val <= hi + tol

    if not (1e-9 < a < 1 - 1e-9 and 1e-9 < b < 1 - 1e-9):
        return  # a logit the brute force cannot give to the bound's precision
    big_a, big_b = _logit(b) - prior, _logit(a) - prior
    assert near(box[0], big_a, box[1]), ("A", box[:2], big_a, where)
    assert near(box[2], big_b, box[3]), ("B", box[2:4], big_b, where)
    assert near(box[4], big_b - big_a, box[5]), ("D", box[4:6], big_b - big_a, where)


def _subtree(tb, v) -> set:
    below, grew = {v}, True
    while grew:
        grew = False
        for u, p in enumerate(tb.parent):
            if p in below and u not in below and u != tb.d:
                below.add(u)
                grew = True
    return below


def _within_oscillation(tb, osc, joint, d, fav, y, xx, yy):
    """Rule C's claims for every feature ``v`` with a feature parent not in the node's ``y``:
    ``p_δ(v, j) = log P_δ(x'_sub | y'_sub, pa = j)`` spreads over the parent values ``j``
    (those where ``P(pa = j, D = δ) > 0`` and the ``y'`` evidence below has positive
    probability) by at most ``ω_δ(v)``, and ``g_A(v, j) = log P_d(y'_sub | j) − log
    P_¬d(y'_sub | j)`` (where both are positive) by at most ``ω_A(v)``; computed here from the
    joint table."""
    for v in range(joint.ndim):
        pa = int(tb.parent[v])
        if v == d or pa < 0 or pa in y:
            continue
        sub = _subtree(tb, v)
        ey = {u: k for u, k in yy.items() if u in sub}
        ex = {**ey, **{u: k for u, k in xx.items() if u in sub}}
        ga = []
        for j in range(joint.shape[pa]):
            m = [_mass(joint, {pa: j, d: dv}) for dv in (fav, 1 - fav)]
            a = [_mass(joint, {**ey, pa: j, d: dv}) for dv in (fav, 1 - fav)]
            if min(m) < 1e-200 or min(a[0] / m[0], a[1] / m[1]) < 1e-200:
                continue
            ga.append(np.log(a[0] / m[0]) - np.log(a[1] / m[1]))
        if len(ga) > 1 and osc[tb.moff[v], 2] < np.inf:
            spread = max(ga) - min(ga)
            assert spread <= osc[tb.moff[v], 2] + 1e-6 * (1 + spread), (
                "ω_A", v, spread, osc[tb.moff[v], 2], xx, yy)
        for q, dv in enumerate((fav, 1 - fav)):
            ps = []
            for j in range(joint.shape[pa]):
                base = _mass(joint, {pa: j, d: dv})
                m_a = _mass(joint, {**ey, pa: j, d: dv})
                if base < 1e-200 or m_a < 1e-200 * base:
                    continue  # the parent value has no mass, or the y' evidence none
                m_b = _mass(joint, {**ex, pa: j, d: dv})
                ps.append(np.log(m_b / m_a) if m_b > 0 else -np.inf)
            bound = osc[tb.moff[v], q]
            if len(ps) < 2 or bound == np.inf or not np.isfinite(ps).any():
                # all −inf: the x' evidence is impossible in a part detached below an
                # observed variable, the same factor 0 for every parent value
                continue
            assert np.isfinite(ps).all(), ("ω finite but p = −inf", v, q, ps, bound)
            spread = max(ps) - min(ps)
            assert spread <= bound + 1e-6 * (1 + spread), ("ω", v, q, spread, bound, xx, yy)


def random_node(rng, n, d, sens, max_free=4):
    feats = [v for v in range(n) if v != d]
    x, y, free = {}, {}, []
    for v in rng.permutation(feats):
        v = int(v)
        r = rng.random()
        if len(free) < max_free and r < 0.4:
            free.append(v)
        elif r < 0.6 and v in sens:
            x[v] = -1
        elif r < 0.85:
            y[v] = -1
    return x, y, free


def _values(joint, x, y, rng):
    return ({v: int(rng.integers(0, joint.shape[v])) for v in x},
            {v: int(rng.integers(0, joint.shape[v])) for v in y})


def _check_model(pc, rng, nodes=6):
    n = pc.num_variables
    joint = joint_table(pc)
    sens = [v for v in range(1, n) if rng.random() < 0.5] or [1]
    for fav in (0, 1):
        # the root node, then random ones
        check_node(pc, joint, 0, fav, sens, {}, {}, list(range(1, n)))
        for _ in range(nodes):
            x, y, free = random_node(rng, n, 0, set(sens))
            x, y = _values(joint, x, y, rng)
            check_node(pc, joint, 0, fav, sens, x, y, free)


# ---------------------------------------------------------------------------------- tests
@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(3, 6), st.booleans(), st.booleans(),
       st.booleans())
def test_tree_bound_covers_every_extension_on_random_clts(seed, n, zeros, tiny, ties):
    rng = np.random.default_rng(seed)
    cards = [2] + [int(c) for c in rng.integers(2, 4, n - 1)]
    pc = random_tan(rng, cards, zeros, tiny, ties)
    _check_model(pc, rng, nodes=10)


def test_tree_bound_regression_x_value_impossible_but_y_evidence_possible():
    """A decided ``x`` value with θ = 0 under both decision values below some parent value
    makes the B side impossible there, not the A side (seed 3 of the sweep below once gave a
    bound of 0 for a pattern of |Δ| = 0.357)."""
    rng = np.random.default_rng(3)
    n = int(rng.integers(3, 7))
    cards = [2] + [int(c) for c in rng.integers(2, 4, n - 1)]
    pc = random_tan(rng, cards, True, False, False)
    joint = joint_table(pc)
    best, got = check_node(pc, joint, 0, 1, [3, 4, 5], {3: 0}, {1: 1}, [5, 4])
    assert best > 0.3 and got.ub >= best


@pytest.mark.slow
def test_tree_bound_sweep():
    for seed in range(400):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(3, 7))
        cards = [2] + [int(c) for c in rng.integers(2, 4, n - 1)]
        pc = random_tan(rng, cards, seed % 3 == 0, seed % 5 == 0, seed % 2 == 0)
        _check_model(pc, rng, nodes=10)
        pc, _ = tree_bn(rng, cards, ("root", "deep")[seed % 2], seed % 3 == 1, seed % 4 == 0)
        _check_model(pc, rng, nodes=5)


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(3, 6), st.sampled_from(["root", "deep"]),
       st.booleans(), st.booleans())
def test_tree_bound_covers_every_extension_on_tree_networks(seed, n, where, zeros, tiny):
    rng = np.random.default_rng(seed)
    cards = [2] + [int(c) for c in rng.integers(2, 4, n - 1)]
    pc, joint = tree_bn(rng, cards, where, zeros, tiny)
    np.testing.assert_allclose(joint_table(pc), joint, atol=1e-12)  # the re-rooting is exact
    _check_model(pc, rng)


def test_recognised_model_is_the_circuits_distribution():
    """The tables read off the structure give back the circuit's joint exactly."""
    for seed in range(6):
        rng = np.random.default_rng(seed)
        cards = [2] + [int(c) for c in rng.integers(2, 4, 4)]
        pc = random_tan(rng, cards, zeros=seed % 2 == 1, tiny=seed % 3 == 2)
        tb = TreeBound.from_circuit(pc, 0, 1)
        joint = joint_table(pc)
        rebuilt = np.zeros(cards)
        for z in itertools.product(*[range(c) for c in cards]):
            lp = 0.0
            for v in range(1, len(cards)):
                j = z[tb.parent[v]] if tb.parent[v] >= 0 else 0
                lt = tb.lt1 if z[0] == 1 else tb.lt0
                lp += lt[tb.toff[v] + j * cards[v] + z[v]]
            rebuilt[z] = np.exp(lp)
        p1, p0 = joint[1].sum(), joint[0].sum()
        rebuilt[1] *= p1
        rebuilt[0] *= p0
        with np.errstate(divide="ignore"):
            assert np.isclose(tb.prior, np.log(p1) - np.log(p0))
        np.testing.assert_allclose(rebuilt, joint, atol=1e-12)


def test_tight_at_the_leaves_and_coupled_where_x_is_shielded():
    """With every variable decided the bound is the pattern's exact |Δ|; and on a naive Bayes
    it is the naive-Bayes bound."""
    rng = np.random.default_rng(7)
    cards = [2, 2, 3, 2, 2]
    pc = random_tan(rng, cards)
    joint = joint_table(pc)
    x, y = {1: 1}, {2: 0, 3: 1, 4: 0}
    best, got = check_node(pc, joint, 0, 1, [1], x, y, [])
    assert got.ub == pytest.approx(best, abs=1e-12)
    b = CircuitBuilder({f"x{i}": [0, 1] for i in range(4)})
    elems = [(b.indicator("x0", dv), b.product([b.categorical(f"x{i}", rng.dirichlet([1, 1]))
                                                for i in (1, 2, 3)]), 0.5) for dv in (0, 1)]
    nb = b.build(b.decision(elems))
    tb, nbb = TreeBound.from_circuit(nb, 0, 1), NaiveBayesBound.from_circuit(nb, 0, 1)
    for x, y, free in [({}, {}, [1, 2, 3]), ({1: 0}, {}, [2, 3]), ({1: 1}, {2: 0}, [3])]:
        assert tb.node(x, y, free, {1, 2}).ub <= nbb.node(x, y, free, {1, 2}).ub + 1e-12


def test_refuses_circuits_that_are_not_tree_models():
    rng = np.random.default_rng(0)
    for seed in range(8):
        psdd = random_psdd(np.random.default_rng(seed), [2, 2, 3, 2], zeros=bool(seed % 2),
                           shared_primes=bool(seed % 3 == 1))
        tb = TreeBound.from_circuit(psdd, 0, 1)
        if tb is not None:  # a random PSDD may happen to be one: then it must be exact
            joint = joint_table(psdd)
            _check_model(psdd, rng, nodes=3)
            assert joint.shape[0] == 2
    # a mixture of two Chow-Liu circuits: same decision at the root, not one tree model
    b = CircuitBuilder({f"x{i}": [0, 1] for i in range(4)})
    a1 = b.decision([(b.indicator("x1", 0), b.product([b.categorical("x2", [.9, .1]),
                                                       b.categorical("x3", [.2, .8])]), .5),
                     (b.indicator("x1", 1), b.product([b.categorical("x2", [.3, .7]),
                                                       b.categorical("x3", [.6, .4])]), .5)])
    a2 = b.decision([(b.indicator("x1", 0), b.product([b.categorical("x2", [.9, .1]),
                                                       b.categorical("x3", [.2, .8])]), .5),
                     (b.indicator("x1", 1), b.product([b.categorical("x2", [.1, .9]),
                                                       b.categorical("x3", [.6, .4])]), .5)])
    mix = b.sum([a1, a2], weights=[.5, .5])  # over x1..x3: not a tree distribution
    pc = b.build(b.decision([(b.indicator("x0", 0), mix, .4), (b.indicator("x0", 1), a1, .6)]))
    assert TreeBound.from_circuit(pc, 0, 1) is None
    # the decision not at the root
    b = CircuitBuilder({f"x{i}": [0, 1] for i in range(3)})
    pc = b.build(b.decision([(b.indicator("x1", k), b.decision(
        [(b.indicator("x0", dv), b.categorical("x2", [.3 + .2 * dv, .7 - .2 * dv]), .5)
         for dv in (0, 1)]), .5) for k in (0, 1)]))
    assert TreeBound.from_circuit(pc, 0, 1) is None
    # a chain x0 → x1 → x2 → x3 is one; splitting x3's node by x1's value (under x0 = 1) is not
    b = CircuitBuilder({f"x{i}": [0, 1] for i in range(4)})
    leaf = [b.categorical("x3", [.5, .5]), b.categorical("x3", [.1, .9])]

    def chain(split: bool):
        def sub(k, dv):
            shift = (k * dv) if split else 0
            return b.decision([(b.indicator("x2", j), leaf[(j + shift) % 2], .3 + .4 * j * k)
                               for j in (0, 1)])
        return b.build(b.decision([(b.indicator("x0", dv), b.decision(
            [(b.indicator("x1", k), sub(k, dv), .5) for k in (0, 1)]), .5) for dv in (0, 1)]))

    ok = chain(False)
    assert TreeBound.from_circuit(ok, 0, 1) is not None
    _check_model(ok, rng, nodes=3)
    assert TreeBound.from_circuit(chain(True), 0, 1) is None
    with pytest.raises(OptionError):
        select_bound(pc, 0, 1, "tree")
    with pytest.raises(OptionError):
        select_bound(pc, 0, 1, "naive_bayes")
    with pytest.raises(OptionError):
        select_bound(ok, 0, 1, "nonsense")


def test_coupled_bound_matches_a_grid_maximum():
    rng = np.random.default_rng(1)
    sig = lambda t: 1 / (1 + np.exp(-t))
    for _ in range(30):
        t_lo, t_hi = np.sort(rng.normal(0, 3, 2))
        s_lo, s_hi = np.sort(rng.normal(0, 3, 2))
        tt, ss = np.meshgrid(np.linspace(t_lo, t_hi, 201), np.linspace(s_lo, s_hi, 201))
        grid = np.abs(sig(tt + ss) - sig(tt)).max()
        ub = coupled_bound(t_lo, t_hi, s_lo, s_hi)
        assert grid <= ub + 1e-12 and ub <= grid + 1e-3
    assert coupled_bound(-np.inf, 1.0, 0.0, np.inf) == 1.0


def test_selection_prefers_the_tightest_bound():
    rng = np.random.default_rng(2)
    pc = random_tan(rng, [2, 2, 2, 3])
    assert select_bound(pc, 0, 1).name == "tree"
    assert isinstance(select_bound(pc, 0, 1, "quotient"), QuotientBound)
    psdd = random_psdd(np.random.default_rng(5), [2, 2, 3, 2], zeros=False,
                       shared_primes=False)
    if TreeBound.from_circuit(psdd, 0, 1) is None:
        assert select_bound(psdd, 0, 1).name == "quotient"


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(3, 6), st.booleans())
def test_search_with_the_tree_bound_agrees_with_the_dense_engine(seed, n, zeros):
    rng = np.random.default_rng(seed)
    cards = [2] + [int(c) for c in rng.integers(2, 4, n - 1)]
    pc = random_tan(rng, cards, zeros=zeros, tiny=not zeros)
    names = list(pc.names)
    sens = names[1: 1 + max(1, (n - 1) // 2)]
    dense = find_patterns(pc, "x0", sens, 0.0, kind="topk", k=5, engine="lattice")
    tree = find_patterns(pc, "x0", sens, 0.0, kind="topk", k=5, engine="search",
                         search_options=SearchOptions(bound="tree", seed_runs=0))
    np.testing.assert_allclose([p.abs_score for p in tree], [p.abs_score for p in dense],
                               atol=1e-9)
    by_div = [find_patterns(pc, "x0", sens, 0.01, kind="topk", k=3, rank_by="divergence",
                            engine=e, search_options=SearchOptions(bound="tree", seed_runs=0))
              for e in ("lattice", "search")]
    np.testing.assert_allclose([p.divergence for p in by_div[1]],
                               [p.divergence for p in by_div[0]], rtol=1e-7, atol=1e-12)
    top = dense[0].abs_score if len(dense) else 0.0
    for delta, fair in ((top + 1e-6, True), (max(top - 1e-6, 0.0), top <= 1e-6)):
        if delta >= 1:
            continue
        c = certify(pc, "x0", sens, delta, engine="search",
                    search_options=SearchOptions(bound="tree"))
        assert c.complete and c.fair == fair
    s = [pc.names.index(v) for v in sens]
    res = search(Problem(pc, 0, 1, s), SearchQuery(min(top + 1e-6, 0.999), mode="first",
                                                   options=SearchOptions(bound="tree")))
    assert res.bound == "tree" and res.complete and bool(res.patterns) == (top > 0.999)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans(), st.booleans())
def test_tree_bound_covers_every_extension_at_arities_up_to_ten(seed, zeros, tiny):
    """Three features of 2 to 10 values (the box's mixtures over many values, rules H and
    M with wide posteriors), zeros and 1e-12 entries."""
    rng = np.random.default_rng(seed)
    cards = [2] + [int(c) for c in rng.integers(2, 11, 3)]
    pc = random_tan(rng, cards, zeros, tiny, False)
    _check_model(pc, rng, nodes=4)


def _hilbert(u, w) -> float:
    r = np.log(u) - np.log(w)
    return float(r.max() - r.min())


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 10), st.integers(2, 10), st.booleans())
def test_contraction_coefficient_bounds_every_hilbert_distance(seed, rows, cols, zeros):
    """Birkhoff–Hopf (rule C): ``d_H(Tu, Tw) ≤ τ d_H(u, w)`` for random positive ``u``,
    ``w`` (spread over many scales) and tables with zeros (then ``τ = 1``: no growth)."""
    rng = np.random.default_rng(seed)
    table = rng.dirichlet(np.full(cols, 0.5), size=rows)
    if zeros:
        table[rng.random(table.shape) < 0.2] = 0.0
        table[:, 0] += (table.sum(axis=1) == 0)  # no empty row
    with np.errstate(divide="ignore"):
        tau = _contraction_coefficient(np.log(table))
    assert 0.0 <= tau <= 1.0
    for _ in range(50):
        u = np.exp(rng.normal(0, rng.uniform(0.1, 5), cols))
        w = np.exp(rng.normal(0, rng.uniform(0.1, 5), cols))
        assert _hilbert(table @ u, table @ w) <= tau * _hilbert(u, w) * (1 + 1e-9) + 1e-12


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 10), st.integers(2, 10), st.booleans())
def test_observed_spread_bounds_the_spread_of_an_observed_value(seed, rows, cols, zeros):
    """``Δ_k`` (rule C, ``v`` in ``x`` with ``k``) against the spread over ``j`` of
    ``log θ(k|j) − log Σ_l θ(l|j) w_l`` for random weights ``w ≥ 0``, and reached by some."""
    rng = np.random.default_rng(seed)
    table = rng.dirichlet(np.full(cols, 0.5), size=rows)
    if zeros:
        table[rng.random(table.shape) < 0.2] = 0.0
        table[:, 0] += (table.sum(axis=1) == 0)
    with np.errstate(divide="ignore"):
        spread = _observed_spread(np.log(table))
    for k in range(cols):
        if (table[:, k] == 0).any():
            assert spread[k] == np.inf
            continue
        best = 0.0
        for trial in range(60):
            w = np.exp(rng.normal(0, 4, cols)) * (rng.random(cols) < 0.8)
            if trial < cols:
                w = np.eye(cols)[trial] + 1e-300  # the extreme weights, where it is reached
            mix = table @ w
            if (mix <= 0).any():
                continue
            vals = np.log(table[:, k]) - np.log(mix)
            best = max(best, float(vals.max() - vals.min()))
        assert best <= spread[k] * (1 + 1e-9) + 1e-12
        if np.isfinite(spread[k]):
            assert best >= spread[k] * (1 - 1e-6) - 1e-9  # the bound is attained


def test_rule_c_mutations_are_caught(monkeypatch):
    """Rule C's tables shrunk (contraction × 0.3, the observed spreads halved, or the spreads
    of ``ℓ`` halved) make some random model's box or oscillation claim fail against brute
    force."""
    original = TreeBound.contraction

    def caught(scale_tau: float, scale_spread: float, scale_ell: float = 1.0) -> bool:
        def mutated(self):
            ctr = original(self)
            ctr[:, :2, 0] *= scale_tau
            ctr[:, :2, 1:] *= scale_spread
            ctr[:, 4:, 1:] *= scale_spread
            ctr[:, 2:4] *= scale_ell
            return ctr

        monkeypatch.setattr(TreeBound, "contraction", mutated)
        try:
            for seed in range(40):
                rng = np.random.default_rng(seed)
                n = int(rng.integers(3, 7))
                cards = [2] + [int(c) for c in rng.integers(2, 4, n - 1)]
                pc, _ = tree_bn(rng, cards, ("root", "deep")[seed % 2])
                _check_model(pc, rng, nodes=6)
                _check_model(random_tan(rng, cards), rng, nodes=6)
        except AssertionError:
            return True
        finally:
            monkeypatch.setattr(TreeBound, "contraction", original)
        return False

    assert caught(0.3, 1.0)
    assert caught(1.0, 0.5)
    assert caught(1.0, 1.0, 0.3)
