"""Pictures of discrimination patterns and of the audit ports' results (matplotlib).

matplotlib is the optional ``plot`` extra: it is imported only when a function draws, and a
missing installation raises an :class:`ImportError` that names the extra. Every function draws
on the ``ax`` it is given (a new figure otherwise) and returns the matplotlib objects it drew on;
nothing is shown or saved unless the caller asks (``ax.figure.savefig(...)``).

Patterns (Selvam, Van den Broeck and Choi, AAAI-23, Figure 2):

- :func:`pareto_front`: every pattern in grey at (probability ``P(x, y)``, ``|Δ|``), summary
  patterns (maximal, minimal...) coloured, and the Pareto front as a red staircase;
- :func:`score_vs_probability`: the same scatter with chosen sets highlighted (e.g. the top-k
  by discrimination and by divergence);
- :func:`counts_by_delta`: how many discrimination patterns (and summaries) each threshold δ
  leaves.

This module only draws: it computes no pattern quantity and imports nothing of the pattern
engines. Patterns may be given as a DataFrame with columns ``probability`` and ``abs_score``
(or ``score``), drawn as given, with an optional boolean ``is_pareto`` column that flags the
Pareto front; as a list of :class:`~pcfair.patterns.Pattern`, drawn as given; or as a
:class:`~pcfair.patterns.PatternSet`, or any object with a ``plot_frame(delta)`` method, which
makes that frame itself (:meth:`PatternSet.plot_frame`: the patterns with ``|Δ| > δ``, with
their strict Pareto front flagged). Large sets are drawn as a uniform random subsample of
``max_points`` grey points, and the legend says so. :func:`counts_by_delta` draws a census
frame (:func:`pcfair.pattern_census`).

Audit results draw themselves (``result.plot(ax=None)``, see :mod:`pcfair.audits`); the
tables of two ports are drawn here, without importing the ports: :func:`cbs_scores` and
:func:`cbs_null_distribution` (Conditional Bias Scan) and :func:`testsgd_scores` (TestSGD).
Structured regression draws with :func:`pcfair.audits.structured_regression.plot.plot_estimates`,
AVOIR with :func:`pcfair.audits.avoir.plot.plot_history`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from pcfair._random import check_random_state
from pcfair.errors import DataError, MissingDependencyError

if TYPE_CHECKING:  # pragma: no cover - typing only
    from matplotlib.axes import Axes

__all__ = [
    "MISSING_MATPLOTLIB",
    "cbs_null_distribution",
    "cbs_scores",
    "counts_by_delta",
    "pareto_front",
    "pattern_points",
    "score_vs_probability",
    "testsgd_scores",
]

#: Message of the ImportError raised when matplotlib is not installed.
MISSING_MATPLOTLIB = ("pcfair.plot needs matplotlib, the 'plot' extra: "
                      "pip install 'pcfair[plot]'")

#: Colours of the pattern plots: all patterns, the front, then highlighted sets in order.
GREY = "0.72"
FRONT_COLOR = "tab:red"
HIGHLIGHT_COLORS = ("tab:blue", "tab:green", "tab:orange", "tab:purple", "tab:brown",
                    "tab:pink", "tab:olive", "tab:cyan")
#: Census columns drawn by :func:`counts_by_delta`, with their legend names.
COUNT_KINDS = {"patterns": "discrimination patterns", "maximal": "maximal",
               "minimal": "minimal", "pareto": "Pareto-optimal"}
#: Line colours of :func:`counts_by_delta` (the summaries as in the report's front figure).
COUNT_COLORS = {"patterns": "0.3", "maximal": HIGHLIGHT_COLORS[0],
                "minimal": HIGHLIGHT_COLORS[1], "pareto": FRONT_COLOR}


def _pyplot():
    """matplotlib.pyplot, or an ImportError naming the ``plot`` extra."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as err:
        raise MissingDependencyError(MISSING_MATPLOTLIB) from err
    return plt


def _new_axes(ax, figsize: tuple[float, float]) -> Axes:
    if ax is not None:
        return ax
    _, ax = _pyplot().subplots(figsize=figsize)
    return ax


# ------------------------------------------------------------------------------ patterns


