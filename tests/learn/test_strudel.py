import numpy as np
import pytest

from pcfair.learn import learn_pc
from pcfair.learn.parameters import fit_parameters
from pcfair.learn.strudel import strudel
from test_clt import random_frame


def test_refitting_the_clt_reproduces_its_parameters():
    df = random_frame(2, n=500)
    pc = learn_pc(df, "d", pseudocount=0.7)
    codes = pc.evidence_matrix(df)
    refit = fit_parameters(pc, codes, 0.7)
    np.testing.assert_allclose(refit.log_marginal(codes), pc.log_marginal(codes), atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_strudel_never_lowers_training_likelihood_and_keeps_properties(seed):
    df = random_frame(seed, n=600, cards=(2, 3, 2, 3))
    clt = learn_pc(df, "d", pseudocount=0.0)
    codes = clt.evidence_matrix(df)
    grown, hist = strudel(clt, codes, None, pseudocount=0.0, max_splits=8)
    assert len(hist.train_ll) > 2  # some splits happened
    assert np.all(np.diff(hist.train_ll) >= -1e-9)
    assert grown.num_nodes > clt.num_nodes
    rep = grown.properties()
    assert rep.smooth and rep.decomposable and rep.normalized
    assert rep.deterministic is True and rep.structured_decomposable is True
    assert rep.vtree == clt.vtree  # splits keep the vtree
    # the closed-form parameters are the maximum-likelihood ones for this structure
    assert float(grown.log_marginal(codes).mean()) == pytest.approx(hist.train_ll[-1])


def test_strudel_through_learn_pc_is_reproducible():
    df = random_frame(4, n=400)
    a = learn_pc(df, "d", structure="strudel", random_state=3, max_splits=5)
    b = learn_pc(df, "d", structure="strudel", random_state=3, max_splits=5)
    np.testing.assert_array_equal(a.log_marginal(df), b.log_marginal(df))
    assert a.properties().deterministic is True
