"""The recipe of a learned model: how the raw table became the model's values.

A model learned from a raw table (strings with stray spaces, numbers binned at quantiles,
constant columns dropped) speaks in *model values* (``"[17, 28)"``, ``"Divorced"``), but its
users hold raw rows (``39``, ``" Divorced"``). A :class:`Recipe` records every step between the
two, travels inside the model file (the JSON format's ``recipe`` key; a ``X.recipe.json`` beside
a ``.psdd``/``.jpc``), and is applied wherever raw values meet the model: ``data=`` and
``--data`` (row counts), ``--evidence``, the audits' tables with a circuit ``--model``,
:class:`~pcfair.learn.PCClassifier` predictions and reports (:func:`model_frame`,
:func:`model_evidence`).

What a recipe holds, in the order it is applied:

1. **columns** and **header**: the raw table's columns in file order, and whether the file had a
   header row. A file read with a headerless recipe may carry a header row (recognised when it
   names every column the model uses) or not (its columns are then the recipe's, and their number
   must match).
2. **strip**: surrounding spaces trimmed from column names and string values (``" >50K"`` is
   ``">50K"``). On by default for files (``pcfair learn --keep-spaces`` turns it off); the Python
   learners take frames as they are (``strip=False``).
3. **bins**: the quantile edges of each binned numeric column, the first and last the training
   minimum and maximum; a raw number is put in its interval. A number outside the training
   range is a value the model never saw: handled by ``unknown`` like an unseen category (the
   model cannot say that an age of 200 is like an age of 74).
4. **dropped**: columns left out of the model, each with the reason (a constant column). Values in
   them are ignored.
5. **decision** and **favorable**: the decision column and its favourable value, when named at
   learn time, so later commands need not guess; **rows**: the number of training rows (a
   pattern with ``P(x, y) < 1 / rows`` describes less than one training row).

A value outside the recipe (a category never seen in training, a non-number in a binned column,
a number outside a binned column's training range) is handled by ``unknown``: ``"error"`` (the
default) raises a :class:`~pcfair.errors.DataError`
naming the column, the value and the values the model knows; ``"missing"`` treats the cell as
unobserved (marginalised by inference; matching no pattern when counting rows).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from pcfair.errors import DataError, FormatError, OptionError, VariableError

__all__ = ["UNKNOWN", "Recipe", "model_evidence", "model_frame", "read_table"]

#: The choices for a value outside the recipe (module docstring).
UNKNOWN = ("error", "missing")


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _strip_frame(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """``frame`` with surrounding spaces trimmed from column names and string cells, and the
    columns whose cells changed."""
    out = frame.rename(columns=lambda c: c.strip() if isinstance(c, str) else c)
    changed = []
    for c in out.columns:
        s = out[c]
        if s.dtype != object and not pd.api.types.is_string_dtype(s.dtype):
            continue
        trimmed = s.map(lambda v: v.strip() if isinstance(v, str) else v)
        if not trimmed.equals(s):
            changed.append(str(c))
            out[c] = trimmed
    return out, changed


#: The way out every unknown-value error names (``PCClassifier`` drops it from the message
#: when it reads the value as unobserved instead).
UNKNOWN_HINT = ("to treat such cells as unobserved, pass unknown='missing' (PCClassifier: "
                "handle_unknown='missing'; the command line: --unknown missing)")


def _check_unknown(unknown: str) -> None:
    if unknown not in UNKNOWN:
        raise OptionError(f"unknown= must be one of {UNKNOWN}, not {unknown!r}")


def _finite(x: int | float) -> bool:
    """Whether a JSON number is a finite double (an integer beyond the range of doubles, or
    of int64, is not: ``np.isfinite`` refuses such an int with a ``TypeError``)."""
    try:
        return math.isfinite(float(x))
    except OverflowError:
        return False


@dataclasses.dataclass(frozen=True)
class Recipe:
    """How a raw table became a model's values (see the module docstring).

    Parameters
    ----------
    columns : tuple of str
        The raw table's columns, in file order (after trimming, when ``strip``).
    header : bool, default True
        Whether the training file had a header row.
    strip : bool, default False
        Trim surrounding spaces from column names and string values.
    bins : mapping of str to tuple of float
        The bin edges of each binned column.
    dropped : mapping of str to str
        Columns left out of the model, with the reason.
    decision : str, optional
    favorable : object, optional
        The decision column and its favourable value, when named at learn time.
    rows : int, optional
        The number of training rows.
    placeholders : mapping of str to tuple of str
        The texts of a binned column of numbers that stand for no number (``"unknown"``),
        each kept as a value of its own (:func:`pcfair.tables.data.numeric_placeholders`).
    missing_as : mapping of str to str
        Columns whose missing cells were learned as a value of their own
        (``fit_recipe(missing="category")``), with that value (:data:`MISSING_VALUE`): a
        missing cell of such a column in a later table is that value, not unobserved.
    rest : str, optional
        Where the decision had more than two values: the value standing for every one but
        the favourable (``"not promoted"``); the decision was learned as ``favorable``
        against it, and every later table is read the same way (:func:`fit_recipe`).

    Examples
    --------
    >>> from pcfair.circuit import Variables
    >>> r = Recipe(columns=("age", "d"), strip=True, bins={"age": (17.0, 30.0, 90.0)})
    >>> v = Variables(["age", "d"], [("[17, 30)", "[30, 90]"), ("no", "yes")])
    >>> r.apply(pd.DataFrame({"age": [25, 64], "d": [" yes", "no "]}), v).values.tolist()
    [['[17, 30)', 'yes'], ['[30, 90]', 'no']]
    """

    columns: tuple[str, ...]
    header: bool = True
    strip: bool = False
    bins: Mapping[str, tuple[float, ...]] = dataclasses.field(default_factory=dict)
    dropped: Mapping[str, str] = dataclasses.field(default_factory=dict)
    decision: str | None = None
    favorable: Any = None
    rows: int | None = None
    placeholders: Mapping[str, tuple[str, ...]] = dataclasses.field(default_factory=dict)
    missing_as: Mapping[str, str] = dataclasses.field(default_factory=dict)
    rest: str | None = None

    # ------------------------------------------------------------------ applying
    def read(self, source: "pd.DataFrame | str | os.PathLike") -> pd.DataFrame:
        """The raw table of ``source`` (a frame as is; a CSV file by the recipe's header rule)."""
        if isinstance(source, pd.DataFrame) or self.header:
            return read_table(source)
        if not isinstance(source, (str, os.PathLike)):
            return read_table(source)
        used = {c for c in self.columns if c not in self.dropped}
        try:
            first = pd.read_csv(source, header=None, nrows=1, dtype=str,
                                keep_default_na=False).iloc[0].tolist()
        except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError,
                UnicodeDecodeError) as err:
            raise DataError(f"cannot read the data file {os.fspath(source)!r}: {err}") from err
        if used <= {str(v).strip() for v in first}:
            return read_table(source)
        return read_table(source, columns=list(self.columns))

    def apply(self, frame: pd.DataFrame, variables, unknown: str = "error") -> pd.DataFrame:
        """``frame`` with the model's values: trimmed, binned, and every column that is a model
        variable checked against its domain (``unknown``: module docstring). Other columns are
        kept (trimmed when ``strip``)."""
        _check_unknown(unknown)
        out = _strip_frame(frame)[0] if self.strip else frame.copy()
        from pcfair.tables.data import apply_bins, interval_labels

        for c, value in self.missing_as.items():
            if c in out.columns:
                out[c] = out[c].astype(object).where(out[c].notna(), value)
        if self.rest is not None and self.decision in out.columns:
            out[self.decision] = _one_against_rest(out[self.decision], self.favorable, self.rest)

        for c, edges in self.bins.items():
            if c not in out.columns:
                continue
            raw = out[c]
            kept = self.placeholders.get(c, ())
            labels = interval_labels(edges)
            # already a model value, or a placeholder: kept (applying twice is harmless)
            binned = raw.isin(labels)
            if kept:
                binned |= raw.notna() & raw.astype(str).isin(kept)
            numbers = pd.to_numeric(raw.where(~binned), errors="coerce")
            bad = numbers.isna() & raw.notna() & ~binned
            if bad.any():
                if unknown == "error":
                    value = raw[bad].iloc[0]
                    raise DataError(f"column {c!r} was binned when learning and holds the "
                                    f"non-number {value!r}; {UNKNOWN_HINT}")
            outside = (numbers < edges[0]) | (numbers > edges[-1])
            if outside.any():
                if unknown == "error":
                    value = raw[outside].iloc[0]
                    raise DataError(f"column {c!r} holds {_plain(value)!r}, outside the range "
                                    f"the model was learned on [{edges[0]:g}, {edges[-1]:g}] "
                                    f"({int(outside.sum()):,} such cell(s)); "
                                    f"{UNKNOWN_HINT}")
                numbers = numbers.where(~outside)
            cut = apply_bins(pd.DataFrame({c: numbers}), {c: np.asarray(edges)})[c]
            values = cut.astype(object).where(~binned, raw.astype(str)) if kept else \
                cut.where(~binned, raw)
            out[c] = pd.Categorical(values, categories=[*labels, *kept], ordered=not kept)
        names = set(variables.names)
        for c in out.columns:
            if c not in names or c in self.bins:
                continue
            out[c] = _known_values(out[c], variables, str(c), unknown)
        return out

    def evidence(self, assignment: Mapping[str, Any], variables, unknown: str = "error"
                 ) -> dict[str, Any]:
        """A ``{column: raw value}`` assignment in model values (a value that ``unknown =
        "missing"`` sets aside is left out)."""
        frame = pd.DataFrame({k: [v] for k, v in assignment.items()})
        for c, edges in self.bins.items():  # text from the command line: a number
            if c in frame.columns and isinstance(frame.at[0, c], str):
                try:
                    frame[c] = [float(frame.at[0, c])]
                except ValueError:
                    pass
        out = self.apply(frame, variables, unknown)
        return {k: _plain(out.at[0, k]) for k in out.columns if pd.notna(out.at[0, k])}

    # ------------------------------------------------------------------ describing
    def describe(self) -> list[str]:
        """One line per step that changes something (empty when the recipe changes nothing)."""
        lines = []
        if not self.header:
            lines.append(f"headerless file; columns {', '.join(self.columns)}")
        if self.strip:
            lines.append("surrounding spaces trimmed from names and values")
        for c, e in self.bins.items():
            from pcfair.tables.data import interval_labels

            kept = "".join(f"; {p!r} kept as a value of its own"
                           for p in self.placeholders.get(c, ()))
            lines.append(f"{c}: {len(e) - 1} bin(s) {', '.join(interval_labels(e))}{kept}")
        for c, why in self.dropped.items():
            lines.append(f"{c}: dropped ({why})")
        for c, value in self.missing_as.items():
            lines.append(f"{c}: a missing cell is the value {value!r}")
        if self.rest is not None:
            lines.append(f"{self.decision}: {self.favorable} against the rest ({self.rest!r})")
        if self.favorable is not None:
            lines.append(f"favourable {self.decision}={self.favorable}")
        if self.rows is not None:
            lines.append(f"learned from {self.rows:,} rows")
        return lines

    # ------------------------------------------------------------------ storing
    def to_dict(self) -> dict:
        """The JSON-ready dictionary (the model file's ``recipe`` key)."""
        return {"columns": list(self.columns), "header": self.header, "strip": self.strip,
                "bins": {c: [float(x) for x in e] for c, e in self.bins.items()},
                "dropped": dict(self.dropped), "decision": self.decision,
                "favorable": _plain(self.favorable), "rows": self.rows,
                **({"placeholders": {c: list(p) for c, p in self.placeholders.items()}}
                   if self.placeholders else {}),
                **({"missing_as": dict(self.missing_as)} if self.missing_as else {}),
                **({"rest": self.rest} if self.rest is not None else {})}

    @classmethod
    def from_dict(cls, data: Any, path: str = "<dict>") -> "Recipe":
        """Rebuild a recipe from :meth:`to_dict` output, checking every field
        (:class:`~pcfair.errors.FormatError` otherwise)."""
        if not isinstance(data, dict):
            raise FormatError("'recipe' must be an object", path)
        unknown = set(data) - {f.name for f in dataclasses.fields(cls)}
        if unknown:
            raise FormatError(f"'recipe' has unknown keys {sorted(unknown)}", path)
        cols = data.get("columns")
        if not isinstance(cols, list) or not all(isinstance(c, str) for c in cols) \
                or len(set(cols)) != len(cols):
            raise FormatError("recipe 'columns' must be a list of distinct strings", path)
        for key in ("header", "strip"):
            if not isinstance(data.get(key, True), bool):
                raise FormatError(f"recipe {key!r} must be true or false", path)
        bins = data.get("bins", {})
        if not isinstance(bins, dict):
            raise FormatError("recipe 'bins' must be an object", path)
        edges = {}
        for c, e in bins.items():
            if (not isinstance(e, list) or len(e) < 2
                    or not all(type(x) in (int, float) for x in e)
                    or not all(_finite(x) for x in e) or any(b < a for a, b in zip(e, e[1:]))):
                raise FormatError(f"recipe bins of {c!r} must be at least two finite, "
                                  "non-decreasing numbers", path)
            edges[c] = tuple(float(x) for x in e)
        dropped = data.get("dropped", {})
        if not isinstance(dropped, dict) or not all(isinstance(v, str) for v in dropped.values()):
            raise FormatError("recipe 'dropped' must map columns to reasons", path)
        decision = data.get("decision")
        if decision is not None and not isinstance(decision, str):
            raise FormatError("recipe 'decision' must be a string or null", path)
        rows = data.get("rows")
        if rows is not None and (type(rows) is not int or rows < 0):
            raise FormatError("recipe 'rows' must be a non-negative integer or null", path)
        favorable = data.get("favorable")
        if isinstance(favorable, (list, dict)):
            raise FormatError("recipe 'favorable' must be a single value", path)
        held = data.get("placeholders", {})
        if not isinstance(held, dict) or not all(
                c in edges and isinstance(p, list) and all(isinstance(x, str) for x in p)
                for c, p in held.items()):
            raise FormatError("recipe 'placeholders' must map binned columns to lists of "
                              "strings", path)
        missing_as = data.get("missing_as", {})
        if not isinstance(missing_as, dict) or not all(isinstance(v, str)
                                                       for v in missing_as.values()):
            raise FormatError("recipe 'missing_as' must map columns to strings", path)
        rest = data.get("rest")
        if rest is not None and (not isinstance(rest, str) or decision is None
                                 or favorable is None):
            raise FormatError("recipe 'rest' must be a string, with a decision and a "
                              "favourable value", path)
        return cls(columns=tuple(cols), header=data.get("header", True),
                   strip=data.get("strip", False), bins=edges, dropped=dict(dropped),
                   decision=decision, favorable=favorable, rows=rows,
                   placeholders={c: tuple(p) for c, p in held.items()},
                   missing_as=dict(missing_as), rest=rest)

    def to_json(self, path: "str | os.PathLike") -> None:
        """Write :meth:`to_dict` to ``path`` (the sidecar of a ``.psdd``/``.jpc`` model)."""
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_dict(), f, indent=1)

    @classmethod
    def from_json(cls, path: "str | os.PathLike") -> "Recipe":
        """Read a recipe file written by :meth:`to_json`."""
        try:
            with open(path, encoding="utf-8") as f:
                data = json.load(f)
        except (UnicodeDecodeError, json.JSONDecodeError) as err:
            raise FormatError(f"not a recipe file: {err}", os.fspath(path)) from None
        return cls.from_dict(data, os.fspath(path))


