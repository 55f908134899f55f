"""The command line's exit-code contract: 0 ok / fair, 1 pattern found, 2 bad input (one line on
stderr), 3 incomplete, 4 internal error (one line naming it), 130 interrupted; and every
numeric option checked when parsed."""

from __future__ import annotations

import argparse
import gzip
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pcfair.patterns
from pcfair import cli
from pcfair.cli import (EXIT_BAD_INPUT, EXIT_FOUND, EXIT_INCOMPLETE, EXIT_INTERNAL_ERROR,
                        EXIT_INTERRUPTED, build_parser, main)

ROOT = Path(__file__).resolve().parents[1]
MODEL = str(ROOT / "circuits" / "compas_clt.json")
PATTERN_ARGS = ["--decision", "ScoreText_",
                "--sensitive", "Ethnic_Code_Text_,MaritalStatus_,Sex_,Age", "--delta", "0.05"]
PCFAIR = Path(sys.executable).with_name("pcfair")


def _one_error_line(err: str, prefix: str = "pcfair: error:") -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(prefix), err
    assert "Traceback" not in err
    return lines[0]


# --- bad model files: exit 2, one line --------------------------------------------------------

def test_corrupt_gz_model_exits_2(tmp_path, capsys):
    rng = __import__("random").Random(0)
    noise = tmp_path / "x.json.gz"
    noise.write_bytes(bytes(rng.randrange(256) for _ in range(2000)))
    bad_stream = tmp_path / "y.json.gz"  # a gzip header, then garbage: zlib.error when read
    bad_stream.write_bytes(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03"
                           + bytes(rng.randrange(256) for _ in range(2000)))
    truncated = tmp_path / "z.json.gz"  # a valid stream cut short: EOFError when read
    truncated.write_bytes(gzip.compress(Path(MODEL).read_bytes())[:300])
    for path in (noise, bad_stream, truncated):
        for argv in (["check", str(path)], ["certify", str(path), *PATTERN_ARGS]):
            assert main(argv) == EXIT_BAD_INPUT
            line = _one_error_line(capsys.readouterr().err)
            assert path.name in line


@pytest.mark.parametrize("field", ["params", "edge_logw", "var", "edge_ptr"])
def test_json_with_an_overflowing_number_exits_2(tmp_path, capsys, field):
    text = Path(MODEL).read_text()
    start = text.index(f'"{field}":[') + len(f'"{field}":[')
    end = text.index(",", start)
    path = tmp_path / "huge.json"
    path.write_text(text[:start] + "1e999" + text[end:])
    assert main(["certify", str(path), *PATTERN_ARGS]) == EXIT_BAD_INPUT
    assert "huge.json" in _one_error_line(capsys.readouterr().err)


# --- numeric options: exit 2 with a message naming the option ---------------------------------

CSV_AUDITS = {
    "cbs": ["audit", "cbs", "{csv}", "--sensitive", "s", "--outcome", "y", "--prediction", "p"],
    "disaggregate": ["audit", "regression", "{csv}", "--sensitive", "s", "--outcome", "y",
                     "--prediction", "p"],
    "testsgd": ["audit", "testsgd", "{csv}", "--model", "mod:predict", "--sensitive", "s"],
    "monitor": ["audit", "monitor", "{csv}", "--prediction", "p", "--sensitive", "s",
                "--spec", "E[y] > 0.5"],
}

