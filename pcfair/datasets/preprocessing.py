"""Preprocessing: generic binarize/discretize helpers and the recipes the papers use.

Generic helpers
---------------
:func:`binarize` turns columns into 0/1 with declarative rules; :func:`discretize` bins a
numeric column by explicit edges, equal widths or quantiles.

Recipes (documented choices)
----------------------------
:func:`filter_propublica`
    ProPublica's standard filtering of the COMPAS two-year file ("Compas Analysis.ipynb"):
    ``-30 <= days_b_screening_arrest <= 30`` (rows with no value are dropped, as R's
    ``filter`` drops NA), ``is_recid != -1``, ``c_charge_degree != "O"`` and
    ``score_text != "N/A"``. It keeps 6,172 of the 7,214 rows.
:func:`prepare_compas_cbs`
    The COMPAS case study of Conditional Bias Scan (Sec. 5 / App. C of the CBS paper): the
    ProPublica sample with sex, race, age (under 25 / 25 and over), charge degree
    (felony / misdemeanour), priors (none / 1 to 5 / over 5), the decile score, the outcome
    ``two_year_recid``, the probabilistic prediction ``predicted_prob`` (CBS's *P*: the
    share of defendants with the same decile score who reoffended) and the recommendation
    ``high_risk`` (CBS's *Pbin*: decile score >= 5).
:func:`binarize_adult`, :func:`binarize_german`
    The rules of LearnFairNB's preprocessing scripts (Choi et al., AAAI 2020), written
    down from those scripts: right-closed bins of ``pandas.cut`` become strict ``>``
    thresholds, value groups become ``in`` / ``not in`` rules, and a missing Adult value
    (``?``) falls on the side the upstream rule put it. Applied to the raw UCI files they
    reproduce ``adult_binerized.csv`` and ``german_binerized.csv`` exactly (the tests check
    every cell). Upstream drops Adult's ``age`` (it is binned and then removed), so the
    binarized Adult has no age column.

The binarized COMPAS table is **not** reproducible: upstream built it from ProPublica's
``compas-scores-raw.csv`` (all Broward assessments, not the two-year file) and computed age
from the date the script was run.
"""

from __future__ import annotations

import numbers
import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from pcfair.errors import DataError

#: A binarization rule: a collection of values (1 where the value is in it), a mapping with
#: one operator key (``"in"``, ``"not in"``, ``">"``, ``">="``, ``"<"``, ``"<="``, ``"=="``,
#: ``"!="``) and optional ``"column"`` and ``"missing"`` keys, or a callable taking the whole
#: DataFrame and returning a boolean array.
Rule = Sequence[Any] | set | frozenset | Mapping[str, Any] | Callable[[pd.DataFrame], Any]

_COMPARISONS = {
    ">": operator.gt,
    ">=": operator.ge,
    "<": operator.lt,
    "<=": operator.le,
    "==": operator.eq,
    "!=": operator.ne,
}
_OPERATORS = {"in", "not in", *_COMPARISONS}


def _rule_parts(out_name: str, rule: Rule, missing: Any) -> tuple[str, Any, str, Any]:
    if isinstance(rule, Mapping):
        ops = [k for k in rule if k not in ("column", "missing")]
        if len(ops) != 1 or ops[0] not in _OPERATORS:
            raise DataError(
                f"rule for {out_name!r} must have exactly one operator key among "
                f"{sorted(_OPERATORS)} (plus optional 'column' and 'missing'); got keys "
                f"{sorted(map(str, rule))}"
            )
        op = ops[0]
        return op, rule[op], rule.get("column", out_name), rule.get("missing", missing)
    if isinstance(rule, (set, frozenset, list, tuple)):
        return "in", rule, out_name, missing
    raise DataError(
        f"rule for {out_name!r} must be a collection of values, a mapping such as "
        f"{{'>': 40}} or {{'in': [...]}}, or a callable; got {type(rule).__name__}"
    )


