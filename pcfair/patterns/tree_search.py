"""Branch and bound at compiled speed for decision-rooted tree-augmented circuits.

:func:`tree_search` answers what :func:`pcfair.patterns.search.search` answers with the tree
bound (modes ``"all"``, ``"first"`` and ``"topk"`` by either ranking; the same
:class:`~pcfair.patterns.search.SearchResult`), walking the same tree in the same order with
the same bound (:class:`~pcfair.patterns.bounds.TreeBound`, evaluated by the same kernel), but
as an explicit-stack loop over flat arrays in one compiled kernel
(:mod:`pcfair.patterns._tree_search_kernels`), with no per-node Python. It applies to the
circuits :meth:`TreeBound.from_circuit <pcfair.patterns.bounds.TreeBound.from_circuit>`
recognises: Chow-Liu trees learned by :func:`pcfair.learn.learn_pc`, naive Bayes, and every
tree Bayesian network re-rooted at the decision.

A node's scores come from the model the recognition read off the circuit,
``P(δ, z) = P(δ) Π_v θ_δ(z_v | z_pa(v))``: ``log P(δ, e)`` for an evidence ``e`` is one
upward pass of messages over the feature forest (:func:`._tree_search_kernels.log_masses`),
so ``P(x, y) = P(d, x, y) + P(¬d, x, y)`` and ``Δ = σ(B) − σ(A)`` with ``A``, ``B`` the log-odds
of ``y`` and of ``x, y`` (computed as ``sinh`` of the half difference, no cancellation). The
divergence of a pattern takes its ``P(δ, y, ¬x)`` as a sum over the disjoint events "the
earlier ``x`` variables hold and this one takes another value" (as
:func:`pcfair.patterns.scores.divergence_masses` does), one pass each. These are the circuit's
own marginals (the recognition is exact), computed in another order: scores agree with the
circuit's to rounding, and the tests check them against brute force.

The box is evaluated in two steps: with the cheap rules C (contraction) and E (detached
evidence) of :class:`~pcfair.patterns.bounds.TreeBound` but without its mixture rules H and M
first, and with all of them (a second, incremental copy of the box) only where the first does
not prune, and only while the second prunes at least one node in 20 of those it is tried on.
Both boxes are sound, so which one prunes a node changes the work, never the answer.

Near the largest |Δ| many nodes have their difference ``B − A`` decided while ``A`` still
spans the peak: there a plateau solver (:mod:`pcfair.patterns._plateau_kernels`) answers the
node's whole subtree by sorting the sums of its independent parts instead of walking it.

A top-k by |Δ| climbs first (``ladder``): first-witness runs at thresholds above the best
found raise a floor that the top-k search then starts from (see :func:`tree_search`).
``search``'s ``seed_runs`` is not used: the ladder is the compiled search's head start.
A ``deadline`` (a :func:`time.time` value) is checked between kernel calls (about
20 ms each); a run it stops is marked incomplete.

Examples
--------
>>> import pandas as pd
>>> from pcfair.learn import learn_pc
>>> df = pd.DataFrame({"d": [0, 1, 1, 0, 1, 0, 1, 1], "s": [0, 1, 1, 0, 0, 1, 1, 0],
...                    "z": [1, 1, 0, 0, 1, 0, 1, 1]})
>>> pc = learn_pc(df, "d")
>>> res = search_tree(Problem(pc, 0, 1, [1]), SearchQuery(0.05, mode="topk", k=1))
>>> res.bound, res.compiled, len(res.patterns), res.complete
('tree', True, 1, True)
"""

from __future__ import annotations

import time
from dataclasses import replace

import numpy as np

from pcfair.errors import OptionError, SpecError
from pcfair.patterns import _bound_kernels as BK
from pcfair.patterns import _plateau_kernels as PK
from pcfair.patterns import _tree_search_kernels as K
from pcfair.patterns._arguments import Problem
from pcfair.patterns._compiled import (
    COMPILED_MODES,
    MODE_IDS,
    SearchBuffers,
    check_request,
    drive,
)
from pcfair.patterns._search_kernels import ATOL
from pcfair.patterns._tree_records import BoxWork
from pcfair.patterns.bounds import TreeBound
from pcfair.patterns.scores import log_support
from pcfair.patterns.search_types import (
    SearchQuery,
    SearchResult,
    pattern_key,
    search_order,
    tree_preorder,
)

