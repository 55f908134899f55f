"""Goodness-of-fit F-tests between nested feature sets (spec §4).

The test asks whether adding features improves an *unregularised* linear fit of the group
metrics: weighted least squares of ``Z_a`` on the features with weights ``1/sigmahat_a^2``
(the square loss of Eq. 5), over the ``m`` groups with a defined ``Z_a``:

    F = [(RSS_0 - RSS_1) / (p_1 - p_0)] / [RSS_1 / (m - p_1)]  ~  F(p_1 - p_0, m - p_1),

where ``p`` is the *rank* of the design including the intercept (one-hot blocks are
collinear). The group-identity indicators are not part of any default feature set: with them
the fit is perfect. With ``unit="individual"`` each row in the metric's denominator is one
observation (OLS of the per-row metric value, unweighted; the paper does not specify weights),
optionally averaged per ``cluster`` first (e.g. speakers in the ASR study).
The p-value comes from :func:`scipy.stats.f.sf`; no bootstrap or permutation is involved.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from scipy.stats import f as f_dist

from pcfair.audits._result import AuditResult, json_value
from pcfair.errors import DataError, SpecError

from .evaluation import EvaluationData, prepare_evaluation
from .features import Term

UNITS = ("group", "individual")


@dataclass(frozen=True, repr=False)
class GofResult(AuditResult):
    """Result of a nested-model F-test.

    Attributes
    ----------
    F : float
        The F statistic (``inf`` when the full model fits exactly and the reduced one does not).
    df1, df2 : int
        Numerator ``p_1 - p_0`` and denominator ``m - p_1`` degrees of freedom.
    p : float
        ``P[F(df1, df2) >= F]``.
    rss_reduced, rss_full : float
        Weighted residual sums of squares.
    n_units : int
        Observations ``m`` (groups, rows or clusters).
    reduced, full : str
        The feature sets compared.
    unit : str
        ``"group"`` or ``"individual"``.

    Examples
    --------
    >>> res = GofResult(F=2.5, df1=3, df2=20, p=0.089, rss_reduced=4.0, rss_full=3.0,
    ...                 n_units=24, reduced="expl", full="expl+sens")
    >>> res.to_dict()["p"]
    0.089
    >>> res.to_frame().shape
    (1, 10)
    """

    method = "regression-gof"

    F: float
    df1: int
    df2: int
    p: float
    rss_reduced: float
    rss_full: float
    n_units: int
    reduced: str
    full: str
    unit: str = "group"

    def headline(self) -> dict:
        """Every field: the test is its own headline."""
        return asdict(self)

    def to_frame(self) -> pd.DataFrame:
        """The test as a one-row table."""
        return pd.DataFrame([asdict(self)])

    def to_dict(self) -> dict:
        """The result as a plain dict (JSON-friendly: an infinite F becomes None)."""
        return {"method": self.method, **json_value(asdict(self))}

    def _plot(self, ax, **kwargs):
        """The two residual sums of squares, the test's statistic and p-value in the title."""
        ax.bar(["reduced: " + self.reduced, "full: " + self.full],
               [self.rss_reduced, self.rss_full], color=["#9e9e9e", "#1f77b4"], **kwargs)
        ax.set_ylabel(f"weighted RSS ({self.unit}s)")
        ax.set_title(f"F({self.df1}, {self.df2}) = {self.F:.3g}, p = {self.p:.3g}")
        return ax


def _rss_and_rank(x: np.ndarray, y: np.ndarray, root_w: np.ndarray) -> tuple[float, int]:
    a = x * root_w[:, None]
    b = y * root_w
    beta, _, rank, _ = np.linalg.lstsq(a, b, rcond=None)
    resid = b - a @ beta
    return float(resid @ resid), int(rank)


