"""Issue 25: the compiled tree search, two variants in the same run.

``--compare orders`` (the default): the tree order against the influence order. Both walk the
same lattice with the same bound (:class:`pcfair.patterns.bounds.TreeBound`) and give the same
answers; only the pruning differs. ``--compare contraction``: with and without the box's rule
C; ``--compare detach``: with and without rule E (evidence below an observed variable
detached); ``--compare ladder``: top-k with and without the first-witness climb that raises
its threshold first; ``--compare plateau``: with and without the plateau solver
(:mod:`pcfair.patterns._plateau_kernels`); ``--compare xfirst``: the tree order that puts
each node's ``x`` subtrees first (``tree_search(..., x_first=True)``, what ``search_tree``
runs) against one tree order for every node. ``--compare rules``: the tree order with the box's
mixture rules H and M (the default) against the box without them. Each task runs the compiled search
(:func:`pcfair.patterns.tree_search.tree_search`, one process) with the variable order of
:func:`pcfair.patterns.search_types.search_order` ``"tree"`` (the default ``"auto"`` on these
models) or ``"influence"`` (the default before), each with ``--limit`` seconds, in the same
run, and prints seconds, nodes, complete or not, and the answer. Models:

- **raw German CLT**: UCI ``german.data`` through :func:`pcfair.datasets.fetch_german` (the 20
  attributes, personal status split into ``personal_status`` and ``sex``), numeric columns in
  4 quantile bins (``pcfair learn --bins 4``), decision ``credit`` (favourable ``good``),
  sensitive ``personal_status``, ``sex``, ``age``, ``foreign_worker``: top-1 and top-10 by
  |Δ|, and certification at top-1 + 0.02, with ``min_support`` 0 and 0.001 (one training row);
- **raw Adult CLT** (as ``bench_engines.py`` builds it): top-10 by |Δ|, sensitive ``sex``,
  ``race``, then also ``marital-status`` and ``native-country``;
- **binarized German CLT** (``german_binerized.csv``): certification at its largest |Δ| +
  0.005, the largest taken from the tree order's top-1 (when complete);
- **scaling**: binary CLTs learned from 2,000 rows of a synthetic tree distribution with 20, 30,
  40, 50, 60 features, three sensitive features hanging off random features (not off ``D``):
  top-1 by |Δ| with the tree order, then certification by both at top-1 + 0.02 (a fair δ;
  where the top-1 did not complete, at the best |Δ| it found + 0.02, which a complete
  certification proves is within 0.02 of the largest, and at δ = 0.2);
- **cli** (not a comparison): ``pcfair certify --jobs 2`` as a user runs it (process start
  included) on ``german_binerized.csv`` at the model's largest |Δ| + 0.005, for the CLT that
  ``pcfair learn`` writes, the same distribution as a PSDD in the paper pipeline's shape
  (:mod:`_paper_psdd`, checked against the CLT's marginals first) and the naive Bayes
  ``pcfair learn --structure naive_bayes`` writes as ``.psdd``.

Usage::

    python benchmarks/bench_tree_order.py [--limit 120]
                                          [--only german,adult,binary,scaling,cli]
                                          [--supports 0.001,0]
                                          [--compare orders|rules|contraction|detach|ladder|
                                                     plateau|xfirst]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
os.environ.setdefault("PCFAIR_DATA", str(SHARED))

import pcfair  # noqa: E402
from bench_engines import _raw_adult as raw_adult  # noqa: E402  (the same model)
try:  # pcfair.tables from issue 37 on; pcfair.learn.data before (a --baseline of before_after)
    from pcfair.tables import data as _data  # noqa: E402
except ImportError:  # pragma: no cover - an older checkout
    from pcfair.learn import data as _data  # noqa: E402
prepare_frame = _data.prepare_frame
from pcfair.patterns._bound_kernels import (  # noqa: E402
    RULE_C,
    RULE_E,
    RULE_H,
    RULE_M,
    RULES_ALL,
)
from pcfair.patterns.bounds import TreeBound  # noqa: E402
from pcfair.patterns.search_types import search_order  # noqa: E402

try:  # the runners' (problem, query) form (issue 37); a baseline before it reads keywords
    from pcfair.patterns.search_types import SearchQuery
except ImportError:
    SearchQuery = None
from pcfair.patterns.tree_search import tree_search  # noqa: E402

#: variant name → (variable order, the box's rules, the ladder, the plateau solver, the
#: tree order put x's subtrees first per node)
VARIANTS = {"tree": ("tree", RULES_ALL, True, True, True),
            "influence": ("influence", RULES_ALL, True, True, False),
            "box without H, M": ("tree", RULES_ALL & ~(RULE_H | RULE_M), True, True, True),
            "box without C": ("tree", RULES_ALL & ~RULE_C, True, True, True),
            "box without E": ("tree", RULES_ALL & ~RULE_E, True, True, True),
            "no ladder": ("tree", RULES_ALL, False, True, True),
            "no plateau solver": ("tree", RULES_ALL, True, False, True),
            "one tree order": ("tree", RULES_ALL, True, True, False)}
#: the two variants each task runs, by ``--compare``
PAIRS = {"orders": ("tree", "influence"), "rules": ("tree", "box without H, M"),
         "contraction": ("tree", "box without C"), "ladder": ("tree", "no ladder"),
         "detach": ("tree", "box without E"), "plateau": ("tree", "no plateau solver"),
         "xfirst": ("tree", "one tree order")}
PAIR = PAIRS["orders"]


def raw_german():
    """What ``pcfair learn german.csv --decision credit --bins 4`` learns."""
    import tempfile

    from pcfair.datasets import fetch_german
    from pcfair.patterns.support import read_table

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "german.csv"
        fetch_german().frame.to_csv(path, index=False)
        df, _ = _data.drop_constant_columns(read_table(path), keep=("credit",))
    frame, _ = prepare_frame(df, "credit", 4)
    return pcfair.learn_pc(frame, "credit")


def binary_german():
    return pcfair.learn_pc(pd.read_csv(SHARED / "german_binerized.csv"), "loan_status")


def synthetic(n_features: int, rows: int = 2000, seed: int = 0):
    """A binary CLT learned from a random tree distribution over ``D`` and the features, with
    three sensitive features ``s0..s2`` that depend on ``D`` only through other features."""
    rng = np.random.default_rng(seed)
    n = rows
    cols = {"D": rng.random(n) < 0.4}
    names = ["D"]
    for i in range(n_features - 3):
        parent = cols[names[rng.integers(len(names))]]
        flip = rng.uniform(0.05, 0.35)
        cols[f"z{i}"] = np.where(rng.random(n) < flip, ~parent, parent)
        names.append(f"z{i}")
    for i in range(3):  # sensitive features hang off random features, never off D itself
        parent = cols[names[1 + rng.integers(len(names) - 1)]]
        cols[f"s{i}"] = np.where(rng.random(n) < rng.uniform(0.2, 0.4), ~parent, parent)
    df = pd.DataFrame({k: v.astype(int) for k, v in cols.items()})
    return pcfair.learn_pc(df, "D")


class Task:
    def __init__(self, pc, decision, sensitive, favorable):
        names = list(pc.variables.names)
        self.pc = pc
        self.d = names.index(decision)
        self.fav = list(pc.variables.domains[self.d]).index(favorable)
        self.sens = [names.index(s) for s in sensitive]
        self.tb = TreeBound.from_circuit(pc, self.d, self.fav)
        assert self.tb is not None, "not a tree model"
        self.orders = {o: search_order(pc, self.d, self.fav, self.sens, o)
                       for o in ("tree", "influence")}

    def run(self, variant, delta, mode, k=1, min_support=0.0, limit=120.0):
        order, rules, ladder, plateau, xf = VARIANTS[variant]
        tb = self.tb.fresh()
        tb.rules = rules
        t = time.perf_counter()
        x_first = order == "tree" and xf
        if SearchQuery is None:
            res = tree_search(tb, self.sens, delta, self.orders[order], mode=mode, k=k,
                              time_limit=limit, min_support=min_support, ladder=ladder,
                              plateau=plateau, x_first=x_first)
        else:
            query = SearchQuery(delta, mode=mode, k=k, min_support=min_support, progress=False,
                                order=self.orders[order])
            res = tree_search(tb, self.sens, query.within(limit), ladder=ladder,
                              plateau=plateau, x_first=x_first)
        return res, time.perf_counter() - t


def fmt(res, seconds, mode) -> str:
    if mode == "first":
        answer = ("incomplete" if not res.complete else
                  "unfair" if res.patterns else "fair")
    else:
        scores = [abs(p.score) for p in res.patterns]
        answer = (f"top {max(scores):.6f}, k-th {min(scores):.6f}" if scores else "none")
        answer += "" if res.complete else " (incomplete)"
    return f"{seconds:8.2f} s {res.nodes:>12,} nodes  {answer}"


def compare(label, task, delta, mode, k=1, min_support=0.0, limit=120.0):
    out = {}
    for variant in PAIR:
        res, sec = task.run(variant, delta, mode, k, min_support, limit)
        out[variant] = (res, sec)
        print(f"| {label} | {variant} | {fmt(res, sec, mode)} |", flush=True)
    (a, ta), (b, tb) = out[PAIR[0]], out[PAIR[1]]
    if a.complete:
        print(f"|   | ratio | {PAIR[1]}/{PAIR[0]}: {tb / ta:.1f}x seconds"
              f"{'' if b.complete else ' (at least: incomplete)'}, "
              f"{b.nodes / max(a.nodes, 1):.1f}x nodes |", flush=True)
    return out[PAIR[0]][0]


def german(limit, supports=(0.001, 0.0)):
    task = Task(raw_german(), "credit", ["personal_status", "sex", "age", "foreign_worker"],
                "good")
    print("\n## raw German CLT (22 variables, lattice "
          f"{np.prod([int(c) + 1 for c in task.pc.variables.cardinalities]):.2e} points)")
    for ms in supports:
        top1 = compare(f"top-1 |Δ|, min_support {ms}", task, 0.0, "topk", 1, ms, limit)
        compare(f"top-10 |Δ|, min_support {ms}", task, 0.0, "topk", 10, ms, limit)
        if top1.complete and top1.patterns:
            delta = abs(top1.patterns[0].score) + 0.02
            compare(f"certify δ = {delta:.5f}, min_support {ms}", task, delta, "first", 1, ms,
                    limit)


def adult(limit):
    pc = raw_adult()
    print("\n## raw Adult CLT")
    for sens in (["sex", "race"], ["sex", "race", "marital-status", "native-country"]):
        task = Task(pc, "income", sens, ">50K")
        compare(f"top-10 |Δ|, sensitive {','.join(sens)}", task, 0.0, "topk", 10, 0.0, limit)


def binary(limit):
    task = Task(binary_german(), "loan_status", ["age", "foreign_worker", "sex",
                                                 "marital_status"], 1)
    print("\n## binarized German CLT")
    res, sec = task.run("tree", 0.0, "topk", 1, 0.0, limit)
    print(f"| top-1 |Δ| | tree | {fmt(res, sec, 'topk')} |", flush=True)
    if res.complete:
        delta = abs(res.patterns[0].score) + 0.005
        compare(f"certify δ = {delta:.6f}", task, delta, "first", 1, 0.0, limit)


def scaling(limit):
    print("\n## scaling: synthetic binary CLTs, certification at top-1 + 0.02")
    for n in (20, 30, 40, 50, 60):
        task = Task(synthetic(n), "D", ["s0", "s1", "s2"], 1)
        res, sec = task.run("tree", 0.0, "topk", 1, 0.0, limit)
        print(f"| {n} features: top-1 |Δ| | tree | {fmt(res, sec, 'topk')} |", flush=True)
        delta = abs(res.patterns[0].score) + 0.02  # the best found where not complete
        note = "" if res.complete else " (best found + 0.02)"
        compare(f"{n} features: certify δ = {delta:.4f}{note}", task, delta, "first", 1, 0.0,
                limit)
        if not res.complete:
            compare(f"{n} features: certify δ = 0.2", task, 0.2, "first", 1, 0.0, limit)


def cli(limit):
    """``pcfair certify`` through the command line (see the module docstring)."""
    import subprocess
    import sys
    import tempfile

    from _paper_psdd import write_paper_psdd
    from pcfair.inference.marginals import log_marginals

    exe = [sys.executable, "-m", "pcfair.cli"]
    data = SHARED / "german_binerized.csv"
    sens = ["age", "foreign_worker", "sex", "marital_status"]
    print("\n## through the CLI: pcfair certify --jobs 2 at the model's largest |Δ| + 0.005")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        models = {}
        for label, structure, out in (("learned CLT (.json)", "clt", "clt.json"),
                                      ("naive Bayes (.psdd)", "naive_bayes", "nb.psdd")):
            subprocess.run(exe + ["learn", str(data), "--decision", "loan_status",
                                  "--structure", structure, "--out", str(tmp / out)],
                           check=True, capture_output=True)
            models[label] = (tmp / out, "loan_status", sens)
        clt = pcfair.load(tmp / "clt.json")
        task = Task(clt, "loan_status", sens, 1)
        psdd, _, number = write_paper_psdd(task.tb, tmp / "paper")
        paper = pcfair.load(psdd)
        rng = np.random.default_rng(0)
        ev = rng.integers(-1, 2, size=(500, clt.num_variables)).astype(np.int32)
        ev_paper = np.full_like(ev, -1)
        for v, i in number.items():
            ev_paper[:, i - 1] = ev[:, v]
        gap = float(np.abs(log_marginals(paper, ev_paper) - log_marginals(clt, ev)).max())
        assert gap < 1e-9, f"the paper-shaped PSDD is not the CLT's distribution ({gap})"
        names = list(clt.variables.names)
        models["paper-shaped PSDD (.psdd)"] = (
            psdd, str(number[task.d]), [str(number[names.index(s)]) for s in sens])
        print(f"(the paper-shaped PSDD: {paper.num_nodes} nodes, the CLT {clt.num_nodes}; "
              f"largest marginal gap {gap:.1e})")
        deltas = {}
        for label, (path, dec, sen) in models.items():
            model = pcfair.load(path)
            t = Task(model, dec, sen, 1)
            res, _ = t.run("tree", 0.0, "topk", 1, 0.0, limit)
            assert res.complete, f"top-1 of {label} incomplete in {limit} s"
            deltas[label] = round(abs(res.patterns[0].score) + 0.005, 6)
        seconds = {}
        print("| model | δ | seconds (CLI, --jobs 2) | verdict |\n|---|---|---|---|")
        for label, (path, dec, sen) in models.items():
            cmd = exe + ["certify", str(path), "--decision", dec, "--sensitive", ",".join(sen),
                         "--delta", str(deltas[label]), "--jobs", "2",
                         "--time-limit", str(limit)]
            t0 = time.perf_counter()
            out = subprocess.run(cmd, capture_output=True, text=True)
            seconds[label] = time.perf_counter() - t0
            verdict = out.stdout.strip().splitlines()[0] if out.stdout.strip() else out.stderr
            print(f"| {label} | {deltas[label]} | {seconds[label]:.2f} | {verdict[:60]} |",
                  flush=True)
        ratio = seconds["paper-shaped PSDD (.psdd)"] / seconds["learned CLT (.json)"]
        print(f"|   | ratio | paper-shaped PSDD / learned CLT: {ratio:.2f}x seconds | |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=float, default=120.0, help="seconds per search")
    ap.add_argument("--only", default="german,adult,binary,scaling")
    ap.add_argument("--supports", default="0.001,0",
                    help="the raw German tasks' min_support values (comma-separated)")
    ap.add_argument("--compare", choices=sorted(PAIRS), default="orders",
                    help="orders: tree against influence; rules: the box with and without "
                         "its mixture rules H and M; contraction: with and without rule C; "
                         "ladder: top-k with and without the first-witness climb")
    args = ap.parse_args()
    global PAIR
    PAIR = PAIRS[args.compare]
    supports = tuple(float(v) for v in args.supports.split(","))
    warm = Task(synthetic(8, 200), "D", ["s0"], 1)  # compile / load the kernels
    warm.run("tree", 0.0, "topk", 1)
    print("| task | variant | result |\n|---|---|---|")
    for part in args.only.split(","):
        if part == "german":
            german(args.limit, supports)
        else:
            {"adult": adult, "binary": binary, "scaling": scaling, "cli": cli}[part](args.limit)


if __name__ == "__main__":
    main()