__all__ = ["LADDER_AFTER_SECONDS", "LADDER_STEP_SECONDS", "search_tree", "tree_search"]


#: Seconds the top-k search runs alone before the ladder (a sixth of the time left at most).
LADDER_AFTER_SECONDS = 10.0
#: Seconds each first-witness run of the ladder may take (less where less time is left).
LADDER_STEP_SECONDS = 2.0
#: The ladder's share of the time left (of :data:`LADDER_SECONDS` without a deadline).
LADDER_SHARE = 0.25
#: The ladder's time without a deadline.
LADDER_SECONDS = 30.0
#: Most sensitive variables for ``x_first`` (one order per subset of them).
X_FIRST_MAX = 12
#: The first floor of the final top-k runs below the best pattern known (|Δ| units); each
#: run that ends with fewer than ``k`` patterns above its floor quadruples it.
LADDER_GAP = 0.005
#: Runs in a row that end without an answer (neither a witness nor a proof) end the ladder:
#: near the largest |Δ| proofs are what costs, and the top-k search does that work anyway.
LADDER_CUTS = 2


def tree_search(tb: TreeBound, sensitive: list[int], query: SearchQuery, *,
                ladder: bool = True, plateau: bool = True,
                x_first: bool = False) -> SearchResult:
    """Compiled branch and bound over the tree model ``tb`` (see the module docstring) of the
    ``query`` (a :class:`~pcfair.patterns.search_types.SearchQuery` of a compiled mode, whose
    ``order`` is required here: the features in search order, sensitive first); the result
    is that of :func:`pcfair.patterns.search.search`. Of the query's options it reads
    ``best_first`` (visit a top-k node's children by decreasing score).

    ``ladder`` (top-k by |Δ|): where the top-k search has not ended within
    :data:`LADDER_AFTER_SECONDS` (a sixth of the time left at most), climb from the best
    pattern it found with first-witness runs at optimistic thresholds (:func:`_ladder`),
    then run the top-k search again, above floors descending from the best pattern known
    (:data:`LADDER_GAP` below it, four times further each time) to just below the ``k``-th
    largest pattern known, until one run ends with ``k`` patterns above its floor. A
    first-witness run prunes every node whose bound is under its δ from the start, where the
    top-k search's threshold rises only as it finds patterns, so a climb with thresholds
    above the best found reaches the largest |Δ| far sooner on models with a few extreme
    patterns.
    The answer is the same: at least ``k`` known patterns (distinct: each witness is above
    every pattern known before it) have ``|Δ|`` at or above the threshold, so the ``k``
    largest are all above it, and a top-k search restricted to the patterns above it returns
    them (the known ones are found again: their nodes' bounds are at least their ``|Δ|``);
    a run above a higher floor that ends with ``k`` patterns has the ``k`` largest of all,
    and one that ends with fewer is followed by a lower floor.
    A climb whose first run proves that no pattern exceeds δ answers outright (none).

    ``x_first``: below the sensitive positions (the head of ``order``), visit the features
    of each node in the tree pre-order that puts the subtrees holding *that node's* ``x``
    first (:func:`~pcfair.patterns.search_types.tree_preorder`, ties broken by ``order``),
    instead of ``order``'s one pre-order for every sensitive variable. Once ``x`` is decided
    the subtrees that can change ``B − A`` are those holding ``x``; deciding them first makes
    the bound's ``D`` exact early. Up to 12 sensitive variables (one order per subset of
    them); beyond, ``order`` throughout. The nodes are the same lattice in another order, so
    the answers do not change.

    ``plateau`` (modes ``first`` and top-k by |Δ|, without ``min_support``): answer a
    node's whole subtree by :func:`~pcfair.patterns._plateau_kernels.solve_plateau` where
    it applies (the same patterns, found by sorting instead of walking); False walks every
    node. With ``min_support`` the walk prunes by support (a pattern's probability only
    falls as it grows), which the solver's enumeration cannot, and the plateau of
    near-ties it is for is made of patterns far below any support.
    """
    mode, k, delta, deadline = query.mode, query.k, query.delta, query.deadline
    check_request(mode)
    kwargs = dict(plateau=plateau, x_first=x_first)
    if not (ladder and mode == "topk" and query.rank_by == "discrimination"):
        return _tree_search(tb, sensitive, query, **kwargs)
    t0 = time.perf_counter()
    # the top-k search alone first: most searches end within it, and the ladder then costs
    # nothing; its patterns (real ones) seed the ladder
    first_end = time.time() + LADDER_AFTER_SECONDS
    if deadline is not None:
        first_end = min(first_end, time.time() + (deadline - time.time()) / 6)
    first = _tree_search(tb, sensitive, query.but(deadline=first_end), **kwargs)
    if first.complete:
        first.seconds = time.perf_counter() - t0
        return first
    known = list(first.patterns)
    start = max([delta] + [abs(p.score) for p in known])
    steps, proved = _ladder(tb, sensitive, query.but(delta=start), climb=bool(known),
                            **kwargs)
    known += [s.patterns[0] for s in steps if s.patterns]  # distinct: each above all before
    found = sorted(abs(p.score) for p in known)
    if proved:  # the first climbing run found no pattern above δ at all (none known)
        res = first
        res.patterns = []
        res.complete = True
    else:
        floor = delta
        if len(found) >= k:
            floor = max(delta, found[-k] - 2 * ATOL)  # the known patterns stay above it
        # floors descending from the best known towards `floor`: a run that ends with k
        # patterns above its floor has the top k (the higher the floor, the more it prunes)
        gap = LADDER_GAP
        while True:
            level = max(floor, found[-1] - gap) if found else floor
            res = _tree_search(tb, sensitive, query.but(delta=level), **kwargs)
            steps.append(res)
            if not res.complete or len(res.patterns) >= k or level <= floor:
                break
            known += res.patterns  # every pattern above the level: kept if a later run is cut
            gap *= 4
        steps.pop()
        if res.complete and floor > delta and len(res.patterns) < k:  # cannot happen
            raise AssertionError("the top-k search lost a pattern of its ladder")
        if not res.complete:  # cut short: keep the known patterns it has not found again
            seen = {pattern_key(p.x, p.y) for p in res.patterns}
            extra = list({pattern_key(p.x, p.y): p for p in known
                          if pattern_key(p.x, p.y) not in seen}.values())
            res.patterns = sorted(res.patterns + extra, key=lambda p: -abs(p.score))[:k]
    for s in [first] + steps:
        if s is not res:
            res.nodes += s.nodes
            res.bounds += s.bounds
            res.pruned += s.pruned
            res.solved += s.solved
            res.best = max(res.best, s.best)
    res.seconds = time.perf_counter() - t0
    return res


