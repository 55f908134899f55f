"""Named categorical variables and the conversion of user values to value indices.

A circuit's variables are named and categorical: variable ``i`` has a name and a tuple of value
labels; inside pcfair a value is always its 0-based index into that tuple. PSDD files name their
variables ``"1"`` .. ``"n"`` with the binary domain ``(0, 1)``.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from pcfair.errors import EvidenceError, VariableError


@dataclass(frozen=True)
class Variables:
    """An ordered set of named categorical variables.

    Parameters
    ----------
    names : sequence of str
        Variable names, unique.
    domains : sequence of sequences
        Value labels of each variable (at least one value each).

    Examples
    --------
    >>> v = Variables(["sex", "d"], [("F", "M"), (0, 1)])
    >>> v.index("d"), v.value_index("sex", "M"), v.cardinalities.tolist()
    (1, 1, [2, 2])
    """

    names: tuple[str, ...]
    domains: tuple[tuple[Hashable, ...], ...]

    def __init__(self, names: Sequence[str], domains: Sequence[Sequence[Hashable]]):
        names = tuple(str(n) for n in names)
        domains = tuple(tuple(d) for d in domains)
        if len(names) != len(domains):
            raise VariableError(f"{len(names)} variable names but {len(domains)} domains")
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise VariableError(f"duplicate variable names: {dup}")
        for n, d in zip(names, domains):
            if len(d) == 0:
                raise VariableError(f"variable {n!r} has an empty domain")
            if len(set(d)) != len(d):
                raise VariableError(f"variable {n!r} has repeated values in its domain {d}")
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "domains", domains)
        object.__setattr__(self, "_index", {n: i for i, n in enumerate(names)})
        object.__setattr__(
            self, "_value_index", [{v: j for j, v in enumerate(d)} for d in domains]
        )

    @classmethod
    def numbered(cls, n: int) -> "Variables":
        """``n`` binary variables named ``"1"`` .. ``"n"`` (the PSDD convention)."""
        return cls([str(i + 1) for i in range(n)], [(0, 1)] * n)

    def __len__(self) -> int:
        return len(self.names)

    @property
    def cardinalities(self) -> np.ndarray:
        """Number of values of each variable (int32 array)."""
        return np.array([len(d) for d in self.domains], dtype=np.int32)

    def index(self, var: str | int) -> int:
        """Index of a variable given by name (or by index, checked)."""
        if isinstance(var, (int, np.integer)) and not isinstance(var, bool):
            if str(var) in self._index:  # numbered PSDD variables: the name wins
                return self._index[str(var)]
            if 0 <= int(var) < len(self.names):
                return int(var)
            raise VariableError(f"variable index {var} out of range (0..{len(self.names) - 1})")
        try:
            return self._index[str(var)]
        except KeyError:
            raise VariableError(
                f"unknown variable {var!r}; the circuit's variables are {_preview(self.names)}"
            ) from None

    def numeric_labels(self, var: str | int) -> bool:
        """Whether ``var``'s values are numbers other than their own codes ``0..k−1`` (such as
        ``[1, 2]``): then an integer could be meant as a value or as a code, and pcfair reads
        integers as values only (see :meth:`value_index` and :meth:`evidence_matrix`)."""
        domain = self.domains[self.index(var)]

        def number(v) -> bool:
            return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)

        return (all(number(v) for v in domain)
                and [float(v) for v in domain] != [float(j) for j in range(len(domain))])

    def value_index(self, var: str | int, value: Hashable) -> int:
        """Index (code) of ``value`` in the domain of ``var``.

        A value is matched by label first (string forms of labels match too: ``"1"`` for the
        label ``1``); an integer that is no label is read as a code ``0..k−1``, and so is a
        string of digits, when the variable's values are not numbers (``"1"`` for
        ``"1 (Female)"`` on the command line). Where the values are numbers other than their
        codes (``[1, 2]``) an integer is only ever a value: ``0`` is refused rather than read
        as the code of ``1``.
        """
        i = self.index(var)
        table = self._value_index[i]
        if value in table:
            return table[value]
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
            if value in table:
                return table[value]
        if isinstance(value, str):
            for label, j in table.items():
                if str(label) == value:
                    return j
            if value.strip().isdigit() and not self.numeric_labels(i):
                value = int(value)
        if (isinstance(value, (int, np.integer)) and not isinstance(value, bool)
                and 0 <= int(value) < len(self.domains[i]) and not self.numeric_labels(i)):
            return int(value)
        raise VariableError(
            f"unknown value {value!r} for variable {self.names[i]!r}; "
            f"its values are {list(self.domains[i])}"
        )

    def value_label(self, var: int, index: int) -> Hashable:
        """The label of value ``index`` of variable ``var``."""
        return self.domains[var][index]

    def encode_assignment(self, assignment: Mapping) -> dict[int, int]:
        """Turn ``{name: value}`` into ``{var index: value index}``."""
        return {self.index(k): self.value_index(k, v) for k, v in assignment.items()}

    def evidence_matrix(self, evidence) -> np.ndarray:
        """Evidence as an ``int32`` matrix (rows × variables, −1 = missing).

        Two forms, never mixed up: DataFrames, Series, mappings ``{var: value}`` and lists of
        mappings hold *values* (labels; NaN/None or an absent column = missing; see
        :meth:`value_index`); a numeric array holds *codes* ``0..k−1`` (−1 or NaN = missing).
        An array is refused when some variable's values are numbers other than their codes
        (``[1, 2]``): there the same integer means one thing as a value and another as a code
        — pass a DataFrame for values, or call
        :func:`pcfair.inference.marginals.log_marginals` with codes.
        """
        import pandas as pd

        nv = len(self.names)
        if evidence is None:
            return np.full((1, nv), -1, dtype=np.int32)
        if isinstance(evidence, Mapping):
            evidence = [evidence]
        if isinstance(evidence, pd.Series):
            evidence = evidence.to_frame().T
        if isinstance(evidence, pd.DataFrame):
            out = np.full((len(evidence), nv), -1, dtype=np.int32)
            for col in evidence.columns:
                i = self.index(col)
                series = evidence[col]
                mask = series.isna().to_numpy()
                vals = series.to_numpy(dtype=object)
                codes = np.full(len(vals), -1, dtype=np.int32)
                cache: dict = {}
                for r in np.flatnonzero(~mask):
                    v = vals[r]
                    key = (type(v), v)
                    if key not in cache:
                        cache[key] = self.value_index(i, v)
                    codes[r] = cache[key]
                out[:, i] = codes
            return out
        if isinstance(evidence, (list, tuple)) and evidence and isinstance(evidence[0], Mapping):
            out = np.full((len(evidence), nv), -1, dtype=np.int32)
            for r, row in enumerate(evidence):
                for k, v in row.items():
                    if v is None or (isinstance(v, float) and np.isnan(v)):
                        continue
                    out[r, self.index(k)] = self.value_index(k, v)
            return out
        arr = np.asarray(evidence)
        ambiguous = [i for i in range(nv) if self.numeric_labels(i)]
        if ambiguous:
            i = ambiguous[0]
            raise EvidenceError(
                f"an array of evidence is read as value codes 0..k-1, but variable "
                f"{self.names[i]!r} has the numeric values {list(self.domains[i])}, so its "
                "codes and values differ: pass a DataFrame or a mapping of values, or codes "
                "through pcfair.inference.marginals.log_marginals(circuit, codes)")
        if arr.ndim == 1:
            arr = arr[None, :]
        if arr.ndim != 2 or arr.shape[1] != nv:
            raise VariableError(
                f"evidence array must have shape (rows, {nv}); got {np.asarray(evidence).shape}"
            )
        if arr.dtype.kind == "f":
            nan = np.isnan(arr)
            if np.any(arr[~nan] != np.round(arr[~nan])):
                raise VariableError("evidence array holds non-integer values")
            arr = np.where(nan, -1, arr)
        arr = arr.astype(np.int32)
        card = self.cardinalities
        bad = (arr < -1) | (arr >= card[None, :])
        if bad.any():
            r, c = map(int, np.argwhere(bad)[0])
            raise VariableError(
                f"evidence value {arr[r, c]} out of range for variable {self.names[c]!r} "
                f"(row {r}; values 0..{card[c] - 1}, -1 = missing)"
            )
        return np.ascontiguousarray(arr)

    def decode_row(self, row: np.ndarray) -> dict:
        """Turn an index-form row into ``{name: label}`` (missing values omitted)."""
        return {
            self.names[i]: self.domains[i][int(v)] for i, v in enumerate(row) if int(v) >= 0
        }


def _preview(items: Iterable[str], k: int = 12) -> str:
    items = list(items)
    text = ", ".join(repr(x) for x in items[:k])
    return "[" + text + (", ..." if len(items) > k else "") + "]"
