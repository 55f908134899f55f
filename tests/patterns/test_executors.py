"""map_chunks: the same merged answer serially, on processes, on a user's Executor and on Dask
(an in-process LocalCluster and a real scheduler + two workers started as processes); early
stop, time limit, progress bar, bad arguments, and the fallback for a script without the
``if __name__ == "__main__":`` guard."""

from __future__ import annotations

import doctest
import importlib.util
import json
import math
import os
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from pcfair._clock import deadline_from
from pcfair.patterns import executors
from pcfair.patterns.executors import ChunkRun, map_chunks

HAS_DISTRIBUTED = importlib.util.find_spec("distributed") is not None
needs_distributed = pytest.mark.skipif(
    not HAS_DISTRIBUTED, reason="the 'distributed' extra is not installed "
                                "(pip install pcfair[distributed])")

# eight chunks of a sum of squares over range(0, 8000)
TASKS = [(lo, lo + 1000) for lo in range(0, 8000, 1000)]
EXPECTED = sum(k * k for k in range(8000))


def sum_squares(lo: int, hi: int) -> int:
    """The toy chunk task (module level: picklable by reference)."""
    return sum(k * k for k in range(lo, hi))


def slow_square(k: int, seconds: float) -> int:
    time.sleep(seconds)
    return k * k


def _merged(**kwargs) -> tuple[int, set, ChunkRun]:
    """Run TASKS and merge order-independently: a sum and the set of reported indices."""
    seen: set = set()
    total = [0]

    def merge(index, result):
        assert index not in seen
        seen.add(index)
        total[0] += result

    run = map_chunks(sum_squares, TASKS, merge, progress=False, **kwargs)
    return total[0], seen, run


def _check_complete(total, seen, run, backend):
    assert total == EXPECTED
    assert seen == set(range(len(TASKS)))
    assert run.complete and not run.stopped_early
    assert (run.done, run.total, run.backend) == (len(TASKS), len(TASKS), backend)


# --------------------------------------------------------------------------------------------
# local backends


def test_serial():
    _check_complete(*_merged(), "serial")


def test_two_processes():
    _check_complete(*_merged(n_jobs=2), "processes")


def test_user_thread_pool_is_used_and_left_open():
    with ThreadPoolExecutor(2) as pool:
        _check_complete(*_merged(executor=pool), "executor")
        assert pool.submit(sum_squares, 0, 3).result() == 5  # not shut down by map_chunks


def test_n_jobs_is_ignored_with_an_executor():
    with ThreadPoolExecutor(2) as pool:
        _check_complete(*_merged(executor=pool, n_jobs=4), "executor")


def test_empty_and_single_task():
    run = map_chunks(sum_squares, [], lambda i, r: None, n_jobs=2, progress=False)
    assert (run.complete, run.done, run.total, run.backend) == (True, 0, 0, "serial")
    got = []
    run = map_chunks(sum_squares, [(0, 4)], lambda i, r: got.append(r), n_jobs=2, progress=False)
    assert got == [14] and run.backend == "serial"  # one task: no pool to start


@pytest.mark.parametrize("kwargs", [{}, {"n_jobs": 2}, {"executor": "threads"}])
def test_early_stop(kwargs):
    if kwargs.get("executor") == "threads":
        kwargs = {"executor": ThreadPoolExecutor(2)}
    reported = []
    stopped_at = []

    def stop_at_first(index, result):
        reported.append(index)
        stopped_at.append(time.perf_counter())
        return True

    tasks = [(k, 1.0) for k in range(20)]
    run = map_chunks(slow_square, tasks, stop_at_first, progress=False, **kwargs)
    returned = time.perf_counter()
    if "executor" in kwargs:
        kwargs["executor"].shutdown(wait=True, cancel_futures=True)
    assert run.stopped_early and run.complete
    assert run.done == 1 and len(reported) == 1
    assert run.done < run.total == 20
    # back at once: no waiting for the other worker's running 1 s task (timed from the stop,
    # so a slow spawn of the workers on a loaded machine does not count)
    assert returned - stopped_at[0] < 0.6, returned - stopped_at[0]


def test_stop_only_on_true():
    """A merge returning a value (dict.setdefault, ...) does not stop the run; NumPy True does."""
    np = pytest.importorskip("numpy")
    out: dict = {}
    run = map_chunks(sum_squares, TASKS, out.setdefault, progress=False)
    assert run.done == len(TASKS) and not run.stopped_early
    run = map_chunks(sum_squares, TASKS, lambda i, r: np.bool_(i == 2), progress=False)
    assert run.stopped_early and run.done == 3


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_time_limit(n_jobs):
    t0 = time.perf_counter()
    run = map_chunks(time.sleep, [(1.0,)] * 20, lambda i, r: None, n_jobs=n_jobs,
                     time_limit=0.5, progress=False)
    elapsed = time.perf_counter() - t0
    assert not run.complete and not run.stopped_early
    assert run.done < run.total == 20
    assert elapsed < 3.0, elapsed  # spawn included; serially the running task ends first
    assert run.seconds <= elapsed


