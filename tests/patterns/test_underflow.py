"""Patterns whose probability underflows (issue 40): every engine gives the right verdict or an
incomplete result that names the lattice's floor, never "fair" while a pattern exists and
never a witness made of rounding noise.

The two models of the issue are trees over ``d, z, s`` with the decision at the root and
``P(z = 1) = 1e-170`` under both decision values:

- ``noticed``: ``P(s = 1 | z = 1)`` is 1e-169 under ``d = 1`` and 1e-170 under ``d = 0``, so
  ``Δ(s=1 | z=1) = 10/11 − 1/2 = +0.409`` at ``P(x, y) ≈ 5.5e-340`` (below the smallest
  double): every engine used to certify it fair;
- ``noise``: ``P(s = 1 | z = 1) = 10^-153.3`` under both, prior 0.2: every Δ is 0, and the
  lattice used to report ``s=1 | z=1`` with Δ = −0.2 at ``P(x, y) = 5e-324``.

The oracle is :func:`_pattern_oracle.pattern_arrays_log` (masses as log-sum-exps of the joint
table's log-probabilities). The random family with such probabilities, checked on every kind,
is in ``test_random_models.py`` (``underflow``).
"""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import _pattern_oracle as oracle  # noqa: E402
import _pcgen as gen  # noqa: E402
import pcfair  # noqa: E402
from pcfair.circuit import CircuitBuilder  # noqa: E402
from pcfair.patterns import certify, find_patterns  # noqa: E402
from pcfair.patterns.bounds import NaiveBayesBound, QuotientBound, TreeBound  # noqa: E402
from pcfair.patterns.lattice import probability_floor  # noqa: E402
from pcfair.patterns.scores import PROBABILITY_FLOOR, pattern_divergences  # noqa: E402

ENGINES = ("lattice", "auto", "search", "tree_search", "python_search")
PCFAIR = Path(sys.executable).with_name("pcfair")


def tree_model(prior: float, pz1: float, ps1_d1: float, ps1_d0: float, ps1_z0: float = 0.3):
    """``d → z → s``: ``P(d = 1) = prior``, ``P(z = 1 | d) = pz1``, ``P(s = 1 | z = 1, d)``
    as given (logs, so that no weight is rounded), ``P(s = 1 | z = 0) = ps1_z0``."""
    b = CircuitBuilder({"d": [0, 1], "z": [0, 1], "s": [0, 1]})

    def branch(ps1):
        s_z1 = b.categorical("s", log_probs=[math.log1p(-ps1), math.log(ps1)])
        s_z0 = b.categorical("s", [1 - ps1_z0, ps1_z0])
        return b.decision([(b.indicator("z", 1), s_z1, math.log(pz1)),
                           (b.indicator("z", 0), s_z0, math.log1p(-pz1))], log=True)

    return b.build(b.decision([(b.indicator("d", 1), branch(ps1_d1), prior),
                               (b.indicator("d", 0), branch(ps1_d0), 1 - prior)]))


NOTICED = tree_model(0.5, 1e-170, 1e-169, 1e-170)
NOISE = tree_model(0.2, 1e-170, 10 ** -153.3, 10 ** -153.3)
WITNESS = ({"s": 1}, {"z": 1})


def _oracle(pc):
    return oracle.pattern_arrays_log(pc, [2, 2, 2], 0, [2], 1)


def test_the_oracle_sees_both_models_as_the_issue_describes():
    a = _oracle(NOTICED)
    i = a.keys.index((((2, 1),), ((1, 1),)))
    assert a.defined[i] and a.delta[i] == pytest.approx(10 / 11 - 0.5, abs=1e-12)
    assert a.log_p_xy[i] < -330 * math.log(10)  # below the smallest double
    b = _oracle(NOISE)
    assert np.nanmax(np.abs(b.delta)) < 1e-12 and b.defined.all()


@pytest.mark.parametrize("engine", ENGINES)
def test_a_pattern_below_the_double_range_is_never_certified_away(engine):
    cert = certify(NOTICED, "d", ["s"], 0.05, engine=engine)
    assert not (cert.fair is True), (engine, cert)
    if engine == "lattice":  # linear tables: the pattern is below its floor, and it says so
        assert cert.fair is None and not cert.complete
        assert cert.stats["probability_floor"] == PROBABILITY_FLOOR
        assert not cert.max_abs_exact
        return
    assert cert.fair is False and cert.complete
    w = cert.witness
    assert (w.x, w.y) == WITNESS
    assert w.score == pytest.approx(10 / 11 - 0.5, abs=1e-12)
    a = _oracle(NOTICED)
    assert w.log_probability == pytest.approx(float(np.max(a.log_p_xy[a.defined & (
        np.abs(np.nan_to_num(a.delta)) > 0.05)])), rel=1e-12)
    assert w.probability == 0.0 and w.probability_text(2) == "5.5e-340"


