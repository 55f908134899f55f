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

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
SHARED = ROOT.parent / "shared" / "data"
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


def _run(tree: Path, repeat: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child",
                           "--repeat", str(repeat)], env=env, capture_output=True, text=True,
                          cwd=str(tree))
    if proc.returncode:
        raise RuntimeError(f"the run on {tree} failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--baseline", default="HEAD", help="git revision of the code before")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(_child(args.repeat), default=str))
        return
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "baseline"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(base),
                        args.baseline], check=True, capture_output=True)
        try:
            rev = subprocess.run(["git", "-C", str(base), "rev-parse", "--short", "HEAD"],
                                 capture_output=True, text=True).stdout.strip()
            print(f"baseline {args.baseline} ({rev}) against this checkout; load "
                  f"{os.getloadavg()[0]:.1f}; best of {args.repeat} × {args.rounds} rounds",
                  flush=True)
            before, after = {}, {}
            for _ in range(args.rounds):
                for tree, into in ((base, before), (ROOT, after)):
                    for task, got in _run(tree, args.repeat).items():
                        if task not in into or got["seconds"] < into[task]["seconds"]:
                            into[task] = got
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(base)], capture_output=True)
    print("| task | before | after | after/before | same answer |")
    print("|---|---|---|---|---|")
    for task, b in before.items():
        a = after[task]
        extra = (f" ({b['rate'] / 1e9:.2f} → {a['rate'] / 1e9:.2f} G patterns/s)"
                 if "rate" in b else f" ({b['nodes']:,} → {a['nodes']:,} nodes)"
                 if b.get("nodes") else "")
        print(f"| {task} | {b['seconds']:.3f} s | {a['seconds']:.3f} s | "
              f"{a['seconds'] / b['seconds']:.2f}×{extra} | {a['answer'] == b['answer']} |")


if __name__ == "__main__":
    main()
