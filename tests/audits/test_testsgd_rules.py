"""Tests of TestSGD rules, rule sets, sensitive specs, term matching and mining (T1-T6)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pcfair.audits.testsgd import RuleSet
from pcfair.audits.testsgd.errors import RuleSetError
from pcfair.audits.testsgd.mining import (
    frequent_rule_sets,
    num_candidate_rule_sets,
    single_feature_rules,
)
from pcfair.audits.testsgd.rules import CategoricalRule, RangeRule, TermRule
from pcfair.audits.testsgd.specs import resolve_specs, SensitiveSpec
from pcfair.audits.testsgd.terms import DIXON_TERMS, TermMatcher
from pcfair.errors import DataError, PCFairError, SpecError, VariableError

AGE = SensitiveSpec.continuous("age", 0, 100, bins=10)


# ----------------------------------------------------------------------------- T1, T2
def test_categorical_rules_are_the_nonempty_proper_subsets():
    race = SensitiveSpec.categorical("race", list("ABCDE"))
    rules = single_feature_rules(race)
    assert len(rules) == 30 == 2**5 - 2
    sets = {frozenset(r.values) for r in rules}
    assert len(sets) == 30
    assert all(0 < len(s) < 5 for s in sets)
    gender = single_feature_rules(SensitiveSpec.categorical("gender", ["F", "M"]))
    assert [r.render() for r in gender] == ["gender=F", "gender=M"]


def test_single_valued_feature_gives_no_rule():
    assert single_feature_rules(SensitiveSpec.categorical("x", [1])) == []


def test_continuous_rules_are_contiguous_ranges():
    assert AGE.edges == tuple(float(e) for e in range(0, 101, 10))
    rules = single_feature_rules(AGE)
    assert len(rules) == 54
    assert len(single_feature_rules(AGE, include_full_range=True)) == 55
    assert all(isinstance(r, RangeRule) and r.first <= r.last for r in rules)
    assert not any(r.first == 0 and r.last == 9 for r in rules)


def test_range_rules_render_like_the_paper():
    e = AGE.edges
    assert RangeRule("age", 4, 7, e).render() == "40<=age<80"  # bins 5-8 (1-based)
    assert RangeRule("age", 4, 9, e).render() == "age>=40"  # bins 5-10
    assert RangeRule("age", 0, 7, e).render() == "age<80"  # bins 1-8
    assert RangeRule("age", 0, 9, e).render() == "0<=age<=100"


def test_value_100_falls_in_the_last_bin_and_edges_are_half_open():
    assert AGE.bin_index(np.array([100.0, 99.9, 90.0, 89.999, 0.0, 40.0])).tolist() == [9, 9, 9, 8, 0, 4]
    df = pd.DataFrame({"age": [100, 80, 79, 40, 39]})
    assert RangeRule("age", 4, 7, AGE.edges).mask(df).tolist() == [False, False, True, True, False]
    assert RangeRule("age", 9, 9, AGE.edges).mask(df).tolist() == [True, False, False, False, False]


def test_decimal_edges_are_rounded_so_round_values_sit_on_them():
    spec = SensitiveSpec.continuous("pct", 0, 1, bins=10)
    assert spec.edges[3] == 0.3
    assert spec.bin_index(np.array([0.3])).tolist() == [3]
    assert RangeRule("pct", 4, 9, spec.edges).render() == "pct>=0.4"


def test_singleton_modes():
    assert len(single_feature_rules(AGE, range_rules="singletons")) == 10
    race = SensitiveSpec.categorical("race", list("ABCDE"))
    assert len(single_feature_rules(race, categorical_rules="singletons")) == 5


def test_too_many_categorical_values_for_subsets_is_refused():
    spec = SensitiveSpec.categorical("country", [f"c{i}" for i in range(20)])
    with pytest.raises(SpecError, match="singletons"):
        single_feature_rules(spec)
    assert len(single_feature_rules(spec, categorical_rules="singletons")) == 20


def test_bad_rule_options_are_named():
    with pytest.raises(SpecError, match="categorical_rules='pairs'"):
        single_feature_rules(AGE, categorical_rules="pairs")


# ----------------------------------------------------------------------------- T3
def _paper_table() -> pd.DataFrame:
    return pd.DataFrame({
        "gender": ["M", "F"] * 5,
        "race": list("ABCDE") * 2,
        "age": np.arange(5, 100, 10),
    })


def test_paper_count_of_197_rule_sets():
    df = _paper_table()
    sens = {"gender": "categorical", "race": "categorical", "age": (0, 100)}
    out = frequent_rule_sets(df, sens, sup_thr=0.0, categorical_rules="singletons", range_rules="singletons")
    assert len(out) == 197
    assert out["size"].value_counts().sort_index().tolist() == [17, 80, 100]
    assert out.attrs["n_candidates"] == 197
    specs = resolve_specs(df, sens)
    assert num_candidate_rule_sets(specs, categorical_rules="singletons", range_rules="singletons") == 197


# ----------------------------------------------------------------------------- T4
def test_support_matches_hand_counts_on_a_ten_row_table():
    df = pd.DataFrame({
        "sex": ["F", "F", "F", "M", "M", "M", "M", "F", "M", "F"],
        "race": ["A", "B", "A", "A", "B", "C", "A", "C", "B", "A"],
    })
    F = CategoricalRule("sex", ("F",))
    A = CategoricalRule("race", ("A",))
    AB = CategoricalRule("race", ("A", "B"))
    assert RuleSet([F]).support(df) == 0.5
    assert RuleSet([F, A]).support(df) == 0.3  # rows 0, 2, 9
    assert RuleSet([F, AB]).support(df) == 0.4  # rows 0, 1, 2, 9
    out = frequent_rule_sets(df, ["sex", "race"], sup_thr=0.3)
    got = dict(zip(out["text"], out["count"]))
    assert got["sex=F, race=A"] == 3  # support == theta is frequent (inclusive)
    assert "sex=F, race=B" not in got  # 1 row
    assert got["race=A or B"] == 8
    assert all(n >= 1 for n in out["size"])  # the empty rule set is never returned
    assert (out["support"] >= 0.3).all()


def test_rule_set_equality_ignores_order_and_forbids_two_rules_on_a_feature():
    a, b = CategoricalRule("sex", ("F",)), CategoricalRule("race", ("C", "B"))
    assert RuleSet([a, b]) == RuleSet([b, a])
    assert hash(RuleSet([a, b])) == hash(RuleSet([b, a]))
    assert len({RuleSet([a, b]), RuleSet([b, a])}) == 1
    assert b.values == ("B", "C")
    with pytest.raises(RuleSetError, match="one rule per feature"):
        RuleSet([a, CategoricalRule("sex", ("M",))])
    with pytest.raises(RuleSetError, match="at least one rule"):
        RuleSet([])
    assert isinstance(RuleSetError("x"), PCFairError)


def test_extension_key_identifies_equal_row_sets():
    df = pd.DataFrame({"age": [20, 45, 65, 30], "sex": ["F", "F", "M", "F"]})
    spec = SensitiveSpec.continuous("age", 0, 100, 10)
    r1 = RuleSet([RangeRule("age", 4, 6, spec.edges)])
    r2 = RuleSet([RangeRule("age", 3, 6, spec.edges)])  # 30 is in 30<=age<70 too
    r3 = RuleSet([RangeRule("age", 4, 7, spec.edges)])
    assert r1.extension_key(df) != r2.extension_key(df)
    assert r1.extension_key(df) == r3.extension_key(df)


# ----------------------------------------------------------------------------- specs
def test_spec_inference_and_explicit_kinds():
    df = pd.DataFrame({"sex": ["F", "M"] * 10, "age": np.arange(20, 40), "code": [0, 1] * 10})
    specs = {s.name: s for s in resolve_specs(df, ["sex", "age", "code"])}
    assert specs["sex"].kind == "categorical" and specs["sex"].values == ("F", "M")
    assert specs["age"].kind == "continuous" and (specs["age"].lo, specs["age"].hi) == (20, 39)
    assert specs["code"].kind == "categorical"
    specs = resolve_specs(df, {"age": (0, 100), "code": "continuous"})
    assert specs[0].edges[1] == 10.0 and specs[1].kind == "continuous"
    with pytest.raises(VariableError, match="'income'"):
        resolve_specs(df, ["income"])
    with pytest.raises(SpecError, match="unknown kind 'ordinal'"):
        resolve_specs(df, {"age": "ordinal"})


def test_codes_reject_bad_values_with_the_column_named():
    df = pd.DataFrame({"age": [10, 120]})
    with pytest.raises(DataError, match="'age' has value 120 outside its domain"):
        AGE.codes(df)
    with pytest.raises(DataError, match="'race' has value 'Z'"):
        SensitiveSpec.categorical("race", ["A", "B"]).codes(pd.DataFrame({"race": ["A", "Z"]}))
    with pytest.raises(DataError, match="missing value"):
        AGE.codes(pd.DataFrame({"age": [1.0, np.nan]}))
    with pytest.raises(SpecError, match="lo < hi"):
        SensitiveSpec.continuous("age", 5, 5)


# ----------------------------------------------------------------------------- T5
def _naive_frequent(df: pd.DataFrame, specs, theta: float, per_rule: bool, options: dict) -> dict:
    """Algorithm 1 literally: the Cartesian product of "a rule or none", then the filter."""
    per_feature = []
    for spec in specs:
        rules = single_feature_rules(spec, **options)
        per_feature.append([None] + [(r, r.support_mask(df)) for r in rules])
    out = {}
    for combo in itertools.product(*per_feature):
        chosen = [c for c in combo if c is not None]
        if not chosen:
            continue
        mask = np.ones(len(df), dtype=bool)
        for _, m in chosen:
            mask &= m
        if per_rule:
            ok = all(m.mean() >= theta for _, m in chosen)
        else:
            ok = mask.mean() >= theta
        if ok:
            out[RuleSet([r for r, _ in chosen])] = int(mask.sum())
    return out


@st.composite
def small_tables(draw):
    n_feat = draw(st.integers(3, 4))
    n = draw(st.integers(20, 120))
    cols, sens = {}, {}
    for j in range(n_feat):
        name = f"s{j}"
        if draw(st.booleans()):
            k = draw(st.integers(2, 4))
            vals = draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
            cols[name] = [f"v{v}" for v in vals]
            sens[name] = "categorical"
        else:
            vals = draw(st.lists(st.integers(0, 10), min_size=n, max_size=n))
            cols[name] = vals
            sens[name] = SensitiveSpec.continuous(name, 0, 10, draw(st.integers(2, 4)))
    return pd.DataFrame(cols), sens


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    table=small_tables(),
    theta=st.sampled_from([0.01, 0.05, 0.2]),
    per_rule=st.booleans(),
    include_full_range=st.booleans(),
    singletons=st.booleans(),
)
def test_pruned_mining_equals_naive_enumeration(table, theta, per_rule, include_full_range, singletons):
    df, sens = table
    options = dict(
        include_full_range=include_full_range,
        categorical_rules="singletons" if singletons else "subsets",
        range_rules="singletons" if singletons else "contiguous",
    )
    specs = resolve_specs(df, sens)
    got = frequent_rule_sets(df, specs, sup_thr=theta, support_mode="per_rule" if per_rule else "conjunction", **options)
    expected = _naive_frequent(df, specs, theta, per_rule, options)
    assert dict(zip(got["rule_set"], got["count"])) == expected
    assert len(got) == len(expected)  # no duplicates
    assert np.allclose(got["support"], got["count"] / len(df))


# ----------------------------------------------------------------------------- T6
def test_terms_table_has_48_terms_in_four_categories():
    assert {k: len(v) for k, v in DIXON_TERMS.items()} == {"gender": 14, "race": 17, "religion": 9, "age": 8}


def test_term_matching_is_whole_word_case_insensitive_longest_first():
    race = TermMatcher(DIXON_TERMS["race"])
    assert race.find("An African  American met an American") == ["african american", "american"]
    gender = TermMatcher(DIXON_TERMS["gender"])
    assert gender.find("transport of the Trans flag") == ["trans"]
    assert gender.find("straightforward") == []
    age = TermMatcher(DIXON_TERMS["age"])
    assert age.find("a Middle Aged man, older than old") == ["middle aged", "older", "old"]


def test_text_support_is_category_level():
    texts = [
        "I am a lesbian and a muslim",
        "a gay sikh",
        "the African American woman",
        "transport is late",
        "GAY pride",
        "a christian",
    ]
    df = pd.DataFrame({"text": texts})
    g = DIXON_TERMS["gender"]
    r = DIXON_TERMS["religion"]
    gay = TermRule("gender", "gay", g, "text")
    assert gay.support_mask(df).tolist() == [True, True, False, False, True, False]  # lesbian counts
    assert gay.mask(df).tolist() == [False, True, False, False, True, False]
    aa = TermRule("race", "african american", DIXON_TERMS["race"], "text")
    assert aa.mask(df).tolist() == [False, False, True, False, False, False]
    s1 = RuleSet([gay, TermRule("religion", "muslim", r, "text")]).support(df)
    s2 = RuleSet([TermRule("gender", "queer", g, "text"), TermRule("religion", "sikh", r, "text")]).support(df)
    assert s1 == s2 == 2 / 6
    out = frequent_rule_sets(df, ["gender", "religion"], text_column="text", sup_thr=0.3)
    assert len(out) == 14 + 9 + 14 * 9  # all of them: each category and the pair reach 2/6
    assert out.loc[out["text"] == '"gay", "muslim"', "count"].item() == 2


def test_term_rule_must_belong_to_its_category():
    with pytest.raises(RuleSetError, match="not in category"):
        TermRule("gender", "muslim", DIXON_TERMS["gender"], "text")
    with pytest.raises(VariableError, match="unknown term category 'caste'"):
        resolve_specs(pd.DataFrame({"text": ["a"]}), ["caste"], text_column="text")
