"""The recipe a learned model carries (pcfair.tables.recipe): made, stored, applied, fuzzed."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pcfair
from pcfair.errors import DataError, FormatError, OptionError
from pcfair.learn import learn_pc
from pcfair.tables.recipe import Recipe, fit_recipe, model_evidence, model_frame
from pcfair.patterns.support import count_rows, rare_below


def _raw(n=400, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "age": rng.integers(18, 80, n),
        "sex": rng.choice([" Female", " Male"], n),
        "gain": rng.choice([0, 0, 0, 5], n) * 0 + 7,  # one value: dropped
        "hours": np.where(rng.random(n) < 0.97, 40, rng.integers(41, 99, n)),
        "income": rng.choice([" <=50K", " >50K"], n),
    })


def test_fit_recipe_trims_bins_and_drops():
    frame, recipe, trimmed = fit_recipe(_raw(), "income", bins=4, favorable=">50K")
    assert trimmed == ["sex", "income"]
    assert set(frame["sex"]) == {"Female", "Male"}
    assert set(recipe.bins) == {"age"}  # hours: at most 20 values, so categorical
    assert set(recipe.dropped) == {"gain"} and list(frame.columns) == ["age", "sex", "hours",
                                                                      "income"]
    assert (recipe.decision, recipe.favorable, recipe.rows) == ("income", ">50K", 400)
    assert recipe.columns == ("age", "sex", "gain", "hours", "income")


def test_a_column_binned_into_one_bin_is_dropped():
    raw = pd.DataFrame({"d": [0, 1] * 50, "y": [i * 1.5 for i in range(100)]})
    frame, recipe, _ = fit_recipe(raw, "d", bins=1)
    assert dict(recipe.dropped) == {"y": "constant: '[0, 148.5]' in every row"}
    assert not recipe.bins and list(frame.columns) == ["d"]


@pytest.mark.parametrize("decision,message", [("sex", None), ("hours", "not 2")])
def test_fit_recipe_checks_the_decision(decision, message):
    raw = _raw()
    raw["hours"] = raw["hours"] % 3
    if message is None:
        fit_recipe(raw, decision, bins=2)
    else:
        with pytest.raises(DataError, match=message):
            fit_recipe(raw, decision, bins=2)


def test_an_unknown_favourable_value_is_refused():
    with pytest.raises(pcfair.errors.VariableError, match="is not a value of the decision"):
        fit_recipe(_raw(), "income", bins=2, favorable="rich")


def _model():
    frame, recipe, _ = fit_recipe(_raw(), "income", bins=3, favorable=">50K")
    return learn_pc(frame, "income").with_recipe(recipe)


def test_apply_reads_raw_rows_and_is_idempotent():
    pc = _model()
    raw = pd.DataFrame({"age": [18, 79, 45], "sex": [" Male", "Female ", "Male"],
                        "gain": [1, 2, 3], "hours": [40, 40, 40],
                        "income": [" >50K", "<=50K", "<=50K"]})
    once = model_frame(pc, raw)
    assert once["age"].tolist() == [pc.variables.domains[pc.variables.index("age")][0],
                                    pc.variables.domains[pc.variables.index("age")][-1],
                                    once["age"][2]]
    assert once["sex"].tolist() == ["Male", "Female", "Male"]
    twice = model_frame(pc, once)
    pd.testing.assert_frame_equal(once, twice)
    assert np.all(pc.variables.evidence_matrix(once[list(pc.variables.names)]) >= 0)


def test_unknown_values_are_an_error_or_missing():
    pc = _model()
    raw = pd.DataFrame({"age": ["unknown", 30], "sex": ["Other", "Male"]})
    with pytest.raises(DataError, match="column 'age' was binned .* non-number 'unknown'"):
        model_frame(pc, raw)
    with pytest.raises(DataError, match="column 'sex' has value 'Other', not seen"):
        model_frame(pc, raw.assign(age=[20, 30]))
    out = model_frame(pc, raw, unknown="missing")
    assert out["age"].isna().tolist() == [True, False]
    assert out["sex"].isna().tolist() == [True, False]
    with pytest.raises(OptionError):
        model_frame(pc, raw, unknown="ignore")


@pytest.mark.parametrize("value", [200, 17.5, -1e9])
def test_a_number_outside_the_training_range_is_unknown(value):
    """Issue 36: not the edge bin. An error naming the column, the value and the range, or
    (``unknown="missing"``) an unobserved cell; the edges themselves stay in range."""
    pc = _model()
    lo, hi = pc.recipe.bins["age"][0], pc.recipe.bins["age"][-1]
    raw = pd.DataFrame({"age": [value, lo, hi], "sex": ["Male"] * 3})
    with pytest.raises(DataError, match=rf"column 'age' holds {float(value)!r}, outside the range "
                                        rf"the model was learned on \[{lo:g}, {hi:g}\] \(1 "):
        model_frame(pc, raw)
    out = model_frame(pc, raw, unknown="missing")
    assert out["age"].isna().tolist() == [True, False, False]
    with pytest.raises(DataError, match="outside the range"):
        model_evidence(pc, {"age": str(value)})
    assert model_evidence(pc, {"age": str(value)}, unknown="missing") == {}


def test_evidence_from_the_command_line():
    pc = _model()
    ev = model_evidence(pc, {"age": "79", "sex": " Female"})
    assert ev == {"age": pc.variables.domains[pc.variables.index("age")][-1], "sex": "Female"}
    assert model_evidence(pc, {"sex": "Other"}, unknown="missing") == {}


def test_the_recipe_survives_json_and_psdd(tmp_path):
    pc = _model()
    pcfair.save(pc, tmp_path / "m.json")
    back = pcfair.load(tmp_path / "m.json")
    assert back.recipe == pc.recipe
    assert json.loads((tmp_path / "m.json").read_text())["recipe"]["favorable"] == ">50K"
    binary = learn_pc(pd.DataFrame({"d": [0, 1, 1, 0] * 10, "s": [0, 1, 0, 1] * 10}), "d")
    pcfair.save(binary, tmp_path / "b.psdd")
    assert (tmp_path / "b.recipe.json").is_file()
    loaded = pcfair.load(tmp_path / "b.psdd")
    assert loaded.recipe == binary.recipe
    # the format numbers the variables; the recipe's columns name them again, in order
    assert list(loaded.variables.names) == ["d", "s"]
    ev = {"d": 1, "s": 0}
    assert float(loaded.probability(ev)) == pytest.approx(float(binary.probability(ev)))
    pcfair.save(binary.with_recipe(None), tmp_path / "b.psdd")  # no stale sidecar
    assert not (tmp_path / "b.recipe.json").exists()
    assert pcfair.load(tmp_path / "b.psdd").recipe is None


def test_parameters_and_vtree_keep_the_recipe():
    pc = _model()
    assert pc.with_parameters(pc.edge_logw).recipe is pc.recipe
    assert pc.with_vtree(pc.vtree).recipe is pc.recipe


def test_row_counts_and_find_patterns_read_raw_rows():
    raw = _raw()  # the training rows, raw
    pc = _model()
    ps = pcfair.find_patterns(pc, "income", ["sex"], 0.0, kind="topk", k=3, data=raw)
    frame = model_frame(pc, raw)
    for p in ps.patterns:
        mask = np.ones(len(frame), bool)
        for k, v in {**p.x, **p.y}.items():
            mask &= (frame[k].astype(object) == v).to_numpy()
        assert p.rows == int(mask.sum())
    assert count_rows(pc, ps.patterns, raw).tolist() == [p.rows for p in ps.patterns]
    assert rare_below(pc) == pytest.approx(1 / 400)


def test_the_favourable_value_comes_from_the_recipe():
    pc = _model()
    assert pcfair.certify(pc, "income", ["sex"], 0.9).favorable == ">50K"
    with pytest.raises(OptionError, match="name the favourable value"):
        pcfair.certify(pc.with_recipe(None), "income", ["sex"], 0.9)


def test_the_classifier_bins_by_its_recipe():
    raw = _raw()
    X, y = raw.drop(columns=["income", "gain"]), raw["income"].str.strip()
    X["sex"] = X["sex"].str.strip()
    clf = pcfair.PCClassifier(bins=3, handle_unknown="error").fit(X, y)
    assert set(clf.circuit_.recipe.bins) == {"age"}
    new = pd.DataFrame({"age": [200, 18], "sex": ["Male", "Other"], "hours": [40, 40]})
    with pytest.raises(DataError, match=r"column 'age' holds 200, outside the range .*\[18, 79\]"):
        clf.predict_proba(new)
    with pytest.raises(DataError, match="column 'sex' has value 'Other'"):
        clf.predict_proba(new.assign(age=[30, 18]))
    clf.set_params(handle_unknown="missing")
    with pytest.warns(pcfair.UnknownValueWarning, match="column 'age' holds 200"):
        proba = clf.predict_proba(new)
    assert proba.shape == (2, 2) and np.allclose(proba.sum(axis=1), 1)


_VALID = Recipe(columns=("a", "b", "d"), header=False, strip=True, bins={"a": (0.0, 1.0, 2.0)},
                dropped={"b": "constant: 1 in every row"}, decision="d", favorable="yes",
                rows=10).to_dict()


def test_from_dict_round_trips():
    assert Recipe.from_dict(_VALID).to_dict() == _VALID


_JUNK = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=4),
                     lambda kids: st.lists(kids, max_size=3)
                     | st.dictionaries(st.text(max_size=3), kids, max_size=3), max_leaves=6)


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(sorted(_VALID) + ["extra"]), value=_JUNK)
def test_from_dict_fuzz_fails_only_with_format_errors(key, value):
    data = {**_VALID, key: value}
    try:
        recipe = Recipe.from_dict(data)
    except FormatError:
        return
    assert Recipe.from_dict(recipe.to_dict()) == recipe  # what loads, round-trips


def test_a_bad_recipe_in_a_model_file_is_a_format_error(tmp_path):
    pc = _model()
    pcfair.save(pc, tmp_path / "m.json")
    data = json.loads((tmp_path / "m.json").read_text())
    data["recipe"]["bins"] = {"nope": [0, 1]}
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(FormatError, match="not variables"):
        pcfair.load(tmp_path / "bad.json")
    data["recipe"]["bins"] = {"age": [2, 1]}
    (tmp_path / "bad.json").write_text(json.dumps(data))
    with pytest.raises(FormatError, match="non-decreasing"):
        pcfair.load(tmp_path / "bad.json")


def test_an_audited_circuit_reads_raw_rows_by_its_recipe():
    from pcfair.audits import as_model

    pc = _model()
    raw = pd.DataFrame({"age": [25, 64], "sex": [" Female", "Male "], "hours": [40, 40]})
    proba = as_model(pc, outcome="income", favorable=">50K").proba(raw)
    assert proba.shape == (2,) and np.all((0 < proba) & (proba < 1))
    odd = raw.assign(hours=[40, 12345])  # a category the model never saw
    with pytest.raises(DataError, match="column 'hours' has value 12345"):
        as_model(pc, outcome="income", favorable=">50K").proba(odd)
    missing = as_model(pc, outcome="income", favorable=">50K", unknown="missing").proba(odd)
    assert missing[0] == pytest.approx(proba[0])


def test_fair_learning_keeps_a_given_structures_recipe():
    from pcfair.learn.fair import learn_fair_pc

    pc = _model()  # its recipe bins age
    frame = model_frame(pc, _raw())[list(pc.variables.names)]
    res = learn_fair_pc(frame, "income", ["sex"], 0.3, structure=pc, max_iter=2)
    assert res.circuit.recipe.bins == pc.recipe.bins
    assert res.circuit.recipe.favorable == ">50K" and res.circuit.recipe.rows == 400


def _with_placeholder(n=500, seed=0, text="unknown", share=0.2) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(18, 75, n).astype(object)
    age[rng.random(n) < share] = text
    return pd.DataFrame({"age": [str(a) for a in age], "sex": rng.choice(["m", "f"], n),
                         "d": rng.choice(["no", "yes"], n)})


def test_a_numeric_column_with_a_text_placeholder_is_binned_and_keeps_it():
    """Issue 36: 'unknown' in a fifth of the ages: not 58 text categories, but 4 bins and
    'unknown' as a value of its own (said by a warning); refused without bins."""
    raw = _with_placeholder()
    with pytest.raises(DataError, match=r"column 'age' holds numbers and the text "
                                        r"\['unknown'\] \(\d+% of rows\): .*bins=N"):
        fit_recipe(raw, "d")
    with pytest.warns(pcfair.PCFairWarning, match="'age' holds numbers and the text"):
        frame, recipe, _ = fit_recipe(raw, "d", bins=4)
    assert recipe.placeholders == {"age": ("unknown",)} and len(recipe.bins["age"]) == 5
    assert list(frame["age"].cat.categories)[-1] == "unknown"
    assert frame["age"].nunique() == 5
    pc = learn_pc(frame, "d").with_recipe(recipe)
    back = Recipe.from_dict(json.loads(json.dumps(recipe.to_dict())))
    assert back == recipe
    read = model_frame(pc, raw)
    assert (read["age"].astype(str) == frame["age"].astype(str)).all()
    assert model_evidence(pc, {"age": "unknown"}) == {"age": "unknown"}
    assert model_evidence(pc, {"age": "30"})["age"].startswith("[")
    assert any("'unknown' kept as a value of its own" in line for line in recipe.describe())
    with pytest.raises(DataError, match="non-number 'n/a'"):
        model_frame(pc, raw.assign(age=["n/a"] * len(raw)))


@pytest.mark.parametrize("values", [
    ["1", "2", "3", "none"] * 10,                           # few numbers: categorical
    [str(i) for i in range(30)] + list("abcdefghij"),       # too many texts
    [str(i) for i in range(30)] + ["x"] * 40,               # texts are the majority
])
def test_columns_that_are_not_numbers_with_placeholders_are_left_alone(values):
    from pcfair.tables.data import numeric_placeholders

    assert numeric_placeholders(pd.Series(values)) == ()


def _with_gaps(n=300, seed=0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    job = rng.choice(["a", "b", "c"], n).astype(object)
    job[rng.random(n) < 0.3] = None
    return pd.DataFrame({"Unnamed: 0": np.arange(n), "sex": rng.choice(["m", "f"], n),
                         "job": job, "d": rng.choice(["no", "yes"], n)})


def test_missing_cells_are_refused_with_the_count_or_dropped_or_a_value():
    """Issue 36: the refusal counts the rows and names the ways out; ``missing="drop"`` drops
    those rows; ``"category"`` learns '(missing)' and reads later missing cells as it."""
    raw = _with_gaps().drop(columns=["Unnamed: 0"])
    gaps = int(raw["job"].isna().sum())
    with pytest.raises(DataError, match=rf"\['job'\] \({gaps:,} of 300 rows\).*--missing "):
        learn_pc(fit_recipe(raw, "d")[0], "d")
    frame, recipe, _ = fit_recipe(raw, "d", missing="drop")
    assert len(frame) == 300 - gaps and recipe.rows == 300 - gaps and not recipe.missing_as
    frame, recipe, _ = fit_recipe(raw, "d", missing="category")
    assert recipe.missing_as == {"job": "(missing)"} and len(frame) == 300
    assert (frame["job"] == "(missing)").sum() == gaps
    pc = learn_pc(frame, "d").with_recipe(recipe)
    assert Recipe.from_dict(json.loads(json.dumps(recipe.to_dict()))) == recipe
    read = model_frame(pc, pd.DataFrame({"sex": ["m"], "job": [None]}))
    assert read["job"].tolist() == ["(missing)"]
    with pytest.raises(OptionError, match="missing= must be one of"):
        fit_recipe(raw, "d", missing="impute")


def test_an_index_column_is_warned_about_and_can_be_dropped():
    raw = _with_gaps()
    with pytest.warns(pcfair.PCFairWarning, match="'Unnamed: 0' looks like a row index"):
        fit_recipe(raw, "d", missing="drop", bins=3)
    raw2 = raw.rename(columns={"Unnamed: 0": "passenger_id"})
    with pytest.warns(pcfair.PCFairWarning, match="'passenger_id' looks like a row index"):
        fit_recipe(raw2, "d", missing="drop", bins=3)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frame, recipe, _ = fit_recipe(raw2, "d", missing="drop", drop=["passenger_id"])
    assert "passenger_id" not in frame.columns
    assert recipe.dropped["passenger_id"] == "left out when learning (drop)"
    pc = learn_pc(frame, "d").with_recipe(recipe)
    assert "passenger_id" in model_frame(pc, raw2).columns  # kept aside, never read
    with pytest.raises(DataError, match="cannot drop \\['nope'\\]: not in the data"):
        fit_recipe(raw2, "d", drop=["nope"])
    with pytest.raises(DataError, match="it is the decision"):
        fit_recipe(raw2, "d", drop=["d"])


@pytest.mark.parametrize("outcomes,favorable", [(["promoted", "stayed", "left"], "promoted"),
                                                ([0, 1, 2], 2), ([0, 1, 2], "2")])
def test_a_multi_valued_decision_is_the_favourable_value_against_the_rest(outcomes, favorable):
    """Issue 36: ``favorable=V`` on a 3-valued decision learns V against the rest, recorded so
    that every later table (its raw decision column too) is read the same way."""
    rng = np.random.default_rng(0)
    n = 400
    raw = pd.DataFrame({"sex": rng.choice(["m", "f"], n),
                        "outcome": rng.choice(np.array(outcomes, dtype=object), n)})
    with pytest.raises(DataError, match="not 2: .*favorable=V, to learn it against the rest"):
        fit_recipe(raw, "outcome")
    frame, recipe, _ = fit_recipe(raw, "outcome", favorable=favorable)
    fav = str(outcomes[-1] if favorable in (2, "2") else favorable)
    assert recipe.rest == f"not {fav}" and recipe.favorable == fav
    assert set(frame["outcome"]) == {fav, f"not {fav}"}
    assert (frame["outcome"] == fav).sum() == (raw["outcome"].astype(str) == fav).sum()
    pc = learn_pc(frame, "outcome").with_recipe(recipe)
    assert Recipe.from_dict(json.loads(json.dumps(recipe.to_dict()))) == recipe
    read = model_frame(pc, raw)
    assert read["outcome"].tolist() == frame["outcome"].tolist()
    assert model_frame(pc, read)["outcome"].tolist() == frame["outcome"].tolist()
    cert = pcfair.certify(pc, "outcome", ["sex"], 0.01, data=raw)
    assert cert.favorable == fav
    with pytest.raises(pcfair.errors.VariableError, match="is not a value of the decision"):
        fit_recipe(raw, "outcome", favorable="fired")
