"""One result shape (issue #17 item 2): every port's result has ``to_frame``, a JSON-ready
``to_dict``, ``plot(ax=None)`` and a readable ``repr``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from pcfair.audits import AuditResult
from pcfair.audits._result import json_records, json_value
from pcfair.audits.avoir import Monitor
from pcfair.audits.cbs import CBSScans, conditional_bias_scan
from pcfair.audits.structured_regression import StructuredRegression, gof_test
from pcfair.audits.testsgd import TestSGDResult, audit

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
plt = pytest.importorskip("matplotlib.pyplot")


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 800
    df = pd.DataFrame({"g": rng.integers(0, 2, n), "x": rng.integers(0, 3, n)})
    df["y"] = (rng.random(n) < 0.5).astype(int)
    df["p"] = np.where((df.g == 1) & (df.x == 2), 0.75, 0.35)
    df["r"] = (df["p"] >= 0.5).astype(int)
    return df


def _results(df):
    scan = conditional_bias_scan(df, protected=("g", 1), outcome="y", prediction="p",
                                 covariates=["x"], definition="fpr", n_permutations=0,
                                 random_state=0)
    tested = conditional_bias_scan(df, protected=("g", 1), outcome="y", prediction="p",
                                   covariates=["x"], definition="fpr", n_permutations=9,
                                   n_jobs=1, random_state=0)
    scans = CBSScans([scan, tested])
    sgd = audit(df[["g", "x"]], lambda b: ((b["g"] == 1) & (b["x"] == 2)).astype(int),
                sensitive=["g"], sample_thr=100, random_state=0)
    sr = StructuredRegression(["g", "x"], outcome="y", output="r", n_boot_var=20,
                              n_splits=3).fit(df, "acc").result_
    mon = Monitor("E[r | g == 1] - E[r | g == 0] > 0.05", failure_prob=0.1).run(df)
    gof = gof_test(df, "sel", "x", "g+x", sensitive=["g", "x"], outcome=None, output="r")
    return {"CBSResult": scan, "CBSResult+perm": tested, "CBSScans": scans,
            "TestSGDResult": sgd, "SRResult": sr, "MonitorResult": mon, "GofResult": gof}


def test_every_result_has_the_shared_shape(frame):
    for name, res in _results(frame).items():
        assert isinstance(res, AuditResult), name
        table = res.to_frame()
        assert isinstance(table, pd.DataFrame) and len(table) > 0, name
        d = res.to_dict()
        assert d["method"] == res.method and res.method in {"cbs", "testsgd", "regression",
                                                            "regression-gof", "monitor"}
        text = json.dumps(d, allow_nan=False)  # JSON-ready: no numpy types, no NaN
        assert json.loads(text) == d, name
        r = repr(res)
        assert r.startswith(type(res).__name__ + "(") and f"method={res.method!r}" in r, r
        fig, ax = plt.subplots()
        assert res.plot(ax=ax) is ax, name
        assert ax.has_data(), name
        assert isinstance(res.plot(), matplotlib.axes.Axes), name
        plt.close("all")


def test_results_keep_their_own_content(frame):
    res = _results(frame)
    assert res["CBSResult"].to_dict()["subgroup"] == {"x": [2]}
    assert res["CBSScans"].to_dict()["n_scans"] == 2
    assert len(res["CBSScans"].to_frame()) == 2
    assert res["CBSResult+perm"].to_dict()["n_permutations"] == 9
    sgd = res["TestSGDResult"]
    assert isinstance(sgd, TestSGDResult) and sgd.to_frame().equals(sgd.table)
    assert sgd.to_dict()["top"] == sgd.table["rule_set"].iloc[0]
    sr = res["SRResult"]
    assert list(sr.to_frame().columns[:2]) == ["g", "x"] and len(sr.to_frame()) == 6
    assert set(sr.to_dict()["coef"]) == set(sr.coef.index)
    mon = res["MonitorResult"]
    assert mon.to_frame().equals(mon.terms) and mon.to_dict()["verdict"] is True


def test_json_helpers_make_plain_values():
    assert json_value({"a": np.int64(2), "b": np.float64("nan"), "c": np.array([1.5, np.inf]),
                       "d": (np.bool_(True), None), 3: pd.NA}) == {
        "a": 2, "b": None, "c": [1.5, None], "d": [True, None], "3": None}
    assert json_records(pd.DataFrame({"a": [1, 2], "b": [np.nan, "x"]})) == [
        {"a": 1, "b": None}, {"a": 2, "b": "x"}]


def test_pcfair_plot_draws_the_audit_tables_without_importing_the_ports():
    import subprocess
    import sys

    code = (
        "import sys, matplotlib; matplotlib.use('Agg'); import pandas as pd\n"
        "from pcfair import plot\n"
        "plot.cbs_scores(pd.DataFrame({'detected': ['a'], 'score': [1.0]}))\n"
        "plot.testsgd_scores(pd.DataFrame({'rule_set': ['r'], 'score': [0.2], "
        "'margin': [0.05]}), xi=0.1)\n"
        "print(sorted(m for m in sys.modules if m.startswith('pcfair.audits')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
