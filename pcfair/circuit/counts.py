"""The training counts a learned circuit carries: the rows through every parameter.

They are the sufficient statistics of a deterministic circuit's parameters, from which
:mod:`pcfair.inference.posterior` draws the parameter posterior. They are stored with the
model (:attr:`pcfair.circuit.Circuit.counts`, the JSON format's ``counts`` key) and checked
against its structure when loaded. This module holds the record only; the flows of a table are
computed by :func:`pcfair.inference.flows.parameter_counts`.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from pcfair.circuit.circuit import Circuit
from pcfair.errors import FormatError

__all__ = ["ParameterCounts"]


@dataclasses.dataclass(frozen=True, eq=False)
class ParameterCounts:
    """Training rows through every sum element (``elements``, one per entry of
    ``Circuit.edge_logw``; product links hold 0) and every categorical-leaf value (``leaves``,
    one per entry of ``Circuit.params``), with the pseudocount ``α`` and the number of rows.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"x": [0, 1]})
    >>> pc = b.build(b.categorical("x", [0.5, 0.5]))
    >>> c = ParameterCounts(np.zeros(0), np.array([1.0, 2.0]), pseudocount=1.0, rows=3)
    >>> c.check(pc)  # fits: the circuit has no sum element and one leaf of two values
    >>> ParameterCounts.from_dict(c.to_dict(), pc).leaves.tolist()
    [1.0, 2.0]
    """

    elements: np.ndarray
    leaves: np.ndarray
    pseudocount: float
    rows: int

    def check(self, circuit: Circuit, where: str = "<counts>") -> None:
        """Raise :class:`FormatError` unless the arrays fit ``circuit`` and hold finite,
        non-negative numbers."""
        for name, arr, n in (("elements", self.elements, len(circuit.edge_logw)),
                             ("leaves", self.leaves, len(circuit.params))):
            a = np.asarray(arr)
            if a.shape != (n,) or not np.all(np.isfinite(a)) or (a < 0).any():
                raise FormatError(f"counts {name!r} must be {n} finite non-negative numbers",
                                  where)
        if not (np.isfinite(self.pseudocount) and self.pseudocount >= 0):
            raise FormatError("counts 'pseudocount' must be a non-negative number", where)
        if self.rows < 0:
            raise FormatError("counts 'rows' must be non-negative", where)

    def to_dict(self) -> dict:
        """The JSON-ready dictionary (the model file's ``counts`` key)."""
        return {"elements": [float(x) for x in self.elements],
                "leaves": [float(x) for x in self.leaves],
                "pseudocount": float(self.pseudocount), "rows": int(self.rows)}

    @classmethod
    def from_dict(cls, data, circuit: Circuit, where: str = "<dict>") -> "ParameterCounts":
        """Rebuild from :meth:`to_dict` output, checked against ``circuit``."""
        if not isinstance(data, dict) or set(data) != {"elements", "leaves", "pseudocount",
                                                       "rows"}:
            raise FormatError("'counts' must be {elements, leaves, pseudocount, rows}", where)
        try:
            out = cls(np.array(data["elements"], dtype=float),
                      np.array(data["leaves"], dtype=float),
                      float(data["pseudocount"]), data["rows"])
        except (TypeError, ValueError):
            raise FormatError("'counts' holds something that is not a number", where) from None
        if type(out.rows) is not int:
            raise FormatError("counts 'rows' must be an integer", where)
        out.check(circuit, where)
        return out
