"""pcfair.plot with the non-interactive Agg backend: the returned objects hold what was asked.

Each test asserts on the matplotlib objects a function returns (number of points, colours,
labels); nothing is shown or saved.
"""

from __future__ import annotations

import doctest
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.colors import to_rgba

import pcfair
from pcfair import plot
from pcfair.errors import DataError, MissingDependencyError

CIRCUITS = Path(__file__).resolve().parents[1] / "circuits"
DECISION = "ScoreText_"
SENSITIVE = ["Ethnic_Code_Text_", "MaritalStatus_", "Sex_", "Age"]


@pytest.fixture(scope="module")
def compas():
    pc = pcfair.load(CIRCUITS / "compas_clt.json")
    kinds = {kind: pcfair.find_patterns(pc, DECISION, SENSITIVE, 0.05, kind=kind)
             for kind in ("all", "maximal", "minimal", "pareto")}
    return pc, kinds


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def _collection(ax, prefix: str):
    found = [c for c in ax.collections if c.get_label().startswith(prefix)]
    assert len(found) == 1, [c.get_label() for c in ax.collections]
    return found[0]


def _legend(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_pareto_front_draws_every_pattern_and_the_summaries(compas):
    _, ps = compas
    ax = plot.pareto_front(ps["all"], delta=0.05,
                           summary={"maximal": ps["maximal"], "minimal": ps["minimal"]})
    grey = _collection(ax, "patterns")
    assert len(grey.get_offsets()) == ps["all"].count == 2356
    assert np.allclose(grey.get_facecolor()[0][:3], to_rgba(plot.GREY)[:3])
    assert len(_collection(ax, "maximal").get_offsets()) == 74
    assert len(_collection(ax, "minimal").get_offsets()) == 8
    front = _collection(ax, "Pareto-optimal")
    # the default front of all patterns is the certifier's strict Pareto summary
    assert len(front.get_offsets()) == ps["pareto"].count
    assert np.allclose(front.get_facecolor()[0], to_rgba(plot.FRONT_COLOR))
    want = sorted((p.probability, p.abs_score) for p in ps["pareto"])
    assert np.allclose(sorted(map(tuple, front.get_offsets())), want)
    assert _legend(ax) == ["patterns (2,356)", "maximal (74)", "minimal (8)", "δ = 0.05",
                           "Pareto-optimal (34)"]
    assert ax.get_xlabel() == "probability P(x, y)"
    assert ax.get_ylabel() == "discrimination score |Δ|"
    staircase = [line for line in ax.get_lines() if line.get_drawstyle() == "steps-post"]
    assert len(staircase) == 1 and len(staircase[0].get_xdata()) == 34


def test_pareto_front_subsamples_and_takes_frames_and_a_given_front(compas):
    _, ps = compas
    frame = ps["all"].to_frame()
    fig, ax = plt.subplots()
    out = plot.pareto_front(frame, ax=ax, max_points=100, front=ps["pareto"], random_state=1)
    assert out is ax and plt.gcf() is fig
    grey = _collection(ax, "patterns")
    assert len(grey.get_offsets()) == 100
    assert grey.get_label() == "patterns (random 100 of 2,356)"
    assert len(_collection(ax, "Pareto-optimal").get_offsets()) == 34
    again = plot.pareto_front(frame, max_points=100, random_state=1)
    assert np.array_equal(_collection(again, "patterns").get_offsets(), grey.get_offsets())
    shown = plot.pareto_front(frame.iloc[:50], population=5000, log_x=True)
    assert _collection(shown, "patterns").get_label() == "patterns (random 50 of 5,000)"
    assert shown.get_xscale() == "log"


def test_delta_drops_weaker_points_and_draws_the_threshold(compas):
    _, ps = compas
    ax = plot.pareto_front(ps["all"], delta=0.1)
    assert len(_collection(ax, "patterns").get_offsets()) == 1161  # the census at δ = 0.1
    (line,) = [ln for ln in ax.get_lines() if ln.get_label() == "δ = 0.1"]
    assert line.get_ydata()[0] == pytest.approx(0.1)


def test_score_vs_probability_highlights_sets_in_order(compas):
    pc, ps = compas
    top = pcfair.find_patterns(pc, DECISION, SENSITIVE, 0.05, kind="topk", k=10)
    div = pcfair.find_patterns(pc, DECISION, SENSITIVE, 0.05, kind="topk", k=5,
                               rank_by="divergence")
    ax = plot.score_vs_probability(ps["all"], highlight={"top-10": top, "top-5 div": div},
                                   title="t")
    assert len(_collection(ax, "top-10").get_offsets()) == 10
    assert len(_collection(ax, "top-5 div").get_offsets()) == 5
    assert np.allclose(_collection(ax, "top-10").get_facecolor()[0],
                       to_rgba(plot.HIGHLIGHT_COLORS[0]))
    assert np.allclose(_collection(ax, "top-5 div").get_facecolor()[0],
                       to_rgba(plot.HIGHLIGHT_COLORS[1]))
    assert ax.get_title() == "t" and "Pareto-optimal" not in " ".join(_legend(ax))


def test_a_frame_is_drawn_as_given_with_the_front_it_flags(compas):
    _, ps = compas
    flagged = ps["all"].plot_frame(0.1)
    assert list(flagged.columns) == ["probability", "abs_score", "is_pareto"]
    assert len(flagged) == 1161 and flagged["is_pareto"].dtype == bool
    ax = plot.pareto_front(flagged, delta=0.1)
    # the same picture as from the pattern set, which makes that frame itself
    same = plot.pareto_front(ps["all"], delta=0.1)
    for prefix in ("patterns", "Pareto-optimal"):
        assert np.array_equal(_collection(ax, prefix).get_offsets(),
                              _collection(same, prefix).get_offsets())
    # the frame is not filtered by delta, and without an is_pareto column no front is drawn
    plain = plot.pareto_front(ps["all"].to_frame(), delta=0.1)
    assert len(_collection(plain, "patterns").get_offsets()) == ps["all"].count
    assert not any(label.startswith("Pareto-optimal") for label in _legend(plain))
    assert _legend(plot.score_vs_probability(ps["all"], delta=0.1))[0] == "patterns (1,161)"


def test_pareto_frame_keeps_what_discriminates_and_flags_the_strict_front(compas):
    from pcfair.patterns.summaries import pareto_frame, pareto_mask

    _, ps = compas
    frame = ps["all"].plot_frame()
    assert len(frame) == ps["all"].count and frame["is_pareto"].sum() == ps["pareto"].count
    prob, score = frame["probability"].to_numpy(), frame["abs_score"].to_numpy()
    assert np.array_equal(frame["is_pareto"], pareto_mask(score, prob, np.ones(len(prob), bool)))
    at = pareto_frame(prob, score, 0.1)
    assert len(at) == 1161 and at.equals(ps["all"].plot_frame(0.1))
    empty = pareto_frame([], [], 0.1)
    assert empty.empty and list(empty.columns) == ["probability", "abs_score", "is_pareto"]


def test_plot_only_draws_and_imports_no_pattern_code():
    """pcfair.plot is a leaf: of pcfair it imports only the errors and the random helper,
    at module level or inside functions."""
    import ast

    tree = ast.parse(Path(plot.__file__).read_text())
    imported = {node.module for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module}
    imported |= {a.name for node in ast.walk(tree) if isinstance(node, ast.Import)
                 for a in node.names}
    assert {m for m in imported if m.startswith("pcfair")} == {"pcfair.errors", "pcfair._random"}


def test_bad_pattern_input_is_an_error():
    with pytest.raises(DataError, match="probability"):
        plot.pareto_front(pd.DataFrame({"score": [0.1]}))
    with pytest.raises(DataError, match="abs_score"):
        plot.score_vs_probability(pd.DataFrame({"probability": [0.1]}))
    with pytest.raises(DataError, match="Pattern objects"):
        plot.pareto_front([1, 2])


def test_counts_by_delta_draws_a_census_and_refuses_a_circuit(compas):
    pc, _ = compas
    census = pcfair.pattern_census(pc, DECISION, SENSITIVE)
    ax = plot.counts_by_delta(census)
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    assert list(lines) == ["discrimination patterns", "maximal", "minimal", "Pareto-optimal"]
    assert lines["discrimination patterns"].get_ydata().tolist() == [7436, 2356, 1161]
    assert lines["Pareto-optimal"].get_color() == plot.FRONT_COLOR
    assert ax.get_yscale() == "symlog"
    ax = plot.counts_by_delta(pcfair.pattern_census(pc, DECISION, SENSITIVE,
                                                    deltas=[0.02, 0.04, 0.08], ks=(1,)),
                              kinds=["patterns"], log_y=False)
    (line,) = ax.get_lines()
    assert line.get_xdata().tolist() == [0.02, 0.04, 0.08] and ax.get_yscale() == "linear"
    partial = pd.DataFrame({"delta": [0.01, 0.05], "patterns": [10, 4], "maximal": [np.nan] * 2,
                            "complete": [False, True]})
    ax = plot.counts_by_delta(partial)
    assert "stopped search (lower bound)" in _legend(ax) and "maximal" not in _legend(ax)
    # plot only draws: the census is the caller's (the circuit path is gone)
    with pytest.raises(DataError, match=r"census frame, not a Circuit.*pcfair\.pattern_census"):
        plot.counts_by_delta(pc)
    with pytest.raises(TypeError):
        plot.counts_by_delta(pc, DECISION, SENSITIVE)
    with pytest.raises(DataError, match="unknown kinds"):
        plot.counts_by_delta(census, kinds=["bogus"])


# ------------------------------------------------------------------------------ audit ports


@pytest.fixture(scope="module")
def cbs_data():
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"g": rng.integers(0, 2, 1500), "x": rng.integers(0, 3, 1500)})
    df["y"] = (rng.random(1500) < 0.5).astype(int)
    df["p"] = np.clip(0.35 + 0.3 * df.y + 0.2 * ((df.g == 1) & (df.x == 0)), 0, 1)
    return df


