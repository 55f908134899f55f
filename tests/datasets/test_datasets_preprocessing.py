"""Tests of the generic binarize/discretize helpers."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcfair.datasets import binarize, discretize
from pcfair.errors import DataError


@pytest.fixture()
def people():
    return pd.DataFrame(
        {
            "age": [25, 40, 41, 60],
            "race": pd.Categorical(
                ["White", "Black", "White", None], categories=["Black", "White", "Other"]
            ),
            "hours": [10.0, np.nan, 45.0, 39.0],
            "city": ["a", "b", "c", "a"],
        }
    )


# --- binarize ---------------------------------------------------------------------------------


def test_binarize_rule_forms(people):
    out = binarize(
        people,
        {
            "age": {">": 40},
            "young": {"column": "age", "<=": 25},
            "race": {"in": ["White"], "missing": 0},
            "nonwhite": {"column": "race", "not in": ["White"], "missing": 1},
            "city": ["a", "c"],
            "is_b": {"column": "city", "==": "b"},
            "even": lambda df: df["age"] % 2 == 0,
        },
    )
    assert list(out.columns) == [
        "age",
        "race",
        "hours",
        "city",
        "young",
        "nonwhite",
        "is_b",
        "even",
    ]
    assert out["age"].tolist() == [0, 0, 1, 1]  # strict: 40 is not > 40
    assert out["young"].tolist() == [1, 0, 0, 0]
    assert out["race"].tolist() == [1, 0, 1, 0]
    assert out["nonwhite"].tolist() == [0, 1, 0, 1]
    assert out["city"].tolist() == [1, 0, 1, 1]
    assert out["is_b"].tolist() == [0, 1, 0, 0]
    assert out["even"].tolist() == [0, 1, 0, 1]
    assert all(out[c].dtype == np.int8 for c in ["age", "race", "young", "even"])
    pd.testing.assert_series_equal(out["hours"], people["hours"])  # untouched
    assert people["age"].tolist() == [25, 40, 41, 60]  # input not modified


def test_binarize_keep_unlisted_false_uses_rule_order(people):
    out = binarize(people, {"city": ["a"], "age": {">=": 41}}, keep_unlisted=False)
    assert list(out.columns) == ["city", "age"]
    assert out.index.equals(people.index)


def test_binarize_missing_values_must_be_decided(people):
    with pytest.raises(DataError, match=r"column 'hours' has 1 missing value.*'missing': 0 or 1"):
        binarize(people, {"hours": {">": 39}})
    assert binarize(people, {"hours": {">": 39}}, missing=1)["hours"].tolist() == [0, 1, 1, 0]
    assert binarize(people, {"hours": {">": 39, "missing": 0}}, missing=1)["hours"].tolist() == [
        0,
        0,
        1,
        0,
    ]


@pytest.mark.parametrize(
    ("rules", "match"),
    [
        ({"race": ["Whit"]}, r"value\(s\) \['Whit'\] that are not categories of column 'race'"),
        ({"city": {">": 3}}, "compares column 'city' with '>', but the column is not numeric"),
        ({"x": ["a"]}, "reads column 'x', which is not in the frame"),
        ({"age": {">": 3, "<": 9}}, "exactly one operator key"),
        ({"age": {"between": 3}}, "exactly one operator key"),
        ({"age": 40}, "must be a collection of values"),
        ({"city": {"in": "abc"}}, "needs a list of values"),
        ({"age": lambda df: df["age"] + 1}, "must return booleans or 0/1"),
        ({"age": lambda df: [True]}, r"returned shape \(1,\), expected \(4,\)"),
        ({"race": {"==": "Whit"}}, "compares with 'Whit', which is not a category"),
        ({"age": {">": "40"}}, "'>' needs a number, got '40'"),
    ],
)
def test_binarize_rejects_bad_rules(people, rules, match):
    with pytest.raises(DataError, match=match):
        binarize(people.fillna({"hours": 0.0}), rules, missing=0)


def test_binarize_rejects_bad_missing_policy(people):
    with pytest.raises(DataError, match="missing must be 'raise', 0 or 1"):
        binarize(people, {"age": {">": 1}}, missing="drop")


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.integers(-1000, 1000), min_size=1, max_size=50),
    st.integers(-1000, 1000),
)
def test_binarize_threshold_property(values, threshold):
    frame = pd.DataFrame({"v": values})
    out = binarize(
        frame, {"gt": {"column": "v", ">": threshold}, "le": {"column": "v", "<=": threshold}}
    )
    np.testing.assert_array_equal(out["gt"], (np.array(values) > threshold).astype(np.int8))
    np.testing.assert_array_equal(out["gt"] + out["le"], np.ones(len(values)))


# --- discretize -------------------------------------------------------------------------------


def test_discretize_explicit_edges_are_right_closed_and_include_lowest():
    out = discretize(pd.Series([0, 1, 5, 6, 20], name="priors"), bins=[0, 1, 5, 100])
    assert out.name == "priors"
    assert out.cat.ordered
    assert [str(i) for i in out.cat.categories] == ["(0.0, 1.0]", "(1.0, 5.0]", "(5.0, 100.0]"]
    assert out.cat.codes.tolist() == [0, 0, 1, 2, 2]  # 0 = lowest edge goes in bin 0


def test_discretize_labels_and_codes():
    values = [0, 3, 5, 12]
    edges = [-np.inf, 0, 5, np.inf]
    assert discretize(values, bins=edges, labels=["none", "1-5", "6+"]).tolist() == [
        "none",
        "1-5",
        "1-5",
        "6+",
    ]
    codes = discretize(values, bins=edges, labels=False)
    assert str(codes.dtype) == "Int8" and codes.tolist() == [0, 1, 1, 2]


def test_discretize_uniform_and_quantile():
    values = pd.Series(np.arange(1, 101, dtype=float))
    uniform = discretize(values, bins=4, strategy="uniform", labels=False)
    assert uniform.value_counts().sort_index().tolist() == [25, 25, 25, 25]
    skewed = pd.Series(np.r_[np.arange(90.0), np.full(10, 1000.0)])
    quantile = discretize(skewed, bins=2, strategy="quantile", labels=False)
    assert quantile.value_counts().sort_index().tolist() == [50, 50]
    uniform_skewed = discretize(skewed, bins=2, strategy="uniform", labels=False)
    assert uniform_skewed.value_counts().sort_index().tolist() == [90, 10]


def test_discretize_missing_stays_missing_and_ties_merge():
    out = discretize(pd.Series([1.0, np.nan, 1.0, 1.0, 2.0]), bins=4, labels=False)
    assert out.isna().tolist() == [False, True, False, False, False]
    assert out.dropna().tolist() == [0, 0, 0, 1]  # tied quantile edges merged into 2 bins
    constant = discretize([3, 3, 3], bins=3, labels=False)
    assert constant.tolist() == [0, 0, 0]
    many = discretize(np.arange(1000), bins=200, strategy="uniform", labels=False)
    assert str(many.dtype) == "Int32" and many.max() == 199


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"values": [1, 2], "bins": 0}, "bins must be at least 1"),
        (
            {"values": [1, 2], "bins": 2, "strategy": "kmeans"},
            "strategy must be 'quantile' or 'uniform'",
        ),
        ({"values": [1, 2], "bins": [0, 0, 1]}, "strictly increasing"),
        ({"values": [1, 9], "bins": [0, 5]}, r"1 value\(s\) of column 'values' fall outside"),
        ({"values": ["a", "b"], "bins": 2}, "must be numeric"),
        ({"values": [1, 2, 3], "bins": [0, 1, 3], "labels": ["x"]}, "got 1 labels for 2 bins"),
        ({"values": [np.nan], "bins": 2}, "no non-missing values"),
        ({"values": [1, 2], "bins": 2.5}, "bins must be an int or a sequence of edges"),
    ],
)
def test_discretize_errors(kwargs, match):
    with pytest.raises(DataError, match=match):
        discretize(**kwargs)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=60),
    st.integers(1, 6),
    st.sampled_from(["quantile", "uniform"]),
)
def test_discretize_codes_are_monotone_and_in_range(values, bins, strategy):
    codes = discretize(values, bins=bins, strategy=strategy, labels=False).to_numpy(dtype=int)
    order = np.argsort(values, kind="stable")
    assert np.all(np.diff(codes[order]) >= 0)
    assert codes.min() == 0 and codes.max() < bins
    intervals = discretize(values, bins=bins, strategy=strategy)
    for value, interval in zip(values, intervals, strict=True):
        assert value in interval or value == interval.left