BAD_OPTIONS = [
    (["patterns", MODEL, *PATTERN_ARGS, "--kind", "topk", "--k", "0"], "--k"),
    (["patterns", MODEL, *PATTERN_ARGS, "--kind", "topk", "--k", "-1"], "--k"),
    (["patterns", MODEL, *PATTERN_ARGS, "--kind", "topk", "--k", "-3"], "--k"),
    (["patterns", MODEL, *PATTERN_ARGS, "--kind", "topk", "--k", "2.5"], "--k"),
    (["patterns", MODEL, *PATTERN_ARGS, "--engine", "sample", "--runs", "-3"], "--runs"),
    (["patterns", MODEL, *PATTERN_ARGS, "--engine", "sample", "--seed", "-1"], "--seed"),
    (["patterns", MODEL, *PATTERN_ARGS, "--jobs", "0"], "--jobs"),
    (["certify", MODEL, *PATTERN_ARGS, "--jobs", "-2"], "--jobs"),
    (["certify", MODEL, *PATTERN_ARGS, "--time-limit", "-1"], "--time-limit"),
    (["certify", MODEL, *PATTERN_ARGS, "--time-limit", "0"], "--time-limit"),
    (["certify", MODEL, *PATTERN_ARGS, "--time-limit", "nan"], "--time-limit"),
    (["certify", MODEL, *PATTERN_ARGS, "--delta", "1.5"], "--delta"),
    (["certify", MODEL, *PATTERN_ARGS, "--delta", "-0.1"], "--delta"),
    (["certify", MODEL, *PATTERN_ARGS, "--delta", "inf"], "--delta"),
    (["report", MODEL, *PATTERN_ARGS, "--k", "0"], "--k"),
    (["report", MODEL, *PATTERN_ARGS, "--max-rows", "-1"], "--max-rows"),
    (["report", MODEL, *PATTERN_ARGS, "--sample-runs", "0"], "--sample-runs"),
    (["metrics", MODEL, "--decision", "ScoreText_", "--sensitive", "Sex_", "--seed", "-5"],
     "--seed"),
    (["learn", "{csv}", "--decision", "y", "--out", "{out}", "--test-fraction", "1.5"],
     "--test-fraction"),
    (["learn", "{csv}", "--decision", "y", "--out", "{out}", "--pseudocount", "-1"],
     "--pseudocount"),
    ([*CSV_AUDITS["cbs"], "--restarts", "0"], "--restarts"),
    ([*CSV_AUDITS["cbs"], "--permutations", "-1"], "--permutations"),
    ([*CSV_AUDITS["cbs"], "--alpha", "1"], "--alpha"),
    ([*CSV_AUDITS["cbs"], "--threshold", "0"], "--threshold"),
    ([*CSV_AUDITS["cbs"], "--jobs", "0"], "--jobs"),
    ([*CSV_AUDITS["cbs"], "--C", "-1"], "--C"),
    ([*CSV_AUDITS["disaggregate"], "--level", "1.5"], "--level"),
    ([*CSV_AUDITS["disaggregate"], "--n-boot", "0"], "--n-boot"),
    ([*CSV_AUDITS["testsgd"], "--limit", "-1"], "--limit"),
    ([*CSV_AUDITS["testsgd"], "--confidence", "0"], "--confidence"),
    ([*CSV_AUDITS["testsgd"], "--sup-thr", "2"], "--sup-thr"),
    ([*CSV_AUDITS["monitor"], "--delta", "0"], "--delta"),
    ([*CSV_AUDITS["monitor"], "--optimize-every", "0"], "--optimize-every"),
]


@pytest.mark.parametrize("argv, option", BAD_OPTIONS, ids=[" ".join(a[-2:]) + f" ({a[0]})"
                                                           for a, _ in BAD_OPTIONS])
def test_numeric_option_out_of_range_exits_2(tmp_path, capsys, argv, option):
    csv = tmp_path / "d.csv"
    csv.write_text("s,y,p\n0,1,0.2\n1,0,0.7\n")
    argv = [a.format(csv=csv, out=tmp_path / "m.json") for a in argv]
    assert main(argv) == EXIT_BAD_INPUT
    line = _one_error_line(capsys.readouterr().err)
    assert f"{option} must be" in line
    assert not (tmp_path / "m.json").exists()


def test_every_numeric_option_has_a_checked_type():
    """No sub-command (audits included) parses a number with a bare ``int`` or ``float``."""
    unchecked = []

    def walk(parser: argparse.ArgumentParser, path: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, f"{path} {name}")
            elif action.type in (int, float) and not action.choices:
                unchecked.append(f"{path} {'/'.join(action.option_strings)}")

    walk(build_parser(), "pcfair")
    assert not unchecked, unchecked


def test_type_helpers():
    assert cli.positive_int("3") == 3 and cli.nonnegative_int("0") == 0
    assert cli.job_count("-1") == -1 and cli.fraction("0") == 0.0
    assert cli.open_probability("0.5") == 0.5 and cli.probability("1") == 1.0
    for helper, text in [(cli.positive_int, "0"), (cli.positive_int, "1.0"),
                         (cli.nonnegative_int, "-1"), (cli.job_count, "0"),
                         (cli.fraction, "1"), (cli.open_probability, "0"),
                         (cli.positive_float, "inf"), (cli.finite_float, "nan"),
                         (cli.nonnegative_float, "-0.5")]:
        with pytest.raises(argparse.ArgumentTypeError, match="must be"):
            helper(text)


