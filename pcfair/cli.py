"""The ``pcfair`` command line.

Sub-commands are grouped by job: circuit commands (``check``, ``marginal``...) live here; each
audit port registers its own ``pcfair audit <method>`` sub-command through a ``register``
function in ``pcfair/audits/<method>/cli.py``.

Exit codes (see :data:`EXIT_CODES`):

====  ==========================================================================================
0     success (for ``certify``: certified fair)
1     a discrimination pattern / fairness violation was found
2     bad input: a malformed or missing file, an unknown variable, an option value out of range;
      one line ``pcfair: error: ...`` on stderr (argparse usage errors also exit 2)
3     an incomplete search (time limit, sampling): no verdict
4     an internal error (an exception pcfair did not expect): one line naming the exception;
      please report it. ``--debug`` or ``PCFAIR_DEBUG=1`` prints the traceback
130   interrupted (Ctrl-C)
141   the output was closed before everything was written (``pcfair ... | head``)
====  ==========================================================================================

Numeric options are checked when parsed, by the type functions of this module
(:func:`positive_int`, :func:`fraction`, :func:`interval`...); the audit sub-commands use the
same ones. A value out of range exits 2 with a message naming the option.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import importlib.util
import math
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path

from pcfair.errors import OptionError, PCFairError

EXIT_OK = 0
EXIT_FOUND = 1
EXIT_BAD_INPUT = 2
EXIT_INCOMPLETE = 3
EXIT_INTERNAL_ERROR = 4
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports a process killed by it

#: Every exit code of ``pcfair`` and its meaning (also printed by ``pcfair --help``).
EXIT_CODES = {
    EXIT_OK: "success (certify: certified fair)",
    EXIT_FOUND: "a discrimination pattern / fairness violation was found",
    EXIT_BAD_INPUT: "bad input (file, variable, option value); one line on stderr",
    EXIT_INCOMPLETE: "the search stopped before a verdict (time limit, sampling, the lattice's "
                     "probability floor)",
    EXIT_INTERNAL_ERROR: "internal error: please report it (--debug or PCFAIR_DEBUG=1 "
                         "prints the traceback)",
    EXIT_INTERRUPTED: "interrupted (Ctrl-C)",
    EXIT_BROKEN_PIPE: "the output was closed early (e.g. piped into head)",
}

DEBUG_ENV = "PCFAIR_DEBUG"


# --- checked argparse types ---------------------------------------------------------------------

class OptionValueError(argparse.ArgumentTypeError):
    """Raised by the type functions below: the text is not a value the option accepts."""


def _checked(name: str, convert: Callable, ok: Callable, expected: str) -> Callable[[str], object]:
    def parse(text: str):
        try:
            value = convert(text)
        except (TypeError, ValueError, OverflowError):
            value = None
        if value is None or not ok(value):
            raise OptionValueError(f"must be {expected}, got {text!r}")
        return value

    parse.__name__ = parse.__qualname__ = name
    parse.__doc__ = f"argparse type: {expected}."
    return parse


def _int(text: str) -> int:
    return int(str(text).strip(), 10)


def _float(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None


#: An integer >= 1 (``--k``, ``--runs``...).
positive_int = _checked("positive_int", _int, lambda v: v >= 1, "a positive integer")
#: An integer >= 0 (``--seed``, ``--permutations``...).
nonnegative_int = _checked("nonnegative_int", _int, lambda v: v >= 0,
                           "a non-negative integer")
#: A process count: an integer >= 1, or -1 for every core (``--jobs``, ``--n-jobs``).
job_count = _checked("job_count", _int, lambda v: v >= 1 or v == -1,
                     "a positive integer or -1 (every core)")
#: A finite number.
finite_float = _checked("finite_float", _float, lambda v: True, "a finite number")
#: A finite number > 0 (``--time-limit`` seconds, scales).
positive_float = _checked("positive_float", _float, lambda v: v > 0, "a positive number")
#: A finite number >= 0 (pseudocounts, penalties).
nonnegative_float = _checked("nonnegative_float", _float, lambda v: v >= 0,
                             "a non-negative number")


def interval(low: float, high: float, *, low_open: bool = False, high_open: bool = True,
             name: str | None = None) -> Callable[[str], float]:
    """An argparse type accepting the numbers of an interval, by default ``[low, high)``.

    >>> interval(0, 1)("0.5"), interval(0, 1, low_open=True, high_open=False).__name__
    (0.5, 'interval(0, 1]')
    """
    text = f"{'(' if low_open else '['}{low:g}, {high:g}{')' if high_open else ']'}"

    def ok(v: float) -> bool:
        above = v > low if low_open else v >= low
        below = v < high if high_open else v <= high
        return above and below

    return _checked(name or f"interval{text}", _float, ok, f"a number in {text}")


#: A number in [0, 1): thresholds δ (``--delta``), held-out fractions.
fraction = interval(0, 1, name="fraction")
#: A number in [0, 1].
probability = interval(0, 1, high_open=False, name="probability")
#: A number in (0, 1): significance and confidence levels, failure probabilities.
open_probability = interval(0, 1, low_open=True, name="open_probability")


class _Parser(argparse.ArgumentParser):
    """``argparse`` whose checked types' errors become a one-line :class:`OptionError` (exit 2
    through :func:`main`, naming the option); every other usage error is argparse's own
    (``SystemExit(2)`` with the usage line)."""

    def error(self, message: str):
        exc = sys.exc_info()[1]
        if isinstance(exc, argparse.ArgumentError) and isinstance(exc.__context__,
                                                                  OptionValueError):
            raise OptionError(f"{exc.argument_name} {exc.__context__}") from None
        super().error(message)


# Audit ports: module under pcfair.audits whose ``cli.register(subparsers)`` adds a sub-command.
AUDIT_MODULES = ("cbs", "testsgd", "structured_regression", "avoir")


def _register_audits(audit_sub: argparse._SubParsersAction) -> None:
    for name in AUDIT_MODULES:
        modname = f"pcfair.audits.{name}.cli"
        if importlib.util.find_spec(f"pcfair.audits.{name}") is None:
            continue
        importlib.import_module(modname).register(audit_sub)


class _LazyAuditParser(_Parser):
    """``pcfair audit``: the methods' sub-commands are registered (their modules, which import
    pandas, scipy and scikit-learn, are imported) only when ``pcfair audit ...`` is parsed or
    its help is printed, so ``pcfair --help`` and the circuit commands start fast."""

    _audit_sub: argparse._SubParsersAction | None = None

    def _register(self) -> None:
        sub, self._audit_sub = self._audit_sub, None
        if sub is not None:
            _register_audits(sub)

    def parse_known_args(self, args=None, namespace=None):
        self._register()
        return super().parse_known_args(args, namespace)

    def format_help(self) -> str:
        self._register()
        return super().format_help()


def _add_audit_commands(subparsers: argparse._SubParsersAction, lazy: bool = False) -> None:
    parser_class = subparsers._parser_class
    if lazy:
        subparsers._parser_class = _LazyAuditParser
    try:
        audit = subparsers.add_parser("audit",
                                      help="audit a model's predictions with a ported method")
    finally:
        subparsers._parser_class = parser_class
    audit_sub = audit.add_subparsers(dest="method", metavar="METHOD", parser_class=_Parser)
    audit_sub.required = True
    if lazy:
        audit._audit_sub = audit_sub
    else:
        _register_audits(audit_sub)


def _model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="circuit file (.psdd, .sdd, .jpc, .json; optionally .gz)")
    p.add_argument("--vtree", help="vtree file (default: MODEL's sibling .vtree if present)")


def load_model(path, vtree=None):
    """:func:`pcfair.load` for the command line (its readers raise :class:`FormatError`, exit
    2, for any file they cannot read; anything else is a bug, exit 4)."""
    from pcfair.circuit.io import load

    return load(path, vtree=vtree)


def _load(args):
    return load_model(args.model, vtree=args.vtree)


def _cmd_check(args) -> int:
    import json

    circuit = _load(args)
    rep = circuit.properties()
    data = rep.to_dict()
    if circuit.recipe is not None:
        data["recipe"] = circuit.recipe.to_dict()
    if args.format == "json":
        print(json.dumps(data, indent=2, default=str))
        return EXIT_OK
    fmt = {True: "yes", False: "NO", None: "unknown"}
    print(f"model: {args.model}")
    print(f"nodes {data['num_nodes']}, edges {data['num_edges']}, variables {data['num_variables']}")
    for key in ("smooth", "decomposable", "deterministic", "structured_decomposable", "normalized"):
        extra = ""
        if key == "deterministic" and data["determinism_tier"]:
            extra = f" ({data['determinism_tier']})"
        print(f"  {key:<24} {fmt[data[key]]}{extra}")
    for prob in rep.problems:
        ce = f"  counterexample: {prob.counterexample}" if prob.counterexample else ""
        print(f"  problem [{prob.property}] node {prob.node}: {prob.message}{ce}")
    if circuit.recipe is not None:
        print("recipe (how raw rows become the model's values):")
        for line in circuit.recipe.describe() or ["nothing changed"]:
            print(f"  {line}")
    return EXIT_OK


def _parse_assignment(text: str) -> dict:
    out: dict = {}
    for part in filter(None, (t.strip() for t in text.split(","))):
        if "=" not in part:
            from pcfair.errors import VariableError

            raise VariableError(f"bad evidence item {part!r}: expected VAR=VALUE")
        k, v = (x.strip() for x in part.split("=", 1))
        out[k] = v
    return out


def _cmd_marginal(args) -> int:
    import json

    import numpy as np

    circuit = _load(args)
    from pcfair.tables.recipe import model_evidence

    raw = _parse_assignment(args.evidence or "")
    ev = model_evidence(circuit, raw, args.unknown)  # the recipe trims and bins raw values
    logp = float(circuit.log_marginal(ev)[0])
    if args.format == "json":
        print(json.dumps({"evidence": ev, "log_probability": logp,
                          "probability": float(np.exp(logp))}))
    else:
        aside = [k for k in raw if k not in ev]  # unknown values read as unobserved
        used = ",".join(f"{k}={v}" for k, v in raw.items() if k not in aside)
        print(f"P({used if aside else args.evidence or ''}) = {np.exp(logp):.12g}   "
              f"(log {logp:.12g})")
        if aside:
            print(f"note: {', '.join(f'{k}={raw[k]}' for k in aside)} set aside: a value the "
                  "model never saw, read as unobserved (--unknown missing)")
    return EXIT_OK


def _cmd_learn(args) -> int:
    import dataclasses
    import json
    import time

    import pandas as pd

    from pcfair.circuit.io import save
    from pcfair.errors import DataError
    from pcfair.inference.quotient import implicit_favorable
    from pcfair.learn.clt import learn_pc, train_valid_split
    from pcfair.tables.recipe import fit_recipe, read_table

    t0 = time.perf_counter()
    _check_output(args.out, (".json", ".psdd", ".jpc"))
    if args.fair and (args.sensitive is None or args.delta is None):
        raise OptionError("learn --fair needs --sensitive and --delta")
    if not args.fair and (args.sensitive is not None or args.delta is not None):
        raise OptionError("--sensitive and --delta are options of learn --fair")
    columns = None
    if args.columns is not None:
        columns = [c.strip() for c in args.columns.split(",")]
    elif args.no_header:
        raise OptionError("--no-header needs --columns (the names of the file's columns)")
    try:
        raw = read_table(args.data, columns=columns)  # only empty cells are missing
    except pd.errors.EmptyDataError as exc:
        raise DataError(f"cannot read {args.data}: {exc}") from None
    if args.fair and args.decision in _sensitive(args):
        raise OptionError(f"{args.decision!r} is the decision and cannot be sensitive too")
    drop = [] if args.drop is None else [c.strip() for c in args.drop.split(",") if c.strip()]
    df, recipe, trimmed = fit_recipe(raw, args.decision, bins=args.bins,
                                     strip=not args.keep_spaces, header=columns is None,
                                     favorable=args.favorable, drop=drop, missing=args.missing)
    if args.missing == "drop" and len(df) < len(raw):
        print(f"pcfair: {len(raw) - len(df):,} of {len(raw):,} rows dropped for a missing cell "
              "(--missing drop)", file=sys.stderr)
    if trimmed:
        print(f"pcfair: surrounding spaces trimmed from the values of {', '.join(trimmed)} "
              "(the model file records it; --keep-spaces keeps them)", file=sys.stderr)
    for column, why in recipe.dropped.items():
        if column not in drop:
            print(f"pcfair: column {column!r} dropped ({why}: it cannot tell anyone apart)",
                  file=sys.stderr)
    for column, value in recipe.missing_as.items():
        print(f"pcfair: missing cells of {column!r} are the value {value!r} (--missing "
              "category)", file=sys.stderr)
    values = sorted(pd.unique(df[args.decision].dropna()), key=str)
    if recipe.favorable is None and implicit_favorable(values) is None:
        shown = [str(v) for v in values]
        if args.fair:  # fair learning needs it now; plain learning only records it
            raise OptionError(f"name the favourable value of the decision {args.decision!r} "
                              f"with --favorable: its values are {shown}, not 0 and 1")
        print(f"pcfair: the decision {args.decision!r} has the values {shown}, not 0 and 1: "
              "later commands will ask for --favorable (give it here, and the model records "
              "it)", file=sys.stderr)
    if args.fair:
        missing = [c for c in _sensitive(args) if c not in df.columns]
        if missing:
            raise DataError(f"sensitive column(s) {missing} are not in the data (or were "
                            f"dropped); columns are {list(df.columns)}")
    edges = recipe.bins
    if args.verbose:
        print(f"read {args.data}: {len(df):,} rows, {df.shape[1]} columns"
              + "".join(f"; {c} binned into {len(e) - 1} quantile bin(s)"
                        for c, e in edges.items()), flush=True)
    train, test = (train_valid_split(df, args.test_fraction, random_state=args.seed)
                   if args.test_fraction > 0 else (df, None))
    progress = None  # a bar on stderr when it is a terminal
    if args.fair:
        from pcfair.learn.fair import learn_fair_pc

        sensitive = _sensitive(args)
        res = learn_fair_pc(train, args.decision, sensitive, args.delta,
                            structure=args.structure, k=args.k, max_iter=args.max_iter,
                            time_limit=args.time_limit, pseudocount=args.pseudocount,
                            random_state=args.seed, favorable=recipe.favorable,
                            decouple=args.decouple, fallback=args.fallback,
                            verbose=args.verbose, progress=progress)
        pc = res.circuit.with_recipe(dataclasses.replace(
            recipe, favorable=res.certificate.favorable, rows=len(train)))
        if res.fair is not True:
            marked = uncertified_path(args.out)
            save(pc, marked)
            witness = res.certificate.witness
            print(f"NOT CERTIFIED: {res.status}; the final model is "
                  f"{'unfair' if res.fair is False else 'not certified (incomplete run)'} "
                  f"at delta {args.delta}"
                  + (f" (a pattern left: {witness.text()}, Δ = {witness.score:+.6f})"
                     if witness is not None else "")
                  + f". It is written as {marked}, not {args.out}; list what is left with "
                  f"`pcfair patterns {marked} --decision {args.decision} --sensitive "
                  f"{args.sensitive} --delta {args.delta} --kind topk`. Next: "
                  f"{fair_learning_next_step(res.status, args)}", file=sys.stderr)
            if args.format == "json":
                print(json.dumps({"model": str(marked), "certified": False,
                                  "status": res.status, "rows": len(train),
                                  "witness": None if witness is None else witness.to_dict(),
                                  "log_likelihoods": {"train": res.stats["log_likelihood"]},
                                  "recipe": pc.recipe.to_dict()}, default=str))
            return EXIT_INCOMPLETE
    else:
        pc = learn_pc(train, args.decision, structure=args.structure,
                      pseudocount=args.pseudocount, random_state=args.seed, progress=progress)
        pc = pc.with_recipe(dataclasses.replace(recipe, rows=len(train)))
    save(pc, args.out)
    train_ll = float(pc.log_marginal(train).mean())
    test_ll = None if test is None else float(pc.log_marginal(test).mean())
    # what fairness cost: the MLE and the trivially fair baseline on the same rows
    costs = ({"train": res.stats["log_likelihood"],
              "test": None if test is None else res.log_likelihoods(test)} if args.fair else None)
    if args.format == "json":
        print(json.dumps({"model": str(args.out), "certified": True if args.fair else None,
                          "rows": len(train), "variables": pc.num_variables,
                          "nodes": pc.num_nodes, "train_log_likelihood": train_ll,
                          "test_log_likelihood": test_ll, "recipe": pc.recipe.to_dict(),
                          **({"status": res.status, "log_likelihoods": costs} if args.fair
                             else {})},
                         default=str))
        return EXIT_OK
    fair = (f"certified {args.delta}-fair for {', '.join(_sensitive(args))}"
            + (" (sensitive variables decoupled, λ = " + ", ".join(
                f"{k} {w:g}" for k, w in res.stats["decouple_lambda"].items()) + ")"
               if res.stats.get("decouple_lambda") else "") + "; "
            if args.fair else "")
    msg = (f"learned {pc} from {len(train)} rows; {fair}train log-likelihood "
           f"{train_ll:.6f} per row")
    if test is not None:
        msg += f"; test log-likelihood {test_ll:.6f} per row"
    print(msg + f"; saved {args.out}")
    if args.fair:
        for part, ll in costs.items():
            if ll is not None:
                print(f"{part} log-likelihood per row: result {ll['result']:.6f}, maximum "
                      f"likelihood {ll['mle']:.6f}, independent baseline (fair for every "
                      f"delta) {ll['independent']:.6f}")
        if res.stats["baseline_returned"]:
            print(f"the result is the independent baseline: {res.status}")
    if args.verbose:
        print(f"done in {time.perf_counter() - t0:.1f} s", flush=True)
    return EXIT_OK


def _add_learn_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "learn", help="learn a circuit from a CSV file (optionally a certified fair one)",
        description="Learn a smooth, decomposable, deterministic, structured-decomposable "
                    "circuit from a CSV file; with --fair, learn it subject to delta-fairness "
                    "and certify it (a model it cannot certify is written as "
                    "OUT.uncertified.json, with the next step to take, and it exits 3).")
    p.add_argument("data", help="CSV file with a header (else --no-header --columns); "
                                "complete, categorical columns (bin continuous ones with "
                                "--bins)")
    p.add_argument("--no-header", action="store_true",
                   help="the file has no header row: its columns are named by --columns")
    p.add_argument("--columns", default=None, metavar="A,B,...",
                   help="comma-separated names of the file's columns (a file without a "
                        "header; implies --no-header)")
    p.add_argument("--decision", required=True, help="the decision column")
    p.add_argument("--favorable", default=None,
                   help="the favourable decision value, recorded in the model so that later "
                        "commands need not name it (with --fair: required unless the "
                        "decision's values are 0 and 1)")
    p.add_argument("--keep-spaces", action="store_true",
                   help="keep surrounding spaces in names and values (by default they are "
                        "trimmed, and the model file records it)")
    p.add_argument("--drop", default=None, metavar="COLS",
                   help="comma-separated columns to leave out of the model (an ID or index "
                        "column, a free-text field); the model file records it")
    p.add_argument("--missing", choices=("error", "drop", "category"), default="error",
                   help="missing cells: refuse them (default), drop the rows that have one, "
                        "or read a missing cell as the value '(missing)' (recorded, so later "
                        "tables are read the same way)")
    p.add_argument("--structure", choices=("clt", "strudel", "naive_bayes"), default="clt")
    p.add_argument("--bins", type=positive_int, default=None, metavar="N",
                   help="cut every numeric column with more than 20 distinct values into N "
                        "quantile bins (the intervals become its values); without it such a "
                        "column is an error")
    p.add_argument("--seed", type=nonnegative_int, default=0,
                   help="seed of Strudel's validation split and of --test-fraction")
    p.add_argument("--pseudocount", type=nonnegative_float, default=1.0,
                   help="added to every count (default 1)")
    p.add_argument("--test-fraction", type=fraction, default=0.0,
                   help="hold out this fraction of rows, in [0, 1) (seeded by --seed), and "
                        "report its log-likelihood")
    p.add_argument("--out", required=True, help="output model (.json; .psdd for binary data)")
    p.add_argument("--format", choices=("table", "json"), default="table",
                   help="table (default: one line) or json (the model, rows, likelihoods, "
                        "recipe)")
    p.add_argument("--verbose", action="store_true",
                   help="print what is done (with --fair: one line per iteration)")
    fair = p.add_argument_group("fair learning (--fair)")
    fair.add_argument("--fair", action="store_true",
                      help="maximum likelihood subject to delta-fairness (learn_fair_pc); "
                           "a model it cannot certify is written as OUT.uncertified.json "
                           "with the next step, and it exits 3")
    fair.add_argument("--sensitive", default=None, help="comma-separated sensitive columns")
    fair.add_argument("--delta", type=open_probability, default=None,
                      help="discrimination threshold, in (0, 1)")
    fair.add_argument("--k", type=positive_int, default=10,
                      help="patterns constrained per iteration (default 10)")
    fair.add_argument("--max-iter", type=positive_int, default=30,
                      help="most constrained re-fits (default 30)")
    fair.add_argument("--time-limit", type=positive_float, default=None,
                      help="seconds for the fair-learning loop")
    fair.add_argument("--no-decouple", dest="decouple", action="store_false",
                      help="where the loop ends uncertified, do not decouple the sensitive "
                           "variables of a clt or naive_bayes model (pcfair.learn.decouple) "
                           "until a run certifies it")
    fair.add_argument("--no-fallback", dest="fallback", action="store_false",
                      help="never return the independent baseline (learn_independent_pc), "
                           "even where it is more likely than the certified model or "
                           "nothing else was certified")
    p.set_defaults(func=_cmd_learn)


class _EngineNames(Sequence):
    """The engine table's names (:data:`pcfair.patterns.engines.ENGINE_NAMES`), then
    ``extra``, read on first use: the table imports numpy, which ``pcfair --help`` must not
    (argparse reads ``choices`` only when it parses or formats the sub-command's help)."""

    def __init__(self, extra: tuple[str, ...] = ()) -> None:
        self._extra = extra

    def _names(self) -> tuple[str, ...]:
        from pcfair.patterns.engines import ENGINE_NAMES

        return (*ENGINE_NAMES, *self._extra)

    def __getitem__(self, i):
        return self._names()[i]

    def __len__(self) -> int:
        return len(self._names())


#: ``--engine`` choices of the exact queries (:mod:`pcfair.patterns.engines`).
ENGINE_CHOICES = _EngineNames()


def _pattern_args(p: argparse.ArgumentParser,
                  engines: Sequence[str] = ENGINE_CHOICES) -> None:
    _model_args(p)
    p.add_argument("--decision", required=True, help="the binary decision variable")
    p.add_argument("--sensitive", required=True, help="comma-separated sensitive variables")
    p.add_argument("--delta", type=fraction, required=True,
                   help="discrimination threshold, in [0, 1)")
    p.add_argument("--favorable", default=None,
                   help="the favourable decision value (needed unless the decision's values "
                        "are 0 and 1: then 1)")
    p.add_argument("--engine", choices=engines, default="auto", metavar="ENGINE",
                   help="auto (default: by cost, see --dry-run), lattice (every pattern; "
                        "'dense' is its old name), search (branch and bound) or a concrete "
                        "search: one of %(choices)s")
    p.add_argument("--time-limit", type=positive_float, default=None,
                   help="wall-clock seconds (an unfinished run is incomplete, never fair)")
    p.add_argument("--min-support", type=fraction, default=0.0, metavar="P",
                   help="set aside patterns with P(x, y) below P (counted separately)")
    p.add_argument("--data", default=None, metavar="FILE.csv",
                   help="a table of the model's variables (e.g. its training data, raw: the "
                        "model's recipe trims and bins it): each reported pattern shows how "
                        "many of its rows match it")
    _unknown_arg(p)


def _unknown_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--unknown", choices=("error", "missing"), default="error",  # recipe.UNKNOWN
                   help="a value the model never saw (an unseen category, a non-number in a "
                        "binned column): error (default, naming the column) or missing "
                        "(treated as unobserved)")


