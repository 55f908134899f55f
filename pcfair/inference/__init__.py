"""Inference on compiled circuits: marginals, conditionals, sampling, MAP, quotient bounds."""

from pcfair.inference.marginals import conditional, log_marginals
from pcfair.inference.quotient import (
    ConditionalBounds,
    QuotientResult,
    conditional_bounds,
    max_quotient,
)
from pcfair.inference.sampling import map_assignment, sample

__all__ = [
    "ConditionalBounds",
    "QuotientResult",
    "conditional",
    "conditional_bounds",
    "log_marginals",
    "map_assignment",
    "max_quotient",
    "sample",
]
