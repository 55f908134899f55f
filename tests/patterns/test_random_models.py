"""Property tests: both exact engines against an independent brute force on random models.

Issue 14's acceptance: random models with extreme and zero parameters, the decision anywhere in
the vtree, huge log-normalisers, top-k by divergence at several δ including 0, Pareto with rare
values; a few hundred models in the default suite, at least 2,000 in the slow one.

The oracle is ``tests/_pattern_oracle.py`` (:func:`pattern_arrays`, :func:`summary_masks`,
:func:`divergence_masses`): every probability is a sum of rows of the NORMALISED joint table,
computed in log space, so a circuit whose root log-weights carry +5000 has the same oracle as
the original. The semantics tested (``pc-certifier.md`` and issue 14):

* a pattern discriminates iff ``|Δ| > δ + THRESHOLD_ATOL`` (1e-12). With the oracle's ``|Δ|``:
  above δ + 1e-10 it must be reported; at most δ + 1e-13 (which includes every ``|Δ|`` that is
  mathematically δ, such as Δ = 0 at δ = 0) it must not; in between ("border") rounding
  decides, and the engine's summaries must then be those of its own Σ (checked by recomputing
  the oracle's summaries on clear ∪ (border ∩ the engine's Σ)). The dyadic test checks the
  threshold exactly (``Fraction``): δ = max |Δ| fair, δ = max − 1e-10 unfair;
* ``certify`` never says fair when the oracle has a pattern with ``|Δ| > δ + 1e-9``;
  ``max_abs_score`` (dense) is the oracle's ``max |Δ|`` within 1e-9;
* all / maximal / minimal / Pareto sets equal the oracle's; top-k values (by ``|Δ|`` and by
  divergence) equal the oracle's k best, the sets equal where the values are separated;
* divergence is spec §2's closed form from the four masses (``+inf`` where δ = 0 and the fix
  must empty a block), on both engines;
* Pareto ties are relative (1e-9·max) on scores and probabilities;
* non-smooth / non-decomposable circuits are refused with ``StructureError``.

Every failure names the family, the seed and the variant, so ``make_case(family, seed)``
reproduces the model. ``python tests/patterns/test_random_models.py FAMILY SEED [DELTA]`` prints
the model's check report.
"""

from __future__ import annotations

import collections
import math
import sys
import time
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import _pattern_oracle as oracle  # noqa: E402
import _pcgen as gen  # noqa: E402
import pcfair  # noqa: E402
from pcfair.circuit import CircuitBuilder  # noqa: E402
from pcfair.errors import PCFairError, StructureError  # noqa: E402
from pcfair.patterns import certify, find_patterns  # noqa: E402

try:  # the engines' strict-threshold tolerance (issue 14, item 6)
    from pcfair.patterns.scores import THRESHOLD_ATOL
except ImportError:  # not there yet on today's code: the value the lead announced
    THRESHOLD_ATOL = 1e-12

#: Σ membership as the engines must decide it (|Δ| > δ + THRESHOLD_ATOL): oracle |Δ| > δ +
#: CLEAR_ABOVE must be reported; |Δ| ≤ δ + BORDER_BELOW must not (this includes every pattern
#: whose |Δ| is mathematically δ, e.g. Δ = 0 at δ = 0); in between, rounding decides. See
#: oracle.threshold_bands. (The lead's looser reading, ±1e-9 around δ, is oracle.bands.)
BORDER_BELOW, CLEAR_ABOVE = 1e-13, 1e-10
DELTAS = (0.0, 0.01, 0.05, 0.1)
SCORE_ATOL = 1e-9
DIV_RTOL, DIV_ATOL = 1e-7, 1e-10

# ---------------------------------------------------------------------------- the models

#: family -> (generator mode, search engine applicable)
FAMILIES = {
    "nb": True,             # naive Bayes, decision at the root, mixed extreme parameters
    "psdd": True,           # random PSDD on a random vtree, decision anywhere
    "psdd_deep": True,      # random PSDD with the decision at the deepest leaf of the vtree
    "clt": True,            # tree Bayesian network (CLT shape), decision root/inner/leaf
    "mixture": False,       # non-deterministic mixture of factorised components (dense only)
    "nb_mixture": False,    # mixture of naive Bayes models (decision inside, non-deterministic)
    "rare": True,           # naive Bayes / PSDD with 1e-12 entries: P(x, y) < 1e-15 patterns
    "dyadic": True,         # dyadic parameters (multiples of 1/8): exact threshold checks
    "underflow": True,      # entries of 1e-100..1e-220: P(x, y) below the double range
}                           # (searchable unless the shape drawn is a mixture)
#: constant-factor variants: (what, constant)
VARIANTS = (("root", 800.0), ("root", 5000.0), ("root", -800.0), ("root", -5000.0),
            ("leaf", 700.0), ("leaf", -3000.0), ("root", 1e5), ("leaf", -1e5))


@dataclass
class Case:
    family: str
    seed: int
    pc: object
    cards: list
    decision: int
    sensitive: list
    favorable: int
    searchable: bool
    reference: object = None      # the circuit the oracle is computed on (the original)
    variant: str = ""
    notes: dict = field(default_factory=dict)

    @property
    def tag(self) -> str:
        v = f" variant={self.variant}" if self.variant else ""
        return f"[{self.family} seed={self.seed}{v}]"

    @property
    def names(self) -> list:
        return [f"x{v}" for v in self.sensitive]

    @property
    def dname(self) -> str:
        return f"x{self.decision}"


def _draw_cards(rng, max_patterns: int, max_rows: int = 2048):
    """Feature cards (2-6 features, arities 2-4, mostly binary), decision position and 1-3
    sensitive variables, redrawn until the pattern lattice is small enough for brute force."""
    for _ in range(200):
        n = int(rng.integers(2, 7))
        feats = [int(rng.choice([2, 3, 4], p=[0.6, 0.25, 0.15])) for _ in range(n)]
        d = int(rng.integers(n + 1))
        cards = feats[:d] + [2] + feats[d:]
        z = [v for v in range(n + 1) if v != d]
        k = int(rng.integers(1, min(3, n) + 1))
        sens = sorted(int(s) for s in rng.choice(z, size=k, replace=False))
        if (oracle.count_patterns(cards, d, sens) <= max_patterns
                and int(np.prod(cards)) <= max_rows):
            return cards, d, sens
    return [2, 2, 2], 0, [1]


