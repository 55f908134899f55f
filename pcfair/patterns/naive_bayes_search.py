"""Branch and bound at compiled speed for circuits that are naive Bayes in the decision.

:func:`nb_search` answers what :func:`pcfair.patterns.search.search` answers (modes ``"all"``,
``"first"`` and ``"topk"`` by either ranking; same :class:`~pcfair.patterns.search.SearchResult`,
same nodes visited, pruned and scored), walking the same tree in the same order with the same
bounds, but as an explicit-stack loop over flat arrays in one compiled kernel
(:mod:`pcfair.patterns._naive_bayes_kernels`), with no per-node Python.

For ``P(D) Π_z P(z | D)`` every quantity of a search node is incremental. With the log-odds
weights ``w[v][k] = log P(v=k | d) − log P(v=k | ¬d)`` and ``prior = logit P(d)``:

- ``t = prior + Σ_y w = logit P(d | y)`` and ``s = Σ_x w``, so ``logit P(d | x, y) = t + s`` and
  ``Δ = σ(t + s) − σ(t)``, computed as ``sinh(s/2) / (2 cosh((t+s)/2) cosh(t/2))`` (no
  cancellation between the two conditionals);
- ``P(x, y) = P(d) Π P(v | d) + P(¬d) Π P(v | ¬d)`` from two running log-products, one per
  decision value, of the per-variable log-conditionals (read off the circuit by marginal
  queries, :class:`NaiveBayesTables`);
- the bound of a node is :meth:`NaiveBayesBound.bound` of the box ``NaiveBayesBound.ranges``
  gives, in O(1) from suffix sums over the order of ``min(0, min_k w)`` and ``max(0, max_k w)``
  (split into sensitive and all variables);
- for top-k by divergence the prune is :func:`pcfair.patterns.search.divergence_bound` (sound;
  proved there) with the ``r`` range of :meth:`NaiveBayesBound.rest_range` (``Σ_x min w`` and
  ``Σ_x max w`` kept incrementally), and a recorded pattern's divergence is
  :func:`pcfair.patterns.scores.divergence_scores` of its masses ``a1 = P(d, x, y)``,
  ``a0 = P(¬d, x, y)``, ``m1 = P(d, y, ¬x)``, ``m0 = P(¬d, y, ¬x)``, the last two summed over the
  disjoint events "the earlier ``x`` variables hold and this one takes another value" (as
  :func:`pcfair.patterns.scores.divergence_masses` queries them), so a mass is never a
  difference.

Variables are decided in the given order, sensitive ones first: into ``x`` with each value
(sensitive only), into ``y`` with each value, or excluded; until ``x`` is non-empty only
sensitive variables can go into ``x``, and a node with empty ``x`` and no sensitive variable
left is a leaf. Top-k visits children by decreasing score (best first), and keeps its ``k``
best in an array heap ordered as :mod:`heapq` orders ``search``'s. The bound is inflated by a
relative 1e-9 before it is compared, as in ``search``: every mode visits, prunes and bounds
exactly ``search``'s nodes (top-k up to the order in which rounding-level ties are met).
A ``deadline`` (a :func:`time.time` value) is checked between chunks of nodes (a few
milliseconds each); a run it stops is marked incomplete.

Examples
--------
>>> from pcfair.circuit import CircuitBuilder
>>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1], "z": [0, 1]})
>>> def given(ps, pz):
...     return b.product(b.categorical("s", ps), b.categorical("z", pz))
>>> pc = b.build(b.decision([(b.indicator("d", 1), given([.2, .8], [.5, .5]), .5),
...                          (b.indicator("d", 0), given([.6, .4], [.3, .7]), .5)]))
>>> nb = NaiveBayesTables.from_circuit(pc, 0, 1)
>>> res = nb_search(nb, [2, 2, 2], 0, 1, [1], SearchQuery(0.1, mode="topk", k=2))
>>> [(p.x, p.y, round(p.score, 4)) for p in res.patterns]
[({1: 0}, {2: 0}, -0.2679), ({1: 0}, {}, -0.25)]
"""