#: ``patterns --credible`` computes intervals for at most this many patterns.
CREDIBLE_MAX_PATTERNS = 10_000


def _credible_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--credible", type=open_probability, default=None, metavar="LEVEL",
                   help="credible intervals of the reported patterns' Δ and P(x,y) at LEVEL "
                        "(e.g. 0.95) from the parameter posterior, and (certify) the "
                        "probability that the model is delta-fair; needs the model's training "
                        "counts (pcfair learn stores them) or the training rows as --data")
    p.add_argument("--draws", type=positive_int, default=200, metavar="N",
                   help="posterior draws for --credible (default 200)")


def _posterior_rows(pc, data):
    """The training rows ``--credible`` needs: None when the model carries its counts."""
    if pc.counts is not None:
        return None
    if data is None:
        raise OptionError("--credible needs the model's training counts (models written by "
                          "pcfair learn carry them) or its training rows: --data TRAIN.csv")
    return data


def _model_data(pc, args):
    """``--data`` in the model's values (its recipe applied), or None; read before any work."""
    if getattr(args, "data", None) is None:
        return None
    from pcfair.tables.recipe import model_frame

    return model_frame(pc, args.data, args.unknown)


def _jobs_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", type=job_count, default=1,
                   help="local processes (-1: every core; default 1)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run the lattice engine's chunks on this Dask scheduler "
                        "(e.g. tcp://10.0.0.5:8786; needs pip install pcfair[distributed])")


