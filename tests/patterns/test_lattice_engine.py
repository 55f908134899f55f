"""The streaming lattice engine: chunk splits, processes and a Dask cluster give identical
answers; time limits never certify; the CLI reaches a real scheduler."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import pcfair
from _pcgen import random_mixture, random_psdd
from test_bounds import random_tan
from pcfair.patterns._arguments import resolve_problem
from pcfair.patterns._arguments import Problem
from pcfair.patterns.lattice import (
    LatticeQuery,
    ScanRun,
    estimate,
    final_front,
    make_plan,
    scan,
)

ROOT = Path(__file__).resolve().parents[2]
COMPAS = ROOT / "circuits" / "compas_clt.json"
COMPAS_ARGS = ["--decision", "ScoreText_", "--sensitive",
               "Ethnic_Code_Text_,MaritalStatus_,Sex_,Age", "--delta", "0.05"]
HAS_DASK = importlib.util.find_spec("distributed") is not None
needs_dask = pytest.mark.skipif(not HAS_DASK, reason="the distributed extra is not installed "
                                "(pip install pcfair[distributed])")

FULL = LatticeQuery(deltas=(0.0, 0.02, 0.1), k_top=7, k_div=5, pareto=True, listing=True,
                    summaries=True)


def summary(run, values: bool = True) -> dict:
    """Everything a scan answers, as plain lists (bit-identical comparisons); without
    ``values`` only the counts and which patterns (indices), not their scores."""
    r = run.result
    return {"counts": r.counts.tolist(), "defined": r.defined, "best": r.best,
            "best_index": r.best_index, "top": [a.tolist() for a in r.top],
            "div": [[a.tolist() for a in part] for part in r.div],
            "fronts": [[a.tolist() for a in final_front(f)] for f in r.fronts],
            "listing": [a.tolist() for a in r.listing], "bits": run.bits.tolist()}


def same_answer(a, b) -> None:
    """Counts and every listed, ranked or front pattern identical; scores equal to rounding
    (chunks sum the joint in another order: a few ulps)."""
    ra, rb = a.result, b.result
    assert ra.counts.tolist() == rb.counts.tolist() and ra.defined == rb.defined
    np.testing.assert_array_equal(a.bits, b.bits)  # the summaries' bitmap
    assert ra.best == pytest.approx(rb.best, rel=1e-12, abs=1e-15)
    for x, y in [(ra.top, rb.top), *zip(ra.div, rb.div)]:  # heaps: ties may swap members
        np.testing.assert_allclose(x[0], y[0], rtol=1e-12, atol=1e-15)
    for x, y, at in [*((u, v, 2) for u, v in zip(map(final_front, ra.fronts),
                                                  map(final_front, rb.fronts))),
                     (ra.listing, rb.listing, 0)]:
        assert x[at].tolist() == y[at].tolist()  # the same patterns (indices)
        for u, v in zip(x, y):
            np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-15)


def model(seed: int, cards: list[int], kind: str):
    rng = np.random.default_rng(seed)
    pc = (random_psdd(rng, [2] + cards, zeros=bool(seed % 2)) if kind == "psdd"
          else random_mixture(rng, [2] + cards))
    sens = [f"x{i}" for i in range(1, 1 + min(2, len(cards)))]
    return tuple(resolve_problem(pc, "x0", sens, 1))


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(2, 3), min_size=2, max_size=5),
       st.sampled_from(["psdd", "mixture"]))
def test_chunk_splits_give_identical_answers(seed, cards, kind):
    pc, d, fav, sens = model(seed, cards, kind)
    runs = [scan(Problem(pc, d, fav, sens), FULL, ScanRun(min_chunks=m)) for m in (1, 3, 9)]
    assert len({r.stats["chunks"] for r in runs}) > 1 or len(cards) - len(sens) < 2
    for r in runs[1:]:
        same_answer(runs[0], r)


@pytest.mark.parametrize("family", ["dyadic", "rare", "nb"])
@pytest.mark.parametrize("seed", range(10))
def test_seeded_chunks_give_the_unsplit_answer_on_tied_and_rare_models(family, seed):
    """Split runs seed their chunks with a pilot chunk's divergence floors and Pareto front
    (one chunk runs unseeded): the harness's tie-heavy (dyadic parameters) and rare (1e-12)
    models give the same counts, heaps and fronts either way."""
    from test_random_models import make_case

    case = make_case(family, seed)
    query = LatticeQuery(deltas=(0.0, 0.05, 0.2), k_top=4, k_div=4, pareto=True, listing=True,
                         summaries=True)
    problem = Problem(case.pc, case.decision, case.favorable, case.sensitive)
    one = scan(problem, query, ScanRun(min_chunks=1))
    for m in (3, 9):
        split = scan(problem, query, ScanRun(min_chunks=m))
        if split.stats["chunks"] > 1:
            same_answer(one, split)


def test_processes_and_dask_give_identical_answers():
    pc, d, fav, sens = model(3, [2, 3, 2, 2, 2], "psdd")
    serial = summary(scan(Problem(pc, d, fav, sens), FULL, ScanRun(min_chunks=64)))
    assert summary(scan(Problem(pc, d, fav, sens), FULL, ScanRun(n_jobs=2))) == serial
    if HAS_DASK:
        from distributed import Client, LocalCluster

        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            run = scan(Problem(pc, d, fav, sens), FULL, ScanRun(executor=client))
            assert summary(run) == serial


@pytest.mark.parametrize("min_chunks", [1, 4])
def test_summary_bitmap_matches_the_listing_and_the_picked_scores(min_chunks):
    """Bit 0 of the bitmap is the listing at δ = 0 (the same comparison), bit 1 Σ at δ = 0.05,
    bit 2 definedness; a pass picking points returns the listing's very scores."""
    pc, d, fav, sens = model(5, [2, 2, 3], "psdd")
    run = scan(Problem(pc, d, fav, sens),
               LatticeQuery(deltas=(0.0, 0.05), listing=True, summaries=True),
               ScanRun(min_chunks=min_chunks))
    idx, score, _, _ = run.result.listing
    bits = run.bits
    assert bits.dtype == np.uint8 and len(bits) == run.plan.num_points
    assert np.flatnonzero(bits & 1).tolist() == idx.tolist()
    assert np.flatnonzero(bits & 2).tolist() == idx[np.abs(score) > 0.05 + 1e-12].tolist()
    assert int(np.count_nonzero(bits & 4)) == run.result.defined
    again = scan(Problem(pc, d, fav, sens), LatticeQuery(deltas=(0.0,), points=idx),
                 ScanRun(plan=run.plan))
    np.testing.assert_array_equal(again.picked, score)


