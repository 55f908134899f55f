"""Pattern census with the dense engine, against brute-force enumeration in the same run.

For circuits learned (CLT) on the binarized COMPAS (7 features, 4 sensitive: 14,688 patterns)
and Adult (13 features, 4 sensitive: 10.7 million patterns) tables from ``../shared/data``,
prints the time and peak memory of a full census — counts at δ ∈ {0.01, 0.05, 0.1}, maximal,
minimal and Pareto-optimal patterns, top-1/10/100 by discrimination and divergence — and, on
COMPAS, the time of a plain Python enumeration of every pattern (the baseline) and the ratio.
Then the sampling miner on COMPAS (the paper's Table 3 measure): patterns explored and seconds
until the top-1 pattern is first seen, averaged over 10 seeds, plain and memoized, against the
exhaustive count; and the branch-and-bound engine on the German CLT (21 features, ~70 billion
patterns) certifying and mining under time limits, with nodes visited.

Usage::

    python benchmarks/bench_patterns.py
"""

from __future__ import annotations

import itertools
import os
import resource
import time
from pathlib import Path

import numpy as np

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
os.environ.setdefault("PCFAIR_DATA", str(SHARED))

from pcfair.datasets import load_binarized  # noqa: E402
from pcfair.learn import learn_pc  # noqa: E402
from pcfair.patterns import certify, find_patterns, pattern_census, sample_patterns  # noqa: E402


def brute_force_census(pc, decision, sensitive, delta) -> int:
    """Count discrimination patterns by enumerating them one by one (two marginal queries
    per pattern, batched only per pattern): the baseline."""
    names = [n for n in pc.names if n != decision]
    count = 0
    states = []
    for n in names:
        k = len(pc.variables.domains[pc.variables.index(n)])
        opts = [None] + [("y", v) for v in range(k)]
        if n in sensitive:
            opts += [("x", v) for v in range(k)]
        states.append(opts)
    for combo in itertools.product(*states):
        if not any(s is not None and s[0] == "x" for s in combo):
            continue
        xy = {n: s[1] for n, s in zip(names, combo) if s is not None}
        y = {n: s[1] for n, s in zip(names, combo) if s is not None and s[0] == "y"}
        lp = pc.log_marginal([{**xy, decision: 1}, xy, {**y, decision: 1}, y])
        if lp[1] == -np.inf:
            continue
        delta_score = np.exp(lp[0] - lp[1]) - np.exp(lp[2] - lp[3])
        count += abs(delta_score) > delta
    return count


def main() -> None:
    for name in ("compas", "adult"):
        ds = load_binarized(name)
        pc = learn_pc(ds.frame, ds.target)
        if name == "compas":  # warm-up: numba kernels load from their cache once per process
            pattern_census(pc, ds.target, ds.sensitive)
        t = time.perf_counter()
        census = pattern_census(pc, ds.target, ds.sensitive)
        elapsed = time.perf_counter() - t
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # GiB (Linux: KiB)
        print(f"\n{name}: census of {pc.num_variables - 1} features "
              f"({len(ds.sensitive)} sensitive) in {elapsed:.3f} s, peak RSS {peak:.2f} GiB")
        print(census.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        if name == "compas":
            t = time.perf_counter()
            n = brute_force_census(pc, ds.target, ds.sensitive, 0.05)
            base = time.perf_counter() - t
            assert n == int(census.loc[census.delta == 0.05, "patterns"].iloc[0])
            print(f"baseline: one-by-one enumeration counted {n} patterns at δ=0.05 in "
                  f"{base:.2f} s; the whole dense census is {base / elapsed:.0f}× faster")


def sampling_part() -> None:
    ds = load_binarized("compas")
    pc = learn_pc(ds.frame, ds.target)
    best = find_patterns(pc, ds.target, ds.sensitive, 0.05, kind="topk", k=1)[0]
    total = pattern_census(pc, ds.target, ds.sensitive, deltas=(0.0,), ks=(1,))
    n_patterns = 5**4 * 3**3 - 3**7
    print(f"\nsampling on COMPAS (δ = 0.05, top-1 |Δ| = {best.abs_score:.4f}; exhaustive "
          f"enumeration scores all {n_patterns} patterns, "
          f"{int(total['patterns'].iloc[0])} with |Δ| > 0):")
    for memo in (False, True):
        explored, seconds = [], []
        for seed in range(10):
            ps = sample_patterns(pc, ds.target, ds.sensitive, 0.05, runs=300, memo=memo,
                                 random_state=seed)
            top = ps.patterns[0] if len(ps) else None
            if top is not None and abs(top.abs_score - best.abs_score) < 1e-12:
                explored.append(ps.stats["best_first_seen_explored"])
                seconds.append(ps.stats["best_first_seen_seconds"])
        name = "memoized (Alg. 4)" if memo else "plain (Alg. 2)"
        if explored:
            print(f"  {name}: top-1 found in {len(explored)}/10 seeds after "
                  f"{np.mean(explored):.0f} patterns explored ({np.mean(explored) / n_patterns:.1%}"
                  f" of the space), {np.mean(seconds):.2f} s on average")
        else:
            print(f"  {name}: top-1 not found in 300 runs for any seed")


def search_part() -> None:
    ds = load_binarized("german")
    pc = learn_pc(ds.frame, ds.target)
    space = 5**4 * 3**17 - 3**21
    print(f"\nbranch and bound on the German CLT ({space:,} patterns):")
    for delta in (0.1, 0.2, 0.3):
        cert = certify(pc, ds.target, ds.sensitive, delta, engine="search", time_limit=20)
        verdict = {True: "fair", False: "witness found", None: "incomplete (20 s limit)"}
        print(f"  certify δ={delta}: {verdict[cert.fair]}, {cert.stats['nodes']} nodes "
              f"({cert.stats['nodes'] / space:.1e} of the space), {cert.stats['seconds']:.2f} s")
    top = find_patterns(pc, ds.target, ds.sensitive, 0.01, kind="topk", k=10, engine="search",
                        time_limit=30)
    print(f"  top-10 by discrimination: complete {top.complete}, {top.stats['nodes']} nodes, "
          f"best |Δ| {top.patterns[0].abs_score:.4f}, {top.stats['seconds']:.1f} s")


if __name__ == "__main__":
    main()
    sampling_part()
    search_part()
