"""Sensitive-feature specifications: what a rule on each sensitive feature may say.

A :class:`SensitiveSpec` is one of three kinds (Sec. 4.1 of the TestSGD preprint):

* ``categorical``: a value set L; rules are subsets of L.
* ``continuous``: a domain [lo, hi] split into K equal-width bins; rules are contiguous ranges
  of bins.
* ``term_category``: a category of identity terms in a text column; rules are single terms.

Every spec maps a data column to integer *codes* (the category index, the bin index, or
whether the text mentions the category), which is what rule mining works on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pcfair.errors import DataError, SpecError, VariableError

from .terms import DIXON_TERMS, cached_matcher, normalize_term

__all__ = ["SensitiveSpec", "resolve_specs", "format_number"]

KINDS = ("categorical", "continuous", "term_category")


def format_number(x: float) -> str:
    """Render a bin edge compactly: ``40.0`` as ``40``, ``0.4`` as ``0.4``."""
    return f"{float(x):.10g}"


def _bin_edges(lo: float, hi: float, bins: int) -> tuple[float, ...]:
    # Rounded to 12 significant digits so that 0.3 is an edge on [0, 1], not 0.30000000000000004.
    inner = [float(f"{lo + (hi - lo) * k / bins:.12g}") for k in range(1, bins)]
    return (float(lo), *inner, float(hi))


def _canonical_values(values: Sequence[Any]) -> tuple:
    out = []
    for v in values:
        v = v.item() if isinstance(v, np.generic) else v
        if v not in out:
            out.append(v)
    return tuple(out)


@dataclass(frozen=True)
class SensitiveSpec:
    """How rules may constrain one sensitive feature.

    Use the constructors :meth:`categorical`, :meth:`continuous` and :meth:`term_category`.

    Parameters
    ----------
    name : str
        The column name (structured data) or the term-category name (text).
    kind : {"categorical", "continuous", "term_category"}
    values : tuple
        The value set L (categorical) or the category's terms (term_category).
    lo, hi : float, optional
        The domain of a continuous feature.
    bins : int
        The number K of equal-width bins of a continuous feature.
    column : str, optional
        The text column a term category is looked for in.

    Examples
    --------
    >>> age = SensitiveSpec.continuous("age", 0, 100, bins=10)
    >>> age.edges[:3]
    (0.0, 10.0, 20.0)
    >>> SensitiveSpec.categorical("gender", ["F", "M"]).n_codes
    2
    """

    name: str
    kind: str
    values: tuple = ()
    lo: float | None = None
    hi: float | None = None
    bins: int = 10
    column: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise SpecError(f"unknown sensitive-feature kind {self.kind!r}; use one of {KINDS}")
        if self.kind == "categorical":
            if len(self.values) == 0:
                raise SpecError(f"categorical feature {self.name!r} has no values")
            if len(set(self.values)) != len(self.values):
                raise SpecError(f"categorical feature {self.name!r} repeats a value")
        elif self.kind == "continuous":
            lo, hi = self.lo, self.hi
            if lo is None or hi is None or not np.isfinite(lo) or not np.isfinite(hi) or lo >= hi:
                raise SpecError(
                    f"continuous feature {self.name!r} needs a finite domain lo < hi, "
                    f"got ({lo}, {hi})"
                )
            if int(self.bins) != self.bins or self.bins < 1:
                raise SpecError(f"continuous feature {self.name!r}: bins must be >= 1, got {self.bins}")
        else:
            if len(self.values) == 0:
                raise SpecError(f"term category {self.name!r} has no terms")
            if not self.column:
                raise SpecError(f"term category {self.name!r} needs the text column name")

    # ----------------------------------------------------------------- constructors
    @classmethod
    def categorical(cls, name: str, values: Sequence[Any]) -> SensitiveSpec:
        """A categorical feature with value set ``values`` (their order is kept for display)."""
        return cls(name=name, kind="categorical", values=_canonical_values(values))

    @classmethod
    def continuous(cls, name: str, lo: float, hi: float, bins: int = 10) -> SensitiveSpec:
        """A continuous feature on ``[lo, hi]`` cut into ``bins`` equal-width intervals."""
        return cls(name=name, kind="continuous", lo=float(lo), hi=float(hi), bins=int(bins))

    @classmethod
    def term_category(cls, name: str, terms: Sequence[str], column: str) -> SensitiveSpec:
        """A category of identity terms looked for in text column ``column``."""
        norm = tuple(dict.fromkeys(normalize_term(t) for t in terms))
        return cls(name=name, kind="term_category", values=norm, column=column)

    # ----------------------------------------------------------------- properties
    @property
    def n_codes(self) -> int:
        """Number of distinct codes: |L|, K, or 2 (mentions the category or not)."""
        if self.kind == "categorical":
            return len(self.values)
        if self.kind == "continuous":
            return int(self.bins)
        return 2

    @property
    def edges(self) -> tuple[float, ...]:
        """The K + 1 bin edges of a continuous feature; bin k is [e_k, e_{k+1}), the last closed."""
        if self.kind != "continuous":
            raise SpecError(f"feature {self.name!r} is {self.kind}, it has no bin edges")
        return _bin_edges(self.lo, self.hi, self.bins)

    @property
    def source_column(self) -> str:
        """The data column this spec reads."""
        return self.column if self.kind == "term_category" else self.name

    # ----------------------------------------------------------------- codes
    def codes(self, data: pd.DataFrame) -> np.ndarray:
        """Integer code of every row of ``data`` (category index, bin index, or 0/1).

        Raises
        ------
        VariableError
            The column is missing.
        DataError
            A value is missing, unknown, or outside the continuous domain.
        """
        col = self.source_column
        if col not in data.columns:
            raise VariableError(f"sensitive column {col!r} is not in the data (columns: {list(data.columns)})")
        series = data[col]
        if series.isna().any():
            row = int(np.flatnonzero(series.isna().to_numpy())[0])
            raise DataError(f"column {col!r} has a missing value (row {row})")
        if self.kind == "categorical":
            codes = pd.Index(list(self.values), dtype=object).get_indexer(series.astype(object)).astype(np.int64)
            bad = codes < 0
            if bad.any():
                value = series.iloc[int(np.flatnonzero(bad)[0])]
                raise DataError(
                    f"column {col!r} has value {value!r}, which is not among the declared "
                    f"values {list(self.values)}"
                )
            return codes
        if self.kind == "continuous":
            return self.bin_index(series.to_numpy())
        matcher = cached_matcher(self.values)
        return matcher.contains_any(_as_texts(series, col)).astype(np.int64)

    def bin_index(self, x: np.ndarray) -> np.ndarray:
        """Bin (0-based) of each value of a continuous feature; raises outside the domain."""
        try:
            x = np.asarray(x, dtype=float)
        except (TypeError, ValueError) as err:
            raise DataError(f"continuous column {self.name!r} holds non-numeric values") from err
        outside = (x < self.lo) | (x > self.hi) | np.isnan(x)
        if outside.any():
            value = x[int(np.flatnonzero(outside)[0])]
            raise DataError(
                f"column {self.name!r} has value {value:g} outside its domain "
                f"[{format_number(self.lo)}, {format_number(self.hi)}]; pass a wider domain"
            )
        inner = np.asarray(self.edges[1:-1])
        return np.searchsorted(inner, x, side="right").astype(np.int64)


def _as_texts(series: pd.Series, col: str) -> list[str]:
    values = series.tolist()
    for i, v in enumerate(values):
        if not isinstance(v, str):
            raise DataError(f"text column {col!r} holds a non-string value {v!r} at row {i}")
    return values


def _categorical_from_data(series: pd.Series, name: str) -> SensitiveSpec:
    if isinstance(series.dtype, pd.CategoricalDtype):
        present = set(series.dropna().unique().tolist())
        values = [v for v in series.cat.categories.tolist() if v in present]
    else:
        values = series.dropna().unique().tolist()
        try:
            values = sorted(values)
        except TypeError:
            values = sorted(values, key=str)
    return SensitiveSpec.categorical(name, values)


def _infer_spec(data: pd.DataFrame, name: str, bins: int, domain: tuple | None) -> SensitiveSpec:
    series = data[name]
    if domain is not None:
        return SensitiveSpec.continuous(name, domain[0], domain[1], bins)
    numeric = pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
    if numeric and series.nunique(dropna=True) > bins:
        return SensitiveSpec.continuous(name, float(series.min()), float(series.max()), bins)
    return _categorical_from_data(series, name)


def resolve_specs(
    data: pd.DataFrame,
    sensitive: Any,
    *,
    bins: int = 10,
    domains: Mapping[str, tuple[float, float]] | None = None,
    text_column: str | None = None,
) -> tuple[SensitiveSpec, ...]:
    """Turn the user's description of the sensitive features into specs.

    Parameters
    ----------
    data : pandas.DataFrame
        The dataset D.
    sensitive : sequence or mapping
        Structured data: column names (kinds inferred), or a mapping from column name to
        ``"categorical"``, ``"continuous"``, a ``(lo, hi)`` domain, a list of values, or a
        :class:`SensitiveSpec`. Text data (``text_column`` given): term-category names from
        :data:`~pcfair.audits.testsgd.terms.DIXON_TERMS`, or a mapping from category name to
        its terms. A sequence of :class:`SensitiveSpec` is used as given.
    bins : int
        K, the number of equal-width bins of a continuous feature.
    domains : mapping, optional
        Per-feature ``(lo, hi)`` domain of continuous features (default: data min and max).
    text_column : str, optional
        The text column; switches to term categories.

    Returns
    -------
    tuple of SensitiveSpec

    Notes
    -----
    Kind inference: a numeric column with more than ``bins`` distinct values is continuous
    on its data range; any other column is categorical on its observed values.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"sex": ["F", "M", "F"], "age": [20, 35, 61]})
    >>> [s.kind for s in resolve_specs(df, {"sex": "categorical", "age": (0, 100)})]
    ['categorical', 'continuous']
    """
    if isinstance(sensitive, SensitiveSpec):
        sensitive = [sensitive]
    if isinstance(sensitive, str):
        sensitive = [sensitive]
    domains = dict(domains or {})
    specs: list[SensitiveSpec] = []
    if text_column is not None:
        if text_column not in data.columns:
            raise VariableError(f"text column {text_column!r} is not in the data")
        items = sensitive.items() if isinstance(sensitive, Mapping) else [(s, None) for s in sensitive]
        for name, terms in items:
            if isinstance(name, SensitiveSpec):
                specs.append(name)
                continue
            if terms is None:
                if name not in DIXON_TERMS:
                    raise VariableError(
                        f"unknown term category {name!r}; built-in ones are {sorted(DIXON_TERMS)}"
                    )
                terms = DIXON_TERMS[name]
            specs.append(SensitiveSpec.term_category(name, terms, text_column))
    else:
        items = sensitive.items() if isinstance(sensitive, Mapping) else [(s, None) for s in sensitive]
        for name, how in items:
            if isinstance(name, SensitiveSpec):
                specs.append(name)
                continue
            if isinstance(how, SensitiveSpec):
                specs.append(how)
                continue
            if name not in data.columns:
                raise VariableError(
                    f"sensitive column {name!r} is not in the data (columns: {list(data.columns)})"
                )
            domain = domains.get(name)
            if how is None:
                specs.append(_infer_spec(data, name, bins, domain))
            elif isinstance(how, str) and how == "categorical":
                specs.append(_categorical_from_data(data[name], name))
            elif isinstance(how, str) and how == "continuous":
                if domain is None:
                    domain = (float(data[name].min()), float(data[name].max()))
                specs.append(SensitiveSpec.continuous(name, domain[0], domain[1], bins))
            elif isinstance(how, str):
                raise SpecError(
                    f"sensitive feature {name!r}: unknown kind {how!r}; use 'categorical', "
                    "'continuous', a (lo, hi) domain or a list of values"
                )
            elif isinstance(how, tuple) and len(how) == 2:
                specs.append(SensitiveSpec.continuous(name, how[0], how[1], bins))
            else:
                specs.append(SensitiveSpec.categorical(name, list(how)))
    names = [s.name for s in specs]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise SpecError(f"sensitive feature(s) {sorted(dup)} named twice")
    if not specs:
        raise SpecError("no sensitive feature given")
    return tuple(specs)
