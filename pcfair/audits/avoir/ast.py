"""AVOIR's specification language: a Python builder and a parser for the text form.

The grammar (paper Fig. 2b, restored from KDD Fig. 3) has three levels:

* **row expressions** ``<E>``: pure expressions over the columns of one record (the decision ``r``,
  inputs, labels) with ``+ - * /``, comparisons and Boolean ``& | !``. Built from :class:`Var`.
* **expectation terms** ``<ETerm>``: ``E[<E>]``, ``E[<E> | <E>]`` (a conditional expectation
  estimated by rejection sampling), constants, and ``+ - * /`` over them. Arithmetic is on
  *expectations*: ``E[X] * E[Y]`` is ``E[X]·E[Y]``, not ``E[XY]``.
* **specifications** ``<spec>``: ``<ETerm> op c`` with ``op`` in ``> < == !=`` and ``&``/``|``
  (conjunction and disjunction) over specifications. There is no ``<=``, ``>=`` or negation.

Builder and parser give the same trees::

    from pcfair.audits.avoir import E, Var, parse_spec
    r, sex = Var("r"), Var("sex")
    psi = E(r, given=sex == "M") / E(r, given=sex == "F") > 0.8
    psi.same_as(parse_spec('E[r | sex == "M"] / E[r | sex == "F"] > 0.8'))   # True

Python binds ``&`` and ``|`` tighter than comparisons, so in the builder every comparison must be
parenthesised before it is combined: ``(E(a) < 0.5) & (E(b) > 0.1)``. The text form uses the
usual precedence (comparisons bind tighter than ``&`` and ``|``).

Text-form conventions (paper style ``E[r | sex=M]``):

* ``=`` and ``==`` are the same; ``!=`` and ``≠`` too; ``&``/``∧``/``and``, ``|``/``∨``/``or``
  and ``!``/``~``/``not`` are accepted.
* On the right of ``=``, ``==`` or ``!=`` *inside* ``E[...]`` a bare word is a literal string, so
  ``race=African-American`` means ``race == "African-American"`` (a hyphenated bare word is glued
  when written without spaces). Quote a value to be explicit; write a column name in backticks
  (``y == `r` ``) to compare two columns.
* After ``|`` a comma separates conjuncts (``E[y | r, s]`` is ``E[y | r & s]``); the keywords
  ``given=`` and ``range=(a, b)`` may follow a comma (``E[x, given=s, range=(0, 4)]``).
* A bare variable used as a condition means "is non-zero".

Values of an expectation's expression must lie in ``[0, 1]`` (Bernoulli variables, as the paper
assumes) unless a ``range=(a, b)`` is declared; the bound is then scaled by ``b − a``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pcfair.audits.avoir.errors import SpecSyntaxError
from pcfair.errors import DataError, SpecError, VariableError

__all__ = [
    "And",
    "Constant",
    "E",
    "ETerm",
    "Expectation",
    "Expr",
    "Or",
    "Spec",
    "SpecSyntaxError",
    "TermOp",
    "Threshold",
    "Var",
    "parse_expression",
    "parse_spec",
    "parse_term",
]

_PAREN_HINT = (
    "Python binds & and | tighter than comparisons: parenthesise each comparison, "
    "e.g. (E(a) < 0.5) & (E(b) > 0.1)"
)


# ---------------------------------------------------------------------------------------------
# Row expressions <E>
# ---------------------------------------------------------------------------------------------

_PREC = {"|": 1, "&": 2, "!": 3, ">": 4, "<": 4, ">=": 4, "<=": 4, "==": 4, "!=": 4,
         "+": 5, "-": 5, "*": 6, "/": 6, "neg": 7}
_ROW_OPS = {"+", "-", "*", "/", ">", "<", ">=", "<=", "==", "!=", "&", "|"}


def _fmt_number(v: float | int) -> str:
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    v = float(v)
    if math.isfinite(v) and v == int(v) and abs(v) < 1e15:
        return f"{v:.1f}"
    return repr(v)


def _is_text(arr: np.ndarray) -> bool:
    return arr.dtype.kind in "OUS"


def _truth(arr: np.ndarray, what: str) -> np.ndarray:
    """Truth value of a row expression's values (bool array)."""
    if arr.dtype == bool:
        return arr
    if _is_text(arr):
        raise DataError(f"{what} holds text; use it in a comparison such as {what} == \"value\"")
    if np.isnan(arr).any():
        raise DataError(f"{what} has missing values (NaN) where a truth value is needed")
    return arr != 0


def _column_array(data: pd.DataFrame, name: str) -> np.ndarray:
    """A column as numpy: bool, float (NaN for missing) or object (text)."""
    if name not in data.columns:
        raise VariableError(
            f"column {name!r} used by the specification is not in the data; "
            f"columns are {list(map(str, data.columns))}"
        )
    col = data[name]
    if pd.api.types.is_bool_dtype(col.dtype) and not col.isna().any():
        return col.to_numpy(dtype=bool)
    if pd.api.types.is_numeric_dtype(col.dtype) or pd.api.types.is_bool_dtype(col.dtype):
        return col.to_numpy(dtype=float, na_value=np.nan)
    return col.to_numpy(dtype=object)


