"""Numba kernels of the Conditional Bias Scan: score functions, their maximisers and roots, and the
linear-time coordinate step of the fast subset scan.

Kernels take flat numpy arrays and scalars only and do no validation; the readable Python API in
:mod:`pcfair.audits.cbs.scoring` and :mod:`pcfair.audits.cbs.search` validates and calls them.
With ``NUMBA_DISABLE_JIT=1`` the same functions run as plain Python and give the same numbers.

Conventions
-----------
* ``codes``: int64 array of shape (n_rows, n_attributes), value codes ``0..arity-1``.
* ``incl``: bool array of shape (n_attributes, max_arity): ``incl[j, v]`` is True when value ``v``
  of attribute ``j`` is in the current subgroup (an unconstrained attribute has all True).
* ``sign``: +1 scans the positive direction (q > 1 or mu > 0), -1 the negative one.
* Bernoulli kernels take the event ``ev`` (0/1) and expectation ``ex`` (Î in (0,1)); the free
  parameter is the odds multiplier q, bounded to [Q_MIN, Q_MAX] (aif360 convention). The
  score functions take distinct expectations ``p`` with multiplicities ``w``: the subgroup
  kernels expect rows sorted by Î and merge equal values, which makes them several times
  faster when Î comes from a model on discrete covariates.
* Gaussian kernels take the logit difference ``ev`` (Δ) and a scale ``sigma``; the free
  parameter is the mean shift mu.
"""

from __future__ import annotations

import numpy as np
from numba import njit

Q_MIN = 1e-6
Q_MAX = 1e6
_T_MIN = float(np.log(Q_MIN))
_T_MAX = float(np.log(Q_MAX))
_T_TOL = 1e-13
_MAX_NEWTON = 200


# --------------------------------------------------------------------------------------------
# Bernoulli score:  F(S | q) = (sum I) log q - sum log(1 - Î + q Î)
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def bernoulli_llr(ysum, p, w, q):
    """F(S | q) for expectations ``p`` with multiplicities ``w`` and event sum ``ysum``."""
    qm1 = q - 1.0
    acc = 0.0
    for i in range(p.shape[0]):
        acc += w[i] * np.log1p(qm1 * p[i])
    return ysum * np.log(q) - acc


@njit(cache=True)
def _bernoulli_slope(ysum, p, w, q):
    """Return (q dF/dq, d/dt of that) at q = exp(t); q dF/dq is decreasing in t."""
    g = ysum
    dg = 0.0
    for i in range(p.shape[0]):
        den = 1.0 - p[i] + q * p[i]
        r = w[i] * q * p[i] / den
        g -= r
        dg -= r * (1.0 - p[i]) / den
    return g, dg


@njit(cache=True)
def bernoulli_mle(ysum, p, w):
    """Unconstrained maximiser of F(S | q) over [Q_MIN, Q_MAX] (safeguarded Newton in log q)."""
    if p.shape[0] == 0:
        return 1.0
    lo = _T_MIN
    hi = _T_MAX
    g_lo, _ = _bernoulli_slope(ysum, p, w, Q_MIN)
    if g_lo <= 0.0:
        return Q_MIN
    g_hi, _ = _bernoulli_slope(ysum, p, w, Q_MAX)
    if g_hi >= 0.0:
        return Q_MAX
    t = 0.0
    for _ in range(_MAX_NEWTON):
        g, dg = _bernoulli_slope(ysum, p, w, np.exp(t))
        if g == 0.0:
            break
        if g > 0.0:
            lo = t
        else:
            hi = t
        if dg < 0.0:
            tn = t - g / dg
        else:
            tn = 0.5 * (lo + hi)
        if not (lo < tn < hi):
            tn = 0.5 * (lo + hi)
        if abs(tn - t) < _T_TOL:
            t = tn
            break
        t = tn
    return np.exp(t)


@njit(cache=True)
def bernoulli_constrained_mle(ysum, p, w, sign):
    """Maximiser of F(S | q) with q restricted to the scanned direction (q >= 1 or q <= 1)."""
    q = bernoulli_mle(ysum, p, w)
    if sign > 0 and q < 1.0:
        return 1.0
    if sign < 0 and q > 1.0:
        return 1.0
    return q


@njit(cache=True)
def _bernoulli_llr_slope(ysum, p, w, q):
    """F(S | q) and q dF/dq in one pass."""
    qm1 = q - 1.0
    acc = 0.0
    g = ysum
    for i in range(p.shape[0]):
        den = 1.0 + qm1 * p[i]
        acc += w[i] * np.log(den)
        g -= w[i] * q * p[i] / den
    return ysum * np.log(q) - acc, g


