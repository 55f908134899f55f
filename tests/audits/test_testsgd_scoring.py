"""Tests of Algorithm 2 (group fairness score, margins, stopping rule): T7, T8 and exactness."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from pcfair.audits.testsgd import group_fairness_score, RuleSet
from pcfair.audits.testsgd.tabular_sampler import TabularPerturbationSampler
from pcfair.audits.testsgd.rules import CategoricalRule
from pcfair.audits.testsgd.scoring import (
    max_sample_size,
    score_from_counts,
    sequential_group_fairness_score,
)
from pcfair.audits.testsgd.specs import SensitiveSpec
from pcfair.audits.testsgd._kernels import margins, z_value
from pcfair.errors import DataError, SpecError

R_F = RuleSet([CategoricalRule("g", ("F",))])


@pytest.fixture(scope="module")
def sampler():
    rng = np.random.default_rng(1)
    n = 4000
    df = pd.DataFrame({"g": rng.choice(["F", "M"], n), "x": rng.integers(0, 1000, n)})
    return TabularPerturbationSampler().fit(df, [SensitiveSpec.categorical("g", ["F", "M"])])


def rate_model(p_f: float, p_m: float):
    """Label 1 iff x < 1000 p, with p depending on the group: deterministic per row."""

    def predict(batch: pd.DataFrame) -> np.ndarray:
        p = np.where(batch["g"].to_numpy() == "F", p_f, p_m)
        return (batch["x"].to_numpy() < 1000 * p).astype(int)

    return predict


# ----------------------------------------------------------------------------- T7
def test_margin_arithmetic_of_the_worked_example():
    s = score_from_counts(283, 91, 1000, z=1.96)
    assert abs(s.margin_group - 0.027920) < 1e-6
    assert abs(s.margin_rest - 0.017826) < 1e-6
    assert abs(s.margin - 0.045746) < 1e-6
    assert abs(s.score - 0.192) < 1e-6
    assert abs(s.difference - 0.192) < 1e-6
    assert s.p_group == 0.283 and s.p_rest == 0.091
    assert s.confidence == pytest.approx(0.9025, abs=1e-12)
    assert s.margin <= 0.05  # the example stops here


def test_paper_z_and_maximum_sample_size():
    assert z_value(0.95) == 1.96
    assert z_value(0.99) == 2.58
    assert max_sample_size(1000, 0.05, 1.96) == 1537
    assert max_sample_size(2000, 0.05, 1.96) == 2001


def test_wilson_and_clopper_pearson_margins_match_scipy():
    for k, n in [(0, 50), (3, 50), (25, 50), (283, 1000), (1000, 1000)]:
        p = k / n
        for method, name in (("wilson", "wilson"), ("exact", "clopper_pearson")):
            ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method=method)
            expected = max(p - ci.low, ci.high - p)
            got = margins(np.array([k]), np.array([n]), interval=name, z=stats.norm.ppf(0.975), confidence=0.95)[0]
            assert got == pytest.approx(expected, abs=1e-9), (k, n, name)
    assert margins(np.array([0]), np.array([50]), interval="wald", z=1.96, confidence=0.95)[0] == 0.0


# ----------------------------------------------------------------------------- T8
def test_constant_model_stops_at_the_first_check(sampler):
    s = group_fairness_score(lambda b: np.ones(len(b), dtype=int), sampler, R_F, random_state=0)
    assert (s.n_samples, s.margin, s.score, s.converged) == (1001, 0.0, 0.0, True)
    assert s.n_queries == 2002
    s = group_fairness_score(lambda b: np.ones(len(b), dtype=int), sampler, R_F, check_from=1000, random_state=0)
    assert s.n_samples == 1000  # the worked example's reading


def test_half_rates_stop_between_1001_and_1537(sampler):
    s = group_fairness_score(rate_model(0.5, 0.5), sampler, R_F, random_state=3)
    assert 1001 <= s.n_samples <= 1537
    assert s.margin <= 0.05 and s.converged


@pytest.mark.parametrize("rates", [(0.5, 0.5), (0.1, 0.5), (0.3, 0.3), (0.05, 0.95), (0.45, 0.6)])
@pytest.mark.parametrize("seed", [0, 1])
def test_stopping_rule_is_the_first_count_meeting_the_margin(sampler, rates, seed):
    predict = rate_model(*rates)
    s = group_fairness_score(predict, sampler, R_F, random_state=seed)
    assert s.margin <= 0.05 and s.n_samples > 1000
    assert s.n_samples <= max_sample_size(1000, 0.05, 1.96)
    if s.n_samples > 1001:
        # Stopping one pair earlier is not allowed: with the cap at num - 1 the loop runs out.
        before = group_fairness_score(predict, sampler, R_F, random_state=seed, max_samples=s.n_samples - 1)
        assert not before.converged
        assert before.n_samples == s.n_samples - 1
        assert before.margin > 0.05


def test_result_does_not_depend_on_the_batch_size(sampler):
    predict = rate_model(0.3, 0.55)
    ref = group_fairness_score(predict, sampler, R_F, random_state=11)
    for batch_size in (1, 7, 333, 5000):
        s = group_fairness_score(predict, sampler, R_F, random_state=11, batch_size=batch_size)
        assert s == ref


def test_batched_score_equals_the_one_pair_at_a_time_loop(sampler):
    predict = rate_model(0.4, 0.55)
    calls = []

    def counting(batch):
        calls.append(len(batch))
        return predict(batch)

    for chunk, kw in ((512, dict(sample_thr=300, error_thr=0.1)), (37, dict(sample_thr=100, error_thr=0.15))):
        fast = group_fairness_score(counting, sampler, R_F, random_state=5, chunk_size=chunk, **kw)
        n_fast_calls = len(calls)
        calls.clear()
        slow = sequential_group_fairness_score(counting, sampler, R_F, random_state=5, chunk_size=chunk, **kw)
        assert all(c == 1 for c in calls) and len(calls) == 2 * slow.n_samples
        calls.clear()
        assert (fast.n_samples, fast.hits_group, fast.hits_rest) == (slow.n_samples, slow.hits_group, slow.hits_rest)
        assert fast.score == slow.score and fast.margin == slow.margin
        assert fast.n_queries >= 2 * fast.n_samples and n_fast_calls <= 4


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(5))
def test_batched_score_equals_the_loop_at_paper_settings(sampler, seed):
    predict = rate_model(0.3 + 0.05 * seed, 0.5)
    fast = group_fairness_score(predict, sampler, R_F, random_state=seed)
    slow = sequential_group_fairness_score(predict, sampler, R_F, random_state=seed, chunk_size=512)
    assert fast == slow.__class__(**{**slow.__dict__, "n_queries": fast.n_queries})


def test_extension_intervals_stop_and_label_their_results(sampler):
    for interval in ("wilson", "clopper_pearson"):
        s = group_fairness_score(rate_model(0.2, 0.6), sampler, R_F, interval=interval, random_state=2)
        assert s.interval == interval and s.converged and s.margin <= 0.05
        kw = dict(interval=interval, random_state=2, sample_thr=200, error_thr=0.1)
        s = group_fairness_score(rate_model(0.2, 0.6), sampler, R_F, **kw)
        loop = sequential_group_fairness_score(rate_model(0.2, 0.6), sampler, R_F, chunk_size=512, **kw)
        assert (loop.n_samples, loop.margin) == (s.n_samples, s.margin)


def test_class_score_outputs_are_reduced_by_argmax(sampler):
    def proba(batch):
        p1 = (batch["g"].to_numpy() == "M").astype(float) * 0.8 + 0.1
        return np.column_stack([1 - p1, p1])

    s = group_fairness_score(proba, sampler, R_F, random_state=0)
    assert (s.p_group, s.p_rest, s.difference) == (0.0, 1.0, -1.0)


def test_bad_model_outputs_and_settings_raise(sampler):
    with pytest.raises(DataError, match="returned 1 labels for 2002 inputs"):
        group_fairness_score(lambda b: [1], sampler, R_F)
    with pytest.raises(DataError, match="cannot equal favorable='yes'"):
        group_fairness_score(lambda b: np.ones(len(b)), sampler, R_F, favorable="yes")
    s = group_fairness_score(lambda b: np.array(["yes"] * len(b)), sampler, R_F, favorable="yes")
    assert s.p_group == 1.0
    with pytest.raises(SpecError, match="interval='hoeffding'"):
        group_fairness_score(lambda b: np.ones(len(b)), sampler, R_F, interval="hoeffding")
    with pytest.raises(SpecError, match="error_thr must be positive"):
        group_fairness_score(lambda b: np.ones(len(b)), sampler, R_F, error_thr=0)
    with pytest.raises(SpecError, match="below the first check"):
        group_fairness_score(lambda b: np.ones(len(b)), sampler, R_F, max_samples=10)


def test_score_serialises_with_the_rendered_rule_set(sampler):
    s = group_fairness_score(rate_model(0.2, 0.6), sampler, R_F, random_state=0, support=0.5)
    d = s.to_dict()
    assert d["rule_set"] == "g=F" and d["support"] == 0.5 and d["sampler"] == "perturbation"
    assert math.isfinite(d["margin"])
