"""The paper's structured-data sampler: one-step perturbation of a seed row (Sec. 4.3).

To draw a member of R: pick a seed row of D satisfying R (for not-R, one violating R)
uniformly with replacement, pick one non-sensitive feature uniformly, and move it by
``dir * s_pert`` with dir in {-1, +1} (s_pert = 1 for integer features, 0.01 for decimal
ones), clipped to the feature's [min, max] over D. Sensitive features are never changed, so
the sample stays in its group.

A port decision: an integer feature moves by ``s_pert`` *values observed in D* (its rank among
them), not by ``s_pert`` units. Where its values are contiguous (the paper's integer-coded ADF
data) the two agree; where they have gaps (a family count of 0-5 and 8) a unit step would make
a value no row has (7), which a model learned from D cannot read (its categories are D's).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from pcfair._random import check_random_state
from pcfair.errors import DataError

from . import _kernels
from .errors import EmptyGroupError, RuleSetError
from .rules import RuleSet
from .specs import SensitiveSpec

__all__ = ["TabularPerturbationSampler", "Perturbation"]


@dataclass(frozen=True)
class Perturbation:
    """Provenance of a batch of perturbed samples: seed row, feature and direction of each."""

    seed: np.ndarray
    feature: np.ndarray
    direction: np.ndarray


class TabularPerturbationSampler:
    """Sample group members by perturbing one non-sensitive feature of a seed row.

    Parameters
    ----------
    int_step : float
        s_pert for integer features (1 in the paper).
    float_step : float
        s_pert for decimal features (0.01 in the paper).
    clip : bool
        Clip a perturbed value to the feature's [min, max] over D (a port decision; without
        it an integer-coded category could leave its code range).
    features : sequence of str, optional
        The features that may be perturbed (default: every non-sensitive column).

    Attributes
    ----------
    columns_ : list of str
        Columns of D, in order.
    perturbable_ : list of str
        Features that are perturbed.
    steps_ : numpy.ndarray
        The step of each perturbable feature.

    Notes
    -----
    An integer feature is one with an integer dtype, or a float dtype whose values are all
    whole numbers. Non-numeric features (strings, categories, booleans) are treated as
    integer-coded categories: their code in sorted order (or the categorical dtype's order)
    moves by one, which is what ±1 does on the integer-coded data of ADF that the paper used.

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.audits.testsgd import CategoricalRule, RuleSet, SensitiveSpec
    >>> df = pd.DataFrame({"sex": ["F", "M", "F", "M"], "hours": [10, 20, 30, 40]})
    >>> sampler = TabularPerturbationSampler().fit(df, [SensitiveSpec.categorical("sex", ["F", "M"])])
    >>> out = sampler.sample(RuleSet([CategoricalRule("sex", ("F",))]), 4, in_group=True, random_state=0)
    >>> sorted(set(out["sex"]))
    ['F']
    """

    name = "perturbation"
    #: Plans hold seed rows, so materialising them needs no rule set (plans of many rule sets
    #: can be built into one frame).
    plans_need_rule_set = False

    def __init__(
        self,
        *,
        int_step: float = 1,
        float_step: float = 0.01,
        clip: bool = True,
        features: Sequence[str] | None = None,
    ):
        self.int_step = int_step
        self.float_step = float_step
        self.clip = clip
        self.features = features

    # ------------------------------------------------------------------ fit
    def fit(self, data: pd.DataFrame, specs: Sequence[SensitiveSpec]) -> TabularPerturbationSampler:
        """Bind the sampler to D and the sensitive features; returns self."""
        if not isinstance(data, pd.DataFrame):
            raise DataError(f"the tabular sampler needs a pandas DataFrame, got {type(data).__name__}")
        if len(data) == 0:
            raise DataError("the tabular sampler needs a non-empty dataset")
        sensitive = [s.source_column for s in specs]
        for name in sensitive:
            if name not in data.columns:
                raise DataError(f"sensitive column {name!r} is not in the data")
        if self.features is None:
            perturbable = [c for c in data.columns if c not in sensitive]
        else:
            perturbable = list(self.features)
            clash = [c for c in perturbable if c in sensitive]
            if clash:
                raise DataError(f"features {clash} are sensitive and may not be perturbed")
            missing = [c for c in perturbable if c not in data.columns]
            if missing:
                raise DataError(f"features {missing} are not in the data")
        if not perturbable:
            raise DataError("no non-sensitive feature is left to perturb")
        self.data_ = data.reset_index(drop=True)
        self.specs_ = tuple(specs)
        self.columns_ = list(data.columns)
        self.perturbable_ = perturbable
        self.n_rows_ = len(data)
        # Numeric working copy of each perturbable column, and how to turn it back.
        self._numeric: dict[str, np.ndarray] = {}
        self._decode: dict[str, Any] = {}
        steps, lows, highs = [], [], []
        self._levels: dict[str, np.ndarray] = {}  # an integer feature's values in D, sorted
        for name in perturbable:
            values, decode, is_int = self._encode(data[name], name)
            if is_int and decode[0] in ("int", "float"):  # steps over D's values (module doc)
                self._levels[name] = levels = np.unique(values)
                values = np.searchsorted(levels, values).astype(float)
            self._numeric[name] = values
            self._decode[name] = decode
            steps.append(self.int_step if is_int else self.float_step)
            lows.append(values.min())
            highs.append(values.max())
        self.steps_ = np.asarray(steps, dtype=float)
        self._low = np.asarray(lows, dtype=float)
        self._high = np.asarray(highs, dtype=float)
        self._masks: OrderedDict[RuleSet, np.ndarray] = OrderedDict()
        self._pools: dict[tuple[RuleSet, bool], np.ndarray] = {}
        self._raw = {
            name: (self.data_[name].to_numpy(), self.data_[name].dtype)
            for name in self.columns_
            if name not in self._numeric
        }
        # Extension dtypes (strings...) are restored in one astype after building the frame.
        self._retype = {
            name: data[name].dtype
            for name in self.columns_
            if not isinstance(data[name].dtype, (np.dtype, pd.CategoricalDtype))
        }
        self._spec_by_name = {s.name: s for s in self.specs_ if s.kind != "term_category"}
        self._codes = {name: spec.codes(self.data_) for name, spec in self._spec_by_name.items()}
        return self

    @staticmethod
    def _encode(series: pd.Series, name: str) -> tuple[np.ndarray, Any, bool]:
        if series.isna().any():
            raise DataError(f"column {name!r} has missing values; the sampler cannot perturb it")
        if pd.api.types.is_bool_dtype(series):
            return series.to_numpy(dtype=float), ("bool", None), True
        if pd.api.types.is_integer_dtype(series):
            return series.to_numpy(dtype=float), ("int", series.dtype), True
        if pd.api.types.is_float_dtype(series):
            values = series.to_numpy(dtype=float)
            return values, ("float", series.dtype), bool(np.all(values == np.round(values)))
        if isinstance(series.dtype, pd.CategoricalDtype):
            cats = series.cat.categories
            return series.cat.codes.to_numpy(dtype=float), ("category", series.dtype, np.asarray(cats, dtype=object)), True
        uniques = series.unique().tolist()
        try:
            uniques = sorted(uniques)
        except TypeError:
            uniques = sorted(uniques, key=str)
        codes = pd.Categorical(series, categories=uniques).codes
        return codes.astype(float), ("codes", series.dtype, np.asarray(uniques, dtype=object)), True

    def _check_fitted(self) -> None:
        if not hasattr(self, "data_"):
            raise DataError("the sampler is not fitted; call sampler.fit(data, specs) first")

    def group_mask(self, rule_set: RuleSet) -> np.ndarray:
        """Rows of D that satisfy ``rule_set`` (cached for the most recent rule sets)."""
        self._check_fitted()
        mask = self._masks.get(rule_set)
        if mask is None:
            mask = np.ones(self.n_rows_, dtype=bool)
            for rule in rule_set:
                spec = self._spec_by_name.get(rule.feature)
                try:
                    allowed = rule.allowed_codes(spec) if spec is not None else None
                except RuleSetError:
                    allowed = None
                if allowed is None:
                    mask &= rule.mask(self.data_)
                else:
                    mask &= allowed[self._codes[rule.feature]]
            self._masks[rule_set] = mask
            if len(self._masks) > 64:
                self._masks.popitem(last=False)
        else:
            self._masks.move_to_end(rule_set)
        return mask

    def _pool(self, rule_set: RuleSet, in_group: bool) -> np.ndarray:
        key = (rule_set, in_group)
        pool = self._pools.get(key)
        if pool is None:
            mask = self.group_mask(rule_set)
            pool = self._pools[key] = np.flatnonzero(mask if in_group else ~mask)
            if len(self._pools) > 64:
                self._pools.pop(next(iter(self._pools)))
        return pool

    # ------------------------------------------------------------------ sample
    def draw_plan(self, rule_set: RuleSet, n: int, *, in_group: bool, random_state: Any = None) -> np.ndarray:
        """The random choices of ``n`` samples: an int array of (seed row, feature, direction).

        Three uniforms per sample, so drawing n then m plans from one generator equals
        drawing n + m at once.

        Raises
        ------
        EmptyGroupError
            No row of D can seed the requested group.
        """
        self._check_fitted()
        rng = check_random_state(random_state)
        pool = self._pool(rule_set, bool(in_group))
        if pool.size == 0:
            side = "satisfies" if in_group else "violates"
            raise EmptyGroupError(f"no row of the data {side} the rule set {rule_set.render()!r}")
        u = rng.random((int(n), 3))
        seed, feature, direction = _kernels.perturbation_choices(u, pool, len(self.perturbable_))
        return np.column_stack([seed, feature, direction])

    def materialize(self, rule_set: RuleSet | None, plan: np.ndarray) -> pd.DataFrame:
        """Build the perturbed rows of a plan (the rule set is not needed: seeds carry it)."""
        self._check_fitted()
        plan = np.asarray(plan, dtype=np.int64).reshape(-1, 3)
        seed, feature, direction = plan[:, 0], plan[:, 1], plan[:, 2]
        out: dict[str, Any] = {}
        for name, (values, dtype) in self._raw.items():
            out[name] = values[seed]
        for j, name in enumerate(self.perturbable_):
            values = self._numeric[name][seed]
            if len(plan):
                values = _kernels.apply_perturbation(
                    values, feature == j, direction, self.steps_[j], self._low[j], self._high[j], self.clip
                )
            levels = self._levels.get(name)
            if levels is not None:  # ranks back to values (unclipped ranks stay in range too)
                values = levels[np.clip(np.round(values), 0, len(levels) - 1).astype(np.int64)]
            out[name] = self._restore(values, self._decode[name])
        frame = pd.DataFrame(out, columns=self.columns_, copy=False)
        if self._retype:
            frame = frame.astype(self._retype)
        return frame

    def sample_with_provenance(
        self, rule_set: RuleSet, n: int, *, in_group: bool, random_state: Any = None
    ) -> tuple[pd.DataFrame, Perturbation]:
        """Like :meth:`sample`, also returning the (seed, feature, direction) of each sample."""
        plan = self.draw_plan(rule_set, n, in_group=in_group, random_state=random_state)
        names = np.asarray(self.perturbable_, dtype=object)
        return self.materialize(rule_set, plan), Perturbation(
            seed=plan[:, 0], feature=names[plan[:, 1]], direction=plan[:, 2]
        )

    def sample(self, rule_set: RuleSet, n: int, *, in_group: bool, random_state: Any = None) -> pd.DataFrame:
        """``n`` perturbed samples of R (``in_group=True``) or of not-R.

        Raises
        ------
        EmptyGroupError
            No row of D can seed the requested group.
        """
        return self.materialize(rule_set, self.draw_plan(rule_set, n, in_group=in_group, random_state=random_state))

    @staticmethod
    def _restore(values: np.ndarray, decode: Any) -> Any:
        kind = decode[0]
        if kind == "bool":
            return values.astype(bool)
        if kind in ("int", "float"):
            dtype = decode[1] if isinstance(decode[1], np.dtype) else (np.int64 if kind == "int" else float)
            return values.astype(dtype)
        codes = values.astype(np.int64)
        if kind == "category":
            return pd.Categorical.from_codes(codes, dtype=decode[1])
        return decode[2][codes]