class ColumnCache:
    """A batch's columns converted to numpy once, shared by every expression evaluated on it.

    Built from a DataFrame, or from a list of record mappings without going through pandas
    (the per-call decorator's fast path).
    """

    def __init__(self, data: pd.DataFrame):
        self.data = data
        self._arrays: dict[str, np.ndarray] = {}
        self._n = len(data)

    @classmethod
    def from_records(cls, records: list[Mapping]) -> ColumnCache:
        """Columns of a list of records (mappings of scalars)."""
        self = cls.__new__(cls)
        self.data = None
        self._n = len(records)
        names: dict[str, None] = {}
        for rec in records:
            names.update(dict.fromkeys(rec))
        self._arrays = {name: _record_column([rec.get(name) for rec in records])
                        for name in names}
        return self

    def __len__(self) -> int:
        return self._n

    @property
    def columns(self) -> list[str]:
        return list(self._arrays) if self.data is None else list(self.data.columns)

    def array(self, name: str) -> np.ndarray:
        if name not in self._arrays:
            if self.data is None:
                raise VariableError(
                    f"column {name!r} used by the specification is not in the data; "
                    f"columns are {self.columns}")
            self._arrays[name] = _column_array(self.data, name)
        return self._arrays[name]


def _record_column(values: list) -> np.ndarray:
    if all(isinstance(v, (bool, np.bool_)) for v in values):
        return np.asarray(values, dtype=bool)
    if all(v is None or (isinstance(v, (int, float, np.integer, np.floating))
                         and not isinstance(v, (bool, np.bool_))) for v in values):
        return np.asarray([np.nan if v is None else v for v in values], dtype=float)
    if any(isinstance(v, (bool, np.bool_, int, float, np.integer, np.floating)) for v in values):
        if all(v is None or isinstance(v, (bool, np.bool_, int, float, np.integer, np.floating))
               for v in values):
            return np.asarray([np.nan if v is None else float(v) for v in values], dtype=float)
    return np.asarray(values, dtype=object)


class Expr:
    """A row expression ``<E>``: evaluated on every record of a batch.

    Build one from :class:`Var` and Python operators; comparisons give Boolean expressions and
    ``&``, ``|`` and ``~`` combine them. Use :func:`E` to take its expectation.

    Examples
    --------
    >>> from pcfair.audits.avoir import Var
    >>> (Var("x") + 1 > 2) & ~(Var("s") == "a")
    x + 1 > 2 & !(s == "a")
    """

    __slots__ = ()
    __hash__ = None  # == builds an expression; use same_as() for structural equality

    # arithmetic -------------------------------------------------------------------------------
    def __add__(self, other):
        return BinOp("+", self, _as_expr(other))

    def __radd__(self, other):
        return BinOp("+", _as_expr(other), self)

    def __sub__(self, other):
        return BinOp("-", self, _as_expr(other))

    def __rsub__(self, other):
        return BinOp("-", _as_expr(other), self)

    def __mul__(self, other):
        return BinOp("*", self, _as_expr(other))

    def __rmul__(self, other):
        return BinOp("*", _as_expr(other), self)

    def __truediv__(self, other):
        return BinOp("/", self, _as_expr(other))

    def __rtruediv__(self, other):
        return BinOp("/", _as_expr(other), self)

    def __neg__(self):
        if isinstance(self, Const) and not isinstance(self.value, str):
            return Const(-self.value)
        return UnaryOp("-", self)

    # comparisons ------------------------------------------------------------------------------
    def __gt__(self, other):
        return BinOp(">", self, _as_expr(other))

    def __lt__(self, other):
        return BinOp("<", self, _as_expr(other))

    def __ge__(self, other):
        return BinOp(">=", self, _as_expr(other))

    def __le__(self, other):
        return BinOp("<=", self, _as_expr(other))

    def __eq__(self, other):  # type: ignore[override]
        return BinOp("==", self, _as_expr(other))

    def __ne__(self, other):  # type: ignore[override]
        return BinOp("!=", self, _as_expr(other))

    # logic ------------------------------------------------------------------------------------
    def __and__(self, other):
        return BinOp("&", self, _as_expr(other))

    def __rand__(self, other):
        return BinOp("&", _as_expr(other), self)

    def __or__(self, other):
        return BinOp("|", self, _as_expr(other))

    def __ror__(self, other):
        return BinOp("|", _as_expr(other), self)

    def __invert__(self):
        return UnaryOp("!", self)

    def __bool__(self):
        raise SpecError(
            f"the truth value of the row expression {self} is only known per record; "
            "use & | ~ instead of and/or/not. " + _PAREN_HINT
        )

    # interface --------------------------------------------------------------------------------
    def evaluate(self, data: pd.DataFrame) -> np.ndarray:
        """Evaluate on every row of ``data``; returns a numpy array of length ``len(data)``."""
        raise NotImplementedError

    def variables(self) -> set[str]:
        """Names of the columns the expression reads."""
        raise NotImplementedError

    def key(self) -> tuple:
        """A hashable structural key; equal keys mean equal expressions."""
        raise NotImplementedError

    def same_as(self, other: object) -> bool:
        """Structural equality (``==`` builds a comparison instead)."""
        return isinstance(other, Expr) and self.key() == other.key()

    def _prec(self) -> int:
        return 8

    def __repr__(self) -> str:
        return self.to_text()

    def to_text(self) -> str:
        """The text form, re-parseable by :func:`parse_expression`."""
        raise NotImplementedError


@dataclass(frozen=True, eq=False, repr=False)
class Var(Expr):
    """A column of the monitored records (an input, the decision ``r`` or a label).

    Parameters
    ----------
    name : str
        Column name.

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.audits.avoir import Var
    >>> (Var("x") > 10).evaluate(pd.DataFrame({"x": [1, 41]})).tolist()
    [False, True]
    """

    name: str

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise SpecError(f"a variable name must be a non-empty string, got {self.name!r}")

    def evaluate(self, data: pd.DataFrame) -> np.ndarray:
        if isinstance(data, ColumnCache):
            return data.array(self.name)
        return _column_array(data, self.name)

    def variables(self) -> set[str]:
        return {self.name}

    def key(self) -> tuple:
        return ("var", self.name)

    def to_text(self) -> str:
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", self.name) and self.name not in _KEYWORDS:
            return self.name
        return "`" + self.name + "`"


