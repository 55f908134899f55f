"""The ``pcfair`` command line.

Sub-commands are grouped by job: circuit commands (``check``, ``marginal``...) live here; each
audit port registers its own ``pcfair audit <method>`` sub-command through a ``register``
function in ``pcfair/audits/<method>/cli.py``.

Exit codes: 0 success (for ``certify``: certified fair), 1 a pattern / violation found, 2 bad
input, 3 an incomplete search.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence

from pcfair.errors import PCFairError

EXIT_OK = 0
EXIT_FOUND = 1
EXIT_BAD_INPUT = 2
EXIT_INCOMPLETE = 3

# Audit ports: module under pcfair.audits whose ``cli.register(subparsers)`` adds a sub-command.
AUDIT_MODULES = ("cbs", "testsgd", "structured_regression", "avoir")


def _add_audit_commands(subparsers: argparse._SubParsersAction) -> None:
    audit = subparsers.add_parser("audit", help="audit a model's predictions with a ported method")
    audit_sub = audit.add_subparsers(dest="method", metavar="METHOD")
    audit_sub.required = True
    for name in AUDIT_MODULES:
        modname = f"pcfair.audits.{name}.cli"
        if importlib.util.find_spec(f"pcfair.audits.{name}") is None:
            continue
        importlib.import_module(modname).register(audit_sub)


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser with every sub-command registered."""
    parser = argparse.ArgumentParser(
        prog="pcfair",
        description="Certify the fairness of probabilistic circuits and audit models.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    _add_audit_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except PCFairError as exc:
        print(f"pcfair: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        print(f"pcfair: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
