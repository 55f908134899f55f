"""Unit and algebra tests of ``pcfair.audits.structured_regression`` (spec T1-T9, T16).

The statistical-behaviour tests (T10-T15) are in ``test_structured_regression_statistics.py``;
the CLI, adapters, plot and notebook in ``test_structured_regression_api.py``.
"""

from __future__ import annotations

import itertools
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.stats import f as f_dist
from scipy.stats import f_oneway
from _case_studies import make_diabetes_like_population
from sklearn.metrics import roc_auc_score

from pcfair.audits.structured_regression import gof_test, group_metric, StructuredRegression
from pcfair.audits.structured_regression.baselines import (
    empirical_bayes,
    james_stein_bock,
    pooled_estimate,
)
from pcfair.audits.structured_regression.gof import nested_f_test
from pcfair.audits.structured_regression.variance import pooled_variance
from pcfair.audits.structured_regression import _kernels
from pcfair.audits.structured_regression.evaluation import prepare_evaluation
from pcfair.audits.structured_regression.features import FeatureSpace, Term, group_means
from pcfair.audits.structured_regression.fit import cv_splits, round_rand, select_alpha
from pcfair.audits.structured_regression.groups import build_group_index
from pcfair.audits.structured_regression.metrics import prepare_metric
from pcfair.audits.structured_regression.variance import bootstrap_variance, group_variances
from pcfair.errors import DataError, SpecError

SENS = ["race", "age", "gender"]
EXPL = ["number_inpatient", "number_outpatient", "number_emergency", "number_diagnoses", "chf"]


@pytest.fixture(scope="module")
def draw() -> pd.DataFrame:
    """One n=5000 evaluation set from the diabetes-like population, with a decision column."""
    pop = make_diabetes_like_population(20_000, random_state=0)
    rng = np.random.default_rng(5)
    d = pop.sample(5000, random_state=1).reset_index(drop=True)
    d["y_hat"] = (rng.random(len(d)) < 0.2 + 0.3 * (d["race"] == "white")).astype(int)
    return d


# --------------------------------------------------------------------------- T1, T2: limits
def test_t1_lambda_zero_gives_standard_estimates(draw):
    sr = StructuredRegression(SENS, explanatory=EXPL, outcome="readmitted", output="y_hat", lambda_grid=[0.0])
    est = sr.fit(draw, "sel").estimates_
    ok = est["status"] == "ok"
    assert ok.all()
    np.testing.assert_allclose(est.loc[ok, "structured"], est.loc[ok, "standard"], atol=1e-6, rtol=0)


def test_t1_tiny_lambda_pure_lasso_and_elastic_net(draw):
    lasso = StructuredRegression(
        SENS, outcome="readmitted", output="y_hat", lambda_grid=[1e-9], tol=1e-12, max_iter=200_000
    ).fit(draw, "sel")
    est = lasso.estimates_
    assert np.max(np.abs(est["structured"] - est["standard"])) < 1e-6
    enet = StructuredRegression(
        SENS, outcome="readmitted", output="y_hat", lambda_grid=[1e-6], l1_ratio=0.95, tol=1e-10, max_iter=100_000
    ).fit(draw, "sel")
    est = enet.estimates_
    assert np.max(np.abs(est["structured"] - est["standard"])) < 1e-3


@pytest.mark.parametrize("metric", ["sel", "fnr"])
def test_t2_huge_lambda_gives_pooled_estimate(draw, metric):
    sr = StructuredRegression(SENS, explanatory=EXPL, outcome="readmitted", output="y_hat", lambda_grid=[1e6])
    est = sr.fit(draw, metric).estimates_
    ok = est["status"] == "ok"
    pooled = np.sum(est.loc[ok, "n"] * est.loc[ok, "standard"]) / np.sum(est.loc[ok, "n"])
    np.testing.assert_allclose(est["structured"], pooled, atol=1e-8, rtol=0)
    assert sr.result_.selected_features == []
    assert sr.result_.pooled == pytest.approx(pooled, abs=1e-12)


def test_lambda_moves_estimates_from_standard_to_pooled(draw):
    """Distance to the standard estimates grows and distance to the pooled value shrinks with lambda."""
    d_std, d_pool = [], []
    for g in (0.0, 0.05, 0.5, 5.0, 1e4):
        sr = StructuredRegression(SENS, outcome=None, output="y_hat", lambda_grid=[g]).fit(draw, "sel")
        est = sr.estimates_
        d_std.append(np.abs(est["structured"] - est["standard"]).mean())
        d_pool.append(np.abs(est["structured"] - sr.result_.pooled).mean())
    assert d_std[0] < 1e-9 and d_pool[-1] < 1e-9
    assert all(a <= b + 1e-9 for a, b in zip(d_std, d_std[1:]))
    assert all(a >= b - 1e-9 for a, b in zip(d_pool, d_pool[1:]))


