"""A separation oracle for fair learning: the most violating patterns as smooth constraints.

:class:`DiscriminationOracle` asks the certifier (:func:`pcfair.find_patterns`, top-k) for the
``k`` most violating discrimination patterns of a circuit. It returns each one as a
:class:`PatternConstraint`: ``Δ(x, y) = P(d | x, y) − P(d | y)`` and its gradient with respect
to the circuit's parameters, as functions of the softmax logits of
:class:`pcfair.inference.gradients.SoftmaxParameters`. When the top-k run is complete and finds
nothing, it asks :func:`pcfair.certify` for the certificate. This is LearnFairNB's loop
(``ecosystem.md`` §6.4) seen from the oracle's side, for any smooth, decomposable circuit.

Each Δ is a difference of two ratios of marginals, ``exp(log P(d,x,y) − log P(x,y)) −
exp(log P(d,y) − log P(y))``; the four log-marginals and their gradients come from one batched
flow sweep (:mod:`pcfair.inference.gradients`). The constraint ``|Δ| ≤ δ`` is offered as the
two smooth inequalities ``δ − Δ ≥ 0`` and ``δ + Δ ≥ 0`` (:meth:`PatternConstraint.inequalities`):
both are kept, whatever the sign of the current violation, so a re-fit cannot overshoot a
pattern to the other side.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from pcfair.circuit.circuit import Circuit
from pcfair.circuit.derived import peek, remember
from pcfair.errors import OptionError
from pcfair.inference.gradients import GradientPlan, SoftmaxParameters, structure_key
from pcfair.patterns._arguments import RANKS, resolve_problem
from pcfair.patterns.api import certify, find_patterns
from pcfair.patterns.engines import lists_all
from pcfair.patterns.results import Certificate, Pattern, PatternSet
from pcfair.patterns.scores import pattern_evidence

__all__ = ["DiscriminationOracle", "PatternScores"]


class PatternScores:
    """Δ of a fixed list of patterns and its Jacobian with respect to the logits.

    One batched gradient sweep over four evidence rows per pattern. Patterns must have
    ``P(x, y) > 0``; the support of a :class:`SoftmaxParameters` never changes, so they keep it.

    Parameters
    ----------
    parameters : SoftmaxParameters
    decision, favorable : int
        Index of the decision variable and of its favourable value.
    patterns : list of (dict, dict)
        ``(x, y)`` with ``{variable index: value index}``.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> from pcfair.inference.gradients import SoftmaxParameters
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.2, 0.8]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.6, 0.4]), 0.5)]))
    >>> sp = SoftmaxParameters.from_circuit(pc)
    >>> value, jac = PatternScores(sp, 0, 1, [({1: 1}, {})])(sp.logits(pc))
    >>> value.round(4).tolist(), jac.shape
    ([0.1667], (1, 6))
    """

    def __init__(self, parameters: SoftmaxParameters, decision: int, favorable: int,
                 patterns: list[tuple[dict, dict]]):
        self.parameters = parameters
        self.patterns = list(patterns)
        self.evidence = pattern_evidence(parameters.plan.num_variables, decision, favorable,
                                         self.patterns)

    def __len__(self) -> int:
        return len(self.patterns)

    def __call__(self, theta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(Δ, ∂Δ/∂θ)``: shapes ``(m,)`` and ``(m, num_parameters)``."""
        p = self.parameters.num_parameters
        if not self.patterns:
            return np.zeros(0), np.zeros((0, p))
        logp, grad = self.parameters.log_marginals(theta, self.evidence)
        lp = logp.reshape(-1, 4)
        g = grad.reshape(len(self.patterns), 4, p)
        with np.errstate(invalid="ignore"):
            a = np.exp(lp[:, 0] - lp[:, 1])  # P(d | x, y)
            b = np.exp(lp[:, 2] - lp[:, 3])  # P(d | y)
        a = np.where(np.isfinite(lp[:, 1]), a, np.nan)
        jac = a[:, None] * (g[:, 0] - g[:, 1]) - b[:, None] * (g[:, 2] - g[:, 3])
        return a - b, jac