def pattern_points(patterns) -> tuple[np.ndarray, np.ndarray]:
    """``(probability, |Δ|)`` arrays of a pattern collection (see the module docstring).

    Examples
    --------
    >>> import pandas as pd
    >>> p, a = pattern_points(pd.DataFrame({"probability": [0.1, 0.2], "score": [-0.3, 0.1]}))
    >>> p.tolist(), a.tolist()
    ([0.1, 0.2], [0.3, 0.1])
    """
    if isinstance(patterns, pd.DataFrame):
        if "probability" not in patterns.columns:
            raise DataError("a pattern frame needs a 'probability' column")
        if "abs_score" in patterns.columns:
            score = patterns["abs_score"].to_numpy(float)
        elif "score" in patterns.columns:
            score = np.abs(patterns["score"].to_numpy(float))
        else:
            raise DataError("a pattern frame needs an 'abs_score' or a 'score' column")
        return patterns["probability"].to_numpy(float), score
    items = list(getattr(patterns, "patterns", patterns))
    for p in items:
        if not hasattr(p, "probability") or not hasattr(p, "score"):
            raise DataError(f"expected Pattern objects, got {type(p).__name__}")
    return (np.array([p.probability for p in items], float),
            np.array([abs(p.score) for p in items], float))


def _pattern_frame(patterns, delta: float | None) -> pd.DataFrame:
    """The patterns to draw as a frame: ``probability``, ``abs_score`` and, where the caller
    flagged it, ``is_pareto`` (see the module docstring)."""
    if not isinstance(patterns, pd.DataFrame) and hasattr(patterns, "plot_frame"):
        return patterns.plot_frame(delta)
    prob, score = pattern_points(patterns)
    frame = pd.DataFrame({"probability": prob, "abs_score": score})
    if isinstance(patterns, pd.DataFrame) and "is_pareto" in patterns.columns:
        frame["is_pareto"] = patterns["is_pareto"].to_numpy(bool)
    return frame


def _subsample(prob: np.ndarray, score: np.ndarray, max_points: int | None,
               random_state) -> tuple[np.ndarray, np.ndarray, bool]:
    if max_points is None or len(prob) <= max_points:
        return prob, score, False
    rng = check_random_state(random_state)
    keep = np.sort(rng.choice(len(prob), size=int(max_points), replace=False))
    return prob[keep], score[keep], True


def _grey_label(shown: int, total: int, sampled: bool) -> str:
    if sampled or shown < total:
        return f"patterns (random {shown:,} of {total:,})"
    return f"patterns ({total:,})"


def _scatter(ax, frame: pd.DataFrame, highlight: Mapping[str, Any] | None,
             delta: float | None, max_points: int | None, population: int | None,
             random_state, log_x: bool, title: str | None) -> None:
    """Grey cloud of a :func:`_pattern_frame` plus one coloured scatter per ``highlight``
    entry."""
    prob = frame["probability"].to_numpy(float)
    score = frame["abs_score"].to_numpy(float)
    total = len(prob) if population is None else int(population)
    prob, score, sampled = _subsample(prob, score, max_points, random_state)
    ax.scatter(prob, score, s=6, color=GREY, alpha=0.6, linewidths=0, zorder=1,
               label=_grey_label(len(prob), total, sampled))
    for i, (name, subset) in enumerate((highlight or {}).items()):
        hp, hs = pattern_points(subset)
        ax.scatter(hp, hs, s=22, color=HIGHLIGHT_COLORS[i % len(HIGHLIGHT_COLORS)],
                   edgecolors="white", linewidths=0.4, zorder=3, label=f"{name} ({len(hp):,})")
    if delta is not None:
        ax.axhline(delta, color="0.35", ls="--", lw=0.8, zorder=2, label=f"δ = {delta:g}")
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel("probability P(x, y)")
    ax.set_ylabel("discrimination score |Δ|")
    if title:
        ax.set_title(title)


