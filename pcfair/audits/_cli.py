"""What the ``pcfair audit <method>`` sub-commands share: one vocabulary of options, one way
to read the data and the model, one way to print a result.

Every audit sub-command takes ``DATA.csv`` and

* ``--model MODEL``: a circuit file (``.json``, ``.psdd``, ``.jpc``, ``.sdd``, optionally
  ``.gz``), or ``MODULE:CALLABLE`` / ``FILE.py:CALLABLE`` naming a callable or an estimator;
* ``--prediction COL``: a column of stored predictions (instead of ``--model``);
* ``--sensitive A,B``: the sensitive columns; ``--outcome Y``: the true label (the variable a
  circuit model predicts; by default the decision a circuit's recipe names); ``--favorable V``:
  its favourable value (default: the one a circuit's recipe records, else 1 where the values
  are 0 and 1; a circuit whose decision has other values needs it named). Audits of a 0/1
  outcome (cbs, regression) read ``outcome == V`` as 1;
* ``--unknown error|missing``: with a circuit model that carries a recipe
  (:mod:`pcfair.tables.recipe`), the table is read by it (trimmed, binned, headerless files
  named), and a value the model never saw is an error naming the column or a missing cell;
* ``--seed``, ``--jobs`` where the method is random or parallel, and ``--format
  table|json|csv`` (json prints the result's ``to_dict()``, csv its ``to_frame()``);
* ``--time-limit SECONDS``: wall-clock seconds for the whole command (:mod:`pcfair.audits
  ._clock`). A run the limit stops keeps what it established and says it is incomplete
  (``complete: false`` and a note naming the limit in every format); it exits 1 when what
  it established is a finding, else 3 (undetermined), never 0 (:func:`exit_status`).

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

__all__ = ["EXIT_FOUND", "EXIT_INCOMPLETE", "EXIT_OK", "add_common", "columns", "deadline",
           "emit", "exit_status", "favorable_value", "load_model", "outcome_indicator",
           "parse_value", "read_data"]

EXIT_OK, EXIT_FOUND, EXIT_INCOMPLETE = 0, 1, 3  # pcfair.cli's (no import cycle)

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
               jobs_default: int = 1,
               sensitive_help: str = "comma-separated sensitive columns") -> None:
    """Add the shared options (see the module docstring) to an audit sub-command;
    ``jobs_default`` is ``--jobs``'s default (-1: every core)."""
    p.add_argument("data", metavar="DATA.csv", help="CSV file, one row per individual "
                   "(only empty cells are missing)")
    p.add_argument("--model", default=None, metavar="MODEL",
                   help="circuit file (.json/.psdd/.jpc/.sdd), or MODULE:CALLABLE / "
                        "FILE.py:CALLABLE (a callable or an estimator)")
    p.add_argument("--prediction", default=None, metavar="COL",
                   help="column of stored predictions (instead of --model)")
    p.add_argument("--sensitive", required=True, metavar="A,B", help=sensitive_help)
    p.add_argument("--outcome", default=None, metavar="Y",
                   help="true-label column; the variable a circuit model predicts (default: "
                        "the decision its recipe names)")
    p.add_argument("--favorable", default=None, metavar="V",
                   help="favourable value of the outcome (default: the model's recorded one, "
                        "else 1)")
    p.add_argument("--unknown", choices=("error", "missing"), default="error",
                   help="with a circuit model: a value it never saw is an error (default) or "
                        "a missing cell")
    if seed:
        p.add_argument("--seed", type=_nonnegative_int(), default=0, help="random seed (default 0)")
    if jobs:
        from pcfair.cli import job_count

        p.add_argument("--jobs", type=job_count, default=jobs_default,
                       help=f"worker processes (-1: every core; default {jobs_default}); the "
                            "result does not depend on it")
    from pcfair.cli import positive_float

    p.add_argument("--time-limit", type=positive_float, default=None, metavar="SECONDS",
                   help="stop after SECONDS of wall-clock time and report what was established, "
                        "marked incomplete (exit 3 unless it is a finding)")
    p.add_argument("--format", choices=FORMATS, default="table",
                   help="table (default), json (the result's to_dict) or csv (its table)")


def deadline(args: argparse.Namespace) -> float | None:
    """The command's deadline (a :func:`time.time` value) from ``--time-limit``, counted from
    this call (make it first thing in a sub-command's ``run``); None without a limit."""
    from pcfair._clock import deadline_from

    return deadline_from(args.time_limit)


