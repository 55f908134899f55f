"""Structured regression: CLI, PC adapters, populations, plot and notebook section."""

from __future__ import annotations

import json
import runpy
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED_DATA, requires_data

from _case_studies import (
    add_semi_synthetic_output,
    make_diabetes_like_population,
    semi_synthetic_means,
)

import pcfair.audits.structured_regression as sr_pkg
import pcfair.cli
from pcfair.audits.structured_regression import StructuredRegression, true_group_metric
from pcfair.audits.structured_regression.plot import plot_estimates
from pcfair.audits.structured_regression.populations import sample_population, stratified_sample
from pcfair.errors import OptionError, DataError, PCFairError, SpecError

ROOT = Path(__file__).resolve().parents[2]


class TinyPC:
    """A stand-in for a pcfair circuit: a small Bayesian network race -> x, (x, sex) -> y.

    It has the circuit protocol the port relies on: ``sample(n, evidence, random_state)``
    returning integer category codes, and ``predict_proba`` for the decision ``y``.
    """

    p_race = np.array([0.6, 0.3, 0.1])
    p_sex = np.array([0.5, 0.5])
    p_x1_given_race = np.array([0.3, 0.5, 0.8])
    p_y1_given_x_sex = np.array([[0.2, 0.3], [0.6, 0.9]])

    def sample(self, n, evidence=None, random_state=None):
        rng = np.random.default_rng(random_state)
        evidence = dict(evidence or {})
        out = []
        while sum(len(o) for o in out) < n:
            m = 2 * n
            race = rng.choice(3, size=m, p=self.p_race) if "race" not in evidence else np.full(m, evidence["race"])
            sex = rng.choice(2, size=m, p=self.p_sex) if "sex" not in evidence else np.full(m, evidence["sex"])
            x = (rng.random(m) < self.p_x1_given_race[race]).astype(int)
            y = (rng.random(m) < self.p_y1_given_x_sex[x, sex]).astype(int)
            frame = pd.DataFrame({"race": race, "sex": sex, "x": x, "y": y})
            for var in ("x", "y"):
                if var in evidence:
                    frame = frame[frame[var] == evidence[var]]
            out.append(frame)
        return pd.concat(out).iloc[:n].reset_index(drop=True)

    def predict_proba(self, X):
        p = self.p_y1_given_x_sex[X["x"].to_numpy(), X["sex"].to_numpy()]
        return np.column_stack([1 - p, p])


class DeafPC(TinyPC):
    """Ignores evidence: stratified sampling must notice."""

    def sample(self, n, evidence=None, random_state=None):
        return super().sample(n, None, random_state)


# --------------------------------------------------------------------------- PC adapters
def test_pc_population_and_stratified_evaluation_draw():
    pc = TinyPC()
    pop = sample_population(pc, 20_000, random_state=0)
    assert len(pop) == 20_000
    assert pop["race"].value_counts(normalize=True).sort_index().to_numpy() == pytest.approx(pc.p_race, abs=0.02)
    sizes = pd.Series({(0, 0): 30, (0, 1): 5, (1, 0): 0, (1, 1): 12, (2, 0): 1, (2, 1): 3})
    draw = stratified_sample(pc, ["race", "sex"], sizes, random_state=1)
    counts = draw.groupby(["race", "sex"]).size()
    assert counts.to_dict() == {k: v for k, v in sizes.items() if v > 0}
    again = stratified_sample(pc, ["race", "sex"], sizes, random_state=1)
    pd.testing.assert_frame_equal(draw, again)
    with pytest.raises(DataError, match="ignored the evidence"):
        stratified_sample(DeafPC(), ["race", "sex"], sizes, random_state=1)
    with pytest.raises(SpecError, match="not a sampler"):
        sample_population(object(), 5)


def test_pc_generates_semi_synthetic_evaluation_data():
    """A PC stands in for D: integer-coded population, semi-synthetic outputs, truth, SR fit."""
    pop = sample_population(TinyPC(), 30_000, random_state=2)
    pop = add_semi_synthetic_output(pop, "age+rc", age="x", age_level=1, race="race", race_level=0, random_state=3)
    truth = true_group_metric(pop, ["race", "sex"], output="y_hat")
    mu = semi_synthetic_means(pop, "age+rc", age="x", age_level=1, race="race", race_level=0)
    assert pop["y_hat_mu"].to_numpy() == pytest.approx(mu)
    draw = stratified_sample(pop, ["race", "sex"], {(r, s): 40 for r in range(3) for s in range(2)}, random_state=4)
    sr = StructuredRegression(["race", "sex"], outcome="y", output="y_hat", explanatory=["x"], n_splits=3).fit(draw, "mean")
    est = sr.estimates_
    assert (est["n"] == 40).all()
    assert np.abs(est["structured"] - truth).mean() < 0.1