def score_vs_probability(patterns, *, highlight: Mapping[str, Any] | None = None,
                         delta: float | None = None, ax=None, max_points: int | None = 20_000,
                         population: int | None = None, random_state=0, log_x: bool = False,
                         title: str | None = None) -> Axes:
    """Scatter of discrimination score against probability, with chosen sets highlighted.

    Parameters
    ----------
    patterns : PatternSet, sequence of Pattern or pandas.DataFrame
        The grey cloud (a frame needs ``probability`` and ``abs_score`` or ``score``; see the
        module docstring).
    highlight : mapping of str to patterns, optional
        Sets drawn in colour, in order (e.g. ``{"top-10 by discrimination": ...}``).
    delta : float, optional
        Threshold, drawn as a dashed line. A PatternSet leaves out its patterns with
        ``|Δ| <= delta`` (:meth:`PatternSet.plot_frame`); a frame or a list is drawn as given.
    ax : matplotlib Axes, optional
        Where to draw (a new figure otherwise).
    max_points : int or None, default 20000
        Draw a uniform random subsample of at most this many grey points (None: all).
    population : int, optional
        How many patterns the grey points stand for, when ``patterns`` is already a sample
        (the legend reads "random N of M").
    random_state : int or Generator, default 0
        Seed of the subsample.
    log_x : bool, default False
        Logarithmic probability axis.
    title : str, optional

    Returns
    -------
    matplotlib.axes.Axes

    See Also
    --------
    pareto_front : the same scatter with the Pareto front.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pcfair
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1], "a": [0, 1]})
    >>> pc = b.build(b.decision([
    ...     (b.indicator("d", 1), b.product(b.categorical("s", [0.2, 0.8]),
    ...                                     b.categorical("a", [0.5, 0.5])), 0.5),
    ...     (b.indicator("d", 0), b.product(b.categorical("s", [0.6, 0.4]),
    ...                                     b.categorical("a", [0.3, 0.7])), 0.5)]))
    >>> ps = pcfair.find_patterns(pc, "d", ["s"], 0.05)
    >>> top = pcfair.find_patterns(pc, "d", ["s"], 0.05, kind="topk", k=2)
    >>> ax = score_vs_probability(ps, highlight={"top-2": top})
    >>> [t.get_text() for t in ax.get_legend().get_texts()]
    ['patterns (6)', 'top-2 (2)']
    """
    ax = _new_axes(ax, (6.0, 4.2))
    _scatter(ax, _pattern_frame(patterns, delta), highlight, delta, max_points, population,
             random_state, log_x, title)
    ax.legend(fontsize=8, loc="best")
    return ax


def pareto_front(patterns, delta: float | None = None, ax=None,
                 summary: Mapping[str, Any] | None = None, *, front=None,
                 max_points: int | None = 20_000, population: int | None = None,
                 random_state=0, log_x: bool = False, title: str | None = None) -> Axes:
    """Every pattern in grey, summary patterns in colour, and the Pareto front in red.

    The layout of Figure 2 (b, c) of Selvam et al. (AAAI-23): probability ``P(x, y)`` on the
    x-axis, ``|Δ|`` on the y-axis. The front (patterns that no other pattern beats on both
    axes) is drawn as red points joined by a staircase. Patterns that carry credible intervals
    (:func:`pcfair.patterns.uncertainty.with_intervals`) get them as error bars.

    Parameters
    ----------
    patterns : PatternSet, sequence of Pattern or pandas.DataFrame
        The grey cloud (see the module docstring).
    delta : float, optional
        Threshold, as in :func:`score_vs_probability`.
    ax : matplotlib Axes, optional
        Where to draw (a new figure otherwise).
    summary : mapping of str to patterns, optional
        Other coloured sets, e.g. ``{"maximal": ..., "minimal": ...}``.
    front : patterns, optional
        The Pareto-optimal patterns (e.g. ``find_patterns(..., kind="pareto")``). Default: the
        rows flagged by the ``is_pareto`` column of the patterns' frame (for a PatternSet,
        its strict front at ``delta``, before any subsample); no front is drawn when there
        is no such column.
    max_points, population, random_state, log_x, title
        As in :func:`score_vs_probability`.

    Returns
    -------
    matplotlib.axes.Axes

    See Also
    --------
    pcfair.patterns.summaries.pareto_frame : a frame with the strict front flagged, from
        arrays.

    Notes
    -----
    The front of a PatternSet is strict (``pc-certifier.md`` §3): a pattern that ties another
    on probability and loses on score is dominated.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"probability": [0.1, 0.4, 0.3], "score": [-0.27, -0.25, 0.1],
    ...                       "is_pareto": [True, True, False]})
    >>> ax = pareto_front(frame, delta=0.05)
    >>> [t.get_text() for t in ax.get_legend().get_texts()]
    ['patterns (3)', 'δ = 0.05', 'Pareto-optimal (2)']
    """
    ax = _new_axes(ax, (6.0, 4.2))
    frame = _pattern_frame(patterns, delta)
    _scatter(ax, frame, summary, delta, max_points, population, random_state, log_x, title)
    if front is not None:
        _front_staircase(ax, *pattern_points(front))
    elif "is_pareto" in frame.columns:
        on = frame["is_pareto"].to_numpy(bool)
        _front_staircase(ax, frame["probability"].to_numpy(float)[on],
                         frame["abs_score"].to_numpy(float)[on])
    for source in (patterns, front):
        if _interval_bars(ax, source):
            break
    ax.legend(fontsize=8, loc="best")
    return ax


