import itertools

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pcfair
from pcfair.circuit import CircuitBuilder, Vtree
from pcfair.circuit.derived import peek
from pcfair.inference.quotient import (
    PairPlan,
    conditional_bounds,
    max_quotient,
    rightmost_path_primes,
)
from conftest import SHARED_CIRCUITS, requires_shared
from _pcgen import joint_table, random_mixture, random_psdd, random_vtree


def _load(name, vtree):
    return pcfair.load(SHARED_CIRCUITS / name, vtree=SHARED_CIRCUITS / vtree)


@requires_shared
@pytest.mark.parametrize("a,b,value,arg", [
    (1, 2, 40 / 7, [0, 0]), (2, 1, 2.52, [1, 0]), (2, 3, 2.1, [1, 0]),
    (1, 3, 4 / 3, [0, 0]), (3, 1, 2.0, [0, 1]),
])
def test_simple2_max_quotient_golden(a, b, value, arg):
    p = _load(f"simple2.{a}.psdd", "simple2.vtree")
    q = _load(f"simple2.{b}.psdd", "simple2.vtree")
    r = max_quotient(p, q)
    assert np.exp(r.value) == pytest.approx(value, rel=1e-9)
    assert r.assignment.tolist() == arg and r.exact


@requires_shared
def test_simple2_with_evidence():
    p = _load("simple2.1.psdd", "simple2.vtree")
    q = _load("simple2.2.psdd", "simple2.vtree")
    r = max_quotient(p, q, {"2": 1})
    assert np.exp(r.value) == pytest.approx(10 / 3, rel=1e-9)
    assert r.assignment[0] == 0


@requires_shared
def test_nltcs_pair_golden_and_marginalized_soundness():
    P = pcfair.load(SHARED_CIRCUITS / "nltcs.psdd")
    Q = pcfair.load(SHARED_CIRCUITS / "nltcs.clt.psdd", vtree=SHARED_CIRCUITS / "nltcs.vtree")
    r = max_quotient(P, Q, assume_deterministic=True)
    assert r.value == pytest.approx(9.906816639409, abs=1e-9)
    assert "".join(map(str, r.assignment)) == "1101111110010011"
    r1 = max_quotient(P, Q, {"1": 1}, assume_deterministic=True)
    assert r1.value == pytest.approx(r.value, abs=1e-9)
    r = max_quotient(Q, P, assume_deterministic=True)
    assert -r.value == pytest.approx(-10.984925596743, abs=1e-9)
    assert "".join(map(str, r.assignment)) == "0010000010001001"
    # x4 marginalised: true max 9.7135347023; the unsound rule gives 9.6929 (below it)
    r = max_quotient(P, Q, marginalized=["4"], assume_deterministic=True)
    assert r.value >= 9.7135347023 - 1e-9
    assert not r.exact
    # x16 is the right-most leaf, but nltcs.psdd's root repeats primes whose subs differ only
    # in x16 (30 such element pairs overlap once x16 is summed out, checked by enumeration in
    # test_nltcs_root_shares_primes_decided_by_x16), so the spec's own precondition for the
    # ratio-of-marginals shortcut fails here: the sound bound is returned, flagged inexact.
    r = max_quotient(P, Q, marginalized=["16"], assume_deterministic=True)
    assert r.value >= 8.7574915303 - 1e-9
    assert not r.exact


