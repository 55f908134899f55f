"""Regression tests for the certifier's correctness issue (#14, items 1-7): each one failed on
the code before the fix."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pytest

import pcfair
from pcfair.circuit import CircuitBuilder
from pcfair.errors import NumericalError, StructureError
from pcfair.patterns import certify, find_patterns, pattern_census, sample_patterns
from pcfair.patterns.summaries import pareto_mask
from pcfair.patterns.search import divergence_bound
from pcfair.patterns.search_types import PAPER, SearchOptions

ROOT = Path(__file__).resolve().parents[2]
COMPAS = ROOT / "circuits" / "compas_clt.json"
COMPAS_D = "ScoreText_"
COMPAS_S = ["Ethnic_Code_Text_", "MaritalStatus_", "Sex_", "Age"]


def naive_bayes(prior: float, features: dict[str, tuple[list[float], list[float]]]):
    """Naive Bayes over ``d`` and ``features``: name -> (P(f | d=1), P(f | d=0))."""
    b = CircuitBuilder({"d": [0, 1], **{f: list(range(len(p))) for f, (p, _) in features.items()}})
    elements = []
    for dv, w in ((1, prior), (0, 1 - prior)):
        leaves = [b.categorical(f, given[1 - dv]) for f, given in features.items()]
        elements.append((b.indicator("d", dv), b.product(*leaves), w))
    return b.build(b.decision(elements))


def shift_root(pc: pcfair.Circuit, shift: float) -> pcfair.Circuit:
    """The same distribution times ``exp(shift)``: ``shift`` added to every root log-weight."""
    logw = pc.edge_logw.copy()
    logw[pc.edge_ptr[pc.root]: pc.edge_ptr[pc.root + 1]] += shift
    return pc.with_parameters(logw)


def brute_force(pc, decision, sensitive, delta):
    """Every defined pattern's (x, y, Δ, P(x, y)) from the normalised joint (no engine code)."""
    names, card = pc.names, pc.variables.cardinalities
    grid = np.array(list(itertools.product(*[range(int(c)) for c in card])))
    lp = pc.log_marginal(grid)
    p = np.exp(lp - lp.max())
    p /= p.sum()
    d = names.index(decision)
    sens = {names.index(s) for s in sensitive}
    feats = [v for v in range(len(names)) if v != d]
    out = []
    for states in itertools.product(*[range(2 * int(card[v]) + 1 if v in sens
                                            else int(card[v]) + 1) for v in feats]):
        x, y = {}, {}
        for v, s in zip(feats, states):
            if 1 <= s <= card[v]:
                y[v] = s - 1
            elif s > card[v]:
                x[v] = s - card[v] - 1
        if not x:
            continue
        in_y = np.all([grid[:, v] == val for v, val in y.items()], axis=0) if y else np.ones(len(grid), bool)
        in_x = np.all([grid[:, v] == val for v, val in x.items()], axis=0)
        fav = grid[:, d] == 1
        p_xy = p[in_x & in_y].sum()
        if p_xy == 0:
            continue
        score = p[in_x & in_y & fav].sum() / p_xy - p[in_y & fav].sum() / p[in_y].sum()
        out.append((x, y, score, p_xy))
    return out


# ------------------------------------------------------------------------ 1. normalisation
@pytest.mark.parametrize("shift", [800.0, -800.0, 5000.0])
@pytest.mark.parametrize("engine", ["lattice", "search"])
def test_a_constant_factor_changes_no_answer(shift, engine):
    pc = pcfair.load(COMPAS)
    shifted = shift_root(pc, shift)
    cert = certify(shifted, COMPAS_D, COMPAS_S, 0.05, engine=engine)
    assert cert.fair is False and cert.complete
    ref = find_patterns(pc, COMPAS_D, COMPAS_S, 0.05, engine="lattice", count_only=True).count
    assert ref == 2356
    if engine == "lattice":
        assert find_patterns(shifted, COMPAS_D, COMPAS_S, 0.05, engine=engine,
                             count_only=True).count == ref
        assert cert.max_abs_score == pytest.approx(0.220076, abs=1e-6)
    top = find_patterns(shifted, COMPAS_D, COMPAS_S, 0.05, kind="topk", k=3, engine=engine)
    top_ref = find_patterns(pc, COMPAS_D, COMPAS_S, 0.05, kind="topk", k=3, engine="lattice")
    for a, b in zip(top, top_ref):
        assert (a.x, a.y) == (b.x, b.y)
        assert a.score == pytest.approx(b.score, abs=1e-9)
        assert a.probability == pytest.approx(b.probability, rel=1e-9)


