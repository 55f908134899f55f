"""Tests of the planted-discrimination generator: exact truth by enumeration vs Monte Carlo."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcfair.datasets import Dataset, PlantedTruth, make_planted
from pcfair.errors import DataError, VariableError


def _empirical_delta(frame, x, y):
    in_y = np.ones(len(frame), dtype=bool)
    for name, value in y.items():
        in_y &= frame[name].to_numpy() == value
    in_xy = in_y.copy()
    for name, value in x.items():
        in_xy &= frame[name].to_numpy() == value
    d = frame["D"].to_numpy()
    return d[in_xy].mean() - d[in_y].mean(), int(in_xy.sum()), int(in_y.sum())


def test_returns_dataset_and_truth():
    data, truth = make_planted(500, random_state=0)
    assert isinstance(data, Dataset) and isinstance(truth, PlantedTruth)
    assert list(data.frame.columns) == ["S1", "S2", "N1", "N2", "N3", "N4", "D"]
    assert data.target == "D" and data.favorable == 1 and data.sensitive == ["S1", "S2"]
    assert (data.frame.dtypes == np.int8).all()
    assert data.source == "synthetic"
    assert set(truth.x) == {"S1"} and set(truth.y) == {"N1"}
    assert truth.favorable == 1


@pytest.mark.parametrize("effect", [-0.3, -0.05, 0.0, 0.1, 0.25])
def test_exact_delta_equals_requested_effect(effect):
    _, truth = make_planted(0, effect=effect, random_state=7)
    assert truth.delta == pytest.approx(effect, abs=1e-12)
    assert truth.p_d_given_xy - truth.p_d_given_y == pytest.approx(truth.delta, abs=1e-15)
    # Enumeration agrees with the closed form c * (1 - P(v)).
    p_v = truth.marginals["S1"][truth.x["S1"]]
    assert truth.shift * (1 - p_v) == pytest.approx(effect, abs=1e-12)
    assert truth.delta_of(truth.x, truth.y) == pytest.approx(effect, abs=1e-12)


def test_planted_pattern_is_the_largest_by_brute_force():
    _, truth = make_planted(
        0, n_features=5, n_sensitive=2, effect=0.2, context_size=2, random_state=3
    )
    assert truth.max_abs_delta() == pytest.approx(0.2, abs=1e-12)
    _, fair = make_planted(0, n_features=5, effect=0.0, random_state=3)
    assert fair.max_abs_delta() < 1e-12


@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n_sensitive=st.integers(1, 2),
    n_nonsensitive=st.integers(0, 2),
    arity=st.integers(2, 3),
    effect=st.floats(-0.3, 0.3),
    data=st.data(),
)
def test_max_abs_delta_property(seed, n_sensitive, n_nonsensitive, arity, effect, data):
    context = data.draw(st.integers(0, n_nonsensitive))
    _, truth = make_planted(
        0,
        n_features=n_sensitive + n_nonsensitive,
        n_sensitive=n_sensitive,
        effect=effect,
        context_size=context,
        n_categories=arity,
        random_state=seed,
    )
    assert truth.delta == pytest.approx(effect, abs=1e-12)
    assert truth.max_abs_delta() == pytest.approx(abs(effect), abs=1e-12)


def test_probabilities_are_consistent():
    _, truth = make_planted(
        0, n_features=4, n_sensitive=2, n_categories=[3, 2, 2, 4], random_state=11
    )
    assert truth.probability({}) == pytest.approx(1.0, abs=1e-12)
    for name, arity in truth.arities.items():
        total = sum(truth.probability({name: v}) for v in range(arity))
        assert total == pytest.approx(1.0, abs=1e-12)
        np.testing.assert_allclose(
            [truth.probability({name: v}) for v in range(arity)], truth.marginals[name], atol=1e-12
        )
    # Law of total probability for the decision, over N1.
    p_d = truth.conditional({})
    mix = sum(truth.probability({"N1": v}) * truth.conditional({"N1": v}) for v in range(2))
    assert mix == pytest.approx(p_d, abs=1e-12)
    # S2 is pure noise: conditioning on it changes nothing.
    for v in range(2):
        assert truth.conditional({"S2": v, **truth.y}) == pytest.approx(
            truth.conditional(truth.y), abs=1e-12
        )


def test_decision_probability_matches_full_conditionals():
    data, truth = make_planted(50, n_features=4, random_state=5)
    p = truth.decision_probability(data.frame)
    for i in range(10):
        row = {c: int(data.frame[c].iloc[i]) for c in ["S1", "S2", "N1", "N2"]}
        assert p[i] == pytest.approx(truth.conditional(row), abs=1e-12)
    assert np.all((p >= 0.02 - 1e-12) & (p <= 0.98 + 1e-12))


def test_monte_carlo_matches_exact_truth():
    data, truth = make_planted(200_000, effect=-0.25, random_state=2024)
    frame = data.frame
    delta_hat, n_xy, n_y = _empirical_delta(frame, truth.x, truth.y)
    se = np.sqrt(
        truth.p_d_given_xy * (1 - truth.p_d_given_xy) / n_xy
        + truth.p_d_given_y * (1 - truth.p_d_given_y) / n_y
    )
    assert abs(delta_hat - truth.delta) < 5 * se  # se is about 0.003 here
    assert n_xy / len(frame) == pytest.approx(truth.p_xy, abs=5 * np.sqrt(truth.p_xy / len(frame)))
    for name in truth.sensitive + truth.nonsensitive:
        freq = np.bincount(frame[name], minlength=truth.arities[name]) / len(frame)
        np.testing.assert_allclose(freq, truth.marginals[name], atol=0.005)
    # Cell-wise decision rates over (S1, N1) against the exact conditionals.
    for s1, n1 in itertools.product(range(2), range(2)):
        cell = (frame["S1"] == s1) & (frame["N1"] == n1)
        exact = truth.conditional({"S1": s1, "N1": n1})
        se_cell = np.sqrt(exact * (1 - exact) / cell.sum())
        assert abs(frame.loc[cell, "D"].mean() - exact) < 5 * se_cell
    # A pattern without S1 has no discrimination.
    delta_noise, _, _ = _empirical_delta(frame, {"S2": 0}, truth.y)
    assert truth.delta_of({"S2": 0}, truth.y) == pytest.approx(0.0, abs=1e-12)
    assert abs(delta_noise) < 0.02


def test_reproducible_and_generator_accepted():
    a, ta = make_planted(300, random_state=9)
    b, tb = make_planted(300, random_state=9)
    assert a.frame.equals(b.frame) and ta.delta == tb.delta
    c, _ = make_planted(300, random_state=np.random.default_rng(9))
    assert c.frame.shape == a.frame.shape
    extra = ta.sample(20, random_state=1)
    assert extra.equals(ta.sample(20, random_state=1))
    assert list(extra.columns) == list(a.frame.columns)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"effect": 0.95}, "largest feasible"),
        ({"effect": 1.0}, "strictly between -1 and 1"),
        ({"n_sensitive": 0}, "n_sensitive must be between 1"),
        ({"n_features": 3, "n_sensitive": 3, "context_size": 1}, "context_size must be between 0"),
        ({"n_categories": 1}, "at least 2 categories"),
        ({"n_categories": [2, 2]}, "expected n_features=6"),
        ({"n_features": 25, "n_sensitive": 1}, "parent states"),
    ],
)
def test_make_planted_errors(kwargs, match):
    with pytest.raises(DataError, match=match):
        make_planted(10, **kwargs)


def test_make_planted_refuses_a_bad_random_state():
    from pcfair.errors import OptionError

    with pytest.raises(OptionError, match="random_state must be"):
        make_planted(10, random_state="seed")


def test_truth_query_errors():
    _, truth = make_planted(0, random_state=0)
    with pytest.raises(VariableError, match="unknown variable 'Z'"):
        truth.probability({"Z": 0})
    with pytest.raises(VariableError, match="value 2 of 'S1' is not one of 0..1"):
        truth.conditional({"S1": 2})
    with pytest.raises(VariableError, match="only hold sensitive features"):
        truth.delta_of({"N1": 0}, {})
    with pytest.raises(VariableError, match="at least one sensitive"):
        truth.delta_of({}, {})
    with pytest.raises(VariableError, match=r"\['S1'\] appear in both"):
        truth.delta_of({"S1": 0}, {"S1": 1})
    with pytest.raises(DataError, match="exceed max_patterns=10"):
        truth.max_abs_delta(max_patterns=10)


@pytest.mark.slow
def test_monte_carlo_study_many_seeds():
    """Over 40 seeds, the planted Δ is recovered within 4 standard errors every time."""
    z_scores = []
    for seed in range(40):
        effect = np.random.default_rng(seed).uniform(-0.3, 0.3)
        data, truth = make_planted(
            100_000,
            effect=effect,
            context_size=seed % 3,
            n_categories=2 + seed % 2,
            random_state=seed,
        )
        delta_hat, n_xy, n_y = _empirical_delta(data.frame, truth.x, truth.y)
        se = np.sqrt(
            truth.p_d_given_xy * (1 - truth.p_d_given_xy) / n_xy
            + truth.p_d_given_y * (1 - truth.p_d_given_y) / n_y
        )
        z_scores.append((delta_hat - truth.delta) / se)
    z = np.array(z_scores)
    assert np.all(np.abs(z) < 4)
    assert abs(z.mean()) < 4 / np.sqrt(len(z))
