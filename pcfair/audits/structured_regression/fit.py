"""The weighted group-level lasso (Eq. 5) and the choice of its penalty (spec §2.3, §2.5).

The objective ``sum_a (theta_0 + theta . phi^a - Z_a)^2 / sigma_a^2 + lambda ||theta||_1`` is
fitted with scikit-learn's :class:`~sklearn.linear_model.ElasticNet` (``fit_intercept=True``,
``sample_weight`` = normalised inverse variances ``sw_a``), whose objective is

    1/(2 sum sw) * sum_a sw_a (Z_a - mu_a)^2 + alpha * [l1_ratio ||theta||_1 + (1-l1_ratio)/2 ||theta||_2^2].

For a pure lasso (``l1_ratio=1``) this is Eq. 5 with ``lambda = 2 alpha sum(sw) / c`` where
``sw = c / sigma^2_a`` (:func:`eq5_lambda`). ``alpha = 0`` is solved exactly as weighted least
squares (minimum-norm), the limit that reproduces the standard estimates.

The penalty grid is ``alpha = g * alpha_mul`` over the multipliers :data:`GRID_MULTIPLIERS`
with the noise-level scale ``alpha_mul = max_j sqrt(sum_a sw_a^2 sigma_a^2 phi_aj^2) / sum_a sw_a``.
It is chosen by cross-validation over stratified Monte-Carlo 90/10 splits of the *rows*
(:func:`cv_splits`), run here rather than by ``LassoCV`` because every split recomputes the
group-level statistics.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import ElasticNet

from pcfair._random import check_random_state
from pcfair.errors import SpecError


#: the reference implementations' grid, as multiples of ``alpha_mul``
GRID_MULTIPLIERS = (20.0, 10.0, 5.0, 2.0, 1.0, 0.5, 0.2, 0.1, 0.05, 0.02, 0.01, 0.005)
CV_SCHEMES = ("mc90", "kfold")
SELECT_RULES = ("min", "1se")
#: a coefficient counts as selected above this magnitude (rBLPR, spec §3.2)
SELECTED_TOL = 1e-6


def round_rand(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Randomised rounding ``floor(x) + Bernoulli(frac(x))``, so ``E[round_rand(x)] = x``.

    Examples
    --------
    >>> import numpy as np
    >>> round_rand(np.array([2.0, 3.0]), np.random.default_rng(0)).tolist()
    [2, 3]
    """
    x = np.asarray(x, dtype=float)
    lo = np.floor(x)
    return (lo + (rng.random(x.shape) < (x - lo))).astype(np.int64)


def cv_splits(
    codes: np.ndarray,
    n_groups: int,
    *,
    scheme: str = "mc90",
    n_splits: int = 10,
    train_fraction: float = 0.9,
    random_state: int | np.random.Generator | None = 0,
) -> list[np.ndarray]:
    """Stratified training masks over rows, one per split.

    ``"mc90"`` (default): each split independently draws ``round_rand(0.9 n_a)`` training rows
    from every group without replacement (Monte-Carlo CV, each split with its own stream).
    ``"kfold"``: one stratified partition into ``n_splits`` folds; split ``i`` trains on all
    folds but ``i``. Each group's rows are shuffled and dealt round-robin from a random fold,
    so small groups do not all fall into the same fold.

    Parameters
    ----------
    codes : array of int, shape (n_rows,)
        Group number of every row.
    n_groups : int
    scheme : {"mc90", "kfold"}
    n_splits : int, default 10
    train_fraction : float, default 0.9
        Training share for ``"mc90"``.
    random_state : int, Generator or None

    Returns
    -------
    list of bool arrays of shape (n_rows,)

    Examples
    --------
    >>> import numpy as np
    >>> masks = cv_splits(np.array([0] * 10 + [1] * 20), 2, n_splits=3)
    >>> [int(m.sum()) for m in masks]
    [27, 27, 27]
    """
    if scheme not in CV_SCHEMES:
        raise SpecError(f"unknown cv {scheme!r}: use one of {', '.join(CV_SCHEMES)}")
    if n_splits < 2:
        raise SpecError(f"n_splits must be at least 2, got {n_splits}")
    rng = check_random_state(random_state)
    members = [np.flatnonzero(codes == g) for g in range(n_groups)]
    n_rows = codes.shape[0]
    if scheme == "mc90":
        masks = []
        for split_rng in child_generators(rng, n_splits):
            mask = np.zeros(n_rows, dtype=bool)
            sizes = np.array([m.size for m in members], dtype=float)
            n_train = round_rand(train_fraction * sizes, split_rng)
            for rows, k in zip(members, n_train):
                if k > 0:
                    mask[split_rng.choice(rows, size=int(k), replace=False)] = True
            masks.append(mask)
        return masks
    fold = np.empty(n_rows, dtype=np.int64)
    for rows in members:
        if rows.size:
            perm = rng.permutation(rows)
            fold[perm] = (np.arange(rows.size) + rng.integers(n_splits)) % n_splits
    return [fold != i for i in range(n_splits)]


def alpha_multiplier(phi: np.ndarray, sw: np.ndarray, sigma2: np.ndarray) -> float:
    """Noise-level scale of the penalty grid, ``max_j sqrt(sum sw^2 sigma^2 phi_j^2) / sum sw``."""
    if phi.shape[1] == 0:
        return 0.0
    scale = np.sqrt(((sw**2 * sigma2)[:, None] * phi**2).sum(axis=0)).max()
    return float(scale / sw.sum())


