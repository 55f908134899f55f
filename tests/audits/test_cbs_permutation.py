"""Tests of the permutation test (``pcfair.audits.cbs.permutation``; spec test 13)."""

from __future__ import annotations

import numpy as np
import pytest

from pcfair.audits.cbs import CBSOptionError, conditional_bias_scan
from pcfair.audits.cbs.permutation import permutation_pvalue
from pcfair.datasets.synthetic import compas_like_covariates, make_semisynthetic
from pcfair.audits.cbs.permutation import resolve_n_jobs, run_permutations

SEP_PROB = dict(family="separation", predictions="probabilities", direction="positive")


def test_pvalue_formula():
    assert permutation_pvalue(5.0, [1, 2, 3]) == pytest.approx(1 / 4)
    assert permutation_pvalue(5.0, [5.0, 6.0, 1.0]) == pytest.approx(3 / 4)
    assert permutation_pvalue(0.0, np.zeros(9)) == 1.0
    # ties within rounding count as ties
    assert permutation_pvalue(2.0, [2.0 - 1e-12]) == 1.0
    with pytest.raises(CBSOptionError, match="at least one null score"):
        permutation_pvalue(1.0, [])


def test_n_jobs_resolution():
    assert resolve_n_jobs(None) == 1 and resolve_n_jobs(3) == 3 and resolve_n_jobs(-1) >= 1
    with pytest.raises(CBSOptionError, match="n_jobs=0"):
        resolve_n_jobs(0)
    with pytest.raises(CBSOptionError, match="integer"):
        resolve_n_jobs(1.5)


def test_unpicklable_task_runs_serially_with_a_warning():
    offset = 0.5
    with pytest.warns(RuntimeWarning, match="serially"):
        out = run_permutations(lambda s: s + offset, [1, 2, 3], n_jobs=2, progress=False)
    np.testing.assert_array_equal(out, [1.5, 2.5, 3.5])


def _sim(seed, mu_sep):
    X = compas_like_covariates(6172, random_state=7)
    return make_semisynthetic(X, random_state=1000 + seed, mu_sep=mu_sep)


def _pvalue(sim, R, seed):
    res = conditional_bias_scan(
        sim.data, protected="protected", outcome="y", prediction="p", recommendation="pbin",
        covariates=sim.covariates, n_restarts=5, penalty=1.0, n_permutations=R, n_jobs=2,
        random_state=seed, **SEP_PROB,
    )
    return res


def test_planted_bias_reaches_the_smallest_p_value():
    res = _pvalue(_sim(0, mu_sep=0.5), R=19, seed=0)
    assert res.p_value == pytest.approx(1 / 20)
    assert res.null_scores.size == 19 and res.null_scores.max() < res.score


def test_null_p_values_are_not_small():
    ps = [_pvalue(_sim(seed, mu_sep=0.0), R=19, seed=seed).p_value for seed in range(3)]
    assert sum(p < 0.05 for p in ps) <= 1
    assert np.all(np.asarray(ps) >= 1 / 20)


@pytest.mark.slow
def test_permutation_test_is_calibrated_and_powerful():
    """Spec test 13: R = 30, 5 restarts, lambda = 1; planted mu_sep = 0.5 -> p = 1/31; 40 null
    data sets -> rejection rate at 0.05 at most 0.12."""
    planted = [_pvalue(_sim(seed, mu_sep=0.5), R=30, seed=seed).p_value for seed in range(5)]
    assert all(p == pytest.approx(1 / 31) for p in planted)
    null = np.array([_pvalue(_sim(seed, mu_sep=0.0), R=30, seed=seed).p_value
                     for seed in range(40)])
    assert np.mean(null < 0.05) <= 0.12
    # p-values spread over (0, 1] rather than piling up at small values
    assert np.median(null) > 0.2
