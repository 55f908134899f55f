"""One option vocabulary across the sub-commands: every ``--help`` is read, and an option name
means the same thing (type, choices) wherever it appears, with the exceptions named here."""

from __future__ import annotations

import argparse
import collections

import pytest

from pcfair.cli import build_parser

#: Options whose checks differ on purpose, with the reason.
ALLOWED = {
    "--delta": "certify/patterns/report accept δ = 0 (any difference); learning and AVOIR's "
               "default specification need δ > 0",
    "--engine": "patterns also has the sampling miner, which proves nothing",
    "--format": "report writes documents (html, markdown), the others tables",
    "--threshold": "cbs's Pbin threshold is a probability; regression's applies to any output",
}
#: Options that every command reading a model with a raw table must have.
DATA_COMMANDS = ("certify", "patterns", "report", "audit cbs", "audit testsgd",
                 "audit regression", "audit monitor")


def _commands(parser: argparse.ArgumentParser, prefix=()):
    yield " ".join(prefix), parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, (*prefix, name))


def _options():
    found = collections.defaultdict(dict)
    for name, parser in _commands(build_parser()):
        for action in parser._actions:
            for option in action.option_strings:
                found[option][name] = action
    return found


def test_every_help_prints(capsys):
    for name, parser in _commands(build_parser()):
        text = parser.format_help()
        assert text.startswith("usage:"), name


def test_an_option_name_means_one_thing():
    for option, where in _options().items():
        kinds = {(getattr(a.type, "__name__", repr(a.type)), str(a.choices))
                 for a in where.values()}
        if option in ALLOWED or option in ("-h", "--help"):
            continue
        assert len(kinds) == 1, f"{option} differs across {sorted(where)}: {kinds}"


@pytest.mark.parametrize("command", DATA_COMMANDS)
def test_raw_table_options_are_everywhere(command):
    options = {o for o, where in _options().items() if command in where}
    assert {"--favorable", "--unknown", "--sensitive", "--format"} <= options
    if command.startswith("audit"):
        assert "--outcome" in options and "--decision" not in options  # the true label's word
    else:
        assert {"--decision", "--data", "--time-limit", "--min-support"} <= options


def test_learn_speaks_the_same_words():
    options = {o for o, where in _options().items() if "learn" in where}
    assert {"--decision", "--favorable", "--format", "--time-limit", "--sensitive",
            "--delta", "--bins", "--columns", "--no-header", "--keep-spaces"} <= options
