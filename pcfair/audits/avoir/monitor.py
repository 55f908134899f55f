"""Online fairness monitoring: AVOIR's Algorithm 1 over pandas batches.

A :class:`Monitor` watches a stream of records (inputs, the decision ``r``, optional labels),
keeps a running mean and count for every expectation leaf of a specification, and every
``optimize_every`` records (the paper's batch of 5) tries to certify the specification at the
overall failure probability Δ. It stops claiming at the first check ``T_s`` where it can say
``ψ : (b, Δ)``: Pr[ψ = b] ≥ 1 − Δ. With ``split="optimized"`` (AVOIR-OB) the δ budget is
allocated by the optimiser of :mod:`~pcfair.audits.avoir.opt`; with ``split="equal"``
(AVOIR-VF, the VeriFair-style baseline) every leaf gets ``Δ/L``.

After the verdict the allocation δ*_i is frozen and monitoring may continue: the adaptive
Hoeffding bands are valid uniformly in time, so the bands keep narrowing and the verdict is not
revisited (``MonitorResult.holds`` shows the current three-valued evaluation under the frozen
δ*). Before a verdict, the bands shown use ``δ_i = Δ`` for every leaf: display bounds, not a
Δ-level claim (their sum is ``L·Δ``).

Counting convention (as in the authors' published step numbers): ``T`` counts observations
including the current one, and a check fires when ``T % optimize_every == 0``.

Notes
-----
Maneriker, Burley, Parthasarathy, "Online Fairness Auditing through Iterative Refinement",
KDD 2023 (doi:10.1145/3580305.3599454), Algorithm 1; the ICLR 2023 submission "Auditing fairness
online through interactive refinement" (AVOIR). Differences from the reference code that pcfair
makes on purpose: Kleene logic for ``|`` (the reference reports ``F ∨ ?`` as decided), a point
estimate exactly on a threshold is not certifiable (the reference adds no constraint), every
optimiser answer is re-checked numerically, and leaf values must lie in their declared range.
The optimised allocation is data-dependent, which the time-uniform guarantee does not formally
cover (see :mod:`~pcfair.audits.avoir.opt`); ``split="equal"`` is provably valid.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd

from pcfair._clock import deadline_from, expired
from pcfair.audits._model import as_model
from pcfair.audits._result import AuditResult, json_value
from pcfair.audits.avoir._kernels import upsert_cumulative
from pcfair.audits.avoir._program import Evaluation, Program
from pcfair.audits.avoir.ast import ColumnCache, Spec, parse_spec
from pcfair.audits.avoir.bounds import ConcentrationBound, get_bound
from pcfair.audits.avoir.errors import MonitorSettingError
from pcfair.audits.avoir.opt import SPLITS, Allocation, _allocate, _check_budget
from pcfair.audits.avoir.rules import DEFAULT_TOL, UNDETERMINED
from pcfair.errors import DataError

__all__ = ["Monitor", "MonitorResult", "TIME_LIMIT_CHUNK", "monitor_model", "spec"]

#: Rows per chunk when :meth:`Monitor.run` replays a DataFrame under a time limit.
TIME_LIMIT_CHUNK = 1000


def _truth_obj(code) -> bool | None:
    code = int(code)
    return None if code == UNDETERMINED else bool(code)


def as_frame(records: pd.DataFrame | Mapping | Sequence[Mapping]) -> pd.DataFrame:
    """Turn one record or a batch of records into a DataFrame.

    Accepts a DataFrame, a Series or a mapping of scalars (one record), a mapping of columns,
    or a list of mappings.
    """
    if isinstance(records, pd.DataFrame):
        return records
    if isinstance(records, pd.Series):
        return records.to_frame().T.infer_objects()
    if isinstance(records, Mapping):
        if all(np.ndim(v) == 0 for v in records.values()):
            return pd.DataFrame([dict(records)])
        return pd.DataFrame(dict(records))
    if isinstance(records, (list, tuple)) and all(isinstance(r, Mapping) for r in records):
        return pd.DataFrame(list(records))
    raise DataError(
        f"records must be a DataFrame, a mapping (one record) or a list of mappings, "
        f"got {type(records).__name__}")


@dataclass(repr=False)
class MonitorResult(AuditResult):
    """The state of a monitor after an update.

    Attributes
    ----------
    verdict : bool or None
        The certified truth value of the specification (None: undetermined so far).
    stop : int or None
        ``T_s``: the number of records consumed when the verdict was reached.
    failure_prob : float
        δ*_T, the failure probability charged to the verdict (1.0 without a verdict).
    failure_budget : float
        Δ, the requested overall failure probability.
    split : str
        ``"optimized"`` or ``"equal"``.
    n_observed : int
        Records observed so far.
    n_checks : int
        Checks made so far.
    holds : bool or None
        After a verdict: the current Kleene evaluation of the specification under the frozen
        allocation (it may become more certain, never reverses while the bounds hold). None
        before a verdict.
    allocation : numpy.ndarray or None
        δ*_i per leaf occurrence, frozen at the verdict.
    complete : bool
        False when a time limit stopped :meth:`Monitor.run` before the end of the stream (or
        of the records it was to read): a verdict reached before stands, an undetermined one
        is undetermined at ``n_observed`` records. ``notes`` say where it stopped.
    notes : tuple of str
        What the time limit cut.

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.audits.avoir import Monitor
    >>> res = Monitor("E[r] < 0.5").update(pd.DataFrame({"r": [0] * 50}))
    >>> res.verdict, res.stop, res.leaves["n"].tolist()
    (True, 25, [50])
    >>> res
    MonitorResult(method='monitor', spec='E[r] < 0.5', verdict=True, stop=25, failure_prob=..., n_observed=50, complete=True; 2 rows)
    """

    method = "monitor"

    verdict: bool | None
    stop: int | None
    failure_prob: float
    failure_budget: float
    split: str
    n_observed: int
    n_checks: int
    holds: bool | None
    allocation: np.ndarray | None
    _program: Program = field(repr=False)
    _evaluation: Evaluation = field(repr=False)
    _counts: np.ndarray = field(repr=False)
    complete: bool = True
    notes: tuple = ()

    @cached_property
    def terms(self) -> pd.DataFrame:
        """One row per node of the specification tree at the current state.

        Columns: ``node`` (pre-order index), ``id``, ``parent_id``, ``type``, ``repr``, ``value``,
        ``epsilon``, ``failure_prob``, ``lower``, ``upper``, ``n`` (leaves), ``threshold`` (comparisons)
        ``truth`` (True/False/None on specification nodes) and ``determined``.
        """
        return _node_frame(self._program, self._evaluation, self._counts, 0)

    @property
    def leaves(self) -> pd.DataFrame:
        """The expectation leaves: estimate, samples, ε and δ (a view of :attr:`terms`)."""
        t = self.terms
        return t[t["type"] == "Expectation"].reset_index(drop=True)

    def to_frame(self) -> pd.DataFrame:
        """The specification tree's nodes at the current state (a copy of :attr:`terms`)."""
        return self.terms.copy()

    def headline(self) -> dict:
        return {"spec": self._program.spec.to_text(), "verdict": self.verdict,
                "stop": self.stop, "failure_prob": self.failure_prob, "n_observed": self.n_observed,
                "complete": self.complete}

    def _plot(self, ax):
        """Each expectation leaf's estimate with its ±ε band at the current state."""
        leaves = self.leaves
        y = np.arange(len(leaves))
        eps = np.nan_to_num(leaves["epsilon"].to_numpy(float), nan=0.0, posinf=1.0)
        ax.errorbar(leaves["value"].to_numpy(float), y, xerr=eps, fmt="o", capsize=3)
        ax.set_yticks(y, [str(t) for t in leaves["repr"]])
        ax.invert_yaxis()
        ax.set_xlabel("estimate ± ε")
        verdict = "undetermined" if self.verdict is None else f"{self.verdict} at {self.stop}"
        ax.set_title(f"{self._program.spec.to_text()}: {verdict}", fontsize=9)
        return ax

    def to_dict(self) -> dict:
        """A JSON-ready dictionary (infinite or missing numbers become None)."""
        rows = []
        for rec in self.terms.to_dict(orient="records"):
            rows.append({k: json_value(v) for k, v in rec.items()})
        return {
            "method": self.method,
            "spec": self._program.spec.to_text(),
            "verdict": self.verdict,
            "stop": self.stop,
            "failure_prob": json_value(self.failure_prob),
            "failure_budget": self.failure_budget,
            "split": self.split,
            "n_observed": self.n_observed,
            "n_checks": self.n_checks,
            "holds": self.holds,
            "allocation": None if self.allocation is None else [float(x) for x in self.allocation],
            "complete": self.complete,
            "notes": list(self.notes),
            "terms": rows,
        }

    def summary(self, limit: int | None = None) -> str:
        """A short human-readable report: verdict, stop time and the per-term table (its
        first ``limit`` rows, each term's text cut to 100 characters, when ``limit`` is
        given and the table is longer; 0 or None: all, in full)."""
        # the paper's δ and Δ are failure probabilities; pcfair's δ and Δ are the threshold
        # and a pattern's score, so they are named in words here
        if self.verdict is None:
            head = (f"undetermined after {self.n_observed} records ({self.n_checks} checks) "
                    f"at failure probability {self.failure_budget:g} [{self.split} split]")
        else:
            head = (f"verdict {self.verdict} at record {self.stop} with failure probability "
                    f"{self.failure_prob:.6g} ≤ {self.failure_budget:g} [{self.split} split]")
        if not self.complete:
            head += "\nINCOMPLETE (time limit): " + "; ".join(self.notes)
        cols = ["repr", "value", "epsilon", "failure_prob", "n"]
        terms = self.terms[cols]
        more = ""
        if limit:
            cut = terms["repr"].str.len() > 100
            terms = terms.assign(repr=terms["repr"].where(~cut, terms["repr"].str[:99] + "…"))
            if len(terms) > limit:
                more = (f"\n... and {len(terms) - limit:,} more term(s) (--limit 0 prints them "
                        "all, in full; --format json has every field)")
                terms = terms.head(limit)
        table = terms.to_string(index=False, float_format=lambda x: f"{x:.6g}")
        return f"{self._program.spec.to_text()}\n{head}\n{table}{more}"

    def __str__(self) -> str:
        return self.summary()


