"""Expectations Î of the event under the null, by propensity re-weighting (paper Sec. 3.2, A.1).

For each protected individual i, ``Î_i = E_H0[I_i | C_i, X_i, A_i = 1]`` is estimated from the
non-protected class, re-weighted to resemble the protected one:

1. fit ``Pr(A = 1 | X)`` on all individuals (logistic regression on one-hot covariates);
2. weight each non-protected individual j by its propensity odds ``w_j = p_j / (1 - p_j)``;
3. keep only rows with ``C == condition_value`` for a value-conditional scan (after step 1);
4. fit a weighted logistic regression of I on (X, C) over the non-protected rows and predict Î
   for the protected rows. A real-valued I (= P) is fitted on duplicated records: label 1
   with weight ``w P`` and label 0 with weight ``w (1 - P)``, which keeps Î in (0, 1) (the
   built-in regression takes P as a soft label, which is the same likelihood on half the
   rows; a scikit-learn ``estimator`` gets the duplicated records).

C enters the model as a 0/1 column (Y or Pbin) or as ``logit(P)`` (sufficiency for
predictions). Rows with identical features are merged, summing their weights, before each fit;
the fitted model is the same and the fit is much faster on discrete data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from pcfair.audits.cbs._logistic import fit_logistic
from pcfair.audits.cbs.options import CBSOptionError, check_choice
from pcfair.audits.cbs.scoring import CLIP
from pcfair.audits.cbs.search import encode_covariates
from pcfair.errors import DataError

__all__ = ["Design", "Expectations", "design", "distinct_rows", "estimate_expectations",
           "one_hot"]

#: Propensity scores are clipped to [PROPENSITY_CLIP, 1 - PROPENSITY_CLIP] before taking odds.
PROPENSITY_CLIP = 1e-6

PropensityFitter = Callable[[pd.DataFrame, np.ndarray], np.ndarray]


@dataclass
class Expectations:
    """Result of :func:`estimate_expectations`.

    Attributes
    ----------
    expected : numpy.ndarray
        Î for each record of the scan data D1, in the order of ``rows``.
    rows : numpy.ndarray of int
        Positions (0-based) of the D1 records: protected rows kept by the value filter.
    keep : numpy.ndarray of bool
        The value-conditional filter over all rows (all True without a filter).
    propensity : numpy.ndarray
        ``Pr(A = 1 | X)`` for every row.
    weights : numpy.ndarray
        Propensity odds ``p / (1 - p)`` for every row (used for the non-protected ones).
    propensity_model : str
        ``"logistic"`` or the name of the supplied propensity fitter.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> X = pd.DataFrame({"x": [0, 1] * 100})
    >>> ex = estimate_expectations(X, np.arange(200) % 4 == 0, np.arange(200) % 3 == 0)
    >>> ex.rows[:3].tolist(), ex.expected.shape, ex.propensity_model
    ([0, 4, 8], (50,), 'logistic')
    """

    expected: np.ndarray
    rows: np.ndarray
    keep: np.ndarray
    propensity: np.ndarray
    weights: np.ndarray
    propensity_model: str


def one_hot(codes: np.ndarray, arities) -> np.ndarray:
    """Dense one-hot encoding (all categories kept) of integer codes, one block per column.

    Examples
    --------
    >>> import numpy as np
    >>> one_hot(np.array([[0, 1], [1, 0]]), [2, 2]).tolist()
    [[1.0, 0.0, 0.0, 1.0], [0.0, 1.0, 1.0, 0.0]]
    """
    codes = np.asarray(codes)
    arities = np.asarray(arities, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(arities)[:-1]])
    out = np.zeros((codes.shape[0], int(arities.sum())))
    if codes.shape[0]:
        rows = np.repeat(np.arange(codes.shape[0]), codes.shape[1])
        cols = (codes + offsets[None, :]).ravel()
        out[rows, cols] = 1.0
    return out


def distinct_rows(features: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of ``features`` (in sorted order) and, per row, the index of its
    distinct row.

    Examples
    --------
    >>> ids, rows = distinct_rows(np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]))
    >>> ids.tolist(), rows.tolist()
    ([1, 0, 1], [[0.0, 1.0], [1.0, 0.0]])
    """
    keys = np.ascontiguousarray(features, dtype=np.float64)
    rows = keys.view(np.dtype((np.void, keys.dtype.itemsize * keys.shape[1]))).ravel()
    _, first, inverse = np.unique(rows, return_index=True, return_inverse=True)
    return inverse.ravel(), keys[first]


