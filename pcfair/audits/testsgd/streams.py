"""The sampler protocol and reproducible sample streams.

A *group sampler* draws inputs of the group R (``in_group=True``) or of its complement
(``in_group=False``). Algorithm 2 consumes each group's samples as a stream; a
:class:`SampleStream` draws them in fixed-size chunks from its own generator, so the i-th
sample of a stream depends only on the stream's seed, never on how many samples are asked
for at a time. That is what makes the batched scorer return exactly what the one-at-a-time
loop returns, for any batch size.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from pcfair._random import check_random_state

from .rules import RuleSet
from .specs import SensitiveSpec

__all__ = ["GroupSampler", "SampleStream", "seed_sequence"]

#: Default number of samples drawn per chunk of a stream.
CHUNK_SIZE = 512

Batch = Any  # a pandas.DataFrame (structured data) or a list of str (text)


@runtime_checkable
class GroupSampler(Protocol):
    """What Algorithm 2 needs from a sampler.

    ``fit(data, specs)`` binds the sampler to the dataset D and the sensitive features and
    returns it; ``sample(rule_set, n, in_group=..., random_state=...)`` returns ``n`` inputs
    of the group (or of its complement) as one batch the model accepts. ``name`` labels the
    results obtained with the sampler.

    Examples
    --------
    >>> from pcfair.audits.testsgd.tabular_sampler import TabularPerturbationSampler
    >>> isinstance(TabularPerturbationSampler(), GroupSampler)
    True
    """

    name: str

    def fit(self, data: pd.DataFrame, specs: Sequence[SensitiveSpec]) -> GroupSampler: ...

    def sample(
        self, rule_set: RuleSet, n: int, *, in_group: bool, random_state: Any = None
    ) -> Batch: ...


def seed_sequence(random_state: int | np.random.Generator | None) -> np.random.SeedSequence:
    """A SeedSequence to spawn independent child streams from.

    A SeedSequence argument is copied (spawning mutates a SeedSequence), so passing the same
    one twice gives the same children twice.
    """
    if isinstance(random_state, np.random.SeedSequence):
        return np.random.SeedSequence(
            random_state.entropy, spawn_key=random_state.spawn_key, pool_size=random_state.pool_size
        )
    if isinstance(random_state, np.random.Generator):
        return np.random.SeedSequence(random_state.integers(0, 2**63 - 1, size=4).tolist())
    return np.random.SeedSequence(random_state)


def concat_batches(batches: Sequence[Batch]) -> Batch:
    """Concatenate batches of the same kind (frames row-wise, text lists end to end)."""
    if len(batches) == 1:
        return batches[0]
    if isinstance(batches[0], pd.DataFrame):
        return pd.concat(batches, ignore_index=True)
    out: list = []
    for b in batches:
        out.extend(b)
    return out


def slice_batch(batch: Batch, start: int, stop: int) -> Batch:
    """Rows ``start:stop`` of a batch."""
    if isinstance(batch, pd.DataFrame):
        return batch.iloc[start:stop].reset_index(drop=True)
    return batch[start:stop]


def _has_plans(sampler: Any, in_group: bool) -> bool:
    if not (callable(getattr(sampler, "draw_plan", None)) and callable(getattr(sampler, "materialize", None))):
        return False
    supports = getattr(sampler, "supports_plans", None)
    return True if supports is None else bool(supports(in_group))


class SampleStream:
    """An endless, reproducible stream of samples of one group.

    Samplers that split sampling into a cheap random *plan* (``draw_plan``: an integer
    array, one row per sample) and its materialisation (``materialize(rule_set, plan)``)
    are streamed as plans, so that blocks are cut and joined as arrays and a batch is built
    once per model call; ``sample`` must equal ``materialize(draw_plan(...))``.

    Parameters
    ----------
    sampler : GroupSampler
        A fitted sampler.
    rule_set : RuleSet
        The group R.
    in_group : bool
        Stream members of R (True) or of not-R (False).
    random_state : int, Generator, SeedSequence or None
        The stream's own randomness.
    chunk_size : int
        Samples drawn per call to the sampler.

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.audits.testsgd import SensitiveSpec, RuleSet
    >>> from pcfair.audits.testsgd.tabular_sampler import TabularPerturbationSampler
    >>> from pcfair.audits.testsgd import CategoricalRule
    >>> df = pd.DataFrame({"g": ["F", "M"] * 5, "x": range(10)})
    >>> s = TabularPerturbationSampler().fit(df, [SensitiveSpec.categorical("g", ["F", "M"])])
    >>> stream = SampleStream(s, RuleSet([CategoricalRule("g", ("F",))]), True, 0)
    >>> len(stream.take(3)), stream.position
    (3, 3)
    """

    def __init__(
        self,
        sampler: GroupSampler,
        rule_set: RuleSet,
        in_group: bool,
        random_state: Any = None,
        *,
        chunk_size: int = CHUNK_SIZE,
    ):
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
        self.sampler = sampler
        self.rule_set = rule_set
        self.in_group = bool(in_group)
        if isinstance(random_state, np.random.SeedSequence):
            self._rng = np.random.default_rng(random_state)
        else:
            self._rng = check_random_state(random_state)
        self.chunk_size = int(chunk_size)
        self.uses_plans = _has_plans(sampler, self.in_group)
        self._buffer: list[Any] = []
        self._buffered = 0
        self._offset = 0  # rows of the first buffered chunk already handed out
        self.position = 0  # samples handed out so far
        self.drawn = 0  # samples drawn from the sampler so far

    def _draw_chunk(self) -> None:
        draw = self.sampler.draw_plan if self.uses_plans else self.sampler.sample
        chunk = draw(self.rule_set, self.chunk_size, in_group=self.in_group, random_state=self._rng)
        self._buffer.append(chunk)
        self._buffered += self.chunk_size
        self.drawn += self.chunk_size

    def _slice(self, chunk: Any, start: int, stop: int) -> Any:
        return chunk[start:stop] if self.uses_plans else slice_batch(chunk, start, stop)

    def take_raw(self, n: int) -> Any:
        """The next ``n`` samples as a plan (plan-capable samplers) or as a batch."""
        if n < 0:
            raise ValueError(f"cannot take {n} samples")
        while self._buffered - self._offset < max(n, 1):
            self._draw_chunk()
        parts = []
        need = n
        while need > 0:
            avail = self.chunk_size - self._offset
            k = min(avail, need)
            parts.append(self._slice(self._buffer[0], self._offset, self._offset + k))
            need -= k
            self._offset += k
            if self._offset == self.chunk_size:
                self._buffer.pop(0)
                self._buffered -= self.chunk_size
                self._offset = 0
        self.position += n
        if not parts:
            return self._slice(self._buffer[0], 0, 0)
        if self.uses_plans:
            return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)
        return concat_batches(parts)

    def take(self, n: int) -> Batch:
        """The next ``n`` samples of the stream, as one batch."""
        raw = self.take_raw(n)
        return self.sampler.materialize(self.rule_set, raw) if self.uses_plans else raw

