"""Audits on a user's clock: ``time_limit=`` on the audit functions and ``--time-limit`` on every
``pcfair audit`` sub-command. A run the limit stops keeps what it established, says it is
incomplete (``complete: false`` and a note naming the limit) and exits 3 unless what it
established is a finding; a generous limit gives the answer of no limit. No test relies on
timing: the limits are tiny (1e-3 s, or a deadline already past) or generous (an hour)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from pcfair.audits import _cli
from pcfair._clock import check_time_limit, deadline_from
from pcfair.audits.avoir import Monitor, monitor_model
from pcfair.audits.cbs import conditional_bias_scan, cbs_audit
from pcfair.audits.cbs import permutation as permutation_module
from pcfair.audits.cbs.audit import TABLE4_COLUMNS
from pcfair.audits.structured_regression import StructuredRegression
from pcfair.audits import testsgd
from pcfair.cli import main
from pcfair.errors import OptionError

TINY = 1e-3
HOUR = 3600.0
PAST = 0.0  # a time.time() deadline that has passed


# ------------------------------------------------------------------------------ tables


@pytest.fixture(scope="module")
def cbs_table() -> pd.DataFrame:
    """Protected race = A; a planted bias in race = A & sex = M."""
    rng = np.random.default_rng(0)
    n = 2000
    df = pd.DataFrame({"race": rng.choice(["A", "B"], n), "sex": rng.choice(["F", "M"], n),
                       "age": rng.choice(["young", "old"], n)})
    df["y"] = (rng.random(n) < 0.4).astype(int)
    biased = (df.race == "A") & (df.sex == "M")
    df["p"] = np.clip(0.3 + 0.3 * df.y + 0.25 * biased + rng.normal(0, 0.05, n), 0.01, 0.99)
    return df


@pytest.fixture(scope="module")
def coin_table() -> pd.DataFrame:
    """Decisions that are a fair coin in every group: TestSGD's scores need more than the
    first 1001 samples, the monitor's parity verdict needs thousands of records."""
    rng = np.random.default_rng(1)
    n = 4000
    df = pd.DataFrame({"s": rng.choice(["F", "M"], n), "x": rng.integers(0, 5, n)})
    df["y"] = rng.integers(0, 2, n)
    df["p"] = rng.integers(0, 2, n)
    return df


def coin_model(batch: pd.DataFrame) -> np.ndarray:
    """A model whose decision does not depend on its input: a fair coin per row."""
    rng = np.random.default_rng(len(batch))
    return rng.integers(0, 2, len(batch))


def _csv(df: pd.DataFrame, tmp_path, name="t.csv"):
    path = tmp_path / name
    df.to_csv(path, index=False)
    return str(path)


def _json(capsys) -> dict:
    return json.loads(capsys.readouterr().out)


# ------------------------------------------------------------------------------ the clock


def test_time_limit_validation():
    assert check_time_limit(None) is None and check_time_limit(2) == 2.0
    assert check_time_limit(0) == 0.0  # pcfair's one clock: 0 is an immediate deadline
    for bad in (-1.0, float("nan"), float("inf"), True, "5"):
        with pytest.raises(OptionError, match="time_limit must be a positive number"):
            check_time_limit(bad)
    assert deadline_from(5.0, deadline=12.0) == 12.0
    with pytest.raises(OptionError, match="deadline"):
        deadline_from(None, deadline="soon")


def test_exit_status():
    assert _cli.exit_status(True, False) == 1  # a finding stands
    assert _cli.exit_status(False, False) == 3  # undetermined, not "nothing found"
    assert _cli.exit_status(False, True) == 0


@pytest.mark.parametrize("command", [
    ["audit", "cbs", "{csv}", "--sensitive", "race", "--outcome", "y", "--prediction", "p"],
    ["audit", "regression", "{csv}", "--sensitive", "race", "--outcome", "y",
     "--prediction", "p"],
    ["audit", "testsgd", "{csv}", "--model", "{model}", "--sensitive", "race"],
    ["audit", "monitor", "{csv}", "--prediction", "p", "--sensitive", "race"],
])
@pytest.mark.parametrize("value", ["0", "-1", "nan", "soon"])
def test_every_audit_refuses_a_bad_time_limit(cbs_table, tmp_path, capsys, command, value):
    model = tmp_path / "m.py"
    model.write_text("def predict(batch):\n    return (batch['sex'] == 'M').astype(int)\n")
    args = [a.format(csv=_csv(cbs_table, tmp_path), model=f"{model}:predict") for a in command]
    assert main([*args, "--time-limit", value]) == 2
    assert "--time-limit" in capsys.readouterr().err


