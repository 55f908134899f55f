"""The AVOIR section of the audits notebook runs top to bottom (percent-format source)."""

from __future__ import annotations

import os
import runpy
import time
from pathlib import Path

import pytest
from conftest import SHARED_DATA, requires_data

SOURCE = Path(__file__).resolve().parents[2] / "notebooks" / "src" / "04_audits_avoir.py"


def test_notebook_source_is_in_percent_format():
    text = SOURCE.read_text()
    assert text.startswith("# %% [markdown]")
    assert text.count("# %%") >= 10
    assert "import matplotlib" in text


@requires_data()
def test_notebook_section_runs_quickly(monkeypatch):
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    monkeypatch.setenv("PCFAIR_DATA", str(SHARED_DATA))
    start = time.perf_counter()
    namespace = runpy.run_path(str(SOURCE), run_name="__main__")
    elapsed = time.perf_counter() - start
    plt.close("all")
    assert elapsed < 60
    table = namespace["adult_table"]
    assert table.loc["optimized", "stop"] == 870 and table.loc["equal", "stop"] == 960
    assert namespace["res"].verdict is True
    assert os.environ["PCFAIR_DATA"] == str(SHARED_DATA)
