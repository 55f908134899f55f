"""Streams of records drawn from a probabilistic circuit and decided by a classifier.

AVOIR assumes an i.i.d. stream. A pcfair probabilistic circuit (PC) is a population model, so
sampling individuals from it and deciding each with a classifier gives exactly such a stream: a
deployed PC classifier can be monitored against its own population model. When the circuit
also models the outcome variable ``d``, the sampled ``d`` serves as the label ``y`` and a leaf
such as ``E[y | s = 1]`` has an exact value ``P(d = 1 | s = 1)`` from the circuit: known-truth
monitoring.

Any object with ``sample(n, evidence=None, random_state=None) -> DataFrame`` (integer category
codes, one column per variable) works as the circuit.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pandas as pd

from pcfair.audits._model import Model, as_model
from pcfair.audits.avoir.errors import MonitorSettingError
from pcfair.errors import DataError, VariableError

__all__ = ["circuit_stream"]


def circuit_stream(circuit: object, model: Any, *, batch_size: int = 100,
                   n_records: int | None = None,
                   outcome: str | None = None, favorable: Any = 1, label: str = "y",
                   output: str = "r",
                   evidence: Mapping | pd.DataFrame | None = None,
                   random_state: int | np.random.Generator | None = None
                   ) -> Iterator[pd.DataFrame]:
    """Yield batches of individuals sampled from a circuit with a classifier's decisions.

    Parameters
    ----------
    circuit : object with ``sample(n, evidence=None, random_state=None)``
        The population model: a pcfair circuit, a fitted PCClassifier or a
        :class:`~pcfair.audits.Model` (their circuit), or any stand-in with that method.
    model : Circuit, PCClassifier, estimator or callable
        The deciding model (see :func:`pcfair.audits._model.as_model`); a record's decision
        is 1 when ``P(favorable | x) >= 0.5``. It sees the sampled variables without
        ``outcome``.
    batch_size : int, default 100
        Records per yielded batch.
    n_records : int, optional
        Stop after this many records (the last batch may be shorter); default: endless.
    outcome : str, optional
        The circuit's decision variable: hidden from the model and copied to column ``label``.
    favorable : object, default 1
        The favourable value of the outcome.
    label : str, default "y"
        Name of the column the sampled outcome is copied to (when ``outcome`` is given).
    output : str, default "r"
        Name of the decision column.
    evidence : dict or DataFrame, optional
        Passed to ``circuit.sample`` (a conditioned sub-population).
    random_state : int, numpy.random.Generator or None
        Seed or generator; the circuit receives a generator derived from it.

    Yields
    ------
    pandas.DataFrame
        The sampled variables, ``label`` (if ``decision``) and ``output``.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from pcfair.audits.avoir import circuit_stream
    >>> class Coin:
    ...     def sample(self, n, evidence=None, random_state=None):
    ...         rng = np.random.default_rng(random_state)
    ...         return pd.DataFrame({"s": rng.integers(0, 2, n), "d": rng.integers(0, 2, n)})
    >>> batch = next(circuit_stream(Coin(), lambda X: X["s"].to_numpy(), outcome="d",
    ...                             random_state=0))
    >>> list(batch.columns)
    ['s', 'd', 'y', 'r']
    """
    if isinstance(circuit, Model) or hasattr(circuit, "circuit_"):  # a Model, a PCClassifier
        circuit = circuit.circuit if isinstance(circuit, Model) else circuit.circuit_
    if not hasattr(circuit, "sample") or not callable(circuit.sample):
        raise DataError(f"circuit must have a sample(n, evidence, random_state) method, "
                        f"got {type(circuit).__name__}")
    if isinstance(batch_size, bool) or int(batch_size) < 1:
        raise MonitorSettingError(f"batch_size must be a positive integer, got {batch_size!r}")
    if n_records is not None and int(n_records) < 0:
        raise MonitorSettingError(f"n_records must be >= 0, got {n_records!r}")
    decide = as_model(model, outcome=outcome, favorable=favorable)
    decide.require_inputs("circuit_stream")
    rng = np.random.default_rng(random_state)
    produced = 0
    while n_records is None or produced < int(n_records):
        n = int(batch_size) if n_records is None else min(int(batch_size),
                                                           int(n_records) - produced)
        sample = circuit.sample(n, evidence=evidence, random_state=rng)
        if not isinstance(sample, pd.DataFrame) or len(sample) != n:
            raise DataError(f"circuit.sample({n}) must return a DataFrame of {n} rows, got "
                            f"{type(sample).__name__} of length {len(sample)}")
        batch = sample.reset_index(drop=True).copy()
        if outcome is not None:
            if outcome not in batch.columns:
                raise VariableError(f"outcome variable {outcome!r} is not among the circuit's "
                                    f"variables {list(map(str, batch.columns))}")
            X = batch.drop(columns=[outcome])
            batch[label] = batch[outcome].to_numpy()
        else:
            X = batch
        batch[output] = decide.hits(X).astype(np.int64)
        produced += n
        yield batch
