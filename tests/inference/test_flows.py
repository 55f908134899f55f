"""Data flows (:mod:`pcfair.inference.flows`): the counts of complete rows through every
parameter of a deterministic circuit, and the training counts made from them."""

import numpy as np
import pandas as pd
import pytest

from pcfair.circuit import CircuitBuilder
from pcfair.errors import OptionError
from pcfair.inference.flows import data_flows, parameter_counts
from pcfair.learn import learn_pc


def _model():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"d": rng.integers(0, 2, 300), "a": rng.integers(0, 3, 300),
                       "b": rng.integers(0, 2, 300)})
    pc = learn_pc(df, "d")
    return pc, pc.variables.evidence_matrix(df)


def test_every_row_passes_the_root_once_and_each_leaf_of_its_path():
    pc, codes = _model()
    elem, leaf, rows = data_flows(pc, codes)
    root = pc.root
    assert elem[pc.edge_ptr[root]:pc.edge_ptr[root + 1]].sum() == len(codes)
    # the root decides on d: its elements count the rows of each value of d
    d = pc.variables.index("d")
    assert sorted(elem[pc.edge_ptr[root]:pc.edge_ptr[root + 1]]) == sorted(
        np.bincount(codes[:, d], minlength=2).astype(float))
    assert not rows.any()  # no target edge


def test_weights_scale_the_flows_and_the_target_edge_flags_its_rows():
    pc, codes = _model()
    elem, leaf, _ = data_flows(pc, codes)
    elem2, leaf2, _ = data_flows(pc, codes, weights=np.full(len(codes), 2.0))
    np.testing.assert_array_equal(elem2, 2 * elem)
    np.testing.assert_array_equal(leaf2, 2 * leaf)
    e = int(pc.edge_ptr[pc.root])
    _, _, rows = data_flows(pc, codes, target_edge=e)
    assert rows.sum() == elem[e]


def test_parameter_counts_are_the_counts_the_learner_stores():
    pc, codes = _model()
    counts = parameter_counts(pc, codes, pseudocount=1.0)
    np.testing.assert_array_equal(counts.elements, pc.counts.elements)
    np.testing.assert_array_equal(counts.leaves, pc.counts.leaves)
    assert (counts.rows, counts.pseudocount) == (pc.counts.rows, pc.counts.pseudocount)


@pytest.mark.parametrize("codes", [np.array([[0], [-1]]), np.array([0, 1]),
                                   np.array([[0, 1]])])
def test_parameter_counts_refuse_incomplete_or_misshapen_rows(codes):
    b = CircuitBuilder({"x": [0, 1]})
    pc = b.build(b.categorical("x", [0.5, 0.5]))
    with pytest.raises(OptionError, match="complete rows"):
        parameter_counts(pc, codes)
