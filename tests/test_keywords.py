"""The grace period for positional options (:mod:`pcfair._keywords`), on the public pattern
functions: the old positional order gives the same answer with a FutureWarning; keywords give
no warning; too many or doubled arguments are a TypeError."""

import warnings

import pytest

import pcfair
from pcfair._keywords import positional_options
from pcfair.circuit import CircuitBuilder


@pytest.fixture(scope="module")
def pc():
    b = CircuitBuilder({"d": [0, 1], "s": [0, 1], "z": [0, 1, 2]})
    return b.build(b.decision([
        (b.indicator("d", 1), b.product([b.categorical("s", [0.2, 0.8]),
                                         b.categorical("z", [0.5, 0.3, 0.2])]), 0.4),
        (b.indicator("d", 0), b.product([b.categorical("s", [0.7, 0.3]),
                                         b.categorical("z", [0.1, 0.1, 0.8])]), 0.6)]))


def _quiet(call):
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        return call()


def test_find_patterns_old_order_warns_and_answers_the_same(pc):
    new = _quiet(lambda: pcfair.find_patterns(pc, "d", ["s"], 0.01, kind="topk", k=2,
                                              rank_by="divergence", progress=False))
    with pytest.warns(FutureWarning, match=r"kind='topk', k=2, rank_by='divergence'"):
        old = pcfair.find_patterns(pc, "d", ["s"], 0.01, "topk", 2, "divergence",
                                   progress=False)
    assert [(p.x, p.y, p.score) for p in old] == [(p.x, p.y, p.score) for p in new]
    assert len(new) == 2


def test_certify_old_order_warns_and_answers_the_same(pc):
    new = _quiet(lambda: pcfair.certify(pc, "d", ["s"], 0.01, favorable=1, engine="lattice"))
    with pytest.warns(FutureWarning, match="favorable=1, engine='lattice'"):
        old = pcfair.certify(pc, "d", ["s"], 0.01, 1, "lattice")
    assert (old.fair, old.engine, old.max_abs_score) == (new.fair, new.engine, new.max_abs_score)


def test_census_ks_positional_warns(pc):
    new = _quiet(lambda: pcfair.pattern_census(pc, "d", ["s"], (0.01, 0.1), ks=(1,)))
    with pytest.warns(FutureWarning, match="ks="):
        old = pcfair.pattern_census(pc, "d", ["s"], (0.01, 0.1), (1,))
    assert old.equals(new)


def test_too_many_or_doubled_arguments_are_type_errors(pc):
    with pytest.raises(TypeError, match="positional arguments"):
        pcfair.certify(pc, "d", ["s"], 0.01, 1, "lattice", None, "extra")
    with pytest.raises(TypeError, match="multiple values"), warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        pcfair.certify(pc, "d", ["s"], 0.01, 1, favorable=1)


def test_a_decorator_naming_a_positional_parameter_is_refused():
    with pytest.raises(TypeError, match="no keyword-only"):
        @positional_options("k")
        def f(pc, k=1):
            return k
