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

The text is never evaluated: a small, token-by-token pre-translation turns it into a Python
expression, :func:`ast.parse` reads that, and an :class:`ast.NodeVisitor` accepts only the grammar
above, refusing other Python syntax by name (calls, ``**``, ``in``, lambdas, indexing...). The
rewrite keeps each character's offset, so errors point into the user's text. It turns ``& | !``
(and their other spellings) into ``and or not``, which bind looser than comparisons as in the
text form; ``=`` into ``==`` and ``≠ ≤ ≥ × ÷ −`` into ASCII; the first ``|`` at the top of an
``E[...]`` into ``, given:=`` and ``given=``/``range=`` after a comma into ``given:=``/
``range:=``; strings, backticked or dotted column names and bare-word values into placeholder
names (Python never reads a literal). A column named like a Python keyword (``class``) is read as
a column when the text does not parse otherwise; Python-only spellings (``0x10``, ``1_000``,
``1j``, ``#``) are refused.

Values of an expectation's expression must lie in ``[0, 1]`` (Bernoulli variables, as the paper
assumes) unless a ``range=(a, b)`` is declared; the bound is then scaled by ``b − a``.
"""

from __future__ import annotations

import ast
import keyword
import math
import operator
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import ClassVar

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
_PREC = {"|": 1, "&": 2, "!": 3, ">": 4, "<": 4, ">=": 4, "<=": 4, "==": 4, "!=": 4,
         "+": 5, "-": 5, "*": 6, "/": 6, "neg": 7}
_ARITH = {"+": "add", "-": "sub", "*": "mul", "/": "truediv"}
_COMPARE = {">": "gt", "<": "lt", ">=": "ge", "<=": "le", "==": "eq", "!=": "ne"}
_NUMBER = (int, float, np.integer, np.floating)


def _operators(cls, ops: dict[str, str], make, reflected: bool = True):
    """Give ``cls`` the methods ``__name__`` (and ``__rname__``) of ``ops`` ({symbol: name}),
    each returning ``make(symbol, left, right)``."""
    for sym, name in ops.items():
        setattr(cls, f"__{name}__", lambda self, other, s=sym: make(s, self, other))
        if reflected:
            setattr(cls, f"__r{name}__", lambda self, other, s=sym: make(s, other, self))


def _fmt_number(v: float | int) -> str:
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    v = float(v)
    if math.isfinite(v) and v == int(v) and abs(v) < 1e15:
        return f"{v:.1f}"
    return repr(v)


def _infix(node, op: str) -> str:
    """``left op right`` with the parentheses (and backticks) that make the text parse back to
    ``node``: operators associate to the left, comparisons do not chain and are bracketed under
    the specification-level & and |, and what follows == or != never starts with a bare word."""
    p, a, b = node._prec(), node.left, node.right
    left, right = a.to_text(), b.to_text()
    if a._prec() < p or (a._prec() == 4 and (p == 4 or isinstance(a, Threshold))):
        left = f"({left})"
    if b._prec() <= p or isinstance(b, Threshold):
        right = f"({right})"
    elif op in ("==", "!=") and isinstance(b, (Var, BinOp)):  # a bare word there is text
        right = f"`{b.name}`" if isinstance(b, Var) else f"({right})"
    return f"{left} {op} {right}"


class _Node:
    """Shared by row expressions, terms and specifications: structural key, text and repr."""

    __slots__ = ()
    __hash__ = None  # == builds a comparison; use same_as() for structural equality

    def key(self) -> tuple:
        """A hashable structural key; equal keys mean equal trees."""
        raise NotImplementedError

    def same_as(self, other: object) -> bool:
        """Structural equality (``==`` builds a comparison instead).

        Examples
        --------
        >>> from pcfair.audits.avoir import E, Var, parse_spec
        >>> (E(Var("r")) > 0.5).same_as(parse_spec("E[r] > 0.5"))
        True
        """
        return isinstance(other, _Node) and self.key() == other.key()

    def children(self) -> tuple:
        """Child nodes in the specification tree."""
        return ()

    def to_text(self) -> str:
        """The text form, read back by :func:`parse_spec`, :func:`parse_term` or
        :func:`parse_expression`."""
        raise NotImplementedError

    def _prec(self) -> int:
        return 8

    def __repr__(self) -> str:
        return self.to_text()


class _Pair:
    """A binary node ``left op right`` (mixed into row, term and specification classes)."""

    __slots__ = ()

    def children(self) -> tuple:
        return (self.left, self.right)

    def key(self) -> tuple:
        return (type(self).__name__, self.op, self.left.key(), self.right.key())

    def _prec(self) -> int:
        return _PREC[self.op]

    def to_text(self) -> str:
        return _infix(self, self.op)


# ---------------------------------------------------------------------------------------------
# Row expressions <E>
# ---------------------------------------------------------------------------------------------


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


class ColumnCache:
    """A batch's columns converted to numpy once, shared by every expression evaluated on it:
    bool, float (NaN for missing) or object (text).

    Built from a DataFrame, or from a list of record mappings without going through pandas
    (the per-call decorator's fast path).
    """

    def __init__(self, data: pd.DataFrame | None, arrays: dict[str, np.ndarray] | None = None,
                 n: int | None = None):
        self.data, self._arrays = data, arrays or {}
        self._n = len(data) if n is None else n

    @classmethod
    def from_records(cls, records: list[Mapping]) -> ColumnCache:
        """Columns of a list of records (mappings of scalars)."""
        names = dict.fromkeys(name for rec in records for name in rec)
        return cls(None, {name: _record_column([rec.get(name) for rec in records])
                          for name in names}, len(records))

    def __len__(self) -> int:
        return self._n

    @property
    def columns(self) -> list[str]:
        return list(self._arrays) if self.data is None else list(map(str, self.data.columns))

    def array(self, name: str) -> np.ndarray:
        if name not in self._arrays:
            if self.data is None or name not in self.data.columns:
                raise VariableError(f"column {name!r} used by the specification is not in the "
                                    f"data; columns are {self.columns}")
            col = self.data[name]
            if pd.api.types.is_bool_dtype(col.dtype) and not col.isna().any():
                self._arrays[name] = col.to_numpy(dtype=bool)
            elif pd.api.types.is_numeric_dtype(col.dtype) or pd.api.types.is_bool_dtype(col.dtype):
                self._arrays[name] = col.to_numpy(dtype=float, na_value=np.nan)
            else:
                self._arrays[name] = col.to_numpy(dtype=object)
        return self._arrays[name]


def _record_column(values: list) -> np.ndarray:
    if all(isinstance(v, (bool, np.bool_)) for v in values):
        return np.asarray(values, dtype=bool)
    if all(v is None or isinstance(v, (*_NUMBER, bool, np.bool_)) for v in values):
        return np.asarray([np.nan if v is None else float(v) for v in values], dtype=float)
    return np.asarray(values, dtype=object)


class Expr(_Node):
    """A row expression ``<E>``: evaluated on every record of a batch.

    Build one from :class:`Var` and Python operators (``+ - * /``, comparisons, ``&``, ``|``
    and ``~``); comparisons give Boolean expressions. Use :func:`E` to take its expectation.

    Examples
    --------
    >>> from pcfair.audits.avoir import Var
    >>> (Var("x") + 1 > 2) & ~(Var("s") == "a")
    x + 1 > 2 & !(s == "a")
    """

    __slots__ = ()

    def __neg__(self):
        if isinstance(self, Const) and not isinstance(self.value, str):
            return Const(-self.value)
        return UnaryOp("-", self)

    def __invert__(self):
        return UnaryOp("!", self)

    def __bool__(self):
        raise SpecError(
            f"the truth value of the row expression {self} is only known per record; "
            "use & | ~ instead of and/or/not. " + _PAREN_HINT
        )

    def evaluate(self, data: pd.DataFrame | ColumnCache) -> np.ndarray:
        """Evaluate on every row of ``data``; returns a numpy array of length ``len(data)``."""
        raise NotImplementedError

    def variables(self) -> set[str]:
        """Names of the columns the expression reads."""
        return set().union(*(child.variables() for child in vars(self).values()
                             if isinstance(child, Expr)))


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

    def evaluate(self, data: pd.DataFrame | ColumnCache) -> np.ndarray:
        return (data if isinstance(data, ColumnCache) else ColumnCache(data)).array(self.name)

    def variables(self) -> set[str]:
        return {self.name}

    def key(self) -> tuple:
        return ("var", self.name)

    def to_text(self) -> str:
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", self.name) and self.name not in _KEYWORDS \
                and not keyword.iskeyword(self.name):
            return self.name
        return "`" + self.name + "`"


@dataclass(frozen=True, eq=False, repr=False)
class Const(Expr):
    """A literal value (number, Boolean or string) inside a row expression."""

    value: float | int | bool | str

    def __post_init__(self):
        if not isinstance(self.value, (*_NUMBER, bool, str)):
            raise SpecError(f"unsupported literal {self.value!r} in a row expression")

    def evaluate(self, data: pd.DataFrame | ColumnCache) -> np.ndarray:
        v = self.value
        dtype = object if isinstance(v, str) else bool if isinstance(v, bool) else float
        return np.full(len(data), v if dtype is not float else float(v), dtype=dtype)

    def key(self) -> tuple:
        return ("str", self.value) if isinstance(self.value, str) else ("num", float(self.value))

    def to_text(self) -> str:
        if isinstance(self.value, str):
            return '"' + self.value.replace("\\", "\\\\").replace('"', '\\"') + '"'
        return _fmt_number(self.value)


@dataclass(frozen=True, eq=False, repr=False)
class UnaryOp(Expr):
    """Unary minus (``-``) or logical negation (``!``) of a row expression."""

    op: str
    operand: Expr

    def evaluate(self, data: pd.DataFrame | ColumnCache) -> np.ndarray:
        v = self.operand.evaluate(data)
        if self.op == "!":
            return ~_truth(v, str(self.operand))
        if _is_text(v):
            raise DataError(f"cannot negate the text values of {self.operand}")
        return -v.astype(float)

    def key(self) -> tuple:
        return ("unary", self.op, self.operand.key())

    def _prec(self) -> int:
        return _PREC["neg"] if self.op == "-" else _PREC["!"]

    def to_text(self) -> str:
        inner = self.operand.to_text()
        if self.operand._prec() < self._prec() or (self.op == "!" and self.operand._prec() < 8):
            inner = f"({inner})"
        return f"-{inner}" if self.op == "-" else f"!{inner}"


_NUMPY_OPS = {">": np.greater, "<": np.less, ">=": np.greater_equal, "<=": np.less_equal,
              "+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide}


@dataclass(frozen=True, eq=False, repr=False)
class BinOp(_Pair, Expr):
    """A binary arithmetic, comparison or Boolean operation on row expressions."""

    op: str
    left: Expr
    right: Expr

    def __post_init__(self):
        if self.op not in _PREC or self.op in ("!", "neg"):
            raise SpecError(f"unknown operator {self.op!r} in a row expression")

    def evaluate(self, data: pd.DataFrame | ColumnCache) -> np.ndarray:
        a, b, op = self.left.evaluate(data), self.right.evaluate(data), self.op
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
            return np.asarray((a == b) if op == "==" else (a != b), dtype=bool)
        if text_a or text_b:
            if _PREC[op] == 4 and text_a and text_b:
                try:
                    return np.asarray(_NUMPY_OPS[op](a, b), dtype=bool)
                except TypeError as err:
                    raise DataError(f"cannot order the values of {self}: {err}") from err
            raise DataError(f"cannot apply {op!r} to text values in {self}")
        with np.errstate(divide="ignore", invalid="ignore"):
            return _NUMPY_OPS[op](a.astype(float), b.astype(float))



def _as_expr(x) -> Expr:
    if isinstance(x, Expr):
        return x
    if isinstance(x, (ETerm, Spec)):
        raise SpecError(
            f"cannot use the expectation-level {x} inside a row expression; "
            "E[...] terms combine only with constants and other E[...] terms"
        )
    if isinstance(x, (*_NUMBER, bool, str)):
        return Const(x.item() if isinstance(x, np.generic) else x)
    raise SpecError(f"cannot use {x!r} in a row expression")


_operators(Expr, {**_ARITH, "&": "and", "|": "or"},
           lambda op, a, b: BinOp(op, _as_expr(a), _as_expr(b)))
_operators(Expr, _COMPARE, lambda op, a, b: BinOp(op, _as_expr(a), _as_expr(b)), reflected=False)


# ---------------------------------------------------------------------------------------------
# Expectation terms <ETerm>
# ---------------------------------------------------------------------------------------------

_FLIP = {">": "<", "<": ">", "==": "==", "!=": "!="}


class ETerm(_Node):
    """An expectation-level term: expectations, constants and ``+ - * /`` over them.

    Examples
    --------
    >>> from pcfair.audits.avoir import E, Var
    >>> E(Var("r"), given=Var("g") == 1) - E(Var("r"), given=Var("g") == 0)
    E[r | g == 1] - E[r | g == 0]
    """

    __slots__ = ()

    def __neg__(self):
        if isinstance(self, Constant):
            return Constant(-self.value)
        return TermOp("*", Constant(-1.0), self)

    def _compare(self, op: str, other) -> Threshold:
        if isinstance(other, ETerm) and not isinstance(other, Constant):
            if isinstance(self, Constant):
                return Threshold(other, _FLIP[op], self.value)
            raise SpecError(f"AVOIR compares an expectation term with a constant; rewrite as "
                            f"({self} - {other}) {op} 0")
        c = other.value if isinstance(other, Constant) else other
        if isinstance(c, (bool, str)) or not isinstance(c, _NUMBER):
            raise SpecError(f"cannot compare {self} with {other!r}; the threshold must be a number")
        return Threshold(self, op, float(c))

    def __ge__(self, other):
        raise SpecError("AVOIR's grammar has no >=; use > (the bound makes the two equivalent)")

    def __le__(self, other):
        raise SpecError("AVOIR's grammar has no <=; use < (the bound makes the two equivalent)")

    def __and__(self, other):
        raise SpecError(f"& combines specifications, not the term {self}. " + _PAREN_HINT)

    def __or__(self, other):
        raise SpecError(f"| combines specifications, not the term {self}. " + _PAREN_HINT)

    __rand__, __ror__ = __and__, __or__

    def __bool__(self):
        raise SpecError(f"the expectation term {self} has no truth value. " + _PAREN_HINT)


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
        return self.expr.variables() | (set() if self.given is None else self.given.variables())

    def key(self) -> tuple:
        return ("E", self.expr.key(), None if self.given is None else self.given.key(),
                (float(self.range[0]), float(self.range[1])))

    def to_text(self) -> str:
        s = self.expr.to_text()
        s = "E[" + (f"({s})" if self.expr._prec() <= _PREC["|"] else s)  # | would mean given
        if self.given is not None:
            s += " | " + self.given.to_text()
        if tuple(map(float, self.range)) != (0.0, 1.0):
            s += f", range=({_fmt_number(self.range[0])}, {_fmt_number(self.range[1])})"
        return s + "]"

    def observe(self, data: pd.DataFrame | ColumnCache) -> tuple[np.ndarray, np.ndarray]:
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
        mask = np.ones(len(data), dtype=bool) if self.given is None else \
            _truth(np.asarray(self.given.evaluate(data)), str(self.given))
        vals = np.asarray(self.expr.evaluate(data))
        if _is_text(vals):
            raise DataError(
                f"the expression {self.expr} of {self} holds text; compare it with a value, "
                f"e.g. E[{self.expr} == \"value\"]"
            )
        vals = np.where(mask, vals.astype(float), 0.0)
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
class TermOp(_Pair, ETerm):
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
        if self.op not in _ARITH:
            raise SpecError(f"unknown operator {self.op!r} between expectation terms")


def _as_term(x) -> ETerm:
    if isinstance(x, ETerm):
        return x
    if isinstance(x, Expr):
        raise SpecError(
            f"the row expression {x} must be wrapped in E[...] before it is combined with "
            "expectation terms"
        )
    if isinstance(x, _NUMBER) and not isinstance(x, bool):
        return Constant(float(x))
    raise SpecError(f"cannot use {x!r} in an expectation term")


_operators(ETerm, _ARITH, lambda op, a, b: TermOp(op, _as_term(a), _as_term(b)))
_operators(ETerm, {op: _COMPARE[op] for op in _FLIP}, lambda op, a, b: a._compare(op, b),
           reflected=False)


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
    expr = parse_expression(expr) if isinstance(expr, str) else _as_expr(expr)
    if given is not None:
        given = parse_expression(given) if isinstance(given, str) else _as_expr(given)
    try:
        lo, hi = (0.0, 1.0) if range is None else (float(range[0]), float(range[1]))
    except (TypeError, ValueError, IndexError) as err:
        raise SpecError(f"range must be a pair of numbers (a, b), got {range!r}") from err
    return Expectation(expr, given, (lo, hi))


# ---------------------------------------------------------------------------------------------
# Specifications <spec>
# ---------------------------------------------------------------------------------------------


class Spec(_Node):
    """A specification: a comparison ``<ETerm> op c`` or a Boolean combination of them.

    Examples
    --------
    >>> from pcfair.audits.avoir import E, Var
    >>> psi = (E(Var("r")) > 0.2) & (E(Var("r")) < 0.9)
    >>> len(psi.leaves()), sorted(psi.variables())
    (2, ['r'])
    """

    __slots__ = ()

    def __invert__(self):
        raise SpecError("AVOIR's grammar has no negation of a specification; flip the comparison")

    def __bool__(self):
        raise SpecError(
            f"the specification {self} has no truth value until it is monitored. " + _PAREN_HINT
        )

    def leaves(self) -> list[Expectation]:
        """The expectation leaves, in depth-first left-to-right order, as a multiset."""
        return [node for node in iter_nodes(self) if isinstance(node, Expectation)]

    def variables(self) -> set[str]:
        """Columns the specification reads."""
        return set().union(*(leaf.variables() for leaf in self.leaves()))


def _combine(op: str, left, right) -> Spec:
    for side in (left, right):
        if not isinstance(side, Spec):
            raise SpecError(f"{op} needs a specification on both sides, got {side!r}. "
                            + _PAREN_HINT)
    return And(left, right) if op == "&" else Or(left, right)


_operators(Spec, {"&": "and", "|": "or"}, _combine)


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
        if self.op not in _FLIP:
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
class And(_Pair, Spec):
    """Conjunction of two specifications (Kleene AND).

    Examples
    --------
    >>> from pcfair.audits.avoir import parse_spec
    >>> type(parse_spec("(E[a] > 0.1) & (E[b] > 0.1)")).__name__
    'And'
    """

    left: Spec
    right: Spec
    op: ClassVar[str] = "&"


@dataclass(frozen=True, eq=False, repr=False)
class Or(_Pair, Spec):
    """Disjunction of two specifications (Kleene OR).

    Examples
    --------
    >>> from pcfair.audits.avoir import parse_spec
    >>> type(parse_spec("E[a] > 0.1 | E[b] > 0.1")).__name__
    'Or'
    """

    left: Spec
    right: Spec
    op: ClassVar[str] = "|"


def iter_nodes(node) -> Iterator:
    """Pre-order traversal of a specification or term tree (expectation leaves included)."""
    stack = [node]
    while stack:
        cur = stack.pop()
        yield cur
        stack.extend(reversed(cur.children()))


# ---------------------------------------------------------------------------------------------
# The text form: a small pre-translation to Python, ``ast.parse`` and a checking NodeVisitor
# ---------------------------------------------------------------------------------------------

#: Words that are never a bare-word value after ``==`` (and print without backticks).
_KEYWORDS = {"and", "or", "not", "True", "False", "true", "false", "E"}
#: Python keywords that keep their meaning when others are read as column names.
_PY_WORDS = {"and", "or", "not", "True", "False", "None"}

_TOKEN_RE = re.compile(
    r"""
    (?P<space>\s+)
  | (?P<string>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
  | (?P<column>`[^`]+`)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<word>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<op>==|!=|<=|>=|:=|&&|\|\||[-=<>!~&|+*/%@^,.:;()\[\]{}≠∧∨¬×÷−≤≥])
    """,
    re.VERBOSE,
)

#: The paper's spellings that Python cannot read, or reads with another precedence: in the text
#: form & | ! bind looser than comparisons, as Python's and/or/not do.
_PYTHON_SPELLING = {
    "=": "==", "≠": "!=", "≤": "<=", "≥": ">=", "×": "*", "÷": "/", "−": "-",
    "&": " and ", "&&": " and ", "∧": " and ", "|": " or ", "||": " or ", "∨": " or ",
    "!": " not ", "~": " not ", "¬": " not ",
}
_CLOSER = {"(": ")", "[": "]", "{": "}"}


@dataclass
class _Bracket:
    closer: str
    what: str  # "E[", "the parenthesis"...
    is_e: bool  # the bracket of an E[...]
    row: bool  # inside E[...], where a bare word after == is text
    expr_part: bool = True  # E[...] before its first | or comma


class _Source:
    """The text form rewritten as one line of Python, with each character's offset in the text.

    Strings, backticked columns, dotted names and bare-word values become placeholder names
    (looked up in ``literals``), so Python never reads a user's literal and the rewrite is ASCII.
    """

    def __init__(self, text: str, row: bool, keyword_columns: bool = False):
        if not isinstance(text, str):
            raise SpecError(f"a specification must be a string, got {type(text).__name__}")
        self.text = text
        self.prefix = "_L"
        while self.prefix in text:
            self.prefix += "_"
        self.literals: dict[str, tuple[str, str, str]] = {}  # name -> (kind, value, source)
        self.pieces: list[str] = []
        self.where: list[int] = []  # offset in the text of each character of the rewrite
        self.unclosed: str | None = None
        self.keyword_columns = keyword_columns  # read `class`, `if`... as column names
        self.tokens = self._tokens()
        self._translate(row)
        python = "".join(self.pieces)
        self.python = python.lstrip()  # Python refuses a leading space ("unexpected indent")
        self.where = self.where[len(python) - len(self.python):] + [len(text)]

    def fail(self, message: str, position: int):
        raise SpecSyntaxError(message, self.text, position)

    def _tokens(self) -> list[tuple[str, str, int, int]]:
        toks, pos = [], 0
        while pos < len(self.text):
            m = _TOKEN_RE.match(self.text, pos)
            if m is None:
                self.fail(f"unexpected character {self.text[pos]!r}", pos)
            if m.lastgroup != "space":
                toks.append((m.lastgroup, m.group(), m.start(), m.end()))
            pos = m.end()
        return toks

    def _emit(self, piece: str, start: int, same: bool = False):
        self.pieces.append(piece)
        self.where.extend(range(start, start + len(piece)) if same else [start] * len(piece))

    def _literal(self, kind: str, value: str, start: int, end: int):
        name = f"{self.prefix}{len(self.literals)}"
        self.literals[name] = (kind, value, self.text[start:end])
        self._emit(f" {name} ", start)  # spaces: never glued to a neighbour (f"..", b"..")

    def _translate(self, row: bool):
        toks = self.tokens
        stack = [_Bracket("", "", False, row, expr_part=False)]
        k, done, prev = 0, 0, ""
        while k < len(toks):
            kind, raw, start, end = toks[k]
            self._emit(" " * (start - done), done, same=True)
            if k and start == done and kind in ("number", "word") \
                    and toks[k - 1][0] in ("number", "word"):
                self._emit(" ", start)  # 0x10, 1_000, 1j: Python would read one number
            top = stack[-1]
            after = toks[k + 1][1] if k + 1 < len(toks) else None
            out = _PYTHON_SPELLING.get(raw, raw) if kind == "op" else raw
            if kind == "string":
                self._literal("str", re.sub(r"\\(.)", r"\1", raw[1:-1]), start, end)
            elif kind == "word" and top.row and prev in ("==", "!=") and raw not in _KEYWORDS:
                k, end = self._bare_word(k)
            elif kind == "column" or kind == "word" and ("." in raw or self.keyword_columns
                                                         and keyword.iskeyword(raw)
                                                         and raw not in _PY_WORDS):
                self._literal("col", raw.strip("`"), start, end)
            elif raw == "|" and top.is_e and top.expr_part:
                self._emit(out := ", given:=", start)
            elif raw == "=" and top.is_e and k > 1 and toks[k - 1][1] in ("given", "range") \
                    and toks[k - 2][1] == ",":
                self._emit(out := ":=", start)
            else:
                if raw in _CLOSER:
                    is_e = raw == "[" and k > 0 and toks[k - 1][:2] == ("word", "E")
                    if is_e and after == "]":
                        self.fail("E[...] needs an expression", toks[k + 1][2])
                    what = "E[" if is_e else "the parenthesis" if raw == "(" else repr(raw)
                    stack.append(_Bracket(_CLOSER[raw], what, is_e, top.row or is_e))
                elif raw in (")", "]", "}"):
                    if len(stack) == 1:
                        self.fail(f"unexpected {raw!r}", start)
                    if raw != top.closer:
                        self.fail(f"expected {top.closer!r} to close {top.what}, found {raw!r}",
                                  start)
                    stack.pop()
                self._emit(out, start, same=out == raw)
            if top.is_e and raw in ("|", ","):
                top.expr_part = False
            prev, done = out.strip(), end
            k += 1
        self._emit(" " * (len(self.text) - done), done, same=True)
        if len(stack) > 1:
            self.unclosed = (f"expected {stack[-1].closer!r} to close {stack[-1].what}, "
                             "found the end of the text")
            self._emit("".join(b.closer for b in reversed(stack[1:])), len(self.text))

    def _bare_word(self, k: int) -> tuple[int, int]:
        """A bare word on the right of == / != inside E[...]: text, glued over ``-`` with no
        spaces (``race=African-American``)."""
        toks = self.tokens
        _, word, start, end = toks[k]
        while (k + 2 < len(toks) and toks[k + 1][1] == "-" and toks[k + 1][2] == end
               and toks[k + 2][2] == toks[k + 1][3] and toks[k + 2][0] in ("word", "number")):
            word += "-" + toks[k + 2][1]
            end = toks[k + 2][3]
            k += 2
        if k + 1 < len(toks) and toks[k + 1][1] in ("+", "-", "*", "/", "×", "÷", "−"):
            self.fail(f"the bare word {word!r} on the right of a comparison is read as the "
                      f"text \"{word}\"; write `{word}` in backticks to use the column",
                      toks[k + 1][2])
        self._literal("str", word, start, end)
        return k, end

    def syntax_error(self, err: SyntaxError):
        """Re-raise Python's SyntaxError about the rewrite as one about the user's text."""
        off = (err.offset or 0) - 1
        if "forgot a comma" in err.msg and err.end_offset:
            # Python marks two juxtaposed expressions; the second one's first token is at fault
            starts = {self.where.index(t[2]) for t in self.tokens if t[2] in self.where}
            for start in sorted(starts, reverse=True):
                if off < start < err.end_offset - 1 and _parses(self.python[off:start]):
                    off = start
                    break
        while 0 <= off < len(self.python) and self.python[off] == " ":
            off += 1
        if off < 0 or off >= len(self.python) or self.where[off] >= len(self.text):
            self.fail("unexpected end of the text; an operand is missing", len(self.text))
        pos = self.where[off]
        tok = next((t[1] for t in self.tokens if t[2] <= pos < t[3]), self.text[pos])
        after = " after a complete expression" if _parses(self.python[:off]) else ""
        nested = " (too deeply nested)" if "too many nested" in err.msg else ""
        self.fail(f"unexpected {tok!r}{after}{nested}", pos)


#: Python syntax the grammar does not have, named in the error.
_CONSTRUCTS = {
    "Call": "a function call", "Attribute": "an attribute", "Subscript": "indexing",
    "Slice": "a slice", "Lambda": "a lambda", "IfExp": "an if-else expression",
    "NamedExpr": "an assignment expression (:=)", "Tuple": "a tuple", "List": "a list",
    "Set": "a set", "Dict": "a dict", "JoinedStr": "an f-string",
    "Starred": "a starred expression", "Await": "await", "Yield": "yield",
}
_PY_OPS = {
    "Add": "+", "Sub": "-", "Mult": "*", "Div": "/", "Pow": "**", "FloorDiv": "//",
    "Mod": "%", "MatMult": "@", "BitXor": "^", "LShift": "<<", "RShift": ">>", "BitAnd": "&",
    "BitOr": "|", "Gt": ">", "Lt": "<", "GtE": ">=", "LtE": "<=", "Eq": "==", "NotEq": "!=",
    "In": "in", "NotIn": "not in", "Is": "is", "IsNot": "is not", "Invert": "~", "Not": "!",
    "UAdd": "+", "USub": "-",
}
#: The grammar's binary operators, applied to the builder's nodes (which check the levels).
_APPLY = {op: getattr(operator, name) for op, name in {**_ARITH, **_COMPARE}.items()}


class _Reader(ast.NodeVisitor):
    """Builds the AVOIR tree from Python's parse of the rewrite; refuses what the grammar lacks.

    ``row`` is True inside ``E[...]`` (row expressions) and False at the specification level.
    """

    def __init__(self, src: _Source, row: bool):
        self.src, self.row = src, row

    def fail(self, message: str, at: ast.AST | int):
        offset = at if isinstance(at, int) else at.col_offset
        self.src.fail(message, self.src.where[offset])

    def op_at(self, left: ast.AST, right: ast.AST) -> int:
        """Offset (in the rewrite) of the operator between two operands."""
        i = left.end_col_offset
        while i < right.col_offset and self.src.python[i] in " )":
            i += 1
        return i

    def visit(self, node: ast.AST):
        try:
            return super().visit(node)
        except SpecSyntaxError:
            raise
        except SpecError as err:  # a builder's refusal, e.g. an infinite constant
            self.fail(str(err), node)

    def generic_visit(self, node: ast.AST):
        what = _CONSTRUCTS.get(type(node).__name__, f"Python's {type(node).__name__}")
        self.fail(f"{what} is not part of AVOIR's specification language", node)

    def operator(self, op: str, at: int):
        if op not in _APPLY:
            self.fail(f"the operator {op!r} is not part of AVOIR's specification language", at)

    def apply(self, op: str, left, right, at: int):
        """``left op right`` by the builder; a specification operand is refused here."""
        for side in (left, right):
            if isinstance(side, Spec):
                self.fail(f"{op!r} applies to expectation terms, not to the specification "
                          f"{side}", at)
        try:
            return _APPLY[op](left, right)
        except SpecError as err:
            self.fail(str(err), at)

    def visit_Constant(self, node: ast.Constant):
        v = node.value
        if not isinstance(v, (bool, int, float)):
            self.fail(f"the constant {v!r} is not part of AVOIR's specification language", node)
        if isinstance(v, bool) and not self.row:
            self.fail(f"the Boolean {v} must be inside E[...]", node)
        return Const(v) if self.row else Constant(v)

    def visit_Name(self, node: ast.Name):
        kind, value, source = self.src.literals.get(node.id, ("name", node.id, node.id))
        if not self.row:
            self.fail(f"the variable {source} must be inside E[...]" if kind in ("name", "col")
                      else "a string can only appear inside E[...]", node)
        if kind == "name" and value in ("true", "false"):
            return Const(value == "true")
        return Var(value) if kind in ("name", "col") else Const(value)

    def visit_UnaryOp(self, node: ast.UnaryOp):
        op = _PY_OPS[type(node.op).__name__]
        if op == "~":
            self.fail("the operator '~' is not part of AVOIR's specification language", node)
        if op == "!" and not self.row:
            self.fail("AVOIR's grammar has no negation of a specification or term; "
                      "flip the comparison instead", node)
        operand = self.visit(node.operand)
        if isinstance(operand, Spec):
            self.fail("unary minus applies to expectation terms, not specifications", node)
        return ~operand if op == "!" else -operand if op == "-" else operand

    def visit_BinOp(self, node: ast.BinOp):
        left, op = self.visit(node.left), _PY_OPS[type(node.op).__name__]
        self.operator(op, at := self.op_at(node.left, node.right))
        return self.apply(op, left, self.visit(node.right), at)

    def visit_Compare(self, node: ast.Compare):
        left, op = self.visit(node.left), _PY_OPS[type(node.ops[0]).__name__]
        self.operator(op, at := self.op_at(node.left, node.comparators[0]))
        right = self.visit(node.comparators[0])
        if len(node.ops) > 1:
            self.fail("comparisons cannot be chained; combine them with & instead",
                      self.op_at(node.comparators[0], node.comparators[1]))
        return self.apply(op, left, right, at)

    def visit_BoolOp(self, node: ast.BoolOp):
        op = "&" if isinstance(node.op, ast.And) else "|"
        result = self.visit(node.values[0])
        for a, b in zip(node.values, node.values[1:]):
            right = self.visit(b)
            for side, value in (("left", result), ("right", right)):
                if not self.row and not isinstance(value, Spec):
                    self.fail(f"{op} combines specifications (comparisons of E[...] terms with "
                              f"constants); its {side} side {value} is not one", self.op_at(a, b))
            result = (result & right) if op == "&" else (result | right)
        return result

    def visit_Subscript(self, node: ast.Subscript):
        if not (isinstance(node.value, ast.Name) and node.value.id == "E"
                and self.src.python[node.value.end_col_offset:].lstrip()[:1] == "["):
            self.fail("indexing is not part of AVOIR's specification language; only E[...] "
                      "takes brackets", node)
        if self.row:
            self.fail("E[...] cannot be nested inside another E[...]", node)
        parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if not parts:
            self.fail("E[...] needs an expression", node)
        self.row = True  # (a refused text abandons the reader: no need to reset on errors)
        expr, given, rng = self.visit(parts[0]), None, None
        if len(parts) == 1 and isinstance(node.slice, ast.Tuple):
            self.fail("after the expression, a comma must be followed by given= or range=",
                      node.slice)
        for part in parts[1:]:
            name = part.target.id if isinstance(part, ast.NamedExpr) else None
            if name == "range":
                if rng is not None:
                    self.fail("range= is given twice", part)
                rng = self.range_pair(part.value)
            elif name == "given" or given is not None:
                cond = self.visit(part.value if name == "given" else part)
                given = cond if given is None else given & cond
            else:
                self.fail("after the expression, a comma must be followed by given= or range=",
                          part)
        self.row = False
        return Expectation(expr, given, rng or (0.0, 1.0))

    def range_pair(self, node: ast.AST) -> tuple[float, float]:
        ends = [self.visit(end) for end in node.elts] if isinstance(node, ast.Tuple) else []
        if len(ends) != 2 or any(type(end) is not Const or type(end.value) not in (int, float)
                                 for end in ends):
            self.fail("range=(a, b) needs two numbers", node)
        lo, hi = float(ends[0].value), float(ends[1].value)
        if not lo < hi:
            self.fail(f"range=(a, b) needs a < b, got ({lo}, {hi})", node)
        return (lo, hi)


def _parses(python: str) -> bool:
    try:
        ast.parse(python, mode="eval")
    except SyntaxError:
        return False
    return True


def _parse(text: str, row: bool):
    src = _Source(text, row)
    try:
        tree = ast.parse(src.python, mode="eval")
    except SyntaxError as err:
        retry = _Source(text, row, keyword_columns=True)  # a column named `class`, `if`...
        if not _parses(retry.python):
            src.syntax_error(err)
        src, tree = retry, ast.parse(retry.python, mode="eval")
    except (RecursionError, MemoryError):
        src.fail("the text is nested too deeply to parse", 0)
    try:
        node = _Reader(src, row).visit(tree.body)
    except RecursionError:
        src.fail("the text is nested too deeply to parse", 0)
    if src.unclosed:
        src.fail(src.unclosed, len(text))
    return node


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
        With the offending token's ``position`` and a caret under it in the message; Python
        syntax outside the grammar (calls, ``**``, ``in``, lambdas...) is refused by name.

    Examples
    --------
    >>> from pcfair.audits.avoir import parse_spec
    >>> parse_spec("E[r | sex=M] - E[r | sex=F] < 0.1")
    E[r | sex == "M"] - E[r | sex == "F"] < 0.1
    """
    node = _parse(text, row=False)
    if not isinstance(node, Spec):
        raise SpecSyntaxError(
            "a specification compares an expectation term with a constant, e.g. E[r] > 0.5; "
            "this text is only a term", text, 0)
    return node


def parse_term(text: str) -> ETerm:
    """Parse the text form of an expectation term such as ``E[r | s=1] - E[r | s=0]``.

    Examples
    --------
    >>> from pcfair.audits.avoir.ast import parse_term
    >>> parse_term("E[r | g = 1] / E[r | g = 0]")
    E[r | g == 1] / E[r | g == 0]
    """
    node = _parse(text, row=False)
    if not isinstance(node, ETerm):
        raise SpecSyntaxError("expected an expectation term, found a specification", text, 0)
    return node


def parse_expression(text: str) -> Expr:
    """Parse a row expression ``<E>`` such as ``x > 10 & sex == "M"``.

    Examples
    --------
    >>> from pcfair.audits.avoir.ast import parse_expression
    >>> parse_expression("race=African-American & recid=0")
    race == "African-American" & recid == 0
    """
    return _parse(text, row=True)
