"""Synthetic data with planted discrimination of known size.

:func:`make_planted` draws a small Bayesian network over categorical features and a binary
decision ``D``, with one discrimination pattern planted at an exact, requested size, and
returns a sample together with the ground truth (:class:`PlantedTruth`), whose probabilities
are computed exactly by enumerating the network's joint distribution.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from pcfair._random import check_random_state
from pcfair.datasets._dataset import Dataset
from pcfair.tables.data import encode_columns
from pcfair.errors import DataError, OptionError, VariableError

#: Largest joint table (number of parent-state combinations) the exact truth enumerates.
MAX_JOINT_STATES = 1 << 22

_MARGIN = 0.02  # keeps every P(D=1 | parents) inside [0.02, 0.98]


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


@dataclass(frozen=True, eq=False)
class PlantedTruth:
    """Ground truth of a :func:`make_planted` distribution.

    The network: every feature is independent of the others with marginal
    :attr:`marginals`; the decision depends on the non-sensitive features and on the first
    sensitive feature only::

        P(D=1 | s, n) = base(n) + shift * [s[S1] == x[S1]] * [n agrees with y]
        base(n)       = lo + (hi - lo) * sigmoid(intercept + sum_j weights[N_j][n_j])

    Attributes
    ----------
    x : dict of str to int
        The planted sensitive assignment, ``{"S1": v}``.
    y : dict of str to int
        The planted context: values of the first ``context_size`` non-sensitive features.
    delta : float
        Exact Δ(x, y) = P(D=1 | x, y) − P(D=1 | y), by enumeration. Equals ``effect`` up to
        rounding, and ``|delta|`` is the largest |Δ| of any pattern (see Notes).
    p_d_given_xy, p_d_given_y, p_xy : float
        The exact probabilities behind ``delta``, and the probability of the pattern.
    effect : float
        The requested size.
    target : str
        Name of the decision column (``"D"``); its favourable value is 1.
    sensitive, nonsensitive : list of str
        Feature names.
    arities : dict of str to int
        Number of values of each feature (values are ``0..arity-1``).
    marginals : dict of str to numpy.ndarray
        Marginal distribution of each feature.
    weights : dict of str to numpy.ndarray
        Per-value log-odds weight of each non-sensitive feature in ``base``.
    intercept, lo, hi, shift : float
        The remaining parameters of P(D=1 | parents).

    Notes
    -----
    With features independent, P(v) = P(S1 = v) and c = ``shift``, a pattern (x', y') has
    Δ = c·(1 − P(v))·P(y | y') when x' sets S1 = v, Δ = −c·P(v)·P(y | y') when x' sets S1 to
    another value, and Δ = 0 when x' does not mention S1 (then D is independent of x' given
    y'). The planted value is the least likely value of S1, so P(v) <= 1/2 and the largest
    |Δ| over all patterns is |c|·(1 − P(v)) = |effect|, reached when x' sets S1 = v and y'
    extends y without mentioning S1. :meth:`max_abs_delta` checks this by brute force.
    """

    x: dict[str, int]
    y: dict[str, int]
    delta: float
    p_d_given_xy: float
    p_d_given_y: float
    p_xy: float
    effect: float
    target: str
    sensitive: list[str]
    nonsensitive: list[str]
    arities: dict[str, int]
    marginals: dict[str, np.ndarray]
    weights: dict[str, np.ndarray]
    intercept: float
    lo: float
    hi: float
    shift: float
    _parents: list[str] = field(repr=False, default_factory=list)
    _joint: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    _joint_d1: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))

    @property
    def favorable(self) -> int:
        """The favourable decision value (always 1)."""
        return 1

    @property
    def abs_delta(self) -> float:
        """|Δ| of the planted pattern."""
        return abs(self.delta)

    # -- exact queries ---------------------------------------------------------------------

    def _check_event(self, event: Mapping[str, int]) -> dict[str, int]:
        checked: dict[str, int] = {}
        for name, value in event.items():
            if name not in self.arities:
                raise VariableError(
                    f"unknown variable {name!r}; variables are {list(self.arities)}"
                )
            if not isinstance(value, (int, np.integer)) or not 0 <= value < self.arities[name]:
                raise VariableError(
                    f"value {value!r} of {name!r} is not one of 0..{self.arities[name] - 1}"
                )
            checked[name] = int(value)
        return checked

    def _sums(self, event: Mapping[str, int]) -> tuple[float, float]:
        """(P(event), P(D=1, event)) by enumeration of the parents' joint table."""
        checked = self._check_event(event)
        index = tuple(checked.get(p, slice(None)) for p in self._parents)
        factor = 1.0
        for name, value in checked.items():
            if name not in self._parents:  # independent of everything else
                factor *= float(self.marginals[name][value])
        return (
            float(np.sum(self._joint[index])) * factor,
            float(np.sum(self._joint_d1[index])) * factor,
        )

    def probability(self, event: Mapping[str, int]) -> float:
        """Exact probability of a partial assignment of features.

        Parameters
        ----------
        event : mapping of str to int
            Feature name -> value.

        Returns
        -------
        float
            P(event).

        Examples
        --------
        >>> from pcfair.datasets import make_planted
        >>> _, truth = make_planted(10, random_state=0)
        >>> round(truth.probability({}), 12)
        1.0
        """
        return self._sums(event)[0]

    def conditional(self, event: Mapping[str, int]) -> float:
        """Exact P(D=1 | event).

        Parameters
        ----------
        event : mapping of str to int
            Feature name -> value; may be empty.

        Returns
        -------
        float
            The conditional probability of the favourable decision.

        Examples
        --------
        >>> from pcfair.datasets import make_planted
        >>> _, truth = make_planted(10, random_state=0)
        >>> truth.conditional({**truth.x, **truth.y}) == truth.p_d_given_xy
        True
        """
        p_event, p_joint = self._sums(event)
        return p_joint / p_event

    def delta_of(self, x: Mapping[str, int], y: Mapping[str, int]) -> float:
        """Exact Δ(x, y) = P(D=1 | x, y) − P(D=1 | y) under the generating distribution.

        Parameters
        ----------
        x : mapping of str to int
            Assignment to sensitive features (non-empty).
        y : mapping of str to int
            Assignment to other features (may include sensitive ones not in ``x``).

        Returns
        -------
        float
            The signed degree of discrimination.

        Raises
        ------
        VariableError
            Unknown variable or value, a non-sensitive variable in ``x``, an empty ``x``, or a
            variable in both ``x`` and ``y``.

        Examples
        --------
        >>> from pcfair.datasets import make_planted
        >>> _, truth = make_planted(10, effect=0.25, random_state=0)
        >>> round(truth.delta_of(truth.x, truth.y), 9)
        0.25
        """
        if not x:
            raise VariableError("x must assign at least one sensitive feature")
        not_sensitive = [name for name in x if name not in self.sensitive]
        if not_sensitive:
            raise VariableError(f"x may only hold sensitive features; {not_sensitive} are not")
        both = sorted(set(x) & set(y))
        if both:
            raise VariableError(f"variable(s) {both} appear in both x and y")
        return self.conditional({**x, **y}) - self.conditional(y)

    def max_abs_delta(self, *, max_patterns: int = 200_000) -> float:
        """Largest |Δ(x, y)| over every pattern, by brute force.

        A pattern assigns a non-empty set of sensitive features (x) and any set of the other
        features, sensitive ones included (y).

        Parameters
        ----------
        max_patterns : int, default 200000
            Refuse to enumerate more patterns than this.

        Returns
        -------
        float
            The maximum; equals :attr:`abs_delta` (see the class Notes).

        Raises
        ------
        DataError
            More than ``max_patterns`` patterns.

        Examples
        --------
        >>> from pcfair.datasets import make_planted
        >>> _, truth = make_planted(10, n_features=4, random_state=1)
        >>> abs(truth.max_abs_delta() - truth.abs_delta) < 1e-12
        True
        """
        options: list[list[tuple[str, int | None, bool]]] = []
        count_all, count_no_x = 1, 1
        for name in self.sensitive + self.nonsensitive:
            arity = self.arities[name]
            opts: list[tuple[str, int | None, bool]] = [(name, None, False)]
            opts += [(name, v, False) for v in range(arity)]
            if name in self.sensitive:
                opts += [(name, v, True) for v in range(arity)]
            options.append(opts)
            count_all *= len(opts)
            count_no_x *= 1 + arity
        n_patterns = count_all - count_no_x
        if n_patterns > max_patterns:
            raise DataError(
                f"{n_patterns} patterns exceed max_patterns={max_patterns}; use fewer features"
            )
        cache: dict[tuple[tuple[str, int], ...], float] = {}

        def cond(event: dict[str, int]) -> float:
            key = tuple(sorted(event.items()))
            if key not in cache:
                cache[key] = self.conditional(event)
            return cache[key]

        best = 0.0
        for choice in itertools.product(*options):
            x = {n: v for n, v, in_x in choice if in_x and v is not None}
            if not x:
                continue
            y = {n: v for n, v, in_x in choice if not in_x and v is not None}
            best = max(best, abs(cond({**x, **y}) - cond(y)))
        return best

    # -- the distribution as a model and a sampler ----------------------------------------

    def decision_probability(self, frame: pd.DataFrame) -> np.ndarray:
        """P(D=1 | features) for each row of a frame holding at least the parent columns.

        Parameters
        ----------
        frame : pandas.DataFrame
            Rows with the columns ``S1`` and every non-sensitive feature.

        Returns
        -------
        numpy.ndarray of shape (n_rows,)
            The true decision probabilities.

        Examples
        --------
        >>> from pcfair.datasets import make_planted
        >>> data, truth = make_planted(5, random_state=0)
        >>> truth.decision_probability(data.frame).shape
        (5,)
        """
        absent = [p for p in self._parents if p not in frame.columns]
        if absent:
            raise DataError(f"frame lacks the column(s) {absent}")
        codes = [frame[p].to_numpy(dtype=np.int64) for p in self._parents]
        for name, values in zip(self._parents, codes, strict=True):
            if values.size and (values.min() < 0 or values.max() >= self.arities[name]):
                raise DataError(f"column {name!r} has values outside 0..{self.arities[name] - 1}")
        with np.errstate(invalid="ignore", divide="ignore"):
            table = np.where(self._joint > 0, self._joint_d1 / self._joint, 0.0)
        return table[tuple(codes)]

    def sample(
        self, n_samples: int, *, random_state: int | np.random.Generator | None = None
    ) -> pd.DataFrame:
        """Draw rows from the generating distribution.

        Parameters
        ----------
        n_samples : int
            Number of rows.
        random_state : int, numpy.random.Generator or None
            Seed or generator.

        Returns
        -------
        pandas.DataFrame
            ``int8`` columns: the sensitive features, the non-sensitive ones, then the decision.

        Examples
        --------
        >>> from pcfair.datasets import make_planted
        >>> _, truth = make_planted(5, random_state=0)
        >>> truth.sample(3, random_state=1).shape
        (3, 7)
        """
        if not isinstance(n_samples, (int, np.integer)) or n_samples < 0:
            raise DataError(f"n_samples must be a non-negative int, got {n_samples!r}")
        rng = check_random_state(random_state)
        columns: dict[str, np.ndarray] = {}
        for name in self.sensitive + self.nonsensitive:
            cdf = np.cumsum(self.marginals[name])
            draws = np.searchsorted(cdf, rng.random(n_samples), side="right")
            columns[name] = np.minimum(draws, self.arities[name] - 1).astype(np.int8)
        frame = pd.DataFrame(columns)
        p_d = self.decision_probability(frame)
        frame[self.target] = (rng.random(n_samples) < p_d).astype(np.int8)
        return frame


def _arities(n_categories: int | Sequence[int], n_features: int) -> list[int]:
    if isinstance(n_categories, (int, np.integer)):
        arities = [int(n_categories)] * n_features
    else:
        arities = [int(a) for a in n_categories]
        if len(arities) != n_features:
            raise DataError(
                f"n_categories has {len(arities)} entries, expected n_features={n_features}"
            )
    if min(arities) < 2:
        raise DataError(f"every feature needs at least 2 categories, got {arities}")
    return arities


def make_planted(
    n_samples: int = 1000,
    *,
    n_features: int = 6,
    n_sensitive: int = 2,
    effect: float = 0.2,
    context_size: int = 1,
    n_categories: int | Sequence[int] = 2,
    random_state: int | np.random.Generator | None = None,
) -> tuple[Dataset, PlantedTruth]:
    """Sample data with one discrimination pattern planted at an exact size.

    Features ``S1..Sk`` (sensitive) and ``N1..Nm`` (non-sensitive) are independent
    categorical variables with random marginals. The decision ``D`` (favourable value 1)
    depends on the non-sensitive features through a random logistic score, and is shifted by
    a constant for rows where ``S1`` takes its least likely value v *and* the first
    ``context_size`` non-sensitive features take planted values y. The shift is chosen so
    that the planted pattern has Δ(x, y) = P(D=1 | x, y) − P(D=1 | y) = ``effect`` exactly
    under the generating distribution, and no pattern has a larger |Δ|. ``S2..Sk`` are
    independent of everything (pure noise), so ``effect=0`` gives a distribution with no
    discrimination at all.

    Parameters
    ----------
    n_samples : int, default 1000
        Number of rows to draw.
    n_features : int, default 6
        Number of features, sensitive ones included.
    n_sensitive : int, default 2
        Number of sensitive features (at least 1).
    effect : float, default 0.2
        Signed size of the planted Δ; negative means the favourable decision is *less* likely
        for x. Keeping every probability in [0.02, 0.98] with room for the base score limits
        it to ``|effect| <= 0.91 * (1 - P(v))``; a larger value raises, naming the limit.
    context_size : int, default 1
        Number of non-sensitive features in the planted context y (0 for a group-level
        pattern).
    n_categories : int or sequence of int, default 2
        Number of values of every feature, or one per feature (sensitive first).
    random_state : int, numpy.random.Generator or None
        Seed for the parameters and the sample.

    Returns
    -------
    data : Dataset
        ``int8`` columns ``S1..Sk, N1..Nm, D``; target ``D``, favourable 1, sensitive
        ``S1..Sk``.
    truth : PlantedTruth
        The planted pattern, its exact Δ, and exact queries on the distribution.

    Raises
    ------
    DataError
        Inconsistent sizes, an infeasible ``effect``, or a joint table above
        :data:`MAX_JOINT_STATES` (too many non-sensitive features to enumerate).

    Notes
    -----
    Exactness: ``truth.delta`` is computed by summing the joint table of S1, the
    non-sensitive features and D (not from the closed form), and it equals ``effect`` to
    floating-point rounding; see :class:`PlantedTruth` for why no pattern exceeds it.

    Examples
    --------
    >>> from pcfair.datasets import make_planted
    >>> data, truth = make_planted(2000, effect=-0.3, random_state=0)
    >>> data.frame.shape, data.sensitive
    ((2000, 7), ['S1', 'S2'])
    >>> round(truth.delta, 9)
    -0.3
    """
    if not isinstance(n_samples, (int, np.integer)) or n_samples < 0:
        raise DataError(f"n_samples must be a non-negative int, got {n_samples!r}")
    if not 1 <= n_sensitive <= n_features:
        raise DataError(
            f"n_sensitive must be between 1 and n_features={n_features}, got {n_sensitive}"
        )
    n_nonsensitive = n_features - n_sensitive
    if not 0 <= context_size <= n_nonsensitive:
        raise DataError(
            f"context_size must be between 0 and the number of non-sensitive features "
            f"({n_nonsensitive}), got {context_size}"
        )
    if not -1.0 < effect < 1.0:
        raise DataError(f"effect must lie strictly between -1 and 1, got {effect}")
    arities = _arities(n_categories, n_features)
    sensitive = [f"S{i + 1}" for i in range(n_sensitive)]
    nonsensitive = [f"N{j + 1}" for j in range(n_nonsensitive)]
    names = sensitive + nonsensitive
    arity = dict(zip(names, arities, strict=True))
    parents = [sensitive[0]] + nonsensitive
    n_states = int(np.prod([arity[p] for p in parents], dtype=np.int64))
    if n_states > MAX_JOINT_STATES:
        raise DataError(
            f"the exact truth would enumerate {n_states} parent states (limit "
            f"{MAX_JOINT_STATES}); use fewer non-sensitive features or categories"
        )

    rng = check_random_state(random_state)
    marginals = {
        name: 0.5 / arity[name] + 0.5 * rng.dirichlet(np.ones(arity[name])) for name in names
    }
    planted_value = int(np.argmin(marginals[sensitive[0]]))
    context = {name: int(rng.integers(arity[name])) for name in nonsensitive[:context_size]}
    weights = {name: rng.normal(0.0, 1.0, size=arity[name]) for name in nonsensitive}
    intercept = float(rng.normal(0.0, 0.5))

    p_v = float(marginals[sensitive[0]][planted_value])
    shift = effect / (1.0 - p_v)
    lo = max(0.0, -shift) + _MARGIN
    hi = min(1.0, 1.0 - shift) - _MARGIN
    if hi - lo < 0.05:
        limit = (1.0 - 2 * _MARGIN - 0.05) * (1.0 - p_v)
        raise DataError(
            f"effect={effect} is too large for this draw: with P(S1={planted_value})={p_v:.3f} "
            f"the largest feasible |effect| is {limit:.3f}"
        )

    # Joint table over the parents (S1, N1..Nm): P(parents) and P(parents, D=1).
    # Sparse grids broadcast against each other, so only the final tables are full size.
    shape = tuple(arity[p] for p in parents)
    grids = np.meshgrid(*[np.arange(a) for a in shape], indexing="ij", sparse=True)
    p_parents = np.ones(shape)
    for name, grid in zip(parents, grids, strict=True):
        p_parents *= marginals[name][grid]
    score = np.full(shape, intercept)
    for name, grid in zip(nonsensitive, grids[1:], strict=True):
        score += weights[name][grid]
    in_pattern = np.broadcast_to(grids[0] == planted_value, shape)
    for name, value in context.items():
        in_pattern = in_pattern & (grids[1 + nonsensitive.index(name)] == value)
    p_d1 = lo + (hi - lo) * _sigmoid(score) + shift * in_pattern

    x = {sensitive[0]: planted_value}
    truth = PlantedTruth(
        x=x,
        y=dict(context),
        delta=0.0,
        p_d_given_xy=0.0,
        p_d_given_y=0.0,
        p_xy=0.0,
        effect=float(effect),
        target="D",
        sensitive=sensitive,
        nonsensitive=nonsensitive,
        arities=arity,
        marginals=marginals,
        weights=weights,
        intercept=intercept,
        lo=lo,
        hi=hi,
        shift=shift,
        _parents=parents,
        _joint=p_parents,
        _joint_d1=p_parents * p_d1,
    )
    p_d_given_xy = truth.conditional({**x, **context})
    p_d_given_y = truth.conditional(context)
    object.__setattr__(truth, "p_d_given_xy", p_d_given_xy)
    object.__setattr__(truth, "p_d_given_y", p_d_given_y)
    object.__setattr__(truth, "p_xy", truth.probability({**x, **context}))
    object.__setattr__(truth, "delta", p_d_given_xy - p_d_given_y)

    frame = truth.sample(n_samples, random_state=rng)
    description = (
        f"Synthetic data from pcfair.datasets.make_planted: {n_sensitive} sensitive and "
        f"{n_nonsensitive} non-sensitive categorical features, decision D; planted pattern "
        f"x={x}, y={dict(context)} with exact delta={truth.delta:.6f}."
    )
    data = Dataset(
        frame=frame,
        target="D",
        favorable=1,
        sensitive=list(sensitive),
        name="planted",
        description=description,
        source="synthetic",
    )
    return data, truth

# --- Semi-synthetic predictions with a planted biased subgroup ----------------------------------
#
# From the Conditional Bias Scan paper's evaluation (Boxer et al., Sec. 4, App. B), usable to
# measure any subgroup auditor's power. :func:`make_semisynthetic` takes discrete covariates,
# picks a protected class, plants a bias subgroup ``S_bias`` inside it and simulates outcomes
# and predictions from a logistic model:
#
# * a weight ``w_{j,v} ~ N(0, weight_sd)`` per covariate value; true log-odds
#   ``L = sum_j w_{j, X_j} + eps_true``, ``eps_true ~ N(0, sigma_true)``; ``Y ~ Bernoulli(
#   sigmoid(L))``; predicted log-odds ``L_hat = L + eps_pred``, ``eps_pred ~ N(0, sigma_pred)``;
#   ``P = sigmoid(L_hat)``, ``Pbin = 1(P >= 0.5)``;
# * injections into ``S_bias`` (protected rows only): separation bias ``L_hat += mu_sep``;
#   sufficiency bias ``L -= mu_suf`` and Y redrawn; base-rate shift ``L += base_rate_shift``,
#   ``L_hat += base_rate_shift`` and Y redrawn.
#
# Choices the paper leaves open: N(0, 0.2) is read as a standard deviation; the removed
# protected attribute gets no weight (without injection the null holds for every scan family);
# no intercept; a chosen bias attribute with no value drawn is redrawn, and the whole ``S_bias``
# is redrawn if it holds no protected row; Y is redrawn only where the true log-odds changed.


def _positive_int(option: str, value) -> int:
    if isinstance(value, bool) or not hasattr(value, "__index__") or int(value.__index__()) < 1:
        raise OptionError(f"{option}={value!r} must be an integer >= 1")
    return int(value.__index__())


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
    n = _positive_int("n", n)
    rng = check_random_state(random_state)
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
    base_rate_shift: float = 0.0,
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
    mu_sep, mu_suf, base_rate_shift : float
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
        raise OptionError(f"p_bias={p_bias!r} must lie in (0, 1]")
    sds = (("weight_sd", weight_sd), ("sigma_true", sigma_true), ("sigma_pred", sigma_pred))
    for name, sd in sds:
        if not sd >= 0:
            raise OptionError(f"{name}={sd!r} must be >= 0")
    n_bias_attributes = _positive_int("n_bias_attributes", n_bias_attributes)
    rng = check_random_state(random_state)
    cols = list(covariates.columns)
    codes, cats = encode_columns(covariates, cols)
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
        raise OptionError(
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
    shift = base_rate_shift - mu_suf
    if shift != 0:
        logit_true[in_bias] += shift
        logit_pred[in_bias] += base_rate_shift
        redraw = np.flatnonzero(in_bias)
        y[redraw] = (rng.random(redraw.size) < 1 / (1 + np.exp(-logit_true[redraw]))).astype(int)
    p = 1 / (1 + np.exp(-logit_pred))
    data = covariates[keep_cols].copy()
    data["protected"] = a.astype(int)
    data["y"] = y
    data["p"] = p
    data["pbin"] = (p >= 0.5).astype(int)
    return SemiSyntheticData(data, keep_cols, (attr, value), bias, in_bias)