@dataclass(frozen=True, eq=False, repr=False)
class Const(Expr):
    """A literal value (number, Boolean or string) inside a row expression."""

    value: float | int | bool | str

    def __post_init__(self):
        if not isinstance(self.value, (int, float, bool, str, np.integer, np.floating)):
            raise SpecError(f"unsupported literal {self.value!r} in a row expression")

    def evaluate(self, data: pd.DataFrame) -> np.ndarray:
        n = len(data)
        if isinstance(self.value, str):
            return np.full(n, self.value, dtype=object)
        if isinstance(self.value, bool):
            return np.full(n, self.value, dtype=bool)
        return np.full(n, float(self.value))

    def variables(self) -> set[str]:
        return set()

    def key(self) -> tuple:
        if isinstance(self.value, str):
            return ("str", self.value)
        return ("num", float(self.value))

    def to_text(self) -> str:
        if isinstance(self.value, str):
            return json.dumps(self.value)
        return _fmt_number(self.value)


@dataclass(frozen=True, eq=False, repr=False)
class UnaryOp(Expr):
    """Unary minus (``-``) or logical negation (``!``) of a row expression."""

    op: str
    operand: Expr

    def evaluate(self, data: pd.DataFrame) -> np.ndarray:
        v = self.operand.evaluate(data)
        if self.op == "!":
            return ~_truth(v, str(self.operand))
        if _is_text(v):
            raise DataError(f"cannot negate the text values of {self.operand}")
        return -v.astype(float)

    def variables(self) -> set[str]:
        return self.operand.variables()

    def key(self) -> tuple:
        return ("unary", self.op, self.operand.key())

    def _prec(self) -> int:
        return _PREC["neg"] if self.op == "-" else _PREC["!"]

    def to_text(self) -> str:
        inner = self.operand.to_text()
        if self.operand._prec() < self._prec() or (self.op == "!" and self.operand._prec() < 8):
            inner = f"({inner})"
        return f"-{inner}" if self.op == "-" else f"!{inner}"


@dataclass(frozen=True, eq=False, repr=False)
class BinOp(Expr):
    """A binary arithmetic, comparison or Boolean operation on row expressions."""

    op: str
    left: Expr
    right: Expr

    def __post_init__(self):
        if self.op not in _ROW_OPS:
            raise SpecError(f"unknown operator {self.op!r} in a row expression")

    def evaluate(self, data: pd.DataFrame) -> np.ndarray:
        a = self.left.evaluate(data)
        b = self.right.evaluate(data)
        op = self.op
        if op in ("&", "|"):
            ta, tb = _truth(a, str(self.left)), _truth(b, str(self.right))
            return (ta & tb) if op == "&" else (ta | tb)
        text_a, text_b = _is_text(a), _is_text(b)
        if op in ("==", "!="):
            if text_a != text_b:
                txt, num = (self.left, self.right) if text_a else (self.right, self.left)
                raise DataError(
                    f"{txt} holds text but is compared with the number {num}; "
                    "quote the value or check the column's coding"
                )
            res = (a == b) if op == "==" else (a != b)
            return np.asarray(res, dtype=bool)
        if text_a or text_b:
            if op in ("<", ">", "<=", ">=") and text_a and text_b:
                try:
                    return np.asarray(_CMP[op](a, b), dtype=bool)
                except TypeError as err:
                    raise DataError(f"cannot order the values of {self}: {err}") from err
            raise DataError(f"cannot apply {op!r} to text values in {self}")
        a = a.astype(float)
        b = b.astype(float)
        if op in _CMP:
            with np.errstate(invalid="ignore"):
                return _CMP[op](a, b)
        with np.errstate(divide="ignore", invalid="ignore"):
            if op == "+":
                return a + b
            if op == "-":
                return a - b
            if op == "*":
                return a * b
            return a / b

    def variables(self) -> set[str]:
        return self.left.variables() | self.right.variables()

    def key(self) -> tuple:
        return ("bin", self.op, self.left.key(), self.right.key())

    def _prec(self) -> int:
        return _PREC[self.op]

    def to_text(self) -> str:
        p = self._prec()
        left, right = self.left.to_text(), self.right.to_text()
        # left-associative parse: equal precedence on the right (and around a comparison,
        # which does not chain) needs parentheses to give the same tree back
        if self.left._prec() < p or (p == 4 and self.left._prec() == p):
            left = f"({left})"
        if self.right._prec() <= p:
            right = f"({right})"
        return f"{left} {self.op} {right}"


_CMP = {
    ">": np.greater,
    "<": np.less,
    ">=": np.greater_equal,
    "<=": np.less_equal,
}


def _as_expr(x) -> Expr:
    if isinstance(x, Expr):
        return x
    if isinstance(x, (ETerm, Spec)):
        raise SpecError(
            f"cannot use the expectation-level {x} inside a row expression; "
            "E[...] terms combine only with constants and other E[...] terms"
        )
    if isinstance(x, (bool, int, float, str, np.integer, np.floating)):
        return Const(x.item() if isinstance(x, np.generic) else x)
    raise SpecError(f"cannot use {x!r} in a row expression")


# ---------------------------------------------------------------------------------------------
# Expectation terms <ETerm>
# ---------------------------------------------------------------------------------------------

_SPEC_CMP = {">", "<", "==", "!="}
_FLIP = {">": "<", "<": ">", "==": "==", "!=": "!="}


