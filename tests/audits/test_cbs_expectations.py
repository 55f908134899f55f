"""Tests of ``pcfair.audits.cbs.expectations`` (Î by propensity re-weighting; spec test 11)
and of the weighted logistic regression behind it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from pcfair.audits.cbs import CBSOptionError
from pcfair.audits.cbs.expectations import estimate_expectations
from pcfair.audits.cbs._logistic import fit_logistic
from pcfair.audits.cbs.expectations import one_hot
from pcfair.errors import DataError


@pytest.fixture(scope="module")
def cells():
    """One categorical covariate (4 cells), protected share varying by cell, binary C."""
    rng = np.random.default_rng(7)
    n = 4000
    x = rng.integers(0, 4, n)
    a = rng.random(n) < np.array([0.2, 0.4, 0.6, 0.3])[x]
    c = (rng.random(n) < 0.5).astype(int)
    base = np.array([[0.2, 0.5, 0.3, 0.6], [0.4, 0.7, 0.5, 0.8]])  # [c, x]
    event = (rng.random(n) < base[c, x]).astype(int)
    p = np.clip(base[c, x] + rng.normal(0, 0.1, n), 0.01, 0.99)
    return pd.DataFrame({"x": x}), a, c, event, p


def _cell_means(values, x, c, a, mask=None):
    keep = ~a if mask is None else (~a & mask)
    df = pd.DataFrame({"x": x[keep], "c": c[keep], "v": values[keep]})
    return df.groupby(["c", "x"])["v"].mean()


def test_saturated_model_reproduces_nonprotected_cell_means(cells):
    X, a, c, event, _ = cells
    ex = estimate_expectations(X, a, event, c, C=1e10, interactions=True)
    means = _cell_means(event, X.x.to_numpy(), c, a)
    rows = ex.rows
    assert np.array_equal(rows, np.flatnonzero(a))
    want = means.loc[list(zip(c[rows], X.x.to_numpy()[rows], strict=True))].to_numpy()
    np.testing.assert_allclose(ex.expected, want, atol=1e-6)


def test_duplicate_records_reproduce_mean_prediction_per_cell(cells):
    X, a, c, _, p = cells
    ex = estimate_expectations(X, a, p, c, event_type="probability", C=1e10, interactions=True)
    means = _cell_means(p, X.x.to_numpy(), c, a)
    rows = ex.rows
    want = means.loc[list(zip(c[rows], X.x.to_numpy()[rows], strict=True))].to_numpy()
    np.testing.assert_allclose(ex.expected, want, atol=1e-6)
    assert np.all((ex.expected > 0) & (ex.expected < 1))


def test_value_filter_applies_after_the_propensity_fit(cells):
    X, a, c, event, _ = cells
    full = estimate_expectations(X, a, event, c, C=1e10)
    filt = estimate_expectations(X, a, event, c, condition_value=1, C=1e10)
    # the propensity model saw every row, so it is the same with and without the filter
    np.testing.assert_allclose(filt.propensity, full.propensity)
    # saturated propensity: the share of protected rows per cell, from all rows (both C values)
    share = pd.Series(a).groupby(X.x.to_numpy()).mean().to_numpy()
    np.testing.assert_allclose(filt.propensity, share[X.x.to_numpy()], atol=1e-6)
    assert np.array_equal(filt.rows, np.flatnonzero(a & (c == 1)))
    assert np.array_equal(filt.keep, c == 1)
    means = _cell_means(event, X.x.to_numpy(), c, a, mask=(c == 1))
    want = means.loc[1].loc[X.x.to_numpy()[filt.rows]].to_numpy()
    np.testing.assert_allclose(filt.expected, want, atol=1e-6)


def test_propensity_odds_reweight_toward_the_protected_class():
    """Two covariates; Î is a weighted average whose weights follow Pr(A=1|X)/Pr(A=0|X)."""
    rng = np.random.default_rng(1)
    n = 6000
    X = pd.DataFrame({"u": rng.integers(0, 2, n), "v": rng.integers(0, 2, n)})
    a = rng.random(n) < np.where(X.u == 1, 0.8, 0.2)
    event = (rng.random(n) < np.where(X.u == 1, 0.7, 0.3)).astype(int)
    ex = estimate_expectations(X, a, event)
    w = ex.weights[~a]
    assert w[X.u.to_numpy()[~a] == 1].mean() > 10 * w[X.u.to_numpy()[~a] == 0].mean()
    # event depends on u only: Î tracks the non-protected rate of the protected row's u
    u = X.u.to_numpy()
    for val in (0, 1):
        rate = event[~a & (u == val)].mean()
        assert ex.expected[u[ex.rows] == val].mean() == pytest.approx(rate, abs=0.005)
    assert ex.expected[u[ex.rows] == 1].mean() > ex.expected[u[ex.rows] == 0].mean() + 0.25


def test_continuous_condition_enters_as_logit():
    rng = np.random.default_rng(2)
    n = 5000
    X = pd.DataFrame({"g": rng.integers(0, 3, n)})
    a = rng.random(n) < 0.4
    p = rng.uniform(0.05, 0.95, n)
    y = (rng.random(n) < p).astype(int)  # calibrated: logit E[Y|P] = logit P
    ex = estimate_expectations(X, a, y, p, condition_type="continuous", C=1e6)
    np.testing.assert_allclose(ex.expected, p[ex.rows], atol=0.05)


def test_weighted_logistic_matches_scikit_learn():
    rng = np.random.default_rng(0)
    X = (rng.random((300, 6)) < 0.4).astype(float)
    y = (rng.random(300) < 1 / (1 + np.exp(-(X @ rng.normal(0, 1, 6) - 0.5)))).astype(int)
    w = rng.uniform(0.2, 3.0, 300)
    for C in (0.1, 1.0, 100.0):
        coef, b = fit_logistic(X, y, w, C)
        ref = LogisticRegression(C=C, tol=1e-12, max_iter=10000).fit(X, y, sample_weight=w)
        np.testing.assert_allclose(coef, ref.coef_.ravel(), atol=1e-5)
        assert b == pytest.approx(ref.intercept_[0], abs=1e-5)


def test_custom_estimator_and_propensity_fitter(cells):
    from sklearn.ensemble import RandomForestClassifier

    X, a, c, event, _ = cells

    def constant_propensity(covariates, protected):
        return np.full(len(covariates), protected.mean())

    ex = estimate_expectations(
        X, a, event, c, propensity=constant_propensity,
        estimator=RandomForestClassifier(n_estimators=20, min_samples_leaf=20, random_state=0),
    )
    assert ex.propensity_model == "constant_propensity"
    np.testing.assert_allclose(ex.weights, a.mean() / (1 - a.mean()))
    means = _cell_means(event, X.x.to_numpy(), c, a)
    want = means.loc[list(zip(c[ex.rows], X.x.to_numpy()[ex.rows], strict=True))].to_numpy()
    np.testing.assert_allclose(ex.expected, want, atol=0.05)


def test_one_hot_blocks():
    out = one_hot(np.array([[2, 0], [0, 1]]), [3, 2])
    assert out.tolist() == [[0, 0, 1, 1, 0], [1, 0, 0, 0, 1]]


def test_expectation_input_errors(cells):
    X, a, c, event, p = cells
    with pytest.raises(DataError, match="some but not all"):
        estimate_expectations(X, np.zeros(len(X), bool), event)
    with pytest.raises(DataError, match="protected has shape"):
        estimate_expectations(X, a[:10], event)
    with pytest.raises(DataError, match="binary event"):
        estimate_expectations(X, a, p)
    with pytest.raises(CBSOptionError, match="condition_value"):
        estimate_expectations(X, a, event, p, condition_type="continuous", condition_value=1)
    with pytest.raises(DataError, match="binary condition"):
        estimate_expectations(X, a, event, p)
    with pytest.raises(CBSOptionError, match="event_type='count'"):
        estimate_expectations(X, a, event, event_type="count")
    with pytest.raises(DataError, match="no non-protected record is left"):
        estimate_expectations(X, a, event, np.where(a, 1, 0), condition_value=1)
    with pytest.raises(DataError, match="propensity fitter returned shape"):
        estimate_expectations(X, a, event, propensity=lambda cov, prot: np.ones(3))
