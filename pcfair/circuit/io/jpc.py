"""Read and write Juice's text ``.jpc`` format (categorical and non-PSDD circuits).

Records (variables 1-based, categorical values 0-based)::

    jpc <count>                                       must equal the number of node lines
    L <id> <vtree-id> <literal>                       Boolean literal
    I <id> <vtree-id> <var> <value>                   indicator [var = value]
    C <id> <vtree-id> <var> <log p_0> ... <log p_k-1> categorical leaf
    P <id> <vtree-id> <n> <child>×n                   product
    S <id> <vtree-id> <n> {<child> <log w>}×n         weighted sum

Juice's comment header labels P "sum" and S "product"; the record shapes say the opposite and are
followed here. Ids must be 0..count−1. Binomial (``B``) leaves are refused. pyjuice's pickled
``.jpc`` files are detected and refused.
"""

from __future__ import annotations

import os

import numpy as np

from pcfair.circuit.circuit import CATEGORICAL, INDICATOR, PRODUCT, SUM, Circuit
from pcfair.circuit.io._text import LineReader, format_float, read_text, records, write_text
from pcfair.circuit.io.psdd import _assemble
from pcfair.circuit.variables import Variables
from pcfair.circuit.vtree import Vtree
from pcfair.errors import FormatError



def parse_jpc(text: str, path: str = "<string>", vtree: Vtree | None = None) -> Circuit:
    r = LineReader(path)
    count = None
    kind: list[int] = []
    var: list[int] = []
    value: list[int] = []
    params: list = []
    edges: list = []
    card: dict[int, int] = {}

    def need(v: int, k: int) -> None:
        card[v] = max(card.get(v, 2), k)

    for lineno, tok in records(text):
        r.line = lineno
        rec = tok[0]
        if rec == "jpc":
            if count is not None or kind:
                raise r.error("unexpected second 'jpc' header")
            r.count(tok, 2, "jpc header")
            count = r.int(tok[1], "node count")
            continue
        if rec == "B":
            raise r.error("binomial (B) leaves are not supported by pcfair")
        if rec not in ("L", "I", "C", "P", "S"):
            raise r.error(f"unknown record {rec!r} (expected L, I, C, P or S)")
        if len(tok) < 4:
            raise r.error(f"{rec} record is too short")
        nid = r.int(tok[1], "node id")
        if nid != len(kind):
            raise r.error(f"node ids must be 0..count-1 in order; expected {len(kind)}, got {nid}")
        r.int(tok[2], "vtree id")
        p = e = None
        if rec == "L":
            r.count(tok, 4, "L")
            lit = r.int(tok[3], "literal")
            if lit == 0:
                raise r.error("literal 0 is not a variable")
            k, v, val = INDICATOR, abs(lit) - 1, 1 if lit > 0 else 0
            need(v, 2)
        elif rec == "I":
            r.count(tok, 5, "I")
            v, val = r.int(tok[3], "variable") - 1, r.int(tok[4], "value")
            if v < 0 or val < 0:
                raise r.error("variables are 1-based and values 0-based non-negative integers")
            k = INDICATOR
            need(v, val + 1)
        elif rec == "C":
            v = r.int(tok[3], "variable") - 1
            if v < 0:
                raise r.error("variables are 1-based")
            p = tuple(r.log_prob(t, "log-probability") for t in tok[4:])
            if not p:
                raise r.error("a categorical leaf needs at least one value")
            k, val = CATEGORICAL, -1
            need(v, len(p))
        else:
            n = r.int(tok[3], "child count")
            width = 1 if rec == "P" else 2
            if n < 1:
                raise r.error(f"{rec} needs at least one child")
            r.count(tok, 4 + width * n, f"{rec} with {n} children")
            e = []
            for j in range(n):
                c = r.int(tok[4 + width * j], "child id")
                if not 0 <= c < nid:
                    raise r.error(f"node {nid} refers to node {c}, which is not defined before it")
                if rec == "P":
                    e.append(c)
                else:
                    e.append((c, -1, r.float(tok[5 + width * j], "log-weight")))
            k, v, val = (PRODUCT if rec == "P" else SUM), -1, -1
        kind.append(k)
        var.append(v)
        value.append(val)
        params.append(p)
        edges.append(e)
    r.line = None
    if not kind:
        raise FormatError("no node lines (empty or truncated file)", path)
    if count is not None and count != len(kind):
        raise FormatError(f"header says {count} nodes but the file has {len(kind)}", path)
    n_vars = max(card) + 1 if card else 1
    if vtree is not None:
        if n_vars > vtree.num_variables:
            raise FormatError(f"the circuit mentions variable {n_vars} but the vtree has only "
                              f"{vtree.num_variables}", path)
        n_vars = vtree.num_variables
    for i in range(len(kind)):  # categorical leaves must cover the whole domain
        if kind[i] == CATEGORICAL and len(params[i]) != card[var[i]]:
            raise FormatError(f"categorical leaf {i} on variable {var[i] + 1} has "
                              f"{len(params[i])} values but the variable has {card[var[i]]}", path)
    variables = Variables([str(i + 1) for i in range(n_vars)],
                          [tuple(range(card.get(i, 2))) for i in range(n_vars)])
    return _assemble(variables, kind, var, value, params, edges, vtree, path)