def nested_f_test(
    x_reduced: np.ndarray,
    x_full: np.ndarray,
    y: np.ndarray,
    weights: np.ndarray | None = None,
) -> tuple[float, int, int, float, float, float]:
    """F-test of a reduced linear model nested in a full one (intercepts added here).

    Parameters
    ----------
    x_reduced, x_full : ndarray of shape (m, p0) and (m, p1)
        Designs without the intercept column; the reduced span must lie in the full span.
    y : ndarray of shape (m,)
    weights : ndarray of shape (m,), optional
        WLS weights (inverse variances); ``None`` for OLS.

    Returns
    -------
    tuple
        ``(F, df1, df2, p, rss_reduced, rss_full)``.

    Raises
    ------
    SpecError
        If the models are not nested or the full model adds nothing.
    DataError
        If there are no residual degrees of freedom.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[0.0], [1.0], [2.0], [3.0]])
    >>> F, df1, df2, p, *_ = nested_f_test(np.zeros((4, 0)), x, np.array([0.1, 0.9, 2.2, 2.8]))
    >>> (df1, df2, round(p, 4))
    (1, 2, 0.0092)
    """
    y = np.asarray(y, dtype=float)
    m = y.shape[0]
    w = np.ones(m) if weights is None else np.asarray(weights, dtype=float)
    if np.any(w < 0) or not np.all(np.isfinite(w)):
        raise DataError("F-test weights must be finite and non-negative")
    root_w = np.sqrt(w)
    ones = np.ones((m, 1))
    x0 = np.hstack([ones, np.asarray(x_reduced, dtype=float).reshape(m, -1)])
    x1 = np.hstack([ones, np.asarray(x_full, dtype=float).reshape(m, -1)])
    rss0, r0 = _rss_and_rank(x0, y, root_w)
    rss1, r1 = _rss_and_rank(x1, y, root_w)
    r_both = int(np.linalg.matrix_rank(np.hstack([x1, x0]) * root_w[:, None]))
    if r_both != r1:
        raise SpecError("the reduced feature set is not nested in the full one (its span is not contained)")
    df1 = r1 - r0
    df2 = m - r1
    if df1 <= 0:
        raise SpecError("the full feature set adds nothing to the reduced one (equal ranks)")
    if df2 <= 0:
        raise DataError(
            f"no residual degrees of freedom: {m} observations and a full model of rank {r1};"
            " use fewer features or a finer unit (unit='individual')"
        )
    center = float(np.average(y, weights=w)) if w.sum() > 0 else 0.0
    scale = max(float(np.sum(w * (y - center) ** 2)), 1e-300)
    if rss1 <= 1e-14 * scale:
        stat = np.inf if rss0 - rss1 > 1e-14 * scale else np.nan
        p = 0.0 if np.isinf(stat) else 1.0
        return float(stat), df1, df2, p, rss0, rss1
    stat = ((rss0 - rss1) / df1) / (rss1 / df2)
    stat = max(stat, 0.0)
    return float(stat), df1, df2, float(f_dist.sf(stat, df1, df2)), rss0, rss1


def _label(spec) -> str:
    if spec is None:
        return "∅"
    if isinstance(spec, str):
        return spec.strip() or "∅"
    return "+".join(str(s) for s in spec) or "∅"


def gof_from_evaluation(
    ev: EvaluationData,
    reduced_features: str | Sequence[str] | None,
    full_features: str | Sequence[str] | None,
    *,
    unit: str = "group",
    cluster: str | None = None,
) -> GofResult:
    """F-test of two feature sets on a prepared evaluation set (see :func:`gof_test`)."""
    if unit not in UNITS:
        raise SpecError(f"unknown unit {unit!r}: use one of {', '.join(UNITS)}")
    t0: list[Term] = ev.features.parse(reduced_features)
    t1: list[Term] = ev.features.parse(full_features)
    if unit == "group":
        if cluster is not None:
            raise SpecError("cluster only applies to unit='individual'")
        ok = ev.defined
        attr = ev.groups.attribute_codes[ok]
        x0, _ = ev.features.design(t0, attr, ev.means[ok])
        x1, _ = ev.features.design(t1, attr, ev.means[ok])
        y = ev.z[ok]
        w = 1.0 / ev.sigma2_a[ok] if np.all(ev.sigma2_a[ok] > 0) else ev.n[ok].astype(float)
    else:
        resp, keep = ev.metric.row_response()
        attr = ev.groups.row_attribute_codes(ev.data)[keep]
        base = ev.base[keep]
        x0, _ = ev.features.design(t0, attr, base)
        x1, _ = ev.features.design(t1, attr, base)
        y = resp[keep]
        w = None
        if cluster is not None:
            if cluster not in ev.data.columns:
                raise DataError(f"cluster column {cluster!r} is not in the data")
            ids = ev.data[cluster].to_numpy()[keep]
            if pd.isna(ids).any():
                raise DataError(f"cluster column {cluster!r} has missing values")
            per_cluster = pd.Series(ev.codes[keep]).groupby(ids).nunique()
            if (per_cluster > 1).any():
                bad = per_cluster.index[per_cluster > 1][0]
                raise DataError(
                    f"cluster {bad!r} of column {cluster!r} spans several sensitive groups;"
                    " clusters must lie within one group"
                )
            frame = pd.DataFrame(np.column_stack([y, x0, x1]))
            means = frame.groupby(ids, sort=True).mean().to_numpy()
            y = means[:, 0]
            x0 = means[:, 1 : 1 + x0.shape[1]]
            x1 = means[:, 1 + x0.shape[1] :]
    stat, df1, df2, p, rss0, rss1 = nested_f_test(x0, x1, y, w)
    return GofResult(
        F=stat,
        df1=df1,
        df2=df2,
        p=p,
        rss_reduced=rss0,
        rss_full=rss1,
        n_units=int(y.shape[0]),
        reduced=_label(reduced_features),
        full=_label(full_features),
        unit=unit,
    )


