"""Tests of pcfair.audits.avoir.monitor, export, plot, stream and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pcfair.cli
from pcfair.audits.avoir import circuit_stream, E, Monitor, monitor_model, spec, Var
from pcfair.audits.avoir.errors import MonitorSettingError
from pcfair.audits.avoir.export import export_tree, to_json
from pcfair.audits.avoir.plot import plot_history
from pcfair.errors import DataError, VariableError

DIFF = "E[r | g == 1] - E[r | g == 0] < 0.1"


def _stream(seed: int, n: int, p_a: float = 0.83, mu_a: float = 0.8, mu_b: float = 0.5):
    rng = np.random.default_rng(seed)
    g = (rng.random(n) < p_a).astype(int)
    r = (rng.random(n) < np.where(g == 1, mu_a, mu_b)).astype(int)
    return pd.DataFrame({"g": g, "r": r})


def _state(res):
    return (res.verdict, res.stop, round(res.failure_prob, 12), res.n_observed, res.n_checks,
            res.terms[["value", "epsilon", "failure_prob"]].round(12).to_numpy().tolist())


@settings(max_examples=25, deadline=None)
@given(cuts=st.lists(st.integers(1, 599), max_size=12, unique=True),
       split=st.sampled_from(["optimized", "equal"]))
def test_any_batching_gives_the_row_by_row_result(cuts, split):
    # spec §6 G.6
    df = _stream(1, 600, mu_b=0.4)
    bounds = [0, *sorted(cuts), len(df)]
    chunked = Monitor(DIFF, split=split)
    for a, b in zip(bounds[:-1], bounds[1:]):
        chunked.update(df.iloc[a:b])
    whole = Monitor(DIFF, split=split)
    whole.update(df)
    assert _state(chunked.result()) == _state(whole.result())
    pd.testing.assert_frame_equal(chunked.history, whole.history)


def test_record_by_record_equals_one_batch():
    df = _stream(2, 400, mu_b=0.3)
    single = Monitor(DIFF)
    for rec in df.to_dict(orient="records"):
        single.update(rec)
    assert _state(single.result()) == _state(Monitor(DIFF).update(df))


def test_run_stops_at_the_verdict_and_can_continue():
    df = _stream(3, 6000)
    res = Monitor(DIFF).run(df)
    assert res.verdict is False and res.stop is not None
    assert res.n_observed == res.stop and res.stop % 5 == 0
    assert res.failure_prob <= 0.1 and res.holds is False
    go_on = Monitor(DIFF)
    full = go_on.run(df, until_verdict=False)
    assert full.stop == res.stop and full.n_observed == len(df)
    assert full.verdict is False and full.holds is False
    np.testing.assert_allclose(full.allocation, res.allocation)
    # chunked iterable stream gives the same stop
    chunks = (df.iloc[i:i + 333] for i in range(0, len(df), 333))
    assert Monitor(DIFF).run(chunks).stop == res.stop
    assert Monitor(DIFF).run(df, chunk_size=77).stop == res.stop


def test_stop_matches_the_first_check_decided_by_the_equal_split():
    df = _stream(4, 6000)
    m = Monitor(DIFF, split="equal", keep_history=True)
    res = m.run(df, until_verdict=False)
    h = m.history
    root = h[h["node"] == 0]
    # display bands may decide earlier, but only with δ = L·Δ, which is no verdict
    decided = root[root["truth"].notna() & (root["charged"] <= 0.1 + 1e-12)]
    assert int(decided["n_observed"].iloc[0]) == res.stop
    assert root[root["n_observed"] < res.stop]["charged"].min() > 0.1
    # before the verdict the display bands use δ_i = Δ per leaf
    before = h[(h["n_observed"] < res.stop) & (h["type"] == "Expectation")]
    assert np.allclose(before["failure_prob"], 0.1)
    after = h[(h["n_observed"] >= res.stop) & (h["type"] == "Expectation")]
    assert np.allclose(after["failure_prob"], 0.05)


def test_result_tables_and_summary():
    res = Monitor(DIFF).run(_stream(5, 5000))
    terms = res.terms
    assert list(terms["type"]) == ["SpecificationThreshold", "ETerm", "Expectation",
                                   "Expectation"]
    assert terms["parent_id"].iloc[1] == terms["id"].iloc[0]
    leaves = res.leaves
    assert leaves["n"].sum() == res.n_observed
    assert "verdict False at record" in res.summary()
    head = res.summary().splitlines()[1]  # failure probabilities in words, not δ and Δ
    assert "with failure probability" in head and "δ" not in head and "Δ" not in head
    d = res.to_dict()
    assert json.loads(json.dumps(d))["stop"] == res.stop
    assert d["terms"][2]["n"] == int(leaves["n"].iloc[0])


def test_export_has_one_row_per_node_with_history_per_check():
    # spec §6 G.5
    m = Monitor("(E[r | g == 1] - E[r | g == 0] < 0.5) & (E[r] > 0.2)", optimize_every=5)
    m.run(_stream(6, 1003, mu_b=0.7), until_verdict=False)
    rows = export_tree(m)
    assert len(rows) == len(m.program.nodes) == 7
    ids = {row["id"] for row in rows}
    assert rows[0]["parent_id"] is None
    assert all(row["parent_id"] in ids for row in rows[1:])
    assert {row["type"] for row in rows} == {"Specification", "SpecificationThreshold", "ETerm",
                                             "Expectation"}
    n_checks = m.result().n_checks
    assert n_checks == 200
    assert all(len(row["vals"]) == n_checks for row in rows)
    assert rows[0]["vals"][-1]["truth"] is True
    text = to_json(m)
    assert json.loads(text)[3]["vals"][0]["n"] >= 0
    assert "Infinity" not in text and "NaN" not in text


def test_export_to_a_file(tmp_path):
    m = Monitor("E[r] > 0.5")
    m.update(pd.DataFrame({"r": [1, 1, 1, 0, 1]}))
    path = tmp_path / "tree.json"
    to_json(m, path, indent=1)
    assert json.loads(path.read_text())[0]["repr"] == "E[r] > 0.5"


def test_history_can_be_dropped():
    m = Monitor(DIFF, keep_history=False)
    m.update(_stream(7, 500))
    assert m.history["check"].nunique() == 1


def test_reset_forgets_everything():
    m = Monitor(DIFF)
    m.run(_stream(8, 5000))
    m.reset()
    res = m.result()
    assert res.n_observed == 0 and res.verdict is None and len(m.history) == 0


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"failure_prob": 0}, "must lie in"),
    ({"failure_prob": 1.2}, "must lie in"),
    ({"split": "vf"}, "split must be one of"),
    ({"optimize_every": 0}, "optimize_every must be a positive integer"),
    ({"failure_charge": "some"}, "failure_charge"),
])
def test_bad_settings(kwargs, message):
    with pytest.raises(MonitorSettingError, match=message):
        Monitor(DIFF, **kwargs)


def test_bad_records():
    with pytest.raises(DataError, match="records must be"):
        Monitor(DIFF).update(42)
    with pytest.raises(DataError, match="key column 'id'"):
        Monitor(DIFF).update(_stream(0, 5), key="id")


def test_decorator_monitors_each_call():
    psi = "E[r | sex == 'F'] / E[r | sex == 'M'] > 0.5"

    @spec(psi, failure_prob=0.1)
    def hire(sex, score, *, bonus=0.0):
        return int(score + bonus > 0.5)

    rng = np.random.default_rng(0)
    calls = [("F" if rng.random() < 0.5 else "M", rng.random()) for _ in range(2003)]
    for sex, score in calls:
        hire(sex, score)
    assert hire.monitor.n_observed == 2000  # records reach the monitor at check boundaries
    res = hire.result()
    assert res.n_observed == 2003
    assert res.verdict is True  # both groups are hired at the same rate 0.5
    assert hire.__name__ == "hire"
    # the same verdict and stop as feeding the records directly
    frame = pd.DataFrame(calls, columns=["sex", "score"])
    frame["bonus"] = 0.0
    frame["r"] = (frame["score"] > 0.5).astype(int)
    direct = Monitor(psi, failure_prob=0.1).run(frame)
    assert (direct.verdict, direct.stop) == (res.verdict, res.stop)


def test_batched_decorator_and_monitor_model():
    X = pd.DataFrame({"s": np.tile([0, 1], 1000), "z": np.linspace(0, 1, 2000)})

    @spec("E[r | s == 1] - E[r | s == 0] < 0.3", batched=True)
    def decide(frame):
        return (frame["z"] > 0.5).astype(int).to_numpy()

    for i in range(0, 2000, 100):
        decide(X.iloc[i:i + 100])
    assert decide.monitor.result().n_observed == 2000

    class Model:
        def predict(self, frame):
            return frame["s"].to_numpy()

    res = monitor_model(Model(), X, "E[r | s == 1] - E[r | s == 0] < 0.3", failure_prob=0.05)
    assert res.verdict is False and res.stop < 2000
    res = monitor_model(lambda frame: np.ones(len(frame)), X, "E[r | s == 1] > 0.5")
    assert res.verdict is True
    with pytest.raises(DataError, match="expected one value per row"):
        monitor_model(lambda frame: np.ones(3), X, "E[r] > 0.5")


class TinyCircuit:
    """A stand-in population model: s ~ Bern(0.4), x | s, and d | x, s with known tables."""

    p_s = 0.4
    p_x = {0: 0.3, 1: 0.7}  # P(x = 1 | s)
    p_d = {(0, 0): 0.2, (0, 1): 0.6, (1, 0): 0.3, (1, 1): 0.8}  # P(d = 1 | s, x)

    def sample(self, n, evidence=None, random_state=None):
        rng = np.random.default_rng(random_state)
        s = (rng.random(n) < self.p_s).astype(int)
        if evidence is not None and "s" in evidence:
            s[:] = evidence["s"]
        x = (rng.random(n) < np.where(s == 1, self.p_x[1], self.p_x[0])).astype(int)
        pd_ = np.array([self.p_d[(a, b)] for a, b in zip(s, x)])
        d = (rng.random(n) < pd_).astype(int)
        return pd.DataFrame({"s": s, "x": x, "d": d})

    def p_d_given_s(self, s):
        return sum(self.p_x[s] ** x * (1 - self.p_x[s]) ** (1 - x) * self.p_d[(s, x)]
                   for x in (0, 1))


def test_circuit_stream_monitoring_with_known_truth():
    pc = TinyCircuit()
    gap = pc.p_d_given_s(1) - pc.p_d_given_s(0)  # 0.65 - 0.32 = 0.33
    assert gap == pytest.approx(0.33)
    seen = {}

    def classifier(X):
        seen["columns"] = list(X.columns)
        return X["x"].to_numpy()  # decides from x only

    stream = circuit_stream(pc, classifier, batch_size=250, n_records=20_000, outcome="d",
                            random_state=1)
    psi = (E(Var("y"), given=Var("s") == 1) - E(Var("y"), given=Var("s") == 0) > 0.1) & \
          (E(Var("r"), given=Var("s") == 1) - E(Var("r"), given=Var("s") == 0) > 0.3)
    res = Monitor(psi, failure_prob=0.05).run(stream)
    assert seen["columns"] == ["s", "x"]  # the decision variable is hidden from the model
    assert res.verdict is True  # truths: 0.33 > 0.1 and 0.4 > 0.3
    assert res.stop is not None and res.stop < 20_000


def test_circuit_stream_is_reproducible_and_validates():
    pc = TinyCircuit()
    a = pd.concat(circuit_stream(pc, lambda X: X["x"], n_records=130, batch_size=50,
                                 random_state=5))
    b = pd.concat(circuit_stream(pc, lambda X: X["x"], n_records=130, batch_size=50,
                                 random_state=5))
    assert len(a) == 130
    pd.testing.assert_frame_equal(a, b)
    cond = next(circuit_stream(pc, lambda X: X["x"], evidence={"s": 1}, random_state=0))
    assert (cond["s"] == 1).all()
    with pytest.raises(VariableError, match="outcome variable .q."):
        next(circuit_stream(pc, lambda X: X["x"], outcome="q"))
    with pytest.raises(DataError, match="sample"):
        next(circuit_stream(object(), lambda X: X))


def test_plot_history_draws_bands_and_thresholds():
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    m = Monitor("(E[r | g == 1] - E[r | g == 0] < 0.5) & (E[r] > 0.2)")
    m.run(_stream(9, 3000, mu_b=0.7), until_verdict=False)
    axes = plot_history(m)
    assert len(axes) == 2
    green = [ln for ln in axes[0].get_lines() if ln.get_color() == "green"]
    assert green and green[0].get_ydata()[0] == 0.5
    axes = plot_history(m, nodes=[0, "E[r]"])
    assert axes[0].get_yticks().tolist() == [-1, 0, 1]
    with pytest.raises(VariableError, match="no node 'E\\[q\\]'"):
        plot_history(m, nodes="E[q]")
    with pytest.raises(DataError, match="no history"):
        plot_history(Monitor("E[r] > 0.5"))
    plt.close("all")


@pytest.fixture
def cli(monkeypatch):
    # only this port's sub-command: other ports are developed concurrently
    monkeypatch.setattr(pcfair.cli, "AUDIT_MODULES", ("avoir",))
    return pcfair.cli.main


def test_cli_reports_a_violation_with_exit_code_1(cli, tmp_path, capsys):
    path = tmp_path / "stream.csv"
    _stream(10, 6000).to_csv(path, index=False)
    code = cli(["audit", "monitor", str(path), "--prediction", "r", "--sensitive", "g", "--spec", DIFF, "--failure-prob", "0.1"])
    out = capsys.readouterr().out
    assert code == 1
    assert "verdict False at record" in out
    code = cli(["audit", "avoir", str(path), "--prediction", "r", "--sensitive", "g", "--spec", DIFF, "--split", "equal",
                "--format", "json", "--export", str(tmp_path / "tree.json")])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["verdict"] is False and report["split"] == "equal"
    assert report["stop"] == Monitor(DIFF, split="equal").run(_stream(10, 6000)).stop
    assert len(json.loads((tmp_path / "tree.json").read_text())) == 4


def test_cli_true_exits_0_and_undetermined_exits_3(cli, tmp_path, capsys):
    path = tmp_path / "stream.csv"
    _stream(11, 3000, mu_b=0.78).to_csv(path, index=False)
    assert cli(["audit", "monitor", str(path), "--prediction", "r", "--sensitive", "g", "--spec", "E[r | g == 1] - E[r | g == 0] < 0.3"]
               ) == 0
    assert "verdict True" in capsys.readouterr().out
    assert cli(["audit", "monitor", str(path), "--prediction", "r", "--sensitive", "g", "--spec", "E[r] > 0.78", "--format", "json"]) == 3
    assert json.loads(capsys.readouterr().out)["verdict"] is None


def test_cli_bad_input_exit_2(cli, tmp_path, capsys):
    path = tmp_path / "stream.csv"
    _stream(12, 50).to_csv(path, index=False)
    assert cli(["audit", "monitor", str(path), "--prediction", "r", "--sensitive", "g", "--spec", "E[r | g == ] > 0.5"]) == 2
    assert "^" in capsys.readouterr().err
    assert cli(["audit", "monitor", str(path), "--prediction", "r", "--sensitive", "g", "--spec", "E[q] > 0.5"]) == 2
    assert "column 'q'" in capsys.readouterr().err
    assert cli(["audit", "monitor", str(path), "--prediction", "r", "--sensitive", "g", "--spec", DIFF, "--failure-prob", "2"]) == 2
    assert cli(["audit", "monitor", str(tmp_path / "missing.csv"), "--prediction", "r", "--sensitive", "g", "--spec", DIFF]) == 2


@settings(max_examples=25, deadline=None)
@given(keys=st.lists(st.integers(0, 6), min_size=1, max_size=60),
       cut=st.integers(0, 60), seed=st.integers(0, 10**6))
def test_upserts_match_a_naive_materialised_view(keys, cut, seed):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame({"id": keys, "g": rng.integers(0, 2, len(keys)),
                       "r": rng.integers(0, 2, len(keys))})
    m = Monitor(DIFF, optimize_every=3)
    m.update(df.iloc[:cut], key="id")
    res = m.update(df.iloc[cut:], key="id")
    view = df.drop_duplicates("id", keep="last")  # the latest row of every key
    for g, leaf in zip((1, 0), res.leaves.itertuples()):
        rows = view[view["g"] == g]
        assert leaf.n == len(rows)
        if len(rows):
            assert leaf.value == pytest.approx(rows["r"].mean())
    assert res.n_observed == len(df)


def test_keyed_run_until_verdict_commits_only_consumed_rows():
    df = _stream(13, 4000)
    df["id"] = np.arange(len(df)) % 3000  # the last 1000 rows update earlier keys
    m = Monitor(DIFF)
    res = m.run(df, key="id")
    assert res.stop is not None and res.n_observed == res.stop
    # state equals a fresh monitor fed exactly the consumed rows
    again = Monitor(DIFF).update(df.iloc[:res.stop], key="id")
    np.testing.assert_allclose(res.leaves["value"], again.leaves["value"])
    assert res.leaves["n"].tolist() == again.leaves["n"].tolist()
    with pytest.raises(DataError, match="missing values"):
        Monitor(DIFF).update(pd.DataFrame({"id": [1, None], "g": [1, 0], "r": [1, 1]}),
                             key="id")


def test_cli_limit_cuts_the_term_table(cli, tmp_path, capsys):
    path = tmp_path / "stream.csv"
    _stream(10, 6000).to_csv(path, index=False)
    argv = ["audit", "monitor", str(path), "--prediction", "r", "--sensitive", "g", "--spec", DIFF]
    cli([*argv, "--limit", "0"])
    full = capsys.readouterr().out
    cli([*argv, "--limit", "2"])
    short = capsys.readouterr().out
    rows = len(full.splitlines()) - 3  # the spec, the verdict, the header
    assert f"... and {rows - 2:,} more term(s) (--limit 0" in short and "more term" not in full
    assert len(short.splitlines()) == 3 + 2 + 1
