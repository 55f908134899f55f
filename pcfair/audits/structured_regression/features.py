"""Group-level features ``phi^a`` and the little language that names feature sets (spec §2.2).

A feature set is a list of *terms*. A term is a set of sensitive attributes (their joint
one-hot indicator) optionally multiplied by one *mean feature*: the outcome rate ``P[Y = 1]``
or an explanatory column. At group level a mean feature is the group mean of the row values,
so an individual-level product such as ``Y * 1{age = v}`` becomes ``P_{S_a}[Y = 1] * 1{a[age] = v}``.
The same terms evaluated on rows instead of groups give the individual-level design used by
the goodness-of-fit tests with ``unit="individual"``.

Feature-set strings join tokens with ``+``:

============== =================================================================
token          columns
============== =================================================================
``∅``, ``1``   none (intercept only; also ``""``, ``"none"``, ``"intercept"``)
``expl``       the outcome-rate features ``P[Y=y]`` (every y, full one-hot) and the
               group mean of every explanatory column
``outcome``    the outcome-rate features only
``sens``       the single-attribute indicators ``1{a[i] = v}`` of every attribute
``identity``   the group-identity indicators ``1{a = a'}``
``<attr>``     the indicators of one sensitive attribute
``<column>``   the group mean of one explanatory column
``a*b``        the joint indicators of attributes a and b (any number of factors)
``y*<attr>``   ``P[Y=1] * 1{a[attr] = v}``; ``y*sens`` does this for every attribute
``<column>*a`` the group mean of an explanatory column times the indicators of a
============== =================================================================

``sens`` inside a product expands to one term per attribute (``sens*sens`` gives every
pairwise interaction). The reserved words take precedence over columns of the same name.
Indicators are full one-hot, not reference-coded; the lasso (and the rank-based F-test) deal
with the collinearity.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pcfair.errors import DataError, SpecError

from .groups import GroupIndex

EMPTY_TOKENS = ("", "∅", "1", "0", "none", "intercept", "empty")
_OUTCOME = "__outcome__"  # mean key: all outcome-rate columns
_POSITIVE = "__y__"  # mean key: P[Y = positive]


@dataclass(frozen=True)
class Term:
    """One block of features: joint indicators of ``attributes`` times an optional mean feature."""

    attributes: tuple[int, ...]
    mean: str | None = None


class FeatureSpace:
    """The features available for one data set: attributes, outcome levels, explanatory columns.

    Parameters
    ----------
    groups : GroupIndex
        The sensitive attributes and their levels.
    outcome : str or None
        Outcome column (for outcome-rate features); None for none.
    outcome_levels : tuple or None
        The outcome's values (full one-hot ``P[Y = y]`` features).
    explanatory : sequence of str
        Numeric explanatory columns whose group means are features.
    """

    def __init__(
        self,
        groups: GroupIndex,
        outcome: str | None = None,
        outcome_levels: tuple | None = None,
        explanatory: Sequence[str] = (),
    ):
        self.groups = groups
        self.outcome = outcome if outcome_levels else None
        self.outcome_levels = tuple(outcome_levels) if outcome_levels else ()
        self.explanatory = tuple(explanatory)
        overlap = set(self.explanatory) & set(groups.sensitive)
        if overlap:
            raise DataError(f"columns {sorted(overlap)!r} are both sensitive and explanatory")

    # ----------------------------------------------------------------- base (row) columns
    @property
    def base_names(self) -> list[str]:
        """Names of the row-level columns whose group means are the mean features."""
        out = [f"P[{self.outcome}={lv}]" for lv in self.outcome_levels]
        return out + [f"mean({x})" for x in self.explanatory]

    @property
    def positive_level(self):
        """The outcome value whose rate enters products (``y*...``), or None if ambiguous."""
        levels = self.outcome_levels
        if not levels:
            return None
        if set(levels) <= {0, 1, True, False}:
            return 1
        if len(levels) == 2:
            return levels[1]
        return None

    def base_rows(self, df: pd.DataFrame) -> np.ndarray:
        """Row-level base values, shape (n_rows, len(base_names))."""
        cols = []
        if self.outcome is not None:
            y = df[self.outcome].to_numpy()
            for lv in self.outcome_levels:
                cols.append((y == lv).astype(float))
        for x in self.explanatory:
            if x not in df.columns:
                raise DataError(f"explanatory column {x!r} is not in the data")
            values = pd.to_numeric(df[x], errors="coerce").to_numpy(dtype=float)
            if np.isnan(values).any():
                raise DataError(f"explanatory column {x!r} has missing or non-numeric values")
            cols.append(values)
        if not cols:
            return np.zeros((len(df), 0))
        return np.column_stack(cols)

    def _mean_columns(self, key: str) -> list[int]:
        n_y = len(self.outcome_levels)
        if key == _OUTCOME:
            return list(range(n_y))
        if key == _POSITIVE:
            return [self.outcome_levels.index(self.positive_level)]
        return [n_y + self.explanatory.index(key)]

    # ----------------------------------------------------------------- parsing
    def _require_outcome(self, token: str) -> None:
        if self.outcome is None:
            raise SpecError(f"feature {token!r} needs outcome-rate features, but no outcome is in use")

    def _parse_product(self, token: str) -> list[Term]:
        names = self.groups.sensitive
        choices: list[list[tuple[tuple[int, ...], str | None]]] = []
        for item in token.split("*"):
            item = item.strip()
            if item == "sens":
                choices.append([((i,), None) for i in range(len(names))])
            elif item in ("y", "outcome"):
                self._require_outcome(token)
                if self.positive_level is None:
                    raise SpecError(
                        f"feature {token!r} needs a binary outcome; {self.outcome!r} has levels "
                        f"{list(self.outcome_levels)!r}"
                    )
                choices.append([((), _POSITIVE)])
            elif item in names:
                choices.append([((names.index(item),), None)])
            elif item in self.explanatory:
                choices.append([((), item)])
            elif item == "expl":
                raise SpecError(f"'expl' cannot appear in a product ({token!r}); name the columns")
            else:
                raise SpecError(self._unknown(item, token))
        terms = []
        for combo in itertools.product(*choices):
            attrs = sorted({a for part in combo for a in part[0]})
            means = [part[1] for part in combo if part[1] is not None]
            if len(means) > 1:
                raise SpecError(f"feature {token!r} multiplies two mean features; at most one is allowed")
            n_attr_items = sum(len(part[0]) for part in combo)
            if n_attr_items != len(attrs):  # an attribute repeated (e.g. sens*sens diagonal)
                continue
            terms.append(Term(tuple(attrs), means[0] if means else None))
        return terms

    def _unknown(self, item: str, token: str) -> str:
        known = ["expl", "outcome", "sens", "identity", *self.groups.sensitive, *self.explanatory]
        where = "" if item == token else f" in {token!r}"
        return f"unknown feature {item!r}{where}; known: {', '.join(known)} (products with '*')"

    def parse(self, spec: str | Sequence[str] | None) -> list[Term]:
        """Parse a feature-set string (``"expl+age+race+age*race"``) or token list into terms.

        Examples
        --------
        >>> import pandas as pd
        >>> from pcfair.audits.structured_regression.groups import build_group_index
        >>> gi = build_group_index(pd.DataFrame({"r": [0, 1], "s": [0, 1]}), ["r", "s"])
        >>> FeatureSpace(gi).parse("r+r*s")
        [Term(attributes=(0,), mean=None), Term(attributes=(0, 1), mean=None)]
        """
        if spec is None:
            return []
        tokens = spec.split("+") if isinstance(spec, str) else list(spec)
        terms: list[Term] = []
        for raw in tokens:
            token = str(raw).strip()
            if token.lower() in EMPTY_TOKENS:
                continue
            if token == "expl":
                if self.outcome is not None:
                    terms.append(Term((), _OUTCOME))
                terms.extend(Term((), x) for x in self.explanatory)
            elif token == "outcome":
                self._require_outcome(token)
                terms.append(Term((), _OUTCOME))
            elif token == "sens":
                terms.extend(Term((i,)) for i in range(len(self.groups.sensitive)))
            elif token == "identity":
                terms.append(Term(tuple(range(len(self.groups.sensitive)))))
            elif "*" in token:
                terms.extend(self._parse_product(token))
            elif token in self.groups.sensitive:
                terms.append(Term((self.groups.sensitive.index(token),)))
            elif token in self.explanatory:
                terms.append(Term((), token))
            else:
                raise SpecError(self._unknown(token, token))
        unique: list[Term] = []
        for t in terms:
            if t not in unique:
                unique.append(t)
        return unique

    # ----------------------------------------------------------------- design
    def _indicator_block(self, attrs: tuple[int, ...], attr_codes: np.ndarray):
        levels = [self.groups.levels[i] for i in attrs]
        sizes = [len(lv) for lv in levels]
        code = np.zeros(attr_codes.shape[0], dtype=np.int64)
        for i, size in zip(attrs, sizes):
            code = code * size + attr_codes[:, i]
        n_cols = int(np.prod(sizes))
        block = np.zeros((attr_codes.shape[0], n_cols))
        block[np.arange(attr_codes.shape[0]), code] = 1.0
        names = [
            "&".join(f"{self.groups.sensitive[i]}={v}" for i, v in zip(attrs, combo))
            for combo in itertools.product(*levels)
        ]
        return block, names

    def design(self, terms: Sequence[Term], attr_codes: np.ndarray, base: np.ndarray) -> tuple[np.ndarray, list[str]]:
        """Evaluate ``terms`` on units with level positions ``attr_codes`` and base values ``base``.

        Units are groups (``base`` = group means, :func:`group_means`) or rows (``base`` =
        :meth:`base_rows`). Returns the matrix (n_units, n_features) and the column names.
        """
        blocks, names = [], []
        n = attr_codes.shape[0]
        base_names = self.base_names
        for term in terms:
            if term.attributes:
                ind, ind_names = self._indicator_block(term.attributes, attr_codes)
            else:
                ind, ind_names = np.ones((n, 1)), [""]
            if term.mean is None:
                blocks.append(ind)
                names.extend(ind_names)
                continue
            for j in self._mean_columns(term.mean):
                col = base[:, j : j + 1]
                blocks.append(col * ind)
                names.extend(base_names[j] + (f"*{nm}" if nm else "") for nm in ind_names)
        if not blocks:
            return np.zeros((n, 0)), []
        return np.hstack(blocks), names


def outcome_levels_of(df: pd.DataFrame, outcome: str, max_levels: int = 20) -> tuple:
    """The sorted values of a categorical outcome, validated for outcome-rate features.

    Raises
    ------
    DataError
        If the column is missing, has missing values, or does not look categorical.
    """
    if outcome not in df.columns:
        raise DataError(f"outcome column {outcome!r} is not in the data")
    y = df[outcome]
    if y.isna().any():
        raise DataError(f"outcome column {outcome!r} has missing values")
    levels = pd.unique(y.to_numpy())
    if pd.api.types.is_float_dtype(y.dtype) and not np.all(np.mod(levels, 1) == 0):
        raise DataError(
            f"outcome column {outcome!r} is continuous, so it has no outcome-rate features;"
            " pass outcome_rates=False"
        )
    if len(levels) > max_levels:
        raise DataError(
            f"outcome column {outcome!r} has {len(levels)} distinct values (more than {max_levels});"
            " pass outcome_rates=False"
        )
    try:
        return tuple(sorted(levels.tolist()))
    except TypeError:
        return tuple(levels.tolist())


def group_means(codes: np.ndarray, n_groups: int, base: np.ndarray, rows: np.ndarray | None = None):
    """Group means of the base columns (NaN rows for empty groups) and the group counts."""
    c = codes if rows is None else codes[rows]
    b = base if rows is None else base[rows]
    counts = np.bincount(c, minlength=n_groups)
    means = np.full((n_groups, b.shape[1]), np.nan)
    nz = counts > 0
    for j in range(b.shape[1]):
        sums = np.bincount(c, weights=b[:, j], minlength=n_groups)
        means[nz, j] = sums[nz] / counts[nz]
    return means, counts
