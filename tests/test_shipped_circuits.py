"""The circuits in circuits/ load, have the certifier's properties, and their README is true."""

import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pcfair
from pcfair.learn.clt import train_valid_split
from conftest import SHARED_DATA, requires_data

CIRCUITS = Path(__file__).resolve().parents[1] / "circuits"
TABLE = re.compile(r"^\| `(\w+)_(clt|strudel)\.psdd` / `\.json` \| \w+ \| (\d+) \| (-[\d.]+) \| (-[\d.]+) \|$")
SOURCES = {"compas": "compas_binerized.csv", "adult": "adult_binerized.csv",
           "german": "german_binerized.csv", "acs_income": "ACS_Income_binerized.csv"}


def readme_rows():
    rows = [TABLE.match(line) for line in (CIRCUITS / "README.md").read_text().splitlines()]
    return [m.groups() for m in rows if m]


def test_readme_lists_every_shipped_model():
    rows = readme_rows()
    assert len(rows) == 8
    for name, st, nodes, _, _ in rows:
        js = pcfair.load(CIRCUITS / f"{name}_{st}.json")
        ps = pcfair.load(CIRCUITS / f"{name}_{st}.psdd")
        assert js.num_nodes == ps.num_nodes == int(nodes)
        rep = ps.properties()
        assert rep.deterministic and rep.structured_decomposable and rep.smooth
        assert rep.normalized


@requires_data()
@pytest.mark.parametrize("name", list(SOURCES))
def test_readme_test_likelihoods_are_reproduced(name):
    """The .json (names and value labels of load_binarized(name, labels=True)) and the .psdd
    (0/1 codes of the upstream CSV, in its column order) give the README's test likelihood."""
    from pcfair.datasets import load_binarized

    raw = pd.read_csv(SHARED_DATA / SOURCES[name])
    labelled = load_binarized(name, labels=True).frame
    assert list(labelled.columns) == list(raw.columns)
    _, test_codes = train_valid_split(raw, 0.2, random_state=0)
    _, test = train_valid_split(labelled, 0.2, random_state=0)
    for row in readme_rows():
        if row[0] != name:
            continue
        js = pcfair.load(CIRCUITS / f"{name}_{row[1]}.json")
        assert np.mean(js.log_marginal(test)) == pytest.approx(float(row[4]), abs=2e-6)
        ps = pcfair.load(CIRCUITS / f"{name}_{row[1]}.psdd")
        codes = test_codes.to_numpy().astype(np.int32)
        assert np.mean(ps.log_marginal(codes)) == pytest.approx(float(row[4]), abs=2e-6)


def test_json_values_are_labelled_codes():
    """Every .json value is its 0/1 code or "<code> (<meaning>)", and the decision keeps 0/1."""
    decisions = {"compas": "ScoreText_", "adult": "target", "german": "loan_status",
                 "acs_income": "D"}
    for name, structure, *_ in readme_rows():
        pc = pcfair.load(CIRCUITS / f"{name}_{structure}.json")
        for var, domain in zip(pc.variables.names, pc.variables.domains):
            if var == decisions[name] or name == "acs_income":
                assert domain == (0, 1), (name, var)
            else:
                assert [d.split(" (")[0] for d in domain] == ["0", "1"], (name, var, domain)
