"""Fair learning (pcfair.learn.fair): the loop ends with a proof, and the baselines."""

import doctest
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

import pcfair
import pcfair.learn.fair as fair_module
from _pcgen import random_mixture
from conftest import requires_data
from pcfair.datasets import make_planted
from pcfair.learn import PCClassifier
from pcfair.learn.fair import (
    learn_fair_pc,
    learn_independent_pc,
    learn_mle_pc,
    learn_repaired_pc,
    naive_bayes_circuit,
    reweighing_weights,
)
from pcfair.patterns import certify, find_patterns


@pytest.fixture(scope="module")
def planted():
    data, _ = make_planted(3000, n_features=5, n_sensitive=2, effect=0.3, random_state=0)
    return data


def _ll(circuit, df):
    return float(circuit.log_marginal(df).mean())


@pytest.mark.parametrize("structure", ["clt", "naive_bayes"])
def test_planted_data_ends_certified_between_independent_and_mle(planted, structure):
    df, sens = planted.frame, planted.sensitive
    res = learn_fair_pc(df, "D", sens, 0.1, structure=structure, k=5)
    assert res.fair is True and res.status == "certified fair"
    assert res.certificate.complete and res.certificate.fair and res.certificate.witness is None
    again = certify(res.circuit, "D", sens, 0.1)
    assert again.fair and again.complete
    assert find_patterns(res.mle_circuit, "D", sens, 0.1, count_only=True).count > 0
    independent = learn_independent_pc(df, "D", sens, structure=structure)
    assert _ll(independent, df) < _ll(res.circuit, df) < _ll(res.mle_circuit, df)
    hist = res.history
    assert list(hist.columns[:4]) == ["iteration", "log_likelihood", "n_constraints",
                                      "patterns_found"]
    assert hist["iteration"].tolist() == list(range(len(hist)))
    assert hist["n_constraints"].is_monotonic_increasing
    assert hist["patterns_remaining"].iloc[-1] == 0 and hist["patterns_found"].iloc[-1] == 0
    assert hist["seconds"].is_monotonic_increasing
    assert res.num_constraints == hist["n_constraints"].iloc[-1] == len(res.patterns)
    assert (hist["max_violation"].dropna() <= 0).all()


@pytest.mark.parametrize("structure", ["clt", "naive_bayes"])
def test_a_loop_cut_short_ends_certified_by_decoupling(planted, structure):
    df, sens = planted.frame, planted.sensitive
    res = learn_fair_pc(df, "D", sens, 0.05, structure=structure, k=1, max_iter=1)
    assert res.fair is True and res.certificate.complete
    assert "decoupled the sensitive variables" in res.status
    assert "max_iter=1" in res.status  # why the loop stopped is still said
    # an independent check: the dense engine counts no pattern
    assert find_patterns(res.circuit, "D", sens, 0.05, engine="lattice",
                         count_only=True).count == 0
    lam = res.stats["decouple_lambda"]
    assert set(lam) == set(sens) and all(0 < w <= 1 for w in lam.values())
    steps = res.decoupling
    assert steps["phase"].iloc[0] == "all" and bool(steps["fair"].iloc[0])
    assert {"all", "shared"} <= set(steps["phase"]) <= {"all", "shared", *sens}
    chosen = steps[steps["fair"].astype(bool)].iloc[-1]
    assert [chosen[f"lambda[{s}]"] for s in sens] == [lam[s] for s in sens]
    assert chosen["log_likelihood"] == pytest.approx(_ll(res.circuit, df), abs=1e-9)
    # full decoupling costs more likelihood than the result, which costs more than the MLE
    assert steps["log_likelihood"].iloc[0] < _ll(res.circuit, df) < _ll(res.mle_circuit, df)
    # without decoupling the loop's own model is not fair
    off = learn_fair_pc(df, "D", sens, 0.05, structure=structure, k=1, max_iter=1,
                        decouple=False, fallback=False)
    assert off.fair is False and off.decoupling.empty and off.stats["decouple_lambda"] is None
    assert (res.circuit.counts is not None) and res.circuit.recipe.decision == "D"


def test_decoupling_stops_when_its_time_is_spent(planted):
    df, sens = planted.frame, planted.sensitive
    res = learn_fair_pc(df, "D", sens, 0.05, k=1, max_iter=1, decouple_time_limit=1e-9,
                        fallback=False)
    assert res.fair is False and res.decoupling.empty
    assert res.status.endswith("decoupling found no certified model")
    assert res.certificate.witness is not None  # the loop's own model and its witness


@pytest.mark.parametrize("decouple", [True, False])
def test_the_final_certification_is_bounded_where_decoupling_follows(planted, monkeypatch,
                                                                    decouple):
    limits = []
    real = fair_module.certify

    def recording(*args, **kwargs):
        limits.append(kwargs.get("time_limit"))
        return real(*args, **kwargs)

    monkeypatch.setattr(fair_module, "certify", recording)
    learn_fair_pc(planted.frame, "D", planted.sensitive, 0.05, k=1, max_iter=1,
                  decouple=decouple, fallback=False)
    assert limits[0] == (fair_module.DECOUPLE_PROBE_SECONDS if decouple else None)
    assert all(t <= fair_module.DECOUPLE_PROBE_SECONDS for t in limits[1:])
    assert len(limits) > 1 if decouple else len(limits) == 1


