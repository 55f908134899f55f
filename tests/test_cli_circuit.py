import json

import numpy as np
import pytest

import pcfair
from pcfair.cli import main
from conftest import SHARED_CIRCUITS, requires_shared
from _pcgen import random_mixture


@requires_shared
def test_check_json_keys(capsys):
    assert main(["check", str(SHARED_CIRCUITS / "little_4var.psdd"), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    for key in ("smooth", "decomposable", "deterministic", "structured_decomposable",
                "num_nodes", "num_edges", "num_variables", "problems"):
        assert key in data
    assert data["smooth"] and data["deterministic"] and data["num_variables"] == 4


def test_check_reports_problems_with_counterexample(tmp_path, capsys):
    mix = random_mixture(np.random.default_rng(0), [2, 2])
    pcfair.save(mix, tmp_path / "mix.json")
    assert main(["check", str(tmp_path / "mix.json")]) == 0
    out = capsys.readouterr().out
    assert "deterministic" in out and "counterexample" in out


@requires_shared
def test_marginal(capsys):
    assert main(["marginal", str(SHARED_CIRCUITS / "little_4var.psdd"), "--evidence", "1=0,3=1",
                 "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["probability"] == pytest.approx(0.4)


def test_bad_input_exit_code(tmp_path, capsys):
    bad = tmp_path / "bad.psdd"
    bad.write_text("psdd 1\nQ 0 0 1\n")
    assert main(["check", str(bad)]) == 2
    assert "bad.psdd:2" in capsys.readouterr().err
    assert main(["check", str(tmp_path / "missing.psdd")]) == 2
    good = tmp_path / "m.json"
    pcfair.save(random_mixture(np.random.default_rng(0), [2, 2]), good)
    assert main(["marginal", str(good), "--evidence", "zz=1"]) == 2
