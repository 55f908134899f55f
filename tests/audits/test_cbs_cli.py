"""``pcfair audit cbs`` through ``pcfair.cli.main``."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from pcfair.cli import main


@pytest.fixture
def csv(tmp_path):
    rng = np.random.default_rng(0)
    n = 2000
    df = pd.DataFrame({
        "race": rng.choice(["A", "B"], n),
        "sex": rng.choice(["F", "M"], n),
        "age": rng.choice(["young", "old"], n),
    })
    df["y"] = (rng.random(n) < 0.4).astype(int)
    biased = (df.race == "A") & (df.sex == "M")
    df["p"] = np.clip(0.3 + 0.3 * df.y + 0.25 * biased + rng.normal(0, 0.05, n), 0.01, 0.99)
    path = tmp_path / "data.csv"
    df.to_csv(path, index=False)
    return path


BASE = ["audit", "cbs", "--sensitive", "race", "--sensitive-value", "A",
        "--covariates", "sex,age", "--outcome", "y", "--prediction", "p", "--seed", "1",
        "--restarts", "5"]


def test_cli_json_output_and_found_exit_code(csv, capsys):
    code = main([*BASE[:2], str(csv), *BASE[2:], "--definition", "fpr", "--permutations", "9",
                 "--alpha", "0.2", "--jobs", "1", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1 and out["method"] == "cbs" and out["n_scans"] == 1
    out = out["scans"][0]
    assert out["subgroup"] == {"sex": ["M"]}
    assert out["definition"] == "fpr" and out["protected"] == "race = A"
    assert out["p_value"] == pytest.approx(0.1) and out["n_permutations"] == 9


def test_cli_table_output(csv, capsys):
    code = main([*BASE[:2], str(csv), *BASE[2:], "--family", "separation", "--predictions",
                 "recommendations", "--condition-value", "0", "--permutations", "0"])
    text = capsys.readouterr().out
    assert code == 1
    assert "detected: race = A & sex = M" in text and "score" in text


def test_cli_nothing_found_exits_zero(csv, capsys):
    code = main([*BASE[:2], str(csv), *BASE[2:], "--definition", "fpr", "--direction",
                 "negative", "--penalty", "100", "--permutations", "0"])
    assert code == 0
    assert "no subgroup" in capsys.readouterr().out


def test_cli_bad_input_exits_two(csv, capsys):
    code = main([*BASE[:2], str(csv), *BASE[2:], "--outcome", "nope", "--permutations", "0"])
    assert code == 2
    assert "outcome column 'nope'" in capsys.readouterr().err
    code = main(["audit", "cbs", str(csv.parent / "missing.csv"), "--sensitive", "race",
                 "--outcome", "y", "--prediction", "p"])
    assert code == 2
    with pytest.raises(SystemExit) as exc:
        main([*BASE[:2], str(csv), *BASE[2:], "--definition", "nonsense"])
    assert exc.value.code == 2
