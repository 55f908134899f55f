"""Fairness reports of a probabilistic circuit: one HTML file to hand to a reviewer.

:func:`report` certifies a circuit and explains the result in one document: the model's
structure and size, group-fairness metrics (DI, SP, SP-1, EO), the certificate, pattern counts
over a range of thresholds, the top patterns by discrimination and by divergence, the maximal,
minimal and Pareto-optimal summary patterns with what each means, the Pareto-front figure of
Selvam et al. (AAAI-23, Figure 2) and, optionally, a sampled run beside the exact one.

The HTML format is self-contained (inline CSS, images embedded as base64 PNG, no script, no
network); the markdown format shows the same sections for terminals and pull requests. Large
pattern sets stay small in print: tables are capped ("showing N of M") and the figure draws a
uniform random sample of the grey points.

Modules: :mod:`.content` (the computations, :class:`ReportContent`), :mod:`.figures`
(matplotlib, optional), :mod:`.document` (format-neutral sections), :mod:`.render_html` and
:mod:`.render_markdown`. The package is called ``reporting`` so that ``pcfair.report`` stays the
function.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pcfair.circuit.circuit import Circuit
from pcfair.reporting.content import ReportContent, ReportOptionError, gather

__all__ = ["ReportContent", "ReportFile", "ReportOptionError", "format_of", "gather", "report"]


@dataclass(frozen=True)
class ReportFile:
    """What :func:`report` returns when it wrote a file: where, in which format, and the
    verdict (``fair`` as in :class:`pcfair.Certificate`), instead of the whole document
    flooding a notebook cell; ``read()`` gives the document."""

    path: Path
    format: str
    fair: bool | None
    delta: float

    def read(self) -> str:
        """The document's text."""
        return self.path.read_text(encoding="utf-8")

    def __repr__(self) -> str:
        verdict = {True: "FAIR", False: "UNFAIR", None: "INCOMPLETE"}[self.fair]
        return f"ReportFile({str(self.path)!r}, {self.format}, {verdict} at delta {self.delta})"


#: File name suffixes of each format (a name without a suffix is written as asked).
SUFFIXES = {"html": (".html", ".htm"), "markdown": (".md", ".markdown")}


def format_of(path: str | os.PathLike) -> str | None:
    """The report format a file name's suffix says, or None.

    Examples
    --------
    >>> format_of("report.md"), format_of("r.HTML"), format_of("r.pdf")
    ('markdown', 'html', None)
    """
    suffix = Path(path).suffix.lower()
    return next((fmt for fmt, known in SUFFIXES.items() if suffix in known), None)


def _check_suffix(out: Path, format: str) -> None:
    """Refuse to write ``format`` under a name whose suffix says another format (an HTML
    page in ``r.pdf``, markdown in ``r.html``)."""
    suffix = out.suffix
    if not suffix or suffix.lower() in SUFFIXES.get(format, ()):
        return
    other = format_of(out)
    why = (f"its suffix is for {other} (format={other!r})" if other is not None else
           f"pcfair writes HTML or markdown, not {suffix} (write .html and print it to PDF "
           "from a browser)")
    raise ReportOptionError(f"cannot write a {format} report to {out}: {why}")


def _write_images(figures, out: Path) -> dict[str, str]:
    """Save the figures beside a markdown file; returns their relative paths by key."""
    folder = out.with_name(out.stem + "_files")
    folder.mkdir(exist_ok=True)
    paths = {}
    for f in figures:
        (folder / f"{f.key}.png").write_bytes(f.png)
        paths[f.key] = f"{folder.name}/{f.key}.png"
    return paths


