"""A probabilistic circuit as the audited model: label = argmax_y P(Y = y | x)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from pcfair.errors import DataError, VariableError

__all__ = ["pc_predictor"]


def pc_predictor(
    circuit: Any,
    target: str,
    *,
    classes: Sequence[Any] | None = None,
    encode: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
) -> Callable[[pd.DataFrame], np.ndarray]:
    """A ``predict(batch)`` callable that labels rows by the circuit's most probable class.

    Since P(Y = y | x) is proportional to P(x, Y = y), the label is the ``y`` maximising
    ``circuit.log_marginal(x with Y = y)``; features missing from the batch are
    marginalised, columns that are not circuit variables are ignored.

    Parameters
    ----------
    circuit : object
        Has ``log_marginal(evidence_frame) -> array`` (a :class:`pcfair.Circuit` does).
    target : str
        The class variable Y.
    classes : sequence, optional
        Y's value labels (default: the circuit's ``variables.domains`` entry for ``target``).
    encode : callable, optional
        Maps a batch in the data's representation to circuit value labels.

    Returns
    -------
    callable
        ``predict(batch: DataFrame) -> ndarray`` of labels from ``classes``; ties go to the
        first class.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> class Table:  # P(x, y) of two binary variables, y = x with probability 0.9
    ...     def log_marginal(self, ev):
    ...         p = np.where(ev["x"] == ev["y"], 0.45, 0.05)
    ...         return np.log(p)
    >>> predict = pc_predictor(Table(), "y", classes=[0, 1])
    >>> predict(pd.DataFrame({"x": [0, 1, 1]})).tolist()
    [0, 1, 1]
    """
    if not hasattr(circuit, "log_marginal"):
        raise DataError("the circuit has no log_marginal(evidence) method")
    names = None
    variables = getattr(circuit, "variables", None)
    if variables is not None and hasattr(variables, "names"):
        names = [str(n) for n in variables.names]
        if target not in names:
            raise VariableError(f"target {target!r} is not a circuit variable {names}")
    if classes is None:
        if variables is None or not hasattr(variables, "domains"):
            raise DataError(f"pass classes=: the circuit does not list the values of {target!r}")
        classes = list(variables.domains[names.index(target)])
    classes = list(classes)
    if not classes:
        raise DataError(f"target {target!r} has no classes")

    def predict(batch: pd.DataFrame) -> np.ndarray:
        if not isinstance(batch, pd.DataFrame):
            raise DataError(f"a circuit predicts on a DataFrame, got {type(batch).__name__}")
        frame = encode(batch) if encode is not None else batch
        keep = [c for c in frame.columns if c != target and (names is None or c in names)]
        frame = frame[keep]
        scores = np.column_stack(
            [np.asarray(circuit.log_marginal(frame.assign(**{target: y})), dtype=float) for y in classes]
        )
        return np.asarray(classes, dtype=object if isinstance(classes[0], str) else None)[np.argmax(scores, axis=1)]

    return predict
