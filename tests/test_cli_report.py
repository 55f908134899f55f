"""``pcfair report``: prints or writes the report, exit 0; bad input exits 2 with a message."""

from __future__ import annotations

from pathlib import Path

import pytest
from _report_pages import check_png, data_uri_png, read_html, read_markdown

from pcfair.cli import EXIT_BAD_INPUT, EXIT_OK, main

pytest.importorskip("matplotlib")

MODEL = str(Path(__file__).resolve().parents[1] / "circuits" / "compas_clt.psdd")
ARGS = [MODEL, "--decision", "7", "--sensitive", "4,5,6,8", "--delta", "0.05"]


def test_report_prints_html_to_stdout(capsys):
    assert main(["report", *ARGS, "--k", "3", "--max-rows", "4"]) == EXIT_OK
    out = capsys.readouterr().out
    page = read_html(out)
    assert page.sections[0] == "summary" and "sampled" not in page.sections
    assert len(page.tables["top_discrimination-table"].rows) == 3
    assert page.tables["maximal-table"].caption.startswith("showing 4 of 74")
    assert [r[0] for r in page.tables["counts"].rows] == ["0.01", "0.05", "0.1"]
    assert f"pcfair fairness report: {MODEL}" in page.text
    for _, _, src, _ in page.images:
        check_png(data_uri_png(src))


def test_report_writes_markdown_with_a_sampled_run(tmp_path, capsys):
    out = tmp_path / "r.md"
    assert main(["report", *ARGS, "--format", "markdown", "--out", str(out), "--sample-runs",
                 "40", "--deltas", "0.02,0.2", "--seed", "1"]) == EXIT_OK
    assert capsys.readouterr().out.strip() == f"wrote {out}"
    sections = read_markdown(out.read_text(encoding="utf-8"))
    assert "Sampled run" in sections
    (_, _, rows), = sections["Pattern counts by threshold"].tables
    assert [r[0] for r in rows] == ["0.02", "0.05", "0.2"]
    (_, _, stats), = sections["Sampled run"].tables
    assert {r[0]: r[1] for r in stats}["runs"] == "40"
    for _, path in sections["Sampled run"].images:
        check_png((tmp_path / path).read_bytes())


@pytest.mark.parametrize("argv, message", [
    (["--delta", "1.5"], "--delta must be a number in [0, 1)"),
    (["--deltas", "0.1,abc"], "thresholds must be numbers"),
    (["--k", "0"], "k must be a positive integer"),
    (["--sample-runs", "0"], "--sample-runs must be a positive integer"),
    (["--sensitive", "4,99"], "unknown variable '99'"),
    (["--engine", "lattice", "--decision", "9"], "unknown variable '9'"),
])
def test_bad_input_exits_2(argv, message, capsys):
    args = list(ARGS)
    for flag, value in zip(argv[::2], argv[1::2]):
        if flag in args:
            args[args.index(flag) + 1] = value
        else:
            args += [flag, value]
    assert main(["report", *args]) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert err.startswith("pcfair: error:") and message in err


def test_missing_model_or_output_folder_exits_2(tmp_path, capsys):
    assert main(["report", str(tmp_path / "none.psdd"), *ARGS[1:]]) == EXIT_BAD_INPUT
    assert main(["report", *ARGS, "--out", str(tmp_path / "no" / "r.html")]) == EXIT_BAD_INPUT
    assert capsys.readouterr().err.count("pcfair: error:") == 2


def test_unknown_format_is_an_argument_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["report", *ARGS, "--format", "pdf"])
    assert exit_.value.code == 2 and "invalid choice" in capsys.readouterr().err


def test_the_output_suffix_picks_the_format_and_a_foreign_one_is_refused(tmp_path, capsys):
    """``--out r.md`` writes markdown without ``--format``; an HTML page is never written into
    ``r.pdf`` (checked before any work), nor markdown into ``r.html``."""
    assert main(["report", *ARGS, "--out", str(tmp_path / "r.pdf")]) == EXIT_BAD_INPUT
    assert "not .pdf" in capsys.readouterr().err and not (tmp_path / "r.pdf").exists()
    assert main(["report", *ARGS, "--out", str(tmp_path / "r.html"),
                 "--format", "markdown"]) == EXIT_BAD_INPUT
    assert "format='html'" in capsys.readouterr().err
    assert main(["report", *ARGS, "--out", str(tmp_path / "r.md")]) == 0
    assert (tmp_path / "r.md").read_text(encoding="utf-8").startswith("# pcfair")


def test_long_pattern_listings_are_capped_in_the_table_format(capsys):
    """``pcfair patterns`` prints at most ``--limit`` rows as a table (50 by default), says
    how many more there are, and lists them all with ``--limit 0`` or as CSV; a CSV output in
    a missing folder is refused before any work."""
    from pathlib import Path

    model = Path(__file__).resolve().parents[1] / "circuits" / "compas_clt.json"
    args = ["patterns", str(model), "--decision", "ScoreText_", "--sensitive",
            "Ethnic_Code_Text_,MaritalStatus_,Sex_,Age", "--delta", "0.05"]
    assert main(args) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("2356 all pattern(s)") and len(out) == 1 + 1 + 50 + 1
    assert out[-1].startswith("... and 2,306 more")
    assert main([*args, "--limit", "0"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1 + 1 + 2356
    assert main([*args, "--format", "csv"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1 + 2356
    assert main([*args, "--out", str(model.parent / "no" / "x.csv")]) == 2
    assert "does not exist" in capsys.readouterr().err
