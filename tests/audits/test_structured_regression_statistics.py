"""Statistical behaviour of structured regression on semi-synthetic data (spec T10-T15).

The paper's ground truth (the Diabetes 130-US data) is not shipped, so the population is
:func:`make_diabetes_like_population` (75k rows, race x age x gender with diabetes-like skewed
shares: in an n = 5000 draw about 7 of the 32 groups have fewer than 10 rows and 14 have at
most 25). Each acceptance property runs in the default suite on fewer draws with fixed seeds;
the ``slow`` versions use the spec's draw counts.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd
import pytest

from _case_studies import add_semi_synthetic_output, make_diabetes_like_population

from pcfair.audits.structured_regression import (
    stratified_draw,
    StructuredRegression,
    true_group_metric,
)
from pcfair.audits.structured_regression.evaluation import prepare_evaluation
from pcfair.audits.structured_regression.gof import gof_from_evaluation

SENS = ["race", "age", "gender"]
EXPL = ["number_inpatient", "number_outpatient", "number_emergency", "number_diagnoses", "chf"]
SR_KW = dict(explanatory=EXPL, outcome="readmitted", output="y_hat")
LEVELS = (0.8, 0.9, 0.95)


@lru_cache(maxsize=None)
def population(model: str, shares: str = "diabetes") -> tuple[pd.DataFrame, pd.Series]:
    pop = make_diabetes_like_population(75_000, shares=shares, random_state=0)
    pop = add_semi_synthetic_output(pop, model, random_state=1)
    return pop, true_group_metric(pop, SENS, output="y_hat")


def mae_study(model: str, draws: int, *, shares: str = "diabetes", n: int = 5000, seed0: int = 100) -> dict:
    """MAE of every estimator over ``draws`` evaluation sets (all / small / large groups)."""
    pop, truth = population(model, shares)
    tables, selected = [], []
    for s in range(draws):
        d = stratified_draw(pop, SENS, n, random_state=seed0 + s)
        sr = StructuredRegression(SENS, random_state=s, **SR_KW).fit(d, "mean")
        t = sr.baseline_estimates()
        t["truth"] = truth
        tables.append(t)
        selected.append(sr.result_.selected_index)
    all_ = pd.concat(tables)
    small = all_["n"] <= 25
    out = {"selected": selected, "min_n": int(all_["n"].min())}
    for col in ("standard", "pooled", "james_stein", "empirical_bayes", "structured"):
        err = (all_[col] - all_["truth"]).abs()
        out[col] = (err.mean(), err[small].mean(), err[~small].mean())
    out["sr_vs_pooled"] = float((all_["structured"] - all_["pooled"]).abs().mean())
    return out


def coverage_study(model: str, draws: int, *, variance: str = "pooled", seed0: int = 1000) -> dict:
    """Average coverage (over groups and draws) of rBLPR, Eq. 7 and the lasso percentile CI."""
    pop, truth = population(model)
    cov = {m: {lv: [] for lv in LEVELS} for m in ("rblpr", "standard", "lasso_percentile")}
    width = []
    for s in range(draws):
        d = stratified_draw(pop, SENS, 5000, random_state=seed0 + s)
        sr = StructuredRegression(SENS, variance=variance, random_state=s, **SR_KW).fit(d, "mean")
        for lv in LEVELS:
            ci = sr.confint(lv)
            std = sr.standard_confint(lv)
            lp = sr.confint(lv, method="lasso_percentile")
            for name, t in (("rblpr", ci), ("standard", std), ("lasso_percentile", lp)):
                ok = t["status"] == "ok"
                hit = (t["lower"] <= truth) & (truth <= t["upper"])
                cov[name][lv].append(float(hit[ok].mean()))
            if lv == 0.95:
                ok = std["status"] == "ok"
                width.append(float(((ci["upper"] - ci["lower"]) / (std["upper"] - std["lower"]))[ok].mean()))
    out = {name: {lv: float(np.mean(v)) for lv, v in by.items()} for name, by in cov.items()}
    out["relative_width"] = float(np.mean(width))
    return out


GOF_TESTS = {
    "age": ("expl", "expl+age"),
    "interaction": ("expl+age+race", "expl+age+race+age*race"),
    "sens": ("∅", "sens"),
}


def gof_pvalues(model: str, draws: int, test: str, *, seed0: int = 5000, explanatory: bool = True) -> np.ndarray:
    pop, _ = population(model)
    reduced, full = GOF_TESTS[test]
    out = []
    for s in range(draws):
        d = stratified_draw(pop, SENS, 5000, random_state=seed0 + s)
        kw = dict(explanatory=EXPL, outcome="readmitted") if explanatory else dict(outcome=None)
        ev = prepare_evaluation(d, "mean", sensitive=SENS, output="y_hat", random_state=s, **kw)
        out.append(gof_from_evaluation(ev, reduced, full).p)
    return np.array(out)


# --------------------------------------------------------------------------- T10
def check_t10(res: dict) -> None:
    std, sr = res["standard"], res["structured"]
    assert sr[0] < std[0]
    assert sr[1] <= 0.7 * std[1]
    assert sr[1] <= 1.15 * min(res["james_stein"][1], res["empirical_bayes"][1])


def test_t10_structured_beats_standard_on_additive_dgp():
    res = mae_study("age+rc", draws=6)
    check_t10(res)


@pytest.mark.slow
def test_t10_structured_beats_standard_on_additive_dgp_20_draws():
    check_t10(mae_study("age+rc", draws=20))


# --------------------------------------------------------------------------- T11
def check_t11(res: dict) -> None:
    assert res["structured"][0] <= res["standard"][0]
    assert res["sr_vs_pooled"] < 0.005
    # the CV-selected lambda lies in the top third of the 12-point grid (20, 10, 5, 2 x alpha_mul)
    # in at least 80% of the draws (CV noise occasionally picks a small lambda)
    top_third = np.array(res["selected"]) <= 3
    assert top_third.mean() >= 0.8


def test_t11_no_structure_collapses_to_pooled():
    check_t11(mae_study("constant", draws=5))


@pytest.mark.slow
def test_t11_no_structure_collapses_to_pooled_20_draws():
    check_t11(mae_study("constant", draws=20))


# --------------------------------------------------------------------------- T12
def check_t12(res: dict) -> None:
    assert res["min_n"] >= 200
    assert res["structured"][0] <= 1.1 * res["standard"][0]


def test_t12_unstructured_means_do_no_harm():
    check_t12(mae_study("unstructured", draws=4, shares="uniform", n=8000))


@pytest.mark.slow
def test_t12_unstructured_means_do_no_harm_20_draws():
    check_t12(mae_study("unstructured", draws=20, shares="uniform", n=8000))


# --------------------------------------------------------------------------- T13
def check_t13(res: dict, tol: float = 0.05) -> None:
    for lv in LEVELS:
        assert abs(res["rblpr"][lv] - lv) <= tol, (lv, res["rblpr"][lv])
        assert res["lasso_percentile"][lv] < lv - 0.1
    assert res["relative_width"] <= 1.0


def test_t13_rblpr_coverage_homoskedastic_dgp():
    """Gaussian outputs (model_expl): the pooled-variance model holds and rBLPR is calibrated."""
    check_t13(coverage_study("expl", draws=6))


def test_t13_rblpr_coverage_additive_dgp_per_group_variance():
    """model_age+rc has Bernoulli outputs with group means from 0.05 to 0.65, so the pooled
    (homoskedastic) variance of Eq. 6 is misspecified; with per-group variances rBLPR is
    calibrated within the spec's tolerance."""
    check_t13(coverage_study("age+rc", draws=6, variance="per_group"))