def eq5_lambda(alpha: float | np.ndarray, sw: np.ndarray, inv_var: np.ndarray) -> float | np.ndarray:
    """Translate sklearn's ``alpha`` to Eq. 5's ``lambda`` for weights ``sw = c * inv_var``."""
    c = float(np.mean(sw / inv_var))
    return 2.0 * np.asarray(alpha) * float(sw.sum()) / c


def wls(phi: np.ndarray, z: np.ndarray, sw: np.ndarray) -> tuple[float, np.ndarray]:
    """Weighted least squares with an intercept (minimum-norm if rank deficient)."""
    root = np.sqrt(sw)
    design = np.column_stack([np.ones(len(z)), phi]) * root[:, None]
    beta = np.linalg.lstsq(design, z * root, rcond=None)[0]
    return float(beta[0]), beta[1:]


class LassoSolver:
    """Fits the weighted lasso / elastic net of Eq. 5 with sklearn, warm-starting along a grid.

    Parameters
    ----------
    l1_ratio : float, default 1.0
        1.0 is the paper's pure lasso; 0.95 matches the reference implementations.
    tol, max_iter : float, int
        Passed to :class:`sklearn.linear_model.ElasticNet` (coordinate descent, cyclic).
    """

    def __init__(self, l1_ratio: float = 1.0, tol: float = 1e-4, max_iter: int = 10_000):
        if not 0.0 < l1_ratio <= 1.0:
            raise SpecError(f"l1_ratio must be in (0, 1], got {l1_ratio}")
        self.l1_ratio = float(l1_ratio)
        self.tol = float(tol)
        self.max_iter = int(max_iter)

    def path(
        self,
        phi: np.ndarray,
        z: np.ndarray,
        sw: np.ndarray,
        alphas: Sequence[float],
        init: np.ndarray | None = None,
    ):
        """Intercepts (L,) and coefficients (L, d) for every alpha (fitted largest first).

        Each fit warm-starts from the previous one (the first from ``init`` if given); the
        solution does not depend on the start, only the number of iterations does.
        """
        alphas = np.asarray(alphas, dtype=float)
        intercepts = np.empty(alphas.size)
        coefs = np.empty((alphas.size, phi.shape[1]))
        model = ElasticNet(
            alpha=1.0,
            l1_ratio=self.l1_ratio,
            fit_intercept=True,
            tol=self.tol,
            max_iter=self.max_iter,
            warm_start=True,
            selection="cyclic",
        )
        if init is not None:
            model.coef_ = np.array(init, dtype=float)
        phi_f = np.asfortranarray(phi, dtype=float)
        for i in np.argsort(-alphas, kind="stable"):
            if alphas[i] <= 0 or phi.shape[1] == 0:
                intercepts[i], coefs[i] = wls(phi, z, sw)
                continue
            model.set_params(alpha=float(alphas[i]))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                model.fit(phi_f, z, sample_weight=sw)
            intercepts[i], coefs[i] = float(model.intercept_), model.coef_.copy()
        return intercepts, coefs

    def fit(
        self, phi: np.ndarray, z: np.ndarray, sw: np.ndarray, alpha: float, init: np.ndarray | None = None
    ) -> tuple[float, np.ndarray]:
        """Intercept and coefficients at one alpha (warm-started from ``init`` if given)."""
        b0, coef = self.path(phi, z, sw, [alpha], init=init)
        return float(b0[0]), coef[0]


def select_alpha(alphas: np.ndarray, losses: np.ndarray, rule: str = "min") -> int:
    """Index of the chosen alpha from CV losses of shape (n_splits, n_alphas).

    ``"min"``: argmin of the mean loss (ties go to the larger alpha). ``"1se"``: the largest
    alpha whose mean loss is below ``min over alphas of (mean + SE)``, ``SE = sd / sqrt(n_splits)``.

    Examples
    --------
    >>> import numpy as np
    >>> select_alpha(np.array([2.0, 1.0]), np.array([[3.0, 1.0], [3.0, 1.0]]))
    1
    """
    if rule not in SELECT_RULES:
        raise SpecError(f"unknown select {rule!r}: use one of {', '.join(SELECT_RULES)}")
    mean = losses.mean(axis=0)
    by_size = np.argsort(-alphas, kind="stable")
    if rule == "min":
        return int(by_size[np.argmin(mean[by_size])])
    se = losses.std(axis=0, ddof=1) / np.sqrt(losses.shape[0]) if losses.shape[0] > 1 else 0.0 * mean
    bound = np.min(mean + se)
    ok = [i for i in by_size if mean[i] < bound]
    return int(ok[0]) if ok else int(by_size[np.argmin(mean[by_size])])


def child_generators(rng: np.random.Generator, k: int) -> list[np.random.Generator]:
    """``k`` independent generators derived from ``rng`` (advances ``rng`` by one draw), for the
    bootstrap replicates and the cross-validation splits."""
    seeds = rng.integers(0, 2**63 - 1, size=k, dtype=np.int64)
    return [np.random.default_rng(int(s)) for s in seeds]
