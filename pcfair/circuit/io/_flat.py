"""Collecting nodes while reading a file, straight into the flat (CSR) form of :class:`Circuit`.

Readers append nodes in file order (children before parents, the root last) with the file line of
each; :meth:`FlatNodes.assemble` drops the nodes the root does not reach (they occur in real
files), refuses a root that misses variables other nodes use (a truncated file), and builds the
circuit without the per-node tuples and lists of :func:`pcfair.circuit.builder.from_arrays`.
"""

from __future__ import annotations

import numpy as np

from pcfair.circuit.circuit import CATEGORICAL, INDICATOR, PRODUCT, SUM, Circuit
from pcfair.circuit.variables import Variables
from pcfair.circuit.vtree import Vtree
from pcfair.errors import FormatError


class FlatNodes:
    """Nodes in flat form; children are given as dense indices of earlier nodes."""

    def __init__(self) -> None:
        self.kind: list[int] = []
        self.var: list[int] = []
        self.value: list[int] = []
        self.pptr: list[int] = []
        self.plen: list[int] = []
        self.params: list[float] = []
        self.eptr: list[int] = [0]
        self.ea: list[int] = []
        self.eb: list[int] = []
        self.ew: list[float] = []
        self.lines: list[int] = []

    def __len__(self) -> int:
        return len(self.kind)

    def _node(self, kind: int, var: int, value: int, line: int, pptr: int, plen: int) -> int:
        self.kind.append(kind)
        self.var.append(var)
        self.value.append(value)
        self.lines.append(line)
        self.pptr.append(pptr)
        self.plen.append(plen)
        self.eptr.append(len(self.ea))
        return len(self.kind) - 1

    def indicator(self, var: int, value: int, line: int) -> int:
        return self._node(INDICATOR, var, value, line, 0, 0)

    def categorical(self, var: int, logp, line: int) -> int:
        start = len(self.params)
        self.params.extend(logp)
        return self._node(CATEGORICAL, var, -1, line, start, len(logp))

    def sum(self, line: int) -> int:
        """A sum whose elements were appended to ``ea``/``eb``/``ew`` just before."""
        return self._node(SUM, -1, -1, line, 0, 0)

    def product(self, line: int) -> int:
        """A product whose children were appended to ``ea`` (``eb`` -1, ``ew`` 0) just before."""
        return self._node(PRODUCT, -1, -1, line, 0, 0)

    def rollback_edges(self) -> None:
        """Forget edges appended since the last node (a record that failed half-way)."""
        m = self.eptr[-1]
        del self.ea[m:], self.eb[m:], self.ew[m:]

    def assemble(self, variables: Variables, vtree: Vtree | None, path: str
                 ) -> tuple[Circuit, list[int]]:
        """The circuit (``vtree`` attached, not yet validated) and the line of each node."""
        n = len(self.kind)
        kind, var, eptr, ea, eb = self.kind, self.var, self.eptr, self.ea, self.eb
        seen = [False] * n
        seen[n - 1] = True
        for i in range(n - 1, -1, -1):
            if seen[i]:
                for e in range(eptr[i], eptr[i + 1]):
                    seen[ea[e]] = True
                    if eb[e] >= 0:
                        seen[eb[e]] = True
        leaf_vars = {var[i] for i in range(n) if kind[i] <= CATEGORICAL}
        root_vars = {var[i] for i in range(n) if kind[i] <= CATEGORICAL and seen[i]}
        if leaf_vars != root_vars:
            lost = sorted(v + 1 for v in leaf_vars - root_vars)
            raise FormatError(
                f"the root (the last node line) does not mention variable(s) {lost[:10]} that "
                "other nodes use; the file may be truncated", path, self.lines[-1],
            )
        if vtree is not None and vtree.num_variables != len(variables):
            raise FormatError(f"the vtree has {vtree.num_variables} variables but the circuit "
                              f"{len(variables)}", path)
        a_kind = np.array(kind, np.int8)
        a_var = np.array(var, np.int32)
        a_value = np.array(self.value, np.int32)
        a_pptr = np.array(self.pptr, np.int32)
        a_plen = np.array(self.plen, np.int32)
        a_eptr = np.array(eptr, np.int64)
        a_ea = np.array(ea, np.int32)
        a_eb = np.array(eb, np.int32)
        a_ew = np.array(self.ew, np.float64)
        lines = self.lines
        if not all(seen):
            reach = np.array(seen, bool)
            keep = np.flatnonzero(reach)
            new_id = (np.cumsum(reach) - 1).astype(np.int32)
            deg = np.diff(a_eptr)
            edge_keep = np.repeat(reach, deg)
            a_ea = new_id[a_ea[edge_keep]]
            b = a_eb[edge_keep]
            a_eb = np.where(b >= 0, new_id[np.maximum(b, 0)], -1).astype(np.int32)
            a_ew = a_ew[edge_keep]
            a_eptr = np.concatenate([[0], np.cumsum(deg[keep])])
            a_kind, a_var, a_value = a_kind[keep], a_var[keep], a_value[keep]
            a_pptr, a_plen = a_pptr[keep], a_plen[keep]
            lines = [lines[i] for i in keep]
        c = Circuit(variables, a_kind, a_var, a_value, a_pptr, a_plen,
                    np.array(self.params, np.float64), a_eptr, a_ea, a_eb, a_ew, vtree)
        return c, lines
