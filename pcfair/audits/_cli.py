"""What the ``pcfair audit <method>`` sub-commands share: one vocabulary of options, one way
to read the data and the model, one way to print a result.

Every audit sub-command takes ``DATA.csv`` and

* ``--model MODEL``: a circuit file (``.json``, ``.psdd``, ``.jpc``, ``.sdd``, optionally
  ``.gz``), or ``MODULE:CALLABLE`` / ``FILE.py:CALLABLE`` naming a callable or an estimator;
* ``--prediction COL``: a column of stored predictions (instead of ``--model``);
* ``--sensitive A,B``: the sensitive columns; ``--outcome Y``: the true label (the variable a
  circuit model predicts); ``--favorable V``: its favourable value (default 1);
* ``--seed``, ``--jobs`` where the method is random or parallel, and ``--format
  table|json|csv`` (json prints the result's ``to_dict()``, csv its ``to_frame()``).

The data are read with only empty cells missing, so a category spelled ``None`` or ``NA``
stays a category (:func:`pcfair.patterns.support.read_table`).
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import pandas as pd

from pcfair.audits._model import Model, as_model
from pcfair.audits._result import AuditResult
from pcfair.errors import DataError, OptionError, VariableError

__all__ = ["add_common", "columns", "emit", "load_model", "parse_value", "read_data"]

FORMATS = ("table", "json", "csv")
CIRCUIT_SUFFIXES = (".psdd", ".json", ".jpc", ".sdd")


def columns(text: str | None) -> list[str]:
    """A comma-separated list of column names (empty items dropped)."""
    return [c.strip() for c in (text or "").split(",") if c.strip()]


def parse_value(text: str) -> Any:
    """A value from the command line: an int, else a float, else True/False, else the text.

    Examples
    --------
    >>> parse_value("1"), parse_value("0.5"), parse_value("true"), parse_value(">50K")
    (1, 0.5, True, '>50K')
    """
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


def add_common(p: argparse.ArgumentParser, *, seed: bool = True, jobs: bool = False,
               sensitive_help: str = "comma-separated sensitive columns") -> None:
    """Add the shared options (see the module docstring) to an audit sub-command."""
    p.add_argument("data", metavar="DATA.csv", help="CSV file, one row per individual "
                   "(only empty cells are missing)")
    p.add_argument("--model", default=None, metavar="MODEL",
                   help="circuit file (.json/.psdd/.jpc/.sdd), or MODULE:CALLABLE / "
                        "FILE.py:CALLABLE (a callable or an estimator)")
    p.add_argument("--prediction", default=None, metavar="COL",
                   help="column of stored predictions (instead of --model)")
    p.add_argument("--sensitive", required=True, metavar="A,B", help=sensitive_help)
    p.add_argument("--outcome", default=None, metavar="Y",
                   help="true-label column; the variable a circuit model predicts")
    p.add_argument("--favorable", default="1", metavar="V",
                   help="favourable value of the outcome (default 1)")
    if seed:
        p.add_argument("--seed", type=_nonnegative_int(), default=0, help="random seed (default 0)")
    if jobs:
        from pcfair.cli import job_count

        p.add_argument("--jobs", type=job_count, default=1,
                       help="worker processes (-1: every core; default 1)")
    p.add_argument("--format", choices=FORMATS, default="table",
                   help="table (default), json (the result's to_dict) or csv (its table)")


def _nonnegative_int():
    from pcfair.cli import nonnegative_int

    return nonnegative_int


def read_data(path: str) -> pd.DataFrame:
    """The CSV file, with only empty cells missing."""
    from pcfair.patterns.support import read_table

    return read_table(path)


def _load_callable(spec: str) -> Any:
    module_part, _, attr = spec.rpartition(":")
    if not module_part or not attr:
        raise OptionError(f"--model {spec!r} is not a circuit file, MODULE:CALLABLE or "
                          "FILE.py:CALLABLE")
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


def is_circuit_file(spec: str) -> bool:
    """True when ``spec`` names a circuit file by its suffix."""
    low = spec.lower()
    return low.endswith(CIRCUIT_SUFFIXES) or low.endswith(tuple(s + ".gz" for s in CIRCUIT_SUFFIXES))


def load_circuit(path: str):
    """A circuit file (a file the readers cannot read is a FormatError, exit 2)."""
    from pcfair.cli import load_model as load_file

    if not Path(path).exists():
        raise FileNotFoundError(f"circuit file {path!r} does not exist")
    return load_file(path)


def load_model(args: argparse.Namespace) -> Model:
    """The audited model of ``--model`` / ``--prediction`` as a :class:`Model`."""
    favorable = parse_value(args.favorable)
    if args.model is not None and args.prediction is not None:
        raise OptionError("give --model or --prediction, not both")
    if args.model is None and args.prediction is None:
        raise OptionError("give the audited model: --model MODEL or --prediction COL")
    if args.prediction is not None:
        return as_model(prediction=args.prediction, outcome=args.outcome, favorable=favorable)
    if is_circuit_file(args.model):
        if args.outcome is None:
            raise OptionError("a circuit model needs --outcome, the variable it predicts")
        return as_model(load_circuit(args.model), outcome=args.outcome, favorable=favorable)
    return as_model(_load_callable(args.model), outcome=args.outcome, favorable=favorable)


def sensitive_columns(args: argparse.Namespace, data: pd.DataFrame) -> list[str]:
    """The ``--sensitive`` columns, each checked to be in the data."""
    cols = columns(args.sensitive)
    if not cols:
        raise OptionError("--sensitive names no column")
    for c in cols:
        if c not in data.columns:
            raise VariableError(f"sensitive column {c!r} is not in {args.data}")
    return cols


def model_inputs(model: Model, data: pd.DataFrame, outcome: str | None) -> pd.DataFrame:
    """The columns of ``data`` the model is given: all but the outcome (and, for a model whose
    inputs are known, only those)."""
    drop = [outcome] if outcome is not None and outcome in data.columns else []
    frame = data.drop(columns=drop)
    if model.inputs is not None:
        frame = frame[[c for c in frame.columns if c in set(model.inputs)]]
    return frame


def emit(result: AuditResult, fmt: str, table_text: str | None = None) -> None:
    """Print a result: its ``to_dict()`` (json), its ``to_frame()`` (csv) or ``table_text``
    (table; default: the table as text)."""
    if fmt == "json":
        print(json.dumps(result.to_dict(), indent=2, allow_nan=False))
    elif fmt == "csv":
        result.to_frame().to_csv(sys.stdout, index=False)
    else:
        if table_text is None:
            with pd.option_context("display.max_rows", None, "display.width", 160,
                                   "display.max_colwidth", 80):
                table_text = result.to_frame().to_string(index=False)
        print(table_text)
