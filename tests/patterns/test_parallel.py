"""``n_jobs > 1``: the time limit is a wall-clock bound from the call (worker start-up included),
a script without ``if __name__ == "__main__":`` does not hang, and the merge of the shares."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import pcfair
from pcfair.patterns import certify, find_patterns
from pcfair.errors import ResourceCappedWarning
from pcfair.patterns._arguments import Problem
from pcfair.patterns.executors import resolve_n_jobs
from pcfair.patterns.parallel import _share, merge_patterns, parallel_search
from pcfair.patterns.scores import ScoredPattern, pattern_divergences
from pcfair.patterns.search_types import SearchQuery, SearchResult
from pcfair.patterns.tree_search import search_tree

ROOT = Path(__file__).resolve().parents[2]
COMPAS = ROOT / "circuits" / "compas_clt.json"
DECISION = "ScoreText_"
SENSITIVE = ["Ethnic_Code_Text_", "MaritalStatus_", "Sex_", "Age"]


@pytest.fixture(scope="module")
def compas():
    return pcfair.load(COMPAS)


def _indices(pc):
    names = list(pc.variables.names)
    return names.index(DECISION), [names.index(s) for s in SENSITIVE]


def test_time_limit_counts_from_the_call_including_worker_start(compas):
    serial = find_patterns(compas, DECISION, SENSITIVE, 0.05, engine="search")
    t0 = time.perf_counter()
    ps = find_patterns(compas, DECISION, SENSITIVE, 0.05, engine="search", n_jobs=2,
                       time_limit=0.2)
    elapsed = time.perf_counter() - t0
    assert elapsed < 5.0, f"time_limit=0.2 with n_jobs=2 took {elapsed:.2f} s"
    if ps.complete:  # it really finished in time: then it is the whole answer
        assert ps.count == serial.count
    else:
        assert ps.count <= serial.count


def test_certify_cut_by_the_deadline_is_incomplete_never_fair(compas):
    # delta 0.9: no pattern exists, so only a finished search may say fair
    cert = certify(compas, DECISION, SENSITIVE, 0.9, engine="search", n_jobs=2, time_limit=0.0)
    assert cert.fair is None and not cert.complete
    # split over processes: the deadline passes while the workers start
    d, sens = _indices(compas)
    t0 = time.perf_counter()
    split = parallel_search(search_tree, Problem(compas, d, 1, sens),
                            SearchQuery(0.9, mode="first").within(0.05), n_jobs=2)
    assert time.perf_counter() - t0 < 5.0
    assert not split.complete and not split.patterns
    assert certify(compas, DECISION, SENSITIVE, 0.9, engine="search").fair is True
    # a limit too short to start workers runs the search here, which finishes
    assert certify(compas, DECISION, SENSITIVE, 0.9, engine="search", n_jobs=2,
                   time_limit=1.0).fair is True


def test_worker_deadline_is_wall_clock(compas):
    """The worker takes the parent's ``time.time()`` deadline as it is (one clock across
    processes); a deadline already past stops its search at the root (incomplete)."""
    from pcfair.circuit.io.json_io import to_dict

    d, sens = _indices(compas)
    query = SearchQuery(0.05, mode="all", deadline=time.time() - 1.0)
    job = (search_tree, to_dict(compas), d, 1, sens, query)
    res = _share(*job)
    assert not res.complete and not res.patterns
    res = _share(*job[:5], query.but(deadline=time.time() + 600.0))
    assert res.complete and len(res.patterns) == find_patterns(
        compas, DECISION, SENSITIVE, 0.05, engine="search").count


def test_one_deadline_reaches_the_runner(compas):
    """The query's ``deadline`` (the request's, a ``time.time()`` value) is handed to the
    runner as it is: no conversion back to seconds on one process; ``within`` brings it
    forward, never past its own."""
    d, sens = _indices(compas)
    seen = []

    def runner(problem, query):
        seen.append(query)
        return SearchResult()

    end = time.time() + 123.0
    parallel_search(runner, Problem(compas, d, 1, sens), SearchQuery(0.05, deadline=end),
                    n_jobs=1)
    assert seen[0].deadline == end and not hasattr(seen[0], "time_limit")
    parallel_search(runner, Problem(compas, d, 1, sens), SearchQuery(0.05).within(5.0), n_jobs=1)
    assert 4.0 < seen[1].deadline - time.time() <= 5.0
    parallel_search(runner, Problem(compas, d, 1, sens),
                    SearchQuery(0.05, deadline=end).within(600.0), n_jobs=1)
    assert seen[2].deadline == end
    past = parallel_search(search_tree, Problem(compas, d, 1, sens),
                           SearchQuery(0.05, deadline=time.time() - 1.0).within(600), n_jobs=1)
    assert not past.complete and not past.patterns


def test_parallel_matches_serial_and_first_stops_early(compas):
    d, sens = _indices(compas)
    serial = parallel_search(search_tree, Problem(compas, d, 1, sens), SearchQuery(0.05), n_jobs=1)
    split = parallel_search(search_tree, Problem(compas, d, 1, sens), SearchQuery(0.05), n_jobs=2)
    assert split.complete and len(split.patterns) == len(serial.patterns) == 2356
    first = parallel_search(search_tree, Problem(compas, d, 1, sens),
                            SearchQuery(0.05, mode="first"), n_jobs=2)
    assert first.complete and len(first.patterns) == 1
    assert abs(first.patterns[0][2]) > 0.05


def test_resolve_n_jobs():
    cores = os.cpu_count() or 1
    assert resolve_n_jobs(1) == 1 and resolve_n_jobs(cores) == cores
    assert resolve_n_jobs(-1) == cores
    with pytest.warns(ResourceCappedWarning, match=f"{cores + 1} is more than"):
        assert resolve_n_jobs(cores + 1) == cores
    for bad in (0, -2, 1.5, True, "2"):
        with pytest.raises(ValueError, match="n_jobs"):
            resolve_n_jobs(bad)


def _result(items):
    return SearchResult(patterns=list(items))


def test_merge_patterns_dedups_and_takes_the_best(compas):
    d, sens = _indices(compas)
    a = ScoredPattern.from_log({sens[0]: 1}, {}, 0.30, math.log(0.2))
    b = ScoredPattern.from_log({sens[0]: 0}, {sens[1]: 1}, -0.50, math.log(0.1))
    c = ScoredPattern.from_log({sens[0]: 0}, {}, 0.10, math.log(0.4))
    parts = [_result([a, b]), _result([b, c])]

    def merge(parts, mode, k=10):
        return merge_patterns(Problem(compas, d, 1, sens), SearchQuery(0.05, mode=mode, k=k),
                              parts)

    assert sorted(map(repr, merge(parts, "all"))) == sorted(map(repr, [a, b, c]))
    assert merge(parts, "topk", 2) == [b, a]
    assert len(merge(parts, "first")) == 1
    assert merge([_result([]), _result([])], "topk", 2) == []


def test_topk_by_divergence_merges_exactly(compas):
    d, sens = _indices(compas)
    for rank_by in ("divergence", "discrimination"):
        one = parallel_search(search_tree, Problem(compas, d, 1, sens),
                              SearchQuery(0.05, mode="topk", k=7, rank_by=rank_by), n_jobs=1)
        two = parallel_search(search_tree, Problem(compas, d, 1, sens),
                              SearchQuery(0.05, mode="topk", k=7, rank_by=rank_by), n_jobs=2)
        assert two.complete and len(two.patterns) == len(one.patterns) == 7

        def keys(res):  # the ranking key of each selected pattern (ties may pick others)
            score = np.array([it[2] for it in res.patterns])
            key = (pattern_divergences(compas, d, 1, [it[:2] for it in res.patterns], score,
                                       0.05) if rank_by == "divergence" else np.abs(score))
            return np.sort(key)

        np.testing.assert_allclose(keys(two), keys(one), rtol=1e-12)


@pytest.mark.parametrize("guard", [False, True])
def test_script_with_or_without_main_guard_finishes(tmp_path, guard):
    call = (f"cert = pcfair.certify(pcfair.load({str(COMPAS)!r}), {DECISION!r}, {SENSITIVE!r}, "
            "0.05, engine='search', n_jobs=2)\n"
            "print('VERDICT', 'UNFAIR' if cert.fair is False else cert.fair, cert.fair)\n")
    body = ("if __name__ == '__main__':\n" + textwrap.indent(call, "    ")) if guard else call
    script = tmp_path / "user_script.py"
    script.write_text("import pcfair\n" + body)
    env = {**os.environ, "PYTHONWARNINGS": "default"}
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "VERDICT UNFAIR False" in proc.stdout
    if guard:
        assert "RuntimeWarning" not in proc.stderr
    else:  # the workers could not start: the search ran here, and the warning says why
        assert "RuntimeWarning" in proc.stderr and "__name__" in proc.stderr
        assert "Traceback" not in proc.stderr