def _known_values(series: pd.Series, variables, name: str, unknown: str) -> pd.Series:
    """``series`` with each value checked against the variable's domain (unknown ones an error
    or missing)."""
    bad = []
    for value in pd.unique(series.dropna()):
        try:
            variables.value_index(name, _plain(value))
        except VariableError:
            bad.append(value)
    if not bad:
        return series
    if unknown == "error":
        domain = list(variables.domains[variables.index(name)])
        raise DataError(f"column {name!r} has value {_plain(bad[0])!r}, not seen in training "
                        f"(its values are {domain[:12]}{' …' if len(domain) > 12 else ''}); "
                        f"{UNKNOWN_HINT}")
    return series.where(~series.isin(bad))


def read_table(data: "pd.DataFrame | str | os.PathLike", *,
                   columns: "Sequence[str] | None" = None) -> pd.DataFrame:
    """A DataFrame as given, or a CSV file read with only empty cells missing (so that a
    category spelled ``None`` or ``NA`` stays a category). ``columns`` names the columns of a
    file without a header row (its first row is then data); their number must match."""
    if isinstance(data, pd.DataFrame):
        return data
    if isinstance(data, (str, os.PathLike)):
        header = "infer" if columns is None else None
        try:
            frame = pd.read_csv(data, keep_default_na=False, na_values=[""], header=header)
        except (OSError, pd.errors.ParserError, UnicodeDecodeError) as err:
            raise DataError(f"cannot read the data file {os.fspath(data)!r}: {err}") from err
        if columns is not None:
            if len(columns) != frame.shape[1]:
                raise DataError(f"{os.fspath(data)!r} has {frame.shape[1]} columns, but "
                                f"{len(columns)} names were given: {list(columns)}")
            frame.columns = list(columns)
        return frame
    raise TypeError(f"data must be a pandas DataFrame or a CSV path, not {type(data).__name__}")


