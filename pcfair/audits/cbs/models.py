"""Circuits as propensity models: :func:`circuit_propensity` builds a propensity fitter from a
circuit learner (an extension to the paper, which uses logistic regression). The audited model
itself goes through :func:`pcfair.audits._model.as_model`.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd

from pcfair.audits.cbs.options import check_positive_int
from pcfair.errors import DataError, VariableError

__all__ = ["circuit_propensity"]

def _pattern_probabilities(
    circuit,
    inputs: pd.DataFrame,
    target: str,
    positive,
    n_samples: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """Monte Carlo ``P(target = positive | row)`` for each row, one sample batch per pattern."""
    if inputs.shape[1] == 0:
        patterns = pd.DataFrame(index=[0])
        inverse = np.zeros(len(inputs), dtype=np.int64)
    else:
        patterns, inverse = _unique_rows(inputs)
    probs = np.empty(len(patterns))
    for k in range(len(patterns)):
        evidence = {c: patterns.iloc[k][c] for c in inputs.columns}
        evidence = {c: (v.item() if hasattr(v, "item") else v) for c, v in evidence.items()}
        draws = circuit.sample(n_samples, evidence=evidence or None, random_state=rng)
        if target not in draws.columns:
            raise VariableError(f"the circuit has no variable {target!r}")
        probs[k] = float(np.mean(np.asarray(draws[target]) == positive))
    return probs[inverse]


def _unique_rows(df: pd.DataFrame) -> tuple[pd.DataFrame, np.ndarray]:
    keys = pd.MultiIndex.from_frame(df.reset_index(drop=True))
    codes, uniq = pd.factorize(keys)
    patterns = pd.DataFrame(list(uniq), columns=df.columns)
    return patterns, np.asarray(codes, dtype=np.int64)


def circuit_propensity(
    learn: Callable[[pd.DataFrame], object],
    *,
    n_samples: int = 2000,
    random_state: int | np.random.Generator | None = None,
) -> Callable[[pd.DataFrame, np.ndarray], np.ndarray]:
    """Propensity fitter ``Pr(A = 1 | X)`` from a circuit learned on (X, A).

    An extension to the paper (which fits logistic regression); results obtained with it are
    labelled ``"circuit_propensity"``. The fitter learns a circuit on the covariates plus a
    column ``"__A__"`` (0/1) and estimates the conditional by sampling, one batch
    per distinct covariate pattern. It is refitted on every permuted data set.

    Parameters
    ----------
    learn : callable
        ``learn(data: DataFrame) -> circuit`` with a ``sample`` method; the DataFrame holds
        integer category codes.
    n_samples : int, default 2000
        Conditional samples per distinct covariate pattern.
    random_state : int, numpy.random.Generator or None

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> class Table:  # a 'circuit' that resamples the rows matching the evidence
    ...     def __init__(self, data): self.data = data
    ...     def sample(self, n, evidence=None, random_state=None):
    ...         rows = self.data
    ...         for k, v in (evidence or {}).items(): rows = rows[rows[k] == v]
    ...         return rows.sample(n, replace=True, random_state=random_state)
    >>> fit = circuit_propensity(Table, n_samples=4000, random_state=0)
    >>> X = pd.DataFrame({"x": [0, 0, 0, 1]})
    >>> np.round(fit(X, np.array([1, 0, 0, 1])), 1).tolist()
    [0.3, 0.3, 0.3, 1.0]
    """
    n_samples = check_positive_int("n_samples", n_samples)
    rng = np.random.default_rng(random_state)

    def circuit_propensity(covariates: pd.DataFrame, a: np.ndarray) -> np.ndarray:
        codes = pd.DataFrame(
            {c: pd.factorize(covariates[c], sort=True)[0] for c in covariates.columns}
        )
        data = codes.assign(__A__=np.asarray(a).astype(int))
        circuit = learn(data)
        if not hasattr(circuit, "sample"):
            raise DataError("the circuit learner returned an object without a sample method")
        return _pattern_probabilities(circuit, codes, "__A__", 1, n_samples, rng)

    return circuit_propensity
