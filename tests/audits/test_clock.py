"""One clock rule (issue 37, item 2): the pattern API, the executors and the audits take a
time limit through :mod:`pcfair._clock`: None, or a finite number of seconds >= 0, where 0 is
an immediate deadline (the run stops at once and says it is incomplete)."""

from __future__ import annotations

import time

import pytest

import pcfair
import pcfair._clock as clock
from pcfair.audits import _clock as audits_clock
from pcfair.circuit import CircuitBuilder
from pcfair.errors import OptionError
from pcfair.patterns import executors
from pcfair.patterns._arguments import resolve_request

BAD = (-1, -0.5, float("nan"), float("inf"), float("-inf"), True, False, "5", [1])


def _circuit():
    b = CircuitBuilder({"d": [0, 1], "s": [0, 1], "a": [0, 1]})
    return b.build(b.decision([
        (b.indicator("d", 1), b.product(b.categorical("s", [0.3, 0.7]),
                                        b.categorical("a", [0.6, 0.4])), 0.5),
        (b.indicator("d", 0), b.product(b.categorical("s", [0.6, 0.4]),
                                        b.categorical("a", [0.5, 0.5])), 0.5)]))


def test_one_function_for_every_caller():
    import importlib
    import pkgutil

    import pcfair.audits
    users = 0
    for info in pkgutil.walk_packages(pcfair.audits.__path__, "pcfair.audits."):
        if info.name.endswith(".cli") or info.name.endswith("_cli"):
            continue
        module = importlib.import_module(info.name)
        for name in ("check_time_limit", "deadline_from", "expired"):
            if hasattr(module, name):
                users += 1
                assert getattr(module, name) is getattr(clock, name), (info.name, name)
    assert users >= 5  # the audits' clocks are pcfair's one clock
    assert not hasattr(audits_clock, "deadline_from")  # no second door to it
    assert executors.deadline_from is clock.deadline_from


@pytest.mark.parametrize("bad", BAD)
def test_every_entry_refuses_the_same_values_with_the_same_message(bad):
    message = f"time_limit must be a positive number of seconds or 0, not {bad!r}"
    for call in (lambda: clock.check_time_limit(bad),
                 lambda: clock.deadline_from(bad),
                 lambda: executors.map_chunks(abs, [(1,)], lambda i, r: None,
                                              time_limit=bad, progress=False),
                 lambda: resolve_request("certify", 0.05, time_limit=bad)):
        with pytest.raises(OptionError) as info:
            call()
        assert str(info.value) == message


def test_accepted_values():
    assert clock.check_time_limit(None) is None
    assert clock.check_time_limit(0) == 0.0 and clock.check_time_limit(2) == 2.0
    assert isinstance(clock.check_time_limit(3), float)


def test_zero_is_an_immediate_deadline():
    deadline = clock.deadline_from(0)
    assert clock.expired(deadline) and clock.seconds_left(deadline) == 0.0
    assert resolve_request("certify", 0.05, time_limit=0).expired()
    run = executors.map_chunks(abs, [(1,), (2,)], lambda i, r: None, time_limit=0,
                               progress=False)
    assert not run.complete and run.done == 0


def test_zero_gives_an_incomplete_answer_never_fair():
    pc = _circuit()
    assert pcfair.certify(pc, "d", ["s"], 0.9, engine="search").fair is True
    cert = pcfair.certify(pc, "d", ["s"], 0.9, engine="search", time_limit=0)
    assert cert.fair is None and not cert.complete


def test_a_deadline_overrides_the_limit_and_is_checked():
    assert clock.deadline_from(5.0, deadline=12.5) == 12.5
    assert clock.deadline_from(None, deadline=12) == 12.0
    for bad in ("soon", True, float("nan")):
        with pytest.raises(OptionError, match="deadline must be a time.time"):
            clock.deadline_from(None, deadline=bad)
    assert 9.0 < clock.deadline_from(10) - time.time() <= 10.0


def test_seconds_left_and_expired():
    assert clock.seconds_left(None) is None and not clock.expired(None)
    assert clock.seconds_left(time.time() - 5) == 0.0 and clock.expired(time.time() - 5)
    assert 50 < clock.seconds_left(time.time() + 60) <= 60