class ETerm:
    """An expectation-level term: expectations, constants and ``+ - * /`` over them.

    Examples
    --------
    >>> from pcfair.audits.avoir import E, Var
    >>> E(Var("r"), given=Var("g") == 1) - E(Var("r"), given=Var("g") == 0)
    E[r | g == 1] - E[r | g == 0]
    """

    __slots__ = ()
    __hash__ = None

    def __add__(self, other):
        return TermOp("+", self, _as_term(other))

    def __radd__(self, other):
        return TermOp("+", _as_term(other), self)

    def __sub__(self, other):
        return TermOp("-", self, _as_term(other))

    def __rsub__(self, other):
        return TermOp("-", _as_term(other), self)

    def __mul__(self, other):
        return TermOp("*", self, _as_term(other))

    def __rmul__(self, other):
        return TermOp("*", _as_term(other), self)

    def __truediv__(self, other):
        return TermOp("/", self, _as_term(other))

    def __rtruediv__(self, other):
        return TermOp("/", _as_term(other), self)

    def __neg__(self):
        if isinstance(self, Constant):
            return Constant(-self.value)
        return TermOp("*", Constant(-1.0), self)

    def _compare(self, op: str, other) -> Threshold:
        if isinstance(other, ETerm) and not isinstance(other, Constant):
            if isinstance(self, Constant):
                return Threshold(other, _FLIP[op], self.value)
            raise SpecError(
                f"AVOIR compares an expectation term with a constant; rewrite "
                f"{self} {op} {other} as ({self} - {other}) {op} 0"
            )
        c = other.value if isinstance(other, Constant) else other
        if isinstance(c, (bool, str)) or not isinstance(c, (int, float, np.integer, np.floating)):
            raise SpecError(f"cannot compare {self} with {other!r}; the threshold must be a number")
        return Threshold(self, op, float(c))

    def __gt__(self, other):
        return self._compare(">", other)

    def __lt__(self, other):
        return self._compare("<", other)

    def __eq__(self, other):  # type: ignore[override]
        return self._compare("==", other)

    def __ne__(self, other):  # type: ignore[override]
        return self._compare("!=", other)

    def __ge__(self, other):
        raise SpecError("AVOIR's grammar has no >=; use > (the bound makes the two equivalent)")

    def __le__(self, other):
        raise SpecError("AVOIR's grammar has no <=; use < (the bound makes the two equivalent)")

    def __and__(self, other):
        raise SpecError(f"& combines specifications, not the term {self}. " + _PAREN_HINT)

    __rand__ = __and__

    def __or__(self, other):
        raise SpecError(f"| combines specifications, not the term {self}. " + _PAREN_HINT)

    __ror__ = __or__

    def __bool__(self):
        raise SpecError(f"the expectation term {self} has no truth value. " + _PAREN_HINT)

    def key(self) -> tuple:
        """A hashable structural key."""
        raise NotImplementedError

    def same_as(self, other: object) -> bool:
        """Structural equality (``==`` builds a comparison instead)."""
        return isinstance(other, ETerm) and self.key() == other.key()

    def children(self) -> tuple:
        """Child nodes in the specification tree."""
        return ()

    def _prec(self) -> int:
        return 8

    def __repr__(self) -> str:
        return self.to_text()

    def to_text(self) -> str:
        """The text form, re-parseable by :func:`parse_term`."""
        raise NotImplementedError


@dataclass(frozen=True, eq=False, repr=False)
class Expectation(ETerm):
    """An elementary subexpression ``E[expr | given]`` (a leaf of the specification tree).

    Use :func:`E` to build one. The estimate is the mean of ``expr`` over the records on which
    ``given`` holds; ``range`` is the declared value range ``(a, b)``.

    Examples
    --------
    >>> from pcfair.audits.avoir import E, Var
    >>> leaf = E(Var("x"), given=Var("x") > 10, range=(0, 100))
    >>> leaf.width, sorted(leaf.variables())
    (100.0, ['x'])
    """

    expr: Expr
    given: Expr | None = None
    range: tuple[float, float] = (0.0, 1.0)

    def __post_init__(self):
        if not isinstance(self.expr, Expr):
            raise SpecError(f"E[...] needs a row expression, got {self.expr!r}")
        if self.given is not None and not isinstance(self.given, Expr):
            raise SpecError(f"given= needs a row expression, got {self.given!r}")
        lo, hi = self.range
        if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
            raise SpecError(f"range=(a, b) needs finite a < b, got {self.range!r}")

    @property
    def width(self) -> float:
        """``b − a`` of the declared range (the factor on the bound's half-width)."""
        return float(self.range[1] - self.range[0])

    def variables(self) -> set[str]:
        """Columns read by the expression and the condition."""
        out = self.expr.variables()
        if self.given is not None:
            out |= self.given.variables()
        return out

    def key(self) -> tuple:
        return ("E", self.expr.key(), None if self.given is None else self.given.key(),
                (float(self.range[0]), float(self.range[1])))

    def to_text(self) -> str:
        s = "E[" + self.expr.to_text()
        if self.given is not None:
            s += " | " + self.given.to_text()
        if tuple(map(float, self.range)) != (0.0, 1.0):
            s += f", range=({_fmt_number(self.range[0])}, {_fmt_number(self.range[1])})"
        return s + "]"

    def observe(self, data: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
        """Per-record (condition mask, value) on a batch; values checked against the range.

        Returns
        -------
        mask : numpy.ndarray of bool, shape (len(data),)
            Whether the record updates this leaf (its condition holds).
        values : numpy.ndarray of float, shape (len(data),)
            The expression's value (0 where the mask is False).

        Raises
        ------
        DataError
            If a value where the condition holds is missing or outside the declared range.
        """
        n = len(data)
        if self.given is None:
            mask = np.ones(n, dtype=bool)
        else:
            mask = _truth(np.asarray(self.given.evaluate(data)), str(self.given))
        vals = np.asarray(self.expr.evaluate(data))
        if _is_text(vals):
            raise DataError(
                f"the expression {self.expr} of {self} holds text; compare it with a value, "
                f"e.g. E[{self.expr} == \"value\"]"
            )
        vals = vals.astype(float)
        vals = np.where(mask, vals, 0.0)
        lo, hi = self.range
        bad = mask & ~((vals >= lo) & (vals <= hi))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"{self}: value {float(vals[i])!r} of {self.expr} at row {i} of the batch is "
                f"outside the range [{lo:g}, {hi:g}]; the concentration bound "
                "needs bounded values: declare a range with E(..., range=(a, b))"
            )
        return mask, vals