def _as_flags(result: Any, out_name: str, n_rows: int) -> np.ndarray:
    flags = np.asarray(result)
    if flags.shape != (n_rows,):
        raise DataError(
            f"callable rule for {out_name!r} returned shape {flags.shape}, expected ({n_rows},)"
        )
    if flags.dtype != bool:
        if flags.dtype.kind not in "iuf" or not np.isin(flags, (0, 1)).all():
            raise DataError(f"callable rule for {out_name!r} must return booleans or 0/1 values")
    return flags.astype(np.int8)


def _apply_rule(frame: pd.DataFrame, out_name: str, rule: Rule, missing: Any) -> np.ndarray:
    if callable(rule) and not isinstance(rule, Mapping):
        return _as_flags(rule(frame), out_name, len(frame))
    op, arg, column, rule_missing = _rule_parts(out_name, rule, missing)
    if column not in frame.columns:
        raise DataError(
            f"rule for {out_name!r} reads column {column!r}, which is not in the frame; "
            f"columns: {list(frame.columns)}"
        )
    values = frame[column]
    is_na = values.isna().to_numpy()
    if op in ("in", "not in"):
        if isinstance(arg, (str, bytes)) or not hasattr(arg, "__iter__"):
            raise DataError(f"rule for {out_name!r}: {op!r} needs a list of values, got {arg!r}")
        listed = list(arg)
        if isinstance(values.dtype, pd.CategoricalDtype):
            unknown = [v for v in listed if v not in set(values.cat.categories)]
            if unknown:
                raise DataError(
                    f"rule for {out_name!r} lists value(s) {unknown} that are not categories of "
                    f"column {column!r}; its categories are {list(values.cat.categories)}"
                )
        hits = values.isin(listed).to_numpy(dtype=bool)
        if op == "not in":
            hits = ~hits
    else:
        compare = _COMPARISONS[op]
        if op in ("==", "!="):
            if isinstance(values.dtype, pd.CategoricalDtype) and arg not in set(
                values.cat.categories
            ):
                raise DataError(
                    f"rule for {out_name!r} compares with {arg!r}, which is not a category of "
                    f"column {column!r}; its categories are {list(values.cat.categories)}"
                )
            hits = pd.Series(compare(values, arg)).to_numpy(dtype=bool, na_value=False)
        else:
            if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
                raise DataError(
                    f"rule for {out_name!r} compares column {column!r} with {op!r}, but the "
                    f"column is not numeric (dtype {values.dtype})"
                )
            if isinstance(arg, bool) or not isinstance(arg, numbers.Real):
                raise DataError(f"rule for {out_name!r}: {op!r} needs a number, got {arg!r}")
            as_float = values.to_numpy(dtype=float, na_value=np.nan)
            with np.errstate(invalid="ignore"):
                hits = compare(as_float, float(arg))
    hits = np.array(hits, dtype=bool)
    if is_na.any():
        if not isinstance(rule_missing, str) and rule_missing in (0, 1):
            hits[is_na] = bool(rule_missing)
        else:
            raise DataError(
                f"column {column!r} has {int(is_na.sum())} missing value(s); give the rule for "
                f"{out_name!r} a 'missing': 0 or 1 entry, or call binarize(..., missing=0 or 1)"
            )
    return hits.astype(np.int8)


