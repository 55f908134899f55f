"""The paper's text sampler: identity-term replacement (Sec. 4.3).

To draw a member of R = {r_1..r_m}: pick a seed document that mentions every category of R,
then replace every term of each r_j's category by r_j ("I am a lesbian" becomes "I am a gay"
for R = {"gay"}). The paper does not say how to draw members of not-R; the port's default
draws, unmodified, a document that does not contain every term of R (term level). A custom
``rest_sampler`` can replace that choice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from pcfair._random import check_random_state
from pcfair.errors import DataError

from .errors import EmptyGroupError
from .rules import RuleSet, TermRule
from .specs import SensitiveSpec
from .terms import cached_matcher

__all__ = ["TermReplacementSampler"]

RestSampler = Callable[["TermReplacementSampler", RuleSet, int, np.random.Generator], list]


class TermReplacementSampler:
    """Sample texts of a group by replacing identity terms in seed documents.

    Parameters
    ----------
    rest_sampler : callable, optional
        ``rest_sampler(sampler, rule_set, n, rng) -> list of str`` draws members of not-R.
        Default: uniform draws, unmodified, among documents of D that do not contain every
        term of R.

    Attributes
    ----------
    texts_ : list of str
        The documents of D.
    category_presence_ : dict of str to numpy.ndarray
        For each term category, which documents mention it.

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.audits.testsgd import RuleSet, SensitiveSpec
    >>> from pcfair.audits.testsgd.rules import TermRule
    >>> df = pd.DataFrame({"text": ["I am a lesbian", "hello there"]})
    >>> spec = SensitiveSpec.term_category("gender", ["lesbian", "gay"], "text")
    >>> s = TermReplacementSampler().fit(df, [spec])
    >>> R = RuleSet([TermRule("gender", "gay", spec.values, "text")])
    >>> s.sample(R, 2, in_group=True, random_state=0)
    ['I am a gay', 'I am a gay']
    """

    name = "term_replacement"

    def __init__(self, *, rest_sampler: RestSampler | None = None):
        self.rest_sampler = rest_sampler

    def fit(self, data: pd.DataFrame, specs: Sequence[SensitiveSpec]) -> TermReplacementSampler:
        """Bind the sampler to the documents of D and the term categories; returns self."""
        term_specs = [s for s in specs if s.kind == "term_category"]
        if not term_specs:
            raise DataError("the term-replacement sampler needs term-category sensitive features")
        columns = {s.column for s in term_specs}
        if len(columns) != 1:
            raise DataError(f"all term categories must read one text column, got {sorted(columns)}")
        self.column_ = columns.pop()
        if self.column_ not in data.columns:
            raise DataError(f"text column {self.column_!r} is not in the data")
        texts = data[self.column_].tolist()
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise DataError(f"text column {self.column_!r} holds a non-string value {t!r} at row {i}")
        if not texts:
            raise DataError("the term-replacement sampler needs a non-empty dataset")
        self.texts_ = texts
        self.specs_ = {s.name: s for s in term_specs}
        self._presence = {}  # category -> (n_docs, n_terms) term presence
        self.category_presence_ = {}
        for s in term_specs:
            pres = cached_matcher(s.values).presence(texts)
            self._presence[s.name] = pres
            self.category_presence_[s.name] = pres.any(axis=1)
        return self

    def _check_fitted(self) -> None:
        if not hasattr(self, "texts_"):
            raise DataError("the sampler is not fitted; call sampler.fit(data, specs) first")

    def _rules(self, rule_set: RuleSet) -> list[TermRule]:
        rules = []
        for r in rule_set:
            if not isinstance(r, TermRule) or r.feature not in self.specs_:
                raise DataError(f"rule {r.render()!r} is not a term rule on a fitted category")
            rules.append(r)
        return rules

    def seed_mask(self, rule_set: RuleSet) -> np.ndarray:
        """Documents that may seed a member of R: they mention every category of R."""
        self._check_fitted()
        mask = np.ones(len(self.texts_), dtype=bool)
        for r in self._rules(rule_set):
            mask &= self.category_presence_[r.feature]
        return mask

    def member_mask(self, rule_set: RuleSet) -> np.ndarray:
        """Documents of D that already contain every term of R (term level)."""
        self._check_fitted()
        mask = np.ones(len(self.texts_), dtype=bool)
        for r in self._rules(rule_set):
            spec = self.specs_[r.feature]
            mask &= self._presence[r.feature][:, cached_matcher(spec.values).terms.index(r.term)]
        return mask

    def rewrite(self, text: str, rule_set: RuleSet) -> str:
        """Replace every term of each rule's category by the rule's term."""
        for r in self._rules(rule_set):
            text = cached_matcher(self.specs_[r.feature].values).replace(text, r.term)
        return text

    def supports_plans(self, in_group: bool) -> bool:
        """Whether the group's samples can be drawn as plans (not with a custom rest sampler)."""
        return bool(in_group) or self.rest_sampler is None

    def draw_plan(self, rule_set: RuleSet, n: int, *, in_group: bool, random_state: Any = None) -> np.ndarray:
        """The random choices of ``n`` samples: an int array of (seed document, in_group).

        Not available with a custom ``rest_sampler`` for not-R (its texts are drawn directly).
        """
        self._check_fitted()
        if not in_group and self.rest_sampler is not None:
            raise DataError("draw_plan is not available for not-R with a custom rest_sampler")
        rng = check_random_state(random_state)
        pool = np.flatnonzero(self.seed_mask(rule_set) if in_group else ~self.member_mask(rule_set))
        if pool.size == 0:
            what = "mentions every category of" if in_group else "lacks a term of"
            raise EmptyGroupError(f"no document {what} the rule set {rule_set.render()!r}")
        idx = pool[np.minimum((rng.random(int(n)) * pool.size).astype(np.int64), pool.size - 1)]
        return np.column_stack([idx, np.full(idx.size, int(bool(in_group)))])

    def materialize(self, rule_set: RuleSet, plan: np.ndarray) -> list[str]:
        """The texts of a plan: rewritten seeds for members of R, unmodified ones for not-R."""
        self._check_fitted()
        plan = np.asarray(plan, dtype=np.int64).reshape(-1, 2)
        cache: dict[int, str] = {}
        out = []
        for i, member in plan.tolist():
            if not member:
                out.append(self.texts_[i])
                continue
            text = cache.get(i)
            if text is None:
                text = cache[i] = self.rewrite(self.texts_[i], rule_set)
            out.append(text)
        return out

    def sample(self, rule_set: RuleSet, n: int, *, in_group: bool, random_state: Any = None) -> list[str]:
        """``n`` texts of R (rewritten seeds) or of not-R.

        Raises
        ------
        EmptyGroupError
            No document can seed the requested group.
        """
        self._check_fitted()
        if not in_group and self.rest_sampler is not None:
            rng = check_random_state(random_state)
            out = list(self.rest_sampler(self, rule_set, int(n), rng))
            if len(out) != n:
                raise DataError(f"rest_sampler returned {len(out)} texts, {n} were asked for")
            return out
        return self.materialize(rule_set, self.draw_plan(rule_set, n, in_group=in_group, random_state=random_state))
