"""The streaming lattice engine (#15) against the materialising engine it replaced, same run.

Three parts, each printed as one compact table:

1. ``adult``: the shipped Adult CLT (``circuits/adult_clt.json``, 13 features, 4 sensitive,
   12.3 million lattice points). The full census — counts at δ ∈ {0.01, 0.05, 0.1}, maximal,
   minimal and strict Pareto patterns, top-1/10/100 by ``|Δ|`` and by divergence — by
   :func:`pcfair.pattern_census` (the streaming engine) and by the pre-#15 materialising engine
   (``benchmarks/_materialized_lattice.py``, the baseline), each in a fresh process: seconds
   and peak memory, the ratios, and whether the two censuses agree. Then each single CLI query
   (``pcfair patterns ... --kind K`` and ``pcfair certify``) timed as a user runs it, process
   start included.
2. ``german``: CLT (:func:`pcfair.learn_pc`) and naive Bayes
   (:func:`pcfair.learn.fair.learn_mle_pc` with ``structure="naive_bayes"``) learned from
   ``german_binerized.csv`` (21 features, 4 sensitive, 80.7 billion lattice points): exact max
   ``|Δ|``, counts at the three thresholds (one counts-only pass), top-10 by ``|Δ|``,
   certification at δ = max + 0.005, and the census (maximal/minimal only where their bitmap,
   one byte a lattice point, fits the 1 GiB budget: not for German, whose bitmap needs 81 GB),
   each on ``--jobs`` processes with its time and peak memory.
3. ``scaling``: CLTs learned on seeded synthetic correlated binary data with 10, 12, …, 24
   features (4 sensitive): lattice points, the seconds, peak memory and patterns per second of
   a counts-only scan in one process, against the materialising baseline where its arrays fit
   2 GiB (counts compared); sizes whose estimated time exceeds the limit show the
   engine's own :func:`pcfair.patterns.lattice.estimate` instead, marked as estimates.
4. ``closure`` (only with ``--only closure``): the rate of the maximal/minimal closures
   (:func:`pcfair.patterns.summaries.extension_summaries`, 3 thresholds) on a German-shaped
   sub-lattice of about 10^9 points (a 1 GB bitmap, Σ drawn at the German CLT's densities),
   and what that rate means for the whole German lattice.
5. ``seeding`` (only with ``--only seeding``): three chunks of the German CLT's census scanned
   with and without the pilot chunk's seed (:func:`pcfair.patterns.lattice.scan_chunk`), same
   run, one process: the seconds and the ratio per query.

Every measurement runs in a fresh subprocess (``--child``) that imports pcfair and warms the
numba kernels up on the small COMPAS CLT first; it reports the resident memory after that
warm-up ("base"), the peak (``ru_maxrss``) at the end, and for runs on several processes the
largest worker's peak. The load average of the machine is printed with each part.

Usage::

    python benchmarks/bench_lattice.py                 # everything (about an hour on 2 cores)
    python benchmarks/bench_lattice.py --quick         # small: Adult once, estimates elsewhere
    python benchmarks/bench_lattice.py --only adult --jobs 2
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("PCFAIR_DATA", ROOT.parent / "shared" / "data"))
os.environ.setdefault("PCFAIR_DATA", str(DATA))

ADULT = ROOT / "circuits" / "adult_clt.json"
ADULT_DECISION = "target"
ADULT_SENSITIVE = ["marital-status", "race", "sex", "native-country"]
COMPAS = ROOT / "circuits" / "compas_clt.json"
COMPAS_DECISION = "ScoreText_"
COMPAS_SENSITIVE = ["Ethnic_Code_Text_", "MaritalStatus_", "Sex_", "Age"]
GERMAN_CSV = DATA / "german_binerized.csv"
GERMAN_DECISION = "loan_status"
GERMAN_SENSITIVE = ["age", "foreign_worker", "sex", "marital_status"]
DELTAS = (0.01, 0.05, 0.1)
KS = (1, 10, 100)
CHILD_TIMEOUT = 900  # seconds of one measured subprocess
CENSUS_TIMEOUT = 2400  # the German census (the target: 10 minutes)

# the targets (#15)
ADULT_CENSUS_S, ADULT_CENSUS_MIB, CLI_S = 2.0, 300.0, 3.0
GERMAN_S, GERMAN_MIB = 120.0, 2048.0


# ------------------------------------------------------------------------------ measurement
def _rss_mib() -> float:
    """Current resident memory of this process, MiB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _peak_mib(who=resource.RUSAGE_SELF) -> float:
    return resource.getrusage(who).ru_maxrss / 1024  # Linux: KiB