@dataclass(frozen=True, eq=False, repr=False)
class Constant(ETerm):
    """A real constant ``c`` in an expectation term; its claim is ``(c, 0, 0)``.

    Examples
    --------
    >>> from pcfair.audits.avoir import E, Var
    >>> (2 * E(Var("r"))).left
    2.0
    """

    value: float

    def __post_init__(self):
        if isinstance(self.value, (bool, str)) or not math.isfinite(float(self.value)):
            raise SpecError(f"a constant must be a finite number, got {self.value!r}")
        object.__setattr__(self, "value", float(self.value))

    def key(self) -> tuple:
        return ("c", self.value)

    def to_text(self) -> str:
        return _fmt_number(self.value)

    def _prec(self) -> int:
        return 8 if self.value >= 0 else _PREC["neg"]


@dataclass(frozen=True, eq=False, repr=False)
class TermOp(ETerm):
    """``left op right`` for ``op`` in ``+ - * /`` over expectation terms.

    Examples
    --------
    >>> from pcfair.audits.avoir import E, Var
    >>> term = E(Var("a")) / E(Var("b"))
    >>> term.op, term.left
    ('/', E[a])
    """

    op: str
    left: ETerm
    right: ETerm

    def __post_init__(self):
        if self.op not in ("+", "-", "*", "/"):
            raise SpecError(f"unknown operator {self.op!r} between expectation terms")

    def children(self) -> tuple:
        return (self.left, self.right)

    def key(self) -> tuple:
        return ("op", self.op, self.left.key(), self.right.key())

    def _prec(self) -> int:
        return _PREC[self.op]

    def to_text(self) -> str:
        p = self._prec()
        left, right = self.left.to_text(), self.right.to_text()
        if self.left._prec() < p:
            left = f"({left})"
        if self.right._prec() <= p:
            right = f"({right})"
        return f"{left} {self.op} {right}"


def _as_term(x) -> ETerm:
    if isinstance(x, ETerm):
        return x
    if isinstance(x, Expr):
        raise SpecError(
            f"the row expression {x} must be wrapped in E[...] before it is combined with "
            "expectation terms"
        )
    if isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, bool):
        return Constant(float(x))
    raise SpecError(f"cannot use {x!r} in an expectation term")


def E(expr: Expr | str | float, given: Expr | str | None = None, *,
      range: tuple[float, float] | None = None) -> Expectation:  # noqa: A002 - paper's name
    """Build the elementary subexpression ``E[expr | given]``.

    Parameters
    ----------
    expr : Expr or str
        Row expression whose mean is estimated; a string is parsed with
        :func:`parse_expression`. Values must lie in ``[0, 1]`` unless ``range`` is given.
    given : Expr or str, optional
        Condition; only records on which it holds update this term (rejection sampling).
    range : (float, float), optional
        Declared value range ``(a, b)``; the bound's half-width is scaled by ``b − a``.

    Returns
    -------
    Expectation

    Examples
    --------
    >>> from pcfair.audits.avoir import E, Var
    >>> E(Var("r"), given=Var("sex") == "M")
    E[r | sex == "M"]
    >>> E("x > 10", given="g == 1")
    E[x > 10 | g == 1]
    """
    if isinstance(expr, str):
        expr = parse_expression(expr)
    else:
        expr = _as_expr(expr)
    if isinstance(given, str):
        given = parse_expression(given)
    elif given is not None:
        given = _as_expr(given)
    if range is None:
        range = (0.0, 1.0)
    try:
        lo, hi = float(range[0]), float(range[1])
    except (TypeError, ValueError, IndexError) as err:
        raise SpecError(f"range must be a pair of numbers (a, b), got {range!r}") from err
    return Expectation(expr, given, (lo, hi))


# ---------------------------------------------------------------------------------------------
# Specifications <spec>
# ---------------------------------------------------------------------------------------------


class Spec:
    """A specification: a comparison ``<ETerm> op c`` or a Boolean combination of them.

    Examples
    --------
    >>> from pcfair.audits.avoir import E, Var
    >>> psi = (E(Var("r")) > 0.2) & (E(Var("r")) < 0.9)
    >>> len(psi.leaves()), sorted(psi.variables())
    (2, ['r'])
    """

    __slots__ = ()

    def __and__(self, other):
        if not isinstance(other, Spec):
            raise SpecError(f"& needs a specification on both sides, got {other!r}. " + _PAREN_HINT)
        return And(self, other)

    def __or__(self, other):
        if not isinstance(other, Spec):
            raise SpecError(f"| needs a specification on both sides, got {other!r}. " + _PAREN_HINT)
        return Or(self, other)

    def __rand__(self, other):
        raise SpecError(f"& needs a specification on both sides, got {other!r}. " + _PAREN_HINT)

    __ror__ = __rand__

    def __invert__(self):
        raise SpecError("AVOIR's grammar has no negation of a specification; flip the comparison")

    def __bool__(self):
        raise SpecError(
            f"the specification {self} has no truth value until it is monitored. " + _PAREN_HINT
        )

    def key(self) -> tuple:
        """A hashable structural key."""
        raise NotImplementedError

    def same_as(self, other: object) -> bool:
        """Structural equality of two specification trees.

        Examples
        --------
        >>> from pcfair.audits.avoir import E, Var, parse_spec
        >>> (E(Var("r")) > 0.5).same_as(parse_spec("E[r] > 0.5"))
        True
        """
        return isinstance(other, Spec) and self.key() == other.key()

    def children(self) -> tuple:
        """Child nodes in the specification tree."""
        return ()

    def leaves(self) -> list[Expectation]:
        """The expectation leaves, in depth-first left-to-right order, as a multiset."""
        return [node for node in iter_nodes(self) if isinstance(node, Expectation)]

    def variables(self) -> set[str]:
        """Columns the specification reads."""
        out: set[str] = set()
        for leaf in self.leaves():
            out |= leaf.variables()
        return out

    def _prec(self) -> int:
        return 8

    def __repr__(self) -> str:
        return self.to_text()

    def to_text(self) -> str:
        """The text form, re-parseable by :func:`parse_spec`."""
        raise NotImplementedError


