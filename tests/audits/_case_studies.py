"""The papers' case studies and data generators, used by the reproduction tests and benchmarks.

Moved out of the package (issue #17, lean ports): they reproduce the papers, they are not
features of the ports.

* AVOIR (Maneriker et al. 2023): the Adult federal-employee and COMPAS views of the raw files,
  in file order (a single pass, as the authors' materialised views), and the paper's
  specifications. ``adult_federal_view``: ``adult.data`` with ``workclass == "Federal-gov"``
  (960 rows; ``h`` = ``>50K``; ``sex`` ``M``/``F``, ``race`` ``W`` for White). ``compas_view``:
  ProPublica's two-year file with the ProPublica filters (6172 rows; ``hrisk = decile_score >
  3`` as in the authors' code, ``recid = two_year_recid``). Raw files are read from
  ``$PCFAIR_DATA/raw`` (or a directory passed in); a loaded table can be passed instead.
* Structured regression (Herlihy et al. 2024): ``make_diabetes_like_population``, a synthetic
  stand-in for the diabetes ground truth (race x age x gender with skewed shares and seven
  explanatory features; the data are not shipped), and the semi-synthetic generating models of
  Sec. 5.2 / App. D (``add_semi_synthetic_output``): the system output Yhat is replaced by
  values whose group mean ``mu_a`` has a known structure:

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

  ``N(mu_A, 0.1)`` is read with 0.1 as the SD (``noise_sd``); the paper's 40-60 bin is 40-59.

Recorded discrepancies (AVOIR, spec §6 H): the COMPAS reciprocal specification is decided at
record 4590 by the authors' code (the paper's text says 3350); the Northpointe threshold is 0.9
in the paper and 1.1 in the authors' notebook; the paper's Adult split "0.36·10^4" is 3.6e-4.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from pcfair._random import check_random_state
from pcfair.errors import DataError, SpecError


# --- AVOIR ---------------------------------------------------------------------------------

#: Adult, paper §3.2: no verdict at Δ = 0.15.
ADULT_SPEC = "(E[h | sex=M] - E[h | sex=F] < 0.5) & (E[h | race=W] - E[h | race!=W] < 0.5)"

#: Adult after refinement of the sex threshold to 0.55: OB at 870, VF at 960 (Δ = 0.15).
ADULT_SPEC_REFINED = (
    "(E[h | sex=M] - E[h | sex=F] < 0.55) & (E[h | race=W] - E[h | race!=W] < 0.5)"
)


#: COMPAS FPR ratio (ProPublica "Sample A"): never decided at Δ = 0.1.
COMPAS_FPR = (
    "E[hrisk | race=African-American & recid=0] / E[hrisk | race=Caucasian & recid=0] < 1.1"
)


#: Its reciprocal: verdict False at 4590 for OB and VF (Δ = 0.1).
COMPAS_FPR_RECIPROCAL = (
    "E[hrisk | race=Caucasian & recid=0] / E[hrisk | race=African-American & recid=0] > 0.9"
)


#: FDR balance (Northpointe "Sample B"), C/AA: never decided at Δ = 0.1.
COMPAS_FDR_C_AA = (
    "E[recid=0 | race=Caucasian & hrisk] / E[recid=0 | race=African-American & hrisk] > 0.9"
)


#: FDR balance, AA/C: never decided at Δ = 0.1.
COMPAS_FDR_AA_C = (
    "E[recid=0 | race=African-American & hrisk] / E[recid=0 | race=Caucasian & hrisk] > 0.9"
)


_ADULT_COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week",
    "native-country", "income",
]


def _raw_file(name: str, data_dir: str | os.PathLike | None) -> Path:
    if data_dir is None:
        env = os.environ.get("PCFAIR_DATA")
        if not env:
            raise DataError(
                f"cannot find {name}: pass data_dir= or set PCFAIR_DATA to the directory "
                "holding raw/" + name)
        data_dir = env
    base = Path(data_dir)
    for path in (base / "raw" / name, base / name):
        if path.is_file():
            return path
    raise DataError(f"{name} is not in {base / 'raw'} (nor in {base})")


def _read_adult(data) -> pd.DataFrame:
    if isinstance(data, pd.DataFrame):
        missing = {"workclass", "race", "sex", "income"} - set(data.columns)
        if missing:
            raise DataError(f"the Adult table lacks the columns {sorted(missing)}")
        return data
    path = _raw_file("adult.data", data)
    return pd.read_csv(path, header=None, names=_ADULT_COLUMNS, skipinitialspace=True,
                       na_values="?", dtype=str)


def adult_federal_view(data: pd.DataFrame | str | os.PathLike | None = None) -> pd.DataFrame:
    """The Adult federal-employee view of the paper's §3.2 (960 rows, file order).

    Parameters
    ----------
    data : DataFrame or path, optional
        The Adult training table with its raw columns (e.g. ``pcfair.datasets.fetch_adult()
        .frame``), or a directory holding ``raw/adult.data``; default ``$PCFAIR_DATA``.

    Returns
    -------
    pandas.DataFrame
        Columns ``age``, ``education``, ``race`` (``W`` for White, else the raw value), ``sex``
        (``M``/``F``), ``income`` and ``h`` (1 if income is ``>50K``).

    Raises
    ------
    DataError
        If the raw file cannot be found or the table lacks a column.

    Examples
    --------
    >>> from _case_studies import adult_federal_view
    >>> view = adult_federal_view()  # doctest: +SKIP
    >>> len(view)  # doctest: +SKIP
    960
    """
    raw = _read_adult(data)
    raw = raw[raw["workclass"].notna() & raw["income"].notna()]
    view = raw[raw["workclass"].astype(str).str.strip() == "Federal-gov"].reset_index(drop=True)
    race = view["race"].astype(str).str.strip()
    income = view["income"].astype(str).str.strip().str.rstrip(".")
    out = pd.DataFrame({
        "age": view["age"].astype(int),
        "education": view["education"].astype(str).str.strip(),
        "race": np.where(race == "White", "W", race),
        "sex": view["sex"].astype(str).str.strip().map({"Male": "M", "Female": "F"}),
        "income": income,
    })
    if out["sex"].isna().any():
        raise DataError("unexpected values in the Adult sex column (expected Male/Female)")
    out["h"] = (income == ">50K").astype(int)
    return out


def compas_view(data: pd.DataFrame | str | os.PathLike | None = None) -> pd.DataFrame:
    """ProPublica's filtered COMPAS view (6172 rows, file order) with ``hrisk`` and ``recid``.

    Parameters
    ----------
    data : DataFrame or path, optional
        The ``compas-scores-two-years`` table (raw, or already ProPublica-filtered as by
        ``pcfair.datasets.fetch_compas(preprocess="propublica")``), or a directory holding
        ``raw/compas-scores-two-years.csv``; default ``$PCFAIR_DATA``.

    Returns
    -------
    pandas.DataFrame
        Columns ``race``, ``sex``, ``age``, ``decile_score``, ``score_text``, ``two_year_recid``,
        ``hrisk`` (``decile_score > 3``) and ``recid`` (``two_year_recid``).

    Examples
    --------
    >>> from _case_studies import compas_view
    >>> len(compas_view())  # doctest: +SKIP
    6172
    """
    if isinstance(data, pd.DataFrame):
        raw = data
    else:
        raw = pd.read_csv(_raw_file("compas-scores-two-years.csv", data))
    needed = {"days_b_screening_arrest", "is_recid", "c_charge_degree", "score_text",
              "decile_score", "two_year_recid", "race", "sex", "age"}
    missing = needed - set(raw.columns)
    if missing:
        raise DataError(f"the COMPAS table lacks the columns {sorted(missing)}")
    keep = (
        (raw["days_b_screening_arrest"] <= 30)
        & (raw["days_b_screening_arrest"] >= -30)
        & (raw["is_recid"] != -1)
        & (raw["c_charge_degree"] != "O")
        & (raw["score_text"] != "N/A")
        & raw["score_text"].notna()
    )
    view = raw[keep].reset_index(drop=True)
    return pd.DataFrame({
        "race": view["race"].astype(str),
        "sex": view["sex"].astype(str),
        "age": view["age"].astype(int),
        "decile_score": view["decile_score"].astype(int),
        "score_text": view["score_text"].astype(str),
        "two_year_recid": view["two_year_recid"].astype(int),
        "hrisk": (view["decile_score"] > 3).astype(int),
        "recid": view["two_year_recid"].astype(int),
    })


# --- Structured regression -----------------------------------------------------------------

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
    rng = check_random_state(random_state)
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
        rng = check_random_state(random_state)
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
    >>> from _case_studies import make_diabetes_like_population
    >>> pop = make_diabetes_like_population(5000, random_state=0)
    >>> out = add_semi_synthetic_output(pop, "age*rc", random_state=0)
    >>> round(float(out["y_hat"].mean()), 1)
    0.3
    """
    rng = check_random_state(random_state)
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

