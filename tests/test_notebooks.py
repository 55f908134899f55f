"""Every notebook is assembled from its sources and executed headlessly; any error fails."""

import os

import pytest

from conftest import SHARED_DATA, requires_shared

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")
pytest.importorskip("matplotlib")


def _build():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "notebooks" / "build.py"
    spec = importlib.util.spec_from_file_location("nb_build", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_committed_notebooks_match_their_sources():
    build = _build()
    for name in build.NOTEBOOKS:
        committed = nbformat.read(build.HERE / name, as_version=4)
        fresh = build.assemble(name)
        assert [c.source for c in committed.cells] == [c.source for c in fresh.cells], (
            f"{name} is stale: run python notebooks/build.py")


@requires_shared
@pytest.mark.parametrize("name", ["04_audits.ipynb"])
def test_notebook_executes(name, monkeypatch):
    monkeypatch.setenv("PCFAIR_DATA", str(SHARED_DATA))
    build = _build()
    nb = build.execute(build.assemble(name), timeout=300)
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
    assert os.environ["PCFAIR_DATA"] == str(SHARED_DATA)
