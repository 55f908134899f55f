"""Fair learning: maximum likelihood subject to the patterns the certifier finds, with a proof.

:func:`learn_fair_pc` generalises LearnFairNB (Choi et al., AAAI-20; ``ecosystem.md`` §6.4) from
naive Bayes to deterministic, structured-decomposable circuits, with open solvers:

1. learn a structure and its maximum-likelihood parameters;
2. ask :class:`pcfair.patterns.oracle.DiscriminationOracle` for the ``k`` most violating
   patterns; if there are none, stop with the certificate of a complete run;
3. add them to a cumulative constraint set ``|Δ(x, y)| ≤ δ − margin`` and re-fit the parameters:
   maximise the pseudocount-smoothed log-likelihood ``Σ_j m_j log w_j`` (``m_j`` are data
   flows, i.e. counts of rows through each element and leaf value, exact for deterministic
   circuits and complete data) over the softmax logits of every sum node and categorical leaf,
   subject to all constraints, with scipy's SLSQP, analytic gradients and Jacobians (circuit
   flows, :mod:`pcfair.inference.gradients`), warm-started from the previous solution; go to 2.

4. if the loop ends without a certificate (its budget spent, or the solver stuck) and the
   structure is a tree model (``"clt"``, ``"naive_bayes"``), *decouple*: move the tables that
   tie the sensitive variables to the rest a fraction λ of the way to tables that make them
   independent of the decision and the other features (:mod:`pcfair.learn.decouple`; at
   λ = 1 every Δ is exactly 0, proved there), and bisect λ for the least one a complete run
   certifies. The loop's constraints fix the common patterns at little cost in likelihood;
   decoupling fixes the long tail of rare ones (raw German: thousands of contexts) that the
   loop would constrain fifty at a time.

The returned model is called fair only when a complete certification run finds no pattern.

Baselines (same data, same smoothing):

- :func:`learn_mle_pc`: the unconstrained maximum-likelihood circuit on the same structure.
- :func:`learn_independent_pc`: the sensitive variables made independent of the decision *and*
  of the other features, ``P(S) · P(D, N)``: a Chow-Liu tree over ``S`` hung below the
  decision's tree with tables that ignore their parent there (``naive_bayes``: sensitive leaves
  tied across ``D``). Every Δ is then exactly 0, so it is δ-fair for every δ; it is the
  naive fix whose likelihood the fair model should beat.
- :func:`learn_repaired_pc`: the same structure fitted by weighted maximum likelihood on data
  *repaired by reweighing* (Kamiran & Calders, "Data preprocessing techniques for
  classification without discrimination", KAIS 2012): each row of sensitive assignment ``s``
  and decision ``d`` gets weight ``P(s) P(d) / P(s, d)`` (``s`` the joint assignment of all
  sensitive columns), which makes ``S`` and ``D`` independent in the weighted data. The
  structure is the one learned on the original rows.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from pcfair.circuit.circuit import Circuit
from pcfair.circuit.variables import Variables
from pcfair.errors import DataError, OptionError, StructureError
from pcfair.inference.flows import data_flows, parameter_counts
from pcfair.inference.gradients import SoftmaxParameters
from pcfair.inference.quotient import implicit_favorable
from pcfair.inference.marginals import log_marginals
from pcfair.learn.chow_liu import maximum_spanning_tree, mutual_information
from pcfair.learn.clt import (
    TreeModel,
    TreeStructure,
    compile_tree,
    learn_pc,
    learn_tree,
    tree_model,
)
from pcfair.tables.data import encode_frame, prepare_frame
from pcfair.learn.decouple import (
    blend_tables,
    decoupled_tables,
    decoupling_groups,
    tree_tables,
)
from pcfair.learn.naive_bayes import _nb_tables, _prior, naive_bayes_circuit
from pcfair.learn.parameters import conditional_table
from pcfair.tables.recipe import Recipe
from pcfair.patterns.api import certify
from pcfair.patterns.results import Certificate, Pattern
from pcfair.patterns.oracle import DiscriminationOracle, PatternScores

STRUCTURES = ("clt", "strudel", "naive_bayes")
SOLVER_OPTIONS = {"maxiter": 500, "ftol": 1e-10}


@dataclass(frozen=True)
class _Problem:
    """Encoded data and indices shared by the learner and the baselines."""

    codes: np.ndarray
    variables: Variables
    decision: int
    favorable: int
    sensitive: list[int]
    names: list[str]


def _problem(df: pd.DataFrame, decision, sensitive=(), favorable=None,
             variables: Variables | None = None) -> _Problem:
    if decision not in df.columns:
        raise DataError(f"decision column {decision!r} is not in the data; columns are "
                        f"{list(df.columns)}")
    sens = [sensitive] if isinstance(sensitive, (str, int)) else list(sensitive)
    missing = [s for s in sens if s not in df.columns]
    if missing:
        raise DataError(f"sensitive column(s) {missing} are not in the data; columns are "
                        f"{list(df.columns)}")
    if decision in sens:
        raise DataError(f"the decision column {decision!r} cannot be sensitive")
    if variables is not None:
        df = df[list(variables.names)]
    codes, variables = encode_frame(df, variables)
    d = variables.index(str(decision))
    if variables.cardinalities[d] != 2:
        raise DataError(f"the decision column {decision!r} must be binary, it has values "
                        f"{list(variables.domains[d])}")
    fav = -1 if favorable is None else variables.value_index(d, favorable)
    return _Problem(codes, variables, d, fav,
                    sorted(variables.index(str(s)) for s in sens), [str(c) for c in df.columns])


def _structure(df: pd.DataFrame, prob: _Problem, structure, pseudocount: float,
               random_state, sensitive_last: bool = False) -> tuple[Circuit, TreeModel | None]:
    """The circuit whose structure is learned or given (parameters are re-fitted later), and
    its tree model where it is one (``"clt"``, ``"naive_bayes"``; with ``sensitive_last``
    the Chow-Liu tree has no non-sensitive feature below a sensitive one,
    :func:`pcfair.learn.clt.learn_tree`)."""
    if isinstance(structure, Circuit):
        rep = structure.properties()
        if not rep.deterministic:
            raise StructureError("fair learning fits parameters from data flows, which needs a "
                                 "deterministic circuit; this one is not (or undecided)")
        return structure, None
    if structure not in STRUCTURES:
        raise OptionError(f"structure must be one of {STRUCTURES} or a Circuit, not "
                         f"{structure!r}")
    if structure == "strudel":
        return learn_pc(df[prob.names], prob.names[prob.decision], structure=structure,
                        pseudocount=pseudocount, random_state=random_state), None
    model = tree_model(prob.codes, prob.variables, prob.decision, pseudocount,
                       naive_bayes=structure == "naive_bayes",
                       last=prob.sensitive if sensitive_last else ())
    return _with_counts(model.circuit, prob.codes, pseudocount), model


def _with_counts(circuit: Circuit, codes: np.ndarray, pseudocount: float) -> Circuit:
    """``circuit`` with its training counts (the parameter posterior), as :func:`learn_pc`."""
    return circuit.with_counts(parameter_counts(circuit, codes, pseudocount))


def _fit(template: Circuit, codes: np.ndarray, pseudocount: float,
         weights: np.ndarray | None = None) -> tuple[SoftmaxParameters, np.ndarray, np.ndarray]:
    """Softmax parameterisation of ``template``, smoothed counts per logit, and the
    maximum-likelihood logits."""
    sp = SoftmaxParameters.from_circuit(template)
    elem, leaf, _ = data_flows(template, codes, weights)
    counts = sp.statistics(np.concatenate([elem, leaf]), pseudocount)
    return sp, counts, sp.maximum_likelihood(counts)


# ---------------------------------------------------------------------------- baselines
def learn_mle_pc(df: pd.DataFrame, decision: str, structure="clt", pseudocount: float = 1.0,
                 random_state=None) -> Circuit:
    """The unconstrained maximum-likelihood circuit (the fair learner's starting point).

    Parameters are the closed-form estimates from data flows with the pseudocount spread over
    each group's entries (as :func:`pcfair.learn.parameters.fit_parameters`).

    Examples
    --------
    >>> df = pd.DataFrame({"d": [0, 1, 1, 0], "s": [0, 1, 1, 1]})
    >>> pc = learn_mle_pc(df, "d", structure="naive_bayes", pseudocount=0.0)
    >>> round(float(pc.conditional({"d": 1}, {"s": 1})), 4)
    0.6667
    """
    prob = _problem(df, decision)
    template, _ = _structure(df, prob, structure, pseudocount, random_state)
    sp, _, theta = _fit(template, prob.codes, pseudocount)
    return sp.circuit(theta)


def learn_independent_pc(df: pd.DataFrame, decision: str, sensitive, structure="clt",
                         pseudocount: float = 1.0) -> Circuit:
    """The baseline with the sensitive variables independent of everything else.

    ``P(D, N, S) = P(S) · P(D, N)`` (module docstring): for ``"clt"`` (and ``"strudel"``, whose
    baseline is this CLT form) a Chow-Liu tree over ``D`` and the non-sensitive features, with a
    Chow-Liu tree over the sensitive ones attached whose root ignores its parent; for
    ``"naive_bayes"`` the sensitive leaves are ``P(s)`` under both decision values. Every
    pattern has ``Δ = 0``.

    Examples
    --------
    >>> df = pd.DataFrame({"d": [0, 1, 1, 0, 1], "s": [0, 1, 1, 0, 0], "z": [0, 1, 0, 0, 1]})
    >>> pc = learn_independent_pc(df, "d", ["s"])
    >>> abs(pc.conditional({"d": 1}, {"s": 1, "z": 1}) - pc.conditional({"d": 1}, {"z": 1})) < 1e-12
    True
    """
    return _independent_circuit(_problem(df, decision, sensitive), structure, pseudocount)


def _independent_circuit(prob: _Problem, structure, pseudocount: float) -> Circuit:
    """:func:`learn_independent_pc` on encoded data (``structure`` a name or a given
    circuit, whose baseline is the CLT form)."""
    codes, cards, d, sens = prob.codes, prob.variables.cardinalities, prob.decision, prob.sensitive
    n = codes.shape[1]
    if isinstance(structure, Circuit):
        structure = "clt"
    if structure == "naive_bayes":
        feats = [v for v in range(n) if v != d]
        return naive_bayes_circuit(prob.variables, d, _prior(codes, cards, d, None, pseudocount),
                                   _nb_tables(codes, cards, d, feats, pseudocount, pooled=sens))
    if structure not in ("clt", "strudel"):
        raise OptionError(f"the independent baseline is built for 'clt', 'strudel' or "
                         f"'naive_bayes', not {structure!r}")
    other = [d] + [v for v in range(n) if v != d and v not in sens]
    local = learn_tree(codes[:, other], cards[other], 0, pseudocount)
    parent = np.full(n, -1, np.int64)
    for i, p in enumerate(local.parent):
        if p >= 0:
            parent[other[i]] = other[p]
    anchor = other[int(np.flatnonzero(local.parent == 0)[0])] if len(other) > 1 else d
    s_tree = maximum_spanning_tree(mutual_information(codes[:, sens], cards[sens], pseudocount))
    for i, p in enumerate(s_tree):
        parent[sens[i]] = sens[p] if p >= 0 else anchor
    const = np.column_stack([codes, np.zeros(len(codes), np.int32)])
    cards_c = np.append(cards, 1)
    c = n
    kd = int(cards[d])
    tables = {}
    for v in range(n):
        if v == d:
            continue
        if v not in sens:
            tables[v] = conditional_table(codes, cards, v, int(parent[v]), d, pseudocount)
            continue
        u = int(parent[v])
        ku = int(cards[u])
        if u in sens:  # P(s | parent s), pooled over D
            t = conditional_table(const, cards_c, v, u, c, pseudocount)
        else:  # the sensitive tree's root: P(s), whatever its parent and D
            t = np.repeat(conditional_table(const, cards_c, v, c, c, pseudocount), ku, axis=1)
        tables[v] = np.repeat(t, kd, axis=0)
    tree = TreeStructure(d, tuple(v for v in range(n) if v != d), parent, np.zeros((0, 0)))
    return compile_tree(prob.variables, tree, _prior(codes, cards, d, None, pseudocount), tables)


def reweighing_weights(df: pd.DataFrame, decision: str, sensitive) -> np.ndarray:
    """Kamiran & Calders reweighing: ``w(s, d) = P(s) P(d) / P(s, d)`` per row, ``s`` the joint
    assignment of the sensitive columns. The weighted data has ``S`` independent of ``D`` and
    the same total weight as rows.

    Examples
    --------
    >>> df = pd.DataFrame({"d": [1, 1, 1, 0], "s": [1, 1, 0, 0]})
    >>> reweighing_weights(df, "d", ["s"]).round(3).tolist()
    [0.75, 0.75, 1.5, 0.5]
    """
    sens = [sensitive] if isinstance(sensitive, (str, int)) else list(sensitive)
    s_key = df[sens].astype(str).agg("|".join, axis=1) if sens else pd.Series("", index=df.index)
    d_key = df[decision].astype(str)
    n = len(df)
    p_s = s_key.map(s_key.value_counts() / n)
    p_d = d_key.map(d_key.value_counts() / n)
    joint = s_key + "#" + d_key
    p_sd = joint.map(joint.value_counts() / n)
    return (p_s * p_d / p_sd).to_numpy(float)


def learn_repaired_pc(df: pd.DataFrame, decision: str, sensitive, structure="clt",
                      pseudocount: float = 1.0, random_state=None) -> Circuit:
    """The same structure fitted by weighted maximum likelihood on reweighed data
    (:func:`reweighing_weights`; the structure is learned on the original rows).

    Examples
    --------
    >>> df = pd.DataFrame({"d": [1, 1, 1, 0, 0, 0, 1, 0], "s": [1, 1, 0, 0, 1, 0, 1, 0]})
    >>> mle = learn_mle_pc(df, "d", structure="naive_bayes", pseudocount=0.0)
    >>> repaired = learn_repaired_pc(df, "d", ["s"], structure="naive_bayes", pseudocount=0.0)
    >>> mle.conditional({"d": 1}, {"s": 1}), round(repaired.conditional({"d": 1}, {"s": 1}), 12)
    (0.75, 0.5)
    """
    prob = _problem(df, decision, sensitive)
    template, _ = _structure(df, prob, structure, pseudocount, random_state)
    weights = reweighing_weights(df, decision, sensitive)
    sp, _, theta = _fit(template, prob.codes, pseudocount, weights)
    return sp.circuit(theta)


# ---------------------------------------------------------------------------- fair learning
@dataclass
class FairLearningResult:
    """What :func:`learn_fair_pc` returns.

    Attributes
    ----------
    circuit : Circuit
        The final model.
    fair : bool or None
        True only when ``certificate`` is a complete run that found no pattern; False when a
        pattern remains (``certificate.witness``); None when the last certification run was
        incomplete.
    certificate : Certificate
        The final certification run.
    history : DataFrame
        One row per oracle call: ``iteration``, ``log_likelihood`` (mean per training row),
        ``n_constraints`` (patterns constrained so far), ``patterns_found`` (top-k returned),
        ``patterns_remaining`` (all patterns above δ, counted by the lattice engine; NaN when not
        counted), ``max_abs_score`` (largest |Δ| among those found), ``max_violation`` (largest
        ``|Δ| − δ`` over the constrained patterns), ``solver`` (message of the re-fit that
        produced the model) and ``seconds`` (since the start).
    patterns : list of Pattern
        The constrained patterns, in the order they were added.
    mle_circuit : Circuit
        The unconstrained maximum-likelihood model on the same structure.
    status : str
        Why the loop stopped (and, where it ran, how the decoupling ended, and whether the
        independent baseline was returned).
    decoupling : DataFrame
        One row per certification on the decoupling path: ``phase`` (``all``, ``shared``, or
        the sensitive variable whose weight moves), ``lambda[<name>]`` per sensitive
        variable, ``fair``, ``complete``, ``log_likelihood`` (mean per training row) and
        ``seconds``; empty where the loop certified its model or decoupling was off or not
        available.
    """

    circuit: Circuit
    fair: bool | None
    certificate: Certificate
    history: pd.DataFrame
    patterns: list[Pattern]
    mle_circuit: Circuit
    status: str
    decoupling: pd.DataFrame = field(default_factory=pd.DataFrame)
    stats: dict = field(default_factory=dict)
    baseline_circuit: Circuit | None = None

    def log_likelihoods(self, df: pd.DataFrame) -> dict[str, float]:
        """Mean log-likelihood per row of ``df`` (raw values are read by the models' recipe)
        under the result, the maximum-likelihood model and the independent baseline
        (:func:`learn_independent_pc`): what fairness cost, and what the trivially fair model
        would have cost. ``stats["log_likelihood"]`` holds it for the training rows.

        Examples
        --------
        >>> from pcfair.datasets import make_planted
        >>> data, _ = make_planted(2000, n_features=4, effect=0.3, random_state=0)
        >>> res = learn_fair_pc(data.frame, "D", data.sensitive, 0.1, k=5)
        >>> ll = res.log_likelihoods(data.frame)
        >>> ll["independent"] <= ll["result"] <= ll["mle"]
        True
        """
        models = {"result": self.circuit, "mle": self.mle_circuit,
                  "independent": self.baseline_circuit}
        return {name: float(pc.log_marginal(df).mean()) for name, pc in models.items()
                if pc is not None}

    @property
    def iterations(self) -> int:
        """Number of constrained re-fits."""
        return int(self.history["iteration"].max()) if len(self.history) else 0

    @property
    def num_constraints(self) -> int:
        """Number of constrained patterns (each gives two inequalities)."""
        return len(self.patterns)


def _single_threaded_blas():
    """SLSQP's subproblems are small dense least-squares problems, where BLAS threads only add
    synchronisation (measured 6x slower on 2 cores). threadpoolctl comes with scikit-learn."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - scikit-learn requires it
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


def _history_row(iteration: int, circuit: Circuit, codes: np.ndarray, found, values: np.ndarray,
                 n_constraints: int, delta: float, solver_msg: str, t0: float) -> dict:
    """One row of :attr:`FairLearningResult.history` (``values``: Δ of the constrained
    patterns under ``circuit``)."""
    return {
        "iteration": iteration,
        "log_likelihood": float(log_marginals(circuit, codes).mean()),
        "n_constraints": n_constraints,
        "patterns_found": len(found.constraints),
        "patterns_remaining": np.nan if found.count is None else found.count,
        "max_abs_score": max((abs(c.pattern.score) for c in found.constraints), default=0.0),
        "max_violation": float(np.max(np.abs(values)) - delta) if len(values) else np.nan,
        "solver": solver_msg,
        "seconds": time.perf_counter() - t0,
    }


def _stop_reason(found, iteration: int, max_iter: int, time_limit: float | None,
                 t0: float) -> str:
    """Why the loop stops after this oracle call ("" to go on)."""
    if found.fair is True:
        return "certified fair"
    if found.fair is None:
        return "stopped: the oracle's run was incomplete and found no pattern"
    if iteration >= max_iter:
        return f"stopped after max_iter={max_iter} re-fits with patterns left"
    if time_limit is not None and time.perf_counter() - t0 > time_limit:
        return f"stopped by time_limit={time_limit} s with patterns left"
    return ""


#: Pseudocount below which the parameter floor of the re-fits stops shrinking
#: (:func:`parameter_floor`).
FLOOR_PSEUDOCOUNT = 0.01

#: Nats per training row by which a re-fit may fall below the independent baseline before it
#: is rejected, and by which a returned model may (it never does: it is the better of the two).
BASELINE_TOLERANCE = 0.05


def parameter_floor(pseudocount: float, rows: int) -> float:
    """The least ratio ``ε`` of a free weight to the largest weight of its group in the
    constrained re-fits of :func:`learn_fair_pc`.

    ``ε = max(α, 0.01) / (2 (N + 1))`` for pseudocount ``α`` and ``N`` training rows: half
    the share that a pseudocount of ``max(α, 0.01)`` gives a value no row has. The re-fits keep
    every logit in ``[min(log ε, η̂_j), 0]``, ``η̂_j`` the centred maximum-likelihood logit (so
    the start is always inside).

    **Floor.** Logits are invariant to a shift within their group, so centring costs nothing.
    With ``η_j ∈ [log ε_j, 0]`` every free weight of a group of ``K`` free entries whose
    free mass is ``c`` is ``c e^{η_j} / Σ_i e^{η_i} ≥ c ε_j / K`` (each ``e^{η_i} ≤ 1``).
    So every positive weight stays above a fixed positive number, every training row keeps a
    positive probability (its path's weights are positive at the MLE, so at every re-fit),
    and no re-fit can meet a constraint by driving a pattern's probability towards 0 (the
    failure of an unbounded solver: logits at −10⁴).

    Examples
    --------
    >>> round(parameter_floor(1.0, 99), 6)
    0.005
    """
    return max(float(pseudocount), FLOOR_PSEUDOCOUNT) / (2.0 * (int(rows) + 1))


def _centred(sp: SoftmaxParameters, theta: np.ndarray) -> np.ndarray:
    """``theta`` shifted so that each group's largest logit is 0 (the same weights)."""
    theta = np.asarray(theta, np.float64)
    if len(theta) == 0:
        return theta.copy()
    return theta - np.repeat(np.maximum.reduceat(theta, sp.starts), sp.group_sizes)


def _refit_rejection(values: np.ndarray, bound: float, tolerance: float, row_ll: np.ndarray,
                     baseline_ll: float) -> str:
    """Why a re-fit is not kept ("" when it is).

    A re-fit is kept when it is feasible for the constraints it was given (every constrained
    ``|Δ| ≤ bound + tolerance``, by log-space marginals, whatever the solver's message), every
    training row has a positive probability, and its mean training log-likelihood is not below
    the independent baseline's by more than :data:`BASELINE_TOLERANCE`: that model meets every
    constraint (all its Δ are 0), so a re-fit worse than it lost more than its constraints
    explain.
    """
    if not np.all(np.isfinite(row_ll)):
        return "gives a training row probability 0"
    if len(values) and not np.all(np.abs(values) <= bound + tolerance):
        worst = float(np.nanmax(np.abs(values))) if np.any(np.isfinite(values)) else np.nan
        return f"leaves a constrained pattern at |Δ| = {worst:.4f} above {bound:.4f}"
    mean = float(row_ll.mean())
    if mean < baseline_ll - BASELINE_TOLERANCE:
        return (f"has training log-likelihood {mean:.6f} per row, below the independent "
                f"baseline's {baseline_ll:.6f}")
    return ""


def _solve(sp: SoftmaxParameters, counts: np.ndarray, scores: PatternScores, theta0: np.ndarray,
           bound: float, lower: np.ndarray, options: dict):
    """Maximise the smoothed log-likelihood subject to ``|Δ| ≤ bound`` for every pattern, with
    the centred logits in ``[lower, 0]`` (:func:`parameter_floor`)."""
    from scipy.optimize import minimize

    scale = 1.0 / max(float(counts.sum()), 1.0)
    memo: dict = {}

    def constraint_parts(theta):
        key = theta.tobytes()
        if memo.get("key") != key:
            memo["key"] = key
            memo["value"] = scores(theta)
        return memo["value"]

    def objective(theta):
        v, g = sp.weighted_log_likelihood(theta, counts)
        return -v * scale, -g * scale

    def fun(theta):
        v, _ = constraint_parts(theta)
        return np.concatenate([bound - v, bound + v])

    def jac(theta):
        _, g = constraint_parts(theta)
        return np.vstack([-g, g])

    start = np.clip(_centred(sp, theta0), lower, 0.0)
    with _single_threaded_blas():
        return minimize(objective, start, jac=True, method="SLSQP",
                        bounds=list(zip(lower, np.zeros_like(lower))),
                        constraints=[{"type": "ineq", "fun": fun, "jac": jac}],
                        options={**SOLVER_OPTIONS, **options})


#: Default seconds of one oracle call of :func:`learn_fair_pc`.
ORACLE_SECONDS = 30.0


def learn_fair_pc(df: pd.DataFrame, decision: str, sensitive, delta: float, structure="clt",
                  k: int = 10, rank_by: str = "divergence", max_iter: int = 30,
                  time_limit: float | None = None, pseudocount: float = 1.0,
                  random_state=None, *, favorable=None, engine: str = "auto",
                  margin: float | None = None, oracle_time_limit: float | None = ORACLE_SECONDS,
                  certify_time_limit: float | None = None, count_patterns: bool = True,
                  solver_options: dict | None = None, bins=None, decouple: bool = True,
                  decouple_steps: int = 6, decouple_time_limit: float | None = 600.0,
                  fallback: bool = True, verbose: bool = False,
                  progress: bool | None = None) -> FairLearningResult:
    """Learn a circuit by maximum likelihood subject to δ-fairness, and certify it.

    Parameters
    ----------
    df : DataFrame
        Complete categorical data, decision column included. A continuous column (numeric,
        more than 20 distinct values) is refused unless ``bins`` is given, as in
        :func:`pcfair.learn_pc`.
    decision : str
        The binary decision column ``D``.
    sensitive : str or sequence of str
        Sensitive columns.
    delta : float
        The fairness threshold: the result should have no pattern with ``|Δ| > delta``.
    structure : {"clt", "strudel", "naive_bayes"} or Circuit
        The structure learner (:func:`pcfair.learn_pc`, or naive Bayes built here), or a
        deterministic circuit whose structure is kept (its variables must be columns of
        ``df``). With ``decouple`` (the default), ``"clt"`` is the best Chow-Liu tree with
        the sensitive features last (:func:`pcfair.learn.clt.learn_tree`'s ``last``): no
        other feature hangs below a sensitive one, so decoupling moves only the sensitive
        features' own tables (at λ = 1 they are independent of the rest, as in
        :func:`learn_independent_pc`, and the rest keeps its learned tree). On raw
        German this start costs 0.034 nats per row (−19.499 against −19.465 for the plain
        tree) and the fully decoupled end gains 0.08 (−19.626 against −19.707).
    k : int, default 10
        Patterns added per iteration (the oracle's top-k).
    rank_by : {"divergence", "discrimination"}, default "divergence"
        How the oracle ranks violations.
    max_iter : int, default 30
        Most constrained re-fits.
    time_limit : float, optional
        Seconds for the loop (checked between iterations; the remaining time also limits each
        search-engine oracle run).
    pseudocount : float, default 1.0
        Laplace pseudocount of the structure learner and of the likelihood.
    random_state : None, int or Generator
        For the Strudel structure learner.
    favorable : value, optional
        The favourable decision value ``d``; needed unless the decision's values are 0 and 1
        (then 1), or ``structure`` is a circuit whose recipe records it.
    engine : {"auto", "lattice", "search"}
        Certifier engine for the oracle and the final certificate.
    margin : float, optional
        Constraints are ``|Δ| ≤ δ − margin`` (default ``0.05 δ``). Some margin is needed
        because the certifier's test is strict and the solver's tolerance could leave a
        constrained pattern just above δ; a few percent of δ also pulls the unconstrained
        neighbours of constrained patterns below δ, so the loop needs fewer iterations (on
        Adult at δ = 0.05: 34 iterations with ``margin=1e-4``, 26 with ``0.05 δ``, for a
        training log-likelihood 0.0012 per row lower). Doubled when an iteration finds only
        patterns already constrained.
    oracle_time_limit : float or None, default ORACLE_SECONDS (30)
        Seconds for each oracle call (None: no limit). A top-k cut short still returns
        valid constraints, and where it found none the oracle certifies (as long again) and
        constrains the witness (:class:`~pcfair.patterns.oracle.DiscriminationOracle`), so
        on models whose exact top-k takes long (raw German: hours) the loop goes on instead
        of spending its whole time in the first call. A call that finds nothing and proves
        nothing (both runs cut) is repeated on the same model with twice the time, while
        ``max_iter`` and ``time_limit`` allow. Only the final certification must be complete.
    certify_time_limit : float, optional
        Seconds for the final certification of the loop's model (None: until it is
        complete; where decoupling would follow an incomplete run, at most
        :data:`DECOUPLE_PROBE_SECONDS`, as each certification on its path).
    count_patterns : bool, default True
        Count all remaining patterns at each iteration when the lattice engine runs.
    solver_options : dict, optional
        Passed to ``scipy.optimize.minimize(method="SLSQP")`` (default ``maxiter=500,
        ftol=1e-10``).
    bins : int or mapping of str to int, optional
        Quantile-bin the continuous columns (see :func:`pcfair.learn_pc`).
    decouple : bool, default True
        Where the loop ends without a certificate and the structure is a tree model
        (``"clt"``, ``"naive_bayes"``), move the sensitive variables' tables a fraction λ of
        the way to tables that make them independent of the decision and the other features
        (:mod:`pcfair.learn.decouple`; at λ = 1 every Δ is 0, proved there), and return the
        model of the least λ found that a complete run certifies: λ = 1 first, then
        ``decouple_steps`` bisection steps on one λ shared by the sensitive variables, then
        as many on each variable's own λ (``_decouple_until_certified``). The steps are in
        :attr:`FairLearningResult.decoupling`; the weights, by variable name, in
        ``stats["decouple_lambda"]`` (None where decoupling did not run or found nothing).
    decouple_steps : int, default 6
        Bisection steps per phase (λ to 2**-steps).
    decouple_time_limit : float or None, default 600
        Seconds for the decoupling (None: no limit). Each certification on the path gets at
        most :data:`DECOUPLE_PROBE_SECONDS` (60) of them; a run cut short counts as not
        certified, and the bisection stops when the time is spent.
    fallback : bool, default True
        Return the independent baseline (:func:`learn_independent_pc`, certified by its own
        run) where it is at least as likely on the training rows as the certified result, or
        where no certified result was found: the learner never returns a model worse than the
        trivially fair one, and says so in ``status`` (``stats["baseline_returned"]``).
    verbose : bool, default False
        Print one line per oracle call (iteration, patterns left, mean log-likelihood,
        constraints, largest |Δ| found, seconds) and the reason the loop stopped.
    progress : bool, optional
        A progress bar over the iterations on stderr (default: when stderr is a terminal).

    Returns
    -------
    FairLearningResult

    Raises
    ------
    DataError
        Missing columns or values, or a non-binary decision.
    StructureError
        A given circuit that is not deterministic.

    Notes
    -----
    The problem is non-convex; SLSQP returns a local optimum, and the constraint set only holds
    the patterns found so far. Neither matters for soundness: the loop ends with "fair" only
    when the certifier proves it. Zero weights stay zero (the support is fixed). Constraint
    form: both ``δ − margin − Δ ≥ 0`` and ``δ − margin + Δ ≥ 0`` for every pattern
    (:meth:`pcfair.patterns.oracle.PatternConstraint.inequalities`).

    Only progress is kept: every weight stays above a floor (:func:`parameter_floor`), and a
    re-fit that is infeasible for its constraints, gives a training row probability 0, or
    falls below the independent baseline is rejected (``_refit_rejection``): the loop stops
    there, says why in ``status``, and decoupling starts from the last kept model (the MLE
    where none was). ``stats["log_likelihood"]`` holds the mean training log-likelihood of
    the result, the MLE and the baseline (:meth:`FairLearningResult.log_likelihoods` on other
    rows).

    Examples
    --------
    >>> from pcfair.datasets import make_planted
    >>> data, _ = make_planted(3000, n_features=4, effect=0.3, random_state=0)
    >>> res = learn_fair_pc(data.frame, "D", data.sensitive, 0.1, k=5)
    >>> res.fair, res.certificate.complete
    (True, True)
    """
    t0 = time.perf_counter()
    if not 0 < float(delta) < 1:
        raise OptionError(f"delta must be in (0, 1), got {delta}")
    if int(decouple_steps) < 0:
        raise OptionError(f"decouple_steps must be >= 0, got {decouple_steps}")
    margin = 0.05 * float(delta) if margin is None else float(margin)
    if margin < 0 or margin >= delta:
        raise OptionError(f"margin must be in [0, delta), got {margin}")
    columns, edges = tuple(str(c) for c in df.columns), {}
    if bins is not None or not isinstance(structure, Circuit):
        df, edges = prepare_frame(df, decision, bins)
    from pcfair.learn.strudel import progress_bar

    bar = progress_bar(progress, max_iter + 1, "fair learning", "iteration")
    try:
        res = _learn_fair(df, decision, sensitive, delta, structure, k, rank_by, max_iter,
                          time_limit, pseudocount, random_state, favorable, engine, margin,
                          oracle_time_limit, certify_time_limit, count_patterns,
                          solver_options, verbose, bar, t0,
                          (int(decouple_steps), decouple_time_limit) if decouple else None,
                          fallback)
    finally:
        bar.close()
    given = structure.recipe if isinstance(structure, Circuit) and not edges else None
    recipe = (dataclasses.replace(given, decision=str(decision), rows=len(df),
                                  favorable=res.certificate.favorable) if given is not None else
              Recipe(columns=columns, bins={c: tuple(map(float, e)) for c, e in edges.items()},
                     decision=str(decision), favorable=res.certificate.favorable, rows=len(df)))
    # a given circuit's recipe (its bins) is kept; the baselines read raw rows as the result
    res.circuit = res.circuit.with_recipe(recipe)
    res.mle_circuit = res.mle_circuit.with_recipe(recipe)
    res.baseline_circuit = res.baseline_circuit.with_recipe(recipe)
    return res


def _say(bar, line: str) -> None:
    """Print a verbose line above the progress bar (or plainly when it is off)."""
    if bar.disable:
        print(line, flush=True)
    else:
        bar.write(line)


def _iteration_line(row: dict) -> str:
    left = ("uncounted" if np.isnan(row["patterns_remaining"])
            else f"{int(row['patterns_remaining']):,}")
    return (f"iteration {row['iteration']}: {left} pattern(s) left "
            f"({row['patterns_found']} found), log-likelihood {row['log_likelihood']:.6f} per "
            f"row, {row['n_constraints']} constraint(s), max |Δ| found "
            f"{row['max_abs_score']:.4f}, {row['seconds']:.1f} s")


def _learn_fair(df, decision, sensitive, delta, structure, k, rank_by, max_iter, time_limit,
                pseudocount, random_state, favorable, engine, margin, oracle_time_limit,
                certify_time_limit, count_patterns, solver_options, verbose, bar, t0,
                decouple, fallback):
    recipe = structure.recipe if isinstance(structure, Circuit) else None
    if favorable is None and recipe is not None and recipe.decision == str(decision):
        favorable = recipe.favorable  # a given model's recorded value (None if it has none)
    if favorable is None:  # the value 1 where the decision's values say 0 and 1
        labels = list(pd.unique(df[decision].dropna()))
        code = implicit_favorable(labels)
        if code is None:
            raise OptionError(f"name the favourable value of the decision {decision!r} "
                              f"(favorable= / --favorable): its values are "
                              f"{sorted(map(str, labels))}, not 0 and 1")
        favorable = labels[code]
    prob = _problem(df, decision, sensitive, favorable,
                    structure.variables if isinstance(structure, Circuit) else None)
    template, model = _structure(df, prob, structure, pseudocount, random_state,
                                 sensitive_last=decouple is not None)
    sp, counts, theta = _fit(template, prob.codes, pseudocount)
    mle = sp.circuit(theta)
    baseline = _with_counts(_independent_circuit(prob, structure, pseudocount), prob.codes,
                            pseudocount)
    baseline_ll = float(log_marginals(baseline, prob.codes).mean())
    lower = np.minimum(np.log(parameter_floor(pseudocount, len(prob.codes))), _centred(sp, theta))
    names = [prob.variables.names[v] for v in prob.sensitive]
    oracle = DiscriminationOracle(prob.variables.names[prob.decision], names, delta,
                                  rank_by=rank_by, k=k, engine=engine, favorable=favorable,
                                  count_patterns=count_patterns)
    patterns: list[Pattern] = []
    index_form: list[tuple[dict, dict]] = []
    seen: set = set()
    scores = PatternScores(sp, prob.decision, prob.favorable, [])
    rows: list[dict] = []
    solver_msg = ""
    circuit = mle
    while True:
        remaining = None if time_limit is None else time_limit - (time.perf_counter() - t0)
        limits = [t for t in (oracle_time_limit, remaining) if t is not None]
        oracle.time_limit = max(min(limits), 1.0) if limits else None
        found = oracle(circuit)
        rows.append(_history_row(len(rows), circuit, prob.codes, found, scores(theta)[0],
                                 len(patterns), delta, solver_msg, t0))
        bar.update(1)
        left = rows[-1]["patterns_remaining"]
        bar.set_postfix(left="?" if np.isnan(left) else int(left),
                        ll=f"{rows[-1]['log_likelihood']:.4f}", refresh=False)
        if verbose:
            _say(bar, _iteration_line(rows[-1]))
        if found.fair is None and oracle_time_limit is not None and \
                len(rows) <= max_iter and (time_limit is None or time_limit - (
                    time.perf_counter() - t0) > 2 * oracle_time_limit):
            # neither the top-k nor the certification found a pattern in their time, and
            # neither proved the model fair: look again at the same model, twice as long
            oracle_time_limit *= 2
            if verbose:
                _say(bar, f"the oracle found nothing and proved nothing: it looks again for "
                          f"{oracle_time_limit:g} s")
            continue
        status = _stop_reason(found, len(rows) - 1, max_iter, time_limit, t0)
        if status:
            break
        kept = len(patterns)
        for c in found.constraints:
            key = (tuple(sorted(c.x.items())), tuple(sorted(c.y.items())))
            if key not in seen:
                seen.add(key)
                patterns.append(c.pattern)
                index_form.append((c.x, c.y))
        if len(patterns) == rows[-1]["n_constraints"]:  # only constrained patterns came back
            margin = 2 * margin
            if margin >= delta / 2:
                status = "stopped: the solver cannot satisfy the constrained patterns"
                break
        scores = PatternScores(sp, prob.decision, prob.favorable, index_form)
        res = _solve(sp, counts, scores, theta, delta - margin, lower, solver_options or {})
        refit = sp.circuit(res.x)
        why = _refit_rejection(scores(res.x)[0], delta - margin, margin / 2,
                               log_marginals(refit, prob.codes), baseline_ll)
        if why:
            status = (f"stopped: re-fit {len(rows)} was rejected ({res.message}): it {why}; "
                      f"the model of re-fit {len(rows) - 1} is kept")
            del patterns[kept:], index_form[kept:]  # the constraints of the kept model
            break
        theta = res.x
        solver_msg = str(res.message)
        circuit = refit
    if found.fair is True:
        certificate = found.certificate
    else:
        if certify_time_limit is None and decouple is not None and model is not None:
            certify_time_limit = DECOUPLE_PROBE_SECONDS  # decoupling follows an incomplete run
        certificate = certify(circuit, oracle.decision, names, delta, favorable=favorable,
                              engine=engine, time_limit=certify_time_limit, progress=False)
    history = pd.DataFrame(rows)
    if verbose:
        verdict = {True: "certified fair", False: "NOT fair (a pattern remains)",
                   None: "not certified (the certification run was incomplete)"}
        end = (f"certified fair after {len(rows) - 1} re-fit(s)" if status == "certified fair"
               else f"{status}; final certification: {verdict[certificate.fair]}")
        _say(bar, f"{end}, {time.perf_counter() - t0:.1f} s")
    steps, lam = pd.DataFrame(), None
    if certificate.fair is not True and decouple is not None and model is not None:
        deadline = None if decouple[1] is None else time.perf_counter() + decouple[1]

        def check(pc: Circuit) -> Certificate | None:
            left = None if deadline is None else deadline - time.perf_counter()
            if left is not None and left <= 0:
                return None
            return certify(pc, oracle.decision, names, delta, favorable=favorable,
                           engine=engine, progress=False,
                           time_limit=DECOUPLE_PROBE_SECONDS if left is None
                           else min(left, DECOUPLE_PROBE_SECONDS))

        say = (lambda line: _say(bar, line)) if verbose else None
        found_model, steps = _decouple_until_certified(model, circuit, prob, check, decouple[0],
                                                       say)
        if found_model is not None:
            lam, circuit, certificate = found_model
            circuit = _with_counts(circuit, prob.codes, pseudocount)
            shown = ", ".join(f"{k} {w:g}" for k, w in lam.items())
            status = (f"{status}; decoupled the sensitive variables (λ = {shown}) and "
                      f"certified fair")
        else:
            status = f"{status}; decoupling found no certified model"
    result_ll = float(log_marginals(circuit, prob.codes).mean())
    returned = False
    if fallback and (certificate.fair is not True or result_ll < baseline_ll):
        # the trivially fair model, where it is as likely or nothing else was certified
        cert = certify(baseline, oracle.decision, names, delta, favorable=favorable,
                       engine=engine, progress=False, time_limit=DECOUPLE_PROBE_SECONDS)
        if cert.fair is True:
            why = ("no other model was certified" if certificate.fair is not True else
                   f"the certified model's training log-likelihood, {result_ll:.6f} per row, "
                   f"is below its {baseline_ll:.6f}")
            status = f"{status}; returned the independent baseline: {why}"
            circuit, certificate, result_ll, returned, lam = baseline, cert, baseline_ll, True, None
    if verbose and returned:
        _say(bar, f"returned the independent baseline, {time.perf_counter() - t0:.1f} s")
    return FairLearningResult(
        circuit=circuit, fair=certificate.fair,
        certificate=certificate, history=history, patterns=patterns, mle_circuit=mle,
        status=status, decoupling=steps, baseline_circuit=baseline,
        stats={"seconds": time.perf_counter() - t0, "margin": margin,
               "oracle_cache": oracle.cache_info(), "decouple_lambda": lam,
               "baseline_returned": returned,
               "log_likelihood": {"result": result_ll,
                                  "mle": rows[0]["log_likelihood"],  # the first call's model
                                  "independent": baseline_ll}})


def _decouple_until_certified(model: TreeModel, circuit: Circuit, prob: _Problem, check,
                              steps: int, say) -> tuple[tuple | None, pd.DataFrame]:
    """Bisection on the decoupling path of ``circuit`` (:mod:`pcfair.learn.decouple`) for
    the least weights λ whose model ``check`` certifies.

    All weights 1 are checked first (every Δ is 0 there, so a complete run proves it unless
    its time runs out). Then ``steps`` bisection steps on one weight shared by every
    sensitive variable (``lo`` the largest not certified, from λ = 0: the loop's own model;
    ``hi`` the least certified), and then, sensitive variable by variable, ``steps`` more on
    that variable's weight alone in ``[0, hi]`` with the others held, largest possible gain
    first (variables that could win at most :data:`MIN_DECOUPLING_GAIN` are skipped): a
    variable that carries little of the discrimination keeps more of its fit. Certification
    need not be monotone in the weights, so the result is the least certified point the
    bisections visited; only certified models are returned. ``check`` returns None once the
    decoupling's time is spent; the search stops there with what it has. Returns
    ``((weights by name, circuit, certificate) or None, the table of steps)``.
    """
    prior, tables = tree_tables(model, circuit)
    target = decoupled_tables(model, circuit, prob.sensitive, tables)
    groups = decoupling_groups(model, prob.sensitive)
    names = {s: prob.variables.names[s] for s in prob.sensitive}
    rows: list[dict] = []

    def probe(phase: str, lam: dict):
        t = time.perf_counter()
        pc = model.compile(prior, blend_tables(tables, target, lam, groups))
        cert = check(pc)
        if cert is None:  # the decoupling's time is spent
            raise _OutOfTime
        rows.append({"phase": phase, **{f"lambda[{names[s]}]": w for s, w in lam.items()},
                     "fair": cert.fair, "complete": cert.complete,
                     "log_likelihood": float(log_marginals(pc, prob.codes).mean()),
                     "seconds": time.perf_counter() - t})
        if say is not None:
            verdict = {True: "certified fair", False: "a pattern remains",
                       None: "incomplete"}[cert.fair]
            shown = ", ".join(f"{names[s]} {w:g}" for s, w in lam.items())
            say(f"decoupling ({phase}) λ = {shown}: {verdict}, log-likelihood "
                f"{rows[-1]['log_likelihood']:.6f} per row, {rows[-1]['seconds']:.1f} s")
        return ({names[s]: w for s, w in lam.items()}, pc, cert) if cert.fair is True else None

    def log_likelihood(lam: dict) -> float:
        pc = model.compile(prior, blend_tables(tables, target, lam, groups))
        return float(log_marginals(pc, prob.codes).mean())

    def bisect(phase: str, lam: dict, movable: list[int], hi: float, best):
        lo = 0.0
        for _ in range(steps):
            mid = (lo + hi) / 2
            found = probe(phase, {**lam, **{s: mid for s in movable}})
            if found is not None:
                best, hi = found, mid
            else:
                lo = mid
            state["best"] = best
        return {**lam, **{s: hi for s in movable}}, best

    state: dict = {"best": None}
    lam = {s: 1.0 for s in prob.sensitive}
    try:
        best = state["best"] = probe("all", lam)
        if best is not None:
            lam, best = bisect("shared", lam, list(prob.sensitive), 1.0, best)
            if len(prob.sensitive) > 1:
                # the most a variable's own bisection could win: its weight at 0, others held
                base = log_likelihood(lam)
                gain = {s: log_likelihood({**lam, s: 0.0}) - base for s in prob.sensitive}
                for s in sorted(prob.sensitive, key=lambda s: -gain[s]):
                    if gain[s] > MIN_DECOUPLING_GAIN:
                        lam, best = bisect(names[s], lam, [s], lam[s], best)
    except _OutOfTime:
        pass
    return state["best"], pd.DataFrame(rows)


class _OutOfTime(Exception):
    """The decoupling's time is spent (raised between certifications)."""


#: Most seconds of one certification on the decoupling path of :func:`learn_fair_pc`.
DECOUPLE_PROBE_SECONDS = 60.0


#: Least training log-likelihood per row (nats) that a sensitive variable's own bisection
#: could win (its weight at 0, the others held) for :func:`learn_fair_pc` to run it; below
#: this its certifications cannot pay (e.g. raw German's ``sex``, a function of
#: ``personal_status``: 1e-6).
MIN_DECOUPLING_GAIN = 1e-4
