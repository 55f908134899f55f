"""How sure is a certificate? Credible intervals of patterns and the probability of δ-fairness.

A certificate is a statement about the learned model; a model learned from 1,000 rows is one
draw of many the data allow. With the posterior of the parameters
(:class:`pcfair.inference.posterior.ParameterPosterior`: a Dirichlet per node, given the
training counts the model carries, or the training rows passed as ``data=``):

* :func:`with_intervals` gives each pattern of a result (a witness, a top-k list, a Pareto
  front...) equal-tailed credible intervals of ``Δ``, ``|Δ|`` and ``P(x, y)`` at ``credible``
  (e.g. 0.95), and the posterior probability that ``|Δ| > δ``; a pattern is *significant* when
  that probability is at least ``credible``. The intervals are read from ``draws`` parameter
  draws (Monte-Carlo quantiles), so their ends carry Monte-Carlo error of order
  ``sqrt(q(1−q)/draws)`` in probability; the draws are reproducible (``random_state``).
* :func:`significance_census` counts, per δ, the point model's patterns and how many of
  them are significant;
* :func:`fairness_probability` certifies every draw exactly (the fastest engine, a complete
  run each) and reports the share found δ-fair, with its Monte-Carlo standard error. A draw
  whose run is cut by ``time_limit`` is counted apart (``incomplete``), never as fair; the
  probability's bounds then are ``fair / n`` and ``(fair + incomplete) / n``.

The point certificate stays what it is. By default (``method="posterior"``) these quantities
describe the uncertainty of the parameters given the structure, not of the structure (see
:mod:`pcfair.inference.posterior`); ``method="bootstrap"`` re-learns the model on resampled
training rows, so that the structure varies too (percentile intervals of a bootstrap, one
learning run per draw).
For a pattern chosen because it is the largest (a witness, the top of a list), the interval of
its own ``Δ`` inherits the selection: it is an interval for *that* pattern, not for "the
largest pattern of the true model".
"""

from __future__ import annotations

import dataclasses
import math
import time
import warnings

import numpy as np

from pcfair._random import check_random_state
from pcfair.errors import OptionError
from pcfair.inference.marginals import log_marginals
from pcfair.inference.flows import parameter_counts
from pcfair.inference.posterior import ParameterPosterior
from pcfair.learn.bootstrap import BootstrapPosterior

__all__ = ["FairnessProbability", "METHODS", "draw_engine", "fairness_probability",
           "pattern_draws",
           "posterior_of", "significance_census", "with_intervals"]

DEFAULT_DRAWS = 200
#: Blocks of draws per worker of :func:`fairness_probability` (what its bar counts).
DRAW_BLOCKS = 20
#: Where draws come from: the parameter posterior, or re-learning on resampled rows.
METHODS = ("posterior", "bootstrap")


def posterior_of(model, data=None, method: str = "posterior", structure: str = "clt"):
    """The draws' source for ``model`` (a circuit, a model file, a fitted
    :class:`~pcfair.learn.PCClassifier`).

    ``method="posterior"`` (default): the parameter posterior
    (:class:`~pcfair.inference.posterior.ParameterPosterior`), from the training counts the
    model carries, or from ``data`` (the training rows: a frame or CSV path; raw rows are read
    by the model's recipe). ``method="bootstrap"``: models re-learned with ``structure`` on
    resamples of ``data`` (:class:`~pcfair.learn.bootstrap.BootstrapPosterior`; needs
    ``data``), for structure uncertainty too.

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.learn import learn_pc
    >>> pc = learn_pc(pd.DataFrame({"d": [0, 1, 1, 0] * 25, "s": [0, 1, 1, 1] * 25}), "d")
    >>> posterior_of(pc).counts.rows
    100
    """
    from pcfair.tables.recipe import model_frame
    from pcfair.patterns.api import as_circuit

    if method not in METHODS:
        raise OptionError(f"method must be one of {METHODS}, not {method!r}")
    pc = as_circuit(model)
    if data is None:
        if method == "bootstrap":
            raise OptionError("method='bootstrap' re-learns the model: pass its training rows "
                              "as data=")
        return ParameterPosterior(pc)
    frame = model_frame(pc, data)
    missing = [n for n in pc.variables.names if n not in frame.columns]
    if missing:
        raise OptionError(f"the training data lack the model's variables {missing}")
    alpha = pc.counts.pseudocount if pc.counts is not None else 1.0
    if method == "bootstrap":
        decision = pc.recipe.decision if pc.recipe is not None else None
        if decision is None:
            raise OptionError("method='bootstrap' needs the model's decision; models learned "
                              "by pcfair record it")
        return BootstrapPosterior(pc, frame, decision, structure, alpha)
    codes = pc.variables.evidence_matrix(frame[list(pc.variables.names)])
    if (codes < 0).any():
        raise OptionError("the training data must be complete (no missing cells) to give the "
                          "parameter posterior")
    return ParameterPosterior(pc, parameter_counts(pc, codes, alpha))