from __future__ import annotations

import time

import numpy as np

from pcfair.circuit.circuit import Circuit
from pcfair.circuit.derived import derived
from pcfair.errors import OptionError, SpecError
from pcfair.inference.marginals import log_marginals
from pcfair.patterns import _naive_bayes_kernels as K
from pcfair.patterns._arguments import Problem
from pcfair.patterns._compiled import (
    COMPILED_MODES,
    MODE_IDS,
    SearchBuffers,
    check_request,
    drive,
)
from pcfair.patterns.bounds import NaiveBayesBound
from pcfair.patterns.scores import log_normalizer, log_support
from pcfair.patterns.search_types import SearchQuery, SearchResult, search_order

__all__ = ["NaiveBayesTables", "nb_search", "search_naive_bayes"]

#: The modes :func:`nb_search` runs (``search``'s ``"pareto"`` and ``"extension"`` are not).
NB_MODES = COMPILED_MODES


class NaiveBayesTables(NaiveBayesBound):
    """A :class:`NaiveBayesBound` that also carries the model's normalised log-conditionals:
    ``log_pd = log P(d)``, ``log_pnd = log P(¬d)``, and per variable ``v`` (empty arrays at the
    decision) ``log_p1[v][k] = log P(v=k | d)``, ``log_p0[v][k] = log P(v=k | ¬d)``,
    ``log_q1[v][k] = log P(v≠k | d)``, ``log_q0[v][k] = log P(v≠k | ¬d)`` (the last two as
    log-sums over the other values, never ``log(1 − p)``)."""

    def __init__(self, prior: float, w: list[np.ndarray], log_pd: float, log_pnd: float,
                 log_p1: list[np.ndarray], log_p0: list[np.ndarray]) -> None:
        super().__init__(prior, w)
        self.log_pd = float(log_pd)
        self.log_pnd = float(log_pnd)
        self.log_p1 = log_p1
        self.log_p0 = log_p0
        self.log_q1 = [_log_complements(a) for a in log_p1]
        self.log_q0 = [_log_complements(a) for a in log_p0]

    @classmethod
    def from_circuit(cls, circuit: Circuit, d: int, fav: int) -> "NaiveBayesTables | None":
        """The tables of ``circuit`` for decision ``d = fav``, or None where
        :meth:`NaiveBayesBound.from_circuit` does not recognise it (cached on the circuit)."""
        return derived(circuit, ("naive_bayes_tables", d, fav),
                       lambda: cls._tables(circuit, d, fav))

    @classmethod
    def _tables(cls, circuit: Circuit, d: int, fav: int) -> "NaiveBayesTables | None":
        nb = NaiveBayesBound.from_circuit(circuit, d, fav)
        if nb is None:
            return None
        n = circuit.num_variables
        card = circuit.variables.cardinalities
        rows = [np.full(n, -1, np.int32) for _ in range(3)]
        rows[0][d], rows[1][d] = fav, 1 - fav
        for v in range(n):
            if v == d:
                continue
            for k in range(int(card[v])):
                for dv in (fav, 1 - fav):
                    r = np.full(n, -1, np.int32)
                    r[v], r[d] = k, dv
                    rows.append(r)
        lp = log_marginals(circuit, np.array(rows))
        log_z = log_normalizer(float(lp[2]))
        p1: list[np.ndarray] = []
        p0: list[np.ndarray] = []
        i = 3
        for v in range(n):
            if v == d:
                p1.append(np.zeros(0))
                p0.append(np.zeros(0))
                continue
            kk = int(card[v])
            pair = lp[i: i + 2 * kk].reshape(kk, 2)
            p1.append(np.minimum(pair[:, 0] - lp[0], 0.0))
            p0.append(np.minimum(pair[:, 1] - lp[1], 0.0))
            i += 2 * kk
        if not all(np.all(np.isfinite(a)) for a in p1 + p0):
            return None
        return cls(nb.prior, nb.w, lp[0] - log_z, lp[1] - log_z, p1, p0)

    def information(self, variables: list[int]) -> np.ndarray:
        """Mutual information ``I(V; D)`` (nats) of each variable, from the tables."""
        out = np.zeros(len(variables))
        pd = np.exp([self.log_pd, self.log_pnd])
        for j, v in enumerate(variables):
            joint = np.stack([pd[0] * np.exp(self.log_p1[v]), pd[1] * np.exp(self.log_p0[v])], 1)
            joint /= joint.sum()
            indep = joint.sum(axis=1, keepdims=True) * joint.sum(axis=0, keepdims=True)
            pos = joint > 0
            out[j] = float(np.sum(joint[pos] * np.log(joint[pos] / indep[pos])))
        return out


