"""Issue 40: the engines that decide patterns below the double range, against the code before
the change, in the same run.

Every task runs in a fresh process whose ``PYTHONPATH`` is either this checkout or a
baseline checkout (``--baseline``: a git revision, checked out into a temporary worktree), so
both are measured on the same machine in the same run, each after a warm-up call that
compiles its kernels (numba caches them beside each checkout). The two alternate for
``--rounds`` rounds (before, after, before, after...) and each task is timed ``--repeat``
times a round; the best time over all rounds is kept (this machine is shared: single runs
vary by ±30%). Tasks:

- ``lattice rate``: 24 chunks of the binarized German CLT's lattice (its plan split into 4,096
  chunks, every 170th), counts at δ ∈ {0.01, 0.05, 0.1}, one process: patterns per second.
  The change adds a floor test per cell of each leaf (:func:`pcfair.patterns.lattice.probability_floor`).
- ``german CLT top-1`` / ``certify at max + 0.005``: the compiled tree search on the binarized
  German CLT (:func:`pcfair.learn_pc` of ``german_binerized.csv``), engine ``tree_search``.
  The change carries ``log P(x, y)`` through the kernels and checks each product of the
  messages against the normal range (:mod:`pcfair.patterns._tree_mass_kernels`).
- ``german NB top-10``: the compiled naive-Bayes search on the naive Bayes of the same table.
- ``raw German top-10, min-support 0.001``: the raw UCI table, 4 bins, the tree search.

Usage::

    python benchmarks/bench_float_edge.py [--baseline REV] [--repeat 3] [--rounds 3]
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "data"
SENSITIVE = ["age", "foreign_worker", "sex", "marital_status"]


def _child(repeat: int) -> dict:
    """The measurements, in this process (run with the checkout under test first on the
    path)."""
    os.environ.setdefault("PCFAIR_DATA", str(SHARED))
    import numpy as np
    import pandas as pd

    import pcfair
    from pcfair.learn.fair import learn_mle_pc
    from pcfair.patterns.lattice import LatticeQuery, make_plan, scan_chunk
    from pcfair.patterns.scores import log_normalizer

    sys.path.insert(0, str(HERE))
    from bench_tree_order import raw_german

    df = pd.read_csv(SHARED / "german_binerized.csv")
    clt = pcfair.learn_pc(df, "loan_status")
    nb = learn_mle_pc(df, "loan_status", structure="naive_bayes")
    raw = raw_german()
    out: dict = {}

    def best(fn) -> tuple[float, object]:
        fn()  # warm-up: the kernels' first call
        times, value = [], None
        for _ in range(repeat):
            t0 = time.perf_counter()
            value = fn()
            times.append(time.perf_counter() - t0)
        return min(times), value

    d = list(clt.variables.names).index("loan_status")
    sens = [list(clt.variables.names).index(s) for s in SENSITIVE]
    plan = make_plan(clt, d, 1, sens, min_chunks=4096)
    prefixes = plan.chunks()[::170][:24]
    log_z = log_normalizer(float(clt.log_marginal(None)[0]))
    query = LatticeQuery(deltas=(0.01, 0.05, 0.1))

    def chunks():
        counts = 0
        for p in prefixes:
            counts += int(scan_chunk(clt, plan, p, query, log_z).counts[0])
        return counts

    sec, counts = best(chunks)
    points = plan.num_points / plan.num_chunks * len(prefixes)
    out["lattice rate"] = {"seconds": sec, "rate": points / sec, "answer": counts}

    def top(pc, engine, k, min_support=0.0):
        ps = pcfair.find_patterns(pc, "loan_status" if pc is not raw else "credit",
                                  SENSITIVE if pc is not raw else
                                  ["personal_status", "sex", "age", "foreign_worker"],
                                  0.0, kind="topk", k=k, engine=engine, progress=False,
                                  min_support=min_support,
                                  favorable=None if pc is not raw else "good")
        return [round(p.abs_score, 9) for p in ps], ps.stats.get("nodes")

    sec, (scores, nodes) = best(lambda: top(clt, "tree_search", 1))
    out["german CLT top-1"] = {"seconds": sec, "answer": scores, "nodes": nodes}
    delta = scores[0] + 0.005

    def cert():
        c = pcfair.certify(clt, "loan_status", SENSITIVE, delta, engine="tree_search",
                           progress=False)
        return c.fair, c.stats.get("nodes")

    sec, (fair, nodes) = best(cert)
    out["german CLT certify at max + 0.005"] = {"seconds": sec, "answer": fair, "nodes": nodes}
    sec, (scores, nodes) = best(lambda: top(nb, "naive_bayes_search", 10))
    out["german NB top-10"] = {"seconds": sec, "answer": scores, "nodes": nodes}
    sec, (scores, nodes) = best(lambda: top(raw, "tree_search", 10, 0.001))
    out["raw German top-10, min-support 0.001"] = {"seconds": sec, "answer": scores,
                                                   "nodes": nodes}
    del np
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    from _before_after import main

    main(__file__, _child, __doc__.split("\n")[0])
