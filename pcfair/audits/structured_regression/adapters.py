"""Adapters between structured regression and the systems it evaluates (classifiers, PCs).

Structured regression evaluates any model given as a callable ``model(X: DataFrame) -> array``.
:func:`classifier_output` turns an object with ``predict_proba`` / ``predict`` (a pcfair PC
classifier, a scikit-learn estimator) into such a callable, either as its score
``P(d = 1 | x)`` (evaluate with a threshold r) or as its decision ``1[P(d = 1 | x) > t]``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from pcfair.errors import DataError, SpecError

OUTPUT_KINDS = ("score", "decision")


def _positive_scores(proba, n_rows: int, name: str) -> np.ndarray:
    proba = np.asarray(proba, dtype=float)
    if proba.ndim == 2:
        if proba.shape[1] != 2:
            raise DataError(f"{name}.predict_proba returned {proba.shape[1]} columns; a binary classifier has 2")
        proba = proba[:, 1]
    if proba.shape != (n_rows,):
        raise DataError(f"{name}.predict_proba returned shape {proba.shape}, expected ({n_rows},)")
    return proba


def classifier_output(
    classifier,
    *,
    output: str = "score",
    threshold: float = 0.5,
    columns: Sequence[str] | None = None,
) -> Callable[[pd.DataFrame], np.ndarray]:
    """Wrap a classifier as the ``model`` callable of :class:`StructuredRegression`.

    Parameters
    ----------
    classifier : object
        Has ``predict_proba(X)`` (column 1 = ``P(d = 1 | x)``, or a 1-d array of it), or at
        least ``predict(X)`` for ``output="decision"``. A pcfair PC classifier qualifies.
    output : {"score", "decision"}
        ``"score"`` returns ``P(d = 1 | x)`` (pass ``threshold=r`` to the estimator);
        ``"decision"`` returns ``1[P(d = 1 | x) > threshold]`` (or ``predict`` if there is no
        ``predict_proba``).
    threshold : float, default 0.5
        Decision threshold for ``output="decision"``.
    columns : sequence of str, optional
        Columns passed to the classifier (default: every column it is given).

    Returns
    -------
    callable
        ``f(X: DataFrame) -> numpy.ndarray`` with one value per row.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> class Half:
    ...     def predict_proba(self, X):
    ...         p = X["x"].to_numpy() / 2
    ...         return np.column_stack([1 - p, p])
    >>> f = classifier_output(Half(), output="decision")
    >>> f(pd.DataFrame({"x": [0.5, 1.5]})).tolist()
    [0, 1]
    """
    if output not in OUTPUT_KINDS:
        raise SpecError(f"unknown output {output!r}: use one of {', '.join(OUTPUT_KINDS)}")
    name = type(classifier).__name__
    has_proba = hasattr(classifier, "predict_proba")
    if output == "score" and not has_proba:
        raise SpecError(f"{name} has no predict_proba, so it has no score; use output='decision'")
    if not has_proba and not hasattr(classifier, "predict"):
        raise SpecError(f"{name} has neither predict_proba nor predict")
    cols = None if columns is None else list(columns)

    def model(X: pd.DataFrame) -> np.ndarray:
        Xc = X if cols is None else X[cols]
        if has_proba:
            p = _positive_scores(classifier.predict_proba(Xc), len(X), name)
            return p if output == "score" else (p > threshold).astype(np.int64)
        pred = np.asarray(classifier.predict(Xc))
        if pred.shape != (len(X),):
            raise DataError(f"{name}.predict returned shape {pred.shape}, expected ({len(X)},)")
        return pred

    model.__name__ = f"{name}_{output}"
    return model


def model_outputs(model, X: pd.DataFrame) -> np.ndarray:
    """Call the evaluated system on ``X`` and validate that it returns one value per row.

    ``model`` is a callable ``X -> array`` or an object with ``predict_proba`` (its positive
    column is used) or ``predict``.

    Examples
    --------
    >>> import pandas as pd
    >>> model_outputs(lambda X: X["a"] * 2, pd.DataFrame({"a": [1, 2]})).tolist()
    [2, 4]
    """
    if callable(model) and not hasattr(model, "predict_proba") and not hasattr(model, "predict"):
        out = model(X)
    elif hasattr(model, "predict_proba"):
        out = _positive_scores(model.predict_proba(X), len(X), type(model).__name__)
    elif hasattr(model, "predict"):
        out = model.predict(X)
    else:
        raise SpecError(f"model must be callable or have predict_proba/predict, got {type(model).__name__}")
    out = np.asarray(out)
    if out.ndim == 2 and out.shape[1] == 1:
        out = out[:, 0]
    if out.shape != (len(X),):
        raise DataError(f"model returned shape {out.shape}, expected one value per row ({len(X)},)")
    return out