def read_jpc(path: str | os.PathLike, vtree: Vtree | None = None) -> Circuit:
    """Read a text ``.jpc`` file (optionally gzipped)."""
    return parse_jpc(read_text(path), str(path), vtree)


def format_jpc(circuit: Circuit) -> str:
    """``.jpc`` text; sum elements with two factors become explicit product nodes."""
    lines: list[str] = []
    new_id = np.full(circuit.num_nodes, -1, np.int64)
    card = circuit.variables.cardinalities

    def emit(text: str) -> int:
        lines.append(text.format(id=len(lines)))
        return len(lines) - 1

    for i in range(circuit.num_nodes):
        k = circuit.kind[i]
        lo, hi = circuit.edge_ptr[i], circuit.edge_ptr[i + 1]
        if k == INDICATOR:
            v, val = int(circuit.var[i]), int(circuit.value[i])
            if card[v] == 2:
                new_id[i] = emit(f"L {{id}} 0 {v + 1 if val == 1 else -(v + 1)}")
            else:
                new_id[i] = emit(f"I {{id}} 0 {v + 1} {val}")
        elif k == CATEGORICAL:
            p = circuit.params[circuit.param_ptr[i] : circuit.param_ptr[i] + circuit.param_len[i]]
            new_id[i] = emit(f"C {{id}} 0 {int(circuit.var[i]) + 1} "
                             + " ".join(format_float(x) for x in p))
        elif k == PRODUCT:
            kids = " ".join(str(new_id[c]) for c in circuit.edge_a[lo:hi])
            new_id[i] = emit(f"P {{id}} 0 {hi - lo} {kids}")
        else:
            parts = []
            for e in range(lo, hi):
                a, b = circuit.edge_a[e], circuit.edge_b[e]
                c = new_id[a] if b < 0 else emit(f"P {{id}} 0 2 {new_id[a]} {new_id[b]}")
                parts.append(f"{c} {format_float(circuit.edge_logw[e])}")
            new_id[i] = emit(f"S {{id}} 0 {hi - lo} " + " ".join(parts))
    header = [
        "c this file was saved by pcfair",
        "c L id vtree literal | I id vtree var value | C id vtree var logp...",
        "c P id vtree n child... (product) | S id vtree n {child logw}... (sum)",
        f"jpc {len(lines)}",
    ]
    return "\n".join(header + lines) + "\n"


def write_jpc(circuit: Circuit, path: str | os.PathLike) -> None:
    """Write a text ``.jpc`` file (gzipped when the name ends in ``.gz``)."""
    write_text(path, format_jpc(circuit))
