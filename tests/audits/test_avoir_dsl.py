"""Tests of pcfair.audits.avoir.ast: the builder, the text parser and leaf bookkeeping
(spec §6 G)."""

from __future__ import annotations

import ast
import builtins

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcfair.audits.avoir import E, Monitor, parse_spec, SpecSyntaxError, Var
from pcfair.audits.avoir.ast import parse_expression, parse_term
from pcfair.audits.avoir.bounds import adaptive_hoeffding_epsilon
from pcfair.errors import DataError, SpecError, VariableError

r, sex, race, x = Var("r"), Var("sex"), Var("race"), Var("x")


def test_text_form_parses_to_the_builder_tree():
    text = "E[r | sex==M] - E[r | sex==F] < 0.5 & E[r | race==W] - E[r | race!=W] < 0.5"
    built = ((E(r, given=sex == "M") - E(r, given=sex == "F") < 0.5)
             & (E(r, given=race == "W") - E(r, given=race != "W") < 0.5))
    assert parse_spec(text).same_as(built)


def test_issue_example_and_paper_spellings():
    built = E(Var("y_hat"), given=sex == "M") / E(Var("y_hat"), given=sex == "F") > 0.8
    assert parse_spec('E[y_hat | sex = "M"] / E[y_hat | sex = "F"] > 0.8').same_as(built)
    assert parse_spec("E[y_hat, given = sex == 'M'] / E[y_hat | sex=F] > 0.8").same_as(built)
    compas = parse_spec("E[hrisk | race=African-American & recid=0] / "
                        "E[hrisk | race=Caucasian & recid=0] < 1.1")
    leaf = compas.leaves()[0]
    assert leaf.given.same_as((race == "African-American") & (Var("recid") == 0))
    unicode = parse_spec("(E[r | s = 1] − E[r | s ≠ 1] > 0.1) ∧ (E[r] > 0.2) ∨ (E[r] < 0.9)")
    words = parse_spec("(E[r | s == 1] - E[r | s != 1] > 0.1) and (E[r] > 0.2) or (E[r] < 0.9)")
    assert unicode.same_as(words)


def test_conditions_with_commas_bare_flags_and_negation():
    spec = parse_spec("E[!r | y, s] - E[!r | y, !s] < 0.1")
    first, second = spec.leaves()
    assert first.expr.same_as(~r)
    assert first.given.same_as(Var("y") & Var("s"))
    assert second.given.same_as(Var("y") & ~Var("s"))


def test_constants_on_the_left_flip_the_comparison():
    assert parse_spec("0.8 < E[r]").same_as(E(r) > 0.8)
    assert (0.8 < E(r)).same_as(E(r) > 0.8)


def test_arithmetic_over_expectations_and_precedence():
    spec = parse_spec("2 * E[a] - E[b] / E[c] + 1 > 0")
    built = 2 * E(Var("a")) - E(Var("b")) / E(Var("c")) + 1 > 0
    assert spec.same_as(built)
    assert parse_spec("-E[a] > -1").same_as(-E(Var("a")) > -1)
    assert parse_term("E[a] - (E[b] - E[c])").same_as(E(Var("a")) - (E(Var("b")) - E(Var("c"))))


_leaf = st.sampled_from([
    E(r), E(r, given=sex == "M"), E(x > 10, given=(sex == "F") & (race != "W")),
    E(~r, given=Var("y") == 1), E(x, given=x > 2, range=(0.0, 100.0)),
    E((x + 1) / 2 >= 3), E(-x < -2),
])
_terms = st.recursive(
    st.one_of(_leaf, st.floats(-5, 5, allow_nan=False).map(lambda c: E(r) * round(c, 3))),
    lambda sub: st.tuples(sub, sub, st.sampled_from("+-*/")).map(
        lambda t: {"+": t[0] + t[1], "-": t[0] - t[1], "*": t[0] * t[1], "/": t[0] / t[1]}[t[2]]),
    max_leaves=5,
)
_specs = st.recursive(
    st.tuples(_terms, st.sampled_from([">", "<", "==", "!="]), st.floats(-3, 3)).map(
        lambda t: {">": t[0] > t[2], "<": t[0] < t[2], "==": t[0] == t[2],
                   "!=": t[0] != t[2]}[t[1]]),
    lambda sub: st.tuples(sub, sub, st.booleans()).map(
        lambda t: (t[0] & t[1]) if t[2] else (t[0] | t[1])),
    max_leaves=4,
)


@settings(max_examples=150, deadline=None)
@given(spec=_specs)
def test_printing_and_parsing_round_trip(spec):
    assert parse_spec(spec.to_text()).same_as(spec)


