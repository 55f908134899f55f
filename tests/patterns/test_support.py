"""Row counts of patterns in a data set (pcfair.patterns.support), through the API and CLI."""

import json

import pandas as pd
import pytest
from hypothesis import given, settings, strategies as st

import pcfair
from pcfair.circuit import CircuitBuilder
from pcfair.cli import main
from pcfair.errors import DataError, VariableError
from pcfair.patterns.api import Pattern
from pcfair.patterns.support import count_rows


def _model():
    b = CircuitBuilder({"d": [0, 1], "sex": ["F", "M"], "age": ["young", "old"]})
    root = b.decision([
        (b.indicator("d", 1), b.product(b.categorical("sex", [0.3, 0.7]),
                                        b.categorical("age", [0.6, 0.4])), 0.5),
        (b.indicator("d", 0), b.product(b.categorical("sex", [0.6, 0.4]),
                                        b.categorical("age", [0.3, 0.7])), 0.5)])
    return b.build(root)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["F", "M", None]), st.sampled_from(["young", "old"])),
                min_size=0, max_size=30),
       st.sampled_from([{}, {"sex": "F"}, {"sex": "M"}]),
       st.sampled_from([{}, {"age": "young"}, {"age": "old"}]))
def test_counts_match_a_row_by_row_check(rows, x, y):
    pc = _model()
    df = pd.DataFrame(rows, columns=["sex", "age"])
    p = Pattern(x=x, y=y, score=0.1, probability=0.1, divergence=0.0)
    expected = sum(all(r[k] == v for k, v in {**x, **y}.items())
                   for r in df.to_dict("records"))
    assert count_rows(pc, [p], df).tolist() == [expected]


def test_codes_in_a_binarized_table_match_labelled_values():
    pc = _model()
    df = pd.DataFrame({"sex": [0, 0, 1], "age": [0, 1, 0]})   # codes of F/M and young/old
    p = Pattern(x={"sex": "F"}, y={"age": "young"}, score=0.1, probability=0.1, divergence=0.0)
    assert count_rows(pc, [p], df).tolist() == [1]


def test_missing_column_and_unknown_value_are_clear_errors():
    pc = _model()
    p = Pattern(x={"sex": "F"}, y={"age": "young"}, score=0.1, probability=0.1, divergence=0.0)
    with pytest.raises(DataError, match="no column for \\['age'\\]"):
        count_rows(pc, [p], pd.DataFrame({"sex": ["F"]}))
    with pytest.raises(VariableError, match="unknown value 'X'"):
        count_rows(pc, [p], pd.DataFrame({"sex": ["X"], "age": ["young"]}))


def test_certify_and_find_patterns_carry_row_counts():
    pc = _model()
    df = pd.DataFrame({"d": [1, 0, 1, 1], "sex": ["F", "F", "M", "F"],
                       "age": ["young", "young", "old", "old"]})
    cert = pcfair.certify(pc, "d", ["sex"], 0.05, data=df)
    w = cert.witness
    assert cert.fair is False and w.rows == count_rows(pc, [w], df)[0]
    assert cert.to_dict()["witness"]["rows"] == w.rows
    top = pcfair.find_patterns(pc, "d", ["sex"], 0.05, kind="topk", k=3, data=df)
    frame = top.to_frame()
    assert "rows" in frame.columns
    assert frame["rows"].tolist() == count_rows(pc, top.patterns, df).tolist()
    assert "rows" not in pcfair.find_patterns(pc, "d", ["sex"], 0.05).to_frame().columns


def test_cli_prints_row_counts_and_keeps_na_strings(tmp_path, capsys):
    pc = _model()
    model = tmp_path / "m.json"
    pcfair.save(pc, model)
    data = tmp_path / "d.csv"
    data.write_text("d,sex,age\n1,F,young\n0,F,young\n1,M,old\n")
    code = main(["certify", str(model), "--decision", "d", "--sensitive", "sex",
                 "--delta", "0.05", "--data", str(data)])
    out = capsys.readouterr().out
    assert code == 1 and "row(s) of" in out
    code = main(["patterns", str(model), "--decision", "d", "--sensitive", "sex",
                 "--delta", "0.05", "--kind", "topk", "--k", "2", "--data", str(data),
                 "--format", "json"])
    got = json.loads(capsys.readouterr().out)
    assert code == 0 and all("rows" in p for p in got["patterns"])
    # a category spelled NA stays a category (only empty cells are missing)
    b = CircuitBuilder({"d": [0, 1], "g": ["NA", "B"]})
    pc2 = b.build(b.decision([(b.indicator("d", 1), b.categorical("g", [0.2, 0.8]), 0.5),
                              (b.indicator("d", 0), b.categorical("g", [0.7, 0.3]), 0.5)]))
    model2 = tmp_path / "m2.json"
    pcfair.save(pc2, model2)
    data2 = tmp_path / "d2.csv"
    data2.write_text("d,g\n1,NA\n0,NA\n1,B\n")
    code = main(["certify", str(model2), "--decision", "d", "--sensitive", "g",
                 "--delta", "0.05", "--data", str(data2), "--format", "json"])
    w = json.loads(capsys.readouterr().out)["witness"]
    assert code == 1 and w["rows"] == (2 if w["x"]["g"] == "NA" else 1)


def test_report_shows_row_counts():
    pc = _model()
    df = pd.DataFrame({"d": [1, 0, 1, 1], "sex": ["F", "F", "M", "F"],
                       "age": ["young", "young", "old", "old"]})
    md = pcfair.report(pc, "d", ["sex"], 0.05, format="markdown", data=df)
    assert "witness rows in the data" in md
    assert "| P(x, y) | rows | divergence |" in md
