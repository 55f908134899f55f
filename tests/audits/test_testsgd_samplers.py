"""Tests of the TestSGD samplers: perturbation (T9), term replacement (T10), circuit (Sec. 4.3)."""

from __future__ import annotations

import importlib.util
import itertools
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from pcfair.audits.testsgd import audit, PCConditionalSampler, RuleSet
from pcfair.audits.testsgd.tabular_sampler import TabularPerturbationSampler
from pcfair.audits.testsgd.text_sampler import TermReplacementSampler
from pcfair.audits.testsgd.circuit_sampler import BinCodes
from pcfair.audits.testsgd.errors import EmptyGroupError
from pcfair.audits.testsgd.rules import CategoricalRule, RangeRule, TermRule
from pcfair.audits.testsgd.specs import resolve_specs, SensitiveSpec
from pcfair.audits.testsgd.streams import SampleStream
from pcfair.audits.testsgd.terms import DIXON_TERMS
from pcfair.errors import DataError, EvidenceError, StructureError

SENS = {"gender": "categorical", "race": "categorical", "age": (0, 100)}


def planted_data(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "gender": rng.choice(["M", "F"], n),
        "race": rng.choice(list("ABCDE"), n, p=[0.4, 0.2, 0.2, 0.1, 0.1]),
        "age": rng.integers(18, 90, n),
        "x_int": rng.integers(0, 51, n),
        "x_float": np.round(rng.random(n), 2),
    })


@pytest.fixture(scope="module")
def tabular():
    df = planted_data(3000)
    specs = resolve_specs(df, SENS)
    return df, specs, TabularPerturbationSampler().fit(df, specs)


def group_rule(specs) -> RuleSet:
    age = next(s for s in specs if s.name == "age")
    return RuleSet([
        CategoricalRule("gender", ("F",)),
        CategoricalRule("race", ("B", "C")),
        RangeRule("age", 4, 6, age.edges),
    ])


# ----------------------------------------------------------------------------- T9
@pytest.mark.parametrize("in_group", [True, False])
def test_each_sample_moves_one_non_sensitive_feature_by_one_step(tabular, in_group):
    df, specs, sampler = tabular
    R = group_rule(specs)
    out, prov = sampler.sample_with_provenance(R, 4000, in_group=in_group, random_state=7)
    seeds = df.iloc[prov.seed].reset_index(drop=True)
    for col in ("gender", "race", "age"):
        assert (out[col].to_numpy() == seeds[col].to_numpy()).all()
    assert R.mask(out).all() if in_group else not R.mask(out).any()
    assert set(prov.direction.tolist()) == {-1, 1}
    for col, step in (("x_int", 1), ("x_float", 0.01)):
        moved = prov.feature == col
        delta = out[col].to_numpy() - seeds[col].to_numpy()
        assert np.all(delta[~moved] == 0)
        lo, hi = df[col].min(), df[col].max()
        expected = np.clip(seeds[col].to_numpy()[moved] + prov.direction[moved] * step, lo, hi)
        assert np.allclose(out[col].to_numpy()[moved], expected, atol=1e-9)
        clipped = expected == seeds[col].to_numpy()[moved]
        assert np.allclose(np.abs(delta[moved][~clipped]), step, atol=1e-9)
        assert out[col].between(lo, hi).all()
    assert out["x_int"].dtype == df["x_int"].dtype
    assert out["gender"].dtype == df["gender"].dtype


