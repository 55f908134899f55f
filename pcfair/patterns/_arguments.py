"""The arguments of the pattern API, checked once at the edge: the model and its variables
(:class:`Problem`) and what is asked of it (:class:`Request`). Engines take both as they are
and check nothing again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pcfair._clock import deadline_from, deadline_within, expired, seconds_left
from pcfair.circuit.circuit import Circuit
from pcfair.circuit.derived import derived
from pcfair.circuit.properties import require_tractable_marginals
from pcfair.errors import OptionError, VariableError
from pcfair.inference.marginals import normalized
from pcfair.inference.quotient import decision_evidence
from pcfair.patterns.executors import resolve_n_jobs
from pcfair.patterns.search_types import SearchOptions, check_choice

#: The kinds of :func:`pcfair.find_patterns` (``"certify"`` is :func:`pcfair.certify`'s).
KINDS = ("all", "topk", "maximal", "minimal", "pareto")
#: The rankings of top-k lists.
RANKS = ("discrimination", "divergence")


def as_circuit(model) -> Circuit:
    """The circuit of ``model``: a :class:`Circuit`, a model file for :func:`pcfair.load`, or a
    fitted :class:`pcfair.PCClassifier` (its ``circuit_``, whose decision is named after the
    training target). Anything else is a :class:`TypeError` saying what is accepted.

    Examples
    --------
    >>> as_circuit(3.0)
    Traceback (most recent call last):
    ...
    TypeError: expected a pcfair Circuit, a model file path or a fitted PCClassifier, got float...
    """
    import os

    if isinstance(model, Circuit):
        return model
    if isinstance(model, (str, os.PathLike)):
        from pcfair.circuit.io import load

        loaded = load(model)
        if not isinstance(loaded, Circuit):
            raise TypeError(f"{model} holds a vtree, not a circuit")
        return loaded
    fitted = getattr(model, "circuit_", None)
    if isinstance(fitted, Circuit):
        return fitted
    hint = (" (fit it first)" if hasattr(model, "fit") and hasattr(model, "predict_proba")
            and type(model).__name__ == "PCClassifier" else
            "; other models can be audited with pcfair.audits" if hasattr(model, "predict")
            else "")
    raise TypeError("expected a pcfair Circuit, a model file path or a fitted PCClassifier, "
                    f"got {type(model).__name__}{hint}")


@dataclass(frozen=True)
class Problem:
    """The model as the engines take it: the circuit of the normalised distribution (checked
    for exact marginals, cached on the circuit so repeated calls share compiled plans), the
    decision's index, its favourable value's index, and the sensitive variables (sorted)."""

    pc: Circuit
    d: int
    fav: int
    sens: list

    def __iter__(self):
        """``pc, d, fav, sens = problem``."""
        return iter((self.pc, self.d, self.fav, self.sens))


def resolve_problem(model, decision, sensitive, favorable) -> Problem:
    """The :class:`Problem` of the API's first arguments (unknown names raise
    :class:`~pcfair.errors.VariableError`)."""
    circuit = as_circuit(model)
    d, fav, _ = decision_evidence(circuit, decision, favorable)
    if isinstance(sensitive, (str, int)):
        sensitive = [sensitive]
    sens = [circuit.variables.index(s) for s in sensitive]
    if not sens:
        raise VariableError("at least one sensitive variable is needed")
    if d in sens:
        raise VariableError("the decision variable cannot be sensitive")
    require_tractable_marginals(circuit)
    pc = derived(circuit, "normalized", lambda: normalized(circuit))
    if pc.recipe is not circuit.recipe:  # data= is read by the model's recipe
        pc = pc.with_recipe(circuit.recipe)
    return Problem(pc, d, fav, sorted(set(sens)))


@dataclass(frozen=True)
class Request:
    """What is asked: ``kind`` (``"certify"`` or one of :data:`KINDS`), the threshold, the
    size and ranking of a top-k, the minimum support, whether only the count is wanted, a
    CSV to stream to (``out``), whether a certification must establish the exact largest
    ``|Δ|`` (``exact_max``), and how to run: ``engine`` (a name of
    :mod:`pcfair.patterns.engines`), ``deadline`` (a :func:`time.time` value: one clock for
    every engine and process), processes or executor, progress, the lattice's memory budget,
    the search's options."""

    kind: str
    delta: float
    engine: str = "auto"
    k: int = 10
    rank_by: str = "discrimination"
    min_support: float = 0.0
    count_only: bool = False
    out: object = None
    exact_max: bool = False
    deadline: float | None = None
    n_jobs: int = 1
    executor: object = None
    progress: bool | None = None
    max_bytes: int = 1 << 30
    search_options: SearchOptions = SearchOptions()

    def time_left(self) -> float | None:
        """Seconds to the deadline (never negative), None without one."""
        return seconds_left(self.deadline)

    def expired(self) -> bool:
        """Whether the deadline has passed (never, without one)."""
        return expired(self.deadline)

    def within(self, seconds: float | None) -> "Request":
        """The same request with the deadline brought forward to ``seconds`` from now (a
        probe), never past its own (:func:`pcfair._clock.deadline_within`)."""
        return replace(self, deadline=deadline_within(self.deadline, seconds))

    def but(self, **changes) -> "Request":
        return replace(self, **changes)


