"""Read ``.sdd`` files (SDD package) as logical circuits with unit weights.

``F`` (false) becomes an empty sum, ``T`` (true) an empty product, ``L`` an indicator and ``D``
a sum of (prime, sub) elements with weight 1. Evaluating the circuit on a complete assignment
gives 1 where the formula holds and 0 elsewhere.
"""

from __future__ import annotations

import os

from pcfair.circuit.circuit import INDICATOR, PRODUCT, SUM, Circuit
from pcfair.circuit.io._text import LineReader, read_text, records
from pcfair.circuit.io.psdd import _assemble
from pcfair.circuit.variables import Variables
from pcfair.circuit.vtree import Vtree
from pcfair.errors import FormatError


def parse_sdd(text: str, path: str = "<string>", vtree: Vtree | None = None) -> Circuit:
    r = LineReader(path)
    ids: dict[int, int] = {}
    kind: list[int] = []
    var: list[int] = []
    value: list[int] = []
    edges: list = []
    header_seen = False
    max_var = 0
    for lineno, tok in records(text):
        r.line = lineno
        rec = tok[0]
        if rec == "sdd":
            if header_seen or ids:
                raise r.error("unexpected second 'sdd' header")
            r.count(tok, 2, "sdd header")
            r.int(tok[1], "node count")
            header_seen = True
            continue
        if rec not in ("F", "T", "L", "D"):
            raise r.error(f"unknown record {rec!r}: a .sdd file holds F, T, L and D lines")
        if len(tok) < 2:
            raise r.error(f"{rec} record is too short")
        nid = r.int(tok[1], "node id")
        if nid in ids:
            raise r.error(f"node id {nid} is defined twice")
        if rec == "F":
            r.count(tok, 2, "F")
            kind.append(SUM)
            edges.append([])
            var.append(-1)
            value.append(-1)
        elif rec == "T":
            r.count(tok, 2, "T")
            kind.append(PRODUCT)
            edges.append([])
            var.append(-1)
            value.append(-1)
        elif rec == "L":
            r.count(tok, 4, "L")
            r.int(tok[2], "vtree id")
            lit = r.int(tok[3], "literal")
            if lit == 0:
                raise r.error("literal 0 is not a variable")
            kind.append(INDICATOR)
            var.append(abs(lit) - 1)
            value.append(1 if lit > 0 else 0)
            edges.append(None)
            max_var = max(max_var, abs(lit))
        else:
            if len(tok) < 4:
                raise r.error("D record is too short")
            r.int(tok[2], "vtree id")
            k = r.int(tok[3], "element count")
            if k < 1:
                raise r.error("a decision node needs at least one element")
            r.count(tok, 4 + 2 * k, f"D with {k} elements")
            els = []
            for j in range(k):
                pair = []
                for t in tok[4 + 2 * j : 6 + 2 * j]:
                    c = r.int(t, "child id")
                    if c not in ids:
                        raise r.error(f"node {nid} refers to node {c}, not defined before it")
                    pair.append(ids[c])
                els.append((pair[0], pair[1], 0.0))
            kind.append(SUM)
            var.append(-1)
            value.append(-1)
            edges.append(els)
        ids[nid] = len(kind) - 1
    r.line = None
    if not kind:
        raise FormatError("no node lines (empty or truncated file)", path)
    n_vars = max_var
    if vtree is not None:
        if max_var > vtree.num_variables:
            raise FormatError(f"the SDD mentions variable {max_var} but the vtree has only "
                              f"{vtree.num_variables}", path)
        n_vars = vtree.num_variables
    return _assemble(Variables.numbered(max(n_vars, 1)), kind, var, value, [None] * len(kind),
                     edges, vtree, path)


def read_sdd(path: str | os.PathLike, vtree: Vtree | None = None) -> Circuit:
    """Read a ``.sdd`` file (optionally gzipped) as a logical circuit."""
    return parse_sdd(read_text(path), str(path), vtree)
