"""Model-based sampling of R and not-R from a probabilistic circuit (a pcfair extension).

The paper perturbs seed rows to stay "close to the training distribution"; a PC fitted on D
can instead draw exact samples from P(. | R) and P(. | not R) (spec Sec. 4.3). R constrains
each of its features to a set of values, so R, and its complement, split into *cells*: joint
assignments of R's features. With a marginal query the sampler picks a cell with probability
P(cell) / P(group) and then samples the circuit conditioned on that cell ("exact"); without
one it draws from the circuit and keeps the samples that fall in the group ("rejection").
Both give exact samples of the conditional distribution.

The circuit only needs ``sample(n, evidence=None, random_state=None) -> DataFrame`` (one
column per variable, value labels; ``evidence`` a mapping ``{var: label}``), and for the exact
method ``log_marginal(evidence_frame) -> array`` where absent columns are marginalised.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pcfair._random import check_random_state
from pcfair.errors import DataError, StructureError, VariableError

from .errors import EmptyGroupError
from .rules import RuleSet
from .specs import SensitiveSpec

__all__ = ["PCConditionalSampler", "BinCodes"]

METHODS = ("auto", "exact", "rejection")


@dataclass(frozen=True)
class BinCodes:
    """Decode the i-th value of a circuit variable as a number in bin i of ``edges``.

    A continuous feature that the circuit models through K' bins (its i-th domain value is
    bin i, ``[edges[i], edges[i+1])``, the last closed) is mapped back to a number drawn
    uniformly within the bin, or uniformly among the whole numbers of the bin when
    ``integer`` is true. This is a pcfair choice: the spec only asks that it be documented.
    The bins must refine the rule bins of the feature, or rules are not expressible.

    Examples
    --------
    >>> import numpy as np
    >>> BinCodes((0, 10, 20), integer=True).decode(np.array([1, 1]), np.random.default_rng(0)).tolist()
    [17, 12]
    """

    edges: tuple
    integer: bool = False

    def __post_init__(self) -> None:
        edges = tuple(float(e) for e in self.edges)
        if len(edges) < 2 or any(b <= a for a, b in zip(edges, edges[1:])):
            raise StructureError(f"bin edges must increase, got {self.edges}")
        object.__setattr__(self, "edges", edges)

    @property
    def n_bins(self) -> int:
        return len(self.edges) - 1

    def _int_range(self, i: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        e = np.asarray(self.edges)
        lo = np.ceil(e[i])
        last = i == self.n_bins - 1
        hi = np.where(last, np.floor(e[i + 1]), np.ceil(e[i + 1]) - 1)
        return lo, hi

    def decode(self, index: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Numbers for bin indices ``index``."""
        index = np.asarray(index, dtype=np.int64)
        u = rng.random(index.shape[0])
        e = np.asarray(self.edges)
        if not self.integer:
            return e[index] + u * (e[index + 1] - e[index])
        lo, hi = self._int_range(index)
        if np.any(hi < lo):
            raise StructureError(f"a bin of {self.edges} holds no whole number")
        return (lo + np.floor(u * (hi - lo + 1))).astype(np.int64)

    def probes(self, i: int) -> list[float]:
        """Values spanning bin i, to test whether a rule holds on the whole bin."""
        if self.integer:
            lo, hi = self._int_range(np.array([i]))
            return [float(lo[0]), float(hi[0])]
        a, b = self.edges[i], self.edges[i + 1]
        top = b if i == self.n_bins - 1 else float(np.nextafter(b, a))
        return [a, (a + b) / 2.0, top]


