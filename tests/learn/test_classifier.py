import itertools

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.utils.estimator_checks import check_estimator

import pcfair
from pcfair.learn import PCClassifier


def data(seed=0, n=400):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    X = pd.DataFrame({
        "a": np.where(rng.random(n) < 0.8, y, 1 - y),
        "b": np.where(rng.random(n) < 0.7, y, rng.integers(0, 3, n)),
        "c": rng.choice(["u", "v"], n),
    })
    return X, y


def test_nan_features_give_the_marginal_answer():
    X, y = data()
    clf = PCClassifier().fit(X, y)
    pc = clf.circuit_
    # brute force: P(y | a) = Σ_{b,c} P(y, a, b, c) / Σ_{y,b,c} P(y, a, b, c)
    rows = list(itertools.product([0, 1], [0, 1], [0, 1, 2], ["u", "v"]))
    joint = pd.DataFrame(rows, columns=[clf.target_, "a", "b", "c"])
    p = np.exp(pc.log_marginal(joint))
    for a in (0, 1):
        m = joint["a"] == a
        want = p[m & (joint[clf.target_] == 1)].sum() / p[m].sum()
        got = clf.predict_proba(pd.DataFrame({"a": [a], "b": [np.nan], "c": [np.nan]}))[0, 1]
        assert got == pytest.approx(want, rel=1e-12)


def test_fit_predict_score_and_params():
    X, y = data()
    clf = PCClassifier(pseudocount=0.5)
    assert clf.get_params()["pseudocount"] == 0.5
    clf.fit(X, y)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert clf.score(X, y) > 0.75
    assert clone(clf).get_params() == clf.get_params()
    props = clf.circuit_.properties()
    assert props.deterministic and props.structured_decomposable
    with pytest.raises(pcfair.DataError, match="not seen in training"):
        clf.predict(pd.DataFrame({"a": [0], "b": [7], "c": ["u"]}))
    lenient = PCClassifier(handle_unknown="missing").fit(X, y)
    p = lenient.predict_proba(pd.DataFrame({"a": [0], "b": [7], "c": ["u"]}))
    q = lenient.predict_proba(pd.DataFrame({"a": [0], "b": [np.nan], "c": ["u"]}))
    np.testing.assert_allclose(p, q)


def test_scikit_learn_estimator_checks():
    """Every applicable check passes; NaN at predict time means 'unobserved' by design."""
    results = check_estimator(PCClassifier(handle_unknown="missing"), on_fail=None)
    failed = {r["check_name"] for r in results if r["status"] == "failed"}
    assert failed <= {"check_estimators_nan_inf"}
    assert len(results) > 40
