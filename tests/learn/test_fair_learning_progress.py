"""Fair learning keeps only progress (pcfair.learn.fair): every certified model has a finite
likelihood on every training row, every pattern within δ by a log-space brute force, and a
training log-likelihood no worse than the independent baseline's."""

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pcfair.learn.fair as fair_module
from _pattern_oracle import pattern_arrays_log
from pcfair.learn.fair import (
    BASELINE_TOLERANCE,
    learn_fair_pc,
    learn_independent_pc,
    parameter_floor,
)


def _table(rng: np.random.Generator, rows: int, arities: list[int], dependent: bool,
           constant: bool, skew: float) -> pd.DataFrame:
    """``D`` and features ``s0, s1, z2, ...`` drawn from a random chain with skewed tables
    (many ties and empty cells); ``s1 = f(s0)`` where ``dependent``; the last feature constant
    where ``constant``."""
    d = (rng.random(rows) < rng.uniform(0.2, 0.8)).astype(int)
    d[:2] = [0, 1]  # both decision values
    cols = {"D": d}
    prev = d
    for i, k in enumerate(arities):
        name = f"s{i}" if i < 2 else f"z{i}"
        table = rng.dirichlet(np.full(k, skew), size=int(prev.max()) + 1)
        col = np.array([rng.choice(k, p=table[p]) for p in prev])
        if dependent and i == 1:
            col = (cols["s0"] * 7 + 3) % k  # a function of s0
        cols[name] = col
        prev = col
    if constant:
        cols[name] = np.zeros(rows, int)
    # values 0..k-1 of the values seen, so that the oracle's value codes are the values
    return pd.DataFrame({c: np.unique(v, return_inverse=True)[1] for c, v in cols.items()})


#: Largest joint table the brute force of :func:`_check` enumerates (every pattern of larger
#: models is left to the certifier; the constrained ones are still checked).
BRUTE_FORCE_ROWS = 6000


def _check(res, df: pd.DataFrame, sensitive: list[str], delta: float, pseudocount: float,
           structure: str) -> None:
    """The acceptance list of a fair-learning result on ``df``."""
    if res.fair is not True:
        return
    pc = res.circuit
    assert res.certificate.complete
    rows = pc.log_marginal(df)
    assert np.all(np.isfinite(rows)), "a training row has probability 0"
    names = list(pc.variables.names)
    if np.prod(pc.variables.cardinalities) <= BRUTE_FORCE_ROWS:
        arrays = pattern_arrays_log(pc, pc.variables.cardinalities, names.index("D"),
                                    [names.index(s) for s in sensitive],
                                    pc.variables.value_index(names.index("D"), 1))
        scores = arrays.delta[arrays.defined]
        assert len(scores) == 0 or np.max(np.abs(scores)) <= delta + 1e-9, \
            f"certified fair with a pattern at |Δ| = {np.max(np.abs(scores))}"
    for p in res.patterns:  # the constrained ones, by the model's own log-space conditionals
        fav = res.certificate.favorable
        score = pc.conditional({"D": fav}, {**p.x, **p.y}) - pc.conditional({"D": fav}, p.y)
        assert abs(score) <= delta + 1e-9
    baseline = learn_independent_pc(df, "D", sensitive, structure=structure,
                                    pseudocount=pseudocount)
    ll = float(rows.mean())
    assert ll >= float(baseline.log_marginal(df).mean()) - BASELINE_TOLERANCE
    assert ll == pytest.approx(res.stats["log_likelihood"]["result"], abs=1e-9)


TABLES = st.fixed_dictionaries({
    "seed": st.integers(0, 2**31),
    "rows": st.sampled_from([6, 12, 30, 80, 200]),
    "arities": st.lists(st.integers(2, 4), min_size=4, max_size=6),
    "dependent": st.booleans(),
    "constant": st.booleans(),
    "skew": st.sampled_from([0.2, 0.5, 2.0]),
    "pseudocount": st.sampled_from([0.0, 0.01, 0.1, 1.0]),
    "structure": st.sampled_from(["clt", "naive_bayes"]),
    "rank_by": st.sampled_from(["divergence", "discrimination"]),
    "delta": st.sampled_from([0.01, 0.05, 0.2]),
})


