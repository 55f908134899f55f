"""Turning a DataFrame into categorical codes: the variables and their domains.

Every column a learner sees is categorical. A numeric column with many distinct values (a
*continuous* column: an income, a weight, a float score) would make every distinct value a
category of its own, so a 5,000-row table with two float columns becomes a model of hundreds of
megabytes that no certifier can search. The learners therefore refuse such a column with a
:class:`~pcfair.errors.DataError` that names it and the fix, unless it is binned:

* a column is **continuous** when it is numeric (integers or floats, not booleans) and has more
  than :data:`MAX_NUMERIC_VALUES` (20) distinct values. Twenty keeps every small integer code
  (grades, Likert scales, counts of children, the 0/1 columns of binarized tables) categorical,
  while an age in years (about 70 values) or any real-valued measurement is caught. The count
  does not depend on the number of rows, so a small table is judged like a large one;
* ``bins=N`` (``--bins N`` on the command line) cuts every continuous column at its quantiles
  into at most ``N`` bins (:func:`bin_columns`); ``bins={"col": N, ...}`` bins exactly the named
  numeric columns. The bins are the intervals ``[e0, e1)``, ``[e1, e2)``, ..., ``[e(k-1), ek]``
  between the edges (closed on the left, the last one also on the right; edges that coincide
  because of ties are merged, so heavy ties give fewer bins), and **the intervals are the value
  labels** (``"[18, 25)"``), kept in increasing order. :func:`apply_bins` bins new rows with the
  same edges (values below the first edge fall in the first bin, above the last in the last).

The decision column is never binned: it must be categorical.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from pcfair.circuit.variables import Variables
from pcfair.errors import DataError, VariableError

#: A numeric column with more distinct values than this is continuous: the learners refuse it
#: unless it is binned (``bins=``). See the module docstring.
MAX_NUMERIC_VALUES = 20


def _is_numeric(series: pd.Series) -> bool:
    return (pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
            and not isinstance(series.dtype, pd.CategoricalDtype))


def continuous_columns(df: pd.DataFrame, exclude=()) -> dict[str, int]:
    """The continuous columns of ``df`` (module docstring) with their numbers of distinct values.

    Examples
    --------
    >>> df = pd.DataFrame({"x": [i / 7 for i in range(30)], "k": [i % 3 for i in range(30)]})
    >>> continuous_columns(df)
    {'x': 30}
    """
    skip = {str(c) for c in exclude}
    out = {}
    for c in df.columns:
        if str(c) in skip or not _is_numeric(df[c]):
            continue
        n = int(df[c].nunique(dropna=True))
        if n > MAX_NUMERIC_VALUES:
            out[str(c)] = n
    return out


#: A column is numeric with placeholders when at most this many distinct texts share it with
#: numbers (:func:`numeric_placeholders`).
MAX_PLACEHOLDERS = 3


def numeric_placeholders(series: pd.Series) -> tuple[str, ...]:
    """The text placeholders of a column of numbers (``"unknown"``, ``"?"``, ``"not_known"``),
    or ``()`` where it is not one.

    A text column is numbers with placeholders when at least half of its filled cells read as
    numbers, those numbers are continuous (over :data:`MAX_NUMERIC_VALUES` distinct values),
    and the other cells hold at most :data:`MAX_PLACEHOLDERS` distinct texts. Learned as it
    is, such a column would be one category per number; a column of few numbers and a
    placeholder is categorical and stays so.

    Examples
    --------
    >>> ages = pd.Series([str(a) for a in range(18, 58)] + ["unknown"] * 10)
    >>> numeric_placeholders(ages)
    ('unknown',)
    >>> numeric_placeholders(pd.Series(["1", "2", "none"] * 10))
    ()
    """
    if _is_numeric(series) or isinstance(series.dtype, pd.CategoricalDtype):
        return ()
    filled = series.dropna()
    if filled.empty:
        return ()
    numbers = pd.to_numeric(filled, errors="coerce")
    text = filled[numbers.isna()]
    if text.empty or numbers.notna().mean() < 0.5 or \
            numbers.nunique(dropna=True) <= MAX_NUMERIC_VALUES:
        return ()
    found = pd.unique(text.astype(str))
    return tuple(sorted(found)) if len(found) <= MAX_PLACEHOLDERS else ()


def bin_with_placeholders(series: pd.Series, n_bins: int, placeholders: tuple[str, ...]
                          ) -> tuple[pd.Series, np.ndarray]:
    """``series`` binned into at most ``n_bins`` quantile bins of its numbers, each
    placeholder kept as a value of its own after the intervals; returns it and the edges.

    Examples
    --------
    >>> col = pd.Series([str(a) for a in range(18, 58)] + ["unknown"] * 10)
    >>> out, edges = bin_with_placeholders(col, 2, ("unknown",))
    >>> list(out.cat.categories), out.iloc[-1]
    (['[18, 37.5)', '[37.5, 57]', 'unknown'], 'unknown')
    """
    text = series.astype(str)
    kept = series.notna() & text.isin(placeholders)
    numbers = pd.to_numeric(series.where(~kept), errors="coerce")
    bad = numbers.isna() & series.notna() & ~kept
    if bad.any():
        raise DataError(f"column {series.name!r} holds {series[bad].iloc[0]!r}, neither a number "
                        f"nor one of its placeholders {list(placeholders)}")
    edges = quantile_edges(numbers, n_bins)
    binned = _bin(numbers, edges).astype(object).where(~kept, text)
    cats = [*interval_labels(edges), *placeholders]
    return pd.Series(pd.Categorical(binned, categories=cats), index=series.index,
                     name=series.name), edges


def _continuous_error(found: dict[str, int], decision=None) -> DataError:
    cols = ", ".join(f"{c!r} ({n:,} distinct values)" for c, n in found.items())
    one = next(iter(found))
    if decision is not None and str(decision) in found:
        return DataError(
            f"the decision column {str(decision)!r} is numeric with {found[str(decision)]:,} "
            f"distinct values; the decision must be categorical (a few values, e.g. 0/1), and "
            f"binning does not apply to it")
    return DataError(
        f"continuous column(s) {cols}: learning treats every column as categorical, so each "
        f"distinct value would be a category of its own (a numeric column may have at most "
        f"{MAX_NUMERIC_VALUES} distinct values). Bin them with bins=N (--bins N on the command "
        f"line: N quantile bins) or pcfair.datasets.discretize; if the numbers are category "
        f"codes, make them text: df[{one!r}].astype(str)")


def _fmt(x: float, digits: int) -> str:
    if float(x).is_integer() and abs(x) < 1e15:
        return str(int(x))
    return f"{x:.{digits}g}"


def interval_labels(edges) -> list[str]:
    """The labels ``"[e0, e1)"``, ..., ``"[e(k-1), ek]"`` of the bins between ``edges``,
    with as many significant digits as it takes to tell the edges apart (at least 4).

    Examples
    --------
    >>> interval_labels([18, 25, 40.5, 90])
    ['[18, 25)', '[25, 40.5)', '[40.5, 90]']
    >>> interval_labels([3, 3])
    ['[3, 3]']
    """
    edges = [float(e) for e in edges]
    for digits in range(4, 18):
        text = [_fmt(e, digits) for e in edges]
        if len(set(text)) == len(set(edges)):
            break
    if len(edges) == 2 and edges[0] == edges[1]:
        return [f"[{text[0]}, {text[1]}]"]
    k = len(edges) - 1
    return [f"[{text[i]}, {text[i + 1]}{']' if i == k - 1 else ')'}" for i in range(k)]


def quantile_edges(values, n_bins: int) -> np.ndarray:
    """Edges of at most ``n_bins`` quantile bins of the non-missing ``values`` (ties merged)."""
    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    if v.size == 0:
        raise DataError("cannot bin a column without values")
    edges = np.unique(np.quantile(v, np.linspace(0.0, 1.0, int(n_bins) + 1)))
    edges[0], edges[-1] = v.min(), v.max()
    return edges if edges.size > 1 else np.array([edges[0], edges[0]])


def _bin(series: pd.Series, edges: np.ndarray) -> pd.Series:
    labels = interval_labels(edges)
    v = series.to_numpy(dtype=float, na_value=np.nan)
    codes = np.clip(np.searchsorted(edges[1:-1], v, side="right"), 0, len(labels) - 1)
    codes = np.where(np.isnan(v), -1, codes)
    cat = pd.Categorical.from_codes(codes, categories=labels, ordered=True)
    return pd.Series(cat, index=series.index, name=series.name)


def apply_bins(df: pd.DataFrame, edges: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """Bin the columns named in ``edges`` with those edges (as :func:`bin_columns` made them).

    Values below the first edge go to the first bin and values above the last edge to the last
    (the labels keep the training range); missing values stay missing.

    Examples
    --------
    >>> binned, edges = bin_columns(pd.DataFrame({"x": range(100)}), 2, columns=["x"])
    >>> apply_bins(pd.DataFrame({"x": [-5, 10, 60, 500]}), edges)["x"].tolist()
    ['[0, 49.5)', '[0, 49.5)', '[49.5, 99]', '[49.5, 99]']
    """
    out = df.copy()
    for c, e in edges.items():
        if c in out.columns:
            if not _is_numeric(out[c]):
                raise DataError(f"column {c!r} was binned when learning and must be numeric, "
                                f"got dtype {out[c].dtype}")
            out[c] = _bin(out[c], np.asarray(e, dtype=float))
    return out


def bin_columns(df: pd.DataFrame, bins, *, exclude=(), columns=None
                ) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Quantile-bin columns of ``df``; returns the binned frame and the edges per column.

    Parameters
    ----------
    df : DataFrame
    bins : int or mapping of str to int
        An int bins every continuous column (:func:`continuous_columns`) other than those in
        ``exclude`` into at most that many quantile bins; a mapping bins exactly the named
        (numeric) columns into their own numbers of bins.
    exclude : iterable of str
        Columns never binned (the decision).
    columns : list of str, optional
        With an int ``bins``: bin these columns instead of the continuous ones.

    Returns
    -------
    (DataFrame, dict)
        Binned columns become ordered categoricals whose categories are the interval labels
        (:func:`interval_labels`); the dict maps each binned column to its edges.

    Examples
    --------
    >>> df = pd.DataFrame({"age": list(range(18, 98)), "d": [0, 1] * 40})
    >>> binned, edges = bin_columns(df, 4, exclude=["d"])
    >>> list(binned["age"].cat.categories)
    ['[18, 37.75)', '[37.75, 57.5)', '[57.5, 77.25)', '[77.25, 97]']
    """
    skip = {str(c) for c in exclude}
    if isinstance(bins, Mapping):
        plan = {str(c): n for c, n in bins.items()}
    else:
        if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)):
            raise DataError(f"bins must be a positive integer or a mapping of column names to "
                            f"positive integers, got {bins!r}")
        names = continuous_columns(df, exclude) if columns is None else columns
        plan = {str(c): int(bins) for c in names}
    names = {str(c): c for c in df.columns}
    out = df.copy()
    edges = {}
    for c, n in plan.items():
        if c not in names:
            raise DataError(f"bins names column {c!r}, which is not in the data; columns are "
                            f"{list(names)}")
        if c in skip:
            raise DataError(f"column {c!r} is the decision and cannot be binned")
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise DataError(f"the number of bins of column {c!r} must be a positive integer, "
                            f"got {n!r}")
        series = df[names[c]]
        if not _is_numeric(series):
            raise DataError(f"column {c!r} is not numeric (dtype {series.dtype}) and cannot be "
                            "binned")
        edges[c] = quantile_edges(series, int(n))
        out[names[c]] = _bin(series, edges[c])
    return out, edges