@pytest.mark.slow
def test_t13_rblpr_coverage_20_draws():
    check_t13(coverage_study("expl", draws=20))
    check_t13(coverage_study("age+rc", draws=20, variance="per_group"))
    # with the default pooled variance on model_age+rc both Eq. 7 and rBLPR under-cover (the
    # variance model is misspecified); rBLPR stays within 0.05 of Eq. 7's coverage
    res = coverage_study("age+rc", draws=20)
    for lv in LEVELS:
        assert abs(res["rblpr"][lv] - res["standard"][lv]) <= 0.05
    assert res["relative_width"] <= 1.0


# --------------------------------------------------------------------------- T14
def check_t14(draws: int) -> None:
    assert np.mean(gof_pvalues("age", draws, "age") < 0.05) >= 0.8
    assert np.mean(gof_pvalues("age*rc", draws, "interaction") < 0.05) >= 0.8
    assert np.mean(gof_pvalues("age+rc", draws, "interaction") > 0.05) >= 0.8


def test_t14_gof_direction():
    check_t14(draws=15)


@pytest.mark.slow
def test_t14_gof_direction_50_draws():
    check_t14(draws=50)


# --------------------------------------------------------------------------- T15
def test_t15_gof_size_under_no_structure():
    rate = np.mean(gof_pvalues("constant", 100, "sens", explanatory=False) < 0.05)
    assert 0.01 <= rate <= 0.10


@pytest.mark.slow
def test_t15_gof_size_under_no_structure_200_draws():
    rate = np.mean(gof_pvalues("constant", 200, "sens", explanatory=False) < 0.05)
    assert 0.02 <= rate <= 0.09
