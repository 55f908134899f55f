"""End-to-end tests of ``conditional_bias_scan`` and ``cbs_audit`` (spec tests 14 and 15),
the result object, the fairness-definition registry and the model adapters."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from pcfair.audits.cbs import (
    cbs_audit,
    CBSOptionError,
    conditional_bias_scan,
    DEFINITIONS,
    discretize,
    subgroup_mask,
)
from pcfair.audits.cbs.audit import TABLE4_COLUMNS
from pcfair.audits.cbs.definitions import FairnessDefinition, resolve_definition
from pcfair.audits.cbs.expectations import estimate_expectations
from pcfair.audits.cbs.models import circuit_propensity
from pcfair.datasets.synthetic import compas_like_covariates, make_semisynthetic
from pcfair.errors import DataError, PCFairError, VariableError

COV = ["sex", "age", "charge", "priors"]


@pytest.fixture(scope="module")
def sim():
    """3,000 rows; protected = African-American; separation bias planted in a subgroup."""
    X = compas_like_covariates(3000, random_state=0)
    return make_semisynthetic(X, protected=("race", "African-American"), mu_sep=1.0,
                              random_state=5)


def _scan(df, **kw):
    base = dict(protected="protected", outcome="y", prediction="p", recommendation="pbin",
                covariates=COV, n_restarts=10, n_permutations=0, random_state=0)
    base.update(kw)
    if "model" in kw:
        del base["prediction"]
    return conditional_bias_scan(df, **base)


# ------------------------------------------------------------------ the happy path
def test_scan_finds_the_planted_subgroup_and_reports_it(sim):
    res = _scan(sim.data, definition="fpr")
    a = sim.data.protected.to_numpy().astype(bool)
    detected = subgroup_mask(sim.data, res.subgroup) & a & (sim.data.y == 0).to_numpy()
    planted = sim.in_bias & (sim.data.y == 0).to_numpy()
    assert res.found and res.score > 10
    assert np.count_nonzero(detected & planted) / np.count_nonzero(detected | planted) > 0.8
    assert res.parameter == "q" and res.multiplier > 1
    assert res.definition.name == "fpr" and res.protected == "protected = 1"
    assert res.n_protected == int((a & (sim.data.y == 0)).sum())


# ------------------------------------------------------------------ test 15: reporting
def test_report_counts_and_rates_match_pandas(sim):
    df = sim.data
    res = _scan(df, definition="fpr")
    a = df.protected == 1
    keep = df.y == 0
    inside = pd.Series(subgroup_mask(df, res.subgroup), index=df.index)
    det = df[a & keep & inside]
    comp = df[~a & keep & inside]
    assert res.n == len(det)
    assert res.observed_rate == pytest.approx(det.pbin.mean())
    assert res.comparison_n == len(comp)
    assert res.comparison_rate == pytest.approx(comp.pbin.mean())
    assert res.expected_rate < res.observed_rate
    # the Gaussian family reports the mean prediction
    g = _scan(df, family="separation", predictions="probabilities", condition_value=0)
    inside = pd.Series(subgroup_mask(df, g.subgroup), index=df.index)
    assert g.parameter == "mu" and g.multiplier > 0 and g.sigma > 0
    assert g.observed_rate == pytest.approx(df[a & keep & inside].p.mean())
    assert g.comparison_rate == pytest.approx(df[~a & keep & inside].p.mean())


def test_nothing_is_reported_when_the_best_score_is_zero(sim):
    res = _scan(sim.data, definition="fpr", direction="negative", penalty=50.0)
    assert not res.found
    assert res.subgroup is None and res.score == 0.0 and res.n == 0
    assert res.multiplier == 1.0 and np.isnan(res.observed_rate)
    assert "no subgroup" in res.describe()
    assert res.to_dict()["subgroup"] is None


def test_result_serialisation(sim):
    res = _scan(sim.data, definition="fpr", n_permutations=3, n_jobs=1)
    d = res.to_dict()
    json.dumps(d)
    assert d["n_permutations"] == 3 and len(d["null_scores"]) == 3
    frame = res.to_frame()
    assert frame.shape[0] == 1 and {"detected", "score", "p_value"} <= set(frame.columns)
    text = str(res)
    assert "detected:" in text and "p-value" in text
    assert res.subgroup_text.startswith("protected = 1 & ")
    assert res.comparison_text.startswith("not (protected = 1) & ")


# ------------------------------------------------------------------ test 14: value-conditional
def _cell_propensity(df, a):
    """A propensity 'fitter' returning the full-data saturated propensity of each X cell."""
    X = df[COV]
    keys = X.astype(str).agg("|".join, axis=1).to_numpy()
    share = pd.Series(a.astype(float)).groupby(keys).mean()

    def fixed(covariates, protected):
        ks = covariates[COV].astype(str).agg("|".join, axis=1).to_numpy()
        return share.loc[ks].to_numpy()

    return fixed


def test_fpr_scan_equals_separation_scan_on_the_y0_rows(sim):
    df = sim.data
    prop = _cell_propensity(df, df.protected.to_numpy())
    fpr = _scan(df, definition="fpr", propensity=prop)
    sub = df[df.y == 0].reset_index(drop=True)
    sep = _scan(sub, family="separation", predictions="recommendations", propensity=prop)
    assert fpr.subgroup == sep.subgroup
    assert fpr.score == pytest.approx(sep.score, rel=1e-9)
    assert fpr.multiplier == pytest.approx(sep.multiplier, rel=1e-9)
    assert (fpr.n, fpr.comparison_n) == (sep.n, sep.comparison_n)


@pytest.mark.parametrize(
    "event0,event1",
    [("fnr", "tpr"), ("tnr", "fpr"), ("npv", "false_omission_rate"), ("fdr", "ppv"),
     ("sufficiency_probabilities_negative", "sufficiency_probabilities")],
)
def test_event0_definitions_equal_flipped_scans(sim, event0, event1):
    for direction, opposite in (("positive", "negative"), ("negative", "positive")):
        r0 = _scan(sim.data, definition=event0, direction=direction)
        r1 = _scan(sim.data, definition=event1, direction=opposite)
        assert r0.subgroup == r1.subgroup
        assert r0.score == pytest.approx(r1.score, abs=1e-9)
        if r0.found:
            assert r0.multiplier == pytest.approx(1 / r1.multiplier, rel=1e-6)
            assert r0.observed_rate == pytest.approx(1 - r1.observed_rate)


def test_gaussian_event0_equals_flipped_scan(sim):
    kw = dict(family="separation", predictions="probabilities", condition_value=0)
    r0 = _scan(sim.data, event=0, direction="negative", **kw)
    r1 = _scan(sim.data, event=1, direction="positive", **kw)
    assert r0.subgroup == r1.subgroup and r0.found
    assert r0.score == pytest.approx(r1.score, abs=1e-9)
    assert r0.multiplier == pytest.approx(-r1.multiplier, abs=1e-12)


# ------------------------------------------------------------------ options and definitions
def test_definitions_cover_table_1():
    assert len(DEFINITIONS) == 17
    assert resolve_definition("FPR") is DEFINITIONS["fpr"]
    d = DEFINITIONS["fnr"]
    assert (d.family, d.predictions, d.condition_value, d.event) == (
        "separation", "recommendations", 1, 0)
    assert DEFINITIONS["balance_negative_class"].score == "gaussian"
    assert DEFINITIONS["ppv"].describe() == "Pr(Y=1 | Pbin=1, X) independent of A"
    assert FairnessDefinition("sufficiency", "recommendations", 0, 0).name == "npv"
    with pytest.raises(CBSOptionError, match="choose one of .*fpr"):
        resolve_definition("fairness")
    with pytest.raises(CBSOptionError, match="continuous"):
        FairnessDefinition("sufficiency", "probabilities", condition_value=1)
    with pytest.raises(CBSOptionError, match="family='both'"):
        FairnessDefinition("both")


def test_results_are_reproducible_across_worker_counts(sim):
    one = _scan(sim.data, definition="ppv", direction="negative", n_permutations=6, n_jobs=1,
                random_state=3)
    two = _scan(sim.data, definition="ppv", direction="negative", n_permutations=6, n_jobs=2,
                random_state=3)
    np.testing.assert_array_equal(one.null_scores, two.null_scores)
    assert one.p_value == two.p_value and one.subgroup == two.subgroup


# ------------------------------------------------------------------ models
def test_callable_and_fitted_model_predictions(sim):
    df = sim.data.drop(columns=["p", "pbin"])
    ref = _scan(sim.data, definition="fpr", recommendation=None)
    p = sim.data.p.to_numpy()
    res = _scan(df, definition="fpr", model=lambda batch: p[batch.index], recommendation=None)
    assert res.subgroup == ref.subgroup and res.score == pytest.approx(ref.score)
    feats = pd.get_dummies(sim.data[COV + ["protected"]].astype(str), dtype=float)
    lr = LogisticRegression(max_iter=500).fit(feats, sim.data.y)
    data = pd.concat([feats, sim.data[COV + ["protected", "y"]]], axis=1)
    data.columns = [str(c) for c in data.columns]
    out = _scan(data, definition="fpr", model=lr, recommendation=None)
    assert 0.0 <= out.observed_rate <= 1.0 and out.n_protected > 0


def test_labels_only_model_supports_only_recommendation_scans(sim):
    df = sim.data.assign(label=sim.data.pbin)
    ok = _scan(df, definition="fpr", prediction="label", recommendation=None)
    ref = _scan(df, definition="fpr")
    assert ok.score == pytest.approx(ref.score)
    with pytest.raises(DataError, match="labels-only model"):
        _scan(df, definition="balance_negative_class", prediction="label")


class _TableCircuit:
    """Stand-in for a pcfair circuit: resamples the rows of a table matching the evidence."""

    def __init__(self, data: pd.DataFrame):
        self.data = data.reset_index(drop=True)

    def sample(self, n, evidence=None, random_state=None):
        rows = self.data
        for k, v in (evidence or {}).items():
            rows = rows[rows[k] == v]
        rng = np.random.default_rng(random_state)
        return rows.iloc[rng.integers(0, len(rows), n)].reset_index(drop=True)


def test_a_sample_only_object_is_not_a_model():
    df = pd.DataFrame({"g": [0, 1] * 50, "x": [0, 1, 2, 0] * 25, "y": [0, 1] * 50})
    with pytest.raises(PCFairError, match="model must be a Circuit"):
        conditional_bias_scan(df, protected=("g", 1), outcome="y", model=_TableCircuit(df),
                              covariates=["x"], definition="fpr", n_permutations=0)


def test_circuit_propensity_extension_is_labelled():
    rng = np.random.default_rng(5)
    n = 1200
    X = pd.DataFrame({"x": rng.integers(0, 3, n)})
    a = rng.random(n) < np.array([0.2, 0.5, 0.7])[X.x.to_numpy()]
    event = (rng.random(n) < 0.4).astype(int)
    fit = circuit_propensity(_TableCircuit, n_samples=4000, random_state=0)
    ex = estimate_expectations(X, a, event, propensity=fit)
    assert ex.propensity_model == "circuit_propensity"
    share = pd.Series(a).groupby(X.x.to_numpy()).mean().to_numpy()
    np.testing.assert_allclose(ex.propensity, share[X.x.to_numpy()], atol=0.03)


# ------------------------------------------------------------------ cbs_audit and discretize
def test_cbs_audit_runs_every_protected_value_in_table4_layout():
    rng = np.random.default_rng(1)
    n = 1500
    df = pd.DataFrame({"g": rng.integers(0, 2, n), "x": rng.integers(0, 3, n)})
    df["y"] = (rng.random(n) < 0.5).astype(int)
    df["p"] = np.clip(0.35 + 0.3 * df.y + 0.2 * ((df.g == 1) & (df.x == 0)), 0, 1)
    table = cbs_audit(df, sensitive=["g", "x"], outcome="y", prediction="p",
                      definition="fpr", n_permutations=0, random_state=0)
    assert list(table.columns) == TABLE4_COLUMNS
    assert table.score.is_monotonic_decreasing and (table.score > 0).all()
    assert table.iloc[0].protected == "g = 1" and table.iloc[0].detected == "g = 1 & x = 0"
    full = cbs_audit(df, sensitive=["g", "x"], outcome="y", prediction="p", definition="fpr",
                     n_permutations=0, include_zero=True, random_state=0)
    assert len(full) == 5
    with pytest.raises(CBSOptionError, match="chooses covariates"):
        cbs_audit(df, sensitive=["g"], outcome="y", prediction="p", covariates=["x"])


def test_discretize_then_scan_a_continuous_covariate():
    rng = np.random.default_rng(2)
    n = 2000
    df = pd.DataFrame({"g": rng.integers(0, 2, n), "age": rng.uniform(18, 80, n)})
    df["y"] = (rng.random(n) < 0.4).astype(int)
    df["p"] = np.clip(0.3 + 0.3 * df.y + 0.3 * ((df.g == 1) & (df.age < 30)), 0, 1)
    with pytest.raises(DataError, match="covariate 'age' has 2000 distinct values"):
        conditional_bias_scan(df, protected=("g", 1), outcome="y", prediction="p",
                              covariates=["age"], definition="fpr", n_permutations=0)
    binned = discretize(df, {"age": [18, 30, 45, 60, 80]})
    res = conditional_bias_scan(binned, protected=("g", 1), outcome="y", prediction="p",
                                covariates=["age"], definition="fpr", n_permutations=0,
                                random_state=0)
    assert res.subgroup == {"age": ["[18, 30)"]}
    q = discretize(df, ["age"], bins=4)
    assert q.age.cat.categories.size == 4 and abs(q.age.value_counts().min() - 500) <= 1


# ------------------------------------------------------------------ input errors
def test_input_errors_name_the_problem(sim):
    df = sim.data
    with pytest.raises(VariableError, match="outcome column 'nope'"):
        _scan(df, outcome="nope")
    with pytest.raises(VariableError, match="value 'Martian' does not occur in column 'sex'"):
        _scan(df.assign(protected=0), protected=("sex", "Martian"), covariates=["age"])
    with pytest.raises(DataError, match="must be 0/1 or boolean"):
        _scan(df, protected="age")
    with pytest.raises(DataError, match="outcome column 'p' must hold 0/1"):
        _scan(df, outcome="p", prediction="y")
    with pytest.raises(DataError, match="probabilities in"):
        _scan(df.assign(p=df.p * 2))
    with pytest.raises(DataError, match="cannot be a covariate"):
        _scan(df, covariates=COV + ["y"])
    with pytest.raises(DataError, match="missing values"):
        _scan(df.assign(sex=df.sex.astype(object).where(df.index > 0)))
    with pytest.raises(CBSOptionError, match="either definition or family"):
        _scan(df, definition="fpr", family="sufficiency")
    with pytest.raises(CBSOptionError, match="direction='up'"):
        _scan(df, direction="up")
    with pytest.raises(CBSOptionError, match="n_permutations"):
        _scan(df, n_permutations=-1)
    with pytest.raises(CBSOptionError, match="propensity='forest'"):
        _scan(df, propensity="forest")
    with pytest.raises(PCFairError):
        _scan(df, protected=("sex", "Male"), covariates=["sex", "age"])


def test_a_circuit_model_is_scanned_with_its_exact_conditional():
    from pcfair.circuit import CircuitBuilder

    b = CircuitBuilder({"x": [0, 1, 2], "g": [0, 1], "y": [0, 1]})
    root = b.decision([(b.indicator("x", v), b.product(b.categorical("g", [0.5, 0.5]),
                                                      b.categorical("y", [1 - q, q])), 1 / 3)
                       for v, q in enumerate((0.2, 0.5, 0.8))])
    pc = b.build(root)
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"x": rng.integers(0, 3, 600), "g": rng.integers(0, 2, 600),
                       "y": rng.integers(0, 2, 600)})
    from pcfair.audits._model import as_model

    p = as_model(pc, outcome="y").proba(df.drop(columns=["y"]))
    np.testing.assert_allclose(p, np.array([0.2, 0.5, 0.8])[df.x.to_numpy()], rtol=1e-12)
    via_model = conditional_bias_scan(df, protected=("g", 1), outcome="y", model=pc,
                                      covariates=["x"], definition="fpr", n_permutations=0,
                                      random_state=0)
    stored = conditional_bias_scan(df.assign(p=p), protected=("g", 1), outcome="y",
                                   prediction="p", covariates=["x"], definition="fpr",
                                   n_permutations=0, random_state=0)
    assert via_model.to_dict() == stored.to_dict()