def _check_output(path, suffixes: tuple[str, ...] | None = None) -> None:
    """Refuse an output path before any work: its folder must exist, and its suffix be one of
    ``suffixes`` (when given)."""
    if path is None:
        return
    out = Path(path)
    if not out.parent.is_dir():
        raise OptionError(f"cannot write {out}: the folder {out.parent} does not exist")
    if suffixes is not None and out.suffix.lower() not in suffixes:
        raise OptionError(f"cannot write {out}: expected a name ending in "
                          f"{' or '.join(suffixes)}")


def uncertified_path(out) -> Path:
    """Where ``learn --fair`` writes a model it could not certify: ``OUT`` with
    ``.uncertified`` before its suffixes (``m.json`` → ``m.uncertified.json``), so that it is
    never mistaken for, nor overwrites, a certified one."""
    out = Path(out)
    stem, dot, rest = out.name.partition(".")
    return out.with_name(f"{stem}.uncertified{dot}{rest}")


def fair_learning_next_step(status: str, args) -> str:
    """A concrete next step for a fair-learning run that ended with ``status``."""
    if "max_iter" in status:
        return (f"more re-fits and more patterns per re-fit (--max-iter {4 * args.max_iter} "
                f"--k {5 * args.k}; now {args.max_iter} and {args.k})")
    if "time_limit" in status or "incomplete" in status:
        return ("more time (--time-limit; now "
                f"{'none' if args.time_limit is None else f'{args.time_limit:g} s'})")
    if "rejected" in status:
        return ("a larger --pseudocount or --delta: a re-fit could not meet its constraints "
                "without losing more than the independent baseline")
    if "solver" in status:
        return ("a larger --delta or a simpler model (--structure naive_bayes): the solver "
                "cannot meet every constraint")
    return "a larger --delta, --max-iter or --time-limit"