def test_feature_choice_is_uniform(tabular):
    df, specs, sampler = tabular
    _, prov = sampler.sample_with_provenance(group_rule(specs), 10_000, in_group=False, random_state=3)
    counts = pd.Series(prov.feature).value_counts().reindex(["x_int", "x_float"]).to_numpy()
    assert stats.chisquare(counts).pvalue > 0.001
    assert stats.chisquare(np.bincount((prov.direction + 1) // 2)).pvalue > 0.001


def test_draws_are_prefix_consistent(tabular):
    _, specs, sampler = tabular
    R = group_rule(specs)
    rng = np.random.default_rng(5)
    a = pd.concat([sampler.sample(R, 13, in_group=True, random_state=rng),
                   sampler.sample(R, 29, in_group=True, random_state=rng)], ignore_index=True)
    b = sampler.sample(R, 42, in_group=True, random_state=np.random.default_rng(5))
    pd.testing.assert_frame_equal(a, b)
    s1 = SampleStream(sampler, R, False, 9, chunk_size=16)
    parts = pd.concat([s1.take(5), s1.take(20), s1.take(1)], ignore_index=True)
    whole = SampleStream(sampler, R, False, 9, chunk_size=16).take(26)
    pd.testing.assert_frame_equal(parts, whole)


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(0, 40), min_size=1, max_size=6), chunk=st.integers(1, 33))
def test_stream_does_not_depend_on_how_it_is_cut(tabular, sizes, chunk):
    _, specs, sampler = tabular
    R = group_rule(specs)
    cut = SampleStream(sampler, R, True, 4, chunk_size=chunk)
    parts = [cut.take(k) for k in sizes]
    whole = SampleStream(sampler, R, True, 4, chunk_size=chunk).take(sum(sizes))
    pd.testing.assert_frame_equal(pd.concat(parts, ignore_index=True), whole)
    assert cut.position == sum(sizes) and cut.drawn >= cut.position


def test_string_features_move_to_a_neighbouring_category():
    df = pd.DataFrame({"sex": ["F", "M"] * 50, "job": list("abcde") * 20})
    sampler = TabularPerturbationSampler().fit(df, [SensitiveSpec.categorical("sex", ["F", "M"])])
    out, prov = sampler.sample_with_provenance(RuleSet([CategoricalRule("sex", ("F",))]), 500, in_group=True,
                                               random_state=0)
    before = df["job"].to_numpy()[prov.seed]
    code = {c: i for i, c in enumerate("abcde")}
    moved = np.array([code[a] - code[b] for a, b in zip(out["job"], before)])
    assert set(np.abs(moved).tolist()) <= {0, 1}
    assert set(out["job"]) <= set("abcde")


def test_integer_features_with_gaps_move_to_a_neighbouring_value_of_the_data():
    """Issue 36: a count of 0-5 and 8 steps 5 <-> 8, never to 7 (no row has it: a model
    learned from the data could not read it); a contiguous count steps by one unit."""
    rng = np.random.default_rng(1)
    n = 400
    df = pd.DataFrame({"sex": rng.choice(["F", "M"], n),
                       "sibsp": rng.choice([0, 1, 2, 3, 4, 5, 8], n),
                       "kids": rng.integers(0, 4, n),
                       "fare": rng.choice([7.25, 8.0, 71.5], n)})
    sampler = TabularPerturbationSampler().fit(df, [SensitiveSpec.categorical("sex", ["F", "M"])])
    out, prov = sampler.sample_with_provenance(RuleSet([CategoricalRule("sex", ("F",))]), 4000,
                                               in_group=True, random_state=0)
    levels = [0, 1, 2, 3, 4, 5, 8]
    rank = {v: i for i, v in enumerate(levels)}
    before = df["sibsp"].to_numpy()[prov.seed]
    assert set(out["sibsp"]) <= set(levels) and 8 in set(out["sibsp"])
    steps = {abs(rank[a] - rank[b]) for a, b in zip(out["sibsp"], before)}
    assert steps == {0, 1}
    assert set(before[out["sibsp"].to_numpy() == 8].tolist()) == {5, 8}
    moved = np.abs(out["kids"].to_numpy() - df["kids"].to_numpy()[prov.seed])
    assert set(moved.tolist()) == {0, 1} and out["kids"].dtype == df["kids"].dtype
    assert out["fare"].between(7.25, 71.5).all()  # decimal: steps of 0.01, clipped


