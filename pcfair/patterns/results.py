"""Results of the pattern engines: the readable :class:`Pattern`, :class:`PatternSet` and
:class:`Certificate` users get, the one internal :class:`EngineResult` every engine returns,
and the conversions between them (index form → names and labels, divergences filled in).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from pcfair.circuit.circuit import Circuit
from pcfair.patterns.scores import pattern_divergences

__all__ = ["Certificate", "EngineResult", "HANDOVER_SECONDS", "Pattern", "PatternSet",
           "floor_note", "power_of_ten_text", "readable_patterns", "to_certificate",
           "to_pattern_set"]


@dataclass(frozen=True)
class Pattern:
    """One discrimination pattern with readable ``x`` and ``y`` (names → labels).

    ``rows`` is the number of rows of a data set that match ``x ∪ y``, when the result was
    asked with ``data=`` (see :mod:`pcfair.patterns.support`), else None. ``interval`` holds
    the pattern's credible intervals when asked for
    (:func:`pcfair.patterns.uncertainty.with_intervals`), else None. ``log_probability`` is
    ``log P(x, y)``, finite for every pattern however small (``probability`` is 0.0 below
    about 4.9e-324); None where not given, then read off ``probability``."""

    x: dict
    y: dict
    score: float
    probability: float
    divergence: float
    rows: int | None = None
    interval: dict | None = None
    log_probability: float | None = None

    @property
    def log_p(self) -> float:
        """``log P(x, y)`` (from ``probability`` when ``log_probability`` is not given)."""
        if self.log_probability is not None:
            return float(self.log_probability)
        return math.log(self.probability) if self.probability > 0 else -math.inf

    def probability_text(self, digits: int = 6) -> str:
        """``P(x, y)`` in ``digits`` significant digits, written from its log where it lies
        below the range of doubles.

        Examples
        --------
        >>> Pattern({"s": 1}, {}, 0.4, 0.0, 0.0, log_probability=-782.8).probability_text(3)
        '1.08e-340'
        """
        if self.probability >= 1e-300 or self.log_probability is None:
            return f"{self.probability:.{digits}g}"
        return power_of_ten_text(self.log_p / math.log(10), digits)

    @property
    def abs_score(self) -> float:
        return abs(self.score)

    @property
    def size(self) -> int:
        return len(self.x) + len(self.y)

    def text(self) -> str:
        """``race=Black, sex=Male | age=<25`` style."""
        xs = ", ".join(f"{k}={v}" for k, v in self.x.items())
        ys = ", ".join(f"{k}={v}" for k, v in self.y.items())
        return xs + (f" | {ys}" if ys else "")

    def to_dict(self) -> dict:
        out = {"x": _jsonable(self.x), "y": _jsonable(self.y), "score": self.score,
               "abs_score": self.abs_score, "probability": self.probability,
               "log_probability": self.log_p, "divergence": self.divergence}
        if self.rows is not None:
            out["rows"] = self.rows
        if self.interval is not None:
            out["interval"] = {k: (list(v) if isinstance(v, tuple) else v)
                               for k, v in self.interval.items()}
        return out


def _jsonable(d: dict) -> dict:
    return {str(k): (v.item() if isinstance(v, np.generic) else v) for k, v in d.items()}


def power_of_ten_text(log10: float, digits: int = 6) -> str:
    """``10 ** log10`` written in ``digits`` significant digits, for numbers far below the
    range of doubles.

    Examples
    --------
    >>> power_of_ten_text(-339.97, 2), power_of_ten_text(-400.0, 3)
    ('1.1e-340', '1e-400')
    """
    exponent = math.floor(log10)
    mantissa = f"{10 ** (log10 - exponent):.{digits}g}"
    if float(mantissa) >= 10:  # rounded up to the next power
        mantissa, exponent = f"{1:.{digits}g}", exponent + 1
    return f"{mantissa}e{exponent}"


@dataclass
class PatternSet:
    """Patterns of one kind, with the engine, completeness and statistics of the run.

    ``count`` is the number of patterns the run found (all of them when ``complete``);
    ``patterns`` lists them, except those a time limit left no time to hand over
    (``stats["patterns_not_listed"]``); a divergence a time limit left uncomputed is NaN
    (``stats["divergences_unknown"]``)."""

    kind: str
    delta: float
    engine: str
    complete: bool
    count: int
    patterns: list[Pattern] = field(default_factory=list)
    stats: dict = field(default_factory=dict)
    decision: str | None = None  # the decision variable's name
    favorable: object = None     # its favourable value (label)

    def __len__(self) -> int:
        return len(self.patterns)

    def __iter__(self):
        return iter(self.patterns)

    def __getitem__(self, i):
        return self.patterns[i]

    def to_frame(self) -> pd.DataFrame:
        """One row per pattern: readable ``x``/``y`` text, the dicts, Δ, |Δ|, P(x,y),
        divergence and size (and ``rows``, the matching rows of the data, when asked with
        ``data=``)."""
        rows = [{"x": ", ".join(f"{k}={v}" for k, v in p.x.items()),
                 "y": ", ".join(f"{k}={v}" for k, v in p.y.items()),
                 "x_dict": p.x, "y_dict": p.y, "score": p.score, "abs_score": p.abs_score,
                 "probability": p.probability, "divergence": p.divergence, "size": p.size,
                 "rows": p.rows}
                for p in self.patterns]
        cols = ["x", "y", "x_dict", "y_dict", "score", "abs_score", "probability",
                "divergence", "size"]
        if any(p.rows is not None for p in self.patterns):
            cols.append("rows")
        frame = pd.DataFrame(rows, columns=cols)
        if self.patterns and all(p.interval is not None for p in self.patterns):
            for key, name in (("score", "score"), ("abs_score", "abs"),
                              ("probability", "probability")):
                frame[f"{name}_lo"] = [p.interval[key][0] for p in self.patterns]
                frame[f"{name}_hi"] = [p.interval[key][1] for p in self.patterns]
            frame["exceeds"] = [p.interval["exceeds"] for p in self.patterns]
            frame["significant"] = [p.interval["significant"] for p in self.patterns]
        return frame

    def to_dict(self, include_patterns: bool = True) -> dict:
        out = {"kind": self.kind, "delta": self.delta, "complete": self.complete,
               "engine": self.engine, "count": self.count, "decision": self.decision,
               "favorable": _jsonable({"v": self.favorable})["v"], "stats": self.stats}
        if include_patterns:
            out["patterns"] = [p.to_dict() for p in self.patterns]
        return out

    def to_json(self, **kwargs) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    def plot_frame(self, delta: float | None = None) -> pd.DataFrame:
        """The patterns as :mod:`pcfair.plot` draws them: those with ``|Δ| > delta`` (all
        when None), with columns ``probability``, ``abs_score`` and ``is_pareto`` (their
        strict Pareto front, :func:`pcfair.patterns.summaries.pareto_frame`).

        Examples
        --------
        >>> ps = PatternSet("all", 0.05, "lattice", True, 2,
        ...                 [Pattern({"s": 1}, {}, 0.3, 0.2, 0.0),
        ...                  Pattern({"s": 0}, {}, -0.1, 0.5, 0.0)])
        >>> ps.plot_frame(delta=0.2).to_dict("list")
        {'probability': [0.2], 'abs_score': [0.3], 'is_pareto': [True]}
        """
        from pcfair.patterns.summaries import pareto_frame

        return pareto_frame([p.probability for p in self.patterns],
                            [p.abs_score for p in self.patterns], delta)

    def plot(self, ax=None, **kwargs):
        """|Δ| against P(x, y) of the patterns, with their strict Pareto front and the
        threshold (:func:`pcfair.plot.pareto_front` of :meth:`plot_frame`; ``kwargs`` go
        there); returns the Axes. Needs matplotlib (``pip install pcfair[plot]``)."""
        from pcfair.plot import pareto_front

        return pareto_front(self, delta=self.delta, ax=ax, **kwargs)


@dataclass(frozen=True)
class Certificate:
    """Result of :func:`certify`. ``fair`` is True only when a complete engine found no
    pattern, False with a ``witness`` when one exists, None when the run was incomplete.

    ``max_abs_score`` is the largest ``|Δ|`` the run established: the model's largest exactly
    when ``max_abs_exact`` (a lattice scan of every chunk: a fair verdict, or
    ``exact_max=True``), else the largest among the patterns the run scored before it stopped
    (a lower bound; with ``fair`` True every ``|Δ|`` is also at most ``delta``). None when
    nothing was established. ``stats["engine"]`` names the engine that answered and, with
    ``engine="auto"``, ``stats["choice"]`` why."""

    fair: bool | None
    complete: bool
    delta: float
    engine: str
    witness: Pattern | None
    max_abs_score: float | None
    stats: dict
    max_abs_exact: bool = True
    decision: str | None = None  # the decision variable's name
    favorable: object = None     # its favourable value (label)

    def to_dict(self) -> dict:
        return {"fair": self.fair, "complete": self.complete, "delta": self.delta,
                "engine": self.engine, "witness": None if self.witness is None
                else self.witness.to_dict(), "max_abs_score": self.max_abs_score,
                "max_abs_exact": self.max_abs_exact, "decision": self.decision,
                "favorable": _jsonable({"v": self.favorable})["v"], "stats": self.stats}


@dataclass
class EngineResult:
    """What every engine returns (:mod:`pcfair.patterns.engines`), in index form.

    ``items``: the patterns (:class:`~pcfair.patterns.scores.ScoredPattern`), in the engine's
    order; ``divergences``: theirs where the engine computed them (else they are computed
    on conversion); ``count``: how many patterns the answer has (``len(items)`` unless only
    counted); ``complete``: the engine looked at every pattern it had to (a witness settles a
    certification, so it is complete too); ``max_abs``: the largest ``|Δ|`` established, exact
    when ``max_abs_exact``, else a lower bound (None: nothing established); ``engine``: the
    family users see (``"lattice"``, ``"search"``, ``"sample"``); ``stats``: the run's figures,
    with ``stats["engine"]`` the concrete engine that answered."""

    engine: str
    items: list = field(default_factory=list)
    complete: bool = True
    count: int | None = None
    divergences: np.ndarray | None = None
    max_abs: float | None = None
    max_abs_exact: bool = False
    stats: dict = field(default_factory=dict)


def floor_note(stats: dict) -> str | None:
    """The sentence that says a run left the patterns below its probability floor unscored
    (:func:`pcfair.patterns.lattice.probability_floor`), or None where it scored them all.

    Examples
    --------
    >>> floor_note({"probability_floor": 1e-290, "smallest_probability_log10": -339.97})
    'patterns with P(x,y) < 1e-290 were not scored (the lattice adds linear probabilities; \
this model has some as small as 1.1e-340): the result covers the others only; the search engine \
(--engine search, engine="search") scores them all where it applies'
    >>> floor_note({}) is None
    True
    """
    floor = stats.get("probability_floor")
    if not floor:
        return None
    low = stats.get("smallest_probability_log10")
    small = "" if low is None else \
        f"; this model has some as small as {power_of_ten_text(low, 2)}"
    return (f"patterns with P(x,y) < {floor:g} were not scored (the lattice adds linear "
            f"probabilities{small}): the result covers the others only; the search engine "
            '(--engine search, engine="search") scores them all where it applies')


#: Seconds one found pattern takes to hand over (decoded, made readable, its divergence
#: computed): an engine with a deadline stops this long per pattern before it, so that what
#: it found reaches the caller within the time limit.
HANDOVER_SECONDS = 2e-5
#: Patterns whose divergences are computed between two looks at the deadline.
DIVERGENCE_BLOCK = 4096


def readable_patterns(pc: Circuit, d: int, fav: int, items: list, delta: float,
                      divergences=None, deadline: float | None = None) -> list[Pattern]:
    """:class:`Pattern` objects of index-form ``items`` (names and labels), keeping each
    item's score and probability (the numbers that selected it: a second computation can land
    a few ulps on the other side of ``δ``); divergences are computed where not given, in
    blocks of :data:`DIVERGENCE_BLOCK`, and left NaN (unknown) for the blocks not reached by
    ``deadline`` (a :func:`time.time` value), so that a run stopped by its time limit returns
    on time with every pattern it found."""
    if not items:
        return []
    if divergences is None:
        divergences = np.full(len(items), np.nan)
        for start in range(0, len(items), DIVERGENCE_BLOCK):
            if deadline is not None and time.time() > deadline:
                break
            part = items[start:start + DIVERGENCE_BLOCK]
            divergences[start:start + len(part)] = pattern_divergences(
                pc, d, fav, [it[:2] for it in part], np.array([it.score for it in part]),
                delta)
    lab = pc.variables
    return [Pattern(x={lab.names[v]: lab.domains[v][val] for v, val in sorted(it.x.items())},
                    y={lab.names[v]: lab.domains[v][val] for v, val in sorted(it.y.items())},
                    score=float(it.score), probability=float(it.probability),
                    divergence=float(dv), log_probability=float(it.log_probability))
            for it, dv in zip(items, divergences)]


def to_pattern_set(pc: Circuit, d: int, fav: int, res: EngineResult, kind: str, delta: float,
                   rank_by: str, count_only: bool, deadline: float | None = None
                   ) -> PatternSet:
    """The :class:`PatternSet` of an engine's result, sorted by ``rank_by`` (unknown
    divergences last; see :func:`readable_patterns` for ``deadline``)."""
    count = len(res.items) if res.count is None else int(res.count)
    found = [] if count_only else readable_patterns(pc, d, fav, res.items, delta,
                                                    res.divergences, deadline)
    found.sort(key=(lambda p: -p.divergence if p.divergence == p.divergence else math.inf)
               if rank_by == "divergence" else (lambda p: -p.abs_score))
    stats = res.stats
    unknown = sum(1 for p in found if p.divergence != p.divergence)
    if unknown:
        stats = {**stats, "divergences_unknown": unknown}
    return PatternSet(kind=kind, delta=delta, engine=res.engine, complete=res.complete,
                      count=count, patterns=found, stats=stats, decision=pc.variables.names[d],
                      favorable=pc.variables.domains[d][fav])


def to_certificate(pc: Circuit, d: int, fav: int, res: EngineResult, delta: float
                   ) -> Certificate:
    """The :class:`Certificate` of an engine's certification: unfair with the first item as
    its witness, fair only when the engine was complete and found none, else undecided."""
    witness = (readable_patterns(pc, d, fav, res.items[:1], delta,
                                 None if res.divergences is None else res.divergences[:1])[0]
               if res.items else None)
    fair = False if witness is not None else (True if res.complete else None)
    return Certificate(fair=fair, complete=res.complete or witness is not None, delta=delta,
                       engine=res.engine, witness=witness, max_abs_score=res.max_abs,
                       stats=res.stats, max_abs_exact=res.max_abs_exact,
                       decision=pc.variables.names[d], favorable=pc.variables.domains[d][fav])