def make_case(family: str, seed: int, max_patterns: int = 1500) -> Case:
    """The model of ``family`` for ``seed`` (deterministic: the reproducer of a failure)."""
    rng = np.random.default_rng([hash_family(family), seed])
    cards, d, sens = _draw_cards(rng, max_patterns)
    fav = int(rng.integers(2)) if rng.random() < 0.25 else 1
    n = len(cards)
    searchable = FAMILIES[family]
    if family == "nb":
        pc = gen.naive_bayes_x(rng, cards, d, gen.param_drawer(rng, "mixed"))
    elif family == "psdd":
        pc = gen.random_psdd_x(rng, cards, gen.param_drawer(rng, "mixed"),
                               shared_primes=bool(rng.random() < 0.3))
    elif family == "psdd_deep":
        pc = gen.random_psdd_x(rng, cards, gen.param_drawer(rng, "mixed"),
                               vtree=gen.deep_vtree(rng, n, d),
                               shared_primes=bool(rng.random() < 0.3))
    elif family == "clt":
        role = rng.choice(["root", "any"])
        pc = gen.tree_bn_x(rng, cards, gen.param_drawer(rng, "mixed"),
                           root=d if role == "root" else None)
    elif family == "mixture":
        pc = gen.mixture_x(rng, cards, gen.param_drawer(rng, "mixed"),
                           components=int(rng.integers(2, 4)))
    elif family == "nb_mixture":
        pc = gen.mixture_x(rng, cards, gen.param_drawer(rng, "mixed"),
                           components=int(rng.integers(2, 4)), naive_bayes_decision=d)
    elif family == "rare":
        draw = gen.param_drawer(rng, "rare", tie_rate=0.1)
        if rng.random() < 0.5:
            pc = gen.naive_bayes_x(rng, cards, d, draw)
        else:
            pc = gen.random_psdd_x(rng, cards, draw, indicator_rate=0.05)
    elif family == "underflow":
        draw = gen.param_drawer(rng, "underflow", tie_rate=0.1)
        shape = rng.choice(["nb", "psdd", "clt", "mixture"], p=[0.25, 0.25, 0.35, 0.15])
        if shape == "nb":
            pc = gen.naive_bayes_x(rng, cards, d, draw)
        elif shape == "psdd":
            pc = gen.random_psdd_x(rng, cards, draw)
        elif shape == "clt":
            pc = gen.tree_bn_x(rng, cards, draw, root=d if rng.random() < 0.5 else None)
        else:
            pc = gen.mixture_x(rng, cards, draw, components=int(rng.integers(2, 4)))
            searchable = False
    elif family == "dyadic":
        draw = gen.param_drawer(rng, "dyadic", tie_rate=0.3)
        shape = rng.choice(["nb", "psdd", "clt"])
        if shape == "nb":
            pc = gen.naive_bayes_x(rng, cards, d, draw)
        elif shape == "psdd":
            pc = gen.random_psdd_x(rng, cards, draw)
        else:
            pc = gen.tree_bn_x(rng, cards, draw)
    else:
        raise ValueError(family)
    return Case(family, seed, pc, cards, d, sens, fav, searchable, reference=pc)


def hash_family(family: str) -> int:
    return sum((i + 1) * ord(c) for i, c in enumerate(family))


def variant_of(case: Case, which: int) -> Case | None:
    """``case`` with a constant factor on its function (root log-weights or one variable's
    leaves shifted by a constant): the normalised distribution, hence every answer, is the
    original's."""
    what, c = VARIANTS[which % len(VARIANTS)]
    if what == "root":
        pc = gen.shift_root_logw(case.pc, c)
    else:
        vs = gen.leaf_scalable_variables(case.pc)
        pc = gen.scale_leaves(case.pc, vs[which % len(vs)], c) if vs else None
        what = f"leaf(x{vs[which % len(vs)]})" if vs else what
    if pc is None:
        return None
    return Case(case.family, case.seed, pc, case.cards, case.decision, case.sensitive,
                case.favorable, case.searchable, reference=case.reference,
                variant=f"{what}{c:+g}")


# ---------------------------------------------------------------------------- comparisons


def pkey(p) -> tuple:
    """An engine Pattern as the oracle's key ((var, value index) pairs, sorted)."""
    return (tuple(sorted((int(k[1:]), int(v)) for k, v in p.x.items())),
            tuple(sorted((int(k[1:]), int(v)) for k, v in p.y.items())))


def _close_div(a: float, b: float) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    if math.isnan(a) or math.isnan(b):
        return False
    return abs(a - b) <= DIV_ATOL + DIV_RTOL * max(abs(a), abs(b))


def _fmt_keys(keys, limit=4) -> str:
    keys = sorted(keys)
    more = f" (+{len(keys) - limit} more)" if len(keys) > limit else ""
    return ", ".join(f"x={dict(x)} y={dict(y)}" for x, y in keys[:limit]) + more