@requires_shared
def test_nltcs_root_shares_primes_decided_by_x16():
    """Enumeration confirms what the relaxed Boolean pass reports for nltcs.psdd's root."""
    import itertools

    from pcfair.inference.marginals import node_log_values

    P = pcfair.load(SHARED_CIRCUITS / "nltcs.psdd")
    root = P.root
    edges = range(P.edge_ptr[root], P.edge_ptr[root + 1])
    shared = [(P.edge_b[x], P.edge_b[y]) for x, y in itertools.combinations(edges, 2)
              if P.edge_a[x] == P.edge_a[y]]
    rows = np.array(list(itertools.product([0, 1], repeat=15)), dtype=np.int32)
    rows = np.hstack([rows, np.full((len(rows), 1), -1, np.int32)])  # x16 summed out
    subs = sorted({int(s) for pair in shared for s in pair})
    vals = np.array([node_log_values(P, r)[subs] for r in rows[::7]]) > -np.inf
    col = {s: k for k, s in enumerate(subs)}
    overlapping = sum(bool(np.any(vals[:, col[a]] & vals[:, col[b]])) for a, b in shared)
    assert overlapping > 0
    _, _, shared_ok = rightmost_path_primes(P, P.vtree)
    leaf16 = int(P.vtree.leaf_of[15])
    assert not shared_ok[P.vtree.root, leaf16]


def test_refuses_non_deterministic_and_incompatible():
    rng = np.random.default_rng(0)
    mix = random_mixture(rng, [2, 2, 2])
    with pytest.raises(pcfair.StructureError, match="not deterministic"):
        max_quotient(mix, mix)
    b = CircuitBuilder(4)
    p = random_psdd(rng, [2, 2, 2, 2], vtree=Vtree.from_nested(((0, 1), (2, 3))), zeros=False)
    q = random_psdd(rng, [2, 2, 2, 2], vtree=Vtree.from_nested(((0, 2), (1, 3))), zeros=False)
    q = q.with_vtree(None)
    del b
    with pytest.raises(pcfair.StructureError):
        max_quotient(p, q)


def _brute_quotient(p, q, ev, marg):
    xs, pp = joint_table(p)
    _, qq = joint_table(q)
    n = xs.shape[1]
    free = [v for v in range(n) if ev[v] < 0 and v not in marg]
    best = -np.inf
    for u in itertools.product(*[range(int(p.variables.cardinalities[v])) for v in free]):
        mask = np.ones(len(xs), bool)
        for v in range(n):
            if ev[v] >= 0:
                mask &= xs[:, v] == ev[v]
        for v, val in zip(free, u):
            mask &= xs[:, v] == val
        a, b = pp[mask].sum(), qq[mask].sum()
        if a > 0 and b > 0:
            best = max(best, np.log(a) - np.log(b))
    return best


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(2, 3), min_size=2, max_size=5))
def test_max_quotient_matches_brute_force(seed, cards):
    rng = np.random.default_rng(seed)
    vt = random_vtree(rng, len(cards))
    shared = bool(seed % 2)
    p = random_psdd(rng, cards, vt, zeros=False, shared_primes=shared)
    q = random_psdd(rng, cards, vt, zeros=False, shared_primes=shared)
    n = len(cards)
    ev = np.full(n, -1)
    for v in rng.choice(n, size=int(rng.integers(0, n)), replace=False):
        ev[v] = rng.integers(cards[v])
    candidates = [v for v in range(n) if ev[v] < 0]
    marg = [v for v in candidates if rng.random() < 0.3]
    evd = {f"x{v}": int(ev[v]) for v in range(n) if ev[v] >= 0}
    r = max_quotient(p, q, evd, marginalized=[f"x{v}" for v in marg])
    want = _brute_quotient(p, q, ev, marg)
    if not r.feasible:  # claiming "no common support" must be true
        assert want == -np.inf
    if not marg:
        assert r.feasible == np.isfinite(want)
    if r.feasible:
        assert r.value >= want - 1e-9  # always a sound upper bound
        if r.exact:
            assert r.value == pytest.approx(want, abs=1e-9)
        if not marg:
            assert r.exact
            # the arg-max attains the value
            x = np.where(ev >= 0, ev, r.assignment)
            lp = p.log_marginal(x[None])[0] - q.log_marginal(x[None])[0]
            assert lp == pytest.approx(r.value, abs=1e-9)


