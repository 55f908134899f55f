"""Tests of load_binarized and the .net.txt reader."""

from __future__ import annotations

import dataclasses
import shutil
import urllib.error
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SHARED_DATA, requires_data

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


@requires_data()
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


@requires_data()
@pytest.mark.parametrize(
    ("name", "shape", "target", "sensitive"),
    [
        ("compas", (48834, 8), "ScoreText_",
         ["Ethnic_Code_Text_", "MaritalStatus_", "Sex_", "Age"]),
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
    csv = {"acs_income": "ACS_Income_binerized.csv"}.get(name, f"{name}_binerized.csv")
    raw = SHARED_DATA / csv
    assert list(ds.frame.columns) == list(pd.read_csv(raw, nrows=0).columns)  # as in the CSV
    assert (ds.frame.dtypes == np.int8).all()
    assert set(np.unique(ds.frame.to_numpy())) == {0, 1}
    assert ds.source.startswith("https://raw.githubusercontent.com/UCLA-StarAI/")


@requires_data()
def test_compas_keeps_the_csv_headers_matched_to_net_names_without_one_underscore():
    """The names of the upstream CSV and of the shipped circuits; the .net.txt names (no
    trailing underscore) are matched after stripping one."""
    ds = load_binarized("compas")
    assert list(ds.frame.columns) == [
        "CustodyStatus_",
        "LegalStatus_",
        "RecSupervisionLevel_",
        "Ethnic_Code_Text_",
        "MaritalStatus_",
        "Age",
        "ScoreText_",
        "Sex_",
    ]
    raw = pd.read_csv(SHARED_DATA / "compas_binerized.csv")
    np.testing.assert_array_equal(ds.frame.to_numpy(), raw.to_numpy())
    net = read_net_file(SHARED_DATA / "compas_binary.net.txt")
    assert [s + ("" if s == "Age" else "_") for s in net.sensitive] == ds.sensitive


@requires_data()
def test_shipped_circuits_use_the_names_of_load_binarized():
    import pcfair

    circuits = Path(__file__).resolve().parents[2] / "circuits"
    for name in BINARIZED_NAMES:
        ds = load_binarized(name)
        for structure in ("clt", "strudel"):
            pc = pcfair.load(circuits / f"{name}_{structure}.json")
            assert list(pc.variables.names) == list(ds.frame.columns)
            labels = [ds.value_labels.get(c, (0, 1)) for c in ds.frame.columns]
            labels[ds.frame.columns.get_loc(ds.target)] = (0, 1)
            assert [tuple(d) for d in pc.variables.domains] == [tuple(x) for x in labels]


@requires_data()
def test_known_values_and_rates():
    compas = load_binarized("compas").frame
    assert compas.iloc[0].tolist() == [0, 1, 0, 1, 0, 1, 1, 0]  # first CSV row
    german = load_binarized("german").frame
    assert int(german["loan_status"].sum()) == 700  # 700 good / 300 bad credit risks
    acs = load_binarized("acs_income").frame
    assert acs.iloc[0].tolist() == [1, 0, 0, 1, 0, 1, 1, 0, 0]


@requires_data()
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


@requires_data()
def test_net_name_without_column_is_a_clear_error(monkeypatch, tmp_path):
    net = (SHARED_DATA / "compas_binary.net.txt").read_text().replace("Sex 1", "Gender 1")
    _private_copy(monkeypatch, tmp_path, {"compas_binary.net.txt": net})
    with pytest.raises(DataError) as info:
        load_binarized("compas", data_home=tmp_path)
    message = str(info.value)
    assert "compas_binary.net.txt names variable(s) ['Gender']" in message
    assert "no column in compas_binerized.csv" in message
    assert "after stripping one trailing underscore" in message and "'Sex'" in message


@requires_data()
def test_unlisted_column_is_a_clear_error(monkeypatch, tmp_path):
    net = (SHARED_DATA / "compas_binary.net.txt").read_text().replace("Sex 1\n", "")
    _private_copy(monkeypatch, tmp_path, {"compas_binary.net.txt": net})
    with pytest.raises(
        DataError, match=r"column\(s\) \['Sex_'\] of compas_binerized.csv are not listed"
    ):
        load_binarized("compas", data_home=tmp_path)


@requires_data()
def test_non_binary_value_is_a_clear_error(monkeypatch, tmp_path):
    lines = (SHARED_DATA / "compas_binerized.csv").read_text().splitlines()
    lines[1] = "0,1,0,2,0,1,1,0"
    _private_copy(monkeypatch, tmp_path, {"compas_binerized.csv": "\n".join(lines) + "\n"})
    with pytest.raises(DataError, match=r"column 'Ethnic_Code_Text_' is not binary.*\[2\]"):
        load_binarized("compas", data_home=tmp_path)


# --- value labels -----------------------------------------------------------------------------


def test_value_labels_cover_every_recipe_column_and_are_unambiguous():
    from pcfair.datasets import preprocessing as pre

    assert set(pre.ADULT_BINARIZED_MEANINGS) == set(pre.ADULT_RULES)
    assert set(pre.GERMAN_BINARIZED_MEANINGS) == set(pre.GERMAN_RULES)
    for meanings in (pre.COMPAS_BINARIZED_MEANINGS, pre.ADULT_BINARIZED_MEANINGS,
                     pre.GERMAN_BINARIZED_MEANINGS):
        for column, labels in pre.value_labels(meanings).items():
            assert len(labels) == 2 and len(set(labels)) == 2, column
            assert sorted(labels) == list(labels), column  # code order is sorted order
            for code, label in enumerate(labels):
                assert label.startswith(f"{code} (") and label.endswith(")"), label
                assert not set(label) & set(",|="), label  # pattern text and --evidence split
    with pytest.raises(DataError, match="holds ','"):
        pre.value_labels({"x": ("a, b", "c")})


@requires_data()
@pytest.mark.parametrize("name", ["compas", "adult", "german"])
def test_labels_true_keeps_the_codes_and_the_decision(name):
    codes = load_binarized(name)
    ds = load_binarized(name, labels=True)
    assert set(ds.value_labels) == set(ds.frame.columns)
    assert ds.frame[ds.target].dtype == np.int8 and ds.favorable == 1
    for column in ds.feature_names:
        series = ds.frame[column]
        assert series.cat.ordered and tuple(series.cat.categories) == ds.value_labels[column]
        np.testing.assert_array_equal(series.cat.codes.to_numpy(), codes.frame[column].to_numpy())


@requires_data()
def test_acs_income_has_no_labels():
    ds = load_binarized("acs_income", labels=True)
    assert ds.value_labels == {} and (ds.frame.dtypes == np.int8).all()


@requires_data()
def test_adult_labels_say_what_the_raw_values_were():
    from pcfair.datasets import fetch_adult

    raw = fetch_adult().frame
    ds = fetch_adult(preprocess="binarize")
    assert ds.value_labels == load_binarized("adult").value_labels
    labels = ds.value_labels
    sex = np.array(labels["sex"])[ds.frame["sex"].to_numpy()]
    assert set(sex[(raw["sex"] == "Female").to_numpy()]) == {"1 (Female)"}
    assert set(sex[(raw["sex"] == "Male").to_numpy()]) == {"0 (Male)"}
    race = np.array(labels["race"])[ds.frame["race"].to_numpy()]
    assert set(race[(raw["race"] == "White").to_numpy()]) == {"1 (White)"}
    assert set(race[(raw["race"] != "White").to_numpy()]) == {"0 (not White)"}


@requires_data()
def test_module_command_writes_the_labelled_table(tmp_path, capsys):
    from pcfair.datasets.__main__ import main

    out = tmp_path / "compas.csv"
    assert main(["compas", "--labels", "--out", str(out), "--data-home", str(SHARED_DATA)]) == 0
    frame = pd.read_csv(out)
    assert list(frame.columns) == list(load_binarized("compas").frame.columns)
    assert set(frame["Sex_"]) == {"0 (Male)", "1 (Female)"} and set(frame["ScoreText_"]) == {0, 1}
    assert main(["compas", "--data-home", str(tmp_path / "empty"), "--no-download"]) == 2
    assert "compas_binerized.csv" in capsys.readouterr().err