def _log_complements(a: np.ndarray) -> np.ndarray:
    """``log Σ_{k' ≠ k} exp(a[k'])`` for each ``k`` (−inf for a one-value variable)."""
    out = np.full(len(a), -np.inf)
    for k in range(len(a)):
        rest = np.delete(a, k)
        if len(rest):
            top = rest.max()
            out[k] = top + np.log(np.sum(np.exp(rest - top))) if top > -np.inf else -np.inf
    return out


def nb_search(nb: NaiveBayesBound, cards, d: int, fav: int, sensitive: list[int],
              query: SearchQuery) -> SearchResult:
    """Compiled branch and bound over a naive Bayes model (see the module docstring) of the
    ``query`` (a :class:`~pcfair.patterns.search_types.SearchQuery` of a compiled mode; no
    ``partition``); the result is that of :func:`pcfair.patterns.search.search`.

    ``nb`` must be a :class:`NaiveBayesTables` (``NaiveBayesTables.from_circuit``): a plain
    :class:`NaiveBayesBound` has the log-odds but not the conditionals ``P(x, y)`` needs.
    ``cards``: every variable's cardinality (the decision's included). ``query.order``
    defaults to each group by decreasing mutual information with the decision, from the
    tables. Of the query's options it reads ``best_first`` (visit a top-k node's children by
    decreasing score).
    """
    delta, order, mode, k, rank_by = query.delta, query.order, query.mode, query.k, query.rank_by
    deadline, min_support, best_first, progress = (query.deadline, query.min_support,
                                                   query.options.best_first, query.progress)
    check_request(mode)
    if not isinstance(nb, NaiveBayesTables):
        raise TypeError("nb_search needs NaiveBayesTables.from_circuit(...) (the bound's "
                        "log-odds alone do not give P(x, y))")
    t0 = time.perf_counter()
    cards = [int(c) for c in cards]
    sens = sorted(set(int(v) for v in sensitive))
    features = [v for v in range(len(cards)) if v != d]
    if not set(sens) <= set(features):
        raise OptionError(f"sensitive variables {sens} must be features (not the decision {d})")
    if order is None:
        rest = [v for v in features if v not in set(sens)]
        info = dict(zip(sens + rest, nb.information(sens + rest)))
        order = sorted(sens, key=lambda v: -info[v]) + sorted(rest, key=lambda v: -info[v])
    order = [int(v) for v in order]
    if sorted(order) != features or set(order[:len(sens)]) != set(sens):
        raise OptionError(f"order {order} must list every feature once, the sensitive "
                         f"{sens} first")
    res = SearchResult(order=list(order), bound=NaiveBayesBound.name)
    n = len(order)
    by_div = mode == "topk" and rank_by == "divergence"

    # the model, per position of the order
    card = np.array([cards[v] for v in order], np.int64)
    is_sens = np.array([v in set(sens) for v in order], np.bool_)
    off = np.zeros(n + 1, np.int64)
    off[1:] = np.cumsum(card)

    def flat(tables) -> np.ndarray:
        return (np.concatenate([np.asarray(tables[v], float) for v in order]) if n
                else np.zeros(0))

    w, lp1, lp0 = flat(nb.w), flat(nb.log_p1), flat(nb.log_p0)
    lq1, lq0 = flat(nb.log_q1), flat(nb.log_q0)
    wmin = np.array([float(np.min(nb.w[v])) for v in order])
    wmax = np.array([float(np.max(nb.w[v])) for v in order])
    lo, hi = np.minimum(0.0, wmin), np.maximum(0.0, wmax)

    def suffix(a: np.ndarray) -> np.ndarray:
        out = np.zeros(n + 1)
        for j in range(n - 1, -1, -1):  # in order, as NaiveBayesBound.ranges adds them
            out[j] = out[j + 1] + a[j]
        return out

    # ranges() adds the free variables from the first to the last; a suffix sum adds them
    # from the last: the same terms, so the same box up to rounding of a few ulps
    t_lo_suf, t_hi_suf = suffix(lo), suffix(hi)
    s_lo_suf, s_hi_suf = suffix(np.where(is_sens, lo, 0.0)), suffix(np.where(is_sens, hi, 0.0))
    sens_left = np.zeros(n + 1, np.int64)
    for j in range(n - 1, -1, -1):
        sens_left[j] = sens_left[j + 1] + int(is_sens[j])
    params = np.array([nb.prior, nb.log_pd, nb.log_pnd, float(delta), log_support(min_support)])
    mode_id = MODE_IDS[mode]
    kk = int(k) if mode == "topk" else 1
    iparams = np.array([mode_id, kk, int(by_div), int(bool(best_first)), len(sens)], np.int64)

    # the state
    buf = SearchBuffers(n, 2 * (int(card.max()) if n else 1) + 1, mode, k,
                        wide_values=bool(card.size and card.max() > 126))
    frames = np.zeros((n + 1, K.N_F))
    fint = np.zeros((n + 1, 2), np.int64)

    model = (card, is_sens, off, w, lp1, lp0, lq1, lq0, wmin, wmax, t_lo_suf, t_hi_suf,
             s_lo_suf, s_hi_suf, sens_left)

    def step(budget: int) -> int:
        return K.run(model, params, iparams, frames, fint, buf.walk(), buf.top(), buf.found(),
                     budget)

    drive(step, buf, res, deadline, progress, "branch and bound (compiled)")
    res.seconds = time.perf_counter() - t0
    return res


