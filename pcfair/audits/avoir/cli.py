"""``pcfair audit monitor``: replay a CSV file as a stream through an AVOIR monitor.

Exit codes: 0 when the specification is certified True or stays undetermined, 1 when it is
certified False (a fairness violation), 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import sys

import pandas as pd

from pcfair.audits.avoir.export import to_json
from pcfair.audits.avoir.monitor import Monitor
from pcfair.audits.avoir.opt import SPLITS
from pcfair.cli import open_probability, positive_int
from pcfair.errors import DataError

__all__ = ["register", "run_monitor"]

EXIT_OK, EXIT_FOUND = 0, 1


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``monitor`` (alias ``avoir``) sub-command to ``pcfair audit``.

    Examples
    --------
    >>> import argparse
    >>> from pcfair.audits.avoir.cli import register
    >>> sub = argparse.ArgumentParser(prog="audit").add_subparsers()
    >>> register(sub).prog
    'audit monitor'
    """
    p = subparsers.add_parser(
        "monitor", aliases=["avoir"],
        help="AVOIR: monitor a fairness specification over a CSV replayed as a stream",
        description=(
            "Replay DATA.csv row by row (file order) through an AVOIR monitor and report the "
            "record at which the specification was certified True or False with probability "
            ">= 1 - delta (exit 1 when False), or that it stayed undetermined."),
    )
    p.add_argument("data", metavar="DATA.csv", help="records, one per row, with a header")
    p.add_argument("--spec", required=True,
                   help='specification, e.g. \'E[r | sex == "M"] / E[r | sex == "F"] > 0.8\'')
    p.add_argument("--delta", type=open_probability, default=0.1,
                   help="overall failure probability Δ (default 0.1)")
    p.add_argument("--split", choices=SPLITS, default="optimized",
                   help="δ allocation: optimized (AVOIR-OB) or equal (AVOIR-VF)")
    p.add_argument("--optimize-every", type=positive_int, default=5, metavar="N",
                   help="check every N records (default 5)")
    p.add_argument("--delta-charge", choices=("used", "all"), default="used",
                   help="charge a Boolean verdict with the leaves it uses, or all leaves")
    p.add_argument("--key", default=None, help="column with observation keys (upserts)")
    p.add_argument("--continue", dest="continue_", action="store_true",
                   help="keep monitoring after the verdict until the end of the file")
    p.add_argument("--format", choices=("table", "json"), default="table",
                   help="output format (default table)")
    p.add_argument("--export", metavar="PATH", default=None,
                   help="write the per-node history as tabular JSON (for Vega) to PATH")
    p.set_defaults(func=run_monitor)
    return p


def run_monitor(args: argparse.Namespace) -> int:
    """Run the ``monitor`` sub-command; returns the exit code."""
    try:
        data = pd.read_csv(args.data)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise DataError(f"{args.data}: cannot read it as CSV ({err})") from err
    monitor = Monitor(args.spec, delta=args.delta, split=args.split,
                      optimize_every=args.optimize_every, delta_charge=args.delta_charge)
    result = monitor.run(data, until_verdict=not args.continue_, key=args.key)
    if args.export:
        to_json(monitor, args.export)
    if args.format == "json":
        json.dump(result.to_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(result.summary())
    return EXIT_FOUND if result.verdict is False else EXIT_OK
