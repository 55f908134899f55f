"""Benchmark AVOIR: samples-to-verdict of the optimised split (OB) against the equal split (VF)
on synthetic streams, and monitoring throughput, measured in the same run.

Usage::

    .venv/bin/python benchmarks/bench_avoir.py            # 20 seeds
    .venv/bin/python benchmarks/bench_avoir.py --seeds 5  # quicker

Each stream draws a group ``g`` (and a second attribute ``a`` where a spec uses one) and a
decision ``r ~ Bernoulli(μ_g)``; every seed is run with both splits on the same records. The
table shows the mean and median stop time per split, OB's mean saving in percent, and how many
seeds OB stopped strictly earlier, at the same time, or later (never, by construction).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from pcfair.audits.avoir import Monitor, spec


def make_stream(seed: int, n: int, p_a: float, mu: dict, p_b: float = 0.5) -> pd.DataFrame:
    """Groups g ∈ {0, 1} (P(g = 1) = p_a) and a ∈ {0, 1}; r ~ Bernoulli(mu[(g, a)])."""
    rng = np.random.default_rng(seed)
    g = (rng.random(n) < p_a).astype(int)
    a = (rng.random(n) < p_b).astype(int)
    p = np.array([mu[(gi, ai)] for gi, ai in [(0, 0), (0, 1), (1, 0), (1, 1)]])
    r = (rng.random(n) < p[2 * g + a]).astype(int)
    return pd.DataFrame({"g": g, "a": a, "r": r})


def flat(mu_g0: float, mu_g1: float) -> dict:
    return {(0, 0): mu_g0, (0, 1): mu_g0, (1, 0): mu_g1, (1, 1): mu_g1}


CASES = [
    # name, spec, Δ, P(g = 1), μ
    ("difference (spec F.1)", "E[r | g == 1] - E[r | g == 0] < 0.1", 0.1, 0.83,
     flat(0.5, 0.8)),
    ("80% rule (spec F.2)", "E[r | g == 0] / E[r | g == 1] > 0.8", 0.05, 0.7,
     flat(0.36, 0.6)),
    ("two-sided ratio (RMP form)",
     "(E[r | g == 0] / E[r | g == 1] < 1.25) & (E[r | g == 1] / E[r | g == 0] > 0.8)",
     0.05, 0.75, flat(0.5, 0.52)),
    ("intersectional conjunction",
     "(E[r | g == 1] - E[r | g == 0] < 0.2) & (E[r | a == 1] - E[r | a == 0] < 0.2)",
     0.1, 0.8, {(0, 0): 0.45, (0, 1): 0.5, (1, 0): 0.55, (1, 1): 0.6}),
    ("equalised-odds style, 4 leaves",
     "(E[r | g == 1 & a == 1] - E[r | g == 0 & a == 1] < 0.1) & "
     "(E[r | g == 1 & a == 0] - E[r | g == 0 & a == 0] < 0.1)",
     0.1, 0.85, {(0, 0): 0.3, (0, 1): 0.55, (1, 0): 0.5, (1, 1): 0.6}),
    ("disjunction", "(E[r | g == 1] > 0.75) | (E[r | g == 0] > 0.75)", 0.1, 0.9,
     flat(0.8, 0.6)),
]


def stop_times(case, seeds, n):
    name, text, delta, p_a, mu = case
    out = {"optimized": [], "equal": []}
    for seed in seeds:
        df = make_stream(seed, n, p_a, mu)
        for split in out:
            res = Monitor(text, failure_prob=delta, split=split).run(df)
            out[split].append(np.nan if res.stop is None else res.stop)
    return out


def throughput(n: int) -> list[dict]:
    text, delta, p_a, mu = CASES[0][1], CASES[0][2], CASES[0][3], CASES[0][4]
    df = make_stream(12345, n, p_a, mu)
    rows = []
    for split in ("optimized", "equal"):
        for chunk in (n, 1000):
            m = Monitor(text, failure_prob=delta, split=split, keep_history=False)
            start = time.perf_counter()
            for i in range(0, n, chunk):
                m.update(df.iloc[i:i + chunk])
            elapsed = time.perf_counter() - start
            rows.append({"mode": f"update, chunks of {chunk}", "split": split,
                         "records": n, "seconds": elapsed, "records/s": n / elapsed})
    # one record per call through the decorator
    n_calls = min(n, 5000)
    records = df.iloc[:n_calls][["g", "a"]].to_numpy()
    outputs = df.iloc[:n_calls]["r"].to_numpy()
    for split in ("optimized", "equal"):
        @spec(text, failure_prob=delta, split=split, keep_history=False)
        def decide(g, a, _i):
            return int(outputs[_i])

        start = time.perf_counter()
        for i, (g, a) in enumerate(records):
            decide(int(g), int(a), i)
        decide.result()
        elapsed = time.perf_counter() - start
        rows.append({"mode": "decorator, one record per call", "split": split,
                     "records": n_calls, "seconds": elapsed, "records/s": n_calls / elapsed})
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--length", type=int, default=30_000, help="records per stream")
    parser.add_argument("--throughput-records", type=int, default=200_000)
    args = parser.parse_args(argv)
    seeds = range(args.seeds)

    print(f"samples to verdict, {args.seeds} seeds, streams of {args.length} records "
          "(batch 5, adaptive Hoeffding)")
    rows = []
    t0 = time.perf_counter()
    for case in CASES:
        out = stop_times(case, seeds, args.length)
        ob, vf = np.array(out["optimized"]), np.array(out["equal"])
        both = ~np.isnan(ob) & ~np.isnan(vf)
        rows.append({
            "specification": case[0],
            "Δ": case[2],
            "OB decided": int((~np.isnan(ob)).sum()),
            "VF decided": int((~np.isnan(vf)).sum()),
            "OB mean": np.nanmean(ob) if (~np.isnan(ob)).any() else np.nan,
            "VF mean": np.nanmean(vf) if (~np.isnan(vf)).any() else np.nan,
            "OB median": np.nanmedian(ob) if (~np.isnan(ob)).any() else np.nan,
            "VF median": np.nanmedian(vf) if (~np.isnan(vf)).any() else np.nan,
            "saving %": 100 * (1 - ob[both].mean() / vf[both].mean()) if both.any() else np.nan,
            "OB earlier": int((ob[both] < vf[both]).sum()),
            "tie": int((ob[both] == vf[both]).sum()),
            "OB later": int((ob[both] > vf[both]).sum())
            + int((np.isnan(ob) & ~np.isnan(vf)).sum()),
        })
    table = pd.DataFrame(rows)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(table.to_string(index=False, formatters={"Δ": "{:g}".format},
                              float_format=lambda x: f"{x:.1f}"))
    print(f"({time.perf_counter() - t0:.1f} s)\n")

    print("monitoring throughput (same run; no verdict stops the stream: "
          "the monitor keeps checking every 5 records)")
    tp = pd.DataFrame(throughput(args.throughput_records))
    print(tp.to_string(index=False, float_format=lambda x: f"{x:,.2f}"))


if __name__ == "__main__":
    main()