def _brute_bounds(pc, d, ev, marg, fav=1):
    xs, pp = joint_table(pc)
    n = xs.shape[1]
    free = [v for v in range(n) if ev[v] < 0 and v not in marg and v != d]
    vals = []
    for u in itertools.product(*[range(int(pc.variables.cardinalities[v])) for v in free]):
        mask = np.ones(len(xs), bool)
        for v in range(n):
            if ev[v] >= 0:
                mask &= xs[:, v] == ev[v]
        for v, val in zip(free, u):
            mask &= xs[:, v] == val
        tot = pp[mask].sum()
        if tot > 0:
            vals.append(pp[mask & (xs[:, d] == fav)].sum() / tot)
    return (min(vals), max(vals)) if vals else None


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(2, 3), min_size=1, max_size=4),
       st.booleans())
def test_conditional_bounds_match_brute_force(seed, cards, zeros):
    rng = np.random.default_rng(seed)
    cards = [2] + cards  # x0 is the binary decision, anywhere in the vtree
    pc = random_psdd(rng, cards, zeros=zeros, shared_primes=bool(seed % 2))
    n = len(cards)
    ev = np.full(n, -1)
    for v in rng.choice(np.arange(1, n), size=int(rng.integers(0, n - 1)), replace=False):
        ev[v] = rng.integers(cards[v])
    marg = [v for v in range(1, n) if ev[v] < 0 and rng.random() < 0.3]
    want = _brute_bounds(pc, 0, ev, marg)
    evd = {f"x{v}": int(ev[v]) for v in range(n) if ev[v] >= 0}
    if want is None:
        with pytest.raises(pcfair.EvidenceError):
            conditional_bounds(pc, "x0", evd, marginalized=[f"x{v}" for v in marg])
        return
    r = conditional_bounds(pc, "x0", evd, marginalized=[f"x{v}" for v in marg])
    assert r.max >= want[1] - 1e-9 and r.min <= want[0] + 1e-9  # sound
    if r.exact:
        assert r.max == pytest.approx(want[1], abs=1e-9)
        assert r.min == pytest.approx(want[0], abs=1e-9)
    if not marg:
        assert r.exact


def test_conditional_bounds_example_and_errors():
    b = CircuitBuilder({"d": [0, 1], "x": [0, 1], "y": ["a", "b", "c"]})
    root = b.decision([
        (b.indicator("d", 1), b.product(b.categorical("x", [0.2, 0.8]),
                                        b.categorical("y", [0.3, 0.3, 0.4])), 0.5),
        (b.indicator("d", 0), b.product(b.categorical("x", [0.6, 0.4]),
                                        b.categorical("y", [0.5, 0.25, 0.25])), 0.5),
    ])
    pc = b.build(root)
    r = conditional_bounds(pc, "d", {"y": "c"})
    assert r.argmax == {"x": 1}
    want = 0.8 * 0.4 / (0.8 * 0.4 + 0.4 * 0.25)
    assert r.max == pytest.approx(want)
    with pytest.raises(pcfair.VariableError):
        conditional_bounds(pc, "d", {"d": 1})
    with pytest.raises(pcfair.VariableError, match="binary"):
        conditional_bounds(pc, "y")


@pytest.mark.parametrize("block", range(4))
def test_marginalized_quotient_is_sound_on_a_seed_sweep(block):
    """Shared primes (determinism through subs), zeros and marginalised variables together:
    the bound is never below brute force, and equals it whenever it claims exactness."""
    for seed in range(block * 50, block * 50 + 50):
        rng = np.random.default_rng(seed)
        cards = [2, 3, 2, 2, 3]
        vt = random_vtree(rng, len(cards))
        p = random_psdd(rng, cards, vt, zeros=False, shared_primes=True)
        q = random_psdd(rng, cards, vt, zeros=False, shared_primes=True)
        marg = [v for v in range(len(cards)) if rng.random() < 0.3]
        r = max_quotient(p, q, marginalized=[f"x{v}" for v in marg])
        want = _brute_quotient(p, q, np.full(len(cards), -1), marg)
        assert r.value >= want - 1e-9, seed
        if r.exact:
            assert r.value == pytest.approx(want, abs=1e-9), seed