def check_fraction(value, name: str) -> float:
    """``value`` as a float in [0, 1) (a threshold δ, a minimum support), else
    :class:`~pcfair.errors.OptionError` naming it.

    Examples
    --------
    >>> check_fraction("0.05", "delta")
    0.05
    """
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise OptionError(f"{name} must be a number in [0, 1), got {value!r}") from None
    if not 0 <= value < 1:
        raise OptionError(f"{name} must be in [0, 1), got {value}")
    return value


def resolve_request(kind: str, delta, *, engine: str = "auto", k=None,
                    rank_by: str = "discrimination", min_support=0.0, count_only=False,
                    out=None, exact_max=False, time_limit=None, n_jobs=1, executor=None,
                    progress=None, max_bytes=1 << 30,
                    search_options: SearchOptions = SearchOptions()) -> Request:
    """The checked :class:`Request`, the one place the pattern API checks what is asked: the
    runs below it take the request as it is and check nothing again. The clock starts here
    (``time_limit`` becomes one deadline, :func:`pcfair._clock.deadline_from`: 0 is an
    immediate deadline, the result then incomplete). ``engine`` must already be checked
    (:func:`pcfair.patterns.engines.check_engine`); ``search_options`` checked itself when it
    was made (:class:`~pcfair.patterns.search_types.SearchOptions`). ``n_jobs`` above the
    machine's cores is capped with a warning (:func:`pcfair.patterns.executors.resolve_n_jobs`).

    Raises
    ------
    OptionError
        An argument out of range or not one of its choices (the message names it).

    Examples
    --------
    >>> request = resolve_request("topk", 0.05, k=3, time_limit=0)
    >>> request.k, request.expired()
    (3, True)
    >>> resolve_request("topk", 0.05, rank_by="size")
    Traceback (most recent call last):
    ...
    pcfair.errors.OptionError: rank_by must be one of ('discrimination', 'divergence'), not 'size'
    """
    if kind != "certify":
        check_choice(kind, KINDS, "kind")
    check_choice(rank_by, RANKS, "rank_by")
    delta = check_fraction(delta, "delta")
    min_support = check_fraction(min_support, "min_support")
    if out is not None and kind != "all":
        raise OptionError("out= writes the patterns of kind='all'")
    k = 10 if k is None else int(k)
    if k < 1:
        raise OptionError(f"k must be at least 1, not {k}")
    if not isinstance(search_options, SearchOptions):
        raise OptionError("search_options must be a pcfair.patterns.search_types.SearchOptions, "
                          f"not {type(search_options).__name__}")
    return Request(kind=kind, delta=delta, engine=engine, k=k,
                   rank_by=rank_by, min_support=min_support, count_only=bool(count_only),
                   out=out, exact_max=bool(exact_max), deadline=deadline_from(time_limit),
                   n_jobs=resolve_n_jobs(n_jobs) if executor is None else 1,
                   executor=executor, progress=progress, max_bytes=int(max_bytes),
                   search_options=search_options)