def _load() -> str:
    return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def _warm_up(engine: str) -> None:
    """Import and compile: one small census with the engine to be measured."""
    import pcfair

    pc = pcfair.load(str(COMPAS))
    if engine == "old":
        from pcfair.patterns._arguments import resolve_problem

        import _materialized_lattice as old

        c, d, fav, sens = tuple(resolve_problem(pc, COMPAS_DECISION, COMPAS_SENSITIVE, 1))
        old.census(c, d, fav, sens, DELTAS, KS)
    else:
        pcfair.pattern_census(pc, COMPAS_DECISION, COMPAS_SENSITIVE, DELTAS, ks=KS)


def _frame_json(df) -> list[dict]:
    return json.loads(df.to_json(orient="records"))


def _german_model(structure: str):
    import pandas as pd

    df = pd.read_csv(GERMAN_CSV)
    if structure == "clt":
        from pcfair.learn import learn_pc

        return learn_pc(df, GERMAN_DECISION)
    from pcfair.learn.fair import learn_mle_pc

    return learn_mle_pc(df, GERMAN_DECISION, structure="naive_bayes")


def _synthetic_model(n_features: int, n_sensitive: int = 4, rows: int = 20_000):
    """A CLT learned on seeded correlated binary data: ``D``, then each feature copies a random
    earlier column and flips it with a random probability in [0.1, 0.4]."""
    import numpy as np
    import pandas as pd

    from pcfair.learn import learn_pc

    rng = np.random.default_rng(1000 + n_features)
    names = ["D"] + [f"s{i}" for i in range(n_sensitive)] + \
        [f"f{i}" for i in range(n_features - n_sensitive)]
    cols = [rng.random(rows) < 0.4]
    for _ in names[1:]:
        parent = cols[rng.integers(len(cols))]
        flip = rng.random(rows) < rng.uniform(0.1, 0.4)
        cols.append(parent ^ flip)
    df = pd.DataFrame({n: c.astype(np.int8) for n, c in zip(names, cols)})
    return learn_pc(df, "D"), "D", names[1: 1 + n_sensitive]


