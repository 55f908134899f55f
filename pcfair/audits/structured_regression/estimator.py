"""The structured-regression estimator of group performance (Herlihy et al., FAccT 2024).

:class:`StructuredRegression` fits the weighted group-level lasso of Eq. 5 to the standard
estimates ``Z_a``, with inverse-variance weights from the pooled bootstrap variance (Eq. 6)
and the penalty chosen by stratified cross-validation over rows (spec §2.5). Its predictions
``muhat_a = theta_0 + theta . phi^a`` borrow strength across groups through the marginal
indicators and explanatory features, and exist for every group, including groups whose
metric is undefined (they get weight 0 in the fit). Groups with no rows get the pooled
estimate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from pcfair._clock import deadline_from
from pcfair.audits._result import AuditResult, json_value
from pcfair._random import check_random_state
from pcfair.errors import SpecError

from .baselines import empirical_bayes, james_stein_bock, pooled_estimate
from .evaluation import EvaluationData, prepare_evaluation
from .features import Term, group_means
from .fit import (
    CV_SCHEMES,
    GRID_MULTIPLIERS,
    SELECT_RULES,
    LassoSolver,
    alpha_multiplier,
    child_generators,
    cv_splits,
    eq5_lambda,
    select_alpha,
)
from .gof import GofResult, gof_from_evaluation
from .inference import (
    CI_METHODS,
    STANDARD_CI_METHODS,
    check_level,
    lasso_percentile,
    normal_intervals,
    percentile_intervals,
    rblpr,
)


class NotFittedError(SpecError, AttributeError):
    """A fitted attribute or method of :class:`StructuredRegression` was used before ``fit``.

    Examples
    --------
    >>> try:
    ...     StructuredRegression(["a", "b"]).confint()
    ... except NotFittedError as err:
    ...     print(err)
    this StructuredRegression is not fitted yet; call fit(df, metric) first
    """


@dataclass(repr=False)
class SRResult(AuditResult):
    """Fitted state of a structured regression, and its per-group estimates.

    Attributes
    ----------
    alpha : float
        Selected penalty on sklearn's scale.
    lambda_ : float
        The same penalty on the scale of Eq. 5 (exact for ``l1_ratio=1``).
    alpha_grid, lambda_grid : ndarray
        The grid searched, on both scales.
    cv_loss : ndarray or None
        Cross-validation losses, shape (n_splits, n_grid); None when the grid has one value.
    sigma2 : float
        Pooled per-row variance of Eq. 6.
    intercept : float
    coef : pandas.Series
        Lasso coefficients indexed by feature name.
    pooled : float
        The pooled estimate ``sum sw Z / sum sw`` (what empty groups get).
    n_defined : int
        Groups that entered the fit.
    estimates : pandas.DataFrame or None
        The estimator's ``estimates_`` (what :meth:`to_frame` returns, groups as columns).
    metric : str
        The metric's name.
    gof : list of dict
        Goodness-of-fit tests run on it (``pcfair audit regression --gof``), if any.
    complete : bool
        False when a time limit cut the interval bootstrap of the estimates it carries
        (``pcfair audit regression --time-limit``); ``notes`` say how many replicates ran.
    notes : list of str
        What the time limit cut.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"a": rng.integers(0, 2, 300), "b": rng.integers(0, 2, 300),
    ...                    "y_score": rng.integers(0, 2, 300)})
    >>> res = StructuredRegression(["a", "b"], outcome=None, n_boot_var=20, n_splits=3).fit(df, "sel").result_
    >>> res.cv_loss.shape, len(res.coef)
    ((3, 12), 8)
    >>> list(res.to_frame().columns)
    ['a', 'b', 'n', 'standard', 'standard_se', 'structured', 'status']
    """

    method = "regression"

    alpha: float
    lambda_: float
    alpha_grid: np.ndarray
    lambda_grid: np.ndarray
    cv_loss: np.ndarray | None
    sigma2: float
    intercept: float
    coef: pd.Series
    pooled: float
    n_defined: int
    selected_index: int = 0
    extra: dict = field(default_factory=dict)
    estimates: pd.DataFrame | None = None
    metric: str = ""
    gof: list = field(default_factory=list)
    complete: bool = True
    notes: list = field(default_factory=list)

    def to_frame(self) -> pd.DataFrame:
        """The per-group estimates, one row per group, the sensitive attributes as columns."""
        if self.estimates is None:
            raise NotFittedError("this result holds no estimates")
        return self.estimates.reset_index()

    def headline(self) -> dict:
        return {"metric": self.metric, "pooled": self.pooled, "lambda": self.lambda_,
                "n_defined": self.n_defined, "selected": self.selected_features,
                "complete": self.complete}

    def to_dict(self) -> dict:
        """Headline numbers, coefficients and the per-group rows (JSON-ready)."""
        out = super().to_dict()
        out.update(json_value({"alpha": self.alpha, "sigma2": self.sigma2,
                               "intercept": self.intercept, "coef": self.coef.to_dict()}))
        if self.gof:
            out["gof"] = json_value(self.gof)
        out["notes"] = list(self.notes)
        return out

    def _plot(self, ax, **kwargs):
        """Standard versus structured estimate per group (see :func:`plot_estimates`)."""
        from .plot import plot_estimates

        return plot_estimates(self.estimates, ax=ax, intervals=False, **kwargs)

    @property
    def cv_mean(self) -> np.ndarray | None:
        """Mean CV loss per grid point."""
        return None if self.cv_loss is None else self.cv_loss.mean(axis=0)

    @property
    def selected_features(self) -> list[str]:
        """Names of the features with a non-zero coefficient."""
        return list(self.coef.index[np.abs(self.coef.to_numpy()) > 1e-6])


class StructuredRegression:
    """Structured-regression estimates of a performance metric on intersectional groups.

    Parameters
    ----------
    sensitive : sequence of str
        Sensitive-attribute columns; the groups are all combinations of their values.
    explanatory : sequence of str, default ()
        Numeric columns whose group means are explanatory features.
    outcome : str or None, default "y_true"
        Outcome column Y (needed by ACC/TPR/FNR/FPR/PPV/AUC and for outcome-rate features).
    output : str or None, default "y_score"
        System-output column Yhat (score, label or per-row value). With ``model``, the model's
        outputs are written to this column.
    model : Circuit, PCClassifier, estimator or callable, optional
        The evaluated system (see :func:`pcfair.audits._model.as_model`), called on the frame
        without the outcome column; its ``P(favorable | x)`` is written to ``output``.
    favorable : object, default 1
        The favourable value of the outcome (what ``model`` gives the probability of).
    threshold : float, optional
        r in the decision ``1{Yhat >= r}``; without it the output must be 0/1 decisions
        (0.5 when ``model`` is given).
    outcome_rates : bool, default True
        Include the outcome-rate features ``P_{S_a}[Y = y]`` (full one-hot).
    interactions : str or sequence of str, optional
        Extra feature terms (e.g. ``"age*race"`` or ``["y*sens"]``); the paper's fits use none.
    l1_ratio : float, default 1.0
        1.0 is the paper's lasso; 0.95 reproduces the reference implementations.
    lambda_grid : sequence of float, optional
        Penalty grid as multiples of the noise-level scale ``alpha_mul`` (sklearn's
        ``alpha = g * alpha_mul``); default :data:`GRID_MULTIPLIERS` (20 ... 0.005). One value
        skips cross-validation; 0 gives the unpenalised weighted least-squares fit.
    cv : {"mc90", "kfold"}, default "mc90"
        Stratified Monte-Carlo 90/10 splits of the rows, or a stratified K-fold partition.
    n_splits : int, default 10
    select : {"min", "1se"}, default "min"
        Argmin of the mean CV loss, or the largest penalty within one standard error.
    variance : {"pooled", "pooled_dof", "per_group"}, default "pooled"
        Variance model of the standard estimates (Eq. 6 and variants, see :mod:`.variance`).
    n_boot_var : int, default 100
        Stratified bootstrap resamples for the variances.
    clip : bool or (float, float), default False
        Clip estimates and interval ends to ``[0, 1]`` (True) or to the given range.
    categories : dict, optional
        Levels of some sensitive attributes (declared but unobserved levels give empty groups).
    tol, max_iter : float, int
        Coordinate-descent settings of sklearn's ElasticNet.
    random_state : int, numpy.random.Generator or None, default 0
        Seeds the bootstrap, the CV splits and (by default) the interval bootstrap.

    Attributes
    ----------
    estimates_ : pandas.DataFrame
        One row per group (indexed by the sensitive attributes) with ``n``, ``standard``
        (``Z_a``), ``standard_se`` (``sigmahat_a``), ``structured`` (``muhat_a``) and
        ``status`` (``"ok"``, ``"undefined"``: no defined metric, the estimate comes from the
        group's features; ``"empty"``: no rows, the estimate is the pooled value).
        ``standard``/``standard_se`` are NaN exactly where ``status`` is not ``"ok"``.
    result_ : SRResult
        Selected penalty, CV path, pooled variance and coefficients.

    Notes
    -----
    Herlihy, Truong, Chouldechova and Dudík, "A structured regression approach for evaluating
    model performance across intersectional subgroups", FAccT 2024, §4 (Eqs. 5-7). Features are
    the group-identity indicators, the single-attribute indicators and the group means of the
    explanatory features and outcome rates, unscaled. Choices where the paper is silent follow
    the authors' reference implementation and are options here (``variance``, ``select``,
    ``l1_ratio``, ``cv``). AUC counts tied scores as 1/2.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"a": rng.integers(0, 3, 600), "b": rng.integers(0, 2, 600)})
    >>> df["y_true"] = rng.integers(0, 2, 600)
    >>> df["y_score"] = np.where(rng.random(600) < 0.8, df["y_true"], 1 - df["y_true"])
    >>> sr = StructuredRegression(["a", "b"], n_boot_var=20, n_splits=3).fit(df, "acc")
    >>> sr.estimates_.shape
    (6, 5)
    >>> bool(sr.estimates_["structured"].between(0.6, 1.0).all())
    True
    """

    def __init__(
        self,
        sensitive: Sequence[str],
        *,
        explanatory: Sequence[str] = (),
        outcome: str | None = "y_true",
        output: str | None = "y_score",
        model=None,
        favorable=1,
        threshold: float | None = None,
        outcome_rates: bool = True,
        interactions: str | Sequence[str] | None = None,
        l1_ratio: float = 1.0,
        lambda_grid: Sequence[float] | None = None,
        cv: str = "mc90",
        n_splits: int = 10,
        select: str = "min",
        variance: str = "pooled",
        n_boot_var: int = 100,
        clip: bool | tuple[float, float] = False,
        categories: dict[str, Sequence] | None = None,
        tol: float = 1e-4,
        max_iter: int = 10_000,
        random_state: int | np.random.Generator | None = 0,
    ):
        self.sensitive = sensitive
        self.explanatory = explanatory
        self.outcome = outcome
        self.output = output
        self.model = model
        self.favorable = favorable
        self.threshold = threshold
        self.outcome_rates = outcome_rates
        self.interactions = interactions
        self.l1_ratio = l1_ratio
        self.lambda_grid = lambda_grid
        self.cv = cv
        self.n_splits = n_splits
        self.select = select
        self.variance = variance
        self.n_boot_var = n_boot_var
        self.clip = clip
        self.categories = categories
        self.tol = tol
        self.max_iter = max_iter
        self.random_state = random_state

    # ------------------------------------------------------------------ helpers
    def _check_params(self) -> np.ndarray:
        if self.cv not in CV_SCHEMES:
            raise SpecError(f"unknown cv {self.cv!r}: use one of {', '.join(CV_SCHEMES)}")
        if self.select not in SELECT_RULES:
            raise SpecError(f"unknown select {self.select!r}: use one of {', '.join(SELECT_RULES)}")
        grid = np.asarray(GRID_MULTIPLIERS if self.lambda_grid is None else self.lambda_grid, dtype=float)
        if grid.ndim != 1 or grid.size == 0 or np.any(~np.isfinite(grid)) or np.any(grid < 0):
            raise SpecError(f"lambda_grid must be a non-empty list of non-negative numbers, got {self.lambda_grid!r}")
        if len(np.unique(grid)) != grid.size:
            raise SpecError(f"lambda_grid has repeated values: {list(grid)!r}")
        if grid.size > 1 and int(self.n_splits) < 2:
            raise SpecError(f"n_splits must be at least 2, got {self.n_splits}")
        self._clip_range()
        return grid

    def _clip_range(self) -> tuple[float, float] | None:
        if self.clip is False or self.clip is None:
            return None
        if self.clip is True:
            return (0.0, 1.0)
        try:
            lo, hi = (float(v) for v in self.clip)
        except (TypeError, ValueError) as err:
            raise SpecError(f"clip must be a bool or a (low, high) pair, got {self.clip!r}") from err
        if not lo < hi:
            raise SpecError(f"clip range must have low < high, got {self.clip!r}")
        return (lo, hi)

    def _apply_clip(self, values: np.ndarray) -> np.ndarray:
        rng = self._clip_range()
        return values if rng is None else np.clip(values, rng[0], rng[1])

    def _check_fitted(self) -> None:
        if not hasattr(self, "result_"):
            raise NotFittedError("this StructuredRegression is not fitted yet; call fit(df, metric) first")

    def _terms(self, ev: EvaluationData) -> list[Term]:
        k = len(ev.groups.sensitive)
        terms = [Term(tuple(range(k)))] + [Term((i,)) for i in range(k)]
        terms += ev.features.parse("expl")
        for t in ev.features.parse(self.interactions):
            if t not in terms:
                terms.append(t)
        return terms

    # ------------------------------------------------------------------ fit
    def fit(self, df: pd.DataFrame, metric: str | Callable[[pd.DataFrame], float]) -> StructuredRegression:
        """Fit the structured regression of ``metric`` on the groups of ``df``.

        Parameters
        ----------
        df : pandas.DataFrame
            One row per evaluated individual.
        metric : str or callable
            ``"sel"``, ``"acc"``, ``"tpr"``, ``"fnr"``, ``"fpr"``, ``"ppv"``, ``"auc"``,
            ``"mean"`` (or aliases such as ``"accuracy"``), a column whose group mean is the
            metric (e.g. a per-row WER), or ``f(group_rows) -> float`` (NaN if undefined).

        Returns
        -------
        self

        Raises
        ------
        DataError
            On missing columns or unusable values.
        SpecError
            On unknown options.
        """
        grid = self._check_params()
        rng = check_random_state(self.random_state)
        boot_rng, cv_rng, ci_rng = child_generators(rng, 3)
        ev = prepare_evaluation(
            df,
            metric,
            sensitive=self.sensitive,
            outcome=self.outcome,
            output=self.output,
            model=self.model,
            favorable=self.favorable,
            threshold=self.threshold,
            explanatory=self.explanatory,
            outcome_rates=self.outcome_rates,
            categories=self.categories,
            variance=self.variance,
            n_boot_var=self.n_boot_var,
            random_state=boot_rng,
        )
        terms = self._terms(ev)
        attr = ev.groups.attribute_codes
        phi, names = ev.features.design(terms, attr, ev.means)
        ok = ev.defined
        sw = ev.weights()
        solver = LassoSolver(self.l1_ratio, self.tol, self.max_iter)
        alpha_mul = alpha_multiplier(phi[ok], sw[ok], ev.sigma2_a[ok])
        alphas = grid * alpha_mul
        losses = None
        index = 0
        if grid.size > 1:
            losses = self._cv_losses(ev, terms, sw, alphas, solver, cv_rng)
            index = select_alpha(alphas, losses, self.select)
        alpha = float(alphas[index])
        b0, coef = solver.fit(phi[ok], ev.z[ok], sw[ok], alpha)
        pooled = float(np.sum(sw[ok] * ev.z[ok]) / np.sum(sw[ok]))
        has_rows = ev.n > 0
        mu = np.full(ev.groups.n_groups, pooled)
        mu[has_rows] = b0 + phi[has_rows] @ coef
        if np.all(ev.sigma2_a[ok] > 0):
            inv_var = np.where(ok, 1.0 / np.where(ok, ev.sigma2_a, 1.0), 0.0)
            lambdas = eq5_lambda(alphas, sw[ok], inv_var[ok])
        else:
            lambdas = np.full(alphas.shape, np.nan)
        self._ev = ev
        self._phi = phi
        self._sw = sw
        self._solver = solver
        self._mu = mu
        self._ci_seed = int(ci_rng.integers(0, 2**63 - 1))
        self._ci_cache: dict = {}
        self.result_ = SRResult(
            alpha=alpha,
            lambda_=float(lambdas[index]),
            alpha_grid=alphas,
            lambda_grid=np.asarray(lambdas),
            cv_loss=losses,
            sigma2=ev.sigma2,
            intercept=b0,
            coef=pd.Series(coef, index=names, name="coef"),
            pooled=pooled,
            n_defined=int(ok.sum()),
            selected_index=int(index),
            extra={"alpha_mul": alpha_mul, "grid_multipliers": grid},
        )
        status = ev.status
        self.estimates_ = pd.DataFrame(
            {
                "n": ev.n.astype(np.int64),
                "standard": np.where(ok, ev.z, np.nan),
                "standard_se": np.where(ok, np.sqrt(np.where(ok, ev.sigma2_a, 0.0)), np.nan),
                "structured": self._apply_clip(mu),
                "status": status,
            },
            index=ev.groups.index,
        )
        self.result_.estimates = self.estimates_
        self.result_.metric = metric if isinstance(metric, str) else getattr(metric, "__name__", "")
        return self

    def _cv_losses(self, ev, terms, sw_full, alphas, solver, rng) -> np.ndarray:
        """CV loss ``sum_a w_a (Z_a^test - muhat_a^train)^2`` per split and grid point."""
        n_groups = ev.groups.n_groups
        attr = ev.groups.attribute_codes
        masks = cv_splits(ev.codes, n_groups, scheme=self.cv, n_splits=int(self.n_splits), random_state=rng)
        losses = np.zeros((len(masks), alphas.size))
        for s, mask in enumerate(masks):
            train = np.flatnonzero(mask)
            test = np.flatnonzero(~mask)
            z_tr = ev.metric.values(ev.codes, n_groups, train)
            means_tr, n_tr = group_means(ev.codes, n_groups, ev.base, train)
            z_tr = np.where(n_tr > 0, z_tr, np.nan)
            fit_tr = (n_tr > 0) & np.isfinite(z_tr) & ev.defined
            if not fit_tr.any():
                continue
            sw_tr = np.where(fit_tr, ev.weights(n_tr), 0.0)
            sw_tr = sw_tr / sw_tr[fit_tr].mean()
            phi_tr, _ = ev.features.design(terms, attr, means_tr)
            b0, coefs = solver.path(phi_tr[fit_tr], z_tr[fit_tr], sw_tr[fit_tr], alphas)
            z_te = ev.metric.values(ev.codes, n_groups, test)
            eval_te = np.isfinite(z_te) & ev.defined
            if not eval_te.any():
                continue
            pooled_tr = float(np.sum(sw_tr[fit_tr] * z_tr[fit_tr]) / np.sum(sw_tr[fit_tr]))
            idx = np.flatnonzero(eval_te)
            seen = n_tr[idx] > 0
            pred = np.full((alphas.size, idx.size), pooled_tr)
            pred[:, seen] = b0[:, None] + coefs @ phi_tr[idx[seen]].T
            losses[s] = ((z_te[idx][None, :] - pred) ** 2 * sw_full[idx][None, :]).sum(axis=1)
        return losses

    # ------------------------------------------------------------------ intervals
    def standard_confint(self, level: float = 0.95, *, method: str = "normal") -> pd.DataFrame:
        """Confidence intervals of the standard estimates.

        Parameters
        ----------
        level : float, default 0.95
        method : {"normal", "bootstrap_normal", "percentile"}
            ``"normal"``: Eq. 7 with the model variance (pooled by default). The Appendix A
            alternatives: ``"bootstrap_normal"`` uses each group's own bootstrap variance and
            ``"percentile"`` the per-group bootstrap percentiles; both under-cover small groups.

        Returns
        -------
        pandas.DataFrame
            Columns ``n``, ``standard``, ``lower``, ``upper``, ``status``; the interval is NaN
            where ``status`` is not ``"ok"`` (no standard estimate).

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> rng = np.random.default_rng(1)
        >>> df = pd.DataFrame({"a": rng.integers(0, 2, 400), "b": rng.integers(0, 2, 400),
        ...                    "y_score": rng.integers(0, 2, 400)})
        >>> sr = StructuredRegression(["a", "b"], outcome=None, n_boot_var=20, n_splits=3).fit(df, "sel")
        >>> ci = sr.standard_confint(0.9)
        >>> bool((ci["lower"] < ci["standard"]).all())
        True
        """
        self._check_fitted()
        level = check_level(level)
        if method not in STANDARD_CI_METHODS:
            raise SpecError(f"unknown method {method!r}: use one of {', '.join(STANDARD_CI_METHODS)}")
        ev = self._ev
        ok = ev.defined
        z = np.where(ok, ev.z, np.nan)
        if method == "normal":
            lo, hi = normal_intervals(z, np.sqrt(np.where(ok, ev.sigma2_a, np.nan)), level)
        elif method == "bootstrap_normal":
            lo, hi = normal_intervals(z, np.sqrt(ev.var_boot), level)
        else:
            lo, hi = percentile_intervals(ev.replicates, level)
        lo = np.where(ok, lo, np.nan)
        hi = np.where(ok, hi, np.nan)
        return pd.DataFrame(
            {"n": ev.n.astype(np.int64), "standard": z, "lower": lo, "upper": hi, "status": ev.status},
            index=ev.groups.index,
        )

    def _bootstrap(self, method: str, n_boot: int, residuals: str, random_state,
                   deadline: float | None = None):
        key = (method, int(n_boot), residuals)
        if random_state is None and key in self._ci_cache:
            return self._ci_cache[key]
        rng = np.random.default_rng(self._ci_seed) if random_state is None else check_random_state(random_state)
        ev = self._ev
        ok = ev.defined
        pred = ev.n > 0
        phi_pred = self._phi[pred]
        if method == "rblpr":
            out = rblpr(
                self._phi[ok],
                ev.z[ok],
                self._sw[ok],
                ev.sigma2_a[ok],
                phi_pred,
                self.result_.alpha,
                self._solver,
                n_boot=int(n_boot),
                residuals=residuals,
                rng=rng,
                deadline=deadline,
            )
        else:
            out = lasso_percentile(
                self._phi[ok],
                self._sw[ok],
                ev.sigma2_a[ok],
                phi_pred,
                self._mu[ok],
                self.result_.alpha,
                self._solver,
                n_boot=int(n_boot),
                rng=rng,
                deadline=deadline,
            )
        replicates = out.pivots if method == "rblpr" else out
        if random_state is None and replicates.shape[0] == int(n_boot):  # a cut run is not kept
            self._ci_cache[key] = out
        return out

    def confint(
        self,
        level: float = 0.95,
        *,
        method: str = "rblpr",
        B: int = 100,
        residuals: str = "gaussian",
        random_state: int | np.random.Generator | None = None,
        time_limit: float | None = None,
        deadline: float | None = None,
    ) -> pd.DataFrame:
        """Confidence intervals of the structured estimates.

        Parameters
        ----------
        level : float, default 0.95
        method : {"rblpr", "lasso_percentile"}
            Residual-bootstrap lasso + partial ridge (the paper's method), or the naive lasso
            residual-bootstrap percentile interval (for comparison; it under-covers).
        B : int, default 100
            Bootstrap replicates (the R package HDCI defaults to 500).
        residuals : {"gaussian", "empirical"}
            rBLPR residuals: Gaussian with the model variances (default) or resampled
            standardised Lasso+OLS residuals.
        random_state : int, Generator or None
            None derives a fixed stream from the estimator's ``random_state`` (and caches the
            replicates, so several levels share them).
        time_limit : float, optional
            Seconds of wall-clock time for the bootstrap, checked before each replicate: the
            intervals come from the replicates that finished (coarser quantiles), and from
            none (NaN) when fewer than 2 did. The point estimates (:meth:`fit`) are not cut.
        deadline : float, optional
            A :func:`time.time` value, overriding ``time_limit``.

        Returns
        -------
        pandas.DataFrame
            Columns ``n``, ``structured``, ``mu_lpr`` (rBLPR only), ``lower``, ``upper`` and
            ``status``. Empty groups keep the pooled point estimate and get no interval (NaN).
            ``attrs`` holds ``replicates`` (how many ran), ``requested`` (``B``) and
            ``complete`` (whether all of them ran).

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> rng = np.random.default_rng(2)
        >>> df = pd.DataFrame({"a": rng.integers(0, 2, 400), "b": rng.integers(0, 3, 400),
        ...                    "y_score": rng.integers(0, 2, 400)})
        >>> sr = StructuredRegression(["a", "b"], outcome=None, n_boot_var=20, n_splits=3).fit(df, "sel")
        >>> ci = sr.confint(0.9, B=30)
        >>> bool((ci["lower"] <= ci["upper"]).all())
        True
        """
        self._check_fitted()
        level = check_level(level)
        if method not in CI_METHODS:
            raise SpecError(f"unknown method {method!r}: use one of {', '.join(CI_METHODS)}")
        ev = self._ev
        pred = ev.n > 0
        boot = self._bootstrap(method, B, residuals, random_state,
                               deadline_from(time_limit, deadline))
        replicates = boot.pivots if method == "rblpr" else boot
        n_groups = ev.groups.n_groups
        lo = np.full(n_groups, np.nan)
        hi = np.full(n_groups, np.nan)
        table = {"n": ev.n.astype(np.int64), "structured": self.estimates_["structured"].to_numpy()}
        if replicates.shape[0] >= 2:  # quantiles of one replicate are no interval
            lo[pred], hi[pred] = percentile_intervals(replicates, level)
        if method == "rblpr":
            lpr = np.full(n_groups, np.nan)
            lpr[pred] = boot.z_lpr
            table["mu_lpr"] = self._apply_clip(lpr)
        table["lower"] = self._apply_clip(lo)
        table["upper"] = self._apply_clip(hi)
        table["status"] = ev.status
        frame = pd.DataFrame(table, index=ev.groups.index)
        frame.attrs.update(replicates=int(replicates.shape[0]), requested=int(B),
                           complete=replicates.shape[0] == int(B))
        return frame

    # ------------------------------------------------------------------ extras
    def baseline_estimates(self) -> pd.DataFrame:
        """All estimators side by side: standard, pooled, James-Stein, empirical Bayes, structured.

        Returns
        -------
        pandas.DataFrame
            Columns ``n``, ``standard``, ``pooled``, ``james_stein``, ``empirical_bayes``,
            ``structured``, ``status``. JS and EB use the pooled variance of Eq. 6.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> rng = np.random.default_rng(3)
        >>> df = pd.DataFrame({"a": rng.integers(0, 3, 500), "b": rng.integers(0, 3, 500),
        ...                    "y_score": rng.integers(0, 2, 500)})
        >>> sr = StructuredRegression(["a", "b"], outcome=None, n_boot_var=20, n_splits=3).fit(df, "sel")
        >>> list(sr.baseline_estimates().columns)
        ['n', 'standard', 'pooled', 'james_stein', 'empirical_bayes', 'structured', 'status']
        """
        self._check_fitted()
        est = self.estimates_
        sigma2 = self.result_.sigma2
        out = est[["n", "standard"]].copy()
        out["pooled"] = pooled_estimate(est)["pooled"]
        out["james_stein"] = james_stein_bock(est, sigma2)["james_stein"]
        out["empirical_bayes"] = empirical_bayes(est, sigma2)["empirical_bayes"]
        out["structured"] = est["structured"]
        out["status"] = est["status"]
        return out

    def gof_test(
        self,
        reduced_features: str | Sequence[str] | None,
        full_features: str | Sequence[str] | None,
        *,
        unit: str = "group",
        cluster: str | None = None,
    ) -> GofResult:
        """F-test of nested feature sets on the fitted evaluation set (see :func:`gof_test`).

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> rng = np.random.default_rng(4)
        >>> df = pd.DataFrame({"a": rng.integers(0, 3, 900), "b": rng.integers(0, 3, 900),
        ...                    "y_score": rng.integers(0, 2, 900)})
        >>> sr = StructuredRegression(["a", "b"], outcome=None, n_boot_var=20, n_splits=3).fit(df, "sel")
        >>> sr.gof_test("∅", "a+b").df1
        4
        """
        self._check_fitted()
        return gof_from_evaluation(self._ev, reduced_features, full_features, unit=unit, cluster=cluster)

    @property
    def evaluation_(self) -> EvaluationData:
        """The prepared evaluation set (group statistics, bootstrap replicates, features)."""
        self._check_fitted()
        return self._ev

    def __repr__(self) -> str:
        return f"StructuredRegression(sensitive={list(self.sensitive) if not isinstance(self.sensitive, str) else self.sensitive!r})"