def _check_level(credible: float, draws: int) -> None:
    if not 0 < credible < 1:
        raise OptionError(f"credible must be in (0, 1), got {credible}")
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or draws < 2:
        raise OptionError(f"draws must be an integer >= 2, got {draws!r}")


def pattern_draws(posterior: ParameterPosterior | BootstrapPosterior, decision, favorable,
                  patterns,
                  draws: int = DEFAULT_DRAWS, random_state=None
                  ) -> tuple[np.ndarray, np.ndarray]:
    """``Δ`` and ``P(x, y)`` of each pattern under each of ``draws`` posterior draws (arrays of
    shape ``(draws, len(patterns))``). ``Δ`` is NaN in a draw where ``P(x, y) = 0``."""
    pc = posterior.circuit
    names = pc.variables
    d = names.index(decision)
    fav = names.value_index(d, favorable)
    patterns = list(patterns)
    nv = pc.num_variables
    ev = np.full((4 * len(patterns) + 1, nv), -1, np.int32)  # last row: nothing observed
    for i, p in enumerate(patterns):
        y = names.encode_assignment(p.y)
        x = names.encode_assignment(p.x)
        for r, (obs, with_d) in enumerate(((y, False), (y, True), ({**y, **x}, False),
                                           ({**y, **x}, True))):
            row = ev[4 * i + r]
            for v, k in obs.items():
                row[v] = k
            if with_d:
                row[d] = fav
    scores = np.empty((draws, len(patterns)))
    probs = np.empty((draws, len(patterns)))
    for t, circuit in enumerate(posterior.circuits(draws, random_state)):
        lp = log_marginals(circuit, ev)
        z = lp[-1]
        lp = lp[:-1].reshape(len(patterns), 4)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            p_d_y = np.exp(lp[:, 1] - lp[:, 0])
            p_d_xy = np.exp(lp[:, 3] - lp[:, 2])
        probs[t] = np.exp(lp[:, 2] - z)
        # undefined where P(x, y) = 0 exactly (its log is −inf), not where it underflows
        scores[t] = np.where(lp[:, 2] > -np.inf, p_d_xy - p_d_y, np.nan)
    return scores, probs


def _quantiles(a: np.ndarray, credible: float) -> tuple[np.ndarray, np.ndarray]:
    tail = (1 - credible) / 2
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a pattern undefined in every draw: NaN
        lo, hi = np.nanquantile(a, [tail, 1 - tail], axis=0)
    return lo, hi