def _fit_weighted_logistic(
    features: np.ndarray,
    labels: np.ndarray,
    weights: np.ndarray,
    C: float,
    estimator=None,
    distinct: tuple[np.ndarray, np.ndarray] | None = None,
) -> Callable[[np.ndarray], np.ndarray]:
    """Weighted probabilistic classifier; returns a function giving Pr(label = 1 | features).

    ``labels`` are 0/1, or (the default model only) soft labels in [0, 1]: a row with label
    ``y`` and weight ``w`` stands for a record labelled 1 with weight ``w y`` and one labelled
    0 with weight ``w (1 - y)``, whose log-likelihoods add up to the row's. The weights are
    scaled to sum to the number of such records with a positive weight, so that ``C`` means
    what it means for unweighted data. The default model is L2 logistic regression
    (:mod:`._logistic`), fitted after merging the rows with identical features (weights
    summed, labels averaged by weight), which leaves its objective, hence its solution,
    unchanged; ``distinct`` is :func:`distinct_rows` of ``features`` when the caller has it
    (a permutation test refits on the same features). ``estimator`` is any scikit-learn
    classifier accepting ``sample_weight`` (cloned for every fit, given 0/1 labels and the
    rows unmerged).
    """
    pos = weights > 0
    labels, weights = labels[pos], weights[pos]
    if labels.size == 0:
        raise DataError("no non-protected record with positive weight to fit the model of Î on")
    classes = np.unique(labels)
    if classes.size == 1:
        const = float(np.clip(classes[0], CLIP, 1 - CLIP))
        return lambda f: np.full(f.shape[0], const)
    if estimator is not None:  # general estimators see the rows as they are
        from sklearn.base import clone

        model = clone(estimator)
        model.fit(features[pos], labels.astype(int),
                  sample_weight=weights * (labels.size / weights.sum()))
        col = list(model.classes_).index(1)
        return lambda f: model.predict_proba(f)[:, col]
    if distinct is None:
        ids, rows = distinct_rows(features[pos])
    else:  # the distinct rows that have a positive weight, in the same (sorted) order
        used, ids = np.unique(distinct[0][pos], return_inverse=True)
        rows = distinct[1][used]
    n_records = np.count_nonzero(labels > 0) + np.count_nonzero(labels < 1)
    w = np.bincount(ids, weights=weights, minlength=rows.shape[0])
    y = np.bincount(ids, weights=weights * labels, minlength=rows.shape[0]) / w
    w *= n_records / w.sum()
    coef, intercept = fit_logistic(rows, np.clip(y, 0.0, 1.0), w, C)

    def predict(f: np.ndarray) -> np.ndarray:
        z = f @ coef + intercept
        return 1.0 / (1.0 + np.exp(-z))

    return predict


def _logit(p: np.ndarray) -> np.ndarray:
    p = np.clip(p, CLIP, 1 - CLIP)
    return np.log(p) - np.log1p(-p)


@dataclass
class Design:
    """The matrices of the two regressions, which the protected-class indicator does not
    change: built once for a scan, reused by every permuted scan (:func:`design`)."""

    x: np.ndarray  # one-hot covariates: the features of the propensity model
    x_distinct: tuple[np.ndarray, np.ndarray]  # distinct_rows(x)
    features: np.ndarray  # the features of the model of I
    features_distinct: tuple[np.ndarray, np.ndarray]  # distinct_rows(features)
    keep: np.ndarray  # the value-conditional filter


def design(
    codes: np.ndarray,
    arities: np.ndarray,
    condition: np.ndarray | None,
    *,
    condition_type: str,
    condition_value: int | None,
    interactions: bool,
) -> Design:
    """The :class:`Design` of encoded covariates and a condition C (see
    :func:`estimate_expectations` for the arguments)."""
    x = one_hot(codes, arities)
    keep = np.ones(x.shape[0], dtype=bool)
    if condition_value is not None:
        keep = condition == condition_value
    # features of the model of I: one-hot X, plus C unless it is fixed by the filter
    blocks = [x]
    if condition is not None and condition_value is None:
        c = _logit(condition) if condition_type == "continuous" else condition.astype(float)
        blocks.append(c[:, None])
        if interactions:
            blocks.append(x * c[:, None])
    features = np.hstack(blocks)
    return Design(x, distinct_rows(x), features, distinct_rows(features), keep)


