"""The paper's semi-synthetic evaluation data (Sec. 4, App. B): planted subgroup biases.

:func:`make_semisynthetic` takes discrete covariates (the paper uses preprocessed COMPAS),
picks a protected class, plants a bias subgroup ``S_bias`` inside it and simulates outcomes and
predictions from a logistic model:

* a weight ``w_{j,v} ~ N(0, weight_sd)`` per covariate value; true log-odds
  ``L = sum_j w_{j, X_j} + eps_true`` with ``eps_true ~ N(0, sigma_true)``; ``Y ~ Bernoulli(
  sigmoid(L))``; predicted log-odds ``L_hat = L + eps_pred``, ``eps_pred ~ N(0, sigma_pred)``;
  ``P = sigmoid(L_hat)`` and ``Pbin = 1(P >= 0.5)``;
* injections into ``S_bias`` (protected rows only): separation bias ``L_hat += mu_sep``;
  sufficiency bias ``L -= mu_suf`` and Y redrawn; base-rate shift ``L += delta`` and
  ``L_hat += delta`` and Y redrawn.

Choices the paper leaves open (pcfair decisions): N(0, 0.2) is read as a standard deviation;
the removed protected attribute gets no weight (so that without injection the null holds for
every scan family); no intercept; a chosen bias attribute with no value drawn is redrawn, and
the whole ``S_bias`` is redrawn if it holds no protected row; Y is redrawn only for the rows
whose true log-odds changed.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from pcfair.audits.cbs.options import CBSOptionError, check_positive_int
from pcfair.audits.cbs.search import encode_covariates
from pcfair.errors import DataError, VariableError

__all__ = ["SemiSyntheticData", "compas_like_covariates", "jaccard", "make_semisynthetic"]

#: Marginal frequencies of the preprocessed COMPAS covariates (6,172 defendants, ProPublica).
COMPAS_MARGINALS = {
    "sex": {"Male": 0.81, "Female": 0.19},
    "race": {
        "African-American": 0.514, "Caucasian": 0.341, "Hispanic": 0.082,
        "Other": 0.055, "Asian": 0.005, "Native American": 0.003,
    },
    "age": {"Under 25": 0.218, "25+": 0.782},
    "charge": {"Felony": 0.643, "Misdemeanor": 0.357},
    "priors": {"None": 0.338, "1 to 5": 0.471, "Over 5": 0.191},
}


def compas_like_covariates(
    n: int = 6172, random_state: int | np.random.Generator | None = None
) -> pd.DataFrame:
    """Independent categorical covariates with COMPAS's marginals (arities 2, 6, 2, 2, 3).

    A stand-in for the preprocessed COMPAS covariates when the data file is not available.

    Examples
    --------
    >>> X = compas_like_covariates(1000, random_state=0)
    >>> list(X.columns), X.nunique().tolist()
    (['sex', 'race', 'age', 'charge', 'priors'], [2, 6, 2, 2, 3])
    """
    n = check_positive_int("n", n)
    rng = np.random.default_rng(random_state)
    cols = {}
    for attr, freq in COMPAS_MARGINALS.items():
        values = list(freq)
        probs = np.array(list(freq.values()))
        codes = rng.choice(len(values), size=n, p=probs / probs.sum())
        # make sure every value occurs once, as in the real data
        codes[: len(values)] = np.arange(len(values))
        cols[attr] = pd.Categorical.from_codes(rng.permutation(codes), categories=values)
    return pd.DataFrame(cols)


def jaccard(a, b) -> float:
    """Jaccard similarity ``|a & b| / |a | b|`` of two boolean masks (1 when both are empty).

    Examples
    --------
    >>> jaccard([True, True, False], [True, False, False])
    0.5
    """
    a = np.asarray(a, dtype=bool)
    b = np.asarray(b, dtype=bool)
    union = np.count_nonzero(a | b)
    return 1.0 if union == 0 else float(np.count_nonzero(a & b) / union)


@dataclass
class SemiSyntheticData:
    """A semi-synthetic data set with a planted bias subgroup.

    Attributes
    ----------
    data : pandas.DataFrame
        The covariates (the protected attribute removed) plus columns ``"protected"`` (0/1),
        ``"y"``, ``"p"`` and ``"pbin"``.
    covariates : list of str
        Covariate columns of ``data``.
    protected : tuple
        ``(attribute, value)`` that defined the protected class.
    bias_subgroup : dict
        ``S_bias`` as ``{attribute: [values]}`` over the covariates.
    in_bias : numpy.ndarray of bool
        Rows in ``S_bias`` and in the protected class (where injections were applied).

    Examples
    --------
    >>> sim = make_semisynthetic(compas_like_covariates(500, random_state=0), random_state=0)
    >>> len(sim.data) == sim.in_bias.size == 500, len(sim.bias_subgroup)
    (True, 2)
    """

    data: pd.DataFrame
    covariates: list
    protected: tuple
    bias_subgroup: dict
    in_bias: np.ndarray


def make_semisynthetic(
    covariates: pd.DataFrame,
    *,
    protected: tuple[str, object] | None = None,
    n_bias_attributes: int = 2,
    p_bias: float = 0.5,
    weight_sd: float = 0.2,
    sigma_true: float = 0.6,
    sigma_pred: float = 0.2,
    mu_sep: float = 0.0,
    mu_suf: float = 0.0,
    delta: float = 0.0,
    random_state: int | np.random.Generator | None = None,
) -> SemiSyntheticData:
    """Simulate outcomes and predictions with a bias planted in a subgroup of a protected class.

    Parameters
    ----------
    covariates : pandas.DataFrame
        Discrete covariates, one of which defines the protected class.
    protected : (attribute, value), optional
        The protected class; by default a random attribute and a random value of it.
    n_bias_attributes : int, default 2
        Attributes that define ``S_bias``.
    p_bias : float, default 0.5
        Probability of including each value of those attributes in ``S_bias``.
    weight_sd, sigma_true, sigma_pred : float
        Standard deviations of the value weights, the true-log-odds noise and the prediction
        noise (paper defaults 0.2, 0.6, 0.2).
    mu_sep, mu_suf, delta : float
        Separation bias, sufficiency bias and base-rate shift injected into ``S_bias``.
    random_state : int, numpy.random.Generator or None

    Returns
    -------
    SemiSyntheticData

    Examples
    --------
    >>> X = compas_like_covariates(2000, random_state=0)
    >>> sim = make_semisynthetic(X, protected=("race", "African-American"), mu_sep=1.0,
    ...                          random_state=1)
    >>> sorted(sim.data.columns)
    ['age', 'charge', 'p', 'pbin', 'priors', 'protected', 'sex', 'y']
    >>> bool(sim.in_bias.any())
    True
    """
    if not isinstance(covariates, pd.DataFrame):
        raise DataError("covariates must be a pandas DataFrame")
    for reserved in ("protected", "y", "p", "pbin"):
        if reserved in covariates.columns:
            raise DataError(f"covariates must not have a column named {reserved!r}")
    if not 0 < p_bias <= 1:
        raise CBSOptionError(f"p_bias={p_bias!r} must lie in (0, 1]")
    sds = (("weight_sd", weight_sd), ("sigma_true", sigma_true), ("sigma_pred", sigma_pred))
    for name, sd in sds:
        if not sd >= 0:
            raise CBSOptionError(f"{name}={sd!r} must be >= 0")
    n_bias_attributes = check_positive_int("n_bias_attributes", n_bias_attributes)
    rng = np.random.default_rng(random_state)
    cols = list(covariates.columns)
    codes, cats = encode_covariates(covariates, cols)
    n = len(covariates)

    if protected is None:
        j = int(rng.integers(len(cols)))
        present = np.unique(codes[:, j])
        v = int(rng.choice(present))
        protected = (cols[j], cats[j][v])
    attr, value = protected
    if attr not in cols:
        raise VariableError(f"protected attribute {attr!r} is not a covariate")
    a = (covariates[attr] == value).to_numpy()
    if not a.any() or a.all():
        raise DataError(f"the protected class {attr} = {value!r} must hold some but not all rows")
    keep_cols = [c for c in cols if c != attr]
    if n_bias_attributes > len(keep_cols):
        raise CBSOptionError(
            f"n_bias_attributes={n_bias_attributes} exceeds the {len(keep_cols)} covariates left"
        )
    kidx = [cols.index(c) for c in keep_cols]

    # S_bias: n_bias attributes, each value kept with probability p_bias (never none)
    for _ in range(1000):
        chosen = rng.choice(len(keep_cols), size=n_bias_attributes, replace=False)
        bias, rows = {}, np.ones(n, dtype=bool)
        for c in chosen:
            j = kidx[c]
            k = len(cats[j])
            while True:
                inc = rng.random(k) < p_bias
                if inc.any():
                    break
            bias[keep_cols[c]] = [cats[j][v] for v in np.flatnonzero(inc)]
            rows &= inc[codes[:, j]]
        if (rows & a).any():
            break
    else:  # pragma: no cover - needs a protected class with almost no rows
        raise DataError("could not draw a bias subgroup holding protected rows")
    in_bias = rows & a

    # the generative model (no weight for the protected attribute, no intercept)
    logit_true = np.zeros(n)
    for j in kidx:
        w = rng.normal(0.0, weight_sd, size=len(cats[j]))
        logit_true += w[codes[:, j]]
    logit_true += rng.normal(0.0, sigma_true, size=n)
    y = (rng.random(n) < 1 / (1 + np.exp(-logit_true))).astype(int)
    logit_pred = logit_true + rng.normal(0.0, sigma_pred, size=n)

    logit_pred[in_bias] += mu_sep
    shift = delta - mu_suf
    if shift != 0:
        logit_true[in_bias] += shift
        logit_pred[in_bias] += delta
        redraw = np.flatnonzero(in_bias)
        y[redraw] = (rng.random(redraw.size) < 1 / (1 + np.exp(-logit_true[redraw]))).astype(int)
    p = 1 / (1 + np.exp(-logit_pred))
    data = covariates[keep_cols].copy()
    data["protected"] = a.astype(int)
    data["y"] = y
    data["p"] = p
    data["pbin"] = (p >= 0.5).astype(int)
    return SemiSyntheticData(data, keep_cols, (attr, value), bias, in_bias)
