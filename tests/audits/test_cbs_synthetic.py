"""Semi-synthetic evaluation of the paper's Sec. 4 (spec test 12) and the generator itself."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED_DATA, requires_data

from pcfair.audits.cbs import conditional_bias_scan, subgroup_mask
from pcfair.datasets.synthetic import compas_like_covariates, jaccard, make_semisynthetic
from pcfair.errors import DataError, OptionError

SCANS = {
    "sep_prob": dict(family="separation", predictions="probabilities", direction="positive"),
    "sep_rec": dict(family="separation", predictions="recommendations", direction="positive"),
    "suf_prob": dict(family="sufficiency", predictions="probabilities", direction="negative"),
    "suf_rec": dict(family="sufficiency", predictions="recommendations", direction="negative"),
}


@pytest.fixture(scope="module")
def covariates():
    return compas_like_covariates(6172, random_state=123)


def _run(sim, scan, seed, n_permutations=0):
    res = conditional_bias_scan(
        sim.data, protected="protected", outcome="y", prediction="p", recommendation="pbin",
        covariates=sim.covariates, n_restarts=10, n_permutations=n_permutations, n_jobs=2,
        random_state=seed, **SCANS[scan],
    )
    a = sim.data.protected.to_numpy().astype(bool)
    detected = subgroup_mask(sim.data, res.subgroup)
    return res, jaccard(sim.in_bias[a], detected[a])


def _study(covariates, injection, scans, seeds):
    """Mean Jaccard and mean score per scan over seeds."""
    out = {s: ([], []) for s in scans}
    for seed in seeds:
        sim = make_semisynthetic(covariates, random_state=seed, **injection)
        for s in scans:
            res, jac = _run(sim, s, seed)
            out[s][0].append(jac)
            out[s][1].append(res.score)
    return {s: (float(np.mean(j)), float(np.mean(sc))) for s, (j, sc) in out.items()}


# ------------------------------------------------------------------ default-run versions
SEEDS = range(4)


def test_separation_bias_is_recovered_by_separation_scans(covariates):
    r = _study(covariates, dict(mu_sep=1.0), ["sep_prob", "sep_rec"], SEEDS)
    assert r["sep_prob"][0] >= 0.8 and r["sep_rec"][0] >= 0.8


def test_sufficiency_bias_is_recovered_by_sufficiency_scans(covariates):
    r = _study(covariates, dict(mu_suf=1.0), ["suf_prob", "suf_rec"], SEEDS)
    assert r["suf_prob"][0] >= 0.8 and r["suf_rec"][0] >= 0.8


def test_base_rate_shift_fires_separation_but_not_sufficiency(covariates):
    r = _study(covariates, dict(base_rate_shift=0.5), list(SCANS), SEEDS)
    assert r["sep_prob"][1] > 30 and r["sep_rec"][1] > 30
    assert r["suf_prob"][1] < 6 and r["suf_rec"][1] < 6
    sim = make_semisynthetic(covariates, random_state=0, base_rate_shift=0.5)
    res, _ = _run(sim, "suf_prob", seed=0, n_permutations=19)
    assert res.p_value > 0.05


def test_without_prediction_noise_in_outcomes_sufficiency_scans_miss_separation_bias(covariates):
    """Theorem B.1's setting: sigma_true = 0 makes Y independent of P given X."""
    r = _study(covariates, dict(mu_sep=1.0, sigma_true=0.0), ["suf_prob", "suf_rec"], SEEDS)
    assert r["suf_prob"][0] < 0.4 and r["suf_rec"][0] < 0.4


# ------------------------------------------------------------------ the full study (slow)
@pytest.mark.slow
def test_semisynthetic_study_over_twenty_seeds(covariates):
    seeds = range(20)
    sep = _study(covariates, dict(mu_sep=1.0), list(SCANS), seeds)
    suf = _study(covariates, dict(mu_suf=1.0), list(SCANS), seeds)
    shift = _study(covariates, dict(base_rate_shift=0.5), list(SCANS), seeds)
    none = _study(covariates, {}, list(SCANS), seeds)
    s0 = _study(covariates, dict(mu_sep=1.0, sigma_true=0.0), ["suf_prob", "suf_rec"], seeds)
    assert sep["sep_prob"][0] >= 0.8 and sep["sep_rec"][0] >= 0.8
    assert suf["suf_prob"][0] >= 0.8 and suf["suf_rec"][0] >= 0.8
    assert shift["sep_prob"][1] > 30 and shift["sep_rec"][1] > 30
    assert shift["suf_prob"][1] < 5 and shift["suf_rec"][1] < 5
    assert max(v[1] for v in none.values()) < 6
    assert s0["suf_prob"][0] < 0.3 and s0["suf_rec"][0] < 0.3


