"""Rules on one sensitive feature and rule sets (conjunctions of rules), Sec. 4.1 of TestSGD.

* :class:`CategoricalRule`: "race = B or C", a non-empty proper subset of a value set.
* :class:`RangeRule`: "40<=age<70", a contiguous range of equal-width bins.
* :class:`TermRule`: ``"gay"``, an identity term of a text category.
* :class:`RuleSet`: at most one rule per feature, read as a conjunction.

All are frozen and hashable; a rule set equals another with the same rules in any order.
"""

from __future__ import annotations

import abc
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pcfair.errors import DataError, VariableError

from .errors import RuleSetError
from .specs import SensitiveSpec, format_number
from .terms import cached_matcher, normalize_term

__all__ = ["Rule", "CategoricalRule", "RangeRule", "TermRule", "RuleSet"]


def _column(data: pd.DataFrame, name: str) -> pd.Series:
    if name not in data.columns:
        raise VariableError(f"rule column {name!r} is not in the data (columns: {list(data.columns)})")
    return data[name]


def _texts(data: pd.DataFrame, column: str) -> list[str]:
    values = _column(data, column).tolist()
    for i, v in enumerate(values):
        if not isinstance(v, str):
            raise DataError(f"text column {column!r} holds a non-string value {v!r} at row {i}")
    return values


class Rule(abc.ABC):
    """A condition on exactly one sensitive feature (abstract base).

    Examples
    --------
    >>> isinstance(CategoricalRule("sex", ("F",)), Rule)
    True
    """

    feature: str

    @abc.abstractmethod
    def mask(self, data: pd.DataFrame) -> np.ndarray:
        """Boolean array: does each row satisfy the rule?"""

    def support_mask(self, data: pd.DataFrame) -> np.ndarray:
        """Rows counted by the support of Eq. 2/3 (for text: rows mentioning the category)."""
        return self.mask(data)

    @abc.abstractmethod
    def render(self) -> str:
        """Readable text of the rule, as the paper prints it."""

    @abc.abstractmethod
    def allowed_codes(self, spec: SensitiveSpec) -> np.ndarray:
        """Boolean vector over the spec's codes: which codes satisfy the rule."""

    def __str__(self) -> str:
        return self.render()


def _sorted_values(values: Iterable[Any]) -> tuple:
    vals = []
    for v in values:
        v = v.item() if isinstance(v, np.generic) else v
        if v not in vals:
            vals.append(v)
    try:
        return tuple(sorted(vals))
    except TypeError:
        return tuple(sorted(vals, key=lambda v: (type(v).__name__, str(v))))


@dataclass(frozen=True)
class CategoricalRule(Rule):
    """``feature`` takes one of ``values`` (a disjunction of equalities).

    Examples
    --------
    >>> import pandas as pd
    >>> r = CategoricalRule("race", ("C", "B"))
    >>> r.render()
    'race=B or C'
    >>> r.mask(pd.DataFrame({"race": ["A", "B", "C"]})).tolist()
    [False, True, True]
    """

    feature: str
    values: tuple

    def __post_init__(self) -> None:
        vals = _sorted_values(self.values)
        if not vals:
            raise RuleSetError(f"categorical rule on {self.feature!r} allows no value")
        object.__setattr__(self, "values", vals)

    def mask(self, data: pd.DataFrame) -> np.ndarray:
        return _column(data, self.feature).isin(list(self.values)).to_numpy(dtype=bool)

    def render(self) -> str:
        return f"{self.feature}=" + " or ".join(str(v) for v in self.values)

    def allowed_codes(self, spec: SensitiveSpec) -> np.ndarray:
        allowed = set(self.values)
        return np.array([v in allowed for v in spec.values], dtype=bool)


@dataclass(frozen=True)
class RangeRule(Rule):
    """``feature`` lies in bins ``first`` to ``last`` (0-based, inclusive) of ``edges``.

    Bin k is ``[edges[k], edges[k+1])``; the last bin is closed.

    Examples
    --------
    >>> edges = tuple(float(e) for e in range(0, 101, 10))
    >>> RangeRule("age", 4, 7, edges).render()
    '40<=age<80'
    >>> RangeRule("age", 4, 9, edges).render()
    'age>=40'
    """

    feature: str
    first: int
    last: int
    edges: tuple

    def __post_init__(self) -> None:
        edges = tuple(float(e) for e in self.edges)
        object.__setattr__(self, "edges", edges)
        k = len(edges) - 1
        if k < 1 or any(b <= a for a, b in zip(edges, edges[1:])):
            raise RuleSetError(f"range rule on {self.feature!r}: edges must increase, got {edges}")
        if not (0 <= self.first <= self.last < k):
            raise RuleSetError(
                f"range rule on {self.feature!r}: bins {self.first}..{self.last} are not within 0..{k - 1}"
            )
        object.__setattr__(self, "first", int(self.first))
        object.__setattr__(self, "last", int(self.last))

    @property
    def n_bins(self) -> int:
        """K, the number of bins of the feature."""
        return len(self.edges) - 1

    @property
    def low(self) -> float:
        """Inclusive lower end of the range."""
        return self.edges[self.first]

    @property
    def high(self) -> float:
        """Upper end of the range (exclusive unless the range ends at the last bin)."""
        return self.edges[self.last + 1]

    def mask(self, data: pd.DataFrame) -> np.ndarray:
        x = pd.to_numeric(_column(data, self.feature), errors="coerce").to_numpy(dtype=float)
        inside = (x >= self.edges[0]) & (x <= self.edges[-1])
        b = np.searchsorted(np.asarray(self.edges[1:-1]), x, side="right")
        return inside & (b >= self.first) & (b <= self.last)

    def render(self) -> str:
        lo, hi = format_number(self.low), format_number(self.high)
        f = self.feature
        to_end = self.last == self.n_bins - 1
        if self.first == 0 and to_end:
            return f"{lo}<={f}<={hi}"
        if to_end:
            return f"{f}>={lo}"
        if self.first == 0:
            return f"{f}<{hi}"
        return f"{lo}<={f}<{hi}"

    def allowed_codes(self, spec: SensitiveSpec) -> np.ndarray:
        if spec.kind != "continuous" or tuple(spec.edges) != self.edges:
            raise RuleSetError(
                f"range rule {self.render()!r} does not use the bins of feature {spec.name!r}"
            )
        out = np.zeros(spec.n_codes, dtype=bool)
        out[self.first : self.last + 1] = True
        return out