@pytest.mark.parametrize("engine", ENGINES)
def test_rounding_noise_below_the_double_range_is_no_witness(engine):
    cert = certify(NOISE, "d", ["s"], 0.05, engine=engine)
    assert cert.fair is not False, (engine, cert.witness)
    if engine == "lattice":
        assert cert.fair is None and "probability_floor" in cert.stats
    else:
        assert cert.fair is True and cert.complete


@pytest.mark.parametrize("engine", ["search", "tree_search", "python_search", "auto"])
@pytest.mark.parametrize("kind", ["all", "topk"])
def test_the_searches_list_and_rank_patterns_below_the_double_range(engine, kind):
    ps = find_patterns(NOTICED, "d", ["s"], 0.05, kind=kind, k=3, engine=engine)
    assert ps.complete and [(p.x, p.y) for p in ps] == [WITNESS]
    assert ps[0].log_probability < -330 * math.log(10)
    assert "probability_floor" not in ps.stats


def test_the_lattice_names_its_floor_in_every_kind():
    for kind in ("all", "topk", "pareto", "maximal", "minimal"):
        ps = find_patterns(NOTICED, "d", ["s"], 0.05, kind=kind, engine="lattice")
        assert not ps.complete and ps.stats["probability_floor"] == PROBABILITY_FLOOR, kind
        assert ps.stats["smallest_probability_log10"] < -300
    assert find_patterns(NOTICED, "d", ["s"], 0.05, kind="minimal").complete is False


def test_max_abs_is_exact_only_when_every_pattern_was_scored():
    """The issue's third case: a model certified fair by the lattice with a maximum flagged
    exact while the largest |Δ| sits at a pattern below the double range. Here the largest
    |Δ| (0.409, at 5.5e-340) is far above every other (at most 1e-12): certified at δ = 0.3,
    the model is unfair; at δ = 0.5 it is fair, and no engine calls a maximum below 0.409
    exact."""
    for delta, fair in ((0.3, False), (0.5, True)):
        for engine in ENGINES:
            cert = certify(NOTICED, "d", ["s"], delta, engine=engine, exact_max=True)
            assert cert.fair is not (not fair), (engine, delta)
            if cert.max_abs_exact and cert.max_abs_score is not None:
                assert cert.max_abs_score == pytest.approx(10 / 11 - 0.5, abs=1e-9), engine


def test_divergences_of_masses_below_the_double_range():
    """At δ = 0 a divergence takes ``log P(d, y, ¬x)`` itself: 1e-312 read as 0 would make it
    infinite, and P(x, y)·KL of a pattern below the double range is 0.0 but not NaN."""
    pc = tree_model(0.5, 1e-150, 1e-160, 0.4)
    a = _oracle(pc)
    pats = [(dict((k,)), dict(v)) for (k,), v in ((x, y) for x, y in a.keys) if len(k) == 2]
    index = [a.keys.index(((tuple(x.items())[0],), tuple(sorted(y.items())))) for x, y in pats]
    for delta in (0.0, 0.01):
        got = pattern_divergences(pc, 0, 1, pats, a.delta[index], delta)
        want = a.divergence(delta)[index]
        assert not np.isnan(got).any()
        np.testing.assert_allclose(got, want, rtol=1e-7, atol=1e-10)


def test_the_floor_follows_the_smallest_probability():
    assert probability_floor(tree_model(0.5, 1e-100, 1e-100, 0.5)) == 0.0  # 1e-200: exact
    assert probability_floor(NOTICED) == PROBABILITY_FLOOR
    # a constant factor on the circuit changes nothing
    assert probability_floor(gen.shift_root_logw(NOTICED, -5000.0)) == PROBABILITY_FLOOR
    assert probability_floor(gen.shift_root_logw(tree_model(0.5, 1e-100, 1e-100, 0.5),
                                                 700.0)) == 0.0


