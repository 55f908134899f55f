"""pcfair's native JSON format: an exact, versioned round-trip of the flat form.

Top-level keys: ``format`` ("pcfair-circuit"), ``version`` (1), ``variables`` (a list of
``{"name", "values"}``), ``nodes`` (the flat arrays) and ``vtree`` (post-order arrays or null).
Log-probabilities of zero probabilities are written as the string ``"-inf"``.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np

from pcfair.circuit.circuit import Circuit
from pcfair.circuit.io._text import read_text, write_text
from pcfair.circuit.variables import Variables
from pcfair.circuit.vtree import Vtree
from pcfair.errors import FormatError, PCFairError

FORMAT = "pcfair-circuit"
VERSION = 1
_ARRAYS = ("kind", "var", "value", "param_ptr", "param_len", "edge_ptr", "edge_a", "edge_b")


def _floats_out(a: np.ndarray) -> list:
    return ["-inf" if x == -math.inf else float(x) for x in a]


def _floats_in(xs, where: str, path: str) -> np.ndarray:
    out = []
    for x in xs:
        if x == "-inf":
            out.append(-math.inf)
        elif isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x):
            out.append(float(x))
        else:
            raise FormatError(f"bad number {x!r} in {where}", path)
    return np.array(out, np.float64)


def to_dict(circuit: Circuit) -> dict:
    """The JSON-ready dictionary of a circuit."""
    vt = circuit.vtree
    return {
        "format": FORMAT,
        "version": VERSION,
        "variables": [
            {"name": n, "values": [v.item() if isinstance(v, np.generic) else v for v in d]}
            for n, d in zip(circuit.variables.names, circuit.variables.domains)
        ],
        "nodes": {
            **{k: getattr(circuit, k).tolist() for k in _ARRAYS},
            "params": _floats_out(circuit.params),
            "edge_logw": _floats_out(circuit.edge_logw),
        },
        "vtree": None if vt is None else {
            "left": vt.left.tolist(), "right": vt.right.tolist(), "var": vt.var.tolist()
        },
    }


def from_dict(data: dict, path: str = "<dict>") -> Circuit:
    """Rebuild a circuit from :func:`to_dict` output, validating everything."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise FormatError(f"not a pcfair circuit (expected format {FORMAT!r})", path)
    if data.get("version") != VERSION:
        raise FormatError(f"unsupported pcfair circuit version {data.get('version')!r} "
                          f"(this pcfair reads version {VERSION})", path)
    try:
        variables = Variables([v["name"] for v in data["variables"]],
                              [v["values"] for v in data["variables"]])
        nodes = data["nodes"]
        arrays = {k: np.asarray(nodes[k], dtype=np.int64) for k in _ARRAYS}
        params = _floats_in(nodes["params"], "params", path)
        logw = _floats_in(nodes["edge_logw"], "edge_logw", path)
        vt = data.get("vtree")
        vtree = None if vt is None else Vtree(vt["left"], vt["right"], vt["var"])
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, PCFairError):
            raise FormatError(str(exc), path) from None
        raise FormatError(f"malformed pcfair circuit ({type(exc).__name__}: {exc})", path) from None
    _validate(arrays, params, logw, variables, path)
    c = Circuit(variables, arrays["kind"], arrays["var"], arrays["value"], arrays["param_ptr"],
                arrays["param_len"], params, arrays["edge_ptr"], arrays["edge_a"],
                arrays["edge_b"], logw)
    if vtree is not None:
        try:
            c = c.with_vtree(vtree)
        except PCFairError as exc:
            raise FormatError(str(exc), path) from None
    return c


def _validate(a: dict, params, logw, variables: Variables, path: str) -> None:
    n = len(a["kind"])
    card = variables.cardinalities
    if n == 0:
        raise FormatError("a circuit needs at least one node", path)
    for k in ("var", "value", "param_ptr", "param_len"):
        if len(a[k]) != n:
            raise FormatError(f"array {k!r} has {len(a[k])} entries, expected {n}", path)
    ptr = a["edge_ptr"]
    if len(ptr) != n + 1 or ptr[0] != 0 or np.any(np.diff(ptr) < 0):
        raise FormatError("edge_ptr must start at 0, be non-decreasing and have n+1 entries", path)
    ne = int(ptr[-1])
    if len(a["edge_a"]) != ne or len(a["edge_b"]) != ne or len(logw) != ne:
        raise FormatError("edge arrays do not match edge_ptr", path)
    for i in range(n):
        k = a["kind"][i]
        if k not in (0, 1, 2, 3):
            raise FormatError(f"node {i}: unknown kind {k}", path)
        if k in (0, 1):
            v = a["var"][i]
            if not 0 <= v < len(card):
                raise FormatError(f"node {i}: variable {v} out of range", path)
            if k == 0 and not 0 <= a["value"][i] < card[v]:
                raise FormatError(f"node {i}: value {a['value'][i]} out of range", path)
            if k == 1 and (a["param_len"][i] != card[v] or a["param_ptr"][i] < 0
                           or a["param_ptr"][i] + a["param_len"][i] > len(params)):
                raise FormatError(f"node {i}: bad parameter range", path)
        for e in range(ptr[i], ptr[i + 1]):
            if not 0 <= a["edge_a"][e] < i or not -1 <= a["edge_b"][e] < i:
                raise FormatError(f"node {i}: a child is not defined before it (cycle or "
                                  "dangling reference)", path)
            if k == 2 and a["edge_b"][e] != -1:
                raise FormatError(f"node {i}: a product edge cannot have a second factor", path)


def read_json(path: str | os.PathLike) -> Circuit:
    """Read a pcfair JSON circuit (optionally gzipped)."""
    text = read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(f"invalid JSON: {exc.msg}", str(path), exc.lineno) from None
    return from_dict(data, str(path))


def write_json(circuit: Circuit, path: str | os.PathLike) -> None:
    """Write a pcfair JSON circuit (gzipped when the name ends in ``.gz``)."""
    write_text(path, json.dumps(to_dict(circuit), separators=(",", ":")) + "\n")