def _sensitive(args) -> list[str]:
    return [s.strip() for s in args.sensitive.split(",") if s.strip()]


def _cmd_certify(args) -> int:
    import json

    from pcfair.patterns import certify

    if args.dry_run:
        return _dry_run(args)
    from pcfair.patterns.api import supported_witness
    from pcfair.patterns.results import floor_note
    from pcfair.patterns.support import SUPPORTED_WITNESS_SECONDS, rare_below, rare_text

    pc = _load(args)
    data = _model_data(pc, args)
    rare = rare_below(pc)
    cert = certify(pc, args.decision, _sensitive(args), args.delta,
                   favorable=args.favorable, engine=args.engine, time_limit=args.time_limit,
                   n_jobs=args.jobs, executor=args.scheduler, min_support=args.min_support,
                   data=data, exact_max=args.max)
    supported = supported_witness(pc, args.decision, _sensitive(args), args.delta, cert,
                                  min_support=args.min_support, favorable=args.favorable,
                                  engine=args.engine, n_jobs=args.jobs,
                                  executor=args.scheduler, data=data)
    chance = None
    if args.credible is not None:
        from pcfair.patterns.uncertainty import fairness_probability, with_intervals

        train = _posterior_rows(pc, data)
        draws = {"credible": args.credible, "draws": args.draws, "data": train,
                 "random_state": args.seed}
        cert = with_intervals(cert, pc, **draws)
        if supported is not None:
            supported = with_intervals(supported, pc, **draws)
        chance = fairness_probability(pc, args.decision, _sensitive(args), args.delta,
                                      draws=args.draws, favorable=args.favorable, data=train,
                                      engine=args.engine, time_limit=args.time_limit,
                                      random_state=args.seed, min_support=args.min_support,
                                      n_jobs=args.jobs, executor=args.scheduler)
    if args.verbose and "choice" in cert.stats:
        choice = cert.stats["choice"]
        print(f"engine {choice['engine']}: {choice['reason']}", file=sys.stderr)
        for name, est in choice["estimates"].items():
            cost = "unknown" if est["seconds"] is None else f"{est['seconds']:,.2f} s"
            print(f"  {name}: {cost} ({est['note']})", file=sys.stderr)
    if args.format == "json":
        out = cert.to_dict()
        if supported is not None:
            out["supported_witness"] = (None if supported.witness is None else
                                        supported.witness.to_dict())
        if chance is not None:
            out["fairness_probability"] = chance.to_dict()
        print(json.dumps(out, default=str))
    else:
        verdict = {True: f"FAIR: no discrimination pattern with |Δ| > {args.delta}",
                   False: f"UNFAIR: a discrimination pattern exists (|Δ| > {args.delta})",
                   None: "INCOMPLETE: the search stopped before a verdict"}[cert.fair]
        floor = floor_note(cert.stats)
        if cert.fair is None and floor is not None:
            verdict = "INCOMPLETE: the engine could not score every pattern"
        print(verdict)
        best = ("" if cert.max_abs_score is None else
                f", max |Δ| {'' if cert.max_abs_exact else '>= '}{cert.max_abs_score:.6g}")
        print(f"engine {cert.engine}, complete {cert.complete}{best}; favourable "
              f"{cert.decision}={cert.favorable}")
        if cert.stats.get("max_abs_note"):
            print(f"note: {cert.stats['max_abs_note']}")
        if cert.witness is not None:
            w = cert.witness
            rows = "" if w.rows is None else f", {w.rows:,} row(s) of {args.data}"
            print(f"witness: {w.text()}   Δ = {w.score:+.6f}, P(x,y) = {w.probability_text()}{rows}")
            if w.interval is not None:
                print(credible_text(w, args.delta))
        if chance is not None:
            print(chance.text())
            w = cert.witness
            if (w is not None and w.interval is not None and not w.interval["significant"]
                    and chance.robustly_unfair(w.interval["level"])):
                print(f"note: the witness is not significant by itself, but {chance.unfair} of "
                      f"{chance.draws} posterior draws have some pattern: the verdict (unfair) "
                      "is robust; --kind topk --credible L lists the significant patterns")
        if supported is not None:
            print(f"note: this witness describes P(x,y) = {cert.witness.probability_text(2)} of "
                  f"the population (under {rare:.2g}, {rare_text(pc)}); the certificate "
                  "covers every pattern, but --min-support P sets aside patterns this rare")
            w = supported.witness
            if w is not None:
                rows = "" if w.rows is None else f", {w.rows:,} row(s) of {args.data}"
                print(f"a witness with P(x,y) >= {rare:.2g}: {w.text()}   "
                      f"Δ = {w.score:+.6f}, P(x,y) = {w.probability_text()}{rows}")
                if w.interval is not None:
                    print(credible_text(w, args.delta))
            else:
                print(f"no witness with P(x,y) >= {rare:.2g} "
                      + ("exists" if supported.fair else
                         f"was found within {SUPPORTED_WITNESS_SECONDS:g} s"))
        if args.min_support and cert.stats.get("set_aside") is not None:
            print(f"set aside: {cert.stats['set_aside']:,} pattern(s) with P(x,y) < "
                  f"{args.min_support}")
        if floor is not None:
            print(f"note: {floor}")
    return EXIT_OK if cert.fair else (EXIT_FOUND if cert.fair is False else EXIT_INCOMPLETE)


