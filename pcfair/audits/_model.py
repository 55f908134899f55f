"""One model adapter for every audit port: ``model=`` as ``P(favorable | row)``.

:func:`as_model` turns what a user passes as ``model=`` (or ``prediction=``) into a
:class:`Model`, which every port queries the same way:

* a pcfair :class:`~pcfair.circuit.Circuit`: ``P(outcome = favorable | row)`` by exact
  inference, ``outcome`` being the circuit's decision variable. The row's columns that are
  circuit variables are the evidence; missing values (NaN) and variables absent from the
  frame are marginalised;
* a fitted :class:`~pcfair.learn.PCClassifier`: the same exact inference in its ``circuit_``
  (its decision variable is ``target_``), or its ``predict_proba`` when it bins features;
* a scikit-learn estimator with ``predict_proba``: the column of ``favorable`` in
  ``classes_``, on the columns ``feature_names_in_`` when it has them;
* a callable ``f(batch) -> array``: numbers in ``[0, 1]`` are ``P(favorable | row)``; any other
  output (strings, booleans, integers) is labels, read as ``label ==
  favorable``; a 2-D output of class scores is labels by argmax. A 0/1 output is read as
  labels, which for ``favorable = 1`` is the same as reading it as probabilities;
* the name of a column of stored predictions (``prediction="p"`` or ``model="p"``), read as a
  callable's output is.

Ports that need *new* inputs (TestSGD's group members, AVOIR's streams) sample them with
:meth:`Model.sample` from the model's circuit; stored predictions cannot answer new inputs
(:meth:`Model.require_inputs` says so).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from pcfair.errors import DataError, OptionError, VariableError

__all__ = ["Model", "as_model"]

KINDS = ("circuit", "classifier", "callable", "column")


def _read_scores(out: Any, n: int, favorable: Any, what: str) -> np.ndarray:
    """``P(favorable | row)`` from a callable's or a column's output (see the module text)."""
    arr = np.asarray(out)
    if arr.ndim == 2:
        arr = arr[:, 0] if arr.shape[1] == 1 else np.argmax(arr, axis=1)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise DataError(f"{what} returned shape {arr.shape} for {n} rows; expected one value per row")
    if arr.dtype.kind in "iuf":
        vals = arr.astype(float)
        if np.isnan(vals).any():
            raise DataError(f"{what} has missing values")
        if np.all((vals == 0) | (vals == 1)):
            return (arr == favorable).astype(float) if not _is_one(favorable) else vals
        if np.all((vals >= 0) & (vals <= 1)):
            return vals
        if np.any(vals != np.round(vals)):
            raise DataError(f"{what} must be probabilities in [0, 1] or labels")
    if pd.isna(pd.Series(arr, dtype=object)).any():
        raise DataError(f"{what} has missing values")
    return np.asarray(arr == favorable, dtype=float)


def _is_one(v: Any) -> bool:
    return not isinstance(v, str) and isinstance(v, (int, float, np.number, bool)) and v == 1


class Model:
    """The audited model as ``P(favorable | row)``; build it with :func:`as_model`.

    Attributes
    ----------
    kind : {"circuit", "classifier", "callable", "column"}
    outcome : str or None
        The predicted variable (a circuit's decision variable).
    favorable : object
        The favourable value of ``outcome``.
    circuit : Circuit or None
        The model's circuit (a Circuit, or a PCClassifier's ``circuit_``), for sampling.
    inputs : tuple of str or None
        The variables the model reads (a circuit's variables but ``outcome``, an estimator's
        ``feature_names_in_``); None when unknown (callables).
    name : str
        A short description for reports.
    """

    def __init__(self, kind: str, fn: Callable[[Any], np.ndarray], *, outcome: str | None,
                 favorable: Any, circuit=None, inputs: tuple[str, ...] | None = None,
                 name: str = "", column: str | None = None):
        self.kind = kind
        self._fn = fn
        self.outcome = outcome
        self.favorable = favorable
        self.circuit = circuit
        self.inputs = inputs
        self.name = name or kind
        self.column = column

    def proba(self, batch: Any) -> np.ndarray:
        """``P(favorable | row)`` for each row of ``batch`` (float array in [0, 1])."""
        p = np.asarray(self._fn(batch), dtype=float)
        if not np.all(np.isfinite(p)) or np.any((p < 0) | (p > 1)):
            raise DataError(f"{self.name} gave values outside [0, 1]")
        return p

    def hits(self, batch: Any, threshold: float = 0.5) -> np.ndarray:
        """The favourable decisions ``P(favorable | row) >= threshold`` (bool array)."""
        return self.proba(batch) >= threshold

    def require_inputs(self, port: str) -> None:
        """Refuse stored predictions where a port queries the model on new inputs.

        Raises
        ------
        OptionError
            For a column of stored predictions.
        """
        if self.kind == "column":
            raise OptionError(f"{port} queries the model on new inputs, which stored predictions "
                              f"(column {self.column!r}) cannot answer; pass the model itself")

    def sample(self, n: int, evidence=None, random_state=None) -> pd.DataFrame:
        """Draw ``n`` rows from the model's circuit (:meth:`Circuit.sample`).

        Raises
        ------
        OptionError
            The model has no circuit.
        """
        if self.circuit is None:
            raise OptionError(f"{self.name} has no circuit to sample from; pass a Circuit or a "
                              "fitted PCClassifier as the model")
        return self.circuit.sample(n, evidence=evidence, random_state=random_state)

    def __call__(self, batch: Any) -> np.ndarray:
        return self.proba(batch)

    def __repr__(self) -> str:
        return f"Model({self.name}, P({self.outcome} = {self.favorable!r} | row))"


def _circuit_proba(circuit, target: str, favorable: Any, unknown: str = "error"
                   ) -> Callable[[pd.DataFrame], np.ndarray]:
    """``P(target = favorable | row)`` by exact inference: log P(target = k, row) for every k,
    normalised over k, so that a row with P(row) = 0 is reported rather than divided by. Rows
    are read by the circuit's recipe, if it has one (raw values binned and trimmed; a value it
    never saw is an error or, with ``unknown="missing"``, unobserved)."""
    from pcfair.inference.marginals import log_marginals
    from pcfair.tables.recipe import model_frame

    names = [str(n) for n in circuit.names]
    if target not in names:
        raise VariableError(f"outcome {target!r} is not a variable of the circuit ({', '.join(names)})")
    d = names.index(target)
    domain = list(circuit.variables.domains[d])
    try:
        fav = circuit.variables.value_index(d, favorable)
    except KeyError:
        raise VariableError(f"favorable={favorable!r} is not a value of {target!r} "
                            f"(values {domain})") from None

    def proba(batch: pd.DataFrame) -> np.ndarray:
        if not isinstance(batch, pd.DataFrame):
            raise DataError(f"a circuit predicts on a DataFrame, got {type(batch).__name__}")
        if circuit.recipe is not None:  # a sampler's new inputs too
            batch = model_frame(circuit, batch, unknown)
        cols = [c for c in batch.columns if c in names and c != target]
        ev = circuit.evidence_matrix(batch[cols].reset_index(drop=True)) if cols else \
            np.full((len(batch), len(names)), -1, dtype=np.int32)
        logp = np.empty((len(batch), len(domain)))
        for k in range(len(domain)):
            ev[:, d] = k
            logp[:, k] = log_marginals(circuit, ev)
        norm = np.logaddexp.reduce(logp, axis=1)
        if np.any(norm == -np.inf):
            r = int(np.flatnonzero(norm == -np.inf)[0])
            raise DataError(f"row {r} has probability zero under the circuit")
        return np.exp(logp[:, fav] - norm)

    return proba


def as_model(model: Any = None, *, prediction: str | None = None, outcome: str | None = None,
             favorable: Any = 1, unknown: str = "error") -> Model:
    """Turn ``model=`` (or ``prediction=``) into a :class:`Model` (see the module docstring).

    Parameters
    ----------
    model : Circuit, PCClassifier, estimator with ``predict_proba``, callable, str or Model
        The audited model; a string names a column of stored predictions.
    prediction : str, optional
        A column of stored predictions (instead of ``model``).
    outcome : str, optional
        The variable the model predicts; required for a circuit (its decision variable).
    favorable : object, default 1
        The favourable value of the outcome.
    unknown : {"error", "missing"}, default "error"
        For a circuit with a recipe (:mod:`pcfair.tables.recipe`): what a value it never saw
        means in the rows it predicts on.

    Returns
    -------
    Model

    Raises
    ------
    OptionError
        Both or neither of ``model`` and ``prediction``, a circuit without ``outcome``, an
        unfitted estimator, or an object that is none of the accepted kinds.
    VariableError
        ``outcome`` or ``favorable`` is not in the circuit or the estimator's classes.

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"s": [0, 1], "d": [0, 1]})
    >>> pc = b.build(b.sum([b.product(b.indicator("s", 0), b.categorical("d", [0.6, 0.4])),
    ...                     b.product(b.indicator("s", 1), b.categorical("d", [0.2, 0.8]))],
    ...                    weights=[0.5, 0.5]))
    >>> m = as_model(pc, outcome="d")
    >>> m.proba(pd.DataFrame({"s": [0, 1, None]})).round(2).tolist()
    [0.4, 0.8, 0.6]
    >>> as_model(prediction="p").proba(pd.DataFrame({"p": [0.3, 0.9]})).tolist()
    [0.3, 0.9]
    """
    from pcfair.circuit.circuit import Circuit

    if isinstance(model, Model):
        return model
    if (model is None) == (prediction is None):
        raise OptionError("pass exactly one of model= (the model, or a column of stored "
                          "predictions) and prediction= (a column of stored predictions)")
    if prediction is not None:
        model = prediction
    if isinstance(model, str):
        col = model

        def stored(batch: pd.DataFrame) -> np.ndarray:
            if not isinstance(batch, pd.DataFrame) or col not in batch.columns:
                raise VariableError(f"prediction column {col!r} is not in the data")
            return _read_scores(batch[col].to_numpy(), len(batch), favorable,
                                f"prediction column {col!r}")

        return Model("column", stored, outcome=outcome, favorable=favorable,
                     name=f"column {col!r}", column=col)
    if isinstance(model, Circuit):
        if outcome is None:
            raise OptionError("a circuit model needs outcome=, the decision variable it predicts")
        inputs = tuple(str(n) for n in model.names if str(n) != outcome)
        return Model("circuit", _circuit_proba(model, outcome, favorable, unknown),
                     outcome=outcome,
                     favorable=favorable, circuit=model, inputs=inputs, name="circuit")
    if hasattr(model, "predict_proba"):
        return _estimator(model, outcome, favorable)
    if not callable(model) and callable(getattr(model, "predict", None)):
        name = type(model).__name__
        fn = model.predict
        return Model("callable", lambda batch: _read_scores(fn(batch), len(batch), favorable,
                                                            f"{name}.predict"),
                     outcome=outcome, favorable=favorable, name=f"{name}.predict")
    if callable(model):
        name = getattr(model, "__name__", type(model).__name__)
        return Model("callable", lambda batch: _read_scores(model(batch), len(batch), favorable,
                                                            f"model {name}"),
                     outcome=outcome, favorable=favorable, name=f"callable {name}")
    raise OptionError(f"model must be a Circuit, a fitted PCClassifier, an estimator with "
                      f"predict_proba, a callable or a column name; got {type(model).__name__}")


def _estimator(est: Any, outcome: str | None, favorable: Any) -> Model:
    """A scikit-learn estimator (a PCClassifier included) as a :class:`Model`."""
    from pcfair.learn.classifier import PCClassifier

    name = type(est).__name__
    classes = getattr(est, "classes_", None)
    if classes is None:  # no class list: a binary model whose column 1 is the favourable class
        if not _is_one(favorable):
            raise OptionError(f"the {name} has no classes_, so favorable={favorable!r} cannot "
                              "be found among its predict_proba columns")
        classes = [0, 1]
    classes = list(classes)
    if favorable not in classes:
        raise VariableError(f"favorable={favorable!r} is not a class of the {name} {classes}")
    cols = getattr(est, "feature_names_in_", None)
    cols = None if cols is None else tuple(str(c) for c in cols)
    if isinstance(est, PCClassifier) and not getattr(est, "bin_edges_", {}):
        circuit = est.circuit_
        return Model("classifier", _circuit_proba(circuit, est.target_, favorable,
                                                  est.handle_unknown),
                     outcome=outcome or est.target_, favorable=favorable, circuit=circuit,
                     inputs=cols, name=name)
    j = classes.index(favorable)

    def proba(batch: pd.DataFrame) -> np.ndarray:
        if cols is not None:
            missing = [c for c in cols if c not in batch.columns]
            if missing:
                raise VariableError(f"the {name} reads column {missing[0]!r}, not in the data")
            batch = batch[list(cols)]
        proba = np.asarray(est.predict_proba(batch), dtype=float)
        if proba.ndim != 2 or proba.shape != (len(batch), len(classes)):
            raise DataError(f"{name}.predict_proba returned shape {proba.shape} for {len(batch)} "
                            f"rows and {len(classes)} classes")
        return proba[:, j]

    return Model("classifier", proba, outcome=outcome, favorable=favorable,
                 circuit=getattr(est, "circuit_", None), inputs=cols, name=name)
