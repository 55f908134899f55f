import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pcfair
from pcfair.circuit import CircuitBuilder, Vtree
from pcfair.circuit.properties import compatible
from conftest import SHARED_CIRCUITS, requires_shared
from _pcgen import random_mixture, random_psdd


def test_non_smooth_sum():
    b = CircuitBuilder(2)
    pc = b.build(b.sum([b.literal("1"), b.product(b.literal("1", False), b.literal("2"))],
                       [0.5, 0.5]))
    rep = pc.properties()
    assert rep.smooth is False
    assert any(p.property == "smooth" and p.node == pc.root for p in rep.problems)


def test_overlapping_product():
    b = CircuitBuilder(2)
    pc = b.build(b.product(b.bernoulli("1", 0.3), b.sum([b.literal("1"), b.literal("2")], [0.5, 0.5])))
    rep = pc.properties()
    assert rep.decomposable is False and rep.structured_decomposable is False
    assert any(p.property == "decomposable" for p in rep.problems)


def _four(b, first, second):
    (a, c), (d, e) = first, second
    return b.product(b.product(b.bernoulli(a, 0.3), b.bernoulli(c, 0.6)),
                     b.product(b.bernoulli(d, 0.2), b.bernoulli(e, 0.9)))


def test_two_splits_of_one_scope_are_not_structured():
    """{12|34} and {13|24} over {1,2,3,4}; also the laminarity gap: products on leaves."""
    b = CircuitBuilder(4)
    root = b.sum([_four(b, ("1", "2"), ("3", "4")), _four(b, ("1", "3"), ("2", "4"))], [0.5, 0.5])
    rep = b.build(root).properties()
    assert rep.smooth and rep.decomposable
    assert rep.structured_decomposable is False
    assert any(p.property == "structured_decomposable" for p in rep.problems)


def test_hclt_like_is_structured_and_pd_like_is_not():
    b = CircuitBuilder(4)
    left = [b.product(b.bernoulli("1", p), b.bernoulli("2", q)) for p, q in [(0.1, 0.2), (0.7, 0.4)]]
    right = [b.product(b.bernoulli("3", p), b.bernoulli("4", q)) for p, q in [(0.3, 0.8), (0.5, 0.5)]]
    hclt = b.sum([b.product(l, r) for l in left for r in right], [0.1, 0.2, 0.3, 0.4])
    rep = b.build(hclt).properties()
    assert rep.structured_decomposable is True
    assert rep.vtree is not None and rep.vtree.num_variables == 4
    # a PD-like mixture of two different region splits
    pd_like = b.sum([hclt, _four(b, ("1", "4"), ("2", "3"))], [0.5, 0.5])
    assert b.build(pd_like).properties().structured_decomposable is False


def test_non_deterministic_counterexample():
    b = CircuitBuilder(2)
    x1, x2 = b.literal("1"), b.literal("2")
    root = b.sum([b.product(x1, x2), b.product(x1, b.bernoulli("2", 0.4))], [0.5, 0.5])
    rep = b.build(root).properties()
    assert rep.deterministic is False
    prob = next(p for p in rep.problems if p.property == "deterministic")
    assert prob.counterexample == {"1": 1, "2": 1}


def test_determinism_tiers_and_zero_weights():
    b = CircuitBuilder(2)
    x1 = b.literal("1")
    # identical supports, but one element has weight zero: still deterministic
    root = b.sum([b.product(x1, b.bernoulli("2", 0.3)), b.product(x1, b.bernoulli("2", 0.6))],
                 [1.0, 0.0])
    assert b.build(root).properties().deterministic is True
    rng = np.random.default_rng(3)
    mix = random_mixture(rng, [2] * 3)
    rep = mix.properties()
    assert rep.deterministic is False and rep.determinism_tier in ("pairwise", "exhaustive")


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(2, 3), min_size=1, max_size=5))
def test_random_psdds_have_every_property(seed, cards):
    pc = random_psdd(np.random.default_rng(seed), cards, shared_primes=bool(seed % 2))
    rep = pc.properties()
    assert rep.smooth and rep.decomposable and rep.structured_decomposable
    assert rep.deterministic is True
    assert rep.normalized is True
    # determinism checked by enumeration agrees (the exhaustive tier on the same circuit)
    assert pc.with_vtree(None).properties(exhaustive_limit=16).deterministic is True