def _front_staircase(ax, prob: np.ndarray, score: np.ndarray) -> None:
    """The Pareto front as red points joined by a staircase, from the most probable down."""
    order = np.argsort(-prob, kind="stable")
    prob, score = prob[order], score[order]
    if len(prob):
        ax.plot(prob, score, drawstyle="steps-post", color=FRONT_COLOR, lw=1.0, zorder=4)
    ax.scatter(prob, score, s=28, color=FRONT_COLOR, edgecolors="black", linewidths=0.4,
               zorder=5, label=f"Pareto-optimal ({len(prob):,})")


def _interval_bars(ax, patterns) -> bool:
    """Credible intervals of |Δ| and P(x, y) as error bars, for patterns that carry them
    (:func:`pcfair.patterns.uncertainty.with_intervals`, or a frame with ``abs_lo``... columns);
    False when there are none."""
    if isinstance(patterns, pd.DataFrame):
        need = {"probability", "abs_score", "abs_lo", "abs_hi", "probability_lo",
                "probability_hi"}
        if not need <= set(patterns.columns) or patterns.empty:
            return False
        f = patterns
        level = None
    else:
        items = list(getattr(patterns, "patterns", patterns) or [])
        items = [p for p in items if getattr(p, "interval", None) is not None]
        if not items:
            return False
        f = pd.DataFrame({"probability": [p.probability for p in items],
                          "abs_score": [p.abs_score for p in items],
                          "abs_lo": [p.interval["abs_score"][0] for p in items],
                          "abs_hi": [p.interval["abs_score"][1] for p in items],
                          "probability_lo": [p.interval["probability"][0] for p in items],
                          "probability_hi": [p.interval["probability"][1] for p in items]})
        level = items[0].interval["level"]
    x, y = f["probability"].to_numpy(float), f["abs_score"].to_numpy(float)
    xerr = np.clip([x - f["probability_lo"].to_numpy(float),
                    f["probability_hi"].to_numpy(float) - x], 0, None)
    yerr = np.clip([y - f["abs_lo"].to_numpy(float), f["abs_hi"].to_numpy(float) - y], 0, None)
    label = "credible intervals" if level is None else f"{100 * level:g}% credible intervals"
    ax.errorbar(x, y, xerr=xerr, yerr=yerr, fmt="none", ecolor="0.35", elinewidth=0.8,
                capsize=2, zorder=3, label=label)
    return True


def counts_by_delta(census: pd.DataFrame, *, kinds: Sequence[str] = tuple(COUNT_KINDS),
                    ax=None, log_y: bool = True) -> Axes:
    """Number of discrimination patterns (and summaries) against the threshold δ.

    Parameters
    ----------
    census : pandas.DataFrame
        A frame with a ``delta`` column and one column per kind, such as
        :func:`~pcfair.pattern_census` returns; an optional boolean ``complete`` column marks
        counts from a stopped search (drawn as open markers: lower bounds).
    kinds : sequence of str
        Columns to draw, among ``"patterns"``, ``"maximal"``, ``"minimal"``, ``"pareto"``;
        kinds missing from the frame, or all NaN, are skipped.
    ax : matplotlib Axes, optional
    log_y : bool, default True
        Symmetric-log count axis (counts span orders of magnitude and may be 0).

    Returns
    -------
    matplotlib.axes.Axes

    Raises
    ------
    DataError
        ``census`` is not a census frame (a circuit, say: draw
        ``pcfair.pattern_census(circuit, decision, sensitive, deltas=...)``).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> census = pd.DataFrame({"delta": [0.01, 0.05, 0.1], "patterns": [7445, 2388, 1164],
    ...                        "minimal": [103, 10, 1]})
    >>> ax = counts_by_delta(census)
    >>> [line.get_label() for line in ax.get_lines()]
    ['discrimination patterns', 'minimal']
    """
    if not isinstance(census, pd.DataFrame):
        raise DataError(f"counts_by_delta draws a census frame, not a {type(census).__name__}: "
                        "pass pcfair.pattern_census(circuit, decision, sensitive, deltas=...)")
    if "delta" not in census.columns:
        raise DataError("a census frame needs a 'delta' column")
    unknown = [k for k in kinds if k not in COUNT_KINDS]
    if unknown:
        raise DataError(f"unknown kinds {unknown}; expected some of {list(COUNT_KINDS)}")
    ax = _new_axes(ax, (6.0, 4.0))
    frame = census.sort_values("delta")
    x = frame["delta"].to_numpy(float)
    complete = (frame["complete"].to_numpy(bool) if "complete" in frame.columns
                else np.ones(len(frame), bool))
    for kind in kinds:
        if kind not in frame.columns:
            continue
        y = pd.to_numeric(frame[kind], errors="coerce").to_numpy(float)
        if np.all(np.isnan(y)):
            continue
        color = COUNT_COLORS[kind]
        ax.plot(x, y, color=color, lw=1.4, marker="o", ms=4, label=COUNT_KINDS[kind])
        if not complete.all():
            ax.plot(x[~complete], y[~complete], ls="none", marker="o", ms=6, mfc="white",
                    color=color, label="_incomplete")
    if not complete.all():
        ax.plot([], [], ls="none", marker="o", mfc="white", color="0.3",
                label="stopped search (lower bound)")
    if log_y:
        ax.set_yscale("symlog", linthresh=1)
    ax.set_xlabel("threshold δ")
    ax.set_ylabel("number of patterns")
    ax.legend(fontsize=8, loc="best")
    return ax


