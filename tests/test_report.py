"""pcfair.report: reports of every shipped circuit, checked structurally.

HTML is parsed with the standard library's ``html.parser``: the sections exist in order, every
table has the rows its caption announces (and, on COMPAS, the numbers of the certifier), every
embedded image is a PNG that matplotlib reads back, and nothing is loaded from outside the
file. Markdown is read line by line with the same checks.
"""

from __future__ import annotations

import doctest
import importlib
import sys
from pathlib import Path

import pytest
from _report_pages import (
    PATTERN_SECTIONS,
    SECTIONS,
    TITLES,
    check_png,
    data_uri_png,
    expected_rows,
    read_html,
    read_markdown,
)

import pcfair
from pcfair.circuit import CircuitBuilder
from pcfair.errors import SpecError
from pcfair.reporting import ReportOptionError, report

pytest.importorskip("matplotlib")

CIRCUITS = Path(__file__).resolve().parents[1] / "circuits"
#: decision and sensitive variables of each shipped table (circuits/README.md)
MODELS = {
    "compas": ("ScoreText_", ["Ethnic_Code_Text_", "MaritalStatus_", "Sex_", "Age"]),
    "adult": ("target", ["marital-status", "race", "sex", "native-country"]),
    "german": ("loan_status", ["age", "foreign_worker", "sex", "marital_status"]),
    "acs_income": ("D", ["F9", "F10"]),
}
DELTA = 0.05
LIMIT = 25  # the default max_patterns_per_table
slow = pytest.mark.slow


def _model(stem: str):
    data = "acs_income" if stem.startswith("acs_income") else stem.split("_")[0]
    return pcfair.load(CIRCUITS / f"{stem}.json"), *MODELS[data]


def _check_html(text: str, pc, sensitive, *, sampled: bool, limit: int = LIMIT):
    page = read_html(text)
    assert text.startswith("<!DOCTYPE html>")
    want = [*SECTIONS, *(["sampled"] if sampled else []), "notes"]
    assert page.sections == want
    # self-contained: no script, no stylesheet link, no frame, nothing fetched
    assert not page.tags & {"script", "link", "iframe", "object", "embed"}
    assert "http://" not in text and "https://" not in text
    assert len(page.tables["model-size"].rows) == 5
    assert len(page.tables["model-properties"].rows) == 5
    assert [r[0] for r in page.tables["model-variables"].rows] == list(pc.variables.names)
    assert len(page.tables["metrics"].rows) == 4 + len(sensitive)  # DI ratio, DI, SP, EO and SP-1 per variable
    assert len(page.tables["counts"].rows) == 3
    for key in PATTERN_SECTIONS:
        table = page.tables.get(f"{key}-table")
        if table is None:  # the engine could not produce it: the section says why
            assert any(n.startswith("Unavailable") for n in page.notes.get(key, [])), key
            continue
        assert table.section == key
        assert len(table.rows) == min(expected_rows(table.caption, limit), limit)
        assert [r[0] for r in table.rows] == [str(i) for i in range(1, len(table.rows) + 1)]
    figures = {fig: section for fig, section, _, _ in page.images}
    want_figures = {"figure-counts": "counts", "figure-front": "front", "figure-topk": "front"}
    if sampled:
        want_figures["figure-sampled"] = "sampled"
    assert figures == want_figures
    for _, _, src, alt in page.images:
        check_png(data_uri_png(src))
        assert alt
    assert set(page.captions) == set(want_figures)
    return page


def _check_markdown(text: str, *, sampled: bool, folder: Path | None = None):
    sections = read_markdown(text)
    want = [*SECTIONS, *(["sampled"] if sampled else []), "notes"]
    assert list(sections) == [TITLES[s] for s in want]
    for key in PATTERN_SECTIONS:
        s = sections[TITLES[key]]
        if not s.tables:
            assert any(line.startswith("> Unavailable") for line in s.lines), key
            continue
        (caption, header, rows), = s.tables
        # five fixed columns, then one per variable the shown patterns mention
        assert header[:5] == ["\\#", "pattern (x \\| y)", "Δ", "P(x, y)", "divergence"]
        assert all(len(r) == len(header) for r in rows)
        for r in rows:  # every variable of the pattern's text has its column filled
            assert sum(bool(cell) for cell in r[5:]) == r[1].count("=")
        assert len(rows) == min(expected_rows(caption, LIMIT), LIMIT)
        assert all(r[1].startswith("`") and r[1].endswith("`") for r in rows)
    images = [img for s in sections.values() for img in s.images]
    if folder is None:
        assert not images and "is in the HTML report" in text
    else:
        assert len(images) == 4 if sampled else 3
        for _, path in images:
            check_png((folder / path).read_bytes())
    return sections