def test_cbs_scores_from_a_table_and_from_results(cbs_data):
    from pcfair.audits.cbs import cbs_audit, conditional_bias_scan

    table = cbs_audit(cbs_data, sensitive=["g", "x"], outcome="y", prediction="p",
                      definition="fpr", n_permutations=9, random_state=0)
    ax = plot.cbs_scores(table, alpha=0.15)
    assert len(ax.patches) == len(table)
    assert [t.get_text() for t in ax.get_yticklabels()] == table["detected"].tolist()
    widths = [p.get_width() for p in ax.patches]
    assert widths == pytest.approx(table["score"].tolist())
    for bar, p in zip(ax.patches, table["p_value"]):
        assert bar.get_facecolor() == to_rgba("tab:red" if p < 0.15 else "0.6")
    res = conditional_bias_scan(cbs_data, protected=("g", 1), outcome="y", prediction="p",
                                covariates=["x"], definition="fpr", n_permutations=0,
                                random_state=0)
    ax = plot.cbs_scores([res, res], top=1)
    assert len(ax.patches) == 1 and ax.patches[0].get_facecolor() == to_rgba("tab:blue")
    with pytest.raises(DataError, match="cbs_audit table"):
        plot.cbs_scores("nope")


def test_cbs_null_distribution(cbs_data):
    from pcfair.audits.cbs import conditional_bias_scan

    res = conditional_bias_scan(cbs_data, protected=("g", 1), outcome="y", prediction="p",
                                covariates=["x"], definition="fpr", n_permutations=25,
                                random_state=0)
    ax = plot.cbs_null_distribution(res, bins=10)
    assert sum(p.get_height() for p in ax.patches) == 25
    assert ax.get_lines()[0].get_xdata()[0] == pytest.approx(res.score)
    assert f"p = {res.p_value:.3g}" in ax.get_title()
    no_null = conditional_bias_scan(cbs_data, protected=("g", 1), outcome="y", prediction="p",
                                    covariates=["x"], definition="fpr", n_permutations=0,
                                    random_state=0)
    with pytest.raises(DataError, match="n_permutations"):
        plot.cbs_null_distribution(no_null)


