"""``pcfair audit monitor``: replay a CSV file as a stream through an AVOIR monitor.

The decisions ``r`` are the model's (``--model``: ``P(favorable | x) >= 0.5``) or a column of
stored predictions (``--prediction``). Without ``--spec`` the specification is demographic
parity within ``--delta`` for every value ``v`` of every ``--sensitive`` column ``A``:
``E[r | A == v] - E[r] < delta`` and ``E[r] - E[r | A == v] < delta``, all together. The
verdict holds with probability at least ``1 - --failure-prob``.

Exit codes, as every pcfair command's: 0 when the specification is certified True, 1 when it
is certified False (a fairness violation), 3 when it stays undetermined at the end of the file
(no verdict at that failure probability: more records are needed) or when ``--time-limit``
stopped the replay before a verdict, 2 on bad input. A verdict reached before the time limit
stands.
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import pandas as pd

from pcfair.audits._cli import (EXIT_FOUND, EXIT_INCOMPLETE, EXIT_OK, add_common, deadline, emit,
                                load_model, model_inputs, read_data, sensitive_columns)
from pcfair.audits.avoir.export import to_json
from pcfair.audits.avoir.monitor import Monitor
from pcfair.audits.avoir.opt import SPLITS
from pcfair.cli import nonnegative_int, open_probability, positive_int
from pcfair.errors import DataError, OptionError

__all__ = ["register", "run_monitor", "parity_spec"]


def _literal(value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)) and math.isfinite(float(value)):
        return repr(float(value))
    text = str(value)
    if '"' in text or "\\" in text:
        raise DataError(f"value {text!r} cannot be written in a specification; pass --spec")
    return f'"{text}"'


def parity_spec(data: pd.DataFrame, sensitive: list[str], delta: float, output: str = "r") -> str:
    """The default specification: every group's rate of ``output`` within ``delta`` of the
    overall rate.

    Examples
    --------
    >>> import pandas as pd
    >>> parity_spec(pd.DataFrame({"sex": ["F", "M", "F"]}), ["sex"], 0.1)
    'E[r | sex == "F"] - E[r] < 0.1 & E[r] - E[r | sex == "F"] < 0.1 & E[r | sex == "M"] - E[r] < 0.1 & E[r] - E[r | sex == "M"] < 0.1'
    """
    parts = []
    for col in sensitive:
        for v in sorted(pd.unique(data[col].dropna()), key=str):
            group = f"E[{output} | {col} == {_literal(v)}]"
            parts.append(f"{group} - E[{output}] < {delta:g}")
            parts.append(f"E[{output}] - {group} < {delta:g}")
    return " & ".join(parts)


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
            ">= 1 - failure-prob (exit 1 when False), or that it stayed undetermined (exit 3)."),
    )
    add_common(p, seed=False, sensitive_help="comma-separated sensitive columns (the default "
               "specification's groups)")
    p.add_argument("--spec", default=None,
                   help='specification over the decisions r, e.g. '
                        '\'E[r | sex == "M"] / E[r | sex == "F"] > 0.8\' (default: parity '
                        'within --delta for every sensitive value)')
    p.add_argument("--delta", type=open_probability, default=0.1,
                   help="discrimination threshold of the default specification (default 0.1)")
    p.add_argument("--failure-prob", type=open_probability, default=0.1,
                   help="overall failure probability of the verdict (default 0.1)")
    p.add_argument("--split", choices=SPLITS, default="optimized",
                   help="failure-probability allocation: optimized (AVOIR-OB) or equal (AVOIR-VF)")
    p.add_argument("--optimize-every", type=positive_int, default=5, metavar="N",
                   help="check every N records (default 5)")
    p.add_argument("--failure-charge", choices=("used", "all"), default="used",
                   help="charge a Boolean verdict's failure probability with the leaves it "
                        "uses, or with all leaves")
    p.add_argument("--key", default=None, help="column with observation keys (upserts)")
    p.add_argument("--continue", dest="continue_", action="store_true",
                   help="keep monitoring after the verdict until the end of the file")
    p.add_argument("--limit", type=nonnegative_int, default=20, metavar="N",
                   help="terms printed in the table format, each cut to 100 characters "
                        "(0: all, in full; default 20)")
    p.add_argument("--export", metavar="PATH", default=None,
                   help="write the per-node history as tabular JSON (for Vega) to PATH")
    p.set_defaults(func=run_monitor)
    return p


def run_monitor(args: argparse.Namespace) -> int:
    """Run the ``monitor`` sub-command; returns the exit code."""
    until = deadline(args)
    model = load_model(args)
    data = read_data(args, model)
    sensitive = sensitive_columns(args, data)
    if "r" in data.columns and model.column != "r":
        raise DataError(f"{args.data} has a column 'r', the name of the decisions; rename it")
    inputs = data if model.kind == "column" else model_inputs(model, data, args.outcome)
    stream = data.assign(r=model.hits(inputs).astype(np.int64))
    spec = args.spec if args.spec is not None else parity_spec(data, sensitive, args.delta)
    if not spec:
        raise OptionError("the default specification is empty: the sensitive columns have no values")
    monitor = Monitor(spec, failure_prob=args.failure_prob, split=args.split,
                      optimize_every=args.optimize_every, failure_charge=args.failure_charge)
    result = monitor.run(stream, until_verdict=not args.continue_, key=args.key, deadline=until)
    if args.export:
        to_json(monitor, args.export)
    emit(result, args.format, result.summary(args.limit))
    return {True: EXIT_OK, False: EXIT_FOUND}.get(result.verdict, EXIT_INCOMPLETE)
