"""The report of one Conditional Bias Scan: :class:`CBSResult` and subgroup formatting."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from pcfair.audits._result import AuditResult, json_value
from pcfair.audits.cbs.definitions import FairnessDefinition
from pcfair.errors import VariableError

__all__ = ["CBSResult", "CBSScans", "format_subgroup", "subgroup_mask"]


def _fmt_value(v) -> str:
    return str(v)


def format_subgroup(subgroup: Mapping[str, Sequence] | None, *, empty: str = "all") -> str:
    """Readable text of a ``{attribute: [values]}`` subgroup.

    Examples
    --------
    >>> format_subgroup({"sex": ["Male"], "priors": ["0", "1 to 5"]})
    'sex = Male & priors in {0, 1 to 5}'
    >>> format_subgroup({})
    'all'
    """
    if subgroup is None:
        return "none"
    parts = []
    for attr, values in subgroup.items():
        values = list(values)
        if len(values) == 1:
            parts.append(f"{attr} = {_fmt_value(values[0])}")
        else:
            parts.append(f"{attr} in {{{', '.join(_fmt_value(v) for v in values)}}}")
    return " & ".join(parts) if parts else empty


def subgroup_mask(df: pd.DataFrame, subgroup: Mapping[str, Sequence] | None) -> np.ndarray:
    """Rows of ``df`` meeting every ``{column: [values]}`` criterion (all False for None).

    Combine it with the protected-class indicator to get the detected records, or with its
    complement for the comparison subgroup.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"sex": ["M", "F", "M"], "age": ["<25", "<25", "25+"]})
    >>> subgroup_mask(df, {"sex": ["M"], "age": ["<25"]}).tolist()
    [True, False, False]
    """
    if subgroup is None:
        return np.zeros(len(df), dtype=bool)
    mask = np.ones(len(df), dtype=bool)
    for col, values in subgroup.items():
        if col not in df.columns:
            raise VariableError(f"subgroup column {col!r} is not in the data")
        mask &= df[col].isin(list(values)).to_numpy()
    return mask


@dataclass(repr=False)
class CBSResult(AuditResult):
    """Outcome of :func:`~pcfair.audits.cbs.conditional_bias_scan`.

    Attributes
    ----------
    subgroup : dict or None
        The detected subgroup S* of the protected class as ``{covariate: [values]}``; covariates
        left out are unconstrained (``{}`` is the whole protected class). None when nothing was
        detected (``score <= 0``).
    score : float
        Penalised log-likelihood ratio ``F(S*)`` (0 when nothing was detected).
    multiplier : float
        The fitted free parameter of S*: the odds multiplier q (Bernoulli) or the logit mean
        shift mu (Gaussian). 1 (q) or 0 (mu) when nothing was detected.
    parameter : str
        ``"q"`` or ``"mu"``.
    n : int
        |S*|, records of the protected class (after the value filter) in S*.
    observed_rate, expected_rate : float
        Mean of I and of Î over S*.
    comparison_n : int
        Records of the non-protected class (same value filter) meeting S*'s criteria.
    comparison_rate : float
        Mean of I over them (NaN when there are none).
    p_value : float or None
        Permutation p-value ``(1 + #{null >= score}) / (1 + k)`` over the k permutations
        that ran (k = R unless a time limit cut the test); None without permutations.
    null_scores : numpy.ndarray
        The k scores of the permuted data sets.
    n_protected : int
        Records of the protected class that were scanned (|D1|).
    protected : str
        Description of the protected class, e.g. ``"race = African-American"``.
    definition : FairnessDefinition
        What was audited.
    direction, penalty, n_restarts, sigma, propensity_model
        Settings; ``sigma`` is the Gaussian scale used (None for Bernoulli scans).
    min_group_size : int
        Only subgroups of at least this many scanned records were considered, in the scan
        and in every permuted scan (1: unconstrained).
    permutations_requested : int
        R, the permutations asked for (``null_scores`` holds fewer when a time limit cut
        the test).
    restarts_run : int
        Restarts of the scan that ran (``n_restarts`` unless a time limit cut the scan).
    complete : bool
        False when a time limit cut the scan or the permutation test; ``notes`` say what.
    notes : tuple of str
        What the time limit cut, e.g. ``"permutation test: 12 of 99 permutations (time
        limit); ..."``.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from pcfair.audits.cbs import conditional_bias_scan
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"g": rng.integers(0, 2, 1000), "x": rng.integers(0, 2, 1000)})
    >>> df["y"] = (rng.random(1000) < 0.5).astype(int)
    >>> df["p"] = np.where((df.g == 1) & (df.x == 1), 0.7, 0.3)
    >>> res = conditional_bias_scan(df, protected=("g", 1), outcome="y", prediction="p",
    ...     covariates=["x"], definition="fpr", n_permutations=0, random_state=0)
    >>> res.subgroup_text, res.comparison_text
    ('g = 1 & x = 1', 'not (g = 1) & x = 1')
    >>> res.to_frame()[["detected", "n", "comparison_n"]].shape
    (1, 3)
    >>> res
    CBSResult(method='cbs', protected='g = 1', detected='g = 1 & x = 1', score=..., p_value=None, complete=True; 1 rows)
    """

    method = "cbs"

    subgroup: dict | None
    score: float
    multiplier: float
    parameter: str
    n: int
    observed_rate: float
    expected_rate: float
    comparison_n: int
    comparison_rate: float
    p_value: float | None
    null_scores: np.ndarray = field(repr=False)
    n_protected: int = 0
    protected: str = ""
    definition: FairnessDefinition = field(default_factory=FairnessDefinition)
    direction: str = "positive"
    penalty: float = 1.0
    n_restarts: int = 50
    sigma: float | None = None
    propensity_model: str = "logistic"
    min_group_size: int = 1
    permutations_requested: int = 0
    restarts_run: int = 0
    complete: bool = True
    notes: tuple = ()

    @property
    def found(self) -> bool:
        """True when a subgroup with a positive score was detected."""
        return self.subgroup is not None

    def significant(self, alpha: float = 0.05) -> bool:
        """True when a subgroup was found and its permutation p-value is below ``alpha``."""
        return self.found and self.p_value is not None and self.p_value < alpha

    def detected(self, alpha: float = 0.05) -> bool:
        """What the scan reports as a finding: a significant subgroup when a permutation test
        was asked for (a test a time limit left without a p-value finds nothing), else any
        subgroup with a positive score."""
        return self.significant(alpha) if self.permutations_requested else self.found

    @property
    def subgroup_text(self) -> str:
        """The detected subgroup as text, within the protected class."""
        if self.subgroup is None:
            return "none"
        inner = format_subgroup(self.subgroup, empty="")
        return f"{self.protected} & {inner}" if inner else f"all {self.protected}"

    @property
    def comparison_text(self) -> str:
        """The comparison subgroup: S*'s criteria applied to the non-protected class."""
        if self.subgroup is None:
            return "none"
        inner = format_subgroup(self.subgroup, empty="")
        outside = f"not ({self.protected})"
        return f"{outside} & {inner}" if inner else f"all {outside}"

    def describe(self) -> str:
        """A few lines of text for people."""
        lines = [
            f"Conditional Bias Scan: {self.definition.name} "
            f"[{self.definition.describe()}], direction {self.direction}",
            f"protected class: {self.protected} ({self.n_protected} records scanned)",
        ]
        size = (f"subgroups of at least {self.min_group_size} rows (min-group-size)"
                if self.min_group_size > 1 else "subgroups of any size (min-group-size 1)")
        lines.append(f"scanned: {size}")
        if self.subgroup is None:
            lines.append("no subgroup with a positive score")
        else:
            lines.append(f"detected: {self.subgroup_text} (n = {self.n})")
            lines.append(
                f"score {self.score:.4g}, {self.parameter} = {self.multiplier:.4g}, "
                f"observed rate {self.observed_rate:.3f} vs expected {self.expected_rate:.3f}"
            )
            rate = "n/a" if math.isnan(self.comparison_rate) else f"{self.comparison_rate:.3f}"
            lines.append(
                f"comparison: {self.comparison_text} (n = {self.comparison_n}), rate {rate}"
            )
        k = self.null_scores.size
        if self.p_value is not None and k < self.permutations_requested:
            lines.append(f"p-value {self.p_value:.4g}, based on {k} of "
                         f"{self.permutations_requested} permutations (time limit)")
        elif self.p_value is not None:
            lines.append(f"p-value {self.p_value:.4g} ({k} permutations)")
        if not self.complete:
            lines.append("INCOMPLETE (time limit): " + "; ".join(self.notes))
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.describe()

    def headline(self) -> dict:
        """The protected class, the detected subgroup, its score and p-value."""
        return {"protected": self.protected, "detected": self.subgroup_text,
                "score": float(self.score), "p_value": self.p_value, "complete": self.complete}

    def to_dict(self) -> dict:
        """JSON-friendly dictionary of the report (null scores as a list)."""
        return json_value({
            "method": self.method,
            "definition": self.definition.name,
            "family": self.definition.family,
            "predictions": self.definition.predictions,
            "condition_value": self.definition.condition_value,
            "event": self.definition.event,
            "direction": self.direction,
            "protected": self.protected,
            "n_protected": self.n_protected,
            "subgroup": self.subgroup,
            "detected": self.subgroup_text,
            "score": self.score,
            "parameter": self.parameter,
            "multiplier": self.multiplier,
            "n": self.n,
            "observed_rate": self.observed_rate,
            "expected_rate": self.expected_rate,
            "comparison": self.comparison_text,
            "comparison_n": self.comparison_n,
            "comparison_rate": self.comparison_rate,
            "p_value": self.p_value,
            "n_permutations": self.null_scores.size,
            "permutations_requested": self.permutations_requested,
            "null_scores": self.null_scores,
            "penalty": self.penalty,
            "n_restarts": self.n_restarts,
            "restarts_run": self.restarts_run,
            "min_group_size": self.min_group_size,
            "sigma": self.sigma,
            "propensity_model": self.propensity_model,
            "complete": self.complete,
            "notes": list(self.notes),
        })

    def to_frame(self) -> pd.DataFrame:
        """One-row DataFrame in the layout of the paper's Table 4 (plus settings)."""
        d = self.to_dict()
        d.pop("null_scores")
        d["subgroup"] = None if d["subgroup"] is None else str(d["subgroup"])
        d["notes"] = "; ".join(d["notes"])
        return pd.DataFrame([d])

    def _plot(self, ax, bins: int = 30):
        """The permutation null scores with the observed score (a scan with permutations,
        :func:`pcfair.plot.cbs_null_distribution`), else the subgroup's observed, expected and
        comparison rates."""
        if np.asarray(self.null_scores).size:
            from pcfair.plot import cbs_null_distribution

            return cbs_null_distribution(self, bins=bins, ax=ax)
        rates = [self.observed_rate, self.expected_rate, self.comparison_rate]
        ax.bar(["observed", "expected", "comparison"], np.nan_to_num(rates),
               color=["tab:red", "0.6", "tab:blue"])
        ax.set_ylabel("rate of the audited event")
        ax.set_title(f"{self.subgroup_text} (score {self.score:.3g})", fontsize=9)
        return ax