@njit(cache=True)
def _bernoulli_root(ysum, p, w, lam, t_in, t_out):
    """Root of F(S | e^t) - lam between t_in (value > 0) and t_out (value < 0).

    Safeguarded Newton in t = log q, started where the quadratic expansion of F around the
    maximum t_in crosses lam (falling back to t_out when that lies outside the bracket).
    """
    lo = min(t_in, t_out)
    hi = max(t_in, t_out)
    right = t_out > t_in  # the root right of the maximum, where the function decreases
    t = t_out
    h_in = bernoulli_llr(ysum, p, w, np.exp(t_in)) - lam
    _, curv = _bernoulli_slope(ysum, p, w, np.exp(t_in))
    if curv < 0.0 and h_in > 0.0:
        d = np.sqrt(2.0 * h_in / -curv)
        t0 = t_in + d if right else t_in - d
        if lo < t0 < hi:
            t = t0
    for _ in range(_MAX_NEWTON):
        h, g = _bernoulli_llr_slope(ysum, p, w, np.exp(t))
        h -= lam  # g = dh/dt
        # keep the bracket [lo, hi] around the root
        if right:  # right root: h > 0 left of it
            if h > 0.0:
                lo = t
            else:
                hi = t
        else:  # left root: h > 0 right of it
            if h > 0.0:
                hi = t
            else:
                lo = t
        if g != 0.0:
            tn = t - h / g
        else:
            tn = 0.5 * (lo + hi)
        if not (lo <= tn <= hi):
            tn = 0.5 * (lo + hi)
        if abs(tn - t) < _T_TOL or hi - lo < _T_TOL:
            t = tn
            break
        t = tn
    return np.exp(t)


@njit(cache=True)
def bernoulli_zeros(ysum, p, w, lam, q_hat):
    """Zeros q_min < q_hat < q_max of F(S | q) - lam; the caller ensures F(q_hat) - lam > 0.

    A zero beyond the bounds is reported as the bound (Q_MIN or Q_MAX).
    """
    t_hat = np.log(q_hat)
    if bernoulli_llr(ysum, p, w, Q_MIN) - lam >= 0.0:
        q_lo = Q_MIN
    else:
        q_lo = _bernoulli_root(ysum, p, w, lam, t_hat, _T_MIN)
    if bernoulli_llr(ysum, p, w, Q_MAX) - lam >= 0.0:
        q_hi = Q_MAX
    else:
        q_hi = _bernoulli_root(ysum, p, w, lam, t_hat, _T_MAX)
    return q_lo, q_hi


# --------------------------------------------------------------------------------------------
# Gaussian mean-shift score on logit differences: F(S | mu) = (2 mu sum Δ - |S| mu^2) / (2 sigma^2)
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def gaussian_llr(dsum, n, sigma, mu):
    """F(S | mu) from the sum of Δ over S and |S|."""
    return (2.0 * mu * dsum - n * mu * mu) / (2.0 * sigma * sigma)


@njit(cache=True)
def gaussian_constrained_mle(dsum, n, sign):
    """Maximiser mu = sum Δ / |S|, set to 0 when on the wrong side of 0."""
    if n == 0:
        return 0.0
    mu = dsum / n
    if sign * mu < 0.0:
        return 0.0
    return mu


@njit(cache=True)
def gaussian_zeros(dsum, n, sigma, lam):
    """Zeros of F(S | mu) - lam in closed form; the caller ensures they exist."""
    disc = dsum * dsum - 2.0 * n * sigma * sigma * lam
    if disc < 0.0:
        disc = 0.0
    root = np.sqrt(disc)
    return (dsum - root) / n, (dsum + root) / n


# --------------------------------------------------------------------------------------------
# Rows of a subgroup
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def subgroup_rows(codes, incl, skip):
    """Rows inside the subgroup ``incl``, ignoring attribute ``skip`` (-1: none)."""
    n, m = codes.shape
    out = np.empty(n, dtype=np.bool_)
    for i in range(n):
        ok = True
        for a in range(m):
            if a != skip and not incl[a, codes[i, a]]:
                ok = False
                break
        out[i] = ok
    return out


@njit(cache=True)
def _merge_sorted(p, out_p, out_w):
    """Merge equal neighbours of sorted ``p`` into (value, count) pairs; return their number."""
    k = 0
    for i in range(p.shape[0]):
        if k > 0 and p[i] == out_p[k - 1]:
            out_w[k - 1] += 1.0
        else:
            out_p[k] = p[i]
            out_w[k] = 1.0
            k += 1
    return k