class Checker:
    """Runs the engines on one case and records every disagreement with the oracle."""

    def __init__(self, case: Case, arrays: oracle.PatternArrays | None = None):
        self.case = case
        self.arrays = arrays if arrays is not None else oracle.pattern_arrays(
            case.reference, case.cards, case.decision, case.sensitive, case.favorable)
        self.index = {k: i for i, k in enumerate(self.arrays.keys)}
        self.failures: list[str] = []
        self.counts = collections.Counter()
        self._div_cache: dict = {}

    # -- helpers
    def fail(self, engine, delta, what, msg):
        self.failures.append(f"{self.case.tag} engine={engine} δ={delta} {what}: {msg}")

    def div(self, delta):
        if delta not in self._div_cache:
            self._div_cache[delta] = self.arrays.divergence(delta)
        return self._div_cache[delta]

    def call(self, engine, delta, what, fn, **kw):
        try:
            return fn(self.case.pc, self.case.dname, self.case.names, delta,
                      favorable=self.case.favorable, engine=engine, **kw)
        except Exception as e:  # noqa: BLE001 - any crash is a finding
            self.fail(engine, delta, what, f"raised {type(e).__name__}: {e}")
            return None

    # -- the checks
    def run(self, delta: float, engines=("lattice",), kinds=("all", "maximal", "minimal", "pareto"),
            topk=((3, "discrimination"), (3, "divergence"))):
        a = self.arrays
        clear, border = oracle.threshold_bands(a, delta, BORDER_BELOW, CLEAR_ABOVE)
        self.counts["checks"] += 1
        if border.any():
            self.counts["border"] += 1
        for engine in engines:
            self.check_certify(engine, delta, clear, border)
            sigma = self.check_all(engine, delta, clear, border)
            member = clear | (border & sigma) if sigma is not None else clear
            masks = None
            for kind in kinds:
                if kind == "all" or (engine == "search" and kind == "minimal"):
                    continue
                if kind == "pareto" and oracle.pareto_ambiguous(a.abs_delta, a.p_xy, member):
                    self.counts["pareto_ambiguous"] += 1
                    continue
                if masks is None:
                    masks = oracle.summary_masks(a, member)
                    # a border pattern's membership is decided by rounding, and the search
                    # engine's kinds run different code (the compiled "all", the Python
                    # pareto/maximal passes): each may decide it its own way
                    alt = ([oracle.summary_masks(a, m) for m in (clear, clear | border)]
                           if engine == "search" and border.any() else [])
                self.check_kind(engine, delta, kind, [masks[kind]] + [m[kind] for m in alt],
                                border)
            for k, rank in topk:
                self.check_topk(engine, delta, k, rank, member, border)

    def check_certify(self, engine, delta, clear, border):
        a = self.arrays
        cert = self.call(engine, delta, "certify", certify)
        if cert is None:
            return
        worst = float(a.abs_delta[a.defined].max()) if a.defined.any() else 0.0
        if clear.any():
            if cert.fair is not False:
                i = int(np.argmax(np.where(clear, a.abs_delta, -1)))
                self.fail(engine, delta, "certify",
                          f"WRONG VERDICT fair={cert.fair} complete={cert.complete} "
                          f"max_abs_score={cert.max_abs_score} but the oracle has "
                          f"{int(clear.sum())} patterns, e.g. {a.describe(i)}")
            elif cert.witness is not None:
                k = pkey(cert.witness)
                i = self.index.get(k)
                if i is None or not (clear[i] or border[i]):
                    self.fail(engine, delta, "certify", f"witness {k} is not a pattern")
                elif abs(cert.witness.score - float(a.delta[i])) > SCORE_ATOL:
                    self.fail(engine, delta, "certify",
                              f"witness score {cert.witness.score!r} vs oracle {a.delta[i]!r}")
            else:
                self.fail(engine, delta, "certify", "fair=False without a witness")
        elif not border.any():
            if cert.fair is not True or not cert.complete:
                self.fail(engine, delta, "certify",
                          f"fair={cert.fair} complete={cert.complete} witness="
                          f"{None if cert.witness is None else cert.witness.to_dict()} but the "
                          f"oracle's max |Δ| is {worst!r}")
        if engine == "lattice" and cert.max_abs_exact and cert.max_abs_score is not None:
            if not abs(cert.max_abs_score - worst) <= SCORE_ATOL:
                self.fail(engine, delta, "certify.max_abs_score",
                          f"{cert.max_abs_score!r} vs oracle {worst!r}")

    def _check_values(self, engine, delta, what, ps, border):
        a = self.arrays
        div = self.div(delta)
        for p in ps:
            i = self.index.get(pkey(p))
            if i is None or not a.defined[i]:
                self.fail(engine, delta, what, f"reports an undefined pattern {pkey(p)}")
                continue
            if not abs(p.score) > delta + THRESHOLD_ATOL:
                # the engine's own score says it is not a discrimination pattern
                self.fail(engine, delta, what,
                          f"reports {p.text()} with score {p.score!r} (|Δ| ≤ δ + "
                          f"{THRESHOLD_ATOL}) and divergence {p.divergence!r}; oracle: "
                          f"{a.describe(i)}")
            if not abs(p.score - float(a.delta[i])) <= SCORE_ATOL:
                self.fail(engine, delta, what, f"score {p.score!r} vs oracle: {a.describe(i)}")
            pxy = float(a.p_xy[i])
            if not abs(p.probability - pxy) <= 1e-9 * pxy + 1e-300:
                self.fail(engine, delta, what,
                          f"probability {p.probability!r} vs oracle {pxy!r} ({a.describe(i)})")
            lpxy = getattr(a, "log_p_xy", None)
            if lpxy is not None and not abs(p.log_p - lpxy[i]) <= 1e-9 * (1 + abs(lpxy[i])):
                self.fail(engine, delta, what, f"log probability {p.log_p!r} vs oracle "
                          f"{float(lpxy[i])!r} ({a.describe(i)})")
            if not border[i] and not _close_div(p.divergence, float(div[i])):
                self.fail(engine, delta, what,
                          f"divergence {p.divergence!r} vs oracle {float(div[i])!r} "
                          f"({a.describe(i)})")
                self.counts["divergence_mismatch"] += 1

    def check_all(self, engine, delta, clear, border):
        ps = self.call(engine, delta, "all", find_patterns, kind="all")
        if ps is None:
            return None
        got = {pkey(p) for p in ps}
        if not ps.complete or ps.count != len(ps.patterns):
            self.fail(engine, delta, "all", f"complete={ps.complete} count={ps.count} "
                      f"len={len(ps.patterns)}")
        want = {self.arrays.keys[i] for i in np.flatnonzero(clear)}
        allowed = want | {self.arrays.keys[i] for i in np.flatnonzero(border)}
        if not want <= got or not got <= allowed:
            self.fail(engine, delta, "all", f"missing {len(want - got)} "
                      f"[{_fmt_keys(want - got)}], extra {len(got - allowed)} "
                      f"[{_fmt_keys(got - allowed)}] of {len(want)}")
        self._check_values(engine, delta, "all", ps, border)
        sigma = np.zeros(len(self.arrays), bool)
        for k in got:
            if k in self.index:
                sigma[self.index[k]] = True
        return sigma

    def check_kind(self, engine, delta, kind, want_masks, border):
        """The summary ``kind`` against the first of ``want_masks`` (the others are as
        acceptable: the summary with the border patterns read another way)."""
        ps = self.call(engine, delta, kind, find_patterns, kind=kind)
        if ps is None:
            return
        self.counts[f"{kind}_checked"] += 1
        got = {pkey(p) for p in ps}
        wants = [{self.arrays.keys[i] for i in np.flatnonzero(m)} for m in want_masks]
        want = wants[0]
        if got not in wants:
            self.fail(engine, delta, kind, f"missing {len(want - got)} [{_fmt_keys(want - got)}]"
                      f", extra {len(got - want)} [{_fmt_keys(got - want)}] of {len(want)}")
        if not ps.complete:
            self.fail(engine, delta, kind, "incomplete")
        self._check_values(engine, delta, kind, ps, border)

    def check_topk(self, engine, delta, k, rank, member, border):
        a = self.arrays
        ps = self.call(engine, delta, f"topk({k},{rank})", find_patterns, kind="topk", k=k,
                       rank_by=rank)
        if ps is None:
            return
        what = f"topk(k={k},{rank})"
        if (member & border).any() or any(
                (i := self.index.get(pkey(p))) is not None and border[i] for p in ps):
            self._check_topk_border(engine, delta, k, rank, member & ~border, border, ps, what)
            return
        idx = np.flatnonzero(member)
        vals = a.abs_delta[idx] if rank == "discrimination" else self.div(delta)[idx]
        order = np.argsort(-vals, kind="stable")
        want = vals[order][:k]
        got = np.array([p.abs_score if rank == "discrimination" else p.divergence for p in ps])
        if len(got) != len(want):
            self.fail(engine, delta, what, f"{len(got)} patterns, oracle {len(want)}")
            return
        close = [(abs(g - w) <= SCORE_ATOL) if rank == "discrimination" else _close_div(g, w)
                 for g, w in zip(got, want)]
        if not all(close):
            j = close.index(False)
            self.fail(engine, delta, what,
                      f"value #{j + 1}: engine {got[j]!r} ({ps[j].text()}) vs oracle {want[j]!r}"
                      f" ({a.describe(int(idx[order[j]]))}); engine {got.tolist()} oracle "
                      f"{want.tolist()}")
            return
        # sets, where the k-th value is separated from the (k+1)-th
        if len(want) and len(vals) > k:
            kth, nxt = want[-1], vals[order[k]]
            sep = (kth - nxt > SCORE_ATOL) if rank == "discrimination" else \
                (not _close_div(kth, nxt) and kth > nxt)
            if sep:
                want_keys = {a.keys[int(idx[o])] for o in order[:k]}
                got_keys = {pkey(p) for p in ps}
                if got_keys != want_keys:
                    self.fail(engine, delta, what,
                              f"set differs: missing [{_fmt_keys(want_keys - got_keys)}] extra "
                              f"[{_fmt_keys(got_keys - want_keys)}]")
        self._check_values(engine, delta, what, ps, border)

    def _check_topk_border(self, engine, delta, k, rank, clear, border, ps, what):
        """Top-k when border patterns are involved. Their membership is decided by rounding and
        so is their divergence (at δ = 0 it jumps from 0 to +inf when a block of y ¬x is
        empty), so they may appear anywhere in the list with any value; the clear patterns must
        still be ranked right: the list is sorted, has min(k, #clear) entries at least, every
        clear entry carries the oracle's value, and every clear pattern left out is no better
        than the engine's last entry."""
        a = self.arrays
        self.counts["topk_border"] += 1
        val = (lambda p: p.abs_score) if rank == "discrimination" else (lambda p: p.divergence)
        oval = a.abs_delta if rank == "discrimination" else self.div(delta)
        got = [val(p) for p in ps]
        keys = [pkey(p) for p in ps]
        n_clear = int(clear.sum())
        if not min(k, n_clear) <= len(ps) <= k:
            self.fail(engine, delta, what, f"{len(ps)} patterns; the oracle has {n_clear} clear "
                      f"ones and {int(border.sum())} at the threshold")
        for kk in keys:
            i = self.index.get(kk)
            if i is None or not (clear[i] or border[i]):
                self.fail(engine, delta, what, f"{kk} is not a pattern")
                return
        for g1, g2 in zip(got, got[1:]):
            if g2 > g1 and not (_close_div(g1, g2) if rank == "divergence"
                                else abs(g1 - g2) <= SCORE_ATOL):
                self.fail(engine, delta, what, f"not sorted: {got}")
                break
        if len(ps):
            last = got[-1]
            left_out = [i for i in np.flatnonzero(clear) if a.keys[i] not in set(keys)]
            for i in left_out:
                v = float(oval[i])
                worse = (v <= last + SCORE_ATOL) if rank == "discrimination" else \
                    (v <= last or _close_div(v, last))
                if len(ps) < k or not worse:
                    self.fail(engine, delta, what,
                              f"left out {a.describe(i)} (value {v!r}); engine {got}")
                    break
        self._check_values(engine, delta, what, ps, border)