def gof_test(
    df: pd.DataFrame,
    metric: str | Callable[[pd.DataFrame], float],
    reduced_features: str | Sequence[str] | None,
    full_features: str | Sequence[str] | None,
    *,
    sensitive: Sequence[str],
    outcome: str | None = "y_true",
    output: str | None = "y_score",
    model=None,
    threshold: float | None = None,
    explanatory: Sequence[str] = (),
    outcome_rates: bool = True,
    unit: str = "group",
    cluster: str | None = None,
    variance: str = "pooled",
    n_boot_var: int = 100,
    categories: dict[str, Sequence] | None = None,
    random_state: int | np.random.Generator | None = 0,
) -> GofResult:
    """Test whether ``full_features`` fit the group metrics better than ``reduced_features``.

    Parameters
    ----------
    df : pandas.DataFrame
        One row per evaluated individual.
    metric : str or callable
        As in :class:`StructuredRegression`.
    reduced_features, full_features : str or sequence of str
        Feature sets in the syntax of :mod:`.features`, e.g. ``"expl"`` and ``"expl+sens"``;
        ``"∅"`` (or ``""``) is the intercept-only model.
    sensitive, outcome, output, model, threshold, explanatory, outcome_rates, variance,
    n_boot_var, categories, random_state
        As in :class:`StructuredRegression` (the bootstrap gives the WLS weights).
    unit : {"group", "individual"}
        ``"group"``: WLS over groups (Eq. 5 weights). ``"individual"``: unweighted OLS over
        the rows in the metric's denominator (mean-type metrics only).
    cluster : str, optional
        With ``unit="individual"``, average rows per value of this column first (each cluster
        must lie within one group).

    Returns
    -------
    GofResult

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"a": rng.integers(0, 3, 3000), "b": rng.integers(0, 3, 3000)})
    >>> df["y_score"] = rng.random(3000) < np.where(df["a"] == 0, 0.2, 0.5)
    >>> res = gof_test(df, "sel", "b", "a+b", sensitive=["a", "b"], outcome=None)
    >>> (res.df1, res.df2, res.p < 0.01)
    (2, 4, True)
    """
    ev = prepare_evaluation(
        df,
        metric,
        sensitive=sensitive,
        outcome=outcome,
        output=output,
        model=model,
        threshold=threshold,
        explanatory=explanatory,
        outcome_rates=outcome_rates,
        categories=categories,
        variance=variance,
        n_boot_var=n_boot_var,
        random_state=random_state,
    )
    return gof_from_evaluation(ev, reduced_features, full_features, unit=unit, cluster=cluster)


def gof_table(source, comparisons: Sequence[tuple], *, unit: str = "group", cluster: str | None = None) -> pd.DataFrame:
    """Run several F-tests on one evaluation set (a row of the paper's Table 1 or Table 2).

    Parameters
    ----------
    source : StructuredRegression or EvaluationData
        A fitted estimator (its evaluation set is reused) or a prepared evaluation set.
    comparisons : sequence of (reduced, full) pairs
        Feature sets in the syntax of :mod:`.features`.
    unit, cluster
        As in :func:`gof_test`.

    Returns
    -------
    pandas.DataFrame
        One row per pair, indexed ``"full vs reduced"``, with columns ``F``, ``df1``, ``df2``, ``p``.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from pcfair.audits.structured_regression import StructuredRegression
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"a": rng.integers(0, 3, 2000), "b": rng.integers(0, 3, 2000)})
    >>> df["y_score"] = (rng.random(2000) < np.where(df["a"] == 0, 0.2, 0.5)).astype(int)
    >>> sr = StructuredRegression(["a", "b"], outcome=None, n_boot_var=30, n_splits=3).fit(df, "sel")
    >>> table = gof_table(sr, [("∅", "a"), ("a", "a+b")])
    >>> list(table.index), bool(table["p"].iloc[0] < 1e-6)
    (['a vs ∅', 'a+b vs a'], True)
    """
    ev = source.evaluation_ if hasattr(source, "evaluation_") else source
    if not isinstance(ev, EvaluationData):
        raise SpecError(f"gof_table needs a fitted StructuredRegression or EvaluationData, got {type(source).__name__}")
    rows = []
    for reduced, full in comparisons:
        res = gof_from_evaluation(ev, reduced, full, unit=unit, cluster=cluster)
        rows.append({"test": f"{res.full} vs {res.reduced}", "F": res.F, "df1": res.df1, "df2": res.df2, "p": res.p})
    return pd.DataFrame(rows).set_index("test")