@njit(cache=True)
def bernoulli_subset_score(codes, ev, ex, incl, sign, total_penalty):
    """Penalised score, constrained q̂ and size of the subgroup ``incl`` (Bernoulli).

    Rows must be sorted by ``ex`` (equal expectations are merged).
    """
    rows = subgroup_rows(codes, incl, -1)
    cnt = 0
    for i in range(rows.shape[0]):
        if rows[i]:
            cnt += 1
    p = np.empty(cnt)
    ysum = 0.0
    k = 0
    for i in range(rows.shape[0]):
        if rows[i]:
            p[k] = ex[i]
            ysum += ev[i]
            k += 1
    pu = np.empty(cnt)
    wu = np.empty(cnt)
    nu = _merge_sorted(p, pu, wu)
    q = bernoulli_constrained_mle(ysum, pu[:nu], wu[:nu], sign)
    return bernoulli_llr(ysum, pu[:nu], wu[:nu], q) - total_penalty, q, cnt


@njit(cache=True)
def gaussian_subset_score(codes, ev, incl, sign, sigma, total_penalty):
    """Penalised score, constrained mu and size of the subgroup ``incl`` (Gaussian)."""
    rows = subgroup_rows(codes, incl, -1)
    cnt = 0
    dsum = 0.0
    for i in range(rows.shape[0]):
        if rows[i]:
            cnt += 1
            dsum += ev[i]
    mu = gaussian_constrained_mle(dsum, cnt, sign)
    return gaussian_llr(dsum, cnt, sigma, mu) - total_penalty, mu, cnt


# --------------------------------------------------------------------------------------------
# The coordinate step (paper App. A.2, Algorithm 1 lines 15-30)
# --------------------------------------------------------------------------------------------


@njit(cache=True)
def _sorted_unique(x, n):
    y = np.sort(x[:n])
    out = np.empty(n)
    k = 0
    for i in range(n):
        if k == 0 or y[i] != out[k - 1]:
            out[k] = y[i]
            k += 1
    return out[:k]


@njit(cache=True)
def bernoulli_step(codes, ev, ex, incl, j, arity, sign, lam, min_size):
    """Best value subset of attribute ``j`` with the other attributes held at ``incl``.

    Rows must be sorted by ``ex``. Returns ``(take_all, chosen, score, q)``: ``take_all`` is
    True when the best option is all values of ``j`` (no penalty for ``j``); otherwise
    ``chosen`` (bool, length ``arity``) holds the chosen values and ``score`` includes the
    penalty ``lam`` per chosen value. Penalties of the other attributes are not included.
    Options holding fewer than ``min_size`` rows are left out; when none is left the result
    is ``(True, all values, -inf, 1)``.
    """
    n, m = codes.shape
    cnt = np.zeros(arity, dtype=np.int64)
    ysums = np.zeros(arity)
    sel = subgroup_rows(codes, incl, j)
    ns = 0
    for i in range(n):
        if sel[i]:
            v = codes[i, j]
            cnt[v] += 1
            ysums[v] += ev[i]
            ns += 1
    off = np.zeros(arity + 1, dtype=np.int64)
    for v in range(arity):
        off[v + 1] = off[v] + cnt[v]
    pos = off[:arity].copy()
    p = np.empty(ns)
    for i in range(n):  # rows are sorted by ex, so each value's slice is sorted too
        if sel[i]:
            v = codes[i, j]
            p[pos[v]] = ex[i]
            pos[v] += 1
    # distinct expectations and multiplicities per value: slices [uoff[v], uoff[v] + ucnt[v])
    pu = np.empty(ns)
    wu = np.empty(ns)
    ucnt = np.zeros(arity, dtype=np.int64)
    for v in range(arity):
        ucnt[v] = _merge_sorted(p[off[v]:off[v + 1]], pu[off[v]:off[v + 1]], wu[off[v]:off[v + 1]])

    exist = np.zeros(arity, dtype=np.bool_)
    q_lo = np.zeros(arity)
    q_hi = np.zeros(arity)
    thresholds = np.empty(2 * arity)
    nt = 0
    for v in range(arity):
        if cnt[v] == 0:
            continue
        pv = pu[off[v]:off[v] + ucnt[v]]
        wv = wu[off[v]:off[v] + ucnt[v]]
        q = bernoulli_constrained_mle(ysums[v], pv, wv, sign)
        if bernoulli_llr(ysums[v], pv, wv, q) - lam <= 0.0:
            continue
        lo, hi = bernoulli_zeros(ysums[v], pv, wv, lam, q)
        if sign > 0:
            if hi < 1.0:
                continue
            lo = max(lo, 1.0)
        else:
            if lo > 1.0:
                continue
            hi = min(hi, 1.0)
        exist[v] = True
        q_lo[v] = lo
        q_hi[v] = hi
        thresholds[nt] = lo
        thresholds[nt + 1] = hi
        nt += 2

    best_score = -np.inf
    best_q = 1.0
    best_chosen = np.zeros(arity, dtype=np.bool_)
    bp = np.empty(ns)
    bw = np.empty(ns)
    if nt > 0:
        ts = _sorted_unique(thresholds, nt)
        for k in range(ts.shape[0] - 1):
            mid = 0.5 * (ts[k] + ts[k + 1])
            chosen = np.zeros(arity, dtype=np.bool_)
            nchosen = 0
            size = 0
            ysum = 0.0
            nb = 0
            for v in range(arity):
                if exist[v] and q_lo[v] < mid and q_hi[v] > mid:
                    chosen[v] = True
                    nchosen += 1
                    size += cnt[v]
                    ysum += ysums[v]
                    for r in range(off[v], off[v] + ucnt[v]):
                        bp[nb] = pu[r]
                        bw[nb] = wu[r]
                        nb += 1
            if nchosen == 0 or size < min_size:
                continue
            q = bernoulli_constrained_mle(ysum, bp[:nb], bw[:nb], sign)
            s = bernoulli_llr(ysum, bp[:nb], bw[:nb], q) - lam * nchosen
            if s > best_score:
                best_score = s
                best_q = q
                best_chosen = chosen

    # all values of j: every distinct expectation of every value
    if ns < min_size:  # then no option is large enough
        return True, np.ones(arity, dtype=np.bool_), -np.inf, 1.0
    ysum_all = 0.0
    nb = 0
    for v in range(arity):
        ysum_all += ysums[v]
        for r in range(off[v], off[v] + ucnt[v]):
            bp[nb] = pu[r]
            bw[nb] = wu[r]
            nb += 1
    q_all = bernoulli_constrained_mle(ysum_all, bp[:nb], bw[:nb], sign)
    s_all = bernoulli_llr(ysum_all, bp[:nb], bw[:nb], q_all)
    if s_all >= best_score:
        return True, np.ones(arity, dtype=np.bool_), s_all, q_all
    return False, best_chosen, best_score, best_q


