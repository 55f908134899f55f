"""Matplotlib views of a monitor's history: the bands of each term narrowing to a verdict.

As in the paper's evaluation plots, a term shows its empirical value (dark blue), its ±ε band
(red dashed bounds, shaded) and, for a comparison, the threshold (green); a specification node
shows its three-valued truth over time. The x-axis is the number of records observed, shared
between panels. matplotlib is imported only when a plot is drawn (the ``plot`` extra).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pcfair.audits.avoir.monitor import Monitor
from pcfair.errors import DataError, VariableError
from pcfair.plot import _pyplot

__all__ = ["plot_history"]


def _resolve(monitor: Monitor, nodes) -> list[int]:
    prog = monitor.program
    if nodes is None:
        return list(prog.cmp_nodes)
    if isinstance(nodes, (str, int)):
        nodes = [nodes]
    out = []
    for want in nodes:
        if isinstance(want, (int, np.integer)) and 0 <= int(want) < len(prog.nodes):
            out.append(int(want))
            continue
        match = [n.index for n in prog.nodes if want in (n.id, n.obj.to_text())]
        if not match:
            raise VariableError(
                f"no node {want!r} in the specification; nodes are "
                f"{[n.obj.to_text() for n in prog.nodes]}")
        out.append(match[0])
    return out


def plot_history(monitor: Monitor, nodes: int | str | Sequence[int | str] | None = None, *,
                 axes: Sequence | None = None, log_x: bool = False) -> list:
    """Plot the value and ±ε band of specification nodes over the observed records.

    Parameters
    ----------
    monitor : Monitor
        A monitor created with ``keep_history=True`` that has made at least one check.
    nodes : int, str or list, optional
        Node indices, ids or texts (``repr``); default: every comparison (with its threshold).
    axes : sequence of matplotlib Axes, optional
        One per node; new figure otherwise.
    log_x : bool, default False

    Returns
    -------
    list of matplotlib.axes.Axes

    Examples
    --------
    >>> import pandas as pd
    >>> from pcfair.audits.avoir import Monitor
    >>> from pcfair.audits.avoir.plot import plot_history
    >>> m = Monitor("E[r] > 0.5")
    >>> _ = m.run(pd.DataFrame({"r": [1, 1, 0] * 100}))
    >>> axes = plot_history(m)  # doctest: +SKIP
    """
    if not isinstance(monitor, Monitor):
        raise DataError(f"plot_history needs a Monitor, got {type(monitor).__name__}")
    t, ev, _counts = monitor.history_arrays()
    if t.size == 0:
        raise DataError("the monitor has no history yet: feed at least one batch of records")
    idx = _resolve(monitor, nodes)
    plt = _pyplot()
    if axes is None:
        fig, axes = plt.subplots(len(idx), 1, sharex=True, squeeze=False,
                                 figsize=(7, 2.6 * len(idx)))
        axes = list(axes[:, 0])
    elif len(axes) != len(idx):
        raise DataError(f"got {len(axes)} axes for {len(idx)} nodes")
    prog = monitor.program
    stop = monitor.result().stop
    for ax, i in zip(axes, idx):
        node = prog.nodes[i]
        if node.kind in ("and", "or"):
            ax.step(t, ev.truth[:, i], where="post", color="navy")
            ax.set_yticks([-1, 0, 1], ["undetermined", "False", "True"])
        else:
            value, eps = ev.value[:, i], ev.epsilon[:, i]
            with np.errstate(invalid="ignore"):
                lo, hi = value - eps, value + eps
            ax.plot(t, value, color="darkblue", lw=1.5, label="estimate")
            ax.plot(t, lo, color="red", ls="--", lw=1, label="± ε")
            ax.plot(t, hi, color="red", ls="--", lw=1)
            finite = np.isfinite(lo) & np.isfinite(hi)
            ax.fill_between(t, np.where(finite, lo, np.nan), np.where(finite, hi, np.nan),
                            color="red", alpha=0.12)
            if node.kind == "cmp":
                ax.axhline(node.c, color="green", lw=1.2, label=f"threshold {node.c:g}")
            shown = value[np.isfinite(value)]
            if shown.size:
                # early bands are huge (ε = ∞ with no data): keep the estimate in view
                extra = [node.c] if node.kind == "cmp" else []
                vmin, vmax = min([shown.min(), *extra]), max([shown.max(), *extra])
                pad = max(0.25, vmax - vmin)
                ax.set_ylim(vmin - pad, vmax + pad)
        if stop is not None:
            ax.axvline(stop, color="gray", lw=0.8, ls=":", label=f"verdict at {stop}")
        ax.set_title(node.obj.to_text(), fontsize=9)
        if log_x:
            ax.set_xscale("log")
    axes[-1].set_xlabel("# observed")
    axes[0].legend(fontsize=7, loc="upper right")
    return axes
