"""The bootstrap of a learned model: the model re-learned on resampled training rows.

:class:`pcfair.inference.posterior.ParameterPosterior` draws the parameters of a fixed
structure from their posterior; the structure itself (the Chow-Liu tree, Strudel's splits)
varies only when the model is learned again, which is a learner's work and so lives here, above
the inference layer. :class:`BootstrapPosterior` gives its draws the same form (``circuits``),
so that :mod:`pcfair.patterns.uncertainty` reads either (``method="bootstrap"``).
"""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd

from pcfair._random import check_random_state
from pcfair.circuit.circuit import Circuit
from pcfair.errors import OptionError
from pcfair.learn.clt import learn_pc

__all__ = ["BootstrapPosterior"]


class BootstrapPosterior:
    """Models re-learned on resampled training rows: structure *and* parameters vary.

    Each draw resamples the ``n`` training rows with replacement and learns a new circuit
    with :func:`pcfair.learn.learn_pc` (``structure``, ``pseudocount``) over the same variables
    and values, so the spread of a pattern's Δ over draws includes the uncertainty of the
    Chow-Liu tree (or of Strudel's splits), which
    :class:`~pcfair.inference.posterior.ParameterPosterior` takes as fixed. It is a bootstrap,
    not a Bayesian posterior: its intervals are percentile intervals, and each draw costs a
    learning run (milliseconds for a Chow-Liu tree of a few columns).

    Parameters
    ----------
    circuit : Circuit
        The model whose variables (names, values, order) every draw keeps.
    frame : DataFrame
        The training rows in the model's values (complete).
    decision : str
    structure : {"clt", "strudel", "naive_bayes"}, default "clt"
    pseudocount : float, default 1.0

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.learn import learn_pc
    >>> df = pd.DataFrame({"d": [0, 1, 1, 0] * 25, "s": [0, 1, 1, 1] * 25, "z": [0, 0, 1, 1] * 25})
    >>> boot = BootstrapPosterior(learn_pc(df, "d"), df, "d")
    >>> [c.num_variables for c in boot.circuits(2, random_state=0)]
    [3, 3]
    """

    def __init__(self, circuit: Circuit, frame: pd.DataFrame, decision: str,
                 structure: str = "clt", pseudocount: float = 1.0):
        names = list(circuit.variables.names)
        missing = [n for n in names if n not in frame.columns]
        if missing:
            raise OptionError(f"the training rows lack the model's variables {missing}")
        self.circuit = circuit
        self.decision = str(decision)
        self.structure = structure
        self.pseudocount = float(pseudocount)
        self._frame = pd.DataFrame({
            n: pd.Categorical(frame[n], categories=list(circuit.variables.domains[i]))
            for i, n in enumerate(names)})
        if self._frame.isna().any().any():
            raise OptionError("the training rows must be complete and hold only the model's "
                              "values to be resampled")

    def circuits(self, n: int, random_state=None) -> Iterator[Circuit]:
        """``n`` circuits, each learned from a resample of the rows."""
        if n < 1:
            raise OptionError(f"the number of draws must be positive, got {n}")
        rng = check_random_state(random_state)
        rows = len(self._frame)
        for _ in range(n):
            take = rng.integers(0, rows, rows)
            sample = self._frame.iloc[take].reset_index(drop=True)
            learned = learn_pc(sample, self.decision, structure=self.structure,
                               pseudocount=self.pseudocount,
                               random_state=int(rng.integers(1 << 31)))
            yield learned.with_recipe(self.circuit.recipe)  # the original's favourable value
