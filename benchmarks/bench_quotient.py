"""Pair plans: the compiled, pruned builder against the Python builder, and determinism checks.

For ``nltcs.psdd`` and ``msnbc.psdd`` from ``../shared/circuits`` (decision = the first
variable) it prints, each circuit in a fresh process:

* the plan: entries and build time of the plan pruned for the decision (what
  :func:`pcfair.inference.conditional_bounds` and the search use), of the compiled plan for any
  evidence (no pruning; nltcs only by default: msnbc's has 53 M entries) and, with ``--old``, of
  the reference Python builder (``builder="python"``; about 4 minutes on nltcs);
* ``conditional_bounds``: the first call on a freshly loaded circuit (structure checks, plan and
  kernels from numba's cache included), then the median and maximum of further calls, whose
  evidence either changes one variable (as in the search) or is drawn afresh (three observed
  variables);

and, for every PSDD of the zoo, the wall time of ``pcfair check FILE`` (a new process each)
with its determinism verdict. Where the old figures are not re-run (``--old`` off) the main
branch's figures before the compiled builder (commit 48280cc, same kind of 2-core machine)
are printed beside them. Usage::

    python benchmarks/bench_quotient.py [--old] [--calls 200] [--skip-check]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

SHARED = Path(__file__).resolve().parents[2] / "shared" / "circuits"
ZOO = ["little_4var", "simple2.1", "simple2.2", "simple2.3", "exp-D15-N1000-C4", "nltcs.clt",
       "nltcs", "msnbc", "plants", "accidents", "ad"]
VTREE = {"simple2.1": "simple2", "simple2.2": "simple2", "simple2.3": "simple2",
         "nltcs.clt": "nltcs"}
# main before the compiled builder (48280cc): pair plan of nltcs (Python builder) and the
# first / further conditional_bounds; pcfair check per file (wall s, verdict)
MAIN_PLAN = {"nltcs": {"entries": 4_298_207, "build_s": 263.0, "first_s": 22.0,
                       "next_ms": 310.0},
             "msnbc": {"entries": 53_324_956, "build_s": None, "first_s": None,
                       "next_ms": None}}
MAIN_CHECK = {  # pcfair check on main 48280cc: wall s (process included) and verdict
    "little_4var": (1.35, "yes (syntactic)"), "simple2.1": (1.30, "yes (syntactic)"),
    "simple2.2": (1.25, "yes (syntactic)"), "simple2.3": (1.29, "yes (syntactic)"),
    "exp-D15-N1000-C4": (1.30, "yes (syntactic)"), "nltcs.clt": (1.29, "yes (syntactic)"),
    "nltcs": (2.52, "unknown"), "msnbc": (3.31, "unknown"), "plants": (6.95, "unknown"),
    "accidents": (5.54, "unknown"), "ad": (6.85, "unknown"),
}


def _load(name: str):
    import pcfair

    vt = SHARED / f"{VTREE.get(name, name)}.vtree"
    return pcfair.load(SHARED / f"{name}.psdd", vtree=vt if vt.exists() else None)


def child_plan(name: str, calls: int, old: bool, full: bool) -> dict:
    """Measurements for one circuit in this (fresh) process."""
    from pcfair.inference.quotient import PairPlan, conditional_bounds, quotient_structure

    out: dict = {"name": name}
    c = _load(name)
    d = 0
    t = time.perf_counter()
    conditional_bounds(c, c.names[d])
    out["first_s"] = time.perf_counter() - t
    plan = c._cache[("self_plan", d)]
    out["pruned_entries"] = plan.num_entries
    vt, path = quotient_structure(c)
    t = time.perf_counter()
    again = PairPlan(c, c, vt, path, relaxed=[d], deterministic=True)
    again.entry(c.root, c.root)
    out["pruned_build_s"] = time.perf_counter() - t
    rng = np.random.default_rng(0)
    others = [v for v in range(c.num_variables) if v != d]
    ev = {}
    one, fresh, cpu = [], [], []
    for k in range(calls):
        if k % 2 == 0:  # one variable changes: set, flip or drop it
            v = c.names[int(rng.choice(others))]
            if v in ev and rng.random() < 0.5:
                del ev[v]
            else:
                ev[v] = int(rng.integers(2))
            sink = one
        else:
            ev = {c.names[int(v)]: int(rng.integers(2))
                  for v in rng.choice(others, size=3, replace=False)}
            sink = fresh
        t, t_cpu = time.perf_counter(), time.thread_time()
        try:
            conditional_bounds(c, c.names[d], ev)
        except Exception:  # probability zero: still a timed call
            pass
        sink.append(time.perf_counter() - t)
        cpu.append(time.thread_time() - t_cpu)
    out["next_one_ms"] = 1e3 * float(np.median(one))
    out["next_fresh_ms"] = 1e3 * float(np.median(fresh))
    out["next_wall_p99_ms"] = 1e3 * float(np.percentile(one + fresh, 99))
    out["next_cpu_ms"] = (1e3 * float(np.percentile(cpu, 99)), 1e3 * float(np.max(cpu)))
    if full:
        t = time.perf_counter()
        un = PairPlan(c, c, vt, path)
        r = un.entry(c.root, c.root)
        out["full_build_s"] = time.perf_counter() - t
        out["full_entries"] = un.num_entries
        none = np.full(c.num_variables, -1, np.int32)
        ev_p, ev_q = none.copy(), none.copy()
        ev_p[d], ev_q[d] = 1, 0
        free = np.ones(c.num_variables, bool)
        free[d] = False
        t = time.perf_counter()
        un.evaluate(r, ev_p, ev_q, free)
        out["full_eval_s"] = time.perf_counter() - t
    if old:
        t = time.perf_counter()
        py = PairPlan(c, c, vt, path, builder="python")
        py.entry(c.root, c.root)
        out["python_build_s"] = time.perf_counter() - t
        out["python_entries"] = py.num_entries
    return out


def run_child(args: list[str]) -> dict:
    res = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True,
                         text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def check_file(name: str) -> tuple[float, str]:
    vt = SHARED / f"{VTREE.get(name, name)}.vtree"
    cmd = [sys.executable, "-m", "pcfair.cli", "check", str(SHARED / f"{name}.psdd")]
    if vt.exists():
        cmd += ["--vtree", str(vt)]
    t = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t
    line = next((ln for ln in res.stdout.splitlines() if "deterministic" in ln), res.stderr[-80:])
    return wall, " ".join(line.split()[1:])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", action="store_true", help="also run the Python builder (nltcs)")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--skip-check", action="store_true")
    ap.add_argument("--child", nargs="*")
    args = ap.parse_args()
    if args.child is not None:
        name, calls, old, full = args.child
        print(json.dumps(child_plan(name, int(calls), old == "1", full == "1")))
        return
    run_child(["little_4var", "2", "0", "0"])  # numba's cache warm for every child
    print("conditional_bounds on the decision x = first variable (fresh process per circuit)")
    print("next calls: median wall ms when one variable changes / when the evidence is new;")
    print("99th percentile of wall time, and 99th percentile / maximum of the thread's CPU time")
    print("(wall time includes waits for the CPU on a shared machine)")
    print(f"{'circuit':<7} {'plan':<22} {'entries':>11} {'build s':>8} {'1st bound s':>11} "
          f"{'next: 1 var':>11} {'new':>6} {'p99 wall':>8} {'p99/max cpu':>12}")
    for name in ("nltcs", "msnbc"):
        r = run_child([name, str(args.calls), "1" if (args.old and name == "nltcs") else "0",
                       "1" if name == "nltcs" else "0"])
        cpu = r["next_cpu_ms"]
        print(f"{name:<7} {'compiled, pruned (new)':<22} {r['pruned_entries']:>11,} "
              f"{r['pruned_build_s']:>8.3f} {r['first_s']:>11.3f} {r['next_one_ms']:>11.2f} "
              f"{r['next_fresh_ms']:>6.2f} {r['next_wall_p99_ms']:>8.2f} "
              f"{cpu[0]:>5.2f}/{cpu[1]:<6.2f}")
        if "full_entries" in r:
            print(f"{'':<7} {'compiled, any evidence':<22} {r['full_entries']:>11,} "
                  f"{r['full_build_s']:>8.2f} {'':>11} one evaluation {r['full_eval_s']:.2f} s")
        if "python_entries" in r:
            print(f"{'':<7} {'python (old builder)':<22} {r['python_entries']:>11,} "
                  f"{r['python_build_s']:>8.1f}")
        else:
            m = MAIN_PLAN[name]
            if m["build_s"] is None:
                print(f"{'':<7} {'python (main 48280cc)':<22} {m['entries']:>11,} "
                      f"(the size of the plan for any evidence: not buildable in Python)")
            else:
                print(f"{'':<7} {'python (main 48280cc)':<22} {m['entries']:>11,} "
                      f"{m['build_s']:>8.0f} {m['first_s']:>11.1f} {m['next_ms']:>11.0f}"
                      f"   (quoted, not re-run)")
    if args.skip_check:
        return
    print("\npcfair check FILE (new process each; wall seconds incl. Python start-up)")
    print(f"{'file':<22} {'wall s':>7}  {'deterministic':<18} main 48280cc")
    for name in ZOO:
        wall, verdict = check_file(name)
        old = MAIN_CHECK.get(name)
        old_s = f"{old[0]:>5.2f} s  {old[1]}" if old else ""
        print(f"{name + '.psdd':<22} {wall:>7.2f}  {verdict:<18} {old_s}")


if __name__ == "__main__":
    main()