def test_the_option_is_shared():
    parser = _cli.argparse.ArgumentParser()
    _cli.add_common(parser)
    action = next(a for a in parser._actions if "--time-limit" in a.option_strings)
    assert action.default is None and action.type.__name__ == "positive_float"


# ------------------------------------------------------------------------------ CBS


def _cbs(df, **kw):
    options = dict(protected=("race", "A"), outcome="y", prediction="p",
                   covariates=["sex", "age"], n_restarts=5, n_permutations=9, n_jobs=1,
                   random_state=1, definition="fpr")
    options.update(kw)
    return conditional_bias_scan(df, **options)


def test_cbs_tiny_limit_keeps_the_first_restart_and_says_so(cbs_table):
    for res in (_cbs(cbs_table, time_limit=TINY), _cbs(cbs_table, deadline=PAST)):
        assert not res.complete and res.restarts_run == 1
        assert res.found and res.subgroup == {"sex": ["M"]}  # what the first restart found
        assert res.p_value is None and res.null_scores.size == 0
        assert not res.detected(0.05)  # an untested subgroup is not a finding
        notes = " ".join(res.notes)
        assert "1 of 5 restarts (time limit)" in notes
        assert "0 of 9 permutations (time limit)" in notes
        d = res.to_dict()
        json.dumps(d)
        assert d["complete"] is False and d["restarts_run"] == 1 and d["notes"]
        assert d["permutations_requested"] == 9 and d["n_permutations"] == 0
        assert "INCOMPLETE (time limit)" in res.describe()
        assert res.to_frame()["complete"].tolist() == [False]


def test_cbs_cut_permutation_test_uses_the_permutations_that_finished(cbs_table,
                                                                       monkeypatch):
    full = _cbs(cbs_table, n_permutations=9)
    calls = {"n": 0}

    def after_four(deadline):  # the permutation loop's clock: four permutations, then the limit
        calls["n"] += 1
        return calls["n"] > 4

    monkeypatch.setattr(permutation_module, "expired", after_four)
    cut = _cbs(cbs_table, n_permutations=9, time_limit=HOUR)
    assert cut.null_scores.size == 4 and not cut.complete
    np.testing.assert_array_equal(cut.null_scores, full.null_scores[:4])
    assert cut.p_value == pytest.approx(
        (1 + np.count_nonzero(full.null_scores[:4] >= cut.score)) / 5)
    assert cut.score == full.score and cut.subgroup == full.subgroup
    assert "4 of 9 permutations (time limit)" in " ".join(cut.notes)
    assert "fewer permutations than asked" in " ".join(cut.notes)
    assert "based on 4 of 9 permutations (time limit)" in cut.describe()


def test_cbs_generous_limit_gives_the_answer_of_no_limit(cbs_table):
    plain, timed = _cbs(cbs_table), _cbs(cbs_table, time_limit=HOUR)
    assert timed.complete and not timed.notes
    a, b = plain.to_dict(), timed.to_dict()
    assert a == b


def test_cbs_results_do_not_depend_on_the_worker_count(cbs_table):
    one = _cbs(cbs_table, n_jobs=1)
    two = _cbs(cbs_table, n_jobs=2)
    np.testing.assert_array_equal(one.null_scores, two.null_scores)
    assert one.p_value == two.p_value and one.subgroup == two.subgroup


def test_cbs_audit_table_marks_the_cut_runs(cbs_table):
    table = cbs_audit(cbs_table, sensitive=["race", "sex"], outcome="y", prediction="p",
                      definition="fpr", n_restarts=3, n_permutations=3, n_jobs=1,
                      random_state=0, time_limit=TINY)
    assert list(table.columns) == TABLE4_COLUMNS and len(table)
    assert not table["complete"].any() and table["p_value"].isna().all()


