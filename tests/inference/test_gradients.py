"""Gradients of log-marginals (pcfair.inference.gradients) against finite differences."""

import doctest
from pathlib import Path

import numpy as np
import pytest

import pcfair
import pcfair.inference.gradients as gradients_module
from _pcgen import random_mixture, random_psdd
from pcfair.inference.gradients import (
    GradientPlan,
    SoftmaxParameters,
    log_marginal_gradients,
    structure_key,
)
from pcfair.inference.flows import data_flows
from pcfair.learn.parameters import fit_parameters

CIRCUITS = Path(__file__).resolve().parents[2] / "circuits"
H = 1e-6
TOL = 1e-6  # central differences with h = 1e-6 agree to ~1e-9 on these circuits


def _model(seed: int):
    rng = np.random.default_rng(seed)
    cards = [int(c) for c in rng.integers(2, 4, size=4)]
    if seed % 3 == 0:
        return random_mixture(rng, cards, components=3)
    return random_psdd(rng, cards, zeros=bool(seed % 2), shared_primes=seed % 5 == 1)


def _evidence(rng, circuit, rows: int = 8) -> np.ndarray:
    cards = circuit.variables.cardinalities
    ev = rng.integers(0, cards, size=(rows, len(cards))).astype(np.int32)
    ev[rng.random(ev.shape) < 0.4] = -1
    return ev


def _fd_logits(sp: SoftmaxParameters, theta: np.ndarray, ev: np.ndarray) -> np.ndarray:
    out = np.zeros((len(ev), len(theta)))
    for j in range(len(theta)):
        step = np.zeros(len(theta))
        step[j] = H
        a = sp.circuit(theta + step).log_marginal(ev)
        b = sp.circuit(theta - step).log_marginal(ev)
        with np.errstate(invalid="ignore"):
            out[:, j] = (a - b) / (2 * H)
    return out


@pytest.mark.parametrize("seed", range(12))
def test_logit_gradients_match_finite_differences(seed):
    pc = _model(seed)
    rng = np.random.default_rng(100 + seed)
    sp = SoftmaxParameters.from_circuit(pc)
    theta = sp.logits(pc) + rng.normal(0.0, 0.5, sp.num_parameters)
    ev = _evidence(rng, pc)
    logp, grad = sp.log_marginals(theta, ev)
    np.testing.assert_allclose(logp, sp.circuit(theta).log_marginal(ev), rtol=1e-12, atol=1e-12)
    ok = np.isfinite(logp)
    np.testing.assert_allclose(grad[ok], _fd_logits(sp, theta, ev)[ok], atol=TOL)
    assert np.all(grad[~ok] == 0.0)


@pytest.mark.parametrize("seed", range(6))
def test_raw_gradients_match_finite_differences(seed):
    """∂ log P(e) / ∂ log w and ∂ log P(e) / ∂ log θ, perturbing one raw log-parameter."""
    pc = _model(seed)
    rng = np.random.default_rng(200 + seed)
    ev = _evidence(rng, pc, rows=5)
    logp, dw, dp = log_marginal_gradients(pc, ev)
    ok = np.isfinite(logp)
    for j in np.flatnonzero(np.isfinite(pc.edge_logw)):
        up = pc.with_parameters(_shift(pc.edge_logw, j, H)).log_marginal(ev)
        down = pc.with_parameters(_shift(pc.edge_logw, j, -H)).log_marginal(ev)
        np.testing.assert_allclose(dw[ok, j], ((up - down) / (2 * H))[ok], atol=TOL)
    for j in np.flatnonzero(np.isfinite(pc.params)):
        up = pc.with_parameters(pc.edge_logw, _shift(pc.params, j, H)).log_marginal(ev)
        down = pc.with_parameters(pc.edge_logw, _shift(pc.params, j, -H)).log_marginal(ev)
        np.testing.assert_allclose(dp[ok, j], ((up - down) / (2 * H))[ok], atol=TOL)


def _shift(arr: np.ndarray, j: int, h: float) -> np.ndarray:
    out = arr.copy()  # a circuit makes the arrays it is given read-only
    out[j] += h
    return out


def test_shipped_compas_circuit_gradients():
    pc = pcfair.load(CIRCUITS / "compas_clt.psdd")
    rng = np.random.default_rng(0)
    sp = SoftmaxParameters.from_circuit(pc)
    theta = sp.logits(pc)
    ev = _evidence(rng, pc, rows=6)
    logp, grad = sp.log_marginals(theta, ev)
    np.testing.assert_allclose(logp, pc.log_marginal(ev), rtol=1e-12)
    fd = _fd_logits(sp, theta, ev)
    assert np.abs(grad - fd).max() < TOL