@pytest.mark.parametrize(("text", "position", "reason"), [
    ("E[r | sex == M] > ", 18, "unexpected end of the text"),
    ("E[r | sex == M] >= 0.5", 16, "no >="),
    ("E[r] > 0.5 & r", 13, "the variable r must be inside E"),
    ("E[r | sex == M > 0.5", 15, "comparisons cannot be chained"),
    ("E[r] > E[s]", 5, "rewrite as"),
    ("E[r] + (E[s] > 0.5) > 1", 5, "not to the specification"),
    ("E[r # 1] > 0", 4, "unexpected character '#'"),
    ("E[E[r]] > 0", 2, "cannot be nested"),
    ("E[r] > 0.5 &", 12, "unexpected end"),
    ("E[r] & E[s] > 0", 5, "its left side E[r] is not one"),
    ("E[r] > 0.5 0.3", 11, "unexpected '0.3'"),
    ("E[r | x == a - 1] > 0", 13, "read as the text"),
    ("E[r, foo=1] > 0", 5, "given= or range="),
])
def test_syntax_errors_point_at_the_token(text, position, reason):
    with pytest.raises(SpecSyntaxError) as info:
        parse_spec(text)
    err = info.value
    assert err.position == position, str(err)
    assert reason in err.reason
    assert isinstance(err, SpecError)
    assert str(err).splitlines()[-1].index("^") - 2 == position


def test_a_term_is_not_a_specification():
    with pytest.raises(SpecSyntaxError, match="only a term"):
        parse_spec("E[r] - E[s]")


def test_builder_errors_explain_python_precedence():
    with pytest.raises(SpecError, match="parenthesise"):
        E(r) - E(r, given=sex == "F") < 0.5 & (E(r) > 0.1)  # noqa: B015
    with pytest.raises(SpecError, match="no truth value"):
        bool(E(r) > 0.5)
    with pytest.raises(SpecError, match="and/or/not"):
        if r == 1:  # noqa: SIM108
            pass
    with pytest.raises(SpecError, match="no >="):
        E(r) >= 0.5  # noqa: B015
    with pytest.raises(SpecError, match="wrapped in E"):
        E(r) + r
    with pytest.raises(SpecError, match="range"):
        E(r, range=(1, 0))


def test_conditional_leaf_uses_only_matching_records():
    # spec §6 G.1: E[x | x > 10] over (1, 3, 41, 43) = 42
    m = Monitor(E(x, given=x > 10, range=(0, 100)) > 50, optimize_every=1)
    res = m.update(pd.DataFrame({"x": [1, 3, 41, 43]}))
    leaf = res.leaves.iloc[0]
    assert leaf["value"] == pytest.approx(42.0) and leaf["n"] == 2


def test_a_leaf_whose_condition_never_held_makes_no_claim():
    m = Monitor("E[r | g == 1] > 0.5", optimize_every=1)
    leaf = m.update(pd.DataFrame({"r": [1, 0, 1], "g": [0, 0, 0]})).leaves.iloc[0]
    assert leaf["n"] == 0 and np.isnan(leaf["value"])
    assert leaf["epsilon"] == np.inf and leaf["failure_prob"] == 1.0
    assert m.result().verdict is None


def test_upsert_with_an_observation_key():
    # spec §6 G.2: key k with x = 2 then x = 0.5 leaves one contribution: E[1/x] = 2
    m = Monitor(E(1 / x, range=(0, 4)) > 0.1, optimize_every=1)
    m.update({"id": "k", "x": 2.0}, key="id")
    res = m.update({"id": "k", "x": 0.5}, key="id")
    leaf = res.leaves.iloc[0]
    assert leaf["value"] == pytest.approx(2.0) and leaf["n"] == 1
    assert res.n_observed == 2
    res = m.update(pd.DataFrame({"id": ["a", "k", "a"], "x": [1.0, 1.0, 4.0]}), key="id")
    assert res.leaves.iloc[0]["value"] == pytest.approx((1.0 + 0.25) / 2)
    res = m.delete(["a"])
    assert res.leaves.iloc[0]["value"] == pytest.approx(1.0)
    with pytest.raises(DataError, match="never observed"):
        m.delete("zzz")


def test_values_outside_unit_range_are_rejected_or_rescaled():
    # spec §6 G.3
    with pytest.raises(DataError, match=r"value 3.0 of x at row 1 .*outside the range \[0, 1\]"):
        Monitor("E[x] > 0.5").update(pd.DataFrame({"x": [0.5, 3.0]}))
    m = Monitor(E(x, range=(0, 10)) > 0.5, optimize_every=1)
    leaf = m.update(pd.DataFrame({"x": [3.0, 7.0]})).leaves.iloc[0]
    assert leaf["epsilon"] == pytest.approx(10 * adaptive_hoeffding_epsilon(0.1, 2))
    with pytest.raises(DataError, match="missing|outside"):
        Monitor("E[x] > 0.5").update(pd.DataFrame({"x": [np.nan]}))