# ---------------------------------------------------------------------------- drivers


def check_case(case: Case, rng: np.random.Generator, n_deltas: int = 1,
               search_every: bool = True, arrays=None) -> Checker:
    """The standard battery on one model: δ drawn from DELTAS (δ = 0 included often), the dense
    engine on every kind, the search engine (where applicable) on every kind but minimal."""
    ch = Checker(case, arrays)
    deltas = list(rng.choice(DELTAS, size=n_deltas, replace=False))
    engines = ("lattice", "search") if case.searchable and search_every else ("lattice",)
    for delta in deltas:
        k = int(rng.choice([1, 3, 10]))
        ch.run(float(delta), engines=engines,
               topk=((k, "discrimination"), (k, "divergence")))
    return ch


def run_family(family: str, seeds, variants: bool = True, n_deltas: int = 1,
               search_rate: float = 1.0, max_patterns: int = 1500):
    """Check every seed of ``family`` (and one constant-factor variant of each); returns
    (failures, counts)."""
    failures, counts = [], collections.Counter()
    for seed in seeds:
        rng = np.random.default_rng([7, hash_family(family), seed])
        case = make_case(family, seed, max_patterns)
        try:
            ch = check_case(case, rng, n_deltas, search_every=rng.random() < search_rate)
        except Exception as e:  # noqa: BLE001 - the oracle itself must not fail
            failures.append(f"{case.tag} ORACLE/HARNESS ERROR {type(e).__name__}: {e}")
            continue
        failures += ch.failures
        counts += ch.counts
        counts["models"] += 1
        if family == "rare":
            a = ch.arrays
            if a.defined.any() and float(np.min(a.p_xy[a.defined])) < 1e-15:
                counts["models_with_P(x,y)<1e-15"] += 1
        if variants:
            var = variant_of(case, seed)
            if var is not None:
                vrng = np.random.default_rng([8, hash_family(family), seed])
                vch = check_case(var, vrng, n_deltas, search_every=vrng.random() < search_rate,
                                 arrays=ch.arrays)
                failures += vch.failures
                counts += vch.counts
                counts["models"] += 1
                counts["variant_models"] += 1
    return failures, counts


def _report(failures, limit=40) -> str:
    head = "\n".join(failures[:limit])
    more = f"\n... and {len(failures) - limit} more" if len(failures) > limit else ""
    return f"{len(failures)} disagreements with the brute force:\n{head}{more}"


# ---------------------------------------------------------------------------- the oracle itself


@pytest.mark.parametrize("seed", range(12))
def test_vectorised_oracle_matches_the_slow_oracle(seed):
    """pattern_arrays / summary_masks / divergence_masses against the definitions written out
    in the slow oracle (enumerate_patterns, maximal, minimal, pareto)."""
    family = ("nb", "psdd", "clt", "mixture")[seed % 4]
    case = make_case(family, 1000 + seed, max_patterns=300)
    a = oracle.pattern_arrays(case.pc, case.cards, case.decision, case.sensitive, case.favorable)
    for delta in DELTAS:
        try:
            recs = oracle.enumerate_patterns(case.pc, case.cards, case.decision, case.sensitive,
                                             case.favorable, delta)
        except AssertionError:  # the slow oracle's own guard: P(x,y) = P(y) = 1 with a
            continue            # rounding residue Δ = −5e-25 at δ = 0 (a degenerate model)
        by_key = {r.key: r for r in recs}
        assert {a.keys[i] for i in np.flatnonzero(a.defined)} == set(by_key), case.tag
        div = a.divergence(delta)
        for i in np.flatnonzero(a.defined):
            r = by_key[a.keys[i]]
            assert abs(a.delta[i] - r.delta) <= 1e-12, (case.tag, a.describe(i))
            assert a.p_xy[i] == pytest.approx(r.probability, rel=1e-12, abs=1e-300)
            if math.isinf(div[i]):
                # the slow oracle subtracts (a0 = P(x,y) − P(d,x,y)) and may miss the exact
                # zero mass that makes the divergence infinite (issue 14 item 4)
                assert delta == 0 and (a.b1[i] == 0 if a.delta[i] > 0 else a.b0[i] == 0)
            elif (abs(abs(r.delta) - delta) > 1e-9 and not math.isinf(r.divergence)
                  and min(a.b1[i], a.b0[i]) > 1e-6 * a.p_y[i]):
                # (where P(d,y,¬x) or P(¬d,y,¬x) is tiny the slow oracle's subtractions lose
                # digits: the direct masses are the accurate ones)
                assert _close_div(div[i], r.divergence), (case.tag, delta, a.describe(i))
        clear, border = oracle.bands(a, delta)
        if border.any():
            continue
        masks = oracle.summary_masks(a, clear)
        assert {a.keys[i] for i in np.flatnonzero(masks["maximal"])} == \
            {r.key for r in oracle.maximal(recs, delta)}, case.tag
        assert {a.keys[i] for i in np.flatnonzero(masks["minimal"])} == \
            {r.key for r in oracle.minimal(recs, delta)}, case.tag
        if not oracle.pareto_ambiguous(a.abs_delta, a.p_xy, clear):
            # the relative tie rule, written out on the slow oracle's records
            sigma = oracle.discrimination_patterns(recs, delta)

            def beats(p, q, t=oracle.PARETO_RTOL):
                return (abs(p.delta) - abs(q.delta) > t * max(abs(p.delta), abs(q.delta))
                        or p.probability - q.probability > t * max(p.probability,
                                                                   q.probability))

            front = {p.key for p in sigma if all(beats(p, q) for q in sigma if q is not p)}
            assert {a.keys[i] for i in np.flatnonzero(masks["pareto"])} == front, case.tag


