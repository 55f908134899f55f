"""``pcfair audit regression`` (alias ``disaggregate``): structured-regression estimates from a
CSV file.

Example::

    pcfair audit regression eval.csv --sensitive race,age,gender --outcome y --prediction yhat \\
        --metric accuracy --format json

The evaluated outputs are a column (``--prediction``) or a model's decisions
``P(favorable | x) >= --threshold`` (``--model``, threshold 0.5 by default).

Prints one row per intersectional group (size, standard estimate and its Eq. 7 standard error,
structured estimate, rBLPR interval, status). With ``--gof`` it also runs the goodness-of-fit
F-tests and exits with 1 when the sensitive attributes significantly improve the fit (evidence
that performance differs across groups beyond what the explanatory features explain).

``--time-limit SECONDS`` bounds the interval bootstrap (the fit itself always finishes): the
intervals come from the replicates that ran, the output says how many, and the command exits 3
unless ``--gof`` found a difference.
"""

from __future__ import annotations

import argparse
import pandas as pd

from pcfair.audits._cli import (add_common, columns, deadline, emit, exit_status,
                                favorable_value, load_model, outcome_indicator, read_data,
                                sensitive_columns)
from pcfair.audits._clock import time_limit_note
from pcfair.cli import finite_float, open_probability, positive_int

from .estimator import StructuredRegression


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``regression`` (alias ``disaggregate``) sub-command to ``pcfair audit``."""
    p = subparsers.add_parser(
        "regression", aliases=["disaggregate"],
        help="per-group metric estimates by structured regression (Herlihy et al. 2024)",
        description=(
            "Estimate a performance metric on every intersectional group of the sensitive "
            "attributes with structured regression, next to the standard per-group estimate."
        ),
    )
    add_common(p, sensitive_help="comma-separated sensitive columns (e.g. race,age,gender)")
    p.add_argument(
        "--metric",
        default="accuracy",
        help="accuracy, sel, tpr, fnr, fpr, ppv, auc, mean, or a numeric column to average (default: accuracy)",
    )
    p.add_argument("--threshold", type=finite_float, default=None,
                   help="decision 1{output >= threshold} (default 0.5 with --model; without it "
                        "a --prediction column must hold 0/1 decisions)")
    p.add_argument("--explanatory", default="", help="comma-separated explanatory columns (group means are features)")
    p.add_argument("--no-outcome-rates", action="store_true", help="leave out the P[Y=y] group features")
    p.add_argument("--level", type=open_probability, default=0.95, help="confidence level of the intervals (default 0.95)")
    p.add_argument("--no-intervals", action="store_true", help="skip the rBLPR intervals")
    p.add_argument("--n-boot", type=positive_int, default=100, help="bootstrap replicates for the intervals (default 100)")
    p.add_argument("--gof", action="store_true", help="run the goodness-of-fit F-tests; exit 1 if sens is significant")
    p.add_argument("--alpha", type=open_probability, default=0.05, help="significance level of --gof (default 0.05)")
    p.set_defaults(func=run)


def _gof_comparisons(has_expl: bool) -> list[tuple[str, str]]:
    if has_expl:
        return [("∅", "expl"), ("∅", "sens"), ("expl", "expl+sens")]
    return [("∅", "sens")]


def run(args: argparse.Namespace) -> int:
    """Run ``pcfair audit regression``; returns the exit code."""
    until = deadline(args)
    model = None if args.model is None else load_model(args)
    df = read_data(args, model)
    sensitive = sensitive_columns(args, df)
    explanatory = columns(args.explanatory)
    favorable = favorable_value(args) if model is None else model.favorable
    if args.outcome is not None and args.outcome in df.columns:
        df = outcome_indicator(df, args.outcome, favorable)  # the metrics read outcome == V
    sr = StructuredRegression(
        sensitive,
        explanatory=explanatory,
        outcome=args.outcome,
        output=args.prediction,
        model=model,
        favorable=None if model is None else model.favorable,
        threshold=args.threshold,
        outcome_rates=not args.no_outcome_rates,
        random_state=args.seed,
    ).fit(df, args.metric)
    table = sr.estimates_.copy()
    notes = []
    if not args.no_intervals:
        ci = sr.confint(args.level, B=args.n_boot, deadline=until)
        if not ci.attrs["complete"]:
            ran = ci.attrs["replicates"]
            notes.append("intervals: " + time_limit_note(ran, args.n_boot, "bootstrap replicates")
                         + ("" if ran >= 2 else "; no interval (2 replicates are needed)"))
        table["mu_lpr"] = ci["mu_lpr"]
        table["lower"] = ci["lower"]
        table["upper"] = ci["upper"]
    table = table[[c for c in table.columns if c != "status"] + ["status"]]
    gof_rows = []
    found = False
    if args.gof:
        has_expl = bool(explanatory) or (args.outcome is not None and not args.no_outcome_rates)
        for reduced, full in _gof_comparisons(has_expl):
            res = sr.gof_test(reduced, full)
            gof_rows.append({"test": f"{full} vs {reduced}", "F": res.F, "df1": res.df1, "df2": res.df2, "p": res.p})
        found = gof_rows[-1]["p"] < args.alpha
    res = sr.result_
    res.estimates = table
    res.gof = gof_rows
    res.complete = not notes
    res.notes = notes
    lines = [f"structured regression of {args.metric} over {' x '.join(sensitive)}: {len(df)} rows, "
             f"{len(table)} groups, lambda = {res.lambda_:.4g}, pooled = {res.pooled:.4f}"]
    if not args.no_intervals:
        lines.append(f"intervals: rBLPR at level {args.level}")
    if notes:
        lines.append("INCOMPLETE (time limit): " + "; ".join(notes))
    with pd.option_context("display.max_rows", None, "display.width", 160, "display.float_format", "{:.4f}".format):
        lines.append(table.to_string(na_rep="-"))
        if gof_rows:
            lines.append("\ngoodness of fit (F-tests, WLS over groups):")
            lines.append(pd.DataFrame(gof_rows).set_index("test").to_string())
    if table["status"].ne("ok").any():
        lines.append("\nstatus 'undefined': the metric is undefined on the group's rows (structured estimate "
                     "from its features); 'empty': no rows (structured estimate = pooled value, no interval).")
    emit(res, args.format, "\n".join(lines))
    return exit_status(found, res.complete)
