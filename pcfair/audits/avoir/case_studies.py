"""The paper's case-study data views and specifications (Adult federal employees, COMPAS).

Both views are built from the public raw files in file order, as the authors' materialised views
are (a single pass, no shuffling):

* :func:`adult_federal_view`: the UCI Adult training file ``adult.data`` restricted to
  ``workclass == "Federal-gov"`` (960 rows). ``h`` is the high-income label (``>50K``), treated
  as the black-box decision; ``sex`` is recoded ``M``/``F`` and ``race`` ``W`` for White, as the
  paper's specifications write them.
* :func:`compas_view`: ProPublica's ``compas-scores-two-years.csv`` with the ProPublica filters
  (``|days_b_screening_arrest| ≤ 30``, ``is_recid != -1``, ``c_charge_degree != "O"``,
  ``score_text != "N/A"``), 6172 rows. ``hrisk = decile_score > 3`` as in the authors' code
  (ProPublica's "not Low" is ``decile_score >= 5``), ``recid = two_year_recid``.

The raw files are read from ``$PCFAIR_DATA/raw`` (or a directory passed in), the layout of
:mod:`pcfair.datasets`' cache; nothing is downloaded. A table already loaded (for example with
``pcfair.datasets.fetch_adult``) can be passed instead. The specification texts of the paper are
module constants.

Notes
-----
Recorded discrepancies between the paper and its released code (spec §6 H): the COMPAS
reciprocal specification is decided at record 4590 by the code (the paper's text says 3350); the
Northpointe threshold is 0.9 in the paper and 1.1 in the authors' notebook; the paper's Adult
split "0.36·10^4" means 3.6e-4.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pandas as pd

from pcfair.errors import DataError

__all__ = [
    "ADULT_SPEC",
    "ADULT_SPEC_REFINED",
    "COMPAS_FDR_AA_C",
    "COMPAS_FDR_C_AA",
    "COMPAS_FPR",
    "COMPAS_FPR_RECIPROCAL",
    "adult_federal_view",
    "compas_view",
]

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
    >>> from pcfair.audits.avoir.case_studies import adult_federal_view
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
    >>> from pcfair.audits.avoir.case_studies import compas_view
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
