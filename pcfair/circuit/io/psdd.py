"""Read and write ``.psdd`` files (LearnPSDD dialect; the C++ dialect is read too).

Records (variables 1-based, literals ``+v``/``-v``, numbers natural logs)::

    psdd <count>                              (a hint; often wrong in real files)
    L <id> <vtree-id> <literal>               indicator
    T <id> <vtree-id> <var> <log θ>           Bernoulli leaf, θ = P(var = 1)  (LearnPSDD)
    T <id> <vtree-id> <var> <log P(0)> <log P(1)>                            (C++ dialect)
    D <id> <vtree-id> <k> {<prime> <sub> <log w>}×k

Ids are opaque and may be sparse; the last node line is the root. Vtree ids in the file are not
trusted (circuit-layer.md §2.7 item 3: real files disagree with their ``.vtree``, and Juice v0.4
writes 0 everywhere): each node's vtree node is re-derived from its scope.

What a loaded PSDD satisfies (else :class:`FormatError` naming the file and the node's line),
checked by :func:`pcfair.circuit.io._validate.check_loaded`:

* numbers are log-probabilities: no NaN, no +inf, none above 0 by more than 1e-9 (``-inf``, a
  zero probability, is kept); each decision node's weights and each ``T`` leaf's two
  probabilities sum to 1 within ``|log Σ| <= 1e-6`` (the format stores normalised PSDDs);
* variables are numbered 1..n and every one of them is mentioned under the root (so a variable
  number is bounded by the number of ``L``/``T`` records, or by the vtree's variable count);
* smooth and decomposable, and, with a vtree (given or the sibling ``X.vtree``), the vtree has
  the circuit's variable count and every element's prime lies under the left and its sub under
  the right child of their lowest common vtree node.

Determinism (the primes' exclusivity) is not verified on load; ``Circuit.properties()`` does.
"""

from __future__ import annotations

import math
import os

import numpy as np

from pcfair.circuit.circuit import CATEGORICAL, INDICATOR, PRODUCT, Circuit
from pcfair.circuit.io._text import (LOG_ROUNDING, LineReader, format_float, read_text, records,
                                     write_text)
from pcfair.circuit.io._flat import FlatNodes
from pcfair.circuit.io._validate import check_loaded, check_writable
from pcfair.circuit.variables import Variables
from pcfair.circuit.vtree import Vtree
from pcfair.errors import FormatError, StructureError


def _log1mexp(x: float) -> float:
    """log(1 − exp(x)) for x <= 0, accurately."""
    if x == 0.0:
        return -math.inf
    if x > -0.6931471805599453:
        return math.log(-math.expm1(x))
    return math.log1p(-math.exp(x))


