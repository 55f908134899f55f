"""pcfair: certify the fairness of probabilistic circuits and audit models for intersectional bias."""

from pcfair.circuit import Circuit, CircuitBuilder, Variables, Vtree
from pcfair.circuit.io import load, save
from pcfair.errors import (
    DataError,
    EvidenceError,
    FormatError,
    PCFairError,
    SpecError,
    StructureError,
    VariableError,
)

__version__ = "0.1.0"

__all__ = [
    "Circuit",
    "CircuitBuilder",
    "DataError",
    "EvidenceError",
    "FormatError",
    "PCFairError",
    "SpecError",
    "StructureError",
    "VariableError",
    "Variables",
    "Vtree",
    "__version__",
    "load",
    "save",
]
