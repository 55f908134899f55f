"""The bootstrap (:mod:`pcfair.learn.bootstrap`): the model re-learned on resampled rows."""

import pandas as pd
import pytest

from pcfair.errors import OptionError
from pcfair.learn import learn_pc
from pcfair.learn.bootstrap import BootstrapPosterior

DF = pd.DataFrame({"d": [0, 1, 1, 0] * 25, "s": [0, 1, 1, 1] * 25, "z": [0, 0, 1, 1] * 25})


def test_each_draw_is_learned_again_with_the_models_variables_and_recipe():
    pc = learn_pc(DF, "d")
    draws = list(BootstrapPosterior(pc, DF, "d").circuits(3, random_state=0))
    assert [c.variables for c in draws] == [pc.variables] * 3
    assert all(c.recipe is pc.recipe and c.counts is not None for c in draws)
    again = list(BootstrapPosterior(pc, DF, "d").circuits(3, random_state=0))
    assert [c.edge_logw.tolist() for c in draws] == [c.edge_logw.tolist() for c in again]


def test_the_rows_must_hold_the_models_variables_and_values():
    pc = learn_pc(DF, "d")
    with pytest.raises(OptionError, match="lack the model's variables"):
        BootstrapPosterior(pc, DF.drop(columns="z"), "d")
    with pytest.raises(OptionError, match="complete"):
        BootstrapPosterior(pc, DF.astype(float).assign(z=[0.0, None] * 50), "d")
    with pytest.raises(OptionError, match="positive"):
        next(BootstrapPosterior(pc, DF, "d").circuits(0))