# --------------------------------------------------------------------------- T3: pooled variance
def _bernoulli_groups(sizes, p, seed):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "g": np.repeat(np.arange(len(sizes)), sizes),
            "h": 0,
            "y_hat": (rng.random(int(np.sum(sizes))) < p).astype(int),
        }
    )


@pytest.mark.parametrize("variance", ["pooled", "pooled_dof"])
def test_t3_pooled_variance_recovers_bernoulli_variance(variance):
    """sigma^2 recovers p(1-p) = 0.21 and sigma_a^2 * n_a is constant across groups.

    With B = 200 the bootstrap variance of the dominant n=1000 group has about 10% relative
    noise, so a single draw sits within 10% of 0.21 only about two times in three; the test
    checks the average over 20 independent data sets and bootstraps (within 5%) and that
    every draw is within 30%.
    """
    estimates = []
    for seed in range(20):
        df = _bernoulli_groups([5, 20, 100, 1000], 0.3, seed=seed)
        ev = prepare_evaluation(
            df, "sel", sensitive=["g", "h"], outcome=None, output="y_hat", variance=variance,
            n_boot_var=200, random_state=seed,
        )
        np.testing.assert_allclose(ev.sigma2_a * ev.n, ev.sigma2, rtol=1e-12)
        estimates.append(ev.sigma2)
    assert np.mean(estimates) == pytest.approx(0.21, rel=0.05)
    assert np.all(np.abs(np.array(estimates) / 0.21 - 1) < 0.30)


def test_pooled_variance_formulas_by_hand():
    n = np.array([1, 4, 10])
    v = np.array([0.0, 0.05, 0.02])
    assert pooled_variance(n, v) == pytest.approx((0 + 16 * 0.05 + 100 * 0.02) / 15)
    assert pooled_variance(n, v, dof=True) == pytest.approx((16 * 0.05 + 100 * 0.02) / (3 + 9))
    s2a, s2 = group_variances(n, v, "per_group")
    # zero bootstrap variance (single row) falls back to the pooled sigma^2 / n_a
    np.testing.assert_allclose(s2a, [s2 / 1, 0.05, 0.02])


def test_bootstrap_variance_skips_undefined_replicates():
    reps = np.array([[1.0, np.nan, 0.0], [3.0, np.nan, np.nan], [5.0, 2.0, np.nan]])
    out = bootstrap_variance(reps)
    assert out[0] == pytest.approx(4.0)
    assert np.isnan(out[1]) and np.isnan(out[2])


