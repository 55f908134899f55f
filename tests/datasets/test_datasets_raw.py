"""Tests of the raw-file loaders (COMPAS, Adult, German) and the paper recipes applied to them."""

from __future__ import annotations

import re
import urllib.error

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED_DATA, requires_data

from pcfair.datasets import (
    _cache,
    binarize_adult,
    binarize_german,
    fetch_adult,
    fetch_compas,
    fetch_german,
    filter_propublica,
    load_binarized,
    prepare_compas_cbs,
)
from pcfair.datasets._adult import ADULT_CATEGORIES, ADULT_COLUMNS, read_adult
from pcfair.datasets._german import GERMAN_CODES, read_german
from pcfair.errors import DataError


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    def refuse(url, timeout):
        raise urllib.error.URLError(f"network disabled in tests ({url})")

    monkeypatch.setattr(_cache, "_open_url", refuse)


@pytest.fixture(scope="module")
def compas_raw():
    return fetch_compas().frame


# --- COMPAS -----------------------------------------------------------------------------------


@requires_data()
def test_compas_raw_shape_dtypes_and_first_row(compas_raw):
    frame = compas_raw
    assert frame.shape == (7214, 51)
    assert "decile_score.1" not in frame.columns and "priors_count.1" not in frame.columns
    first = frame.iloc[0]
    assert first["id"] == 1 and first["name"] == "miguel hernandez"
    assert first["sex"] == "Male" and first["race"] == "Other" and first["age"] == 69
    assert first["age_cat"] == "Greater than 45" and first["score_text"] == "Low"
    assert first["decile_score"] == 1 and first["two_year_recid"] == 0
    assert first["dob"] == pd.Timestamp("1947-04-18")
    assert first["c_jail_in"] == pd.Timestamp("2013-08-13 06:03:42")
    assert isinstance(frame["race"].dtype, pd.CategoricalDtype)
    assert frame["score_text"].cat.ordered
    assert list(frame["score_text"].cat.categories) == ["Low", "Medium", "High"]
    assert frame["race"].value_counts()["African-American"] == 3696
    assert int(frame["days_b_screening_arrest"].isna().sum()) == 307


@requires_data()
def test_compas_dataset_metadata():
    ds = fetch_compas()
    assert ds.target == "two_year_recid" and ds.favorable == 0
    assert ds.sensitive == ["race", "sex", "age_cat"]
    assert ds.source.endswith("propublica/compas-analysis/master/compas-scores-two-years.csv")
    X, y = fetch_compas(return_X_y=True)
    assert X.shape == (7214, 50) and y.name == "two_year_recid"


@requires_data()
def test_propublica_filter_keeps_6172_rows(compas_raw):
    filtered = filter_propublica(compas_raw)
    assert len(filtered) == 6172
    assert filtered["days_b_screening_arrest"].abs().max() <= 30
    assert (filtered["is_recid"] != -1).all()
    assert set(filtered["c_charge_degree"]) == {"F", "M"}
    assert fetch_compas(preprocess="propublica").n_samples == 6172


@requires_data()
def test_cbs_table_matches_paper_counts():
    ds = fetch_compas(preprocess="cbs")
    frame = ds.frame
    assert ds.sensitive == ["race", "sex", "age"]
    assert len(frame) == 6172
    assert int((frame["two_year_recid"] == 0).sum()) == 3363
    assert int(frame["high_risk"].sum()) == 2751
    assert list(frame["priors"].cat.categories) == ["None", "1 to 5", "Over 5"]
    assert frame["priors"].value_counts().to_dict() == {
        "1 to 5": 2866,
        "None": 2085,
        "Over 5": 1221,
    }
    assert frame["age"].value_counts().to_dict() == {"25 and over": 4825, "Under 25": 1347}
    # FPR among non-reoffenders (CBS paper, Sec. 5): Black males 0.44 vs non-Black males 0.19.
    y0 = frame[(frame["two_year_recid"] == 0) & (frame["sex"] == "Male")]
    black = y0["race"] == "African-American"
    assert int(black.sum()) == 1168 and int((~black).sum()) == 1433
    assert round(float(y0.loc[black, "high_risk"].mean()), 2) == 0.44
    assert round(float(y0.loc[~black, "high_risk"].mean()), 2) == 0.19
    # P is the empirical reoffence rate of each decile score.
    rates = frame.groupby("decile_score")["two_year_recid"].mean()
    np.testing.assert_allclose(frame["predicted_prob"], frame["decile_score"].map(rates))
    assert ((frame["predicted_prob"] > 0) & (frame["predicted_prob"] < 1)).all()


@requires_data()
def test_prepare_compas_cbs_requires_columns(compas_raw):
    with pytest.raises(DataError, match=r"filter_propublica needs column\(s\) \['score_text'\]"):
        prepare_compas_cbs(compas_raw.drop(columns=["score_text"]))


def test_fetch_compas_rejects_unknown_preprocess():
    with pytest.raises(DataError, match="preprocess must be one of .*'cbs'.*got 'zafar'"):
        fetch_compas(preprocess="zafar")


# --- Adult ------------------------------------------------------------------------------------


@requires_data()
def test_adult_train_test_all_row_counts():
    train = fetch_adult()
    test = fetch_adult(subset="test")
    both = fetch_adult(subset="all")
    assert train.frame.shape == (32561, 15)
    assert test.frame.shape == (16281, 15)
    assert both.n_samples == 32561 + 16281
    assert train.target == "income" and train.favorable == ">50K"
    assert train.sensitive == ["age", "marital-status", "race", "sex", "native-country"]
    for column, categories in ADULT_CATEGORIES.items():
        assert list(both.frame[column].cat.categories) == categories
        assert list(test.frame[column].cat.categories) == categories
    assert set(test.frame["income"].dropna()) == {"<=50K", ">50K"}  # trailing '.' removed
    assert int((train.frame["income"] == ">50K").sum()) == 7841
    assert int((test.frame["income"] == ">50K").sum()) == 3846


