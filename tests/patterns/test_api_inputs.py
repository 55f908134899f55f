"""What the certifier accepts as a model (#18): a circuit, a file path, a fitted PCClassifier;
anything else is a TypeError that says what is accepted. And both disparate-impact forms."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pcfair

ROOT = Path(__file__).resolve().parents[2]
COMPAS = ROOT / "circuits" / "compas_clt.json"
D, S = "ScoreText_", ["Ethnic_Code_Text_", "MaritalStatus_", "Sex_", "Age"]


def test_a_path_and_a_circuit_give_the_same_certificate():
    by_path = pcfair.certify(str(COMPAS), D, S, 0.05)
    by_circuit = pcfair.certify(pcfair.load(COMPAS), D, S, 0.05)
    assert by_path.fair is by_circuit.fair is False
    assert by_path.max_abs_score == by_circuit.max_abs_score
    assert pcfair.find_patterns(COMPAS, D, S, 0.05, count_only=True).count == 2356


def test_a_fitted_classifier_is_certified_through_its_circuit():
    rng = np.random.default_rng(0)
    X = pd.DataFrame({"s": rng.integers(0, 2, 400), "a": rng.integers(0, 2, 400)})
    y = (X["s"] ^ (rng.random(400) < 0.2)).astype(int)
    clf = pcfair.PCClassifier().fit(X, y.rename("approved"))
    assert clf.target_ == "approved"  # the decision is named after y
    cert = pcfair.certify(clf, "approved", ["s"], 0.05)
    assert cert.fair is pcfair.certify(clf.circuit_, clf.target_, ["s"], 0.05).fair


@pytest.mark.parametrize("model, hint", [(3.0, ""), (pcfair.PCClassifier(), "fit it first")])
def test_anything_else_is_a_type_error_saying_what_is_accepted(model, hint):
    with pytest.raises(TypeError, match="a pcfair Circuit, a model file path or a fitted "
                                        f"PCClassifier.*{hint}"):
        pcfair.certify(model, D, S, 0.05)


def test_both_disparate_impact_forms():
    m = pcfair.fairness_metrics(pcfair.load(COMPAS), D, S)
    assert m.disparate_impact_ratio == pytest.approx(1 - m.di)
    assert 0 < m.disparate_impact_ratio <= 1
    assert m.to_dict()["disparate_impact_ratio"] == m.disparate_impact_ratio


@pytest.mark.parametrize("engine", ["auto", "search", "lattice"])
@pytest.mark.parametrize("options, message", [
    ({"kind": "topk", "rank_by": "size"}, "rank_by must be one of"),
    ({"kind": "topk", "k": 0}, "k must be at least 1"),
    ({"kind": "best"}, "kind must be one of"),
    ({"time_limit": -1}, "time_limit must be a positive number of seconds or 0"),
    ({"time_limit": "5"}, "time_limit must be a positive number of seconds or 0"),
    ({"n_jobs": 0}, "n_jobs must be a positive integer or -1"),
])
def test_options_are_checked_once_at_the_edge_whatever_the_engine(engine, options, message):
    """The API checks what is asked before any engine runs (issue 37, item 2): the same
    refusal for every engine, since none checks again."""
    with pytest.raises(pcfair.OptionError, match=message):
        pcfair.find_patterns(COMPAS, D, S, 0.05, engine=engine, **options)


def test_a_time_limit_of_zero_is_an_immediate_deadline():
    found = pcfair.find_patterns(COMPAS, D, S, 0.05, engine="search", time_limit=0)
    assert not found.complete
    cert = pcfair.certify(COMPAS, D, S, 0.9, engine="search", time_limit=0)
    assert cert.fair is None and not cert.complete