def with_intervals(result, model, *, credible: float = 0.95, draws: int = DEFAULT_DRAWS,
                   data=None, random_state=None, delta: float | None = None,
                   method: str = "posterior", structure: str = "clt"):
    """A copy of ``result`` (a :class:`~pcfair.patterns.api.Certificate` or
    :class:`~pcfair.patterns.api.PatternSet`) whose patterns carry credible intervals
    (:attr:`Pattern.interval`: the level, ``score`` / ``abs_score`` / ``probability``
    intervals, ``exceeds`` = the posterior probability of ``|Δ| > δ``, and ``significant``).

    Parameters
    ----------
    result : Certificate or PatternSet
        From :func:`pcfair.certify` / :func:`pcfair.find_patterns` on ``model``.
    model : Circuit, model file or fitted PCClassifier
    credible : float, default 0.95
        Level of the equal-tailed intervals, and the bar of ``significant``.
    draws : int, default 200
    data : DataFrame or CSV path, optional
        The training rows, for a model that carries no counts.
    random_state : None, int or Generator
    delta : float, optional
        Threshold of ``exceeds`` (default: the result's δ).
    method, structure
        ``"posterior"`` (parameters, structure fixed) or ``"bootstrap"`` (re-learned with
        ``structure`` on resampled ``data``): see :func:`posterior_of`.

    Examples
    --------
    >>> import pandas as pd, pcfair
    >>> from pcfair.learn import learn_pc
    >>> df = pd.DataFrame({"d": [1, 1, 0, 1, 0, 0] * 30, "s": [0, 0, 0, 1, 1, 1] * 30})
    >>> pc = learn_pc(df, "d")
    >>> cert = with_intervals(pcfair.certify(pc, "d", "s", 0.1), pc, random_state=0)
    >>> w = cert.witness
    >>> lo, hi = w.interval["score"]
    >>> bool(lo < w.score < hi), w.interval["significant"]
    (True, True)
    """
    _check_level(credible, draws)
    posterior = posterior_of(model, data, method, structure)
    delta = result.delta if delta is None else float(delta)
    patterns = [result.witness] if hasattr(result, "witness") else list(result.patterns)
    patterns = [p for p in patterns if p is not None]
    if not patterns:
        return result
    scores, probs = pattern_draws(posterior, result.decision, result.favorable, patterns,
                                  draws, random_state)
    s_lo, s_hi = _quantiles(scores, credible)
    a_lo, a_hi = _quantiles(np.abs(scores), credible)
    p_lo, p_hi = _quantiles(probs, credible)
    with np.errstate(invalid="ignore"):
        exceeds = np.nanmean(np.abs(scores) > delta + 1e-12, axis=0)
    out = []
    for j, p in enumerate(patterns):
        interval = {"level": credible, "draws": int(draws), "method": method,
                    "score": (float(s_lo[j]), float(s_hi[j])),
                    "abs_score": (float(a_lo[j]), float(a_hi[j])),
                    "probability": (float(p_lo[j]), float(p_hi[j])),
                    "exceeds": float(exceeds[j]), "significant": bool(exceeds[j] >= credible)}
        out.append(dataclasses.replace(p, interval=interval))
    if hasattr(result, "witness"):
        return dataclasses.replace(result, witness=out[0])
    return dataclasses.replace(result, patterns=out)


@dataclasses.dataclass(frozen=True)
class FairnessProbability:
    """The share of posterior draws certified δ-fair (see :func:`fairness_probability`)."""

    delta: float
    draws: int
    fair: int
    unfair: int
    incomplete: int
    seconds: float
    engine: str | None = None  # the concrete engine that certified every draw

    @property
    def probability(self) -> float:
        """``fair / draws``: the posterior probability of δ-fairness (a lower bound when some
        draws are incomplete)."""
        return self.fair / self.draws

    @property
    def upper(self) -> float:
        """``(fair + incomplete) / draws``: what it could be if every incomplete draw were
        fair."""
        return (self.fair + self.incomplete) / self.draws

    @property
    def stderr(self) -> float:
        """Monte-Carlo standard error of :attr:`probability`."""
        p = self.probability
        return math.sqrt(p * (1 - p) / self.draws)

    def to_dict(self) -> dict:
        return {"delta": self.delta, "draws": self.draws, "fair": self.fair,
                "unfair": self.unfair, "incomplete": self.incomplete,
                "probability": self.probability, "upper": self.upper,
                "stderr": self.stderr, "seconds": self.seconds, "engine": self.engine}

    def robustly_unfair(self, level: float) -> bool:
        """Whether at least a ``level`` share of the draws is certified unfair (the
        undecided counted as fair): the verdict "unfair" then holds at that credibility,
        whichever pattern witnesses it in each draw.

        Examples
        --------
        >>> FairnessProbability(0.1, 200, 0, 190, 10, 1.0).robustly_unfair(0.9)
        True
        >>> FairnessProbability(0.1, 200, 0, 170, 30, 1.0).robustly_unfair(0.9)
        False
        """
        return self.upper <= 1 - level + 1e-12  # 1 - 0.9 is 0.0999...98 in doubles

    def text(self) -> str:
        """One line for people."""
        out = (f"P(δ-fair at {self.delta:g}) = {self.probability:.3f} ± {self.stderr:.3f} "
               f"(Monte-Carlo s.e.; {self.fair} of {self.draws} posterior draws certified fair")
        if self.engine is not None:
            out += f" by {self.engine}"
        if self.incomplete:
            out += f", {self.incomplete} undecided: at most {self.upper:.3f}"
        return out + ")"


def _certify_draws(circuits, rows, decision, sensitive, delta: float,
                   options: dict) -> tuple[int, int, int]:
    """``(fair, unfair, incomplete)`` over the draws of a task of :func:`fairness_probability`:
    ``circuits`` one circuit (as :func:`~pcfair.circuit.io.json_io.to_dict`) with ``rows`` of
    raw log-parameters, or a sequence of circuits (``rows`` None)."""
    from pcfair.circuit.io.json_io import from_dict
    from pcfair.patterns.api import certify

    if rows is None:
        models = (from_dict(c) for c in circuits)
    else:
        circuit = from_dict(circuits)
        ne = len(circuit.edge_logw)
        models = (circuit.with_parameters(row[:ne], row[ne:]) for row in rows)
    counts = [0, 0, 0]
    for model in models:
        cert = certify(model, decision, sensitive, delta, **options)
        counts[{True: 0, False: 1, None: 2}[cert.fair]] += 1
    return tuple(counts)