def _node_frame(prog: Program, ev: Evaluation, counts: np.ndarray, row: int) -> pd.DataFrame:
    recs = []
    for node in prog.nodes:
        i = node.index
        spec_level = node.kind in ("and", "or")
        value = np.nan if spec_level else float(ev.value[row, i])
        eps = np.nan if spec_level else float(ev.epsilon[row, i])
        recs.append({
            "node": i,
            "id": node.id,
            "parent_id": None if node.parent is None else prog.nodes[node.parent].id,
            "type": node.type,
            "repr": node.obj.to_text(),
            "value": value,
            "epsilon": eps,
            "failure_prob": float(ev.delta[row, i]),
            "lower": value - eps,
            "upper": value + eps,
            "n": int(counts[row, node.leaf]) if node.kind == "leaf" else None,
            "threshold": node.c if node.kind == "cmp" else None,
            "truth": _truth_obj(ev.truth[row, i]) if node.is_spec else None,
            "determined": (int(ev.truth[row, i]) != UNDETERMINED) if node.is_spec else None,
        })
    frame = pd.DataFrame.from_records(recs)
    frame["n"] = frame["n"].astype("Int64")
    return frame


class Monitor:
    """Monitor a fairness specification over a stream of decisions (AVOIR, Algorithm 1).

    Parameters
    ----------
    spec : Spec or str
        The specification, built with :func:`~pcfair.audits.avoir.E` or as text
        (``'E[r | sex == "M"] / E[r | sex == "F"] > 0.8'``).
    failure_prob : float, default 0.1
        Δ, the overall failure probability of the verdict.
    split : {"optimized", "equal"}, default "optimized"
        AVOIR-OB (optimised allocation, never later than the equal split) or AVOIR-VF
        (``δ_i = Δ/L``, the VeriFair-style baseline).
    optimize_every : int, default 5
        Check (and optimise) every this many records; the paper's "batch".
    bound : str or ConcentrationBound, default "adaptive_hoeffding"
        The concentration inequality; it must be time-uniform unless ``allow_fixed_n``.
    failure_charge : {"used", "all"}, default "used"
        Charge a Boolean verdict with the leaves it uses, or all leaves (the paper's rule).
    tol : float, default 1e-6
        Strict margin of every comparison verdict.
    keep_history : bool, default True
        Keep every check's node values (for :attr:`history`, export and plots).
    allow_fixed_n : bool, default False
        Allow a bound that is not time-uniform (e.g. plain Hoeffding). Its verdicts are then
        not valid at a data-dependent stopping time.

    Attributes
    ----------
    program
        The compiled specification (nodes in pre-order).
    history : pandas.DataFrame
        One row per check and node.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from pcfair.audits.avoir import Monitor
    >>> rng = np.random.default_rng(0)
    >>> g = rng.random(4000) < 0.5
    >>> r = (rng.random(4000) < np.where(g, 0.9, 0.3)).astype(int)
    >>> m = Monitor("E[r | g == 1] - E[r | g == 0] > 0.2", failure_prob=0.1)
    >>> res = m.run(pd.DataFrame({"g": g.astype(int), "r": r}))
    >>> res.verdict, res.stop is not None and res.stop < 4000
    (True, True)
    """

    def __init__(self, spec: Spec | str, *, failure_prob: float = 0.1, split: str = "optimized",
                 optimize_every: int = 5, bound: str | ConcentrationBound = "adaptive_hoeffding",
                 failure_charge: str = "used", tol: float = DEFAULT_TOL, keep_history: bool = True,
                 allow_fixed_n: bool = False):
        if isinstance(spec, str):
            spec = parse_spec(spec)
        if not isinstance(spec, Spec):
            raise MonitorSettingError(
                f"spec must be a specification (e.g. E(r) > 0.5) or its text form, got {spec!r}")
        self.spec = spec
        self.failure_prob = _check_budget(failure_prob)
        if split not in SPLITS:
            raise MonitorSettingError(f"split must be one of {SPLITS}, got {split!r}")
        self.split = split
        if isinstance(optimize_every, bool) or not isinstance(optimize_every, (int, np.integer)) \
                or optimize_every < 1:
            raise MonitorSettingError(
                f"optimize_every must be a positive integer, got {optimize_every!r}")
        self.optimize_every = int(optimize_every)
        self.bound = get_bound(bound)
        if not self.bound.time_uniform and not allow_fixed_n:
            raise MonitorSettingError(
                f"the bound {self.bound.name!r} is not time-uniform, so its verdicts are invalid "
                "at a data-dependent stopping time; pass allow_fixed_n=True to use it anyway")
        if failure_charge not in ("used", "all"):
            raise MonitorSettingError(
                f"failure_charge must be 'used' or 'all', got {failure_charge!r}")
        self.failure_charge = failure_charge
        if not (isinstance(tol, (int, float)) and 0 <= tol < 1):
            raise MonitorSettingError(f"tol must be a small non-negative number, got {tol!r}")
        self.tol = float(tol)
        self.keep_history = bool(keep_history)
        self.program = Program(spec)
        self.reset()

    # state ------------------------------------------------------------------------------------
    def reset(self) -> None:
        """Forget every observation and verdict."""
        n_sig = len(self.program.signatures)
        self._sum = np.zeros(n_sig)
        self._count = np.zeros(n_sig)
        self._t = 0
        self._n_checks = 0
        self._stop: int | None = None
        self._alloc: Allocation | None = None
        self._key_index: dict = {}
        self._store_mask = np.zeros((0, n_sig))
        self._store_contrib = np.zeros((0, n_sig))
        self._present = np.zeros(0, dtype=np.bool_)
        self._hist: list[tuple] = []

    @property
    def stopped(self) -> bool:
        """Whether a verdict has been reached."""
        return self._stop is not None

    @property
    def n_observed(self) -> int:
        """Records observed so far."""
        return self._t

    def _leaf_state(self, sums: np.ndarray, counts: np.ndarray):
        """Per-leaf (estimates, counts) of shape (k, L) from signature sums and counts (k, U)."""
        with np.errstate(invalid="ignore", divide="ignore"):
            est_sig = np.where(counts > 0, sums / np.where(counts > 0, counts, 1.0), np.nan)
        cols = self.program.sig_of_leaf
        return est_sig[:, cols], counts[:, cols]

    def _current_deltas(self) -> np.ndarray:
        if self._alloc is not None:
            return self._alloc.failure_probs
        return np.full(self.program.n_leaves, self.failure_prob)

    def _evaluate(self, est, counts, deltas) -> Evaluation:
        return self.program.evaluate(est, counts, deltas, self.bound, tol=self.tol,
                                     charge=self.failure_charge)

    # the stopping rule ------------------------------------------------------------------------
    def _find_stop(self, est: np.ndarray, counts: np.ndarray):
        """First check index (in this chunk) with a certified verdict, and its allocation."""
        prog, L, budget = self.program, self.program.n_leaves, self.failure_prob
        eq = np.full(L, budget / L)
        ev = self._evaluate(est, counts, eq)
        ok = (ev.root_truth != UNDETERMINED) & (ev.root_charged <= budget * (1 + 1e-12))
        hits = np.flatnonzero(ok)
        first_eq = int(hits[0]) if hits.size else None
        if self.split == "equal":
            if first_eq is None:
                return None, None
            j = first_eq
            alloc = Allocation(bool(ev.root_truth[j]), float(ev.root_charged[j]), eq, "equal")
            return j, alloc
        display = self._evaluate(est, counts, np.full(L, budget))
        for j in np.flatnonzero(display.root_truth != UNDETERMINED):
            j = int(j)
            if first_eq is not None and j > first_eq:
                break
            alloc = _allocate(prog, est[j], counts[j], budget, split="optimized",
                              bound=self.bound, tol=self.tol, charge=self.failure_charge)
            if alloc.decided:
                return j, alloc
        return None, None

    # feeding ----------------------------------------------------------------------------------
    def _observe(self, df):
        masks, vals = [], []
        columns = df if isinstance(df, ColumnCache) else ColumnCache(df)
        for sig in self.program.signatures:
            m, v = sig.observe(columns)
            masks.append(m)
            vals.append(v)
        return np.column_stack(masks), np.column_stack(vals)

    def _cumulative(self, df: pd.DataFrame, key: str | None):
        """Per-row cumulative (sums, counts) of shape (rows, U) and the key updates."""
        masks, vals = self._observe(df)
        contrib = np.where(masks, vals, 0.0)
        if key is None:
            sums = self._sum + np.cumsum(contrib, axis=0)
            counts = self._count + np.cumsum(masks, axis=0)
            return sums, counts, None
        if key not in df.columns:
            raise DataError(f"key column {key!r} is not in the data; columns are "
                            f"{list(map(str, df.columns))}")
        try:
            codes, uniques = pd.factorize(df[key], use_na_sentinel=True)
        except TypeError as err:
            raise DataError(f"key column {key!r} holds unhashable values") from err
        if (codes < 0).any():
            raise DataError(f"key column {key!r} has missing values at rows "
                            f"{np.flatnonzero(codes < 0)[:5].tolist()}")
        index = self._key_index
        ids = np.asarray([index.setdefault(k, len(index)) for k in uniques], dtype=np.int64)[codes]
        self._grow_store(len(index))
        store = (self._store_mask.copy(), self._store_contrib.copy(), self._present.copy())
        sums, counts = upsert_cumulative(ids, masks, contrib, *store, self._sum, self._count)
        return sums, counts, (ids, masks, contrib, store)

    def _grow_store(self, size: int) -> None:
        if size <= self._present.size:
            return
        cap = max(size, 2 * self._present.size, 64)
        n_sig = len(self.program.signatures)
        mask = np.zeros((cap, n_sig))
        contrib = np.zeros((cap, n_sig))
        present = np.zeros(cap, dtype=np.bool_)
        k = self._present.size
        mask[:k], contrib[:k], present[:k] = self._store_mask, self._store_contrib, self._present
        self._store_mask, self._store_contrib, self._present = mask, contrib, present

    def _commit_keys(self, updates, consumed: int) -> None:
        ids, masks, contrib, store = updates
        if consumed == ids.size:
            self._store_mask, self._store_contrib, self._present = store
        else:  # replay only the consumed rows on the committed store
            upsert_cumulative(ids[:consumed], masks[:consumed], contrib[:consumed],
                              self._store_mask, self._store_contrib, self._present,
                              self._sum, self._count)

    def _process(self, df: pd.DataFrame, key: str | None, until_verdict: bool) -> int:
        rows = len(df)
        if rows == 0:
            return 0
        sums, counts, updates = self._cumulative(df, key)
        t = self._t + np.arange(1, rows + 1)
        check_rows = np.flatnonzero(t % self.optimize_every == 0)
        consumed = rows
        if check_rows.size:
            est, cnt = self._leaf_state(sums[check_rows], counts[check_rows])
            L = self.program.n_leaves
            deltas = np.broadcast_to(self._current_deltas(), (check_rows.size, L)).copy()
            if not self.stopped:
                j, alloc = self._find_stop(est, cnt)
                if j is not None:
                    self._stop = int(t[check_rows[j]])
                    self._alloc = alloc
                    deltas[j:] = alloc.failure_probs
                    if until_verdict:
                        check_rows = check_rows[: j + 1]
                        est, cnt, deltas = est[: j + 1], cnt[: j + 1], deltas[: j + 1]
                        consumed = int(check_rows[-1]) + 1
            ev = self._evaluate(est, cnt, deltas)
            if self.keep_history:
                self._hist.append((t[check_rows], ev, cnt))
            else:
                self._hist = [(t[check_rows][-1:], _last_row(ev), cnt[-1:])]
            self._n_checks += int(check_rows.size)
        if updates is not None:
            self._commit_keys(updates, consumed)
        last = consumed - 1
        self._sum = sums[last].copy()
        self._count = counts[last].copy()
        self._t += consumed
        return consumed

    def update(self, records: pd.DataFrame | Mapping | Sequence[Mapping], *,
               key: str | None = None) -> MonitorResult:
        """Observe one record or a batch of records and return the current state.

        Parameters
        ----------
        records : pandas.DataFrame, mapping or list of mappings
            Columns are the variables the specification reads (inputs, the decision ``r``,
            labels). A mapping of scalars is one record.
        key : str, optional
            A column identifying observations: a key seen before has its old contribution
            retracted first (upsert semantics for materialised views).

        Returns
        -------
        MonitorResult

        Raises
        ------
        VariableError
            If a column the specification reads is missing.
        DataError
            If a leaf value is missing or outside its declared range; the batch is then
            ignored as a whole.

        Examples
        --------
        >>> from pcfair.audits.avoir import Monitor
        >>> m = Monitor("E[x | x > 10] > 0.5", optimize_every=1)
        >>> m.update({"x": 3}).n_observed
        1
        """
        self._process(as_frame(records), key, until_verdict=False)
        return self.result()

    #: Alias of :meth:`update` (the spec's name).
    feed = update

    def delete(self, keys: Hashable | Sequence[Hashable]) -> MonitorResult:
        """Retract the contributions of previously observed keys (``update(..., key=...)``)."""
        for k in np.atleast_1d(np.asarray(keys, dtype=object)):
            i = self._key_index.get(k)
            if i is None or not self._present[i]:
                raise DataError(f"key {k!r} was never observed, so it cannot be deleted")
            self._count = self._count - self._store_mask[i]
            self._sum = self._sum - self._store_contrib[i]
            self._present[i] = False
        return self.result()

    def run(self, stream: pd.DataFrame | Iterable, *, until_verdict: bool = True,
            chunk_size: int | None = None,
            key: str | None = None, time_limit: float | None = None,
            deadline: float | None = None) -> MonitorResult:
        """Replay a stream and return the state at the verdict (or at the end).

        Parameters
        ----------
        stream : pandas.DataFrame or iterable
            A DataFrame is replayed row by row in order; an iterable yields DataFrames,
            records (mappings) or lists of records.
        until_verdict : bool, default True
            Stop consuming at the verdict, so ``n_observed == stop``.
        chunk_size : int, optional
            Feed a DataFrame in chunks of this many rows (same result, less memory).
        key : str, optional
            Upsert key column, as in :meth:`update`.
        time_limit : float, optional
            Seconds of wall-clock time, checked between chunks (a DataFrame is then fed in
            chunks of ``chunk_size`` or :data:`TIME_LIMIT_CHUNK` rows, which gives the same
            verdicts). At the limit the run stops with what it has observed: a verdict
            reached stands, none reached is undetermined, and the result has ``complete``
            False with a note saying where it stopped.
        deadline : float, optional
            A :func:`time.time` value, overriding ``time_limit``.

        Returns
        -------
        MonitorResult

        Examples
        --------
        >>> import pandas as pd
        >>> from pcfair.audits.avoir import Monitor
        >>> res = Monitor("E[r] > 0.5", failure_prob=0.1).run(pd.DataFrame({"r": [1] * 200}))
        >>> res.verdict, res.stop
        (True, 25)
        """
        deadline = deadline_from(time_limit, deadline)
        total = len(stream) if isinstance(stream, pd.DataFrame) else None
        if total is not None and chunk_size is None and deadline is not None:
            chunk_size = TIME_LIMIT_CHUNK
        if isinstance(stream, pd.DataFrame):
            if chunk_size is None:
                chunks: Iterable = [stream]
            else:
                if int(chunk_size) < 1:
                    raise MonitorSettingError(f"chunk_size must be >= 1, got {chunk_size!r}")
                chunks = (stream.iloc[i:i + int(chunk_size)]
                          for i in range(0, len(stream), int(chunk_size)))
        elif isinstance(stream, (Mapping, pd.Series)):
            chunks = [stream]
        else:
            try:
                chunks = iter(stream)
            except TypeError as err:
                raise DataError(f"stream must be a DataFrame or an iterable of records, got "
                                f"{type(stream).__name__}") from err
        start = self._t
        cut = False
        for chunk in chunks:
            if until_verdict and self.stopped:
                break
            if expired(deadline):
                cut = True
                break
            self._process(as_frame(chunk), key, until_verdict)
        result = self.result()
        if cut:
            result.complete = False
            read = self._t - start
            where = (f"{read} of {total} records read (time limit)" if total is not None
                     else f"{read} records read (time limit); the stream was not exhausted")
            verdict = ("no verdict yet" if result.verdict is None
                       else f"the verdict at record {result.stop} stands")
            result.notes = (f"{where}; {verdict}",)
        return result

    # reporting --------------------------------------------------------------------------------
    def result(self) -> MonitorResult:
        """The current state (verdict, stop time, per-node values and bounds)."""
        est, cnt = self._leaf_state(self._sum[None, :], self._count[None, :])
        ev = self._evaluate(est, cnt, self._current_deltas())
        holds = _truth_obj(ev.root_truth[0]) if self.stopped else None
        alloc = self._alloc
        return MonitorResult(
            verdict=None if alloc is None else alloc.verdict,
            stop=self._stop,
            failure_prob=1.0 if alloc is None else float(alloc.failure_prob),
            failure_budget=self.failure_prob,
            split=self.split,
            n_observed=self._t,
            n_checks=self._n_checks,
            holds=holds,
            allocation=None if alloc is None else alloc.failure_probs.copy(),
            _program=self.program,
            _evaluation=ev,
            _counts=cnt,
        )

    def history_arrays(self):
        """Concatenated history: (t of shape (k,), Evaluation with (k, N) arrays, counts (k, L))."""
        prog = self.program
        if not self._hist:
            n = len(prog.nodes)
            empty = Evaluation(*(np.zeros((0, n)) for _ in range(5)))
            return np.zeros(0, dtype=int), empty, np.zeros((0, prog.n_leaves))
        t = np.concatenate([h[0] for h in self._hist])
        fields = ("value", "epsilon", "delta", "truth", "charged")
        ev = Evaluation(*(np.concatenate([getattr(h[1], f) for h in self._hist]) for f in fields))
        counts = np.concatenate([h[2] for h in self._hist])
        return t, ev, counts

    @property
    def history(self) -> pd.DataFrame:
        """One row per check and node: ``check``, ``n_observed`` and the node columns of
        :attr:`MonitorResult.terms` (plus ``charged``, the δ charged to a verdict)."""
        t, ev, counts = self.history_arrays()
        prog = self.program
        k, n_nodes = t.size, len(prog.nodes)
        spec_level = np.array([n.kind in ("and", "or") for n in prog.nodes])
        value = np.where(spec_level, np.nan, ev.value)
        eps = np.where(spec_level, np.nan, ev.epsilon)
        leaf_col = np.array([-1 if n.leaf is None else n.leaf for n in prog.nodes])
        n_col = np.full((k, n_nodes), -1, dtype=np.int64)
        is_leaf = leaf_col >= 0
        if k:
            n_col[:, is_leaf] = counts[:, leaf_col[is_leaf]]
        truth_codes = ev.truth.astype(int)
        truth = np.empty((k, n_nodes), dtype=object)
        truth[:] = None
        is_spec = np.array([n.is_spec for n in prog.nodes])
        truth[(truth_codes == 1) & is_spec] = True
        truth[(truth_codes == 0) & is_spec] = False
        with np.errstate(invalid="ignore"):
            lower, upper = value - eps, value + eps
        frame = pd.DataFrame({
            "check": np.repeat(np.arange(1, k + 1), n_nodes),
            "n_observed": np.repeat(t.astype(np.int64), n_nodes),
            "node": np.tile(np.arange(n_nodes), k),
            "id": np.tile([n.id for n in prog.nodes], k),
            "parent_id": np.tile(np.array([None if n.parent is None else prog.nodes[n.parent].id
                                           for n in prog.nodes], dtype=object), k),
            "type": np.tile([n.type for n in prog.nodes], k),
            "repr": np.tile([n.obj.to_text() for n in prog.nodes], k),
            "value": value.ravel(),
            "epsilon": eps.ravel(),
            "failure_prob": ev.delta.ravel(),
            "lower": lower.ravel(),
            "upper": upper.ravel(),
            "n": pd.array(np.where(n_col.ravel() >= 0, n_col.ravel(), 0), dtype="Int64"),
            "threshold": np.tile(np.array([n.c if n.kind == "cmp" else np.nan
                                           for n in prog.nodes]), k),
            "truth": truth.ravel(),
            "determined": np.where(is_spec, truth_codes != UNDETERMINED, None).ravel(),
            "charged": np.where(is_spec, ev.charged, np.nan).ravel(),
        })
        frame.loc[np.tile(~is_leaf, k), "n"] = pd.NA
        return frame