def credible_text(pattern, delta: float) -> str:
    """One line on a pattern's credible intervals (:mod:`pcfair.patterns.uncertainty`)."""
    iv = pattern.interval
    level = f"{100 * iv['level']:g}%"
    (lo, hi), (plo, phi) = iv["score"], iv["probability"]
    verdict = ("significant: robust to the noise of the data" if iv["significant"] else
               f"not significant at {level}: it may be the noise of the data")
    return (f"  {level} credible interval of Δ [{lo:+.4f}, {hi:+.4f}], of P(x,y) "
            f"[{plo:.3g}, {phi:.3g}]; P(|Δ| > {delta:g}) = {iv['exceeds']:.3f} "
            f"({iv['draws']} posterior draws): {verdict}")


def _dry_run(args) -> int:
    """Print what ``--engine auto`` would weigh: each engine's estimate (the lattice's from
    its plan and a probe of chunks, the search's from a probe of half a second), the
    engine it would run, the lattice's memory; certify nothing. About a second."""
    import json

    from pcfair.patterns.engines import estimate_engines
    from pcfair.patterns.lattice import DEFAULT_MAX_BYTES

    est = estimate_engines(_load(args), args.decision, _sensitive(args), args.delta,
                           favorable=args.favorable, n_jobs=args.jobs,
                           min_support=args.min_support)
    if args.format == "json":
        print(json.dumps(est, default=str))
        return EXIT_OK
    print(f"auto would run: {est['engine']} ({est['reason']})")
    for name, e in est["estimates"].items():
        cost = ("does not apply" if not e["applies"] else "cost unknown" if e["seconds"] is None
                else f"about {e['seconds']:,.1f} s")
        print(f"  {name}: {cost}; {e['note']}")
    if est["lattice_points"] is not None:
        print(f"lattice: {est['lattice_points']:,} patterns; about "
              f"{est['chunk_bytes'] / 2**20:,.0f} MiB per chunk and worker")
        need = est["summary_bytes"]
        fits = "within" if need <= DEFAULT_MAX_BYTES else "over"
        print(f"maximal/minimal patterns (patterns --kind maximal|minimal, report): a bitmap of "
              f"{need / 2**20:,.2f} MiB for 3 thresholds, {fits} the "
              f"{DEFAULT_MAX_BYTES / 2**20:,.0f} MiB default budget")
    print(f"(estimated in {est['seconds']:.2f} s)")
    return EXIT_OK