# ------------------------------------------------------------------------------ COMPAS, exact


@pytest.fixture(scope="module")
def compas():
    return _model("compas_clt")


def test_html_report_of_compas_shows_the_certifiers_numbers(compas, tmp_path):
    pc, decision, sensitive = compas
    out = tmp_path / "compas.html"
    written = report(pc, decision, sensitive, DELTA, sampled=100, out=out)
    assert written.path == out and written.fair is False and "UNFAIR" in repr(written)
    text = written.read()
    page = _check_html(text, pc, sensitive, sampled=True)
    census = pcfair.pattern_census(pc, decision, sensitive)
    counts = page.tables["counts"].rows
    for row, (_, c) in zip(counts, census.iterrows()):
        assert row == [f"{c['delta']:g}", *(f"{int(c[k]):,}" for k in
                                           ("patterns", "maximal", "minimal", "pareto"))]
    for key, kind, rank in (("top_discrimination", "topk", "discrimination"),
                            ("top_divergence", "topk", "divergence"),
                            ("maximal", "maximal", "discrimination"),
                            ("minimal", "minimal", "discrimination"),
                            ("pareto", "pareto", "discrimination")):
        ps = pcfair.find_patterns(pc, decision, sensitive, DELTA, kind=kind, rank_by=rank,
                                  k=10 if kind == "topk" else None)
        rows = page.tables[f"{key}-table"].rows
        assert [r[1] for r in rows] == [p.text() for p in ps.patterns[:LIMIT]]
        assert [r[2] for r in rows] == [f"{p.score:+.4f}" for p in ps.patterns[:LIMIT]]
    assert page.tables["maximal-table"].caption.startswith("showing 25 of 74 maximal")
    assert page.tables["minimal-table"].caption.startswith("8 minimal")
    m = pcfair.fairness_metrics(pc, decision, sensitive)
    metrics = {r[0]: r[1] for r in page.tables["metrics"].rows}
    assert metrics["DI"] == f"{m.di:.4f}" and metrics["EO"] == f"{m.eo:.4f}"
    assert metrics["DI ratio"] == f"{m.disparate_impact_ratio:.4f}"
    assert metrics["SP-1 [Sex_]"] == f"{m.sp1['Sex_']:.4f}"
    cert = dict(page.tables["certificate"].rows)
    assert cert["verdict"] == "unfair" and cert["engine"] == "lattice"
    assert cert["witness"] == pcfair.certify(pc, decision, sensitive, DELTA).witness.text()
    sampled = dict(page.tables["sampled"].rows)
    assert sampled["runs"] == "100" and "of 10" in sampled["exact top-10 found"]
    assert "on the exact front of 34" in page.captions["figure-sampled"]
    assert "all 2,356 discrimination patterns" in page.captions["figure-front"]


def test_markdown_report_has_the_same_sections_and_rows(compas, tmp_path):
    pc, decision, sensitive = compas
    html_page = read_html(report(pc, decision, sensitive, DELTA))
    text = report(pc, decision, sensitive, DELTA, format="markdown")
    sections = _check_markdown(text, sampled=False)
    for key in PATTERN_SECTIONS:
        (_, _, rows), = sections[TITLES[key]].tables
        html_rows = html_page.tables[f"{key}-table"].rows
        assert [r[1].strip("`").replace("\\|", "|") for r in rows] == [r[1] for r in html_rows]
    out = tmp_path / "compas.md"
    text = report(pc, decision, sensitive, DELTA, format="markdown", out=out, sampled=50).read()
    _check_markdown(text, sampled=True, folder=tmp_path)
    assert sorted(p.name for p in (tmp_path / "compas_files").iterdir()) == [
        "counts.png", "front.png", "sampled.png", "topk.png"]


def test_large_sets_are_capped_and_subsampled(compas):
    pc, decision, sensitive = compas
    page = read_html(report(pc, decision, sensitive, DELTA, max_patterns_per_table=5,
                            max_front_points=300))
    assert len(page.tables["maximal-table"].rows) == 5
    assert page.tables["maximal-table"].caption.startswith("showing 5 of 74 maximal")
    assert len(page.tables["top_discrimination-table"].rows) == 5
    assert page.tables["top_divergence-table"].caption == (
        "showing 5 of 10 top patterns by divergence, largest divergence first")
    caption = page.captions["figure-front"]
    assert "a uniform random sample of 300 of all 2,356 discrimination patterns" in caption


