"""Read ``.sdd`` files (SDD package) as logical circuits with unit weights.

``F`` (false) becomes an empty sum, ``T`` (true) an empty product, ``L`` an indicator and ``D``
a sum of (prime, sub) elements with weight 1. Evaluating the circuit on a complete assignment
gives 1 where the formula holds and 0 elsewhere.

An SDD is a logical circuit, so nothing is normalised, and compressed, trimmed SDDs use the
constants and are not smooth (circuit-layer.md §2.2; the spec's own example is not). A loaded
``.sdd`` is decomposable and, with a vtree (given or the sibling ``X.vtree``), has its variable
count and respects it (primes over the left, subs over the right subtree); else
:class:`FormatError` naming the file and the node's line. Without a vtree the number of
variables is the largest literal, which may not exceed the file's length in characters.
"""

from __future__ import annotations

import os

from pcfair.circuit.circuit import Circuit
from pcfair.circuit.io._text import LineReader, read_text, records
from pcfair.circuit.io._flat import FlatNodes
from pcfair.circuit.io._validate import check_loaded
from pcfair.circuit.io.psdd import _variable_count, _vtree_note
from pcfair.circuit.variables import Variables
from pcfair.circuit.vtree import Vtree
from pcfair.errors import FormatError


def parse_sdd(text: str, path: str = "<string>", vtree: Vtree | None = None) -> Circuit:
    """Parse ``.sdd`` text into a logical :class:`Circuit` and validate it (see the module
    docstring)."""
    r = LineReader(path)
    ids: dict[int, int] = {}
    nodes = FlatNodes()
    ea, eb, ew = nodes.ea, nodes.eb, nodes.ew
    header_seen = False
    max_var = 0
    max_var_line = 0
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
            ids[nid] = nodes.sum(lineno)
        elif rec == "T":
            r.count(tok, 2, "T")
            ids[nid] = nodes.product(lineno)
        elif rec == "L":
            r.count(tok, 4, "L")
            r.int(tok[2], "vtree id")
            lit = r.int(tok[3], "literal")
            if lit == 0:
                raise r.error("literal 0 is not a variable")
            if abs(lit) > max_var:
                max_var, max_var_line = abs(lit), lineno
            ids[nid] = nodes.indicator(abs(lit) - 1, 1 if lit > 0 else 0, lineno)
        else:
            if len(tok) < 4:
                raise r.error("D record is too short")
            r.int(tok[2], "vtree id")
            k = r.int(tok[3], "element count")
            if k < 1:
                raise r.error("a decision node needs at least one element")
            r.count(tok, 4 + 2 * k, f"D with {k} elements")
            for j in range(k):
                pair = []
                for t in tok[4 + 2 * j : 6 + 2 * j]:
                    c = r.int(t, "child id")
                    if c not in ids:
                        raise r.error(f"node {nid} refers to node {c}, not defined before it")
                    pair.append(ids[c])
                ea.append(pair[0])
                eb.append(pair[1])
                ew.append(0.0)
            ids[nid] = nodes.sum(lineno)
    r.line = None
    if not len(nodes):
        raise FormatError("no node lines (empty or truncated file)", path)
    # an SDD need not mention every variable: without a vtree, bound the count by the text
    n_vars = _variable_count(max_var, max_var_line, len(text), vtree, path,
                             f"the file has only {len(text)} characters (give the vtree)",
                             exact=False)
    c, lines = nodes.assemble(Variables.numbered(max(n_vars, 1)), vtree, path)
    return check_loaded(c, path, lines, normalised=False, smooth=False, vtree=vtree,
                        what=_vtree_note(vtree))


def read_sdd(path: str | os.PathLike, vtree: Vtree | None = None) -> Circuit:
    """Read a ``.sdd`` file (optionally gzipped) as a logical circuit."""
    return parse_sdd(read_text(path), str(path), vtree)
