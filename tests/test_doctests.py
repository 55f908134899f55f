"""The Examples sections of the circuit and inference modules run as doctests."""

import doctest
import importlib

import pytest

MODULES = [
    "pcfair.circuit.builder", "pcfair.circuit.circuit", "pcfair.circuit.properties",
    "pcfair.circuit.variables", "pcfair.circuit.vtree", "pcfair.circuit.io",
    "pcfair.inference.marginals", "pcfair.inference.quotient", "pcfair.inference.sampling",
    "pcfair.learn.chow_liu", "pcfair.learn.clt", "pcfair.learn.classifier",
    "pcfair.learn.parameters", "pcfair.patterns.api", "pcfair.patterns.metrics",
    "pcfair.patterns.scores",
]


@pytest.mark.parametrize("name", MODULES)
def test_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