def test_flows_of_a_deterministic_circuit_are_data_counts():
    """For one complete row of a deterministic circuit, ∂ log P / ∂ log w is 1 on the path the
    row takes and 0 elsewhere: the data flows the closed-form learner counts."""
    pc = pcfair.load(CIRCUITS / "compas_clt.psdd")
    rng = np.random.default_rng(1)
    rows = rng.integers(0, 2, size=(20, pc.num_variables)).astype(np.int32)
    _, dw, dp = log_marginal_gradients(pc, rows)
    elem, leaf, _ = data_flows(pc, rows)
    is_sum = np.repeat(pc.kind == 3, np.diff(pc.edge_ptr))
    np.testing.assert_allclose(dw.sum(axis=0)[is_sum], elem[is_sum], atol=1e-9)
    np.testing.assert_allclose(dp.sum(axis=0), leaf, atol=1e-9)


def test_zero_probability_rows_get_zero_gradient():
    b = pcfair.CircuitBuilder({"a": [0, 1], "b": [0, 1]})
    pc = b.build(b.decision([(b.indicator("a", 1), b.categorical("b", [0.3, 0.7]), 1.0)]))
    logp, dw, dp = log_marginal_gradients(pc, np.array([[0, -1], [1, -1]]))
    assert logp[0] == -np.inf and np.all(dw[0] == 0) and np.all(dp[0] == 0)
    assert logp[1] == pytest.approx(0.0, abs=1e-12)


def test_softmax_round_trip_and_fixed_entries():
    pc = _model(1)  # random PSDD with zero weights
    sp = SoftmaxParameters.from_circuit(pc)
    again = sp.circuit(sp.logits(pc))
    np.testing.assert_allclose(again.edge_logw, pc.edge_logw, atol=1e-12)
    np.testing.assert_allclose(again.params, pc.params, atol=1e-12)
    raw = np.concatenate([pc.edge_logw, pc.params])
    assert not np.any(sp.free & ~np.isfinite(raw))  # zero weights are never free
    moved = sp.circuit(sp.logits(pc) + 1.3 * np.arange(sp.num_parameters))
    moved_raw = np.concatenate([moved.edge_logw, moved.params])
    assert np.array_equal(np.isfinite(moved_raw), np.isfinite(raw))  # support kept
    assert moved.log_marginal(None)[0] == pytest.approx(pc.log_marginal(None)[0], abs=1e-12)


def test_maximum_likelihood_logits_give_the_closed_form_fit():
    pc = pcfair.load(CIRCUITS / "compas_clt.psdd")
    rng = np.random.default_rng(2)
    rows = rng.integers(0, 2, size=(500, pc.num_variables)).astype(np.int32)
    sp = SoftmaxParameters.from_circuit(pc)
    elem, leaf, _ = data_flows(pc, rows)
    counts = sp.statistics(np.concatenate([elem, leaf]), pseudocount=1.0)
    mle = sp.circuit(sp.maximum_likelihood(counts))
    closed = fit_parameters(pc, rows, pseudocount=1.0)
    np.testing.assert_allclose(mle.log_marginal(rows), closed.log_marginal(rows), atol=1e-10)
    # the weighted log-likelihood's gradient vanishes there and matches finite differences
    theta = sp.maximum_likelihood(counts) + rng.normal(0, 0.2, sp.num_parameters)
    value, grad = sp.weighted_log_likelihood(theta, counts)
    fd = np.array([(sp.weighted_log_likelihood(theta + H * e, counts)[0]
                    - sp.weighted_log_likelihood(theta - H * e, counts)[0]) / (2 * H)
                   for e in np.eye(len(theta))])
    np.testing.assert_allclose(grad, fd, atol=1e-4)
    # without pseudocounts it is the data log-likelihood (fixed entries have weight 1 here)
    raw_counts = sp.statistics(np.concatenate([elem, leaf]), pseudocount=0.0)
    value, _ = sp.weighted_log_likelihood(theta, raw_counts)
    assert value == pytest.approx(float(sp.circuit(theta).log_marginal(rows).sum()), rel=1e-12)
    _, at_mle = sp.weighted_log_likelihood(sp.maximum_likelihood(counts), counts)
    assert np.abs(at_mle).max() < 1e-9


def test_plans_depend_on_the_structure_only():
    pc = pcfair.load(CIRCUITS / "compas_clt.psdd")
    sp = SoftmaxParameters.from_circuit(pc)
    other = sp.circuit(sp.logits(pc) + 0.5)
    assert structure_key(other) == structure_key(pc)
    plan = GradientPlan.from_circuit(pc)
    plan.check(other)
    SoftmaxParameters.from_circuit(other, plan)
    with pytest.raises(pcfair.StructureError, match="structure differs"):
        plan.check(_model(2))


def test_examples():
    result = doctest.testmod(gradients_module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
