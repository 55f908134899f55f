"""How many rows of a data set each pattern describes.

A pattern's probability ``P(x, y)`` says how much of the *model's* population it covers; where
the model was learned from (or is audited on) a table, the number of rows matching ``x ∪ y`` says
how many actual people stand behind it, which is what a reviewer asks first of a headline
pattern. :func:`count_rows` counts them; :func:`with_row_counts` fills :attr:`Pattern.rows` of a
result (:class:`~pcfair.patterns.api.Certificate` or :class:`~pcfair.patterns.api.PatternSet`);
:func:`distinct_by_rows` keeps one pattern of each set of rows (a top-k of distinct people,
``find_patterns(..., distinct_rows=True)``).

Raw rows are first put in the model's values by its recipe, if it has one
(:func:`pcfair.tables.recipe.model_frame`: trimmed, binned). Values are then read the way evidence is (:meth:`pcfair.circuit.variables.Variables.value_index`):
by label, with 0/1 codes accepted for labelled binary features (``Sex_=1`` in a binarized table
matches the label ``"1 (Female)"``). A missing cell never matches an assigned variable.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np
import pandas as pd

from pcfair.circuit.circuit import Circuit
from pcfair.errors import DataError
from pcfair.tables.recipe import model_frame, read_table

__all__ = ["RARE_PROBABILITY", "SUPPORTED_WITNESS_SECONDS", "count_rows", "distinct_by_rows",
           "rare_below", "rare_text", "read_table", "with_row_counts"]

#: A pattern less probable than this describes (almost) nobody (see :func:`rare_below`).
RARE_PROBABILITY = 1e-4
#: Seconds :func:`supported_witness` looks for a witness that describes somebody.
SUPPORTED_WITNESS_SECONDS = 10.0


def count_rows(circuit: Circuit, patterns, data: "pd.DataFrame | str | os.PathLike"
               ) -> np.ndarray:
    """Number of rows of ``data`` that match each pattern's ``x`` and ``y``.

    Parameters
    ----------
    circuit : Circuit
        The model the patterns come from (its variables read the values).
    patterns : iterable of Pattern
        Patterns with readable ``x`` and ``y`` (``{name: label}``).
    data : DataFrame or path to a CSV file
        One row per person; needs a column for every variable the patterns assign (other
        columns are ignored).

    Returns
    -------
    numpy.ndarray of int64
        One count per pattern.

    Raises
    ------
    DataError
        When ``data`` lacks a column that a pattern assigns.
    VariableError
        When a cell holds a value the variable does not have.

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.circuit import CircuitBuilder
    >>> from pcfair.patterns.api import Pattern
    >>> b = CircuitBuilder({"sex": ["F", "M"], "age": ["young", "old"]})
    >>> pc = b.build(b.product(b.categorical("sex", [0.5, 0.5]),
    ...                        b.categorical("age", [0.5, 0.5])))
    >>> df = pd.DataFrame({"sex": ["F", "F", "M"], "age": ["young", "old", "young"]})
    >>> p = Pattern(x={"sex": "F"}, y={"age": "young"}, score=0.2, probability=0.25,
    ...             divergence=0.0)
    >>> count_rows(pc, [p], df).tolist()
    [1]
    """
    masks, weights = _row_masks(circuit, patterns, data)
    return np.array([int(weights[m].sum()) for m in masks], np.int64)


def _row_masks(circuit: Circuit, patterns, data) -> tuple[list[np.ndarray], np.ndarray]:
    """Which rows of ``data`` match each pattern's ``x ∪ y``: the rows are taken once per
    distinct combination of the values the patterns assign (so a mask is as long as there are
    such combinations, not rows), with ``weights`` the number of rows of each. Masks of one
    call are comparable to each other, not to another call's."""
    patterns = list(patterns)
    frame = model_frame(circuit, data)
    needed = sorted({k for p in patterns for k in (*p.x, *p.y)}, key=circuit.variables.index)
    missing = [v for v in needed if v not in frame.columns]
    if missing:
        raise DataError(f"the data have no column for {missing}; the patterns assign them "
                        f"(columns: {list(frame.columns)[:12]})")
    columns = [circuit.variables.index(v) for v in needed]
    codes = (circuit.variables.evidence_matrix(frame[needed])[:, columns] if needed else
             np.empty((len(frame), 0), np.int32))
    distinct, weights = np.unique(codes, axis=0, return_counts=True)
    where = {v: j for j, v in enumerate(needed)}
    masks = []
    for p in patterns:
        match = np.ones(len(distinct), bool)
        for name, value in (*p.x.items(), *p.y.items()):
            v = circuit.variables.index(name)
            match &= distinct[:, where[name]] == circuit.variables.value_index(v, value)
        masks.append(match)
    return masks, weights


