"""Read and write ``.vtree`` files (SDD package / LearnPSDD / Juice syntax).

A loaded vtree is a full binary tree whose ``n`` leaves hold the variables ``1..n`` once each
(so a variable number is bounded by the number of ``L`` records), children are defined before
their parents, and every node but the root (the last line) has one parent. Anything else is a
:class:`FormatError` naming the file and, where one line is at fault, the line. The header count
is not checked (ids are opaque labels, circuit-layer.md §2.1).
"""

from __future__ import annotations

import os


from pcfair.circuit.io._text import LineReader, read_text, records, write_text
from pcfair.circuit.vtree import Vtree
from pcfair.errors import FormatError, StructureError


def parse_vtree(text: str, path: str = "<string>") -> tuple[Vtree, dict[int, int]]:
    """Parse vtree text. Returns the vtree and the map file id → node index.

    Ids are opaque labels (in-order, post-order or anything else); variables are 1-based in the
    file and 0-based in the result.
    """
    r = LineReader(path)
    ids: dict[int, int] = {}
    left: list[int] = []
    right: list[int] = []
    var: list[int] = []
    header_seen = False
    max_var, max_var_line = 0, None
    for lineno, tok in records(text):
        r.line = lineno
        kind = tok[0]
        if kind == "vtree":
            if header_seen or ids:
                raise r.error("unexpected second 'vtree' header")
            r.count(tok, 2, "vtree header")
            r.int(tok[1], "node count")
            header_seen = True
            continue
        if kind == "L":
            r.count(tok, 3, "L")
            nid, v = r.int(tok[1], "node id"), r.int(tok[2], "variable")
            if v < 1:
                raise r.error(f"variable {v} must be a positive integer")
            if v > max_var:
                max_var, max_var_line = v, lineno
            entry = (-1, -1, v - 1)
        elif kind == "I":
            r.count(tok, 4, "I")
            nid = r.int(tok[1], "node id")
            kids = []
            for t in tok[2:]:
                c = r.int(t, "child id")
                if c not in ids:
                    raise r.error(f"child {c} is not defined before node {nid}")
                kids.append(ids[c])
            entry = (kids[0], kids[1], -1)
        else:
            raise r.error(f"unknown vtree record {kind!r} (expected 'vtree', 'L' or 'I')")
        if nid in ids:
            raise r.error(f"node id {nid} is defined twice")
        ids[nid] = len(var)
        left.append(entry[0])
        right.append(entry[1])
        var.append(entry[2])
    if not var:
        raise FormatError("no vtree nodes (empty or truncated file)", path)
    # re-number variables densely is not allowed: the file's numbering is the circuit's.
    r.line = None
    n_leaves = sum(1 for v in var if v >= 0)
    if max_var != n_leaves:
        raise FormatError(
            f"vtree leaves must hold variables 1..{n_leaves} exactly once "
            f"(largest variable is {max_var})", path, max_var_line,
        )
    try:
        vt = Vtree(left, right, var)
    except StructureError as exc:
        raise FormatError(f"invalid vtree: {exc} (a truncated file?)", path) from None
    return vt, ids


def read_vtree(path: str | os.PathLike) -> Vtree:
    """Read a ``.vtree`` file (optionally gzipped)."""
    return parse_vtree(read_text(path), str(path))[0]


def format_vtree(vtree: Vtree) -> str:
    """Vtree text with SDD-package in-order ids."""
    ids = vtree.inorder_ids()
    lines = [
        "c ids of vtree nodes start at 0",
        "c ids of variables start at 1",
        "c vtree nodes appear bottom-up, children before parents",
        "c",
        "c file syntax:",
        "c vtree number-of-nodes-in-vtree",
        "c L id-of-leaf-vtree-node id-of-variable",
        "c I id-of-internal-vtree-node id-of-left-child id-of-right-child",
        "c",
        f"vtree {vtree.num_nodes}",
    ]
    for i in range(vtree.num_nodes):
        if vtree.var[i] >= 0:
            lines.append(f"L {ids[i]} {int(vtree.var[i]) + 1}")
        else:
            lines.append(f"I {ids[i]} {ids[vtree.left[i]]} {ids[vtree.right[i]]}")
    return "\n".join(lines) + "\n"


def write_vtree(vtree: Vtree, path: str | os.PathLike) -> None:
    """Write a ``.vtree`` file (gzipped when the name ends in ``.gz``)."""
    write_text(path, format_vtree(vtree))


__all__ = ["format_vtree", "parse_vtree", "read_vtree", "write_vtree"]
