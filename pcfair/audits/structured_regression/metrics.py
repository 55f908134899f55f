"""Group performance metrics: the standard estimate ``Z_a = m(S_a)`` and its bootstrap.

The paper's metrics (spec §1) act on the decision ``pi(Yhat) = 1{Yhat >= r}``:

========  ==============================  ==================================
name      definition                      per-row numerator / denominator
========  ==============================  ==================================
``sel``   P[pi = 1]                       pi / 1
``acc``   P[pi = Y]                       1{pi = Y} / 1
``tpr``   P[pi = 1 | Y = 1]               pi*Y / Y
``fnr``   P[pi = 0 | Y = 1]               (1-pi)*Y / Y
``fpr``   P[pi = 1 | Y = 0]               pi*(1-Y) / (1-Y)
``ppv``   P[Y = 1 | pi = 1]               Y*pi / pi
``mean``  E[Yhat] (or E[column])          Yhat / 1
``auc``   P[Yhat < Yhat' | Y=0, Y'=1]     (rank statistic)
========  ==============================  ==================================

All but AUC are ratios of group sums, so the metric on a group (or a bootstrap resample of
it) is ``sum(num) / sum(den)``, undefined when the denominator is 0. AUC counts tied scores as
1/2 (sklearn's ``roc_auc_score`` convention; the paper writes a strict inequality, and the two
agree on tie-free scores). A callable metric receives one group's rows as a DataFrame and
returns a float, or NaN where it is undefined.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from pcfair._random import check_random_state
from pcfair.errors import DataError, SpecError

from . import _kernels
from .groups import build_group_index
from .variance import bootstrap_variance

METRIC_NAMES = ("sel", "acc", "tpr", "fnr", "fpr", "ppv", "auc", "mean")

_ALIASES = {
    "sel": "sel",
    "selection": "sel",
    "selection_rate": "sel",
    "selection rate": "sel",
    "acc": "acc",
    "accuracy": "acc",
    "tpr": "tpr",
    "recall": "tpr",
    "sensitivity": "tpr",
    "true_positive_rate": "tpr",
    "fnr": "fnr",
    "false_negative_rate": "fnr",
    "fpr": "fpr",
    "false_positive_rate": "fpr",
    "ppv": "ppv",
    "precision": "ppv",
    "auc": "auc",
    "roc_auc": "auc",
    "mean": "mean",
}

#: metrics needing the outcome column
_NEEDS_OUTCOME = {"acc", "tpr", "fnr", "fpr", "ppv", "auc"}

# resample in chunks so that a chunk of indices holds about this many entries
_CHUNK_ENTRIES = 4_000_000


def canonical_metric_name(metric: str) -> str | None:
    """Return the canonical name (``"acc"``...) of a metric name or alias, else None."""
    return _ALIASES.get(metric.strip().lower()) if isinstance(metric, str) else None


def _plain(value):
    """A numpy scalar as the Python value (for readable error messages)."""
    return value.item() if isinstance(value, np.generic) else value


def _is_binary(values: np.ndarray) -> bool:
    uniq = pd.unique(values)
    try:
        return bool(np.all(np.isin(uniq.astype(float), (0.0, 1.0))))
    except (TypeError, ValueError):
        return False


def decisions(yhat: np.ndarray, threshold: float | None, name: str) -> np.ndarray:
    """The decisions ``pi(Yhat) = 1{Yhat >= r}`` as 0/1 integers (validated).

    Without a threshold the output must already be 0/1 labels.
    """
    if threshold is not None:
        values = np.asarray(yhat, dtype=float)
        if np.isnan(values).any():
            raise DataError(f"output {name!r} has missing values")
        return (values >= threshold).astype(np.int64)
    if not _is_binary(yhat):
        example = _plain(next(v for v in pd.unique(yhat) if v not in (0, 1, True, False)))
        raise DataError(
            f"output {name!r} has value {example!r}, not a 0/1 decision; pass threshold=r to use "
            f"the decision 1{{{name} >= r}}"
        )
    return np.asarray(yhat).astype(float).astype(np.int64)


def _binary_outcome(y: np.ndarray, name: str, metric: str) -> np.ndarray:
    if pd.isna(y).any():
        raise DataError(f"outcome {name!r} has missing values")
    if not _is_binary(y):
        example = _plain(next(v for v in pd.unique(y) if v not in (0, 1, True, False)))
        raise DataError(f"metric {metric!r} needs a 0/1 outcome, but {name!r} has value {example!r}")
    return np.asarray(y).astype(float).astype(np.int64)


def _resample_chunks(starts: np.ndarray, sizes: np.ndarray, codes: np.ndarray, n_boot: int, rng):
    """Yield ``(b0, idx)`` with idx of shape (chunk, n_rows): stratified resample positions.

    Row ``j`` (in group ``g``) of replicate ``b`` takes the row at
    ``starts[g] + floor(U * sizes[g])``: every group is resampled with replacement at its own
    size. Rows must be sorted by group.
    """
    n_rows = codes.shape[0]
    base = starts[codes]
    size = sizes[codes]
    chunk = max(1, _CHUNK_ENTRIES // max(n_rows, 1))
    for b0 in range(0, n_boot, chunk):
        b1 = min(n_boot, b0 + chunk)
        u = rng.random((b1 - b0, n_rows))
        yield b0, base + np.minimum((u * size).astype(np.int64), size - 1)


class GroupMetric(ABC):
    """A metric prepared on rows sorted by group: values on subsets and bootstrap replicates.

    Subclasses implement :meth:`values` (the metric of every group on a subset of rows) and
    :meth:`bootstrap` (the metric of every group on stratified resamples).
    """

    name: str = "metric"

    @abstractmethod
    def values(self, codes: np.ndarray, n_groups: int, rows: np.ndarray | None = None) -> np.ndarray:
        """Metric of every group on ``rows`` (all rows if None); NaN where undefined."""

    @abstractmethod
    def bootstrap(self, codes: np.ndarray, n_groups: int, n_boot: int, rng) -> np.ndarray:
        """Metric of every group on ``n_boot`` stratified resamples, shape (n_boot, n_groups)."""

    def row_response(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-row response and the mask of rows in the metric's denominator (individual GOF)."""
        raise DataError(
            f"metric {self.name!r} is not a mean of per-row values, so it has no individual-level"
            " form; use unit='group'"
        )