def test_a_summary_the_engine_cannot_give_is_explained(compas, monkeypatch):
    pc, decision, sensitive = compas
    real = pcfair.patterns.find_patterns

    def no_minimal(*args, **kwargs):
        if kwargs.get("kind") == "minimal":
            raise SpecError("minimal patterns are not available from this engine")
        return real(*args, **kwargs)

    monkeypatch.setattr(pcfair.patterns, "find_patterns", no_minimal)
    page = read_html(report(pc, decision, sensitive, DELTA))
    assert "minimal-table" not in page.tables and "maximal-table" in page.tables
    assert page.notes["minimal"] == [
        ("Unavailable with the engine chosen by cost (auto): SpecError: minimal patterns are "
         "not available from this engine")]
    md = report(pc, decision, sensitive, DELTA, format="markdown", engine="lattice")
    assert "> Unavailable with the lattice engine: SpecError" in md


def test_a_sampled_pattern_set_can_be_given(compas):
    pc, decision, sensitive = compas
    run = pcfair.sample_patterns(pc, decision, sensitive, DELTA, runs=30, random_state=3)
    page = read_html(report(pc, decision, sensitive, DELTA, sampled=run))
    rows = dict(page.tables["sampled"].rows)
    assert rows["runs"] == "30" and rows["discrimination patterns found"] == f"{len(run):,}"


def test_a_fair_model_is_certified_in_the_report():
    b = CircuitBuilder({"d": [0, 1], "s": [0, 1]})
    pc = b.build(b.decision([(b.indicator("d", 1), b.categorical("s", [0.45, 0.55]), 0.5),
                             (b.indicator("d", 0), b.categorical("s", [0.5, 0.5]), 0.5)]))
    page = read_html(report(pc, "d", "s", 0.05, deltas=(0.01, 0.05)))
    assert "FAIR at δ = 0.05: no discrimination pattern" in page.text
    assert [r[1] for r in page.tables["counts"].rows] == ["2", "0"]
    assert page.tables["maximal-table"].rows == []


def test_names_and_values_are_escaped(tmp_path):
    evil = '<script>alert("x")</script>'
    b = CircuitBuilder({"d": [0, 1], evil: ["a|b", "<i>&"], "age": ["<25", "25+"]})
    pc = b.build(b.decision([
        (b.indicator("d", 1), b.product(b.categorical(evil, [0.2, 0.8]),
                                        b.categorical("age", [0.3, 0.7])), 0.5),
        (b.indicator("d", 0), b.product(b.categorical(evil, [0.6, 0.4]),
                                        b.categorical("age", [0.6, 0.4])), 0.5)]))
    text = report(pc, "d", [evil], 0.05, title="R&D <report>")
    assert "<script" not in text and "<i>" not in text
    assert "&lt;script&gt;" in text and "R&amp;D &lt;report&gt;" in text
    page = read_html(text)
    assert page.sections[0] == "summary" and "script" not in page.tags
    texts = [r[1] for r in page.tables["top_discrimination-table"].rows]
    assert f"{evil}=a|b" in texts and f"{evil}=<i>& | age=<25" in texts
    md = report(pc, "d", [evil], 0.05, format="markdown")
    (_, header, rows), = read_markdown(md)[TITLES["top_discrimination"]].tables
    assert all(len(r) == len(header) == 7 for r in rows)  # escaped pipes do not split cells
    assert "\\<script\\>" in md


def test_options_are_checked(compas):
    pc, decision, sensitive = compas
    bad = [({"format": "pdf"}, "format must be"), ({"deltas": (0.1, 1.0)}, "in \\[0, 1\\)"),
           ({"deltas": ("x",)}, "must be numbers"), ({"k": 0}, "k must be"),
           ({"sampled": 0}, "sampled must be"), ({"sampled": "10"}, "sampled must be"),
           ({"max_front_points": 2.5}, "max_front_points"), ({"time_limit": 0}, "time_limit")]
    for kwargs, match in bad:
        with pytest.raises(ReportOptionError, match=match):
            report(pc, decision, sensitive, DELTA, **kwargs)
    with pytest.raises(ReportOptionError, match="in \\[0, 1\\)"):
        report(pc, decision, sensitive, 1.5)
    with pytest.raises(ReportOptionError, match="does not exist"):
        report(pc, decision, sensitive, DELTA, out=Path("no-such-folder") / "r.html")
    with pytest.raises(pcfair.VariableError):
        report(pc, decision, ["nope"], DELTA)