def child(task: str, args: dict) -> dict:
    """One measurement in this (fresh) process; returns seconds, memory and the result."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import pcfair
    from pcfair.patterns._arguments import resolve_problem
    from pcfair.patterns._arguments import Problem
    from pcfair.patterns.lattice import DEFAULT_MAX_BYTES, LatticeQuery, ScanRun, estimate, scan

    out: dict = {}
    jobs = int(args.get("jobs", 1))
    if task == "adult":
        _warm_up(args["engine"])
        pc = pcfair.load(str(ADULT))
        base = _rss_mib()
        t = time.perf_counter()
        if args["engine"] == "old":
            import _materialized_lattice as old

            c, d, fav, sens = tuple(resolve_problem(pc, ADULT_DECISION, ADULT_SENSITIVE, 1))
            df = old.census(c, d, fav, sens, DELTAS, KS)
        else:
            df = pcfair.pattern_census(pc, ADULT_DECISION, ADULT_SENSITIVE, DELTAS, ks=KS)
        seconds = time.perf_counter() - t
        out["census"] = _frame_json(df)
    elif task == "german":
        pc = _german_model(args["structure"])
        what = args["what"]
        if what == "estimate":
            c, d, fav, sens = tuple(resolve_problem(pc, GERMAN_DECISION, GERMAN_SENSITIVE, 1))
            base = _rss_mib()
            t = time.perf_counter()
            out["estimate"] = estimate(c, d, fav, sens)
            seconds = time.perf_counter() - t
        else:
            _warm_up("new")
            base = _rss_mib()
            t = time.perf_counter()
            if what in ("max", "max_hi"):  # certify at δ = 0 or 0.99: max_abs_score
                cert = pcfair.certify(pc, GERMAN_DECISION, GERMAN_SENSITIVE,
                                      0.0 if what == "max" else 0.99, engine="lattice",
                                      n_jobs=jobs, exact_max=True)
                out.update(max_abs=cert.max_abs_score, complete=cert.complete,
                           witness=None if cert.witness is None else cert.witness.text())
            elif what == "counts":
                problem = resolve_problem(pc, GERMAN_DECISION, GERMAN_SENSITIVE, 1)
                run = scan(problem, LatticeQuery(deltas=DELTAS), ScanRun(n_jobs=jobs))
                out.update(counts=[int(x) for x in run.result.counts], complete=run.complete,
                           points=run.stats["lattice_points"])
            elif what == "top10":
                ps = pcfair.find_patterns(pc, GERMAN_DECISION, GERMAN_SENSITIVE, 0.01,
                                          kind="topk", k=10, engine="lattice", n_jobs=jobs)
                out.update(top=[p.abs_score for p in ps], complete=ps.complete,
                           first=ps[0].text() if len(ps) else None)
            elif what == "certify":
                cert = pcfair.certify(pc, GERMAN_DECISION, GERMAN_SENSITIVE, args["delta"],
                                      engine="lattice", n_jobs=jobs)
                out.update(fair=cert.fair, complete=cert.complete,
                           max_abs=cert.max_abs_score)
            elif what == "census":
                df = pcfair.pattern_census(pc, GERMAN_DECISION, GERMAN_SENSITIVE, DELTAS, ks=KS,
                                           n_jobs=jobs)
                out["census"] = _frame_json(df)
            else:
                raise ValueError(what)
            seconds = time.perf_counter() - t
    elif task == "scale":
        pc, dec, sens_names = _synthetic_model(int(args["n"]))
        c, d, fav, sens = tuple(resolve_problem(pc, dec, sens_names, 1))
        if args["what"] == "estimate":
            base = _rss_mib()
            t = time.perf_counter()
            out["estimate"] = estimate(c, d, fav, sens)
            seconds = time.perf_counter() - t
        elif args["what"] == "old":  # the materialising baseline: every point scored, counted
            import _materialized_lattice as old

            small, sdec, ssens = _synthetic_model(8)  # warm-up
            c2, d2, f2, s2 = tuple(resolve_problem(small, sdec, ssens, 1))
            int(old.build_lattice(c2, d2, f2, s2).discriminating(0.05).sum())
            base = _rss_mib()
            t = time.perf_counter()
            try:
                lat = old.build_lattice(c, d, fav, sens)
            except pcfair.patterns.LatticeTooLarge as e:
                return {"error": f"does not fit: {e}"}
            out["count"] = int(lat.discriminating(0.05).sum())
            seconds = time.perf_counter() - t
        else:
            small, sdec, ssens = _synthetic_model(8)  # warm-up
            scan(resolve_problem(small, sdec, ssens, 1), LatticeQuery(deltas=(0.05,)))
            base = _rss_mib()
            t = time.perf_counter()
            how = ScanRun(n_jobs=jobs, max_bytes=int(args.get("max_bytes", DEFAULT_MAX_BYTES)))
            run = scan(Problem(c, d, fav, sens), LatticeQuery(deltas=(0.05,)), how)
            seconds = time.perf_counter() - t
            out.update(count=int(run.result.counts[0]), points=run.stats["lattice_points"],
                       defined=run.stats["defined_patterns"], chunks=run.stats["chunks"],
                       complete=run.complete)
    else:
        raise ValueError(task)
    out.update(seconds=seconds, base_mib=base, peak_mib=_peak_mib(),
               workers_peak_mib=_peak_mib(resource.RUSAGE_CHILDREN))
    return out


def run_child(task: str, timeout: float = CHILD_TIMEOUT, **args) -> dict:
    """Run :func:`child` in a fresh interpreter; its last stdout line is the JSON result."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", task, json.dumps(args)]
    # its own process group, so that a timeout also ends the child's worker processes
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            cwd=ROOT, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        return {"error": f"timed out after {timeout:.0f} s"}
    if proc.returncode != 0:
        tail = (err or out).strip().splitlines()[-3:]
        return {"error": f"exit {proc.returncode}: " + " | ".join(tail)}
    return json.loads(out.strip().splitlines()[-1])