def check_binary_decision(df: pd.DataFrame, decision) -> None:
    """Refuse a decision column that does not have exactly two values (missing cells aside):
    discrimination patterns, the certifier and fair learning are defined for a binary
    decision.

    Examples
    --------
    >>> try:
    ...     check_binary_decision(pd.DataFrame({"d": ["a", "b", "c"]}), "d")
    ... except DataError as err:
    ...     print(str(err).split(":")[0])
    the decision column 'd' has 3 value(s) (['a', 'b', 'c']), not 2
    """
    values = pd.unique(df[decision].dropna())
    if len(values) != 2:
        shown = sorted(map(str, values))[:10]
        raise DataError(f"the decision column {decision!r} has {len(values)} value(s) "
                        f"({shown}), not 2: discrimination patterns need a binary decision "
                        "(name the favourable value, e.g. --favorable V / favorable=V, to "
                        "learn it against the rest)")


def drop_constant_columns(df: pd.DataFrame, keep=()) -> tuple[pd.DataFrame, dict]:
    """``df`` without its columns that hold one value in every row (missing cells aside),
    except those in ``keep``, and the dropped columns with their value: a one-valued feature
    tells no one apart, and as pattern context it only repeats patterns without it.

    Examples
    --------
    >>> frame, dropped = drop_constant_columns(pd.DataFrame({"d": [0, 1], "c": [5, 5]}))
    >>> list(frame.columns), dropped
    (['d'], {'c': 5})
    """
    dropped = {}
    for column in df.columns:
        if column in keep:
            continue
        values = pd.unique(df[column].dropna())
        if len(values) <= 1:
            dropped[column] = values[0].item() if len(values) and hasattr(values[0], "item") \
                else (values[0] if len(values) else None)
    return df.drop(columns=list(dropped)), dropped


