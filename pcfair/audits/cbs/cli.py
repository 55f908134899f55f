"""``pcfair audit cbs``: the Conditional Bias Scan on a CSV file.

Example::

    pcfair audit cbs compas.csv --model compas.json --sensitive race,sex \\
        --outcome two_year_recid --definition fpr --permutations 99 --format json

One scan per protected class: every value of every ``--sensitive`` column in turn (or only
``--sensitive-value`` of a single sensitive column). The covariates are ``--covariates``, or
the model's inputs (a circuit's variables) found in the data, or every other column; the
scanned sensitive column is never a covariate.

Only subgroups of at least ``--min-group-size`` rows (default 30) are scanned, in the data and
in every permuted data set. The permutations run on every core by default (``--jobs``; the
result does not depend on it). ``--time-limit SECONDS`` is one clock for all the scans: the
limit is checked between restarts and between permutations, each scan does at least its first
restart, and a scan it cuts says how many restarts or permutations ran (a p-value over fewer
permutations than asked is marked as such).

Exit codes: 0 nothing significant found, 1 a subgroup was found (with permutations: its
p-value is below ``--alpha``), 2 bad input, 3 nothing significant found before the time limit
(undetermined).
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from pcfair.audits._cli import (add_common, columns, deadline, emit, exit_status, load_model,
                                outcome_indicator, read_data, sensitive_columns)
from pcfair.audits._model import Model
from pcfair.audits.cbs.audit import conditional_bias_scan
from pcfair.audits.cbs.definitions import DEFINITIONS, FAMILIES, PREDICTIONS
from pcfair.audits.cbs.options import DIRECTIONS
from pcfair.audits.cbs.result import CBSScans
from pcfair.cli import (interval, nonnegative_float, nonnegative_int, open_probability,
                        positive_float, positive_int)
from pcfair.errors import DataError, OptionError

def _columns(text: str) -> list[str]:
    cols = columns(text)
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
    add_common(p, jobs=True, jobs_default=-1,
               sensitive_help="comma-separated sensitive columns: each of their values is "
                              "scanned as the protected class")
    p.add_argument("--sensitive-value", default=None, metavar="V",
                   help="scan only this value of the (single) sensitive column")
    p.add_argument("--covariates", type=_columns, help="comma-separated discrete covariates "
                   "(default: the model's inputs in the data, else every other column)")
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
    p.add_argument("--max-categories", type=positive_int, default=None, metavar="N",
                   help="a covariate with more distinct values is refused as continuous "
                        "(default 32; with a circuit model, at least its widest variable)")
    p.add_argument("--restarts", type=positive_int, default=50, help="coordinate-ascent restarts")
    p.add_argument("--permutations", type=nonnegative_int, default=99, help="0 skips the test")
    p.add_argument("--min-group-size", type=positive_int, default=30, metavar="N",
                   help="scan only subgroups of at least N rows, in the data and in every "
                        "permuted data set (default 30; 1: any size)")
    p.add_argument("--alpha", type=open_probability, default=0.05, help="significance level")
    p.add_argument("--sigma", type=positive_float, default=None,
                   help="Gaussian scale (default: SD)")
    p.add_argument("--C", dest="C", type=positive_float, default=1.0,
                   help="inverse L2 regularisation of the logistic regressions")
    p.set_defaults(func=run)


def _predicted_once(model: Model, data: pd.DataFrame, outcome: str) -> Model:
    """``model`` with its predictions on ``data`` computed once: every protected class's scan
    reads the same rows (and every permuted scan reuses its scan's predictions)."""
    if model.kind == "column":
        return model
    p = model.proba(data.drop(columns=[outcome]))

    def predictions(batch: pd.DataFrame) -> np.ndarray:
        if len(batch) != p.size:
            raise DataError(f"the cached predictions are for {p.size} rows, not {len(batch)}")
        return p

    return Model(model.kind, predictions, outcome=model.outcome, favorable=model.favorable,
                 circuit=model.circuit, inputs=model.inputs, name=model.name,
                 column=model.column)


def _protected_classes(args, data: pd.DataFrame, sensitive: list[str]) -> list[tuple]:
    if args.sensitive_value is not None:
        if len(sensitive) != 1:
            raise OptionError("--sensitive-value needs exactly one --sensitive column")
        col = sensitive[0]
        text = data[col].astype(str)
        if not (text == args.sensitive_value).any():
            raise OptionError(f"value {args.sensitive_value!r} does not occur in column {col!r}")
        value = data[col][text == args.sensitive_value].iloc[0]
        return [(col, value)]
    runs = []
    for col in sensitive:
        values = pd.unique(data[col].dropna())
        if len(values) < 2:
            raise OptionError(f"sensitive column {col!r} has fewer than two values")
        runs.extend((col, v) for v in sorted(values, key=str))
    return runs


def run(args: argparse.Namespace) -> int:
    """Run the scans described by the parsed arguments; returns the exit code."""
    until = deadline(args)
    model = load_model(args)  # a circuit's recipe may name the outcome
    if args.outcome is None:
        raise OptionError("cbs needs --outcome, the outcome column (1 where it equals "
                          "--favorable)")
    data = outcome_indicator(read_data(args, model), args.outcome, model.favorable)
    sensitive = sensitive_columns(args, data)
    if args.definition is not None:
        scan_type = dict(definition=args.definition)
    else:
        scan_type = dict(
            family=args.family, predictions=args.predictions,
            condition_value=args.condition_value, event=args.event,
        )
    reserved = {args.outcome, model.column, args.recommendation}
    predicted = _predicted_once(model, data, args.outcome)
    max_categories = args.max_categories
    if max_categories is None:  # a circuit's variables are categorical by construction
        max_categories = 32 if model.circuit is None else max(
            32, int(model.circuit.variables.cardinalities.max()))
    scans = []
    for col, value in _protected_classes(args, data, sensitive):
        if args.covariates is not None:
            covariates = [c for c in args.covariates if c != col]
        else:
            pool = model.inputs if model.inputs is not None else data.columns
            covariates = [c for c in pool if c in data.columns and c != col and c not in reserved]
        scans.append(conditional_bias_scan(
            data,
            protected=(col, value),
            outcome=args.outcome,
            model=predicted,
            covariates=covariates,
            recommendation=args.recommendation,
            threshold=args.threshold,
            direction=args.direction,
            penalty=args.penalty,
            n_restarts=args.restarts,
            n_permutations=args.permutations,
            min_group_size=args.min_group_size,
            sigma=args.sigma,
            C=args.C,
            n_jobs=args.jobs,
            random_state=args.seed,
            max_categories=max_categories,
            deadline=until,
            **scan_type,
        ))
    result = CBSScans(scans)
    emit(result, args.format, result.describe())
    return exit_status(result.found(args.alpha), result.complete)
