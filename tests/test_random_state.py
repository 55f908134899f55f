"""pcfair's one check_random_state."""

import numpy as np
import pytest

from pcfair._random import check_random_state
from pcfair.errors import OptionError


def test_seeds_generators_and_refusals():
    assert check_random_state(3).random() == np.random.default_rng(3).random()
    seq = np.random.SeedSequence(5)
    assert check_random_state(seq).random() == np.random.default_rng(np.random.SeedSequence(5)).random()
    rng = np.random.default_rng(0)
    assert check_random_state(rng) is rng
    assert isinstance(check_random_state(None), np.random.Generator)
    for bad in (1.5, "seed", True, np.random.RandomState(0)):
        with pytest.raises(OptionError, match="random_state must be"):
            check_random_state(bad)