class RatioMetric(GroupMetric):
    """A metric equal to ``sum(num) / sum(den)`` over a group's rows."""

    def __init__(self, name: str, num: np.ndarray, den: np.ndarray):
        self.name = name
        self.num = np.asarray(num, dtype=float)
        self.den = np.asarray(den, dtype=float)

    def values(self, codes, n_groups, rows=None):
        c = codes if rows is None else codes[rows]
        u = self.num if rows is None else self.num[rows]
        v = self.den if rows is None else self.den[rows]
        num = np.bincount(c, weights=u, minlength=n_groups)
        den = np.bincount(c, weights=v, minlength=n_groups)
        out = np.full(n_groups, np.nan)
        ok = den > 0
        out[ok] = num[ok] / den[ok]
        return out

    def bootstrap(self, codes, n_groups, n_boot, rng):
        sizes = np.bincount(codes, minlength=n_groups)
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        nonempty = np.flatnonzero(sizes > 0)
        out = np.full((n_boot, n_groups), np.nan)
        if nonempty.size == 0:
            return out
        for b0, idx in _resample_chunks(starts, sizes, codes, n_boot, rng):
            num = np.add.reduceat(self.num[idx], starts[nonempty], axis=1)
            den = np.add.reduceat(self.den[idx], starts[nonempty], axis=1)
            with np.errstate(invalid="ignore", divide="ignore"):
                ratio = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
            out[b0 : b0 + idx.shape[0], nonempty] = ratio
        return out

    def row_response(self):
        keep = self.den > 0
        resp = np.zeros_like(self.num)
        resp[keep] = self.num[keep] / self.den[keep]
        return resp, keep


class AucMetric(GroupMetric):
    """Group AUC (Mann-Whitney, ties 1/2), computed by the kernels in :mod:`._kernels`."""

    name = "auc"

    def __init__(self, scores: np.ndarray, labels: np.ndarray):
        self.scores = np.asarray(scores, dtype=float)
        self.labels = np.asarray(labels, dtype=np.int64)

    def values(self, codes, n_groups, rows=None):
        c = codes if rows is None else codes[rows]
        s = self.scores if rows is None else self.scores[rows]
        y = self.labels if rows is None else self.labels[rows]
        order = np.argsort(c, kind="stable")
        sizes = np.bincount(c, minlength=n_groups)
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        return _kernels.grouped_auc(s[order], y[order], starts, sizes)

    def bootstrap(self, codes, n_groups, n_boot, rng):
        sizes = np.bincount(codes, minlength=n_groups)
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        out = np.full((n_boot, n_groups), np.nan)
        for b0, idx in _resample_chunks(starts, sizes, codes, n_boot, rng):
            out[b0 : b0 + idx.shape[0]] = _kernels.bootstrap_grouped_auc(
                self.scores, self.labels, starts, sizes, idx
            )
        return out


