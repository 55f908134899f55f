"""Benchmark: TestSGD's batched audit against a one-sample-at-a-time Algorithm 2 loop.

Both run in the same process on the same model and rule sets. The batched audit labels
blocks of many rule sets per model call (``pcfair.audits.testsgd.audit``); the loop is
``sequential_group_fairness_score`` with ``chunk_size=1``: per step it draws one member of R
and one of not-R with their own sampler calls and asks the model for one label each, as the
paper's Algorithm 2 is written. The loop is timed on an evenly spaced sample of the rule
sets and reported per rule set.

Usage::

    .venv/bin/python benchmarks/bench_testsgd.py                 # synthetic T11 data
    .venv/bin/python benchmarks/bench_testsgd.py --data adult    # needs $PCFAIR_DATA/raw/adult.data
    .venv/bin/python benchmarks/bench_testsgd.py --data adult --model mlp --loop-sets 3
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

from pcfair.audits.testsgd import audit
from pcfair.audits.testsgd.tabular_sampler import TabularPerturbationSampler
from pcfair.audits.testsgd.errors import SkippedRuleSetWarning
from pcfair.audits.testsgd.mining import frequent_rule_sets
from pcfair.audits.testsgd.scoring import sequential_group_fairness_score
from pcfair.audits.testsgd.specs import resolve_specs

ADULT_COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week", "native-country",
    "income",
]


def load_adult() -> tuple[pd.DataFrame, pd.Series, object]:
    """Adult training file without missing values: (X, y, favourable label)."""
    home = os.environ.get("PCFAIR_DATA", str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    try:
        from pcfair.datasets import fetch_adult

        ds = fetch_adult(dropna=True, download_if_missing=False, data_home=home)
        return ds.X, ds.y.astype(str), ">50K"
    except ImportError:
        frame = pd.read_csv(Path(home) / "raw" / "adult.data", header=None, names=ADULT_COLUMNS,
                            skipinitialspace=True, na_values=["?"]).dropna().reset_index(drop=True)
        return frame.drop(columns="income"), frame["income"], ">50K"


def load_synthetic(n: int = 20_000, seed: int = 0) -> tuple[pd.DataFrame, pd.Series, object]:
    """T11's planted data with labels biased against G = {F, race B or C, 40<=age<70}."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame({
        "gender": rng.choice(["M", "F"], n),
        "race": rng.choice(list("ABCDE"), n, p=[0.4, 0.2, 0.2, 0.1, 0.1]),
        "age": rng.integers(18, 90, n),
        "x_int": rng.integers(0, 51, n),
        "x_float": np.round(rng.random(n), 2),
    })
    g = (X["gender"] == "F") & X["race"].isin(["B", "C"]) & X["age"].between(40, 69)
    y = np.where(g, X["x_float"] >= 0.9, X["x_float"] >= 0.5).astype(int)
    return X, pd.Series(y), 1


def make_model(X: pd.DataFrame, kind: str):
    numeric = [c for c in X.columns if pd.api.types.is_numeric_dtype(X[c])]
    categorical = [c for c in X.columns if c not in numeric]
    features = ColumnTransformer([
        ("cat", OneHotEncoder(handle_unknown="ignore"), categorical),
        ("num", StandardScaler(), numeric),
    ])
    if kind == "mlp":  # the six-layer fully connected network of ADF / TestSGD
        clf = MLPClassifier(hidden_layer_sizes=(64, 32, 16, 8, 4), max_iter=40, random_state=0)
    else:
        clf = LogisticRegression(max_iter=1000)
    return make_pipeline(features, clf)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", choices=("synthetic", "adult"), default="synthetic")
    ap.add_argument("--model", choices=("logistic", "mlp"), default="logistic")
    ap.add_argument("--sup-thr", type=float, default=None, help="theta (default: 0.2 synthetic, 0.05 adult)")
    ap.add_argument("--loop-sets", type=int, default=5, help="rule sets timed with the loop")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    if args.data == "adult":
        X, y, favorable = load_adult()
        sensitive = {"sex": "categorical", "race": "categorical", "age": (0, 100)}
        sup_thr = 0.05 if args.sup_thr is None else args.sup_thr
    else:
        X, y, favorable = load_synthetic()
        sensitive = {"gender": "categorical", "race": "categorical", "age": (0, 100)}
        sup_thr = 0.2 if args.sup_thr is None else args.sup_thr

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)  # 40 epochs, as a fixed budget
        model = make_model(X, args.model).fit(X, y)
    t_fit = time.perf_counter() - t0
    calls = {"n": 0, "rows": 0}

    def predict(batch):
        calls["n"] += 1
        calls["rows"] += len(batch)
        return model.predict(batch)

    t0 = time.perf_counter()
    mined = frequent_rule_sets(X, sensitive, sup_thr=sup_thr)
    t_mine = time.perf_counter() - t0

    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SkippedRuleSetWarning)
        res = audit(X, predict, sensitive=sensitive, favorable=favorable, sup_thr=sup_thr, random_state=args.seed).table
    t_audit = time.perf_counter() - t0
    n_sets = len(res)
    batched_calls, batched_rows = calls["n"], calls["rows"]

    # The one-pair-at-a-time loop on an evenly spaced sample of the scored rule sets.
    sampler = TabularPerturbationSampler().fit(X, resolve_specs(X, sensitive))
    picks = np.linspace(0, n_sets - 1, num=min(args.loop_sets, n_sets)).round().astype(int)
    calls["n"] = calls["rows"] = 0
    t0 = time.perf_counter()
    loop_scores = [
        sequential_group_fairness_score(predict, sampler, res.index[i], favorable=favorable,
                                        random_state=args.seed + int(i), chunk_size=1)
        for i in picks
    ]
    t_loop = time.perf_counter() - t0
    loop_queries = sum(s.n_queries for s in loop_scores)

    per_batched = t_audit / n_sets
    per_loop = t_loop / len(picks)
    print(f"TestSGD benchmark: data={args.data} ({len(X)} rows), model={args.model} (fit {t_fit:.1f} s), "
          f"theta={sup_thr}")
    print(f"frequent rule sets: {len(mined)} of {mined.attrs['n_candidates']} candidates, "
          f"mined in {t_mine * 1e3:.0f} ms; scored: {n_sets}")
    print()
    print(f"{'implementation':<34}{'rule sets':>10}{'model calls':>13}{'queries/set':>13}{'s/rule set':>12}")
    print(f"{'batched audit (this port)':<34}{n_sets:>10}{batched_calls:>13}{batched_rows / n_sets:>13.0f}"
          f"{per_batched:>12.5f}")
    print(f"{'one-sample-at-a-time loop':<34}{len(picks):>10}{calls['n']:>13}{loop_queries / len(picks):>13.0f}"
          f"{per_loop:>12.5f}")
    print()
    print(f"whole audit: {t_audit:.2f} s for {n_sets} rule sets; the loop would take about "
          f"{per_loop * n_sets:.0f} s; speed-up per rule set: {per_loop / per_batched:.0f}x")
    print(f"samples per group at the stop (batched): median {int(res['n_samples'].median())}, "
          f"max {int(res['n_samples'].max())}; top rule set: {res['rule_set'].iloc[0]} "
          f"(f = {res['score'].iloc[0]:.3f} +- {res['margin'].iloc[0]:.3f})")


if __name__ == "__main__":
    main()
