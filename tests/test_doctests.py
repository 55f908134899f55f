"""Every Examples section in the package runs as a doctest (every module, found by walking the
package, so a new module's examples are tested without being listed)."""

import doctest
import importlib
import pkgutil
import urllib.error

import pytest
from conftest import requires_data

import pcfair
from pcfair.datasets import _cache

#: Modules that cannot be imported without an optional extra, with the extra's module.
OPTIONAL = {"pcfair.patterns.executors_dask": "distributed"}

#: Modules whose examples read the public tables from the data cache.
NEEDS_DATA = {f"pcfair.datasets.{m}" for m in ("_adult", "_binarized", "_cache", "_compas",
                                               "_german", "_netfile", "preprocessing")}


def _modules() -> list[str]:
    names = [pcfair.__name__]
    for info in pkgutil.walk_packages(pcfair.__path__, prefix="pcfair."):
        if info.name.rsplit(".", 1)[-1] != "__main__":
            names.append(info.name)
    return sorted(names)


MODULES = _modules()


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    """Examples never download: a missing file is an error, not a fetch."""
    def refuse(url, timeout):
        raise urllib.error.URLError(f"network disabled in tests ({url})")

    monkeypatch.setattr(_cache, "_open_url", refuse)


def test_the_walk_finds_the_package():
    assert {"pcfair.circuit.circuit", "pcfair.patterns.api", "pcfair.circuit.derived",
            "pcfair.cli"} <= set(MODULES)
    assert len(MODULES) > 100


@pytest.mark.parametrize("name", [pytest.param(m, marks=requires_data()) if m in NEEDS_DATA
                                  else m for m in MODULES])
def test_examples(name):
    if name in OPTIONAL:
        pytest.importorskip(OPTIONAL[name])
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
