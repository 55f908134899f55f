"""pcfair: certify the fairness of probabilistic circuits and audit models for intersectional bias."""

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
    "DataError",
    "EvidenceError",
    "FormatError",
    "PCFairError",
    "SpecError",
    "StructureError",
    "VariableError",
    "__version__",
]
