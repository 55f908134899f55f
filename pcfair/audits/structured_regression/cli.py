"""``pcfair audit disaggregate``: structured-regression estimates from a CSV file.

Example::

    pcfair audit disaggregate eval.csv --sensitive race,age,gender --label y --prediction yhat \\
        --metric accuracy --format json

Prints one row per intersectional group (size, standard estimate and its Eq. 7 standard error,
structured estimate, rBLPR interval, status). With ``--gof`` it also runs the goodness-of-fit
F-tests and exits with 1 when the sensitive attributes significantly improve the fit (evidence
that performance differs across groups beyond what the explanatory features explain).
"""

from __future__ import annotations

import argparse
import json
import math

import numpy as np
import pandas as pd

from pcfair.cli import finite_float, nonnegative_int, open_probability, positive_int
from pcfair.errors import DataError

from .estimator import StructuredRegression

EXIT_OK = 0
EXIT_FOUND = 1


def _columns(text: str | None) -> list[str]:
    return [c.strip() for c in (text or "").split(",") if c.strip()]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``disaggregate`` sub-command to ``pcfair audit``."""
    p = subparsers.add_parser(
        "disaggregate",
        help="per-group metric estimates by structured regression (Herlihy et al. 2024)",
        description=(
            "Estimate a performance metric on every intersectional group of the sensitive "
            "attributes with structured regression, next to the standard per-group estimate."
        ),
    )
    p.add_argument("data", help="CSV file with one row per evaluated individual")
    p.add_argument("--sensitive", required=True, help="comma-separated sensitive columns (e.g. race,age,gender)")
    p.add_argument("--label", default=None, help="outcome column Y")
    p.add_argument("--prediction", default=None, help="system output column: 0/1 decisions, or scores with --threshold")
    p.add_argument(
        "--metric",
        default="accuracy",
        help="accuracy, sel, tpr, fnr, fpr, ppv, auc, mean, or a numeric column to average (default: accuracy)",
    )
    p.add_argument("--threshold", type=finite_float, default=None, help="decision 1{prediction >= threshold}")
    p.add_argument("--explanatory", default="", help="comma-separated explanatory columns (group means are features)")
    p.add_argument("--no-outcome-rates", action="store_true", help="leave out the P[Y=y] group features")
    p.add_argument("--level", type=open_probability, default=0.95, help="confidence level of the intervals (default 0.95)")
    p.add_argument("--no-intervals", action="store_true", help="skip the rBLPR intervals")
    p.add_argument("--n-boot", type=positive_int, default=100, help="bootstrap replicates for the intervals (default 100)")
    p.add_argument("--gof", action="store_true", help="run the goodness-of-fit F-tests; exit 1 if sens is significant")
    p.add_argument("--alpha", type=open_probability, default=0.05, help="significance level of --gof (default 0.05)")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="random seed (default 0)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=run)


def _plain(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        value = float(value)
        return None if math.isnan(value) else value
    if isinstance(value, np.bool_):
        return bool(value)
    return value


def _gof_comparisons(has_expl: bool) -> list[tuple[str, str]]:
    if has_expl:
        return [("∅", "expl"), ("∅", "sens"), ("expl", "expl+sens")]
    return [("∅", "sens")]


def run(args: argparse.Namespace) -> int:
    """Run ``pcfair audit disaggregate``; returns the exit code."""
    try:
        df = pd.read_csv(args.data)
    except pd.errors.ParserError as err:
        raise DataError(f"cannot parse {args.data!r} as CSV: {err}") from err
    except pd.errors.EmptyDataError as err:
        raise DataError(f"{args.data!r} is empty") from err
    sensitive = _columns(args.sensitive)
    explanatory = _columns(args.explanatory)
    sr = StructuredRegression(
        sensitive,
        explanatory=explanatory,
        outcome=args.label,
        output=args.prediction,
        threshold=args.threshold,
        outcome_rates=not args.no_outcome_rates,
        random_state=args.seed,
    ).fit(df, args.metric)
    table = sr.estimates_.copy()
    if not args.no_intervals:
        ci = sr.confint(args.level, B=args.n_boot)
        table["mu_lpr"] = ci["mu_lpr"]
        table["lower"] = ci["lower"]
        table["upper"] = ci["upper"]
    table = table[[c for c in table.columns if c != "status"] + ["status"]]
    gof_rows = []
    exit_code = EXIT_OK
    if args.gof:
        has_expl = bool(explanatory) or (args.label is not None and not args.no_outcome_rates)
        for reduced, full in _gof_comparisons(has_expl):
            res = sr.gof_test(reduced, full)
            gof_rows.append({"test": f"{full} vs {reduced}", "F": res.F, "df1": res.df1, "df2": res.df2, "p": res.p})
        if gof_rows[-1]["p"] < args.alpha:
            exit_code = EXIT_FOUND
    res = sr.result_
    if args.format == "json":
        groups = []
        for key, row in table.iterrows():
            key = key if isinstance(key, tuple) else (key,)
            entry = {"group": {a: _plain(v) for a, v in zip(sensitive, key)}}
            entry.update({c: _plain(row[c]) for c in table.columns})
            groups.append(entry)
        payload = {
            "metric": str(args.metric),
            "n_rows": int(len(df)),
            "sensitive": sensitive,
            "level": None if args.no_intervals else args.level,
            "lambda": _plain(res.lambda_),
            "alpha": _plain(res.alpha),
            "sigma2": _plain(res.sigma2),
            "pooled": _plain(res.pooled),
            "groups": groups,
        }
        if args.gof:
            payload["gof"] = [{k: _plain(v) for k, v in r.items()} for r in gof_rows]
        print(json.dumps(payload, indent=2, allow_nan=False))
        return exit_code
    print(f"structured regression of {args.metric} over {' x '.join(sensitive)}: {len(df)} rows, "
          f"{len(table)} groups, lambda = {res.lambda_:.4g}, pooled = {res.pooled:.4f}")
    if not args.no_intervals:
        print(f"intervals: rBLPR at level {args.level}")
    with pd.option_context("display.max_rows", None, "display.width", 160, "display.float_format", "{:.4f}".format):
        print(table.to_string(na_rep="-"))
        if gof_rows:
            print("\ngoodness of fit (F-tests, WLS over groups):")
            print(pd.DataFrame(gof_rows).set_index("test").to_string())
    if table["status"].ne("ok").any():
        print("\nstatus 'undefined': the metric is undefined on the group's rows (structured estimate from"
              " its features); 'empty': no rows (structured estimate = pooled value, no interval).")
    return exit_code