def prepare_frame(df: pd.DataFrame, decision=None, bins=None
                  ) -> tuple[pd.DataFrame, dict[str, np.ndarray]]:
    """Check that every column can be learned as categorical, binning with ``bins``.

    Raises :class:`DataError` for a continuous decision, and for a continuous feature when
    ``bins`` is None (the message names the columns and the fix). Returns the frame to learn
    from and the edges of the binned columns (empty without ``bins``).
    """
    if not isinstance(df, pd.DataFrame):
        raise DataError(f"expected a pandas DataFrame, got {type(df).__name__}")
    exclude = () if decision is None else (decision,)
    if decision is not None and str(decision) in {str(c) for c in df.columns}:
        col = next(c for c in df.columns if str(c) == str(decision))
        found = continuous_columns(df[[col]])
        if found:
            raise _continuous_error(found, decision)
    edges: dict[str, np.ndarray] = {}
    if bins is not None:
        df, edges = bin_columns(df, bins, exclude=exclude)
    found = continuous_columns(df, exclude)
    if found:
        raise _continuous_error(found)
    return df, edges


def _domain(series: pd.Series) -> tuple:
    if isinstance(series.dtype, pd.CategoricalDtype):
        values = list(series.cat.categories)
    else:
        values = pd.unique(series)
        try:
            values = sorted(values)
        except TypeError:
            values = sorted(values, key=str)
    return tuple(v.item() if isinstance(v, np.generic) else v for v in values)


