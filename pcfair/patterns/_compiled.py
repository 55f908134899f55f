"""The Python side the compiled searches share (:mod:`pcfair.patterns.naive_bayes_search`,
:mod:`pcfair.patterns.tree_search`): their buffers, the loop that drives a resumable kernel
against a deadline, and the decoding of its results into a
:class:`~pcfair.patterns.search.SearchResult`.

A kernel (see :mod:`pcfair.patterns._search_kernels`) is called with a node budget and returns
``DONE``, ``FOUND`` (a first witness), ``BUDGET`` (call again) or ``GROW`` (the output buffer
is full: :meth:`SearchBuffers.grow`, then call again); :func:`drive` sizes the budget so a call
takes about 20 ms, which keeps the deadline and the progress bar close.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np

from pcfair._progress import progress_bar
from pcfair.errors import OptionError
from pcfair.patterns import _search_kernels as K
from pcfair.patterns.results import HANDOVER_SECONDS
from pcfair.patterns.scores import ScoredPattern
from pcfair.patterns.search_types import SearchResult

#: The modes the compiled searches run (``search``'s ``"pareto"`` and ``"extension"`` are not).
COMPILED_MODES = ("all", "first", "topk")
#: Each mode's code in the kernels.
MODE_IDS = {"all": K.M_ALL, "first": K.M_FIRST, "topk": K.M_TOPK}


def check_request(mode: str) -> None:
    """Refuse a ``mode`` the compiled searches do not run (the one check of their own: the
    API checked ``k`` and ``rank_by``, :func:`pcfair.patterns._arguments.resolve_request`).

    Examples
    --------
    >>> check_request("pareto")
    Traceback (most recent call last):
    ...
    pcfair.errors.OptionError: the compiled searches run the modes ('all', 'first', 'topk'), not ...
    """
    if mode not in COMPILED_MODES:
        raise OptionError(f"the compiled searches run the modes {COMPILED_MODES}, not "
                          f"{mode!r} (use pcfair.patterns.search.search)")


class SearchBuffers:
    """The arrays a compiled search keeps between kernel calls, for ``n`` positions whose
    nodes have at most ``width`` children: the counters (``ctrl``, ``fbest``), the path
    (``code``, and per depth the children's roles, values, scores, probabilities,
    divergences and two values of the search's own, with a cursor), the top-k heap and the
    output buffer."""

    def __init__(self, n: int, width: int, mode: str, k: int, wide_values: bool) -> None:
        self.n, self.mode = n, mode
        self.ctrl = np.zeros(K.N_CTRL, np.int64)
        self.ctrl[K.C_DEPTH] = -1
        self.fbest = np.zeros(1)
        self.code = np.zeros(max(n, 1), np.int64)
        self.cn = np.zeros(n + 1, np.int64)
        self.cur = np.zeros(n + 1, np.int64)
        self.c_role = np.zeros((n + 1, width), np.int64)
        self.c_val = np.zeros((n + 1, width), np.int64)
        self.c_score = np.zeros((n + 1, width))
        self.c_p = np.zeros((n + 1, width))
        self.c_div = np.zeros((n + 1, width))
        self.c_aux = np.zeros((n + 1, width, 2))  # two values per child, the search's own
        kk = int(k) if mode == "topk" else 1
        self.k = kk
        code_type = np.int64 if wide_values else np.int8
        self.heap = np.zeros(kk, np.int64)
        self.hk, self.hs, self.hp, self.hd = (np.zeros(kk) for _ in range(4))
        self.hc = np.zeros(kk, np.int64)
        self.hx = np.zeros((kk, max(n, 1)), code_type)
        cap = 1 if mode == "first" else (1024 if mode == "all" else 0)
        self.os_, self.op = np.zeros(cap), np.zeros(cap)
        self.ox = np.zeros((cap, max(n, 1)), code_type)

    def walk(self) -> tuple:
        """The kernels' bundle of counters and path: ``(ctrl, fbest, code, cn, cur, c_role,
        c_val, c_score, c_p, c_div, c_aux)``."""
        return (self.ctrl, self.fbest, self.code, self.cn, self.cur, self.c_role, self.c_val,
                self.c_score, self.c_p, self.c_div, self.c_aux)

    def top(self) -> tuple:
        """The kernels' bundle of the top-k heap: ``(heap, hk, hc, hs, hp, hd, hx)``."""
        return self.heap, self.hk, self.hc, self.hs, self.hp, self.hd, self.hx

    def found(self) -> tuple:
        """The kernels' bundle of the output buffer: ``(os_, op, ox)`` (new arrays after
        :meth:`grow`)."""
        return self.os_, self.op, self.ox

    def grow(self) -> None:
        """Double the output buffer (after ``GROW``)."""
        size = max(2 * len(self.os_), 1)
        pad = size - len(self.os_)
        self.os_ = np.concatenate([self.os_, np.zeros(pad)])
        self.op = np.concatenate([self.op, np.zeros(pad)])
        self.ox = np.concatenate([self.ox, np.zeros((pad, self.ox.shape[1]), self.ox.dtype)])

    def decode(self, order: list[int], orders: np.ndarray | None = None,
               head: int = 0) -> list[ScoredPattern]:
        """The patterns found: the heap's by decreasing key (ties by arrival, as
        :func:`~pcfair.patterns.search.search` sorts them), or the output buffer's. Position
        ``j`` holds ``order[j]``, or, with ``orders``, ``orders[mask][j]`` where ``mask`` has
        bit ``j`` set for the first ``head`` positions in ``x``."""
        n = self.n

        def pattern(codes: np.ndarray, score: float, log_p: float) -> ScoredPattern:
            at = order
            if orders is not None:
                at = orders[sum(1 << j for j in range(head) if codes[j] < 0)]
            x, y = {}, {}
            for j in np.flatnonzero(codes[:n]):
                c = int(codes[j])
                if c < 0:
                    x[int(at[j])] = -c - 1
                else:
                    y[int(at[j])] = c - 1
            return ScoredPattern.from_log(x, y, score, log_p)

        if self.mode == "topk":
            size = int(self.ctrl[K.C_HSIZE])
            slots = sorted(range(size), key=lambda s: (-self.hk[s], -self.hc[s]))
            return [pattern(self.hx[s], self.hs[s], self.hp[s]) for s in slots]
        return [pattern(self.ox[i], self.os_[i], self.op[i])
                for i in range(int(self.ctrl[K.C_NOUT]))]