@dataclass(frozen=True)
class TermRule(Rule):
    """The text mentions ``term``, a term of category ``feature``.

    Membership (:meth:`mask`) is term-level; support (:meth:`support_mask`) is
    category-level, as in Eq. 3 of the paper: a document mentioning "lesbian" supports
    ``{"gay"}``.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"text": ["I am a lesbian", "a gay man", "transport"]})
    >>> r = TermRule("gender", "gay", ("lesbian", "gay", "trans"), "text")
    >>> r.mask(df).tolist(), r.support_mask(df).tolist()
    ([False, True, False], [True, True, False])
    """

    feature: str
    term: str
    terms: tuple
    column: str

    def __post_init__(self) -> None:
        terms = tuple(dict.fromkeys(normalize_term(t) for t in self.terms))
        term = normalize_term(self.term)
        if term not in terms:
            raise RuleSetError(f"term {self.term!r} is not in category {self.feature!r} {list(terms)}")
        object.__setattr__(self, "terms", terms)
        object.__setattr__(self, "term", term)

    def mask(self, data: pd.DataFrame) -> np.ndarray:
        matcher = cached_matcher(self.terms)
        j = matcher.terms.index(self.term)
        return matcher.presence(_texts(data, self.column))[:, j]

    def support_mask(self, data: pd.DataFrame) -> np.ndarray:
        return cached_matcher(self.terms).contains_any(_texts(data, self.column))

    def render(self) -> str:
        return f'"{self.term}"'

    def allowed_codes(self, spec: SensitiveSpec) -> np.ndarray:
        return np.array([False, True])


@dataclass(frozen=True, eq=False)
class RuleSet:
    """A conjunction of rules, at most one per feature (Sec. 4.1).

    Two rule sets are equal when they hold the same rules, in any order.

    Parameters
    ----------
    rules : sequence of Rule
        Non-empty; no two rules on the same feature.

    Examples
    --------
    >>> import pandas as pd
    >>> R = RuleSet([CategoricalRule("gender", ("F",)), CategoricalRule("race", ("B", "C"))])
    >>> str(R)
    'gender=F, race=B or C'
    >>> df = pd.DataFrame({"gender": ["F", "F", "M"], "race": ["B", "A", "C"]})
    >>> R.mask(df).tolist(), R.support(df)
    ([True, False, False], 0.3333333333333333)
    """

    rules: tuple

    def __post_init__(self) -> None:
        rules = tuple(self.rules)
        if not rules:
            raise RuleSetError("a rule set needs at least one rule")
        for r in rules:
            if not isinstance(r, Rule):
                raise RuleSetError(f"{r!r} is not a Rule")
        feats = [r.feature for r in rules]
        dup = sorted({f for f in feats if feats.count(f) > 1})
        if dup:
            raise RuleSetError(f"a rule set allows one rule per feature; {dup} has several")
        object.__setattr__(self, "rules", rules)
        object.__setattr__(self, "_key", frozenset(rules))
        object.__setattr__(self, "_hash", hash(self._key))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RuleSet):
            return NotImplemented
        return self._hash == other._hash and self._key == other._key

    def __hash__(self) -> int:
        return self._hash

    def __len__(self) -> int:
        return len(self.rules)

    def __iter__(self) -> Iterator[Rule]:
        return iter(self.rules)

    def __str__(self) -> str:
        return self.render()

    def __repr__(self) -> str:
        return f"RuleSet({self.render()!r})"

    @property
    def features(self) -> tuple[str, ...]:
        """The constrained features, in rule order."""
        return tuple(r.feature for r in self.rules)

    def rule_for(self, feature: str) -> Rule | None:
        """The rule on ``feature``, or None."""
        for r in self.rules:
            if r.feature == feature:
                return r
        return None

    def render(self) -> str:
        """Readable text: the rules joined by commas."""
        return ", ".join(r.render() for r in self.rules)

    def mask(self, data: pd.DataFrame) -> np.ndarray:
        """Rows that satisfy every rule (group membership; term-level for text)."""
        out = np.ones(len(data), dtype=bool)
        for r in self.rules:
            out &= r.mask(data)
        return out

    def support_mask(self, data: pd.DataFrame) -> np.ndarray:
        """Rows counted by the support (Eq. 2 structured, Eq. 3 text)."""
        out = np.ones(len(data), dtype=bool)
        for r in self.rules:
            out &= r.support_mask(data)
        return out

    def support(self, data: pd.DataFrame) -> float:
        """Fraction of rows of ``data`` counted by the support."""
        if len(data) == 0:
            raise DataError("support of a rule set on an empty table is undefined")
        return float(self.support_mask(data).mean())

    def extension_key(self, data: pd.DataFrame) -> bytes:
        """A hashable key of the set of rows of ``data`` in the group (equal extensions, equal keys)."""
        return np.packbits(self.mask(data)).tobytes()