def encode_frame(df: pd.DataFrame, variables: Variables | None = None
                 ) -> tuple[np.ndarray, Variables]:
    """Integer codes (rows × columns, int32) and the :class:`Variables` of a DataFrame.

    Each column is categorical: its domain is its sorted distinct values, or, for a pandas
    categorical column, its categories in their order (unused ones included), unless
    ``variables`` is given, in which case the columns are encoded against those domains (an
    unknown value is a :class:`DataError`). Without ``variables`` a continuous column (module
    docstring) is a :class:`DataError`. Missing values are a :class:`DataError`: learning from
    incomplete data needs EM, which is not offered.
    """
    if not isinstance(df, pd.DataFrame):
        raise DataError("expected a pandas DataFrame")
    if df.shape[1] == 0 or df.shape[0] == 0:
        raise DataError("the data has no rows or no columns")
    missing = df.isna().any()
    if missing.any():
        cols = list(missing[missing].index)
        rows = int(df.isna().any(axis=1).sum())
        raise DataError(f"missing values in column(s) {cols} ({rows:,} of {len(df):,} rows): "
                        "learning needs complete data; drop those rows or read a missing cell "
                        "as a value of its own (pcfair learn --missing drop|category; "
                        "fit_recipe(missing=...))")
    names = [str(c) for c in df.columns]
    if variables is None:
        found = continuous_columns(df)
        if found:
            raise _continuous_error(found)
        variables = Variables(names, [_domain(df[c]) for c in df.columns])
    codes = np.empty(df.shape, np.int32)
    for j, c in enumerate(df.columns):
        v = variables.index(str(c))
        table = {label: k for k, label in enumerate(variables.domains[v])}
        col = df[c].to_numpy(dtype=object)
        try:
            codes[:, j] = [table[x.item() if isinstance(x, np.generic) else x] for x in col]
        except KeyError as exc:
            raise DataError(f"column {c!r} has value {exc.args[0]!r}, which is not in its "
                            f"domain {list(variables.domains[v])}") from None
    return codes, variables


def encode_columns(
    df: pd.DataFrame, columns: Sequence[str]
) -> tuple[np.ndarray, tuple[tuple, ...]]:
    """Integer codes of discrete columns and the category values behind them (the encoding the
    audit ports and the data generators share; ``pcfair.audits.cbs`` calls it
    ``encode_covariates``).

    Parameters
    ----------
    df : pandas.DataFrame
        The data.
    columns : sequence of str
        Columns. A pandas ``Categorical`` keeps its category order; other columns use
        their sorted distinct values (order of appearance if they cannot be sorted).

    Returns
    -------
    codes : numpy.ndarray of shape (n_rows, n_columns), int64
    categories : tuple of tuples, the values behind codes ``0..k-1`` of each column

    Raises
    ------
    VariableError
        A column is not in ``df``.
    DataError
        A column has missing values.

    Examples
    --------
    >>> import pandas as pd
    >>> codes, cats = encode_columns(pd.DataFrame({"sex": ["M", "F", "M"]}), ["sex"])
    >>> codes[:, 0].tolist(), cats
    ([1, 0, 1], (('F', 'M'),))
    """
    codes = np.empty((len(df), len(columns)), dtype=np.int64)
    cats: list[tuple] = []
    for j, col in enumerate(columns):
        if col not in df.columns:
            raise VariableError(f"column {col!r} is not in the data")
        series = df[col]
        if series.isna().any():
            raise DataError(
                f"column {col!r} has {int(series.isna().sum())} missing values"
            )
        if isinstance(series.dtype, pd.CategoricalDtype):
            values = tuple(series.cat.categories)
            codes[:, j] = series.cat.codes.to_numpy()
        else:
            uniq = pd.unique(series.to_numpy())
            try:
                uniq = np.array(sorted(uniq), dtype=object)
            except TypeError:
                uniq = np.asarray(uniq, dtype=object)
            values = tuple(v.item() if hasattr(v, "item") else v for v in uniq)
            codes[:, j] = pd.Categorical(series, categories=uniq).codes
        cats.append(values)
    return codes, tuple(cats)