def time_cli(argv: list[str], repeat: int) -> dict:
    """Wall seconds (process start included) and peak memory of a CLI call, best of
    ``repeat``; output discarded."""
    best, first, peak, rc = math.inf, None, 0.0, None
    for _ in range(repeat):
        t = time.perf_counter()
        p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        elapsed = time.perf_counter() - t
        first = elapsed if first is None else first
        best = min(best, elapsed)
        peak = max(peak, usage.ru_maxrss / 1024)
        rc = p.returncode
    return {"first": first, "best": best, "peak_mib": peak, "rc": rc}


# ------------------------------------------------------------------------------------ parts
def _ok(flag: bool) -> str:
    return "met" if flag else "NOT met"


def _fmt_mem(r: dict) -> str:
    return f"{r['peak_mib']:7.0f} {r['peak_mib'] - r['base_mib']:7.0f}"


def adult_part(quick: bool) -> None:
    print(f"\n== Adult CLT ({ADULT.relative_to(ROOT)}): full census, 3 δ, ks {KS}  [{_load()}]")
    new = run_child("adult", engine="new")
    old = run_child("adult", engine="old")
    for name, r in (("streaming (new)", new), ("materialising (old)", old)):
        if "error" in r:
            print(f"  {name}: {r['error']}")
    if "error" in new or "error" in old:
        return
    print(f"  {'engine':<22}{'seconds':>9}{'peak MiB':>10}{'+MiB':>8}   (+MiB: over the "
          "process after imports and warm-up)")
    for name, r in (("streaming (new)", new), ("materialising (old)", old)):
        print(f"  {name:<22}{r['seconds']:9.2f} {_fmt_mem(r)}")
    print(f"  new vs old: {old['seconds'] / new['seconds']:.1f}× faster, peak "
          f"{old['peak_mib'] / new['peak_mib']:.1f}× smaller "
          f"({(old['peak_mib'] - old['base_mib']) / max(new['peak_mib'] - new['base_mib'], 1):.1f}"
          "× smaller increase)")
    print(f"  targets: census ≤ {ADULT_CENSUS_S:g} s {_ok(new['seconds'] <= ADULT_CENSUS_S)}, "
          f"peak ≤ {ADULT_CENSUS_MIB:g} MB {_ok(new['peak_mib'] * 1.048576 <= ADULT_CENSUS_MIB)}")
    # agreement
    cols = [c for c in new["census"][0] if c in old["census"][0]
            and c not in ("delta", "complete", "pareto")]  # the new census has more columns
    print(f"  {'δ':>5} {'patterns':>9} {'maximal':>8} {'minimal':>8} {'pareto new/old':>15} "
          f"{'top1 |Δ|':>9} {'top100 div':>10}  agree")
    all_agree = True
    for rn, ro in zip(new["census"], old["census"]):
        bad = []
        for c in cols:
            a, b = rn[c], ro[c]
            if isinstance(a, float) or isinstance(b, float):
                same = (a is None and b is None) or (
                    a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9,
                                                                     abs_tol=1e-15))
            else:
                same = a == b
            if not same:
                bad.append(f"{c} {a} vs {b}")
        all_agree &= not bad
        print(f"  {rn['delta']:5.2f} {rn['patterns']:9d} {rn['maximal']:8d} {rn['minimal']:8d} "
              f"{str(rn['pareto']) + '/' + str(ro['pareto']):>15} {rn['top1_abs_score']:9.5f} "
              f"{rn['top100_divergence']:10.5f}  {'yes' if not bad else 'NO: ' + '; '.join(bad)}")
    print(f"  counts, maximal, minimal and every top-k value agree: {all_agree}"
          " (Pareto printed new/old)")

    exe = str(Path(sys.executable).parent / "pcfair")
    common = [str(ADULT.relative_to(ROOT)), "--decision", ADULT_DECISION, "--sensitive",
              ",".join(ADULT_SENSITIVE), "--delta", "0.05"]
    queries = [("pcfair --help (start-up floor)", [exe, "--help"]),
               ("patterns --kind all --count", [exe, "patterns", *common, "--kind", "all",
                                                "--count"]),
               ("patterns --kind maximal", [exe, "patterns", *common, "--kind", "maximal"]),
               ("patterns --kind minimal", [exe, "patterns", *common, "--kind", "minimal"]),
               ("patterns --kind pareto", [exe, "patterns", *common, "--kind", "pareto"]),
               ("patterns --kind topk", [exe, "patterns", *common, "--kind", "topk"]),
               ("certify", [exe, "certify", *common])]
    repeat = 1 if quick else 3
    print(f"\n  CLI, δ = 0.05, process start included (best of {repeat}; first run "
          f"in brackets)  [{_load()}]")
    print(f"  {'command':<32}{'seconds':>9}{'(first)':>9}{'peak MiB':>10}  target ≤ {CLI_S:g} s")
    for label, argv in queries:
        r = time_cli(argv, repeat)
        tgt = "" if label.startswith("pcfair --help") else _ok(r["best"] <= CLI_S)
        if r["rc"] != 0:
            tgt += f" (exit {r['rc']})"
        print(f"  {label:<32}{r['best']:9.2f}{'(' + format(r['first'], '.2f') + ')':>9}"
              f"{r['peak_mib']:10.0f}  {tgt}")


