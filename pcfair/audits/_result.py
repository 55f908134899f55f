"""One result shape for the audit ports: :class:`AuditResult`.

Every port's result (``CBSResult``, ``TestSGDResult``, ``SRResult``, ``MonitorResult``)
derives from it and so has

* ``to_frame()``: the result's table (one row per subgroup, rule set, group or term);
* ``to_dict()``: a JSON-ready dictionary (plain Python numbers; NaN and infinities become
  None), what ``pcfair audit ... --format json`` prints;
* ``plot(ax=None)``: the result's picture on a matplotlib Axes (matplotlib is imported only
  when a plot is drawn, so the ports import without it);
* a readable ``repr``: the class, its headline numbers and the table's size.

A subclass defines :meth:`to_frame`, :meth:`headline` (the headline numbers) and
:meth:`_plot`; :meth:`to_dict` is ``headline()`` plus the table's rows unless overridden.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from pcfair.errors import PCFairError

__all__ = ["AuditResult", "json_value", "json_records"]


def json_value(v: Any) -> Any:
    """A JSON-ready version of ``v``: numpy scalars to Python, NaN/inf/NA to None, containers
    recursively, anything else unknown to its text.

    Examples
    --------
    >>> import numpy as np
    >>> json_value({"a": np.int64(3), "b": [np.float32(0.5), float("nan")], "c": (1, "x")})
    {'a': 3, 'b': [0.5, None], 'c': [1, 'x']}
    """
    if v is None or v is pd.NA or v is pd.NaT:
        return None
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v) if math.isfinite(float(v)) else None
    if isinstance(v, str):
        return v
    if isinstance(v, dict):
        return {str(json_value(k)) if not isinstance(k, str) else k: json_value(x)
                for k, x in v.items()}
    if isinstance(v, (list, tuple, np.ndarray, pd.Series)):
        return [json_value(x) for x in list(v)]
    return str(v)


def json_records(frame: pd.DataFrame) -> list[dict]:
    """The rows of ``frame`` as JSON-ready dictionaries (the index is left out)."""
    return [{str(k): json_value(v) for k, v in row.items()}
            for row in frame.to_dict(orient="records")]


class AuditResult:
    """Base class of the audit ports' results (see the module docstring).

    Examples
    --------
    >>> import pandas as pd
    >>> class Counts(AuditResult):
    ...     method = "demo"
    ...     def to_frame(self):
    ...         return pd.DataFrame({"group": ["a", "b"], "n": [3, 4]})
    ...     def headline(self):
    ...         return {"total": 7}
    >>> Counts()
    Counts(method='demo', total=7; 2 rows)
    >>> Counts().to_dict()
    {'method': 'demo', 'total': 7, 'rows': [{'group': 'a', 'n': 3}, {'group': 'b', 'n': 4}]}
    """

    #: Name of the audit method (``"cbs"``, ``"testsgd"``, ``"regression"``, ``"monitor"``).
    method: str = ""

    def to_frame(self) -> pd.DataFrame:
        """The result's table."""
        raise NotImplementedError

    def headline(self) -> dict:
        """The headline numbers (JSON-ready after :func:`json_value`)."""
        return {}

    def to_dict(self) -> dict:
        """A JSON-ready dictionary: ``method``, :meth:`headline` and the table's ``rows``."""
        out = {"method": self.method}
        out.update(json_value(self.headline()))
        out["rows"] = json_records(self.to_frame())
        return out

    def plot(self, ax=None, **kwargs):
        """Draw the result on ``ax`` (a new figure when None) and return the Axes.

        Raises
        ------
        pcfair.errors.MissingDependencyError
            matplotlib is not installed.
        """
        from pcfair.plot import _new_axes

        return self._plot(_new_axes(ax, (7.0, 4.0)), **kwargs)

    def _plot(self, ax, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no plot")

    def __repr__(self) -> str:
        head = ", ".join(f"{k}={_short(v)}" for k, v in self.headline().items()
                         if not isinstance(v, (list, dict)))
        try:
            n = len(self.to_frame())
        except (NotImplementedError, PCFairError):
            n = None
        tail = "" if n is None else f"; {n} rows"
        method = f"method={self.method!r}" + (", " if head else "")
        return f"{type(self).__name__}({method}{head}{tail})"


def _short(v: Any) -> str:
    if isinstance(v, (float, np.floating)):
        return f"{float(v):.4g}"
    return repr(v)