def _run_table(case: dict):
    rng = np.random.default_rng(case["seed"])
    df = _table(rng, case["rows"], case["arities"], case["dependent"], case["constant"],
                case["skew"])
    sensitive = ["s0", "s1"]
    res = learn_fair_pc(df, "D", sensitive, case["delta"], structure=case["structure"], k=5,
                        rank_by=case["rank_by"], max_iter=3, pseudocount=case["pseudocount"],
                        decouple_time_limit=60, progress=False)
    assert res.fair is True  # the baseline is fair for every δ and certified quickly
    _check(res, df, sensitive, case["delta"], case["pseudocount"], case["structure"])


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(TABLES)
def test_fair_learning_on_small_random_tables(case):
    _run_table(case)


@pytest.mark.slow
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(TABLES)
def test_fair_learning_on_small_random_tables_many(case):
    _run_table(case)


def test_the_thirty_row_table_is_not_certified_by_vanishing():
    """Tables of the shape of issue 41's first: ``D, s0, s1 = f(s0), z2, z3`` (arity 4), 30
    rows, δ = 0.01, one re-fit at pseudocount 0.01 ranked by divergence (where the code before
    collapsed to −10⁴ nats per row and was certified by vanishing probabilities)."""
    for seed in range(6):
        df = _table(np.random.default_rng(seed), 30, [4, 4, 4, 4], True, False, 0.3)
        res = learn_fair_pc(df, "D", ["s0", "s1"], 0.01, structure="clt", k=10, max_iter=1,
                            pseudocount=0.01, rank_by="divergence", progress=False)
        assert res.fair is True
        _check(res, df, ["s0", "s1"], 0.01, 0.01, "clt")
        ll = res.stats["log_likelihood"]
        assert ll["result"] >= ll["independent"] and math.isfinite(ll["result"])


@pytest.mark.slow
def test_the_five_sensitive_table_does_not_decouple_a_collapsed_model():
    """A table of the shape of issue 41's second: 1,500 rows, five sensitive features,
    δ = 0.03 (where the code before decoupled a collapsed re-fit)."""
    rng = np.random.default_rng(7)
    df = _table(rng, 1500, [3, 2, 4, 3, 2, 3, 2], False, False, 0.5)
    df = df.rename(columns={"z2": "s2", "z3": "s3", "z4": "s4"})
    sensitive = ["s0", "s1", "s2", "s3", "s4"]
    res = learn_fair_pc(df, "D", sensitive, 0.03, structure="clt", k=10, max_iter=4,
                        pseudocount=0.1, progress=False)
    assert res.fair is True
    _check(res, df, sensitive, 0.03, 0.1, "clt")
    hist = res.history["log_likelihood"]
    assert hist.min() >= res.stats["log_likelihood"]["independent"] - BASELINE_TOLERANCE


def test_a_rejected_refit_keeps_the_previous_model(monkeypatch):
    """A re-fit that does not meet its constraints is not kept: the loop stops, says why,
    and the model of the previous re-fit (here the MLE) goes on."""
    df = _table(np.random.default_rng(3), 400, [3, 3, 3, 2], False, False, 0.5)

    class Stuck:  # what SLSQP returns when it gives up where it started
        def __init__(self, x):
            self.x, self.message, self.success = x, "Iteration limit reached", False

    monkeypatch.setattr(fair_module, "_solve", lambda sp, counts, scores, theta, *a: Stuck(
        theta))
    res = learn_fair_pc(df, "D", ["s0", "s1"], 0.02, k=3, max_iter=5, decouple=False,
                        fallback=False, progress=False)
    assert "re-fit 1 was rejected (Iteration limit reached)" in res.status
    assert "leaves a constrained pattern" in res.status and "re-fit 0 is kept" in res.status
    assert len(res.history) == 1 and res.patterns == []
    np.testing.assert_allclose(res.circuit.log_marginal(df), res.mle_circuit.log_marginal(df))