def closure_part() -> None:
    """The closures' rate on a German-shaped sub-lattice (4 sensitive axes of 5 states and 13
    non-sensitive ones of 3: 996 million points, one byte each), with Σ drawn independently
    at the German CLT's densities (64 / 32 / 19% at δ = 0.01 / 0.05 / 0.1), every point
    defined. The rate does not depend on the bits much: the closures are passes over the
    whole bitmap."""
    import numpy as np

    from pcfair.patterns.summaries import extension_summaries

    print(f"\n== Maximal/minimal closures, German-shaped sub-lattice, 1 process  [{_load()}]")
    shape = (5,) * 4 + (3,) * 13
    n = int(np.prod(shape, dtype=np.int64))
    rng = np.random.default_rng(0)
    words = np.empty(n, np.uint8)
    for i in range(0, n, 1 << 26):
        u = rng.random(min(1 << 26, n - i))
        words[i:i + len(u)] = 8 | (u < 0.64) | ((u < 0.32) << 1) | ((u < 0.19) << 2)
    extension_summaries(words[:625 * 27].copy(), (5,) * 4 + (3,) * 3, (2,) * 7, 3)  # compile
    t = time.perf_counter()
    out = extension_summaries(words, shape, (2,) * 17, 3)
    seconds = time.perf_counter() - t
    rate = n / seconds
    german = 5**4 * 3**17
    print(f"  {n:,} points in {seconds:.1f} s: {rate / 1e6:.0f} M points/s "
          f"(maximal {out['maximal'][0].tolist()}, minimal {out['minimal'][0].tolist()})")
    print(f"  German CLT ({german:,} points) at this rate: {german / rate:,.0f} s of one core, "
          f"over a bitmap of {german / 1e9:.1f} GB (bits per threshold: "
          f"{german / 8e9:.1f} GB)")


