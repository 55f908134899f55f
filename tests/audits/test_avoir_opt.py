"""Tests of pcfair.audits.avoir.opt: the δ-allocation optimiser (spec §6 D)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pcfair.audits.avoir.opt as opt
from pcfair.audits.avoir import parse_spec
from pcfair.audits.avoir.bounds import adaptive_hoeffding_epsilon
from pcfair.audits.avoir.errors import MonitorSettingError
from pcfair.audits.avoir.opt import allocate, equal_split
from pcfair.audits.avoir._program import Program
from pcfair.audits.avoir.bounds import AdaptiveHoeffding

WORKED = "E[r | s == 1] - E[r | s == 0] < 0.1"
EST, COUNTS = [0.8, 0.5], [1550, 310]


def test_worked_example_equal_split_is_infeasible():
    eps = adaptive_hoeffding_epsilon(0.05, np.array(COUNTS))
    assert eps.sum() == pytest.approx(0.2003844, abs=1e-6)
    assert eps.sum() > 0.2
    assert allocate(WORKED, EST, COUNTS, failure_prob=0.1, split="equal").verdict is None


def test_worked_example_optimum():
    a = allocate(WORKED, EST, COUNTS, failure_prob=0.1)
    dx, dy = a.failure_probs
    assert a.verdict is False and a.source == "optimized"
    assert a.failure_prob == pytest.approx(0.096140, abs=1e-4)
    assert dx + dy == pytest.approx(a.failure_prob)
    assert dy / dx == pytest.approx(2.35, abs=0.02)
    assert dx == pytest.approx(0.02866, abs=1e-4) and dy == pytest.approx(0.06748, abs=1e-4)
    ex, ey = adaptive_hoeffding_epsilon(a.failure_probs, np.array(COUNTS))
    assert ex == pytest.approx(0.06402, abs=1e-4) and ey == pytest.approx(0.13598, abs=1e-4)
    # KKT: n·ε·δ equal across the terms of a sum constraint (both ≈ 2.844)
    assert 1550 * ex * dx == pytest.approx(310 * ey * dy, abs=1e-3)
    assert 1550 * ex * dx == pytest.approx(2.844, abs=2e-3)
    # the larger δ goes to the term with fewer observations (the paper's text says otherwise)
    assert dy > dx


def test_equal_split_values():
    np.testing.assert_allclose(equal_split(4, 0.15), [0.0375] * 4)


SPECS = {
    "difference": "E[r | g == 1] - E[r | g == 0] < {c}",
    "ratio": "E[r | g == 0] / E[r | g == 1] > {c}",
    "conjunction": "(E[r | g == 1] - E[r | g == 0] < {c}) & (E[r | g == 2] > 0.2)",
    "disjunction": "(E[r | g == 1] - E[r | g == 0] > {c}) | (E[r | g == 2] < 0.2)",
}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(SPECS)),
       est=st.lists(st.floats(0.05, 0.95), min_size=3, max_size=3),
       logn=st.lists(st.floats(np.log(50), np.log(20000)), min_size=3, max_size=3),
       c=st.floats(0.05, 0.95),
       delta=st.sampled_from([0.05, 0.1, 0.15]))
def test_optimized_dominates_the_equal_split(kind, est, logn, c, delta):
    """Theorem 2: wherever the equal split certifies, OB certifies the same verdict at ≤ Δ."""
    spec = parse_spec(SPECS[kind].format(c=round(c, 3)))
    L = len(spec.leaves())
    e, n = np.array(est[:L]), np.round(np.exp(logn[:L]))
    vf = allocate(spec, e, n, failure_prob=delta, split="equal")
    ob = allocate(spec, e, n, failure_prob=delta)
    if vf.decided:
        assert ob.verdict == vf.verdict
        assert ob.failure_prob <= vf.failure_prob + 1e-12
    if ob.decided:
        assert ob.failure_prob <= delta * (1 + 1e-12)
        # re-verified: the allocation decides the spec with the numeric rules
        prog = Program(spec)
        ev = prog.evaluate(e[None, :], n[None, :], ob.failure_probs, AdaptiveHoeffding(), tol=1e-6,
                           charge="used")
        assert int(ev.root_truth[0]) == int(ob.verdict)
        assert ev.root_charged[0] == pytest.approx(ob.failure_prob)


def test_optimiser_certifies_with_fewer_samples_along_a_sweep():
    # scale both counts of the worked example: OB certifies from a smaller scale than VF
    scales = np.linspace(0.8, 1.4, 61)
    first = {}
    for split in ("optimized", "equal"):
        decided = [allocate(WORKED, EST, np.round(np.array(COUNTS) * s), failure_prob=0.1,
                            split=split).decided for s in scales]
        assert decided[-1] and not decided[0]
        first[split] = scales[decided.index(True)]
        # once decided, more samples keep it decided
        assert all(decided[decided.index(True):])
    assert first["optimized"] < first["equal"]


def test_a_solver_answer_failing_the_recheck_gives_no_verdict(monkeypatch):
    def bogus(prog, values, counts, witness, bound, tol, budget):
        # claims success with tiny δs, whose ε are far too wide to decide anything
        return np.full(prog.n_leaves, 1e-9)

    monkeypatch.setattr(opt, "_solve_witness", bogus)
    a = allocate(WORKED, EST, COUNTS, failure_prob=0.1)
    assert a.verdict is None and a.failure_prob == 1.0 and a.source == "none"


def test_a_solver_answer_over_budget_gives_no_verdict(monkeypatch):
    def greedy(prog, values, counts, witness, bound, tol, budget):
        return np.full(prog.n_leaves, 0.5)  # decides, but Σδ = 1 > Δ

    monkeypatch.setattr(opt, "_solve_witness", greedy)
    assert allocate(WORKED, EST, COUNTS, failure_prob=0.1).verdict is None


def test_the_equal_split_survives_a_failing_solver(monkeypatch):
    monkeypatch.setattr(opt, "_solve_witness", lambda *args: None)
    a = allocate(WORKED, [0.9, 0.3], [4000, 4000], failure_prob=0.1)
    assert a.verdict is False and a.source == "equal"


def test_or_equals_the_best_disjunct():
    left = "E[r | g == 1] - E[r | g == 0] > 0.1"
    right = "E[r | g == 2] < 0.75"
    both = f"({left}) | ({right})"
    est, n = [0.8, 0.5, 0.6], [1550, 310, 900]
    a_left = allocate(left, est[:2], n[:2], failure_prob=0.1)
    a_right = allocate(right, est[2:], n[2:], failure_prob=0.1)
    a_both = allocate(both, est, n, failure_prob=0.1)
    assert a_left.verdict is True and a_right.verdict is True
    assert a_both.verdict is True
    assert a_both.failure_prob == pytest.approx(min(a_left.failure_prob, a_right.failure_prob), rel=1e-6)


def test_or_with_a_hopeless_branch_still_stops():
    text = "(E[r | g == 1] > 0.5) | (E[r | g == 0] / E[r | g == 2] > 1.0)"
    a = allocate(text, [0.9, 0.5, 0.5], [5000, 3, 3], failure_prob=0.05)
    assert a.verdict is True
    assert a.failure_probs[1] == 0 and a.failure_probs[2] == 0  # no claim on the hopeless branch


def test_a_point_estimate_on_the_threshold_is_not_certifiable():
    assert allocate("E[r] > 0.5", [0.5], [10**9], failure_prob=0.1).verdict is None
    assert allocate("E[r] == 0.5", [0.5], [10**9], failure_prob=0.1).verdict is None
    assert allocate("E[r] == 0.4", [0.5], [10**6], failure_prob=0.1).verdict is False
    assert allocate("E[r] != 0.4", [0.5], [10**6], failure_prob=0.1).verdict is True


def test_bad_settings_name_the_parameter():
    with pytest.raises(MonitorSettingError, match=r"failure_prob .* must lie in \(0, 1\), got 1.5"):
        allocate(WORKED, EST, COUNTS, failure_prob=1.5)
    with pytest.raises(MonitorSettingError, match="split must be one of"):
        allocate(WORKED, EST, COUNTS, split="greedy")
    with pytest.raises(MonitorSettingError, match="one entry per leaf occurrence"):
        allocate(WORKED, [0.5], [10])