def binarize(
    frame: pd.DataFrame,
    rules: Mapping[str, Rule],
    *,
    keep_unlisted: bool = True,
    missing: Any = "raise",
) -> pd.DataFrame:
    """Turn columns into 0/1 indicators with declarative rules.

    Parameters
    ----------
    frame : pandas.DataFrame
        Input table; it is not modified.
    rules : mapping of str to rule
        Output column name -> rule. A rule is one of:

        - a list/tuple/set of values: 1 where the value is in it;
        - a mapping with one operator key, ``{"in": [...]}``, ``{"not in": [...]}``,
          ``{">": t}``, ``{">=": t}``, ``{"<": t}``, ``{"<=": t}``, ``{"==": v}`` or
          ``{"!=": v}``, plus optional ``"column"`` (the source column, default the output
          name) and ``"missing"`` (0 or 1 for missing values);
        - a callable ``f(frame) -> array of bool`` of length ``len(frame)``.

        Order comparisons need a numeric column. Values listed for a categorical column must
        be categories of it (this catches typos).
    keep_unlisted : bool, default True
        If True, return every column of ``frame``, with ruled columns replaced in place and new
        ones appended in rule order. If False, return only the ruled columns, in rule order.
    missing : {"raise", 0, 1}, default "raise"
        What missing source values become when a rule has no ``"missing"`` entry.

    Returns
    -------
    pandas.DataFrame
        Ruled columns as ``int8`` 0/1; the index of ``frame``.

    Raises
    ------
    DataError
        A malformed rule, a missing source column, an unknown category, a non-numeric column
        compared by order, or missing values with ``missing="raise"``.

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.datasets import binarize
    >>> df = pd.DataFrame({"age": [25, 41, 60], "race": ["White", "Black", "White"]})
    >>> binarize(df, {"age": {">": 40}, "race": ["White"]})
       age  race
    0    0     1
    1    1     0
    2    1     1
    """
    if not isinstance(frame, pd.DataFrame):
        raise DataError(f"binarize expects a pandas DataFrame, got {type(frame).__name__}")
    if missing != "raise" and missing not in (0, 1):
        raise DataError(f"missing must be 'raise', 0 or 1, got {missing!r}")
    computed = {name: _apply_rule(frame, name, rule, missing) for name, rule in rules.items()}
    if not keep_unlisted:
        return pd.DataFrame(computed, index=frame.index)
    out = frame.copy()
    for name, flags in computed.items():
        out[name] = flags
    return out