# ------------------------------------------------------------------------------ audit ports


def _cbs_frame(results) -> pd.DataFrame:
    if isinstance(results, pd.DataFrame):
        frame = results
    elif hasattr(results, "to_frame"):  # a CBSResult or a CBSScans
        frame = results.to_frame()
    elif isinstance(results, Sequence) and results and all(hasattr(r, "to_frame")
                                                           for r in results):
        frame = pd.concat([r.to_frame() for r in results], ignore_index=True)
    else:
        raise DataError("cbs_scores needs a cbs_audit table, a CBSResult or a list of them, "
                        f"got {type(results).__name__}")
    for col in ("detected", "score"):
        if col not in frame.columns:
            raise DataError(f"the CBS table has no column {col!r}")
    return frame


def cbs_scores(results, *, alpha: float = 0.05, top: int | None = 20, ax=None) -> Axes:
    """Bar chart of Conditional Bias Scan scores, one bar per detected subgroup.

    Parameters
    ----------
    results : pandas.DataFrame, CBSResult or sequence of CBSResult
        The table of :func:`~pcfair.audits.cbs.cbs_audit` (columns ``detected``, ``score``
        and optionally ``p_value``), or scan results.
    alpha : float, default 0.05
        Bars with a permutation p-value below ``alpha`` are red (significant), others grey;
        without p-values every bar is blue.
    top : int or None, default 20
        Highest scores shown.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> table = pd.DataFrame({"detected": ["race = B & sex = M", "sex = F"],
    ...                       "score": [12.5, 3.1], "p_value": [0.01, 0.4]})
    >>> ax = cbs_scores(table)
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['race = B & sex = M', 'sex = F']
    """
    frame = _cbs_frame(results).sort_values("score", ascending=False, kind="stable")
    if top is not None:
        frame = frame.head(int(top))
    ax = _new_axes(ax, (7.0, 0.45 * len(frame) + 1.5))
    y = np.arange(len(frame))
    pvals = (pd.to_numeric(frame["p_value"], errors="coerce").to_numpy(float)
             if "p_value" in frame.columns else np.full(len(frame), np.nan))
    colors = ["tab:blue" if np.isnan(p) else ("tab:red" if p < alpha else "0.6")
              for p in pvals]
    ax.barh(y, frame["score"].to_numpy(float), color=colors)
    for yi, score, p in zip(y, frame["score"].to_numpy(float), pvals):
        if not np.isnan(p):
            ax.annotate(f"p = {p:.3g}", (score, yi), xytext=(3, 0), textcoords="offset points",
                        va="center", fontsize=7)
    ax.set_yticks(y, [str(t) for t in frame["detected"]])
    ax.invert_yaxis()
    ax.set_xlabel("CBS score (penalised log-likelihood ratio)")
    ax.set_title("Conditional Bias Scan: detected subgroups", fontsize=10)
    return ax