def test_report_without_matplotlib_has_no_figures(compas, monkeypatch):
    pc, decision, sensitive = compas
    for name in ("matplotlib", "matplotlib.figure", "matplotlib.pyplot"):
        monkeypatch.setitem(sys.modules, name, None)
    page = read_html(report(pc, decision, sensitive, DELTA))
    assert not page.images and "figure-front" not in page.captions
    assert any("pip install 'pcfair[plot]'" in n for n in page.notes["notes"])
    assert len(page.tables["maximal-table"].rows) == LIMIT


def test_pcfair_report_is_the_function_and_accepts_a_path():
    import pcfair.reporting  # importing the package must not shadow the function

    assert pcfair.report is pcfair.reporting.report
    text = pcfair.report(CIRCUITS / "compas_clt.psdd", "7", ["4", "5", "6", "8"], 0.1,
                         format="markdown", k=3)
    assert text.splitlines()[0] == "# pcfair fairness report: compas\\_clt.psdd"


@pytest.mark.parametrize("name", ["pcfair.reporting", "pcfair.reporting.content",
                                  "pcfair.reporting.figures", "pcfair.reporting.document",
                                  "pcfair.reporting.render_html",
                                  "pcfair.reporting.render_markdown"])
def test_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# ------------------------------------------------------------------------------ every circuit

SHIPPED = [
    ("compas_clt", "markdown", {}),
    ("compas_strudel", "html", {}),
    ("acs_income_clt", "html", {"sampled": 30}),
    ("acs_income_clt", "markdown", {}),
    ("acs_income_strudel", "markdown", {}),
    ("german_clt", "html", {"time_limit": 0.5, "sampled": 5}),
    ("german_strudel", "markdown", {"time_limit": 0.5}),
    pytest.param("adult_clt", "html", {}, marks=slow),
    pytest.param("adult_strudel", "markdown", {}, marks=slow),
]


@pytest.mark.parametrize("stem, fmt, options", SHIPPED)
def test_report_of_every_shipped_circuit(stem, fmt, options, tmp_path):
    pc, decision, sensitive = _model(stem)
    out = tmp_path / f"{stem}.{'html' if fmt == 'html' else 'md'}"
    text = report(pc, decision, sensitive, DELTA, format=fmt, out=out, **options).read()
    sampled = "sampled" in options
    if fmt == "html":
        page = _check_html(text, pc, sensitive, sampled=sampled)
        if dict(page.tables["certificate"].rows)["engine"] == "search":
            assert "the search engine found (it did not finish: a time limit" in page.captions[
                "figure-front"]
        if stem.startswith("adult"):  # millions of patterns: a sample of the grey points
            assert "a uniform random sample of 20,000 of all" in page.captions["figure-front"]
    else:
        _check_markdown(text, sampled=sampled, folder=tmp_path)


def _three_valued_model():
    b = CircuitBuilder({"d": [0, 1], "s": [0, 1], "z": [0, 1, 2]})
    return b.build(b.decision([
        (b.indicator("d", 1), b.product(b.categorical("s", [0.2, 0.8]),
                                        b.categorical("z", [0.3, 0.3, 0.4])), 0.5),
        (b.indicator("d", 0), b.product(b.categorical("s", [0.6, 0.4]),
                                        b.categorical("z", [0.6, 0.3, 0.1])), 0.5)]))


def test_a_largest_delta_that_is_a_bound_is_shown_as_one():
    """Issue 36: the search stops at its first witness, so its max |Δ| is a lower bound; the
    lattice scans every pattern, so its max is exact and shown bare."""
    pc = _three_valued_model()
    for engine, exact in (("search", False), ("lattice", True)):
        cert = pcfair.certify(pc, "d", ["s"], 0.05, engine=engine)
        assert cert.max_abs_exact is exact
        rows = dict(read_html(report(pc, "d", ["s"], 0.05, engine=engine))
                    .tables["certificate"].rows)
        (label, value), = [(k, v) for k, v in rows.items() if k.startswith("largest |Δ|")]
        assert value.startswith("≥ ") is not exact and ("lower bound" in label) is not exact
        assert float(value.lstrip("≥ ")) == pytest.approx(cert.max_abs_score, abs=1e-4)


