"""Every engine choice goes through the engine table (:mod:`pcfair.patterns.engines`): read
from the source of every module of ``pcfair`` (with :mod:`ast`), no module outside the table
and its adapters compares a string with an engine's name, and none runs an engine's entry
point of the patterns package itself."""

import ast
from pathlib import Path

import pcfair
from pcfair.patterns import engines

PACKAGE_DIR = Path(pcfair.__file__).parent
#: The table and its adapters: the only modules that may name engines and run them.
ENGINE_MODULES = {
    "pcfair/patterns/engines.py": "the table and the auto policy",
    "pcfair/patterns/_engine_base.py": "what an adapter is",
    "pcfair/patterns/_lattice_engine.py": "the lattice's adapter",
    "pcfair/patterns/_search_engine.py": "the branch-and-bound adapters",
    "pcfair/patterns/_sample_engine.py": "the sampler's adapter",
}
#: Engine entry points of the patterns package that only the adapters call.
ENTRY_POINTS = ("scan", "sample_search", "search_tree", "search_naive_bayes", "parallel_search")
#: Modules that call an entry point besides the adapters, each with its reason.
CALLERS = {
    "pcfair/patterns/lattice.py": "defines scan (and probe_cost scans chunks of it)",
    "pcfair/patterns/sampling.py": "defines sample_search",
    "pcfair/patterns/tree_search.py": "defines search_tree",
    "pcfair/patterns/naive_bayes_search.py": "defines search_naive_bayes",
    "pcfair/patterns/parallel.py": "defines parallel_search",
    "pcfair/patterns/search.py": "seeds the Python search's bound with sampler runs "
                                 "(SearchOptions.seed_runs)",
}
#: The names an engine goes by (``"auto"`` is also the default of unrelated options such as
#: ``SearchOptions.bound``, and is checked by tests/patterns/test_engine_choice.py).
ENGINE_NAMES = {*engines.ENGINE_NAMES, *engines.ENGINES} - {"auto"}


def _modules() -> dict[str, ast.AST]:
    root = PACKAGE_DIR.parent
    return {path.relative_to(root).as_posix(): ast.parse(path.read_text(encoding="utf-8"))
            for path in sorted(PACKAGE_DIR.rglob("*.py"))}


def _names_engine(node: ast.AST) -> bool:
    """A string constant that is an engine's name, or a tuple, list or set holding one."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and node.value in ENGINE_NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_engine(e) for e in node.elts)
    return False


def _comparisons(tree: ast.AST) -> list[str]:
    """``x == "lattice"``, ``x != "tree_search"``, ``x in ("lattice", ...)`` and the like."""
    return [f"line {node.lineno}: {ast.unparse(node)}" for node in ast.walk(tree)
            if isinstance(node, ast.Compare)
            and any(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops)
            and any(_names_engine(side) for side in (node.left, *node.comparators))]


def _entry_calls(tree: ast.AST) -> list[str]:
    """Calls of an entry point of ``pcfair.patterns``: by the name it was imported as
    (``from pcfair.patterns.lattice import scan``; ``scan(...)``), or as an attribute of a
    module of the package (``lattice.scan(...)``). Functions of other packages that share a
    name (the subset scanner's ``scan``) are not the patterns' engines."""
    functions, modules = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pcfair.patterns"):
            for alias in node.names:
                bound = alias.asname or alias.name
                (functions if alias.name in ENTRY_POINTS else modules).add(bound)
        elif isinstance(node, ast.Import):
            modules.update(alias.asname or alias.name for alias in node.names
                           if alias.name.startswith("pcfair.patterns"))
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        f = node.func
        if isinstance(f, ast.Name) and f.id in functions:
            found.append(f"line {node.lineno}: {f.id}(...)")
        elif (isinstance(f, ast.Attribute) and f.attr in ENTRY_POINTS
              and ast.unparse(f.value) in modules):
            found.append(f"line {node.lineno}: {ast.unparse(f)}(...)")
    return found


def test_the_checker_sees_comparisons_and_calls():
    tree = ast.parse("a == 'lattice'\nb in ('x', 'tree_search')\nc != 'dense'\nd == 'auto'\n"
                     "e == 'other'\n")
    assert len(_comparisons(tree)) == 3
    calls = ast.parse("from pcfair.patterns.lattice import scan\n"
                      "from pcfair.patterns import parallel\nimport pcfair.patterns.sampling\n"
                      "from pcfair.audits.cbs import scanner\n"
                      "scan(1)\nparallel.parallel_search(2)\n"
                      "pcfair.patterns.sampling.sample_search(3)\nscanner.scan(4)\n")
    assert _entry_calls(calls) == ["line 5: scan(...)", "line 6: parallel.parallel_search(...)",
                                   "line 7: pcfair.patterns.sampling.sample_search(...)"]


def test_allow_lists_name_existing_modules():
    modules = _modules()
    assert set(ENGINE_MODULES) <= set(modules) and set(CALLERS) <= set(modules)


def test_no_module_outside_the_table_compares_engine_names():
    offenders = {path: found for path, tree in _modules().items()
                 if path not in ENGINE_MODULES and (found := _comparisons(tree))}
    assert not offenders, f"engine names compared outside the engine table: {offenders}"


def test_no_module_outside_the_table_runs_an_engine_itself():
    offenders = {path: found for path, tree in _modules().items()
                 if path not in ENGINE_MODULES and path not in CALLERS
                 and (found := _entry_calls(tree))}
    assert not offenders, f"engines run outside the engine table: {offenders}"