def cbs_null_distribution(result, *, bins: int = 30, ax=None) -> Axes:
    """Histogram of a scan's permutation null scores, with the observed score and p-value.

    Parameters
    ----------
    result : CBSResult
        A scan run with ``n_permutations > 0``.
    bins : int, default 30
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np, pandas as pd
    >>> from pcfair.audits.cbs import conditional_bias_scan
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"g": rng.integers(0, 2, 600), "x": rng.integers(0, 2, 600)})
    >>> df["y"] = (rng.random(600) < 0.5).astype(int)
    >>> df["p"] = np.where((df.g == 1) & (df.x == 1), 0.7, 0.3)
    >>> res = conditional_bias_scan(df, protected=("g", 1), outcome="y", prediction="p",
    ...     covariates=["x"], definition="fpr", n_permutations=20, random_state=0)
    >>> ax = cbs_null_distribution(res)
    >>> ax.get_lines()[0].get_label()
    'observed score'
    """
    null = np.asarray(getattr(result, "null_scores", np.zeros(0)), float)
    if null.size == 0:
        raise DataError("the scan has no permutation scores: run it with n_permutations > 0")
    ax = _new_axes(ax, (6.0, 3.8))
    ax.hist(null, bins=bins, color="0.65", label=f"null scores ({null.size} permutations)")
    ax.axvline(result.score, color="tab:red", lw=1.5, label="observed score")
    p = "" if result.p_value is None else f", p = {result.p_value:.3g}"
    ax.set_title(f"{result.subgroup_text}{p}", fontsize=9)
    ax.set_xlabel("CBS score")
    ax.set_ylabel("permutations")
    ax.legend(fontsize=8)
    return ax


def testsgd_scores(results: pd.DataFrame, *, xi: float | None = None, mode: str = "point",
                   top: int | None = 20, ax=None) -> Axes:
    """TestSGD unfairness scores of rule sets with their error margins.

    Parameters
    ----------
    results : TestSGDResult or pandas.DataFrame
        The result of :func:`~pcfair.audits.testsgd.audit`, or its table (columns
        ``rule_set``, ``score``, ``margin``).
    xi : float, optional
        Tolerance: rule sets flagged at ``xi`` (see :func:`~pcfair.audits.testsgd.flagged`)
        are red, others grey, and a dashed line marks ``xi``. Without it every bar is blue.
    mode : {"point", "conservative"}
        How :func:`~pcfair.audits.testsgd.flagged` decides.
    top : int or None, default 20
        Highest scores shown.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from pcfair.audits.testsgd.audit import scores_to_frame
    >>> from pcfair.audits.testsgd.scoring import score_from_counts
    >>> res = scores_to_frame([score_from_counts(283, 91, 1000)])
    >>> ax = testsgd_scores(res, xi=0.15)
    >>> len(ax.patches), ax.get_lines()[-1].get_label()
    (1, 'ξ = 0.15')
    """
    results = getattr(results, "table", results)
    for col in ("rule_set", "score", "margin"):
        if col not in getattr(results, "columns", ()):
            raise DataError(f"testsgd_scores needs the audit frame; it has no column {col!r}")
    frame = results.sort_values("score", ascending=False, kind="stable")
    if top is not None:
        frame = frame.head(int(top))
    if xi is None:
        colors = ["tab:blue"] * len(frame)
    else:  # flagged as testsgd.flagged does: by the point score, or by score - margin
        if mode not in ("point", "conservative"):
            raise DataError(f"mode={mode!r} is not one of ['point', 'conservative']")
        value = frame["score"] - (frame["margin"] if mode == "conservative" else 0.0)
        colors = ["tab:red" if v > xi else "0.6" for v in value.to_numpy(float)]
    ax = _new_axes(ax, (7.0, 0.45 * len(frame) + 1.5))
    y = np.arange(len(frame))
    ax.barh(y, frame["score"].to_numpy(float), xerr=frame["margin"].to_numpy(float),
            color=colors, error_kw={"ecolor": "0.2", "capsize": 2, "lw": 0.8})
    if xi is not None:
        ax.axvline(xi, color="0.25", ls="--", lw=1, label=f"ξ = {xi:g}")
        ax.legend(fontsize=8, loc="lower right")
    ax.set_yticks(y, [str(t) for t in frame["rule_set"]])
    ax.invert_yaxis()
    ax.set_xlabel("group fairness score f = |P(l | R) − P(l | not R)| ± margin")
    ax.set_title("TestSGD: rule sets by unfairness", fontsize=10)
    return ax
