"""Shared test fixtures: the location of ../shared and a skip marker for tests that need it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
SHARED_CIRCUITS = SHARED / "circuits"
SHARED_DATA = SHARED / "data"

requires_shared = pytest.mark.skipif(
    not SHARED.is_dir(), reason="../shared (test circuits and data) is not beside the checkout"
)


@pytest.fixture(autouse=True, scope="session")
def _pcfair_data_dir():
    """Point the dataset cache at ../shared/data so tests never download."""
    if SHARED_DATA.is_dir():
        os.environ.setdefault("PCFAIR_DATA", str(SHARED_DATA))
    yield