def model_frame(circuit, data: "pd.DataFrame | str | os.PathLike", unknown: str = "error"
                ) -> pd.DataFrame:
    """The rows of ``data`` (a frame or a CSV path) in ``circuit``'s values: read and converted
    by the circuit's recipe when it has one (module docstring), else read as they are.

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.learn import learn_pc
    >>> df = pd.DataFrame({"d": [0, 1] * 50, "age": [18 + (7 * i) % 60 for i in range(100)]})
    >>> pc = learn_pc(df, "d", bins=2)
    >>> model_frame(pc, pd.DataFrame({"d": [1], "age": [70]})).values.tolist()
    [[1, '[46.5, 77]']]
    """
    _check_unknown(unknown)
    recipe = getattr(circuit, "recipe", None)
    if recipe is None:
        return read_table(data)
    return recipe.apply(recipe.read(data), circuit.variables, unknown)


def model_evidence(circuit, assignment: Mapping[str, Any], unknown: str = "error"
                   ) -> dict[str, Any]:
    """``{name: raw value}`` in ``circuit``'s values (by its recipe; as given without one)."""
    _check_unknown(unknown)
    recipe = getattr(circuit, "recipe", None)
    if recipe is None:
        return dict(assignment)
    return recipe.evidence(assignment, circuit.variables, unknown)


