"""The UCI Statlog German Credit file, parsed into a tidy DataFrame with readable labels."""

from __future__ import annotations

import os

import pandas as pd

from pcfair.datasets._cache import fetch_file
from pcfair.datasets._dataset import Dataset
from pcfair.datasets._registry import REGISTRY
from pcfair.datasets.preprocessing import (
    GERMAN_BINARIZED_MEANINGS,
    GERMAN_BINARIZED_SENSITIVE,
    binarize_german,
    value_labels,
)
from pcfair.errors import DataError

_FILE = "raw/german.data"
_PREPROCESS = (None, "binarize")

#: Column names of ``german.data`` (the 20 attributes of the UCI documentation, then the class).
GERMAN_COLUMNS: tuple[str, ...] = (
    "checking_status",
    "duration",
    "credit_history",
    "purpose",
    "credit_amount",
    "savings",
    "employment",
    "installment_rate",
    "personal_status",
    "other_debtors",
    "residence_since",
    "property",
    "age",
    "other_installment_plans",
    "housing",
    "existing_credits",
    "job",
    "num_dependents",
    "telephone",
    "foreign_worker",
    "credit",
)

#: The UCI codes of each symbolic attribute and the label pcfair gives them (from the UCI
#: documentation ``german.doc``). Category order follows the codes.
GERMAN_CODES: dict[str, dict[str, str]] = {
    "checking_status": {
        "A11": "< 0 DM",
        "A12": "0 <= ... < 200 DM",
        "A13": ">= 200 DM",
        "A14": "no checking account",
    },
    "credit_history": {
        "A30": "no credits taken / all paid back duly",
        "A31": "all credits at this bank paid back duly",
        "A32": "existing credits paid back duly till now",
        "A33": "delay in paying off in the past",
        "A34": "critical account / other credits existing",
    },
    "purpose": {
        "A40": "car (new)",
        "A41": "car (used)",
        "A42": "furniture/equipment",
        "A43": "radio/television",
        "A44": "domestic appliances",
        "A45": "repairs",
        "A46": "education",
        "A47": "vacation",
        "A48": "retraining",
        "A49": "business",
        "A410": "others",
    },
    "savings": {
        "A61": "< 100 DM",
        "A62": "100 <= ... < 500 DM",
        "A63": "500 <= ... < 1000 DM",
        "A64": ">= 1000 DM",
        "A65": "unknown / no savings account",
    },
    "employment": {
        "A71": "unemployed",
        "A72": "< 1 year",
        "A73": "1 <= ... < 4 years",
        "A74": "4 <= ... < 7 years",
        "A75": ">= 7 years",
    },
    "personal_status": {
        "A91": "male: divorced/separated",
        "A92": "female: divorced/separated/married",
        "A93": "male: single",
        "A94": "male: married/widowed",
        "A95": "female: single",
    },
    "other_debtors": {"A101": "none", "A102": "co-applicant", "A103": "guarantor"},
    "property": {
        "A121": "real estate",
        "A122": "building society savings / life insurance",
        "A123": "car or other",
        "A124": "unknown / no property",
    },
    "other_installment_plans": {"A141": "bank", "A142": "stores", "A143": "none"},
    "housing": {"A151": "rent", "A152": "own", "A153": "for free"},
    "job": {
        "A171": "unemployed / unskilled non-resident",
        "A172": "unskilled resident",
        "A173": "skilled employee / official",
        "A174": "management / self-employed / highly qualified",
    },
    "telephone": {"A191": "none", "A192": "yes"},
    "foreign_worker": {"A201": "yes", "A202": "no"},
    "credit": {"1": "good", "2": "bad"},
}

_NUMERIC = (
    "duration",
    "credit_amount",
    "installment_rate",
    "residence_since",
    "age",
    "existing_credits",
    "num_dependents",
)
_FEMALE = ("A92", "A95")