# ------------------------------------------------------------------- the compiled builder
def _random_evidence(rng, cards, differ=(), marg_rate=0.25):
    """``(ev_p, ev_q, free)``: some variables observed (``differ`` ones with different values
    on the two sides), some marginalised, the rest free."""
    n = len(cards)
    ev_p = np.full(n, -1, np.int32)
    for v in range(n):
        if rng.random() < 0.3:
            ev_p[v] = rng.integers(cards[v])
    ev_q = ev_p.copy()
    for v in differ:
        ev_p[v], ev_q[v] = rng.integers(cards[v]), rng.integers(cards[v])
    free = ev_p < 0
    free &= rng.random(n) >= marg_rate
    return ev_p, ev_q, free


def _same_result(a, b, exact_may_drop=False):
    assert a.feasible == b.feasible
    if a.feasible:
        assert a.value == b.value
        assert np.array_equal(a.assignment, b.assignment)
    if exact_may_drop:  # a pruned plan may only be more cautious about exactness
        assert a.exact <= b.exact
    else:
        assert a.exact == b.exact


@pytest.mark.parametrize("block", range(3))
def test_compiled_plan_equals_the_python_plan(block):
    """The numba builder compiles the same plan as the reference Python builder: values,
    feasibility, arg-max and exactness agree entry for entry on random PSDDs with shared
    primes and zeros, for two circuits and for a circuit against itself, with evidence that
    differs between the sides; a plan pruned for a decision agrees on what the bounds ask
    (only the decision differs), and incremental re-evaluation equals a full one."""
    for seed in range(block * 40, block * 40 + 40):
        rng = np.random.default_rng(seed)
        cards = [int(c) for c in rng.integers(2, 4, size=int(rng.integers(2, 6)))]
        vt = random_vtree(rng, len(cards))
        shared, zeros = bool(seed % 2), bool(seed % 3)
        p = random_psdd(rng, cards, vt, zeros=zeros, shared_primes=shared)
        q = random_psdd(rng, cards, vt, zeros=zeros, shared_primes=shared)
        path = rightmost_path_primes(p, vt)
        for a, b, pp in ((p, q, None), (p, p, path)):
            py = PairPlan(a, b, vt, pp, builder="python")
            nb = PairPlan(a, b, vt, pp)
            r_py, r_nb = py.entry(a.root, b.root), nb.entry(a.root, b.root)
            assert nb.num_entries == py.num_entries
            for _ in range(6):
                differ = rng.choice(len(cards), size=int(rng.integers(0, 3)), replace=False)
                ev_p, ev_q, free = _random_evidence(rng, cards, differ)
                _same_result(nb.evaluate(r_nb, ev_p, ev_q, free),
                             py.evaluate(r_py, ev_p, ev_q, free))
        # a plan pruned for a decision d, against the reference plan
        d = int(rng.integers(len(cards)))
        py = PairPlan(p, p, vt, path, builder="python")
        pr = PairPlan(p, p, vt, path, relaxed=[d], deterministic=True)
        r_py, r_pr = py.entry(p.root, p.root), pr.entry(p.root, p.root)
        assert pr.num_entries <= py.num_entries
        for _ in range(8):
            ev_p, ev_q, free = _random_evidence(rng, cards, [d])
            got = pr.evaluate(r_pr, ev_p, ev_q, free)
            _same_result(got, py.evaluate(r_py, ev_p, ev_q, free), exact_may_drop=True)
            assert (pr.common_support_count(r_pr, ev_p, ev_q)
                    == py.common_support_count(r_py, ev_p, ev_q))
            pr._slots.clear()  # the same evidence from scratch: a full evaluation
            _same_result(got, pr.evaluate(r_pr, ev_p, ev_q, free))
            ev = ev_p.copy()
            ev[d] = -1
            free[d] = False
            if cards[d] == 2:
                want = py.conditional_extremes(r_py, d, 1, ev, free)
                assert pr.conditional_extremes(r_pr, d, 1, ev, free) == want