def search_naive_bayes(problem: Problem, query: SearchQuery) -> SearchResult:
    """:func:`nb_search` on ``problem`` with :func:`~pcfair.patterns.search.search`'s
    arguments and its variable order (``query.order``, else ``options.ordering``).
    (``options.seed_runs`` is not used: the compiled search does not need a head start.)

    Raises
    ------
    SpecError
        Where it does not apply (the engine table asks first: the naive-Bayes adapter's
        ``can_run``): the circuit is not naive Bayes in ``d``
        (:meth:`NaiveBayesBound.from_circuit`), ``options.naive_bayes_bound`` is off or
        ``options.bound`` forces another bound, a ``partition`` (a share of a split search)
        is asked for, or ``mode`` is not one of :data:`NB_MODES`.
    """
    circuit, d, fav, sensitive = problem
    mode, options = query.mode, query.options
    if mode not in NB_MODES:
        raise SpecError(f"the compiled naive-Bayes search answers {NB_MODES}, not {mode!r}")
    if not options.naive_bayes_bound or options.bound not in ("auto", "naive_bayes"):
        raise SpecError("the compiled naive-Bayes search runs the naive-Bayes bound, which "
                        "the options turn off")
    if query.partition is not None:
        raise SpecError("the compiled naive-Bayes search is not split into shares")
    nb = NaiveBayesTables.from_circuit(circuit, d, fav)
    if nb is None:
        raise SpecError("the compiled naive-Bayes search needs a circuit that is naive Bayes "
                        "in the decision")
    if query.order is None:
        query = query.but(order=search_order(circuit, d, fav, sensitive, options.ordering))
    return nb_search(nb, circuit.variables.cardinalities, d, fav, sensitive, query)