def _last_row(ev: Evaluation) -> Evaluation:
    return Evaluation(*(getattr(ev, f)[-1:] for f in
                        ("value", "epsilon", "delta", "truth", "charged")))


def monitor_model(model: Any, X_stream: pd.DataFrame | Iterable[pd.DataFrame],
                  spec: Spec | str, *, outcome: str | None = None, favorable: Any = 1,
                  output: str = "r",
                  chunk_size: int = 100, until_verdict: bool = True,
                  time_limit: float | None = None, **options) -> MonitorResult:
    """Monitor a black-box model: call it on each batch, add its output as column ``output``.

    Parameters
    ----------
    model : Circuit, PCClassifier, estimator or callable
        The monitored model (see :func:`pcfair.audits._model.as_model`): a record's decision
        is 1 when ``P(favorable | x) >= 0.5``.
    X_stream : pandas.DataFrame or iterable of DataFrames
        The inputs, in arrival order; a DataFrame is cut into chunks of ``chunk_size`` rows.
    spec : Spec or str
        The specification; it reads ``output`` and the input columns.
    outcome : str, optional
        The variable a circuit model predicts.
    favorable : object, default 1
        The favourable value of the outcome.
    output : str, default "r"
        Name of the decision column.
    chunk_size : int, default 100
    until_verdict : bool, default True
    time_limit : float, optional
        Seconds of wall-clock time, checked between chunks, as in :meth:`Monitor.run`
        (the model's calls included).
    **options
        Passed to :class:`Monitor` (``failure_prob``, ``split``, ``optimize_every``...).

    Returns
    -------
    MonitorResult

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from pcfair.audits.avoir import monitor_model
    >>> X = pd.DataFrame({"s": np.tile([0, 1], 500)})
    >>> res = monitor_model(lambda X: np.ones(len(X)), X, "E[r | s == 1] > 0.5")
    >>> res.verdict
    True
    """
    decide = as_model(model, outcome=outcome, favorable=favorable)
    monitor = Monitor(spec, **options)

    def decided():
        stream = X_stream
        if isinstance(stream, pd.DataFrame):
            stream = (X_stream.iloc[i:i + chunk_size] for i in range(0, len(X_stream), chunk_size))
        for X in stream:
            if until_verdict and monitor.stopped:  # no model call past the verdict
                return
            X = as_frame(X)
            yield X.assign(**{output: decide.hits(X).astype(np.int64)})

    return monitor.run(decided(), until_verdict=until_verdict, time_limit=time_limit)


