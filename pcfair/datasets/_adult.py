"""The UCI Adult (Census Income) files, parsed into a tidy DataFrame."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from pcfair.datasets._cache import fetch_file
from pcfair.datasets._dataset import Dataset
from pcfair.datasets._registry import REGISTRY
from pcfair.datasets.preprocessing import (
    ADULT_BINARIZED_MEANINGS,
    ADULT_BINARIZED_SENSITIVE,
    binarize_adult,
    value_labels,
)
from pcfair.errors import DataError

#: Column names, as spelled in ``adult.names``; the last one is the decision.
ADULT_COLUMNS: tuple[str, ...] = (
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
)

#: Categories of the nominal columns, in the order ``adult.names`` lists them. Fixed lists
#: keep codes identical across the train and test files.
ADULT_CATEGORIES: dict[str, list[str]] = {
    "workclass": [
        "Private",
        "Self-emp-not-inc",
        "Self-emp-inc",
        "Federal-gov",
        "Local-gov",
        "State-gov",
        "Without-pay",
        "Never-worked",
    ],
    "education": [
        "Bachelors",
        "Some-college",
        "11th",
        "HS-grad",
        "Prof-school",
        "Assoc-acdm",
        "Assoc-voc",
        "9th",
        "7th-8th",
        "12th",
        "Masters",
        "1st-4th",
        "10th",
        "Doctorate",
        "5th-6th",
        "Preschool",
    ],
    "marital-status": [
        "Married-civ-spouse",
        "Divorced",
        "Never-married",
        "Separated",
        "Widowed",
        "Married-spouse-absent",
        "Married-AF-spouse",
    ],
    "occupation": [
        "Tech-support",
        "Craft-repair",
        "Other-service",
        "Sales",
        "Exec-managerial",
        "Prof-specialty",
        "Handlers-cleaners",
        "Machine-op-inspct",
        "Adm-clerical",
        "Farming-fishing",
        "Transport-moving",
        "Priv-house-serv",
        "Protective-serv",
        "Armed-Forces",
    ],
    "relationship": [
        "Wife",
        "Own-child",
        "Husband",
        "Not-in-family",
        "Other-relative",
        "Unmarried",
    ],
    "race": ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"],
    "sex": ["Female", "Male"],
    "native-country": [
        "United-States",
        "Cambodia",
        "England",
        "Puerto-Rico",
        "Canada",
        "Germany",
        "Outlying-US(Guam-USVI-etc)",
        "India",
        "Japan",
        "Greece",
        "South",
        "China",
        "Cuba",
        "Iran",
        "Honduras",
        "Philippines",
        "Italy",
        "Poland",
        "Jamaica",
        "Vietnam",
        "Mexico",
        "Portugal",
        "Ireland",
        "France",
        "Dominican-Republic",
        "Laos",
        "Ecuador",
        "Taiwan",
        "Haiti",
        "Columbia",
        "Hungary",
        "Guatemala",
        "Nicaragua",
        "Scotland",
        "Thailand",
        "Yugoslavia",
        "El-Salvador",
        "Trinadad&Tobago",
        "Peru",
        "Hong",
        "Holand-Netherlands",
    ],
    "income": ["<=50K", ">50K"],
}

_FILES = {"train": "raw/adult.data", "test": "raw/adult.test"}
_SUBSETS = ("train", "test", "all")
_PREPROCESS = (None, "binarize")
_NUMERIC = ("age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week")


def read_adult(path: str | os.PathLike[str], *, test_file: bool = False) -> pd.DataFrame:
    """Parse ``adult.data`` or ``adult.test`` into a tidy DataFrame.

    Fields are comma-separated with a leading space; ``?`` is a missing value. ``adult.test``
    starts with a ``|1x3 Cross validator`` line and ends its labels with a period; both are
    handled so that the two files parse to the same columns and categories.

    Parameters
    ----------
    path : str or path-like
        The file.
    test_file : bool, default False
        True for ``adult.test``.

    Returns
    -------
    pandas.DataFrame
        The columns of :data:`ADULT_COLUMNS`: integers for the numeric ones, categoricals
        (with the categories of :data:`ADULT_CATEGORIES`) for the nominal ones.

    Raises
    ------
    DataError
        A row with the wrong number of fields, a non-integer numeric field, or a value that is
        not a category listed in ``adult.names``.

    Examples
    --------
    >>> from pcfair.datasets import fetch_file
    >>> from pcfair.datasets._adult import read_adult
    >>> read_adult(fetch_file("adult.test"), test_file=True).shape
    (16281, 15)
    """
    try:
        frame = pd.read_csv(
            path,
            header=None,
            names=list(ADULT_COLUMNS),
            skipinitialspace=True,
            keep_default_na=False,
            na_values=["?"],
            skiprows=1 if test_file else 0,
            dtype=str,
            skip_blank_lines=True,
            on_bad_lines="error",
        )
    except pd.errors.ParserError as exc:
        raise DataError(f"{path} is not a valid Adult file: {exc}") from exc
    empty = (frame.fillna("?") == "").any(axis=1).to_numpy()
    if empty.any():
        rows = (np.flatnonzero(empty)[:3] + 1).tolist()
        raise DataError(
            f"{path}: data row(s) {rows} have fewer than {len(ADULT_COLUMNS)} fields "
            "or an empty field"
        )
    if test_file:
        frame["income"] = frame["income"].str.rstrip(".")
    for column in _NUMERIC:
        numbers = pd.to_numeric(frame[column], errors="coerce")
        if numbers.isna().any():
            bad = frame.loc[numbers.isna(), column].head(3).tolist()
            raise DataError(f"{path}: column {column!r} has non-integer value(s) {bad}")
        frame[column] = numbers.astype("int64")
    for column, categories in ADULT_CATEGORIES.items():
        values = frame[column]
        unknown = sorted(set(values.dropna()) - set(categories))
        if unknown:
            raise DataError(
                f"{path}: column {column!r} has value(s) {unknown[:5]} not listed in adult.names"
            )
        frame[column] = pd.Categorical(values, categories=categories, ordered=column == "income")
    return frame


def fetch_adult(
    *,
    subset: str = "train",
    preprocess: str | None = None,
    dropna: bool = False,
    data_home: str | os.PathLike[str] | None = None,
    download_if_missing: bool = True,
    return_X_y: bool = False,  # noqa: N803 (scikit-learn convention)
) -> Dataset | tuple[pd.DataFrame, pd.Series]:
    """Load the UCI Adult (Census Income, 1994) data.

    Downloads ``adult.data`` / ``adult.test`` from the UCI Machine Learning Repository into
    the cache (``raw/``), verifies their sha256, and parses them.

    Parameters
    ----------
    subset : {"train", "test", "all"}, default "train"
        ``adult.data`` (32,561 rows), ``adult.test`` (16,281 rows) or both, train first.
    preprocess : {None, "binarize"}, default None
        ``"binarize"`` applies LearnFairNB's rules (:func:`binarize_adult`); on the training
        file this equals ``load_binarized("adult")``.
    dropna : bool, default False
        Drop rows with a missing (``?``) value: 2,399 of the training rows, 1,221 of the test
        rows. Applied before binarization.
    data_home : str or path-like, optional
        Cache directory; see :func:`get_data_home`.
    download_if_missing : bool, default True
        Download missing files.
    return_X_y : bool, default False
        Return ``(X, y)`` instead of a :class:`Dataset`.

    Returns
    -------
    Dataset or (pandas.DataFrame, pandas.Series)
        Target ``income`` (favourable ``">50K"``); sensitive ``age``, ``marital-status``,
        ``race``, ``sex``, ``native-country``. With ``preprocess="binarize"``: target
        ``target`` (favourable 1) and the sensitive columns of ``adult_binary.net.txt``.

    Raises
    ------
    DataError
        Unknown ``subset`` or ``preprocess``, or a malformed file.
    DatasetNotFoundError, ChecksumError
        See :func:`fetch_file`.

    Examples
    --------
    >>> from pcfair.datasets import fetch_adult
    >>> fetch_adult().frame.shape
    (32561, 15)
    >>> fetch_adult(subset="all").n_samples
    48842
    """
    if subset not in _SUBSETS:
        raise DataError(f"subset must be one of {list(_SUBSETS)}, got {subset!r}")
    if preprocess not in _PREPROCESS:
        raise DataError(f"preprocess must be one of {list(_PREPROCESS)}, got {preprocess!r}")
    parts = ["train", "test"] if subset == "all" else [subset]
    frames = []
    for part in parts:
        path = fetch_file(
            _FILES[part], data_home=data_home, download_if_missing=download_if_missing
        )
        frames.append(read_adult(path, test_file=part == "test"))
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    if dropna:
        frame = frame.dropna().reset_index(drop=True)
    description = (
        f"UCI Adult / Census Income ({subset} subset): 1994 US census records; the decision "
        "is whether income exceeds $50K a year."
    )
    if preprocess == "binarize":
        frame = binarize_adult(frame)
        labels = value_labels(ADULT_BINARIZED_MEANINGS)
        target, favorable = "target", 1
        sensitive = list(ADULT_BINARIZED_SENSITIVE)
        description += " Binarized with LearnFairNB's rules (age dropped, as upstream)."
    else:
        target, favorable = "income", ">50K"
        sensitive = ["age", "marital-status", "race", "sex", "native-country"]
        labels = {}
    dataset = Dataset(
        frame=frame,
        target=target,
        favorable=favorable,
        sensitive=sensitive,
        name="adult",
        description=description,
        value_labels=labels,
        source=" ".join(str(REGISTRY[_FILES[p]].url) for p in parts),
    )
    if return_X_y:
        return dataset.X, dataset.y
    return dataset