def fairness_probability(model, decision, sensitive, delta: float, *,
                         draws: int = DEFAULT_DRAWS, favorable=None, data=None,
                         engine: str = "auto", time_limit: float | None = None,
                         random_state=None, n_jobs: int = 1, executor=None,
                         method: str = "posterior", structure: str = "clt",
                         progress: bool | None = None, **options) -> FairnessProbability:
    """The posterior probability that the model is δ-fair: every draw certified exactly.

    Parameters
    ----------
    model, decision, sensitive, delta, favorable
        As :func:`pcfair.certify`.
    draws : int, default 200
    data : DataFrame or CSV path, optional
        The training rows, for a model that carries no counts.
    engine : str, default "auto"
        The engine of every draw. ``"auto"`` is resolved once, on the point model, by
        :func:`draw_engine`: the draws share its choice instead of weighing the engines
        again for each draw (the probes would cost most of the time).
    time_limit : float, optional
        Seconds per draw; a draw cut by it is counted as incomplete, never fair.
    random_state : None, int or Generator
        The draws, hence the answer, depend only on it, not on ``n_jobs`` or ``executor``.
    n_jobs, executor
        Where the draws are certified: in this process (``n_jobs=1``), on ``n_jobs`` local
        processes, or on an executor / Dask client / scheduler address, in blocks of draws
        (:func:`pcfair.patterns.executors.map_chunks`); each draw's certification itself runs
        in one process.
    method, structure
        ``"posterior"`` or ``"bootstrap"``: see :func:`posterior_of`.
    progress : bool, optional
        A bar over the draws on standard error (default: when it is a terminal).
    **options
        Passed to :func:`pcfair.certify` (``min_support``...).

    Returns
    -------
    FairnessProbability
        With ``engine``, the concrete engine that certified the draws.

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.learn import learn_pc
    >>> df = pd.DataFrame({"d": [1, 0] * 100, "s": [0, 0, 1, 1] * 50})
    >>> fp = fairness_probability(learn_pc(df, "d"), "d", "s", 0.3, draws=50, random_state=0)
    >>> fp.probability, fp.incomplete
    (1.0, 0)
    """
    from pcfair.circuit.io.json_io import to_dict
    from pcfair.patterns.executors import map_chunks, resolve_n_jobs

    _check_level(0.5, draws)
    posterior = posterior_of(model, data, method, structure)
    t0 = time.perf_counter()
    rng = check_random_state(random_state)
    options = {"favorable": favorable, "time_limit": time_limit, "progress": False, **options}
    workers = 1 if executor is not None else resolve_n_jobs(n_jobs)
    # blocks of a few draws: the bar moves, and each block reads the circuit once
    parts = min(draws, DRAW_BLOCKS * workers if executor is None else max(1, draws // 10))
    if method == "bootstrap":  # each draw its own structure: the circuits travel
        circuits = list(posterior.circuits(draws, rng))
        options["engine"] = draw_engine(circuits[0], decision, sensitive, delta, engine,
                                        options)
        models = [to_dict(c) for c in circuits]
        tasks = [(block, None, decision, sensitive, float(delta), options)
                 for block in np.array_split(np.array(models, dtype=object), parts)]
    else:  # one structure: the parameter rows travel
        rows = posterior.sample_log_parameters(draws, rng)
        options["engine"] = draw_engine(posterior.circuit, decision, sensitive, delta, engine,
                                        options)
        circuit = to_dict(posterior.circuit)
        tasks = [(circuit, block, decision, sensitive, float(delta), options)
                 for block in np.array_split(rows, parts)]
    totals = np.zeros(3, np.int64)

    def merge(_, counts):
        totals[:] += counts

    map_chunks(_certify_draws, tasks, merge, executor=executor, n_jobs=n_jobs,
               progress=progress, desc=f"posterior draws ({draws}, in blocks)")
    return FairnessProbability(float(delta), int(draws), int(totals[0]), int(totals[1]),
                               int(totals[2]), time.perf_counter() - t0, options["engine"])


def draw_engine(point, decision, sensitive, delta: float, engine: str, options: dict) -> str:
    """The one engine that certifies every posterior draw (``options`` are
    :func:`pcfair.certify`'s): :func:`pcfair.patterns.engines.engine_for_repeats` on the
    ``point`` model (:func:`fairness_probability` passes the first draw with
    ``method="bootstrap"``: the re-learned models share the learner's kind of structure). A
    draw slower with it than it would be with another engine is still exact, and a draw cut
    by the time limit is counted incomplete.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.45, 0.55]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.5, 0.5]), 0.5)]))
    >>> draw_engine(pc, "d", ["s"], 0.05, "auto", {}), draw_engine(pc, "d", ["s"], 0.05,
    ...                                                            "search", {})
    ('lattice', 'search')
    """
    from pcfair.patterns import engines
    from pcfair.patterns._arguments import resolve_problem, resolve_request

    options = dict(options)
    problem = resolve_problem(point, decision, sensitive, options.pop("favorable", None))
    options.pop("engine", None)
    request = resolve_request("certify", delta, engine=engines.check_engine(engine, "certify"),
                              **options)
    return engines.engine_for_repeats(problem, request)

def significance_census(model, decision, sensitive, deltas=(0.01, 0.05, 0.1), *,
                        credible: float = 0.95, draws: int = DEFAULT_DRAWS, favorable=None,
                        data=None, random_state=None, max_patterns: int = 50_000,
                        **options):
    """How many of the model's discrimination patterns are significant, per threshold.

    For each δ: ``patterns``, the point model's patterns with ``|Δ| > δ`` (listed once, at the
    smallest δ, by :func:`pcfair.find_patterns`); ``significant``, those among them whose
    posterior probability of ``|Δ| > δ`` is at least ``credible`` (one set of ``draws``
    parameter draws shared by all patterns and thresholds); and ``share``. Only the point
    model's patterns are examined: a pattern with a point ``|Δ| ≤ δ`` whose posterior still
    puts ``credible`` mass above δ is possible (the posterior is not centred on the point
    estimate) but is not counted.

    Parameters
    ----------
    model, decision, sensitive, favorable
        As :func:`pcfair.certify`.
    deltas : sequence of float
    credible : float, default 0.95
    draws : int, default 200
    data : DataFrame or CSV path, optional
        The training rows, for a model that carries no counts.
    random_state : None, int or Generator
    max_patterns : int, default 50,000
        More patterns at the smallest δ is an :class:`~pcfair.errors.OptionError` (raise the
        smallest δ, or the cap).
    **options
        Passed to :func:`pcfair.find_patterns` (``engine``, ``time_limit``, ``min_support``...).

    Returns
    -------
    pandas.DataFrame
        Columns ``delta``, ``patterns``, ``significant``, ``share``, ``complete`` (the listing
        was complete).

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.learn import learn_pc
    >>> df = pd.DataFrame({"d": [1, 1, 0, 1, 0, 0] * 30, "s": [0, 0, 0, 1, 1, 1] * 30})
    >>> census = significance_census(learn_pc(df, "d"), "d", "s", (0.1, 0.5), random_state=0)
    >>> census[["delta", "patterns", "significant"]].values.tolist()
    [[0.1, 2.0, 2.0], [0.5, 0.0, 0.0]]
    """
    import pandas as pd

    from pcfair.patterns.api import find_patterns

    _check_level(credible, draws)
    deltas = sorted(float(d) for d in deltas)
    if not deltas:
        raise OptionError("deltas names no threshold")
    listed = find_patterns(model, decision, sensitive, deltas[0], favorable=favorable,
                           **options)
    if len(listed.patterns) > max_patterns:
        raise OptionError(f"{len(listed.patterns):,} patterns at δ = {deltas[0]}: more than "
                          f"max_patterns={max_patterns:,}; raise the smallest δ or the cap")
    posterior = posterior_of(model, data)
    scores, _ = (pattern_draws(posterior, listed.decision, listed.favorable, listed.patterns,
                               draws, random_state) if listed.patterns else
                 (np.empty((draws, 0)), None))
    point = np.array([p.abs_score for p in listed.patterns])
    rows = []
    for d in deltas:
        above = point > d + 1e-12
        with np.errstate(invalid="ignore"):
            exceeds = np.nanmean(np.abs(scores[:, above]) > d + 1e-12, axis=0)
        n, sig = int(above.sum()), int(np.sum(exceeds >= credible))
        rows.append({"delta": d, "patterns": float(n), "significant": float(sig),
                     "share": sig / n if n else float("nan"), "complete": listed.complete})
    return pd.DataFrame(rows)
