"""Issue 37: the first certify of a fresh install (its numba kernels compiled from an empty
cache) and the searches, before and after a revision, in the same run.

Tasks, each measured in a fresh process with the checkout under test first on ``PYTHONPATH``
(the harness: ``benchmarks/_before_after.py``):

- ``first certify, empty cache``: the README's main job, ``pcfair certify
  circuits/compas_clt.json ... --delta 0.05``, as a new process whose ``NUMBA_CACHE_DIR`` is an
  empty folder, so every kernel it calls compiles (the whole process is timed: imports,
  compilation, the certification);
- ``first certify, cached``: the same command again with that cache filled;
- the searches and the lattice rate of ``bench_float_edge.py`` (each after a warm-up call).

Usage::

    python benchmarks/bench_first_certify.py [--baseline REV] [--repeat 2] [--rounds 2]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MAIN_JOB = ["certify", "circuits/compas_clt.json", "--decision", "ScoreText_", "--sensitive",
            "Ethnic_Code_Text_,MaritalStatus_,Sex_,Age", "--delta", "0.05"]


def _certify(cache: str) -> tuple[float, str]:
    """Seconds of one ``pcfair certify`` process with ``NUMBA_CACHE_DIR=cache``; its verdict."""
    env = {**os.environ, "NUMBA_CACHE_DIR": cache, "PCFAIR_PROGRESS": "0"}
    code = "import sys; from pcfair.cli import main; sys.exit(main(sys.argv[1:]))"
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", code, *MAIN_JOB], env=env,
                          capture_output=True, text=True)
    seconds = time.perf_counter() - t0
    if proc.returncode not in (0, 1):  # 1: a pattern exists
        raise RuntimeError(f"pcfair certify failed:\n{proc.stdout}\n{proc.stderr}")
    return seconds, proc.stdout.splitlines()[0]


def _child(repeat: int) -> dict:
    """The measurements, in this process (see the module docstring)."""
    out: dict = {}
    fresh, cached = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as cache:
            seconds, verdict = _certify(cache)
            fresh.append(seconds)
            seconds, again = _certify(cache)
            cached.append(seconds)
    out["first certify, empty cache"] = {"seconds": min(fresh), "answer": verdict}
    out["first certify, cached"] = {"seconds": min(cached), "answer": again}
    sys.path.insert(0, str(HERE))
    from bench_float_edge import _child as searches

    out.update(searches(repeat))
    return out


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    from _before_after import main

    main(__file__, _child, __doc__.split("\n")[0])
