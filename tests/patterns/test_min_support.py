"""``min_support``: patterns with ``P(x, y)`` below it are set aside, the same way by every
engine, and counted separately by the lattice engine."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pcfair
from _pcgen import random_psdd, rare_witness_model
from pcfair.cli import main

ROOT = Path(__file__).resolve().parents[2]
COMPAS = ROOT / "circuits" / "compas_clt.json"
D, S = "ScoreText_", ["Ethnic_Code_Text_", "MaritalStatus_", "Sex_", "Age"]


@pytest.mark.parametrize("support", [0.001, 0.01, 0.05])
def test_engines_agree_and_the_counts_add_up(support):
    pc = pcfair.load(COMPAS)
    every = pcfair.find_patterns(pc, D, S, 0.05, engine="lattice")
    dense = pcfair.find_patterns(pc, D, S, 0.05, engine="lattice", min_support=support)
    search = pcfair.find_patterns(pc, D, S, 0.05, engine="search", min_support=support)
    kept = {(p.text()) for p in every if p.probability >= support}
    assert {p.text() for p in dense} == {p.text() for p in search} == kept
    assert dense.stats["set_aside"] == every.count - len(kept) > 0
    cert = pcfair.certify(pc, D, S, 0.05, engine="lattice", min_support=support)
    assert cert.witness.probability >= support
    assert cert.max_abs_score == pytest.approx(max(p.abs_score for p in every
                                                   if p.probability >= support))


def test_summaries_and_census_use_only_supported_patterns():
    rng = np.random.default_rng(4)
    pc = random_psdd(rng, [2, 2, 3, 2], zeros=False)
    full = pcfair.pattern_census(pc, "x0", ["x1", "x2"], deltas=(0.0, 0.05), min_support=0.0)
    cut = pcfair.pattern_census(pc, "x0", ["x1", "x2"], deltas=(0.0, 0.05), min_support=0.02)
    assert (cut["patterns"] + cut["set_aside"] == full["patterns"]).all()
    front = pcfair.find_patterns(pc, "x0", ["x1", "x2"], 0.05, kind="pareto", min_support=0.02)
    assert all(p.probability >= 0.02 for p in front)
    assert len(front) == cut["pareto"].iloc[1]


def test_cli_option(capsys):
    assert main(["certify", str(COMPAS), "--decision", D, "--sensitive", ",".join(S),
                 "--delta", "0.05", "--min-support", "0.01"]) == 1
    out = capsys.readouterr().out
    assert "set aside: 1,616 pattern(s)" in out
    assert main(["certify", str(COMPAS), "--decision", D, "--sensitive", ",".join(S),
                 "--delta", "0.05", "--min-support", "1.5"]) == 2


@pytest.mark.parametrize("engine", ["auto", "lattice", "search"])
def test_the_supported_witness_is_the_strongest_pattern_that_describes_somebody(engine):
    """Issue 36: beside a witness of P(x, y) = 3e-7, the pattern offered is the largest |Δ|
    among those with P(x, y) >= 1e-4, not the first one an engine meets (the search's first
    supported witness here is s=0, Δ = 0.067; the strongest is s=1 | w=0, Δ = 0.1875)."""
    from pcfair.patterns.api import supported_witness

    pc = rare_witness_model()
    every = pcfair.find_patterns(pc, "d", ["s"], 0.05, engine="lattice")
    best = max(p.abs_score for p in every if p.probability >= 1e-4)
    rare = pcfair.certify(pc, "d", ["s"], 0.05, engine="lattice")
    assert rare.witness.probability < 1e-4
    found = supported_witness(pc, "d", ["s"], 0.05, rare, engine=engine)
    assert found.fair is False and found.witness.probability >= 1e-4
    assert found.witness.abs_score == pytest.approx(best)