@dataclass(frozen=True, eq=False, repr=False)
class Threshold(Spec):
    """``term op c`` with ``op`` in ``> < == !=`` (a "specification threshold" node).

    Examples
    --------
    >>> from pcfair.audits.avoir import E, Var
    >>> t = E(Var("r")) > 0.8
    >>> t.op, t.c
    ('>', 0.8)
    """

    term: ETerm
    op: str
    c: float

    def __post_init__(self):
        if self.op not in _SPEC_CMP:
            raise SpecError(f"comparison {self.op!r} is not in AVOIR's grammar (> < == !=)")
        if not isinstance(self.term, ETerm):
            raise SpecError(f"a threshold compares an expectation term, got {self.term!r}")
        if not math.isfinite(float(self.c)):
            raise SpecError(f"the threshold must be a finite number, got {self.c!r}")
        object.__setattr__(self, "c", float(self.c))

    def children(self) -> tuple:
        return (self.term,)

    def key(self) -> tuple:
        return ("cmp", self.op, self.term.key(), self.c)

    def _prec(self) -> int:
        return 4

    def to_text(self) -> str:
        term = self.term.to_text()
        if self.term._prec() <= 4:
            term = f"({term})"
        return f"{term} {self.op} {_fmt_number(self.c)}"


@dataclass(frozen=True, eq=False, repr=False)
class And(Spec):
    """Conjunction of two specifications (Kleene AND).

    Examples
    --------
    >>> from pcfair.audits.avoir import parse_spec
    >>> type(parse_spec("(E[a] > 0.1) & (E[b] > 0.1)")).__name__
    'And'
    """

    left: Spec
    right: Spec

    def children(self) -> tuple:
        return (self.left, self.right)

    def key(self) -> tuple:
        return ("and", self.left.key(), self.right.key())

    def _prec(self) -> int:
        return 2

    def to_text(self) -> str:
        return _join_text(self, "&")


@dataclass(frozen=True, eq=False, repr=False)
class Or(Spec):
    """Disjunction of two specifications (Kleene OR).

    Examples
    --------
    >>> from pcfair.audits.avoir import parse_spec
    >>> type(parse_spec("E[a] > 0.1 | E[b] > 0.1")).__name__
    'Or'
    """

    left: Spec
    right: Spec

    def children(self) -> tuple:
        return (self.left, self.right)

    def key(self) -> tuple:
        return ("or", self.left.key(), self.right.key())

    def _prec(self) -> int:
        return 1

    def to_text(self) -> str:
        return _join_text(self, "|")


def _join_text(node, op: str) -> str:
    p = node._prec()
    left, right = node.left.to_text(), node.right.to_text()
    # parenthesise comparisons too: the text then also reads correctly as Python
    if node.left._prec() < p or isinstance(node.left, Threshold):
        left = f"({left})"
    if node.right._prec() <= p or isinstance(node.right, Threshold):
        right = f"({right})"
    return f"{left} {op} {right}"


def iter_nodes(node) -> Iterator:
    """Pre-order traversal of a specification or term tree (expectation leaves included)."""
    stack = [node]
    while stack:
        cur = stack.pop()
        yield cur
        stack.extend(reversed(cur.children()))


# ---------------------------------------------------------------------------------------------
# Parser for the text form
# ---------------------------------------------------------------------------------------------