def discretize(
    values: pd.Series | Sequence[float] | np.ndarray,
    bins: int | Sequence[float] = 4,
    *,
    strategy: str = "quantile",
    labels: Sequence[Any] | bool | None = None,
) -> pd.Series:
    """Bin a numeric column into right-closed intervals.

    Parameters
    ----------
    values : pandas.Series or array-like of numbers
        The column. Missing values stay missing.
    bins : int or sequence of float, default 4
        Number of bins, or explicit increasing edges ``[e0, e1, ..., ek]`` giving the bins
        ``[e0, e1], (e1, e2], ..., (e(k-1), ek]``. Use ``-inf``/``inf`` for open ends.
    strategy : {"quantile", "uniform"}, default "quantile"
        How edges are chosen when ``bins`` is an int: at the ``0, 1/k, ..., 1`` quantiles of
        the non-missing values, or ``k`` equal widths between the minimum and maximum.
        Ignored when explicit edges are given.
    labels : sequence, False or None, default None
        ``None``: interval categories; ``False``: integer bin codes ``0..k-1`` (nullable
        ``Int8``, or ``Int32`` beyond 127 bins); a sequence of ``k`` labels: those labels.

    Returns
    -------
    pandas.Series
        An ordered categorical (or the codes), with the index and name of ``values``.

    Notes
    -----
    Choices: intervals are closed on the right and the first one also on the left (so the
    minimum falls in bin 0), as with ``pandas.cut(..., include_lowest=True)``. Quantile edges
    that coincide because of ties are merged, so heavy ties give fewer than ``k`` bins; with
    ``labels`` given as a sequence this raises instead. A constant column gives one bin.

    Raises
    ------
    DataError
        Unknown strategy, ``bins < 1``, non-increasing edges, values outside explicit edges,
        a non-numeric column, or a label count that does not match the bins.

    Examples
    --------
    >>> from pcfair.datasets import discretize
    >>> discretize([0, 3, 5, 12], bins=[-float("inf"), 0, 5, float("inf")],
    ...            labels=["none", "1-5", "over 5"]).tolist()
    ['none', '1-5', '1-5', 'over 5']
    >>> discretize([1, 2, 3, 4, 5, 6, 7, 8], bins=2, labels=False).tolist()
    [0, 0, 0, 0, 1, 1, 1, 1]
    """
    series = values if isinstance(values, pd.Series) else pd.Series(values)
    name = series.name if series.name is not None else "values"
    if not pd.api.types.is_numeric_dtype(series) or pd.api.types.is_bool_dtype(series):
        raise DataError(f"column {name!r} must be numeric to discretize, got dtype {series.dtype}")
    as_float = series.to_numpy(dtype=float, na_value=np.nan)
    present = as_float[~np.isnan(as_float)]
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        if bins < 1:
            raise DataError(f"bins must be at least 1, got {bins}")
        if strategy not in ("quantile", "uniform"):
            raise DataError(f"strategy must be 'quantile' or 'uniform', got {strategy!r}")
        if present.size == 0:
            raise DataError(f"column {name!r} has no non-missing values to discretize")
        lo, hi = float(present.min()), float(present.max())
        if strategy == "uniform":
            edges = np.linspace(lo, hi, int(bins) + 1)
        else:
            edges = np.quantile(present, np.linspace(0.0, 1.0, int(bins) + 1))
            edges[0], edges[-1] = lo, hi
        edges = np.unique(edges)
        if edges.size == 1:  # constant column: one closed bin
            edges = np.array([lo, lo])
    else:
        if not isinstance(bins, (Sequence, np.ndarray, pd.Index, pd.Series)) or isinstance(
            bins, str
        ):
            raise DataError(f"bins must be an int or a sequence of edges, got {bins!r}")
        edges = np.asarray(list(bins), dtype=float)
        if edges.size < 2 or np.any(np.diff(edges) <= 0):
            raise DataError(
                f"bin edges must be at least two strictly increasing numbers, got {list(bins)}"
            )
        outside = (present < edges[0]) | (present > edges[-1])
        if outside.any():
            raise DataError(
                f"{int(outside.sum())} value(s) of column {name!r} fall outside the bin edges "
                f"[{edges[0]}, {edges[-1]}], e.g. {present[outside][:3].tolist()}"
            )
    n_bins = max(edges.size - 1, 1)
    if edges[0] == edges[-1]:
        codes = np.where(np.isnan(as_float), -1, 0)
        intervals = pd.IntervalIndex.from_arrays([edges[0]], [edges[-1]], closed="both")
    else:
        codes = np.searchsorted(edges, as_float, side="left") - 1
        codes[as_float == edges[0]] = 0
        codes[np.isnan(as_float)] = -1
        intervals = pd.IntervalIndex.from_breaks(edges, closed="right")
    if labels is False:
        dtype = "Int8" if n_bins <= 127 else "Int32"
        out = pd.array(np.where(codes < 0, pd.NA, codes), dtype=dtype)
        return pd.Series(out, index=series.index, name=series.name)
    if labels is None or labels is True:
        categories: Any = intervals
    else:
        categories = list(labels)
        if len(categories) != n_bins:
            raise DataError(f"got {len(categories)} labels for {n_bins} bins of column {name!r}")
    cat = pd.Categorical.from_codes(codes, categories=categories, ordered=True)
    return pd.Series(cat, index=series.index, name=series.name)


# ---------------------------------------------------------------------------------------------
# COMPAS recipes
# ---------------------------------------------------------------------------------------------

#: Columns ProPublica's analysis keeps (plus ``id`` to join back to the raw file).
PROPUBLICA_COLUMNS: tuple[str, ...] = (
    "id",
    "age",
    "c_charge_degree",
    "race",
    "age_cat",
    "score_text",
    "sex",
    "priors_count",
    "days_b_screening_arrest",
    "decile_score",
    "is_recid",
    "two_year_recid",
    "c_jail_in",
    "c_jail_out",
)


