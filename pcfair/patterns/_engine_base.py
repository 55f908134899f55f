"""What every engine adapter of the engine table (:mod:`pcfair.patterns.engines`) is: the
:class:`Engine` protocol, the :class:`Estimate` it gives, and the one rule every engine
follows about processes (:func:`fit_jobs`).

An adapter answers four questions about a checked :class:`~._arguments.Problem` and
:class:`~._arguments.Request`: which request ``kinds`` it answers, whether it can run this
one (``can_run``: True, or the reason it cannot), what it would cost (``estimate``: an
:class:`Estimate`, or None where the cost is not known before it runs) and the answer itself
(``run``: an :class:`~.results.EngineResult`); ``require`` raises the specific error of an
engine asked for by name that cannot run. A new engine is one adapter and one line of
the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from pcfair.patterns._arguments import Problem, Request
from pcfair.patterns.results import EngineResult

#: Seconds a pool of worker processes takes to start (added to parallel estimates).
POOL_START_SECONDS = 2.0


@dataclass(frozen=True)
class Estimate:
    """One engine's answer to "what would you cost": ``seconds`` (None: not known before it
    runs), whether it gives a ``complete`` answer to this request, and how the figure was
    made or why the engine does not apply (``applies`` False).

    Examples
    --------
    >>> Estimate("lattice", 1.5, True, "probe").to_dict()["seconds"]
    1.5
    """

    engine: str
    seconds: float | None
    complete: bool
    note: str
    applies: bool = True

    def to_dict(self) -> dict:
        return {"seconds": self.seconds, "complete": self.complete, "applies": self.applies,
                "note": self.note}


class Engine(Protocol):
    """An entry of the engine table.

    ``name`` is the concrete engine (``stats["engine"]`` of its results), ``family`` what its
    results say in ``engine`` (``"lattice"``, ``"search"``, ``"sample"``), ``kinds`` the
    request kinds it answers when asked for by name, ``lists_all`` whether it scores every
    pattern of the lattice, so that counts of any threshold come from one pass (a count is
    then cheap next to the run that answered).
    """

    name: str
    family: str
    kinds: tuple[str, ...]
    lists_all: bool

    def can_run(self, problem: Problem, request: Request) -> Literal[True] | str:
        """True, or why the engine cannot answer ``request`` on ``problem``."""

    def require(self, problem: Problem, request: Request) -> None:
        """Raise the specific error of :meth:`can_run`'s reason (an engine asked for by
        name that cannot answer)."""

    def estimate(self, problem: Problem, request: Request) -> Estimate | None:
        """The cost of the run, or None where it is not known before it runs."""

    def run(self, problem: Problem, request: Request) -> EngineResult:
        """The answer (checked by :meth:`can_run` first)."""


def fit_jobs(request: Request) -> Request:
    """The request on one process where the time left would not even start a pool of
    workers (under twice :data:`POOL_START_SECONDS`): the work then gets the whole time.

    Examples
    --------
    >>> fit_jobs(Request("all", 0.1, n_jobs=2, deadline=0.0)).n_jobs  # no time left
    1
    """
    left = request.time_left()
    if request.n_jobs > 1 and left is not None and left < 2 * POOL_START_SECONDS:
        return request.but(n_jobs=1)
    return request
