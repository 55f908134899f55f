"""``SearchOptions`` is checked where it is made (issue 37, item 2): every field, with the
messages the API gave before; the searches below take it as it is."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import pcfair
from pcfair.circuit import CircuitBuilder
from pcfair.errors import OptionError
from pcfair.patterns._arguments import resolve_request
from pcfair.patterns.bounds import BOUNDS
from pcfair.patterns.search_types import ORDERINGS, PAPER, SearchOptions, check_choice

BOOLEANS = ("share_bounds", "best_first", "naive_bayes_bound", "compiled")


def _circuit():
    b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    return b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.45, 0.55]), 0.5),
                               (b.indicator("d", 0), b.categorical("s", [0.5, 0.5]), 0.5)]))


def test_the_defaults_and_the_papers_options_are_valid():
    default = SearchOptions()
    assert (default.ordering, default.bound, default.seed_runs) == ("auto", "auto", 20)
    assert all(getattr(default, name) is True for name in BOOLEANS)
    assert PAPER.ordering == "index" and PAPER.bound == "quotient" and PAPER.seed_runs == 0


@pytest.mark.parametrize("ordering", ORDERINGS)
def test_every_ordering_is_accepted(ordering):
    assert SearchOptions(ordering=ordering).ordering == ordering


@pytest.mark.parametrize("bound", BOUNDS)
def test_every_bound_of_the_bounds_module_is_accepted(bound):
    assert SearchOptions(bound=bound).bound == bound


@pytest.mark.parametrize("value", ["random", "", None, 3, "Index"])
def test_an_unknown_ordering_is_refused(value):
    with pytest.raises(OptionError, match="ordering must be one of"):
        SearchOptions(ordering=value)


@pytest.mark.parametrize("value", ["tre", "", None, 1, "Tree"])
def test_an_unknown_bound_is_refused_at_construction(value):
    with pytest.raises(OptionError, match=r"bound must be one of \('auto', 'quotient'"):
        SearchOptions(bound=value)


@pytest.mark.parametrize("name", BOOLEANS)
@pytest.mark.parametrize("value", [1, 0, "yes", None, 1.0])
def test_switches_must_be_booleans(name, value):
    with pytest.raises(OptionError, match=f"{name} must be True or False, not {value!r}"):
        SearchOptions(**{name: value})


@pytest.mark.parametrize("name", BOOLEANS)
def test_numpy_booleans_are_booleans(name):
    assert not getattr(SearchOptions(**{name: np.False_}), name)


@pytest.mark.parametrize("value", [-1, 2.5, True, "20", None, 20.0])
def test_seed_runs_must_be_a_count(value):
    with pytest.raises(OptionError, match="seed_runs must be an integer >= 0"):
        SearchOptions(seed_runs=value)


def test_seed_runs_accepts_zero_and_numpy_integers():
    assert SearchOptions(seed_runs=0).seed_runs == 0
    assert SearchOptions(seed_runs=np.int64(5)).seed_runs == 5


def test_a_changed_copy_is_checked_too():
    with pytest.raises(OptionError, match="seed_runs"):
        dataclasses.replace(PAPER, seed_runs=-3)
    assert dataclasses.replace(PAPER, seed_runs=3).seed_runs == 3


def test_a_misspelt_bound_never_reaches_an_engine():
    """Before, ``SearchOptions(bound="tre")`` with ``engine="auto"`` ran the lattice quietly
    (the bound is read only by a search); now it cannot be made."""
    pc = _circuit()
    assert pcfair.certify(pc, "d", ["s"], 0.01, search_options=SearchOptions()).fair is False
    with pytest.raises(OptionError, match="bound must be one of"):
        pcfair.certify(pc, "d", ["s"], 0.01, search_options=SearchOptions(bound="tre"))


def test_the_request_takes_only_search_options():
    assert resolve_request("certify", 0.05).search_options == SearchOptions()
    with pytest.raises(OptionError, match="search_options must be a .*SearchOptions, not dict"):
        resolve_request("certify", 0.05, search_options={"bound": "tree"})


def test_check_choice_is_the_one_wording():
    check_choice("tree", BOUNDS, "bound")
    with pytest.raises(OptionError, match=r"^kind must be one of \('a', 'b'\), not 'c'$"):
        check_choice("c", ("a", "b"), "kind")
    with pytest.raises(OptionError, match="not None"):
        check_choice(None, ("a", "b"), "kind")
    # the API edge words its choices the same way
    with pytest.raises(OptionError, match=r"^rank_by must be one of \('discrimination', "):
        resolve_request("topk", 0.05, rank_by="size")
    with pytest.raises(OptionError, match=r"^kind must be one of \('all', 'topk'"):
        resolve_request("some", 0.05)
