"""Optional cross-check of the Bernoulli score and the scan against aif360's MDSS (spec test 17).

aif360 is not a dependency of pcfair: it comes with the ``peers`` extra
(``pip install -e ".[peers]"``), which CI installs. Elsewhere these tests skip when it is absent;
under CI (``CI=true``) a missing aif360 is an error, so the cross-check cannot silently vanish.
No aif360 code is used by pcfair itself.
"""

from __future__ import annotations

import importlib
import os

import numpy as np
import pandas as pd
import pytest

from pcfair.audits.cbs.search import SubsetScanner

if os.environ.get("CI", "").lower() == "true":
    mdss = importlib.import_module("aif360.detectors.mdss.MDSS")
    scoring = importlib.import_module("aif360.detectors.mdss.ScoringFunctions")
else:
    mdss = pytest.importorskip(
        "aif360.detectors.mdss.MDSS",
        reason='aif360 is not installed (optional cross-check: pip install -e ".[peers]")')
    scoring = pytest.importorskip("aif360.detectors.mdss.ScoringFunctions")


def _data(seed, n=800):
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({"a": rng.integers(0, 3, n), "b": rng.integers(0, 4, n),
                      "c": rng.integers(0, 2, n)})
    p = rng.uniform(0.1, 0.9, n)
    inside = (X.b.isin([1, 2]) & (X.c == 1)).to_numpy()
    q = np.where(inside, 2.5, 1.0)
    y = (rng.random(n) < q * p / (1 - p + q * p)).astype(int)
    return X, pd.Series(p), pd.Series(y)


def _random_subgroups(rng, X, k=25):
    out = [{}]
    for _ in range(k):
        sub = {}
        for col in X.columns:
            vals = sorted(X[col].unique())
            keep = [v for v in vals if rng.random() < 0.5]
            if keep and len(keep) < len(vals):
                sub[col] = keep
        out.append(sub)
    return out


@pytest.mark.parametrize("direction", ["positive", "negative"])
@pytest.mark.parametrize("penalty", [0.0, 1.0])
def test_bernoulli_subset_scores_match_aif360(direction, penalty):
    X, p, y = _data(1)
    theirs = mdss.MDSS(scoring.Bernoulli(direction=direction))
    ours = SubsetScanner(X, y.to_numpy(), p.to_numpy(), "bernoulli", direction=direction,
                         penalty=penalty)
    rng = np.random.default_rng(2)
    for sub in _random_subgroups(rng, X):
        ref = theirs.score_current_subset(X, p, y, {k: list(v) for k, v in sub.items()}, penalty)
        s, _, _ = ours.score(sub)
        assert s == pytest.approx(ref, abs=1e-4)


def test_scan_finds_the_same_subgroup_and_score_as_aif360():
    X, p, y = _data(3, n=2000)
    theirs = mdss.MDSS(scoring.Bernoulli(direction="positive"))
    sub_ref, score_ref = theirs.scan(X, p, y, penalty=1.0, num_iters=10, seed=0)
    ours = SubsetScanner(X, y.to_numpy(), p.to_numpy(), "bernoulli", penalty=1.0)
    res = ours.scan(n_restarts=10, random_state=0)
    assert {k: sorted(v) for k, v in res.subgroup.items()} == {
        k: sorted(v) for k, v in sub_ref.items()
    }
    assert res.score == pytest.approx(score_ref, abs=1e-3)
