"""Evidence has two explicit forms (#18): values (DataFrames, mappings) and codes (arrays); the
case where the same integer means different things in the two is refused."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pcfair.circuit import CircuitBuilder
from pcfair.errors import EvidenceError, VariableError
from pcfair.inference.marginals import log_marginals


@pytest.fixture
def graded():
    b = CircuitBuilder({"d": [0, 1], "grade": [1, 2], "city": ["a", "b"]})
    leaves = [(b.categorical("grade", g), b.categorical("city", c))
              for g, c in (([0.2, 0.8], [0.5, 0.5]), ([0.6, 0.4], [0.3, 0.7]))]
    return b.build(b.decision([(b.indicator("d", 1), b.product(*leaves[0]), 0.5),
                               (b.indicator("d", 0), b.product(*leaves[1]), 0.5)]))


def test_values_are_values(graded):
    assert graded.probability({"grade": 1}) == pytest.approx(0.5 * 0.2 + 0.5 * 0.6)
    frame = pd.DataFrame({"grade": [1, 2]})
    np.testing.assert_allclose(np.exp(graded.log_marginal(frame)), [0.4, 0.6])
    with pytest.raises(VariableError, match="unknown value '0'"):
        graded.probability({"grade": "0"})  # a digit string is no code for numeric values
    for form in ({"grade": 0}, pd.DataFrame({"grade": [0]})):  # nor is an integer: 0 is no
        with pytest.raises(VariableError, match="unknown value 0"):  # grade, code or not
            graded.log_marginal(form)


def test_codes_are_codes_and_the_ambiguous_array_is_refused(graded):
    with pytest.raises(EvidenceError, match="numeric values \\[1, 2\\]"):
        graded.log_marginal(np.array([[-1, 0, -1]]))
    # explicit codes: value 1 is code 0
    np.testing.assert_allclose(np.exp(log_marginals(graded, np.array([[-1, 0, -1]]))), [0.4])


def test_string_values_accept_codes_and_digit_strings():
    b = CircuitBuilder({"sex": ["0 (Male)", "1 (Female)"]})
    pc = b.build(b.categorical("sex", [0.3, 0.7]))
    for value in ("1 (Female)", 1, "1"):
        assert pc.probability({"sex": value}) == pytest.approx(0.7)
    np.testing.assert_allclose(np.exp(pc.log_marginal(np.array([[1]]))), [0.7])
