"""The discrimination oracle (pcfair.patterns.oracle): patterns, constraints, caching."""

import doctest
from pathlib import Path

import numpy as np
import pytest

import pcfair
import pcfair.patterns.oracle as oracle_module
from _pcgen import random_psdd
from pcfair import DiscriminationOracle
from pcfair.patterns import find_patterns

CIRCUITS = Path(__file__).resolve().parents[2] / "circuits"
COMPAS_SENSITIVE = ["Ethnic_Code_Text_", "MaritalStatus_", "Sex_", "Age"]
H = 1e-6


@pytest.fixture(scope="module")
def compas():
    return pcfair.load(CIRCUITS / "compas_clt.json")


def _texts(patterns):
    return [(p.text(), round(p.score, 12)) for p in patterns]


@pytest.mark.parametrize("rank_by", ["divergence", "discrimination"])
@pytest.mark.parametrize("delta", [0.05, 0.1, 0.2])
def test_oracle_patterns_are_the_certifier_top_k(compas, rank_by, delta):
    found = DiscriminationOracle("ScoreText_", COMPAS_SENSITIVE, delta, rank_by=rank_by,
                                 k=7)(compas)
    top = find_patterns(compas, "ScoreText_", COMPAS_SENSITIVE, delta, kind="topk", k=7,
                        rank_by=rank_by)
    assert _texts(c.pattern for c in found.constraints) == _texts(top)
    assert found.fair is False and found.certificate is None and found.complete


@pytest.mark.parametrize("seed", range(4))
def test_oracle_matches_both_engines_on_random_circuits(seed):
    rng = np.random.default_rng(seed)
    pc = random_psdd(rng, [2, 2, 3, 2, 2], zeros=False)
    for engine in ("lattice", "search"):
        found = DiscriminationOracle("x0", ["x1", "x2"], 0.02, k=5, engine=engine)(pc)
        top = find_patterns(pc, "x0", ["x1", "x2"], 0.02, kind="topk", k=5,
                            rank_by="divergence", engine=engine)
        assert _texts(c.pattern for c in found.constraints) == _texts(top)


def test_constraint_values_and_gradients(compas):
    found = DiscriminationOracle("ScoreText_", COMPAS_SENSITIVE, 0.05, k=5)(compas)
    theta = found.theta
    for c in found.constraints:
        value, grad = c.value_and_grad()
        assert value == pytest.approx(c.pattern.score, abs=1e-12)
        fd = np.array([(c.value(theta + H * e) - c.value(theta - H * e)) / (2 * H)
                       for e in np.eye(len(theta))])
        np.testing.assert_allclose(grad, fd, atol=1e-7)
        # values at other parameters agree with the certifier on that circuit
        moved = theta + 0.1 * np.sin(np.arange(len(theta)))
        other = find_patterns(found.parameters.circuit(moved), "ScoreText_", COMPAS_SENSITIVE,
                              0.0, kind="all", rank_by="discrimination")
        match = [p for p in other if p.x == c.pattern.x and p.y == c.pattern.y]
        assert c.value(moved) == pytest.approx(match[0].score, abs=1e-12)
        ineq, jac = c.inequalities(margin=0.01)
        np.testing.assert_allclose(ineq, [0.04 - value, 0.04 + value])
        np.testing.assert_allclose(jac, np.vstack([-grad, grad]))


def test_second_call_reuses_the_compiled_structure(compas):
    oracle = DiscriminationOracle("ScoreText_", COMPAS_SENSITIVE, 0.05)
    first = oracle(compas)
    assert oracle.cache_info() == {"plans": 1, "hits": 0, "misses": 1}
    reparam = first.parameters.circuit(first.theta + 0.05 * np.cos(np.arange(len(first.theta))))
    second = oracle(reparam)
    assert oracle.cache_info() == {"plans": 1, "hits": 1, "misses": 1}
    assert second.parameters.plan is first.parameters.plan
    oracle(pcfair.load(CIRCUITS / "compas_clt.json"))  # a new object: found by its digest
    assert oracle.cache_info() == {"plans": 1, "hits": 2, "misses": 1}


def test_fair_circuit_gets_a_complete_certificate(compas):
    found = DiscriminationOracle("ScoreText_", COMPAS_SENSITIVE, 0.25)(compas)
    assert found.fair is True and found.constraints == []
    assert found.certificate.fair and found.certificate.complete
    assert len(found.to_frame()) == 0


def test_to_frame_and_counts(compas):
    found = DiscriminationOracle("ScoreText_", COMPAS_SENSITIVE, 0.05, k=3,
                                 count_patterns=True)(compas)
    frame = found.to_frame()
    assert list(frame["x"]) == [c.pattern.text().split(" | ")[0] for c in found.constraints]
    assert {"score", "divergence", "delta_bound", "gradient_norm"} <= set(frame.columns)
    assert (frame["gradient_norm"] > 0).all()
    total = find_patterns(compas, "ScoreText_", COMPAS_SENSITIVE, 0.05, count_only=True).count
    assert found.count == total


def test_search_engine_runs_stopped_by_the_time_limit():
    """German (21 features) goes to branch and bound: a stopped run still yields constraints,
    and one that found nothing is neither fair nor unfair."""
    german = pcfair.load(CIRCUITS / "german_clt.json")
    sens = ["age", "foreign_worker", "sex", "marital_status"]
    found = DiscriminationOracle("loan_status", sens, 0.1, k=3, time_limit=3)(german)
    assert found.patterns.engine == "search" and not found.complete
    assert found.fair is False and 1 <= len(found.constraints) <= 3
    for c in found.constraints:
        assert c.value() == pytest.approx(c.pattern.score, abs=1e-12)
        assert abs(c.value()) > 0.1


def test_an_empty_top_k_is_settled_by_a_certification(monkeypatch):
    """A top-k run cut before its first pattern: the certification (first witness) runs with
    the time left and its witness becomes the one constraint; where it is cut too, the call
    is neither fair nor unfair."""
    german = pcfair.load(CIRCUITS / "german_clt.json")
    sens = ["age", "foreign_worker", "sex", "marital_status"]
    real_find, real_certify = oracle_module.find_patterns, oracle_module.certify

    def cut(*args, **kwargs):
        return real_find(*args, **{**kwargs, "time_limit": 1e-9})

    monkeypatch.setattr(oracle_module, "find_patterns", cut)
    found = DiscriminationOracle("loan_status", sens, 0.1, time_limit=5)(german)
    assert len(found.patterns) == 0 and not found.complete
    assert found.fair is False and found.certificate.fair is False
    (c,) = found.constraints
    assert c.pattern == found.certificate.witness
    assert abs(c.value()) > 0.1 and c.value() == pytest.approx(c.pattern.score, abs=1e-12)
    assert list(found.to_frame()["score"]) == [c.pattern.score]

    monkeypatch.setattr(oracle_module, "certify",
                        lambda *a, **kw: real_certify(*a, **{**kw, "time_limit": 1e-9}))
    nothing = DiscriminationOracle("loan_status", sens, 0.1, time_limit=5)(german)
    assert nothing.fair is None and nothing.constraints == []
    assert nothing.certificate.fair is None and not nothing.certificate.complete


def test_bad_arguments():
    with pytest.raises(ValueError, match="rank_by"):
        DiscriminationOracle("d", ["s"], 0.1, rank_by="size")
    with pytest.raises(ValueError, match="k must be"):
        DiscriminationOracle("d", ["s"], 0.1, k=0)
    with pytest.raises(ValueError, match="delta"):
        DiscriminationOracle("d", ["s"], 1.5)


def test_examples():
    result = doctest.testmod(oracle_module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