def test_incompatible_vtrees():
    rng = np.random.default_rng(0)
    p = random_psdd(rng, [2] * 4, Vtree.from_nested(((0, 1), (2, 3))), max_elements=2, zeros=False)
    q = random_psdd(rng, [2] * 4, Vtree.from_nested(((0, 2), (1, 3))), max_elements=2, zeros=False)
    r = random_psdd(rng, [2] * 4, Vtree.from_nested(((0, 1), (2, 3))), max_elements=2, zeros=False)
    assert not compatible(p, q)
    assert compatible(p, r)


@requires_shared
def test_exp_d15_respects_its_vtree_despite_file_ids():
    c = pcfair.load(SHARED_CIRCUITS / "exp-D15-N1000-C4.psdd")
    rep = c.properties()
    assert rep.structured_decomposable is True and rep.vtree == c.vtree
    assert rep.problems == []


@requires_shared
def test_zoo_pair_is_compatible():
    P = pcfair.load(SHARED_CIRCUITS / "nltcs.psdd")
    Q = pcfair.load(SHARED_CIRCUITS / "nltcs.clt.psdd", vtree=SHARED_CIRCUITS / "nltcs.vtree")
    assert compatible(P, Q)
    assert Q.properties().deterministic is True


# ------------------------------------------------------ determinism by the compiled pass
_ZOO_SMALL = [("little_4var.psdd", "little_4var.vtree"), ("simple2.1.psdd", "simple2.vtree"),
              ("simple2.2.psdd", "simple2.vtree"), ("simple2.3.psdd", "simple2.vtree"),
              ("exp-D15-N1000-C4.psdd", "exp-D15-N1000-C4.vtree"),
              ("nltcs.clt.psdd", "nltcs.vtree"), ("nltcs.psdd", "nltcs.vtree"),
              ("msnbc.psdd", "msnbc.vtree")]
_ZOO_LARGE = [("plants.psdd", "plants.vtree"), ("accidents.psdd", "accidents.vtree"),
              ("ad.psdd", "ad.vtree")]


def _decided(name, vtree):
    c = pcfair.load(SHARED_CIRCUITS / name, vtree=SHARED_CIRCUITS / vtree)
    rep = c.properties()
    assert rep.deterministic is True, (name, rep.problems[:3])
    assert rep.determinism_tier in ("syntactic", "pairwise")
    return rep


@requires_shared
@pytest.mark.parametrize("name,vtree", _ZOO_SMALL)
def test_zoo_psdds_are_decided_deterministic(name, vtree):
    rep = _decided(name, vtree)
    if name in ("nltcs.psdd", "msnbc.psdd"):  # primes beyond literals: the pairwise tier
        assert rep.determinism_tier == "pairwise"


@requires_shared
@pytest.mark.slow
@pytest.mark.parametrize("name,vtree", _ZOO_LARGE)
def test_large_zoo_psdds_are_decided_deterministic(name, vtree):
    assert _decided(name, vtree).determinism_tier == "pairwise"


def _duplicate_an_element(pc, rng):
    """``pc`` with one element of a sum copied over another (same prime and sub): a
    structured circuit that is not deterministic wherever the copied element is positive."""
    import dataclasses

    from pcfair.inference.marginals import node_log_values

    mass = node_log_values(pc, np.full(pc.num_variables, -1, np.int32))
    cands = []
    for i in np.flatnonzero(pc.kind == 3):
        live = [e for e in range(pc.edge_ptr[i], pc.edge_ptr[i + 1])
                if pc.edge_logw[e] > -np.inf and mass[pc.edge_a[e]] > -np.inf
                and (pc.edge_b[e] < 0 or mass[pc.edge_b[e]] > -np.inf)]
        if len(live) >= 2:
            cands.append((int(i), live))
    if not cands:
        return None, None, None
    i, live = cands[int(rng.integers(len(cands)))]
    x, y = rng.choice(live, size=2, replace=False)
    ea, eb = pc.edge_a.copy(), pc.edge_b.copy()
    ea[y], eb[y] = ea[x], eb[x]
    bad = dataclasses.replace(pc, edge_a=ea, edge_b=eb, _cache={})
    return bad, i, (int(x), int(y))