def test_decoupling_needs_a_tree_model(planted):
    df, sens = planted.frame, planted.sensitive
    res = learn_fair_pc(df, "D", sens, 0.02, structure="strudel", k=1, max_iter=1,
                        random_state=0, fallback=False)
    assert res.fair is False and res.decoupling.empty
    assert "decoupl" not in res.status


def test_mle_baseline_is_the_starting_point(planted):
    df, sens = planted.frame, planted.sensitive
    res = learn_fair_pc(df, "D", sens, 0.1, k=5, max_iter=0, decouple=False, fallback=False)
    assert res.iterations == 0 and res.fair is False and "max_iter" in res.status
    assert res.certificate.complete and res.certificate.witness is not None
    mle = learn_mle_pc(df, "D")
    np.testing.assert_allclose(mle.log_marginal(df), res.circuit.log_marginal(df), atol=1e-10)
    np.testing.assert_allclose(mle.log_marginal(df), pcfair.learn_pc(df, "D").log_marginal(df),
                               atol=1e-10)


def test_independent_baseline_has_no_discrimination(planted):
    df, sens = planted.frame, planted.sensitive
    for structure in ("clt", "naive_bayes"):
        pc = learn_independent_pc(df, "D", sens, structure=structure)
        assert certify(pc, "D", sens, 1e-9).fair
        rep = pc.properties()
        assert rep.deterministic and rep.structured_decomposable


def test_reweighing_makes_sensitive_and_decision_independent(planted):
    df, sens = planted.frame, planted.sensitive
    w = reweighing_weights(df, "D", sens)
    assert w.sum() == pytest.approx(len(df))
    joint = pd.DataFrame({"s": df[sens].astype(str).agg("|".join, axis=1), "d": df["D"], "w": w})
    p = joint.groupby(["s", "d"])["w"].sum().unstack() / w.sum()
    np.testing.assert_allclose(p.to_numpy(), np.outer(p.sum(axis=1), p.sum(axis=0)), atol=1e-12)
    # naive Bayes on repaired data (no smoothing): each sensitive leaf is the same under both
    # decisions, so a single sensitive value says nothing about D
    nb = learn_repaired_pc(df, "D", sens, structure="naive_bayes", pseudocount=0.0)
    for s in sens:
        for value in (0, 1):
            assert nb.conditional({"D": 1}, {s: value}) == pytest.approx(
                nb.conditional({"D": 1}), abs=1e-9)


def test_given_structure_and_naive_bayes_circuit(planted):
    df, sens = planted.frame, planted.sensitive
    names = list(df.columns)
    variables = pcfair.Variables(names, [(0, 1)] * len(names))
    d = names.index("D")
    tables = {v: np.full((2, 2), 0.5) for v in range(len(names)) if v != d}
    nb = naive_bayes_circuit(variables, d, np.array([0.5, 0.5]), tables)
    rep = nb.properties()
    assert rep.deterministic and rep.structured_decomposable and rep.smooth
    res = learn_fair_pc(df[list(reversed(names))], "D", sens, 0.1, structure=nb, k=5)
    assert res.fair is True
    assert res.circuit.names == nb.names
    with pytest.raises(pcfair.StructureError, match="deterministic"):
        learn_fair_pc(df[names[:3] + ["D"]].rename(columns=dict(zip(names[:3], ["x0", "x1", "x2"])))
                      .rename(columns={"D": "x3"}), "x3", ["x0"], 0.1,
                      structure=random_mixture(np.random.default_rng(0), [2, 2, 2, 2]))


def test_bad_arguments(planted):
    df = planted.frame
    with pytest.raises(ValueError, match="delta"):
        learn_fair_pc(df, "D", ["S1"], 0.0)
    with pytest.raises(pcfair.DataError, match="sensitive"):
        learn_fair_pc(df, "D", ["nope"], 0.1)
    with pytest.raises(pcfair.DataError, match="binary"):
        learn_fair_pc(df.assign(D=np.arange(len(df)) % 3), "D", ["S1"], 0.1)
    with pytest.raises(ValueError, match="structure"):
        learn_fair_pc(df, "D", ["S1"], 0.1, structure="forest")


def test_classifier_fair_option(planted):
    X, y = planted.X, planted.y
    clf = PCClassifier(fair={"sensitive": ["S1", "S2"], "delta": 0.1, "k": 5})
    assert clone(clf).get_params()["fair"] == clf.fair
    clf.fit(X, y)
    assert clf.certified_ is True
    assert certify(clf.circuit_, clf.target_, ["S1", "S2"], 0.1).fair
    assert clf.score(X, y) > 0.6
    by_index = PCClassifier(fair={"sensitive": [0, 1], "delta": 0.1, "k": 5}).fit(X.to_numpy(), y)
    assert by_index.certified_ is True
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        PCClassifier(fair={"sensitive": ["S1"], "delta": 0.05, "max_iter": 0,
                           "decouple": False, "fallback": False}).fit(X, y)
    assert any("not certified" in str(w.message) for w in caught)
    with pytest.raises(ValueError, match="delta"):
        PCClassifier(fair={"sensitive": ["S1"]}).fit(X, y)


