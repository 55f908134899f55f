"""Tests of the marginal kernels (:mod:`pcfair.inference._marginal_kernels`) on their own;
the marginals they compute are tested against brute force in ``test_marginals.py``."""

from pathlib import Path

import numpy as np
import pytest

import pcfair
from pcfair.inference import _marginal_kernels as K
from pcfair.inference.marginals import kernel_args

CIRCUITS = Path(pcfair.__file__).resolve().parents[1] / "circuits"


@pytest.mark.parametrize("rows", [1, 65, 2000])
def test_one_thread_or_many_give_the_same_numbers(rows):
    pc = pcfair.load(CIRCUITS / "compas_clt.json")
    rng = np.random.default_rng(rows)
    ev = rng.integers(-1, 2, size=(rows, pc.num_variables)).astype(np.int32)
    serial, threaded = np.empty(rows), np.empty(rows)
    K.log_marginals_serial(*kernel_args(pc), ev, serial)
    K.log_marginals_kernel(*kernel_args(pc), ev, threaded)
    assert np.array_equal(serial, threaded)
