"""Multidimensional fast subset scan with coordinate ascent and random restarts (paper App. A.2).

A subgroup is a Cartesian product of non-empty value subsets, one per covariate; an attribute
whose subset holds all its values is unconstrained. :class:`SubsetScanner` encodes the
covariates once and offers the three operations of Algorithm 1:

* :meth:`SubsetScanner.score` scores a fixed subgroup with the total penalty
  ``lambda * sum_j |V_j| * 1(V_j != all values)``;
* :meth:`SubsetScanner.step` is the exact linear-time coordinate step on one attribute
  (LTSS with the penalised per-value zeros, plus the "all values" option at no penalty);
* :meth:`SubsetScanner.scan` runs coordinate ascent from the full set and from random starts.

The numeric work happens in :mod:`pcfair.audits.cbs._kernels`; :func:`scan`,
:func:`coordinate_step` and :func:`score_subgroup` are one-call wrappers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from pcfair._progress import progress_bar
from pcfair._clock import expired
from pcfair.audits.cbs import _kernels
from pcfair.audits.cbs.options import CBSOptionError, check_penalty, check_positive_int
from pcfair.audits.cbs.scoring import CLIP, BernoulliScore, GaussianLogitShiftScore
from pcfair.errors import DataError, VariableError
from pcfair.tables.data import encode_columns as encode_covariates

__all__ = [
    "ScanResult",
    "StepResult",
    "SubsetScanner",
    "coordinate_step",
    "encode_covariates",
    "scan",
    "score_subgroup",
]

#: Minimum number of records a random starting subgroup keeps (aif360 convention).
MIN_START_RECORDS = 10
#: An improvement smaller than this does not restart the sweep over attributes (aif360).
IMPROVEMENT_TOL = 1e-6

Scorer = BernoulliScore | GaussianLogitShiftScore


@dataclass(frozen=True)
class StepResult:
    """Outcome of one coordinate step on ``attribute``.

    ``values`` is None when the best option is all values (the attribute is unconstrained);
    ``score`` includes only the penalty of ``attribute`` and ``theta`` is the maximising
    q or mu.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> X = pd.DataFrame({"a": [0, 1] * 50})
    >>> step = coordinate_step(X, np.tile([1.0, 0.0], 50), np.full(100, 0.5), None, "a")
    >>> step.attribute, step.values
    ('a', [0])
    """

    attribute: str
    values: list | None
    score: float
    theta: float


@dataclass
class ScanResult:
    """Best subgroup found by :func:`scan`.

    Attributes
    ----------
    subgroup : dict
        ``{attribute: [values]}`` for the constrained attributes; ``{}`` is the whole data set.
    score : float
        Penalised score ``F(S*) - lambda * (number of listed values)``.
    theta : float
        Maximising free parameter (q for Bernoulli, mu for Gaussian).
    parameter : str
        ``"q"`` or ``"mu"``.
    n : int
        Number of scanned records in the subgroup.
    mask : numpy.ndarray of bool
        Which scanned records are in the subgroup.
    restart_scores : numpy.ndarray
        Final score of every restart that ran (restart 0 starts from the full set).
    n_steps : int
        Coordinate steps taken over all restarts.
    monotone : bool
        True when no step decreased the score within a restart (it never should).
    complete : bool
        False when a deadline stopped the restarts early (``restart_scores`` says how many
        ran).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> X = pd.DataFrame({"a": [0, 1] * 50})
    >>> res = scan(X, np.tile([1.0, 0.0], 50), np.full(100, 0.5), n_restarts=2, random_state=0)
    >>> res.subgroup, res.n, res.found, res.parameter
    ({'a': [0]}, 50, True, 'q')
    """

    subgroup: dict
    score: float
    theta: float
    parameter: str
    n: int
    mask: np.ndarray = field(repr=False)
    restart_scores: np.ndarray = field(repr=False)
    n_steps: int = 0
    monotone: bool = True
    complete: bool = True

    @property
    def found(self) -> bool:
        """A subgroup is reported only when its score is positive."""
        return self.score > 0


class SubsetScanner:
    """Encoded scan problem: covariates, event, expectations, score and penalty.

    Parameters
    ----------
    covariates : pandas.DataFrame of shape (n_rows, n_attributes)
        Discrete covariates of the records to scan (the protected class).
    event : array-like of shape (n_rows,)
        The event I (Bernoulli: 0/1; Gaussian: the probability I, or Δ when ``expected`` is
        None).
    expected : array-like of shape (n_rows,) or None
        Î, the expectation of I under the null.
    scorer : BernoulliScore or GaussianLogitShiftScore or {"bernoulli", "gaussian"}
        The score. A string builds one with ``direction`` and ``sigma``.
    penalty : float, default 1.0
        Complexity penalty lambda per listed attribute value.
    direction : {"positive", "negative"}, default "positive"
        Used only when ``scorer`` is a string.
    sigma : float or None
        Gaussian only, when ``scorer`` is a string: the null standard deviation of Δ; None uses
        the sample standard deviation of Δ.
    categories : sequence of sequences, optional
        The full value list of each attribute. Values absent from ``covariates`` still count
        when deciding whether an attribute is constrained (use it when scanning a subset of a
        larger table).
    min_size : int, default 1
        Smallest subgroup (in records) the scan may consider: each coordinate step chooses
        among the options holding at least this many records, and keeps the current value
        set when all of them score lower, so the ascent never leaves the subgroups of at
        least ``min_size`` records. 1 is the paper's unconstrained scan.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> X = pd.DataFrame({"a": [0, 0, 1, 1] * 25, "b": [0, 1, 0, 1] * 25})
    >>> event = ((X.a == 1) & (X.b == 1)).astype(float).to_numpy()
    >>> sc = SubsetScanner(X, event, np.full(100, 0.3), "bernoulli", penalty=0.0)
    >>> sc.scan(n_restarts=5, random_state=0).subgroup
    {'a': [1], 'b': [1]}
    """

    def __init__(
        self,
        covariates: pd.DataFrame,
        event,
        expected=None,
        scorer: Scorer | str = "bernoulli",
        *,
        penalty: float = 1.0,
        direction: str = "positive",
        sigma: float | None = None,
        categories: Sequence[Sequence] | None = None,
        min_size: int = 1,
    ):
        if not isinstance(covariates, pd.DataFrame):
            raise DataError("covariates must be a pandas DataFrame")
        if covariates.shape[1] == 0:
            raise DataError("at least one covariate is needed to form subgroups")
        self.attributes = tuple(str(c) for c in covariates.columns)
        self._columns = tuple(covariates.columns)
        if categories is None:
            codes, cats = encode_covariates(covariates, list(covariates.columns))
        else:
            if len(categories) != covariates.shape[1]:
                raise DataError(
                    f"categories lists {len(categories)} attributes, covariates have "
                    f"{covariates.shape[1]}"
                )
            cats = tuple(tuple(c) for c in categories)
            codes = np.empty(covariates.shape, dtype=np.int64)
            for j, col in enumerate(covariates.columns):
                cat = pd.Categorical(covariates[col], categories=list(cats[j]))
                if (cat.codes < 0).any():
                    bad = covariates[col][cat.codes < 0].iloc[0]
                    raise VariableError(
                        f"value {bad!r} of covariate {col!r} is not among its categories"
                    )
                codes[:, j] = cat.codes
        self.codes = np.ascontiguousarray(codes)
        self.categories = cats
        self.arities = np.array([len(c) for c in cats], dtype=np.int64)
        self.max_arity = int(self.arities.max())
        n = len(covariates)
        self.penalty = check_penalty(penalty)
        self.min_size = check_positive_int("min_size", min_size)
        # valid[j, v]: value v exists for attribute j (the inclusion matrix is padded)
        self._valid = np.arange(self.max_arity)[None, :] < self.arities[:, None]

        if isinstance(scorer, str):
            key = scorer.lower()
            if key == "bernoulli":
                scorer = BernoulliScore(direction)
            elif key == "gaussian":
                scorer = None  # built below once sigma is known
            else:
                raise CBSOptionError(
                    f"scorer={scorer!r} is not valid; choose one of 'bernoulli', 'gaussian'"
                )
        else:
            key = getattr(scorer, "name", None)
            if key not in ("bernoulli", "gaussian"):
                raise CBSOptionError(
                    "scorer must be a BernoulliScore, a GaussianLogitShiftScore or a name"
                )

        ev = np.asarray(event, dtype=np.float64)
        if ev.shape != (n,):
            raise DataError(f"event has shape {ev.shape}, expected ({n},)")
        if not np.all(np.isfinite(ev)):
            raise DataError("event contains NaN or infinite values")
        if key == "bernoulli":
            if expected is None:
                raise DataError("the Bernoulli score needs expected values (Î)")
            ex = np.asarray(expected, dtype=np.float64)
            if ex.shape != (n,):
                raise DataError(f"expected has shape {ex.shape}, expected ({n},)")
            if not np.all(np.isfinite(ex)) or np.any((ex < 0) | (ex > 1)):
                raise DataError("expected values (Î) must be probabilities in [0, 1]")
            if np.any((ev < 0) | (ev > 1)):
                raise DataError("event values of a Bernoulli score must lie in [0, 1]")
            self.event = ev
            self.expected = np.clip(ex, CLIP, 1 - CLIP)
        else:
            if expected is not None:
                ev = GaussianLogitShiftScore.logit_difference(ev, expected)
            self.event = ev
            self.expected = np.zeros(n)
            if scorer is None:
                if sigma is None:
                    if n < 2:
                        raise DataError("sigma cannot be estimated from fewer than 2 records")
                    sigma = float(np.std(ev, ddof=1))
                    if not sigma > 0:
                        raise DataError(
                            "the logit differences are all equal, so their standard deviation "
                            "is 0; pass sigma explicitly"
                        )
                scorer = GaussianLogitShiftScore(direction, sigma)
        self.scorer = scorer
        self.sign = scorer.sign
        self._gaussian = key == "gaussian"
        # rows sorted by Î so that the kernels can merge equal expectations
        order = np.argsort(self.expected, kind="stable")
        self._order = order
        self.codes = np.ascontiguousarray(self.codes[order])
        self.event = np.ascontiguousarray(self.event[order])
        self.expected = np.ascontiguousarray(self.expected[order])
        self._present = np.zeros((len(cats), self.max_arity), dtype=bool)
        for j in range(len(cats)):
            self._present[j, np.unique(self.codes[:, j])] = True

    # ---------------------------------------------------------------- subgroup conversion
    def _full(self) -> np.ndarray:
        incl = np.zeros((len(self.attributes), self.max_arity), dtype=bool)
        for j, k in enumerate(self.arities):
            incl[j, :k] = True
        return incl

    def _is_constrained(self, incl: np.ndarray, j: int) -> bool:
        return not bool(incl[j, : self.arities[j]].all())

    def to_mask(self, subgroup: Mapping[str, Sequence] | None) -> np.ndarray:
        """Inclusion matrix (attributes x values) of a ``{attribute: [values]}`` subgroup."""
        incl = self._full()
        for attr, values in (subgroup or {}).items():
            key = str(attr)
            if key not in self.attributes:
                raise VariableError(
                    f"subgroup names attribute {attr!r}, which is not a covariate "
                    f"(covariates: {', '.join(self.attributes)})"
                )
            j = self.attributes.index(key)
            vals = list(values)
            if not vals:
                raise DataError(f"subgroup lists no value for attribute {attr!r}")
            incl[j, :] = False
            for v in vals:
                try:
                    incl[j, self.categories[j].index(v)] = True
                except ValueError as err:
                    raise VariableError(
                        f"value {v!r} is not a category of attribute {attr!r} "
                        f"(categories: {list(self.categories[j])})"
                    ) from err
        return incl

    def to_subgroup(self, incl: np.ndarray) -> dict:
        """``{attribute: [values]}`` for the constrained attributes of an inclusion matrix."""
        out = {}
        for j, attr in enumerate(self._columns):
            if self._is_constrained(incl, j):
                chosen = np.flatnonzero(incl[j, : self.arities[j]])
                out[attr] = [self.categories[j][v] for v in chosen]
        return out

    def _n_listed(self, incl: np.ndarray) -> int:
        listed = (incl & self._valid).sum(axis=1)
        return int(listed[listed < self.arities].sum())

    # ---------------------------------------------------------------- the three operations
    def _score_incl(self, incl: np.ndarray) -> tuple[float, float, int]:
        total = self.penalty * self._n_listed(incl)
        if self._gaussian:
            s, theta, n = _kernels.gaussian_subset_score(
                self.codes, self.event, incl, self.sign, self.scorer.sigma, total
            )
        else:
            s, theta, n = _kernels.bernoulli_subset_score(
                self.codes, self.event, self.expected, incl, self.sign, total
            )
        return float(s), float(theta), int(n)

    def _step_incl(self, incl: np.ndarray, j: int):
        k = int(self.arities[j])
        if self._gaussian:
            return _kernels.gaussian_step(
                self.codes, self.event, incl, j, k, self.sign, self.scorer.sigma, self.penalty,
                self.min_size,
            )
        return _kernels.bernoulli_step(
            self.codes, self.event, self.expected, incl, j, k, self.sign, self.penalty,
            self.min_size,
        )

    def score(self, subgroup: Mapping[str, Sequence] | None) -> tuple[float, float, int]:
        """Penalised score, maximising parameter and size of a fixed subgroup."""
        return self._score_incl(self.to_mask(subgroup))

    def _unsort(self, rows_sorted: np.ndarray) -> np.ndarray:
        out = np.empty_like(rows_sorted)
        out[self._order] = rows_sorted
        return out

    def members(self, subgroup: Mapping[str, Sequence] | None) -> np.ndarray:
        """Boolean membership of every record (in input order) in ``subgroup``."""
        return self._unsort(_kernels.subgroup_rows(self.codes, self.to_mask(subgroup), -1))

    def step(self, subgroup: Mapping[str, Sequence] | None, attribute: str) -> StepResult:
        """Exact best value subset of ``attribute``, the other attributes held at ``subgroup``.

        With ``min_size > 1`` only options of at least ``min_size`` records are scored; when
        even all values of ``attribute`` hold fewer, the step's score is ``-inf``.
        """
        if str(attribute) not in self.attributes:
            raise VariableError(f"attribute {attribute!r} is not a covariate")
        j = self.attributes.index(str(attribute))
        incl = self.to_mask(subgroup)
        take_all, chosen, s, theta = self._step_incl(incl, j)
        values = None if take_all else [self.categories[j][v] for v in np.flatnonzero(chosen)]
        return StepResult(self._columns[j], values, float(s), float(theta))

    def _random_start(self, rng: np.random.Generator) -> np.ndarray:
        """aif360's random start: each value kept with one probability drawn per restart."""
        incl = self._full()
        prob = rng.random()
        m = len(self.attributes)
        for j in rng.permutation(m):
            present = np.flatnonzero(self._present[j])
            keep = rng.random(present.size) < prob
            if keep.sum() == present.size:
                continue
            trial = incl.copy()
            trial[j, :] = False
            trial[j, present[keep]] = True
            rows = _kernels.subgroup_rows(self.codes, trial, -1)
            if rows.sum() >= max(MIN_START_RECORDS, self.min_size):
                incl = trial
        return incl

    def scan(
        self, n_restarts: int = 50, random_state=None, progress: bool | None = False,
        deadline: float | None = None,
    ) -> ScanResult:
        """Coordinate ascent with restarts (Algorithm 1); restart 0 starts from the full set.

        ``progress`` shows a bar over the restarts (None: only on an interactive terminal).
        ``deadline`` (a :func:`time.time` value) is checked between restarts: the restarts
        that finished before it give the result (``complete`` False, ``restart_scores``
        shorter than ``n_restarts``); restart 0 always runs. With fewer records than
        ``min_size`` there is no subgroup to scan: the result has score 0 and ``n`` 0.
        """
        n_restarts = check_positive_int("n_restarts", n_restarts)
        rng = np.random.default_rng(random_state)
        m = len(self.attributes)
        if self.codes.shape[0] < self.min_size:
            return ScanResult(
                subgroup={}, score=0.0, theta=float(self.scorer.null_parameter),
                parameter=self.scorer.parameter, n=0,
                mask=np.zeros(self.codes.shape[0], dtype=bool), restart_scores=np.zeros(0),
            )
        constrained = self.min_size > 1
        best_incl, best_score, best_theta = None, -np.inf, self.scorer.null_parameter
        restart_scores = np.empty(n_restarts)
        n_steps = 0
        monotone = True
        done = 0
        with progress_bar(progress, "CBS scan restarts", total=n_restarts, unit=" restarts",
                          leave=False) as bar:
            for r in range(n_restarts):
                if r > 0 and expired(deadline):
                    break
                incl = self._full() if r == 0 else self._random_start(rng)
                score, theta, _ = self._score_incl(incl)
                scanned = np.zeros(m, dtype=bool)
                while not scanned.all():
                    todo = np.flatnonzero(~scanned)
                    j = int(todo[rng.integers(0, todo.size)])  # rng.choice(todo), faster
                    relaxed = incl.copy()
                    relaxed[j, : self.arities[j]] = True
                    take_all, chosen, step_score, new_theta = self._step_incl(relaxed, j)
                    listed_j = 0
                    if not take_all:
                        relaxed[j, :] = False
                        relaxed[j, : self.arities[j]] = chosen
                        listed_j = int(chosen.sum())
                    # the step scored the new subgroup with attribute j's penalty only
                    new_score = float(step_score) - self.penalty * (
                        self._n_listed(relaxed) - listed_j)
                    new_theta = float(new_theta)
                    n_steps += 1
                    if constrained and new_score < score:
                        # every option of at least min_size records scores lower than the
                        # current value set, which is one of them: keep it
                        relaxed, new_score, new_theta = incl, score, theta
                    if new_score < score - 1e-9 * max(1.0, abs(score)):
                        monotone = False
                    if new_score > score + IMPROVEMENT_TOL:
                        scanned[:] = False
                    scanned[j] = True
                    incl, score, theta = relaxed, new_score, new_theta
                restart_scores[r] = score
                done += 1
                bar.update(1)
                if score > best_score:
                    best_incl, best_score, best_theta = incl, score, theta
        mask = self._unsort(_kernels.subgroup_rows(self.codes, best_incl, -1))
        return ScanResult(
            subgroup=self.to_subgroup(best_incl),
            score=float(best_score),
            theta=float(best_theta),
            parameter=self.scorer.parameter,
            n=int(mask.sum()),
            mask=mask,
            restart_scores=restart_scores[:done],
            n_steps=n_steps,
            monotone=monotone,
            complete=done == n_restarts,
        )