def test_a_time_limit_never_certifies():
    pc = pcfair.load(ROOT / "circuits" / "adult_clt.json")
    sens = ["marital-status", "race", "sex", "native-country"]
    t0 = time.perf_counter()
    cert = pcfair.certify(pc, "target", sens, 0.99, engine="lattice", time_limit=1e-3,
                          max_bytes=5 << 20)
    assert time.perf_counter() - t0 < 30
    assert cert.fair is None and not cert.complete and cert.max_abs_score is None
    ps = pcfair.find_patterns(pc, "target", sens, 0.99, engine="lattice", time_limit=1e-3,
                              max_bytes=5 << 20, count_only=True)
    assert not ps.complete


def test_memory_budget_bounds_the_chunk():
    pc, d, fav, sens = model(1, [2, 2, 2, 2, 2, 2], "psdd")
    small = make_plan(pc, d, fav, sens, max_bytes=(1 << 22) + 2000)
    assert small.chunk_bytes() <= (1 << 22) + 2000 and len(small.chunks()) > 1
    same_answer(scan(Problem(pc, d, fav, sens), FULL, ScanRun(max_bytes=(1 << 22) + 2000)),
                scan(Problem(pc, d, fav, sens), FULL))
    adult = pcfair.load(ROOT / "circuits" / "adult_clt.json")
    with pytest.raises(pcfair.patterns.LatticeTooLarge,
                       match=r"bitmap .*\(12,301,875 bytes\).*raise max_bytes"):
        pcfair.find_patterns(adult, "target", ["marital-status", "race", "sex", "native-country"],
                             0.1, kind="maximal",
                             engine="lattice", max_bytes=8 << 20)