def _check_distinct_rows(args, sampled: bool) -> None:
    """Refuse ``patterns --distinct-rows`` where it has no meaning (``sampled``: with
    ``--engine sample``), before any work."""
    if args.data is None:
        raise OptionError("--distinct-rows needs --data TABLE.csv: the table (e.g. the "
                          "training data) whose rows tell the patterns apart")
    if args.kind != "topk":
        raise OptionError(f"--distinct-rows lists a top-k: it goes with --kind topk, not "
                          f"--kind {args.kind}")
    if sampled or args.count:
        raise OptionError("--distinct-rows goes with an exact engine's listing, not "
                          + ("--engine sample" if sampled else "--count"))


def _cmd_patterns(args) -> int:
    import json

    from pcfair.patterns import find_patterns, sample_patterns
    from pcfair.patterns.engines import is_sampler
    from pcfair.patterns.results import floor_note
    from pcfair.patterns.support import rare_below, rare_text

    sampled = is_sampler(args.engine)
    if args.credible is not None and (args.out is not None or args.count):
        raise OptionError("--credible adds intervals to printed patterns; it does not go with "
                          "--out or --count")
    if args.distinct_rows:
        _check_distinct_rows(args, sampled)
    _check_output(args.out, (".csv",))
    pc = _load(args)
    data = _model_data(pc, args)
    if sampled:
        if args.kind not in ("all", "topk", "pareto") or args.rank_by != "discrimination":
            raise OptionError("--engine sample mines --kind all, topk or pareto ranked by "
                             "discrimination")
        ps = sample_patterns(pc, args.decision, _sensitive(args), args.delta,
                             kind=args.kind, k=args.k, favorable=args.favorable,
                             time_limit=args.time_limit,
                             runs=args.runs if args.time_limit is None else None,
                             random_state=args.seed, min_support=args.min_support)
        if args.data is not None:
            from pcfair.patterns.support import with_row_counts

            ps = with_row_counts(ps, pc, data)
    else:
        ps = find_patterns(pc, args.decision, _sensitive(args), args.delta,
                           kind=args.kind, k=args.k, rank_by=args.rank_by,
                           favorable=args.favorable, engine=args.engine,
                           time_limit=args.time_limit, count_only=args.count,
                           n_jobs=args.jobs, executor=args.scheduler, out=args.out,
                           min_support=args.min_support, data=data,
                           distinct_rows=args.distinct_rows)
        if args.out is not None:
            print(f"{ps.count} pattern(s) written to {args.out} (engine {ps.engine}, "
                  f"complete {ps.complete})")
            return EXIT_OK if ps.complete else EXIT_INCOMPLETE
    if args.credible is not None:
        from pcfair.patterns.uncertainty import with_intervals

        if len(ps.patterns) > CREDIBLE_MAX_PATTERNS:
            raise OptionError(f"--credible on {len(ps.patterns):,} patterns: ask for fewer "
                              f"(at most {CREDIBLE_MAX_PATTERNS:,}: --kind topk, pareto, or "
                              "--min-support)")
        ps = with_intervals(ps, pc, credible=args.credible, draws=args.draws,
                            data=_posterior_rows(pc, data), random_state=args.seed)
    if args.format == "json":
        print(json.dumps(ps.to_dict(include_patterns=not args.count), default=str))
    elif args.count:
        print(ps.count)
    elif args.format == "csv":
        print(ps.to_frame().drop(columns=["x_dict", "y_dict"]).to_csv(index=False), end="")
    else:
        frame = ps.to_frame().drop(columns=["x_dict", "y_dict"])
        if any(p.probability < 1e-300 for p in ps.patterns):  # below doubles: from the logs
            frame["probability"] = [p.probability_text() for p in ps.patterns]
        distinct = f"; distinct rows of {args.data}" if args.distinct_rows else ""
        print(f"{ps.count} {args.kind} pattern(s) at delta {args.delta} "
              f"(engine {ps.engine}, complete {ps.complete}; favourable "
              f"{ps.decision}={ps.favorable}{distinct})")
        shown = frame if not args.limit else frame.head(args.limit)
        if len(shown):
            print(shown.to_string(index=False))
        rare = rare_below(pc)
        if ps.patterns and ps.patterns[0].probability < rare and args.min_support < rare:
            print(f"note: the first pattern describes P(x,y) = "
                  f"{ps.patterns[0].probability_text(2)}, "
                  f"less than {rare_text(pc)}; --min-support {rare:.2g} lists only patterns "
                  "that describe somebody (the run above still covers every pattern)")
        if len(shown) < len(frame):
            print(f"... and {len(frame) - len(shown):,} more (--limit 0 prints them all; "
                  "--format csv or --out FILE.csv writes them)")
        if args.distinct_rows:
            print(f"note: distinct rows: {ps.stats['distinct_rows']['merged']:,} pattern(s) "
                  f"matching the same rows of {args.data} as one listed above them were left "
                  "out (patterns matching no row are kept)")
        floor = floor_note(ps.stats)
        if floor is not None:
            print(f"note: {floor}")
        elif not ps.complete and sampled:
            print("note: incomplete: the sampling miner lists the patterns it met, never a "
                  "proof that there are no others (an exact engine: --engine auto)")
        elif not ps.complete:
            limit = ("its time limit" if args.time_limit is None else
                     f"its time limit ({args.time_limit:g} s)")
            print(f"note: incomplete: the {ps.engine} engine stopped at {limit} before it had "
                  "looked at every pattern; the list holds those it found (more may exist: "
                  "raise --time-limit)")
        if any(p.divergence != p.divergence for p in ps.patterns):
            print("note: divergence NaN: not computed before the time limit (the patterns "
                  "and their Δ are exact; raise --time-limit for it)")
    return EXIT_OK if ps.complete else EXIT_INCOMPLETE


