"""Time ``pcfair audit cbs`` with its defaults on the first rows of raw UCI Adult, against the
old configuration measured in the same run (issue "Audits on a user's clock").

Usage::

    .venv/bin/python benchmarks/bench_cbs_defaults.py --data adult.data
    .venv/bin/python benchmarks/bench_cbs_defaults.py --data adult.data --baseline REV

The script takes the first ``--rows`` rows (6,000) of the headerless file, learns a model from
them as the README does (``pcfair learn --bins 4``, the decision ``income``, favourable
``>50K``), and runs ``pcfair audit cbs ROWS --model MODEL --sensitive sex --format json`` in a
fresh process (start-up and imports included, as a user waits for it) under

* **new defaults**: the command as written (99 permutations on every core, 50 restarts,
  subgroups of at least 30 rows);
* **old configuration**: the same code with the old defaults, ``--jobs 1 --min-group-size 1``;
* with ``--baseline REV``, **baseline code**: the command run by the package as it was at git
  revision ``REV`` (extracted with ``git archive``, which leaves the repository as it is), with
  that revision's defaults.

It prints, per run, the seconds, each protected class's headline subgroup (size, score,
p-value), and the ratio of each older run's seconds to the new defaults'. The figures depend on
the machine's load, which is printed too.
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

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ("age,workclass,fnlwgt,education,education-num,marital-status,occupation,"
           "relationship,race,sex,capital-gain,capital-loss,hours-per-week,native-country,income")


def _pcfair(args: list[str], pythonpath: str | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = pythonpath
    code = "import sys; from pcfair.cli import main; sys.exit(main(sys.argv[1:]))"
    # run outside the checkout, whose pcfair/ would shadow the baseline's on sys.path
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env=env, check=False, cwd=tempfile.gettempdir())


def _baseline(rev: str, into: Path) -> str:
    """The package at ``rev``, extracted under ``into`` (``git archive``: no change to the
    repository's state); returns the folder to put on ``PYTHONPATH``."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "pcfair"],
                             capture_output=True, check=True).stdout
    (into / "baseline").mkdir()
    subprocess.run(["tar", "-x", "-C", str(into / "baseline")], input=archive, check=True)
    return str(into / "baseline")


def _warm(rows: Path, model: Path, pythonpath: str | None) -> None:
    """One tiny scan, so that numba's compilation (cached on disk) is not timed."""
    _pcfair(["audit", "cbs", str(rows), "--model", str(model), "--sensitive", "sex",
             "--restarts", "1", "--permutations", "1", "--jobs", "1", "--format", "json"],
            pythonpath)


def _run(label: str, rows: Path, model: Path, extra: list[str], pythonpath: str | None):
    command = ["audit", "cbs", str(rows), "--model", str(model), "--sensitive", "sex",
               "--format", "json", *extra]
    start = time.perf_counter()
    proc = _pcfair(command, pythonpath)
    seconds = time.perf_counter() - start
    if proc.returncode not in (0, 1, 3):
        raise SystemExit(f"{label}: exit {proc.returncode}\n{proc.stderr}")
    scans = json.loads(proc.stdout)["scans"]
    print(f"\n{label}: {seconds:.1f} s (exit {proc.returncode})")
    for s in scans:
        detected = s["detected"] if len(s["detected"]) <= 90 else s["detected"][:87] + "..."
        p = "none" if s["p_value"] is None else f"{s['p_value']:.3g}"
        print(f"  {s['protected']}: {detected}\n    n = {s['n']}, score {s['score']:.4f}, "
              f"p-value {p} ({s['n_permutations']} permutations)")
    return seconds


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=None,
                    help="raw adult.data (no header); default: the pcfair data cache's")
    ap.add_argument("--rows", type=int, default=6000, help="rows of the file to use (6000)")
    ap.add_argument("--baseline", default=None, metavar="REV",
                    help="also time the package at this git revision, with its defaults")
    args = ap.parse_args()
    if args.data is None:
        from pcfair.datasets._cache import fetch_file

        args.data = str(fetch_file("raw/adult.data"))
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        rows = tmp / f"adult{args.rows}.data"
        with open(args.data) as src, rows.open("w") as dst:
            for k, line in enumerate(src):
                if k >= args.rows:
                    break
                dst.write(line)
        model = tmp / "adult.json"
        learned = _pcfair(["learn", str(rows), "--decision", "income", "--favorable", ">50K",
                           "--bins", "4", "--columns", COLUMNS, "--out", str(model)])
        if learned.returncode != 0:
            raise SystemExit(f"pcfair learn failed:\n{learned.stderr}")
        print(f"{args.rows} rows of {args.data}; {os.cpu_count()} cores; load average "
              f"{os.getloadavg()[0]:.2f} at the start")
        _warm(rows, model, None)
        new = _run("new defaults", rows, model, [], None)
        old = _run("old configuration (--jobs 1 --min-group-size 1)", rows, model,
                   ["--jobs", "1", "--min-group-size", "1"], None)
        base = None
        if args.baseline is not None:
            baseline = _baseline(args.baseline, tmp)
            _warm(rows, model, baseline)
            base = _run(f"baseline code ({args.baseline}), its defaults", rows, model, [],
                        baseline)
        print(f"\nload average {os.getloadavg()[0]:.2f} at the end")
        print(f"old configuration / new defaults: {old / new:.2f}x")
        if base is not None:
            print(f"baseline code / new defaults: {base / new:.2f}x")


if __name__ == "__main__":
    main()
