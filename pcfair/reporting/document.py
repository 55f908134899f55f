"""The report as a format-neutral document: sections of paragraphs, lists, tables and figures.

:func:`build_document` turns a :class:`~pcfair.reporting.content.ReportContent` into plain-text
blocks (numbers formatted, sentences written); the HTML and markdown renderers only lay them
out and escape them. Both formats therefore show the same sections and the same rows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from pcfair.patterns.results import floor_note
from pcfair.reporting.content import ReportContent
from pcfair.reporting.figures import ReportFigure

__all__ = [
    "SECTION_IDS",
    "BulletList",
    "Document",
    "Paragraph",
    "Section",
    "Table",
    "build_document",
]

#: Section ids in order (``sampled`` only when a sampled run is included).
SECTION_IDS = ("summary", "model", "metrics", "certificate", "uncertainty", "counts",
               "top_discrimination",
               "top_divergence", "maximal", "minimal", "pareto", "front", "sampled", "notes")


@dataclass(frozen=True)
class Paragraph:
    """Plain text; ``kind`` is ``"text"``, ``"verdict"`` (emphasised), ``"note"``, or a
    banner ``"banner-fair"``, ``"banner-unfair"``, ``"banner-incomplete"`` (the verdict,
    coloured)."""

    text: str
    kind: str = "text"


@dataclass(frozen=True)
class BulletList:
    items: tuple[str, ...]


@dataclass(frozen=True)
class Table:
    """A table of plain-text cells; cells of ``code_columns`` hold pattern text."""

    id: str
    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    caption: str | None = None
    code_columns: frozenset[int] = frozenset()


@dataclass
class Section:
    id: str
    title: str
    blocks: list = field(default_factory=list)


@dataclass
class Document:
    title: str
    subtitle: str
    sections: list[Section]


# ------------------------------------------------------------------------------ formatting


def _nan(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def _fmt_count(n, complete: bool = True) -> str:
    """``2,388``; ``≥ 2,388`` for a lower bound; ``n/a`` when unknown.

    Examples
    --------
    >>> _fmt_count(2388), _fmt_count(12, complete=False), _fmt_count(float("nan"))
    ('2,388', '≥ 12', 'n/a')
    """
    if _nan(n):
        return "n/a"
    return f"{int(n):,}" if complete else f"≥ {int(n):,}"


def _fmt_num(x, spec: str = ".4f") -> str:
    return "n/a" if _nan(x) else format(float(x), spec)


def _yes(v) -> str:
    return {True: "yes", False: "no", None: "undecided"}[None if v is None else bool(v)]


# ------------------------------------------------------------------------------ sections


def _banner(c: ReportContent) -> Paragraph:
    """The verdict as a banner (colour and text), first thing in the document."""
    kind = {True: "fair", False: "unfair", None: "incomplete"}[c.certificate.fair]
    return Paragraph(_verdict(c), f"banner-{kind}")


def _summary(c: ReportContent) -> Section:
    items = [_min_support_note(c)] if c.min_support > 0 else []
    row = c.counts.loc[c.counts["delta"] == c.delta].iloc[0]
    count = _fmt_count(row["patterns"], bool(row["complete"]))
    items.append(f"{count} discrimination patterns at δ = {c.delta:g} ({row['engine']} engine).")
    top = c.tables["top_discrimination"]
    if top.unavailable is None and top.patterns:
        p = top.patterns[0]
        from pcfair.patterns.support import rare_below, rare_text

        rare = (f" It describes P(x, y) = {p.probability_text(2)}, less than "
                f"{rare_text(c.circuit)}." if p.probability < rare_below(c.circuit) else "")
        items.append(f"Largest |Δ| {'' if top.complete else 'found '}{p.abs_score:.4f}: "
                     f"{p.text()}.{rare}")
    if c.supported is not None:
        s = c.supported.witness
        items.append("The witness describes almost nobody; "
                     + (f"a witness that describes somebody: {s.text()} (Δ = {s.score:+.4f}, "
                        f"P(x, y) = {s.probability_text(4)})." if s is not None else
                        "no witness describes somebody." if c.supported.fair else
                        "none that describes somebody was found in the time allowed."))
    if c.metrics is not None:
        m = c.metrics
        items.append(f"Group metrics: DI ratio {m.disparate_impact_ratio:.4f} (paper's DI "
                     f"{m.di:.4f}), SP {m.sp:.4f}, EO {m.eo:.4f}.")
    if c.sampled is not None:
        items.append(f"Sampling miner: {len(c.sampled.patterns):,} patterns found, largest "
                     f"|Δ| {_fmt_num(c.sampled.best_abs_score)}.")
    return Section("summary", "Summary", [_banner(c), BulletList(tuple(items))])


def _min_support_note(c: ReportContent) -> str:
    """What a min-support leaves out, said wherever a count or a table is shown."""
    return (f"Min-support {c.min_support:g}: only patterns with P(x, y) ≥ {c.min_support:g} "
            "are counted and listed; the model may have more patterns, with larger |Δ|, among "
            "those it set aside.")


def _verdict(c: ReportContent) -> str:
    cert = c.certificate
    if cert.fair:
        return (f"FAIR at δ = {c.delta:g}: no discrimination pattern has |Δ| > {c.delta:g} "
                f"(proved by the complete {cert.engine} engine).")
    if cert.fair is False:
        return f"UNFAIR at δ = {c.delta:g}: the model has discrimination patterns."
    if floor_note(cert.stats) is not None:
        return (f"INCOMPLETE at δ = {c.delta:g}: the {cert.engine} engine found no pattern among "
                "those it could score, and left out those below its probability floor (see "
                "the certificate).")
    return (f"INCOMPLETE at δ = {c.delta:g}: the {cert.engine} engine stopped at its time "
            "limit before finding a pattern or proving there is none.")


def _model(c: ReportContent) -> Section:
    pc, rep = c.circuit, c.properties
    size = Table("model-size", ("quantity", "value"), (
        ("variables", f"{pc.num_variables:,}"), ("nodes", f"{pc.num_nodes:,}"),
        ("edges", f"{pc.num_edges:,}"), ("sum elements", f"{pc.num_elements:,}"),
        ("parameters", f"{pc.num_parameters():,}")))
    det = _yes(rep.deterministic) + (f" ({rep.determinism_tier})" if rep.determinism_tier
                                     else "")
    props = Table("model-properties", ("property", "value"), (
        ("smooth", _yes(rep.smooth)), ("decomposable", _yes(rep.decomposable)),
        ("deterministic", det), ("structured-decomposable", _yes(rep.structured_decomposable)),
        ("normalised", _yes(rep.normalized))))
    roles = {c.decision: f"decision (favourable value {c.favorable})",
             **{s: "sensitive" for s in c.sensitive}}
    variables = Table("model-variables", ("variable", "role", "values"), tuple(
        (name, roles.get(name, "feature"), ", ".join(str(v) for v in dom))
        for name, dom in zip(pc.variables.names, pc.variables.domains)))
    blocks = [Paragraph("The branch-and-bound engine needs a deterministic, "
                        "structured-decomposable circuit; the lattice engine needs only a smooth "
                        "and decomposable one whose table of all patterns fits in memory."),
              size, props]
    if rep.problems:
        blocks.append(BulletList(tuple(f"[{p.property}] node {p.node}: {p.message}"
                                       for p in rep.problems)))
    blocks.append(variables)
    if pc.recipe is not None and pc.recipe.describe():
        blocks.append(Paragraph("How raw rows become the model's values (the recipe saved "
                                "with the model, applied to every table it reads):"))
        blocks.append(BulletList(tuple(pc.recipe.describe())))
    return Section("model", "Model", blocks)


def _metrics(c: ReportContent) -> Section:
    intro = Paragraph(
        "Group-fairness metrics of the model's classifier d̂ = 1[P(d | z) > 0.5] over the joint "
        "assignments s of the sensitive variables (paper Table 1). They judge decisions made "
        "from complete observations and group averages: a model can pass them and still have "
        "many discrimination patterns.")
    if c.metrics is None:
        return Section("metrics", "Group-fairness metrics",
                       [intro, Paragraph(f"Unavailable: {c.metrics_error}", "note")])
    m = c.metrics
    eo_how = "exact" if m.eo_exact else f"sampled, standard error ≤ {m.eo_stderr:.4f}"
    rows = [("DI ratio", _fmt_num(m.disparate_impact_ratio),
             "min_s P(d | s) / max_s P(d | s) (AIF360, Fairlearn; below 0.8 fails the "
             "four-fifths rule)"),
            ("DI", _fmt_num(m.di), "1 − min_s P(d | s) / max_s P(d | s) (the paper's)"),
            ("SP", _fmt_num(m.sp), "max_s P(d | s) − min_s P(d | s)")]
    rows += [(f"SP-1 [{name}]", _fmt_num(v), f"SP for {name} alone")
             for name, v in m.sp1.items()]
    rows.append(("EO", _fmt_num(m.eo),
                 f"largest spread of P(d̂ | s, D = c) over the two decisions c ({eo_how})"))
    return Section("metrics", "Group-fairness metrics",
                   [intro, Table("metrics", ("metric", "value", "definition"), tuple(rows))])


def _certificate(c: ReportContent) -> Section:
    cert = c.certificate
    verdict = {True: "fair", False: "unfair", None: "incomplete"}[cert.fair]
    rows = [("δ", f"{c.delta:g}"), ("verdict", verdict), ("engine", cert.engine),
            ("complete", _yes(cert.complete))]
    if cert.max_abs_score is not None:
        rows.append(("largest |Δ| of any pattern", _fmt_num(cert.max_abs_score))
                    if cert.max_abs_exact else
                    ("largest |Δ| of any pattern (a lower bound: the engine stopped at its "
                     "first witness or its limit)", "≥ " + _fmt_num(cert.max_abs_score)))
    if cert.witness is not None:
        w = cert.witness
        rows += [("witness", w.text()), ("witness Δ", _fmt_num(w.score, "+.4f")),
                 ("witness P(x, y)", w.probability_text(4))]
        if w.rows is not None:
            rows.append(("witness rows in the data", f"{w.rows:,}"))
    blocks = [Paragraph(_verdict(c), "verdict")]
    if c.supported is not None:
        from pcfair.patterns.support import rare_below, rare_text

        rare = rare_below(c.circuit)
        s = c.supported.witness
        found = (f"The strongest witness with P(x, y) ≥ {rare:.2g} (largest |Δ| among "
                 f"those): {s.text()} "
                 f"(Δ = {s.score:+.4f}, P(x, y) = {s.probability_text(4)}"
                 + ("" if s.rows is None else f", {s.rows:,} rows of the data") + ")."
                 if s is not None else
                 f"No witness with P(x, y) ≥ {rare:.2g} exists." if c.supported.fair else
                 f"No witness with P(x, y) ≥ {rare:.2g} was found within the time allowed.")
        blocks.append(Paragraph(
            f"The witness describes P(x, y) = {cert.witness.probability_text(2)} of the "
            f"population, less than {rare_text(c.circuit)}: it describes almost nobody. The "
            f"certificate still covers every pattern. {found}", "note"))
    floor = floor_note(cert.stats)
    if floor is not None:
        blocks.append(Paragraph(f"Not every pattern was scored: {floor}.", "note"))
    if c.time_limit is not None:
        rows.append(("time limit per search", f"{c.time_limit:g} s"))
    return Section("certificate", "Certification",
                   [*blocks, Table("certificate", ("field", "value"), tuple(rows))])


def _robustness(p, level: str) -> str:
    return ("robust" if p.interval["significant"] else
            f"may be noise (P(|Δ| > δ) under {level})")


def _witness_robustness(w, chance, level: float) -> str:
    """What the witness's interval says, beside the verdict's own robustness: a witness
    that is not significant in a model unfair in nearly every posterior draw is one pattern
    among the many that make it unfair, not a sign that the unfairness is noise."""
    if w.interval["significant"]:
        return "is robust: nearly every model the data allow has it."
    if chance.robustly_unfair(level):
        return (f"is not significant by itself: many models the data allow do not have this "
                f"pattern, but {chance.unfair} of {chance.draws} have some pattern, so the "
                "verdict (unfair) is robust; the significant patterns are in the table below.")
    return "may be the noise of the data: many models the data allow do not have it."


def _uncertainty(c: ReportContent) -> Section:
    u = c.uncertainty
    level = f"{100 * u['level']:g}%"
    chance = u["fairness"]
    rows = c.circuit.counts.rows if c.circuit.counts is not None else None
    source = (f"the {rows:,} training rows the model records" if rows is not None else
              "the training rows given as data")
    blocks = [Paragraph(
        f"The model's parameters were estimated from {source}; "
        f"{u['draws']} draws from their posterior (a Dirichlet per node; the structure taken "
        f"as fixed) give {level} credible intervals of each pattern's Δ, and each draw is "
        f"certified exactly. {chance.text()}.")]
    for w, name in ((u["witness"], "The witness"),
                    (u.get("supported"), "The witness that describes somebody")):
        if w is None:
            continue
        lo, hi = w.interval["score"]
        blocks.append(Paragraph(
            f"{name} {w.text()} (Δ = {w.score:+.4f}, {level} interval [{lo:+.4f}, "
            f"{hi:+.4f}], P(x, y) = {w.probability_text(2)}, P(|Δ| > {c.delta:g}) = "
            f"{w.interval['exceeds']:.3f}) " + _witness_robustness(w, chance, u["level"])))
    robust = sum(p.interval["significant"] for p in u["top"])
    blocks.append(Paragraph(f"Of the top {len(u['top'])} patterns by |Δ|, {robust} are "
                            f"significant at {level} (posterior probability of |Δ| > δ at "
                            f"least {u['level']:g})."))
    blocks.append(Table("uncertainty", ("pattern", "Δ", f"{level} interval of Δ", "P(x, y)",
                                        "P(|Δ| > δ)", "verdict"), tuple(
        (p.text(), _fmt_num(p.score, "+.4f"),
         f"[{p.interval['score'][0]:+.4f}, {p.interval['score'][1]:+.4f}]",
         p.probability_text(4), f"{p.interval['exceeds']:.3f}",
         _robustness(p, u["level"])) for p in u["top"])))
    return Section("uncertainty", "How sure is this?", blocks)


def _counts(c: ReportContent, figures: dict) -> Section:
    rows = []
    for _, r in c.counts.iterrows():
        done = bool(r["complete"])
        rows.append((f"{r['delta']:g}", _fmt_count(r["patterns"], done),
                     *(_fmt_count(r[k], done) for k in ("maximal", "minimal", "pareto"))))
    blocks = [Paragraph("Number of discrimination patterns (|Δ| > δ) and of summary patterns "
                        "for a range of thresholds δ.")]
    if c.min_support > 0:
        blocks.append(Paragraph(_min_support_note(c), "note"))
    if not c.counts["complete"].all():
        blocks.append(Paragraph("Counts marked ≥ are lower bounds: the run that made them "
                                "stopped at its time limit, or left out the patterns below the "
                                "lattice's probability floor (P(x, y) < 1e-290, on a model "
                                "with probabilities that small); n/a: the engine gives no such "
                                "count.", "note"))
    blocks.append(Table("counts", ("δ", "patterns", "maximal", "minimal", "Pareto-optimal"),
                        tuple(rows)))
    blocks.extend(figures.get("counts", []))
    return Section("counts", "Pattern counts by threshold", blocks)


def _pattern_section(c: ReportContent, key: str) -> Section:
    t = c.tables[key]
    blocks = [Paragraph(t.explanation)]
    if t.unavailable is not None:
        engine = ("the engine chosen by cost (auto)" if c.engine == "auto" else
                  f"the {c.engine} engine")
        blocks.append(Paragraph(f"Unavailable with {engine}: {t.unavailable}", "note"))
        return Section(key, t.title, blocks)
    # one column per variable any shown pattern mentions, in the model's order: the value,
    # marked "(x)" where the pattern discloses it
    used = {v for p in t.shown for v in (*p.x, *p.y)}
    variables = [v for v in c.circuit.names if v in used]

    def cell(p, v) -> str:
        return f"{p.x[v]} (x)" if v in p.x else str(p.y[v]) if v in p.y else ""

    counted = any(p.rows is not None for p in t.shown)
    rows = tuple((str(i), p.text(), _fmt_num(p.score, "+.4f"), p.probability_text(4),
                  *((f"{p.rows:,}",) if counted else ()),
                  _fmt_num(p.divergence, ".4g"), *(cell(p, v) for v in variables))
                 for i, p in enumerate(t.shown, 1))
    order = "largest divergence first" if key == "top_divergence" else "largest |Δ| first"
    if len(t.shown) < t.count:
        caption = f"showing {len(t.shown):,} of {t.count:,} {t.noun}, {order}"
    else:
        caption = f"{t.count:,} {t.noun}"
    if c.min_support > 0:
        caption += f" with P(x, y) ≥ {c.min_support:g} (min-support)"
    if not t.complete:
        caption += (f" (the {t.engine} engine did not finish: a time limit, or patterns below "
                    "its probability floor; more may exist)")
    blocks.append(Table(f"{key}-table", ("#", "pattern (x | y)", "Δ", "P(x, y)",
                                         *(("rows",) if counted else ()), "divergence",
                                         *variables),
                        rows, caption=caption, code_columns=frozenset({1})))
    return Section(key, t.title, blocks)


def _front(c: ReportContent, figures: dict) -> Section:
    blocks = [Paragraph("Each point is a discrimination pattern: how many people it describes "
                        "(P(x, y)) against how strongly disclosing x changes their decision "
                        "(|Δ|).")]
    if c.front is None:
        blocks.append(Paragraph(f"Unavailable: {c.front_unavailable}", "note"))
    blocks.extend(figures.get("front", []))
    return Section("front", "Discrimination score against probability", blocks)


def _sampled(c: ReportContent, figures: dict) -> Section:
    s = c.sampled
    stats = s.patterns.stats
    rows = [("runs", _fmt_count(stats.get("runs"))),
            ("patterns explored", _fmt_count(stats.get("explored"))),
            ("seconds", _fmt_num(stats.get("seconds"), ".2f")),
            ("discrimination patterns found", _fmt_count(len(s.patterns))),
            ("largest |Δ| found", _fmt_num(s.best_abs_score)),
            ("sampled Pareto front", _fmt_count(len(s.front)))]
    if s.topk_found is not None:
        rows.append((f"exact top-{s.topk_size} found", f"{s.topk_found} of {s.topk_size}"))
    if s.front_on_exact is not None:
        rows.append(("sampled front patterns on the exact front",
                     (f"{s.front_on_exact} of {len(s.front)} (exact front: "
                      f"{s.exact_front_size})")))
    blocks = [Paragraph("The sampling miner (Algorithm 2 of Selvam et al., memoized) explores "
                        "patterns by random greedy walks; it never certifies, but finds strong "
                        "patterns quickly."),
              Table("sampled", ("quantity", "value"), tuple(rows))]
    blocks.extend(figures.get("sampled", []))
    return Section("sampled", "Sampled run", blocks)


def _notes(c: ReportContent, version: str) -> Section:
    return Section("notes", "Notes", [BulletList((
        ("A discrimination pattern (x, y) assigns values x to a non-empty set of sensitive "
         "variables and values y to other variables; its score is Δ = P(d | x, y) − P(d | y) "
         "and it discriminates when |Δ| > δ (strict). Patterns with P(x, y) = 0 are undefined "
         "and never reported."),
        ("Definitions follow Selvam, Van den Broeck and Choi, 'Certifying Fairness of "
         "Probabilistic Circuits' (AAAI-23), and Choi et al. (AAAI-20) for the divergence."),
        f"Generated by pcfair {version} in {c.seconds:.1f} s.",
    ))])


def build_document(c: ReportContent, figures: list[ReportFigure], missing_figures: str | None,
                   version: str) -> Document:
    """Lay the content out as sections (ids :data:`SECTION_IDS`).

    Examples
    --------
    >>> from pcfair.circuit import CircuitBuilder
    >>> from pcfair.reporting.content import gather
    >>> b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    >>> pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.2, 0.8]), 0.5),
    ...                          (b.indicator("d", 0), b.categorical("s", [0.6, 0.4]), 0.5)]))
    >>> doc = build_document(gather(pc, "d", ["s"], 0.1), [], None, "0")
    >>> [s.id for s in doc.sections][:5]
    ['summary', 'model', 'metrics', 'certificate', 'counts']
    """
    by_section: dict[str, list] = {}
    for f in figures:
        by_section.setdefault(f.section, []).append(f)
    sensitive = ", ".join(c.sensitive)
    subtitle = (f"Decision {c.decision} (favourable {c.favorable}), sensitive {sensitive}, "
                f"δ = {c.delta:g}, engine {c.engine}.")
    sections = [_summary(c), _model(c), _metrics(c), _certificate(c)]
    if c.uncertainty is not None:
        sections.append(_uncertainty(c))
    sections.append(_counts(c, by_section))
    sections += [_pattern_section(c, key) for key in c.tables]
    sections.append(_front(c, by_section))
    if c.sampled is not None:
        sections.append(_sampled(c, by_section))
    notes = _notes(c, version)
    if missing_figures:
        notes.blocks.insert(0, Paragraph(missing_figures, "note"))
    sections.append(notes)
    return Document(c.title, subtitle, sections)
