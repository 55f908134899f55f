"""Turning a DataFrame into categorical codes: the variables and their domains."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pcfair.circuit.variables import Variables
from pcfair.errors import DataError


def encode_frame(df: pd.DataFrame, variables: Variables | None = None
                 ) -> tuple[np.ndarray, Variables]:
    """Integer codes (rows × columns, int32) and the :class:`Variables` of a DataFrame.

    Each column is categorical: its domain is its sorted distinct values, unless ``variables``
    is given, in which case the columns are encoded against those domains (an unknown value
    is a :class:`DataError`). Missing values are a :class:`DataError`: learning from
    incomplete data needs EM, which is not offered.
    """
    if not isinstance(df, pd.DataFrame):
        raise DataError("expected a pandas DataFrame")
    if df.shape[1] == 0 or df.shape[0] == 0:
        raise DataError("the data has no rows or no columns")
    missing = df.isna().any()
    if missing.any():
        cols = list(missing[missing].index)
        raise DataError(f"missing values in column(s) {cols}: learning needs complete data "
                        "(drop or impute the rows)")
    names = [str(c) for c in df.columns]
    if variables is None:
        domains = []
        for c in df.columns:
            values = pd.unique(df[c])
            try:
                values = sorted(values)
            except TypeError:
                values = sorted(values, key=str)
            domains.append(tuple(v.item() if isinstance(v, np.generic) else v for v in values))
        variables = Variables(names, domains)
    codes = np.empty(df.shape, np.int32)
    for j, c in enumerate(df.columns):
        v = variables.index(str(c))
        table = {label: k for k, label in enumerate(variables.domains[v])}
        col = df[c].to_numpy(dtype=object)
        try:
            codes[:, j] = [table[x.item() if isinstance(x, np.generic) else x] for x in col]
        except KeyError as exc:
            raise DataError(f"column {c!r} has value {exc.args[0]!r}, which is not in its "
                            f"domain {list(variables.domains[v])}") from None
    return codes, variables
