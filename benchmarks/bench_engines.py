"""Engine choice: the dry run's estimates, what ``engine="auto"`` runs, each engine forced.

All in one run, on the same machine and load.

Five models:

- ``compas``: the shipped COMPAS CLT (``circuits/compas_clt.json``; decision ``ScoreText_``,
  sensitive ``Ethnic_Code_Text_``, ``MaritalStatus_``, ``Sex_``, ``Age``);
- ``adult``: the shipped Adult CLT (``circuits/adult_clt.json``; decision ``target``,
  sensitive ``marital-status``, ``race``, ``sex``, ``native-country``);
- ``german_clt`` and ``german_nb``: a Chow-Liu circuit and a naive Bayes
  (:func:`pcfair.learn_pc`, ``structure="naive_bayes"``, pseudocount 1) learned from
  ``../shared/data/german_binerized.csv`` (decision ``loan_status``, sensitive ``age``,
  ``foreign_worker``, ``sex``, ``marital_status``);
- ``raw_adult``: a Chow-Liu circuit learned from raw UCI Adult
  (``../shared/data/raw/adult.data`` read by :func:`pcfair.datasets._adult.read_adult`,
  ``fnlwgt`` and ``education-num`` dropped, rows with a missing value dropped, numeric columns
  in 4 quantile bins by :func:`pcfair.tables.data.prepare_frame`; sensitive ``sex``, ``race``,
  favourable ``">50K"``): categoricals with up to 41 values, a lattice of about 10^10 points.

Each model at two thresholds: a *fair* δ, its top-1 ``|Δ|`` + 0.005 (the top-1 from
``find_patterns(kind="topk", k=1, engine="search")`` within ``--top-limit`` seconds, else from
the lattice engine within ``--top-lattice-limit`` seconds; where neither finishes, the best
``|Δ|`` found, a lower bound, and the row says so: such a δ may well be unfair), and the
*unfair* δ = 0.05. For each:

a. ``pcfair certify MODEL ... --dry-run --format json`` as a user runs it (a fresh process):
   its wall time, process start and imports included, the ``"seconds"`` it reports for the
   estimate itself, the engine ``auto`` would run and that engine's estimate;
b. :func:`pcfair.certify` with the defaults (``engine="auto"``) in this process: its wall
   time, the engine that answered (``stats["engine"]``), fair and complete. A safety limit
   ``--auto-limit`` (default 900 s, ``"auto"``'s own budget for a lattice scan without a
   limit; 0 for none) keeps a run from going on for hours;
c. :func:`pcfair.certify` with ``engine="lattice"`` and ``engine="search"`` forced, each with
   ``time_limit=--limit`` (default 120 s): wall time, fair and complete;
d. the ratio of the estimate to the measured wall time of the ``auto`` run, for the engine
   it ran: ``auto``'s own estimate (``stats["choice"]``) and the dry run's, flagged ``!``
   outside [0.5, 2] (ratios of runs under 0.5 s are noise and marked ``~`` instead).

The numba kernels are loaded (or compiled) by certifications of a three-feature model with
every engine before any timing; the dry runs, being fresh processes, load them from numba's
cache as a user's command does. Model files of learned models are written to a temporary
directory; nothing is written into the repository.

Usage::

    python benchmarks/bench_engines.py                      # everything (up to about an hour)
    python benchmarks/bench_engines.py --quick              # limits of 10 s, auto 30 s
                                                            # (about 6 minutes on 2 cores)
    python benchmarks/bench_engines.py --models compas,german_nb --limit 60 --jobs 2
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
CIRCUITS = ROOT / "circuits"
SHARED = ROOT.parent / "shared" / "data"
os.environ.setdefault("PCFAIR_DATA", str(SHARED))

import pcfair  # noqa: E402

#: The unfair threshold every model is certified at.
UNFAIR_DELTA = 0.05
#: Margin added to a model's top-1 |Δ| to make its fair threshold.
FAIR_MARGIN = 0.005
#: Estimate/measured ratios outside this range are flagged.
RATIO_RANGE = (0.5, 2.0)
#: Below this many seconds (measured and estimated) a ratio is noise.
SHORT_SECONDS = 0.5
GERMAN_SENSITIVE = ["age", "foreign_worker", "sex", "marital_status"]


@dataclass
class ModelSpec:
    """A benchmark model: how to get it and what to certify."""

    name: str
    load: Callable[[], "pcfair.Circuit"]
    decision: str
    sensitive: list[str]
    favorable: object = 1
    path: Path | None = None  # a shipped file; learned models are saved to a temp dir
    needs: Path | None = None  # the data file it is learned from


def _german(structure: str):
    df = pd.read_csv(SHARED / "german_binerized.csv")
    return pcfair.learn_pc(df, "loan_status", structure=structure)


def _raw_adult():
    from pcfair.datasets._adult import read_adult
    from pcfair.tables.data import prepare_frame

    df = read_adult(SHARED / "raw" / "adult.data").drop(columns=["fnlwgt", "education-num"])
    df = df.dropna()
    for c in df.columns:
        if not pd.api.types.is_numeric_dtype(df[c]):
            df[c] = df[c].astype(str).str.strip()
    frame, _ = prepare_frame(df, "income", 4)
    return pcfair.learn_pc(frame, "income")


MODELS = [
    ModelSpec("compas", lambda: pcfair.load(CIRCUITS / "compas_clt.json"), "ScoreText_",
              ["Ethnic_Code_Text_", "MaritalStatus_", "Sex_", "Age"],
              path=CIRCUITS / "compas_clt.json"),
    ModelSpec("adult", lambda: pcfair.load(CIRCUITS / "adult_clt.json"), "target",
              ["marital-status", "race", "sex", "native-country"],
              path=CIRCUITS / "adult_clt.json"),
    ModelSpec("german_clt", lambda: _german("clt"), "loan_status", GERMAN_SENSITIVE,
              needs=SHARED / "german_binerized.csv"),
    ModelSpec("german_nb", lambda: _german("naive_bayes"), "loan_status", GERMAN_SENSITIVE,
              needs=SHARED / "german_binerized.csv"),
    ModelSpec("raw_adult", _raw_adult, "income", ["sex", "race"], favorable=">50K",
              needs=SHARED / "raw" / "adult.data"),
]


@dataclass
class Run:
    """One timed certification: wall seconds, its verdict and the engine that answered."""

    seconds: float
    fair: bool | None = None
    complete: bool | None = None
    engine: str | None = None
    choice: dict | None = None
    error: str | None = None

    def verdict(self) -> str:
        if self.error:
            return f"error: {self.error}"
        fair = {True: "fair", False: "unfair", None: "—"}[self.fair]
        return f"{fair} / {'complete' if self.complete else 'incomplete'}"


@dataclass
class DryRun:
    """The CLI's ``--dry-run --format json``: wall time, its own seconds, its choice."""

    wall: float
    seconds: float | None = None
    engine: str | None = None
    estimate: float | None = None
    estimates: dict = field(default_factory=dict)
    error: str | None = None