def test_sampler_errors(tabular):
    df, specs, _ = tabular
    with pytest.raises(DataError, match="not fitted"):
        TabularPerturbationSampler().sample(group_rule(specs), 1, in_group=True)
    sampler = TabularPerturbationSampler().fit(df, specs)
    nobody = RuleSet([CategoricalRule("race", ("Z",))])
    with pytest.raises(EmptyGroupError, match="no row of the data satisfies the rule set 'race=Z'"):
        sampler.sample(nobody, 3, in_group=True)
    assert isinstance(EmptyGroupError("x"), EvidenceError)
    with pytest.raises(DataError, match="no non-sensitive feature"):
        TabularPerturbationSampler().fit(df[["gender", "race", "age"]], specs)
    with pytest.raises(DataError, match="are sensitive"):
        TabularPerturbationSampler(features=["age"]).fit(df, specs)


# ----------------------------------------------------------------------------- T10
CORPUS = [
    "I am a lesbian",
    "the lesbian christian spoke",
    "a Gay muslim wrote this",
    "my jewish neighbour",
    "nothing to see here",
    "the queer catholic and the sikh",
    "straight talk from a gay atheist",
]


@pytest.fixture(scope="module")
def text_sampler():
    df = pd.DataFrame({"text": CORPUS})
    specs = resolve_specs(df, ["gender", "religion"], text_column="text")
    return df, specs, TermReplacementSampler().fit(df, specs)


def rule(category: str, term: str) -> TermRule:
    return TermRule(category, term, DIXON_TERMS[category], "text")


def test_replacement_rewrites_every_term_of_the_category(text_sampler):
    _, _, s = text_sampler
    assert s.rewrite("I am a lesbian", RuleSet([rule("gender", "gay")])) == "I am a gay"
    both = RuleSet([rule("gender", "gay"), rule("religion", "muslim")])
    assert s.rewrite("the lesbian christian spoke", both) == "the gay muslim spoke"
    assert s.rewrite("the queer catholic and the sikh", both) == "the gay muslim and the muslim"


def test_group_samples_hold_every_term_and_rest_samples_do_not(text_sampler):
    df, _, s = text_sampler
    R = RuleSet([rule("gender", "gay"), rule("religion", "muslim")])
    members = s.sample(R, 300, in_group=True, random_state=1)
    rest = s.sample(R, 300, in_group=False, random_state=1)
    assert R.mask(pd.DataFrame({"text": members})).all()
    assert not R.mask(pd.DataFrame({"text": rest})).any()
    plan = s.draw_plan(R, 300, in_group=True, random_state=2)
    seeds = set(plan[:, 0].tolist())
    # Only documents mentioning both a gender and a religion term can seed R.
    assert seeds <= {1, 2, 5, 6} and len(seeds) == 4
    assert s.materialize(R, plan) == s.sample(R, 300, in_group=True, random_state=2)


def test_text_sampler_hook_and_errors(text_sampler):
    df, specs, _ = text_sampler

    def rest(sampler, rule_set, n, rng):
        return ["neutral text"] * n

    s = TermReplacementSampler(rest_sampler=rest).fit(df, specs)
    R = RuleSet([rule("gender", "gay")])
    assert s.sample(R, 3, in_group=False, random_state=0) == ["neutral text"] * 3
    assert not s.supports_plans(False) and s.supports_plans(True)
    stream = SampleStream(s, R, False, 0, chunk_size=4)
    assert stream.take(6) == ["neutral text"] * 6
    only_religion = TermReplacementSampler().fit(pd.DataFrame({"text": ["a muslim", "hi"]}), specs)
    with pytest.raises(EmptyGroupError, match="mentions every category"):
        only_religion.sample(R, 1, in_group=True)
    with pytest.raises(DataError, match="term-category"):
        TermReplacementSampler().fit(df, [SensitiveSpec.categorical("x", [1, 2])])