def _require(frame: pd.DataFrame, columns: Sequence[str], what: str) -> None:
    absent = [c for c in columns if c not in frame.columns]
    if absent:
        raise DataError(f"{what} needs column(s) {absent}, which are not in the frame")


def filter_propublica(frame: pd.DataFrame) -> pd.DataFrame:
    """Apply ProPublica's standard filters to the COMPAS two-year file.

    Keeps rows with ``-30 <= days_b_screening_arrest <= 30`` (a missing value is dropped),
    ``is_recid != -1``, ``c_charge_degree != "O"`` and ``score_text != "N/A"``, and the columns
    in :data:`PROPUBLICA_COLUMNS`. On ``compas-scores-two-years.csv`` this leaves 6,172 rows.

    Parameters
    ----------
    frame : pandas.DataFrame
        The raw two-year table, as returned by ``fetch_compas().frame``.

    Returns
    -------
    pandas.DataFrame
        The filtered rows with a fresh 0-based index.

    Examples
    --------
    >>> from pcfair.datasets import fetch_compas, filter_propublica
    >>> len(filter_propublica(fetch_compas().frame))
    6172
    """
    _require(frame, PROPUBLICA_COLUMNS, "filter_propublica")
    days = frame["days_b_screening_arrest"]
    keep = (
        days.between(-30, 30).fillna(False).to_numpy(dtype=bool)
        & (frame["is_recid"] != -1).to_numpy(dtype=bool)
        & (frame["c_charge_degree"].astype("string") != "O").fillna(True).to_numpy(dtype=bool)
        & (frame["score_text"].astype("string") != "N/A").fillna(True).to_numpy(dtype=bool)
    )
    out = frame.loc[keep, list(PROPUBLICA_COLUMNS)].reset_index(drop=True)
    for column in out.columns:
        if isinstance(out[column].dtype, pd.CategoricalDtype):
            out[column] = out[column].cat.remove_unused_categories()
    return out


def prepare_compas_cbs(frame: pd.DataFrame) -> pd.DataFrame:
    """Build the COMPAS table of the Conditional Bias Scan case study.

    Starts from :func:`filter_propublica` (6,172 rows) and returns the columns ``id``,
    ``sex``, ``race``, ``age`` ("Under 25" / "25 and over", from ProPublica's ``age_cat``),
    ``charge_degree`` ("Felony" / "Misdemeanor"), ``priors`` ("None" / "1 to 5" / "Over 5"),
    ``decile_score`` (1-10), ``two_year_recid`` (the outcome *Y*), ``predicted_prob`` (*P*: the
    share of all 6,172 defendants with the same decile score who reoffended) and ``high_risk``
    (*Pbin*: 1 when ``decile_score >= 5``).

    Parameters
    ----------
    frame : pandas.DataFrame
        The raw two-year table, as returned by ``fetch_compas().frame``.

    Returns
    -------
    pandas.DataFrame
        One row per defendant; categorical covariates.

    Examples
    --------
    >>> from pcfair.datasets import fetch_compas, prepare_compas_cbs
    >>> cbs = prepare_compas_cbs(fetch_compas().frame)
    >>> int((cbs.two_year_recid == 0).sum()), int(cbs.high_risk.sum())
    (3363, 2751)
    """
    base = filter_propublica(frame)
    decile = base["decile_score"].astype(np.int64)
    recid = base["two_year_recid"].astype(np.int8)
    rate_by_decile = recid.groupby(decile).mean()
    age_cat = base["age_cat"].astype("string")
    degree = base["c_charge_degree"].astype("string")
    unknown = sorted(set(degree.dropna()) - {"F", "M"})
    if unknown:
        raise DataError(f"column 'c_charge_degree' has unexpected value(s) {unknown}")
    out = pd.DataFrame(
        {
            "id": base["id"],
            "sex": base["sex"],
            "race": base["race"],
            "age": pd.Categorical(
                np.where(age_cat == "Less than 25", "Under 25", "25 and over"),
                categories=["Under 25", "25 and over"],
            ),
            "charge_degree": pd.Categorical(
                np.where(degree == "F", "Felony", "Misdemeanor"),
                categories=["Felony", "Misdemeanor"],
            ),
            "priors": discretize(
                base["priors_count"],
                bins=[-np.inf, 0, 5, np.inf],
                labels=["None", "1 to 5", "Over 5"],
            ),
            "decile_score": decile,
            "two_year_recid": recid,
            "predicted_prob": decile.map(rate_by_decile).astype(float),
            "high_risk": (decile >= 5).astype(np.int8),
        }
    )
    return out


