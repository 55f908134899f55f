"""A scikit-learn-style classifier backed by a learned probabilistic circuit."""

from __future__ import annotations

import dataclasses
import numbers
import warnings

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, column_or_1d, validate_data

from pcfair.errors import DataError, OptionError, UnknownValueWarning
from pcfair.inference.marginals import log_marginals
from pcfair.tables.recipe import UNKNOWN_HINT, model_frame


def _check_entries(arr: np.ndarray) -> None:
    if arr.dtype == object:
        for x in arr.ravel():
            if not isinstance(x, (str, numbers.Number, np.generic)) and x is not None:
                raise TypeError(f"argument must be a string or a number, not {type(x).__name__}")


class PCClassifier(ClassifierMixin, BaseEstimator):
    """Classify by exact inference in a probabilistic circuit learned from the data.

    Features are categorical (any labels); a numeric feature with more than 20 distinct values
    is continuous and refused (:class:`~pcfair.errors.DataError`) unless ``bins`` is given.
    ``predict_proba`` answers
    ``P(y | observed features)``: a NaN feature is *unobserved* and is marginalised out, so the
    classifier predicts from partial observations, the property that makes discrimination
    patterns meaningful. The fitted circuit (``circuit_``) can be certified directly.

    Parameters
    ----------
    structure : {"clt", "strudel", "naive_bayes"}
        Structure learner (see :func:`pcfair.learn.learn_pc`).
    pseudocount : float, default 1.0
        Laplace pseudocount.
    handle_unknown : {"missing", "error"}, default "missing"
        What a feature value never seen in training (a category, or a number outside a binned
        feature's training range) means at prediction time: an unobserved value
        (marginalised, like NaN), with a :class:`UnknownValueWarning` naming the first such
        value, or an error (:class:`~pcfair.errors.DataError`). ``"missing"`` is the default
        because held-out rows of an ordinary split hold such values (a rare count, an extreme
        age) and scikit-learn's model selection expects them to be predicted.
    random_state : None, int or Generator
    fair : dict, optional
        Learn a δ-fair circuit with :func:`pcfair.learn.fair.learn_fair_pc` instead of the
        maximum-likelihood one. Keys: ``"sensitive"`` (feature names, or column indices for
        arrays; required), ``"delta"`` (required), and optionally ``"favorable"`` (default: the
        largest class label) and any keyword of ``learn_fair_pc`` (``k``, ``rank_by``,
        ``max_iter``, ``time_limit``, ``engine``, ...). The dict is stored as given, so the
        estimator clones. The target must be binary.
    bins : int or dict, optional
        Quantile-bin the continuous features into at most this many bins (a dict: bin exactly
        the named features, ``x0``, ``x1``... for arrays); the intervals (``"[18, 25)"``) are
        the values in ``circuit_``. Prediction bins new rows with the same edges
        (``bin_edges_``).

    Attributes
    ----------
    circuit_ : Circuit
        The learned circuit over the features and the target.
    classes_ : ndarray
        Class labels.
    target_ : str
        The target's variable name in the circuit: the name of ``y`` when it is a named
        pandas Series (so ``pcfair.certify(clf, y.name, ...)`` works), else ``"target"``
        (prefixed with ``_`` if a feature already has the name).
    feature_names_in_ : ndarray of str
        Feature names (``x0``, ``x1``, ... for arrays).
    fair_result_ : FairLearningResult
        With ``fair``: the fair learner's result (``certificate``, ``history``...).
    certified_ : bool or None
        With ``fair``: True only when a complete certification run found no discrimination
        pattern in ``circuit_`` (a ``UserWarning`` is issued otherwise).
    bin_edges_ : dict
        The edges of each binned feature (empty without ``bins``).

    Examples
    --------
    >>> import pandas as pd
    >>> X = pd.DataFrame({"a": [0, 0, 1, 1, 1, 0], "b": [1, 0, 1, 1, 0, 0]})
    >>> y = [0, 0, 1, 1, 1, 0]
    >>> clf = PCClassifier().fit(X, y)
    >>> clf.predict(pd.DataFrame({"a": [1, 0], "b": [float("nan"), 1]})).tolist()
    [1, 0]
    >>> fair = PCClassifier(fair={"sensitive": ["a"], "delta": 0.2}).fit(X, y)
    >>> fair.certified_
    True
    """

    def __init__(self, structure: str = "clt", pseudocount: float = 1.0,
                 handle_unknown: str = "missing", random_state=None, fair: dict | None = None,
                 bins=None):
        self.structure = structure
        self.pseudocount = pseudocount
        self.handle_unknown = handle_unknown
        self.random_state = random_state
        self.fair = fair
        self.bins = bins

    def _names(self, n: int) -> list[str]:
        if hasattr(self, "feature_names_in_"):
            return [str(c) for c in self.feature_names_in_]
        return [f"x{i}" for i in range(n)]

    def fit(self, X, y) -> "PCClassifier":
        """Learn the circuit from features ``X`` and labels ``y`` (complete data)."""
        from pcfair.learn.clt import learn_pc
        from pcfair.tables.data import prepare_frame

        if self.handle_unknown not in ("error", "missing"):
            raise OptionError("handle_unknown must be 'error' or 'missing'")
        for attr in ("feature_names_in_", "fair_result_", "certified_"):
            if hasattr(self, attr):
                delattr(self, attr)
        y_name = getattr(y, "name", None)  # a named Series names the decision in the circuit
        X, y = validate_data(self, X, y, dtype=None, ensure_all_finite=True, reset=True)
        _check_entries(X)
        y = column_or_1d(y, warn=True)
        check_classification_targets(y)
        names = self._names(X.shape[1])
        df = pd.DataFrame(X, columns=names).infer_objects()
        df, self.bin_edges_ = prepare_frame(df, None, self.bins)
        target = str(y_name) if y_name is not None else "target"
        while target in names:
            target = "_" + target
        self.target_ = target
        df[target] = y
        if self.fair is None:
            self.circuit_ = learn_pc(df, target, structure=self.structure,
                                     pseudocount=self.pseudocount,
                                     random_state=self.random_state)
        else:
            self._fit_fair(df, target, names)
        recipe = self.circuit_.recipe  # prediction bins new rows with the training edges
        self.circuit_ = self.circuit_.with_recipe(dataclasses.replace(
            recipe, columns=(*names, target),
            bins={c: tuple(map(float, e)) for c, e in self.bin_edges_.items()}))
        d = self.circuit_.variables.index(target)
        self.classes_ = np.array(self.circuit_.variables.domains[d])
        return self

    def _fit_fair(self, df: pd.DataFrame, target: str, names: list[str]) -> None:
        """Fit ``circuit_`` with the fair learner (see the ``fair`` parameter)."""
        from pcfair.learn.fair import learn_fair_pc

        options = dict(self.fair)
        missing = [key for key in ("sensitive", "delta") if key not in options]
        if missing:
            raise OptionError(f"fair needs the keys 'sensitive' and 'delta'; missing {missing}")
        sensitive = options.pop("sensitive")
        sensitive = [sensitive] if isinstance(sensitive, (str, int, np.integer)) else sensitive
        sensitive = [names[s] if isinstance(s, (int, np.integer)) else str(s) for s in sensitive]
        options.setdefault("favorable", max(pd.unique(df[target])))
        self.fair_result_ = learn_fair_pc(
            df, target, sensitive, options.pop("delta"), structure=self.structure,
            pseudocount=self.pseudocount, random_state=self.random_state, **options)
        self.circuit_ = self.fair_result_.circuit
        self.certified_ = self.fair_result_.fair
        if self.certified_ is not True:
            warnings.warn(f"the fitted circuit is not certified fair: {self.fair_result_.status}",
                          UserWarning, stacklevel=3)

    def _evidence(self, X) -> np.ndarray:
        X = validate_data(self, X, dtype=None, ensure_all_finite="allow-nan", reset=False)
        _check_entries(X)
        c = self.circuit_
        frame = pd.DataFrame(X, columns=self._names(X.shape[1])).infer_objects()
        if self.handle_unknown == "missing":
            try:
                frame = model_frame(c, frame)  # binned, unknowns checked
            except DataError as err:  # said once per call, then read as unobserved
                warnings.warn(f"{err.args[0].replace('; ' + UNKNOWN_HINT, '')}: read as "
                              "unobserved (handle_unknown='missing'; 'error' refuses such rows)",
                              UnknownValueWarning, stacklevel=3)
                frame = model_frame(c, frame, unknown="missing")
        else:
            frame = model_frame(c, frame, unknown="error")
        return c.variables.evidence_matrix(frame)

    def predict_log_proba(self, X) -> np.ndarray:
        """log P(class | observed features) per row and class (NaN features marginalised)."""
        check_is_fitted(self, "circuit_")
        ev = self._evidence(X)
        c = self.circuit_
        d = c.variables.index(self.target_)
        logp = np.empty((len(ev), len(self.classes_)))
        for k in range(len(self.classes_)):
            ev[:, d] = k
            logp[:, k] = log_marginals(c, ev)
        norm = np.logaddexp.reduce(logp, axis=1, keepdims=True)
        if np.any(norm == -np.inf):
            r = int(np.flatnonzero(norm[:, 0] == -np.inf)[0])
            raise DataError(f"row {r} has probability zero under the model")
        return logp - norm

    def predict_proba(self, X) -> np.ndarray:
        """P(class | observed features) per row and class (NaN features marginalised)."""
        return np.exp(self.predict_log_proba(X))

    def predict(self, X) -> np.ndarray:
        """The most probable class of each row."""
        logp = self.predict_log_proba(X)
        return self.classes_[np.argmax(logp, axis=1)]
