"""The paper's semi-synthetic generating models (Section 5.2, Appendix D; spec §6.2).

The population keeps its attributes and features, but the system output Yhat is replaced by
synthetic values whose group mean ``mu_a`` has a known structure; the metric is ``E[Yhat]``.

=================  ===================================================  ==================
model              ``mu_a``                                             Yhat given A = a
=================  ===================================================  ==================
``"age"``          0.35 - 0.3 * 1{age = 40-59}                          Bernoulli(mu_a)
``"expl"``         -0.93 + 0.16 * E_{D_a}[number_diagnoses]              N(mu_a, noise_sd)
``"age+rc"``       0.65 - 0.15 * 1{age = 40-59} - 0.45 * 1{race = white}  Bernoulli(mu_a)
``"age*rc"``       0.32 - 0.27 * 1{age = 40-59} * 1{race = white}        Bernoulli(mu_a)
``"constant"``     ``constant`` for every group (no structure)          Bernoulli(mu_a)
``"unstructured"`` i.i.d. U(low, high) per group                        Bernoulli(mu_a)
=================  ===================================================  ==================

The last two are the no-structure DGPs of the spec's tests T11, T12 and T15. The paper writes
``N(mu_A, 0.1)`` without saying whether 0.1 is a variance or an SD; pcfair reads it as the SD
(``noise_sd=0.1``), a parameter. The paper writes the 40-60 bin; it means the 40-59 bin.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from pcfair.errors import DataError, SpecError

from ._rng import as_generator
from .metrics import group_metric

SEMI_SYNTHETIC_MODELS = ("age", "expl", "age+rc", "age*rc", "constant", "unstructured")
DEFAULT_SENSITIVE = ("race", "age", "gender")


def semi_synthetic_means(
    population: pd.DataFrame,
    model: str,
    *,
    sensitive: Sequence[str] = DEFAULT_SENSITIVE,
    age: str = "age",
    race: str = "race",
    expl: str = "number_diagnoses",
    age_level="40-59",
    race_level="white",
    constant: float = 0.27,
    low: float = 0.1,
    high: float = 0.6,
    random_state: int | np.random.Generator | None = None,
) -> np.ndarray:
    """The generating model's ``mu_A`` of every row of ``population``.

    Parameters
    ----------
    population : pandas.DataFrame
        The ground truth D.
    model : str
        One of :data:`SEMI_SYNTHETIC_MODELS`.
    sensitive : sequence of str
        The group attributes (used by ``"expl"`` and ``"unstructured"``).
    age, race, expl : str
        Columns of the age bin, the race and the explanatory feature of ``"expl"``.
    age_level, race_level
        The values ``40-59`` and ``white`` in the columns' own coding (e.g. integer codes when
        the population was sampled from a PC).
    constant, low, high : float
        Parameters of ``"constant"`` and ``"unstructured"``.
    random_state : int, Generator or None
        Draws the group means of ``"unstructured"``.

    Returns
    -------
    ndarray of shape (n_rows,)

    Examples
    --------
    >>> import pandas as pd
    >>> pop = pd.DataFrame({"race": ["white", "other"], "age": ["40-59", "60-79"], "gender": ["f", "m"]})
    >>> semi_synthetic_means(pop, "age+rc").round(2).tolist()
    [0.05, 0.65]
    """
    if model not in SEMI_SYNTHETIC_MODELS:
        raise SpecError(f"unknown semi-synthetic model {model!r}: use one of {', '.join(SEMI_SYNTHETIC_MODELS)}")
    needed = {"age": [age], "age+rc": [age, race], "age*rc": [age, race], "expl": [*sensitive, expl]}
    needed["unstructured"] = list(sensitive)
    for col in needed.get(model, []):
        if col not in population.columns:
            raise DataError(f"semi-synthetic model {model!r} needs column {col!r}, which is not in the population")
    n = len(population)
    if model == "constant":
        return np.full(n, float(constant))
    if model == "unstructured":
        rng = as_generator(random_state)
        codes = population.groupby(list(sensitive), observed=True, sort=True).ngroup().to_numpy()
        return rng.uniform(low, high, size=codes.max() + 1)[codes]
    if model == "expl":
        x = pd.to_numeric(population[expl], errors="coerce")
        if x.isna().any():
            raise DataError(f"column {expl!r} has missing or non-numeric values")
        group_mean = x.groupby([population[c] for c in sensitive], observed=True).transform("mean")
        return -0.93 + 0.16 * group_mean.to_numpy(dtype=float)
    is_age = (population[age] == age_level).to_numpy()
    if not is_age.any():
        raise DataError(f"column {age!r} has no row equal to age_level={age_level!r}")
    if model == "age":
        return 0.35 - 0.3 * is_age
    is_white = (population[race] == race_level).to_numpy()
    if not is_white.any():
        raise DataError(f"column {race!r} has no row equal to race_level={race_level!r}")
    if model == "age+rc":
        return 0.65 - 0.15 * is_age - 0.45 * is_white
    return 0.32 - 0.27 * (is_age & is_white)


def add_semi_synthetic_output(
    population: pd.DataFrame,
    model: str,
    *,
    column: str = "y_hat",
    noise_sd: float = 0.1,
    random_state: int | np.random.Generator | None = None,
    **means_options,
) -> pd.DataFrame:
    """Return a copy of ``population`` with synthetic outputs ``column`` drawn from ``model``.

    Bernoulli models draw ``Yhat ~ Bernoulli(mu_A)``; ``"expl"`` draws ``N(mu_A, noise_sd)``.
    The generating means are kept in the column ``column + "_mu"``.

    Parameters
    ----------
    population : pandas.DataFrame
    model : str
        One of :data:`SEMI_SYNTHETIC_MODELS`.
    column : str, default "y_hat"
    noise_sd : float, default 0.1
        SD of the Gaussian model (the paper's ambiguous 0.1, read as an SD).
    random_state : int, Generator or None
    **means_options
        Passed to :func:`semi_synthetic_means` (column names, levels...).

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> from pcfair.audits.structured_regression.populations import make_diabetes_like_population
    >>> pop = make_diabetes_like_population(5000, random_state=0)
    >>> out = add_semi_synthetic_output(pop, "age*rc", random_state=0)
    >>> round(float(out["y_hat"].mean()), 1)
    0.3
    """
    rng = as_generator(random_state)
    mu = semi_synthetic_means(population, model, random_state=rng, **means_options)
    out = population.copy()
    if model == "expl":
        if noise_sd < 0:
            raise SpecError(f"noise_sd must be non-negative, got {noise_sd}")
        out[column] = rng.normal(mu, noise_sd)
    else:
        if np.any((mu < 0) | (mu > 1)):
            raise DataError(f"model {model!r} gives means outside [0, 1]; cannot draw Bernoulli outputs")
        out[column] = (rng.random(len(mu)) < mu).astype(np.int64)
    out[column + "_mu"] = mu
    return out


def true_group_metric(
    population: pd.DataFrame,
    sensitive: Sequence[str] = DEFAULT_SENSITIVE,
    metric="mean",
    *,
    output: str = "y_hat",
    outcome: str | None = None,
    threshold: float | None = None,
    categories: dict | None = None,
) -> pd.Series:
    """The ground truth ``mu_a = m(D_a)`` of every group of a finite population.

    Returns a Series indexed like :attr:`StructuredRegression.estimates_` (NaN for groups the
    population lacks or where the metric is undefined).

    Examples
    --------
    >>> import pandas as pd
    >>> pop = pd.DataFrame({"a": [0, 0, 1], "b": [0, 0, 0], "y_hat": [1.0, 0.0, 1.0]})
    >>> true_group_metric(pop, ["a", "b"]).tolist()
    [0.5, 1.0]
    """
    table = group_metric(population, sensitive, metric, outcome=outcome, output=output, threshold=threshold)
    if categories:
        from .groups import build_group_index

        index = build_group_index(population, sensitive, categories).index
        table = table.reindex(index)
    return table["standard"].rename("truth")