CBS_ARGS = ["--sensitive", "race", "--sensitive-value", "A", "--covariates", "sex,age",
            "--outcome", "y", "--prediction", "p", "--definition", "fpr", "--seed", "1",
            "--restarts", "5", "--permutations", "9", "--jobs", "1"]


def test_cbs_cli_tiny_limit_exits_3_and_says_it_everywhere(cbs_table, tmp_path, capsys):
    csv = _csv(cbs_table, tmp_path)
    assert main(["audit", "cbs", csv, *CBS_ARGS, "--time-limit", "1e-3",
                 "--format", "json"]) == 3
    out = _json(capsys)
    assert out["complete"] is False and out["scans"][0]["complete"] is False
    assert "0 of 9 permutations (time limit)" in " ".join(out["scans"][0]["notes"])
    assert main(["audit", "cbs", csv, *CBS_ARGS, "--time-limit", "1e-3"]) == 3
    text = capsys.readouterr().out
    assert "INCOMPLETE" in text and "time limit" in text
    assert main(["audit", "cbs", csv, *CBS_ARGS, "--time-limit", "1e-3",
                 "--format", "csv"]) == 3
    frame = capsys.readouterr().out
    assert "complete" in frame.splitlines()[0] and "time limit" in frame


def test_cbs_cli_generous_limit_is_the_same_as_none(cbs_table, tmp_path, capsys):
    csv = _csv(cbs_table, tmp_path)
    assert main(["audit", "cbs", csv, *CBS_ARGS, "--alpha", "0.2", "--format", "json"]) == 1
    plain = _json(capsys)
    assert main(["audit", "cbs", csv, *CBS_ARGS, "--alpha", "0.2", "--format", "json",
                 "--time-limit", "3600"]) == 1
    assert _json(capsys) == plain and plain["complete"] is True


def test_cbs_cli_runs_the_permutations_on_every_core_by_default():
    parser = _cli.argparse.ArgumentParser()
    from pcfair.audits.cbs.cli import register

    register(parser.add_subparsers())
    args = parser.parse_args(["cbs", "d.csv", "--sensitive", "s"])
    assert args.jobs == -1 and args.min_group_size == 30 and args.time_limit is None


# ------------------------------------------------------------------------------ TestSGD


def _sgd(df, **kw):
    return testsgd.audit(df[["s", "x"]], coin_model, sensitive=["s"], random_state=0, **kw)


def test_testsgd_tiny_limit_scores_what_was_sampled(coin_table):
    res = _sgd(coin_table, time_limit=TINY)
    assert not res.complete
    assert len(res.table) == 2 and not res.table["converged"].any()
    assert (res.table["n_samples"] == 1001).all()  # the first block, then the limit
    assert (res.table["margin"] > 0.05).all()
    assert "2 of 2 rule sets scored (time limit)" in res.notes[0]
    d = res.to_dict()
    json.dumps(d)
    assert d["complete"] is False and d["notes"] == list(res.notes)


def test_testsgd_generous_limit_gives_the_answer_of_no_limit(coin_table):
    plain, timed = _sgd(coin_table), _sgd(coin_table, time_limit=HOUR)
    assert timed.complete and plain.complete and timed.notes == ()
    pd.testing.assert_frame_equal(plain.table, timed.table)
    assert plain.table["converged"].all()


def test_testsgd_cli(coin_table, tmp_path, capsys):
    model = tmp_path / "coin.py"
    model.write_text("import numpy as np\n\ndef predict(batch):\n"
                     "    return np.random.default_rng(len(batch)).integers(0, 2, len(batch))\n")
    csv = _csv(coin_table[["s", "x"]], tmp_path)
    base = ["audit", "testsgd", csv, "--model", f"{model}:predict", "--sensitive", "s"]
    assert main([*base, "--time-limit", "1e-3", "--format", "json"]) == 3
    out = _json(capsys)
    assert out["complete"] is False and "time limit" in out["notes"][0]
    assert main([*base, "--time-limit", "1e-3"]) == 3
    assert "INCOMPLETE (time limit)" in capsys.readouterr().out
    assert main([*base, "--format", "json"]) == 0
    plain = _json(capsys)
    assert main([*base, "--format", "json", "--time-limit", "3600"]) == 0
    assert _json(capsys) == plain and plain["complete"] is True


# ------------------------------------------------------------------------------ regression


