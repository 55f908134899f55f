"""The Conditional Bias Scan's minimum group size (``min_group_size``, ``--min-group-size``):
a headline is never a handful of people, the permuted scans obey the same constraint, and
``min_group_size=1`` is the paper's unconstrained scan, unchanged."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from pcfair.audits.cbs import CBSOptionError, conditional_bias_scan
from pcfair.audits.cbs import search as search_module
from pcfair.audits.cbs.search import SubsetScanner, scan
from pcfair.cli import main

RARE = 3  # people with extreme predictions, set apart by a rare covariate value


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    """Protected g = 1; a planted bias in g = 1 & x in {0, 1} (about 300 people), and three
    people of g = 1 with z = "rare" whose predictions are near 1 (the unconstrained headline)."""
    rng = np.random.default_rng(3)
    n = 3000
    df = pd.DataFrame({"g": rng.integers(0, 2, n), "x": rng.integers(0, 10, n),
                       "w": rng.integers(0, 2, n), "z": "common"})
    df["y"] = (rng.random(n) < 0.4).astype(int)
    planted = (df.g == 1) & df.x.isin([0, 1])
    df["p"] = np.clip(0.3 + 0.3 * df.y + 0.15 * planted + rng.normal(0, 0.03, n), 0.01, 0.99)
    rare = df.index[(df.g == 1) & (df.x == 9)][:RARE]
    df.loc[rare, "z"] = "rare"
    df.loc[rare, "p"] = 0.9999
    return df


def _scan(df, **kw):
    options = dict(protected=("g", 1), outcome="y", prediction="p", covariates=["x", "w", "z"],
                   n_restarts=10, n_permutations=0, random_state=0)
    options.update(kw)
    return conditional_bias_scan(df, **options)


def test_unconstrained_scan_headlines_the_three_people(table):
    res = _scan(table, min_group_size=1)
    assert res.found and res.n == RARE and res.subgroup == {"z": ["rare"]}
    assert "subgroups of any size (min-group-size 1)" in res.describe()


def test_default_headline_is_the_best_subgroup_of_at_least_30(table):
    res = _scan(table)
    assert res.min_group_size == 30 and res.found and res.n >= 30
    assert set(res.subgroup["x"]) == {0, 1}
    text = res.describe()
    assert "subgroups of at least 30 rows (min-group-size)" in text
    assert res.to_dict()["min_group_size"] == 30


def test_every_step_of_the_constrained_scan_keeps_the_size(table):
    for size in (30, 120, 400):
        res = _scan(table, min_group_size=size)
        assert res.n >= size or not res.found


def test_a_protected_class_smaller_than_the_minimum_detects_nothing(table):
    res = _scan(table, min_group_size=len(table))
    assert not res.found and res.subgroup is None and res.score == 0.0
    assert "no subgroup" in res.describe()


def test_the_permuted_scans_obey_the_same_constraint(table, monkeypatch):
    sizes = []
    init = SubsetScanner.__init__

    def spy(self, *args, **kwargs):
        init(self, *args, **kwargs)
        sizes.append(self.min_size)

    monkeypatch.setattr(SubsetScanner, "__init__", spy)
    res = _scan(table, min_group_size=40, n_permutations=4, n_jobs=1)
    assert res.null_scores.size == 4 and sizes == [40] * 5


def test_min_group_size_is_validated(table):
    with pytest.raises(CBSOptionError, match="min_group_size"):
        _scan(table, min_group_size=0)


def test_min_size_1_is_the_unconstrained_scan_unchanged():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"a": rng.integers(0, 4, 400), "b": rng.integers(0, 3, 400)})
    event = (rng.random(400) < np.where((X.a == 1) & (X.b == 2), 0.8, 0.3)).astype(float)
    expected = np.full(400, 0.3)
    plain = scan(X, event, expected, n_restarts=8, random_state=1)
    one = scan(X, event, expected, n_restarts=8, random_state=1, min_size=1)
    assert plain.subgroup == one.subgroup and plain.score == one.score and plain.n == one.n
    np.testing.assert_array_equal(plain.restart_scores, one.restart_scores)


@pytest.mark.parametrize("scorer", ["bernoulli", "gaussian"])
def test_scanner_results_respect_min_size(scorer):
    rng = np.random.default_rng(1)
    X = pd.DataFrame({"a": rng.integers(0, 6, 300), "b": rng.integers(0, 5, 300)})
    hot = (X.a == 5) & (X.b == 4)  # about 10 records, all with the event
    event = np.where(hot, 1.0, (rng.random(300) < 0.3).astype(float))
    if scorer == "gaussian":  # the event is then a probability
        event = np.clip(event, 0.01, 0.99)
    expected = np.full(300, 0.3)
    for size in (1, 25, 60, 150):
        sc = SubsetScanner(X, event, expected, scorer, penalty=0.5, min_size=size)
        res = sc.scan(n_restarts=6, random_state=2)
        assert res.n >= size and res.monotone
    # a step whose every option is too small says so
    sc = SubsetScanner(X, event, expected, scorer, min_size=1000)
    assert sc.step(None, "a").score == -np.inf
    assert sc.scan(n_restarts=2, random_state=0).n == 0


def test_random_starts_keep_at_least_min_size_records():
    rng = np.random.default_rng(4)
    X = pd.DataFrame({"a": rng.integers(0, 8, 500), "b": rng.integers(0, 8, 500)})
    sc = SubsetScanner(X, rng.random(500).round(), np.full(500, 0.5), min_size=200)
    for seed in range(20):
        incl = sc._random_start(np.random.default_rng(seed))
        assert search_module._kernels.subgroup_rows(sc.codes, incl, -1).sum() >= 200


def test_cli_min_group_size(table, tmp_path, capsys):
    path = tmp_path / "t.csv"
    table.to_csv(path, index=False)
    base = ["audit", "cbs", str(path), "--sensitive", "g", "--sensitive-value", "1",
            "--covariates", "x,w,z", "--outcome", "y", "--prediction", "p", "--restarts", "10",
            "--permutations", "0"]
    assert main([*base, "--format", "json"]) == 1
    out = json.loads(capsys.readouterr().out)["scans"][0]
    assert out["min_group_size"] == 30 and out["n"] >= 30
    assert main([*base, "--min-group-size", "1", "--format", "json"]) == 1
    assert json.loads(capsys.readouterr().out)["scans"][0]["n"] == RARE
    main(base)
    assert "subgroups of at least 30 rows (min-group-size)" in capsys.readouterr().out
    assert main([*base, "--min-group-size", "0"]) == 2
    assert "--min-group-size" in capsys.readouterr().err
