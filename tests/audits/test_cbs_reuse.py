"""What makes the Conditional Bias Scan's defaults fast without changing its statistics: the
fits on soft labels and on merged rows are the fits on duplicated records, the regressions'
matrices are built once for all the permuted scans, the CLI predicts once for all the
protected classes, and the progress bar over the permutations shows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pcfair.audits._model import as_model
from pcfair.audits.cbs import conditional_bias_scan
from pcfair.audits.cbs._logistic import fit_logistic
from pcfair.audits.cbs.cli import _predicted_once
from pcfair.audits.cbs.expectations import (
    _expectations_from_codes,
    _fit_weighted_logistic,
    design,
    distinct_rows,
    one_hot,
)
from pcfair.audits.cbs.permutation import run_permutations
from pcfair.audits.cbs.search import SubsetScanner


@pytest.fixture(scope="module")
def encoded():
    rng = np.random.default_rng(0)
    n = 1500
    codes = np.column_stack([rng.integers(0, 4, n), rng.integers(0, 3, n), rng.integers(0, 5, n)])
    arities = np.array([4, 3, 5])
    a = rng.random(n) < 0.2 + 0.15 * (codes[:, 0] == 1)
    y = (rng.random(n) < 0.4).astype(float)
    p = np.clip(0.3 + 0.3 * y + 0.1 * codes[:, 1] / 2 + rng.normal(0, 0.05, n), 0.01, 0.99)
    return codes, arities, a, y, p


def test_soft_labels_are_the_duplicated_records(encoded):
    codes, arities, _, y, p = encoded
    x = np.hstack([one_hot(codes, arities), y[:, None]])
    w = np.random.default_rng(1).uniform(0.2, 3.0, x.shape[0])
    soft = _fit_weighted_logistic(x, p, w, 1.0)
    dup = _fit_weighted_logistic(np.vstack([x, x]), np.r_[np.ones(p.size), np.zeros(p.size)],
                                 np.r_[w * p, w * (1 - p)], 1.0)
    np.testing.assert_allclose(soft(x), dup(x), rtol=1e-10, atol=1e-12)


def test_merging_rows_and_reusing_the_merge_leave_the_fit_unchanged(encoded):
    codes, arities, a, _, _ = encoded
    x = one_hot(codes, arities)
    ones = np.ones(a.size)
    merged = _fit_weighted_logistic(x, a.astype(float), ones, 1.0)
    reused = _fit_weighted_logistic(x, a.astype(float), ones, 1.0, distinct=distinct_rows(x))
    coef, b = fit_logistic(x, a.astype(float), ones, 1.0)  # every row on its own
    np.testing.assert_array_equal(merged(x), reused(x))
    np.testing.assert_allclose(merged(x), 1 / (1 + np.exp(-(x @ coef + b))), rtol=1e-9)


def test_newton_converges_past_the_objective_rounding(encoded):
    """A constant zero column changes nothing in the optimum; the solver must not stop early
    (it used to, when the decrease fell below the objective's rounding)."""
    codes, arities, a, _, _ = encoded
    rows = distinct_rows(one_hot(codes, arities))[1]
    rng = np.random.default_rng(2)
    labels, w = rng.random(rows.shape[0]), rng.uniform(1, 50, rows.shape[0])
    c1, b1 = fit_logistic(rows, labels, w, 1.0)
    c2, b2 = fit_logistic(np.hstack([rows, np.zeros((rows.shape[0], 1))]), labels, w, 1.0)
    assert b1 == pytest.approx(b2, abs=1e-12) and c2[-1] == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(c1, c2[:-1], atol=1e-12)


@pytest.mark.parametrize("condition_value, event_type", [(None, "probability"), (0, "binary")])
def test_a_prepared_design_gives_the_same_expectations(encoded, condition_value, event_type):
    codes, arities, a, y, p = encoded
    event = p if event_type == "probability" else (p >= 0.5).astype(float)
    kw = dict(condition_type="binary", condition_value=condition_value, event_type=event_type,
              C=1.0, interactions=False, propensity=None, propensity_model="logistic")
    prepared = design(codes, arities, y, condition_type="binary",
                      condition_value=condition_value, interactions=False)
    for perm in range(3):  # the same design serves every permuted indicator
        ap = np.random.default_rng(perm).permutation(a)
        fresh = _expectations_from_codes(codes, arities, ap, event, y, **kw)
        again = _expectations_from_codes(codes, arities, ap, event, y, **kw, prepared=prepared)
        np.testing.assert_array_equal(fresh.expected, again.expected)
        np.testing.assert_array_equal(fresh.rows, again.rows)


def test_the_cli_predicts_once_for_every_protected_class():
    calls = []

    def model(batch):
        calls.append(len(batch))
        return np.full(len(batch), 0.25)

    data = pd.DataFrame({"s": [0, 1, 0, 1], "x": [1, 2, 3, 4], "y": [0, 1, 1, 0]})
    once = _predicted_once(as_model(model), data, "y")
    for _ in range(3):
        assert once.proba(data.drop(columns=["y"])).tolist() == [0.25] * 4
    assert calls == [4]
    stored = as_model(prediction="x")
    assert _predicted_once(stored, data, "y") is stored


def test_scan_scores_from_the_step_match_a_fresh_score():
    """The ascent reads a step's score instead of rescoring the subgroup: same numbers."""
    rng = np.random.default_rng(3)
    X = pd.DataFrame({"a": rng.integers(0, 5, 600), "b": rng.integers(0, 4, 600),
                      "c": rng.integers(0, 3, 600)})
    event = (rng.random(600) < np.where((X.a == 2) & (X.b < 2), 0.7, 0.3)).astype(float)
    for scorer, ex in (("bernoulli", np.full(600, 0.3)), ("gaussian", np.full(600, 0.4))):
        ev = event if scorer == "bernoulli" else np.clip(event, 0.05, 0.95)
        sc = SubsetScanner(X, ev, ex, scorer, penalty=0.7)
        res = sc.scan(n_restarts=6, random_state=0)
        score, theta, n = sc.score(res.subgroup)
        assert res.score == pytest.approx(score, rel=1e-12) and res.n == n
        assert res.theta == pytest.approx(theta, rel=1e-9)


def test_the_progress_bars_show_when_asked(capsys):
    run_permutations(float, [1, 2, 3], n_jobs=1, progress=True, description="CBS permutations")
    assert "CBS permutations" in capsys.readouterr().err
    X = pd.DataFrame({"a": [0, 1] * 50})
    SubsetScanner(X, np.tile([1.0, 0.0], 50), np.full(100, 0.5)).scan(3, progress=True)
    assert "restarts" in capsys.readouterr().err


def test_the_defaults_run_the_permutations_in_parallel_with_one_blas_thread(monkeypatch):
    """conditional_bias_scan's n_jobs default is every core; BLAS is held to one thread while
    it scans (the matrices are small; the permutations are the parallel work)."""
    import inspect

    from threadpoolctl import threadpool_info

    assert inspect.signature(conditional_bias_scan).parameters["n_jobs"].default == -1
    seen = []
    init = SubsetScanner.__init__

    def spy(self, *args, **kwargs):
        init(self, *args, **kwargs)
        seen.append({i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"})

    monkeypatch.setattr(SubsetScanner, "__init__", spy)
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"g": rng.integers(0, 2, 400), "x": rng.integers(0, 3, 400)})
    df["y"] = (rng.random(400) < 0.5).astype(int)
    df["p"] = np.clip(0.3 + 0.3 * df.y + rng.normal(0, 0.05, 400), 0.01, 0.99)
    conditional_bias_scan(df, protected=("g", 1), outcome="y", prediction="p", covariates=["x"],
                          n_restarts=2, n_permutations=2, n_jobs=1, random_state=0)
    assert seen and all(s <= {1} for s in seen)