def report(pc: Circuit | str | os.PathLike, decision, sensitive, delta: float, *, favorable=None,
           deltas: Sequence[float] = (0.01, 0.05, 0.1), k: int = 10, format: str = "html",
           out: str | os.PathLike | None = None, engine: str = "auto",
           time_limit: float | None = None, sampled=None, max_patterns_per_table: int = 25,
           max_front_points: int = 20_000, title: str | None = None,
           random_state=0, n_jobs: int = 1, executor=None, min_support: float = 0.0,
           data=None, credible: float | None = None, draws: int = 200
           ) -> "str | ReportFile":
    """Certify a circuit and write a report a person can read (see the module docstring).

    Parameters
    ----------
    pc : Circuit or path
        The circuit, or a model file for :func:`pcfair.load` (a ``.psdd`` finds its sibling
        ``.vtree``).
    decision : str
        The binary decision variable ``D``.
    sensitive : str or sequence of str
        The sensitive variables.
    delta : float
        The threshold of certification and of the pattern tables and figures.
    favorable : value, optional
        The favourable decision value. Needed unless the decision's values are 0 and 1
        (then 1: :func:`pcfair.inference.quotient.implicit_favorable`); a decision such as
        ``["<=50K", ">50K"]`` without it is refused, never guessed.
    deltas : sequence of float, default (0.01, 0.05, 0.1)
        Thresholds of the pattern-count table (``delta`` is added).
    k : int, default 10
        Size of the top-k tables.
    format : {"html", "markdown"}
        Output format.
    out : path, optional
        Also write the document there. For markdown, the figures are saved as PNG files in
        ``<out stem>_files/`` beside it and referenced; without ``out`` markdown has captions
        only.
    engine : {"auto", "lattice", "search"}
        Engine of every exact query (``"auto"``: dense when its tables fit, else branch and
        bound). What the chosen engine cannot produce (e.g. summaries from the search engine)
        is reported as unavailable, with the engine's reason.
    time_limit : float, optional
        Seconds for each branch-and-bound run (certificate, each count, each table). None: no
        limit, which on circuits too large for the lattice engine can take very long.
    sampled : PatternSet or int, optional
        A run of :func:`pcfair.sample_patterns` to show beside the exact results, or a number
        of sampling runs to make (seeded by ``random_state``).
    max_patterns_per_table : int, default 25
        Rows printed per pattern table; the caption gives the total ("showing N of M").
    max_front_points : int, default 20000
        Grey points drawn in the figures; more patterns are drawn as a uniform random sample.
    title : str, optional
        Heading of the document (default "pcfair fairness report", or the file name).
    random_state : int or Generator, default 0
        Seeds the sampled run, sampled EO estimates and the figure's subsample.
    min_support : float, default 0
        Set aside patterns with ``P(x, y)`` below it in every count and table (see
        :func:`pcfair.find_patterns`).
    data : DataFrame or CSV path, optional
        A table of the model's variables (e.g. its training data): the witness and every
        pattern table show how many of its rows match each pattern. Raw rows are read by the
        model's recipe.
    credible : float, optional
        Add the section "How sure is this?": credible intervals at this level (e.g. 0.95) of
        the witness's and the top-k patterns' Δ, which of them are robust and which may be
        noise, and the probability that the model is δ-fair, from ``draws`` draws of the
        parameter posterior (:mod:`pcfair.patterns.uncertainty`; the model's training counts,
        else ``data`` as its training rows).
    draws : int, default 200
    n_jobs, executor
        Where the engines run their chunks: local processes, or an executor / Dask client /
        scheduler address (see :func:`pcfair.find_patterns`).

    Returns
    -------
    str or ReportFile
        The document; with ``out``, a small :class:`ReportFile` (path, format, verdict)
        instead.

    Raises
    ------
    ReportOptionError
        An option is out of range (a threshold outside [0, 1), an unknown format...), the
        folder of ``out`` does not exist, or its suffix is not one of ``format``'s
        (:data:`SUFFIXES`: no HTML page in ``r.pdf``); all checked before any work.
    VariableError, StructureError, LatticeTooLarge
        From the certifier, for unknown variables or a circuit the chosen engine cannot handle.

    See Also
    --------
    pcfair.certify, pcfair.find_patterns, pcfair.pattern_census, pcfair.plot.pareto_front

    Examples
    --------
    >>> import pcfair
    >>> from pcfair.circuit import CircuitBuilder
    >>> b = CircuitBuilder({"d": [0, 1], "sex": ["F", "M"], "age": ["<25", "25+"]})
    >>> pc = b.build(b.decision([
    ...     (b.indicator("d", 1), b.product(b.categorical("sex", [0.4, 0.6]),
    ...                                     b.categorical("age", [0.3, 0.7])), 0.45),
    ...     (b.indicator("d", 0), b.product(b.categorical("sex", [0.55, 0.45]),
    ...                                     b.categorical("age", [0.5, 0.5])), 0.55)]))
    >>> page = pcfair.report(pc, "d", ["sex"], 0.05)
    >>> page.startswith("<!DOCTYPE html>"), "UNFAIR at δ = 0.05" in page
    (True, True)
    >>> md = pcfair.report(pc, "d", ["sex"], 0.05, format="markdown")
    >>> md.splitlines()[0]
    '# pcfair fairness report'
    """
    from pcfair import __version__
    from pcfair.reporting.document import build_document
    from pcfair.reporting.figures import render_figures

    if out is not None and not Path(out).parent.is_dir():
        raise ReportOptionError(f"cannot write {out}: the folder {Path(out).parent} does not "
                                "exist")
    if out is not None:
        _check_suffix(Path(out), format)
    from pcfair.patterns.api import as_circuit

    if isinstance(pc, (str, os.PathLike)):
        title = title or f"pcfair fairness report: {Path(pc).name}"
    pc = as_circuit(pc)
    content = gather(pc, decision, sensitive, delta, favorable=favorable, deltas=deltas, k=k,
                     fmt=format, engine=engine, time_limit=time_limit, sampled=sampled,
                     max_patterns_per_table=max_patterns_per_table,
                     max_front_points=max_front_points, title=title, n_jobs=n_jobs,
                     executor=executor, min_support=min_support,
                     random_state=random_state, data=data, credible=credible, draws=draws)
    figures, missing = render_figures(content)
    doc = build_document(content, figures, missing, __version__)
    if format == "html":
        from pcfair.reporting.render_html import render_html

        text = render_html(doc)
    else:
        from pcfair.reporting.render_markdown import render_markdown

        images = _write_images(figures, Path(out)) if out is not None and figures else {}
        text = render_markdown(doc, images)
    if out is None:
        return text
    Path(out).write_text(text, encoding="utf-8")
    return ReportFile(Path(out), format, content.certificate.fair, float(delta))