def test_a_rejected_batch_leaves_the_state_unchanged():
    m = Monitor("E[x] > 0.5", optimize_every=1)
    m.update(pd.DataFrame({"x": [1.0, 0.0]}))
    with pytest.raises(DataError):
        m.update(pd.DataFrame({"x": [1.0, 2.0]}))
    assert m.n_observed == 2 and m.result().leaves.iloc[0]["n"] == 2


def test_missing_columns_and_type_mismatches_name_the_column():
    with pytest.raises(VariableError, match="column 'sex' used by the specification"):
        Monitor("E[r | sex == M] > 0.5").update(pd.DataFrame({"r": [1]}))
    with pytest.raises(DataError, match="sex holds text but is compared with the number 1"):
        Monitor("E[r | sex == 1] > 0.5").update(pd.DataFrame({"r": [1], "sex": ["M"]}))
    with pytest.raises(DataError, match="holds text"):
        Monitor("E[sex] > 0.5").update(pd.DataFrame({"sex": ["M"]}))


def test_row_expressions_evaluate_vectorised():
    df = pd.DataFrame({"x": [1, 3, 41], "s": ["a", "b", "a"], "b": [True, False, True]})
    assert parse_expression("x > 2 & s == a").evaluate(df).tolist() == [False, False, True]
    assert parse_expression("!b | x == 3").evaluate(df).tolist() == [False, True, False]
    np.testing.assert_allclose(parse_expression("(x + 1) / 2").evaluate(df), [1, 2, 21])
    assert parse_expression("`x` >= 3").evaluate(df).tolist() == [False, True, True]


def test_a_specification_needs_an_expectation():
    with pytest.raises(SpecError, match="no E\\[...\\] term"):
        Monitor("0.5 > 0.3")


# --- the text form is read by Python's ast module after a small pre-translation --------------

@pytest.mark.parametrize(("text", "position", "construct"), [
    ("E[f(r)] > 0", 2, "a function call"),
    ("E[r.mean()] > 0", 2, "a function call"),
    ("E[r] > 0.5 & E[__import__('os')] > 0", 15, "a function call"),
    ("E[r ** 2] > 0", 4, "the operator '**'"),
    ("E[r // 2] > 0", 4, "the operator '//'"),
    ("E[r % 2] > 0", 4, "the operator '%'"),
    ("E[r @ s] > 0", 4, "the operator '@'"),
    ("E[r ^ s] > 0", 4, "the operator '^'"),
    ("E[r in s] > 0", 4, "the operator 'in'"),
    ("E[r is not s] > 0", 4, "the operator 'is not'"),
    ("E[lambda: 1] > 0", 2, "a lambda"),
    ("E[r if s else t] > 0", 2, "an if-else expression"),
    ("E[[1, 2]] > 0", 2, "a list"),
    ("E[{1: 2}] > 0", 2, "a dict"),
    ("E[r[0]] > 0", 2, "indexing"),
    ("E[r:2] > 0", 2, "a slice"),
    ("E[x := 1] > 0", 2, "an assignment expression (:=)"),
    ("E[*r] > 0", 2, "a starred expression"),
    ("E[(yield)] > 0", 3, "yield"),
    ("E[r] > None", 7, "the constant None"),
    ("E[r] > 0.5, E[s] > 0.5", 0, "a tuple"),
])
def test_python_syntax_outside_the_grammar_is_refused_by_name(text, position, construct):
    with pytest.raises(SpecSyntaxError) as info:
        parse_spec(text)
    assert info.value.position == position, str(info.value)
    assert info.value.reason.startswith(f"{construct} is not part of AVOIR's specification")


def test_user_text_is_only_parsed_never_evaluated(tmp_path, monkeypatch):
    target = tmp_path / "keep.txt"
    target.write_text("x")
    # eval/exec are never called, and compile only ever builds an AST
    real_compile = builtins.compile

    def ast_only(source, filename, mode, flags=0, *args, **kwargs):
        assert flags & ast.PyCF_ONLY_AST, "user text compiled to code"
        return real_compile(source, filename, mode, flags, *args, **kwargs)

    def refuse(*args, **kwargs):
        raise AssertionError("user text evaluated")

    monkeypatch.setattr(builtins, "compile", ast_only)
    monkeypatch.setattr(builtins, "eval", refuse)
    monkeypatch.setattr(builtins, "exec", refuse)
    attack = f"E[r | __import__('os').remove({str(target)!r})] > 0"
    with pytest.raises(SpecSyntaxError, match="not part of AVOIR"):
        parse_spec(attack)
    with pytest.raises(SpecSyntaxError):
        parse_expression("__import__('os').system('exit 3')")
    assert target.read_text() == "x"
    assert parse_spec("E[r | s == M] > 0.5").same_as(E(r, given=Var("s") == "M") > 0.5)