@dataclass
class Row:
    model: str
    delta: float
    source: str
    dry: DryRun
    auto: Run
    forced: dict[str, Run]


def lattice_points(pc, decision: str, sensitive: list[str]) -> float:
    """Points of the pattern lattice: ``Π (arity + 1)`` over the features, ``2·arity + 1``
    for the sensitive ones."""
    names = list(pc.variables.names)
    cards = pc.variables.cardinalities
    return float(np.prod([2.0 * cards[i] + 1 if n in sensitive else cards[i] + 1.0
                          for i, n in enumerate(names) if n != decision]))


def cli_command() -> list[str]:
    """The ``pcfair`` script beside this Python, else the CLI through ``python -c``."""
    script = Path(sys.executable).with_name("pcfair")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; from pcfair.cli import main; "
                                  "sys.exit(main(sys.argv[1:]))"]


def dry_run(path: Path, spec: ModelSpec, delta: float, jobs: int) -> DryRun:
    """``pcfair certify PATH --dry-run --format json`` in a fresh process."""
    argv = [*cli_command(), "certify", str(path), "--decision", spec.decision,
            "--sensitive", ",".join(spec.sensitive), "--delta", repr(delta),
            "--jobs", str(jobs), "--dry-run", "--format", "json"]
    if spec.favorable != 1:
        argv += ["--favorable", str(spec.favorable)]
    t = time.perf_counter()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return DryRun(time.perf_counter() - t, error="timed out after 600 s")
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        return DryRun(wall, error=(proc.stderr.strip().splitlines() or ["?"])[-1][:80])
    try:
        est = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return DryRun(wall, error=f"not one JSON object: {proc.stdout[:60]!r}")
    engine = est.get("engine")
    estimates = est.get("estimates") or {}
    return DryRun(wall, seconds=est.get("seconds"), engine=engine,
                  estimate=(estimates.get(engine) or {}).get("seconds"), estimates=estimates)


def certify(pc, spec: ModelSpec, delta: float, jobs: int, **kw) -> Run:
    """One in-process certification, timed."""
    t = time.perf_counter()
    try:
        cert = pcfair.certify(pc, spec.decision, spec.sensitive, delta,
                              favorable=spec.favorable, n_jobs=jobs, **kw)
    except Exception as exc:  # an engine that refuses the model is a result, not a crash
        return Run(time.perf_counter() - t, error=f"{type(exc).__name__}: {exc}"[:80])
    spent = time.perf_counter() - t
    return Run(spent, fair=cert.fair, complete=cert.complete,
               engine=cert.stats.get("engine", cert.engine), choice=cert.stats.get("choice"))