class PCConditionalSampler:
    """Draw members of R and of not-R from a probabilistic circuit by conditioning.

    Parameters
    ----------
    circuit : object
        Has ``sample(n, evidence=None, random_state=None)``; for ``method="exact"`` also
        ``log_marginal(evidence_frame)``. A :class:`pcfair.Circuit` qualifies.
    decoders : mapping, optional
        Per variable: a dict from circuit value label to data value, or a :class:`BinCodes`.
        Variables without a decoder are passed through (label = data value).
    domains : mapping, optional
        Value labels per variable, when the circuit has no ``variables.domains``.
    columns : sequence of str, optional
        The output columns, in order (default: every circuit variable). Leave the class
        variable out when the audited model takes only the features.
    method : {"auto", "exact", "rejection"}
        ``"auto"`` is exact when the circuit has ``log_marginal``, the domains are known and R's
        features have at most ``max_cells`` joint values; rejection otherwise.
    max_cells : int
        Largest number of joint values of R's features enumerated by the exact method.
    rejection_block : int
        Samples drawn per round of rejection sampling.
    max_rejection_rounds : int
        Rounds before rejection sampling gives up with :class:`EmptyGroupError`.

    Notes
    -----
    Support is still computed on D; sensitive features are fixed only through the
    conditioning, so the perturbation sampler's "one feature differs from the seed"
    property does not apply. Scores obtained with this sampler are labelled
    ``sampler="pc_conditional"``.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> class Coin:  # a one-variable stand-in for a circuit
    ...     def sample(self, n, evidence=None, random_state=None):
    ...         rng = np.random.default_rng(random_state)
    ...         return pd.DataFrame({"g": (rng.random(n) < 0.5).astype(int)})
    >>> from pcfair.audits.testsgd import CategoricalRule, RuleSet, SensitiveSpec
    >>> s = PCConditionalSampler(Coin(), domains={"g": (0, 1)})
    >>> s = s.fit(pd.DataFrame({"g": [0, 1]}), [SensitiveSpec.categorical("g", [0, 1])])
    >>> s.sample(RuleSet([CategoricalRule("g", (1,))]), 3, in_group=True, random_state=0)["g"].tolist()
    [1, 1, 1]
    """

    name = "pc_conditional"

    def __init__(
        self,
        circuit: Any,
        *,
        decoders: Mapping[str, Any] | None = None,
        domains: Mapping[str, Sequence[Any]] | None = None,
        columns: Sequence[str] | None = None,
        method: str = "auto",
        max_cells: int = 4096,
        rejection_block: int = 4096,
        max_rejection_rounds: int = 200,
    ):
        self.circuit = circuit
        self.decoders = decoders
        self.domains = domains
        self.columns = columns
        self.method = method
        self.max_cells = max_cells
        self.rejection_block = rejection_block
        self.max_rejection_rounds = max_rejection_rounds

    # ------------------------------------------------------------------ fit
    def fit(self, data: pd.DataFrame | None, specs: Sequence[SensitiveSpec]) -> PCConditionalSampler:
        """Check the sensitive features against the circuit's variables; returns self.

        ``data`` is not used for sampling (support is computed on D elsewhere).
        """
        if self.method not in METHODS:
            raise DataError(f"method={self.method!r} is not one of {list(METHODS)}")
        if not hasattr(self.circuit, "sample"):
            raise DataError("the circuit has no sample(n, evidence=None, random_state=None) method")
        domains: dict[str, tuple] = {}
        variables = getattr(self.circuit, "variables", None)
        if variables is not None and hasattr(variables, "names") and hasattr(variables, "domains"):
            domains = {str(n): tuple(d) for n, d in zip(variables.names, variables.domains)}
            names = [str(n) for n in variables.names]
        else:
            names = None
        for k, v in (self.domains or {}).items():
            domains[k] = tuple(v)
        if names is None:
            names = list(self.circuit.sample(1, random_state=0).columns)
        self.variables_ = names
        self.domains_ = domains
        self.columns_ = list(self.columns) if self.columns is not None else list(names)
        missing = [c for c in self.columns_ if c not in names]
        if missing:
            raise VariableError(f"columns {missing} are not circuit variables {names}")
        for spec in specs:
            if spec.kind == "term_category":
                raise DataError("the circuit sampler works on structured data, not text categories")
            if spec.name not in names:
                raise VariableError(f"sensitive feature {spec.name!r} is not a circuit variable {names}")
        self.decoders_ = dict(self.decoders or {})
        for var, dec in self.decoders_.items():
            if var not in names:
                raise VariableError(f"decoder given for {var!r}, which is not a circuit variable")
            if isinstance(dec, BinCodes) and var in domains and len(domains[var]) != dec.n_bins:
                raise StructureError(
                    f"variable {var!r} has {len(domains[var])} values but its BinCodes has {dec.n_bins} bins"
                )
        self.specs_ = tuple(specs)
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "variables_"):
            raise DataError("the sampler is not fitted; call sampler.fit(data, specs) first")

    # ------------------------------------------------------------------ decoding
    def _decode_column(self, var: str, labels: pd.Series, rng: np.random.Generator) -> Any:
        dec = self.decoders_.get(var)
        if dec is None:
            return labels.to_numpy()
        if isinstance(dec, BinCodes):
            domain = self.domains_.get(var)
            if domain is not None:
                pos = pd.Index(list(domain), dtype=object).get_indexer(labels.astype(object))
            else:
                pos = labels.to_numpy(dtype=np.int64)
            if np.any(pos < 0) or np.any(pos >= dec.n_bins):
                raise DataError(f"variable {var!r} has a value outside its {dec.n_bins} bins")
            return dec.decode(pos, rng)
        mapped = labels.map(dict(dec))
        if mapped.isna().any():
            bad = labels[mapped.isna()].iloc[0]
            raise DataError(f"decoder of {var!r} has no entry for circuit value {bad!r}")
        return mapped.to_numpy()

    def decode(self, frame: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
        """Map circuit value labels to the data's representation, keeping ``columns_``."""
        return pd.DataFrame(
            {c: self._decode_column(c, frame[c], rng) for c in self.columns_}, columns=self.columns_
        )

    def _allowed_labels(self, rule: Any, var: str) -> list:
        domain = self.domains_[var]
        dec = self.decoders_.get(var)
        allowed = []
        for i, label in enumerate(domain):
            if isinstance(dec, BinCodes):
                probes = dec.probes(i)
            elif dec is not None:
                probes = [dict(dec)[label]]
            else:
                probes = [label]
            hits = rule.mask(pd.DataFrame({var: probes}))
            if hits.any() and not hits.all():
                raise StructureError(
                    f"the circuit's bins of {var!r} do not refine the rule {rule.render()!r}: "
                    f"value {label!r} is partly inside it"
                )
            if hits.all():
                allowed.append(label)
        return allowed

    # ------------------------------------------------------------------ sampling
    def _use_exact(self, rule_set: RuleSet) -> bool:
        if self.method == "rejection":
            return False
        ok = hasattr(self.circuit, "log_marginal") and all(f in self.domains_ for f in rule_set.features)
        if ok:
            ok = int(np.prod([len(self.domains_[f]) for f in rule_set.features])) <= self.max_cells
        if self.method == "exact" and not ok:
            raise DataError(
                f"exact sampling of {rule_set.render()!r} needs the circuit's log_marginal, the "
                f"domains of {list(rule_set.features)} and at most {self.max_cells} joint values"
            )
        return ok

    def _sample_exact(self, rule_set: RuleSet, n: int, in_group: bool, rng: np.random.Generator) -> pd.DataFrame:
        feats = list(rule_set.features)
        allowed = [set(self._allowed_labels(rule_set.rule_for(f), f)) for f in feats]
        cells = []
        for combo in itertools.product(*(self.domains_[f] for f in feats)):
            inside = all(v in a for v, a in zip(combo, allowed))
            if inside == in_group:
                cells.append(combo)
        side = "R" if in_group else "not-R"
        if not cells:
            raise EmptyGroupError(f"{side} of {rule_set.render()!r} holds no value of the circuit's domain")
        evidence = pd.DataFrame(cells, columns=feats)
        logp = np.asarray(self.circuit.log_marginal(evidence), dtype=float)
        if not np.isfinite(logp).any():
            raise EmptyGroupError(f"the circuit gives {side} of {rule_set.render()!r} probability zero")
        w = np.exp(logp - np.max(logp[np.isfinite(logp)]))
        w[~np.isfinite(logp)] = 0.0
        cdf = np.cumsum(w) / w.sum()
        choice = np.minimum(np.searchsorted(cdf, rng.random(n), side="right"), len(cells) - 1)
        parts, order = [], []
        for c in np.unique(choice):
            pos = np.flatnonzero(choice == c)
            ev = dict(zip(feats, cells[c]))
            drawn = self.circuit.sample(len(pos), evidence=ev, random_state=rng)
            parts.append(drawn.reset_index(drop=True))
            order.append(pos)
        frame = pd.concat(parts, ignore_index=True)
        frame.index = np.concatenate(order)
        return frame.sort_index()

    def _sample_rejection(self, rule_set: RuleSet, n: int, in_group: bool, rng: np.random.Generator) -> pd.DataFrame:
        kept, total = [], 0
        for _ in range(self.max_rejection_rounds):
            if total >= n:
                break
            drawn = self.circuit.sample(self.rejection_block, random_state=rng).reset_index(drop=True)
            labels_ok = self._group_mask_on_labels(rule_set, drawn, rng)
            keep = labels_ok if in_group else ~labels_ok
            kept.append(drawn[keep])
            total += int(keep.sum())
        if total < n:
            side = "R" if in_group else "not-R"
            raise EmptyGroupError(
                f"rejection sampling found {total} of {n} members of {side} of {rule_set.render()!r} "
                f"in {self.max_rejection_rounds} rounds"
            )
        return pd.concat(kept, ignore_index=True).iloc[:n]

    def _group_mask_on_labels(self, rule_set: RuleSet, frame: pd.DataFrame, rng: np.random.Generator) -> np.ndarray:
        mask = np.ones(len(frame), dtype=bool)
        for rule in rule_set:
            var = rule.feature
            if var in self.domains_:
                mask &= frame[var].isin(self._allowed_labels(rule, var)).to_numpy()
            else:
                mask &= rule.mask(pd.DataFrame({var: self._decode_column(var, frame[var], rng)}))
        return mask

    def sample(self, rule_set: RuleSet, n: int, *, in_group: bool, random_state: Any = None) -> pd.DataFrame:
        """``n`` samples of R (``in_group=True``) or of not-R, decoded to the data's columns.

        Raises
        ------
        EmptyGroupError
            The group has probability zero under the circuit (or rejection found too few).
        StructureError
            The circuit's bins of a feature do not refine a rule.
        """
        self._check_fitted()
        rng = check_random_state(random_state)
        n = int(n)
        for f in rule_set.features:
            if f not in self.variables_:
                raise VariableError(f"rule feature {f!r} is not a circuit variable")
        if n == 0:
            return pd.DataFrame({c: [] for c in self.columns_}, columns=self.columns_)
        if self._use_exact(rule_set):
            frame = self._sample_exact(rule_set, n, in_group, rng)
        else:
            frame = self._sample_rejection(rule_set, n, in_group, rng)
        return self.decode(frame.reset_index(drop=True), rng)
