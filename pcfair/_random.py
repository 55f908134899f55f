"""The one way pcfair turns a ``random_state`` argument into a random generator."""

from __future__ import annotations

import numbers

import numpy as np

from pcfair.errors import OptionError


def check_random_state(random_state) -> np.random.Generator:
    """``random_state`` as a :class:`numpy.random.Generator`.

    pcfair's counterpart of scikit-learn's ``check_random_state`` for numpy's Generator API:
    ``None`` gives fresh entropy, an integer or a :class:`numpy.random.SeedSequence` seeds a
    new generator, and a Generator is used as it is (so a caller can thread one generator
    through several calls).

    Raises
    ------
    OptionError
        For anything else (a float, a string, a legacy ``RandomState``...).

    Examples
    --------
    >>> int(check_random_state(0).integers(10)) == int(check_random_state(0).integers(10))
    True
    >>> rng = np.random.default_rng(1)
    >>> check_random_state(rng) is rng
    True
    """
    if isinstance(random_state, np.random.Generator):
        return random_state
    if random_state is None or isinstance(random_state, np.random.SeedSequence) or (
            isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool)):
        return np.random.default_rng(random_state)
    raise OptionError(f"random_state must be None, an int or a numpy Generator, not "
                      f"{type(random_state).__name__} {random_state!r}")