def parse_psdd(text: str, path: str = "<string>", vtree: Vtree | None = None) -> Circuit:
    """Parse PSDD text into a :class:`Circuit` (attaching ``vtree`` when given) and validate it
    (see the module docstring)."""
    r = LineReader(path)
    ids: dict[int, int] = {}
    nodes = FlatNodes()
    ea, eb, ew = nodes.ea, nodes.eb, nodes.ew
    dialect: int | None = None
    header_seen = False
    max_var = 0
    max_var_line = 0
    n_leaves = 0

    def child(token: str, parent: int) -> int:
        c = r.int(token, "child id")
        if c not in ids:
            raise r.error(f"node {parent} refers to node {c}, which is not defined before it")
        return ids[c]

    for lineno, tok in records(text):
        r.line = lineno
        rec = tok[0]
        if rec == "psdd":
            if header_seen or ids:
                raise r.error("unexpected second 'psdd' header")
            r.count(tok, 2, "psdd header")
            r.int(tok[1], "node count")
            header_seen = True
            continue
        if rec not in ("L", "T", "D"):
            raise r.error(
                f"unknown record {rec!r}: a .psdd file holds only L, T and D node lines "
                "(P/N/F records of other dialects are not supported)"
            )
        if len(tok) < 4:
            raise r.error(f"{rec} record is too short ({len(tok)} fields)")
        nid = r.int(tok[1], "node id")
        r.int(tok[2], "vtree id")
        if nid in ids:
            raise r.error(f"node id {nid} is defined twice")
        if rec == "L":
            r.count(tok, 4, "L")
            lit = r.int(tok[3], "literal")
            if lit == 0:
                raise r.error("literal 0 is not a variable")
            v = abs(lit)
            if v > max_var:
                max_var, max_var_line = v, lineno
            ids[nid] = nodes.indicator(v - 1, 1 if lit > 0 else 0, lineno)
            n_leaves += 1
        elif rec == "T":
            if len(tok) not in (5, 6):
                raise r.error(f"T record needs 5 (LearnPSDD) or 6 (C++) fields, got {len(tok)}")
            this = len(tok)
            if dialect is None:
                dialect = this
            elif dialect != this:
                raise r.error("T records mix the LearnPSDD (5 fields) and C++ (6 fields) dialects")
            v = r.int(tok[3], "variable")
            if v < 1:
                raise r.error(f"variable {v} must be a positive integer")
            if this == 5:
                lt = r.log_prob(tok[4], "log θ")
                p = (_log1mexp(lt), lt)
            else:
                p = (r.log_prob(tok[4], "log P(x=0)"), r.log_prob(tok[5], "log P(x=1)"))
            if v > max_var:
                max_var, max_var_line = v, lineno
            ids[nid] = nodes.categorical(v - 1, p, lineno)
            n_leaves += 1
        else:
            k = r.int(tok[3], "element count")
            if k < 1:
                raise r.error(f"a decision node needs at least one element, got {k}")
            r.count(tok, 4 + 3 * k, f"D with {k} elements")
            try:  # fast path; on any doubt the per-token path below names the bad token
                for j in range(4, 4 + 3 * k, 3):
                    w = float(tok[j + 2])
                    if not w <= LOG_ROUNDING:
                        raise ValueError
                    ea.append(ids[int(tok[j])])
                    eb.append(ids[int(tok[j + 1])])
                    ew.append(w if w < 0.0 else 0.0)
            except (ValueError, KeyError):
                nodes.rollback_edges()
                for j in range(k):
                    p = child(tok[4 + 3 * j], nid)
                    s = child(tok[5 + 3 * j], nid)
                    w = r.log_prob(tok[6 + 3 * j], "element log-weight")
                    ea.append(p)
                    eb.append(s)
                    ew.append(w)
            ids[nid] = nodes.sum(lineno)
    r.line = None
    if not len(nodes):
        raise FormatError("no node lines (empty or truncated file)", path)
    n_vars = _variable_count(max_var, max_var_line, n_leaves, vtree, path,
                             f"the file has only {n_leaves} L/T records: variables are numbered "
                             "1..n and each must appear")
    c, lines = nodes.assemble(Variables.numbered(n_vars), vtree, path)
    return check_loaded(c, path, lines, normalised=True, vtree=vtree, what=_vtree_note(vtree))


def _vtree_note(vtree: Vtree | None) -> str:
    return " (with the vtree given or found beside the file)" if vtree is not None else ""


def _variable_count(max_var: int, line: int, bound: int, vtree: Vtree | None, path: str,
                    reason: str, exact: bool = True) -> int:
    """The number of variables: the vtree's, or the largest variable the file names, which may
    not exceed ``bound`` (what the file's own content can cover, e.g. its number of leaf
    records), so that a file naming variable 10**8 is refused instead of allocating that many;
    ``reason`` says why (it ends the message). With ``exact`` (a distribution over all the
    vtree's variables) a vtree with more variables than the file names is refused too."""
    if vtree is not None:
        if max_var > vtree.num_variables:
            raise FormatError(f"the circuit mentions variable {max_var} but the vtree has only "
                              f"{vtree.num_variables}", path, line)
        if exact and max_var < vtree.num_variables:
            raise FormatError(f"the vtree has {vtree.num_variables} variables but the circuit "
                              f"mentions only variables up to {max_var}", path)
        return vtree.num_variables
    if max_var > bound:
        raise FormatError(f"variable {max_var} is named but {reason}", path, line)
    return max_var


def read_psdd(path: str | os.PathLike, vtree: Vtree | None = None) -> Circuit:
    """Read a ``.psdd`` file (optionally gzipped); see the module docstring for what is
    checked."""
    return parse_psdd(read_text(path), str(path), vtree)


