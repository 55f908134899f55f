"""Benchmark the Conditional Bias Scan against aif360's MDSS on the same data, in the same run.

Usage::

    .venv/bin/python benchmarks/bench_cbs.py                 # 20 restarts, 3 data sizes
    .venv/bin/python benchmarks/bench_cbs.py --restarts 50 --sizes 3000 20000

Part 1 (needs ``pip install aif360``; skipped with a message otherwise): the Bernoulli subset
scan, which both implement, on identical inputs (covariates X, event I, expectation Î, positive
direction, penalty 1): pcfair's :class:`~pcfair.audits.cbs.SubsetScanner` against aif360's
``MDSS(Bernoulli).scan`` with the same number of restarts. It prints both subgroups and scores
(they should coincide) and the time ratio aif360 / pcfair. aif360's scan is the CBS search
engine without Î estimation, the Gaussian logit score or the permutation test, so only the
scan is compared.

Part 2: pcfair's whole pipeline on semi-synthetic COMPAS-like data, one scan and a permutation
test serially and on all cores.
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np
import pandas as pd

from pcfair.audits.cbs import conditional_bias_scan
from pcfair.audits.cbs.search import SubsetScanner
from pcfair.datasets.synthetic import compas_like_covariates, make_semisynthetic


def scan_inputs(n: int, seed: int = 0):
    """COMPAS-like covariates, Î ~ U(0.1, 0.9), odds x 2.5 in a planted subgroup."""
    X = compas_like_covariates(n, random_state=seed).astype(str)
    rng = np.random.default_rng(seed + 1)
    p = rng.uniform(0.1, 0.9, n)
    inside = (X.priors.isin(["None", "1 to 5"]) & (X.age == "Under 25")).to_numpy()
    q = np.where(inside, 2.5, 1.0)
    y = (rng.random(n) < q * p / (1 - p + q * p)).astype(int)
    return X, pd.Series(p), pd.Series(y)


def timed(fn, repeat=1):
    best = np.inf
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return out, best


def part1(sizes, restarts):
    try:
        from aif360.detectors.mdss.MDSS import MDSS
        from aif360.detectors.mdss.ScoringFunctions import Bernoulli
    except ImportError:
        print("part 1 skipped: aif360 is not installed (pip install aif360 to cross-check)")
        return
    # warm the numba kernels so that compile time is not counted
    X, p, y = scan_inputs(500)
    SubsetScanner(X, y.to_numpy(), p.to_numpy(), penalty=1.0).scan(2, 0)
    print(f"Part 1: Bernoulli subset scan, positive direction, penalty 1, {restarts} restarts")
    print(f"{'n':>7} {'aif360 s':>9} {'pcfair s':>9} {'ratio':>7} {'same subgroup':>14} "
          f"{'aif360 score':>13} {'pcfair score':>13}")
    for n in sizes:
        X, p, y = scan_inputs(n)
        mdss = MDSS(Bernoulli(direction="positive"))
        (sub_a, score_a), t_a = timed(
            lambda: mdss.scan(X, p, y, penalty=1.0, num_iters=restarts, seed=0)  # noqa: B023
        )
        scanner = SubsetScanner(X, y.to_numpy(), p.to_numpy(), penalty=1.0)
        res, t_p = timed(
            lambda: scanner.scan(n_restarts=restarts, random_state=0), repeat=3  # noqa: B023
        )
        same = {k: sorted(v) for k, v in sub_a.items()} == {
            k: sorted(v) for k, v in res.subgroup.items()
        }
        print(f"{n:>7} {t_a:>9.3f} {t_p:>9.4f} {t_a / t_p:>7.0f} {str(same):>14} "
              f"{score_a:>13.4f} {res.score:>13.4f}")
        if not same:
            print(f"        aif360: {sub_a}\n        pcfair: {res.subgroup}")


def part2(restarts, permutations):
    X = compas_like_covariates(6172, random_state=0)
    sim = make_semisynthetic(X, protected=("race", "African-American"), mu_sep=1.0,
                             random_state=0)
    kw = dict(protected="protected", outcome="y", prediction="p", recommendation="pbin",
              covariates=sim.covariates, definition="fpr", n_restarts=restarts, random_state=0)
    conditional_bias_scan(sim.data, n_permutations=0, **kw)  # warm-up
    print(f"\nPart 2: conditional_bias_scan on 6,172 rows (FPR scan, {restarts} restarts)")
    _, t1 = timed(lambda: conditional_bias_scan(sim.data, n_permutations=0, **kw), repeat=3)
    print(f"  one scan (propensity, Î, scan): {t1:.3f} s")
    r1, ts = timed(lambda: conditional_bias_scan(sim.data, n_permutations=permutations,
                                                 n_jobs=1, **kw))
    cores = os.cpu_count() or 1
    rp, tp = timed(lambda: conditional_bias_scan(sim.data, n_permutations=permutations,
                                                 n_jobs=-1, **kw))
    same = np.array_equal(r1.null_scores, rp.null_scores)
    print(f"  {permutations} permutations serial: {ts:.2f} s; on {cores} cores: {tp:.2f} s "
          f"(speed-up {ts / tp:.2f}; identical null scores: {same}); p = {r1.p_value:.3f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 3000, 10000])
    ap.add_argument("--restarts", type=int, default=20)
    ap.add_argument("--permutations", type=int, default=99)
    args = ap.parse_args()
    part1(args.sizes, args.restarts)
    part2(args.restarts, args.permutations)


if __name__ == "__main__":
    main()