def _ladder(tb: TreeBound, sensitive: list[int], query: SearchQuery, *, climb: bool = False,
            plateau: bool = True, x_first: bool = False) -> tuple[list[SearchResult], bool]:
    """First-witness runs of ``query`` (its order, support, share and deadline) at optimistic
    thresholds: the first at ``delta`` (the query's; above it where
    ``climb``: ``delta`` is then a known pattern's |Δ|, the largest), then each between
    the largest witness ``lb`` and the smallest threshold ``hi`` a complete run found no
    witness above (1 at first), at ``lb + f (hi − lb)``: a witness raises ``lb`` and doubles
    ``f`` (up to 1/2), a run that proves nothing lies above its threshold lowers ``hi``, and
    one that finds nothing within :data:`LADDER_STEP_SECONDS` quarters ``f``. It ends when
    the first run, at ``delta`` (not ``climb``), completes without a witness (``proved``: no
    pattern exceeds ``delta``; every later threshold is above ``lb``), when ``f (hi − lb)``
    falls under 1e-6, after :data:`LADDER_CUTS` runs in a row without
    an answer, or after :data:`LADDER_SHARE` of the time left.
    Returns the runs and ``proved``; every threshold is at least the largest witness so far,
    so the witnesses are distinct patterns."""
    delta, deadline = query.delta, query.deadline
    probe = query.but(mode="first", k=1, rank_by="discrimination", progress=False,
                      options=replace(query.options, best_first=True))
    now = time.time()
    end = now + (LADDER_SECONDS if deadline is None else LADDER_SHARE * (deadline - now))
    steps: list[SearchResult] = []
    lb, hi, frac, level, cuts = delta, 1.0, 0.5, delta, 0
    if climb:
        level = lb + frac * (hi - lb)
    while time.time() < end - 0.01 and cuts < LADDER_CUTS:
        run = _tree_search(tb, sensitive,
                           probe.but(delta=level,
                                     deadline=min(time.time() + LADDER_STEP_SECONDS, end)),
                           plateau=plateau, x_first=x_first)
        steps.append(run)
        cuts = 0 if (run.patterns or run.complete) else cuts + 1
        if run.patterns:
            lb = max(lb, abs(run.patterns[0].score))
            frac = min(2 * frac, 0.5)
        elif run.complete:
            if level <= lb:
                return steps, True
            hi = level
        else:
            frac /= 4
        if frac * (hi - lb) < 1e-6:
            break
        level = lb + frac * (hi - lb)
    return steps, False


