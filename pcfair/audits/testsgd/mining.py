"""Frequent rule-set mining: Algorithm 1 (FrequentRuleSets) of TestSGD, with pruning.

Algorithm 1 enumerates the Cartesian product of "one rule or none" over the sensitive features
and keeps the rule sets with support >= theta. That product is infeasible for many features,
so the port prunes with the anti-monotonicity of support: adding a rule on a further feature
never raises the support. Rule sets are generated depth-first over the features in order
(each set exactly once) and only frequent sets are extended, which returns exactly the sets
the naive enumeration returns (test T5).

The data is first compressed to its distinct combinations of sensitive codes with their
counts, so the cost of one extension is proportional to the number of distinct cells, and
all rules of a feature are scored at once from the feature's conditional count vector.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from pcfair.errors import DataError, SpecError

from .rules import CategoricalRule, RangeRule, Rule, RuleSet, TermRule
from .specs import SensitiveSpec, resolve_specs

__all__ = ["single_feature_rules", "frequent_rule_sets", "num_candidate_rule_sets"]

CATEGORICAL_MODES = ("subsets", "singletons")
RANGE_MODES = ("contiguous", "singletons")
SUPPORT_MODES = ("conjunction", "per_rule")


def _check_choice(name: str, value: str, choices: Sequence[str]) -> None:
    if value not in choices:
        raise SpecError(f"{name}={value!r} is not one of {list(choices)}")


def single_feature_rules(
    spec: SensitiveSpec,
    *,
    categorical_rules: str = "subsets",
    range_rules: str = "contiguous",
    include_full_range: bool = False,
    max_values: int = 16,
) -> list[Rule]:
    """All one-feature rules R^s of a sensitive feature (Sec. 4.1).

    Parameters
    ----------
    spec : SensitiveSpec
        The feature.
    categorical_rules : {"subsets", "singletons"}
        ``"subsets"``: every subset of L with 1 to |L| - 1 values (2^|L| - 2 rules).
        ``"singletons"``: one rule per value (the paper's worked count of 197).
    range_rules : {"contiguous", "singletons"}
        ``"contiguous"``: every range of adjacent bins; ``"singletons"``: one rule per bin.
    include_full_range : bool
        Whether the range of all K bins is a rule (K(K+1)/2 ranges instead of K(K+1)/2 - 1).
        Excluded by default, by analogy with "1 to |L| - 1" values.
    max_values : int
        Refuse ``"subsets"`` on a feature with more values than this (2^|L| rules).

    Returns
    -------
    list of Rule

    Examples
    --------
    >>> len(single_feature_rules(SensitiveSpec.categorical("race", list("ABCDE"))))
    30
    >>> len(single_feature_rules(SensitiveSpec.continuous("age", 0, 100, 10)))
    54
    """
    _check_choice("categorical_rules", categorical_rules, CATEGORICAL_MODES)
    _check_choice("range_rules", range_rules, RANGE_MODES)
    if spec.kind == "categorical":
        values = spec.values
        if len(values) < 2:
            return []
        if categorical_rules == "singletons":
            return [CategoricalRule(spec.name, (v,)) for v in values]
        if len(values) > max_values:
            raise SpecError(
                f"categorical feature {spec.name!r} has {len(values)} values, giving "
                f"2^{len(values)} - 2 subset rules; use categorical_rules='singletons' or "
                f"raise max_values (now {max_values})"
            )
        return [
            CategoricalRule(spec.name, combo)
            for size in range(1, len(values))
            for combo in itertools.combinations(values, size)
        ]
    if spec.kind == "continuous":
        k, edges = spec.n_codes, spec.edges
        if range_rules == "singletons":
            pairs = [(i, i) for i in range(k)]
        else:
            pairs = [(i, j) for i in range(k) for j in range(i, k)]
        if not include_full_range:
            pairs = [(i, j) for i, j in pairs if not (i == 0 and j == k - 1)]
        return [RangeRule(spec.name, i, j, edges) for i, j in pairs]
    return [TermRule(spec.name, t, spec.values, spec.column) for t in spec.values]


def num_candidate_rule_sets(specs: Sequence[SensitiveSpec], **rule_options: Any) -> int:
    """Size of Algorithm 1's unpruned candidate set, prod_s(|R^s| + 1) - 1.

    Examples
    --------
    >>> specs = [SensitiveSpec.categorical("g", "MF"), SensitiveSpec.categorical("r", "ABCDE")]
    >>> num_candidate_rule_sets(specs, categorical_rules="singletons")
    17
    """
    total = 1
    for spec in specs:
        total *= len(single_feature_rules(spec, **rule_options)) + 1
    return total - 1


def _mine(
    cells: np.ndarray,
    weights: np.ndarray,
    tables: list[tuple[list[Rule], np.ndarray]],
    n_rows: int,
    sup_thr: float,
    per_rule: bool,
) -> list[tuple[tuple[Rule, ...], int]]:
    """Depth-first enumeration of frequent rule sets over the compressed table."""
    n_feat = len(tables)
    out: list[tuple[tuple[Rule, ...], int]] = []
    weighted = [allowed.astype(float) for _, allowed in tables]
    single_ok = []
    for f, (_, allowed) in enumerate(tables):
        cnt = np.bincount(cells[:, f], weights=weights, minlength=allowed.shape[1])
        single_ok.append((weighted[f] @ cnt) / n_rows >= sup_thr)

    def extend(start: int, selected: np.ndarray, prefix: tuple[Rule, ...]) -> None:
        w = np.where(selected, weights, 0.0)
        for f in range(start, n_feat):
            rules, allowed = tables[f]
            if not rules:
                continue
            cnt = np.bincount(cells[:, f], weights=w, minlength=allowed.shape[1])
            rule_cnt = weighted[f] @ cnt
            ok = single_ok[f] if per_rule else (rule_cnt / n_rows >= sup_thr)
            codes_f = cells[:, f]
            for r in np.flatnonzero(ok):
                chosen = prefix + (rules[r],)
                out.append((chosen, int(round(rule_cnt[r]))))
                extend(f + 1, selected & allowed[r][codes_f], chosen)

    extend(0, np.ones(len(cells), dtype=bool), ())
    return out


def frequent_rule_sets(
    data: pd.DataFrame,
    sensitive: Any,
    *,
    sup_thr: float = 0.05,
    bins: int = 10,
    domains: Mapping[str, tuple[float, float]] | None = None,
    text_column: str | None = None,
    support_mode: str = "conjunction",
    categorical_rules: str = "subsets",
    range_rules: str = "contiguous",
    include_full_range: bool = False,
    max_values: int = 16,
) -> pd.DataFrame:
    """Frequent rule sets of a dataset (Algorithm 1, pruned).

    Parameters
    ----------
    data : pandas.DataFrame of shape (n_rows, n_columns)
        The dataset D (for text, a frame with a text column).
    sensitive : sequence, mapping or SensitiveSpec list
        The sensitive features S; see :func:`~pcfair.audits.testsgd.resolve_specs`.
    sup_thr : float
        theta, the support threshold, a fraction in [0, 1]. A rule set is frequent iff
        ``count / n_rows >= sup_thr`` (inclusive).
    bins : int
        K, equal-width bins of a continuous feature.
    domains : mapping, optional
        ``(lo, hi)`` domain per continuous feature (default: the data's min and max).
    text_column : str, optional
        Text data: the column holding the documents.
    support_mode : {"conjunction", "per_rule"}
        ``"conjunction"`` (Eq. 2): theta applies to the whole rule set. ``"per_rule"`` (the
        RQ2 wording): every rule on its own must reach theta; the conjunction may be rarer.
    categorical_rules, range_rules, include_full_range, max_values
        Passed to :func:`single_feature_rules`.

    Returns
    -------
    pandas.DataFrame
        One row per frequent rule set, fewest rules first: ``rule_set`` (a
        :class:`RuleSet`), ``text``, ``size``, ``count`` and ``support``.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"sex": list("FFMM"), "race": list("ABAB")})
    >>> frequent_rule_sets(df, ["sex", "race"], sup_thr=0.5)["text"].tolist()
    ['sex=F', 'sex=M', 'race=A', 'race=B']
    """
    if not 0.0 <= float(sup_thr) <= 1.0:
        raise SpecError(f"sup_thr must be a fraction in [0, 1], got {sup_thr}")
    _check_choice("support_mode", support_mode, SUPPORT_MODES)
    if len(data) == 0:
        raise DataError("cannot mine rule sets on an empty table")
    specs = resolve_specs(data, sensitive, bins=bins, domains=domains, text_column=text_column)
    options = dict(
        categorical_rules=categorical_rules,
        range_rules=range_rules,
        include_full_range=include_full_range,
        max_values=max_values,
    )
    tables = []
    for spec in specs:
        rules = single_feature_rules(spec, **options)
        allowed = (
            np.vstack([r.allowed_codes(spec) for r in rules])
            if rules
            else np.zeros((0, spec.n_codes), dtype=bool)
        )
        tables.append((rules, allowed))
    codes = np.column_stack([spec.codes(data) for spec in specs])
    cells, counts = np.unique(codes, axis=0, return_counts=True)
    found = _mine(cells, counts.astype(float), tables, len(data), float(sup_thr), support_mode == "per_rule")
    found.sort(key=lambda item: len(item[0]))  # stable: keeps depth-first order within a size
    n = len(data)
    frame = pd.DataFrame(
        {
            "rule_set": [RuleSet(rules) for rules, _ in found],
            "text": [", ".join(r.render() for r in rules) for rules, _ in found],
            "size": np.array([len(rules) for rules, _ in found], dtype=np.int64),
            "count": np.array([c for _, c in found], dtype=np.int64),
            "support": np.array([c / n for _, c in found], dtype=float),
        }
    )
    frame.attrs["n_candidates"] = math.prod(len(t[0]) + 1 for t in tables) - 1
    return frame
