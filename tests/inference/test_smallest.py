"""The smallest positive probability of a circuit (:mod:`pcfair.inference.smallest`) against
the log-space joint table: exact for deterministic circuits, a lower bound for mixtures, at
any magnitude and under any constant factor."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import _pattern_oracle as oracle  # noqa: E402
import _pcgen as gen  # noqa: E402
from pcfair.circuit import CircuitBuilder  # noqa: E402
from pcfair.errors import NumericalError  # noqa: E402
from pcfair.inference.smallest import log_smallest_probability  # noqa: E402


def _brute(pc) -> float:
    _, logp = oracle.log_joint(pc)
    return float(logp[np.isfinite(logp)].min())


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["mixed", "underflow", "dyadic"]),
       st.sampled_from(["psdd", "clt", "nb"]), st.sampled_from([0.0, 800.0, -5000.0]))
def test_exact_for_deterministic_circuits(seed, mode, shape, shift):
    rng = np.random.default_rng(seed)
    cards = [int(c) for c in rng.integers(2, 5, int(rng.integers(2, 6)))]
    draw = gen.param_drawer(rng, mode)
    pc = (gen.random_psdd_x(rng, cards, draw) if shape == "psdd" else
          gen.tree_bn_x(rng, cards, draw) if shape == "clt" else
          gen.naive_bayes_x(rng, [2] + cards, 0, draw))
    if shift:
        pc = gen.shift_root_logw(pc, shift) or pc
    want = _brute(pc)
    assert log_smallest_probability(pc) == pytest.approx(want, rel=1e-12, abs=1e-9)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["mixed", "underflow"]))
def test_a_lower_bound_for_mixtures(seed, mode):
    rng = np.random.default_rng(seed)
    cards = [int(c) for c in rng.integers(2, 4, int(rng.integers(2, 5)))]
    pc = gen.mixture_x(rng, cards, gen.param_drawer(rng, mode),
                       components=int(rng.integers(2, 4)))
    assert log_smallest_probability(pc) <= _brute(pc) + 1e-9


def test_below_the_double_range_and_refused_without_mass():
    b = CircuitBuilder({"a": [0, 1], "b": [0, 1, 2]})
    leaf = b.categorical("b", log_probs=[-0.5, -700.0, -np.inf])
    pc = b.build(b.product(b.categorical("a", log_probs=[0.0, -800.0]), leaf))
    log_z = math.log(math.exp(-0.5) + math.exp(-700.0))  # and log(1 + e^-800) = 0.0
    assert log_smallest_probability(pc) == pytest.approx(-1500.0 - log_z, rel=1e-12)
    b = CircuitBuilder({"a": [0, 1]})
    empty = b.build(b.sum([b.categorical("a", [0.5, 0.5])], [0.0]))
    with pytest.raises(NumericalError, match="no mass"):
        log_smallest_probability(empty)