def test_testsgd_scores_flags_and_margins():
    from pcfair.audits.testsgd import audit

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"sex": rng.choice(["F", "M"], 400), "race": rng.choice(["a", "b"], 400),
                       "x": rng.integers(0, 10, 400)})
    res = audit(df, lambda b: ((b["sex"] == "M") | (b["x"] > 7)).astype(int),
                sensitive=["sex", "race"], random_state=0).table
    ax = plot.testsgd_scores(res, xi=0.3)
    assert len(ax.patches) == len(res)
    assert [t.get_text() for t in ax.get_yticklabels()] == res["rule_set"].tolist()
    for bar, score in zip(ax.patches, res["score"]):
        assert bar.get_width() == pytest.approx(score)
        assert bar.get_facecolor() == to_rgba("tab:red" if score > 0.3 else "0.6")
    assert "ξ = 0.3" in _legend(ax)
    ax = plot.testsgd_scores(res, top=2)
    assert len(ax.patches) == 2 and ax.get_legend() is None
    with pytest.raises(DataError, match="rule_set"):
        plot.testsgd_scores(pd.DataFrame({"score": [0.1]}))


def test_structured_regression_and_avoir_draw_with_their_ports():
    """pcfair.plot does not import the ports; their pictures live with them."""
    from pcfair.audits.avoir import Monitor
    from pcfair.audits.avoir.plot import plot_history
    from pcfair.audits.structured_regression.plot import plot_estimates

    table = pd.DataFrame({"n": [50, 5], "standard": [0.4, 0.2], "structured": [0.4, 0.3],
                          "lower": [0.3, 0.1], "upper": [0.5, 0.5]}, index=["b", "a"])
    ax = plot_estimates(table)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a (n=5)", "b (n=50)"]
    m = Monitor('E[r | g == "a"] - E[r | g == "b"] < 0.5')
    _ = m.run(pd.DataFrame({"r": [1, 0, 1, 1] * 200, "g": ["a", "b"] * 400}))
    axes = plot_history(m)
    assert len(axes) == 1 and axes[0].get_title() == 'E[r | g == "a"] - E[r | g == "b"] < 0.5'
    assert next(ln.get_label() for ln in axes[0].get_lines()) == "estimate"
    assert not hasattr(plot, "group_estimates") and not hasattr(plot, "monitor_history")