def test_oracle_normalises_huge_constants():
    case = make_case("psdd", 3)
    ref = oracle.normalised_joint(case.pc)[1]
    for i in range(len(VARIANTS)):
        var = variant_of(case, i)
        if var is None:
            continue
        assert abs(gen.log_normaliser(var.pc) - VARIANTS[i][1]) < 1e-9 or var.variant.startswith(
            "leaf"), var.tag
        np.testing.assert_allclose(oracle.normalised_joint(var.pc)[1], ref, rtol=1e-9,
                                   atol=1e-300, err_msg=var.tag)


def test_oracle_on_the_spec_counterexample():
    """Spec §2's counterexample, by the oracle: top-1 by divergence is s=0 | a=0 at 0.1597."""
    pc = spec_counterexample()
    a = oracle.pattern_arrays(pc, [2, 2, 2], 0, [1])
    div = a.divergence(0.01)
    i = int(np.argmax(div))
    assert a.keys[i] == (((1, 0),), ((2, 0),))
    assert div[i] == pytest.approx(0.15970393634635, rel=1e-9)


def test_divergence_masses_infinite_cases():
    # Δ > 0 and P(d, y, ¬x) = 0 at δ = 0: Q(d | x, y) must be 0
    assert oracle.divergence_masses(0.2, 0.1, 0.0, 0.3, 0.0) == math.inf
    assert math.isfinite(oracle.divergence_masses(0.2, 0.1, 0.0, 0.3, 0.01))
    # Δ < 0 and P(¬d, y, ¬x) = 0 at δ = 0
    assert oracle.divergence_masses(0.1, 0.2, 0.3, 0.0, 0.0) == math.inf
    # Δ = 0 exactly: 0
    assert oracle.divergence_masses(0.1, 0.1, 0.2, 0.2, 0.0) == 0.0


# ---------------------------------------------------------------------------- dedicated tests


def spec_counterexample():
    b = CircuitBuilder({"x0": [0, 1], "x1": [0, 1], "x2": [0, 1]})  # x0 = D, x1 = s, x2 = a
    root = b.decision([
        (b.indicator("x0", 1), b.product(b.categorical("x1", [0.99, 0.01]),
                                         b.categorical("x2", [0.5, 0.5])), 0.99),
        (b.indicator("x0", 0), b.product(b.categorical("x1", [0.01, 0.99]),
                                         b.categorical("x2", [0.9, 0.1])), 0.01),
    ])
    return b.build(root)


@pytest.mark.parametrize("engine", ["lattice", "search"])
def test_spec_counterexample_top1_by_divergence(engine):
    pc = spec_counterexample()
    got = find_patterns(pc, "x0", ["x1"], 0.01, kind="topk", k=1, rank_by="divergence",
                        engine=engine)
    assert [pkey(p) for p in got] == [(((1, 0),), ((2, 0),))], [p.text() for p in got]
    assert got[0].divergence == pytest.approx(0.15970393634635, rel=1e-9)


@pytest.mark.parametrize("delta", DELTAS)
def test_search_topk_by_divergence_equals_dense(delta):
    """Top-k by divergence, search vs dense vs oracle, on models built to stress the §2 bound
    (naive Bayes with skewed priors and CLTs), at every δ including 0."""
    failures = []
    for seed in range(12):
        case = make_case(("nb", "clt", "psdd", "rare")[seed % 4], 5000 + seed, max_patterns=600)
        ch = Checker(case)
        clear, border = oracle.bands(ch.arrays, delta)
        if border.any():
            continue
        for engine in ("lattice", "search"):
            for k in (1, 5):
                ch.check_topk(engine, delta, k, "divergence", clear, border)
        failures += ch.failures
    assert not failures, _report(failures)


def inf_model():
    """Naive Bayes (x0 = D) with exact zeros: P(x1=0 | d) = 0 and P(x2=1 | ¬d) = 0, so at δ = 0
    patterns x1=1 | y have P(d, y, ¬x) = 0 with Δ > 0 and x2=0 | y have P(¬d, y, ¬x) = 0 with
    Δ < 0: divergence +inf."""
    b = CircuitBuilder({"x0": [0, 1], "x1": [0, 1], "x2": [0, 1], "x3": [0, 1]})
    root = b.decision([
        (b.indicator("x0", 1), b.product(b.categorical("x1", [0.0, 1.0]),
                                         b.product(b.categorical("x2", [0.3, 0.7]),
                                                   b.categorical("x3", [0.4, 0.6]))), 0.6),
        (b.indicator("x0", 0), b.product(b.categorical("x1", [0.5, 0.5]),
                                         b.product(b.categorical("x2", [1.0, 0.0]),
                                                   b.categorical("x3", [0.8, 0.2]))), 0.4),
    ])
    return b.build(root)


@pytest.mark.parametrize("engine", ["lattice", "search"])
def test_divergence_is_infinite_where_a_block_must_be_emptied(engine):
    pc = inf_model()
    a = oracle.pattern_arrays(pc, [2, 2, 2, 2], 0, [1, 2])
    div = a.divergence(0.0)
    inf_idx = np.flatnonzero(np.isinf(div))
    assert {float(np.sign(a.delta[i])) for i in inf_idx} == {1.0, -1.0}  # both signs occur
    infs = {a.keys[i] for i in inf_idx}
    got = find_patterns(pc, "x0", ["x1", "x2"], 0.0, kind="topk", k=1000, rank_by="divergence",
                        engine=engine)
    by_key = {pkey(p): p for p in got}
    missing = infs - set(by_key)
    assert not missing, f"patterns with infinite divergence not reported: {_fmt_keys(missing)}"
    wrong = {k: by_key[k].divergence for k in infs if by_key[k].divergence != math.inf}
    assert not wrong, f"{engine}: should be +inf: {wrong}"
    # and nothing else is infinite
    assert {k for k, p in by_key.items() if p.divergence == math.inf} == infs


@pytest.mark.parametrize("engine", ["lattice", "search"])
def test_no_crash_with_1e12_parameters(engine):
    """Issue 14 item 3 (math domain error in the divergence cut): naive Bayes and PSDDs whose
    parameters are 1e-12 and 1 − 1e-12, every query kind, every δ."""
    failures = []
    for seed in range(10):
        rng = np.random.default_rng([14, 3, seed])
        cards, d, sens = _draw_cards(rng, 400)
        draw = gen.param_drawer(rng, ("near_one", "tiny")[seed % 2], tie_rate=0.0)
        pc = (gen.naive_bayes_x(rng, cards, d, draw) if seed % 3 else
              gen.random_psdd_x(rng, cards, draw, indicator_rate=0.0))
        case = Case("near_one", seed, pc, cards, d, sens, 1, True, reference=pc)
        ch = Checker(case)
        for delta in DELTAS:
            ch.run(delta, engines=(engine,), topk=((3, "discrimination"), (3, "divergence")))
        failures += ch.failures
    assert not failures, _report(failures)


def _dyadic_cases(n, start=0):
    for seed in range(start, start + n):
        yield make_case("dyadic", seed, max_patterns=250)