#: The value a missing cell becomes with ``fit_recipe(missing="category")``.
MISSING_VALUE = "(missing)"
MISSING = ("error", "drop", "category")


def fit_recipe(frame: pd.DataFrame, decision: str, *, bins=None, strip: bool = True,
               header: bool = True, favorable: Any = None, drop: Sequence[str] = (),
               missing: str = "error") -> tuple[pd.DataFrame, Recipe, list[str]]:
    """Prepare a raw table for learning and record how (see the module docstring).

    Trims surrounding spaces (``strip``), leaves out the columns named in ``drop``, handles
    missing cells (``missing``: ``"error"`` refuses them, ``"drop"`` drops the rows that have
    one, ``"category"`` reads a missing cell of a feature as the value :data:`MISSING_VALUE`,
    recorded so later tables are read the same way; a row whose decision is missing is
    dropped under both), bins the continuous columns (``bins``), drops
    constant columns (never the decision; a column binned into one bin is constant too) and
    checks that the decision has two values and that
    ``favorable`` (if given) is one of them. A column that looks like a row index (whole
    numbers, every one distinct, or a pandas ``Unnamed: N`` column) is learned as asked, with
    a :class:`~pcfair.errors.PCFairWarning` suggesting ``drop``.

    Returns
    -------
    (DataFrame, Recipe, list of str)
        The frame to learn from, its recipe (``rows`` is its row count), and the columns whose
        values were trimmed.

    Examples
    --------
    >>> raw = pd.DataFrame({"d": [" no", " yes"] * 20, "c": [7] * 40,
    ...                     "age": list(range(20, 60))})
    >>> frame, recipe, trimmed = fit_recipe(raw, "d", bins=2, favorable="yes")
    >>> list(frame.columns), dict(recipe.dropped), trimmed
    (['d', 'age'], {'c': 'constant: 7 in every row'}, ['d'])
    """
    from pcfair.tables.data import check_binary_decision, drop_constant_columns, prepare_frame

    columns = tuple(str(c).strip() if strip else str(c) for c in frame.columns)
    trimmed: list[str] = []
    if strip:
        frame, trimmed = _strip_frame(frame)
    if decision not in frame.columns:
        raise DataError(f"decision column {decision!r} is not in the data; columns are "
                        f"{list(frame.columns)}")
    if missing not in MISSING:
        raise OptionError(f"missing= must be one of {MISSING}, not {missing!r}")
    unknown_cols = [c for c in drop if c not in frame.columns]
    if unknown_cols or decision in drop:
        raise DataError(f"cannot drop {unknown_cols or [decision]}: "
                        + ("not in the data" if unknown_cols else "it is the decision")
                        + f"; columns are {list(frame.columns)}")
    frame = frame.drop(columns=list(drop))
    missing_as: dict[str, str] = {}
    if missing != "error":
        frame = frame[frame[decision].notna()]
        if missing == "drop":
            frame = frame.dropna()
        else:
            for c in frame.columns:
                if frame[c].isna().any():
                    missing_as[str(c)] = MISSING_VALUE
                    frame[c] = frame[c].astype(object).where(frame[c].notna(), MISSING_VALUE)
        frame = frame.reset_index(drop=True)
    _warn_index_columns(frame, decision)
    frame, held, held_edges, bins = _bin_placeholder_columns(frame, decision, bins)
    frame, edges = prepare_frame(frame, decision, bins)
    edges = {**held_edges, **edges}
    frame, dropped = drop_constant_columns(frame, keep=(decision,))  # after binning: one bin
    edges = {c: e for c, e in edges.items() if c not in dropped}  # is constant too
    rest = None
    if favorable is not None:
        values = [_plain(v) for v in pd.unique(frame[decision].dropna())]
        match = [v for v in values if v == favorable or str(v) == str(favorable)]
        if not match:
            raise VariableError(f"favourable value {favorable!r} is not a value of the decision "
                                f"{decision!r} (its values are {sorted(values, key=str)})")
        favorable = match[0]
        if len(values) > 2:  # favourable against the rest
            favorable, rest = str(match[0]), f"not {match[0]}"
            frame = frame.assign(**{decision: _one_against_rest(frame[decision], favorable,
                                                                 rest)})
    check_binary_decision(frame, decision)
    recipe = Recipe(columns=columns, header=header, strip=strip,
                    bins={c: tuple(float(x) for x in e) for c, e in edges.items()},
                    dropped={**{str(c): "left out when learning (drop)" for c in drop},
                             **{c: f"constant: {v!r} in every row" if isinstance(v, str)
                                else f"constant: {v} in every row"
                                for c, v in dropped.items()}},
                    missing_as=missing_as, rest=rest,
                    decision=decision, favorable=favorable, rows=len(frame),
                    placeholders={c: p for c, p in held.items() if c in edges})
    return frame, recipe, trimmed