def _expectations_from_codes(
    codes: np.ndarray,
    arities: np.ndarray,
    a: np.ndarray,
    event: np.ndarray,
    condition: np.ndarray | None,
    *,
    condition_type: str,
    condition_value: int | None,
    event_type: str,
    C: float,
    interactions: bool,
    propensity: np.ndarray | None,
    propensity_model: str,
    estimator=None,
    prepared: Design | None = None,
) -> Expectations:
    """Core of :func:`estimate_expectations` on encoded, validated inputs; ``prepared`` is
    their :func:`design` when the caller has it."""
    d = prepared if prepared is not None else design(
        codes, arities, condition, condition_type=condition_type,
        condition_value=condition_value, interactions=interactions)
    x, features, keep = d.x, d.features, d.keep
    if propensity is None:
        fit = _fit_weighted_logistic(x, a.astype(float), np.ones(a.size), C, estimator,
                                     d.x_distinct)
        propensity = fit(x)
    prop = np.clip(propensity, PROPENSITY_CLIP, 1 - PROPENSITY_CLIP)
    weights = prop / (1 - prop)

    train = keep & ~a
    rows = np.flatnonzero(keep & a)
    if not train.any():
        raise DataError(
            "no non-protected record is left after the value-conditional filter "
            f"(condition_value={condition_value}); the expectations cannot be estimated"
        )
    if rows.size == 0:
        raise DataError(
            "no protected record is left after the value-conditional filter "
            f"(condition_value={condition_value}); there is nothing to scan"
        )
    ft, wt, it = features[train], weights[train], event[train]
    if event_type == "probability" and estimator is not None:
        f2 = np.vstack([ft, ft])
        y2 = np.concatenate([np.ones(it.size), np.zeros(it.size)])
        w2 = np.concatenate([wt * it, wt * (1 - it)])
        model = _fit_weighted_logistic(f2, y2, w2, C, estimator)
    else:  # the default model takes a probability event as soft labels (the same fit)
        ids, rows_distinct = d.features_distinct
        model = _fit_weighted_logistic(ft, it.astype(float), wt, C, estimator,
                                       (ids[train], rows_distinct))
    expected = np.clip(model(features[rows]), CLIP, 1 - CLIP)
    return Expectations(
        expected=expected,
        rows=rows,
        keep=keep,
        propensity=prop,
        weights=weights,
        propensity_model=propensity_model,
    )


