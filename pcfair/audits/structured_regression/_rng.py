"""Random-state handling shared by the structured-regression modules.

Every stochastic function of the package takes ``random_state`` (an ``int``, a
:class:`numpy.random.Generator` or ``None``) and turns it into a generator here. Independent
streams for the bootstrap replicates and the cross-validation splits are derived with
:func:`child_generators`, so a fixed integer seed gives the same numbers on every run.
"""

from __future__ import annotations

import numpy as np

from pcfair.errors import SpecError


def as_generator(random_state: int | np.random.Generator | None) -> np.random.Generator:
    """Return a generator for ``random_state`` (a generator is passed through unchanged)."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is not None and not isinstance(random_state, (int, np.integer)):
        raise SpecError(
            f"random_state must be an int, a numpy Generator or None, got {type(random_state).__name__}"
        )
    return np.random.default_rng(random_state)


def child_generators(rng: np.random.Generator, k: int) -> list[np.random.Generator]:
    """Derive ``k`` independent generators from ``rng`` (advances ``rng`` by one draw)."""
    seeds = rng.integers(0, 2**63 - 1, size=k, dtype=np.int64)
    return [np.random.default_rng(int(s)) for s in seeds]
