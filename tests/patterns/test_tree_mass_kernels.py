"""Tests of the compiled tree search's masses (:mod:`pcfair.patterns._tree_mass_kernels`)
on models whose probabilities leave the range of doubles; the searches that use them are
tested in ``test_underflow.py`` and ``test_tree_search.py``."""

import itertools
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import _pcgen as gen  # noqa: E402
from pcfair.patterns import _tree_mass_kernels as K  # noqa: E402
from pcfair.patterns.bounds import TreeBound  # noqa: E402


def test_tree_messages_below_the_double_range_are_exact():
    """Products of parameters that underflow: the compiled search's masses on such a model
    (``linear`` False: in logs) agree with the circuit's log-marginals, and the linear pass
    that would lose them is not used."""
    rng = np.random.default_rng(3)
    cards = [2, 2, 3, 2, 2]
    pc = gen.tree_bn_x(rng, cards, gen.param_drawer(rng, "underflow"), root=0)
    tb = TreeBound.from_circuit(pc, 0, 1)
    assert not tb.linear
    model, out = tb.kernel_model(), np.zeros(2)
    log_z = gen.log_normaliser(pc)
    worst = 0.0
    for obs in itertools.product(*[range(-1, c) for c in cards[1:]]):
        ev = np.array([-1, *obs], np.int64)
        K.log_masses(ev, model, np.zeros((tb.slots, 2)), np.zeros(len(cards), np.bool_), out,
                     tb.linear)
        rows = np.vstack([ev, ev]).astype(np.int32)
        rows[:, 0] = [1, 0]
        want = pc.log_marginal(rows) - log_z
        for g, w in zip(out, want):
            assert (g == w == -np.inf) or abs(g - w) <= 1e-9 * (1 + abs(w)), (obs, out, want)
        worst = min(worst, float(np.min(want[np.isfinite(want)], initial=0.0)))
    assert worst < -320 * math.log(10)  # the fallback was needed