def scan(
    covariates: pd.DataFrame,
    event,
    expected=None,
    *,
    scorer: Scorer | str = "bernoulli",
    direction: str = "positive",
    penalty: float = 1.0,
    n_restarts: int = 50,
    sigma: float | None = None,
    categories: Sequence[Sequence] | None = None,
    min_size: int = 1,
    random_state: int | np.random.Generator | None = None,
    progress: bool | None = False,
) -> ScanResult:
    """Find the highest-scoring subgroup of records given the event and its expectation.

    This is step 3 of CBS on ``D1 = {(X_i, I_i, Î_i)}``; :func:`conditional_bias_scan` builds
    D1 from raw data. Parameters are those of :class:`SubsetScanner` (``min_size`` included)
    plus ``n_restarts`` (the paper's "scan iterations"), ``random_state`` and ``progress`` (a
    bar over the restarts; None shows it only on an interactive terminal).

    Returns
    -------
    ScanResult

    Notes
    -----
    Paper App. A.2, Algorithm 1. Restart 0 starts from all values; later restarts draw
    ``prob ~ U(0, 1)`` and keep each value with that probability, dropping a constraint that
    would leave fewer than 10 records (aif360 convention). Attributes are visited in random
    order until all were scanned without an improvement above 1e-6.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> X = pd.DataFrame({"a": [0, 1] * 50})
    >>> event = np.r_[[1, 0] * 20, [0, 0] * 30].astype(float)
    >>> res = scan(X, event, np.full(100, 0.2), penalty=0.0, n_restarts=3, random_state=0)
    >>> res.subgroup, round(res.score, 3)
    ({'a': [0]}, 5.232)
    """
    scanner = SubsetScanner(
        covariates, event, expected, scorer,
        penalty=penalty, direction=direction, sigma=sigma, categories=categories,
        min_size=min_size,
    )
    return scanner.scan(n_restarts=n_restarts, random_state=random_state, progress=progress)


