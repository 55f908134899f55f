"""``pcfair audit cbs``: the Conditional Bias Scan on a CSV file.

Example::

    pcfair audit cbs compas.csv --protected race --protected-value African-American \\
        --covariates sex,age,charge_degree,priors --outcome two_year_recid \\
        --prediction predicted_prob --definition fpr --permutations 99 --format json

Exit codes: 0 nothing significant found, 1 a subgroup was found (with permutations: its
p-value is below ``--alpha``), 2 bad input.
"""

from __future__ import annotations

import argparse
import json
import sys

import pandas as pd

from pcfair.audits.cbs.audit import conditional_bias_scan
from pcfair.audits.cbs.definitions import DEFINITIONS, FAMILIES, PREDICTIONS
from pcfair.audits.cbs.options import DIRECTIONS
from pcfair.cli import (interval, job_count, nonnegative_float, nonnegative_int,
                        open_probability, positive_float, positive_int)
from pcfair.errors import DataError

EXIT_OK = 0
EXIT_FOUND = 1


def _columns(text: str) -> list[str]:
    cols = [c.strip() for c in text.split(",") if c.strip()]
    if not cols:
        raise argparse.ArgumentTypeError("expected a comma-separated list of column names")
    return cols


def _condition(text: str) -> int | None:
    if text.lower() in ("none", ""):
        return None
    if text in ("0", "1"):
        return int(text)
    raise argparse.ArgumentTypeError("expected 0, 1 or none")


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``cbs`` sub-command to the ``pcfair audit`` sub-parsers."""
    p = subparsers.add_parser(
        "cbs",
        help="Conditional Bias Scan: the most biased subgroup of a protected class",
        description=(
            "Conditional Bias Scan (Boxer, McFowland and Neill): find the subgroup of a "
            "protected class where a classifier's predictions or recommendations depart most "
            "from what the non-protected class would lead one to expect, and test it by "
            "permutation. Covariates must be discrete."
        ),
    )
    p.add_argument("data", help="CSV file, one row per individual")
    p.add_argument("--protected", required=True, help="sensitive column (or a 0/1 column)")
    p.add_argument("--protected-value", help="value of --protected that defines the class")
    p.add_argument("--covariates", type=_columns, help="comma-separated discrete covariates "
                   "(default: every other column)")
    p.add_argument("--outcome", required=True, help="0/1 outcome column Y")
    p.add_argument("--prediction", required=True, help="column of probabilities P (or labels)")
    p.add_argument("--recommendation", help="0/1 column Pbin (default: P >= --threshold)")
    p.add_argument("--threshold", type=interval(0, 1, low_open=True, high_open=False),
                   default=0.5, help="Pbin = 1{P >= threshold}, in (0, 1] (default 0.5)")
    p.add_argument("--definition", choices=sorted(DEFINITIONS), metavar="NAME",
                   help="a named fairness definition of the paper's Table 1, replacing "
                   "--family ... --event: " + ", ".join(sorted(DEFINITIONS)))
    p.add_argument("--family", choices=FAMILIES, default="separation")
    p.add_argument("--predictions", choices=PREDICTIONS, default="probabilities")
    p.add_argument("--condition-value", type=_condition, default=None,
                   help="value-conditional scan on C = 0 or 1 (default: none)")
    p.add_argument("--event", type=int, choices=(0, 1), default=1)
    p.add_argument("--direction", choices=DIRECTIONS, default="positive")
    p.add_argument("--penalty", type=nonnegative_float, default=1.0)
    p.add_argument("--restarts", type=positive_int, default=50, help="coordinate-ascent restarts")
    p.add_argument("--permutations", type=nonnegative_int, default=99, help="0 skips the test")
    p.add_argument("--alpha", type=open_probability, default=0.05, help="significance level")
    p.add_argument("--sigma", type=positive_float, default=None,
                   help="Gaussian scale (default: SD)")
    p.add_argument("--C", dest="C", type=positive_float, default=1.0,
                   help="inverse L2 regularisation of the logistic regressions")
    p.add_argument("--n-jobs", type=job_count, default=-1)
    p.add_argument("--seed", type=nonnegative_int, default=0)
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the scan described by the parsed arguments; returns the exit code."""
    try:
        df = pd.read_csv(args.data)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise DataError(f"{args.data}: cannot read the CSV file ({err})") from err
    protected = args.protected
    if args.protected_value is not None:
        if protected not in df.columns:
            raise DataError(f"protected column {protected!r} is not in {args.data}")
        col = df[protected]
        # CSV values are typed by pandas; compare through their text form
        df[protected] = col.astype(str)
        protected = (protected, args.protected_value)
    if args.definition is not None:
        scan_type = dict(definition=args.definition)
    else:
        scan_type = dict(
            family=args.family, predictions=args.predictions,
            condition_value=args.condition_value, event=args.event,
        )
    res = conditional_bias_scan(
        df,
        protected=protected,
        outcome=args.outcome,
        prediction=args.prediction,
        covariates=args.covariates,
        recommendation=args.recommendation,
        threshold=args.threshold,
        direction=args.direction,
        penalty=args.penalty,
        n_restarts=args.restarts,
        n_permutations=args.permutations,
        sigma=args.sigma,
        C=args.C,
        n_jobs=args.n_jobs,
        random_state=args.seed,
        **scan_type,
    )
    if args.format == "json":
        json.dump(res.to_dict(), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(res.describe())
    if args.permutations > 0:
        return EXIT_FOUND if res.significant(args.alpha) else EXIT_OK
    return EXIT_FOUND if res.found else EXIT_OK
