"""Lattice chunks skipped by their sub-chunks' bounds, against the unpruned scan, same run.

For each model, :func:`pcfair.patterns.lattice.scan` counts the patterns above δ three ways
in one process (numba warmed up first): without pruning (the baseline), with pruning by each
chunk's own bound only (``budget=0``: what the engine did before), and with the sub-chunk
refinement of :func:`pcfair.patterns.lattice.chunk_bounds` (the default). δ is the model's
largest |Δ| + 0.005 (a certification that ends "fair") and − 0.05 (a count that finds
patterns). Prints the seconds, the chunks skipped, the seconds spent bounding, the counts
(which must agree) and the ratio to the baseline.

Models: the binarized German CLT and naive Bayes that :func:`pcfair.learn_pc` learns from
``german_binerized.csv``, and the shipped COMPAS and German Strudel circuits
(``circuits/``). The largest |Δ| is the lattice's own top-1. Usage::

    python benchmarks/bench_chunk_pruning.py [--models german_clt,german_nb,compas_strudel,
        german_strudel] [--min-chunks 64]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
os.environ.setdefault("PCFAIR_DATA", str(SHARED))

import pandas as pd  # noqa: E402

import pcfair  # noqa: E402
import pcfair.patterns.lattice as lattice  # noqa: E402
from pcfair.datasets import load_binarized  # noqa: E402
from pcfair.learn.fair import learn_mle_pc  # noqa: E402
from pcfair.patterns._arguments import resolve_problem  # noqa: E402
from pcfair.patterns._arguments import Problem  # noqa: E402
from pcfair.patterns.lattice import LatticeQuery, ScanRun, scan  # noqa: E402


def models(names):
    """(label, circuit, decision, sensitive, favourable) of each named model."""
    german = load_binarized("german")
    frame = pd.read_csv(SHARED / "german_binerized.csv")
    for name in names:
        if name == "german_clt":
            yield name, pcfair.learn_pc(frame, german.target), german
        elif name == "german_nb":
            yield name, learn_mle_pc(frame, german.target, structure="naive_bayes"), german
        else:
            data = name.split("_")[0]
            yield name, pcfair.load(ROOT / "circuits" / f"{name}.json"), load_binarized(data)


def timed_scan(pc, d, fav, sens, delta, min_chunks, prune, budget=None):
    default = lattice.chunk_bounds.__defaults__
    if budget is not None:
        lattice.chunk_bounds.__defaults__ = default[:-1] + (budget,)
    try:
        t = time.perf_counter()
        run = scan(Problem(pc, d, fav, sens), LatticeQuery(deltas=(delta,)),
                   ScanRun(min_chunks=min_chunks, prune=prune))
        return run, time.perf_counter() - t
    finally:
        lattice.chunk_bounds.__defaults__ = default


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="german_clt,german_nb,compas_strudel,german_strudel")
    ap.add_argument("--min-chunks", type=int, default=64)
    args = ap.parse_args()
    print(f"bench_chunk_pruning: {time.strftime('%Y-%m-%d %H:%M')}, load "
          f"{os.getloadavg()[0]:.2f}")
    warm = load_binarized("compas")
    small = pcfair.learn_pc(warm.frame, warm.target)
    timed_scan(*resolve_problem(small, warm.target, warm.sensitive, warm.favorable), 0.1, 4,
               "threshold")
    print("| model | δ | scan | seconds | chunks skipped | bounding s | count | × baseline |")
    print("|---|---|---|---|---|---|---|---|")
    for label, pc, ds in models(args.models.split(",")):
        pc, d, fav, sens = resolve_problem(pc, ds.target, ds.sensitive, ds.favorable)
        t = time.perf_counter()
        top = scan(Problem(pc, d, fav, sens), LatticeQuery(deltas=(0.0,), k_top=1),
                   ScanRun(min_chunks=args.min_chunks, prune="topk"))
        best = top.result.best
        print(f"| {label} | largest |Δ| = {best:.6f} (top-1, {time.perf_counter() - t:.1f} s)"
              " | | | | | | |", flush=True)
        for delta in (best + 0.005, best - 0.05):
            base, base_s = timed_scan(pc, d, fav, sens, delta, args.min_chunks, None)
            rows = [("unpruned", base, base_s),
                    ("own bound", *timed_scan(pc, d, fav, sens, delta, args.min_chunks,
                                              "threshold", budget=0)),
                    ("sub-chunks", *timed_scan(pc, d, fav, sens, delta, args.min_chunks,
                                               "threshold"))]
            for scan_label, run, sec in rows:
                st = run.stats
                assert run.result.counts.tolist() == base.result.counts.tolist(), label
                print(f"| {label} | {delta:.6f} | {scan_label} | {sec:.2f} | "
                      f"{st['chunks_pruned']} of {st['chunks']} | "
                      f"{st.get('bound_seconds', 0.0):.2f} | {int(run.result.counts[0]):,} | "
                      f"{sec / base_s:.3f} |", flush=True)


if __name__ == "__main__":
    main()
