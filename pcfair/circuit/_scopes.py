"""Variable scopes of every node, as Python int bitsets (bit v = variable v)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pcfair.circuit._kinds import CATEGORICAL, INDICATOR

if TYPE_CHECKING:  # pragma: no cover
    from pcfair.circuit.circuit import Circuit  # which imports this module


def compute_scopes(circuit: Circuit) -> list[int]:
    kind, var = circuit.kind, circuit.var
    ptr, ea, eb = circuit.edge_ptr, circuit.edge_a, circuit.edge_b
    scopes = [0] * circuit.num_nodes
    for i in range(circuit.num_nodes):
        k = kind[i]
        if k == INDICATOR or k == CATEGORICAL:
            scopes[i] = 1 << int(var[i])
        else:
            s = 0
            for e in range(ptr[i], ptr[i + 1]):
                s |= scopes[ea[e]]
                if eb[e] >= 0:
                    s |= scopes[eb[e]]
            scopes[i] = s
    return scopes


def bits(scope: int) -> list[int]:
    """The variable indices in a bitset, ascending."""
    out = []
    v = 0
    while scope:
        if scope & 1:
            out.append(v)
        scope >>= 1
        v += 1
    return out
