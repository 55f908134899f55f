"""Tests of pcfair.audits.avoir.rules: propagation rules and Kleene logic (spec §6 B, C)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcfair.audits.avoir import parse_spec
from pcfair.audits.avoir.opt import allocate
from pcfair.audits.avoir.rules import Claim, compare, kleene_and, kleene_or
from pcfair.audits.avoir._program import Program
from pcfair.audits.avoir.bounds import AdaptiveHoeffding
from pcfair.audits.avoir.rules import FALSE, TRUE, UNDETERMINED, compare_arrays, propagate

X = Claim(0.8, 0.05, 0.01)
Y = Claim(0.5, 0.1, 0.02)


def _close(claim: Claim, expected: tuple[float, float, float]):
    assert (claim.value, claim.epsilon, claim.delta) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(("claim", "expected"), [
    (X - Y, (0.3, 0.15, 0.03)),
    (X + Y, (1.3, 0.15, 0.03)),
    (X * Y, (0.4, 0.11, 0.03)),
    (Y.inverse(), (2.0, 0.5, 0.02)),
    (X / Y, (1.6, 0.525, 0.03)),
    (Claim.constant(0.7), (0.7, 0.0, 0.0)),
    (-1 * X, (-0.8, 0.05, 0.01)),
])
def test_propagation_table(claim, expected):
    _close(claim, expected)


def test_ratio_equals_verifair_formula():
    # VeriFair: ε/|E_B| + ε(ε + |E_A|)/(|E_B|(|E_B| − ε)) with a common ε
    a, b, e = 0.7, 0.4, 0.05
    ratio = Claim(a, e, 0.01) / Claim(b, e, 0.01)
    assert ratio.epsilon == pytest.approx(e / b + e * (e + a) / (b * (b - e)), rel=1e-12)


def test_inverse_of_an_interval_touching_zero_is_undetermined():
    small = Claim(0.04, 0.05, 0.01)
    r = Y / small
    assert r.epsilon == math.inf and r.delta == 1.0
    assert compare(r, ">", 0.5) == (None, 1.0)
    assert compare(r, "<", 1e9) == (None, 1.0)
    assert small.inverse().epsilon == math.inf


def test_products_with_unbounded_factors_stay_unbounded():
    unbounded = Claim(0.0, math.inf, 0.1)
    assert (unbounded * Claim.constant(0.0)).epsilon == math.inf
    assert (X + unbounded).epsilon == math.inf


def test_delta_is_capped_at_one():
    assert (Claim(0.5, 0.1, 0.7) + Claim(0.5, 0.1, 0.6)).delta == 1.0


D = X - Y  # (0.3, 0.15, 0.03)


@pytest.mark.parametrize(("op", "c", "expected"), [
    ("<", 0.5, (True, 0.03)),
    ("<", 0.4, (None, 1.0)),
    (">", 0.1, (True, 0.03)),
    (">", 0.5, (False, 0.03)),
    ("==", 0.3, (None, 1.0)),
    ("!=", 0.6, (True, 0.03)),
    ("==", 0.6, (False, 0.03)),
    ("!=", 0.3, (None, 1.0)),
    ("<", 0.1, (False, 0.03)),
])
def test_comparison_verdicts(op, c, expected):
    truth, delta = compare(D, op, c)
    assert truth is expected[0]
    assert delta == pytest.approx(expected[1])


def test_equality_is_never_true_and_inequality_never_false():
    exact = Claim(0.3, 0.0, 0.0)
    assert compare(exact, "==", 0.3)[0] is None
    assert compare(exact, "!=", 0.3)[0] is None


def test_comparison_needs_a_strict_margin():
    # the interval touching the threshold within tol is not a verdict
    edge = Claim(0.3, 0.2 - 1e-7, 0.01)
    assert compare(edge, "<", 0.5)[0] is None
    assert compare(edge, "<", 0.5, tol=0.0)[0] is True


@settings(max_examples=200, deadline=None)
@given(v=st.floats(-2, 2), e=st.floats(0, 2), c=st.floats(-2, 2),
       op=st.sampled_from([">", "<", "==", "!="]))
def test_a_verdict_is_true_for_every_value_in_the_interval(v, e, c, op):
    code = compare_arrays(op, v, e, c)
    samples = np.linspace(v - e, v + e, 11)
    truth = {">": samples > c, "<": samples < c, "==": samples == c, "!=": samples != c}[op]
    if code == TRUE:
        assert truth.all()
    elif code == FALSE:
        assert not truth.any()


T, F, U = TRUE, FALSE, UNDETERMINED


@pytest.mark.parametrize(("fn", "a", "b", "expected"), [
    (kleene_and, T, T, T),
    (kleene_and, F, U, F),
    (kleene_and, U, F, F),
    (kleene_and, T, U, U),
    (kleene_and, T, F, F),
    (kleene_or, T, U, T),
    (kleene_or, U, T, T),
    (kleene_or, F, U, U),  # the reference evaluator gets this one wrong
    (kleene_or, F, F, F),
    (kleene_or, F, T, T),
    (kleene_and, U, U, U),
    (kleene_or, U, U, U),
])
def test_kleene_truth_tables(fn, a, b, expected):
    truth, _ = fn(a, 0.01, b, 0.02)
    assert int(truth) == int(expected)


def test_delta_charging_used_and_all():
    assert float(kleene_and(T, 0.01, T, 0.02)[1]) == pytest.approx(0.03)
    assert float(kleene_and(F, 0.01, U, 0.02, "used")[1]) == pytest.approx(0.01)
    assert float(kleene_and(F, 0.01, U, 0.02, "all")[1]) == pytest.approx(0.03)
    assert float(kleene_and(F, 0.03, F, 0.02, "used")[1]) == pytest.approx(0.02)
    assert float(kleene_or(U, 0.01, T, 0.02, "used")[1]) == pytest.approx(0.02)
    assert float(kleene_or(F, 0.01, F, 0.02, "used")[1]) == pytest.approx(0.03)
    assert float(kleene_or(F, 0.6, F, 0.7)[1]) == 1.0


def _evaluate(text, est, counts, deltas, charge="used"):
    prog = Program(parse_spec(text))
    return prog, prog.evaluate(np.array([est]), np.array([counts]), np.array(deltas),
                               AdaptiveHoeffding(), tol=1e-6, charge=charge)


def test_node_delta_sums_the_leaf_multiset():
    # the same E[...] twice is two leaves with two δs
    text = "(E[r | g == 1] - E[r | g == 0] < 0.5) & (E[r | g == 1] > 0.2)"
    prog, ev = _evaluate(text, [0.6, 0.5, 0.6], [4000, 4000, 4000], [0.01, 0.02, 0.04])
    assert prog.n_leaves == 3 and len(prog.signatures) == 2
    assert ev.delta[0, 0] == pytest.approx(0.07)
    assert int(ev.root_truth[0]) == 1 and ev.root_charged[0] == pytest.approx(0.07)


def test_false_and_undetermined_charges_only_the_false_child():
    text = "(E[a] < 0.5) & (E[b] > 0.45)"
    # E[a] = 0.9 clearly above 0.5: False; E[b] = 0.5 with few samples: undetermined
    _, used = _evaluate(text, [0.9, 0.5], [5000, 20], [0.01, 0.02])
    assert int(used.root_truth[0]) == 0 and used.root_charged[0] == pytest.approx(0.01)
    assert used.delta[0, 0] == pytest.approx(0.03)  # the node δ shown is always the sum
    _, full = _evaluate(text, [0.9, 0.5], [5000, 20], [0.01, 0.02], charge="all")
    assert full.root_charged[0] == pytest.approx(0.03)


def test_or_with_one_true_branch_is_decided_whatever_the_other():
    text = "(E[a] > 0.5) | (E[b] > 0.9)"
    _, ev = _evaluate(text, [0.9, 0.5], [5000, 3], [0.05, 0.05])
    assert int(ev.root_truth[0]) == 1 and ev.root_charged[0] == pytest.approx(0.05)
    a = allocate(text, [0.9, 0.5], [5000, 3], failure_prob=0.1)
    assert a.verdict is True


def test_propagate_is_elementwise_and_rejects_unknown_ops():
    v, e, d = propagate("-", np.array([0.8, 0.6]), 0.05, 0.01, 0.5, np.array([0.1, 0.2]), 0.02)
    np.testing.assert_allclose(v, [0.3, 0.1])
    np.testing.assert_allclose(e, [0.15, 0.25])
    np.testing.assert_allclose(d, [0.03, 0.03])
    with pytest.raises(ValueError, match="unknown operation '\\^'"):
        propagate("^", 1, 0, 0, 1, 0, 0)