def test_a_non_finite_model_is_an_error_not_fair():
    pc = naive_bayes(0.5, {"s": ([0.2, 0.8], [0.6, 0.4]), "a": ([0.5, 0.5], [0.3, 0.7])})
    params = pc.params.copy()
    params[0] = np.nan
    with pytest.raises(NumericalError, match="finite or -inf"):
        pc.with_parameters(pc.edge_logw, params)
    with pytest.raises(NumericalError):
        shift_root(pc, np.inf)
    # a mass that overflows: each weight finite, the sum not
    for engine in ("lattice", "search"):
        with pytest.raises(NumericalError, match="total mass"):
            certify(shift_root(pc, 1e308), "d", ["s"], 0.05, engine=engine)
    zero = shift_root(pc, -np.inf)
    for engine in ("lattice", "search"):
        with pytest.raises((NumericalError, pcfair.errors.EvidenceError)):
            certify(zero, "d", ["s"], 0.05, engine=engine)


# ------------------------------------------------------------------- 2. divergence bound
SPEC_NB = dict(prior=0.99, features={"s": ([0.99, 0.01], [0.01, 0.99]),
                                     "a": ([0.5, 0.5], [0.9, 0.1])})


@pytest.mark.parametrize("options", [SearchOptions(), PAPER])
def test_spec_counterexample_top_divergence(options):
    pc = naive_bayes(**SPEC_NB)
    top = find_patterns(pc, "d", ["s"], 0.01, kind="topk", k=1, rank_by="divergence",
                        engine="search", search_options=options)
    assert len(top) == 1
    assert (top[0].x, top[0].y) == ({"s": 0}, {"a": 0})
    assert top[0].divergence == pytest.approx(0.1597, abs=5e-5)
    dense = find_patterns(pc, "d", ["s"], 0.01, kind="topk", k=1, rank_by="divergence",
                          engine="lattice")
    assert (dense[0].x, dense[0].y) == ({"s": 0}, {"a": 0})


def test_divergence_bound_covers_every_extension_on_random_models():
    """The theorem of :func:`divergence_bound`, checked on the root node's extensions with
    the root's ranges taken from brute force (the tightest inputs the theorem allows)."""
    rng = np.random.default_rng(5)
    for _ in range(60):
        feats = {f"f{i}": (list(rng.dirichlet(np.ones(2))), list(rng.dirichlet(np.ones(2))))
                 for i in range(3)}
        pc = naive_bayes(float(rng.uniform(0.02, 0.98)), feats)
        for delta in (0.0, 0.01, 0.05):
            ps = find_patterns(pc, "d", ["f0", "f1"], delta, engine="lattice")
            if not len(ps):
                continue
            grid = np.array(list(itertools.product(range(2), repeat=4)))
            lp = pc.log_marginal(grid)
            p = np.exp(lp - lp.max()).reshape(2, 2, 2, 2)
            cond = p[1] / p.sum(axis=0)  # P(d | f0, f1, f2) for complete assignments
            lo, hi = float(cond.min()), float(cond.max())
            ub = divergence_bound(1.0, lo, hi, lo, hi, delta)
            assert max(q.divergence for q in ps) <= ub


# ----------------------------------------------------------- 3. extreme parameters, no crash
def test_tiny_parameters_do_not_crash_the_divergence_cut():
    pc = naive_bayes(1 - 1e-12, {"s": ([1e-12, 1 - 1e-12], [1 - 1e-12, 1e-12]),
                                 "a": ([0.5, 0.5], [1e-12, 1 - 1e-12]),
                                 "b": ([1 - 1e-12, 1e-12], [0.3, 0.7])})
    for delta in (0.0, 0.01, 0.1):
        search = find_patterns(pc, "d", ["s", "a"], delta, kind="topk", k=3,
                               rank_by="divergence", engine="search")
        dense = find_patterns(pc, "d", ["s", "a"], delta, kind="topk", k=3,
                              rank_by="divergence", engine="lattice")
        assert [p.divergence for p in search] == pytest.approx([p.divergence for p in dense],
                                                               rel=1e-6)


# ------------------------------------------------------- 4. infinite divergence at δ = 0
def test_infinite_divergence_at_zero_delta_on_both_engines():
    # P(s=1 | d=0) = 0: for the pattern s=0 (Δ < 0) all of ¬x = {s=1} has d = 1... the mass
    # P(¬d, ¬x) is 0, so a positive pattern x = s=1 cannot be removed: divergence +inf.
    pc = naive_bayes(0.5, {"s": ([0.4, 0.6], [1.0, 0.0]), "a": ([0.3, 0.7], [0.6, 0.4])})
    found = {}
    for engine in ("lattice", "search"):
        ps = find_patterns(pc, "d", ["s"], 0.0, kind="topk", k=20, rank_by="divergence",
                           engine=engine)
        found[engine] = {(tuple(p.x.items()), tuple(p.y.items())): p.divergence for p in ps}
    assert found["lattice"].keys() == found["search"].keys()
    infinite = [k for k, v in found["lattice"].items() if v == math.inf]
    assert infinite, found["lattice"]
    for k in found["lattice"]:
        assert found["search"][k] == pytest.approx(found["lattice"][k], rel=1e-9)