class CallableMetric(GroupMetric):
    """A user metric: ``func(group_rows: DataFrame) -> float`` (NaN when undefined)."""

    def __init__(self, func: Callable[[pd.DataFrame], float], data: pd.DataFrame):
        self.func = func
        self.name = getattr(func, "__name__", "callable")
        self.data = data.reset_index(drop=True)

    def _call(self, rows: np.ndarray) -> float:
        value = self.func(self.data.iloc[rows])
        try:
            value = float(value)
        except (TypeError, ValueError) as err:
            raise DataError(f"metric {self.name!r} returned {value!r}, not a number") from err
        return value if np.isfinite(value) else np.nan

    def values(self, codes, n_groups, rows=None):
        rows = np.arange(codes.shape[0]) if rows is None else np.asarray(rows)
        c = codes[rows]
        out = np.full(n_groups, np.nan)
        order = np.argsort(c, kind="stable")
        bounds = np.searchsorted(c[order], np.arange(n_groups + 1))
        for g in range(n_groups):
            if bounds[g + 1] > bounds[g]:
                out[g] = self._call(rows[order[bounds[g] : bounds[g + 1]]])
        return out

    def bootstrap(self, codes, n_groups, n_boot, rng):
        sizes = np.bincount(codes, minlength=n_groups)
        starts = np.concatenate(([0], np.cumsum(sizes)[:-1]))
        out = np.full((n_boot, n_groups), np.nan)
        for b0, idx in _resample_chunks(starts, sizes, codes, n_boot, rng):
            for i in range(idx.shape[0]):
                for g in np.flatnonzero(sizes > 0):
                    out[b0 + i, g] = self._call(idx[i, starts[g] : starts[g] + sizes[g]])
        return out


def prepare_metric(
    metric: str | Callable[[pd.DataFrame], float],
    data: pd.DataFrame,
    *,
    outcome: str | None,
    output: str | None,
    threshold: float | None = None,
) -> GroupMetric:
    """Validate the columns a metric needs and return it prepared on ``data``.

    Parameters
    ----------
    metric : str or callable
        A name in :data:`METRIC_NAMES` (or an alias such as ``"accuracy"``), a column name
        (the metric is that column's group mean), or a callable on one group's rows.
    data : pandas.DataFrame
        The rows, in the order the metric's arrays will use.
    outcome, output : str or None
        The outcome column Y and the system-output column Yhat.
    threshold : float, optional
        r in ``pi(Yhat) = 1{Yhat >= r}``; without it the output must be 0/1 decisions.

    Returns
    -------
    GroupMetric

    Raises
    ------
    SpecError
        If ``metric`` is neither a metric name, a column, nor a callable.
    DataError
        If a needed column is missing or has unusable values.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> df = pd.DataFrame({"y": [1, 0, 1, 1], "p": [1, 1, 0, 1]})
    >>> m = prepare_metric("fnr", df, outcome="y", output="p")
    >>> m.values(np.zeros(4, dtype=int), 1)
    array([0.33333333])
    """
    if callable(metric):
        return CallableMetric(metric, data)
    if not isinstance(metric, str):
        raise SpecError(f"metric must be a name, a column or a callable, got {metric!r}")
    name = canonical_metric_name(metric)
    if name is None:
        if metric in data.columns:
            values = pd.to_numeric(data[metric], errors="coerce").to_numpy(dtype=float)
            if np.isnan(values).any():
                raise DataError(f"metric column {metric!r} has missing or non-numeric values")
            return RatioMetric(metric, values, np.ones_like(values))
        raise SpecError(
            f"unknown metric {metric!r}: use one of {', '.join(METRIC_NAMES)}, a column name, or a callable"
        )
    if output is None or output not in data.columns:
        raise DataError(f"metric {name!r} needs the system output column, but {output!r} is not in the data")
    yhat = data[output].to_numpy()
    if name == "mean":
        values = pd.to_numeric(data[output], errors="coerce").to_numpy(dtype=float)
        if np.isnan(values).any():
            raise DataError(f"output {output!r} has missing or non-numeric values")
        return RatioMetric("mean", values, np.ones_like(values))
    y = None
    if name in _NEEDS_OUTCOME:
        if outcome is None or outcome not in data.columns:
            raise DataError(f"metric {name!r} needs the outcome column, but {outcome!r} is not in the data")
        y = data[outcome].to_numpy()
    if name == "auc":
        scores = pd.to_numeric(data[output], errors="coerce").to_numpy(dtype=float)
        if np.isnan(scores).any():
            raise DataError(f"output {output!r} has missing or non-numeric scores")
        return AucMetric(scores, _binary_outcome(y, outcome, name))
    if name == "acc" and threshold is None and not _is_binary(y):
        # label predictions of a non-binary outcome (any categories): accuracy is P[Yhat = Y]
        if pd.isna(y).any() or pd.isna(yhat).any():
            raise DataError(f"outcome {outcome!r} or output {output!r} has missing values")
        hit = (np.asarray(yhat, dtype=object) == np.asarray(y, dtype=object)).astype(float)
        return RatioMetric("acc", hit, np.ones_like(hit))
    pi = decisions(yhat, threshold, output).astype(float)
    if name == "sel":
        return RatioMetric("sel", pi, np.ones_like(pi))
    yb = _binary_outcome(y, outcome, name).astype(float)
    if name == "acc":
        return RatioMetric("acc", (pi == yb).astype(float), np.ones_like(pi))
    if name == "tpr":
        return RatioMetric("tpr", pi * yb, yb)
    if name == "fnr":
        return RatioMetric("fnr", (1.0 - pi) * yb, yb)
    if name == "fpr":
        return RatioMetric("fpr", pi * (1.0 - yb), 1.0 - yb)
    return RatioMetric("ppv", yb * pi, pi)  # ppv


