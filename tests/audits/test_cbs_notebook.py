"""The CBS section of the audits notebook runs top to bottom (slow; needs ../shared/data)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
from conftest import SHARED_DATA, requires_data

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "src" / "04_audits_cbs.py"


@pytest.mark.slow
@requires_data()
def test_cbs_notebook_section_runs(monkeypatch):
    monkeypatch.setenv("PCFAIR_DATA", str(SHARED_DATA))
    ns = runpy.run_path(str(NOTEBOOK))
    assert ns["fpr"].subgroup == {"sex": ["Male"]}
    assert len(ns["both"]) == 40
    acc = ns["acc"].groupby(["injection", "scan"]).jaccard.mean()
    assert acc[("mu_sep", "separation, recommendations")] >= 0.8
    assert acc[("mu_suf", "sufficiency, probabilities")] >= 0.8