# ----------------------------------------------------------------------------- Sec. 4.3
class TableCircuit:
    """A stand-in for a probabilistic circuit: an explicit joint table over a few variables.

    It offers what the TestSGD adapters use: ``variables.names``/``domains``,
    ``sample(n, evidence=None, random_state=None)`` with value labels, and
    ``log_marginal(evidence_frame)`` with absent or NaN entries marginalised.
    """

    def __init__(self, domains: dict, seed: int = 0):
        names = list(domains)
        self.variables = SimpleNamespace(names=tuple(names), domains=tuple(tuple(d) for d in domains.values()))
        self.table = pd.DataFrame(list(itertools.product(*domains.values())), columns=names)
        self.p = np.random.default_rng(seed).dirichlet(np.full(len(self.table), 2.0))

    def _mask(self, row: dict) -> np.ndarray:
        m = np.ones(len(self.table), dtype=bool)
        for k, v in row.items():
            if v is None or (isinstance(v, float) and np.isnan(v)):
                continue
            m &= (self.table[k] == v).to_numpy()
        return m

    def sample(self, n, evidence=None, random_state=None):
        rng = np.random.default_rng(random_state)
        w = self.p * self._mask(dict(evidence or {}))
        if w.sum() == 0:
            raise EvidenceError("evidence has probability zero")
        idx = rng.choice(len(self.table), size=n, p=w / w.sum())
        return self.table.iloc[idx].reset_index(drop=True)

    def log_marginal(self, evidence: pd.DataFrame) -> np.ndarray:
        evidence = evidence.reset_index(drop=True)
        out = np.zeros(len(evidence))
        patterns, which = np.unique(evidence.notna().to_numpy(), axis=0, return_inverse=True)
        for j, pattern in enumerate(patterns):
            rows = np.flatnonzero(which.ravel() == j)
            cols = [c for c, k in zip(evidence.columns, pattern) if k]
            if not cols:
                out[rows] = self.p.sum()
                continue
            marg = pd.Series(self.p).groupby([self.table[c] for c in cols]).sum()
            keys = pd.MultiIndex.from_frame(evidence.loc[rows, cols]) if len(cols) > 1 else evidence.loc[rows, cols[0]]
            out[rows] = marg.reindex(keys, fill_value=0.0).to_numpy()
        with np.errstate(divide="ignore"):
            return np.log(out)

    def probability_of(self, mask: np.ndarray) -> float:
        return float(self.p[mask].sum())


AGE_BINS = BinCodes((0, 25, 50, 75, 100), integer=True)


@pytest.fixture(scope="module")
def circuit():
    return TableCircuit({"g": ["F", "M"], "a": [0, 1, 2, 3], "x": [0, 1, 2], "y": [0, 1]}, seed=4)


def circuit_specs():
    return [SensitiveSpec.categorical("g", ["F", "M"]), SensitiveSpec.continuous("a", 0, 100, bins=4)]


def circuit_rule() -> RuleSet:
    edges = circuit_specs()[1].edges
    return RuleSet([CategoricalRule("g", ("F",)), RangeRule("a", 1, 2, edges)])


@pytest.mark.parametrize("method", ["exact", "rejection"])
@pytest.mark.parametrize("in_group", [True, False])
def test_circuit_sampler_draws_the_exact_conditional(circuit, method, in_group):
    sampler = PCConditionalSampler(circuit, decoders={"a": AGE_BINS}, method=method).fit(None, circuit_specs())
    R = circuit_rule()
    out = sampler.sample(R, 6000, in_group=in_group, random_state=0)
    assert list(out.columns) == ["g", "a", "x", "y"]
    inside = R.mask(out)
    assert inside.all() if in_group else not inside.any()
    assert out["a"].between(0, 100).all() and out["a"].dtype.kind == "i"
    # Compare the (g, age bin, x, y) frequencies with the circuit's conditional distribution.
    t = circuit.table
    in_r = ((t["g"] == "F") & t["a"].isin([1, 2])).to_numpy()
    cond = circuit.p * (in_r if in_group else ~in_r)
    cond = cond / cond.sum()
    bins = np.searchsorted([25, 50, 75], out["a"].to_numpy(), side="right")
    keys = pd.MultiIndex.from_arrays([out["g"], bins, out["x"], out["y"]])
    observed = pd.Series(1, index=keys).groupby(level=[0, 1, 2, 3]).sum()
    table_keys = pd.MultiIndex.from_frame(t)
    obs = observed.reindex(table_keys, fill_value=0).to_numpy()
    keep = cond > 0
    assert obs[~keep].sum() == 0
    assert stats.chisquare(obs[keep], cond[keep] * obs.sum()).pvalue > 0.001