def format_psdd(circuit: Circuit, vtree: Vtree | None = None) -> str:
    """PSDD text with vtree ids in the in-order numbering of ``vtree``.

    The LearnPSDD dialect is written, unless some Bernoulli leaf has ``P(x=1)`` so close to 1
    that ``log θ`` alone cannot carry ``P(x=0)``; then every ``T`` record carries both logs
    (the C++ dialect, which pcfair and the C++ PSDD package read)."""
    from pcfair.circuit.properties import node_vtree_nodes

    vtree = vtree if vtree is not None else circuit.vtree
    if vtree is None:
        raise StructureError("writing .psdd needs a vtree: attach one or pass vtree=")
    card = circuit.variables.cardinalities
    if np.any(card != 2):
        raise StructureError(".psdd holds binary variables only; save categorical circuits as "
                             ".json or .jpc")
    check_writable(circuit, ".psdd", vtree=vtree)
    vt_of = node_vtree_nodes(circuit, vtree)
    inorder = vtree.inorder_ids()
    lines = [
        "c ids of psdd nodes start at 0 and appear bottom-up, children before parents",
        "c",
        "c file syntax:",
        "c psdd count-of-psdd-nodes",
        "c L id-of-literal-psdd-node id-of-vtree literal",
        "c T id-of-bernoulli-psdd-node id-of-vtree variable log(P(variable=1))",
        "c D id-of-decomposition-psdd-node id-of-vtree number-of-elements "
        "{id-of-prime id-of-sub log(element-weight)}*",
        "c",
        f"psdd {circuit.num_nodes}",
    ]
    lognorm = circuit.leaf_lognorm
    # log θ alone loses P(x=0) when θ rounds to 1; then write both logs (the C++ dialect)
    two_params = False
    for i in np.flatnonzero(circuit.kind == CATEGORICAL):
        p0, p1 = circuit.params[circuit.param_ptr[i] : circuit.param_ptr[i] + 2]
        back = _log1mexp(p1)
        if back != p0 and not (np.isfinite(p0) and abs(back - p0) <= 1e-12 * max(1.0, abs(p0))):
            two_params = True
            break
    if two_params:
        lines.insert(5, "c (T records carry log(P(variable=0)) log(P(variable=1)): the C++ dialect)")
    for i in range(circuit.num_nodes):
        k = circuit.kind[i]
        vt = int(inorder[vt_of[i]]) if vt_of[i] >= 0 else 0
        if k == INDICATOR:
            v = int(circuit.var[i]) + 1
            lines.append(f"L {i} {vt} {v if circuit.value[i] == 1 else -v}")
        elif k == CATEGORICAL:
            if abs(lognorm[i]) > 1e-9:
                raise StructureError(f"{circuit.describe_node(i)} is not normalised; a PSDD "
                                     "T node must be")
            p0, p1 = circuit.params[circuit.param_ptr[i] : circuit.param_ptr[i] + 2]
            logs = f"{format_float(p0)} {format_float(p1)}" if two_params else format_float(p1)
            lines.append(f"T {i} {vt} {int(circuit.var[i]) + 1} {logs}")
        elif k == PRODUCT:
            raise StructureError(f"{circuit.describe_node(i)}: .psdd stores products only as "
                                 "decision elements; save this circuit as .json or .jpc")
        else:
            lo, hi = circuit.edge_ptr[i], circuit.edge_ptr[i + 1]
            parts = [f"D {i} {vt} {hi - lo}"]
            for e in range(lo, hi):
                if circuit.edge_b[e] < 0:
                    raise StructureError(f"{circuit.describe_node(i)} has an element without a "
                                         "sub; save this circuit as .json or .jpc")
                parts.append(f"{circuit.edge_a[e]} {circuit.edge_b[e]} "
                             f"{format_float(circuit.edge_logw[e])}")
            lines.append(" ".join(parts))
    return "\n".join(lines) + "\n"


def write_psdd(circuit: Circuit, path: str | os.PathLike, vtree: Vtree | None = None) -> None:
    """Write a ``.psdd`` file (gzipped when the name ends in ``.gz``)."""
    write_text(path, format_psdd(circuit, vtree))