def test_pre_translation_leaves_literals_alone():
    # operators, quotes and unicode inside strings are never rewritten
    leaf = parse_spec('E[r | s == "a | b = c & !d ≠ é"] > 0').leaves()[0]
    assert leaf.given.same_as(Var("s") == "a | b = c & !d ≠ é")
    # a column named like the placeholders the pre-translation uses
    leaf = parse_spec('E[_L0 | `_L1 x` == "_L0"] > 0').leaves()[0]
    assert leaf.expr.same_as(Var("_L0")) and leaf.given.same_as(Var("_L1 x") == "_L0")
    # columns named like Python keywords, dotted names, and whitespace or line breaks anywhere
    spec = parse_spec("  E[class | if == 1,\n\t a.b] > 0 ")
    assert spec.same_as(E(Var("class"), given=(Var("if") == 1) & Var("a.b")) > 0)
    assert parse_spec(spec.to_text()).same_as(spec)


@pytest.mark.parametrize(("text", "position", "reason"), [
    ("E[r s] > 0", 4, "unexpected 's'"),
    ("E[a + b c] > 0", 8, "unexpected 'c'"),
    ("E[r | s", 7, "expected ']' to close E[, found the end of the text"),
    ("(E[r] > 0.5", 11, "expected ')' to close the parenthesis, found the end of the text"),
    ("E[r)", 3, "expected ']' to close E[, found ')'"),
    ("E[r] > 0.5)", 10, "unexpected ')'"),
    ("E[]", 2, "E[...] needs an expression"),
    ("E[r,] > 0", 2, "a comma must be followed by given= or range="),
    ("E[r] > 0x10", 8, "unexpected 'x10'"),
    ("E[r] > 1_000", 8, "unexpected '_000'"),
    ("E[r] > 1j", 8, "unexpected 'j'"),
    ("E[r | s == f'x'] > 0", 12, "unexpected \"'x'\""),
    ("E[r] > 1e999", 7, "a constant must be a finite number"),
    ("E[x, range=(0, a)] > 0", 11, "range=(a, b) needs two numbers"),
    ("E[x, range=(0, 1), range=(0, 2)] > 0", 19, "range= is given twice"),
    ("(E)[r] > 0", 0, "only E[...] takes brackets"),
])
def test_more_syntax_errors_point_at_the_token(text, position, reason):
    with pytest.raises(SpecSyntaxError) as info:
        parse_spec(text)
    assert info.value.position == position, str(info.value)
    assert reason in info.value.reason


_names = st.sampled_from(["x", "r", "class", "if", "None", "true", "E", "a.b", "my col",
                          "_L0", "x-y"])
_values = st.one_of(st.text(max_size=6).filter(lambda v: "`" not in v),
                    st.integers(-5, 5), st.booleans())


@settings(max_examples=150, deadline=None)
@given(name=_names, other=_names, value=_values, op=st.sampled_from(["==", "!=", "<", ">="]))
def test_any_column_name_and_literal_round_trip(name, other, value, op):
    cond = {"==": Var(other) == value, "!=": Var(other) != value, "<": Var(other) < value,
            ">=": Var(other) >= value}[op]
    spec = E(~Var(name), given=cond & Var(name)) > 0.5
    assert parse_spec(spec.to_text()).same_as(spec)


def test_printing_keeps_columns_and_bars_apart_from_text_and_given():
    y = Var("y")
    for spec in [E(x | y) > 0.5, E(x, given=x != y + 1) > 0, E(x == y) > 0, E(x == -y) > 0,
                 E(r, given=(x == (y | r)) | ~x) > 0, E(Var("E") & Var("class")) < 1]:
        assert parse_spec(spec.to_text()).same_as(spec), spec.to_text()
    assert E(x | y).to_text() == "E[(x | y)]"
    assert (x != y + 1).to_text() == "x != (y + 1)"


_pieces = st.sampled_from([
    "E[", "]", "(", ")", "|", "&", "!", "~", "=", "==", "!=", ">", "<", ">=", "+", "-", "*",
    "/", ",", "given=", "range=", "r", "sex", "M", "0.5", "1", "African-American", '"a b"',
    "`c d`", " ", "≠", "∧", "−", ":", ".", "class", "if", "in", "and", "not", "None", "1e5",
    "{", "#", "\n", "_L0", "f", "lambda", "**", ":=",
])


@settings(max_examples=400, deadline=None)
@given(text=st.lists(_pieces, min_size=1, max_size=14).map("".join))
def test_any_text_parses_or_raises_a_spec_error(text):
    for parse in (parse_spec, parse_term, parse_expression):
        try:
            node = parse(text)
        except SpecError:
            continue
        assert parse(node.to_text()).same_as(node)