def test_a_report_with_a_min_support_says_so_beside_every_count():
    pc = _three_valued_model()
    plain = read_html(report(pc, "d", ["s"], 0.05))
    page = read_html(report(pc, "d", ["s"], 0.05, min_support=0.05))
    assert "Min-support" not in plain.text and "min-support" not in plain.text
    assert page.text.count("Min-support 0.05: only patterns with P(x, y) ≥ 0.05") == 2
    assert "with P(x, y) ≥ 0.05 (min-support)" in page.text


def test_a_witness_that_is_not_significant_in_a_robustly_unfair_model_is_not_called_noise():
    """Issue 36: P(δ-fair) = 0/200 beside a witness whose own P(|Δ| > δ) is 0.6: the
    verdict is robust, only that one pattern is not."""
    from types import SimpleNamespace

    from pcfair.patterns.uncertainty import FairnessProbability
    from pcfair.reporting.document import _witness_robustness

    weak = SimpleNamespace(interval={"significant": False})
    strong = SimpleNamespace(interval={"significant": True})
    unfair = FairnessProbability(0.1, 200, 0, 200, 0, 1.0)
    unsure = FairnessProbability(0.1, 200, 120, 80, 0, 1.0)
    undecided = FairnessProbability(0.1, 200, 0, 150, 50, 1.0)  # could be 25% fair
    assert "robust" in _witness_robustness(strong, unsure, 0.9)
    text = _witness_robustness(weak, unfair, 0.9)
    assert "noise" not in text and "200 of 200 have some pattern" in text
    assert "noise" in _witness_robustness(weak, unsure, 0.9)
    assert "noise" in _witness_robustness(weak, undecided, 0.9)


def test_each_query_of_the_report_goes_to_the_engine_table(compas, monkeypatch):
    """Under ``auto`` the report does not keep the certificate's engine for every query: here
    the search answers the certification (it is made to glance first and the lattice is
    never "quick"), and the minimal patterns, which only the lattice gives, are still there."""
    from pcfair.patterns import engines

    pc, decision, sensitive = compas
    monkeypatch.setattr(engines, "GLANCE_POINTS", 0)
    monkeypatch.setattr(engines, "QUICK_SECONDS", -1.0)
    cert = pcfair.certify(pc, decision, sensitive, DELTA)
    assert cert.engine == "search" and cert.fair is False
    page = read_html(report(pc, decision, sensitive, DELTA))
    assert dict(page.tables["certificate"].rows)["engine"] == "search"
    assert "minimal-table" in page.tables and "minimal" not in page.notes
    lattice = pcfair.find_patterns(pc, decision, sensitive, DELTA, kind="minimal",
                                   engine="lattice")
    assert len(page.tables["minimal-table"].rows) == min(len(lattice.patterns), LIMIT)


def _rare_witness_model():
    """:func:`_pcgen.rare_witness_model` with training counts for its posterior."""
    import numpy as np

    from _pcgen import rare_witness_model
    from pcfair.inference.flows import parameter_counts

    pc = rare_witness_model()
    rng = np.random.default_rng(0)
    codes = np.column_stack([rng.integers(0, c, 500) for c in (2, 2, 2, 3)])
    return pc.with_counts(parameter_counts(pc, codes, 1.0))


def test_the_supported_witness_gets_credible_intervals_too(tmp_path, capsys):
    from pcfair.cli import main
    from pcfair.reporting.content import gather

    pc = _rare_witness_model()
    c = gather(pc, "d", ["s"], 0.05, engine="lattice", credible=0.9, draws=30)
    assert c.certificate.witness.probability < 1e-4
    supported = c.uncertainty["supported"]
    assert supported is not None and supported.probability >= 1e-4
    assert supported.interval["level"] == 0.9 and supported.interval["draws"] == 30
    page = report(pc, "d", ["s"], 0.05, engine="lattice", credible=0.9, draws=30,
                  format="markdown")
    escaped = supported.text().replace("|", "\\|")  # markdown escapes the bar
    assert f"The witness that describes somebody {escaped} (Δ = {supported.score:+.4f}" in page
    path = tmp_path / "rare.json"
    pcfair.save(pc, path)
    assert main(["certify", str(path), "--decision", "d", "--sensitive", "s", "--delta", "0.05",
                 "--engine", "lattice", "--credible", "0.9", "--draws", "30"]) == 1
    out = capsys.readouterr().out
    assert out.count("90% credible interval of Δ") == 2  # the witness and the supported one
