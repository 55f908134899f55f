"""Circuit representation: variables, the builder, the compiled flat form, vtrees, properties."""

from pcfair.circuit.builder import CircuitBuilder
from pcfair.circuit.circuit import CATEGORICAL, INDICATOR, PRODUCT, SUM, Circuit
from pcfair.circuit.variables import Variables
from pcfair.circuit.vtree import Vtree

__all__ = [
    "CATEGORICAL",
    "INDICATOR",
    "PRODUCT",
    "SUM",
    "Circuit",
    "CircuitBuilder",
    "Variables",
    "Vtree",
]
