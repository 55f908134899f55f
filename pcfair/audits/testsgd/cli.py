"""``pcfair audit testsgd``: run TestSGD on a CSV file and a model.

The model is a Python ``module:callable`` (or ``path/to/file.py:callable``) naming a predict
function or an object with ``predict``, or a probabilistic-circuit file (``.psdd``, ``.json``,
``.jpc``, ``.sdd``) whose most probable ``--target`` value is the label.

Exit codes: 0 when no rule set scores above ``--xi`` (or ``--xi`` is not given), 1 when some
rule set does, 2 on bad input.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import os
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from pcfair.cli import (finite_float, load_model as _load_model_file, nonnegative_int,
                        open_probability, positive_float, positive_int, probability)
from pcfair.errors import DataError, SpecError

from .audit import audit, flagged
from pcfair.audits._model import as_model
from .circuit_sampler import PCConditionalSampler
from .specs import SensitiveSpec
from .scoring import INTERVALS

__all__ = ["register", "run", "parse_sensitive", "load_model"]

PC_SUFFIXES = (".psdd", ".json", ".jpc", ".sdd")
TABLE_COLUMNS = ["rule_set", "score", "p_group", "p_rest", "margin", "n_samples", "support"]


def parse_value(text: str) -> Any:
    """Read a label from the command line: an int, else a float, else True/False, else the text."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            continue
    if text in ("True", "true"):
        return True
    if text in ("False", "false"):
        return False
    return text


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


def _load_callable(spec: str) -> Any:
    module_part, _, attr = spec.rpartition(":")
    if not module_part or not attr:
        raise SpecError(f"model {spec!r} is not MODULE:CALLABLE or FILE.py:CALLABLE")
    if module_part.endswith(".py"):
        path = Path(module_part)
        if not path.is_file():
            raise FileNotFoundError(f"model file {module_part!r} does not exist")
        mod_spec = importlib.util.spec_from_file_location(path.stem, path)
        module = importlib.util.module_from_spec(mod_spec)
        mod_spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(module_part)
        except ImportError as err:
            raise DataError(f"cannot import model module {module_part!r}: {err}") from err
    obj = module
    for name in attr.split("."):
        if not hasattr(obj, name):
            raise DataError(f"module {module_part!r} has no attribute {attr!r}")
        obj = getattr(obj, name)
    return obj


def _load_circuit(path: str) -> Any:
    return _load_model_file(path)  # a file it cannot read is a FormatError (exit 2)


def load_model(spec: str, *, target: str | None) -> tuple[Any, Any]:
    """Resolve ``--model`` into ``(predict, circuit_or_None)``."""
    if Path(spec).suffix.lower() in PC_SUFFIXES or spec.endswith(tuple(s + ".gz" for s in PC_SUFFIXES)):
        if not os.path.exists(spec):
            raise FileNotFoundError(f"circuit file {spec!r} does not exist")
        if not target:
            raise SpecError("a circuit model needs --target, the class variable")
        circuit = _load_circuit(spec)
        return as_model(circuit, outcome=target), circuit
    obj = _load_callable(spec)
    predict = obj
    if not callable(predict) and not hasattr(obj, "predict"):
        raise DataError(f"model {spec!r} is neither callable nor has a predict method")
    return predict, None