def test_estimate_reports_sizes():
    pc, d, fav, sens = model(2, [2, 2, 2, 2], "psdd")
    est = estimate(pc, d, fav, sens)
    assert est["lattice_points"] == make_plan(pc, d, fav, sens).num_points
    assert est["estimated_seconds"] > 0 and est["points_per_second"] > 0


def test_cli_dry_run(capsys):
    from pcfair.cli import main

    assert main(["certify", str(COMPAS), *COMPAS_ARGS, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "16,875 patterns" in out and "MiB per chunk" in out
    assert "a bitmap of 0.02 MiB for 3 thresholds, within the 1,024 MiB" in out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def dask_scheduler(tmp_path):
    """A real Dask scheduler and two workers, each its own process on this machine."""
    port = _free_port()
    address = f"tcp://127.0.0.1:{port}"
    bindir = Path(sys.executable).parent
    procs = [subprocess.Popen([str(bindir / "dask"), "scheduler", "--host", "127.0.0.1",
                               "--port", str(port), "--dashboard-address", ":0"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.time() + 60
        while True:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.time() > deadline:
                pytest.fail("the Dask scheduler did not start in 60 s")
            time.sleep(0.2)
        for _ in range(2):
            procs.append(subprocess.Popen(
                [str(bindir / "dask"), "worker", address, "--nthreads", "1",
                 "--dashboard-address", ":0", "--local-directory", str(tmp_path)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        from distributed import Client

        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for p in procs[::-1]:
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()


@needs_dask
def test_cli_certify_on_a_real_scheduler(dask_scheduler):
    exe = str(Path(sys.executable).parent / "pcfair")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    # --max: the whole lattice, so the witness is the largest |Δ| whichever chunk ends first
    local = subprocess.run([exe, "certify", str(COMPAS), *COMPAS_ARGS, "--engine", "lattice",
                            "--max", "--format", "json"], capture_output=True, text=True,
                           env=env, timeout=300)
    remote = subprocess.run([exe, "certify", str(COMPAS), *COMPAS_ARGS, "--engine", "lattice",
                             "--max", "--format", "json", "--scheduler", dask_scheduler],
                            capture_output=True, text=True, env=env, timeout=300)
    assert local.returncode == remote.returncode == 1, remote.stderr
    a, b = json.loads(local.stdout), json.loads(remote.stdout)
    assert a["witness"] == b["witness"] and a["max_abs_score"] == b["max_abs_score"]
    assert b["stats"]["chunks"] > 1


def test_all_patterns_stream_to_a_csv_file(tmp_path):
    import pandas as pd

    pc = pcfair.load(COMPAS)
    sens = ["Ethnic_Code_Text_", "MaritalStatus_", "Sex_", "Age"]
    path = tmp_path / "all.csv"
    ps = pcfair.find_patterns(pc, "ScoreText_", sens, 0.05, engine="lattice", out=path,
                              max_bytes=5 << 20)
    assert ps.count == 2356 and not ps.patterns
    table = pd.read_csv(path, keep_default_na=False)
    kept = pcfair.find_patterns(pc, "ScoreText_", sens, 0.05, engine="lattice")
    assert len(table) == 2356
    assert sorted(table["score"].round(12)) == sorted(round(p.score, 12) for p in kept)
    # "auto" streams through the lattice too; the search cannot stream
    again = tmp_path / "auto.csv"
    assert pcfair.find_patterns(pc, "ScoreText_", sens, 0.05, out=again).count == 2356
    assert len(pd.read_csv(again, keep_default_na=False)) == 2356
    with pytest.raises(pcfair.errors.OptionError, match="out= streams"):
        pcfair.find_patterns(pc, "ScoreText_", sens, 0.05, engine="search", out=again)
    assert set(zip(table["x"], table["y"])) == set(kept.to_frame()[["x", "y"]].itertuples(
        index=False, name=None))
    with pytest.raises(ValueError, match="kind='all'"):
        pcfair.find_patterns(pc, "ScoreText_", sens, 0.05, kind="pareto", out=path)


def test_scan_until_witness_stops_at_the_first_witness_chunk():
    pc, d, fav, sens = resolve_problem(pcfair.load(COMPAS), "ScoreText_",
                                       ["Ethnic_Code_Text_", "MaritalStatus_", "Sex_", "Age"], 1)
    query = LatticeQuery(deltas=(0.05,), k_top=1)
    full = scan(Problem(pc, d, fav, sens), query, ScanRun(min_chunks=30))
    first = scan(Problem(pc, d, fav, sens), query, ScanRun(min_chunks=30, until_witness=True))
    assert full.complete and first.complete and full.stats["chunks"] > 20
    assert 0 < first.stats["chunks_done"] < full.stats["chunks"]
    assert 0 < first.result.counts[0] <= full.result.counts[0]
    assert first.result.best <= full.result.best
    # at a fair threshold every chunk is scanned, and the answer is the full one
    fair = scan(Problem(pc, d, fav, sens), LatticeQuery(deltas=(0.3,), k_top=1),
                ScanRun(min_chunks=30, until_witness=True))
    assert fair.complete and fair.stats["chunks_done"] == fair.stats["chunks"]
    assert fair.result.counts[0] == 0 and fair.result.best == pytest.approx(full.result.best)


def test_a_chunk_cut_by_its_deadline_keeps_what_it_found():
    from pcfair.patterns.lattice import scan_chunk
    from pcfair.patterns.scores import log_normalizer

    pc, d, fav, sens = resolve_problem(pcfair.load(COMPAS), "ScoreText_",
                                       ["Ethnic_Code_Text_", "MaritalStatus_", "Sex_", "Age"], 1)
    plan = make_plan(pc, d, fav, sens)
    log_z = log_normalizer(float(pc.log_marginal(None)[0]))
    query = LatticeQuery(deltas=(0.0,), listing=True)
    whole = scan_chunk(pc, plan, plan.chunks()[0], query, log_z, batch=1)
    assert not whole.partial and whole.counts[0] > 0

    calls = {"n": 0}  # a clock whose deadline passes after the table and a few leaves
    real = time.time

    def fake_time():
        calls["n"] += 1
        return real() + (0.0 if calls["n"] < 6 else 1e6)

    import pcfair.patterns.lattice as lattice_module

    lattice_module.time.time = fake_time
    try:
        cut = scan_chunk(pc, plan, plan.chunks()[0], query, log_z, batch=1,
                         deadline=real() + 100.0)
    finally:
        lattice_module.time.time = real
    assert cut is not None and cut.partial
    assert 0 < cut.counts[0] < whole.counts[0]
    kept = set(cut.listing[0].tolist())
    assert kept and kept <= set(whole.listing[0].tolist())


def test_probe_cost_model():
    """The probe's cost model: a positive cost per pattern, a set-up per chunk that is not
    negative, and the arithmetic the engine table plans chunks with."""
    from pcfair.patterns.lattice import ScanCost, probe_cost
    from pcfair.patterns.scores import log_normalizer

    pc, d, fav, sens = resolve_problem(pcfair.load(COMPAS), "ScoreText_",
                                       ["Ethnic_Code_Text_", "MaritalStatus_", "Sex_", "Age"], 1)
    plan = make_plan(pc, d, fav, sens)
    log_z = log_normalizer(float(pc.log_marginal(None)[0]))
    t = time.perf_counter()
    cost = probe_cost(pc, plan, LatticeQuery(deltas=(0.05,), k_top=1), log_z, seconds=0.05)
    assert time.perf_counter() - t < 5.0
    assert cost.per_point > 0 and cost.per_chunk >= 0
    model = ScanCost(per_chunk=0.01, per_point=1e-9)
    assert model.seconds(2e9, 10) == pytest.approx(2.1)
    assert model.chunks_for(2e9, 0.5) == 4 and model.chunks_for(10, 0.5) == 1


def test_an_interrupted_csv_is_set_aside(tmp_path, monkeypatch, capsys):
    """Ctrl-C (or an error) while patterns stream to ``out=`` leaves ``NAME.partial``, not a
    file that looks finished."""
    import pcfair.patterns._lattice_engine as lattice_engine

    sens = ["Ethnic_Code_Text_", "MaritalStatus_", "Sex_", "Age"]

    def interrupted(problem, query, how):
        how.sink((np.zeros(0, np.int64), np.zeros(0), np.zeros(0), np.zeros(0)))
        raise KeyboardInterrupt

    monkeypatch.setattr(lattice_engine, "scan", interrupted)
    path = tmp_path / "all.csv"
    with pytest.raises(KeyboardInterrupt):
        pcfair.find_patterns(pcfair.load(COMPAS), "ScoreText_", sens, 0.05, engine="lattice",
                             out=path)
    assert not path.exists() and (tmp_path / "all.csv.partial").exists()
    assert "all.csv.partial" in capsys.readouterr().err


def _tree_model(seed: int, cards: list[int]):
    rng = np.random.default_rng(seed)
    pc = random_tan(rng, [2] + cards, zeros=bool(seed % 3 == 0), tiny=bool(seed % 5 == 0))
    sens = [f"x{i}" for i in range(1, 1 + min(2, len(cards)))]
    return tuple(resolve_problem(pc, "x0", sens, 1))


def _kept(heap, bar):
    """A heap's entries above ``bar`` (values, then the signed scores), for comparison."""
    keep = heap[0] > bar + 1e-9
    return np.sort(heap[0][keep])[::-1], np.sort(heap[2][keep])


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(2, 4), min_size=3, max_size=5),
       st.sampled_from(["psdd", "tree", "mixture"]), st.floats(0.0, 1.0))
def test_pruned_chunks_give_the_unpruned_answer(seed, cards, kind, frac):
    """Chunks skipped by their bound (lattice.chunk_bounds: the quotient bound on a random
    PSDD, the tree bound on a random tree model, none on a mixture) change nothing the query
    keeps: with ``prune="threshold"`` the counts, set-aside counts, listing, divergence heaps
    and Pareto fronts at every δ (and the top-k entries above the smallest δ); with
    ``prune="topk"`` the top-k heap and the best |Δ|. The thresholds are drawn below and
    above the model's largest |Δ|, so that some chunks are skipped."""
    pc, d, fav, sens = _tree_model(seed, cards) if kind == "tree" else model(seed, cards, kind)
    base = LatticeQuery(deltas=(0.0,), k_top=1)
    best = scan(Problem(pc, d, fav, sens), base).result.best
    lo = frac * best
    query = LatticeQuery(deltas=(lo, lo + 0.05), k_top=3, k_div=3, pareto=True, listing=True,
                         min_support=1e-4 if seed % 2 else 0.0)
    full = scan(Problem(pc, d, fav, sens), query, ScanRun(min_chunks=9))
    cut = scan(Problem(pc, d, fav, sens), query, ScanRun(min_chunks=9, prune="threshold"))
    a, b = full.result, cut.result
    assert cut.complete and cut.stats["chunks"] == full.stats["chunks"]
    assert a.counts.tolist() == b.counts.tolist() and a.rare.tolist() == b.rare.tolist()
    assert a.listing[0].tolist() == b.listing[0].tolist()
    np.testing.assert_allclose(a.listing[1], b.listing[1], rtol=1e-12, atol=1e-15)
    for x, y in zip(a.div, b.div):
        np.testing.assert_allclose(x[0], y[0], rtol=1e-12, atol=1e-15)
    for x, y in zip(map(final_front, a.fronts), map(final_front, b.fronts)):
        assert x[2].tolist() == y[2].tolist()
    for u, v in zip(_kept(a.top, lo), _kept(b.top, lo)):
        np.testing.assert_allclose(u, v, rtol=1e-12, atol=1e-15)
    ranked = scan(Problem(pc, d, fav, sens), query, ScanRun(min_chunks=9, prune="topk"))
    assert ranked.complete
    np.testing.assert_allclose(ranked.result.top[0], a.top[0], rtol=1e-12, atol=1e-15)
    assert ranked.result.best == pytest.approx(a.best, rel=1e-12, abs=1e-15)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.lists(st.integers(2, 4), min_size=3, max_size=5),
       st.sampled_from(["psdd", "tree"]), st.floats(0.0, 1.2), st.integers(1, 64))
def test_subchunk_bounds_cover_every_pattern_of_their_chunk(seed, cards, kind, frac, budget):
    """lattice.chunk_bounds with a bar (sub-chunk refinement): every chunk's value is at
    least the largest |Δ| among its patterns where that is above the bar (brute force over
    every pattern), never more than the chunk's own bound, and under the bar only where
    every pattern of the chunk is; a small budget only gives up more often."""
    from _pattern_oracle import enumerate_patterns

    from pcfair.patterns.lattice import chunk_bounds

    pc, d, fav, sens = _tree_model(seed, cards) if kind == "tree" else model(seed, cards, "psdd")
    plan = make_plan(pc, d, fav, sens, min_chunks=4)
    chunks = plan.chunks()
    plain = chunk_bounds(pc, plan, chunks)
    found = enumerate_patterns(pc, list(plan.cards), d, sens, favorable=fav, delta=1.0)
    best = max((r.abs_delta for r in found), default=0.0)
    bar = frac * best
    refined = chunk_bounds(pc, plan, chunks, bar=bar, budget=budget)
    axes = plan.nonsensitive[: plan.prefix]
    worst = {c: -1.0 for c in chunks}
    for r in found:
        key = tuple(0 if v not in r.y else r.y[v] + 1 for v in axes)
        worst[key] = max(worst[key], r.abs_delta)
    for i, c in enumerate(chunks):
        assert refined[i] <= plain[i] + 1e-12 * abs(plain[i]) + 1e-300
        if refined[i] * (1 + 1e-9) + 1e-300 <= bar:  # a chunk the scan skips
            assert worst[c] <= bar + 1e-9, (c, worst[c], refined[i], bar)
        else:
            assert worst[c] <= plain[i] * (1 + 1e-9) + 1e-12


@pytest.mark.parametrize("kind", ["psdd", "tree"])
def test_pruning_skips_chunks_above_the_largest_discrimination(kind):
    """Above a model's largest |Δ| a certification's chunks are all skipped by the bound on
    a tree model, and some are on a PSDD; the verdict and counts are those of the full scan."""
    cards = [3, 2, 3, 2, 2]
    pc, d, fav, sens = _tree_model(4, cards) if kind == "tree" else model(4, cards, "psdd")
    best = scan(Problem(pc, d, fav, sens), LatticeQuery(deltas=(0.0,), k_top=1)).result.best
    query = LatticeQuery(deltas=(best + 0.2,))
    full = scan(Problem(pc, d, fav, sens), query, ScanRun(min_chunks=9))
    cut = scan(Problem(pc, d, fav, sens), query, ScanRun(min_chunks=9, prune="threshold"))
    assert cut.result.counts.tolist() == full.result.counts.tolist() == [0]
    assert cut.complete and cut.stats["chunks_pruned"] > 0
    assert cut.stats["chunks_done"] + cut.stats["chunks_pruned"] == cut.stats["chunks"]