def coordinate_step(
    covariates: pd.DataFrame,
    event,
    expected,
    subgroup: Mapping[str, Sequence] | None,
    attribute: str,
    *,
    scorer: Scorer | str = "bernoulli",
    direction: str = "positive",
    penalty: float = 1.0,
    sigma: float | None = None,
    categories: Sequence[Sequence] | None = None,
) -> StepResult:
    """One exact coordinate step: the best value subset of ``attribute`` given the others.

    Parameters are those of :class:`SubsetScanner`; ``subgroup`` fixes the other attributes
    (its entry for ``attribute``, if any, is ignored).

    Returns
    -------
    StepResult
        Its score includes the penalty of ``attribute`` only.

    Notes
    -----
    Paper App. A.2 (LTSS, Neill 2012; penalised form of Speakman et al. 2016): per value,
    find the zeros of ``F(S_v | theta) - lambda`` around the maximiser, clip them to the
    scanned direction, score the union of the values active in each interval between
    consecutive zeros, and also score all values at no penalty. At most ``2k - 1`` unions are
    scored for an attribute of arity k, and the result equals brute force over all ``2^k - 1``
    value subsets.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> X = pd.DataFrame({"a": [0, 1, 2, 3] * 25})
    >>> event = (X.a <= 1).astype(float).to_numpy()
    >>> coordinate_step(X, event, np.full(100, 0.5), None, "a", penalty=0.0).values
    [0, 1]
    """
    scanner = SubsetScanner(
        covariates, event, expected, scorer,
        penalty=penalty, direction=direction, sigma=sigma, categories=categories,
    )
    return scanner.step(subgroup, attribute)


def score_subgroup(
    covariates: pd.DataFrame,
    event,
    expected,
    subgroup: Mapping[str, Sequence] | None,
    *,
    scorer: Scorer | str = "bernoulli",
    direction: str = "positive",
    penalty: float = 1.0,
    sigma: float | None = None,
    categories: Sequence[Sequence] | None = None,
) -> tuple[float, float, int]:
    """Penalised score, maximising parameter and size of a fixed subgroup.

    The penalty is ``lambda`` times the number of listed values of constrained attributes.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> X = pd.DataFrame({"a": [0, 1] * 50})
    >>> s, q, n = score_subgroup(X, np.r_[np.ones(70), np.zeros(30)], np.full(100, 0.5), None)
    >>> round(s, 6), round(q, 6), n
    (8.228288, 2.333333, 100)
    """
    scanner = SubsetScanner(
        covariates, event, expected, scorer,
        penalty=penalty, direction=direction, sigma=sigma, categories=categories,
    )
    return scanner.score(subgroup)
