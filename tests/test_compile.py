"""The first-run compile notice (:mod:`pcfair._compile`) and the kernels it relies on being
cached."""

from __future__ import annotations

import importlib
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import numba
import pytest
from numba.core import event
from numba.core.dispatcher import Dispatcher

import pcfair
from pcfair._compile import START_MESSAGE, CompileWatch, compile_notice, is_pcfair_kernel
from pcfair.circuit import CircuitBuilder

PACKAGE = Path(pcfair.__file__).resolve().parent


def _pcfair_run(args: list[str], cache_dir: Path, progress: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache_dir), "PCFAIR_PROGRESS": progress}
    return subprocess.run([sys.executable, "-m", "pcfair.cli", *args], capture_output=True,
                          text=True, env=env, timeout=300, check=False)


def test_the_first_run_says_it_compiles_and_the_second_does_not(tmp_path):
    b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.45, 0.55]), 0.5),
                             (b.indicator("d", 0), b.categorical("s", [0.5, 0.5]), 0.5)]))
    model = tmp_path / "tiny.json"
    pcfair.save(pc, model)
    args = ["marginal", str(model), "--evidence", "d=1"]
    cache = tmp_path / "numba_cache"  # empty: every kernel the command needs compiles

    first = _pcfair_run(args, cache, "1")
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("P(d=1) = 0.5")
    lines = first.stderr.splitlines()
    assert lines.count(START_MESSAGE) == 1
    assert lines[-1].startswith("pcfair: compiled in ") and "rest of this run" in lines[-1]
    assert any(cache.rglob("*.nbi"))

    second = _pcfair_run(args, cache, "1")  # the same cache, now warm
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout
    assert "compil" not in second.stderr

    quiet = _pcfair_run(args, tmp_path / "other_cache", "0")  # cold, but no bars wanted
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""


def test_only_pcfair_kernels_are_announced_and_counted():
    said: list[str] = []
    watch = CompileWatch(say=said.append)
    with event.install_listener("numba:compile", watch):
        assert numba.njit(lambda x: x * 3)(2) == 6  # this test module's: not pcfair's
    assert (said, watch.compiled, watch.seconds) == ([], 0, 0.0)
    assert not is_pcfair_kernel(numba.njit(lambda x: x))


def test_nothing_listens_where_nothing_is_shown(monkeypatch):
    monkeypatch.setenv("PCFAIR_PROGRESS", "0")
    with compile_notice() as watch:
        assert watch is None
    monkeypatch.setenv("PCFAIR_PROGRESS", "1")
    with compile_notice() as watch:
        assert isinstance(watch, CompileWatch)


def _kernel_modules() -> list[str]:
    """The pcfair modules whose source compiles numba kernels."""
    names = []
    for info in pkgutil.walk_packages([str(PACKAGE)], prefix="pcfair."):
        path = PACKAGE.joinpath(*info.name.split(".")[1:])
        source = path / "__init__.py" if info.ispkg else path.with_suffix(".py")
        if "njit" in source.read_text(encoding="utf-8"):
            names.append(info.name)
    return names


def test_every_kernel_is_cached_so_the_notice_says_once():
    modules = _kernel_modules()
    assert "pcfair.inference._marginal_kernels" in modules
    kernels = [obj for name in modules for obj in vars(importlib.import_module(name)).values()
               if isinstance(obj, Dispatcher) and is_pcfair_kernel(obj)]
    assert len(kernels) > 50
    uncached = [k.py_func.__qualname__ for k in kernels if k.stats.cache_path is None]
    assert uncached == []


