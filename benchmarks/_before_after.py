"""Before and after in the same run: a benchmark's tasks on a baseline revision and on this
checkout, alternating, on the same machine.

A benchmark script that uses this module has a ``_child(repeat) -> dict`` that measures its
tasks in the running process (``{task: {"seconds": ..., "answer": ..., ...}}``) and calls
:func:`main` with it. :func:`main` checks the baseline revision out into a temporary git
worktree, then for ``--rounds`` rounds runs the script once with each tree first on
``PYTHONPATH`` (before, after, before, after...), each in a fresh process, and keeps each
task's best time over all rounds (this machine is shared: single runs vary by ±30%). It
prints one Markdown table: the seconds before and after, their ratio, and whether the answers
are the same.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(script: Path, tree: Path, repeat: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    proc = subprocess.run([sys.executable, str(script), "--child", "--repeat", str(repeat)],
                          env=env, capture_output=True, text=True, cwd=str(tree))
    if proc.returncode:
        raise RuntimeError(f"the run on {tree} failed:\n{proc.stdout}\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _extra(b: dict, a: dict) -> str:
    if "rate" in b:
        return f" ({b['rate'] / 1e9:.2f} → {a['rate'] / 1e9:.2f} G patterns/s)"
    if b.get("nodes"):
        return f" ({b['nodes']:,} → {a['nodes']:,} nodes)"
    return ""


def main(script: str, child: Callable[[int], dict], description: str) -> None:
    """Parse the command line and run ``child`` (``--child``), or compare the baseline with
    this checkout (see the module docstring)."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--baseline", default="HEAD", help="git revision of the code before")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.repeat), default=str))
        return
    script_path = Path(script).resolve()
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
                    for task, got in _run(script_path, tree, args.repeat).items():
                        if task not in into or got["seconds"] < into[task]["seconds"]:
                            into[task] = got
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(base)], capture_output=True)
    print("| task | before | after | after/before | same answer |")
    print("|---|---|---|---|---|")
    for task, b in before.items():
        a = after[task]
        print(f"| {task} | {b['seconds']:.3f} s | {a['seconds']:.3f} s | "
              f"{a['seconds'] / b['seconds']:.2f}×{_extra(b, a)} | "
              f"{a['answer'] == b['answer']} |")
