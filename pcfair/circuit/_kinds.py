"""The node kinds of a compiled circuit (``Circuit.kind``), below every module of the circuit
core so that its helpers need not import :mod:`pcfair.circuit.circuit`, which imports them.

They are re-exported by :mod:`pcfair.circuit.circuit` and :mod:`pcfair.circuit`, where users
read them.

Examples
--------
>>> from pcfair.circuit import CATEGORICAL, CircuitBuilder
>>> b = CircuitBuilder({"x": [0, 1]})
>>> pc = b.build(b.categorical("x", [0.5, 0.5]))
>>> int(pc.kind[pc.root]) == CATEGORICAL, KIND_NAMES[CATEGORICAL]
(True, 'categorical')
"""

INDICATOR = 0
CATEGORICAL = 1
PRODUCT = 2
SUM = 3
KIND_NAMES = {INDICATOR: "indicator", CATEGORICAL: "categorical", PRODUCT: "product", SUM: "sum"}