def _supports(pc):
    """Each term's support (node ids, then elements ``N + e``: prime times sub, the weight
    being the sum's) as a boolean matrix over all assignments."""
    from pcfair.inference.marginals import node_log_values

    xs, _ = joint_table(pc)
    vals = np.array([node_log_values(pc, x.astype(np.int32)) for x in xs]) > -np.inf
    el = vals[:, pc.edge_a] & np.where(pc.edge_b >= 0, vals[:, np.maximum(pc.edge_b, 0)], True)
    return xs, np.hstack([vals, el])


@pytest.mark.parametrize("seed", range(12))
def test_pair_supports_match_enumeration(seed):
    """The compiled Boolean pass (the determinism test) against enumeration: two terms of
    the same scope meet iff some point of one and some point of the other agree off the
    relaxed variables."""
    rng = np.random.default_rng(seed)
    cards = [int(c) for c in rng.integers(2, 4, size=int(rng.integers(2, 6)))]
    pc = random_psdd(rng, cards, zeros=True, shared_primes=bool(seed % 2))
    xs, sup = _supports(pc)
    n = pc.num_nodes
    scopes = pc.scopes()
    scope = scopes + [scopes[a] | (scopes[b] if b >= 0 else 0)
                      for a, b in zip(pc.edge_a, pc.edge_b)]
    terms = [t for t in range(len(scope)) if scope[t] and (t < n or pc.kind[
        np.searchsorted(pc.edge_ptr, t - n, side="right") - 1] == 3)]
    pairs = [(a, b) for a in terms for b in terms if scope[a] == scope[b]]
    pairs = [pairs[k] for k in rng.permutation(len(pairs))[:150]]
    for relaxed_vars in ([], [int(rng.integers(len(cards)))]):
        relaxed = np.zeros(len(cards), bool)
        relaxed[relaxed_vars] = True
        plan = PairPlan(pc, pc, pc.vtree, relaxed=relaxed)
        got = plan.supports(pairs, relaxed)
        keep = ~relaxed
        for (a, b), g in zip(pairs, got):
            pa = {tuple(x[keep]) for x in xs[sup[:, a]]}
            pb = {tuple(x[keep]) for x in xs[sup[:, b]]}
            assert (g > 0) == bool(pa & pb), (a, b, relaxed_vars)


@requires_shared
@pytest.mark.slow
def test_nltcs_pruned_plan_equals_the_full_plan():
    """On nltcs.psdd, the plan pruned for a decision (about 20 k entries) and the full plan
    (4.3 M entries) give the same bounds, arg-max and exactness."""
    c = _load("nltcs.psdd", "nltcs.vtree")
    vt, path = c.properties().vtree, rightmost_path_primes(c, c.vtree)
    full = PairPlan(c, c, vt, path)
    r_full = full.entry(c.root, c.root)
    rng = np.random.default_rng(1)
    cards = [2] * c.num_variables
    for d in (0, 7, 15):
        pr = PairPlan(c, c, vt, path, relaxed=[d], deterministic=True)
        r_pr = pr.entry(c.root, c.root)
        assert pr.num_entries < 50_000
        for _ in range(10):
            ev_p, ev_q, free = _random_evidence(rng, cards, [d])
            _same_result(pr.evaluate(r_pr, ev_p, ev_q, free),
                         full.evaluate(r_full, ev_p, ev_q, free), exact_may_drop=True)


@requires_shared
def test_nltcs_bounds_are_cheap_after_the_first():
    """The self-plan pruned for a decision stays small on nltcs.psdd (4,675 nodes), and the
    bounds agree with the sound nltcs figures; a further call re-evaluates only what the
    new evidence changes."""
    c = _load("nltcs.psdd", "nltcs.vtree")
    r = conditional_bounds(c, "1")
    plan = peek(c, ("self_plan", 0))
    assert plan.num_entries < 50_000
    assert 0.0 < r.min < r.max < 1.0
    again = conditional_bounds(c, "1")
    assert (again.min, again.max) == (r.min, r.max)
    one = conditional_bounds(c, "1", {"5": 1})
    assert one.min >= r.min - 1e-12 and one.max <= r.max + 1e-12
