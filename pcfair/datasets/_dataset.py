"""The :class:`Dataset` container every loader in :mod:`pcfair.datasets` returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from pcfair.errors import DataError


@dataclass(frozen=True, eq=False)
class Dataset:
    """A table with its decision column, favourable value and sensitive features.

    Parameters
    ----------
    frame : pandas.DataFrame
        The whole table, decision column included.
    target : str
        Name of the decision (outcome) column.
    favorable : object
        The favourable value of ``target`` (the "d" of a discrimination pattern).
    sensitive : list of str
        Names of the sensitive columns.
    name : str
        Short name (``"adult"``).
    description : str
        What the table is and how it was prepared.
    source : str
        Where the data came from: URL(s), or ``"synthetic"``.
    value_labels : dict of str to tuple, optional
        What the values of a coded column mean, from its preprocessing recipe: column ->
        one label per code (``{"Sex_": ("0 (Male)", "1 (Female)")}``: code ``k`` is
        ``value_labels[col][k]``). Empty when the recipe is not known.

    Attributes
    ----------
    X : pandas.DataFrame
        Every column except ``target``.
    y : pandas.Series
        The ``target`` column.
    feature_names : list of str
        Columns of ``X``.

    Raises
    ------
    DataError
        ``target`` or a sensitive column is not in ``frame``, or ``target`` is listed as
        sensitive.

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.datasets import Dataset
    >>> df = pd.DataFrame({"s": [0, 1, 1], "z": [1, 0, 1], "d": [1, 0, 1]})
    >>> ds = Dataset(df, target="d", favorable=1, sensitive=["s"])
    >>> ds.feature_names
    ['s', 'z']
    >>> ds.y.tolist()
    [1, 0, 1]
    """

    frame: pd.DataFrame
    target: str
    favorable: Any
    sensitive: list[str] = field(default_factory=list)
    name: str = ""
    description: str = ""
    source: str = ""
    value_labels: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        columns = list(self.frame.columns)
        if self.target not in columns:
            raise DataError(
                f"target column {self.target!r} is not in the frame; columns: {columns}"
            )
        missing = [s for s in self.sensitive if s not in columns]
        if missing:
            raise DataError(
                f"sensitive column(s) {missing} are not in the frame; columns: {columns}"
            )
        if self.target in self.sensitive:
            raise DataError(f"target column {self.target!r} cannot also be sensitive")
        object.__setattr__(self, "sensitive", list(self.sensitive))

    @property
    def X(self) -> pd.DataFrame:  # noqa: N802 (scikit-learn convention)
        """Every column except the target."""
        return self.frame.drop(columns=[self.target])

    @property
    def y(self) -> pd.Series:
        """The target column."""
        return self.frame[self.target]

    @property
    def feature_names(self) -> list[str]:
        """Names of the columns of :attr:`X`."""
        return [c for c in self.frame.columns if c != self.target]

    @property
    def n_samples(self) -> int:
        """Number of rows."""
        return len(self.frame)

    def __repr__(self) -> str:
        return (
            f"Dataset(name={self.name!r}, n_samples={self.n_samples}, "
            f"n_features={len(self.feature_names)}, target={self.target!r}, "
            f"favorable={self.favorable!r}, sensitive={self.sensitive!r})"
        )
