"""Plot of per-group estimates with intervals: standard versus structured, sorted by group size.

matplotlib is the optional ``plot`` extra and is imported only when a plot is drawn.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pcfair.errors import DataError
from pcfair.plot import _pyplot


def _group_label(key) -> str:
    if isinstance(key, tuple):
        return " / ".join(str(k) for k in key)
    return str(key)


def plot_estimates(
    estimator_or_table,
    *,
    level: float = 0.95,
    truth: pd.Series | None = None,
    intervals: bool = True,
    B: int = 100,
    ylim: tuple[float, float] | None = None,
    ax=None,
):
    """Per-group estimates with intervals, standard vs structured, sorted by group size.

    Parameters
    ----------
    estimator_or_table : StructuredRegression or pandas.DataFrame
        A fitted estimator (its Eq. 7 and rBLPR intervals are computed at ``level``), or a
        per-group table with columns ``n``, ``standard``, ``structured`` and optionally
        ``standard_lower``, ``standard_upper``, ``lower``, ``upper``.
    level : float, default 0.95
        Confidence level of the intervals.
    truth : pandas.Series, optional
        True group values (e.g. from :func:`true_group_metric`), drawn as crosses.
    intervals : bool, default True
        Draw the intervals.
    B : int, default 100
        rBLPR replicates when an estimator is given.
    ylim : (float, float), optional
        Vertical range. By default it spans the intervals, but at most half the spread of the
        point estimates beyond them, so that the very wide intervals of tiny groups do not
        flatten the plot (such intervals run off the axes).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> t = pd.DataFrame({"n": [5, 50], "standard": [0.2, 0.4], "structured": [0.3, 0.4]},
    ...                  index=["a", "b"])
    >>> ax = plot_estimates(t)
    >>> [tick.get_text() for tick in ax.get_xticklabels()]
    ['a (n=5)', 'b (n=50)']
    """
    if hasattr(estimator_or_table, "estimates_"):
        sr = estimator_or_table
        table = sr.estimates_[["n", "standard", "structured"]].copy()
        if intervals:
            std = sr.standard_confint(level)
            table["standard_lower"], table["standard_upper"] = std["lower"], std["upper"]
            ci = sr.confint(level, B=B)
            table["lower"], table["upper"] = ci["lower"], ci["upper"]
    elif isinstance(estimator_or_table, pd.DataFrame):
        table = estimator_or_table.copy()
    else:
        raise DataError(
            f"plot_estimates needs a fitted StructuredRegression or a DataFrame, got {type(estimator_or_table).__name__}"
        )
    for col in ("n", "standard", "structured"):
        if col not in table.columns:
            raise DataError(f"the table to plot has no column {col!r}")
    plt = _pyplot()
    table = table.sort_values("n", kind="stable")
    x = np.arange(len(table))
    if ax is None:
        _, ax = plt.subplots(figsize=(max(6.0, 0.35 * len(table) + 2.0), 6.0))
    series = [
        ("standard", "standard_lower", "standard_upper", -0.15, "tab:gray", "o", "standard"),
        ("structured", "lower", "upper", 0.15, "tab:blue", "s", "structured regression"),
    ]
    for col, lo_col, hi_col, dx, color, marker, label in series:
        y = table[col].to_numpy(dtype=float)
        if intervals and lo_col in table.columns and hi_col in table.columns:
            lo = table[lo_col].to_numpy(dtype=float)
            hi = table[hi_col].to_numpy(dtype=float)
            err = np.vstack([np.clip(y - lo, 0, None), np.clip(hi - y, 0, None)])
            ok = np.isfinite(y) & np.isfinite(lo) & np.isfinite(hi)
            ax.errorbar(x[ok] + dx, y[ok], yerr=err[:, ok], fmt="none", ecolor=color, alpha=0.6, capsize=2)
        ax.plot(x + dx, y, linestyle="none", marker=marker, color=color, label=label)
    if truth is not None:
        t = pd.Series(truth).reindex(table.index).to_numpy(dtype=float)
        ax.plot(x, t, linestyle="none", marker="x", color="black", label="truth")
    if ylim is None:
        points = [table[c].to_numpy(dtype=float) for c in ("standard", "structured")]
        if truth is not None:
            points.append(t)
        points = np.concatenate(points)
        points = points[np.isfinite(points)]
        ends = [table[c].to_numpy(dtype=float) for c in ("standard_lower", "standard_upper", "lower", "upper") if c in table]
        ends = np.concatenate(ends + [points]) if intervals else points
        ends = ends[np.isfinite(ends)]
        if points.size:
            span = max(float(points.max() - points.min()), 0.1)
            lo = max(float(ends.min()), float(points.min()) - 0.5 * span)
            hi = min(float(ends.max()), float(points.max()) + 0.5 * span)
            pad = 0.03 * (hi - lo)
            ax.set_ylim(lo - pad, hi + pad)
    else:
        ax.set_ylim(*ylim)
    ax.set_xticks(x)
    ax.set_xticklabels([f"{_group_label(k)} (n={int(n)})" for k, n in zip(table.index, table["n"])], rotation=75, ha="right", fontsize=8)
    ax.set_ylabel("metric")
    ax.set_xlabel("group (sorted by size)")
    ax.legend(loc="best", fontsize=8)
    return ax