def distinct_by_rows(circuit: Circuit, patterns, data, k: int | None = None
                     ) -> tuple[list, int]:
    """``patterns`` in their order, less each one that matches the same rows of ``data`` as a
    pattern kept before it (rephrasings such as ``s=1 | a=0`` and ``s=1 | a=0, b=1`` where
    every row with ``a=0`` has ``b=1``). A pattern that matches no row is always kept: "no
    rows" says nothing about whom it describes, so such patterns are not merged with each
    other.

    Parameters
    ----------
    circuit : Circuit
        The model the patterns come from (see :func:`count_rows`).
    patterns : iterable of Pattern
        In rank order: of patterns with the same rows, the first is kept.
    data : DataFrame or path to a CSV file
        The rows (see :func:`count_rows`).
    k : int, optional
        Stop after this many kept patterns.

    Returns
    -------
    (list of Pattern, int)
        The kept patterns (at most ``k``) and how many were left out before the last of them
        (merged into one ranked above: same rows).

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.circuit import CircuitBuilder
    >>> from pcfair.patterns.api import Pattern
    >>> b = CircuitBuilder({"s": [0, 1], "a": [0, 1], "b": [0, 1]})
    >>> pc = b.build(b.product(b.categorical("s", [0.5, 0.5]), b.categorical("a", [0.5, 0.5]),
    ...                        b.categorical("b", [0.5, 0.5])))
    >>> df = pd.DataFrame({"s": [1, 1, 0], "a": [0, 1, 0], "b": [1, 0, 1]})   # b = 1 - a
    >>> ps = [Pattern({"s": 1}, y, 0.3, 0.2, 0.0) for y in ({"a": 0}, {"a": 0, "b": 1},
    ...                                                     {"b": 1}, {"a": 1})]
    >>> kept, merged = distinct_by_rows(pc, ps, df)
    >>> [p.text() for p in kept], merged
    (['s=1 | a=0', 's=1 | a=1'], 2)
    """
    patterns = list(patterns)
    masks, _ = _row_masks(circuit, patterns, data)
    seen: set = set()
    kept, merged = [], 0
    for p, mask in zip(patterns, masks):
        if k is not None and len(kept) >= k:
            break
        key = np.packbits(mask).tobytes() if mask.any() else None
        if key in seen:
            merged += 1
            continue
        if key is not None:
            seen.add(key)
        kept.append(p)
    return kept, merged


def with_row_counts(result, circuit: Circuit, data):
    """A copy of ``result`` (a :class:`Certificate` or :class:`PatternSet`) whose patterns carry
    their row counts in ``data`` (see :func:`count_rows`); ``data=None`` returns it as is."""
    if data is None:
        return result
    if hasattr(result, "witness"):
        if result.witness is None:
            return result
        rows = int(count_rows(circuit, [result.witness], data)[0])
        return dataclasses.replace(result, witness=dataclasses.replace(result.witness, rows=rows))
    counts = count_rows(circuit, result.patterns, data)
    return dataclasses.replace(result, patterns=[dataclasses.replace(p, rows=int(n))
                                                 for p, n in zip(result.patterns, counts)])


def rare_below(circuit: Circuit) -> float:
    """The probability under which a pattern describes (almost) nobody: less than one of the
    model's training rows (``1 / rows``, when its recipe knows the row count) or less than
    :data:`RARE_PROBABILITY`, whichever is larger. The command line and the report flag a
    witness or headline pattern this rare and show the strongest supported one beside it; the
    certificate itself still covers every pattern.

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.learn import learn_pc
    >>> pc = learn_pc(pd.DataFrame({"d": [0, 1] * 250, "s": [0, 0, 1, 1] * 125}), "d")
    >>> rare_below(pc)
    0.002
    """
    recipe = circuit.recipe
    rows = None if recipe is None else recipe.rows
    return max(RARE_PROBABILITY, 1.0 / rows) if rows else RARE_PROBABILITY


def rare_text(circuit: Circuit) -> str:
    """Words for :func:`rare_below`'s threshold (``"one of 500 training rows"``)."""
    rows = None if circuit.recipe is None else circuit.recipe.rows
    if rows and 1.0 / rows > RARE_PROBABILITY:
        return f"one of the model's {rows:,} training rows"
    return f"{RARE_PROBABILITY:g} of the population"