def check_dyadic(case: Case) -> list[str]:
    """δ = the exact max |Δ| (Fraction brute force): fair and complete; δ = max − 1e-6: unfair.
    Both engines (search where applicable) and auto."""
    failures = []
    a = oracle.pattern_arrays(case.pc, case.cards, case.decision, case.sensitive,
                              case.favorable, exact=True)
    m = oracle.exact_max_abs_delta(a)
    engines = ("lattice", "search", "auto") if case.searchable else ("lattice", "auto")
    # δ = max: fair (|Δ| ≤ δ + THRESHOLD_ATOL whatever the rounding); δ = max − 1e-6 and
    # max − 1e-10: unfair (the tolerance is 1e-12, so a pattern 1e-10 above δ is reported)
    for delta, want in ((float(m), True), (float(m) - 1e-6, False), (float(m) - 1e-10, False)):
        if delta < 0:
            continue
        for engine in engines:
            try:
                cert = certify(case.pc, case.dname, case.names, delta, favorable=case.favorable,
                               engine=engine)
            except Exception as e:  # noqa: BLE001
                failures.append(f"{case.tag} engine={engine} δ={delta!r} (exact max |Δ| = {m})"
                                f": raised {type(e).__name__}: {e}")
                continue
            if cert.fair is not want or not cert.complete:
                w = None if cert.witness is None else (cert.witness.text(), cert.witness.score)
                failures.append(f"{case.tag} engine={engine} δ={delta!r} (exact max |Δ| = {m})"
                                f": fair={cert.fair} complete={cert.complete}, want fair={want};"
                                f" witness={w}")
            if engine == "lattice" and cert.max_abs_exact and cert.max_abs_score is not None and \
                    abs(cert.max_abs_score - float(m)) > 1e-9:
                failures.append(f"{case.tag} dense max_abs_score {cert.max_abs_score!r} vs "
                                f"exact {m}")
        if want:
            for engine in engines:
                try:
                    ps = find_patterns(case.pc, case.dname, case.names, delta,
                                       favorable=case.favorable, engine=engine)
                except Exception as e:  # noqa: BLE001
                    failures.append(f"{case.tag} engine={engine} find_patterns δ={delta!r}: "
                                    f"raised {type(e).__name__}: {e}")
                    continue
                if len(ps):
                    failures.append(f"{case.tag} engine={engine} find_patterns(all) at δ = "
                                    f"exact max {m}: {len(ps)} patterns, e.g. {ps[0].text()} "
                                    f"{ps[0].score!r}")
    return failures


def test_dyadic_threshold_is_exact():
    """Issue 14 item 6: with δ exactly the true max |Δ| of a dyadic model, no pattern."""
    failures = []
    for case in _dyadic_cases(30):
        failures += check_dyadic(case)
    assert not failures, _report(failures)


def test_dyadic_eighth():
    """The issue's shape: a model whose max |Δ| is exactly 1/8."""
    b = CircuitBuilder({"x0": [0, 1], "x1": [0, 1]})
    # P(d) = 1/2; P(s=1 | d) = 3/4, P(s=1 | ¬d) = 1/4 -> P(d | s=1) = 3/4, Δ = 1/4; make it 1/8:
    # P(s=1 | d) = 5/8, P(s=1 | ¬d) = 3/8 -> P(d | s=1) = 5/8, Δ = 1/8
    root = b.decision([(b.indicator("x0", 1), b.categorical("x1", [3 / 8, 5 / 8]), 0.5),
                       (b.indicator("x0", 0), b.categorical("x1", [5 / 8, 3 / 8]), 0.5)])
    pc = b.build(root)
    a = oracle.pattern_arrays(pc, [2, 2], 0, [1], exact=True)
    assert oracle.exact_max_abs_delta(a) == Fraction(1, 8)
    case = Case("eighth", 0, pc, [2, 2], 0, [1], 1, True, reference=pc)
    assert not check_dyadic(case), check_dyadic(case)


def _non_smooth():
    b = CircuitBuilder({"x0": [0, 1], "x1": [0, 1], "x2": [0, 1]})
    root = b.sum([b.product(b.indicator("x0", 1), b.categorical("x1", [0.3, 0.7])),
                  b.product(b.indicator("x0", 0), b.categorical("x2", [0.6, 0.4]))], [0.5, 0.5])
    return b.build(root)


def _non_decomposable():
    b = CircuitBuilder({"x0": [0, 1], "x1": [0, 1], "x2": [0, 1]})
    e1 = b.product(b.indicator("x0", 1), b.categorical("x1", [0.3, 0.7]),
                   b.categorical("x1", [0.8, 0.2]), b.categorical("x2", [0.5, 0.5]))
    e2 = b.product(b.indicator("x0", 0), b.categorical("x1", [0.6, 0.4]),
                   b.categorical("x2", [0.1, 0.9]))
    return b.build(b.sum([e1, e2], [0.5, 0.5]))


@pytest.mark.parametrize("build", [_non_smooth, _non_decomposable])
@pytest.mark.parametrize("engine", ["lattice", "auto", "search"])
def test_structurally_invalid_circuits_are_refused(build, engine):
    pc = build()
    with pytest.raises(StructureError):
        certify(pc, "x0", ["x1"], 0.05, engine=engine)
    with pytest.raises(StructureError):
        find_patterns(pc, "x0", ["x1"], 0.05, kind="all", engine=engine)


def test_search_refuses_non_deterministic_mixtures():
    case = make_case("nb_mixture", 1)
    with pytest.raises(PCFairError):
        find_patterns(case.pc, case.dname, case.names, 0.05, engine="search")


def rare_front_model(c1: float, c2: float):
    """Naive Bayes (x0 = D) where the sensitive x1 = 1 has probability c·1e-16: at δ = 0.05
    every discrimination pattern has x1 = 1, so P(x, y) < 1e-15 for all of Σ (issue 14 item 5:
    rounding probabilities to 15 decimals emptied this front)."""
    b = CircuitBuilder({"x0": [0, 1], "x1": [0, 1], "x2": [0, 1, 2], "x3": [0, 1]})
    root = b.decision([
        (b.indicator("x0", 1), b.product(b.categorical("x1", [1 - c1 * 1e-16, c1 * 1e-16]),
                                         b.product(b.categorical("x2", [0.2, 0.5, 0.3]),
                                                   b.categorical("x3", [0.7, 0.3]))), 0.45),
        (b.indicator("x0", 0), b.product(b.categorical("x1", [1 - c2 * 1e-16, c2 * 1e-16]),
                                         b.product(b.categorical("x2", [0.6, 0.1, 0.3]),
                                                   b.categorical("x3", [0.25, 0.75]))), 0.55),
    ])
    return b.build(root)