def run(args: argparse.Namespace) -> int:
    """Run the audit described by parsed arguments; returns the exit code."""
    data = pd.read_csv(args.data)
    predict, circuit = load_model(args.model, target=args.target)
    drop = [c for c in (args.drop or []) if c]
    missing = [c for c in drop if c not in data.columns]
    if missing:
        raise DataError(f"--drop names columns {missing} that are not in {args.data}")
    if args.target and args.target in data.columns and args.target not in drop:
        drop.append(args.target)
    data = data.drop(columns=drop)
    if args.text_column:
        sensitive: Any = list(args.sensitive)
    else:
        sensitive = parse_sensitive(args.sensitive, args.bins)
    sampler = None
    if args.sampler == "pc":
        if args.circuit:
            circuit = _load_circuit(args.circuit)
        if circuit is None:
            raise SpecError("--sampler pc needs a circuit: a circuit --model or --circuit FILE")
        names = [str(n) for n in circuit.variables.names] if hasattr(circuit, "variables") else None
        columns = [c for c in data.columns if names is None or c in names]
        sampler = PCConditionalSampler(circuit, columns=columns)
    results = audit(
        data, predict, sensitive=sensitive, favorable=parse_value(args.favorable), sup_thr=args.sup_thr,
        sample_thr=args.sample_thr, error_thr=args.error_thr, confidence=args.confidence, bins=args.bins,
        sampler=sampler, random_state=args.seed, text_column=args.text_column, interval=args.interval,
    ).table
    hits = flagged(results, args.xi, mode=args.flag_mode) if args.xi is not None else results.iloc[:0]
    shown = results.head(args.top) if args.top else results
    if args.format == "json":
        payload = {
            "method": "testsgd",
            "n_rule_sets": int(len(results)),
            "xi": args.xi,
            "n_flagged": int(len(hits)),
            "results": json.loads(shown.to_json(orient="records")),
        }
        print(json.dumps(payload, indent=2))
    else:
        with pd.option_context("display.max_colwidth", 80, "display.width", 200):
            print(shown[TABLE_COLUMNS].to_string(index=False, float_format=lambda x: f"{x:.4f}"))
        print(f"\n{len(results)} rule sets scored", end="")
        print(f"; {len(hits)} above xi={args.xi} ({args.flag_mode})" if args.xi is not None else "")
    return 1 if len(hits) else 0


def register(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``testsgd`` sub-command to ``pcfair audit``."""
    p = subparsers.add_parser(
        "testsgd",
        help="TestSGD: find rule sets over sensitive features the model treats differently",
        description="Run TestSGD on a CSV file and a model: mine the frequent rule sets over the "
                    "sensitive features and rank them by group fairness score. Give DATA first.",
    )
    p.add_argument("data", help="CSV file with the dataset D (one column per model input)")
    p.add_argument("--model", required=True,
                   help="MODULE:CALLABLE, FILE.py:CALLABLE, or a circuit file (.psdd/.json/.jpc/.sdd)")
    p.add_argument("--sensitive", nargs="+", required=True, metavar="SPEC",
                   help="sensitive features: NAME, NAME:categorical, NAME:continuous or NAME:LO:HI; "
                        "with --text-column, term categories (gender race religion age)")
    p.add_argument("--target", help="class variable of a circuit model (dropped from the data)")
    p.add_argument("--drop", nargs="*", default=[], metavar="COL", help="columns to drop before auditing")
    p.add_argument("--text-column", help="audit text: the column with the documents")
    p.add_argument("--favorable", default="1", help="the favourable label (default 1)")
    p.add_argument("--sup-thr", type=probability, default=0.05, help="support threshold theta (0.05)")
    p.add_argument("--sample-thr", type=positive_int, default=1000, help="minimum samples per group (1000)")
    p.add_argument("--error-thr", type=positive_float, default=0.05, help="margin of the score (0.05)")
    p.add_argument("--confidence", type=open_probability, default=0.95, help="per-group confidence (0.95)")
    p.add_argument("--bins", type=positive_int, default=10, help="bins of continuous features (10)")
    p.add_argument("--interval", choices=INTERVALS, default="wald", help="error margin (wald)")
    p.add_argument("--sampler", choices=("perturbation", "pc"), default="perturbation",
                   help="how group members are drawn: the paper's perturbation, or a circuit")
    p.add_argument("--circuit", help="circuit file for --sampler pc when the model is not one")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="random seed (0)")
    p.add_argument("--xi", type=finite_float, help="tolerance: exit 1 when a rule set scores above it")
    p.add_argument("--flag-mode", choices=("point", "conservative"), default="point",
                   help="point: score > xi; conservative: score - margin > xi")
    p.add_argument("--top", type=nonnegative_int, default=10, help="rows to print (0: all)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=run)
    return p


if __name__ == "__main__":  # pragma: no cover
    from pcfair.cli import main

    sys.exit(main(["audit", "testsgd", *sys.argv[1:]]))