def test_nothing_is_shown_or_saved(compas, tmp_path, monkeypatch):
    _, ps = compas
    shown = []
    monkeypatch.setattr(plt, "show", lambda *a, **k: shown.append(1))
    before = set(tmp_path.iterdir())
    fig, ax = plt.subplots()
    plot.pareto_front(ps["all"], ax=ax)
    plot.counts_by_delta(pd.DataFrame({"delta": [0.1], "patterns": [3]}), ax=ax)
    assert not shown and set(tmp_path.iterdir()) == before
    assert plt.get_fignums() == [fig.number]  # drawing on a given axes makes no new figure


def test_missing_matplotlib_names_the_plot_extra(compas, monkeypatch):
    _, ps = compas
    for name in ("matplotlib", "matplotlib.pyplot"):
        monkeypatch.setitem(sys.modules, name, None)
    with pytest.raises(ImportError, match=r"pip install 'pcfair\[plot\]'") as err:
        plot.pareto_front(ps["all"])
    assert isinstance(err.value, pcfair.PCFairError)
    assert isinstance(err.value, MissingDependencyError)
    from pcfair.audits.avoir import Monitor
    from pcfair.audits.avoir.plot import plot_history
    from pcfair.audits.structured_regression.plot import plot_estimates

    with pytest.raises(ImportError, match="plot"):
        plot_estimates(pd.DataFrame({"n": [1], "standard": [0.1], "structured": [0.1]}))
    m = Monitor('E[r | g == "a"] - E[r | g == "b"] < 0.5')
    _ = m.run(pd.DataFrame({"r": [1, 0] * 4, "g": ["a", "b"] * 4}))
    with pytest.raises(MissingDependencyError, match=r"pip install 'pcfair\[plot\]'"):
        plot_history(m)


def test_pcfair_plot_is_lazy_and_importing_it_does_not_import_pyplot():
    import subprocess

    code = ("import sys, pcfair; pcfair.plot.pareto_front; "
            "print('matplotlib.pyplot' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_examples():
    result = doctest.testmod(plot, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_a_pattern_set_plots_itself_with_its_front_and_threshold(compas):
    _, ps = compas
    ax = ps["all"].plot(title="COMPAS")
    assert len(_collection(ax, "patterns").get_offsets()) == ps["all"].count
    assert len(_collection(ax, "Pareto-optimal").get_offsets()) == ps["pareto"].count
    assert "δ = 0.05" in _legend(ax) and ax.get_title() == "COMPAS"
    fig, given = plt.subplots()
    assert ps["pareto"].plot(ax=given) is given
