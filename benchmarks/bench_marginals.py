"""Batched log-marginals: numba kernel vs the per-node vectorised numpy baseline.

Runs on ``plants.psdd`` and ``ad.psdd`` from ``../shared/circuits`` with 10,000 rows and 30%
missing values, and prints element-evaluations per second for both implementations and their
ratio, measured in the same run. Usage::

    python benchmarks/bench_marginals.py [--rows 10000] [--missing 0.3] [--repeat 3]
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import pcfair
from pcfair.inference.marginals import log_marginals

SHARED = Path(__file__).resolve().parents[2] / "shared" / "circuits"


def element_count(c) -> int:
    """One evaluation per sum element and per product child, as the kernels do."""
    return int(np.diff(c.edge_ptr).sum())


def best_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--missing", type=float, default=0.3)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--numpy-rows", type=int, default=2_000,
                    help="rows for the (slow) numpy baseline; its rate is per row")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print(f"{'circuit':<8} {'elements':>9} {'numba s':>8} {'numba Meval/s':>14} "
          f"{'numpy Meval/s':>14} {'ratio':>6}")
    for name in ("plants", "ad"):
        c = pcfair.load(SHARED / f"{name}.psdd", vtree=SHARED / f"{name}.vtree")
        ev = rng.integers(0, 2, size=(args.rows, c.num_variables)).astype(np.int32)
        ev[rng.random(ev.shape) < args.missing] = -1
        log_marginals(c, ev[:10])  # compile / load the cached kernel
        t_numba = best_time(lambda: log_marginals(c, ev), args.repeat)
        sub = ev[: args.numpy_rows]
        t_numpy = best_time(lambda: log_marginals(c, sub, backend="numpy"), 1)
        a = log_marginals(c, sub)
        b = log_marginals(c, sub, backend="numpy")
        assert np.allclose(a, b, atol=1e-9), "backends disagree"
        n_el = element_count(c)
        rate_numba = n_el * args.rows / t_numba
        rate_numpy = n_el * len(sub) / t_numpy
        print(f"{name:<8} {n_el:>9} {t_numba:>8.3f} {rate_numba / 1e6:>14.1f} "
              f"{rate_numpy / 1e6:>14.1f} {rate_numba / rate_numpy:>6.1f}")


if __name__ == "__main__":
    main()