# ---------------------------------------------------------------------------------------------
# LearnFairNB binarizations
# ---------------------------------------------------------------------------------------------

#: LearnFairNB's Adult rules, in the column order of ``adult_binerized.csv``. 1 means:
#: workclass employed by others (or unknown); fnlwgt > 189,778; education some college or
#: more; education-num > 10; hours-per-week > 39 (40 or more); marital-status not married;
#: occupation in a white-collar/protective group; relationship husband or wife; race White;
#: sex Female; native-country United-States; capital-gain > 1; capital-loss > 1;
#: target income >50K.
ADULT_RULES: dict[str, Rule] = {
    "workclass": {
        "not in": ["Self-emp-not-inc", "Self-emp-inc", "Without-pay", "Never-worked"],
        "missing": 1,
    },
    "fnlwgt": {">": 189778},
    "education": {
        "in": [
            "Bachelors",
            "Some-college",
            "Prof-school",
            "Assoc-acdm",
            "Assoc-voc",
            "Masters",
            "Doctorate",
        ],
    },
    "education-num": {">": 10},
    "hours-per-week": {">": 39},
    "marital-status": {
        "not in": ["Married-civ-spouse", "Married-spouse-absent", "Married-AF-spouse"],
    },
    "occupation": {
        "in": [
            "Tech-support",
            "Sales",
            "Exec-managerial",
            "Prof-specialty",
            "Protective-serv",
            "Armed-Forces",
        ],
        "missing": 0,
    },
    "relationship": {"in": ["Wife", "Husband"]},
    "race": {"in": ["White"]},
    "sex": {"in": ["Female"]},
    "native-country": {"in": ["United-States"], "missing": 0},
    "capital-gain": {">": 1},
    "capital-loss": {">": 1},
    "target": {"column": "income", "in": [">50K"]},
}

#: Sensitive columns of the binarized Adult (as in ``adult_binary.net.txt``).
ADULT_BINARIZED_SENSITIVE: tuple[str, ...] = ("marital-status", "race", "sex", "native-country")

#: LearnFairNB's German Credit rules, in the column order of ``german_binerized.csv``.
#: Labels are those of :func:`pcfair.datasets.fetch_german` (UCI codes in comments).
GERMAN_RULES: dict[str, Rule] = {
    "duration": {">": 12},
    "credit_amount": {">": 2800},
    "age": {">": 30},
    "maintenance": {"column": "num_dependents", "==": 1},
    "telephone": {"in": ["yes"]},  # A192
    "foreign_worker": {"in": ["yes"]},  # A201
    "loan_status": {"column": "credit", "in": ["good"]},  # class 1
    "checking_status": {"in": ["0 <= ... < 200 DM", ">= 200 DM"]},  # A12, A13
    "credit_history": {  # not A30, A31, A32
        "not in": [
            "no credits taken / all paid back duly",
            "all credits at this bank paid back duly",
            "existing credits paid back duly till now",
        ],
    },
    "purpose": {  # A40, A41, A45, A46, A49
        "in": ["car (new)", "car (used)", "repairs", "education", "business"],
    },
    "saving_account": {"column": "savings", "in": ["500 <= ... < 1000 DM", ">= 1000 DM"]},
    "employment": {"in": ["4 <= ... < 7 years", ">= 7 years"]},  # A74, A75
    "income": {"column": "installment_rate", "in": [3, 4]},
    "sex": {  # A92, A95
        "column": "personal_status",
        "in": ["female: divorced/separated/married", "female: single"],
    },
    "marital_status": {  # A93, A95
        "column": "personal_status",
        "in": ["male: single", "female: single"],
    },
    "guarantor": {"column": "other_debtors", "not in": ["none", "co-applicant"]},  # A103
    "residence": {"column": "residence_since", "in": [3, 4]},
    "property": {"not in": ["car or other", "unknown / no property"]},  # A121, A122
    "installation_plan": {"column": "other_installment_plans", "not in": ["bank", "stores"]},
    "housing": {"not in": ["rent", "for free"]},  # A152 own
    "existing_credit": {"column": "existing_credits", "in": [2, 3, 4]},
    "job": {  # A173, A174
        "in": ["skilled employee / official", "management / self-employed / highly qualified"],
    },
}