def spec(psi: Spec | str, *, output: str = "r", batched: bool = False,
         **options) -> Callable[[Callable], Callable]:
    """Decorator: monitor a decision function's outputs as it is called.

    Every call binds the function's arguments by name and its return value (as column
    ``output``) into one record for a :class:`Monitor`. Records are handed to the monitor in
    groups that end on its check boundaries (every ``optimize_every`` calls), which gives the
    same verdicts and stop times as feeding each call at once; ``func.result()`` flushes the
    pending records and returns the current :class:`MonitorResult`, and ``func.monitor`` is the
    monitor itself. With ``batched=True`` the function takes a DataFrame and returns one
    decision per row, and each call feeds the whole batch.

    Parameters
    ----------
    psi : Spec or str
        The specification.
    output : str, default "r"
        Name of the return value in the specification.
    batched : bool, default False
    **options
        Passed to :class:`Monitor` (``failure_prob``, ``split``, ``optimize_every``...).

    Examples
    --------
    >>> from pcfair.audits.avoir import spec
    >>> @spec("E[r | sex == 'F'] / E[r | sex == 'M'] > 0.8", failure_prob=0.1)
    ... def hire(sex, score):
    ...     return int(score > 0.5)
    >>> for i in range(200):
    ...     _ = hire("F" if i % 2 else "M", (i % 10) / 10)
    >>> hire.result().n_observed
    200
    """
    monitor = Monitor(psi, **options)
    pending: list[dict] = []

    def flush() -> None:
        if pending:
            records = list(pending)
            pending.clear()
            monitor._process(ColumnCache.from_records(records), None, until_verdict=False)

    def result() -> MonitorResult:
        flush()
        return monitor.result()

    def decorate(func: Callable) -> Callable:
        signature = inspect.signature(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            out = func(*args, **kwargs)
            if batched:
                frames = [a for a in (*args, *kwargs.values()) if isinstance(a, pd.DataFrame)]
                if len(frames) != 1:
                    raise DataError("a batched monitored function takes exactly one DataFrame")
                batch = frames[0].copy()
                values = np.asarray(out)
                if values.ndim != 1 or values.shape[0] != len(batch):
                    raise DataError(f"the function returned an output of shape {values.shape} "
                                    f"for {len(batch)} records; expected one decision per record")
                batch[output] = values
                flush()
                monitor.update(batch)
                return out
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()
            record = {}
            for name, value in bound.arguments.items():
                kind = signature.parameters[name].kind
                if kind == inspect.Parameter.VAR_KEYWORD:
                    record.update(value)
                elif kind != inspect.Parameter.VAR_POSITIONAL:
                    record[name] = value
            record[output] = out
            pending.append(record)
            if (monitor.n_observed + len(pending)) % monitor.optimize_every == 0:
                flush()
            return out

        wrapper.monitor = monitor
        wrapper.flush = flush
        wrapper.result = result
        return wrapper

    return decorate