def _one_against_rest(series: pd.Series, favorable: Any, rest: str) -> pd.Series:
    """The decision column as ``str(favorable)`` against ``rest`` (a value that equals the
    favourable one, or reads the same as text, is it; a model value ``rest`` stays; a missing
    cell stays missing)."""
    fav = str(favorable)
    text = series.astype(str)
    out = pd.Series(np.where(text == fav, fav, rest), index=series.index, dtype=object)
    return out.where(series.notna())


def _warn_index_columns(frame: pd.DataFrame, decision: str) -> None:
    """Warn about the columns that look like a row index (:func:`fit_recipe`)."""
    import warnings

    from pcfair.errors import PCFairWarning

    for c in frame.columns:
        if str(c) == str(decision) or len(frame) < 20:
            continue
        col = frame[c]
        whole = pd.api.types.is_integer_dtype(col) or (
            pd.api.types.is_float_dtype(col) and bool((col.dropna() % 1 == 0).all()))
        if str(c).startswith("Unnamed: ") or (whole and col.nunique() == len(frame)):
            warnings.warn(f"column {str(c)!r} looks like a row index (every value distinct"
                          + (", no name in the file" if str(c).startswith("Unnamed: ") else "")
                          + "): it is learned as a feature; leave it out with drop= (the "
                          "command line: --drop)", PCFairWarning, stacklevel=3)


