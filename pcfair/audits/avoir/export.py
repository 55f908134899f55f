"""Tabular JSON export of a monitor's specification tree and history (for Vega / Vega-Lite).

Each node of the specification tree becomes one row with the fields of the paper's
visualisation back end: ``id`` (a stable uuid), ``parent_id``, ``type`` (Specification,
SpecificationThreshold, ETerm, Expectation, Constant), ``repr`` (the pretty-printed subformula),
``idx`` (pre-order index) and ``vals``: one entry per check with the observation count ``t``,
``value``, ``epsilon``, ``failure_prob``, ``lower``, ``upper``, ``n`` (leaves) and ``truth``
(specification nodes). Infinite and missing numbers become ``null``.
"""

from __future__ import annotations

import json
import os

import numpy as np

from pcfair.audits._result import json_value
from pcfair.audits.avoir.monitor import Monitor, _truth_obj
from pcfair.errors import DataError

__all__ = ["export_tree", "to_json"]


def export_tree(monitor: Monitor) -> list[dict]:
    """One dictionary per specification node with its per-check history.

    Parameters
    ----------
    monitor : Monitor

    Returns
    -------
    list of dict
        Rows with keys ``id``, ``parent_id``, ``type``, ``repr``, ``idx``, ``threshold`` and
        ``vals`` (a list with one entry per check).

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.audits.avoir import Monitor
    >>> from pcfair.audits.avoir.export import export_tree
    >>> m = Monitor("E[r | g == 1] - E[r | g == 0] < 0.5")
    >>> _ = m.update(pd.DataFrame({"r": [1, 0] * 10, "g": [1, 0] * 10}))
    >>> rows = export_tree(m)
    >>> [r["type"] for r in rows], len(rows[0]["vals"])
    (['SpecificationThreshold', 'ETerm', 'Expectation', 'Expectation'], 4)
    """
    if not isinstance(monitor, Monitor):
        raise DataError(f"export_tree needs a Monitor, got {type(monitor).__name__}")
    prog = monitor.program
    t, ev, counts = monitor.history_arrays()
    rows = []
    for node in prog.nodes:
        i = node.index
        spec_level = node.kind in ("and", "or")
        vals = []
        for k in range(t.size):
            value = np.nan if spec_level else float(ev.value[k, i])
            eps = np.nan if spec_level else float(ev.epsilon[k, i])
            entry = {
                "t": int(t[k]),
                "value": json_value(value),
                "epsilon": json_value(eps),
                "failure_prob": json_value(ev.delta[k, i]),
                "lower": json_value(value - eps),
                "upper": json_value(value + eps),
            }
            if node.kind == "leaf":
                entry["n"] = int(counts[k, node.leaf])
            if node.is_spec:
                entry["truth"] = _truth_obj(ev.truth[k, i])
                entry["charged"] = json_value(ev.charged[k, i])
            vals.append(entry)
        rows.append({
            "id": node.id,
            "parent_id": None if node.parent is None else prog.nodes[node.parent].id,
            "type": node.type,
            "repr": node.obj.to_text(),
            "idx": i,
            "threshold": node.c if node.kind == "cmp" else None,
            "vals": vals,
        })
    return rows


def to_json(monitor: Monitor, path: str | os.PathLike | None = None, *,
            indent: int | None = None) -> str:
    """Serialise :func:`export_tree` as JSON text, optionally writing it to ``path``.

    Examples
    --------
    >>> import json, pandas as pd
    >>> from pcfair.audits.avoir import Monitor
    >>> from pcfair.audits.avoir.export import to_json
    >>> m = Monitor("E[r] > 0.5")
    >>> _ = m.update(pd.DataFrame({"r": [1] * 10}))
    >>> json.loads(to_json(m))[0]["repr"]
    'E[r] > 0.5'
    """
    text = json.dumps(export_tree(monitor), indent=indent, allow_nan=False)
    if path is not None:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    return text
