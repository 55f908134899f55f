"""The Examples sections of pcfair.datasets run as doctests, and every public name has one."""

from __future__ import annotations

import doctest
import importlib
import urllib.error

import pytest
from conftest import requires_data

import pcfair.datasets
from pcfair.datasets import _cache

MODULES = [
    "pcfair.datasets._adult",
    "pcfair.datasets._binarized",
    "pcfair.datasets._cache",
    "pcfair.datasets._compas",
    "pcfair.datasets._dataset",
    "pcfair.datasets._german",
    "pcfair.datasets._netfile",
    "pcfair.datasets.preprocessing",
    "pcfair.datasets.synthetic",
]


@pytest.fixture(autouse=True)
def no_network(monkeypatch):
    def refuse(url, timeout):
        raise urllib.error.URLError(f"network disabled in tests ({url})")

    monkeypatch.setattr(_cache, "_open_url", refuse)


@requires_data()
@pytest.mark.parametrize("module_name", MODULES)
def test_examples_run(module_name):
    module = importlib.import_module(module_name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0


def test_public_names_are_documented_with_examples():
    for name in pcfair.datasets.__all__:
        obj = getattr(pcfair.datasets, name)
        if name in {"BINARIZED_NAMES"}:
            continue
        doc = obj.__doc__ or ""
        assert doc.strip(), f"{name} has no docstring"
        if callable(obj) and not isinstance(obj, type):
            assert "Examples" in doc, f"{name} has no Examples section"
    assert sorted(pcfair.datasets.__all__) == sorted(set(pcfair.datasets.__all__))
