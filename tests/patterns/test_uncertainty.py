"""Parameter posterior, credible intervals of patterns and the probability of δ-fairness
(pcfair.inference.posterior, pcfair.patterns.uncertainty): exact small cases, the learners'
counts, the CLI, and (slow) simulation-based calibration."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import pcfair
from pcfair.circuit import CircuitBuilder
from pcfair.cli import main
from pcfair.errors import FormatError, OptionError
from pcfair.inference.flows import parameter_counts
from pcfair.inference.posterior import ParameterCounts, ParameterPosterior
from pcfair.learn import learn_pc
from pcfair.patterns.results import Pattern
from pcfair.patterns.uncertainty import (
    fairness_probability,
    pattern_draws,
    posterior_of,
    significance_census,
    with_intervals,
)


def _independent(n1: int, n0: int, alpha: float):
    """``d`` and ``s`` independent leaves: P(s = 1) has a Beta(n1 + α/2, n0 + α/2) posterior
    and Δ of ``s = 1`` is 0 in every draw."""
    b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    pc = b.build(b.product(b.categorical("d", [0.5, 0.5]), b.categorical("s", [0.5, 0.5])))
    codes = np.array([[0, 1]] * n1 + [[1, 0]] * n0)
    return pc, parameter_counts(pc, codes, alpha)


def test_a_single_parameter_interval_is_a_beta_quantile():
    pc, counts = _independent(7, 3, alpha=1.0)
    post = ParameterPosterior(pc, counts)
    pattern = Pattern(x={"s": 1}, y={}, score=0.0, probability=0.5, divergence=0.0)
    scores, probs = pattern_draws(post, "d", 1, [pattern], draws=20_000, random_state=0)
    assert np.abs(scores).max() < 1e-12  # s tells nothing about d in any draw
    beta = stats.beta(7.5, 3.5)
    for q in (0.025, 0.05, 0.5, 0.95, 0.975):
        assert np.quantile(probs[:, 0], q) == pytest.approx(beta.ppf(q), abs=0.01)


def test_tiny_shapes_never_draw_a_zero():
    b = CircuitBuilder({"v": list(range(10))})
    pc = b.build(b.categorical("v", [0.1] * 10))
    post = ParameterPosterior(pc, parameter_counts(pc, np.array([[0]]), 1e-3))
    draws = post.sample_log_parameters(500, random_state=1)
    assert np.all(np.isfinite(draws))
    assert np.allclose(np.logaddexp.reduce(draws, axis=1), 0.0)


def test_zero_weights_stay_zero_and_draws_are_reproducible():
    b = CircuitBuilder({"v": [0, 1, 2]})
    pc = b.build(b.categorical("v", [0.0, 0.5, 0.5]))
    post = ParameterPosterior(pc, parameter_counts(pc, np.array([[1], [2], [2]]), 1.0))
    a = post.sample_log_parameters(50, random_state=3)
    assert np.all(a[:, 0] == -np.inf) and np.array_equal(a, post.sample_log_parameters(50, 3))


def test_the_posterior_mean_is_the_learners_estimate():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"d": rng.integers(0, 2, 300), "s": rng.integers(0, 3, 300),
                       "z": rng.integers(0, 2, 300)})
    for structure in ("naive_bayes", "clt"):
        pc = learn_pc(df, "d", structure=structure)
        assert pc.counts is not None and pc.counts.rows == 300
        mean = ParameterPosterior(pc).mean()
        assert np.allclose(mean.params, pc.params) and np.allclose(mean.edge_logw, pc.edge_logw)


def test_counts_travel_in_the_model_file_and_bad_ones_are_refused(tmp_path):
    df = pd.DataFrame({"d": [0, 1, 1, 0, 1] * 20, "s": [0, 1, 0, 1, 1] * 20})
    pc = learn_pc(df, "d")
    pcfair.save(pc, tmp_path / "m.json")
    back = pcfair.load(tmp_path / "m.json")
    assert np.array_equal(back.counts.leaves, pc.counts.leaves) and back.counts.rows == 100
    data = json.loads((tmp_path / "m.json").read_text())
    for bad in ({**data["counts"], "leaves": data["counts"]["leaves"][:-1]},
                {**data["counts"], "rows": 1.5}, {**data["counts"], "pseudocount": -1},
                {**data["counts"], "extra": 1}, [1, 2]):
        (tmp_path / "bad.json").write_text(json.dumps({**data, "counts": bad}))
        with pytest.raises(FormatError):
            pcfair.load(tmp_path / "bad.json")


def test_a_model_without_counts_needs_its_training_rows():
    df = pd.DataFrame({"d": [0, 1, 1, 0, 1] * 20, "s": [0, 1, 0, 1, 1] * 20})
    bare = learn_pc(df, "d").with_counts(None)
    with pytest.raises(OptionError, match="training"):
        posterior_of(bare)
    assert posterior_of(bare, df).counts.rows == 100


def _planted():
    rng = np.random.default_rng(5)
    n = 400
    s = rng.integers(0, 2, n)
    d = (rng.random(n) < np.where(s == 1, 0.7, 0.4)).astype(int)
    return pd.DataFrame({"d": d, "s": s, "z": rng.integers(0, 2, n)})


def test_intervals_on_a_certificate_and_a_pattern_set():
    pc = learn_pc(_planted(), "d")
    cert = with_intervals(pcfair.certify(pc, "d", "s", 0.1), pc, credible=0.9, random_state=0)
    w = cert.witness
    assert w.interval["level"] == 0.9 and w.interval["draws"] == 200
    lo, hi = w.interval["score"]
    assert lo < w.score < hi and w.interval["significant"]
    top = pcfair.find_patterns(pc, "d", "s", 0.0, kind="topk", k=4)
    with_iv = with_intervals(top, pc, random_state=0)
    frame = with_iv.to_frame()
    assert {"score_lo", "score_hi", "abs_lo", "abs_hi", "probability_lo", "probability_hi",
            "exceeds", "significant"} <= set(frame.columns)
    assert (frame["score_lo"] <= frame["score_hi"]).all()
    assert (frame["abs_lo"] >= 0).all() and frame["exceeds"].between(0, 1).all()
    json.dumps(with_iv.to_dict())  # JSON-ready
    again = with_intervals(top, pc, random_state=0).to_frame()
    pd.testing.assert_frame_equal(frame, again)  # reproducible


def test_the_bootstrap_relearns_the_structure():
    df = _planted()
    rng = np.random.default_rng(3)
    weak = df.assign(a=rng.integers(0, 2, len(df)), b=rng.integers(0, 2, len(df)))
    weak_post = posterior_of(learn_pc(weak, "d"), weak, method="bootstrap")
    structures = {(tuple(c.var), tuple(c.edge_a)) for c in weak_post.circuits(20, 0)}
    assert len(structures) > 1  # independent features: the Chow-Liu tree changes
    pc = learn_pc(df, "d")
    cert = with_intervals(pcfair.certify(pc, "d", "s", 0.1), pc, data=df, method="bootstrap",
                          draws=60, random_state=0)
    lo, hi = cert.witness.interval["score"]
    assert cert.witness.interval["method"] == "bootstrap" and lo < cert.witness.score < hi
    fp = fairness_probability(pc, "d", "s", 0.6, draws=20, data=df, method="bootstrap",
                              random_state=0)
    assert fp.probability == 1.0
    with pytest.raises(OptionError, match="training rows"):
        posterior_of(pc, method="bootstrap")
    with pytest.raises(OptionError, match="method must be"):
        posterior_of(pc, method="jackknife")


def test_the_significance_census_agrees_with_the_intervals():
    pc = learn_pc(_planted(), "d")
    census = significance_census(pc, "d", "s", (0.02, 0.1), credible=0.9, draws=100,
                                 random_state=4)
    for delta in (0.02, 0.1):
        listed = pcfair.find_patterns(pc, "d", "s", delta)
        flagged = with_intervals(listed, pc, credible=0.9, draws=100, random_state=4)
        row = census[census["delta"] == delta].iloc[0]
        assert row["patterns"] == listed.count
        assert row["significant"] == sum(p.interval["significant"] for p in flagged.patterns)
    with pytest.raises(OptionError, match="max_patterns"):
        significance_census(pc, "d", "s", (0.0,), max_patterns=1)


def test_the_pareto_plot_draws_error_bars():
    import matplotlib

    matplotlib.use("Agg")
    pc = learn_pc(_planted(), "d")
    front = with_intervals(pcfair.find_patterns(pc, "d", "s", 0.0, kind="pareto"), pc,
                           credible=0.9, draws=50, random_state=0)
    ax = front.plot()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "90% credible intervals" in labels
    plain = pcfair.find_patterns(pc, "d", "s", 0.0, kind="pareto").plot()
    assert not any("credible" in t.get_text() for t in plain.get_legend().get_texts())


def test_the_probability_of_fairness():
    pc = learn_pc(_planted(), "d")
    far = fairness_probability(pc, "d", "s", 0.6, draws=40, random_state=0)
    assert (far.probability, far.fair + far.unfair + far.incomplete) == (1.0, 40)
    near = fairness_probability(pc, "d", "s", 0.0, draws=40, random_state=0)
    assert near.probability == 0.0 and near.unfair == 40
    mid_delta = pcfair.certify(pc, "d", "s", 0.0, exact_max=True).max_abs_score
    mid = fairness_probability(pc, "d", "s", mid_delta, draws=200, random_state=0)
    assert 0.2 < mid.probability < 0.8  # the point model sits on the edge
    assert mid.stderr == pytest.approx(np.sqrt(mid.probability * (1 - mid.probability) / 200))
    assert "posterior draws certified fair" in mid.text()
    spread = fairness_probability(pc, "d", "s", mid_delta, draws=200, random_state=0, n_jobs=2)
    assert (spread.fair, spread.unfair) == (mid.fair, mid.unfair)  # the seed decides, not n_jobs


def test_the_draws_share_one_engine_choice(monkeypatch):
    """``engine="auto"`` weighs the engines once, on the point model, and every draw runs the
    concrete engine it chose; the counts equal those of that engine named outright."""
    from pcfair.patterns import engines

    pc = learn_pc(_planted(), "d")
    mid_delta = pcfair.certify(pc, "d", "s", 0.0, exact_max=True).max_abs_score
    calls = []
    decide = engines.decide
    monkeypatch.setattr(engines, "decide", lambda *a, **kw: calls.append(1) or decide(*a, **kw))
    auto = fairness_probability(pc, "d", "s", mid_delta, draws=30, random_state=1)
    assert len(calls) == 1  # the point model's choice, not one per draw
    assert auto.engine not in ("auto", "search", "sample")
    named = fairness_probability(pc, "d", "s", mid_delta, draws=30, random_state=1,
                                 engine=auto.engine)
    assert (named.fair, named.unfair, named.incomplete) == (auto.fair, auto.unfair,
                                                             auto.incomplete)
    lattice = fairness_probability(pc, "d", "s", mid_delta, draws=30, random_state=1,
                                   engine="lattice")
    assert (lattice.fair, lattice.unfair) == (auto.fair, auto.unfair)  # exact either way
    assert auto.to_dict()["engine"] == auto.engine and f"by {auto.engine}" in auto.text()
    boot = fairness_probability(pc, "d", "s", mid_delta, draws=8, random_state=1,
                                data=_planted(), method="bootstrap")
    assert boot.engine not in ("auto", "search", "sample") and len(calls) == 2


def test_cli_credible(tmp_path, capsys):
    df = _planted()
    path = tmp_path / "t.csv"
    df.to_csv(path, index=False)
    model = tmp_path / "m.json"
    assert main(["learn", str(path), "--decision", "d", "--out", str(model)]) == 0
    capsys.readouterr()
    base = ["certify", str(model), "--decision", "d", "--sensitive", "s", "--delta", "0.1",
            "--credible", "0.9", "--draws", "50"]
    assert main(base) == 1
    out = capsys.readouterr().out
    assert "90% credible interval of Δ" in out and "posterior draws certified fair" in out
    assert main([*base, "--format", "json"]) == 1
    answer = json.loads(capsys.readouterr().out)
    assert answer["fairness_probability"]["draws"] == 50
    assert answer["witness"]["interval"]["level"] == 0.9
    bare = tmp_path / "bare.json"
    pcfair.save(pcfair.load(model).with_counts(None), bare)
    assert main(["certify", str(bare), *base[2:]]) == 2
    assert "--data TRAIN.csv" in capsys.readouterr().err
    assert main(["certify", str(bare), *base[2:], "--data", str(path)]) == 1
    capsys.readouterr()
    ranked = ["patterns", str(model), "--decision", "d", "--sensitive", "s", "--delta", "0",
              "--kind", "topk", "--k", "3", "--credible", "0.95", "--format", "csv"]
    assert main(ranked) == 0
    assert "score_lo" in capsys.readouterr().out.splitlines()[0]
    assert main([*ranked[:-2], "--count"]) == 2


def test_the_report_says_which_patterns_are_robust():
    pc = learn_pc(_planted(), "d")
    text = pcfair.report(pc, "d", ["s"], 0.1, format="markdown", credible=0.9, draws=50, k=3)
    section = text.split("## How sure is this?")[1].split("\n## ")[0]
    assert "training rows the model records" in section and "posterior draws" in section
    assert "The witness s=" in section and ("robust" in section or "noise" in section)
    assert section.count("| s=") == 3  # the top-3, each with its interval and verdict
    assert "How sure is this?" not in pcfair.report(pc, "d", ["s"], 0.1, format="markdown")


# ----------------------------------------------------------------- simulation-based calibration
def _template(structure: str):
    """A learned structure over d (binary), a 3-valued sensitive z1 and two features."""
    rng = np.random.default_rng(11)
    n = 500
    z2 = rng.integers(0, 2, n)
    df = pd.DataFrame({"d": (rng.random(n) < 0.3 + 0.4 * z2).astype(int),
                       "z1": rng.integers(0, 3, n), "z2": z2,
                       "z3": (rng.random(n) < 0.2 + 0.6 * z2).astype(int)})
    return learn_pc(df, "d", structure=structure)


@pytest.mark.slow
@pytest.mark.parametrize("structure", ["naive_bayes", "clt"])
def test_simulation_based_calibration(structure):
    """200 replications: true parameters drawn from the prior the posterior uses (the
    posterior with no rows: Dirichlet(α/K) per node, on a fixed naive-Bayes or Chow-Liu
    structure), 200-2,000 rows drawn from that model, the parameters fitted on the structure.
    The 90% intervals of fixed patterns' Δ, and of the fitted model's top pattern (chosen
    from the data: under the prior the posterior still covers it), must cover the true Δ at a
    rate consistent with 0.9 (binomial test), and the probability of δ-fairness must be
    calibrated against the true model's verdict."""
    from pcfair.learn.parameters import fit_parameters

    template = _template(structure)
    alpha = 1.0
    prior = ParameterPosterior(template, ParameterCounts(
        np.zeros_like(template.counts.elements), np.zeros_like(template.counts.leaves),
        alpha, 0))
    rng = np.random.default_rng(2026)
    patterns = [Pattern(x={"z1": 0}, y={}, score=0, probability=0, divergence=0),
                Pattern(x={"z1": 2}, y={"z2": 1}, score=0, probability=0, divergence=0),
                Pattern(x={"z1": 1}, y={"z2": 0, "z3": 1}, score=0, probability=0,
                        divergence=0)]
    hits = np.zeros(len(patterns) + 1)
    seen = np.zeros(len(patterns) + 1)
    predicted, truth = [], []
    delta = 0.15
    for truth_pc in prior.circuits(200, random_state=rng):
        codes = truth_pc.variables.evidence_matrix(
            truth_pc.sample(int(rng.integers(200, 2001)), random_state=rng))
        fitted = fit_parameters(template, codes, alpha).with_counts(
            parameter_counts(template, codes, alpha))
        top = pcfair.find_patterns(fitted, "d", ["z1"], 0.0, kind="topk", k=1).patterns
        chosen = patterns + top[:1]
        true_scores = _exact_scores(truth_pc, chosen)
        scores, _ = pattern_draws(ParameterPosterior(fitted), "d", 1, chosen, draws=400,
                                  random_state=rng)
        lo, hi = np.nanquantile(scores, [0.05, 0.95], axis=0)
        ok = np.isfinite(true_scores)
        seen[:len(chosen)] += ok
        hits[:len(chosen)] += ok & (lo <= true_scores) & (true_scores <= hi)
        truth.append(bool(pcfair.certify(truth_pc, "d", ["z1"], delta).fair))
        predicted.append(fairness_probability(fitted, "d", ["z1"], delta, draws=60,
                                              random_state=rng).probability)
    for h, n in zip(hits, seen):  # three fixed patterns, then the top one
        assert n >= 150 and stats.binomtest(int(h), int(n), 0.9).pvalue > 0.001, (h, n)
    predicted, truth = np.array(predicted), np.array(truth)
    for lo_b, hi_b in ((0, 0.2), (0.2, 0.8), (0.8, 1.0001)):  # calibration in bins
        inside = (predicted >= lo_b) & (predicted < hi_b)
        if inside.sum() >= 10:
            mean_p = predicted[inside].mean()
            se = np.sqrt(max(mean_p * (1 - mean_p), 0.05) / inside.sum())
            assert abs(truth[inside].mean() - mean_p) < 4 * se + 0.05, (lo_b, hi_b)
    assert abs(truth.mean() - predicted.mean()) < 0.08


def _exact_scores(pc, patterns) -> np.ndarray:
    out = []
    for p in patterns:
        y, xy = p.y, {**p.y, **p.x}
        p_y, p_xy = float(pc.probability(y)), float(pc.probability(xy))
        if p_xy <= 0:
            out.append(np.nan)
            continue
        out.append(float(pc.probability({**xy, "d": 1})) / p_xy
                   - float(pc.probability({**y, "d": 1})) / p_y)
    return np.array(out)
