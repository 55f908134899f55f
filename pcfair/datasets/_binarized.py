"""Loader for the binarized COMPAS, Adult, German and ACS-Income tables used by the papers.

Names: the columns keep the upstream CSV headers, in CSV order, so a table loaded here, the
upstream file and the circuits shipped in ``circuits/`` (learned from it) name the same
variables (``ScoreText_``, ``Sex_``, ``Age``... for COMPAS). The ``.net.txt`` variable lists have
no trailing underscores; they are matched to the headers after stripping one.

Values: 0/1 codes. What each code means comes from the binarisation recipe
(:mod:`pcfair.datasets.preprocessing`: ``COMPAS_BINARIZED_MEANINGS``... ) and is carried as
``Dataset.value_labels`` (``{"Sex_": ("0 (Male)", "1 (Female)")}``); ``labels=True`` puts
those labels in the frame. The decision column always keeps its 0/1 codes (its favourable
value is 1, pcfair's default ``favorable``); its meaning is in ``value_labels`` too. ACS Income
is anonymised and has no labels.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pcfair.datasets._cache import fetch_file
from pcfair.datasets._dataset import Dataset
from pcfair.datasets._netfile import NetSpec, read_net_file
from pcfair.datasets._registry import REGISTRY
from pcfair.datasets.preprocessing import (
    ADULT_BINARIZED_MEANINGS,
    COMPAS_BINARIZED_MEANINGS,
    GERMAN_BINARIZED_MEANINGS,
    value_labels,
)
from pcfair.errors import DataError


@dataclass(frozen=True)
class _BinarizedSpec:
    csv: str
    net: str | None
    strip_trailing_underscore: bool
    description: str
    # Used only when there is no .net.txt file.
    target: str | None = None
    favorable: int | None = None
    sensitive: tuple[str, ...] = ()
    meanings: dict | None = None


_SPECS: dict[str, _BinarizedSpec] = {
    "compas": _BinarizedSpec(
        csv="compas_binerized.csv",
        net="compas_binary.net.txt",
        strip_trailing_underscore=True,
        description=(
            "LearnFairNB's binarized COMPAS (Choi, Farnadi, Babaki, Van den Broeck, AAAI 2020): "
            "48,834 Broward County COMPAS assessments, 7 binary features and the decision "
            "ScoreText_ (1 = not 'High'). Built upstream from ProPublica's compas-scores-raw "
            "file, not the two-year file; it has no recidivism outcome."
        ),
        meanings=COMPAS_BINARIZED_MEANINGS,
    ),
    "adult": _BinarizedSpec(
        csv="adult_binerized.csv",
        net="adult_binary.net.txt",
        strip_trailing_underscore=False,
        description=(
            "LearnFairNB's binarized UCI Adult training file: 32,561 rows, 13 binary features "
            "(no age column) and the decision target (1 = income >50K). "
            "pcfair.datasets.binarize_adult reproduces it from the raw file."
        ),
        meanings=ADULT_BINARIZED_MEANINGS,
    ),
    "german": _BinarizedSpec(
        csv="german_binerized.csv",
        net="german_binary.net.txt",
        strip_trailing_underscore=False,
        description=(
            "LearnFairNB's binarized UCI German Credit: 1,000 rows, 21 binary features and the "
            "decision loan_status (1 = good credit). pcfair.datasets.binarize_german "
            "reproduces it from the raw file."
        ),
        meanings=GERMAN_BINARIZED_MEANINGS,
    ),
    "acs_income": _BinarizedSpec(
        csv="ACS_Income_binerized.csv",
        net=None,
        strip_trailing_underscore=False,
        description=(
            "Binarized ACS Income of 'Certifying Fairness of Probabilistic Circuits' (Selvam, "
            "Van den Broeck, Choi, AAAI 2023): 195,665 rows, anonymised binary features "
            "F1-F4, F7-F10 and the decision D. No variable list is published; the sensitive "
            "features F9 and F10 are those of the authors' experiment script."
        ),
        target="D",
        favorable=1,
        sensitive=("F9", "F10"),
    ),
}

#: Names accepted by :func:`load_binarized`.
BINARIZED_NAMES: tuple[str, ...] = tuple(_SPECS)


def _net_names(columns: list[str], spec: _BinarizedSpec) -> dict[str, str]:
    """``.net.txt`` name -> CSV column (one trailing underscore stripped for COMPAS)."""
    if not spec.strip_trailing_underscore:
        return {c: c for c in columns}
    stripped = [c[:-1] if c.endswith("_") else c for c in columns]
    if len(set(stripped)) != len(stripped):
        dupes = sorted({r for r in stripped if stripped.count(r) > 1})
        raise DataError(
            f"{spec.csv}: stripping one trailing underscore makes column names collide: {dupes}"
        )
    return dict(zip(stripped, columns))


def _check_binary(frame: pd.DataFrame, csv: str) -> pd.DataFrame:
    out = {}
    for column in frame.columns:
        values = frame[column]
        if values.isna().any():
            raise DataError(
                f"{csv}: column {column!r} has {int(values.isna().sum())} missing values"
            )
        if not pd.api.types.is_integer_dtype(values) or not values.isin([0, 1]).all():
            bad = values[~values.isin([0, 1])].unique()[:5].tolist()
            raise DataError(f"{csv}: column {column!r} is not binary (0/1); found {bad}")
        out[column] = values.to_numpy(dtype=np.int8)
    return pd.DataFrame(out, index=frame.index)


def _match_net(columns: list[str], net: NetSpec, spec: _BinarizedSpec) -> dict[str, str]:
    by_net = _net_names(columns, spec)
    wanted = [net.target, *net.features]
    missing = [name for name in wanted if name not in by_net]
    if missing:
        how = " after stripping one trailing underscore" if spec.strip_trailing_underscore else ""
        raise DataError(
            f"{spec.net} names variable(s) {missing} that have no column in {spec.csv}; "
            f"its columns{how} are {list(by_net)}"
        )
    extra = [c for n, c in by_net.items() if n not in wanted]
    if extra:
        raise DataError(f"column(s) {extra} of {spec.csv} are not listed in {spec.net}")
    return by_net


def _labelled(frame: pd.DataFrame, labels: dict, target: str) -> pd.DataFrame:
    out = frame.copy()
    for column, names in labels.items():
        if column != target and column in out.columns:
            out[column] = pd.Categorical.from_codes(out[column].to_numpy(), categories=list(names),
                                                    ordered=True)
    return out


def load_binarized(
    name: str,
    *,
    data_home: str | os.PathLike[str] | None = None,
    download_if_missing: bool = True,
    return_X_y: bool = False,  # noqa: N803 (scikit-learn convention)
    labels: bool = False,
) -> Dataset | tuple[pd.DataFrame, pd.Series]:
    """Load one of the binarized tables used by the discrimination-pattern papers.

    The CSV is read together with its LearnFairNB ``.net.txt`` variable list, which gives the
    decision, its favourable value and the sensitive flags. Columns keep the CSV headers and
    order (the names of the shipped circuits); they are matched to the ``.net.txt`` names
    **by name**, after stripping exactly one trailing underscore in ``compas_binerized.csv``
    (``ScoreText_`` matches ``ScoreText``). ACS Income has no ``.net.txt``; its decision is
    ``D`` (favourable 1) and its sensitive features are ``F9`` and ``F10``.

    ``Dataset.value_labels`` says what each code means (module docstring); with
    ``labels=True`` the feature columns hold those labels (``"0 (Male)"``, ``"1 (Female)"``) as
    ordered categoricals, code order kept, which is how the shipped ``.json`` circuits were
    learned (``python -m pcfair.datasets``).

    Parameters
    ----------
    name : {"compas", "adult", "german", "acs_income"}
        Which table.
    data_home : str or path-like, optional
        Cache directory; see :func:`get_data_home`.
    download_if_missing : bool, default True
        Download missing files from the authors' repositories.
    return_X_y : bool, default False
        Return ``(X, y)`` instead of a :class:`Dataset`.
    labels : bool, default False
        Put the value labels in the feature columns (the decision keeps 0/1).

    Returns
    -------
    Dataset or (pandas.DataFrame, pandas.Series)
        Columns in CSV order; ``int8`` 0/1, or with ``labels=True`` ordered categoricals of
        the labels (the decision stays ``int8``).

    Raises
    ------
    DataError
        Unknown ``name``; a ``.net.txt`` name with no column (the message lists the columns);
        a column that is not listed; a non-binary value.
    DatasetNotFoundError, ChecksumError
        See :func:`fetch_file`.

    Examples
    --------
    >>> from pcfair.datasets import load_binarized
    >>> ds = load_binarized("compas")
    >>> ds.target, ds.favorable, ds.frame.shape
    ('ScoreText_', 1, (48834, 8))
    >>> ds.sensitive
    ['Ethnic_Code_Text_', 'MaritalStatus_', 'Sex_', 'Age']
    >>> ds.value_labels["Sex_"]
    ('0 (Male)', '1 (Female)')
    >>> load_binarized("compas", labels=True).frame["CustodyStatus_"].iloc[:2].tolist()
    ['0 (Jail Inmate)', '1 (not Jail Inmate)']
    """
    key = name.lower() if isinstance(name, str) else name
    if key not in _SPECS:
        raise DataError(f"unknown binarized table {name!r}; choose one of {list(BINARIZED_NAMES)}")
    spec = _SPECS[key]
    csv_path = fetch_file(spec.csv, data_home=data_home, download_if_missing=download_if_missing)
    if spec.net is not None:
        net_path = fetch_file(
            spec.net, data_home=data_home, download_if_missing=download_if_missing
        )
        net = read_net_file(net_path)
    else:
        net = None

    raw = pd.read_csv(csv_path)
    raw.columns = [str(c) for c in raw.columns]
    frame = _check_binary(raw, spec.csv)
    columns = list(frame.columns)

    if net is not None:
        by_net = _match_net(columns, net, spec)
        target, favorable = by_net[net.target], net.favorable
        sensitive = [by_net[s] for s in net.sensitive]
    else:
        target, favorable, sensitive = str(spec.target), spec.favorable, list(spec.sensitive)
        absent = [c for c in (target, *sensitive) if c not in columns]
        if absent:
            raise DataError(f"{spec.csv} has no column(s) {absent}; its columns are {columns}")

    labels_by_column = value_labels(spec.meanings) if spec.meanings else {}
    unknown = [c for c in columns if labels_by_column and c not in labels_by_column]
    if unknown:
        raise DataError(f"{spec.csv}: no value labels for column(s) {unknown}")
    if labels:
        frame = _labelled(frame, labels_by_column, target)
    sources = [REGISTRY[spec.csv].url] + ([REGISTRY[spec.net].url] if spec.net else [])
    dataset = Dataset(
        frame=frame,
        target=target,
        favorable=favorable,
        sensitive=sensitive,
        name=key,
        description=spec.description,
        source=" ".join(u for u in sources if u),
        value_labels=labels_by_column,
    )
    if return_X_y:
        return dataset.X, dataset.y
    return dataset