def _cmd_metrics(args) -> int:
    import json

    from pcfair.patterns import fairness_metrics

    m = fairness_metrics(_load(args), args.decision, _sensitive(args), favorable=args.favorable,
                         random_state=args.seed)
    if args.format == "json":
        print(json.dumps(m.to_dict()))
    else:
        print(f"DI ratio  {m.disparate_impact_ratio:.6f}  (min/max rate; four-fifths rule: "
              f"{'passes' if m.disparate_impact_ratio >= 0.8 else 'fails'})")
        print(f"DI  {m.di:.6f}  (the paper's 1 - ratio)\nSP  {m.sp:.6f}")
        for name, v in m.sp1.items():
            print(f"SP-1[{name}]  {v:.6f}")
        how = "exact" if m.eo_exact else f"sampled, standard error <= {m.eo_stderr:.4f}"
        print(f"EO  {m.eo:.6f}  ({how})")
    return EXIT_OK


def _cmd_report(args) -> int:
    from pcfair.reporting import report

    deltas = [x.strip() for x in args.deltas.split(",") if x.strip()]  # checked by report
    fmt = args.format
    if fmt is None:  # from the file name, else HTML
        from pcfair.reporting import format_of

        fmt = (format_of(args.out) if args.out is not None else None) or "html"
    pc = _load(args)
    data = _model_data(pc, args)
    if args.credible is not None:
        _posterior_rows(pc, data)  # counts or training rows, checked before the work
    text = report(pc, args.decision, _sensitive(args), args.delta,
                  favorable=args.favorable, deltas=deltas, k=args.k,
                  format=fmt, out=args.out, engine=args.engine,
                  time_limit=args.time_limit, sampled=args.sample_runs,
                  max_patterns_per_table=args.max_rows,
                  title=f"pcfair fairness report: {args.model}", random_state=args.seed,
                  n_jobs=args.jobs, executor=args.scheduler, min_support=args.min_support,
                  data=data, credible=args.credible, draws=args.draws)
    if args.out is None:
        print(text, end="")
    else:
        print(f"wrote {args.out}")
    return EXIT_OK


def _add_report_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="certify a circuit and write an HTML or markdown report")
    _pattern_args(p)
    _jobs_arg(p)
    p.add_argument("--out", help="write the report here (default: print it)")
    p.add_argument("--format", choices=("html", "markdown"), default=None,
                   help="html or markdown (default: from the --out file's suffix, else html)")
    p.add_argument("--deltas", default="0.01,0.05,0.1",
                   help="comma-separated thresholds of the pattern-count table")
    p.add_argument("--k", type=positive_int, default=10, help="size of the top-k tables (10)")
    p.add_argument("--max-rows", type=positive_int, default=25,
                   help="rows printed per pattern table (25; the caption gives the total)")
    p.add_argument("--sample-runs", type=positive_int, default=None,
                   help="also run the sampling miner this many times and show its front")
    p.add_argument("--seed", type=nonnegative_int, default=0,
                   help="seed of sampling and of --credible's draws (default 0)")
    _credible_args(p)
    p.set_defaults(func=_cmd_report)