# --------------------------------------------------------------------------- T4: standard CIs
def check_t4(replications: int) -> None:
    """Eq. 7 with pooled variance covers ~95%; per-group percentile CIs under-cover small groups."""
    rng = np.random.default_rng(4)
    n_groups = 32
    shares = rng.dirichlet(np.full(n_groups, 0.35))
    sizes = np.maximum(1, np.round(shares * 5000)).astype(int)
    mu = rng.uniform(0.05, 0.6, n_groups)
    codes = np.repeat(np.arange(n_groups), sizes)
    cov_eq7, cov_pct_small = [], []
    small = sizes <= 10
    assert small.sum() >= 4
    for rep in range(replications):
        y = (rng.random(codes.size) < mu[codes]).astype(int)
        df = pd.DataFrame({"g": codes // 4, "h": codes % 4, "y_hat": y})
        sr = StructuredRegression(["g", "h"], outcome=None, output="y_hat", lambda_grid=[1.0], random_state=rep)
        sr.fit(df, "sel")
        ci = sr.standard_confint(0.95)
        pct = sr.standard_confint(0.95, method="percentile")
        ok = (ci["status"] == "ok").to_numpy()
        cover = ((ci["lower"] <= mu) & (mu <= ci["upper"])).to_numpy()
        cov_eq7.append(cover[ok].mean())
        cover_pct = ((pct["lower"] <= mu) & (mu <= pct["upper"])).to_numpy()
        cov_pct_small.append(cover_pct[small & ok].mean())
    assert 0.93 <= np.mean(cov_eq7) <= 0.97
    assert np.mean(cov_pct_small) < 0.85


def test_t4_standard_ci_coverage_and_percentile_undercoverage():
    check_t4(100)


@pytest.mark.slow
def test_t4_standard_ci_coverage_200_replications():
    check_t4(200)


# --------------------------------------------------------------------------- T5: JS and EB
TOY = pd.DataFrame({"n": [4, 10, 20, 50, 16], "standard": [0.9, 0.2, 0.5, 0.35, 0.6]})


def test_t5_james_stein_by_hand():
    n, z = TOY["n"].to_numpy(float), TOY["standard"].to_numpy()
    mu0 = (n * z).sum() / n.sum()
    ss = (n * (z - mu0) ** 2).sum()
    sigma2 = 0.5
    factor = 1 - (5 - 3) * sigma2 / ss
    assert 0 < factor < 1
    out = james_stein_bock(TOY, sigma2)
    np.testing.assert_allclose(out["james_stein"], mu0 + factor * (z - mu0), rtol=1e-12)
    assert out.attrs["shrinkage"] == pytest.approx(factor)
    # positive part: the numerator exceeds the denominator, so every group gets muhat0
    clipped = james_stein_bock(TOY, sigma2=ss)
    np.testing.assert_allclose(clipped["james_stein"], mu0, rtol=1e-12)
    np.testing.assert_allclose(pooled_estimate(TOY)["pooled"], mu0)


def test_t5_empirical_bayes_by_hand():
    n, z = TOY["n"].to_numpy(float), TOY["standard"].to_numpy()
    total = n.sum()
    mu0 = (n * z).sum() / total
    ss = (n * (z - mu0) ** 2).sum()
    sigma2 = 0.2
    tau2 = (ss - 4 * sigma2) / (total - (n**2).sum() / total)  # main-text denominator
    assert tau2 > 0
    s2a = sigma2 / n
    mu = (z / (tau2 + s2a)).sum() / (1 / (tau2 + s2a)).sum()
    expected = mu + (1 - s2a / (tau2 + s2a)) * (z - mu)
    out = empirical_bayes(TOY, sigma2)
    np.testing.assert_allclose(out["empirical_bayes"], expected, rtol=1e-12)
    np.testing.assert_allclose(out["eb_posterior_var"], tau2 * s2a / (tau2 + s2a), rtol=1e-12)
    assert out.attrs["tau2"] == pytest.approx(tau2)
    # the Eq. 13 typo (denominator 1 - sum w(1-w)) would give a different tau^2
    w = n / total
    typo = (ss - 4 * sigma2) / (1 - (w * (1 - w)).sum())
    assert abs(typo - tau2) > 1e-3


def test_t5_empirical_bayes_zero_tau_gives_common_mean():
    sigma2 = 10.0  # between-group sum of squares < (|A| - 1) sigma^2
    out = empirical_bayes(TOY, sigma2)
    mu0 = np.sum(TOY["n"] * TOY["standard"]) / TOY["n"].sum()
    assert out.attrs["tau2"] == 0.0
    np.testing.assert_allclose(out["empirical_bayes"], mu0, rtol=1e-12)


def test_baselines_give_undefined_groups_the_central_value():
    t = pd.DataFrame({"n": [10, 20, 0, 5, 30, 8], "standard": [0.1, 0.5, np.nan, np.nan, 0.3, 0.9]})
    js = james_stein_bock(t, 0.01)
    eb = empirical_bayes(t, 0.01)
    assert js["james_stein"].iloc[2] == pytest.approx(js.attrs["pooled"])
    assert js["james_stein"].iloc[3] == pytest.approx(js.attrs["pooled"])
    assert eb["empirical_bayes"].iloc[2] == pytest.approx(eb.attrs["mu"])
    assert np.isfinite(js["james_stein"]).all() and np.isfinite(eb["empirical_bayes"]).all()


@settings(max_examples=40, deadline=None)
@given(
    n=st.lists(st.integers(1, 200), min_size=4, max_size=12),
    seed=st.integers(0, 10_000),
    sigma2=st.floats(0.001, 1.0),
)
def test_shrinkage_estimates_lie_between_standard_and_center(n, seed, sigma2):
    rng = np.random.default_rng(seed)
    t = pd.DataFrame({"n": n, "standard": rng.random(len(n))})
    js = james_stein_bock(t, sigma2)
    eb = empirical_bayes(t, sigma2)
    for est, center in ((js["james_stein"], js.attrs["pooled"]), (eb["empirical_bayes"], eb.attrs["mu"])):
        lo = np.minimum(t["standard"], center) - 1e-12
        hi = np.maximum(t["standard"], center) + 1e-12
        assert ((est >= lo) & (est <= hi)).all()


# --------------------------------------------------------------------------- T6: undefined groups
def test_t6_undefined_fnr_group_gets_weight_zero_and_a_finite_estimate(draw):
    d = draw.copy()
    target = (d["race"] == "Hispanic") & (d["age"] == "60-79") & (d["gender"] == "male")
    d.loc[target, "readmitted"] = 0  # no Y=1 rows: FNR undefined
    sr = StructuredRegression(SENS, explanatory=EXPL, outcome="readmitted", output="y_hat", n_splits=3)
    est = sr.fit(d, "fnr").estimates_
    row = est.loc[("Hispanic", "60-79", "male")]
    assert row["status"] == "undefined" and row["n"] > 0
    assert np.isnan(row["standard"]) and np.isnan(row["standard_se"])
    assert np.isfinite(row["structured"])
    assert np.isfinite(est["structured"]).all()
    ev = sr.evaluation_
    g = list(est.index).index(("Hispanic", "60-79", "male"))
    assert not ev.defined[g]
    assert sr._sw[g] == 0.0
    # the estimate is the fitted linear model at the group's own features
    phi = sr._phi[g]
    assert row["structured"] == pytest.approx(sr.result_.intercept + phi @ sr.result_.coef.to_numpy())
    # standard intervals: NaN only there, flagged by status
    ci = sr.standard_confint()
    assert ci.loc[("Hispanic", "60-79", "male"), "status"] == "undefined"
    assert ci.loc[ci["status"] == "ok", ["lower", "upper"]].notna().all().all()


def test_t6_empty_group_gets_the_pooled_estimate(draw):
    cats = {"race": ["AfricanAmerican", "Hispanic", "white", "other", "Pacific"]}
    sr = StructuredRegression(SENS, explanatory=EXPL, outcome="readmitted", output="y_hat", categories=cats, n_splits=3)
    est = sr.fit(draw, "sel").estimates_
    empty = est["status"] == "empty"
    assert empty.sum() == 8 and (est.loc[empty, "n"] == 0).all()
    np.testing.assert_allclose(est.loc[empty, "structured"], sr.result_.pooled)
    ok = est["status"] == "ok"
    assert sr.result_.pooled == pytest.approx(
        np.sum(est.loc[ok, "n"] * est.loc[ok, "standard"]) / est.loc[ok, "n"].sum()
    )
    ci = sr.confint(0.9, B=20)
    assert ci.loc[empty, ["lower", "upper"]].isna().all().all()
    assert ci.loc[~empty, ["lower", "upper"]].notna().all().all()
    base = sr.baseline_estimates()
    assert np.isfinite(base[["pooled", "james_stein", "empirical_bayes", "structured"]].to_numpy()).all()


def test_metric_undefined_everywhere_is_an_error():
    df = pd.DataFrame({"a": [0, 1, 0, 1], "b": [0, 0, 1, 1], "y_true": [0, 0, 0, 0], "y_score": [1, 0, 1, 0]})
    with pytest.raises(DataError, match="undefined in every group"):
        StructuredRegression(["a", "b"], n_boot_var=5).fit(df, "fnr")


# --------------------------------------------------------------------------- T7: features
def test_t7_feature_counts_for_the_4x4x2_design(draw):
    ev = prepare_evaluation(draw, "sel", sensitive=SENS, outcome="readmitted", output="y_hat", explanatory=EXPL, n_boot_var=5)
    sr_terms = [Term((0, 1, 2))] + [Term((i,)) for i in range(3)]
    _, sens_names = ev.features.design(sr_terms, ev.groups.attribute_codes, ev.means)
    assert len(sens_names) == 32 + 4 + 4 + 2 == 42
    expl, expl_names = ev.features.design(ev.features.parse("expl"), ev.groups.attribute_codes, ev.means)
    assert expl.shape == (32, 7)
    assert expl_names[:2] == ["P[readmitted=0]", "P[readmitted=1]"]
    sr = StructuredRegression(SENS, explanatory=EXPL, outcome="readmitted", output="y_hat", lambda_grid=[1.0])
    assert len(sr.fit(draw, "sel").result_.coef) == 49


def test_t7_group_means_and_y_sens_columns_match_hand_computation(draw):
    ev = prepare_evaluation(draw, "sel", sensitive=SENS, outcome="readmitted", output="y_hat", explanatory=EXPL, n_boot_var=5)
    x, names = ev.features.design(ev.features.parse("expl+y*sens"), ev.groups.attribute_codes, ev.means)
    hand = draw.groupby(SENS, observed=False)[["readmitted", "number_diagnoses", "chf"]].mean()
    col = dict(zip(names, x.T))
    np.testing.assert_allclose(col["mean(number_diagnoses)"], hand["number_diagnoses"], rtol=1e-12)
    np.testing.assert_allclose(col["mean(chf)"], hand["chf"], rtol=1e-12)
    np.testing.assert_allclose(col["P[readmitted=1]"], hand["readmitted"], rtol=1e-12)
    np.testing.assert_allclose(col["P[readmitted=0]"], 1 - hand["readmitted"], rtol=1e-12)
    is_old = np.array([k[1] == "80-99" for k in hand.index])
    np.testing.assert_allclose(col["P[readmitted=1]*age=80-99"], hand["readmitted"] * is_old, rtol=1e-12)
    is_male = np.array([k[2] == "male" for k in hand.index])
    np.testing.assert_allclose(col["P[readmitted=1]*gender=male"], hand["readmitted"] * is_male, rtol=1e-12)
    assert sum(nm.startswith("P[readmitted=1]*") for nm in names) == 10


def test_feature_language_products_and_errors():
    df = pd.DataFrame({"a": [0, 1, 2, 0], "b": ["u", "v", "u", "v"], "x": [1.0, 2.0, 3.0, 4.0], "y": [0, 1, 1, 0]})
    gi = build_group_index(df, ["a", "b"])
    fs = FeatureSpace(gi, "y", (0, 1), ["x"])
    assert fs.parse("∅") == [] and fs.parse("") == []
    assert fs.parse("sens*sens") == [Term((0, 1))]
    assert fs.parse("x*b") == [Term((1,), "x")]
    _, names = fs.design(fs.parse("a*b"), gi.attribute_codes, np.zeros((gi.n_groups, 3)))
    assert names[:2] == ["a=0&b=u", "a=0&b=v"] and len(names) == 6
    with pytest.raises(SpecError, match="unknown feature 'c'"):
        fs.parse("a+c")
    with pytest.raises(SpecError, match="two mean features"):
        fs.parse("x*y")
    with pytest.raises(SpecError, match="product"):
        fs.parse("expl*a")


def test_group_means_of_empty_groups_are_nan():
    means, counts = group_means(np.array([0, 0, 2]), 3, np.array([[1.0], [3.0], [5.0]]))
    assert counts.tolist() == [2, 0, 1]
    assert means[0, 0] == 2.0 and np.isnan(means[1, 0]) and means[2, 0] == 5.0


# --------------------------------------------------------------------------- T8: CV splits
def test_t8_mc90_training_counts_are_within_one_of_ninety_percent():
    sizes = np.array([1, 2, 7, 25, 130, 1000])
    codes = np.repeat(np.arange(sizes.size), sizes)
    masks = cv_splits(codes, sizes.size, n_splits=10, random_state=11)
    assert len(masks) == 10
    for mask in masks:
        train = np.bincount(codes[mask], minlength=sizes.size)
        assert np.all(np.abs(train - 0.9 * sizes) < 1.0)
    again = cv_splits(codes, sizes.size, n_splits=10, random_state=11)
    assert all(np.array_equal(a, b) for a, b in zip(masks, again))
    other = cv_splits(codes, sizes.size, n_splits=10, random_state=12)
    assert not all(np.array_equal(a, b) for a, b in zip(masks, other))


def test_kfold_is_a_stratified_partition():
    codes = np.repeat(np.arange(4), [1, 3, 10, 57])
    masks = cv_splits(codes, 4, scheme="kfold", n_splits=5, random_state=0)
    test_count = np.sum([~m for m in masks], axis=0)
    assert np.all(test_count == 1)
    for m in masks:
        tests = np.bincount(codes[~m], minlength=4)
        assert tests[3] in (11, 12)


def test_round_rand_is_unbiased():
    draws = round_rand(np.full(20_000, 2.3), np.random.default_rng(0))
    assert set(np.unique(draws)) == {2, 3}
    assert draws.mean() == pytest.approx(2.3, abs=0.02)


def test_t8_fit_is_deterministic_and_handles_singleton_groups():
    rng = np.random.default_rng(8)
    sizes = [1, 1, 2, 40, 80, 200]
    codes = np.repeat(np.arange(6), sizes)
    df = pd.DataFrame({"a": codes // 3, "b": codes % 3, "y_score": (rng.random(codes.size) < 0.4).astype(int)})
    fits = [
        StructuredRegression(["a", "b"], outcome=None, random_state=7).fit(df, "sel") for _ in range(2)
    ]
    pd.testing.assert_frame_equal(fits[0].estimates_, fits[1].estimates_)
    np.testing.assert_array_equal(fits[0].result_.cv_loss, fits[1].result_.cv_loss)
    assert np.isfinite(fits[0].estimates_["structured"]).all()
    assert fits[0].result_.cv_loss.shape == (10, 12)


def test_select_rules():
    alphas = np.array([4.0, 2.0, 1.0, 0.5])
    losses = np.array([[5.0, 2.05, 2.0, 2.6], [5.2, 2.1, 2.2, 2.4], [5.1, 2.1, 1.9, 2.5]])
    assert select_alpha(alphas, losses, "min") == 2
    assert select_alpha(alphas, losses, "1se") == 1
    with pytest.raises(SpecError, match="unknown select"):
        select_alpha(alphas, losses, "max")


def test_1se_never_chooses_a_smaller_penalty_than_min(draw):
    kw = dict(explanatory=EXPL, outcome="readmitted", output="y_hat", n_splits=5)
    a_min = StructuredRegression(SENS, select="min", **kw).fit(draw, "sel").result_.alpha
    a_1se = StructuredRegression(SENS, select="1se", **kw).fit(draw, "sel").result_.alpha
    assert a_1se >= a_min


# --------------------------------------------------------------------------- T9: metrics
@pytest.fixture(scope="module")
def scored() -> pd.DataFrame:
    rng = np.random.default_rng(9)
    n = 3000
    df = pd.DataFrame({"a": rng.integers(0, 3, n), "b": rng.integers(0, 2, n), "y": rng.integers(0, 2, n)})
    df["score"] = np.clip(0.3 * df["y"] + rng.random(n) * 0.7, 0, 1)  # continuous: tie-free
    return df


def test_t9_rate_metrics_match_numpy_counts(scored):
    r = 0.5
    pi = (scored["score"] >= r).astype(int)
    y = scored["y"]
    expected = {
        "acc": lambda g: np.mean(pi[g] == y[g]),
        "sel": lambda g: np.mean(pi[g]),
        "tpr": lambda g: np.sum(pi[g] & y[g]) / np.sum(y[g]),
        "fnr": lambda g: np.sum((1 - pi[g]) & y[g]) / np.sum(y[g]),
        "fpr": lambda g: np.sum(pi[g] & (1 - y[g])) / np.sum(1 - y[g]),
        "ppv": lambda g: np.sum(pi[g] & y[g]) / np.sum(pi[g]),
    }
    for name, fn in expected.items():
        table = group_metric(scored, ["a", "b"], name, outcome="y", output="score", threshold=r)
        for (a, b), value in table["standard"].items():
            g = ((scored["a"] == a) & (scored["b"] == b)).to_numpy()
            assert value == pytest.approx(fn(g), abs=1e-12), name


def test_t9_auc_matches_sklearn_on_tie_free_scores(scored):
    table = group_metric(scored, ["a", "b"], "auc", outcome="y", output="score")
    for (a, b), value in table["standard"].items():
        g = (scored["a"] == a) & (scored["b"] == b)
        assert value == pytest.approx(roc_auc_score(scored.loc[g, "y"], scored.loc[g, "score"]), abs=1e-12)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    scores=st.lists(st.integers(0, 5), min_size=2, max_size=40),
    labels_seed=st.integers(0, 1000),
)
def test_auc_kernel_matches_sklearn_with_ties(scores, labels_seed):
    """Ties count 1/2, as in sklearn (the documented convention)."""
    y = np.random.default_rng(labels_seed).integers(0, 2, len(scores))
    s = np.asarray(scores, dtype=float)
    value = _kernels.auc_of(s, y)
    if y.min() == y.max():
        assert np.isnan(value)
    else:
        assert value == pytest.approx(roc_auc_score(y, s), abs=1e-12)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(5, 60))
def test_bootstrap_replicates_equal_the_metric_of_the_resample(seed, n):
    """The vectorised stratified bootstrap computes exactly the metric of each resample."""
    rng = np.random.default_rng(seed)
    codes = np.sort(rng.integers(0, 3, n))
    df = pd.DataFrame({"y": rng.integers(0, 2, n), "p": rng.integers(0, 2, n), "s": rng.random(n)})
    for name, out in (("ppv", "p"), ("auc", "s")):
        m = prepare_metric(name, df, outcome="y", output=out)
        reps = m.bootstrap(codes, 3, 4, np.random.default_rng(seed))
        rng2 = np.random.default_rng(seed)
        sizes = np.bincount(codes, minlength=3)
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        idx = starts[codes] + np.minimum((rng2.random((4, n)) * sizes[codes]).astype(int), sizes[codes] - 1)
        for b in range(4):
            direct = m.values(codes, 3, rows=idx[b])
            np.testing.assert_allclose(reps[b], direct, equal_nan=True, atol=1e-12)


def test_callable_metric_and_column_metric(scored):
    def mean_score(g: pd.DataFrame) -> float:
        return float(g["score"].mean())

    a = group_metric(scored, ["a", "b"], mean_score, outcome="y", output="score")["standard"]
    b = group_metric(scored, ["a", "b"], "score", outcome="y", output=None)["standard"]
    c = scored.groupby(["a", "b"])["score"].mean()
    np.testing.assert_allclose(a, c, rtol=1e-12)
    np.testing.assert_allclose(b, c, rtol=1e-12)
    sr = StructuredRegression(["a", "b"], outcome="y", output="score", n_boot_var=10, n_splits=3).fit(scored, mean_score)
    assert np.isfinite(sr.estimates_["structured"]).all()


def test_metric_errors_name_the_problem(scored):
    with pytest.raises(DataError, match="'score' has value .* not a 0/1 decision; pass threshold"):
        group_metric(scored, ["a", "b"], "acc", outcome="y", output="score")
    with pytest.raises(SpecError, match="unknown metric 'f1'"):
        group_metric(scored, ["a", "b"], "f1", outcome="y", output="score")
    with pytest.raises(DataError, match="sensitive column 'zz'"):
        group_metric(scored, ["a", "zz"], "sel", outcome="y", output="score", threshold=0.5)
    bad = scored.assign(y=scored["y"] + 1)
    with pytest.raises(DataError, match="needs a 0/1 outcome, but 'y' has value 2"):
        group_metric(bad, ["a", "b"], "fnr", outcome="y", output="score", threshold=0.5)
    with pytest.raises(DataError, match="outcome column 'label'"):
        StructuredRegression(["a", "b"], outcome="label", output="score", threshold=0.5).fit(scored, "acc")


def test_label_accuracy_for_multiclass_outputs():
    df = pd.DataFrame({"a": [0, 0, 1, 1], "b": [0, 0, 0, 0], "y": ["x", "y", "z", "z"], "p": ["x", "x", "z", "y"]})
    assert group_metric(df, ["a", "b"], "accuracy", outcome="y", output="p")["standard"].tolist() == [0.5, 0.5]


# --------------------------------------------------------------------------- T16: F-test numerics
def _direct_f(x0, x1, y, w):
    """Independent oracle: orthogonal projections from SVD bases of the weighted designs."""
    rw = np.sqrt(w)

    def rss_rank(x):
        a = np.column_stack([np.ones(len(y)), x]) * rw[:, None]
        u, s, _ = np.linalg.svd(a, full_matrices=False)
        r = int(np.sum(s > s[0] * 1e-10))
        q = u[:, :r]
        b = y * rw
        resid = b - q @ (q.T @ b)
        return resid @ resid, r

    rss0, r0 = rss_rank(x0)
    rss1, r1 = rss_rank(x1)
    df1, df2 = r1 - r0, len(y) - r1
    stat = ((rss0 - rss1) / df1) / (rss1 / df2)
    return stat, df1, df2, f_dist.sf(stat, df1, df2)


def test_t16_f_statistic_matches_a_direct_computation(draw):
    ev = prepare_evaluation(draw, "sel", sensitive=SENS, outcome="readmitted", output="y_hat", explanatory=EXPL)
    attr = ev.groups.attribute_codes
    x0, _ = ev.features.design(ev.features.parse("expl"), attr, ev.means)
    x1, _ = ev.features.design(ev.features.parse("expl+sens"), attr, ev.means)  # collinear one-hot blocks
    w = 1.0 / ev.sigma2_a
    res = gof_test(draw, "sel", "expl", "expl+sens", sensitive=SENS, outcome="readmitted", output="y_hat", explanatory=EXPL)
    stat, df1, df2, p = _direct_f(x0, x1, ev.z, w)
    assert (res.df1, res.df2) == (df1, df2) == (7, 32 - (1 + 6 + 7))
    assert res.F == pytest.approx(stat, rel=1e-10, abs=1e-10)
    assert res.p == pytest.approx(p, rel=1e-10, abs=1e-10)


def test_t16_individual_unit_equals_one_way_anova():
    rng = np.random.default_rng(16)
    df = pd.DataFrame({"a": rng.integers(0, 4, 400), "b": rng.integers(0, 2, 400)})
    df["wer"] = rng.normal(0.2 + 0.03 * df["a"], 0.1)
    res = gof_test(df, "wer", "∅", "a", sensitive=["a", "b"], outcome=None, output=None, unit="individual")
    ref = f_oneway(*[df.loc[df["a"] == v, "wer"] for v in range(4)])
    assert res.F == pytest.approx(ref.statistic, rel=1e-10)
    assert res.p == pytest.approx(ref.pvalue, rel=1e-10)
    assert (res.df1, res.df2, res.n_units) == (3, 396, 400)


def test_cluster_level_f_test_averages_clusters():
    rng = np.random.default_rng(17)
    speakers = np.repeat(np.arange(40), 10)
    a = speakers % 2
    b = (speakers // 2) % 2
    wer = rng.normal(0.2 + 0.05 * a, 0.05, speakers.size) + rng.normal(0, 0.05, 40)[speakers]
    df = pd.DataFrame({"a": a, "b": b, "speaker": speakers, "wer": wer})
    res = gof_test(df, "wer", "∅", "a+b", sensitive=["a", "b"], outcome=None, output=None, unit="individual", cluster="speaker")
    per = df.groupby("speaker").agg(a=("a", "first"), b=("b", "first"), wer=("wer", "mean"))
    stat, df1, df2, p = _direct_f(
        np.zeros((40, 0)), np.column_stack([per["a"], per["b"]]).astype(float), per["wer"].to_numpy(), np.ones(40)
    )
    assert (res.n_units, res.df1, res.df2) == (40, df1, df2)
    assert res.F == pytest.approx(stat, rel=1e-10)
    with pytest.raises(DataError, match="spans several sensitive groups"):
        gof_test(df.assign(speaker=0), "wer", "∅", "a", sensitive=["a", "b"], outcome=None, output=None,
                 unit="individual", cluster="speaker")


def test_f_test_rejects_non_nested_and_saturated_models(draw):
    ev_kw = dict(sensitive=SENS, outcome="readmitted", output="y_hat", explanatory=EXPL)
    with pytest.raises(SpecError, match="not nested"):
        gof_test(draw, "sel", "age", "race", **ev_kw)
    with pytest.raises(DataError, match="no residual degrees of freedom"):
        gof_test(draw, "sel", "sens", "identity", **ev_kw)
    with pytest.raises(SpecError, match="adds nothing"):
        gof_test(draw, "sel", "age", "age", **ev_kw)
    with pytest.raises(DataError, match="no individual-level form"):
        gof_test(draw, "auc", "∅", "age", sensitive=SENS, outcome="readmitted", output="risk_score", unit="individual")


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), scale=st.floats(1e-3, 1e3))
def test_f_test_is_invariant_to_weight_scale(seed, scale):
    rng = np.random.default_rng(seed)
    x1 = rng.random((20, 3))
    y = rng.random(20)
    w = rng.random(20) + 0.1
    a = nested_f_test(x1[:, :1], x1, y, w)
    b = nested_f_test(x1[:, :1], x1, y, w * scale)
    assert a[0] == pytest.approx(b[0], rel=1e-8)
    assert 0.0 <= a[3] <= 1.0


# --------------------------------------------------------------------------- options and state
def test_variance_options_change_weights_not_saturation(draw):
    for variance in ("pooled", "pooled_dof", "per_group"):
        sr = StructuredRegression(SENS, outcome=None, output="y_hat", variance=variance, lambda_grid=[0.0])
        est = sr.fit(draw, "sel").estimates_
        np.testing.assert_allclose(est["structured"], est["standard"], atol=1e-6)
    with pytest.raises(SpecError, match="unknown variance"):
        StructuredRegression(SENS, outcome=None, output="y_hat", variance="robust").fit(draw, "sel")


def test_eq5_lambda_mapping_for_pooled_variance(draw):
    sr = StructuredRegression(SENS, outcome=None, output="y_hat", lambda_grid=[0.5]).fit(draw, "sel")
    est, res = sr.estimates_, sr.result_
    n = est["n"].to_numpy(float)
    sw = n / n.mean()
    assert res.lambda_ == pytest.approx(2 * res.alpha * n.mean() * sw.sum() / res.sigma2, rel=1e-10)


def test_clip_option_and_not_fitted_error(draw):
    sr = StructuredRegression(SENS, outcome=None, output="y_hat", clip=(0.25, 0.3), lambda_grid=[0.01])
    with pytest.raises(AttributeError, match="not fitted"):
        sr.confint()
    est = sr.fit(draw, "sel").estimates_
    assert est["structured"].between(0.25, 0.3).all()
    with pytest.raises(SpecError, match="clip"):
        StructuredRegression(SENS, clip=(1, 0)).fit(draw, "sel")


def test_interactions_enter_the_design(draw):
    sr = StructuredRegression(SENS, outcome="readmitted", output="y_hat", interactions="race*age+y*gender", lambda_grid=[1.0])
    names = sr.fit(draw, "sel").result_.coef.index
    assert "race=white&age=40-59" in names and "P[readmitted=1]*gender=male" in names
    assert len(names) == 42 + 2 + 16 + 2


def test_fit_warns_nothing_on_clean_data(draw):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        StructuredRegression(SENS, explanatory=EXPL, outcome="readmitted", output="y_hat", n_splits=3).fit(draw, "sel")


def test_group_index_orders_product_and_rejects_unknown_values():
    df = pd.DataFrame({"r": ["b", "a", "b"], "s": [2, 1, 1]})
    gi = build_group_index(df, ["r", "s"])
    assert list(gi.index) == list(itertools.product(["a", "b"], [1, 2]))
    assert gi.row_codes(df).tolist() == [3, 0, 2]
    with pytest.raises(DataError, match="value 'c' outside its levels"):
        build_group_index(df, ["r", "s"], categories={"r": ["a", "b"]}).row_codes(pd.DataFrame({"r": ["c"], "s": [1]}))
    with pytest.raises(DataError, match="missing values"):
        build_group_index(pd.DataFrame({"r": ["a", None]}), ["r"])