#: Sensitive columns of the binarized German Credit (as in ``german_binary.net.txt``).
GERMAN_BINARIZED_SENSITIVE: tuple[str, ...] = ("age", "foreign_worker", "sex", "marital_status")


# ---------------------------------------------------------------------------------------------
# Value labels of the binarized tables
# ---------------------------------------------------------------------------------------------
#
# What the 0 and 1 of each binarized column mean, written down from the rules above (Adult,
# German) and from LearnFairNB's COMPAS script (``compass_data_binarized.py``: code 0 is the
# listed raw value, code 1 every other value; age is ``pandas.cut`` at ``[0, 30, 100]`` of the
# age on the day the script ran). :func:`value_labels` turns them into the labels
# ``"0 (Male)"``, ``"1 (Female)"``: the code first, so a label never hides which 0/1 value of
# the CSV (and of a ``.psdd`` file, which has no labels) it stands for, labels sort in code
# order, and no label is a bare number that could be mistaken for a code. Meanings never hold
# ``,``, ``|`` or ``=``, which separate the parts of a pattern's text (``a=1 (x), b=0 (y) |
# c=...``) and of ``--evidence``.

#: Meaning of code 0 and code 1 of each column of ``compas_binerized.csv`` (upstream names).
COMPAS_BINARIZED_MEANINGS: dict[str, tuple[str, str]] = {
    "CustodyStatus_": ("Jail Inmate", "not Jail Inmate"),
    "LegalStatus_": ("Post Sentence", "not Post Sentence"),
    "RecSupervisionLevel_": ("level 1 or 2", "level 3 or 4"),
    "Ethnic_Code_Text_": ("Caucasian", "not Caucasian"),
    "MaritalStatus_": ("Married or Significant Other", "Single/Divorced/Separated/Widowed"),
    "Age": ("30 or younger", "older than 30"),
    "ScoreText_": ("High", "Low or Medium"),
    "Sex_": ("Male", "Female"),
}

#: Meaning of code 0 and code 1 of each column of :data:`ADULT_RULES`.
ADULT_BINARIZED_MEANINGS: dict[str, tuple[str, str]] = {
    "workclass": ("self-employed/without pay/never worked", "employee or unknown"),
    "fnlwgt": ("189778 or less", "over 189778"),
    "education": ("no college", "some college or more"),
    "education-num": ("10 or less", "over 10"),
    "hours-per-week": ("under 40", "40 or more"),
    "marital-status": ("married", "not married"),
    "occupation": ("other or unknown", "white-collar or protective"),
    "relationship": ("not husband or wife", "husband or wife"),
    "race": ("not White", "White"),
    "sex": ("Male", "Female"),
    "native-country": ("other or unknown", "United-States"),
    "capital-gain": ("1 or less", "over 1"),
    "capital-loss": ("1 or less", "over 1"),
    "target": ("income 50K or less", "income over 50K"),
}