def _bin_placeholder_columns(frame: pd.DataFrame, decision: str, bins):
    """Bin the columns of numbers with text placeholders
    (:func:`pcfair.tables.data.numeric_placeholders`) that ``bins`` covers, each placeholder
    kept as a value of its own (a :class:`~pcfair.errors.PCFairWarning` says so); without
    ``bins`` for such a column, a :class:`~pcfair.errors.DataError` asks for it. Returns the
    frame, the placeholders and edges of those columns, and ``bins`` without them."""
    import warnings

    from pcfair.errors import PCFairWarning
    from pcfair.tables.data import bin_with_placeholders, numeric_placeholders

    held = {str(c): p for c in frame.columns if str(c) != str(decision)
            for p in [numeric_placeholders(frame[c])] if p}
    if not held:
        return frame, {}, {}, bins
    named = dict(bins) if isinstance(bins, Mapping) else None
    todo = {c: (named.get(c) if named is not None else bins) for c in held}
    missing = [c for c, n in todo.items() if n is None]
    share = {c: frame[c].astype(str).isin(held[c]).mean() for c in held}
    if missing:
        c = missing[0]
        raise DataError(f"column {c!r} holds numbers and the text {list(held[c])} "
                        f"({share[c]:.0%} of rows): bin its numbers with bins=N (the "
                        "command line: --bins N); each text is then kept as a value of its own")
    out = frame.copy()
    edges = {}
    for c, n in todo.items():
        out[c], edges[c] = bin_with_placeholders(frame[c], n, held[c])
        warnings.warn(f"column {c!r} holds numbers and the text {list(held[c])} "
                      f"({share[c]:.0%} of rows): its numbers are binned, the text kept as a value "
                      "of its own",
                      PCFairWarning, stacklevel=3)
    rest = ({c: n for c, n in named.items() if c not in held} if named is not None else bins)
    return out, held, edges, rest