@requires_data()
def test_adult_known_values_and_missing():
    frame = fetch_adult().frame
    assert frame.iloc[0].tolist() == [
        39,
        "State-gov",
        77516,
        "Bachelors",
        13,
        "Never-married",
        "Adm-clerical",
        "Not-in-family",
        "White",
        "Male",
        2174,
        0,
        40,
        "United-States",
        "<=50K",
    ]
    assert int((frame["workclass"] == "Federal-gov").sum()) == 960
    assert frame["age"].dtype == np.int64
    assert int(frame.isna().any(axis=1).sum()) == 2399
    assert fetch_adult(dropna=True).n_samples == 30162
    assert fetch_adult(subset="test", dropna=True).n_samples == 15060


@requires_data()
def test_adult_categories_are_those_of_adult_names():
    text = (SHARED_DATA / "raw" / "adult.names").read_text()
    for column, categories in ADULT_CATEGORIES.items():
        if column == "income":
            continue
        match = re.search(rf"^{re.escape(column)}: (.*)\.$", text, flags=re.MULTILINE)
        assert match is not None, column
        assert [v.strip() for v in match.group(1).split(",")] == categories


@requires_data()
def test_binarize_adult_reproduces_upstream_table_exactly():
    ours = binarize_adult(fetch_adult().frame)
    upstream = pd.read_csv(SHARED_DATA / "adult_binerized.csv")
    assert list(ours.columns) == list(upstream.columns)
    np.testing.assert_array_equal(ours.to_numpy(), upstream.to_numpy())
    ds = fetch_adult(preprocess="binarize")
    assert ds.target == "target" and ds.favorable == 1
    assert ds.sensitive == load_binarized("adult").sensitive
    pd.testing.assert_frame_equal(ds.frame, load_binarized("adult").frame)


def test_adult_rejects_unknown_subset():
    with pytest.raises(DataError, match="subset must be one of .*got 'validation'"):
        fetch_adult(subset="validation")


def test_read_adult_rejects_unknown_category(tmp_path):
    row = (
        "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, "
        "White, Male, 2174, 0, 40, Atlantis, <=50K\n"
    )
    path = tmp_path / "adult.data"
    path.write_text(row)
    with pytest.raises(DataError, match=r"column 'native-country' has value\(s\) \['Atlantis'\]"):
        read_adult(path)


def test_read_adult_rejects_short_rows_and_bad_numbers(tmp_path):
    path = tmp_path / "adult.data"
    path.write_text("39, State-gov, 77516\n")
    with pytest.raises(DataError, match="fewer than 15 fields"):
        read_adult(path)
    good = ", ".join(
        [
            "x39",
            "State-gov",
            "77516",
            "Bachelors",
            "13",
            "Never-married",
            "Adm-clerical",
            "Not-in-family",
            "White",
            "Male",
            "2174",
            "0",
            "40",
            "United-States",
            "<=50K",
        ]
    )
    path.write_text(good + "\n")
    with pytest.raises(DataError, match=r"column 'age' has non-integer value\(s\) \['x39'\]"):
        read_adult(path)
    assert len(ADULT_COLUMNS) == 15


# --- German -----------------------------------------------------------------------------------


@requires_data()
def test_german_shape_and_known_values():
    ds = fetch_german()
    frame = ds.frame
    assert frame.shape == (1000, 22)
    assert ds.target == "credit" and ds.favorable == "good"
    assert ds.sensitive == ["age", "sex", "foreign_worker"]
    first = frame.iloc[0]
    assert first["checking_status"] == "< 0 DM"  # A11
    assert first["duration"] == 6 and first["credit_amount"] == 1169 and first["age"] == 67
    assert first["credit_history"] == "critical account / other credits existing"  # A34
    assert first["personal_status"] == "male: single" and first["sex"] == "male"  # A93
    assert first["credit"] == "good"
    second = frame.iloc[1]
    assert second["personal_status"] == "female: divorced/separated/married"
    assert second["sex"] == "female" and second["credit"] == "bad"
    assert frame["credit"].value_counts().to_dict() == {"good": 700, "bad": 300}
    assert int((frame["sex"] == "female").sum()) == 310
    assert int((frame["foreign_worker"] == "yes").sum()) == 963
    for column, codes in GERMAN_CODES.items():
        assert list(frame[column].cat.categories) == list(codes.values())


@requires_data()
def test_binarize_german_reproduces_upstream_table_exactly():
    ours = binarize_german(fetch_german().frame)
    upstream = pd.read_csv(SHARED_DATA / "german_binerized.csv")
    assert list(ours.columns) == list(upstream.columns)
    np.testing.assert_array_equal(ours.to_numpy(), upstream.to_numpy())
    ds = fetch_german(preprocess="binarize")
    reference = load_binarized("german")
    assert ds.sensitive == reference.sensitive and ds.target == reference.target
    pd.testing.assert_frame_equal(ds.frame[reference.frame.columns], reference.frame)


def test_read_german_rejects_bad_rows(tmp_path):
    path = tmp_path / "german.data"
    path.write_text("A11 6 A34\n")
    with pytest.raises(DataError, match="21 space-separated fields"):
        read_german(path)
    fields = "A11 6 A34 A43 1169 A65 A75 4 A93 A101 4 A121 67 A143 A152 2 A173 1 A192 A201 1"
    path.write_text(fields.replace("A43", "A99") + "\n")
    with pytest.raises(DataError, match=r"column 'purpose' has unknown code\(s\) \['A99'\]"):
        read_german(path)