@pytest.mark.slow
def test_sufficiency_scan_is_not_significant_under_a_base_rate_shift(covariates):
    rejections = 0
    for seed in range(10):
        sim = make_semisynthetic(covariates, random_state=seed, base_rate_shift=0.5)
        res, _ = _run(sim, "suf_prob", seed, n_permutations=19)
        rejections += res.p_value < 0.05
    assert rejections <= 2


@pytest.mark.slow
@requires_data()
def test_semisynthetic_on_real_compas_covariates():
    from pcfair.datasets import fetch_compas

    frame = fetch_compas(preprocess="cbs", data_home=SHARED_DATA, download_if_missing=False).frame
    X = frame[["sex", "race", "age", "charge_degree", "priors"]]
    assert X.nunique().tolist() == [2, 6, 2, 2, 3]
    sep = _study(X, dict(mu_sep=1.0), ["sep_prob", "sep_rec"], range(10))
    suf = _study(X, dict(mu_suf=1.0), ["suf_prob", "suf_rec"], range(10))
    assert sep["sep_prob"][0] >= 0.8 and sep["sep_rec"][0] >= 0.8
    assert suf["suf_prob"][0] >= 0.8 and suf["suf_rec"][0] >= 0.8


# ------------------------------------------------------------------ the generator
def test_generator_plants_bias_only_in_the_protected_subgroup(covariates):
    base = make_semisynthetic(covariates, protected=("race", "Caucasian"), random_state=9)
    biased = make_semisynthetic(covariates, protected=("race", "Caucasian"), mu_sep=2.0,
                                random_state=9)
    assert base.bias_subgroup == biased.bias_subgroup and len(base.bias_subgroup) == 2
    assert "race" not in base.covariates and "race" not in base.data.columns
    inside = biased.in_bias
    assert inside.any()
    assert np.array_equal(inside, subgroup_mask(base.data, base.bias_subgroup)
                          & base.data.protected.to_numpy().astype(bool))
    # logits shifted by exactly mu_sep inside, untouched outside; outcomes unchanged
    lg = lambda p: np.log(p / (1 - p))  # noqa: E731
    diff = lg(biased.data.p.to_numpy()) - lg(base.data.p.to_numpy())
    np.testing.assert_allclose(diff[inside], 2.0, atol=1e-9)
    np.testing.assert_allclose(diff[~inside], 0.0, atol=1e-12)
    assert np.array_equal(base.data.y, biased.data.y)
    assert np.array_equal(biased.data.pbin, (biased.data.p >= 0.5).astype(int))


def test_generator_sufficiency_injection_lowers_outcomes_inside(covariates):
    sim = make_semisynthetic(covariates, protected=("sex", "Male"), mu_suf=3.0, random_state=2)
    ref = make_semisynthetic(covariates, protected=("sex", "Male"), random_state=2)
    inside = sim.in_bias
    assert sim.data.y[inside].mean() < ref.data.y[inside].mean() - 0.2
    np.testing.assert_allclose(sim.data.p, ref.data.p)
    assert np.array_equal(sim.data.y[~inside], ref.data.y[~inside])


def test_generator_is_reproducible_and_validates(covariates):
    a = make_semisynthetic(covariates, random_state=4, base_rate_shift=0.5)
    b = make_semisynthetic(covariates, random_state=4, base_rate_shift=0.5)
    pd.testing.assert_frame_equal(a.data, b.data)
    assert a.protected == b.protected
    with pytest.raises(OptionError, match="p_bias"):
        make_semisynthetic(covariates, p_bias=0.0)
    with pytest.raises(DataError, match="column named 'y'"):
        make_semisynthetic(covariates.assign(y=1))
    with pytest.raises(OptionError, match="n_bias_attributes=5"):
        make_semisynthetic(covariates, n_bias_attributes=5)


def test_jaccard():
    assert jaccard([1, 1, 0, 0], [1, 0, 1, 0]) == pytest.approx(1 / 3)
    assert jaccard([0, 0], [0, 0]) == 1.0
