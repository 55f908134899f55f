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

Juice's circuits are normalised probabilistic circuits, and the weights and parameters are
log-probabilities, so a loaded ``.jpc`` satisfies (else :class:`FormatError` naming the file and
the node's line), checked by :func:`pcfair.circuit.io._validate.check_loaded`:

* no NaN or +inf; log-weights and leaf log-probabilities at most 1e-9 above 0; each sum's
  weights and each ``C`` leaf's parameters sum to 1 within ``|log Σ| <= 1e-6``;
* variables are numbered 1..n and each appears under the root (so n is bounded by the number of
  leaf records); a variable's arity is its largest ``I`` value + 1 or its ``C`` leaves' length
  (every ``C`` leaf of a variable lists all its values), and the arities together may not exceed
  the number of characters in the file (a file naming value 10**9 is refused, not allocated);
* smooth and decomposable (a ``.jpc`` is a general circuit, not necessarily structured); with a
  vtree given to :func:`pcfair.load`, the circuit respects it.
"""

from __future__ import annotations

import os

import numpy as np

from pcfair.circuit.circuit import CATEGORICAL, INDICATOR, PRODUCT, Circuit
from pcfair.circuit.io._text import LineReader, format_float, read_text, records, write_text
from pcfair.circuit.io._flat import FlatNodes
from pcfair.circuit.io._validate import check_loaded, check_writable
from pcfair.circuit.io.psdd import _variable_count, _vtree_note
from pcfair.circuit.variables import Variables
from pcfair.circuit.vtree import Vtree
from pcfair.errors import FormatError



def parse_jpc(text: str, path: str = "<string>", vtree: Vtree | None = None) -> Circuit:
    """Parse ``.jpc`` text into a :class:`Circuit` and validate it (see the module docstring)."""
    r = LineReader(path)
    count = None
    nodes = FlatNodes()
    ea, eb, ew = nodes.ea, nodes.eb, nodes.ew
    card: dict[int, int] = {}
    card_line: dict[int, int] = {}
    cats: list[tuple[int, int, int]] = []  # (variable, number of values, line) of C records
    max_var = 0
    max_var_line = 0
    n_leaves = 0

    def need(v: int, k: int) -> None:
        nonlocal max_var, max_var_line
        if k > card.get(v, 2):
            card[v], card_line[v] = k, r.line
        else:
            card.setdefault(v, 2)
            card_line.setdefault(v, r.line)
        if v + 1 > max_var:
            max_var, max_var_line = v + 1, r.line

    for lineno, tok in records(text):
        r.line = lineno
        rec = tok[0]
        if rec == "jpc":
            if count is not None or len(nodes):
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
        if nid != len(nodes):
            raise r.error(f"node ids must be 0..count-1 in order; expected {len(nodes)}, got {nid}")
        r.int(tok[2], "vtree id")
        if rec == "L":
            r.count(tok, 4, "L")
            lit = r.int(tok[3], "literal")
            if lit == 0:
                raise r.error("literal 0 is not a variable")
            need(abs(lit) - 1, 2)
            nodes.indicator(abs(lit) - 1, 1 if lit > 0 else 0, lineno)
            n_leaves += 1
        elif rec == "I":
            r.count(tok, 5, "I")
            v, val = r.int(tok[3], "variable") - 1, r.int(tok[4], "value")
            if v < 0 or val < 0:
                raise r.error("variables are 1-based and values 0-based non-negative integers")
            need(v, val + 1)
            nodes.indicator(v, val, lineno)
            n_leaves += 1
        elif rec == "C":
            v = r.int(tok[3], "variable") - 1
            if v < 0:
                raise r.error("variables are 1-based")
            p = tuple(r.log_prob(t, "log-probability") for t in tok[4:])
            if not p:
                raise r.error("a categorical leaf needs at least one value")
            need(v, len(p))
            cats.append((v, len(p), lineno))
            nodes.categorical(v, p, lineno)
            n_leaves += 1
        else:
            n = r.int(tok[3], "child count")
            width = 1 if rec == "P" else 2
            if n < 1:
                raise r.error(f"{rec} needs at least one child")
            r.count(tok, 4 + width * n, f"{rec} with {n} children")
            for j in range(n):
                c = r.int(tok[4 + width * j], "child id")
                if not 0 <= c < nid:
                    raise r.error(f"node {nid} refers to node {c}, which is not defined before it")
                ea.append(c)
                eb.append(-1)
                ew.append(0.0 if rec == "P" else r.log_prob(tok[5 + width * j], "log-weight"))
            if rec == "P":
                nodes.product(lineno)
            else:
                nodes.sum(lineno)
    r.line = None
    if not len(nodes):
        raise FormatError("no node lines (empty or truncated file)", path)
    if count is not None and count != len(nodes):
        raise FormatError(f"header says {count} nodes but the file has {len(nodes)}", path)
    n_vars = _variable_count(max_var, max_var_line, n_leaves, vtree, path,
                             f"the file has only {n_leaves} L/I/C records: variables are numbered "
                             "1..n and each must appear")
    total = sum(card.values())
    if total > len(text):  # the domains are bounded by the file's own content
        v = max(card, key=card.get)
        raise FormatError(f"variable {v + 1} would have {card[v]} values: the domains of a .jpc "
                          f"file may not hold more values ({total}) than the file has "
                          f"characters ({len(text)})", path, card_line[v])
    for v, k, line in cats:  # categorical leaves must cover the whole domain
        if k != card[v]:
            raise FormatError(f"categorical leaf on variable {v + 1} has {k} values but the "
                              f"variable has {card[v]}", path, line)
    variables = Variables([str(i + 1) for i in range(n_vars)],
                          [tuple(range(card.get(i, 2))) for i in range(n_vars)])
    c, lines = nodes.assemble(variables, vtree, path)
    return check_loaded(c, path, lines, normalised=True, vtree=vtree, what=_vtree_note(vtree))


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
    """Write a text ``.jpc`` file (gzipped when the name ends in ``.gz``); raises
    :class:`StructureError` for a circuit the reader would refuse."""
    check_writable(circuit, ".jpc")
    write_text(path, format_jpc(circuit))