def test_time_limit_user_executor():
    with ThreadPoolExecutor(2) as pool:
        t0 = time.perf_counter()
        run = map_chunks(time.sleep, [(0.4,)] * 20, lambda i, r: None, executor=pool,
                         time_limit=0.5, progress=False)
        elapsed = time.perf_counter() - t0
        assert not run.complete and 0 < run.done < 20
        assert elapsed < 1.0, elapsed
        # pending tasks were cancelled: the pool drains after the running ones
        t0 = time.perf_counter()
        pool.submit(int).result()
        assert time.perf_counter() - t0 < 1.0


def test_time_limit_large_enough_is_complete():
    _check_complete(*_merged(time_limit=60), "serial")


def test_deadline_from():
    assert deadline_from(None) is None
    assert 4.9 < deadline_from(5) - time.time() <= 5.0
    with pytest.raises(ValueError):
        deadline_from(-1)


def test_task_errors_propagate():
    tasks = [(3,), (-1,), (4,)]
    for kwargs in ({}, {"n_jobs": 2}):
        with pytest.raises(ValueError, match="negative"):
            map_chunks(math.factorial, tasks, lambda i, r: None, progress=False, **kwargs)


def test_progress_bar(capsys):
    run = map_chunks(sum_squares, TASKS, lambda i, r: None, progress=True, desc="lattice")
    assert run.complete
    err = capsys.readouterr().err
    assert "lattice" in err and f"{len(TASKS)}/{len(TASKS)}" in err and "chunk" in err


def test_progress_default_is_silent_off_a_terminal(capsys):
    map_chunks(sum_squares, TASKS, lambda i, r: None)  # stderr is captured: not a TTY
    assert capsys.readouterr().err == ""


def test_bad_arguments():
    noop = lambda i, r: None  # noqa: E731
    with pytest.raises(TypeError, match="concurrent.futures.Executor"):
        map_chunks(sum_squares, TASKS, noop, executor=42)
    with pytest.raises(TypeError, match="dask.distributed.Client"):
        map_chunks(sum_squares, TASKS, noop, executor=object())
    with pytest.raises(ValueError, match="scheduler address"):
        map_chunks(sum_squares, TASKS, noop, executor="processes")
    with pytest.raises(ValueError, match="n_jobs"):
        map_chunks(sum_squares, TASKS, noop, n_jobs=0)
    with pytest.raises(ValueError, match="n_jobs"):
        map_chunks(sum_squares, TASKS, noop, n_jobs=True)
    with pytest.raises(ValueError, match="time_limit"):
        map_chunks(sum_squares, TASKS, noop, time_limit=-1)
    with pytest.raises(TypeError, match="tuple of arguments"):
        map_chunks(math.factorial, [1, 2], noop)


def test_missing_distributed_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    with pytest.raises(ImportError, match=r"pip install pcfair\[distributed\]"):
        map_chunks(sum_squares, TASKS, lambda i, r: None, executor="tcp://127.0.0.1:1",
                   progress=False)


def test_docstring_examples():
    result = doctest.testmod(executors, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_script_without_main_guard_falls_back(tmp_path):
    script = tmp_path / "no_guard.py"
    script.write_text(textwrap.dedent("""\
        import math
        from pcfair.patterns.executors import map_chunks

        out = {}
        run = map_chunks(math.factorial, [(n,) for n in range(12)], out.__setitem__,
                         n_jobs=2, progress=False)
        print("RESULT", sum(out.values()), run.backend, run.complete, run.done)
    """))
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    expected = sum(math.factorial(n) for n in range(12))
    assert proc.stdout.splitlines() == [f"RESULT {expected} serial True 12"]
    assert "RuntimeWarning" in proc.stderr
    assert 'if __name__ == "__main__":' in proc.stderr


# --------------------------------------------------------------------------------------------
# Dask


@pytest.fixture(scope="module")
def local_cluster_client():
    if not HAS_DISTRIBUTED:
        pytest.skip("the 'distributed' extra is not installed (pip install pcfair[distributed])")
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                           dashboard_address=None, silence_logs=40)
    client = Client(cluster, set_as_default=False)
    try:
        yield client
    finally:
        client.close()
        cluster.close()