def read_german(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Parse ``german.data`` (space-separated UCI codes) into a tidy DataFrame.

    Symbolic attributes are decoded to the labels of :data:`GERMAN_CODES` and stored as
    categoricals; numeric attributes are integers. A derived column ``sex`` ("male" /
    "female", from ``personal_status``) is inserted after ``personal_status``.

    Parameters
    ----------
    path : str or path-like
        The file.

    Returns
    -------
    pandas.DataFrame
        1,000 rows for the published file; the columns of :data:`GERMAN_COLUMNS` plus ``sex``.

    Raises
    ------
    DataError
        A row without 21 fields, a non-integer numeric field, or an unknown code.

    Examples
    --------
    >>> from pcfair.datasets import fetch_file
    >>> from pcfair.datasets._german import read_german
    >>> read_german(fetch_file("german.data")).loc[0, "purpose"]
    'radio/television'
    """
    try:
        raw = pd.read_csv(path, sep=r"\s+", header=None, dtype=str, engine="python")
    except pd.errors.ParserError as exc:
        raise DataError(f"{path} is not a valid german.data file: {exc}") from exc
    if raw.shape[1] != len(GERMAN_COLUMNS) or raw.isna().any().any():
        raise DataError(
            f"{path}: every row must have {len(GERMAN_COLUMNS)} space-separated fields "
            f"(found {raw.shape[1]} columns)"
        )
    raw.columns = list(GERMAN_COLUMNS)
    frame = pd.DataFrame(index=raw.index)
    for column in GERMAN_COLUMNS:
        values = raw[column]
        if column in GERMAN_CODES:
            codes = GERMAN_CODES[column]
            unknown = sorted(set(values) - set(codes))
            if unknown:
                raise DataError(f"{path}: column {column!r} has unknown code(s) {unknown[:5]}")
            frame[column] = pd.Categorical(values.map(codes), categories=list(codes.values()))
        else:
            numbers = pd.to_numeric(values, errors="coerce")
            if numbers.isna().any():
                bad = values[numbers.isna()].head(3).tolist()
                raise DataError(f"{path}: column {column!r} has non-integer value(s) {bad}")
            frame[column] = numbers.astype("int64")
        if column == "personal_status":
            frame["sex"] = pd.Categorical(
                values.isin(_FEMALE).map({True: "female", False: "male"}),
                categories=["male", "female"],
            )
    return frame


def fetch_german(
    *,
    preprocess: str | None = None,
    data_home: str | os.PathLike[str] | None = None,
    download_if_missing: bool = True,
    return_X_y: bool = False,  # noqa: N803 (scikit-learn convention)
) -> Dataset | tuple[pd.DataFrame, pd.Series]:
    """Load the UCI Statlog German Credit data.

    Downloads ``german.data`` from the UCI Machine Learning Repository into the cache
    (``raw/``), verifies its sha256, and parses it with readable labels.

    Parameters
    ----------
    preprocess : {None, "binarize"}, default None
        ``"binarize"`` applies LearnFairNB's rules (:func:`binarize_german`), which equals
        ``load_binarized("german")``.
    data_home : str or path-like, optional
        Cache directory; see :func:`get_data_home`.
    download_if_missing : bool, default True
        Download the file when it is not cached.
    return_X_y : bool, default False
        Return ``(X, y)`` instead of a :class:`Dataset`.

    Returns
    -------
    Dataset or (pandas.DataFrame, pandas.Series)
        Target ``credit`` (favourable ``"good"``); sensitive ``age``, ``sex``,
        ``foreign_worker``. With ``preprocess="binarize"``: target ``loan_status``
        (favourable 1) and the sensitive columns of ``german_binary.net.txt``.

    Raises
    ------
    DataError
        Unknown ``preprocess`` value or a malformed file.
    DatasetNotFoundError, ChecksumError
        See :func:`fetch_file`.

    Examples
    --------
    >>> from pcfair.datasets import fetch_german
    >>> ds = fetch_german()
    >>> ds.frame.shape, ds.favorable
    ((1000, 22), 'good')
    """
    if preprocess not in _PREPROCESS:
        raise DataError(f"preprocess must be one of {list(_PREPROCESS)}, got {preprocess!r}")
    path = fetch_file(_FILE, data_home=data_home, download_if_missing=download_if_missing)
    frame = read_german(path)
    description = (
        "UCI Statlog German Credit (Hofmann, 1994): 1,000 loan applicants with 20 attributes; "
        "the decision is whether the applicant is a good credit risk."
    )
    if preprocess == "binarize":
        frame = binarize_german(frame)
        labels = value_labels(GERMAN_BINARIZED_MEANINGS)
        target, favorable = "loan_status", 1
        sensitive = list(GERMAN_BINARIZED_SENSITIVE)
        description += " Binarized with LearnFairNB's rules."
    else:
        target, favorable = "credit", "good"
        sensitive = ["age", "sex", "foreign_worker"]
        labels = {}
    dataset = Dataset(
        frame=frame,
        target=target,
        favorable=favorable,
        sensitive=sensitive,
        name="german",
        description=description,
        value_labels=labels,
        source=str(REGISTRY[_FILE].url),
    )
    if return_X_y:
        return dataset.X, dataset.y
    return dataset
