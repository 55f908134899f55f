"""Mitigation by retraining on generated group members (T15)."""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder

from pcfair.audits.testsgd import audit, mitigate, RuleSet
from pcfair.audits.testsgd.errors import SkippedRuleSetWarning
from pcfair.audits.testsgd.mitigation import default_schedule
from pcfair.audits.testsgd.rules import CategoricalRule, RangeRule
from pcfair.audits.testsgd.specs import resolve_specs
from pcfair.errors import SpecError

SENS = {"gender": "categorical", "race": "categorical", "age": (0, 100)}


def planted_data(n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "gender": rng.choice(["M", "F"], n),
        "race": rng.choice(list("ABCDE"), n, p=[0.4, 0.2, 0.2, 0.1, 0.1]),
        "age": rng.integers(18, 90, n),
        "x_int": rng.integers(0, 51, n),
        "x_float": np.round(rng.random(n), 2),
    })


def in_group(df: pd.DataFrame) -> np.ndarray:
    age = df["age"].to_numpy()
    return (df["gender"].to_numpy() == "F") & np.isin(df["race"].to_numpy(), ["B", "C"]) & (age >= 40) & (age < 70)


def biased_labels(df: pd.DataFrame, seed: int) -> np.ndarray:
    """Historic bias against G: P(y = 1 | x) = sigmoid(10 (x_float - t)), t = 0.75 in G, 0.5 elsewhere."""
    rng = np.random.default_rng(seed)
    t = np.where(in_group(df), 0.75, 0.5)
    return (rng.random(len(df)) < 1.0 / (1.0 + np.exp(-10.0 * (df["x_float"].to_numpy() - t)))).astype(int)


def _cells(X: pd.DataFrame) -> pd.DataFrame:
    return pd.DataFrame({"cell": X["gender"].astype(str) + X["race"].astype(str) + (X["age"] // 10).astype(str)})


def fit_model(X: pd.DataFrame, y: np.ndarray):
    """Logistic regression on one indicator per (gender, race, age decade) cell, plus x_float."""
    features = ColumnTransformer([
        ("cell", make_pipeline(FunctionTransformer(_cells), OneHotEncoder(handle_unknown="ignore")),
         ["gender", "race", "age"]),
        ("num", "passthrough", ["x_float"]),
    ])
    return make_pipeline(features, LogisticRegression(max_iter=1000)).fit(X, y)


@pytest.fixture(scope="module")
def task():
    X, Xt = planted_data(20_000, 0), planted_data(10_000, 2)
    y, yt = biased_labels(X, 1), biased_labels(Xt, 3)
    return X, y, Xt, yt, fit_model(X, y)


def planted_rule_set(X) -> RuleSet:
    age = next(s for s in resolve_specs(X, SENS) if s.name == "age")
    return RuleSet([CategoricalRule("gender", ("F",)), CategoricalRule("race", ("B", "C")),
                    RangeRule("age", 4, 6, age.edges)])


def _check_mitigation(X, y, Xt, yt, model, R, schedule):
    added = []

    def refit(X_aug, y_aug):
        added.append((X_aug.iloc[len(X):].reset_index(drop=True), y_aug[len(X):]))
        return fit_model(X_aug, y_aug)

    res = mitigate(refit, X, y, R, predict=model.predict, sensitive=SENS, schedule=schedule,
                   X_test=Xt, y_test=yt, accuracy_tolerance=0.01, random_state=0)
    assert res.before.difference < 0 and res.counter_label == 1
    assert res.after.score <= 0.7 * res.before.score  # at least a 30% drop
    assert res.accuracy_after >= res.accuracy_before - 0.01
    assert res.n_added in schedule and res.n_added > 0
    assert list(res.steps["n_added"]) == [0, *sorted(schedule)]
    for extra, labels in added:
        # only generated members of R that the original model labels with the counter label
        assert R.mask(extra).all()
        assert (model.predict(extra) == 1).all() and (labels == 1).all()
    return res


def test_mitigation_reduces_the_score_of_the_planted_group(task):
    X, y, Xt, yt, model = task
    res = _check_mitigation(X, y, Xt, yt, model, planted_rule_set(X), [50, 500, 2000])
    # Every model is re-scored on the same sample streams, so the score falls steadily.
    assert res.steps["score"].is_monotonic_decreasing
    # the shared result shape: the steps as the table, the headline numbers in the dict
    d = res.to_dict()
    assert res.to_frame().equals(res.steps) and len(d["rows"]) == len(res.steps)
    assert d["score_after"] == res.after.score and d["n_added"] == res.n_added
    assert repr(res).startswith("MitigationResult(method='testsgd'")
    if importlib.util.find_spec("matplotlib") is not None:  # the plot extra
        import matplotlib

        matplotlib.use("Agg")
        assert len(res.plot().get_lines()) == 3  # score, accuracy, the chosen setting


@pytest.mark.slow
def test_mitigation_of_the_audits_top_rule_set(task):
    X, y, Xt, yt, model = task
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SkippedRuleSetWarning)
        top = audit(X, model.predict, sensitive=SENS, sup_thr=0.06, random_state=0).table.index[0]
    _check_mitigation(X, y, Xt, yt, model, top, default_schedule(len(X)))


def test_mitigation_needs_a_sampler_or_the_sensitive_features(task):
    X, y, _, _, model = task
    with pytest.raises(SpecError, match="sensitive="):
        mitigate(fit_model, X, y, planted_rule_set(X), predict=model.predict)
    with pytest.raises(SpecError, match="positive counts"):
        mitigate(fit_model, X, y, planted_rule_set(X), predict=model.predict, sensitive=SENS, schedule=[0])


def test_default_schedule_goes_from_50_to_a_tenth_of_the_data():
    assert default_schedule(20_000) == [50, 105, 219, 457, 956, 2000]
    assert default_schedule(300) == [30]