def test_the_baseline_is_returned_where_it_is_more_likely(monkeypatch):
    """Where the certified model is less likely than the independent baseline, the baseline
    comes back, and the status says so."""
    df = _table(np.random.default_rng(5), 600, [3, 3, 2, 2], False, False, 0.2)
    # a certified model worse than the baseline: the baseline itself, smoothed to death
    poor = learn_independent_pc(df, "D", ["s0", "s1"], pseudocount=5000.0)
    calls = []

    def decouple_to_poor(model, circuit, prob, check, steps, say):
        calls.append(1)
        return ({"s0": 1.0, "s1": 1.0}, poor, check(poor)), pd.DataFrame()

    monkeypatch.setattr(fair_module, "_decouple_until_certified", decouple_to_poor)
    res = learn_fair_pc(df, "D", ["s0", "s1"], 0.01, k=1, max_iter=1, progress=False)
    assert calls, "the premise: the loop ends uncertified and decoupling runs"
    ll = res.stats["log_likelihood"]
    assert res.fair is True and res.stats["baseline_returned"]
    assert "returned the independent baseline: the certified model's training " \
           "log-likelihood" in res.status
    assert ll["result"] == ll["independent"] > float(poor.log_marginal(df).mean())
    np.testing.assert_allclose(res.circuit.log_marginal(df),
                               res.baseline_circuit.log_marginal(df))
    assert res.stats["decouple_lambda"] is None
    kept = learn_fair_pc(df, "D", ["s0", "s1"], 0.01, k=1, max_iter=1, fallback=False,
                         progress=False)
    assert kept.fair is True and not kept.stats["baseline_returned"]
    np.testing.assert_allclose(kept.circuit.log_marginal(df), poor.log_marginal(df))


def test_an_uncertified_loop_returns_the_certified_baseline():
    df = _table(np.random.default_rng(11), 500, [3, 3, 3, 2], False, False, 0.5)
    res = learn_fair_pc(df, "D", ["s0", "s1"], 0.01, structure="strudel", k=1, max_iter=1,
                        random_state=0, progress=False)
    off = learn_fair_pc(df, "D", ["s0", "s1"], 0.01, structure="strudel", k=1, max_iter=1,
                        random_state=0, fallback=False, progress=False)
    assert off.fair is not True  # the premise: the loop alone does not certify it
    assert res.fair is True and res.certificate.complete and res.stats["baseline_returned"]
    assert res.status.endswith("returned the independent baseline: no other model was "
                               "certified")
    assert res.circuit.recipe is not None and res.circuit.counts is not None


def test_parameter_floor_holds_in_every_refit(monkeypatch):
    """Every weight of every kept re-fit is at least ``ε c / K`` (the docstring's floor)."""
    df = _table(np.random.default_rng(2), 40, [4, 4, 3, 3], True, False, 0.3)
    seen = []
    real = fair_module._solve

    def recording(sp, counts, scores, theta, bound, lower, options):
        res = real(sp, counts, scores, theta, bound, lower, options)
        seen.append((sp, res.x, lower))
        return res

    monkeypatch.setattr(fair_module, "_solve", recording)
    learn_fair_pc(df, "D", ["s0", "s1"], 0.01, k=10, max_iter=3, pseudocount=0.01,
                  decouple=False, fallback=False, progress=False)
    assert seen
    eps = parameter_floor(0.01, len(df))
    for sp, x, lower in seen:
        assert np.all(lower <= np.log(eps))
        w = np.exp(sp.log_softmax(x))
        floor = np.exp(lower) / sp.group_sizes[sp.group_of]
        assert np.all(w >= floor * (1 - 1e-9)), "a weight fell below the floor"
