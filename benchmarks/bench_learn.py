"""Learning time and test log-likelihood of CLT and Strudel circuits on the binarized data.

For each binarized table (COMPAS, Adult, German, ACS-Income from ``../shared/data``, through
``pcfair.datasets``), a seeded 80/20 train/test split; prints learning time, circuit size and
mean test log-likelihood per row for CLT and Strudel, against a fully factorised
(independence) model fitted in the same run. Usage::

    python benchmarks/bench_learn.py [--max-splits 50] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
os.environ.setdefault("PCFAIR_DATA", str(SHARED))

from pcfair.datasets import load_binarized  # noqa: E402
from pcfair.learn import learn_pc  # noqa: E402
from pcfair.learn.clt import train_valid_split  # noqa: E402


def independence_ll(train, test) -> float:
    """Mean test log-likelihood of the product of smoothed marginals (pseudocount 1)."""
    ll = np.zeros(len(test))
    for c in train.columns:
        values = sorted(set(train[c]) | set(test[c]))
        counts = train[c].value_counts().reindex(values, fill_value=0).to_numpy() + 1 / len(values)
        p = dict(zip(values, counts / counts.sum()))
        ll += np.log(test[c].map(p).to_numpy())
    return float(ll.mean())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--max-splits", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    print(f"{'data':<11} {'rows':>7} {'indep LL':>9} {'CLT LL':>9} {'CLT s':>6} {'nodes':>6} "
          f"{'Strudel LL':>10} {'Strudel s':>9} {'nodes':>6} {'gain vs CLT':>11}")
    for name in ("compas", "adult", "german", "acs_income"):
        ds = load_binarized(name)
        train, test = train_valid_split(ds.frame, 0.2, random_state=args.seed)
        t = time.perf_counter()
        clt = learn_pc(train, ds.target)
        t_clt = time.perf_counter() - t
        t = time.perf_counter()
        st = learn_pc(train, ds.target, structure="strudel", random_state=args.seed,
                      max_splits=args.max_splits)
        t_st = time.perf_counter() - t
        ll_clt = float(clt.log_marginal(test).mean())
        ll_st = float(st.log_marginal(test).mean())
        print(f"{name:<11} {len(ds.frame):>7} {independence_ll(train, test):>9.4f} "
              f"{ll_clt:>9.4f} {t_clt:>6.2f} {clt.num_nodes:>6} {ll_st:>10.4f} {t_st:>9.2f} "
              f"{st.num_nodes:>6} {ll_st - ll_clt:>+11.4f}")


if __name__ == "__main__":
    main()
