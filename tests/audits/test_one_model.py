"""One model adapter (issue #17 item 1): every port gets the same results from one model given as
a Circuit, a fitted PCClassifier, a callable and stored predictions; the adapter's exact
inference is checked against brute-force enumeration, and what it refuses it refuses clearly."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.linear_model import LogisticRegression

from pcfair.audits._model import Model, as_model
from pcfair.audits.avoir import circuit_stream, monitor_model
from pcfair.audits.cbs import conditional_bias_scan
from pcfair.audits.structured_regression import StructuredRegression
from pcfair.audits import testsgd
from pcfair.errors import DataError, OptionError, VariableError
from pcfair.learn import PCClassifier

FEATURES = ["s", "t", "x"]


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    n = 1500
    df = pd.DataFrame({"s": rng.integers(0, 2, n), "t": rng.integers(0, 3, n),
                       "x": rng.integers(0, 3, n)})
    logit = -0.5 + 1.2 * df.s + 0.6 * (df.x == 2) - 0.4 * (df.t == 0)
    df["y"] = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    return df


@pytest.fixture(scope="module")
def clf(data) -> PCClassifier:
    return PCClassifier(random_state=0).fit(data[FEATURES], data["y"])


@pytest.fixture(scope="module")
def forms(data, clf):
    """The same model in four forms: (name, model keyword, data to audit)."""
    def proba(batch: pd.DataFrame) -> np.ndarray:
        return clf.predict_proba(batch[FEATURES])[:, 1]

    stored = data.assign(p=proba(data))
    return {
        "circuit": (dict(model=clf.circuit_, outcome="y"), data),
        "classifier": (dict(model=clf, outcome="y"), data),
        "callable": (dict(model=proba, outcome="y"), data),
        "stored": (dict(model="p", outcome="y"), stored),
    }


def test_the_four_forms_give_the_same_probabilities(data, forms):
    got = {name: as_model(**kw).proba(df.drop(columns=["y"])) for name, (kw, df) in forms.items()}
    for name, p in got.items():
        assert np.array_equal(p, got["circuit"]), name
    assert 0.05 < got["circuit"].mean() < 0.95


def test_cbs_results_are_identical(forms):
    out = {}
    for name, (kw, df) in forms.items():
        res = conditional_bias_scan(df, protected=("s", 1), outcome="y", model=kw["model"],
                                    covariates=["t", "x"], definition="fpr",
                                    n_restarts=5, n_permutations=0, random_state=0)
        out[name] = res.to_dict()
    assert out["circuit"]["n_protected"] > 0
    for name in out:
        assert out[name] == out["circuit"], name


def test_testsgd_results_are_identical_and_stored_predictions_are_refused(forms):
    out = {}
    for name, (kw, df) in forms.items():
        run = lambda: testsgd.audit(df[FEATURES], kw["model"], sensitive=["s", "t"],  # noqa: E731
                                    outcome="y", sample_thr=200, random_state=3)
        if name == "stored":
            with pytest.raises(OptionError, match="new inputs"):
                run()
            continue
        out[name] = run().to_frame()
    assert len(out["circuit"]) > 3 and out["circuit"]["score"].max() > 0.1
    for name in out:
        pd.testing.assert_frame_equal(out[name], out["circuit"])


def test_structured_regression_results_are_identical(forms):
    out = {}
    for name, (kw, df) in forms.items():
        sr = StructuredRegression(["s", "t"], outcome="y", output="pred", model=kw["model"],
                                  n_boot_var=20, n_splits=3, random_state=0).fit(df, "acc")
        out[name] = sr.result_.to_frame()
    assert out["circuit"]["structured"].between(0, 1).all()
    for name in out:
        pd.testing.assert_frame_equal(out[name], out["circuit"])


def test_avoir_results_are_identical(forms):
    spec = "E[r | s == 1] - E[r | s == 0] > 0.1"
    out = {}
    for name, (kw, df) in forms.items():
        res = monitor_model(kw["model"], df.drop(columns=["y"]), spec, outcome="y", failure_prob=0.1)
        out[name] = res.to_dict()
    assert out["circuit"]["n_observed"] > 0
    for name in out:
        assert out[name] == out["circuit"], name


def test_circuit_streams_are_identical_and_sampled_from_the_circuit(forms, clf):
    out = {}
    for name, (kw, _) in forms.items():
        if name == "stored":
            with pytest.raises(OptionError, match="new inputs"):
                next(circuit_stream(clf.circuit_, "p", outcome="y"))
            continue
        out[name] = pd.concat(circuit_stream(clf.circuit_, kw["model"], outcome="y",
                                             n_records=300, batch_size=100, random_state=1))
    for name in out:
        pd.testing.assert_frame_equal(out[name], out["circuit"])
    m = as_model(clf)
    assert list(m.sample(5, random_state=0).columns) == list(clf.circuit_.names)
    for population in (clf, m):  # the classifier's (or the Model's) circuit is the sampler
        again = pd.concat(circuit_stream(population, clf, outcome="y", n_records=300,
                                         batch_size=100, random_state=1))
        pd.testing.assert_frame_equal(again, out["circuit"])


# ------------------------------------------------------------------ exactness against brute force
def _random_joint(rng, arities):
    """A circuit that is an explicit joint table (a sum of products of indicators)."""
    from pcfair.circuit import CircuitBuilder

    names = [f"v{i}" for i in range(len(arities))]
    b = CircuitBuilder({n: list(range(k)) for n, k in zip(names, arities)})
    cells = list(itertools.product(*[range(k) for k in arities]))
    w = rng.dirichlet(np.ones(len(cells)))
    root = b.sum([b.product(*[b.indicator(n, v) for n, v in zip(names, cell)]) for cell in cells],
                 weights=list(w))
    return b.build(root), names, cells, w


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.lists(st.integers(2, 3), min_size=2, max_size=4))
def test_circuit_probabilities_match_enumeration(seed, arities):
    rng = np.random.default_rng(seed)
    pc, names, cells, w = _random_joint(rng, arities)
    target, fav = names[-1], 1
    rows = []
    for _ in range(6):  # random partial rows: a value or missing for each input
        rows.append({n: (int(rng.integers(0, k)) if rng.random() < 0.6 else np.nan)
                     for n, k in zip(names[:-1], arities[:-1])})
    batch = pd.DataFrame(rows, columns=names[:-1])
    got = as_model(pc, outcome=target, favorable=fav).proba(batch)
    cells = np.array(cells)
    for r, row in enumerate(rows):
        match = np.ones(len(cells), dtype=bool)
        for j, n in enumerate(names[:-1]):
            if not np.isnan(row[n]):
                match &= cells[:, j] == row[n]
        num = w[match & (cells[:, -1] == fav)].sum()
        assert got[r] == pytest.approx(num / w[match].sum(), rel=1e-9, abs=1e-12)


# ------------------------------------------------------------------ what the adapter refuses
def test_the_adapter_refuses_clearly(data, clf):
    with pytest.raises(OptionError, match="exactly one"):
        as_model()
    with pytest.raises(OptionError, match="exactly one"):
        as_model(clf, prediction="p")
    with pytest.raises(OptionError, match="needs outcome"):
        as_model(clf.circuit_)
    with pytest.raises(VariableError, match="not a variable of the circuit"):
        as_model(clf.circuit_, outcome="nope")
    with pytest.raises(VariableError, match="favorable=7"):
        as_model(clf.circuit_, outcome="y", favorable=7)
    with pytest.raises(OptionError, match="model must be a Circuit"):
        as_model(42)
    with pytest.raises(OptionError, match="no circuit to sample"):
        as_model(lambda b: np.zeros(len(b))).sample(3)
    lr = LogisticRegression().fit(data[FEATURES], data["y"])
    with pytest.raises(VariableError, match="favorable=5 is not a class"):
        as_model(lr, favorable=5)
    with pytest.raises(VariableError, match="reads column 'x'"):
        as_model(lr).proba(data[["s", "t"]])
    with pytest.raises(DataError, match="probabilities in"):
        as_model(prediction="q").proba(pd.DataFrame({"q": [0.5, 1.5]}))
    with pytest.raises(VariableError, match="prediction column 'q'"):
        as_model("q").proba(data)


def test_outputs_are_read_as_probabilities_or_labels(data):
    labels = as_model(lambda b: np.where(b["s"] == 1, "yes", "no"), favorable="yes")
    assert labels.proba(data).tolist() == (data["s"] == 1).astype(float).tolist()
    zero_one = as_model(lambda b: b["s"].to_numpy(), favorable=0)  # 0/1 labels, favourable 0
    assert zero_one.proba(data).tolist() == (data["s"] == 0).astype(float).tolist()
    scores = as_model(lambda b: np.column_stack([b["s"], 1 - b["s"]]))  # argmax labels
    assert scores.hits(data).tolist() == (data["s"] == 0).tolist()
    assert isinstance(as_model(labels), Model) and as_model(labels) is labels
    # missing values in a circuit's rows are marginalised: P(y | s) from P(y | s, t, x)
    clf = PCClassifier(random_state=0).fit(data[FEATURES], data["y"])
    m = as_model(clf.circuit_, outcome="y")
    p_s = m.proba(pd.DataFrame({"s": [1]}))
    full = pd.DataFrame(list(itertools.product([1], range(3), range(3))), columns=FEATURES)
    joint = np.exp(clf.circuit_.log_marginal(full))
    assert p_s[0] == pytest.approx(float(np.sum(joint * m.proba(full)) / np.sum(joint)))
