"""Tests of load_binarized and the .net.txt reader."""

from __future__ import annotations

import dataclasses
import shutil
import urllib.error

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED_DATA, requires_shared

from pcfair.datasets import (
    BINARIZED_NAMES,
    Dataset,
    _cache,
    file_sha256,
    load_binarized,
    read_net_file,
)
from pcfair.datasets._registry import REGISTRY
from pcfair.errors import DataError, FormatError


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    def refuse(url, timeout):
        raise urllib.error.URLError(f"network disabled in tests ({url})")

    monkeypatch.setattr(_cache, "_open_url", refuse)


# --- .net.txt ---------------------------------------------------------------------------------


def test_read_net_file_ignores_unreliable_count_and_blank_lines(tmp_path):
    net = tmp_path / "x.net.txt"
    net.write_text("14 0.0\ntarget 1\na 0\n\nb 1\nc 0\n\n")
    spec = read_net_file(net)
    assert spec.target == "target" and spec.favorable == 1
    assert spec.features == ["a", "b", "c"]
    assert spec.sensitive == ["b"]


@pytest.mark.parametrize(
    ("text", "line", "match"),
    [
        ("3 0.0\nD 1\na 2\n", 3, "must be 0 or 1"),
        ("3 0.0\nD 1\na\n", 3, "feature line"),
        ("3 0.0\nD yes\na 1\n", 2, "favourable value must be an integer"),
        ("3 0.0\nD 1\na 1\na 0\n", 4, "listed twice"),
        ("3 0.0\nD 1\n", 2, "no feature lines"),
        ("3\nD 1\na 1\n", 1, "header"),
    ],
)
def test_read_net_file_reports_path_and_line(tmp_path, text, line, match):
    net = tmp_path / "bad.net.txt"
    net.write_text(text)
    with pytest.raises(FormatError, match=match) as info:
        read_net_file(net)
    assert info.value.path == str(net) and info.value.line == line
    assert str(info.value).startswith(f"{net}:{line}: ")


@requires_shared
@pytest.mark.parametrize(
    ("name", "target", "n_features", "sensitive"),
    [
        ("compas", "ScoreText", 7, ["Ethnic_Code_Text", "MaritalStatus", "Sex", "Age"]),
        ("adult", "target", 13, ["marital-status", "race", "sex", "native-country"]),
        ("german", "loan_status", 21, ["age", "foreign_worker", "sex", "marital_status"]),
    ],
)
def test_shared_net_files(name, target, n_features, sensitive):
    spec = read_net_file(SHARED_DATA / f"{name}_binary.net.txt")
    assert spec.target == target and spec.favorable == 1
    assert len(spec.features) == n_features
    assert spec.sensitive == sensitive


# --- the tables ---------------------------------------------------------------------------------


@requires_shared
@pytest.mark.parametrize(
    ("name", "shape", "target", "sensitive"),
    [
        ("compas", (48834, 8), "ScoreText", ["Ethnic_Code_Text", "MaritalStatus", "Sex", "Age"]),
        ("adult", (32561, 14), "target", ["marital-status", "race", "sex", "native-country"]),
        ("german", (1000, 22), "loan_status", ["age", "foreign_worker", "sex", "marital_status"]),
        ("acs_income", (195665, 9), "D", ["F9", "F10"]),
    ],
)
def test_binarized_shapes_targets_and_sensitive(name, shape, target, sensitive):
    ds = load_binarized(name)
    assert isinstance(ds, Dataset)
    assert ds.frame.shape == shape
    assert ds.target == target and ds.favorable == 1
    assert ds.sensitive == sensitive
    assert ds.frame.columns[-1] == target  # decision moved last
    assert (ds.frame.dtypes == np.int8).all()
    assert set(np.unique(ds.frame.to_numpy())) == {0, 1}
    assert ds.source.startswith("https://raw.githubusercontent.com/UCLA-StarAI/")


