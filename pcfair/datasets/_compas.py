"""ProPublica's COMPAS two-year recidivism file, parsed into a tidy DataFrame."""

from __future__ import annotations

import os
import re

import numpy as np
import pandas as pd

from pcfair.datasets._cache import fetch_file
from pcfair.datasets._dataset import Dataset
from pcfair.datasets._registry import REGISTRY
from pcfair.datasets.preprocessing import filter_propublica, prepare_compas_cbs
from pcfair.errors import DataError

_FILE = "raw/compas-scores-two-years.csv"

_DATE_COLUMNS = (
    "compas_screening_date",
    "dob",
    "c_offense_date",
    "c_arrest_date",
    "r_offense_date",
    "vr_offense_date",
    "screening_date",
    "v_screening_date",
    "in_custody",
    "out_custody",
    "r_jail_in",
    "r_jail_out",
)
_TIMESTAMP_COLUMNS = ("c_jail_in", "c_jail_out")

# Categorical columns, with the known categories first in their natural order.
_CATEGORIES: dict[str, list[str]] = {
    "sex": ["Female", "Male"],
    "age_cat": ["Less than 25", "25 - 45", "Greater than 45"],
    "race": ["African-American", "Asian", "Caucasian", "Hispanic", "Native American", "Other"],
    "c_charge_degree": ["F", "M"],
    "r_charge_degree": [],
    "vr_charge_degree": [],
    "type_of_assessment": ["Risk of Recidivism"],
    "score_text": ["Low", "Medium", "High"],
    "v_type_of_assessment": ["Risk of Violence"],
    "v_score_text": ["Low", "Medium", "High"],
    "c_charge_desc": [],
    "r_charge_desc": [],
    "vr_charge_desc": [],
}
_ORDERED = {"age_cat", "score_text", "v_score_text"}
_STRING_COLUMNS = ("name", "first", "last", "c_case_number", "r_case_number", "vr_case_number")

_REQUIRED = (
    "id",
    "sex",
    "age",
    "age_cat",
    "race",
    "decile_score",
    "priors_count",
    "days_b_screening_arrest",
    "c_charge_degree",
    "is_recid",
    "score_text",
    "two_year_recid",
)

_PREPROCESS = (None, "propublica", "cbs")


def _categorical(values: pd.Series, column: str) -> pd.Series:
    known = _CATEGORIES[column]
    seen = sorted(set(values.dropna().astype(str)) - set(known))
    categories = known + seen
    return pd.Series(
        pd.Categorical(values, categories=categories, ordered=column in _ORDERED),
        index=values.index,
        name=column,
    )


def _parse_dates(values: pd.Series, column: str, fmt: str) -> pd.Series:
    try:
        return pd.to_datetime(values, format=fmt)
    except (ValueError, TypeError) as exc:
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(
            f"column {column!r} of the COMPAS file has a value that is not a date: {first_line}"
        ) from exc


