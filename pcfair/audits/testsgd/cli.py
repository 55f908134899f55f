"""``pcfair audit testsgd``: run TestSGD on a CSV file and a model.

The model (``--model``) is a circuit file, whose favourable decisions are
``P(--outcome = --favorable | x) >= 0.5``, or ``MODULE:CALLABLE`` / ``FILE.py:CALLABLE``
naming a predict function or an estimator. Stored predictions cannot be tested: TestSGD asks
the model about new inputs. ``--sensitive`` lists the sensitive features, comma-separated:
``NAME``, ``NAME:categorical``, ``NAME:continuous`` or ``NAME:LO:HI``.

``--time-limit SECONDS`` stops the scoring: the rule sets being sampled are scored on what was
drawn (``converged`` False), the others are left out, and the output says how many.

Exit codes: 0 when no rule set scores above ``--xi`` (or ``--xi`` is not given), 1 when some
rule set does, 2 on bad input, 3 when none does but the time limit stopped the scoring
(undetermined).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

import pandas as pd

from pcfair.audits._cli import (add_common, columns, deadline, emit, exit_status, load_circuit,
                                load_model, read_data)
from pcfair.cli import finite_float, nonnegative_int, open_probability, positive_float, positive_int, probability
from pcfair.errors import DataError, OptionError, SpecError

from .audit import audit, circuit_sampler
from .specs import SensitiveSpec
from .scoring import INTERVALS

__all__ = ["register", "run", "parse_sensitive"]

TABLE_COLUMNS = ["rule_set", "score", "p_group", "p_rest", "margin", "n_samples", "support"]


def parse_sensitive(items: list[str], bins: int) -> dict[str, Any]:
    """Parse ``name``, ``name:categorical``, ``name:continuous`` or ``name:LO:HI`` items.

    Examples
    --------
    >>> parse_sensitive(["sex", "race:categorical", "age:0:100"], 10)["age"].edges[:2]
    (0.0, 10.0)
    """
    out: dict[str, Any] = {}
    for item in items:
        parts = item.split(":")
        name = parts[0]
        if not name:
            raise SpecError(f"sensitive feature {item!r} has no name")
        if name in out:
            raise SpecError(f"sensitive feature {name!r} given twice")
        if len(parts) == 1:
            out[name] = None
        elif len(parts) == 2 and parts[1] in ("categorical", "continuous"):
            out[name] = parts[1]
        elif len(parts) == 3:
            try:
                lo, hi = float(parts[1]), float(parts[2])
            except ValueError as err:
                raise SpecError(f"sensitive feature {item!r}: domain bounds must be numbers") from err
            out[name] = SensitiveSpec.continuous(name, lo, hi, bins)
        else:
            raise SpecError(
                f"cannot parse sensitive feature {item!r}; use NAME, NAME:categorical, "
                "NAME:continuous or NAME:LO:HI"
            )
    return out


def run(args: argparse.Namespace) -> int:
    """Run the audit described by parsed arguments; returns the exit code."""
    until = deadline(args)
    model = load_model(args)
    data = read_data(args, model)
    model.require_inputs("TestSGD")
    drop = columns(args.drop)
    missing = [c for c in drop if c not in data.columns]
    if missing:
        raise DataError(f"--drop names columns {missing} that are not in {args.data}")
    if args.outcome and args.outcome in data.columns and args.outcome not in drop:
        drop.append(args.outcome)
    data = data.drop(columns=drop)
    items = columns(args.sensitive)
    if args.text_column:
        sensitive: Any = items
    else:
        sensitive = parse_sensitive(items, args.bins)
        if model.inputs is not None:  # a circuit reads only its variables: keep those
            keep = set(model.inputs) | set(sensitive)
            data = data[[c for c in data.columns if c in keep]]
    sampler = None
    if args.sampler == "circuit":
        circuit = load_circuit(args.circuit) if args.circuit else model.circuit
        if circuit is None:
            raise OptionError("--sampler circuit needs a circuit: a circuit --model or --circuit FILE")
        sampler = circuit_sampler(circuit, data)
    result = audit(
        data, model, sensitive=sensitive, favorable=model.favorable, sup_thr=args.sup_thr,
        sample_thr=args.sample_thr, error_thr=args.error_thr, confidence=args.confidence, bins=args.bins,
        sampler=sampler, random_state=args.seed, text_column=args.text_column, interval=args.interval,
        deadline=until,
    )
    results = result.table
    hits = result.flagged(args.xi, mode=args.flag_mode) if args.xi is not None else results.iloc[:0]
    shown = results.head(args.limit) if args.limit else results
    with pd.option_context("display.max_colwidth", 80, "display.width", 200):
        text = shown[TABLE_COLUMNS].to_string(index=False, float_format=lambda x: f"{x:.4f}")
    text += f"\n\n{len(results)} rule sets scored"
    text += f"; {len(hits)} above xi={args.xi} ({args.flag_mode})" if args.xi is not None else ""
    if not result.complete:
        text += "\nINCOMPLETE (time limit): " + "; ".join(result.notes)
    emit(result, args.format, text)
    return exit_status(len(hits) > 0, result.complete)


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``testsgd`` sub-command to ``pcfair audit``."""
    p = subparsers.add_parser(
        "testsgd",
        help="TestSGD: find rule sets over sensitive features the model treats differently",
        description="Run TestSGD on a CSV file and a model: mine the frequent rule sets over the "
                    "sensitive features and rank them by group fairness score. Give DATA first.",
    )
    add_common(p, sensitive_help="sensitive features, comma-separated: NAME, NAME:categorical, "
               "NAME:continuous or NAME:LO:HI; with --text-column, term categories "
               "(gender,race,religion,age)")
    p.add_argument("--drop", default="", metavar="COLS", help="comma-separated columns to drop")
    p.add_argument("--text-column", help="audit text: the column with the documents")
    p.add_argument("--sup-thr", type=probability, default=0.05, help="support threshold theta (0.05)")
    p.add_argument("--sample-thr", type=positive_int, default=1000, help="minimum samples per group (1000)")
    p.add_argument("--error-thr", type=positive_float, default=0.05, help="margin of the score (0.05)")
    p.add_argument("--confidence", type=open_probability, default=0.95, help="per-group confidence (0.95)")
    p.add_argument("--bins", type=positive_int, default=10, help="bins of continuous features (10)")
    p.add_argument("--interval", choices=INTERVALS, default="wald", help="error margin (wald)")
    p.add_argument("--sampler", choices=("perturbation", "circuit"), default="perturbation",
                   help="how group members are drawn: the paper's perturbation, or a circuit")
    p.add_argument("--circuit", help="circuit file for --sampler circuit when the model is not one")
    p.add_argument("--xi", type=finite_float, help="tolerance: exit 1 when a rule set scores above it")
    p.add_argument("--flag-mode", choices=("point", "conservative"), default="point",
                   help="point: score > xi; conservative: score - margin > xi")
    p.add_argument("--limit", type=nonnegative_int, default=10, metavar="N",
                   help="rule sets printed in the table format (0: all; default 10)")
    p.set_defaults(func=run)
    return p


if __name__ == "__main__":  # pragma: no cover
    from pcfair.cli import main

    sys.exit(main(["audit", "testsgd", *sys.argv[1:]]))