@njit(cache=True)
def gaussian_step(codes, ev, incl, j, arity, sign, sigma, lam, min_size):
    """Gaussian counterpart of :func:`bernoulli_step` (``ev`` holds Δ); returns mu."""
    n, m = codes.shape
    cnt = np.zeros(arity, dtype=np.int64)
    dsums = np.zeros(arity)
    sel = subgroup_rows(codes, incl, j)
    for i in range(n):
        if sel[i]:
            v = codes[i, j]
            cnt[v] += 1
            dsums[v] += ev[i]

    exist = np.zeros(arity, dtype=np.bool_)
    mu_lo = np.zeros(arity)
    mu_hi = np.zeros(arity)
    thresholds = np.empty(2 * arity)
    nt = 0
    for v in range(arity):
        if cnt[v] == 0:
            continue
        mu = gaussian_constrained_mle(dsums[v], cnt[v], sign)
        if gaussian_llr(dsums[v], cnt[v], sigma, mu) - lam <= 0.0:
            continue
        lo, hi = gaussian_zeros(dsums[v], cnt[v], sigma, lam)
        if sign > 0:
            if hi < 0.0:
                continue
            lo = max(lo, 0.0)
        else:
            if lo > 0.0:
                continue
            hi = min(hi, 0.0)
        exist[v] = True
        mu_lo[v] = lo
        mu_hi[v] = hi
        thresholds[nt] = lo
        thresholds[nt + 1] = hi
        nt += 2

    best_score = -np.inf
    best_mu = 0.0
    best_chosen = np.zeros(arity, dtype=np.bool_)
    if nt > 0:
        ts = _sorted_unique(thresholds, nt)
        for k in range(ts.shape[0] - 1):
            mid = 0.5 * (ts[k] + ts[k + 1])
            chosen = np.zeros(arity, dtype=np.bool_)
            nchosen = 0
            dsum = 0.0
            nn = 0
            for v in range(arity):
                if exist[v] and mu_lo[v] < mid and mu_hi[v] > mid:
                    chosen[v] = True
                    nchosen += 1
                    dsum += dsums[v]
                    nn += cnt[v]
            if nchosen == 0 or nn < min_size:
                continue
            mu = gaussian_constrained_mle(dsum, nn, sign)
            s = gaussian_llr(dsum, nn, sigma, mu) - lam * nchosen
            if s > best_score:
                best_score = s
                best_mu = mu
                best_chosen = chosen

    dsum_all = 0.0
    n_all = 0
    for v in range(arity):
        dsum_all += dsums[v]
        n_all += cnt[v]
    if n_all < min_size:  # then no option is large enough
        return True, np.ones(arity, dtype=np.bool_), -np.inf, 0.0
    mu_all = gaussian_constrained_mle(dsum_all, n_all, sign)
    s_all = gaussian_llr(dsum_all, n_all, sigma, mu_all)
    if s_all >= best_score:
        return True, np.ones(arity, dtype=np.bool_), s_all, mu_all
    return False, best_chosen, best_score, best_mu
