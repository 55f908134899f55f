"""Discretisation of continuous covariates, a preprocessing step before a Conditional Bias Scan.

CBS forms subgroups from discrete covariate values, so continuous covariates must be binned
first. The paper prescribes no rule (in COMPAS the data define the bins: age under 25 / 25+,
priors 0 / 1-5 / over 5); :func:`discretize` offers quantile bins, equal-width bins or explicit
edges, and labels each bin by its interval so that reported subgroups stay readable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from pcfair.audits.cbs.options import CBSOptionError, check_choice
from pcfair.errors import DataError, VariableError

__all__ = ["discretize"]

STRATEGIES = ("quantile", "uniform")


def _edges(values: np.ndarray, bins: int, strategy: str) -> np.ndarray:
    if strategy == "quantile":
        edges = np.quantile(values, np.linspace(0, 1, bins + 1))
    else:
        edges = np.linspace(values.min(), values.max(), bins + 1)
    return np.unique(edges)


def discretize(
    df: pd.DataFrame,
    columns: Sequence[str] | Mapping[str, int | Sequence[float]],
    *,
    bins: int = 4,
    strategy: str = "quantile",
) -> pd.DataFrame:
    """Return a copy of ``df`` with numeric columns replaced by ordered interval categories.

    Parameters
    ----------
    df : pandas.DataFrame
    columns : sequence of str or mapping
        Columns to bin. A mapping gives per column either a number of bins or explicit
        increasing edges (values outside the edges are an error).
    bins : int, default 4
        Number of bins for columns without their own setting.
    strategy : {"quantile", "uniform"}
        Quantile bins (about equal counts; duplicate edges merged) or equal-width bins.

    Returns
    -------
    pandas.DataFrame
        The binned columns are ordered ``Categorical`` with labels such as ``"[18, 25)"``;
        the last bin is closed on the right.

    Raises
    ------
    VariableError
        A column is not in ``df``.
    DataError
        A column is not numeric, has missing values, or has values outside explicit edges.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"age": [19, 23, 31, 45, 62, 70]})
    >>> discretize(df, {"age": [18, 25, 45, 80]})["age"].tolist()
    ['[18, 25)', '[18, 25)', '[25, 45)', '[45, 80]', '[45, 80]', '[45, 80]']
    """
    check_choice("strategy", strategy, STRATEGIES)
    spec = dict(columns) if isinstance(columns, Mapping) else {c: bins for c in columns}
    out = df.copy()
    for col, setting in spec.items():
        if col not in df.columns:
            raise VariableError(f"column {col!r} is not in the data")
        s = df[col]
        if not pd.api.types.is_numeric_dtype(s):
            raise DataError(f"column {col!r} is not numeric and cannot be binned")
        if s.isna().any():
            raise DataError(f"column {col!r} has missing values")
        values = s.to_numpy(dtype=float)
        if isinstance(setting, (int, np.integer)):
            if setting < 1:
                raise CBSOptionError(f"bins for {col!r} must be >= 1, got {setting}")
            edges = _edges(values, int(setting), strategy)
        else:
            edges = np.asarray(setting, dtype=float)
            if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) <= 0):
                raise CBSOptionError(f"edges for {col!r} must be increasing, got {setting!r}")
            if values.min() < edges[0] or values.max() > edges[-1]:
                raise DataError(
                    f"column {col!r} has values outside the edges [{edges[0]:g}, {edges[-1]:g}]"
                )
        if edges.size < 2:  # a constant column: one bin
            edges = np.array([edges[0], edges[0]])
        idx = np.clip(np.searchsorted(edges, values, side="right") - 1, 0, edges.size - 2)
        labels = [
            f"[{edges[k]:g}, {edges[k + 1]:g}{']' if k == edges.size - 2 else ')'}"
            for k in range(edges.size - 1)
        ]
        out[col] = pd.Categorical.from_codes(idx, categories=labels, ordered=True)
    return out