def estimate_expectations(
    covariates: pd.DataFrame,
    protected,
    event,
    condition=None,
    *,
    condition_type: str = "binary",
    condition_value: int | None = None,
    event_type: str = "binary",
    C: float = 1.0,
    interactions: bool = False,
    propensity: str | PropensityFitter = "logistic",
    estimator=None,
) -> Expectations:
    """Estimate ``Î = E_H0[I | C, X, A = 1]`` for the protected records (paper Sec. 3.2).

    Parameters
    ----------
    covariates : pandas.DataFrame of shape (n_rows, n_covariates)
        Discrete covariates X used by both models (all attributes except the sensitive one).
    protected : array-like of bool, shape (n_rows,)
        A: True for members of the protected class.
    event : array-like of shape (n_rows,)
        I: 0/1 (``event_type="binary"``) or a probability (``event_type="probability"``).
    condition : array-like of shape (n_rows,), optional
        C: 0/1 (``condition_type="binary"``) or a probability entering as its logit
        (``condition_type="continuous"``). None fits ``E[I | X]``.
    condition_value : {None, 0, 1}
        Value-conditional filter ``C == condition_value`` applied after the propensity fit.
    event_type : {"binary", "probability"}
        A probability event is fitted on duplicated records weighted by ``P`` and ``1 - P``.
    C : float, default 1.0
        Inverse L2 regularisation strength of both logistic regressions (scikit-learn's
        ``C``; use a large value such as 1e8 for an essentially unpenalised fit). The paper does
        not state its regularisation (pcfair decision: scikit-learn's default).
    interactions : bool, default False
        Add ``C x one-hot(X)`` columns, so that with one covariate and a binary C the model is
        saturated in the (C, X) cells. The paper uses main effects.
    propensity : "logistic" or callable
        ``"logistic"`` fits ``Pr(A = 1 | X)`` by logistic regression (the paper's choice). A
        callable ``fit(covariates, protected) -> probabilities`` fits and predicts on every row
        (it is called again on each permuted data set); results are labelled with its name.
    estimator : scikit-learn classifier, optional
        Replaces both logistic regressions (cloned per fit; must accept ``sample_weight`` and
        have ``predict_proba``), e.g. a calibrated random forest. ``C`` is then unused.

    Returns
    -------
    Expectations

    Raises
    ------
    DataError
        Mismatched lengths, a protected class that is empty or everything, or a filter that
        leaves no protected or no non-protected record.

    Notes
    -----
    Boxer, McFowland III and Neill, Sec. 3.2 and App. A.1 (ATT-style propensity re-weighting).
    Propensities are clipped to [1e-6, 1 - 1e-6] and Î to the same range. Covariates are
    one-hot encoded with all categories (pcfair decision).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> X = pd.DataFrame({"x": [0, 0, 1, 1] * 40})
    >>> a = np.tile([True, False], 80)
    >>> event = np.tile([0, 0, 0, 1, 0, 1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0], 10)
    >>> ex = estimate_expectations(X, a, event, C=1e8)
    >>> np.round(ex.expected[:2], 3).tolist()  # non-protected means of cells x=0 and x=1
    [0.25, 0.75]
    """
    if not isinstance(covariates, pd.DataFrame):
        raise DataError("covariates must be a pandas DataFrame")
    n = len(covariates)
    a = np.asarray(protected)
    if a.shape != (n,):
        raise DataError(f"protected has shape {a.shape}, expected ({n},)")
    a = a.astype(bool)
    if a.all() or not a.any():
        raise DataError("the protected class must hold some but not all records")
    ev = np.asarray(event, dtype=float)
    if ev.shape != (n,) or not np.all(np.isfinite(ev)):
        raise DataError(f"event must hold {n} finite values")
    check_choice("event_type", event_type, ("binary", "probability"))
    check_choice("condition_type", condition_type, ("binary", "continuous"))
    if np.any((ev < 0) | (ev > 1)):
        raise DataError("event values must lie in [0, 1]")
    if event_type == "binary" and not np.all((ev == 0) | (ev == 1)):
        raise DataError("a binary event must hold only 0 and 1")
    cond = None
    if condition is not None:
        cond = np.asarray(condition, dtype=float)
        if cond.shape != (n,) or not np.all(np.isfinite(cond)):
            raise DataError(f"condition must hold {n} finite values")
        if condition_type == "binary" and not np.all((cond == 0) | (cond == 1)):
            raise DataError("a binary condition must hold only 0 and 1")
        if condition_type == "continuous" and np.any((cond < 0) | (cond > 1)):
            raise DataError("a continuous condition must be a probability in [0, 1]")
    if condition_value is not None:
        if cond is None or condition_type != "binary":
            raise CBSOptionError("condition_value needs a binary condition")
        if condition_value not in (0, 1):
            raise CBSOptionError(f"condition_value={condition_value!r} must be None, 0 or 1")
    if not (C > 0):
        raise CBSOptionError(f"C={C!r} must be > 0")
    codes, cats = encode_covariates(covariates, list(covariates.columns))
    arities = np.array([len(c) for c in cats], dtype=np.int64)
    prop, label = fit_propensity(covariates, a, propensity)
    return _expectations_from_codes(
        codes, arities, a, ev, cond,
        condition_type=condition_type, condition_value=condition_value, event_type=event_type,
        C=C, interactions=interactions, propensity=prop, propensity_model=label,
        estimator=estimator,
    )


def fit_propensity(
    covariates: pd.DataFrame, a: np.ndarray, propensity: str | PropensityFitter
) -> tuple[np.ndarray | None, str]:
    """Run a custom propensity fitter (None for the built-in logistic one) and name it."""
    if isinstance(propensity, str):
        check_choice("propensity", propensity, ("logistic",))
        return None, "logistic"
    if not callable(propensity):
        raise CBSOptionError("propensity must be 'logistic' or a callable fit(X, a)")
    values = np.asarray(propensity(covariates, a.copy()), dtype=float)
    if values.shape != (len(covariates),):
        raise DataError(
            f"the propensity fitter returned shape {values.shape}, expected ({len(covariates)},)"
        )
    if not np.all(np.isfinite(values)) or np.any((values < 0) | (values > 1)):
        raise DataError("the propensity fitter must return probabilities in [0, 1]")
    name = getattr(propensity, "__name__", None) or type(propensity).__name__
    return values, str(name)
