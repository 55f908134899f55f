"""Intersectional groups: the cross product of the sensitive attributes' values.

The estimation targets are the full intersections ``a = (a[1], ..., a[k])`` of the sensitive
attributes (spec §1); marginal groups such as "all women" only enter as regression features.
:func:`build_group_index` fixes the attribute levels and numbers every group, including groups
that have no rows in the data.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pcfair.errors import DataError


@dataclass(frozen=True)
class GroupIndex:
    """The intersectional groups of a set of sensitive attributes.

    Groups are numbered in the row-major order of :func:`itertools.product` over the attribute
    levels, so group ``g`` has level positions ``attribute_codes[g]``.

    Attributes
    ----------
    sensitive : tuple of str
        The sensitive-attribute column names, in order.
    levels : tuple of tuple
        The ordered values of each attribute.
    """

    sensitive: tuple[str, ...]
    levels: tuple[tuple, ...]

    @property
    def n_groups(self) -> int:
        """Number of intersectional groups, ``prod(len(levels))``."""
        return int(np.prod([len(lv) for lv in self.levels]))

    @property
    def attribute_codes(self) -> np.ndarray:
        """Integer array of shape (n_groups, k): the level position of each attribute."""
        grids = itertools.product(*[range(len(lv)) for lv in self.levels])
        return np.array(list(grids), dtype=np.int64).reshape(self.n_groups, len(self.levels))

    @property
    def index(self) -> pd.Index:
        """A pandas index with one entry per group (a MultiIndex when k >= 2)."""
        if len(self.sensitive) == 1:
            return pd.Index(list(self.levels[0]), name=self.sensitive[0])
        return pd.MultiIndex.from_product([list(lv) for lv in self.levels], names=list(self.sensitive))

    def row_attribute_codes(self, df: pd.DataFrame) -> np.ndarray:
        """Level positions of every row, shape (n_rows, k); raises on unknown values."""
        out = np.empty((len(df), len(self.sensitive)), dtype=np.int64)
        for j, (col, lv) in enumerate(zip(self.sensitive, self.levels)):
            if col not in df.columns:
                raise DataError(f"sensitive column {col!r} is not in the data")
            values = df[col]
            if isinstance(values.dtype, pd.CategoricalDtype):
                # map category positions to level positions (fast path; -1 stays missing)
                cat_pos = pd.Index(list(lv)).get_indexer(values.cat.categories)
                raw = values.cat.codes.to_numpy()
                codes = np.where(raw >= 0, np.append(cat_pos, -1)[raw], -1).astype(np.int64)
            else:
                codes = pd.Index(list(lv)).get_indexer(values.to_numpy()).astype(np.int64)
            bad = codes < 0
            if bad.any():
                first = values[bad].iloc[0]
                first = first.item() if isinstance(first, np.generic) else first
                raise DataError(
                    f"sensitive column {col!r} has value {first!r} outside its levels {list(lv)!r}"
                    " (missing values are not allowed in sensitive columns)"
                )
            out[:, j] = codes
        return out

    def row_codes(self, df: pd.DataFrame) -> np.ndarray:
        """Group number of every row of ``df``."""
        return self.codes_from_attribute_codes(self.row_attribute_codes(df))

    def codes_from_attribute_codes(self, attr_codes: np.ndarray) -> np.ndarray:
        """Mixed-radix group numbers for level positions of shape (n, k)."""
        sizes = [len(lv) for lv in self.levels]
        code = np.zeros(attr_codes.shape[0], dtype=np.int64)
        for j, size in enumerate(sizes):
            code = code * size + attr_codes[:, j]
        return code

    def labels(self) -> list[str]:
        """Readable labels such as ``"race=white, age=40-59"`` for every group."""
        out = []
        for combo in itertools.product(*self.levels):
            out.append(", ".join(f"{a}={v}" for a, v in zip(self.sensitive, combo)))
        return out


def _levels_of(series: pd.Series) -> tuple:
    if isinstance(series.dtype, pd.CategoricalDtype):
        return tuple(series.cat.categories)
    values = series.dropna().unique()
    try:
        return tuple(sorted(values))
    except TypeError:  # mixed types: keep order of appearance
        return tuple(values)


def build_group_index(
    df: pd.DataFrame,
    sensitive: Sequence[str],
    categories: dict[str, Sequence] | None = None,
) -> GroupIndex:
    """Fix the levels of every sensitive attribute and number the intersectional groups.

    Parameters
    ----------
    df : pandas.DataFrame
        One row per evaluated individual.
    sensitive : sequence of str
        Sensitive-attribute columns (at least one; the paper uses k >= 2).
    categories : dict, optional
        Levels to use for some attributes. Otherwise a categorical column's categories are
        used (so declared but unobserved values give empty groups), else the sorted observed
        values.

    Returns
    -------
    GroupIndex

    Raises
    ------
    DataError
        If a column is missing, has missing values, or there are no sensitive columns.

    Examples
    --------
    >>> import pandas as pd
    >>> gi = build_group_index(pd.DataFrame({"r": ["a", "b"], "s": [0, 1]}), ["r", "s"])
    >>> gi.n_groups
    4
    """
    sensitive = [sensitive] if isinstance(sensitive, str) else list(sensitive)
    if not sensitive:
        raise DataError("at least one sensitive column is needed")
    if len(set(sensitive)) != len(sensitive):
        raise DataError(f"sensitive columns are repeated: {sensitive!r}")
    categories = dict(categories or {})
    levels = []
    for col in sensitive:
        if col not in df.columns:
            raise DataError(f"sensitive column {col!r} is not in the data (columns: {list(df.columns)!r})")
        if df[col].isna().any():
            raise DataError(f"sensitive column {col!r} has missing values")
        lv = tuple(categories[col]) if col in categories else _levels_of(df[col])
        if len(lv) == 0:
            raise DataError(f"sensitive column {col!r} has no values")
        if len(set(lv)) != len(lv):
            raise DataError(f"levels of sensitive column {col!r} are repeated: {list(lv)!r}")
        levels.append(lv)
    gi = GroupIndex(tuple(sensitive), tuple(levels))
    gi.row_attribute_codes(df)  # validates values against levels
    return gi