@pytest.mark.parametrize("c1,c2", [(3.0, 1.0), (1.0, 7.0), (2.0, 2.5)])
@pytest.mark.parametrize("engine", ["lattice", "search"])
def test_pareto_front_of_rare_patterns(engine, c1, c2):
    pc = rare_front_model(c1, c2)
    cards = [2, 2, 3, 2]
    a = oracle.pattern_arrays(pc, cards, 0, [1])
    delta = 0.05
    clear, border = oracle.bands(a, delta)
    assert clear.any() and not border.any()
    assert float(a.p_xy[clear].max()) < 1e-15  # all of Σ is rare
    want_mask = oracle.summary_masks(a, clear)["pareto"]
    want = {a.keys[i] for i in np.flatnonzero(want_mask)}
    assert want  # the front is not empty
    got = find_patterns(pc, "x0", ["x1"], delta, kind="pareto", engine=engine)
    assert {pkey(p) for p in got} == want
    for p in got:
        i = a.keys.index(pkey(p))
        assert p.probability == pytest.approx(float(a.p_xy[i]), rel=1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_inner_unnormalised_circuits_are_refused_or_normalised(seed):
    """A non-root sum whose weights sum to e^3 (or a leaf whose parameters do, on a variable that
    also has indicator leaves): no longer a constant factor on the whole function. The engines
    must refuse (StructureError) or answer for the normalised function f / Z (the oracle's)."""
    from pcfair.circuit.circuit import CATEGORICAL, SUM

    case = make_case(("psdd", "clt", "nb")[seed % 3], 300 + seed, max_patterns=400)
    pc = case.pc
    sums = [i for i in np.flatnonzero(pc.kind == SUM) if i != pc.root]
    if sums and seed % 2 == 0:
        i = int(sums[seed % len(sums)])
        logw = pc.edge_logw.copy()
        logw[int(pc.edge_ptr[i]):int(pc.edge_ptr[i + 1])] += 3.0
        bad = pc.with_parameters(logw)
    else:
        leaves = np.flatnonzero(pc.kind == CATEGORICAL)
        i = int(leaves[seed % len(leaves)])
        params = pc.params.copy()
        params[int(pc.param_ptr[i]):int(pc.param_ptr[i]) + int(pc.param_len[i])] += 3.0
        bad = pc.with_parameters(pc.edge_logw, params)
    var = Case(case.family, case.seed, bad, case.cards, case.decision, case.sensitive,
               case.favorable, case.searchable, reference=bad, variant="inner+3")
    ch = Checker(var)
    for engine in ("lattice", "search"):
        for delta in (0.0, 0.05):
            try:
                certify(bad, var.dname, var.names, delta, favorable=var.favorable, engine=engine)
            except StructureError:
                continue
            ch.run(delta, engines=(engine,), topk=((3, "discrimination"), (3, "divergence")))
    assert not ch.failures, _report(ch.failures)


@pytest.mark.parametrize("c", [800.0, 5000.0, -800.0])
@pytest.mark.parametrize("engine", ["lattice", "search"])
def test_shipped_clt_with_a_huge_root_constant(c, engine):
    """Issue 14 item 1 on the shipped COMPAS CLT: the same answers after adding ``c`` to every
    root log-weight."""
    path = Path(__file__).resolve().parents[2] / "circuits" / "compas_clt.json"
    pc = pcfair.load(path)
    target = "ScoreText_"
    names = ["Ethnic_Code_Text_", "MaritalStatus_", "Sex_", "Age"]
    shifted = gen.shift_root_logw(pc, c)
    assert shifted is not None
    base = certify(pc, target, names, 0.05, engine=engine)
    got = certify(shifted, target, names, 0.05, engine=engine)
    assert base.fair is False
    assert got.fair is False and got.complete, (got.fair, got.max_abs_score)
    ref = find_patterns(pc, target, names, 0.05, kind="topk", k=5, engine="lattice")
    top = find_patterns(shifted, target, names, 0.05, kind="topk", k=5, engine=engine)
    np.testing.assert_allclose([p.abs_score for p in top], [p.abs_score for p in ref],
                               atol=1e-9)


#: models (family, seed, max_patterns) whose 1e-12 parameters put |Δ| within rounding of
#: δ + THRESHOLD_ATOL at δ = 0 (found by the slow suite and a wider sweep)
THRESHOLD_MODELS = [("rare", 10066, 1500), ("rare", 10139, 1500), ("rare", 10023, 1500),
                    ("psdd", 10047, 1500)]


@pytest.mark.parametrize("family,seed,max_patterns", THRESHOLD_MODELS)
@pytest.mark.parametrize("engine", ["lattice", "search"])
def test_at_the_threshold_atol(engine, family, seed, max_patterns):
    """Patterns whose |Δ| is 1e-12 (= THRESHOLD_ATOL at δ = 0) up to rounding: whatever an
    engine decides for them, every pattern it reports must satisfy its own rule
    (|score| > δ + atol), and top-k by divergence must not rank such a pattern (reported with
    divergence 0) above real patterns with a larger, even infinite, divergence."""
    case = make_case(family, seed, max_patterns)
    if engine == "search" and not case.searchable:
        pytest.skip("dense only")
    ch = Checker(case)
    ch.run(0.0, engines=(engine,), topk=((1, "divergence"), (3, "divergence"),
                                         (10, "divergence"), (3, "discrimination")))
    assert not ch.failures, _report(ch.failures)


def test_search_maximal_agrees_with_its_own_patterns_at_the_threshold():
    """psdd_deep seed 50034 (max_patterns 2500), δ = 0: the pattern x5=0 | x0=1, x2=1, x4=1
    and four of its extensions have |Δ| = 1e-12·(1 + 1e-15) (a 1e-12 parameter), just above
    δ + THRESHOLD_ATOL. kind="all" reports the pattern and its extensions; kind="maximal" must
    then not report the pattern as maximal (the extension sub-search prunes with a bound that
    rounds a hair below the scores it bounds)."""
    case = make_case("psdd_deep", 50034, 2500)
    ch = Checker(case)
    ch.run(0.0, engines=("search",), kinds=("all", "maximal"), topk=())
    assert not ch.failures, _report(ch.failures)


# ---------------------------------------------------------------------------- the random suites

#: default suite: seeds per family (each also checked as one constant-factor variant)
DEFAULT_SEEDS = {"nb": 30, "psdd": 25, "psdd_deep": 20, "clt": 25, "mixture": 15,
                 "nb_mixture": 15, "rare": 25}


@pytest.mark.parametrize("family", sorted(DEFAULT_SEEDS))
def test_random_models_default(family):
    failures, counts = run_family(family, range(DEFAULT_SEEDS[family]), variants=True,
                                  search_rate=0.5, max_patterns=500)
    assert counts["models"] >= DEFAULT_SEEDS[family]
    assert not failures, _report(failures)


def test_random_dyadic_default():
    failures = []
    for case in _dyadic_cases(20, start=100):
        failures += check_dyadic(case)
    assert not failures, _report(failures)


SLOW_SEEDS = {"nb": 220, "psdd": 180, "psdd_deep": 150, "clt": 180, "mixture": 110,
              "nb_mixture": 110, "rare": 200}


@pytest.mark.slow
def test_random_models_slow():
    """≥ 2,000 random models (originals plus constant-factor variants) and 250 dyadic ones."""
    all_failures, table = [], {}
    t0 = time.perf_counter()
    for family, n in SLOW_SEEDS.items():
        failures, counts = run_family(family, range(10_000, 10_000 + n), variants=True,
                                      n_deltas=2, search_rate=0.5, max_patterns=1500)
        table[family] = (counts, len(failures))
        all_failures += failures
    dy = []
    n_dy = 0
    for case in _dyadic_cases(250, start=20_000):
        dy += check_dyadic(case)
        n_dy += 1
    all_failures += dy
    total = sum(c["models"] for c, _ in table.values()) + n_dy
    lines = [f"{'family':<12}{'models':>8}{'variants':>10}{'checks':>8}{'border':>8}"
             f"{'failures':>10}"]
    for family, (c, nf) in table.items():
        lines.append(f"{family:<12}{c['models']:>8}{c['variant_models']:>10}{c['checks']:>8}"
                     f"{c['border']:>8}{nf:>10}")
    lines.append(f"{'dyadic':<12}{n_dy:>8}{0:>10}{3 * n_dy:>8}{0:>8}{len(dy):>10}")
    lines.append(f"total models {total} in {time.perf_counter() - t0:.0f} s")
    print("\n".join(lines))
    assert total >= 2000
    assert not all_failures, _report(all_failures, limit=80)


# ------------------------------------------------------------------- probabilities that underflow


def check_lattice_soundness(case: Case, arrays, delta: float) -> list[str]:
    """The lattice on a model with probabilities below its floor: it may leave patterns out,
    but then it says so (``stats["probability_floor"]``, incomplete), never certifies fair
    where the oracle has a pattern, and every pattern it reports is one, with the oracle's
    score."""
    ch = Checker(case, arrays)
    clear, border = oracle.threshold_bands(arrays, delta, BORDER_BELOW, CLEAR_ABOVE)
    cert = ch.call("lattice", delta, "certify", certify)
    if cert is not None:
        if cert.fair is True and (clear.any() or not cert.complete):
            ch.fail("lattice", delta, "certify", f"fair={cert.fair} complete={cert.complete} "
                    f"with {int(clear.sum())} patterns (oracle)")
        if cert.fair is None and "probability_floor" not in cert.stats:
            ch.fail("lattice", delta, "certify", "incomplete without naming its floor")
        if cert.max_abs_exact and "probability_floor" in cert.stats:
            ch.fail("lattice", delta, "certify", "max |Δ| exact with a floor")
        if cert.witness is not None:
            ch._check_values("lattice", delta, "certify", [cert.witness], border)
    for kind, extra in (("all", {}), ("topk", {"k": 3})):
        ps = ch.call("lattice", delta, kind, find_patterns, kind=kind, **extra)
        if ps is None:
            continue
        allowed = {arrays.keys[i] for i in np.flatnonzero(clear | border)}
        extra_keys = {pkey(p) for p in ps} - allowed
        if extra_keys:
            ch.fail("lattice", delta, kind, f"reports non-patterns [{_fmt_keys(extra_keys)}]")
        ch._check_values("lattice", delta, kind, ps, border)
        if not ps.complete and "probability_floor" not in ps.stats:
            ch.fail("lattice", delta, kind, "incomplete without naming its floor")
    return ch.failures


def run_underflow(seeds, max_patterns: int = 500) -> tuple[list[str], collections.Counter]:
    """The underflow family against the log-space oracle (:func:`oracle.pattern_arrays_log`):
    the searches and ``auto`` exactly, as for every family (every kind they answer), the
    lattice exactly where the model has no probability below its floor and soundly
    (:func:`check_lattice_soundness`) where it has; one constant-factor variant of each."""
    from pcfair.patterns.lattice import probability_floor

    failures, counts = [], collections.Counter()
    for seed in seeds:
        rng = np.random.default_rng([9, seed])
        case = make_case("underflow", seed, max_patterns)
        arrays = oracle.pattern_arrays_log(case.reference, case.cards, case.decision,
                                           case.sensitive, case.favorable)
        a = arrays
        if a.defined.any() and float(np.min(a.log_p_xy[a.defined])) < math.log(1e-300):
            counts["models_with_P(x,y)<1e-300"] += 1
        for c in filter(None, (case, variant_of(case, seed))):
            floored = probability_floor(c.pc) > 0
            counts["models"] += 1
            counts["floored"] += floored
            delta = float(rng.choice(DELTAS))
            k = int(rng.choice([1, 3, 10]))
            ch = Checker(c, arrays)
            exact = [e for e in ("search", "auto") if e != "search" or c.searchable]
            if not floored:
                exact.append("lattice")
            if floored and not c.searchable:
                exact.remove("auto")  # the lattice is all there is: checked for soundness
            for engine in exact:
                kinds = ("all", "maximal", "minimal", "pareto")
                if engine != "lattice" and floored:
                    kinds = ("all", "maximal", "pareto")  # minimal: the lattice only
                ch.run(delta, engines=(engine,), kinds=kinds,
                       topk=((k, "discrimination"), (k, "divergence")))
            failures += ch.failures
            if floored:
                failures += check_lattice_soundness(c, arrays, delta)
    return failures, counts


def test_random_models_underflow_default():
    failures, counts = run_underflow(range(30))
    assert counts["models_with_P(x,y)<1e-300"] >= 10, counts  # the family does underflow
    assert counts["floored"] >= 10, counts
    assert not failures, _report(failures)


@pytest.mark.slow
def test_random_models_underflow_slow():
    failures, counts = run_underflow(range(1000, 1300), max_patterns=1500)
    print(dict(counts))
    assert counts["models_with_P(x,y)<1e-300"] >= 100, counts
    assert not failures, _report(failures, limit=80)


if __name__ == "__main__":  # python tests/patterns/test_random_models.py FAMILY SEED [δ] [MAX]
    fam, sd = sys.argv[1], int(sys.argv[2])
    case = make_case(fam, sd, int(sys.argv[4]) if len(sys.argv) > 4 else 1500)
    print(case.tag, "cards", case.cards, "decision", case.decision, "sensitive", case.sensitive,
          "favorable", case.favorable)
    ch = Checker(case)
    for dl in ([float(sys.argv[3])] if len(sys.argv) > 3 else DELTAS):
        ch.run(dl, engines=("lattice", "search") if case.searchable else ("lattice",))
    print("\n".join(ch.failures) or "no disagreement")


@pytest.mark.parametrize("family", ["nb", "psdd", "clt", "mixture", "rare"])
def test_exact_max_is_the_brute_force_maximum_with_every_engine(family):
    """Issue 36: ``certify(..., exact_max=True)`` returns the exact largest |Δ| whichever
    engine answered the certification, also when it stopped at a first witness (the
    search, a glance of ``auto``), which establishes only a lower bound by itself."""
    failures = []
    for seed in range(3):
        case = make_case(family, seed)
        a = oracle.pattern_arrays(case.pc, case.cards, case.decision, case.sensitive,
                                  case.favorable)
        m = float(np.max(np.abs(a.delta[a.defined]), initial=0.0))
        engines = ("lattice", "search", "auto") if case.searchable else ("lattice", "auto")
        for engine in engines:
            for delta in (0.0, m / 2):
                c = certify(case.pc, case.dname, case.names, delta, favorable=case.favorable,
                            engine=engine, exact_max=True)
                plain = certify(case.pc, case.dname, case.names, delta,
                                favorable=case.favorable, engine=engine)
                if not (c.max_abs_exact and c.max_abs_score is not None
                        and abs(c.max_abs_score - m) <= 1e-9 and c.fair == plain.fair):
                    failures.append(f"{case.tag} {engine} δ={delta:.4g}: max "
                                    f"{c.max_abs_score} exact={c.max_abs_exact}, brute {m}")
    assert not failures, _report(failures)