def fair_delta(pc, spec: ModelSpec, limits: dict[str, float], jobs: int
               ) -> tuple[float, str]:
    """The model's top-1 |Δ| + :data:`FAIR_MARGIN` (at most 0.999) and where the top-1 came
    from: the search, else the lattice, each within its ``limits[engine]`` seconds."""
    best, how = 0.0, []
    for engine, limit in limits.items():
        t = time.perf_counter()
        try:
            top = pcfair.find_patterns(pc, spec.decision, spec.sensitive, 0.0, kind="topk",
                                       k=1, favorable=spec.favorable, engine=engine,
                                       time_limit=limit, n_jobs=jobs)
        except Exception as exc:
            how.append(f"{engine}: {type(exc).__name__}")
            continue
        spent = time.perf_counter() - t
        value = top[0].abs_score if len(top) else 0.0
        if top.complete:
            return (min(value + FAIR_MARGIN, 0.999),
                    f"{engine} top-1 {value:.5f} ({spent:.1f} s)")
        best = max(best, value)
        how.append(f"{engine} incomplete")
    return (min(best + FAIR_MARGIN, 0.999),
            f"lower bound {best:.5f} ({', '.join(how)}): may be unfair")


def ratio_text(estimate: float | None, measured: float) -> str:
    """``estimate / measured`` with its flag (see the module docstring)."""
    if estimate is None or measured <= 0:
        return "—"
    r = estimate / measured
    if measured < SHORT_SECONDS and estimate < SHORT_SECONDS:
        return f"{r:.2f} ~"
    flag = "" if RATIO_RANGE[0] <= r <= RATIO_RANGE[1] else " !"
    return f"{r:.2f}{flag}"


def auto_estimate(run: Run) -> float | None:
    """``auto``'s own estimate of the engine it ran."""
    if not run.choice or not run.engine:
        return None
    return (run.choice.get("estimates", {}).get(run.engine) or {}).get("seconds")


def fmt(x: float | None, digits: int = 2) -> str:
    return "—" if x is None else f"{x:,.{digits}f}"


def print_row(row: Row) -> None:
    """One line as soon as a measurement finishes (the table comes at the end)."""
    d, a = row.dry, row.auto
    print(f"  {row.model} δ={row.delta:.5f}: dry-run {fmt(d.wall)} s "
          f"(own {fmt(d.seconds)} s) -> {d.engine or d.error} est {fmt(d.estimate)} s; "
          f"auto {fmt(a.seconds)} s {a.engine} {a.verdict()}; "
          + "; ".join(f"{k} {fmt(r.seconds)} s {r.verdict()}" for k, r in row.forced.items()),
          flush=True)


def print_table(rows: list[Row]) -> None:
    print("\n| model | δ | δ from | dry-run wall s | dry-run own s | dry-run engine "
          "| its est. s | auto s | auto engine | auto answer | auto est./meas. "
          "| dry est./meas. | lattice s | lattice answer | search s | search engine "
          "| search answer |")
    print("|" + "---|" * 17)
    for r in rows:
        d, a = r.dry, r.auto
        lat, sea = r.forced.get("lattice"), r.forced.get("search")
        dry_est = None if a.engine is None else (d.estimates.get(a.engine) or {}).get("seconds")
        print(f"| {r.model} | {r.delta:.5f} | {r.source} | {fmt(d.wall)} | {fmt(d.seconds)} "
              f"| {d.engine or 'error: ' + str(d.error)} | {fmt(d.estimate)} "
              f"| {fmt(a.seconds)} | {a.engine or '—'} | {a.verdict()} "
              f"| {ratio_text(auto_estimate(a), a.seconds)} "
              f"| {ratio_text(dry_est, a.seconds)} "
              f"| {fmt(lat.seconds) if lat else '—'} | {lat.verdict() if lat else '—'} "
              f"| {fmt(sea.seconds) if sea else '—'} | {(sea.engine or '—') if sea else '—'} "
              f"| {sea.verdict() if sea else '—'} |")