def group_metric(
    df: pd.DataFrame,
    sensitive: Sequence[str],
    metric: str | Callable[[pd.DataFrame], float],
    *,
    outcome: str | None = "y_true",
    output: str | None = "y_score",
    threshold: float | None = None,
    n_boot: int = 0,
    random_state: int | np.random.Generator | None = 0,
) -> pd.DataFrame:
    """Standard (stratified) estimates ``Z_a = m(S_a)`` of every intersectional group.

    Parameters
    ----------
    df : pandas.DataFrame
        One row per individual with the sensitive, outcome and output columns.
    sensitive : sequence of str
        Sensitive-attribute columns.
    metric : str or callable
        See :func:`prepare_metric`.
    outcome, output, threshold
        See :func:`prepare_metric`.
    n_boot : int, default 0
        If positive, also return the per-group bootstrap variance ``var_boot`` of ``Z_a``
        from ``n_boot`` stratified resamples.
    random_state : int, numpy.random.Generator or None, default 0
        Seed of the bootstrap.

    Returns
    -------
    pandas.DataFrame
        Indexed by the groups, with columns ``n`` and ``standard`` (NaN where the metric is
        undefined, flagged by ``defined == False``) and, with ``n_boot``, ``var_boot``.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"a": [0, 0, 1, 1], "b": [0, 0, 0, 0], "y": [1, 0, 1, 1], "p": [1, 1, 0, 1]})
    >>> group_metric(df, ["a", "b"], "acc", outcome="y", output="p")["standard"].tolist()
    [0.5, 0.5]
    """
    gi = build_group_index(df, sensitive)
    codes = gi.row_codes(df)
    order = np.argsort(codes, kind="stable")
    data = df.iloc[order].reset_index(drop=True)
    codes = codes[order]
    m = prepare_metric(metric, data, outcome=outcome, output=output, threshold=threshold)
    z = m.values(codes, gi.n_groups)
    out = pd.DataFrame(
        {"n": np.bincount(codes, minlength=gi.n_groups), "standard": z, "defined": ~np.isnan(z)},
        index=gi.index,
    )
    if n_boot > 0:
        reps = m.bootstrap(codes, gi.n_groups, int(n_boot), check_random_state(random_state))
        out["var_boot"] = bootstrap_variance(reps)
    return out


def true_group_metric(
    population: pd.DataFrame,
    sensitive: Sequence[str],
    metric="mean",
    *,
    output: str = "y_hat",
    outcome: str | None = None,
    threshold: float | None = None,
    categories: dict | None = None,
) -> pd.Series:
    """The ground truth ``mu_a = m(D_a)`` of every group of a finite population.

    Returns a Series indexed like :attr:`StructuredRegression.estimates_` (NaN for groups the
    population lacks or where the metric is undefined).

    Examples
    --------
    >>> import pandas as pd
    >>> pop = pd.DataFrame({"a": [0, 0, 1], "b": [0, 0, 0], "y_hat": [1.0, 0.0, 1.0]})
    >>> true_group_metric(pop, ["a", "b"]).tolist()
    [0.5, 1.0]
    """
    table = group_metric(population, sensitive, metric, outcome=outcome, output=output, threshold=threshold)
    if categories:
        index = build_group_index(population, sensitive, categories).index
        table = table.reindex(index)
    return table["standard"].rename("truth")