def test_pc_classifier_is_evaluated_through_its_predictions():
    pc = TinyPC()
    data = sample_population(pc, 3000, random_state=5)
    via_model = StructuredRegression(["race", "sex"], outcome="y", output="pred", model=pc, n_splits=3).fit(data, "acc")
    manual = data.assign(pred=(pc.predict_proba(data)[:, 1] >= 0.5).astype(int))
    via_column = StructuredRegression(["race", "sex"], outcome="y", output="pred", n_splits=3).fit(manual, "acc")
    pd.testing.assert_frame_equal(via_model.estimates_, via_column.estimates_)
    score = StructuredRegression(
        ["race", "sex"], outcome="y", model=pc, threshold=0.5, n_splits=3
    ).fit(data, "fpr")
    assert np.isfinite(score.estimates_["structured"]).all()

    def leaky(X: pd.DataFrame) -> np.ndarray:  # the model never sees the outcome column
        assert "y" not in X.columns
        return np.ones(len(X), dtype=int)

    StructuredRegression(["race", "sex"], outcome="y", model=leaky, lambda_grid=[1.0]).fit(data, "sel")
    with pytest.raises(DataError, match="returned shape"):
        StructuredRegression(["race", "sex"], outcome="y", model=lambda X: np.ones(3)).fit(data, "sel")
    with pytest.raises(OptionError, match="model must be a Circuit"):
        StructuredRegression(["race", "sex"], outcome="y", model=object()).fit(data, "sel")


# --------------------------------------------------------------------------- populations / DGPs
def test_diabetes_like_population_shape_and_small_groups():
    pop = make_diabetes_like_population(75_000, random_state=0)
    assert len(pop) == 75_000 and pop["readmitted"].between(0, 1).all()
    from pcfair.audits.structured_regression import stratified_draw

    draw = stratified_draw(pop, ["race", "age", "gender"], 5000, random_state=1)
    sizes = draw.groupby(["race", "age", "gender"], observed=False).size()
    assert abs(len(draw) - 5000) < 30
    assert (sizes < 10).sum() >= 4 and (sizes <= 25).sum() >= 10  # the paper: 8 below 10, ~half below 25


@pytest.mark.parametrize("model", ["age", "expl", "age+rc", "age*rc"])
def test_semi_synthetic_models_match_the_papers_targets(model):
    pop = make_diabetes_like_population(40_000, random_state=0)
    out = add_semi_synthetic_output(pop, model, random_state=1)
    assert out["y_hat"].mean() == pytest.approx(0.27, abs=0.03)  # the paper's E_D[Yhat] ~ 0.27
    if model != "expl":
        assert out["y_hat"].std() == pytest.approx(0.44, abs=0.02)
    with pytest.raises(SpecError, match="unknown semi-synthetic model"):
        add_semi_synthetic_output(pop, "race")


# --------------------------------------------------------------------------- CLI
@pytest.fixture()
def cli(monkeypatch):
    """``pcfair.cli.main`` with only this port registered (other ports are built concurrently)."""
    monkeypatch.setattr(pcfair.cli, "AUDIT_MODULES", ("structured_regression",))
    return pcfair.cli.main


@pytest.fixture(scope="module")
def csv_path(tmp_path_factory) -> Path:
    rng = np.random.default_rng(6)
    n = 1500
    df = pd.DataFrame({"a": rng.choice(["p", "q", "r"], n), "b": rng.choice(["u", "v"], n), "c": rng.integers(0, 2, n)})
    df["y"] = rng.integers(0, 2, n)
    good = np.where(df["a"] == "p", 0.6, 0.9)
    df["yhat"] = np.where(rng.random(n) < good, df["y"], 1 - df["y"])
    df["score"] = np.clip(df["yhat"] * 0.6 + rng.random(n) * 0.4, 0, 1)
    path = tmp_path_factory.mktemp("sr") / "eval.csv"
    df.to_csv(path, index=False)
    return path


def test_cli_table(cli, csv_path, capsys):
    code = cli(["audit", "disaggregate", str(csv_path), "--sensitive", "a,b,c", "--outcome", "y",
                "--prediction", "yhat", "--metric", "accuracy", "--n-boot", "30"])
    out = capsys.readouterr().out
    assert code == 0
    assert "structured regression of accuracy over a x b x c" in out
    assert "standard_se" in out and "structured" in out and "lower" in out
    assert out.count(" ok") == 12


