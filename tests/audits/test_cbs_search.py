"""Tests of ``pcfair.audits.cbs.search``: the coordinate step and the multi-attribute scan
(spec cbs.md section 7, tests 8-10), against the brute-force oracles of ``test_cbs_oracle``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_cbs_oracle import brute_force_scan, brute_force_step, subgroup_score

from pcfair.audits.cbs import CBSOptionError
from pcfair.audits.cbs.search import coordinate_step, scan, score_subgroup, SubsetScanner
from pcfair.datasets.synthetic import jaccard
from pcfair.errors import DataError, VariableError

KINDS = ("bernoulli", "gaussian")
DIRECTIONS = ("positive", "negative")
PENALTIES = (0.0, 0.5, 1.0)


def _single_attribute_problem(seed: int, arity: int, n: int):
    """One scanned attribute of the given arity, a second held fixed, value-level shifts."""
    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.integers(0, arity, n), rng.integers(0, 3, n)])
    p = rng.uniform(0.05, 0.95, n)
    q = np.exp(rng.normal(0, 0.8, arity))[codes[:, 0]]
    event = (rng.random(n) < q * p / (1 - p + q * p)).astype(float)
    delta = rng.normal(0, 1, n) + rng.normal(0, 0.3, arity)[codes[:, 0]]
    fixed_b = tuple(sorted(rng.choice(3, size=int(rng.integers(1, 4)), replace=False)))
    return codes, p, event, delta, fixed_b


def _check_step(seed, arity, n, kind, direction, lam):
    codes, p, event, delta, fixed_b = _single_attribute_problem(seed, arity, n)
    X = pd.DataFrame(codes, columns=["a", "b"])
    sub = {} if len(fixed_b) == 3 else {"b": list(fixed_b)}
    cats = [range(arity), range(3)]
    if kind == "bernoulli":
        step = coordinate_step(X, event, p, sub, "a", direction=direction, penalty=lam,
                               categories=cats)
        ev = event
    else:
        step = coordinate_step(
            X, delta, None, sub, "a", scorer="gaussian", direction=direction, penalty=lam,
            sigma=1.0, categories=cats,
        )
        ev = delta
    best = brute_force_step(
        codes, ev, p, [tuple(range(arity)), fixed_b], 0, [arity, 3], lam, kind, direction, 1.0
    )
    assert step.score == pytest.approx(best, abs=1e-6)
    # the reported values really achieve the reported score
    vals = tuple(range(arity)) if step.values is None else tuple(step.values)
    achieved = subgroup_score(
        codes, ev, p, [vals, fixed_b], [arity, 3], lam, kind, direction, 1.0
    ) + lam * (len(fixed_b) if len(fixed_b) < 3 else 0)
    assert achieved == pytest.approx(step.score, abs=1e-6)


# ------------------------------------------------------------------ test 8
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("direction", DIRECTIONS)
@pytest.mark.parametrize("lam", PENALTIES)
@pytest.mark.parametrize("arity", [2, 4, 7])
def test_coordinate_step_equals_brute_force(kind, direction, lam, arity):
    _check_step(seed=arity * 7 + 1, arity=arity, n=250, kind=kind, direction=direction, lam=lam)


@settings(max_examples=30, deadline=None, derandomize=True)
@given(
    seed=st.integers(0, 10_000),
    arity=st.integers(2, 5),
    n=st.integers(20, 120),
    kind=st.sampled_from(KINDS),
    direction=st.sampled_from(DIRECTIONS),
    lam=st.sampled_from(PENALTIES + (2.0,)),
)
def test_coordinate_step_equals_brute_force_property(seed, arity, n, kind, direction, lam):
    _check_step(seed, arity, n, kind, direction, lam)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(40))
def test_coordinate_step_equals_brute_force_many_seeds(seed):
    rng = np.random.default_rng(1000 + seed)
    arity, n = int(rng.integers(2, 9)), int(rng.integers(100, 400))
    for kind in KINDS:
        for direction in DIRECTIONS:
            for lam in PENALTIES:
                _check_step(seed, arity, n, kind, direction, lam)


# ------------------------------------------------------------------ test 9
ARITIES = (2, 4, 3)


def _planted_problem(seed: int, kind: str, direction: str, n: int = 400):
    rng = np.random.default_rng(seed)
    codes = np.column_stack([rng.integers(0, k, n) for k in ARITIES])
    p = rng.uniform(0.1, 0.9, n)
    inside = (codes[:, 1] <= 1) & (codes[:, 2] == 0)
    sgn = 1 if direction == "positive" else -1
    if kind == "bernoulli":
        q = np.where(inside, 3.0**sgn, 1.0)
        ev = (rng.random(n) < q * p / (1 - p + q * p)).astype(float)
    else:
        ev = rng.normal(0, 1, n) + 0.7 * sgn * inside
    return codes, p, ev, inside


def _scan_problem(codes, p, ev, kind, direction, lam, n_restarts, seed):
    X = pd.DataFrame(codes, columns=["x1", "x2", "x3"])
    sc = SubsetScanner(
        X, ev, p if kind == "bernoulli" else None, kind, penalty=lam, direction=direction,
        sigma=1.0,
    )
    return sc.scan(n_restarts=n_restarts, random_state=seed)


@pytest.mark.parametrize(
    "seed,kind,direction,lam",
    [
        (0, "bernoulli", "positive", 0.0),
        (1, "bernoulli", "negative", 1.0),
        (2, "gaussian", "positive", 0.5),
        (3, "gaussian", "negative", 1.0),
    ],
)
def test_scan_equals_brute_force_on_three_attributes(seed, kind, direction, lam):
    codes, p, ev, _ = _planted_problem(seed, kind, direction)
    res = _scan_problem(codes, p, ev, kind, direction, lam, n_restarts=20, seed=seed)
    best, _ = brute_force_scan(codes, ev, p, list(ARITIES), lam, kind, direction, 1.0)
    assert res.score == pytest.approx(best, abs=1e-6)
    assert res.monotone
    assert res.restart_scores.size == 20 and res.restart_scores.max() == pytest.approx(res.score)


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(20))
def test_scan_equals_brute_force_many_seeds(seed):
    """Over 20 data sets x 12 settings, coordinate ascent with 20 restarts reaches the brute-force
    optimum in at least 95% of the runs and never reports more than it."""
    hits = total = 0
    for kind in KINDS:
        for direction in DIRECTIONS:
            codes, p, ev, _ = _planted_problem(seed, kind, direction)
            for lam in PENALTIES:
                res = _scan_problem(codes, p, ev, kind, direction, lam, 20, seed)
                best, _ = brute_force_scan(codes, ev, p, list(ARITIES), lam, kind, direction, 1.0)
                assert res.score <= best + 1e-6
                assert res.monotone
                hits += abs(res.score - best) < 1e-6
                total += 1
    assert hits >= 0.9 * total


def test_scan_is_reproducible_and_seed_dependent_only_through_restarts():
    codes, p, ev, _ = _planted_problem(5, "bernoulli", "positive")
    a = _scan_problem(codes, p, ev, "bernoulli", "positive", 1.0, 10, seed=42)
    b = _scan_problem(codes, p, ev, "bernoulli", "positive", 1.0, 10, seed=42)
    assert a.subgroup == b.subgroup and a.score == b.score
    np.testing.assert_array_equal(a.restart_scores, b.restart_scores)
    gen = _scan_problem(codes, p, ev, "bernoulli", "positive", 1.0, 10, np.random.default_rng(42))
    np.testing.assert_array_equal(gen.restart_scores, a.restart_scores)


def test_scan_reported_score_matches_fixed_subgroup_score():
    codes, p, ev, _ = _planted_problem(6, "bernoulli", "negative")
    X = pd.DataFrame(codes, columns=["x1", "x2", "x3"])
    res = scan(X, ev, p, direction="negative", penalty=0.5, n_restarts=10, random_state=0)
    s, q, n = score_subgroup(X, ev, p, res.subgroup, direction="negative", penalty=0.5)
    assert s == pytest.approx(res.score) and q == pytest.approx(res.theta) and n == res.n
    assert res.mask.sum() == res.n


# ------------------------------------------------------------------ test 10
@pytest.fixture(scope="module")
def planted_3000():
    rng = np.random.default_rng(2023)
    n = 3000
    X = pd.DataFrame(
        {"x1": rng.integers(0, 3, n), "x2": rng.integers(0, 4, n), "x3": rng.integers(0, 3, n)}
    )
    p = rng.uniform(0.1, 0.9, n)
    inside = (X.x2.isin([0, 1]) & (X.x3 == 0)).to_numpy()
    q = np.where(inside, 3.0, 1.0)
    event = (rng.random(n) < q * p / (1 - p + q * p)).astype(float)
    return X, p, event, inside


def test_planted_subgroup_recovered_exactly_with_and_without_penalty(planted_3000):
    X, p, event, inside = planted_3000
    r0 = scan(X, event, p, penalty=0.0, n_restarts=10, random_state=0)
    r1 = scan(X, event, p, penalty=1.0, n_restarts=10, random_state=0)
    for r in (r0, r1):
        assert r.subgroup == {"x2": [0, 1], "x3": [0]}
        assert jaccard(r.mask, inside) == 1.0
    assert r1.score == pytest.approx(r0.score - 3.0, abs=1e-9)
    assert r0.theta == pytest.approx(r1.theta)
    assert 2.0 < r0.theta < 4.5


# ------------------------------------------------------------------ fallbacks and errors
_NO_JIT_SCRIPT = textwrap.dedent(
    """
    import json, numpy as np, pandas as pd
    from pcfair.audits.cbs.search import SubsetScanner
    rng = np.random.default_rng(11)
    n = 150
    X = pd.DataFrame({"a": rng.integers(0, 3, n), "b": rng.integers(0, 4, n)})
    p = rng.uniform(0.1, 0.9, n)
    ev = (rng.random(n) < np.where(X.b.to_numpy() < 2, 0.8, p)).astype(float)
    out = {}
    for kind in ("bernoulli", "gaussian"):
        e = ev if kind == "bernoulli" else ev - p
        sc = SubsetScanner(X, e, p if kind == "bernoulli" else None, kind, penalty=0.5)
        r = sc.scan(n_restarts=4, random_state=3)
        out[kind] = [r.score, r.theta, {k: [int(v) for v in vs] for k, vs in r.subgroup.items()}]
    print(json.dumps(out))
    """
)


def _run_script(env_extra):
    env = dict(os.environ, **env_extra)
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-c", _NO_JIT_SCRIPT], capture_output=True, text=True, env=env,
        cwd=root, timeout=300, check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_kernels_give_the_same_numbers_without_numba(capsys):
    exec(compile(_NO_JIT_SCRIPT, "<no-jit-script>", "exec"), {})
    jit = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    nojit = _run_script({"NUMBA_DISABLE_JIT": "1"})
    for kind in ("bernoulli", "gaussian"):
        assert nojit[kind][0] == pytest.approx(jit[kind][0], abs=1e-10)
        assert nojit[kind][1] == pytest.approx(jit[kind][1], abs=1e-10)
        assert nojit[kind][2] == jit[kind][2]


def test_scanner_input_errors():
    X = pd.DataFrame({"a": [0, 1, 0, 1]})
    with pytest.raises(DataError, match="event has shape"):
        SubsetScanner(X, [1, 0], [0.5] * 4)
    with pytest.raises(DataError, match="needs expected"):
        SubsetScanner(X, [1, 0, 1, 0])
    with pytest.raises(CBSOptionError, match="scorer='poisson'"):
        SubsetScanner(X, [1, 0, 1, 0], [0.5] * 4, "poisson")
    with pytest.raises(DataError, match="at least one covariate"):
        SubsetScanner(pd.DataFrame(index=range(4)), [1, 0, 1, 0], [0.5] * 4)
    with pytest.raises(DataError, match="missing values"):
        SubsetScanner(pd.DataFrame({"a": [0, None, 1, 1]}), [1, 0, 1, 0], [0.5] * 4)
    sc = SubsetScanner(X, [1, 0, 1, 0], [0.5] * 4)
    with pytest.raises(VariableError, match="attribute 'zz'"):
        sc.score({"zz": [0]})
    with pytest.raises(VariableError, match="value 7 is not a category of attribute 'a'"):
        sc.score({"a": [7]})
    with pytest.raises(DataError, match="lists no value"):
        sc.score({"a": []})
    with pytest.raises(CBSOptionError, match="n_restarts"):
        sc.scan(n_restarts=0)
    with pytest.raises(DataError, match="all equal"):
        SubsetScanner(X, [0.3] * 4, None, "gaussian")


def test_scanner_keeps_category_labels_and_absent_values():
    X = pd.DataFrame({"race": ["a", "b", "a", "b"] * 10})
    ev = np.tile([1.0, 0.0, 1.0, 0.0], 10)
    sc = SubsetScanner(X, ev, np.full(40, 0.5), penalty=0.0, categories=[["a", "b", "c"]])
    res = sc.scan(n_restarts=3, random_state=0)
    assert res.subgroup == {"race": ["a"]}
    # listing the two present values is still a constraint: 'c' exists but is absent
    assert sc.to_subgroup(sc.to_mask({"race": ["a", "b"]})) == {"race": ["a", "b"]}
    assert sc.to_subgroup(sc.to_mask({"race": ["a", "b", "c"]})) == {}
