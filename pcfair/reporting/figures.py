"""The report's figures, drawn with :mod:`pcfair.plot` on off-screen figures and kept as PNG.

Figures are built with :class:`matplotlib.figure.Figure` directly (not pyplot), so making a
report never opens a window, never changes the user's backend and leaves no figure behind.
Without matplotlib the report is still written, without pictures, and says why.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import pandas as pd

from pcfair.patterns.summaries import pareto_frame
from pcfair.reporting.content import ReportContent

__all__ = ["ReportFigure", "render_figures"]

DPI = 110


@dataclass(frozen=True)
class ReportFigure:
    """One picture of the report: where it goes, its title and caption, and its PNG bytes."""

    key: str
    section: str
    title: str
    caption: str
    png: bytes


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, bbox_inches="tight")
    return buf.getvalue()


def _front_frame(c: ReportContent) -> pd.DataFrame:
    """The front figure's points that discriminate at δ, with their strict Pareto front
    flagged (what :mod:`pcfair.plot` draws)."""
    return pareto_frame(c.front.probability, c.front.abs_score, c.delta)


def _grey_sentence(c: ReportContent) -> str:
    f = c.front
    if not f.complete:
        what = (f"the {f.total:,} discrimination patterns that the {f.engine} engine found "
                "(it did not finish: a time limit, or patterns below its probability floor; "
                "more may exist)")
    else:
        what = f"all {f.total:,} discrimination patterns at δ = {c.delta:g}"
    if f.shown < f.total:
        return (f"Grey: a uniform random sample of {f.shown:,} of {what}; the coloured "
                "summary patterns are drawn in full.")
    return f"Grey: {what}."


def _counts_figure(c: ReportContent, figure_cls) -> ReportFigure:
    from pcfair.plot import counts_by_delta

    fig = figure_cls(figsize=(6.0, 3.8))
    counts_by_delta(c.counts, ax=fig.add_subplot())
    caption = ("Number of discrimination patterns (|Δ| > δ) and of summary patterns at each "
               "threshold δ (symmetric-log scale).")
    if not c.counts["complete"].all():
        caption += (" Open markers are lower bounds: from a run stopped at its time limit, or "
                    "one that left out the patterns below the lattice's probability floor.")
    return ReportFigure("counts", "counts", "Pattern counts by threshold", caption, _png(fig))


def _summary_sets(c: ReportContent) -> dict:
    return {key: t.patterns for key, t in c.tables.items()
            if key in ("maximal", "minimal") and t.unavailable is None and t.patterns}


def _exact_front(c: ReportContent):
    t = c.tables["pareto"]
    return t.patterns if t.unavailable is None and t.complete else None


def _front_figure(c: ReportContent, figure_cls) -> ReportFigure:
    from pcfair.plot import pareto_front

    f = c.front
    fig = figure_cls(figsize=(6.4, 4.4))
    pareto_front(_front_frame(c), delta=c.delta, ax=fig.add_subplot(),
                 summary=_summary_sets(c), front=_exact_front(c), max_points=f.max_points,
                 population=f.total, title=f"Discrimination patterns at δ = {c.delta:g}")
    front = ("Red: the Pareto front (no pattern has both a higher |Δ| and a higher "
             "probability)" if _exact_front(c) is not None else
             "Red: the Pareto front of the patterns shown (the engine's own front is "
             "incomplete or unavailable)")
    caption = (f"Probability P(x, y) against discrimination score |Δ|, as in Figure 2 of "
               f"Selvam et al. (AAAI-23). {_grey_sentence(c)} {front}; blue and green: "
               "maximal and minimal patterns, where the engine produced them.")
    return ReportFigure("front", "front", "Pareto front", caption, _png(fig))


def _topk_figure(c: ReportContent, figure_cls) -> ReportFigure | None:
    from pcfair.plot import score_vs_probability

    sets = {f"top-{c.k} by {key[len('top_'):]}": t.patterns for key, t in c.tables.items()
            if key.startswith("top_") and t.unavailable is None and t.patterns}
    if not sets:
        return None
    f = c.front
    fig = figure_cls(figsize=(6.4, 4.4))
    score_vs_probability(_front_frame(c), highlight=sets, delta=c.delta,
                         ax=fig.add_subplot(), max_points=f.max_points, population=f.total,
                         title=f"Top-{c.k} patterns at δ = {c.delta:g}")
    caption = (f"The top-{c.k} patterns by discrimination score and by divergence among the "
               f"discrimination patterns, as in Figure 2a of Selvam et al. {_grey_sentence(c)}")
    return ReportFigure("topk", "front", "Top patterns", caption, _png(fig))


def _sampled_figure(c: ReportContent, figure_cls) -> ReportFigure:
    from pcfair.plot import pareto_front

    s, f = c.sampled, c.front
    fig = figure_cls(figsize=(11.0, 4.4))
    left, right = fig.subplots(1, 2, sharex=True, sharey=True)
    pareto_front(_front_frame(c), delta=c.delta, ax=left,
                 front=_exact_front(c), max_points=f.max_points, population=f.total,
                 title="exact" if f.complete else f"{f.engine} engine (stopped)")
    pareto_front(s.patterns, delta=c.delta, ax=right, front=s.front, max_points=f.max_points,
                 title=f"sampled ({s.patterns.stats.get('runs', '?')} runs)")
    caption = (f"Left: the patterns and Pareto front from the {f.engine} engine. Right: the "
               f"{len(s.patterns):,} patterns found by the sampling miner and their Pareto "
               f"front ({len(s.front)} patterns")
    if s.front_on_exact is not None:
        caption += f", {s.front_on_exact} of them on the exact front of {s.exact_front_size}"
    return ReportFigure("sampled", "sampled", "Exact and sampled Pareto fronts",
                        caption + "), as in Figure 2b-c of Selvam et al.", _png(fig))


def render_figures(c: ReportContent) -> tuple[list[ReportFigure], str | None]:
    """Draw every figure the content allows; returns them and, without matplotlib, why none.

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> from pcfair.reporting.content import gather
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.2, 0.8]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.6, 0.4]), 0.5)]))
    >>> figures, missing = render_figures(gather(pc, "d", ["s"], 0.1))
    >>> [f.key for f in figures], missing, figures[0].png[:4]
    (['counts', 'front', 'topk'], None, b'\\x89PNG')
    """
    try:
        from matplotlib.figure import Figure
    except ImportError:
        from pcfair.plot import MISSING_MATPLOTLIB

        return [], f"Figures are left out: {MISSING_MATPLOTLIB}."
    out = []
    if len(c.counts) >= 2:
        out.append(_counts_figure(c, Figure))
    if c.front is not None:
        out.append(_front_figure(c, Figure))
        top = _topk_figure(c, Figure)
        if top is not None:
            out.append(top)
        if c.sampled is not None:
            out.append(_sampled_figure(c, Figure))
    return out, None