# --- internal errors: exit 4, one line; interrupts: 130 ---------------------------------------

def _boom(*args, **kwargs):
    raise RuntimeError("something broke\nover two lines")


def test_internal_error_exits_4_with_one_line(monkeypatch, capsys):
    monkeypatch.delenv("PCFAIR_DEBUG", raising=False)
    monkeypatch.setattr(pcfair.patterns, "certify", _boom)
    assert main(["certify", MODEL, *PATTERN_ARGS]) == EXIT_INTERNAL_ERROR
    line = _one_error_line(capsys.readouterr().err, "pcfair: internal error:")
    assert "RuntimeError" in line and "something broke over two lines" in line
    assert "report" in line
    # the traceback on request
    monkeypatch.setenv("PCFAIR_DEBUG", "1")
    assert main(["certify", MODEL, *PATTERN_ARGS]) == EXIT_INTERNAL_ERROR
    assert "Traceback" in capsys.readouterr().err
    monkeypatch.delenv("PCFAIR_DEBUG")
    assert main(["--debug", "certify", MODEL, *PATTERN_ARGS]) == EXIT_INTERNAL_ERROR
    assert "Traceback" in capsys.readouterr().err


def test_internal_error_is_never_the_found_code(monkeypatch, capsys):
    monkeypatch.setattr(pcfair.patterns, "find_patterns", _boom)
    code = main(["patterns", MODEL, *PATTERN_ARGS])
    assert code == EXIT_INTERNAL_ERROR and code not in (0, EXIT_FOUND, 3)
    capsys.readouterr()


def test_keyboard_interrupt_exits_130(monkeypatch, capsys):
    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pcfair.patterns, "certify", interrupt)
    assert main(["certify", MODEL, *PATTERN_ARGS]) == EXIT_INTERRUPTED
    assert capsys.readouterr().err.strip() == "pcfair: interrupted"


def test_usage_errors_stay_argparse_errors(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["certify", MODEL, *PATTERN_ARGS, "--engine", "nope"])
    assert exc.value.code == 2 and "invalid choice" in capsys.readouterr().err


# --- the installed script ---------------------------------------------------------------------

def _run(*argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PCFAIR_DEBUG"}
    return subprocess.run([str(PCFAIR), *argv], capture_output=True, text=True, timeout=300,
                          env=env)


needs_script = pytest.mark.skipif(not PCFAIR.exists(), reason="the pcfair script is not "
                                       "installed beside this Python")


@needs_script
def test_script_exit_codes(tmp_path):
    proc = _run("patterns", MODEL, *PATTERN_ARGS, "--kind", "topk", "--k", "0")
    assert proc.returncode == 2 and not proc.stdout
    assert "--k must be" in _one_error_line(proc.stderr)
    bad = tmp_path / "x.json.gz"
    bad.write_bytes(os.urandom(1000))
    proc = _run("certify", str(bad), *PATTERN_ARGS)
    assert proc.returncode == 2
    _one_error_line(proc.stderr)
    proc = _run("certify", MODEL, *PATTERN_ARGS, "--engine", "search")
    assert proc.returncode == EXIT_FOUND and proc.stdout.startswith("UNFAIR")


@needs_script
def test_help_documents_the_exit_codes():
    proc = _run("--help")
    assert proc.returncode == 0
    for code in ("0", "1", "2", "3", "4", "130"):
        assert f"\n  {code} " in proc.stdout
    assert "internal error" in proc.stdout and "PCFAIR_DEBUG" in proc.stdout


def test_an_incomplete_listing_says_why(capsys):
    """Issue 36: ``complete False`` with its reason (a time limit, or the sampler's nature)."""
    argv = ["patterns", MODEL, "--decision", "ScoreText_", "--sensitive",
            "Ethnic_Code_Text_,Sex_", "--delta", "0.01"]
    assert cli.main([*argv, "--kind", "all", "--time-limit", "0.001"]) == EXIT_INCOMPLETE
    out = capsys.readouterr().out
    assert "complete False" in out
    assert "note: incomplete: the lattice engine stopped at its time limit (0.001 s)" in out
    assert cli.main([*argv, "--engine", "sample", "--runs", "3"]) == EXIT_INCOMPLETE
    assert "the sampling miner lists the patterns it met, never a proof" in \
        capsys.readouterr().out
    assert cli.main([*argv, "--kind", "topk", "--k", "3"]) == 0
    assert "note: incomplete" not in capsys.readouterr().out
