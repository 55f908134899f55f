"""pcfair's native JSON format: an exact, versioned round-trip of the flat form.

Top-level keys: ``format`` ("pcfair-circuit"), ``version`` (1), ``variables`` (a list of
``{"name", "values"}``), ``nodes`` (the flat arrays), ``vtree`` (post-order arrays or null) and,
for a model learned from a table, ``recipe`` (how raw rows become its values:
:mod:`pcfair.tables.recipe`; checked field by field on reading) and ``counts`` (the training
rows through each parameter, for the parameter posterior: :mod:`pcfair.inference.posterior`).
Log-probabilities of zero probabilities are written as the string ``"-inf"``.

The format stores a normalised probabilistic circuit (it is what the certifier reads), so a
loaded file satisfies, else :class:`FormatError` naming the file:

* every array has the right type (lists of plain integers, finite numbers or ``"-inf"``; no
  NaN, ±Infinity, 1e309 or integers too large for the arrays) and its entries are in range;
  children come before parents (no cycles), product edges have one factor and log-weight 0;
* log-weights and leaf log-probabilities are at most 1e-9 above 0, each sum's weights and each
  categorical leaf's parameters sum to 1 within ``|log Σ| <= 1e-6``, and the root mentions
  every variable (:mod:`pcfair.circuit.io._validate`);
* smooth and decomposable; a stored vtree (and one given to :func:`pcfair.load`) is respected.

:func:`write_json` refuses a circuit that would not load back.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np

from pcfair.circuit.circuit import Circuit
from pcfair.circuit.io._text import read_text, write_text
from pcfair.circuit.io._validate import check_loaded, check_writable, vtree_problem
from pcfair.circuit.variables import Variables
from pcfair.circuit.vtree import Vtree
from pcfair.errors import FormatError, PCFairError, StructureError

FORMAT = "pcfair-circuit"
VERSION = 1
_ARRAYS = ("kind", "var", "value", "param_ptr", "param_len", "edge_ptr", "edge_a", "edge_b")


def _floats_out(a: np.ndarray) -> list:
    return ["-inf" if x == -math.inf else float(x) for x in a]


def _floats_in(xs, where: str, path: str) -> np.ndarray:
    """Finite numbers or the string ``"-inf"``; anything else (NaN, ±Infinity, 1e309, huge
    integers, other types) is a :class:`FormatError`."""
    if not isinstance(xs, list):
        raise FormatError(f"{where} must be a list of numbers", path)
    out = []
    for x in xs:
        if isinstance(x, str) and x == "-inf":
            out.append(-math.inf)
            continue
        if type(x) is int:
            if abs(x) > 1e300:
                raise FormatError(f"bad number {x!r} in {where}", path)
            x = float(x)
        if type(x) is float and math.isfinite(x):
            out.append(x)
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
        **({} if circuit.recipe is None else {"recipe": circuit.recipe.to_dict()}),
        **({} if circuit.counts is None else {"counts": circuit.counts.to_dict()}),
    }


def _ints(xs, where: str, path: str, lo: int = -1, hi: int | None = None) -> np.ndarray:
    """A list of plain integers in ``lo .. hi`` as int64 (no bools, floats or strings, and
    nothing that would overflow)."""
    if not isinstance(xs, list):
        raise FormatError(f"{where} must be a list of integers, got {type(xs).__name__}", path)
    if not all(type(x) is int for x in xs):
        bad = next(x for x in xs if type(x) is not int)
        raise FormatError(f"{where} must hold integers, got {bad!r}", path)
    if xs:
        mn, mx = min(xs), max(xs)
        if mn < lo or (hi is not None and mx > hi):
            bad = mn if mn < lo else mx
            raise FormatError(f"{where} holds {bad}, out of range", path)
    return np.array(xs, np.int64)


def from_dict(data: dict, path: str = "<dict>", vtree: Vtree | None = None) -> Circuit:
    """Rebuild a circuit from :func:`to_dict` output, validating everything.

    ``vtree`` (optional) replaces the vtree stored in the data; both must be respected."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise FormatError(f"not a pcfair circuit (expected format {FORMAT!r})", path)
    if data.get("version") != VERSION or type(data.get("version")) is not int:
        raise FormatError(f"unsupported pcfair circuit version {data.get('version')!r} "
                          f"(this pcfair reads version {VERSION})", path)
    for key in ("variables", "nodes"):
        if key not in data:
            raise FormatError(f"malformed pcfair circuit: no {key!r}", path)
    vs = data["variables"]
    if not isinstance(vs, list) or not vs:
        raise FormatError("'variables' must be a non-empty list", path)
    for j, v in enumerate(vs):
        if not isinstance(v, dict) or not isinstance(v.get("name"), str) \
                or not isinstance(v.get("values"), list):
            raise FormatError(f"variable {j} must be {{'name': str, 'values': list}}", path)
    nodes = data["nodes"]
    if not isinstance(nodes, dict):
        raise FormatError("'nodes' must be an object of arrays", path)
    missing = [k for k in _ARRAYS + ("params", "edge_logw") if k not in nodes]
    if missing:
        raise FormatError(f"malformed pcfair circuit: 'nodes' lacks {missing}", path)
    try:
        variables = Variables([v["name"] for v in vs], [v["values"] for v in vs])
    except (PCFairError, TypeError, ValueError) as exc:  # unhashable or repeated labels...
        raise FormatError(f"bad variables: {exc}", path) from None
    n = len(nodes["kind"]) if isinstance(nodes["kind"], list) else 0
    arrays = {
        "kind": _ints(nodes["kind"], "kind", path, 0, 3),
        "var": _ints(nodes["var"], "var", path, -1, len(vs) - 1),
        "value": _ints(nodes["value"], "value", path, -1,
                       int(variables.cardinalities.max()) - 1),
        "param_ptr": _ints(nodes["param_ptr"], "param_ptr", path, 0, len(nodes["params"])
                           if isinstance(nodes["params"], list) else 0),
        "param_len": _ints(nodes["param_len"], "param_len", path, 0,
                           int(variables.cardinalities.max())),
        "edge_ptr": _ints(nodes["edge_ptr"], "edge_ptr", path, 0,
                          len(nodes["edge_a"]) if isinstance(nodes["edge_a"], list) else 0),
        "edge_a": _ints(nodes["edge_a"], "edge_a", path, 0, max(n - 1, 0)),
        "edge_b": _ints(nodes["edge_b"], "edge_b", path, -1, max(n - 1, 0)),
    }
    params = _floats_in(nodes["params"], "params", path)
    logw = _floats_in(nodes["edge_logw"], "edge_logw", path)
    stored = None
    vt = data.get("vtree")
    if vt is not None:
        if not isinstance(vt, dict) or any(k not in vt for k in ("left", "right", "var")):
            raise FormatError("'vtree' must be null or {'left', 'right', 'var'} arrays", path)
        m = len(vt["var"]) if isinstance(vt["var"], list) else 0
        try:
            stored = Vtree(_ints(vt["left"], "vtree left", path, -1, m),
                           _ints(vt["right"], "vtree right", path, -1, m),
                           _ints(vt["var"], "vtree var", path, -1, m))
        except StructureError as exc:
            raise FormatError(f"invalid vtree: {exc}", path) from None
    _validate(arrays, params, logw, variables, path)
    c = Circuit(variables, arrays["kind"], arrays["var"], arrays["value"], arrays["param_ptr"],
                arrays["param_len"], params, arrays["edge_ptr"], arrays["edge_a"],
                arrays["edge_b"], logw)
    check_loaded(c, path, normalised=True)
    for vt_, note in ((stored, " (the vtree stored in the file)"),
                      (vtree, " (checked against the given vtree)")):
        if vt_ is not None:
            prob = vtree_problem(c, vt_)
            if prob is not None:
                raise FormatError(f"{prob[1]}{note}", path)
    final = vtree if vtree is not None else stored
    c = c.with_vtree(final) if final is not None else c
    if data.get("recipe") is not None:
        from pcfair.tables.recipe import Recipe  # the learners' record, read with the model

        recipe = Recipe.from_dict(data["recipe"], path)
        unknown = [n for n in recipe.bins if n not in variables.names]
        if unknown:
            raise FormatError(f"the recipe bins {unknown}, which are not variables", path)
        c = c.with_recipe(recipe)
    if data.get("counts") is not None:
        from pcfair.circuit.counts import ParameterCounts  # the training flows

        c = c.with_counts(ParameterCounts.from_dict(data["counts"], c, path))
    return c


