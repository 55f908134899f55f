"""Log masses of evidence in a decision-rooted tree model, the kernel the compiled tree search
(:mod:`pcfair.patterns._tree_search_kernels`) and its plateau solver
(:mod:`pcfair.patterns._plateau_kernels`) score patterns with."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from pcfair.patterns._search_kernels import logaddexp, sigmoid, sigmoid_shift

#: A message below this is rescaled (its log kept aside), so long products never underflow.
_TINY = 1e-150
#: The least smallest probability of a model (:func:`linear_is_exact`) for which the linear
#: pass of :func:`log_masses` keeps every positive quantity in the normal range of doubles.
SAFE_PROBABILITY = 1e-300


def linear_is_exact(log_smallest: float) -> bool:
    """Whether :func:`log_masses`' linear pass is exact (to relative rounding) on a tree model
    whose smallest positive probability of a complete assignment is ``exp(log_smallest)``.

    Theorem. If that probability ``L`` is at least :data:`SAFE_PROBABILITY`, every positive
    quantity the linear pass forms that reaches the result lies in the normal range of
    doubles; a quantity is 0 in the pass exactly when it is 0 in exact arithmetic.

    Proof. Call a message entry ``m_δ(v, j)`` relevant when ``P(pa(v) = j, δ) > 0``; an
    irrelevant one only ever enters terms of irrelevant entries (its parent value is
    reached with probability 0), and at the decision every positive prior is relevant, so
    the result is made of relevant entries only. A relevant entry is the conditional
    ``P(e_sub(v) | pa(v) = j, δ) ≥ P(e_sub(v), pa(v) = j, δ)``, the mass of an event that,
    where positive, holds a positive complete assignment: at least ``L``. Every factor of a
    term ``θ_δ(k | j) Π_c m_δ(c, k)`` is at most 1 (a conditional, or a rescaled message
    whose largest entry is 1), so each partial product is at least the whole term, which is
    the conditional ``P(v = k, e_below | pa = j, δ)`` (times the rescaling factors, each at
    most 1, which only raise it): at least ``L`` where positive. Sums of non-negative terms
    are at least their largest; the roots' product is ``P(e | δ)`` over the factors kept
    aside, at least ``L``. So nothing positive falls below ``L ≥ 1e-300 > 2.3e-308``. ∎
    """
    return log_smallest >= math.log(SAFE_PROBABILITY)


@njit(cache=True, inline="always")
def log_masses(obs, model, msg, has_ev, out, linear) -> None:
    """``out[0] = log P(d, e)``, ``out[1] = log P(¬d, e)`` for the evidence ``obs``, exact at any
    magnitude (``-inf`` exactly where the evidence has probability zero in exact arithmetic).

    ``model`` is the tree model (a :class:`~pcfair.patterns._tree_records.TreeModel`);
    ``msg`` (a row per slot, a column per decision value), ``has_ev`` (per variable) are
    scratch; ``linear`` whether :func:`linear_is_exact` holds for the model (a literal: the
    kernels are compiled for each value, so the hot path carries no branch). The upward pass
    of a tree:
    ``m_δ(v, j) = Σ_k θ_δ(k | j) [k allowed] Π_c m_δ(c, k)`` in post order, and
    ``P(δ, e) = P(δ) Π_roots m_δ(r)``. A subtree with no evidence has ``m = 1`` (``θ`` sums
    to one) and is skipped (``has_ev``).

    Where ``linear`` holds the pass runs in linear space: a message vector whose largest
    entry falls below ``_TINY`` is divided by it and its log added to the result, which
    rescales every product it enters by the same factor (exact up to relative rounding, by
    :func:`linear_is_exact`'s theorem). Otherwise every message is a log
    (:func:`_log_space_masses`): slower, and exact where linear doubles are not.
    """
    if linear:
        _linear_masses(obs, _pass_tables(model, model.th1, model.th0), msg, has_ev, out)
    else:
        _log_space_masses(obs, _pass_tables(model, model.lt1, model.lt0), msg, has_ev, out)


@njit(cache=True, inline="always")
def _pass_tables(model, t1, t0):
    """The arrays a pass of :func:`log_masses` reads, and only those: ``post, par, card, kp,
    toff`` of ``model``, the tables ``t1``/``t0`` of ``θ_d``/``θ_¬d`` (linear, or logs), then
    ``ch_ptr, ch_idx, moff, log_prior``; built in the caller (measured: the whole model
    passed, three arrays more, made the passes 5–70 % slower)."""
    return (model.post, model.par, model.card, model.kp, model.toff, t1, t0, model.ch_ptr,
            model.ch_idx, model.moff, model.log_prior)


@njit(cache=True)
def _linear_masses(obs, tables, msg, has_ev, out) -> None:
    """:func:`log_masses` by linear messages (exact where :func:`linear_is_exact` holds), on
    the linear tables (:func:`_pass_tables`). A function of its own that calls none: the
    search's hot path, which numba compiles best so (measured: a call of the log-space pass
    inside it cost a third of the search's time)."""
    post, par, card, kp, toff, th1, th0, ch_ptr, ch_idx, moff, log_prior = tables
    s1 = 0.0
    s0 = 0.0
    for i in range(post.shape[0]):
        v = post[i]
        o = obs[v]
        ev = o != -1
        for e in range(ch_ptr[v], ch_ptr[v + 1]):
            if has_ev[ch_idx[e]]:
                ev = True
        has_ev[v] = ev
        if not ev:
            continue
        kv = card[v]
        mx1 = 0.0
        mx0 = 0.0
        for j in range(kp[v]):
            base = toff[v] + j * kv
            acc1 = 0.0
            acc0 = 0.0
            for k in range(kv):
                if o >= 0:
                    if k != o:
                        continue
                elif o <= -2 and k == -2 - o:
                    continue
                f1 = th1[base + k]
                f0 = th0[base + k]
                for e in range(ch_ptr[v], ch_ptr[v + 1]):
                    c = ch_idx[e]
                    if has_ev[c]:
                        f1 *= msg[moff[c] + k, 0]
                        f0 *= msg[moff[c] + k, 1]
                acc1 += f1
                acc0 += f0
            msg[moff[v] + j, 0] = acc1
            msg[moff[v] + j, 1] = acc0
            mx1 = max(mx1, acc1)
            mx0 = max(mx0, acc0)
        if 0.0 < mx1 < _TINY:
            for j in range(kp[v]):
                msg[moff[v] + j, 0] /= mx1
            s1 += math.log(mx1)
        if 0.0 < mx0 < _TINY:
            for j in range(kp[v]):
                msg[moff[v] + j, 1] /= mx0
            s0 += math.log(mx0)
    r1 = 1.0
    r0 = 1.0
    for i in range(post.shape[0]):
        v = post[i]
        if par[v] < 0 and has_ev[v]:
            r1 *= msg[moff[v], 0]
            r0 *= msg[moff[v], 1]
    out[0] = log_prior[0] + s1 + (math.log(r1) if r1 > 0 else -np.inf)
    out[1] = log_prior[1] + s0 + (math.log(r0) if r0 > 0 else -np.inf)


@njit(cache=True)
def _log_space_masses(obs, tables, msg, has_ev, out) -> None:
    """:func:`log_masses` with every message a log (``msg`` holds ``log m_δ(v, j)``), on the
    log tables (:func:`_pass_tables`): sums by log-sum-exp, products by sums; exact at any
    magnitude."""
    post, par, card, kp, toff, lt1, lt0, ch_ptr, ch_idx, moff, log_prior = tables
    for i in range(post.shape[0]):
        v = post[i]
        o = obs[v]
        ev = o != -1
        for e in range(ch_ptr[v], ch_ptr[v + 1]):
            if has_ev[ch_idx[e]]:
                ev = True
        has_ev[v] = ev
        if not ev:
            continue
        kv = card[v]
        for j in range(kp[v]):
            base = toff[v] + j * kv
            acc1 = -np.inf
            acc0 = -np.inf
            for k in range(kv):
                if o >= 0:
                    if k != o:
                        continue
                elif o <= -2 and k == -2 - o:
                    continue
                f1 = lt1[base + k]
                f0 = lt0[base + k]
                for e in range(ch_ptr[v], ch_ptr[v + 1]):
                    c = ch_idx[e]
                    if has_ev[c]:
                        f1 += msg[moff[c] + k, 0]
                        f0 += msg[moff[c] + k, 1]
                acc1 = logaddexp(acc1, f1)
                acc0 = logaddexp(acc0, f0)
            msg[moff[v] + j, 0] = acc1
            msg[moff[v] + j, 1] = acc0
    r1 = log_prior[0]
    r0 = log_prior[1]
    for i in range(post.shape[0]):
        v = post[i]
        if par[v] < 0 and has_ev[v]:
            r1 += msg[moff[v], 0]
            r0 += msg[moff[v], 1]
    out[0] = r1
    out[1] = r0


@njit(cache=True, inline="always")
def shift_of_masses(a1, a0, b1, b0):
    """``P(d | B) − P(d | A)`` from the log masses of the two evidences (NaN where ``B`` has
    probability zero)."""
    if b1 == -np.inf and b0 == -np.inf:
        return np.nan
    t = a1 - a0
    u = b1 - b0
    if math.isfinite(t) and math.isfinite(u):
        return sigmoid_shift(t, u - t)
    return sigmoid(u) - sigmoid(t)
