"""Every notebook is assembled from its sources and executed headlessly; any error fails.

Notebooks that read data (``$PCFAIR_DATA``) skip with a reason when ``../shared`` is absent;
``02_search_vs_sampling`` needs only the shipped circuits.
"""

import importlib.util
import os
from pathlib import Path

import pytest
from conftest import SHARED_DATA, requires_data

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")

#: Notebooks that load data from ../shared/data (the others use only circuits/).
NEEDS_DATA = {"01_certify_compas.ipynb", "03_fair_learning.ipynb", "04_audits.ipynb"}
#: Seconds allowed per cell; the audits notebook has the longest cells.
TIMEOUTS = {"04_audits.ipynb": 300}


def _build():
    path = Path(__file__).resolve().parents[1] / "notebooks" / "build.py"
    spec = importlib.util.spec_from_file_location("nb_build", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


BUILD = _build()


def _committed(name: str):
    path = BUILD.HERE / name
    assert path.is_file(), f"{name} is not built: run python notebooks/build.py {name}"
    return nbformat.read(path, as_version=4)


def test_committed_notebooks_match_their_sources():
    for name in BUILD.NOTEBOOKS:
        committed = _committed(name)
        fresh = BUILD.assemble(name)
        assert [c.source for c in committed.cells] == [c.source for c in fresh.cells], (
            f"{name} is stale: run python notebooks/build.py {name}")


def test_notebooks_are_committed_executed():
    for name in BUILD.NOTEBOOKS:
        nb = _committed(name)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert code and all(c.get("execution_count") for c in code), (
            f"{name} is not executed: run python notebooks/build.py {name}")


def test_the_certifier_notebooks_are_listed():
    assert {"01_certify_compas.ipynb", "02_search_vs_sampling.ipynb",
            "04_audits.ipynb"} <= set(BUILD.NOTEBOOKS)
    assert set(BUILD.NOTEBOOKS) <= set(BUILD.ALL_NOTEBOOKS)


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=requires_data()) if name in NEEDS_DATA else name
    for name in BUILD.NOTEBOOKS])
def test_notebook_executes(name, monkeypatch):
    if SHARED_DATA.is_dir():
        monkeypatch.setenv("PCFAIR_DATA", str(SHARED_DATA))
    nb = BUILD.execute(BUILD.assemble(name), timeout=TIMEOUTS.get(name, 120))
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
    if name in NEEDS_DATA:
        assert os.environ["PCFAIR_DATA"] == str(SHARED_DATA)