def drive(step: Callable[[int], int], buf: SearchBuffers, res: SearchResult,
          deadline: float | None, progress: bool | None, desc: str,
          orders: np.ndarray | None = None, head: int = 0) -> None:
    """Call ``step(budget)`` (one kernel call on ``buf``) until the search ends or the
    ``deadline`` (a :func:`time.time` value) comes within
    :data:`~pcfair.patterns.results.HANDOVER_SECONDS` per pattern found, then fill ``res``'s counters,
    ``best``, ``complete`` and patterns (``res.order`` must be set; ``orders`` and ``head``
    as :meth:`SearchBuffers.decode` takes them), and mark it compiled."""
    res.compiled = True
    budget = 1 << 14
    with progress_bar(progress, desc) as bar:
        while True:
            # stop early enough to hand over what was found within the deadline
            reserve = HANDOVER_SECONDS * int(buf.ctrl[K.C_NOUT])
            if deadline is not None and time.time() + reserve > deadline:
                res.complete = False
                break
            before = int(buf.ctrl[K.C_NODES])
            t_call = time.perf_counter()
            status = step(budget)
            bar.update(int(buf.ctrl[K.C_NODES]) - before)
            if status in (K.DONE, K.FOUND):
                break
            if status == K.GROW:
                buf.grow()
                continue
            spent = time.perf_counter() - t_call
            if spent < 0.01 and budget < (1 << 24):
                budget *= 2
            elif spent > 0.04 and budget > 64:
                budget //= 2
    res.nodes = int(buf.ctrl[K.C_NODES])
    res.pruned = int(buf.ctrl[K.C_PRUNED])
    res.bounds = int(buf.ctrl[K.C_BOUNDS])
    res.best = float(buf.fbest[0])
    res.patterns = buf.decode(res.order, orders, head)
