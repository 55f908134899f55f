"""Shared test fixtures: where the test data and circuits are, and skip markers for tests that
need them.

- ``requires_data(*files)``: the public data tables, read from the pcfair dataset cache — the
  project's ``../shared/data`` when it is beside the checkout, else the user's cache
  (``$PCFAIR_DATA`` or ``~/.pcfair_data``), which ``python -m pcfair.datasets --download-all``
  fills. The skip reason names that command.
- ``requires_shared``: the Circuit Model Zoo files of ``../shared/circuits`` (no public
  download helper; tests that need only small circuits build them or use ``circuits/``).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pcfair.datasets import get_data_home
from pcfair.datasets._registry import REGISTRY

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
SHARED_CIRCUITS = SHARED / "circuits"
#: The data cache the tests read: ../shared/data when present, else the user's pcfair cache.
SHARED_DATA = SHARED / "data" if (SHARED / "data").is_dir() else get_data_home()
FILL_COMMAND = "python -m pcfair.datasets --download-all"

requires_shared = pytest.mark.skipif(
    not SHARED_CIRCUITS.is_dir(),
    reason="needs the Circuit Model Zoo files of ../shared/circuits beside the checkout")


def requires_data(*files: str):
    """Skip unless every file (paths relative to the cache, default: every registered data
    file) is in the data cache."""
    files = files or tuple(REGISTRY)
    missing = [f for f in files if not (SHARED_DATA / f).is_file()]
    return pytest.mark.skipif(
        bool(missing),
        reason=f"needs {', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''} in the "
               f"pcfair data cache {SHARED_DATA}; fill it with `{FILL_COMMAND}` (or set "
               "PCFAIR_DATA to a folder that holds the files)")


@pytest.fixture(autouse=True, scope="session")
def _pcfair_data_dir():
    """Point the dataset cache at the tests' data folder so tests never download."""
    if SHARED_DATA.is_dir():
        os.environ.setdefault("PCFAIR_DATA", str(SHARED_DATA))
    yield
