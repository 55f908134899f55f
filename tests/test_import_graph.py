"""The package's import graph: no cycle but the one named, and floors that point down.

The graph is read from the source with :mod:`ast`, not by importing: an arrow ``a -> b`` for
every ``import`` or ``from ... import`` of a pcfair module anywhere in module ``a``, at module
level *and* inside functions and methods (an import deferred to a call is still a dependency),
with relative imports resolved. ``from package import name`` is an arrow to the submodule
``package.name`` where there is one, else to ``package`` itself. Two kinds of import are left
out: those under ``if TYPE_CHECKING:`` (annotations only; they never run), and the implicit
import of a submodule's parent packages (each ``__init__`` is a node with its own arrows).

Floors, lowest first; a module may import its own floor and those below it, never one above:

0. **base**: :mod:`pcfair.errors` and the private helpers ``pcfair._*`` (random states, progress
   bars, the compile notice, the clock).
1. **drawing**: :mod:`pcfair.plot`, which only draws the frames it is given (matplotlib is
   imported when it draws). It computes no pattern quantity and imports nothing but the base,
   so the results' and audits' ``.plot()`` methods may call it without closing a cycle
   (asserted by :func:`test_plot_only_draws`).
2. **circuit**: :mod:`pcfair.circuit` and its readers and writers, the core every algorithm runs
   on, and :mod:`pcfair.tables` (how a raw table meets the model: categorical codes, bins and
   the recipe a model file carries), which the readers read and every user of a table shares.
3. **inference**: :mod:`pcfair.inference`: marginals, sampling, quotient bounds, flows,
   gradients, the parameter posterior.
4. **learn**: :mod:`pcfair.learn` but the fair learner: the learners and the bootstrap (which
   re-learns).
5. **patterns**: :mod:`pcfair.patterns`, the certifier and its engines.
6. **fair learner**: :mod:`pcfair.learn.fair` and :mod:`pcfair.learn.classifier` (whose
   ``fair=`` mode runs it), and the package :mod:`pcfair.learn`, which exports both on first
   use: the fair learner uses the certifier as its oracle, so it sits above the patterns.
7. **audits**: :mod:`pcfair.audits` but its command lines.
8. **front**: everything else: the API (:mod:`pcfair`), the command lines (:mod:`pcfair.cli`
   and every ``cli``/``_cli`` module of the audits, which share its argument types), the
   reports, the data sets.

Asserted here: the graph without the named exception (:data:`CONVENIENCE_EDGES`) has no cycle
anywhere, and no module imports a floor above its own but for those edges.
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx
import pytest

import pcfair

PACKAGE = Path(pcfair.__file__).resolve().parent

#: The one cycle allowed, and the arrows that close it: ``Circuit``'s convenience methods
#: (``log_marginal``/``probability``, ``conditional``, ``sample``, ``map``, ``properties``) call
#: :mod:`pcfair.inference`, which is built on the circuit. Each import sits inside its method;
#: no other arrow from the circuit core to inference or learn may exist.
CONVENIENCE_EDGES = frozenset({
    ("pcfair.circuit.circuit", "pcfair.inference.marginals"),
    ("pcfair.circuit.circuit", "pcfair.inference.properties"),
    ("pcfair.circuit.circuit", "pcfair.inference.sampling"),
})

FLOORS = ("base", "drawing", "circuit", "inference", "learn", "patterns", "fair learner",
          "audits", "front")
FAIR_LEARNER = frozenset({"pcfair.learn", "pcfair.learn.fair", "pcfair.learn.classifier"})


def floor_of(module: str) -> str:
    """The floor of a pcfair module (see the module docstring)."""
    parts = module.split(".")
    if module == "pcfair.errors" or (len(parts) == 2 and parts[1].startswith("_")):
        return "base"
    if module == "pcfair.plot":
        return "drawing"
    if module in FAIR_LEARNER:
        return "fair learner"
    if parts[-1] in ("cli", "_cli"):
        return "front"
    top = parts[1] if len(parts) > 1 else ""
    return {"circuit": "circuit", "tables": "circuit", "inference": "inference",
            "learn": "learn", "patterns": "patterns", "audits": "audits"}.get(top, "front")


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = ["pcfair", *path.relative_to(PACKAGE).with_suffix("").parts]
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _is_type_checking(test: ast.expr) -> bool:
    return ((isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
            or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"))


def _import_nodes(node: ast.AST):
    """Every import statement in ``node``, but those under ``if TYPE_CHECKING:``."""
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        yield node
    elif isinstance(node, ast.If) and _is_type_checking(node.test):
        for child in node.orelse:
            yield from _import_nodes(child)
    else:
        for child in ast.iter_child_nodes(node):
            yield from _import_nodes(child)


def import_graph() -> nx.DiGraph:
    """The package's import graph (see the module docstring)."""
    modules = _modules()

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = nx.DiGraph()
    for module, path in modules.items():
        graph.add_node(module)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in _import_nodes(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(anchor + ([node.module] if node.module else []))
                targets = [f"{base}.{alias.name}" for alias in node.names]
            for target in targets:
                found = resolve(target) if target.startswith("pcfair") else None
                if found is not None and found != module:
                    graph.add_edge(module, found)
    return graph


GRAPH = import_graph()


def _cycles(graph: nx.DiGraph) -> list[list[str]]:
    return sorted(sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1)


def _without_exception(graph: nx.DiGraph) -> nx.DiGraph:
    out = graph.copy()
    out.remove_edges_from(CONVENIENCE_EDGES)
    return out


def test_the_graph_sees_function_level_and_relative_imports():
    assert GRAPH.has_edge("pcfair.circuit.circuit", "pcfair.inference.marginals")  # in a method
    assert GRAPH.has_edge("pcfair.patterns.uncertainty", "pcfair.learn.bootstrap")
    assert GRAPH.has_edge("pcfair.audits.structured_regression.metrics",  # ``from .variance``
                          "pcfair.audits.structured_regression.variance")
    assert not GRAPH.has_edge("pcfair.circuit.circuit", "pcfair.tables.recipe")  # TYPE_CHECKING
    assert len(GRAPH) > 100


def test_the_named_exception_is_the_one_cycle_and_it_is_as_named():
    # every arrow from the circuit core to inference is one of the convenience methods'
    core_to_inference = {(a, b) for a, b in GRAPH.edges
                         if floor_of(a) == "circuit" and floor_of(b) == "inference"}
    assert core_to_inference == CONVENIENCE_EDGES
    cycle = next(c for c in _cycles(GRAPH) if "pcfair.circuit.circuit" in c)
    assert {b for _, b in CONVENIENCE_EDGES} <= set(cycle)


def test_floors_point_down():
    rank = {f: i for i, f in enumerate(FLOORS)}
    up = sorted((a, b) for a, b in GRAPH.edges
                if rank[floor_of(b)] > rank[floor_of(a)] and (a, b) not in CONVENIENCE_EDGES)
    assert up == []


def test_plot_only_draws():
    """The drawing floor imports the base alone: no engine, result or audit."""
    assert {b for b in GRAPH.successors("pcfair.plot")} <= {
        m for m in GRAPH if floor_of(m) == "base"}
    assert GRAPH.has_edge("pcfair.patterns.results", "pcfair.plot")  # the .plot() method


def test_the_tables_sit_below_the_readers():
    assert GRAPH.has_edge("pcfair.circuit.io.json_io", "pcfair.tables.recipe")
    assert not any(floor_of(b) not in ("base", "circuit")
                   for m in GRAPH if m.startswith("pcfair.tables") for b in GRAPH.successors(m))


def test_no_import_cycles_package_wide():
    """No cycle anywhere but the named exception (issue 37)."""
    assert _cycles(_without_exception(GRAPH)) == []
