"""The Conditional Bias Scan end to end: :func:`conditional_bias_scan` and :func:`cbs_audit`.

Pipeline (Boxer, McFowland III and Neill, Sec. 3): choose the fairness definition (event I and
condition C), estimate Î for the protected class by propensity re-weighting, scan the protected
class for the subgroup where I departs most from Î in the chosen direction, and test the
result by permuting the protected-class indicator.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from threadpoolctl import threadpool_limits
from tqdm.auto import tqdm

from pcfair._clock import deadline_from, expired
from pcfair.audits._clock import time_limit_note
from pcfair.audits.cbs import _kernels
from pcfair.audits.cbs.definitions import FairnessDefinition, resolve_definition
from pcfair.audits.cbs.expectations import (
    Design,
    _expectations_from_codes,
    design,
    fit_propensity,
)
from pcfair.audits._model import Model, as_model
from pcfair.audits.cbs.options import (
    CBSOptionError,
    check_choice,
    check_penalty,
    check_positive_int,
    direction_sign,
)
from pcfair.audits.cbs.permutation import permutation_pvalue, run_permutations
from pcfair.audits.cbs.result import CBSResult
from pcfair.audits.cbs.scoring import GaussianLogitShiftScore
from pcfair.audits.cbs.search import ScanResult, SubsetScanner, encode_covariates
from pcfair.errors import DataError, VariableError

__all__ = ["conditional_bias_scan", "cbs_audit", "TABLE4_COLUMNS"]

#: Columns of the table returned by :func:`cbs_audit` (the paper's Table 4 plus q/mu, p, and
#: whether a time limit left the scan complete).
TABLE4_COLUMNS = [
    "protected", "detected", "n", "comparison", "comparison_n", "score", "rate",
    "comparison_rate", "parameter", "multiplier", "p_value", "complete",
]


# ------------------------------------------------------------------------------ inputs


def _resolve_protected(df: pd.DataFrame, protected) -> tuple[np.ndarray, str, str | None]:
    """A (bool per row), its description, and the sensitive column it came from."""
    if isinstance(protected, Mapping):
        if len(protected) != 1:
            raise CBSOptionError("protected as a mapping must hold exactly one {column: value}")
        protected = next(iter(protected.items()))
    if isinstance(protected, tuple):
        if len(protected) != 2:
            raise CBSOptionError("protected as a tuple must be (column, value)")
        col, value = protected
        if col not in df.columns:
            raise VariableError(f"sensitive column {col!r} is not in the data")
        series = df[col]
        if series.isna().any():
            raise DataError(f"sensitive column {col!r} has missing values")
        a = (series == value).to_numpy()
        if not a.any():
            values = sorted(map(str, pd.unique(series)))
            raise VariableError(
                f"value {value!r} does not occur in column {col!r} (values: {', '.join(values)})"
            )
        return a, f"{col} = {value}", col
    if isinstance(protected, str):
        if protected not in df.columns:
            raise VariableError(f"protected column {protected!r} is not in the data")
        series = df[protected]
        if series.isna().any():
            raise DataError(f"protected column {protected!r} has missing values")
        values = set(pd.unique(series).tolist())
        if not values <= {0, 1, True, False}:
            raise DataError(
                f"protected column {protected!r} must be 0/1 or boolean; to protect one value "
                f"of a sensitive attribute pass protected=({protected!r}, value)"
            )
        return series.to_numpy().astype(bool), f"{protected} = 1", protected
    raise CBSOptionError(
        "protected must be a 0/1 column name, a (column, value) tuple or a {column: value} dict"
    )


def _binary_column(df: pd.DataFrame, col: str, what: str) -> np.ndarray:
    if col not in df.columns:
        raise VariableError(f"{what} column {col!r} is not in the data")
    s = df[col]
    if s.isna().any():
        raise DataError(f"{what} column {col!r} has {int(s.isna().sum())} missing values")
    vals = s.to_numpy()
    try:
        f = vals.astype(float)
    except (TypeError, ValueError) as err:
        raise DataError(f"{what} column {col!r} must hold 0/1 values") from err
    if not np.all((f == 0) | (f == 1)):
        bad = vals[~((f == 0) | (f == 1))][0]
        raise DataError(f"{what} column {col!r} must hold 0/1 values; found {bad!r}")
    return f


def _predictions(df: pd.DataFrame, model: Model, outcome: str) -> np.ndarray:
    """P(Y = 1 | row) of the audited model; a model other than stored predictions sees the
    data without the outcome column."""
    p = model.proba(df if model.kind == "column" else df.drop(columns=[outcome]))
    if p.shape != (len(df),):
        raise DataError(f"the model returned {p.size} predictions for {len(df)} rows")
    return p


@dataclass
class _AuditData:
    """Encoded inputs shared by the observed scan and every permuted one (picklable)."""

    codes: np.ndarray
    categories: tuple
    attributes: tuple
    ref_codes: np.ndarray
    ref_arities: np.ndarray
    ref_frame: pd.DataFrame | None  # only when a custom propensity fitter needs it
    y: np.ndarray
    p: np.ndarray
    pbin: np.ndarray
    design: Design | None = None  # the regressions' matrices, the same on every permuted set


@dataclass
class _Config:
    definition: FairnessDefinition
    direction: str
    penalty: float
    n_restarts: int
    sigma: float | None
    C: float
    interactions: bool
    propensity: object  # "logistic" or a fitter
    estimator: object = None
    min_group_size: int = 1


@dataclass
class _Run:
    scan: ScanResult
    scanner: SubsetScanner
    rows: np.ndarray  # D1 positions in the data
    keep: np.ndarray
    event_all: np.ndarray  # I for every row (after the event flip)
    expected: np.ndarray  # Î over D1 (after the event flip)
    sigma: float | None
    propensity_model: str


def _event_and_condition(data: _AuditData, d: FairnessDefinition):
    """I (event = 1 version), C, and their kinds for a definition."""
    if d.family == "separation":
        cond, ctype = data.y, "binary"
        if d.predictions == "probabilities":
            return data.p, "probability", cond, ctype
        return data.pbin, "binary", cond, ctype
    if d.predictions == "probabilities":
        return data.y, "binary", data.p, "continuous"
    return data.y, "binary", data.pbin, "binary"


def _run_cbs(
    data: _AuditData, a: np.ndarray, cfg: _Config, rng: np.random.Generator,
    progress: bool | None = False, deadline: float | None = None,
) -> _Run:
    """Steps 2-3 of CBS on one (observed or permuted) protected-class indicator; the restarts
    stop at ``deadline`` (the scan's ``complete`` says whether they did)."""
    d = cfg.definition
    event, etype, cond, ctype = _event_and_condition(data, d)
    prop, label = None, "logistic"
    if not isinstance(cfg.propensity, str):
        prop, label = fit_propensity(data.ref_frame, a, cfg.propensity)
    ex = _expectations_from_codes(
        data.ref_codes, data.ref_arities, a, event, cond,
        condition_type=ctype, condition_value=d.condition_value, event_type=etype,
        C=cfg.C, interactions=cfg.interactions, propensity=prop, propensity_model=label,
        estimator=cfg.estimator, prepared=data.design,
    )
    event_all = event if d.event == 1 else 1.0 - event
    expected = ex.expected if d.event == 1 else 1.0 - ex.expected
    X1 = pd.DataFrame(data.codes[ex.rows], columns=list(range(data.codes.shape[1])))
    ev1 = event_all[ex.rows]
    if d.score == "gaussian":
        delta = GaussianLogitShiftScore.logit_difference(ev1, expected)
        sigma = cfg.sigma
        if sigma is None:
            if delta.size < 2:
                raise DataError("sigma cannot be estimated from fewer than 2 protected records")
            sigma = float(np.std(delta, ddof=1))
            if not sigma > 0:
                raise DataError(
                    "the logit differences of the protected class are all equal (standard "
                    "deviation 0); pass sigma explicitly"
                )
        scanner = SubsetScanner(
            X1, delta, None, GaussianLogitShiftScore(cfg.direction, sigma),
            penalty=cfg.penalty, categories=[range(len(c)) for c in data.categories],
            min_size=cfg.min_group_size,
        )
    else:
        sigma = None
        scanner = SubsetScanner(
            X1, ev1, expected, "bernoulli", direction=cfg.direction,
            penalty=cfg.penalty, categories=[range(len(c)) for c in data.categories],
            min_size=cfg.min_group_size,
        )
    res = scanner.scan(n_restarts=cfg.n_restarts, random_state=rng, progress=progress,
                       deadline=deadline)
    return _Run(res, scanner, ex.rows, ex.keep, event_all, expected, sigma, ex.propensity_model)


@dataclass
class _PermutationTask:
    """Picklable ``seed -> best score`` on a permuted copy of A; None when ``deadline`` (a
    :func:`time.time` value) came first, so that no null score comes from a cut scan."""

    data: _AuditData
    a: np.ndarray
    cfg: _Config
    deadline: float | None = None

    def __call__(self, seed: int) -> float | None:
        if expired(self.deadline):
            return None
        rng = np.random.default_rng(seed)
        a_perm = rng.permutation(self.a)
        scan = _run_cbs(self.data, a_perm, self.cfg, rng, deadline=self.deadline).scan
        return scan.score if scan.complete else None


# ------------------------------------------------------------------------------ public API


def conditional_bias_scan(
    df: pd.DataFrame,
    *,
    protected,
    outcome: str,
    prediction: str | None = None,
    model=None,
    covariates: Sequence[str] | None = None,
    family: str = "separation",
    predictions: str = "probabilities",
    condition_value: int | None = None,
    event: int = 1,
    definition: str | FairnessDefinition | None = None,
    direction: str = "positive",
    threshold: float = 0.5,
    recommendation: str | None = None,
    penalty: float = 1.0,
    n_restarts: int = 50,
    n_permutations: int = 99,
    min_group_size: int = 30,
    reference_covariates: Sequence[str] | None = None,
    sigma: float | None = None,
    C: float = 1.0,
    interactions: bool = False,
    propensity: str | Callable = "logistic",
    estimator=None,
    max_categories: int = 32,
    n_jobs: int | None = -1,
    progress: bool | None = None,
    random_state: int | np.random.Generator | None = None,
    time_limit: float | None = None,
    deadline: float | None = None,
) -> CBSResult:
    """Audit a classifier for the subgroup of a protected class where it is most biased.

    Parameters
    ----------
    df : pandas.DataFrame
        One row per individual: discrete covariates, the sensitive attribute, the outcome and
        (unless ``prediction`` is a model) the predictions.
    protected : str, (column, value) or {column: value}
        The protected class A: a 0/1 column, or the rows where a sensitive column equals a
        value. The column is never used as a covariate.
    outcome : str
        Column of the observed outcome Y (0/1).
    prediction : str, optional
        Column of stored probabilities P (or 0/1 labels); labels support only the
        recommendation scans.
    model : Circuit, PCClassifier, estimator, callable or column name, optional
        The audited model instead of ``prediction``, as ``P(outcome = 1 | row)`` (see
        :func:`pcfair.audits._model.as_model`); it receives ``df`` without the outcome
        column.
    covariates : sequence of str, optional
        Discrete covariates X forming subgroups; default: every other column. Bin continuous
        ones first with :func:`~pcfair.audits.cbs.discretize`.
    family : {"separation", "sufficiency"}
    predictions : {"probabilities", "recommendations"}
    condition_value : {None, 0, 1}
        Value-conditional scan on ``C == condition_value`` (C = Y for separation, Pbin for
        sufficiency for recommendations).
    event : {1, 0}
        0 audits the complementary event (e.g. FNR instead of TPR).
    definition : str or FairnessDefinition, optional
        A named row of Table 1 (``"fpr"``, ``"ppv"``, ``"balance_negative_class"``...; see
        :data:`~pcfair.audits.cbs.DEFINITIONS`); replaces family, predictions,
        condition_value and event, which must then keep their defaults.
    direction : {"positive", "negative"}
        ``"positive"``: I above its expectation (q > 1, mu > 0); ``"negative"``: below.
    threshold : float, default 0.5
        ``Pbin = 1(P >= threshold)`` unless ``recommendation`` names a 0/1 column.
    recommendation : str, optional
        Column of the binarized recommendations Pbin.
    penalty : float, default 1.0
        Complexity penalty lambda per listed value of a constrained covariate (paper: 1).
    n_restarts : int, default 50
        Restarts of the coordinate ascent (the paper's "iterations"; it used 500 in Sec. 5
        and quotes 150 in App. B.5).
    n_permutations : int, default 99
        Permuted data sets for the p-value (0: no test). Use 999 or more for reported results.
    min_group_size : int, default 30
        The scan considers only subgroups of at least this many scanned records, and so does
        every permuted scan, which keeps the p-value valid for the constrained statistic.
        Without it the highest score is often a handful of records whose predictions are far
        from Î (one person is a "subgroup"), a statistically meaningless headline; 30 is the
        usual rule of thumb for a group whose rate can be estimated at all (its standard error
        is then at most 0.09), small enough that a real intersectional subgroup passes. 1 is
        the paper's unconstrained scan. With fewer records in the protected class, nothing is
        detected.
    reference_covariates : sequence of str, optional
        Covariates of the propensity and Î models; default ``covariates``.
    sigma : float, optional
        Gaussian scale of the separation-for-probabilities score; default the sample
        standard deviation of the logit differences, re-estimated on every permuted data set.
    C : float, default 1.0
        Inverse L2 regularisation of the logistic regressions (scikit-learn's ``C``).
    interactions : bool, default False
        Add condition x covariate interaction columns to the model of Î.
    propensity : "logistic" or callable
        Model of ``Pr(A = 1 | X)``; a callable ``fit(X, a) -> probabilities`` (see
        :func:`~pcfair.audits.cbs.circuit_propensity`) is refitted on every permuted set.
    estimator : scikit-learn classifier, optional
        Replaces both logistic regressions (must accept ``sample_weight``; the paper allows
        e.g. random forests with Platt scaling). Default: L2 logistic regression.
    max_categories : int, default 32
        A covariate with more distinct values is rejected as continuous.
    n_jobs : int or None, default -1
        Worker processes for the permutations (-1: all cores, 1: serial).
    progress : bool or None
        Progress bars over the restarts of the scan and over the permutations; None shows
        them only on an interactive terminal.
    random_state : int, numpy.random.Generator or None
        Seeds the restarts and the permutations; the result does not depend on ``n_jobs``.
    time_limit : float, optional
        Seconds of wall-clock time. The limit is checked between restarts and between
        permutations (a restart or a permutation under way finishes, or is dropped, first;
        the first restart always runs). A scan it cuts keeps the restarts that ran; a
        permutation test it cuts gives the p-value over the permutations that finished
        (coarser: at least ``1 / (1 + k)``), or none when no permutation finished. The
        result then has ``complete`` False and a note saying what was cut.
    deadline : float, optional
        A :func:`time.time` value, overriding ``time_limit``: how several scans share one
        clock (:func:`cbs_audit`, ``pcfair audit cbs``).

    Returns
    -------
    CBSResult

    Raises
    ------
    VariableError
        A named column or value is not in the data.
    DataError
        Missing values, non-binary outcome, predictions outside [0, 1], a continuous
        covariate, labels given to a probabilities scan, or an empty filtered class.
    CBSOptionError
        An option has an invalid value.
    OptionError
        ``time_limit`` is not a positive number of seconds.

    Notes
    -----
    Boxer, McFowland III and Neill, *Auditing Predictive Models for Intersectional Biases*
    (arXiv 2306.13064): Table 1 (definitions), Sec. 3.2 and App. A.1 (Î), Table 2 (scores),
    App. A.2 (scan), App. A.3 (permutation test). Choices where the paper is silent (pcfair):
    one-hot covariates; propensity weights rescaled to sum to the training size; the
    value filter applied after the propensity fit; the Gaussian sigma as above; probabilities
    clipped to [1e-6, 1 - 1e-6]; p-value ``(1 + #{null >= score}) / (1 + R)``; the permutation
    shuffles A over all rows, then filters.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> n = 2000
    >>> df = pd.DataFrame({"g": rng.integers(0, 2, n), "x": rng.integers(0, 3, n)})
    >>> df["y"] = (rng.random(n) < 0.4).astype(int)
    >>> biased = (df.g == 1) & (df.x == 2)
    >>> df["p"] = np.clip(0.4 + 0.2 * df.y + 0.25 * biased + rng.normal(0, 0.05, n), 0, 1)
    >>> res = conditional_bias_scan(df, protected=("g", 1), outcome="y", prediction="p",
    ...     covariates=["x"], definition="fpr", n_permutations=0, random_state=0)
    >>> res.subgroup, res.n > 0
    ({'x': [2]}, True)
    """
    if not isinstance(df, pd.DataFrame):
        raise DataError("df must be a pandas DataFrame")
    if len(df) == 0:
        raise DataError("the data frame is empty")
    if definition is not None:
        defaults = ("separation", "probabilities", None, 1)
        if (family, predictions, condition_value, event) != defaults:
            raise CBSOptionError(
                "pass either definition or family/predictions/condition_value/event, not both"
            )
        d = resolve_definition(definition)
    else:
        d = FairnessDefinition(family, predictions, condition_value, event)
    direction_sign(direction)
    lam = check_penalty(penalty)
    n_restarts = check_positive_int("n_restarts", n_restarts)
    n_permutations = check_positive_int("n_permutations", n_permutations, minimum=0)
    min_group_size = check_positive_int("min_group_size", min_group_size)
    deadline = deadline_from(time_limit, deadline)
    if not (0 < float(threshold) <= 1):
        raise CBSOptionError(f"threshold={threshold!r} must lie in (0, 1]")
    if not (C > 0):
        raise CBSOptionError(f"C={C!r} must be > 0")
    if isinstance(propensity, str):
        check_choice("propensity", propensity, ("logistic",))
    elif not callable(propensity):
        raise CBSOptionError("propensity must be 'logistic' or a callable fit(X, a)")

    a, protected_label, sensitive = _resolve_protected(df, protected)
    if a.all():
        raise DataError(f"every row is in the protected class ({protected_label})")
    y = _binary_column(df, outcome, "outcome")
    audited = as_model(model, prediction=prediction, outcome=outcome, favorable=1)
    p = _predictions(df, audited, outcome)
    labels_only = bool(np.all((p == 0) | (p == 1)))
    if recommendation is not None:
        pbin = _binary_column(df, recommendation, "recommendation")
    else:
        pbin = (p >= threshold).astype(float)
    if labels_only and d.predictions == "probabilities":
        raise DataError(
            "the predictions are 0/1 labels; a labels-only model supports only the "
            "recommendation scans (predictions='recommendations')"
        )

    reserved = {outcome, sensitive}
    if audited.column is not None:
        reserved.add(audited.column)
    if recommendation is not None:
        reserved.add(recommendation)
    if covariates is None:
        covariates = [c for c in df.columns if c not in reserved]
    covariates = list(covariates)
    ref = list(covariates if reference_covariates is None else reference_covariates)
    for col in covariates + ref:
        if col not in df.columns:
            raise VariableError(f"covariate column {col!r} is not in the data")
        if col in reserved:
            raise DataError(
                f"column {col!r} cannot be a covariate: it is the outcome, the prediction or "
                "the sensitive attribute (A and its source are excluded from X)"
            )
        n_unique = df[col].nunique()
        if n_unique > max_categories:
            raise DataError(
                f"covariate {col!r} has {n_unique} distinct values (more than "
                f"max_categories={max_categories}); CBS needs discrete covariates, so bin it "
                "first with pcfair.audits.cbs.discretize, raise max_categories (--max-categories "
                "N) if its values are categories, or leave it out (--covariates)"
            )
    if not covariates:
        raise DataError("at least one covariate is needed to form subgroups")

    codes, cats = encode_covariates(df, covariates)
    ref_codes, ref_cats = encode_covariates(df, ref)
    data = _AuditData(
        codes=codes,
        categories=cats,
        attributes=tuple(covariates),
        ref_codes=ref_codes,
        ref_arities=np.array([len(c) for c in ref_cats], dtype=np.int64),
        ref_frame=None if isinstance(propensity, str) else df[ref].reset_index(drop=True),
        y=y,
        p=p,
        pbin=pbin,
    )
    cfg = _Config(
        d, direction, lam, n_restarts, sigma, float(C), bool(interactions), propensity, estimator,
        min_group_size,
    )
    _, _, cond, ctype = _event_and_condition(data, d)
    data.design = design(data.ref_codes, data.ref_arities, cond, condition_type=ctype,
                         condition_value=d.condition_value, interactions=cfg.interactions)

    rng = np.random.default_rng(random_state)
    scan_seed = int(rng.integers(0, 2**63 - 1))
    perm_seeds = rng.integers(0, 2**63 - 1, size=n_permutations)
    # one BLAS thread: the matrices are small, and the permutations run in parallel processes
    with threadpool_limits(limits=1, user_api="blas"):
        run = _run_cbs(data, a, cfg, np.random.default_rng(scan_seed), progress=progress,
                       deadline=deadline)
        null = np.empty(0)
        if n_permutations and run.scan.complete:
            null = run_permutations(
                _PermutationTask(data, a, cfg, deadline), perm_seeds, n_jobs=n_jobs,
                progress=progress, description=f"CBS permutations ({protected_label})",
                deadline=deadline,
            )
    p_value = permutation_pvalue(run.scan.score, null) if null.size else None
    notes = []
    if not run.scan.complete:
        ran = run.scan.restart_scores.size
        notes.append(f"scan: {time_limit_note(ran, n_restarts, 'restarts')}")
    if null.size < n_permutations:
        tail = ("; the p-value is based on fewer permutations than asked" if null.size
                else "; no p-value")
        notes.append(f"permutation test: "
                     f"{time_limit_note(null.size, n_permutations, 'permutations')}{tail}")
    return _report(run, data, a, cfg, protected_label, null, p_value, n_permutations, notes)


def _report(run: _Run, data: _AuditData, a, cfg: _Config, protected_label, null, p_value,
            n_permutations: int, notes: list[str]):
    res = run.scan
    param = run.scanner.scorer.parameter
    null_param = run.scanner.scorer.null_parameter
    common = dict(
        null_scores=null,
        n_protected=int(run.rows.size),
        protected=protected_label,
        definition=cfg.definition,
        direction=cfg.direction,
        penalty=cfg.penalty,
        n_restarts=cfg.n_restarts,
        sigma=run.sigma,
        propensity_model=run.propensity_model,
        min_group_size=cfg.min_group_size,
        permutations_requested=n_permutations,
        restarts_run=int(res.restart_scores.size),
        complete=not notes,
        notes=tuple(notes),
    )
    if not res.found:
        return CBSResult(
            subgroup=None, score=0.0, multiplier=null_param, parameter=param, n=0,
            observed_rate=float("nan"), expected_rate=float("nan"), comparison_n=0,
            comparison_rate=float("nan"), p_value=p_value, **common,
        )
    incl = run.scanner.to_mask(res.subgroup)
    in_sub = _kernels.subgroup_rows(data.codes, incl, -1)
    comp = in_sub & run.keep & ~a
    subgroup = {
        data.attributes[int(j)]: [data.categories[int(j)][int(v)] for v in vals]
        for j, vals in res.subgroup.items()
    }
    ev_d1 = run.event_all[run.rows]
    return CBSResult(
        subgroup=subgroup,
        score=res.score,
        multiplier=res.theta,
        parameter=param,
        n=int(res.n),
        observed_rate=float(ev_d1[res.mask].mean()),
        expected_rate=float(run.expected[res.mask].mean()),
        comparison_n=int(comp.sum()),
        comparison_rate=float(run.event_all[comp].mean()) if comp.any() else float("nan"),
        p_value=p_value,
        **common,
    )


def cbs_audit(
    df: pd.DataFrame,
    *,
    sensitive: Sequence[str],
    outcome: str,
    prediction: str | None = None,
    model=None,
    protected_values: Sequence[tuple[str, object]] | None = None,
    include_zero: bool = False,
    progress: bool | None = None,
    random_state: int | np.random.Generator | None = None,
    time_limit: float | None = None,
    **scan_options,
) -> pd.DataFrame:
    """Run one scan per protected class value, in the layout of the paper's Table 4.

    Each value v of each attribute in ``sensitive`` defines in turn the protected class
    ``attribute == v``; the other attributes are the covariates (the attribute itself is left
    out, as the paper does).

    Parameters
    ----------
    df : pandas.DataFrame
    sensitive : sequence of str
        Discrete sensitive attributes; each of their values is a protected class.
    outcome, prediction, model
        As in :func:`conditional_bias_scan`.
    protected_values : sequence of (attribute, value), optional
        Restrict the runs to these protected classes.
    include_zero : bool, default False
        Keep runs whose score is 0 (Table 4 lists only positive scores).
    progress : bool or None
        Progress bar over the runs.
    random_state : int, numpy.random.Generator or None
    time_limit : float, optional
        Seconds of wall-clock time for all the runs together (one deadline; see
        :func:`conditional_bias_scan`). Each run does at least its first restart; the
        ``complete`` column marks the runs the limit cut.
    **scan_options
        Any other keyword of :func:`conditional_bias_scan` (definition, direction, penalty,
        n_restarts, n_permutations, min_group_size, n_jobs...).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`TABLE4_COLUMNS`, sorted by decreasing score.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(1)
    >>> df = pd.DataFrame({"g": rng.integers(0, 2, 1500), "x": rng.integers(0, 3, 1500)})
    >>> df["y"] = (rng.random(1500) < 0.5).astype(int)
    >>> df["p"] = np.clip(0.35 + 0.3 * df.y + 0.2 * ((df.g == 1) & (df.x == 0)), 0, 1)
    >>> table = cbs_audit(df, sensitive=["g", "x"], outcome="y", prediction="p",
    ...     definition="fpr", n_permutations=0, random_state=0)
    >>> table.iloc[0][["protected", "detected"]].tolist()
    ['g = 1', 'g = 1 & x = 0']
    """
    attributes = list(sensitive)
    for k in ("protected", "covariates", "reference_covariates"):
        if k in scan_options:
            raise CBSOptionError(f"cbs_audit chooses {k} itself; do not pass it")
    if protected_values is None:
        runs = []
        for attr in attributes:
            if attr not in df.columns:
                raise VariableError(f"attribute {attr!r} is not in the data")
            _, cats = encode_covariates(df, [attr])
            runs.extend((attr, v) for v in cats[0])
    else:
        runs = [tuple(pv) for pv in protected_values]
        for attr, _ in runs:
            if attr not in attributes:
                raise VariableError(f"protected attribute {attr!r} is not among the sensitive ones")
    rng = np.random.default_rng(random_state)
    scan_options["deadline"] = deadline_from(time_limit, scan_options.get("deadline"))
    rows = []
    disable = None if progress is None else not progress
    for attr, value in tqdm(runs, desc="CBS audit", disable=disable):
        others = [c for c in attributes if c != attr]
        if (df[attr] == value).all():
            continue
        res = conditional_bias_scan(
            df, protected=(attr, value), outcome=outcome, prediction=prediction,
            model=model, covariates=others, random_state=rng, **scan_options,
        )
        if not res.found and not include_zero:
            continue
        rows.append(
            {
                "protected": res.protected,
                "detected": res.subgroup_text,
                "n": res.n,
                "comparison": res.comparison_text,
                "comparison_n": res.comparison_n,
                "score": res.score,
                "rate": res.observed_rate,
                "comparison_rate": res.comparison_rate,
                "parameter": res.parameter,
                "multiplier": res.multiplier,
                "p_value": res.p_value,
                "complete": res.complete,
            }
        )
    table = pd.DataFrame(rows, columns=TABLE4_COLUMNS)
    table = table.sort_values("score", ascending=False, kind="stable")
    return table.reset_index(drop=True)