def _tree_search(tb: TreeBound, sensitive: list[int], query: SearchQuery, *,
                 plateau: bool = True, x_first: bool = False) -> SearchResult:
    """One compiled search (:func:`tree_search` without the ladder)."""
    delta, order, mode, k, rank_by = query.delta, query.order, query.mode, query.k, query.rank_by
    deadline, min_support, partition = query.deadline, query.min_support, query.partition
    best_first, progress = query.options.best_first, query.progress
    t0 = time.perf_counter()
    card = tb.card
    nv = len(card)
    sens = sorted(set(int(v) for v in sensitive))
    features = [v for v in range(nv) if v != tb.d]
    order = [int(v) for v in order]
    if not set(sens) <= set(features):
        raise OptionError(f"sensitive variables {sens} must be features (not the decision "
                          f"{tb.d})")
    if sorted(order) != features or set(order[:len(sens)]) != set(sens):
        raise OptionError(f"order {order} must list every feature once, the sensitive "
                          f"{sens} first")
    res = SearchResult(order=list(order), bound=TreeBound.name)
    n = len(order)
    pos_var = np.array(order, np.int64)
    is_sens = np.array([v in set(sens) for v in order], np.bool_)
    free_st = np.where(is_sens, BK.FREE_SENS, BK.FREE).astype(np.int64)
    sens_left = np.zeros(n + 1, np.int64)
    for j in range(n - 1, -1, -1):
        sens_left[j] = sens_left[j + 1] + int(is_sens[j])
    st = np.full(nv, BK.EXCL, np.int64)
    st[pos_var] = free_st
    val = np.zeros(nv, np.int64)
    obs_a = np.full(nv, -1, np.int64)
    obs_b = obs_a.copy()
    scratch = obs_a.copy()
    mode_id = MODE_IDS[mode]
    params = np.array([tb.prior, float(delta), log_support(min_support)])
    share = partition if partition is not None else (0, 1, 0)
    head = len(sens) if x_first and 0 < len(sens) <= X_FIRST_MAX else 0
    iparams = np.array([mode_id, int(k) if mode == "topk" else 1,
                        int(mode == "topk" and rank_by == "divergence"), int(bool(best_first)),
                        *share, tb.rules, int(bool(plateau)), head], np.int64)
    width = 2 * (int(card[pos_var].max()) if n else 1) + 1
    buf = SearchBuffers(n, width, mode, k, wide_values=bool(n and card[pos_var].max() > 126))
    fa = np.zeros((n + 1, 2))
    fp = np.zeros(n + 1)
    fint = np.zeros((n + 1, 2), np.int64)
    slots = tb.slots
    msg = np.zeros((slots, 2))
    has_ev = np.zeros(nv, np.bool_)
    tmp = np.zeros(2)
    box = np.zeros((slots, BK.BOX_COLUMNS))
    imp, lm = np.zeros((slots, BK.IMP_COLUMNS), np.bool_), np.zeros((slots, 4))
    flags, out = np.zeros((nv, 4), np.bool_), np.zeros(8)
    dirty = np.ones(nv, np.bool_)  # every box entry is computed at the first bound
    model = tb.kernel_model()

    orders = _orders_by_x(tb, order, head) if head else pos_var[None, :].copy()
    positions = (pos_var, is_sens, free_st, sens_left, orders)
    state = (st, val, obs_a, obs_b, scratch, fa, fp, fint)
    rr, mix = tb.scratch()
    work = (msg, has_ev, tmp, BoxWork(box, imp, lm, flags, out, dirty, rr, mix))
    work2 = (BoxWork(box.copy(), imp.copy(), lm.copy(), flags.copy(), out.copy(), dirty.copy(),
                     rr, mix), np.zeros(3, np.int64))

    pos_of = np.zeros(nv, np.int64)
    pos_of[pos_var] = np.arange(n)
    solver = (pos_of, PK.scratch(nv, tb.slots), np.zeros(3, np.int64))

    kernel = K.run_linear if tb.linear else K.run_in_logs

    def step(budget: int) -> int:
        return kernel(model, positions, params, iparams, state, work, work2, solver, buf.walk(),
                      buf.top(), buf.found(), budget)

    drive(step, buf, res, deadline, progress, "branch and bound (compiled, tree)",
          orders=orders if head else None, head=head)
    res.solved = int(solver[2][1])
    res.seconds = time.perf_counter() - t0
    return res