def _add_circuit_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="structural properties of a circuit")
    _model_args(p)
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=_cmd_check)
    p = sub.add_parser("marginal", help="probability of (partial) evidence")
    _model_args(p)
    p.add_argument("--evidence", default="",
                   help='comma-separated VAR=VALUE, e.g. "1=0,3=1" (raw values such as '
                        '"age=39" are binned by the model\'s recipe)')
    _unknown_arg(p)
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=_cmd_marginal)
    p = sub.add_parser("certify", help="prove a circuit delta-fair or give a witness pattern")
    _pattern_args(p)
    _jobs_arg(p)
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--dry-run", action="store_true",
                   help="print each engine's estimated time, the engine auto would run and "
                        "the lattice's memory (about a second); certify nothing")
    p.add_argument("--max", action="store_true",
                   help="also establish the exact largest |Δ| (the lattice scans to the end "
                        "even after a witness; a search that stopped at one runs its top-1; "
                        "printed with >= where the time limit cut it)")
    p.add_argument("--verbose", action="store_true",
                   help="say which engine ran and why, with every engine's estimate")
    _credible_args(p)
    p.add_argument("--seed", type=nonnegative_int, default=0,
                   help="seed of --credible's posterior draws (default 0)")
    p.set_defaults(func=_cmd_certify)
    p = sub.add_parser("patterns", help="mine discrimination patterns and their summaries")
    _pattern_args(p, engines=_EngineNames(("sample",)))
    _jobs_arg(p)
    _credible_args(p)
    p.add_argument("--seed", type=nonnegative_int, default=0,
                   help="seed of --engine sample and of --credible's draws (default 0)")
    p.add_argument("--runs", type=positive_int, default=300,
                   help="runs of --engine sample without --time-limit (default 300)")
    p.add_argument("--kind", choices=("all", "topk", "maximal", "minimal", "pareto"),
                   default="all")
    p.add_argument("--k", type=positive_int, default=None, help="how many for --kind topk (10)")
    p.add_argument("--rank-by", choices=("discrimination", "divergence"),
                   default="discrimination")
    p.add_argument("--distinct-rows", action="store_true",
                   help="with --kind topk and --data: the k best patterns of which no two "
                        "match the same rows of the table (rephrasings of the same people "
                        "are left out, the higher-ranked one kept; patterns matching no row "
                        "are kept)")
    p.add_argument("--count", action="store_true", help="print only the number of patterns")
    p.add_argument("--out", default=None, metavar="FILE.csv",
                   help="with --kind all: stream every pattern to this CSV file (any number "
                        "of patterns, bounded memory)")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table")
    p.add_argument("--limit", type=nonnegative_int, default=50, metavar="N",
                   help="rows of the table format (default 50; 0: all); csv and json list "
                        "every pattern")
    p.set_defaults(func=_cmd_patterns)
    p = sub.add_parser("metrics", help="group-fairness metrics DI, SP, SP-1, EO of a circuit")
    _model_args(p)
    p.add_argument("--decision", required=True)
    p.add_argument("--sensitive", required=True, help="comma-separated sensitive variables")
    p.add_argument("--favorable", default=None,
                   help="the favourable decision value (needed unless the decision's values "
                        "are 0 and 1: then 1)")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="seed when EO must be sampled")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=_cmd_metrics)
    _add_learn_command(sub)


def _epilog() -> str:
    rows = "\n".join(f"  {code:<4} {text}" for code, text in EXIT_CODES.items())
    return f"exit codes:\n{rows}"


def _version() -> str:
    from pcfair import __version__

    return f"pcfair {__version__}"


def build_parser(*, lazy: bool = False) -> argparse.ArgumentParser:
    """Build the argument parser with every sub-command registered.

    ``lazy=True`` (what :func:`main` uses) registers the ``audit`` methods only when
    ``pcfair audit ...`` is parsed, so that ``pcfair --help`` does not import them.
    """
    parser = _Parser(
        prog="pcfair",
        description="Certify the fairness of probabilistic circuits and audit models.",
        epilog=_epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=_version())
    parser.add_argument("--debug", action="store_true",
                        help=f"print the traceback of an error (also: {DEBUG_ENV}=1)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    _add_circuit_commands(sub)
    _add_report_command(sub)
    _add_audit_commands(sub, lazy=lazy)
    return parser


def _exc_name(exc: BaseException) -> str:
    cls = type(exc)
    return cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def _debug_requested(argv: Sequence[str] | None) -> bool:
    env = os.environ.get(DEBUG_ENV, "").strip().lower()
    if env not in ("", "0", "false", "no"):
        return True
    return "--debug" in (sys.argv[1:] if argv is None else list(argv))


def _one_line_warnings(python_way):
    """A ``warnings.showwarning`` that shows pcfair's own warnings as one line on stderr
    (``pcfair: warning: ...``) and others by ``python_way``."""
    from pcfair.errors import PCFairWarning

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        if issubclass(category, PCFairWarning):
            print(f"pcfair: warning: {message}", file=sys.stderr if file is None else file)
        else:
            python_way(message, category, filename, lineno, file, line)

    return show


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code (see the module docstring).

    Errors pcfair reports on purpose (:class:`~pcfair.errors.PCFairError`), ``ValueError`` and
    ``OSError`` (a missing or unreadable file) are bad input: one line on stderr, exit 2. Any
    other exception is a bug: one line naming it, exit 4 (:data:`EXIT_INTERNAL_ERROR`);
    ``--debug`` or ``PCFAIR_DEBUG=1`` adds the traceback. Ctrl-C exits 130. A command that
    compiles numba kernels (the first run on a machine) says so on stderr, and how long it took,
    where a progress bar would show (:func:`pcfair._compile.compile_notice`).
    """
    debug = _debug_requested(argv)
    try:
        parser = build_parser(lazy=True)
        args = parser.parse_args(argv)
        from pcfair._compile import compile_notice

        with warnings.catch_warnings(), compile_notice():
            warnings.showwarning = _one_line_warnings(warnings.showwarning)
            return int(args.func(args))
    except KeyboardInterrupt:
        print("pcfair: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away (``pcfair patterns ... | head``)
        with contextlib.suppress(OSError, ValueError, AttributeError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE  # never 0: the verdict may not have been read
    except (PCFairError, ValueError, OSError) as exc:
        if debug:
            import traceback

            traceback.print_exc()
        print(f"pcfair: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # noqa: BLE001 - the contract: a code of its own, one line
        if debug:
            import traceback

            traceback.print_exc()
        print(f"pcfair: internal error: {_exc_name(exc)}: {_one_line(exc)} (this is a bug "
              f"in pcfair: please report it with the command line; --debug or {DEBUG_ENV}=1 "
              f"prints the traceback)", file=sys.stderr)
        return EXIT_INTERNAL_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