@requires_data()
def test_compas_is_certified_fair():
    from pcfair.datasets import load_binarized

    ds = load_binarized("compas")
    res = learn_fair_pc(ds.frame, ds.target, ds.sensitive, 0.1)
    assert res.fair is True and res.certificate.complete
    assert res.history["patterns_remaining"].iloc[0] > 1000
    mle_ll = res.history["log_likelihood"].iloc[0]
    independent = learn_independent_pc(ds.frame, ds.target, ds.sensitive)
    assert _ll(independent, ds.frame) < res.history["log_likelihood"].iloc[-1] < mle_ll


@requires_data()
@pytest.mark.slow
@pytest.mark.parametrize("delta", [0.05, 0.1])
def test_adult_is_certified_fair(delta):
    """About 2-3 minutes per δ on 2 cores (dense oracle, 5-7 s per iteration)."""
    from pcfair.datasets import load_binarized

    ds = load_binarized("adult")
    res = learn_fair_pc(ds.frame, ds.target, ds.sensitive, delta, max_iter=50,
                        count_patterns=False)
    assert res.fair is True and res.certificate.complete and res.certificate.engine == "lattice"
    independent = learn_independent_pc(ds.frame, ds.target, ds.sensitive)
    mle_ll = res.history["log_likelihood"].iloc[0]
    fair_ll = res.history["log_likelihood"].iloc[-1]
    assert mle_ll - fair_ll < 0.25 * (mle_ll - _ll(independent, ds.frame))


@requires_data()
@pytest.mark.slow
@pytest.mark.parametrize("delta", [0.05, 0.1])
def test_german_naive_bayes_is_certified_by_the_search_engine(delta):
    """German's lattice does not fit the dense engine: the oracle runs branch and bound (each
    top-k run stopped after 30 s) and the naive-Bayes bound proves the result fair."""
    from pcfair.datasets import load_binarized

    ds = load_binarized("german")
    res = learn_fair_pc(ds.frame, ds.target, ds.sensitive, delta, structure="naive_bayes",
                        oracle_time_limit=30)
    assert res.fair is True and res.certificate.complete
    assert res.certificate.engine == "search"


def test_examples():
    result = doctest.testmod(fair_module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_verbose_prints_one_line_per_iteration(planted, capsys):
    res = learn_fair_pc(planted.frame, planted.target, planted.sensitive, 0.1, k=5,
                        verbose=True)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == len(res.history) + 1
    for line, (_, row) in zip(lines, res.history.iterrows()):
        assert line.startswith(f"iteration {row['iteration']}: ")
        assert f"{int(row['patterns_remaining']):,} pattern(s) left" in line
        assert f"log-likelihood {row['log_likelihood']:.6f} per row" in line
        assert f"{row['n_constraints']} constraint(s)" in line
    assert lines[-1].startswith("certified fair after")
    learn_fair_pc(planted.frame, planted.target, planted.sensitive, 0.1, k=5)
    assert capsys.readouterr() == ("", "")  # quiet by default, no bar off a terminal


def test_progress_bar_on_request(planted, capsys):
    learn_fair_pc(planted.frame, planted.target, planted.sensitive, 0.1, k=5, progress=True)
    assert "fair learning" in capsys.readouterr().err


def test_continuous_columns_need_bins(planted):
    rng = np.random.default_rng(0)
    df = planted.frame.assign(score=rng.normal(size=len(planted.frame)))
    with pytest.raises(pcfair.DataError, match="'score'.*bins=N"):
        learn_fair_pc(df, planted.target, planted.sensitive, 0.1)
    res = learn_fair_pc(df, planted.target, planted.sensitive, 0.1, k=5, bins=3,
                        structure="naive_bayes")
    score = res.circuit.variables.domains[res.circuit.variables.index("score")]
    assert len(score) == 3 and score[0].startswith("[") and res.fair is True


def test_an_oracle_call_that_finds_and_proves_nothing_looks_again_longer(planted, monkeypatch):
    """Both runs of an oracle call cut before any answer: the loop does not stop, it asks
    again about the same model with twice the time, and still ends with a proof."""
    real = fair_module.DiscriminationOracle.__call__
    limits = []

    def call(self, circuit):
        limits.append(self.time_limit)
        if len(limits) == 1:  # the first call: both runs cut at once
            self.time_limit = 1e-9
        return real(self, circuit)

    monkeypatch.setattr(fair_module.DiscriminationOracle, "__call__", call)
    res = learn_fair_pc(planted.frame, "D", planted.sensitive, 0.1, k=5, oracle_time_limit=5)
    assert limits[:2] == [5, 10]
    first = res.history.iloc[0]
    assert first["patterns_found"] == 0 and first["n_constraints"] == 0
    assert res.history.iloc[1]["n_constraints"] == 0  # the same model, asked again
    assert res.fair is True and res.certificate.complete