# ----------------------------------------------------------------------- 5. Pareto, rare
def test_pareto_keeps_rare_patterns_apart():
    a = np.array([0.3, 0.5, 0.4])
    p = np.array([1e-17, 3e-18, 2e-16])
    assert pareto_mask(a, p, np.ones(3, bool)).tolist() == [False, True, True]
    # scores that differ by 1e-13 absolute are different scores (relative rule)
    a = np.array([2e-13, 1e-13])
    p = np.array([0.1, 0.2])
    assert pareto_mask(a, p, np.ones(2, bool)).tolist() == [True, True]


def test_pareto_front_of_a_model_with_rare_patterns():
    rare = 1e-9
    pc = naive_bayes(0.5, {"s": ([rare, 1 - rare], [3 * rare, 1 - 3 * rare]),
                           "a": ([rare, 1 - rare], [2 * rare, 1 - 2 * rare]),
                           "b": ([0.3, 0.7], [0.6, 0.4])})
    front = find_patterns(pc, "d", ["s", "a"], 0.05, kind="pareto", engine="lattice")
    every = brute_force(pc, "d", ["s", "a"], 0.05)
    sigma = [(x, y, abs(s), p) for x, y, s, p in every if abs(s) > 0.05 + 1e-12]
    assert min(p for *_, p in sigma) < 1e-16
    expected = set()
    for x, y, a, p in sigma:
        if not any((q >= p * (1 - 1e-9) and b >= a * (1 - 1e-9)) and (x2, y2) != (x, y)
                   for x2, y2, b, q in sigma):
            expected.add((tuple(sorted(x.items())), tuple(sorted(y.items()))))
    names = pc.names
    got = {(tuple(sorted((names.index(k), v) for k, v in p_.x.items())),
            tuple(sorted((names.index(k), v) for k, v in p_.y.items()))) for p_ in front}
    assert got == expected and got
    search = find_patterns(pc, "d", ["s", "a"], 0.05, kind="pareto", engine="search")
    assert {(tuple(p_.x.items()), tuple(p_.y.items())) for p_ in search} == \
        {(tuple(p_.x.items()), tuple(p_.y.items())) for p_ in front}


# ----------------------------------------------------------------- 6. the strict threshold
def test_delta_equal_to_the_exact_maximum_is_fair():
    # dyadic: P(d|s=1) − P(d) = 1/8 exactly
    pc = naive_bayes(0.5, {"s": ([0.25, 0.75], [0.75, 0.25]), "a": ([0.5, 0.5], [0.5, 0.5])})
    exact = max(abs(s) for *_, s, _ in brute_force(pc, "d", ["s"], 0.0))
    assert exact == pytest.approx(0.25, abs=1e-15)
    for engine in ("lattice", "search"):
        assert certify(pc, "d", ["s"], 0.25, engine=engine).fair is True
        assert certify(pc, "d", ["s"], 0.25 - 1e-6, engine=engine).fair is False
    pc = naive_bayes(0.5, {"s": ([0.375, 0.625], [0.625, 0.375])})
    for engine in ("lattice", "search"):
        assert certify(pc, "d", ["s"], 0.125, engine=engine).fair is True
        assert certify(pc, "d", ["s"], 0.125 - 1e-6, engine=engine).fair is False


# ------------------------------------------------------------------- 7. preconditions
def non_smooth():
    b = CircuitBuilder({"d": [0, 1], "s": [0, 1], "a": [0, 1]})
    root = b.sum([b.product(b.indicator("d", 1), b.categorical("s", [0.2, 0.8]),
                            b.categorical("a", [0.5, 0.5])),
                  b.product(b.indicator("d", 0), b.categorical("s", [0.6, 0.4]))], [0.5, 0.5])
    return b.build(root)


def non_decomposable():
    b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    root = b.product(b.categorical("d", [0.5, 0.5]), b.categorical("s", [0.5, 0.5]),
                     b.categorical("s", [0.2, 0.8]))
    return b.build(root)


@pytest.mark.parametrize("make", [non_smooth, non_decomposable])
@pytest.mark.parametrize("engine", ["lattice", "auto", "search"])
def test_engines_refuse_circuits_without_exact_marginals(make, engine):
    pc = make()
    with pytest.raises(StructureError, match="not (smooth|decomposable)"):
        certify(pc, "d", ["s"], 0.05, engine=engine)
    with pytest.raises(StructureError):
        find_patterns(pc, "d", ["s"], 0.05, engine=engine)


def test_sampling_and_census_refuse_them_too():
    with pytest.raises(StructureError):
        sample_patterns(non_smooth(), "d", ["s"], 0.05, runs=2)
    with pytest.raises(StructureError):
        pattern_census(non_smooth(), "d", ["s"])


def test_an_unnormalised_circuit_reports_normalised_probabilities():
    pc = naive_bayes(0.5, {"s": ([0.2, 0.8], [0.6, 0.4])})
    scaled = shift_root(pc, math.log(2.4))
    for engine in ("lattice", "search"):
        ps = find_patterns(scaled, "d", ["s"], 0.05, engine=engine)
        assert max(p.probability for p in ps) <= 1.0
        ref = find_patterns(pc, "d", ["s"], 0.05, engine=engine)
        assert [p.probability for p in ps] == pytest.approx([p.probability for p in ref])