# ----------------------------------------------------------------------------- the bounds
def _extensions(a, x: dict, y: dict, free: list[int], sens: set) -> np.ndarray:
    """Mask of the oracle's patterns that extend the search node ``(x, y)`` with ``free``
    undecided (every other variable excluded: absent)."""
    mask = np.ones(len(a.keys), bool)
    for i, (kx, ky) in enumerate(a.keys):
        px, py = dict(kx), dict(ky)
        if any(px.get(v) != k for v, k in x.items()) or any(py.get(v) != k for v, k in y.items()):
            mask[i] = False
            continue
        for v in set(px) | set(py):
            if v not in x and v not in y and v not in free:
                mask[i] = False
    return mask


def _bound_of(kind: str, pc, d: int, fav: int):
    """The bound ``kind`` of ``pc`` (a naive Bayes with a zero parameter, which the naive-Bayes
    bound refuses, gets the tree bound, as the engines give it)."""
    if kind == "naive_bayes":
        nb = NaiveBayesBound.from_circuit(pc, d, fav)
        if nb is not None:
            return nb
    if kind in ("tree", "naive_bayes"):
        return TreeBound.from_circuit(pc, d, fav)
    return QuotientBound(pc, d, fav)


def _model(kind: str, rng, cards, d):
    draw = gen.param_drawer(rng, "underflow", tie_rate=0.1)
    if kind == "tree":
        return gen.tree_bn_x(rng, cards, draw, root=d)
    if kind == "naive_bayes":
        return gen.naive_bayes_x(rng, cards, d, draw)
    return gen.random_psdd_x(rng, cards, draw)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["tree", "naive_bayes", "quotient"]),
       st.integers(3, 5), st.sampled_from([0.0, 700.0, -3000.0]))
def test_bounds_cover_every_extension_below_the_double_range(seed, kind, n, shift):
    """Each search bound at random nodes of models with parameters of 1e-100 to 1e-220 (and a
    constant factor of e^±: log-normalisers far from 0): every defined extension has
    ``|Δ| ≤ ub`` (to 1e-9), and a node declared impossible has no defined extension; the
    patterns' probabilities reach 1e-400 and below."""
    rng = np.random.default_rng(seed)
    cards = [2] + [int(c) for c in rng.integers(2, 4, n - 1)]
    pc = _model(kind, rng, cards, 0)
    if shift:
        pc = gen.shift_root_logw(pc, shift) or pc
    bound = _bound_of(kind, pc, 0, 1)
    assert bound is not None
    sens = {v for v in range(1, n) if rng.random() < 0.5} or {1}
    a = oracle.pattern_arrays_log(pc, cards, 0, sorted(sens), 1)
    feats = list(range(1, n))
    for _ in range(12):
        x, y, free = {}, {}, []
        for v in rng.permutation(feats):
            v, r = int(v), rng.random()
            if r < 0.45:
                free.append(v)
            elif r < 0.6 and v in sens:
                x[v] = int(rng.integers(cards[v]))
            elif r < 0.85:
                y[v] = int(rng.integers(cards[v]))
        ext = _extensions(a, x, y, free, sens) & a.defined
        got = bound.node(x, y, tuple(free), sens)
        if got is None:
            assert not ext.any(), (kind, x, y, free)
            continue
        if ext.any():
            worst = float(np.max(np.abs(a.delta[ext])))
            assert worst <= got.ub + 1e-9, (kind, x, y, free, worst, got.ub)


def test_cli_prints_probabilities_below_the_double_range_and_names_the_floor(tmp_path):
    path = tmp_path / "noticed.json"
    pcfair.save(NOTICED, path)
    args = [str(PCFAIR), "certify", str(path), "--decision", "d", "--sensitive", "s",
            "--delta", "0.05"]
    run = subprocess.run(args, capture_output=True, text=True, timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "P(x,y) = 5.5e-340" in run.stdout
    run = subprocess.run(args + ["--engine", "lattice"], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 3, run.stdout + run.stderr
    assert "INCOMPLETE" in run.stdout and "P(x,y) < 1e-290 were not scored" in run.stdout


def test_reports_print_the_probability_and_name_the_floor(tmp_path):
    out = tmp_path / "auto.md"
    pcfair.report(NOTICED, "d", ["s"], 0.05, out=out, format="markdown")
    page = out.read_text()
    assert "UNFAIR" in page and "| witness P(x, y) | 5.5e-340 |" in page
    assert "P(x, y) = 0," not in page  # a defined pattern is never shown at probability 0
    out = tmp_path / "lattice.md"
    pcfair.report(NOTICED, "d", ["s"], 0.05, out=out, format="markdown", engine="lattice")
    page = out.read_text()
    assert "INCOMPLETE" in page and "probability floor" in page
    assert "Not every pattern was scored: patterns with P(x,y) \\< 1e-290" in page
