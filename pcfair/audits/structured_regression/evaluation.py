"""One evaluation set prepared for structured regression: groups, metric, variances, features.

:func:`prepare_evaluation` validates the input frame once, sorts the rows by group, computes the
standard estimates ``Z_a``, their stratified-bootstrap variances and the pooled variance of
Eq. 6, and the group means that the mean features need. Both :class:`StructuredRegression` and
:func:`gof_test` start from it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pcfair._random import check_random_state
from pcfair.errors import DataError, SpecError

from pcfair.audits._model import as_model
from .features import FeatureSpace, group_means, outcome_levels_of
from .groups import GroupIndex, build_group_index
from .metrics import GroupMetric, canonical_metric_name, prepare_metric
from .variance import VARIANCE_METHODS, bootstrap_variance, group_variances

#: column holding the model's outputs when ``model`` is given and ``output`` is None
MODEL_OUTPUT_COLUMN = "y_score"


@dataclass
class EvaluationData:
    """An evaluation set prepared for group-level regression (rows sorted by group).

    Attributes
    ----------
    groups : GroupIndex
    data : pandas.DataFrame
        The rows, sorted by group (with the model's outputs when a model was given).
    codes : ndarray of int
        Group number of every row of ``data``.
    metric : GroupMetric
    features : FeatureSpace
    base : ndarray
        Row-level base values of the mean features.
    n, z : ndarray
        Group sizes and standard estimates (NaN where undefined).
    means : ndarray
        Group means of ``base`` (NaN rows for empty groups).
    replicates : ndarray
        Bootstrap replicates of ``z``, shape (B, n_groups).
    var_boot : ndarray
        Per-group bootstrap variances.
    sigma2_a : ndarray
        Model variances of ``z`` (``inf`` for empty groups).
    sigma2 : float
        Pooled per-row variance of Eq. 6.
    """

    groups: GroupIndex
    data: pd.DataFrame
    codes: np.ndarray
    metric: GroupMetric
    features: FeatureSpace
    base: np.ndarray
    n: np.ndarray
    z: np.ndarray
    means: np.ndarray
    replicates: np.ndarray
    var_boot: np.ndarray
    sigma2_a: np.ndarray
    sigma2: float

    @property
    def defined(self) -> np.ndarray:
        """Groups with rows and a defined standard estimate (the ones the fits use)."""
        return (self.n > 0) & np.isfinite(self.z)

    @property
    def status(self) -> np.ndarray:
        """Per group: ``"ok"``, ``"empty"`` (no rows) or ``"undefined"`` (metric undefined)."""
        out = np.where(self.defined, "ok", "undefined").astype(object)
        out[self.n == 0] = "empty"
        return out

    def weights(self, n: np.ndarray | None = None) -> np.ndarray:
        """Normalised inverse-variance weights ``sw_a`` (mean 1 over defined groups, 0 elsewhere).

        With ``n`` (e.g. training counts) the variances are rescaled to ``s_a^2 / n``, where
        ``s_a^2 = n_a sigma_a^2`` is the per-row variance from the full data.
        """
        ok = self.defined
        per_row = np.where(ok, np.where(ok, self.sigma2_a, 0.0) * self.n, 0.0)
        counts = self.n if n is None else np.asarray(n)
        if np.all(per_row[ok] > 0):
            inv = np.where(ok & (counts > 0), counts / np.where(per_row > 0, per_row, 1.0), 0.0)
        else:  # zero variance somewhere: fall back to weights proportional to counts
            inv = np.where(ok, counts, 0).astype(float)
        use = inv > 0
        if not use.any():
            return inv
        return inv / inv[use].mean()


def prepare_evaluation(
    df: pd.DataFrame,
    metric: str | Callable[[pd.DataFrame], float],
    *,
    sensitive: Sequence[str],
    outcome: str | None = "y_true",
    output: str | None = "y_score",
    model=None,
    favorable=1,
    threshold: float | None = None,
    explanatory: Sequence[str] = (),
    outcome_rates: bool = True,
    categories: dict[str, Sequence] | None = None,
    variance: str = "pooled",
    n_boot_var: int = 100,
    random_state: int | np.random.Generator | None = 0,
) -> EvaluationData:
    """Validate an evaluation frame and compute everything the group-level fits need.

    Parameters are those of :class:`StructuredRegression`; see there.

    Returns
    -------
    EvaluationData

    Raises
    ------
    DataError
        On missing columns, unusable values, or a metric undefined in every group.
    SpecError
        On an unknown metric or option.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"a": [0, 0, 1, 1], "b": [0, 1, 0, 1], "y_true": [1, 0, 1, 1],
    ...                    "y_score": [1, 1, 0, 1]})
    >>> prepare_evaluation(df, "acc", sensitive=["a", "b"], n_boot_var=10).z.tolist()
    [1.0, 0.0, 0.0, 1.0]
    """
    if not isinstance(df, pd.DataFrame):
        raise DataError(f"the evaluation data must be a pandas DataFrame, got {type(df).__name__}")
    if len(df) == 0:
        raise DataError("the evaluation data has no rows")
    if variance not in VARIANCE_METHODS:
        raise SpecError(f"unknown variance {variance!r}: use one of {', '.join(VARIANCE_METHODS)}")
    if int(n_boot_var) < 2:
        raise SpecError(f"n_boot_var must be at least 2, got {n_boot_var}")
    explanatory = [explanatory] if isinstance(explanatory, str) else list(explanatory)
    groups = build_group_index(df, sensitive, categories)
    data = df
    if model is not None:
        inputs = df.drop(columns=[outcome]) if outcome is not None and outcome in df.columns else df
        output = output or MODEL_OUTPUT_COLUMN
        data = df.copy()
        data[output] = as_model(model, outcome=outcome, favorable=favorable).proba(inputs)
        if threshold is None:
            threshold = 0.5
    codes = groups.row_codes(data)
    order = np.argsort(codes, kind="stable")
    data = data.iloc[order].reset_index(drop=True)
    codes = codes[order]
    use_outcome = outcome is not None and outcome_rates
    if use_outcome and outcome not in data.columns:
        raise DataError(
            f"outcome column {outcome!r} is not in the data; pass outcome=None or outcome_rates=False"
        )
    name = canonical_metric_name(metric) if isinstance(metric, str) else None
    metric_outcome = outcome if (outcome is not None and outcome in data.columns) else None
    if name is not None and outcome is not None and metric_outcome is None and name not in ("sel", "mean"):
        raise DataError(f"metric {name!r} needs the outcome column, but {outcome!r} is not in the data")
    prepared = prepare_metric(metric, data, outcome=metric_outcome, output=output, threshold=threshold)
    levels = outcome_levels_of(data, outcome) if use_outcome else None
    features = FeatureSpace(groups, outcome if use_outcome else None, levels, explanatory)
    base = features.base_rows(data)
    n_groups = groups.n_groups
    z = prepared.values(codes, n_groups)
    means, n = group_means(codes, n_groups, base)
    z = np.where(n > 0, z, np.nan)
    if not np.any(np.isfinite(z)):
        raise DataError(f"metric {prepared.name!r} is undefined in every group")
    rng = check_random_state(random_state)
    replicates = prepared.bootstrap(codes, n_groups, int(n_boot_var), rng)
    var_boot = bootstrap_variance(replicates)
    sigma2_a, sigma2 = group_variances(n, var_boot, variance)
    return EvaluationData(
        groups=groups,
        data=data,
        codes=codes,
        metric=prepared,
        features=features,
        base=base,
        n=n,
        z=z,
        means=means,
        replicates=replicates,
        var_boot=var_boot,
        sigma2_a=sigma2_a,
        sigma2=sigma2,
    )
