"""Issue #17 item 4: each audit port exports a short list of names, every one of them
importable, and AVOIR's failure probability is ``failure_prob`` (``delta`` in pcfair is only
the discrimination threshold)."""

from __future__ import annotations

import importlib

import pandas as pd
import pytest

PORTS = ["cbs", "testsgd", "structured_regression", "avoir"]


@pytest.mark.parametrize("port", PORTS)
def test_each_port_exports_about_eight_names(port):
    mod = importlib.import_module(f"pcfair.audits.{port}")
    assert 6 <= len(mod.__all__) <= 10
    assert len(set(mod.__all__)) == len(mod.__all__)
    for name in mod.__all__:
        assert getattr(mod, name) is not None
    public = {n for n in vars(mod) if not n.startswith("_")
              and not isinstance(getattr(mod, n), type(importlib))}
    assert public == set(mod.__all__)  # nothing else in the package namespace


def test_building_blocks_stay_importable_from_their_modules():
    from pcfair.audits.avoir.opt import allocate
    from pcfair.audits.cbs.search import SubsetScanner
    from pcfair.audits.structured_regression.baselines import james_stein_bock
    from pcfair.audits.testsgd.scoring import score_from_counts

    assert callable(allocate) and callable(SubsetScanner)
    assert callable(james_stein_bock) and callable(score_from_counts)


def test_avoir_failure_probability_is_named_failure_prob():
    from pcfair.audits.avoir import Monitor

    res = Monitor("E[r] > 0.5", failure_prob=0.1).run(pd.DataFrame({"r": [1] * 400}))
    assert res.verdict is True and 0 < res.failure_prob <= res.failure_budget == 0.1
    assert "failure_prob" in res.terms.columns and "delta" not in res.terms.columns
    assert {"failure_prob", "failure_budget"} <= set(res.to_dict())
    with pytest.raises(TypeError):
        Monitor("E[r] > 0.5", delta=0.1)
