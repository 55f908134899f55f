import numpy as np
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
