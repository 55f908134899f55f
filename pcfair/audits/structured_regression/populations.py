"""Ground-truth populations and stratified evaluation draws (spec §6, §8).

The paper's ground truth is a fixed population D (75% of the Diabetes 130-US data) from which
evaluation sets of n = 5000 are drawn by stratified sampling on the sensitive tuple A with
proportional allocation, ``round_rand(n_a^D / |D| * n)`` rows per group without replacement.

A population can be

* any DataFrame;
* sampled from a probabilistic circuit (or any object with
  ``sample(n, evidence=None, random_state=None) -> DataFrame``) with :func:`sample_population`;
* :func:`make_diabetes_like_population`, a synthetic stand-in with the structure of the
  diabetes data (race x age x gender with skewed shares and seven explanatory features). The
  diabetes data are not shipped with pcfair, so the statistical tests and the benchmark use
  this stand-in.

:func:`stratified_sample` draws fixed per-group counts either from a DataFrame population or
directly from a sampler, conditioning it on each group's attribute values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from pcfair.errors import DataError, SpecError

from ._rng import as_generator, child_generators
from .fit import round_rand

RACES = ("AfricanAmerican", "Hispanic", "white", "other")
AGES = ("20-39", "40-59", "60-79", "80-99")
GENDERS = ("female", "male")
SHARES = ("diabetes", "uniform")

# Shares resembling the diabetes data (Strack et al. 2014): mostly white, few Hispanic, few
# patients under 40, Hispanic and African-American patients younger on average.
_RACE_P = np.array([0.19, 0.021, 0.76, 0.029])
_AGE_GIVEN_RACE = np.array(
    [
        [0.09, 0.36, 0.44, 0.11],
        [0.10, 0.36, 0.42, 0.12],
        [0.04, 0.25, 0.50, 0.21],
        [0.07, 0.32, 0.46, 0.15],
    ]
)
_FEMALE_GIVEN_AGE = np.array([0.52, 0.47, 0.52, 0.63])
_DIAGNOSES_BY_AGE = np.array([5.6, 7.0, 7.6, 7.9])


def make_diabetes_like_population(
    n: int = 75_000,
    *,
    shares: str = "diabetes",
    random_state: int | np.random.Generator | None = 0,
) -> pd.DataFrame:
    """A synthetic population shaped like the paper's diabetes ground truth.

    Parameters
    ----------
    n : int, default 75000
        Rows (the paper's population has 73,988 admissions).
    shares : {"diabetes", "uniform"}
        ``"diabetes"``: skewed group shares like the diabetes data (many groups get fewer
        than 25 rows in an evaluation set of 5000); ``"uniform"``: all 32 groups equally likely.
    random_state : int, Generator or None

    Returns
    -------
    pandas.DataFrame
        Categorical ``race`` (AfricanAmerican, Hispanic, white, other), ``age`` (20-39,
        40-59, 60-79, 80-99), ``gender`` (female, male); counts ``number_inpatient``,
        ``number_outpatient``, ``number_emergency``, ``number_diagnoses`` (1-16, increasing
        with age); ``chf`` (0/1); outcome ``readmitted`` (0/1, about 11%); and ``risk_score``,
        a noisy logistic risk score in (0, 1).

    Examples
    --------
    >>> pop = make_diabetes_like_population(2000, random_state=1)
    >>> pop.groupby(["race", "age", "gender"], observed=False).ngroups
    32
    """
    if shares not in SHARES:
        raise SpecError(f"unknown shares {shares!r}: use one of {', '.join(SHARES)}")
    if int(n) < 1:
        raise SpecError(f"n must be positive, got {n}")
    n = int(n)
    rng = as_generator(random_state)
    if shares == "diabetes":
        race = rng.choice(4, size=n, p=_RACE_P)
        u = rng.random(n)
        age = (u[:, None] > np.cumsum(_AGE_GIVEN_RACE[race], axis=1)).sum(axis=1)
        female = rng.random(n) < _FEMALE_GIVEN_AGE[age]
    else:
        race = rng.integers(0, 4, n)
        age = rng.integers(0, 4, n)
        female = rng.random(n) < 0.5
    diagnoses = np.clip(np.rint(rng.normal(_DIAGNOSES_BY_AGE[age] + 0.2 * (race == 0), 1.9)), 1, 16)
    inpatient = rng.poisson(0.5 * (1.0 + 0.2 * age))
    outpatient = rng.poisson(0.35, n)
    emergency = rng.poisson(0.2 * np.where(race == 0, 1.5, 1.0))
    chf = (rng.random(n) < 0.04 + 0.04 * age).astype(np.int64)
    logit = -2.6 + 0.25 * inpatient + 0.05 * (diagnoses - 7) + 0.15 * emergency + 0.3 * chf
    readmitted = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(np.int64)
    score = 1.0 / (1.0 + np.exp(-(logit + rng.normal(0.0, 0.6, n))))
    return pd.DataFrame(
        {
            "race": pd.Categorical.from_codes(race, categories=list(RACES)),
            "age": pd.Categorical.from_codes(age, categories=list(AGES)),
            "gender": pd.Categorical.from_codes(np.where(female, 0, 1), categories=list(GENDERS)),
            "number_inpatient": inpatient,
            "number_outpatient": outpatient,
            "number_emergency": emergency,
            "number_diagnoses": diagnoses.astype(np.int64),
            "chf": chf,
            "readmitted": readmitted,
            "risk_score": score,
        }
    )


def _check_sampler(sampler) -> None:
    if not callable(getattr(sampler, "sample", None)):
        raise SpecError(
            f"{type(sampler).__name__} is not a sampler: it needs sample(n, evidence=None, random_state=None)"
        )


def sample_population(
    sampler,
    n: int,
    *,
    evidence: Mapping | pd.DataFrame | None = None,
    random_state: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    """Draw a ground-truth population of ``n`` rows from a PC (or any sampler).

    Parameters
    ----------
    sampler : object
        Has ``sample(n, evidence=None, random_state=None) -> DataFrame`` whose columns are the
        variables (integer category codes), as a pcfair circuit does.
    n : int
    evidence : dict or DataFrame, optional
        Passed to the sampler.
    random_state : int, Generator or None

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> class Coin:
    ...     def sample(self, n, evidence=None, random_state=None):
    ...         rng = np.random.default_rng(random_state)
    ...         return pd.DataFrame({"x": rng.integers(0, 2, n)})
    >>> len(sample_population(Coin(), 5, random_state=0))
    5
    """
    _check_sampler(sampler)
    out = sampler.sample(int(n), evidence=evidence, random_state=as_generator(random_state))
    if not isinstance(out, pd.DataFrame):
        raise DataError(f"{type(sampler).__name__}.sample returned {type(out).__name__}, not a DataFrame")
    if len(out) != int(n):
        raise DataError(f"{type(sampler).__name__}.sample returned {len(out)} rows, expected {n}")
    return out.reset_index(drop=True)


def proportional_sizes(
    population: pd.DataFrame,
    sensitive: Sequence[str],
    n: int,
    *,
    random_state: int | np.random.Generator | None = None,
) -> pd.Series:
    """Per-group sample sizes ``round_rand(n_a^D / |D| * n)`` (proportional allocation).

    Examples
    --------
    >>> import pandas as pd
    >>> pop = pd.DataFrame({"a": [0] * 30 + [1] * 70})
    >>> proportional_sizes(pop, ["a"], 10, random_state=0).tolist()
    [3, 7]
    """
    sensitive = list(sensitive)
    counts = population.groupby(sensitive, observed=True).size()
    rng = as_generator(random_state)
    sizes = round_rand(counts.to_numpy() / len(population) * int(n), rng)
    return pd.Series(np.minimum(sizes, counts.to_numpy()), index=counts.index, name="n")


def _group_keys(sizes: Mapping | pd.Series) -> list[tuple]:
    keys = list(sizes.index) if isinstance(sizes, pd.Series) else list(sizes.keys())
    return [k if isinstance(k, tuple) else (k,) for k in keys]


def stratified_sample(
    source,
    sensitive: Sequence[str],
    sizes: Mapping | pd.Series,
    *,
    random_state: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    """Draw ``sizes[a]`` rows of every group ``a`` from a population or a sampler.

    Parameters
    ----------
    source : pandas.DataFrame or sampler
        A population (rows drawn without replacement) or an object with
        ``sample(n, evidence=None, random_state=None)`` (e.g. a PC); a sampler is called once per
        group with the evidence ``{attribute: value}`` of that group.
    sensitive : sequence of str
    sizes : mapping or pandas.Series
        Rows per group, keyed by the group's tuple of attribute values.
    random_state : int, Generator or None

    Returns
    -------
    pandas.DataFrame

    Raises
    ------
    DataError
        If a population group has fewer rows than requested.

    Examples
    --------
    >>> import pandas as pd
    >>> pop = pd.DataFrame({"a": [0, 0, 0, 1, 1], "v": range(5)})
    >>> len(stratified_sample(pop, ["a"], {0: 2, 1: 1}, random_state=0))
    3
    """
    sensitive = list(sensitive)
    rng = as_generator(random_state)
    keys = _group_keys(sizes)
    counts = [int(v) for v in (sizes.to_numpy() if isinstance(sizes, pd.Series) else sizes.values())]
    parts = []
    if isinstance(source, pd.DataFrame):
        missing = [c for c in sensitive if c not in source.columns]
        if missing:
            raise DataError(f"sensitive columns {missing!r} are not in the population")
        lookup = source.groupby(sensitive, observed=True).indices
        for key, k in zip(keys, counts):
            rows = lookup.get(key if len(key) > 1 else key[0], np.array([], dtype=np.int64))
            if k > rows.size:
                raise DataError(f"group {key!r} has {rows.size} rows in the population, {k} requested")
            if k > 0:
                parts.append(np.sort(rng.choice(rows, size=k, replace=False)))
        if not parts:
            return source.iloc[:0].copy()
        return source.iloc[np.concatenate(parts)].reset_index(drop=True)
    _check_sampler(source)
    for (key, k), child in zip(zip(keys, counts), child_generators(rng, len(keys))):
        if k <= 0:
            continue
        evidence = dict(zip(sensitive, key))
        part = source.sample(k, evidence=evidence, random_state=child)
        if not isinstance(part, pd.DataFrame) or len(part) != k:
            raise DataError(f"{type(source).__name__}.sample did not return {k} rows for group {key!r}")
        for col, value in evidence.items():
            if col not in part.columns or not (part[col] == value).all():
                raise DataError(f"{type(source).__name__}.sample ignored the evidence {col}={value!r}")
        parts.append(part)
    if not parts:
        raise DataError("all requested group sizes are zero")
    return pd.concat(parts).reset_index(drop=True)


def stratified_draw(
    population: pd.DataFrame,
    sensitive: Sequence[str],
    n: int = 5000,
    *,
    random_state: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    """One evaluation set: proportional stratified sample of about ``n`` rows, without replacement.

    Examples
    --------
    >>> pop = make_diabetes_like_population(10_000, random_state=0)
    >>> draw = stratified_draw(pop, ["race", "age", "gender"], 1000, random_state=1)
    >>> abs(len(draw) - 1000) < 20
    True
    """
    rng = as_generator(random_state)
    sizes = proportional_sizes(population, sensitive, n, random_state=rng)
    return stratified_sample(population, sensitive, sizes, random_state=rng)
