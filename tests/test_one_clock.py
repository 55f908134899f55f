"""pcfair's one clock (:mod:`pcfair._clock`): a probe's deadline never runs past the run's."""

import math
import time

import pytest

from pcfair._clock import deadline_within, expired
from pcfair.patterns._arguments import Request
from pcfair.patterns.search_types import SearchQuery


@pytest.mark.parametrize("seconds", [0.0, -3.0, 5.0, 1e6])
def test_a_probe_deadline_is_the_earlier_one(seconds):
    own = time.time() + 100.0
    before = time.time()
    alone, under = deadline_within(None, seconds), deadline_within(own, seconds)
    after = time.time()
    share = max(0.0, seconds)
    assert before + share <= alone <= after + share
    if share < 50.0:  # the probe ends first
        assert before + share <= under <= after + share
    else:  # never past the run's own deadline
        assert under == own
    assert expired(alone) == (seconds <= 0)


@pytest.mark.parametrize("seconds", [None, math.inf])
def test_no_seconds_change_nothing(seconds):
    assert deadline_within(None, seconds) is None
    assert deadline_within(12.5, seconds) == 12.5


def test_requests_and_queries_read_the_same_rule():
    near = time.time() + 2.0
    query = SearchQuery(0.1, deadline=near)
    request = Request(kind="certify", delta=0.1, deadline=near)
    assert query.within(1e4).deadline == near == request.within(1e4).deadline
    assert query.within(None) == query and request.within(None) == request
    assert expired(query.within(0).deadline) and expired(request.within(-1).deadline)