def warm_up(jobs: int) -> float:
    """Load (or compile) every engine's kernels on a three-feature model; the seconds."""
    t = time.perf_counter()
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"d": rng.integers(0, 2, 400), "s": rng.integers(0, 2, 400),
                       "a": rng.integers(0, 3, 400), "b": rng.integers(0, 2, 400)})
    for structure in ("clt", "naive_bayes"):
        tiny = pcfair.learn_pc(df, "d", structure=structure)
        for engine in ("auto", "lattice", "search"):
            for delta in (0.01, 0.99):
                pcfair.certify(tiny, "d", ["s", "a"], delta, engine=engine, n_jobs=jobs)
        pcfair.find_patterns(tiny, "d", ["s", "a"], 0.0, kind="topk", k=1, engine="search")
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="shorter limits: --limit 10, --top-limit 10, --top-lattice-limit 10, "
                         "--auto-limit 30")
    ap.add_argument("--limit", type=float, default=None,
                    help="seconds for each forced engine (default 120; --quick 10)")
    ap.add_argument("--top-limit", type=float, default=None,
                    help="seconds for each top-1 run that sets the fair δ (default 60; "
                         "--quick 10)")
    ap.add_argument("--top-lattice-limit", type=float, default=None,
                    help="seconds for the lattice's top-1 where the search's did not finish "
                         "(default 300; --quick 10)")
    ap.add_argument("--auto-limit", type=float, default=None,
                    help="safety time limit of the auto run (default 900; --quick 30; "
                         "0: none)")
    ap.add_argument("--models", default=",".join(m.name for m in MODELS),
                    help="comma-separated subset of " + ", ".join(m.name for m in MODELS))
    ap.add_argument("--jobs", type=int, default=1, help="n_jobs of every run (default 1)")
    args = ap.parse_args()
    limit = args.limit if args.limit is not None else (10.0 if args.quick else 120.0)
    top_limit = args.top_limit if args.top_limit is not None else (10.0 if args.quick else 60.0)
    top_lattice = (args.top_lattice_limit if args.top_lattice_limit is not None else
                   (10.0 if args.quick else 300.0))
    auto_limit = args.auto_limit if args.auto_limit is not None else (
        30.0 if args.quick else 900.0)
    auto_kw = {"time_limit": auto_limit} if auto_limit > 0 else {}
    wanted = [s.strip() for s in args.models.split(",") if s.strip()]
    unknown = sorted(set(wanted) - {m.name for m in MODELS})
    if unknown:
        ap.error(f"unknown model(s) {unknown}")
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.2f}; forced engines "
          f"{limit:g} s each, top-1 runs {top_limit:g} s (lattice {top_lattice:g} s), auto "
          f"{'no limit' if not auto_kw else f'{auto_limit:g} s safety limit'}, "
          f"n_jobs={args.jobs}")
    print(f"numba kernels warmed up on a three-feature model (every engine) in "
          f"{warm_up(args.jobs):.1f} s, before any timing", flush=True)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench_engines_") as tmp:
        for spec in (m for m in MODELS if m.name in wanted):
            if spec.needs is not None and not spec.needs.is_file():
                print(f"\n{spec.name}: skipped, {spec.needs} is missing")
                continue
            t = time.perf_counter()
            pc = spec.load()
            learned = time.perf_counter() - t
            path = spec.path
            if path is None:
                path = Path(tmp) / f"{spec.name}.json"
                pcfair.save(pc, path)
            print(f"\n{spec.name}: {pc.num_variables - 1} features, lattice "
                  f"{lattice_points(pc, spec.decision, spec.sensitive):.3g} points "
                  f"({'loaded' if spec.path else 'learned'} in {learned:.1f} s)", flush=True)
            delta, source = fair_delta(pc, spec, {"search": top_limit, "lattice": top_lattice},
                                       args.jobs)
            print(f"  fair δ = {delta:.5f} from {source}", flush=True)
            for d, src in ((delta, source), (UNFAIR_DELTA, "fixed")):
                dry = dry_run(path, spec, d, args.jobs)
                auto = certify(pc, spec, d, args.jobs, **auto_kw)
                forced = {e: certify(pc, spec, d, args.jobs, engine=e, time_limit=limit)
                          for e in ("lattice", "search")}
                row = Row(spec.name, d, src, dry, auto, forced)
                print_row(row)
                rows.append(row)
    print_table(rows)
    flagged = [r for r in rows if ratio_text(auto_estimate(r.auto), r.auto.seconds).endswith("!")]
    print(f"\n{len(flagged)} of {len(rows)} auto runs with an estimate off by more than 2× "
          f"({', '.join(f'{r.model} δ={r.delta:.3f}' for r in flagged) or 'none'}); "
          f"'—': no estimate (a search that did not finish its probe), '~': under "
          f"{SHORT_SECONDS} s.")
    slow = [r for r in rows if r.dry.seconds is not None and r.dry.seconds > 2.0]
    if slow:
        print("dry runs over their 2 s budget: "
              + ", ".join(f"{r.model} δ={r.delta:.3f} ({r.dry.seconds:.2f} s)" for r in slow))


if __name__ == "__main__":
    main()