@requires_shared
def test_compas_headers_lose_exactly_one_trailing_underscore():
    ds = load_binarized("compas")
    assert list(ds.frame.columns) == [
        "CustodyStatus",
        "LegalStatus",
        "RecSupervisionLevel",
        "Ethnic_Code_Text",
        "MaritalStatus",
        "Age",
        "Sex",
        "ScoreText",
    ]
    raw = pd.read_csv(SHARED_DATA / "compas_binerized.csv")
    for column in ds.frame.columns:
        source = column if column == "Age" else column + "_"
        np.testing.assert_array_equal(ds.frame[column].to_numpy(), raw[source].to_numpy())


@requires_shared
def test_columns_follow_csv_order_with_target_last():
    raw_columns = list(pd.read_csv(SHARED_DATA / "german_binerized.csv", nrows=0).columns)
    ds = load_binarized("german")
    assert list(ds.frame.columns) == [c for c in raw_columns if c != "loan_status"] + [
        "loan_status"
    ]
    acs = load_binarized("acs_income")
    assert list(acs.frame.columns) == ["F1", "F2", "F3", "F4", "F7", "F8", "F9", "F10", "D"]


@requires_shared
def test_known_values_and_rates():
    compas = load_binarized("compas").frame
    assert compas.iloc[0].tolist() == [0, 1, 0, 1, 0, 1, 0, 1]  # first CSV row, ScoreText last
    german = load_binarized("german").frame
    assert int(german["loan_status"].sum()) == 700  # 700 good / 300 bad credit risks
    acs = load_binarized("acs_income").frame
    assert acs.iloc[0].tolist() == [1, 0, 0, 1, 0, 1, 1, 0, 0]


@requires_shared
def test_return_X_y():
    X, y = load_binarized("adult", return_X_y=True)
    assert X.shape == (32561, 13) and y.name == "target"
    assert "target" not in X.columns


def test_unknown_name_lists_choices():
    with pytest.raises(DataError, match="unknown binarized table 'income'.*acs_income"):
        load_binarized("income")
    assert BINARIZED_NAMES == ("compas", "adult", "german", "acs_income")


# --- consistency errors (files edited in a private cache, digests re-registered) ---------------


def _private_copy(monkeypatch, tmp_path, edits: dict[str, str]):
    for name in ("compas_binerized.csv", "compas_binary.net.txt"):
        shutil.copy(SHARED_DATA / name, tmp_path / name)
    for name, text in edits.items():
        (tmp_path / name).write_text(text)
        monkeypatch.setitem(
            REGISTRY, name, dataclasses.replace(REGISTRY[name], sha256=file_sha256(tmp_path / name))
        )


@requires_shared
def test_net_name_without_column_is_a_clear_error(monkeypatch, tmp_path):
    net = (SHARED_DATA / "compas_binary.net.txt").read_text().replace("Sex 1", "Gender 1")
    _private_copy(monkeypatch, tmp_path, {"compas_binary.net.txt": net})
    with pytest.raises(DataError) as info:
        load_binarized("compas", data_home=tmp_path)
    message = str(info.value)
    assert "compas_binary.net.txt names variable(s) ['Gender']" in message
    assert "no column in compas_binerized.csv" in message
    assert "after stripping one trailing underscore" in message and "'Sex'" in message


@requires_shared
def test_unlisted_column_is_a_clear_error(monkeypatch, tmp_path):
    net = (SHARED_DATA / "compas_binary.net.txt").read_text().replace("Sex 1\n", "")
    _private_copy(monkeypatch, tmp_path, {"compas_binary.net.txt": net})
    with pytest.raises(
        DataError, match=r"column\(s\) \['Sex'\] of compas_binerized.csv are not listed"
    ):
        load_binarized("compas", data_home=tmp_path)


@requires_shared
def test_non_binary_value_is_a_clear_error(monkeypatch, tmp_path):
    lines = (SHARED_DATA / "compas_binerized.csv").read_text().splitlines()
    lines[1] = "0,1,0,2,0,1,1,0"
    _private_copy(monkeypatch, tmp_path, {"compas_binerized.csv": "\n".join(lines) + "\n"})
    with pytest.raises(DataError, match=r"column 'Ethnic_Code_Text' is not binary.*\[2\]"):
        load_binarized("compas", data_home=tmp_path)