#: Meaning of code 0 and code 1 of each column of :data:`GERMAN_RULES`.
GERMAN_BINARIZED_MEANINGS: dict[str, tuple[str, str]] = {
    "duration": ("12 months or less", "over 12 months"),
    "credit_amount": ("2800 DM or less", "over 2800 DM"),
    "age": ("30 or younger", "older than 30"),
    "maintenance": ("2 dependents", "1 dependent"),
    "telephone": ("no telephone", "telephone"),
    "foreign_worker": ("not foreign worker", "foreign worker"),
    "loan_status": ("bad credit", "good credit"),
    "checking_status": ("below 0 DM or no account", "0 DM or more"),
    "credit_history": ("paid back duly or no credits", "past delays or critical account"),
    "purpose": ("other purpose", "car/repairs/education/business"),
    "saving_account": ("below 500 DM or unknown", "500 DM or more"),
    "employment": ("under 4 years or unemployed", "4 years or more"),
    "income": ("installment rate 1 or 2", "installment rate 3 or 4"),
    "sex": ("male", "female"),
    "marital_status": ("not single", "single"),
    "guarantor": ("none or co-applicant", "guarantor"),
    "residence": ("1 or 2 years", "3 or 4 years"),
    "property": ("car/other or none", "real estate or savings/insurance"),
    "installation_plan": ("bank or stores", "none"),
    "housing": ("rent or for free", "own"),
    "existing_credit": ("1 credit", "2 or more credits"),
    "job": ("unskilled or unemployed", "skilled or highly qualified"),
}


def value_labels(meanings: Mapping[str, Sequence[str]]) -> dict[str, tuple[str, ...]]:
    """Labels ``"<code> (<meaning>)"`` from the meanings of each code of each column.

    Examples
    --------
    >>> from pcfair.datasets.preprocessing import ADULT_BINARIZED_MEANINGS, value_labels
    >>> value_labels(ADULT_BINARIZED_MEANINGS)["sex"]
    ('0 (Male)', '1 (Female)')
    """
    out = {}
    for column, texts in meanings.items():
        bad = [t for t in texts if any(ch in t for ch in ",|=")]
        if bad:
            raise DataError(f"the meaning {bad[0]!r} of column {column!r} holds ',', '|' or '='")
        out[column] = tuple(f"{k} ({t})" for k, t in enumerate(texts))
    return out


def binarize_adult(frame: pd.DataFrame) -> pd.DataFrame:
    """Binarize raw UCI Adult with LearnFairNB's rules (:data:`ADULT_RULES`).

    Parameters
    ----------
    frame : pandas.DataFrame
        Raw Adult as returned by ``fetch_adult().frame`` (``?`` read as missing).

    Returns
    -------
    pandas.DataFrame
        14 ``int8`` columns in the order of ``adult_binerized.csv``; the decision is
        ``target``. On the training file it equals ``adult_binerized.csv`` cell for cell.

    Examples
    --------
    >>> from pcfair.datasets import binarize_adult, fetch_adult
    >>> binarize_adult(fetch_adult().frame).shape
    (32561, 14)
    """
    return binarize(frame, ADULT_RULES, keep_unlisted=False)


def binarize_german(frame: pd.DataFrame) -> pd.DataFrame:
    """Binarize raw UCI German Credit with LearnFairNB's rules (:data:`GERMAN_RULES`).

    Parameters
    ----------
    frame : pandas.DataFrame
        Raw German Credit as returned by ``fetch_german().frame``.

    Returns
    -------
    pandas.DataFrame
        22 ``int8`` columns in the order of ``german_binerized.csv``; the decision is
        ``loan_status``. It equals ``german_binerized.csv`` cell for cell.

    Examples
    --------
    >>> from pcfair.datasets import binarize_german, fetch_german
    >>> binarize_german(fetch_german().frame).shape
    (1000, 22)
    """
    return binarize(frame, GERMAN_RULES, keep_unlisted=False)