@pytest.mark.parametrize("seed", range(20))
def test_pairwise_tier_finds_duplicated_elements(seed):
    """A copied element breaks determinism: the pairwise tier says so, at that node, with a
    point on which both elements are positive."""
    from pcfair.inference.marginals import node_log_values

    rng = np.random.default_rng(seed)
    cards = [int(c) for c in rng.integers(2, 4, size=int(rng.integers(2, 6)))]
    pc = random_psdd(rng, cards, zeros=bool(seed % 3), shared_primes=bool(seed % 2))
    bad, node, xy = _duplicate_an_element(pc, rng)
    if bad is None:
        return
    x, y = xy
    rep = bad.properties()
    assert rep.deterministic is False and rep.determinism_tier == "pairwise"
    prob = next(p for p in rep.problems if p.node == node)
    ev = np.full(bad.num_variables, -1, np.int32)
    for k, v in prob.counterexample.items():
        idx = bad.variables.index(k)
        ev[idx] = bad.variables.value_index(idx, v)
    vals = node_log_values(bad, ev)
    assert vals[bad.edge_a[x]] > -np.inf
    assert bad.edge_b[x] < 0 or vals[bad.edge_b[x]] > -np.inf


# ------------------------------------------------------------------ the derived-value cache
def test_derived_values_are_registered_and_kept_per_circuit():
    from pcfair.circuit.derived import derived, peek

    b = CircuitBuilder({"a": [0, 1], "b": [0, 1]})
    pc = b.build(b.product(b.categorical("a", [0.2, 0.8]), b.categorical("b", [0.5, 0.5])))
    with pytest.raises(KeyError, match="not a registered"):
        derived(pc, "made_up_name", lambda: 1)
    assert peek(pc, "normalized") is None
    first = derived(pc, "normalized", lambda: object())
    assert derived(pc, "normalized", lambda: object()) is first


def test_with_parameters_keeps_structure_and_drops_parameter_values():
    from pcfair.circuit.derived import peek

    b = CircuitBuilder({"a": [0, 1], "b": [0, 1]})
    pc = b.build(b.product(b.categorical("a", [0.2, 0.8]), b.categorical("b", [0.5, 0.5])))
    scopes = pc.scopes()
    pc.log_marginal({"a": 1})                 # fills kernel_args (depends on the parameters)
    assert peek(pc, "kernel_args") is not None
    other = pc.with_parameters(pc.edge_logw, np.log(np.array([0.6, 0.4, 0.5, 0.5])))
    assert peek(other, "scopes") is scopes
    assert peek(other, "kernel_args") is None
    assert float(other.probability({"a": 1})) == pytest.approx(0.4)


def test_leaf_with_no_parameters_has_minus_infinite_lognorm():
    from pcfair.circuit.circuit import CATEGORICAL

    b = CircuitBuilder({"a": [0, 1]})
    pc = b.build(b.categorical("a", [0.3, 0.7]))
    empty = pc.__class__(pc.variables, pc.kind, pc.var, pc.value, pc.param_ptr,
                         np.zeros_like(pc.param_len), pc.params, pc.edge_ptr, pc.edge_a,
                         pc.edge_b, pc.edge_logw)
    assert empty.kind[0] == CATEGORICAL
    assert empty.leaf_lognorm[0] == -np.inf


def test_the_circuit_package_imports_nothing_from_inference_or_patterns():
    """House rule: pcfair.circuit holds the representation; algorithms live in inference/ and
    patterns/ and import it, never the other way (Circuit's convenience methods delegate to
    inference/ inside the method)."""
    import ast
    from pathlib import Path

    import pcfair.circuit

    root = Path(pcfair.circuit.__file__).parent
    offenders = []
    for path in root.rglob("*.py"):
        tree = ast.parse(path.read_text())
        methods = {id(n) for cls in ast.walk(tree) if isinstance(cls, ast.ClassDef)
                   for fn in cls.body if isinstance(fn, ast.FunctionDef)
                   for n in ast.walk(fn)}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and \
                    node.module.startswith(("pcfair.inference", "pcfair.patterns")):
                if not (path.name == "circuit.py" and id(node) in methods):
                    offenders.append(f"{path.name}:{node.lineno} {node.module}")
    assert offenders == []