def seeding_part() -> None:
    """The census's chunks with and without the pilot's seed, same run: ``scan_chunk`` on
    chunks 1, 40 and 80 of the German CLT's 81 (the plan of a 2-process scan), for counts
    alone, the divergence heaps (top-100 at 3 δ), the Pareto fronts and the full census query,
    one process. The seed is the pilot chunk's (chunk 0) result, as :func:`scan` makes it."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from pcfair.patterns._arguments import resolve_problem
    from pcfair.patterns.lattice import DEFAULT_MAX_BYTES, LatticeQuery, make_plan, scan_chunk
    from pcfair.patterns.scores import log_normalizer

    print(f"\n== Census chunks, seeded against unseeded (German CLT, 1 process)  [{_load()}]")
    c, d, fav, sens = tuple(resolve_problem(_german_model("clt"), GERMAN_DECISION, GERMAN_SENSITIVE, 1))
    log_z = log_normalizer(float(c.log_marginal(None)[0]))
    plan = make_plan(c, d, fav, sens, DEFAULT_MAX_BYTES, min_chunks=64)
    chunks = plan.chunks()
    picks = [chunks[i] for i in (1, len(chunks) // 2, len(chunks) - 1)]
    queries = {"counts": LatticeQuery(deltas=DELTAS),
               "divergence top-100": LatticeQuery(deltas=DELTAS, k_div=100),
               "Pareto": LatticeQuery(deltas=DELTAS, pareto=True),
               "census": LatticeQuery(deltas=DELTAS, k_top=100, k_div=100, pareto=True)}
    print(f"  {'query':<20}{'unseeded s':>12}{'seeded s':>10}{'ratio':>8}   (chunks "
          f"{', '.join(str(chunks.index(p)) for p in picks)} of {len(chunks)})")
    for name, query in queries.items():
        pilot = scan_chunk(c, plan, chunks[0], query, log_z)  # also compiles
        times = []
        for seed in (None, pilot):
            t = time.perf_counter()
            for prefix in picks:
                scan_chunk(c, plan, prefix, query, log_z, seed=seed)
            times.append(time.perf_counter() - t)
        print(f"  {name:<20}{times[0]:12.2f}{times[1]:10.2f}{times[0] / times[1]:7.1f}×")


def german_part(quick: bool, jobs: int, selected: set[str],
                models: tuple[str, ...] = ("clt", "naive_bayes")) -> None:
    """``selected``: task names (``max``, ``max_hi``, ``counts``, ``top10``, ``certify``,
    ``census``); certification at max + 0.005 needs one of the two max tasks."""
    if "certify" in selected and not selected & {"max", "max_hi"}:
        selected = selected | {"max_hi"}
    if not GERMAN_CSV.exists():
        print(f"\n== German: skipped, {GERMAN_CSV} is absent (set PCFAIR_DATA)")
        return
    print(f"\n== German (21 features, 4 sensitive), {jobs} process(es)  [{_load()}]")
    print(f"  {'model':<12}{'task':<26}{'seconds':>9}{'peak MiB':>9}{'+MiB':>7}"
          f"{'workers':>8}  result")
    for structure, label in (("clt", "CLT"), ("naive_bayes", "naive Bayes")):
        if structure not in models:
            continue
        est = run_child("german", structure=structure, what="estimate")
        if "error" in est:
            print(f"  {label:<12}estimate failed: {est['error']}")
            continue
        e = est["estimate"]
        per_run = e["estimated_seconds"] / max(jobs, 1)
        print(f"  {label:<12}{'estimate (engine)':<26}{'':>9}{'':>9}{'':>7}{'':>8}  "
              f"{e['lattice_points']:.3g} points, {e['points_per_second']:.3g} points/s/process,"
              f" ~{e['estimated_seconds']:.0f} s on 1 process (~{per_run:.0f} s on {jobs}), "
              f"chunk {e['chunk_bytes'] / 2**20:.0f} MiB; maximal/minimal need a "
              f"{e['summary_bytes'] / 1e9:.1f} GB bitmap for 3 δ (max_bytes 1 GiB: not run)")
        if quick or per_run > 600:
            why = "--quick" if quick else "estimated over 10 minutes"
            print(f"  {label:<12}not run ({why}): the figures above are the engine's estimate")
            continue
        tasks = [("max", "max |Δ| (certify δ=0)", {}),
                 ("max_hi", "max |Δ| (certify δ=0.99)", {}),
                 ("counts", "counts δ=.01/.05/.1", {}), ("top10", "top-10 by |Δ| (δ=0.01)", {}),
                 ("certify", "certify δ=max+0.005", {}),
                 ("census", "census (max/min where they fit)", {})]
        max_abs = None
        for what, name, extra in tasks:
            if what not in selected:
                continue
            if what == "certify":
                if max_abs is None:
                    print(f"  {label:<12}{name:<26} skipped: no exact max")
                    continue
                extra = {"delta": round(max_abs + 0.005, 6)}
            r = run_child("german", timeout=CENSUS_TIMEOUT if what == "census" else CHILD_TIMEOUT,
                          structure=structure, what=what, jobs=jobs, **extra)
            if "error" in r:
                print(f"  {label:<12}{name:<26} {r['error']}")
                continue
            if what in ("max", "max_hi"):
                max_abs = r["max_abs"]
                res = f"max |Δ| = {max_abs:.6f} ({r['witness']})"
            elif what == "counts":
                res = "counts " + " / ".join(f"{c:,}" for c in r["counts"])
            elif what == "top10":
                res = "top-10 |Δ| " + ", ".join(f"{v:.4f}" for v in r["top"])
            elif what == "certify":
                res = (f"δ = {extra['delta']}: fair={r['fair']} complete={r['complete']}"
                       + ("" if r["fair"] is True and r["complete"] else "  <-- expected fair"))
            else:
                res = "patterns " + " / ".join(f"{row['patterns']:,}" for row in r["census"]) + \
                      ", pareto " + "/".join(str(row["pareto"]) for row in r["census"]) + \
                      ", top100 div " + "/".join(f"{row['top100_divergence']:.4f}"
                                                 for row in r["census"])
            done = r.get("complete", True)
            mem = r["peak_mib"] + jobs * r["workers_peak_mib"]
            flag = "" if what == "census" else \
                f" [{_ok(r['seconds'] <= GERMAN_S and mem * 1.048576 <= GERMAN_MIB)}]"
            print(f"  {label:<12}{name:<26}{r['seconds']:9.1f}{r['peak_mib']:9.0f}"
                  f"{r['peak_mib'] - r['base_mib']:7.0f}{r['workers_peak_mib']:8.0f}  {res}"
                  f"{'' if done else ' (INCOMPLETE)'}{flag}")
    print(f"  (peak: the calling process; workers: the largest worker's peak; the total is at "
          f"most peak + {jobs} × workers. Targets: each task ≤ {GERMAN_S:g} s and ≤ 2 GB.)")


def scaling_part(quick: bool, limit: float, sizes=None, small_budget: bool = True) -> None:
    """Rows are run while their time, extrapolated from the largest row run so far (or the
    engine's estimate before any), stays under ``limit``; the others print estimates. Each
    row run is also run with ``max_bytes`` = 64 MiB (more, smaller chunks): memory stays
    flat under any budget, the default one (1 GiB) included once a model needs it (unless
    ``small_budget`` is false). ``sizes`` (numbers of features) replaces the default rows."""
    if sizes is None:
        sizes = range(10, 16, 2) if quick else range(10, 26, 2)
    print(f"\n== Scaling: counts-only scan (δ = 0.05), learned CLTs on synthetic binary data, "
          f"4 sensitive, 1 process; estimates beyond ~{limit:g} s  [{_load()}]")
    print(f"  {'features':>8}{'lattice pts':>15}{'patterns':>15}{'seconds':>10}"
          f"{'peak MiB':>9}{'+MiB':>6}{'patterns/s':>12}{'engine est. s':>14}"
          f"{'64MiB: s':>10}{'+MiB':>6}{'old: s':>9}{'+MiB':>6}{'old/new':>8}")
    rate, rate_n = None, None  # patterns per second of the largest row run
    for n in sizes:
        points = 5**4 * 3 ** (n - 4)
        patterns = points - 3**n  # points with a non-empty x
        est = run_child("scale", n=n, what="estimate")
        if "error" in est:
            print(f"  {n:8d}  estimate failed: {est['error']}")
            continue
        e = est["estimate"]
        predicted = e["estimated_seconds"] if rate is None else patterns / rate
        if predicted > limit:
            extra = "" if rate is None else \
                f"; {patterns / rate:.0f} s extrapolated from the {rate_n}-feature row's rate"
            print(f"  {n:8d}{points:15.4g}{patterns:15.4g}{e['estimated_seconds']:9.0f}*"
                  f"{est['base_mib'] + e['chunk_bytes'] / 2**20:8.0f}*{'':>6}"
                  f"{e['points_per_second'] * patterns / points:11.3g}*"
                  f"{e['estimated_seconds']:14.1f}  (* engine estimate, not run: chunk "
                  f"{e['chunk_bytes'] / 2**20:.0f} MiB{extra})")
            continue
        wait = max(CHILD_TIMEOUT, 2 * limit)  # a row may run up to about ``limit``
        r = run_child("scale", timeout=wait, n=n, what="scan")
        if "error" in r:
            print(f"  {n:8d}  {r['error']}")
            continue
        rate, rate_n = patterns / r["seconds"], n
        b = run_child("scale", timeout=wait, n=n, what="scan", max_bytes=64 << 20) \
            if small_budget else \
            {"error": "not run"}
        bounded = f"{b['error']:>10}{'':>6}" if "error" in b else \
            f"{b['seconds']:10.2f}{b['peak_mib'] - b['base_mib']:6.0f}"
        agree = "" if "error" in b or b["count"] == r["count"] else "  COUNTS DIFFER"
        # the materialising baseline (10 float64 arrays per point: 2 GiB budget)
        o = run_child("scale", n=n, what="old") if 80 * points <= 2 << 30 else \
            {"error": "does not fit"}
        if "error" in o:
            old = f"{'–':>9}{'':>6}{'no fit':>8}" if "fit" in o["error"] else \
                f"{'error':>9}{'':>6}{'':>8}"
        else:
            old = f"{o['seconds']:9.2f}{o['peak_mib'] - o['base_mib']:6.0f}" \
                  f"{o['seconds'] / r['seconds']:7.1f}×"
            agree += "" if o["count"] == r["count"] else "  BASELINE COUNT DIFFERS"
        print(f"  {n:8d} {points:14,d} {patterns:14,d}{r['seconds']:10.2f}{r['peak_mib']:9.0f}"
              f"{r['peak_mib'] - r['base_mib']:6.0f}{rate:12.3g}{e['estimated_seconds']:14.1f}"
              f"{bounded}{old}  ({r['chunks']}/{b.get('chunks', '?')} chunks, {r['count']:,} "
              f"patterns at δ=0.05){agree}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="a small run (minutes)")
    ap.add_argument("--only", choices=("adult", "german", "scaling", "closure", "seeding"))
    ap.add_argument("--jobs", type=int, default=2, help="processes for the German runs (2)")
    ap.add_argument("--german-tasks", default="max,max_hi,counts,top10,certify,census",
                    help="German tasks to run (comma-separated; default all)")
    ap.add_argument("--german-models", default="clt,naive_bayes",
                    help="German models (clt, naive_bayes; default both)")
    ap.add_argument("--scale-limit", type=float, default=60.0,
                    help="seconds beyond which a scaling row is estimated, not run (60)")
    ap.add_argument("--scale-sizes", help="numbers of features of the scaling rows "
                    "(comma-separated; default 10,12,...,24)")
    ap.add_argument("--scale-no-bounded", action="store_true",
                    help="skip the scaling rows' second run at a 64 MiB budget")
    ap.add_argument("--child", nargs=2, metavar=("TASK", "JSON"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child[0], json.loads(a.child[1]))))
        return
    print(f"bench_lattice: {os.cpu_count()} cores, python {sys.version.split()[0]}, "
          f"{time.strftime('%Y-%m-%d %H:%M')}, {_load()}")
    if a.only in (None, "adult"):
        adult_part(a.quick)
    if a.only in (None, "scaling"):
        sizes = None if a.scale_sizes is None else [int(n) for n in a.scale_sizes.split(",")]
        scaling_part(a.quick, 10.0 if a.quick else a.scale_limit, sizes,
                     not a.scale_no_bounded)
    if a.only == "closure":
        closure_part()
    if a.only == "seeding":
        seeding_part()
    if a.only in (None, "german"):
        german_part(a.quick, a.jobs, set(a.german_tasks.split(",")),
                    tuple(a.german_models.split(",")))


if __name__ == "__main__":
    main()