def _orders_by_x(tb: TreeBound, order: list[int], head: int) -> np.ndarray:
    """Row ``mask``: the search order below the ``head`` sensitive positions for the nodes
    whose ``x`` holds the head's positions in ``mask`` (bit ``j``: position ``j``), the tree
    pre-order with the subtrees holding those variables first, ties by ``order``."""
    info = {v: -i for i, v in enumerate(order)}
    sens = order[:head]
    in_head = set(sens)
    out = np.zeros((1 << head, len(order)), np.int64)
    for mask in range(1 << head):
        x = [sens[j] for j in range(head) if mask >> j & 1]
        rest = [v for v in tree_preorder(tb.parent, tb.d, x, info) if v not in in_head]
        out[mask] = sens + rest
    return out


def search_tree(problem: Problem, query: SearchQuery) -> SearchResult:
    """:func:`tree_search` on ``problem`` with :func:`~pcfair.patterns.search.search`'s
    arguments and variable order (``query.order``, else ``options.ordering``; the tree order
    with ``x_first``).

    Raises
    ------
    SpecError
        Where it does not apply (the engine table asks first: the tree-search adapter's
        ``can_run``): ``mode`` is not one of the compiled modes, ``options.bound`` forces
        another bound, or the circuit is not recognised (:meth:`TreeBound.from_circuit
        <pcfair.patterns.bounds.TreeBound.from_circuit>`).
    """
    circuit, d, fav, sensitive = problem
    mode, options, order = query.mode, query.options, query.order
    if mode not in COMPILED_MODES:
        raise SpecError(f"the compiled tree search answers {COMPILED_MODES}, not {mode!r}")
    if options.bound not in ("auto", "tree"):
        raise SpecError(f"the compiled tree search runs the tree bound, not {options.bound!r}")
    tb = TreeBound.from_circuit(circuit, d, fav)
    if tb is None:
        raise SpecError("the compiled tree search needs a decision-rooted tree model "
                        "(a Chow-Liu tree as pcfair learn writes it)")
    # the tree order (asked for, or given as search_order gives it: parallel_search passes it
    # to every share) puts each node's x subtrees first
    tree_order = options.ordering in ("auto", "tree")
    default = search_order(circuit, d, fav, sensitive, options.ordering)
    x_first = tree_order and (order is None or [int(v) for v in order] == default)
    if order is None:
        query = query.but(order=default)
    return tree_search(tb, sensitive, query, x_first=x_first)