def _sr(df):
    return StructuredRegression(["s"], outcome="y", output="p", n_boot_var=20,
                                n_splits=3).fit(df, "accuracy")


def test_regression_interval_bootstrap_on_the_clock(coin_table):
    sr = _sr(coin_table)
    cut = sr.confint(B=20, deadline=PAST)
    assert cut.attrs == {"replicates": 0, "requested": 20, "complete": False}
    assert cut["lower"].isna().all() and cut["structured"].notna().all()
    # the cut bootstrap was not cached in place of the full one
    plain = sr.confint(B=20)
    assert plain.attrs == {"replicates": 20, "requested": 20, "complete": True}
    timed = _sr(coin_table).confint(B=20, time_limit=HOUR)
    pd.testing.assert_frame_equal(plain, timed)
    # with the replicates cached, a limit costs nothing
    assert sr.confint(B=20, deadline=PAST).attrs["complete"]


def test_regression_cli(coin_table, tmp_path, capsys):
    csv = _csv(coin_table, tmp_path)
    base = ["audit", "regression", csv, "--sensitive", "s", "--outcome", "y", "--prediction",
            "p", "--n-boot", "20"]
    assert main([*base, "--time-limit", "1e-3", "--format", "json"]) == 3
    out = _json(capsys)
    assert out["complete"] is False
    assert "0 of 20 bootstrap replicates (time limit)" in out["notes"][0]
    assert main([*base, "--time-limit", "1e-3"]) == 3
    assert "INCOMPLETE (time limit)" in capsys.readouterr().out
    assert main([*base, "--format", "json"]) == 0
    plain = _json(capsys)
    assert main([*base, "--format", "json", "--time-limit", "3600"]) == 0
    assert _json(capsys) == plain and plain["complete"] is True


# ------------------------------------------------------------------------------ monitor

SPEC = "E[r | s == \"F\"] - E[r] < 0.02 & E[r] - E[r | s == \"F\"] < 0.02"


def test_monitor_run_on_the_clock(coin_table):
    stream = coin_table.rename(columns={"p": "r"})
    cut = Monitor(SPEC).run(stream, deadline=PAST)
    assert not cut.complete and cut.verdict is None and cut.n_observed == 0
    assert cut.notes == ("0 of 4000 records read (time limit); no verdict yet",)
    d = cut.to_dict()
    assert d["complete"] is False and d["notes"] == list(cut.notes)
    assert "INCOMPLETE (time limit)" in cut.summary()
    plain = Monitor(SPEC).run(stream)
    timed = Monitor(SPEC).run(stream, time_limit=HOUR)
    assert plain.complete and timed.complete
    assert plain.to_dict() == timed.to_dict()


def test_monitor_verdict_reached_before_the_limit_stands():
    stream = pd.DataFrame({"r": [1] * 3000})
    m = Monitor("E[r] > 0.5")
    m.run(stream.iloc[:200], until_verdict=False)
    assert m.stopped
    res = m.run(stream.iloc[200:], until_verdict=False, deadline=PAST)
    assert res.verdict is True and not res.complete
    assert "the verdict at record 25 stands" in res.notes[0]


def test_monitor_model_on_the_clock(coin_table):
    X = coin_table[["s", "x"]]
    res = monitor_model(coin_model, X, SPEC, time_limit=TINY)
    assert res.complete or res.n_observed < len(X)
    plain = monitor_model(coin_model, X, SPEC)
    timed = monitor_model(coin_model, X, SPEC, time_limit=HOUR)
    assert plain.to_dict() == timed.to_dict()


def test_monitor_cli(coin_table, tmp_path, capsys):
    csv = _csv(coin_table, tmp_path)
    base = ["audit", "monitor", csv, "--prediction", "p", "--sensitive", "s", "--spec", SPEC]
    assert main([*base, "--time-limit", "1e-3", "--format", "json"]) == 3
    out = _json(capsys)
    assert out["complete"] is False and "(time limit)" in out["notes"][0]
    assert main([*base, "--time-limit", "1e-3"]) == 3
    assert "INCOMPLETE (time limit)" in capsys.readouterr().out
    code = main([*base, "--format", "json"])
    plain = _json(capsys)
    assert main([*base, "--format", "json", "--time-limit", "3600"]) == code
    assert _json(capsys) == plain and plain["complete"] is True
