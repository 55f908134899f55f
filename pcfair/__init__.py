"""pcfair: certify the fairness of probabilistic circuits and audit models for intersectional bias."""

from pcfair.errors import (
    DataError,
    EvidenceError,
    FormatError,
    LatticeTooLarge,
    OptionError,
    PCFairError,
    PCFairWarning,
    ResourceCappedWarning,
    SpecError,
    StructureError,
    SummariesOmittedWarning,
    UnknownValueWarning,
    VariableError,
)

__version__ = "0.1.0"

_LAZY = {
    # the circuit layer imports numpy and numba: imported on first use, so that the command
    # line starts fast (``pcfair --help``)
    "Circuit": ("pcfair.circuit", "Circuit"),
    "CircuitBuilder": ("pcfair.circuit", "CircuitBuilder"),
    "Variables": ("pcfair.circuit", "Variables"),
    "Vtree": ("pcfair.circuit", "Vtree"),
    "load": ("pcfair.circuit.io", "load"),
    "save": ("pcfair.circuit.io", "save"),
    "circuit": ("pcfair.circuit", None),
    "learn_pc": ("pcfair.learn.clt", "learn_pc"),
    "PCClassifier": ("pcfair.learn.classifier", "PCClassifier"),  # imports scikit-learn
    "certify": ("pcfair.patterns", "certify"),
    "find_patterns": ("pcfair.patterns", "find_patterns"),
    "sample_patterns": ("pcfair.patterns", "sample_patterns"),
    "pattern_census": ("pcfair.patterns", "pattern_census"),
    "fairness_metrics": ("pcfair.patterns", "fairness_metrics"),
    "DiscriminationOracle": ("pcfair.patterns.oracle", "DiscriminationOracle"),
    "learn_fair_pc": ("pcfair.learn.fair", "learn_fair_pc"),
    "report": ("pcfair.reporting", "report"),
    "plot": ("pcfair.plot", None),  # matplotlib itself is imported only when drawing
    "patterns": ("pcfair.patterns", None),
    "datasets": ("pcfair.datasets", None),
    "inference": ("pcfair.inference", None),
    "learn": ("pcfair.learn", None),
}


def __getattr__(name: str):
    """Import the circuit layer, learning, datasets and scikit-learn-backed names on first
    use."""
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        mod = importlib.import_module(module)
        return mod if attr is None else getattr(mod, attr)
    raise AttributeError(f"module 'pcfair' has no attribute {name!r}")


def __dir__() -> list[str]:
    """The module's names with those imported on first use (so that ``dir(pcfair)`` and tab
    completion show ``certify``, ``find_patterns``, ``load``...)."""
    return sorted(set(globals()) | set(_LAZY))


__all__ = [
    "Circuit",
    "CircuitBuilder",
    "DiscriminationOracle",
    "PCClassifier",
    "certify",
    "fairness_metrics",
    "find_patterns",
    "learn_fair_pc",
    "learn_pc",
    "pattern_census",
    "report",
    "sample_patterns",
    "DataError",
    "EvidenceError",
    "FormatError",
    "LatticeTooLarge",
    "OptionError",
    "PCFairError",
    "PCFairWarning",
    "ResourceCappedWarning",
    "UnknownValueWarning",
    "SpecError",
    "StructureError",
    "SummariesOmittedWarning",
    "VariableError",
    "Variables",
    "Vtree",
    "__version__",
    "load",
    "save",
]
