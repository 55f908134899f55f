"""What the patterns package shows: every module without a leading underscore says what it
offers in ``__all__`` (names it defines or re-exports), and no module of pcfair outside the
package reaches past that: no name outside a module's ``__all__``, no private module.
Read from the source with :mod:`ast`."""

import ast
from pathlib import Path

import pytest

import pcfair

PACKAGE = Path(pcfair.__file__).parent
PATTERNS = PACKAGE / "patterns"
PUBLIC = sorted(p for p in PATTERNS.glob("*.py") if not p.name.startswith("_"))


def _all_of(path: Path) -> list[str] | None:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "__all__"
                                                for t in node.targets):
            return list(ast.literal_eval(node.value))
    return None


@pytest.mark.parametrize("path", PUBLIC, ids=lambda p: p.name)
def test_every_public_module_says_what_it_offers(path):
    names = _all_of(path)
    assert names is not None, f"{path.name} has no __all__"
    module = __import__(f"pcfair.patterns.{path.stem}", fromlist=["_"])
    assert [n for n in names if not hasattr(module, n)] == []
    assert len(set(names)) == len(names)


def _reach_ins():
    offered = {f"pcfair.patterns.{p.stem}": set(_all_of(p) or ()) for p in PUBLIC}
    offered["pcfair.patterns"] = set(_all_of(PATTERNS / "__init__.py"))
    for path in sorted(PACKAGE.rglob("*.py")):
        if PATTERNS in path.parents:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and node.module
                    and node.module.startswith("pcfair.patterns")):
                continue
            rel = path.relative_to(PACKAGE.parent).as_posix()
            if node.module not in offered:
                yield f"{rel}: imports the private module {node.module}"
                continue
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                if node.module == "pcfair.patterns" and submodule in offered:
                    continue
                if alias.name not in offered[node.module]:
                    yield f"{rel}: {node.module}.{alias.name} is not in its __all__"


def test_no_module_outside_reaches_past_the_front():
    assert list(_reach_ins()) == []