def _pythonpath() -> str:
    """Where this test module imports from, so separately started workers can unpickle
    ``sum_squares`` by reference as this process does."""
    root = Path(__file__).resolve().parents[len(__name__.split(".")) - 1]
    parts = [str(root)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    return os.pathsep.join(parts)


@pytest.fixture(scope="module")
def scheduler_address(tmp_path_factory):
    """A real Dask scheduler and two workers, each a separate process; their address."""
    if not HAS_DISTRIBUTED:
        pytest.skip("the 'distributed' extra is not installed (pip install pcfair[distributed])")
    tmp = tmp_path_factory.mktemp("dask")
    scheduler_file = tmp / "scheduler.json"
    env = dict(os.environ, PYTHONPATH=_pythonpath())
    procs = []

    def start(*args, log):
        out = open(tmp / log, "w")
        procs.append(subprocess.Popen([sys.executable, "-m", "dask", *args], cwd=tmp, env=env,
                                      stdout=out, stderr=subprocess.STDOUT))
        out.close()

    try:
        start("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
              "--scheduler-file", str(scheduler_file), log="scheduler.log")
        t0 = time.monotonic()
        while not scheduler_file.exists() or not scheduler_file.read_text().strip():
            if procs[0].poll() is not None or time.monotonic() - t0 > 60:
                pytest.fail("the Dask scheduler did not start:\n"
                            + (tmp / "scheduler.log").read_text()[-3000:])
            time.sleep(0.1)
        time.sleep(0.1)  # the file is written in one go, but be safe about a partial read
        address = json.loads(scheduler_file.read_text())["address"]
        for k in range(2):
            start("worker", address, "--nthreads", "1", "--no-nanny", "--no-dashboard",
                  "--name", f"worker-{k}", log=f"worker-{k}.log")
        from distributed import Client

        with Client(address, set_as_default=False, timeout=60) as client:
            client.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for proc in reversed(procs):
            proc.terminate()
        for proc in procs:
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@needs_distributed
def test_dask_local_cluster_gives_the_same_answer(local_cluster_client):
    _check_complete(*_merged(executor=local_cluster_client), "dask")
    # the client's own concurrent.futures face is an Executor like any other
    _check_complete(*_merged(executor=local_cluster_client.get_executor()), "executor")


@needs_distributed
def test_dask_shared_argument_sent_once(local_cluster_client, monkeypatch):
    """An argument that is the same object in every task is lifted into one task of its own."""
    lifted = []

    def spy(client, tasks, prefix):
        out = lift(client, tasks, prefix)
        lifted.append(sorted(out))
        return out

    lift = executors._lift_shared
    monkeypatch.setattr(executors, "_lift_shared", spy)
    table = {"offset": 7}
    got = {}
    run = map_chunks(_with_table, [(table, k, 0.0) for k in range(6)], got.__setitem__,
                     executor=local_cluster_client, progress=False)
    assert run.complete and got == {k: k * k + 7 for k in range(6)}
    assert lifted == [[0]]  # the table; the float 0.0 is a scalar, k differs per task


def _with_table(table: dict, k: int, seconds: float) -> int:
    return slow_square(k, seconds) + table["offset"]


@needs_distributed
def test_dask_early_stop_and_time_limit(local_cluster_client):
    stopped_at = []

    def stop(index, result):
        stopped_at.append(time.perf_counter())
        return True

    run = map_chunks(slow_square, [(k, 1.0) for k in range(20)], stop,
                     executor=local_cluster_client, progress=False)
    assert run.stopped_early and run.complete and run.done == 1
    assert time.perf_counter() - stopped_at[0] < 0.6
    t0 = time.perf_counter()
    run = map_chunks(time.sleep, [(1.0,)] * 20, lambda i, r: None,
                     executor=local_cluster_client, time_limit=0.5, progress=False)
    assert not run.complete and run.done < 20
    assert time.perf_counter() - t0 < 2.5  # 0.5 s, plus the cancel on a loaded machine
    # the cancelled tasks are gone: the cluster answers a new run promptly
    _check_complete(*_merged(executor=local_cluster_client), "dask")


@needs_distributed
def test_dask_task_error_propagates(local_cluster_client):
    with pytest.raises(ValueError, match="negative"):
        map_chunks(math.factorial, [(3,), (-1,)], lambda i, r: None,
                   executor=local_cluster_client, progress=False)


@needs_distributed
def test_real_scheduler_and_workers_by_address(scheduler_address):
    assert scheduler_address.startswith("tcp://127.0.0.1:")
    total, seen, run = _merged(executor=scheduler_address)
    _check_complete(total, seen, run, "dask")  # EXPECTED: what every local backend gives