def exit_status(found: bool, complete: bool) -> int:
    """The exit code of an audit: 1 for a finding (a time limit does not undo what was
    established), else 3 when a time limit cut the run (undetermined, not "nothing found"),
    else 0.

    Examples
    --------
    >>> exit_status(True, False), exit_status(False, False), exit_status(False, True)
    (1, 3, 0)
    """
    if found:
        return EXIT_FOUND
    return EXIT_OK if complete else EXIT_INCOMPLETE


def _nonnegative_int():
    from pcfair.cli import nonnegative_int

    return nonnegative_int


def read_data(args: argparse.Namespace, model: Model | None = None) -> pd.DataFrame:
    """The ``DATA.csv`` file, with only empty cells missing; for a circuit model with a recipe,
    read and converted by it (``--unknown`` decides what an unseen value is)."""
    from pcfair.tables.recipe import model_frame, read_table

    circuit = None if model is None else model.circuit
    if circuit is not None and circuit.recipe is not None:
        return model_frame(circuit, args.data, args.unknown)
    return read_table(args.data)


def outcome_indicator(data: pd.DataFrame, outcome: str, favorable: Any) -> pd.DataFrame:
    """``data`` with ``outcome`` read as 1 where it equals ``favorable`` and 0 elsewhere (a
    value written ``1`` on the command line matches ``1``, ``"1"`` and ``1.0``).

    Examples
    --------
    >>> outcome_indicator(pd.DataFrame({"y": [">50K", "<=50K"]}), "y", ">50K")["y"].tolist()
    [1, 0]
    """
    if outcome not in data.columns:
        raise VariableError(f"outcome column {outcome!r} is not in the data")
    values = data[outcome]
    if values.isna().any():
        raise DataError(f"outcome column {outcome!r} has {int(values.isna().sum())} missing "
                        "values")
    hit = values.astype(str) == str(favorable)
    if isinstance(favorable, (int, float)) and not isinstance(favorable, bool):
        numbers = pd.to_numeric(values, errors="coerce")
        hit |= numbers == favorable
    if not hit.any():
        shown = sorted(map(str, pd.unique(values)))[:10]
        raise OptionError(f"the favourable value {favorable!r} does not occur in the outcome "
                          f"column {outcome!r} (its values are {shown}); name it with "
                          "--favorable")
    return data.assign(**{outcome: hit.astype("int64")})


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


def favorable_value(args: argparse.Namespace) -> Any:
    """``--favorable`` as a value, or 1 when it is not given (a circuit model's own default is
    settled by :func:`load_model`)."""
    return 1 if args.favorable is None else parse_value(args.favorable)


def _circuit_model(args: argparse.Namespace) -> Model:
    """A circuit ``--model``: ``--outcome`` and ``--favorable`` default to its recipe's."""
    from pcfair.inference.quotient import implicit_favorable

    circuit = load_circuit(args.model)
    recipe = circuit.recipe
    if args.outcome is None and recipe is not None and recipe.decision is not None:
        args.outcome = recipe.decision
    if args.outcome is None:
        raise OptionError("a circuit model needs --outcome, the variable it predicts")
    if args.favorable is not None:
        favorable = parse_value(args.favorable)
    elif recipe is not None and recipe.decision == args.outcome and recipe.favorable is not None:
        favorable = recipe.favorable
    else:
        names = [str(n) for n in circuit.names]
        if args.outcome not in names:
            raise VariableError(f"outcome {args.outcome!r} is not a variable of the circuit "
                                f"({', '.join(names)})")
        domain = circuit.variables.domains[names.index(args.outcome)]
        code = implicit_favorable(domain) if len(domain) == 2 else None
        if code is None:
            raise OptionError(f"name the favourable value of {args.outcome!r} with --favorable: "
                              f"its values are {list(domain)}, not 0 and 1")
        favorable = domain[code]
    return as_model(circuit, outcome=args.outcome, favorable=favorable, unknown=args.unknown)


def load_model(args: argparse.Namespace) -> Model:
    """The audited model of ``--model`` / ``--prediction`` as a :class:`Model`."""
    if args.model is not None and args.prediction is not None:
        raise OptionError("give --model or --prediction, not both")
    if args.model is None and args.prediction is None:
        raise OptionError("give the audited model: --model MODEL or --prediction COL")
    if args.prediction is not None:
        return as_model(prediction=args.prediction, outcome=args.outcome,
                        favorable=favorable_value(args))
    if is_circuit_file(args.model):
        return _circuit_model(args)
    return as_model(_load_callable(args.model), outcome=args.outcome,
                    favorable=favorable_value(args))


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
