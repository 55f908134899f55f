"""Every public name of pcfair.datasets has an Examples section (tests/test_doctests.py runs
them)."""

from __future__ import annotations

import pcfair.datasets


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