_KEYWORDS = {"and", "or", "not", "True", "False", "true", "false", "E"}

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>\s+)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<quoted>`[^`]+`)
  | (?P<ident>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<op>==|!=|<=|>=|&&|\|\||[=<>!~&|+\-*/()\[\],≠∧∨¬×÷−≤≥])
    """,
    re.VERBOSE,
)

_OP_ALIASES = {"=": "==", "≠": "!=", "∧": "&", "&&": "&", "∨": "|", "||": "|", "¬": "!",
               "~": "!", "×": "*", "÷": "/", "−": "-", "≤": "<=", "≥": ">="}


@dataclass(frozen=True)
class _Tok:
    kind: str  # number string quoted ident op eof
    text: str
    pos: int
    end: int
    raw: str = ""


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN_RE.match(text, pos)
        if m is None:
            raise SpecSyntaxError(f"unexpected character {text[pos]!r}", text, pos)
        kind = m.lastgroup
        raw = m.group()
        if kind != "ws":
            value = raw
            if kind == "op":
                value = _OP_ALIASES.get(raw, raw)
            elif kind == "ident" and raw in ("and", "or", "not"):
                kind, value = "op", {"and": "&", "or": "|", "not": "!"}[raw]
            toks.append(_Tok(kind, value, pos, m.end(), raw))
        pos = m.end()
    toks.append(_Tok("eof", "", len(text), len(text)))
    return toks


class _Parser:
    def __init__(self, text: str):
        if not isinstance(text, str):
            raise SpecError(f"a specification must be a string, got {type(text).__name__}")
        self.text = text
        self.toks = _tokenize(text)
        self.i = 0

    # token helpers
    @property
    def tok(self) -> _Tok:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> _Tok:
        return self.toks[min(self.i + k, len(self.toks) - 1)]

    def advance(self) -> _Tok:
        t = self.toks[self.i]
        self.i = min(self.i + 1, len(self.toks) - 1)
        return t

    def error(self, message: str, tok: _Tok | None = None):
        tok = tok or self.tok
        raise SpecSyntaxError(message, self.text, tok.pos)

    def is_op(self, *ops: str) -> bool:
        return self.tok.kind == "op" and self.tok.text in ops

    def expect(self, op: str, what: str) -> _Tok:
        if not self.is_op(op):
            found = "the end of the text" if self.tok.kind == "eof" else repr(self.tok.raw)
            self.error(f"expected {op!r} {what}, found {found}")
        return self.advance()

    def finish(self, node):
        if self.tok.kind != "eof":
            self.error(f"unexpected {self.tok.raw!r} after a complete expression")
        return node

    # grammar: or > and > not > comparison > additive > multiplicative > unary > atom
    def parse_or(self, ctx: str, bar_ends: bool = False):
        left = self.parse_and(ctx, bar_ends)
        while self.is_op("|") and not (bar_ends and self.tok.raw == "|"):
            op_tok = self.advance()
            right = self.parse_and(ctx, bar_ends)
            left = self.combine_logic("|", left, right, op_tok, ctx)
        return left

    def parse_and(self, ctx: str, bar_ends: bool):
        left = self.parse_not(ctx, bar_ends)
        while self.is_op("&"):
            op_tok = self.advance()
            right = self.parse_not(ctx, bar_ends)
            left = self.combine_logic("&", left, right, op_tok, ctx)
        return left

    def combine_logic(self, op, left, right, op_tok, ctx):
        if ctx == "row":
            return BinOp(op, left, right)
        for side, node in (("left", left), ("right", right)):
            if not isinstance(node, Spec):
                self.error(
                    f"{op} combines specifications (comparisons of E[...] terms with constants); "
                    f"its {side} side {node} is not one", op_tok)
        return And(left, right) if op == "&" else Or(left, right)

    def parse_not(self, ctx: str, bar_ends: bool):
        if self.is_op("!"):
            op_tok = self.advance()
            if ctx != "row":
                self.error("AVOIR's grammar has no negation of a specification or term; "
                           "flip the comparison instead", op_tok)
            return UnaryOp("!", self.parse_not(ctx, bar_ends))
        return self.parse_comparison(ctx, bar_ends)

    def parse_comparison(self, ctx: str, bar_ends: bool):
        left = self.parse_additive(ctx)
        if self.is_op(">", "<", "==", "!=", ">=", "<="):
            op_tok = self.advance()
            op = op_tok.text
            if ctx == "row" and op in ("==", "!=") and self.tok.kind == "ident" \
                    and self.tok.raw not in _KEYWORDS:
                right = Const(self.bare_word())
            else:
                right = self.parse_additive(ctx)
            if self.is_op(">", "<", "==", "!=", ">=", "<="):
                self.error("comparisons cannot be chained; combine them with & instead")
            if ctx == "row":
                return BinOp(op, left, right)
            return self.make_threshold(op, left, right, op_tok)
        return left

    def bare_word(self) -> str:
        """A bare word on the right of == / != in a row expression: a literal string."""
        tok = self.advance()
        word = tok.raw
        end = tok.end
        while (self.is_op("-") and self.tok.pos == end and self.peek().pos == self.tok.end
               and self.peek().kind in ("ident", "number")):
            self.advance()
            nxt = self.advance()
            word += "-" + nxt.raw
            end = nxt.end
        if self.is_op("+", "-", "*", "/"):
            self.error(f"the bare word {word!r} on the right of a comparison is read as the "
                       f"text \"{word}\"; write `{word}` in backticks to use the column")
        return word

    def make_threshold(self, op, left, right, op_tok):
        if op in (">=", "<="):
            self.error(f"AVOIR's grammar has no {op}; use {op[0]} (the bound makes the two "
                       "equivalent)", op_tok)
        for node in (left, right):
            if isinstance(node, Spec):
                self.error(f"{op} compares an expectation term with a constant, not the "
                           f"specification {node}; parenthesise or use & |", op_tok)
        if isinstance(right, Constant):
            return Threshold(left, op, right.value)
        if isinstance(left, Constant):
            return Threshold(right, _FLIP[op], left.value)
        self.error(f"AVOIR compares an expectation term with a constant; rewrite as "
                   f"({left} - {right}) {op} 0", op_tok)

    def parse_additive(self, ctx: str):
        left = self.parse_multiplicative(ctx)
        while self.is_op("+", "-"):
            op_tok = self.advance()
            right = self.parse_multiplicative(ctx)
            left = self.arith(op_tok, left, right, ctx)
        return left

    def parse_multiplicative(self, ctx: str):
        left = self.parse_unary(ctx)
        while self.is_op("*", "/"):
            op_tok = self.advance()
            right = self.parse_unary(ctx)
            left = self.arith(op_tok, left, right, ctx)
        return left

    def arith(self, op_tok, left, right, ctx):
        op = op_tok.text
        if ctx == "row":
            return BinOp(op, left, right)
        for node in (left, right):
            if isinstance(node, Spec):
                self.error(f"{op!r} applies to expectation terms, not to the specification "
                           f"{node}", op_tok)
        return TermOp(op, left, right)

    def parse_unary(self, ctx: str):
        if self.is_op("-"):
            op_tok = self.advance()
            operand = self.parse_unary(ctx)
            if ctx == "row":
                if isinstance(operand, Const) and not isinstance(operand.value, str):
                    return Const(-operand.value)
                return UnaryOp("-", operand)
            if isinstance(operand, Spec):
                self.error("unary minus applies to expectation terms, not specifications", op_tok)
            return -operand
        if self.is_op("+"):
            self.advance()
            return self.parse_unary(ctx)
        return self.parse_atom(ctx)

    def parse_atom(self, ctx: str):
        tok = self.tok
        if tok.kind == "number":
            self.advance()
            value = float(tok.text)
            if ctx == "row":
                is_int = re.fullmatch(r"\d+", tok.text) is not None
                return Const(int(tok.text) if is_int else value)
            return Constant(value)
        if tok.kind == "ident" and tok.text == "E" and self.peek().kind == "op" \
                and self.peek().text == "[":
            if ctx == "row":
                self.error("E[...] cannot be nested inside another E[...]")
            return self.parse_expectation()
        if tok.kind == "op" and tok.text == "(":
            self.advance()
            node = self.parse_or(ctx)
            self.expect(")", "to close the parenthesis")
            return node
        if ctx == "row":
            if tok.kind == "ident":
                self.advance()
                if tok.text in ("True", "true"):
                    return Const(True)
                if tok.text in ("False", "false"):
                    return Const(False)
                return Var(tok.text)
            if tok.kind == "quoted":
                self.advance()
                return Var(tok.text[1:-1])
            if tok.kind == "string":
                self.advance()
                return Const(_unquote(tok.text))
        else:
            if tok.kind in ("ident", "quoted"):
                self.error(f"the variable {tok.raw} must be inside E[...]")
            if tok.kind == "string":
                self.error("a string can only appear inside E[...]")
        if tok.kind == "eof":
            self.error("unexpected end of the text; an operand is missing")
        self.error(f"unexpected {tok.raw!r}; expected a number, a variable, E[...] or '('")

    def parse_expectation(self) -> Expectation:
        self.advance()  # E
        self.advance()  # [
        if self.is_op("]"):
            self.error("E[...] needs an expression")
        expr = self.parse_or("row", bar_ends=True)
        given: list[Expr] = []
        rng: tuple[float, float] | None = None
        if self.is_op("|"):
            self.advance()
            given.append(self.parse_or("row"))
        while self.is_op(","):
            self.advance()
            if self.tok.kind == "ident" and self.tok.text in ("given", "range") \
                    and self.peek().kind == "op" and self.peek().raw == "=":
                kw = self.advance().text
                self.advance()  # =
                if kw == "given":
                    given.append(self.parse_or("row"))
                else:
                    if rng is not None:
                        self.error("range= is given twice")
                    rng = self.parse_range()
            elif given:
                given.append(self.parse_or("row"))
            else:
                self.error("after the expression, a comma must be followed by given= or range=")
        self.expect("]", "to close E[")
        cond = None
        for g in given:
            cond = g if cond is None else BinOp("&", cond, g)
        return Expectation(expr, cond, rng or (0.0, 1.0))

    def parse_range(self) -> tuple[float, float]:
        start = self.tok
        self.expect("(", "to open range=(a, b)")
        lo = self.signed_number()
        self.expect(",", "between the two ends of range=(a, b)")
        hi = self.signed_number()
        self.expect(")", "to close range=(a, b)")
        if not lo < hi:
            self.error(f"range=(a, b) needs a < b, got ({lo}, {hi})", start)
        return (lo, hi)

    def signed_number(self) -> float:
        sign = 1.0
        if self.is_op("-"):
            self.advance()
            sign = -1.0
        if self.tok.kind != "number":
            self.error("expected a number")
        return sign * float(self.advance().text)


def _unquote(s: str) -> str:
    body = s[1:-1]
    return re.sub(r"\\(.)", r"\1", body)


def parse_spec(text: str) -> Spec:
    """Parse the text form of a specification.

    Parameters
    ----------
    text : str
        For example ``'E[r | sex == "M"] / E[r | sex == "F"] > 0.8'`` or the paper's
        ``"(E[h|sex=M] - E[h|sex=F] < 0.5) & (E[h|race=W] - E[h|race!=W] < 0.5)"``.

    Returns
    -------
    Spec

    Raises
    ------
    SpecSyntaxError
        With the offending token's ``position`` and a caret under it in the message.

    Examples
    --------
    >>> from pcfair.audits.avoir import parse_spec
    >>> parse_spec("E[r | sex=M] - E[r | sex=F] < 0.1")
    E[r | sex == "M"] - E[r | sex == "F"] < 0.1
    """
    p = _Parser(text)
    node = p.parse_or("spec")
    node = p.finish(node)
    if not isinstance(node, Spec):
        raise SpecSyntaxError(
            "a specification compares an expectation term with a constant, e.g. E[r] > 0.5; "
            "this text is only a term", text, 0)
    return node


def parse_term(text: str) -> ETerm:
    """Parse the text form of an expectation term such as ``E[r | s=1] - E[r | s=0]``.

    Examples
    --------
    >>> from pcfair.audits.avoir import parse_term
    >>> parse_term("E[r | g = 1] / E[r | g = 0]")
    E[r | g == 1] / E[r | g == 0]
    """
    p = _Parser(text)
    node = p.finish(p.parse_or("spec"))
    if not isinstance(node, ETerm):
        raise SpecSyntaxError("expected an expectation term, found a specification", text, 0)
    return node


def parse_expression(text: str) -> Expr:
    """Parse a row expression ``<E>`` such as ``x > 10 & sex == "M"``.

    Examples
    --------
    >>> from pcfair.audits.avoir import parse_expression
    >>> parse_expression("race=African-American & recid=0")
    race == "African-American" & recid == 0
    """
    p = _Parser(text)
    return p.finish(p.parse_or("row"))