def _validate(a: dict, params, logw, variables: Variables, path: str) -> None:
    """Array shapes and per-node consistency (ranges were checked by :func:`_ints`)."""
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
    kind, var, value = a["kind"], a["var"], a["value"]
    pptr, plen = a["param_ptr"], a["param_len"]
    inp = kind <= 1
    deg = np.diff(ptr)
    checks = [
        (inp & (var < 0), "an input node needs a variable"),
        (~inp & ((var != -1) | (value != -1)), "an inner node must have var = value = -1"),
        (inp & (deg > 0), "an input node must have no edges"),
        ((kind == 0) & ((value < 0) | (value >= card[np.maximum(var, 0)])),
         "an indicator's value must be in its variable's domain"),
        ((kind == 1) & (value != -1), "a categorical leaf must have value -1"),
        ((kind == 1) & ((plen != card[np.maximum(var, 0)]) | (pptr + plen > len(params))),
         "a categorical leaf must have one parameter per value of its variable, within 'params'"),
        ((kind != 1) & ((plen != 0) | (pptr != 0)), "only categorical leaves may have parameters"),
    ]
    for bad, rule in checks:
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise FormatError(f"node {i}: {rule}", path)
    owner = np.repeat(np.arange(n), deg)
    ea, eb = a["edge_a"], a["edge_b"]
    bad = (ea >= owner) | (eb >= owner)
    if bad.any():
        i = int(owner[np.flatnonzero(bad)[0]])
        raise FormatError(f"node {i}: a child is not defined before it (cycle or dangling "
                          "reference)", path)
    prod = kind[owner] == 2
    bad = prod & ((eb != -1) | (logw != 0.0))
    if bad.any():
        i = int(owner[np.flatnonzero(bad)[0]])
        raise FormatError(f"node {i}: a product edge must have no second factor and log-weight 0",
                          path)


def read_json(path: str | os.PathLike, vtree: Vtree | None = None) -> Circuit:
    """Read a pcfair JSON circuit (optionally gzipped); ``vtree`` replaces the stored one.
    See the module docstring for what is checked."""
    text = read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormatError(f"invalid JSON: {exc.msg}", str(path), exc.lineno) from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer with too many digits
        raise FormatError(f"invalid JSON: {type(exc).__name__}: {exc}", str(path)) from None
    return from_dict(data, str(path), vtree)


def write_json(circuit: Circuit, path: str | os.PathLike) -> None:
    """Write a pcfair JSON circuit (gzipped when the name ends in ``.gz``); raises
    :class:`StructureError` for a circuit the reader would refuse (not smooth, decomposable and
    normalised, or not respecting its vtree)."""
    check_writable(circuit, ".json", vtree=circuit.vtree)
    write_text(path, json.dumps(to_dict(circuit), separators=(",", ":")) + "\n")