class CBSScans(AuditResult):
    """Several scans, one per protected class (what ``pcfair audit cbs`` runs for every value
    of every sensitive column): a table with one row per scan, highest score first.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from pcfair.audits.cbs import conditional_bias_scan
    >>> rng = np.random.default_rng(0)
    >>> df = pd.DataFrame({"g": rng.integers(0, 2, 1000), "x": rng.integers(0, 2, 1000)})
    >>> df["y"] = (rng.random(1000) < 0.5).astype(int)
    >>> df["p"] = np.where((df.g == 1) & (df.x == 1), 0.7, 0.3)
    >>> scans = CBSScans([conditional_bias_scan(df, protected=("g", v), outcome="y",
    ...     prediction="p", covariates=["x"], definition="fpr", n_permutations=0,
    ...     random_state=0) for v in (0, 1)])
    >>> scans.to_frame()["detected"].tolist()
    ['g = 1 & x = 1', 'none']
    """

    method = "cbs"

    def __init__(self, scans):
        self.scans = sorted(scans, key=lambda r: -r.score)

    def found(self, alpha: float = 0.05) -> bool:
        """True when a scan found a subgroup (with permutations: a significant one; see
        :meth:`CBSResult.detected`)."""
        return any(r.detected(alpha) for r in self.scans)

    @property
    def complete(self) -> bool:
        """False when a time limit cut one of the scans (its ``notes`` say what)."""
        return all(r.complete for r in self.scans)

    def headline(self) -> dict:
        best = self.scans[0] if self.scans else None
        return {"n_scans": len(self.scans),
                "best": None if best is None else best.subgroup_text,
                "best_score": None if best is None else float(best.score),
                "complete": self.complete}

    def to_frame(self) -> pd.DataFrame:
        if not self.scans:
            return pd.DataFrame()
        return pd.concat([r.to_frame() for r in self.scans], ignore_index=True)

    def to_dict(self) -> dict:
        out = {"method": self.method, **json_value(self.headline())}
        out["scans"] = [r.to_dict() for r in self.scans]
        return out

    def describe(self) -> str:
        """The scans' descriptions, one block each; an incomplete run ends with a line saying
        so."""
        text = "\n\n".join(r.describe() for r in self.scans)
        if not self.complete:
            cut = sum(not r.complete for r in self.scans)
            text += (f"\n\nINCOMPLETE: the time limit cut {cut} of {len(self.scans)} scan(s); "
                     "what they found stands, what they did not find is undetermined")
        return text

    def _plot(self, ax, alpha: float = 0.05, top: int | None = 20):
        """Bar chart of the scores, one bar per scan (:func:`pcfair.plot.cbs_scores`)."""
        from pcfair.plot import cbs_scores

        return cbs_scores(self.to_frame(), alpha=alpha, top=top, ax=ax)
