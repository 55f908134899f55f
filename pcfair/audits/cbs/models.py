"""Adapters that turn the audited model into predictions, and circuits into propensity models.

The audited model may be

* a column of predictions in the data (handled by the scan itself);
* any callable ``predict(batch: DataFrame) -> array`` of probabilities or 0/1 labels;
* an object with ``predict_proba`` (probability of the positive class taken from column 1)
  or ``predict`` (labels);
* a probabilistic circuit: any object with ``sample(n, evidence=None, random_state=None)``
  returning a DataFrame of integer category codes. :func:`circuit_predictor` estimates
  ``P(target = positive | inputs)`` from conditional samples, one batch per distinct input
  pattern. A circuit may use the sensitive attribute even though CBS leaves it out of X.

:func:`circuit_propensity` builds a propensity fitter from a circuit learner (an extension to
the paper, which uses logistic regression).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from pcfair.audits.cbs.options import CBSOptionError, check_positive_int
from pcfair.errors import DataError, VariableError

__all__ = ["as_predict_function", "circuit_predictor", "circuit_propensity"]

PredictFunction = Callable[[pd.DataFrame], np.ndarray]


def as_predict_function(model) -> PredictFunction:
    """Wrap the audited model as ``predict(batch: DataFrame) -> 1-D array``.

    Parameters
    ----------
    model : callable, or object with ``predict_proba`` / ``predict`` / ``sample``
        A callable is used as is. With ``predict_proba`` the second column (positive class)
        is returned; the columns passed are ``model.feature_names_in_`` when the model has
        them (scikit-learn estimators fitted on DataFrames).

    Raises
    ------
    CBSOptionError
        The object offers none of these.

    Examples
    --------
    >>> import pandas as pd
    >>> f = as_predict_function(lambda df: df["score"] / 10)
    >>> f(pd.DataFrame({"score": [3, 7]})).tolist()
    [0.3, 0.7]
    """
    if hasattr(model, "predict_proba"):

        def predict(df: pd.DataFrame) -> np.ndarray:
            cols = getattr(model, "feature_names_in_", None)
            batch = df[list(cols)] if cols is not None else df
            proba = np.asarray(model.predict_proba(batch))
            return proba[:, 1] if proba.ndim == 2 else proba

        return predict
    if hasattr(model, "predict") and not callable(model):

        def predict_labels(df: pd.DataFrame) -> np.ndarray:
            cols = getattr(model, "feature_names_in_", None)
            batch = df[list(cols)] if cols is not None else df
            return np.asarray(model.predict(batch))

        return predict_labels
    if callable(model):
        return lambda df: np.asarray(model(df))
    raise CBSOptionError(
        "the model must be a column name, a callable predict(DataFrame), or an object with "
        "predict_proba, predict or sample"
    )


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


def _exact_circuit_predictor(circuit, target: str, positive, inputs) -> PredictFunction:
    """``P(target = positive | inputs)`` by exact marginal inference on a pcfair circuit."""
    fixed = None if inputs is None else list(inputs)

    def predict(batch: pd.DataFrame) -> np.ndarray:
        cols = fixed or [c for c in batch.columns if c in circuit.names and c != target]
        evidence = batch[cols].reset_index(drop=True)
        query = pd.DataFrame({target: [positive] * len(batch)})
        return np.asarray(circuit.conditional(query, evidence), dtype=float)

    return predict


def circuit_predictor(
    circuit,
    target: str,
    *,
    positive=1,
    inputs: Sequence[str] | None = None,
    n_samples: int = 2000,
    random_state: int | np.random.Generator | None = None,
) -> PredictFunction:
    """Prediction function ``P(target = positive | inputs)`` of a probabilistic circuit.

    Parameters
    ----------
    circuit : object with ``sample(n, evidence=None, random_state=None) -> DataFrame``
        The circuit; its samples hold integer category codes, one column per variable.
    target : str
        The predicted variable.
    positive : int, default 1
        Code of the positive outcome.
    inputs : sequence of str, optional
        Variables given as evidence; by default every column of the batch that is a variable
        of the circuit (found from one unconditional sample), except ``target``.
    n_samples : int, default 2000
        Conditional samples per distinct input pattern (standard error at most
        ``0.5 / sqrt(n_samples)``).
    random_state : int, numpy.random.Generator or None

    Returns
    -------
    callable
        ``predict(batch: DataFrame) -> numpy.ndarray`` of probabilities.

    Notes
    -----
    A :class:`pcfair.Circuit` is answered exactly, ``P_PC(Y = 1 | inputs)`` by two marginal
    passes per batch (``n_samples`` and ``random_state`` are then unused). Any other object
    with only a ``sample`` method gets a Monte Carlo estimate.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> class Coin:  # y copies x with probability 0.9
    ...     def sample(self, n, evidence=None, random_state=None):
    ...         rng = np.random.default_rng(random_state)
    ...         x = np.full(n, evidence["x"]) if evidence else rng.integers(0, 2, n)
    ...         y = np.where(rng.random(n) < 0.9, x, 1 - x)
    ...         return pd.DataFrame({"x": x, "y": y})
    >>> f = circuit_predictor(Coin(), "y", n_samples=4000, random_state=0)
    >>> np.round(f(pd.DataFrame({"x": [0, 1]})), 1).tolist()
    [0.1, 0.9]
    """
    from pcfair.circuit.circuit import Circuit

    if isinstance(circuit, Circuit):
        return _exact_circuit_predictor(circuit, target, positive, inputs)
    if not hasattr(circuit, "sample"):
        raise CBSOptionError("the circuit must have a sample(n, evidence, random_state) method")
    n_samples = check_positive_int("n_samples", n_samples)
    rng = np.random.default_rng(random_state)
    fixed_inputs = None if inputs is None else list(inputs)

    def predict(batch: pd.DataFrame) -> np.ndarray:
        if fixed_inputs is None:
            names = list(circuit.sample(1, random_state=rng).columns)
            cols = [c for c in batch.columns if c in names and c != target]
        else:
            missing = [c for c in fixed_inputs if c not in batch.columns]
            if missing:
                raise VariableError(f"input column {missing[0]!r} is not in the data")
            cols = fixed_inputs
        return _pattern_probabilities(circuit, batch[cols], target, positive, n_samples, rng)

    return predict


def circuit_propensity(
    learn: Callable[[pd.DataFrame], object],
    *,
    n_samples: int = 2000,
    random_state: int | np.random.Generator | None = None,
) -> Callable[[pd.DataFrame, np.ndarray], np.ndarray]:
    """Propensity fitter ``Pr(A = 1 | X)`` from a circuit learned on (X, A).

    An extension to the paper (which fits logistic regression); results obtained with it are
    labelled ``"circuit_propensity"``. The fitter learns a circuit on the covariates plus a
    column ``"__A__"`` (0/1) and estimates the conditional by sampling, as
    :func:`circuit_predictor` does. It is refitted on every permuted data set.

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