def test_circuit_sampler_checks_that_bins_refine_the_rules(circuit):
    specs = [SensitiveSpec.categorical("g", ["F", "M"]), SensitiveSpec.continuous("a", 0, 100, bins=8)]
    sampler = PCConditionalSampler(circuit, decoders={"a": AGE_BINS}).fit(None, specs)
    R = RuleSet([RangeRule("a", 1, 2, specs[1].edges)])  # 12.5 <= a < 37.5 cuts the circuit's bins
    with pytest.raises(StructureError, match="do not refine"):
        sampler.sample(R, 5, in_group=True, random_state=0)
    with pytest.raises(DataError, match="not fitted"):
        PCConditionalSampler(circuit).sample(R, 1, in_group=True)


def _most_probable(circuit, target="y"):
    """Label rows by the stand-in circuit's most probable target value (ties: 0)."""
    def predict(batch):
        frame = batch.drop(columns=[target], errors="ignore")
        scores = [circuit.log_marginal(frame.assign(**{target: v})) for v in (0, 1)]
        return (scores[1] > scores[0]).astype(int)
    return predict


def test_audit_of_a_circuit_classifier_against_its_own_distribution(circuit):
    sampler = PCConditionalSampler(circuit, columns=["g", "a", "x"])
    data = circuit.sample(3000, random_state=1).drop(columns="y")
    predict = _most_probable(circuit)
    specs = [SensitiveSpec.categorical("g", ["F", "M"]), SensitiveSpec.categorical("a", [0, 1, 2, 3])]
    res = audit(data, predict, sensitive=specs, sampler=sampler, sup_thr=0.1, random_state=0).table
    assert (res["sampler"] == "pc_conditional").all() and len(res) > 5
    # True scores under the circuit: P(M(x)=1 | R) - P(M(x)=1 | not R) by enumeration.
    t = circuit.table
    label = predict(t.drop(columns="y"))
    inside = 0
    for rs, row in res.iterrows():
        m = rs.mask(t)
        p_in = (circuit.p * m * (label == 1)).sum() / (circuit.p * m).sum()
        p_out = (circuit.p * ~m * (label == 1)).sum() / (circuit.p * ~m).sum()
        inside += abs(abs(p_in - p_out) - row["score"]) <= row["margin"]
    assert inside >= 0.85 * len(res)


@pytest.mark.skipif(importlib.util.find_spec("pcfair.inference.sampling") is None,
                    reason="pcfair's circuit sampling is not built yet")
def test_circuit_sampler_on_a_pcfair_circuit():
    from pcfair.circuit import CircuitBuilder

    b = CircuitBuilder({"g": ["F", "M"], "x": [0, 1]})
    root = b.sum([b.product(b.indicator("g", "F"), b.categorical("x", [0.8, 0.2])),
                  b.product(b.indicator("g", "M"), b.categorical("x", [0.3, 0.7]))], weights=[0.4, 0.6])
    pc = b.build(root)
    spec = SensitiveSpec.categorical("g", ["F", "M"])
    sampler = PCConditionalSampler(pc).fit(None, [spec])
    out = sampler.sample(RuleSet([CategoricalRule("g", ("F",))]), 4000, in_group=True, random_state=0)
    assert (out["g"] == "F").all()
    assert abs(out["x"].mean() - 0.2) < 0.03