def read_compas(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Parse ``compas-scores-two-years.csv`` into a tidy DataFrame.

    The file repeats the headers ``decile_score`` and ``priors_count``; the repeats are checked
    to be identical to the first copies and dropped. Dates become ``datetime64``, coded text
    columns become categoricals, counts stay integers. Empty fields are missing; the literal
    ``"N/A"`` is kept as a value (ProPublica's filter tests for it).

    Parameters
    ----------
    path : str or path-like
        The CSV file.

    Returns
    -------
    pandas.DataFrame
        One row per defendant (7,214 rows for the published file), 51 columns.

    Raises
    ------
    DataError
        A required column is missing, a repeated column disagrees with its first copy, or a
        date does not parse.

    Examples
    --------
    >>> from pcfair.datasets import fetch_file
    >>> from pcfair.datasets._compas import read_compas
    >>> read_compas(fetch_file("compas-scores-two-years.csv")).shape
    (7214, 51)
    """
    frame = pd.read_csv(path, keep_default_na=False, na_values=[""])
    absent = [c for c in _REQUIRED if c not in frame.columns]
    if absent:
        raise DataError(f"{path} lacks the column(s) {absent} of the COMPAS two-year file")
    for column in list(frame.columns):
        repeat = re.fullmatch(r"(.+)\.(\d+)", column)
        if repeat is not None and repeat.group(1) in frame.columns:
            first = repeat.group(1)
            if not frame[column].equals(frame[first]):
                raise DataError(
                    f"{path}: the repeated column {first!r} differs from its first copy"
                )
            frame = frame.drop(columns=[column])
    for column in _DATE_COLUMNS:
        if column in frame.columns:
            frame[column] = _parse_dates(frame[column], column, "%Y-%m-%d")
    for column in _TIMESTAMP_COLUMNS:
        if column in frame.columns:
            frame[column] = _parse_dates(frame[column], column, "%Y-%m-%d %H:%M:%S")
    for column in _CATEGORIES:
        if column in frame.columns:
            frame[column] = _categorical(frame[column], column)
    for column in _STRING_COLUMNS:
        if column in frame.columns:
            frame[column] = frame[column].astype("string")
    return frame


def fetch_compas(
    *,
    preprocess: str | None = None,
    data_home: str | os.PathLike[str] | None = None,
    download_if_missing: bool = True,
    return_X_y: bool = False,  # noqa: N803 (scikit-learn convention)
) -> Dataset | tuple[pd.DataFrame, pd.Series]:
    """Load ProPublica's COMPAS two-year recidivism data.

    Downloads ``compas-scores-two-years.csv`` from ProPublica's ``compas-analysis`` GitHub
    repository into the cache (``raw/``), verifies its sha256, and parses it.

    Parameters
    ----------
    preprocess : {None, "propublica", "cbs"}, default None
        ``None``: all 7,214 rows and 51 tidy columns. ``"propublica"``: ProPublica's standard
        sample (:func:`filter_propublica`, 6,172 rows). ``"cbs"``: the Conditional Bias Scan
        case-study table (:func:`prepare_compas_cbs`).
    data_home : str or path-like, optional
        Cache directory; see :func:`get_data_home`.
    download_if_missing : bool, default True
        Download the file when it is not cached.
    return_X_y : bool, default False
        Return ``(X, y)`` instead of a :class:`Dataset`.

    Returns
    -------
    Dataset or (pandas.DataFrame, pandas.Series)
        Target ``two_year_recid`` with favourable value 0 (no new arrest within two years).
        Sensitive: ``race``, ``sex``, ``age_cat`` (``age`` for ``"cbs"``).

    Raises
    ------
    DataError
        Unknown ``preprocess`` value or a malformed file.
    DatasetNotFoundError, ChecksumError
        See :func:`fetch_file`.

    Examples
    --------
    >>> from pcfair.datasets import fetch_compas
    >>> fetch_compas().frame.shape
    (7214, 51)
    >>> fetch_compas(preprocess="propublica").n_samples
    6172
    """
    if preprocess not in _PREPROCESS:
        raise DataError(f"preprocess must be one of {list(_PREPROCESS)}, got {preprocess!r}")
    path = fetch_file(_FILE, data_home=data_home, download_if_missing=download_if_missing)
    frame = read_compas(path)
    sensitive = ["race", "sex", "age_cat"]
    description = (
        "ProPublica COMPAS two-year recidivism data (Broward County, FL, 2013-2014): one row "
        "per defendant with the COMPAS scores and whether they were arrested again within "
        "two years."
    )
    if preprocess == "propublica":
        frame = filter_propublica(frame)
        description += " ProPublica's standard filters applied (6,172 rows)."
    elif preprocess == "cbs":
        frame = prepare_compas_cbs(frame)
        sensitive = ["race", "sex", "age"]
        description += (
            " Conditional Bias Scan case-study table: ProPublica filters, binned covariates, "
            "predicted_prob (P) and high_risk (Pbin)."
        )
    frame["two_year_recid"] = frame["two_year_recid"].astype(np.int8)
    dataset = Dataset(
        frame=frame,
        target="two_year_recid",
        favorable=0,
        sensitive=sensitive,
        name="compas",
        description=description,
        source=str(REGISTRY[_FILE].url),
    )
    if return_X_y:
        return dataset.X, dataset.y
    return dataset
