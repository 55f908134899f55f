"""Group-fairness metrics of a PC's classifier (paper Table 1, ``pc-certifier.md`` §6).

With ``s`` ranging over joint assignments of the sensitive variables and the PC's classifier
``d̂(z) = 1[P(d | z) > 0.5]`` over complete feature assignments ``z``:

- ``DI = 1 − min_s P(d|s) / max_s P(d|s)`` (the paper's difference form, :attr:`di`) and the
  ratio ``min_s P(d|s) / max_s P(d|s)`` that AIF360, Fairlearn and the four-fifths rule call
  disparate impact (:attr:`disparate_impact_ratio`); ``SP = max_s P(d|s) − min_s P(d|s)``
  (exact: marginal queries);
- ``SP-1``: SP for each sensitive variable alone;
- ``EO = max over D's values c of (max_s P(d̂=1 | s, c) − min_s P(d̂=1 | s, c))``: exact by
  enumerating the complete assignments when there are at most ``max_enumerate`` of them, else
  estimated from ``n_samples`` exact samples of the PC per ``(s, c)``, with the largest standard
  error reported.

Joint sensitive assignments with probability zero are skipped (their conditionals are
undefined).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np

from pcfair.circuit.circuit import Circuit
from pcfair.inference.marginals import log_marginals
from pcfair.inference.quotient import decision_evidence
from pcfair._random import check_random_state
from pcfair.inference.sampling import sample_codes

__all__ = ["FairnessMetrics", "fairness_metrics"]


@dataclass(frozen=True)
class FairnessMetrics:
    """DI, SP, per-variable SP-1 and EO; ``eo_exact`` says how EO was computed and
    ``eo_stderr`` bounds its sampling error (0 when exact). ``di`` is the paper's
    ``1 − ratio``; ``disparate_impact_ratio`` the ratio itself (below 0.8 fails the
    four-fifths rule)."""

    di: float
    sp: float
    sp1: dict
    eo: float
    eo_exact: bool
    eo_stderr: float
    groups: list = field(default_factory=list, repr=False)

    @property
    def disparate_impact_ratio(self) -> float:
        """``min_s P(d|s) / max_s P(d|s)`` (1 when every group has the same rate)."""
        return 1.0 - self.di

    def to_dict(self) -> dict:
        return {"DI": self.di, "disparate_impact_ratio": self.disparate_impact_ratio,
                "SP": self.sp, "SP-1": self.sp1, "EO": self.eo,
                "EO_exact": self.eo_exact, "EO_stderr": self.eo_stderr}


def _spread(values: list[float]) -> tuple[float, float]:
    return min(values), max(values)


def fairness_metrics(pc: Circuit, decision, sensitive, favorable=None, *,
                     max_enumerate: int = 1 << 20, n_samples: int = 20_000,
                     random_state=None) -> FairnessMetrics:
    """DI, SP, SP-1 and EO of ``pc`` (see the module docstring).

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.2, 0.8]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.6, 0.4]), 0.5)]))
    >>> m = fairness_metrics(pc, "d", ["s"])
    >>> round(m.sp, 4), round(m.di, 4)
    (0.4167, 0.625)
    """
    from pcfair.patterns.api import as_circuit

    pc = as_circuit(pc)
    d, fav, unfav = decision_evidence(pc, decision, favorable)
    if isinstance(sensitive, (str, int)):
        sensitive = [sensitive]
    sens = [pc.variables.index(s) for s in sensitive]
    n = pc.num_variables
    card = [int(c) for c in pc.variables.cardinalities]

    def p_d_given(assign: dict) -> float | None:
        rows = np.full((2, n), -1, np.int32)
        for v, val in assign.items():
            rows[:, v] = val
        rows[0, d] = fav
        lp = log_marginals(pc, rows)
        return None if lp[1] == -np.inf else float(np.exp(lp[0] - lp[1]))

    groups = []
    for values in itertools.product(*[range(card[v]) for v in sens]):
        p = p_d_given(dict(zip(sens, values)))
        if p is not None:
            groups.append((values, p))
    lo, hi = _spread([p for _, p in groups])
    sp1 = {}
    for v in sens:
        ps = [p for p in (p_d_given({v: val}) for val in range(card[v])) if p is not None]
        sp1[pc.names[v]] = max(ps) - min(ps)
    eo, exact, stderr = _equal_opportunity(pc, d, fav, unfav, sens, card, max_enumerate,
                                           n_samples, random_state)
    return FairnessMetrics(di=1.0 - lo / hi if hi > 0 else 0.0, sp=hi - lo, sp1=sp1, eo=eo,
                           eo_exact=exact, eo_stderr=stderr,
                           groups=[(dict(zip([pc.names[v] for v in sens], vals)), p)
                                   for vals, p in groups])


def _equal_opportunity(pc, d, fav, unfav, sens, card, max_enumerate, n_samples, random_state):
    n = pc.num_variables
    features = [v for v in range(n) if v != d]
    total = int(np.prod([card[v] for v in features]))
    worst = 0.0
    if total <= max_enumerate:
        grid = np.array(list(itertools.product(*[range(card[v]) for v in features])), np.int32)
        rows = np.full((len(grid), n), -1, np.int32)
        rows[:, features] = grid
        with_d = rows.copy()
        with_d[:, d] = fav
        with_nd = rows.copy()
        with_nd[:, d] = unfav
        lp_d, lp_nd = log_marginals(pc, with_d), log_marginals(pc, with_nd)
        dhat = lp_d > lp_nd  # P(d|z) > 0.5
        for c, lp in ((fav, lp_d), (unfav, lp_nd)):
            rates = []
            for values in itertools.product(*[range(card[v]) for v in sens]):
                mask = np.all(grid[:, [features.index(v) for v in sens]] == values, axis=1)
                w = np.exp(lp[mask])
                if w.sum() > 0:
                    rates.append(float(w[dhat[mask]].sum() / w.sum()))
            if rates:
                worst = max(worst, max(rates) - min(rates))
        return worst, True, 0.0
    rng = check_random_state(random_state)
    stderr = 0.0
    for c in (fav, unfav):
        rates = []
        for values in itertools.product(*[range(card[v]) for v in sens]):
            ev = {pc.names[v]: pc.variables.domains[v][val] for v, val in zip(sens, values)}
            ev[pc.names[d]] = pc.variables.domains[d][c]
            if pc.log_marginal(ev)[0] == -np.inf:
                continue
            codes = sample_codes(pc, n_samples, ev, rng)
            with_d = codes.copy()
            with_d[:, d] = fav
            with_nd = codes.copy()
            with_nd[:, d] = unfav
            rate = float(np.mean(log_marginals(pc, with_d) > log_marginals(pc, with_nd)))
            rates.append(rate)
            stderr = max(stderr, float(np.sqrt(max(rate * (1 - rate), 1e-12) / n_samples)))
        if rates:
            worst = max(worst, max(rates) - min(rates))
    return worst, False, stderr