@dataclass(frozen=True, eq=False)
class PatternConstraint:
    """The constraint ``|Δ(x, y)| ≤ δ`` of one pattern, smooth in the logits.

    ``theta`` defaults to the logits of the circuit the oracle was called on
    (:attr:`OracleResult.theta`); any logit vector of :attr:`parameters` is accepted.
    """

    pattern: Pattern
    x: dict
    y: dict
    delta: float
    parameters: SoftmaxParameters
    theta: np.ndarray
    decision: int
    favorable: int
    _scores: PatternScores = field(repr=False)

    def value_and_grad(self, theta: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        """``Δ(x, y)`` and its gradient with respect to the logits."""
        v, jac = self._scores(self.theta if theta is None else theta)
        return float(v[0]), jac[0]

    def value(self, theta: np.ndarray | None = None) -> float:
        """``Δ(x, y)`` at ``theta``."""
        return self.value_and_grad(theta)[0]

    def gradient(self, theta: np.ndarray | None = None) -> np.ndarray:
        """``∂Δ(x, y) / ∂θ`` at ``theta``."""
        return self.value_and_grad(theta)[1]

    def inequalities(self, theta: np.ndarray | None = None, margin: float = 0.0
                     ) -> tuple[np.ndarray, np.ndarray]:
        """``[δ − margin − Δ, δ − margin + Δ]`` (both must be ≥ 0) and their Jacobian."""
        v, g = self.value_and_grad(theta)
        bound = self.delta - margin
        return np.array([bound - v, bound + v]), np.vstack([-g, g])


@dataclass
class OracleResult:
    """What :class:`DiscriminationOracle` found for one circuit.

    ``fair`` is True only when a complete certification run found no pattern (then
    ``certificate`` holds it), False when patterns were found (``constraints`` holds the top-k
    as constraints, or the certification's witness where the top-k run found none), None when
    neither run found one and the certification was incomplete. ``count`` is the number of all
    discrimination patterns when they were counted (lattice engine), else None.
    """

    fair: bool | None
    certificate: Certificate | None
    patterns: PatternSet
    constraints: list[PatternConstraint]
    parameters: SoftmaxParameters
    theta: np.ndarray
    count: int | None
    seconds: float

    def __len__(self) -> int:
        return len(self.constraints)

    def __iter__(self):
        return iter(self.constraints)

    @property
    def complete(self) -> bool:
        """Whether the top-k run was complete."""
        return self.patterns.complete

    def to_frame(self) -> pd.DataFrame:
        """One row per constraint: the pattern columns of :meth:`PatternSet.to_frame`, plus
        ``delta_bound`` (δ) and ``gradient_norm`` (Euclidean norm of ∂Δ/∂θ)."""
        frame = replace(self.patterns, patterns=[c.pattern for c in self.constraints]).to_frame()
        frame["delta_bound"] = [c.delta for c in self.constraints]
        frame["gradient_norm"] = [float(np.linalg.norm(c.gradient())) for c in self.constraints]
        return frame


class DiscriminationOracle:
    """The ``k`` most violating discrimination patterns of a circuit, as constraints.

    Parameters
    ----------
    decision : str
        The binary decision variable.
    sensitive : str or sequence of str
        Sensitive variables.
    delta : float
        A pattern discriminates when ``|Δ| > delta``.
    rank_by : {"divergence", "discrimination"}, default "divergence"
        Which patterns count as the most violating (see :func:`pcfair.find_patterns`).
    k : int, default 10
    engine : {"auto", "lattice", "search"}
    time_limit : float, optional
        Seconds for each run: the top-k, then (where it found no pattern) the
        certification; a stopped run is incomplete and never certifies. Any violation is a
        valid constraint, so a top-k cut short still feeds the fair learner.
    favorable : value, optional
        The favourable decision value. Needed unless the decision's values are 0 and 1
        (then 1: :func:`pcfair.inference.quotient.implicit_favorable`); a decision such as
        ``["<=50K", ">50K"]`` without it is refused, never guessed.
    count_patterns : bool, default False
        Also count all discrimination patterns when the lattice engine runs (one more lattice
        pass; ``OracleResult.count``).
    max_bytes : int
        Memory budget of the lattice engine.

    Notes
    -----
    Compiled structures (:class:`pcfair.inference.gradients.GradientPlan`) are cached per
    circuit structure (:func:`pcfair.inference.gradients.structure_key`), so calling the oracle
    again on re-parameterised circuits compiles nothing; :meth:`cache_info` reports hits.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.2, 0.8]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.6, 0.4]), 0.5)]))
    >>> found = DiscriminationOracle("d", ["s"], 0.1, k=1)(pc)
    >>> found.fair, found.constraints[0].pattern.text(), round(found.constraints[0].value(), 4)
    (False, 's=0', -0.25)
    """

    def __init__(self, decision, sensitive, delta: float, *, rank_by: str = "divergence",
                 k: int = 10, engine: str = "auto", time_limit: float | None = None,
                 favorable=None, count_patterns: bool = False, max_bytes: int = 2 << 30):
        if rank_by not in RANKS:
            raise OptionError(f"rank_by must be one of {RANKS}, not {rank_by!r}")
        if int(k) < 1:
            raise OptionError(f"k must be a positive integer, got {k}")
        if not 0 <= float(delta) < 1:
            raise OptionError(f"delta must be in [0, 1), got {delta}")
        self.decision = decision
        self.sensitive = [sensitive] if isinstance(sensitive, (str, int)) else list(sensitive)
        self.delta = float(delta)
        self.rank_by = rank_by
        self.k = int(k)
        self.engine = engine
        self.time_limit = time_limit
        self.favorable = favorable
        self.count_patterns = bool(count_patterns)
        self.max_bytes = int(max_bytes)
        self._plans: dict[str, GradientPlan] = {}
        self._hits = 0
        self._misses = 0

    def plan(self, circuit: Circuit) -> GradientPlan:
        """The compiled plan of ``circuit``'s structure (cached)."""
        cached = peek(circuit, "gradient_plan")
        if cached is not None and cached.key in self._plans:
            self._hits += 1
            return cached
        key = structure_key(circuit)
        if key in self._plans:
            self._hits += 1
        else:
            self._misses += 1
            self._plans[key] = GradientPlan.from_circuit(circuit)
        return remember(circuit, "gradient_plan", self._plans[key])

    def cache_info(self) -> dict:
        """``{"plans": compiled structures held, "hits": ..., "misses": ...}``."""
        return {"plans": len(self._plans), "hits": self._hits, "misses": self._misses}

    def parameters(self, circuit: Circuit) -> SoftmaxParameters:
        """The softmax parameterisation of ``circuit`` on its cached plan."""
        return SoftmaxParameters.from_circuit(circuit, self.plan(circuit))

    def __call__(self, circuit: Circuit) -> OracleResult:
        """Find the top-k violations of ``circuit`` (or certify that there are none)."""
        t0 = time.perf_counter()
        problem = resolve_problem(circuit, self.decision, self.sensitive, self.favorable)
        d, fav = problem.d, problem.fav
        found = find_patterns(circuit, self.decision, self.sensitive, self.delta, kind="topk",
                              k=self.k, rank_by=self.rank_by, favorable=self.favorable,
                              engine=self.engine, time_limit=self.time_limit,
                              max_bytes=self.max_bytes, progress=False)
        certificate = None
        violations = list(found)
        if not violations:
            # nothing ranked (none exists, or the top-k ran out of time): a certification,
            # which stops at its first witness, settles it or gives one violation
            certificate = certify(circuit, self.decision, self.sensitive, self.delta,
                                  favorable=self.favorable, engine=self.engine,
                                  time_limit=self.time_limit, max_bytes=self.max_bytes,
                                  progress=False)
            if certificate.witness is not None:
                violations = [certificate.witness]
        params = self.parameters(circuit)
        theta = params.logits(circuit)
        index_form = [(circuit.variables.encode_assignment(p.x),
                       circuit.variables.encode_assignment(p.y)) for p in violations]
        constraints = [
            PatternConstraint(pattern=p, x=x, y=y, delta=self.delta, parameters=params,
                              theta=theta, decision=d, favorable=fav,
                              _scores=PatternScores(params, d, fav, [(x, y)]))
            for p, (x, y) in zip(violations, index_form)]
        count = None
        answered_by = found.stats.get("engine", found.engine)
        if self.count_patterns and lists_all(answered_by):
            count = find_patterns(circuit, self.decision, self.sensitive, self.delta,
                                  favorable=self.favorable, engine=answered_by,
                                  count_only=True, max_bytes=self.max_bytes).count
        fair = False if constraints else certificate.fair
        return OracleResult(fair=fair, certificate=certificate, patterns=found,
                            constraints=constraints, parameters=params, theta=theta,
                            count=count, seconds=time.perf_counter() - t0)
