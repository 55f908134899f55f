"""Ground-truth populations and stratified evaluation draws (spec §6, §8).

The paper's ground truth is a fixed population D (75% of the Diabetes 130-US data) from which
evaluation sets of n = 5000 are drawn by stratified sampling on the sensitive tuple A with
proportional allocation, ``round_rand(n_a^D / |D| * n)`` rows per group without replacement.

A population can be

* any DataFrame;
* sampled from a probabilistic circuit (or any object with
  ``sample(n, evidence=None, random_state=None) -> DataFrame``) with :func:`sample_population`;
* the synthetic diabetes-like stand-in of the statistical tests and the benchmark
  (``tests/audits/_case_studies.py``; the diabetes data are not shipped).

:func:`stratified_sample` draws fixed per-group counts either from a DataFrame population or
directly from a sampler, conditioning it on each group's attribute values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from pcfair._random import check_random_state
from pcfair.errors import DataError, SpecError

from .fit import child_generators, round_rand

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
    out = sampler.sample(int(n), evidence=evidence, random_state=check_random_state(random_state))
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
    rng = check_random_state(random_state)
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
    rng = check_random_state(random_state)
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
    >>> rng = np.random.default_rng(0)
    >>> pop = pd.DataFrame({"a": rng.choice(3, 10_000, p=[0.6, 0.3, 0.1]),
    ...                     "b": rng.choice(2, 10_000)})
    >>> draw = stratified_draw(pop, ["a", "b"], 1000, random_state=1)
    >>> abs(len(draw) - 1000) < 10, round(float((draw["a"] == 2).mean()), 1)
    (True, 0.1)
    """
    rng = check_random_state(random_state)
    sizes = proportional_sizes(population, sensitive, n, random_state=rng)
    return stratified_sample(population, sensitive, sizes, random_state=rng)