def test_cli_json_and_gof_exit_code(cli, csv_path, capsys):
    code = cli(["audit", "disaggregate", str(csv_path), "--sensitive", "a,b,c", "--outcome", "y",
                "--prediction", "score", "--threshold", "0.5", "--metric", "accuracy", "--format", "json",
                "--gof", "--no-intervals"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 1  # accuracy differs by attribute a: the sensitive F-test rejects
    assert payload["method"] == "regression" and len(payload["rows"]) == 12
    assert {k: payload["rows"][0][k] for k in "abc"} == {"a": "p", "b": "u", "c": 0}
    assert {"n", "standard", "standard_se", "structured", "status"} <= set(payload["rows"][0])
    assert payload["gof"][-1]["test"] == "expl+sens vs expl" and payload["gof"][-1]["p"] < 0.05


def test_cli_no_difference_exits_zero(cli, csv_path, capsys):
    code = cli(["audit", "disaggregate", str(csv_path), "--sensitive", "b,c", "--outcome", "y",
                "--prediction", "yhat", "--metric", "sel", "--gof", "--no-intervals", "--no-outcome-rates",
                "--format", "json"])
    payload = json.loads(capsys.readouterr().out)
    assert code == 0 and payload["gof"][0]["p"] > 0.05


def test_cli_bad_input_exits_two(cli, csv_path, capsys, tmp_path):
    code = cli(["audit", "disaggregate", str(csv_path), "--sensitive", "a,zz", "--outcome", "y", "--prediction", "yhat"])
    assert code == 2 and "sensitive column 'zz'" in capsys.readouterr().err
    code = cli(["audit", "disaggregate", str(csv_path), "--sensitive", "a,b", "--outcome", "y", "--prediction", "score"])
    assert code == 2 and "pass threshold" in capsys.readouterr().err
    code = cli(["audit", "disaggregate", str(tmp_path / "missing.csv"), "--sensitive", "a"])
    assert code == 2


# --------------------------------------------------------------------------- plot and API surface
def test_plot_estimates_sorts_by_group_size(csv_path):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    df = pd.read_csv(csv_path)
    sr = StructuredRegression(["a", "b"], outcome="y", output="yhat", n_splits=3, n_boot_var=30).fit(df, "acc")
    ax = plot_estimates(sr, B=20)
    labels = [t.get_text() for t in ax.get_xticklabels()]
    sizes = [int(lbl.split("(n=")[1].rstrip(")")) for lbl in labels]
    assert sizes == sorted(sizes) and len(labels) == 6
    assert {line.get_label() for line in ax.get_lines()} >= {"standard", "structured regression"}
    import matplotlib.pyplot as plt

    plt.close("all")
    with pytest.raises(DataError, match="fitted StructuredRegression or a DataFrame"):
        plot_estimates([1, 2])


def test_public_api_is_declared_and_documented():
    for name in sr_pkg.__all__:
        obj = getattr(sr_pkg, name)
        if callable(obj):
            assert obj.__doc__ and "Examples" in obj.__doc__, name
    assert issubclass(sr_pkg.NotFittedError, PCFairError)


def test_docstring_examples_run():
    import doctest
    import importlib
    import pkgutil

    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    failed = 0
    for info in pkgutil.iter_modules(sr_pkg.__path__):
        module = importlib.import_module(f"{sr_pkg.__name__}.{info.name}")
        failed += doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE).failed
    assert failed == 0


def test_options_are_validated():
    df = pd.DataFrame({"a": [0, 1] * 10, "b": [0, 0, 1, 1] * 5, "y_score": [0, 1, 1, 0, 1] * 4})
    for kw, msg in (
        ({"cv": "loo"}, "unknown cv"),
        ({"select": "max"}, "unknown select"),
        ({"lambda_grid": [-1.0]}, "lambda_grid"),
        ({"l1_ratio": 0.0}, "l1_ratio"),
        ({"n_boot_var": 1}, "n_boot_var"),
    ):
        with pytest.raises(SpecError, match=msg):
            StructuredRegression(["a", "b"], outcome=None, **kw).fit(df, "sel")
    sr = StructuredRegression(["a", "b"], outcome=None, n_splits=3, n_boot_var=10).fit(df, "sel")
    with pytest.raises(SpecError, match="confidence level"):
        sr.confint(1.5)
    with pytest.raises(SpecError, match="unknown method"):
        sr.standard_confint(method="wald")
    with pytest.raises(SpecError, match="unknown residuals"):
        sr.confint(residuals="wild")
    emp = sr.confint(0.9, residuals="empirical", B=30)
    assert (emp["lower"] <= emp["upper"]).all()


# --------------------------------------------------------------------------- notebook section
@requires_data()
def test_notebook_section_runs_top_to_bottom(monkeypatch, capsys):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setenv("PCFAIR_DATA", str(SHARED_DATA))
    script = ROOT / "notebooks" / "src" / "04_audits_structured_regression.py"
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*non-interactive.*")  # plt.show() under Agg
        namespace = runpy.run_path(str(script), run_name="__main__")
    out = capsys.readouterr().out
    plt.close("all")
    assert "6172 defendants, 24 race x sex x age groups" in out
    assert "rBLPR intervals cover" in out
    assert set(namespace["gof"].columns) == {"F", "df1", "df2", "p"}
    assert np.isfinite(namespace["table"]["structured"]).all()
