"""The ``pcfair`` command line.

Sub-commands are grouped by job: circuit commands (``check``, ``marginal``...) live here; each
audit port registers its own ``pcfair audit <method>`` sub-command through a ``register``
function in ``pcfair/audits/<method>/cli.py``.

Exit codes: 0 success (for ``certify``: certified fair), 1 a pattern / violation found, 2 bad
input, 3 an incomplete search.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence

from pcfair.errors import PCFairError

EXIT_OK = 0
EXIT_FOUND = 1
EXIT_BAD_INPUT = 2
EXIT_INCOMPLETE = 3

# Audit ports: module under pcfair.audits whose ``cli.register(subparsers)`` adds a sub-command.
AUDIT_MODULES = ("cbs", "testsgd", "structured_regression", "avoir")


def _add_audit_commands(subparsers: argparse._SubParsersAction) -> None:
    audit = subparsers.add_parser("audit", help="audit a model's predictions with a ported method")
    audit_sub = audit.add_subparsers(dest="method", metavar="METHOD")
    audit_sub.required = True
    for name in AUDIT_MODULES:
        modname = f"pcfair.audits.{name}.cli"
        if importlib.util.find_spec(f"pcfair.audits.{name}") is None:
            continue
        importlib.import_module(modname).register(audit_sub)


def _model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="circuit file (.psdd, .sdd, .jpc, .json; optionally .gz)")
    p.add_argument("--vtree", help="vtree file (default: MODEL's sibling .vtree if present)")


def _load(args):
    from pcfair.circuit.io import load

    return load(args.model, vtree=args.vtree)


def _cmd_check(args) -> int:
    import json

    rep = _load(args).properties()
    data = rep.to_dict()
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
    ev = _parse_assignment(args.evidence or "")
    logp = float(circuit.log_marginal(ev)[0])
    if args.format == "json":
        print(json.dumps({"evidence": ev, "log_probability": logp,
                          "probability": float(np.exp(logp))}))
    else:
        print(f"P({args.evidence or ''}) = {np.exp(logp):.12g}   (log {logp:.12g})")
    return EXIT_OK


def _cmd_learn(args) -> int:
    import pandas as pd

    from pcfair.circuit.io import save
    from pcfair.learn.clt import learn_pc, train_valid_split

    try:
        df = pd.read_csv(args.data)
    except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        from pcfair.errors import DataError

        raise DataError(f"cannot read {args.data}: {exc}") from None
    train, test = (train_valid_split(df, args.test_fraction, random_state=args.seed)
                   if args.test_fraction > 0 else (df, None))
    pc = learn_pc(train, args.decision, structure=args.structure,
                  pseudocount=args.pseudocount, random_state=args.seed)
    save(pc, args.out)
    msg = (f"learned {pc} from {len(train)} rows; train log-likelihood "
           f"{float(pc.log_marginal(train).mean()):.6f} per row")
    if test is not None:
        msg += f"; test log-likelihood {float(pc.log_marginal(test).mean()):.6f} per row"
    print(msg + f"; saved {args.out}")
    return EXIT_OK


def _pattern_args(p: argparse.ArgumentParser,
                  engines: tuple[str, ...] = ("auto", "dense", "search")) -> None:
    _model_args(p)
    p.add_argument("--decision", required=True, help="the binary decision variable")
    p.add_argument("--sensitive", required=True, help="comma-separated sensitive variables")
    p.add_argument("--delta", type=float, required=True, help="discrimination threshold")
    p.add_argument("--favorable", default="1", help="the favourable decision value (default 1)")
    p.add_argument("--engine", choices=engines, default="auto")
    p.add_argument("--time-limit", type=float, default=None,
                   help="seconds for the search engine (an unfinished search is incomplete)")


def _jobs_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--jobs", type=int, default=1,
                   help="processes for the search engine (-1: every core; default 1)")


def _sensitive(args) -> list[str]:
    return [s.strip() for s in args.sensitive.split(",") if s.strip()]


def _cmd_certify(args) -> int:
    import json

    from pcfair.patterns import certify

    cert = certify(_load(args), args.decision, _sensitive(args), args.delta,
                   favorable=args.favorable, engine=args.engine, time_limit=args.time_limit,
                   n_jobs=args.jobs)
    if args.format == "json":
        print(json.dumps(cert.to_dict(), default=str))
    else:
        verdict = {True: f"FAIR: no discrimination pattern with |Δ| > {args.delta}",
                   False: f"UNFAIR: a discrimination pattern exists (|Δ| > {args.delta})",
                   None: "INCOMPLETE: the search stopped before a verdict"}[cert.fair]
        print(verdict)
        best = "" if cert.max_abs_score is None else f", max |Δ| {cert.max_abs_score:.6g}"
        print(f"engine {cert.engine}, complete {cert.complete}{best}")
        if cert.witness is not None:
            w = cert.witness
            print(f"witness: {w.text()}   Δ = {w.score:+.6f}, P(x,y) = {w.probability:.6g}")
    return EXIT_OK if cert.fair else (EXIT_FOUND if cert.fair is False else EXIT_INCOMPLETE)


def _cmd_patterns(args) -> int:
    import json

    from pcfair.patterns import find_patterns, sample_patterns

    if args.engine == "sample":
        if args.kind not in ("all", "topk", "pareto") or args.rank_by != "discrimination":
            raise ValueError("--engine sample mines --kind all, topk or pareto ranked by "
                             "discrimination")
        ps = sample_patterns(_load(args), args.decision, _sensitive(args), args.delta,
                             kind=args.kind, k=args.k, favorable=args.favorable,
                             time_limit=args.time_limit,
                             runs=args.runs if args.time_limit is None else None,
                             random_state=args.seed)
    else:
        ps = find_patterns(_load(args), args.decision, _sensitive(args), args.delta,
                           kind=args.kind, k=args.k, rank_by=args.rank_by,
                           favorable=args.favorable, engine=args.engine,
                           time_limit=args.time_limit, count_only=args.count,
                           n_jobs=args.jobs)
    if args.format == "json":
        print(json.dumps(ps.to_dict(include_patterns=not args.count), default=str))
    elif args.count:
        print(ps.count)
    elif args.format == "csv":
        print(ps.to_frame().drop(columns=["x_dict", "y_dict"]).to_csv(index=False), end="")
    else:
        frame = ps.to_frame().drop(columns=["x_dict", "y_dict"])
        print(f"{ps.count} {args.kind} pattern(s) at delta {args.delta} "
              f"(engine {ps.engine}, complete {ps.complete})")
        if len(frame):
            print(frame.to_string(index=False))
    return EXIT_OK if ps.complete else EXIT_INCOMPLETE


def _cmd_metrics(args) -> int:
    import json

    from pcfair.patterns import fairness_metrics

    m = fairness_metrics(_load(args), args.decision, _sensitive(args), favorable=args.favorable,
                         random_state=args.seed)
    if args.format == "json":
        print(json.dumps(m.to_dict()))
    else:
        print(f"DI  {m.di:.6f}\nSP  {m.sp:.6f}")
        for name, v in m.sp1.items():
            print(f"SP-1[{name}]  {v:.6f}")
        how = "exact" if m.eo_exact else f"sampled, standard error <= {m.eo_stderr:.4f}"
        print(f"EO  {m.eo:.6f}  ({how})")
    return EXIT_OK


def _cmd_report(args) -> int:
    from pcfair.reporting import report

    deltas = [x.strip() for x in args.deltas.split(",") if x.strip()]  # checked by report
    text = report(_load(args), args.decision, _sensitive(args), args.delta,
                  favorable=args.favorable, deltas=deltas, k=args.k,
                  format=args.format, out=args.out, engine=args.engine,
                  time_limit=args.time_limit, sampled=args.sample_runs,
                  max_patterns_per_table=args.max_rows,
                  title=f"pcfair fairness report: {args.model}", random_state=args.seed)
    if args.out is None:
        print(text, end="")
    else:
        print(f"wrote {args.out}")
    return EXIT_OK


def _add_report_command(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="certify a circuit and write an HTML or markdown report")
    _pattern_args(p)
    p.add_argument("--out", help="write the report here (default: print it)")
    p.add_argument("--format", choices=("html", "markdown"), default="html")
    p.add_argument("--deltas", default="0.01,0.05,0.1",
                   help="comma-separated thresholds of the pattern-count table")
    p.add_argument("--k", type=int, default=10, help="size of the top-k tables (10)")
    p.add_argument("--max-rows", type=int, default=25,
                   help="rows printed per pattern table (25; the caption gives the total)")
    p.add_argument("--sample-runs", type=int, default=None,
                   help="also run the sampling miner this many times and show its front")
    p.add_argument("--seed", type=int, default=0, help="seed of sampling (default 0)")
    p.set_defaults(func=_cmd_report)


def _add_circuit_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("check", help="structural properties of a circuit")
    _model_args(p)
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=_cmd_check)
    p = sub.add_parser("marginal", help="probability of (partial) evidence")
    _model_args(p)
    p.add_argument("--evidence", default="", help='comma-separated VAR=VALUE, e.g. "1=0,3=1"')
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=_cmd_marginal)
    p = sub.add_parser("certify", help="prove a circuit delta-fair or give a witness pattern")
    _pattern_args(p)
    _jobs_arg(p)
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=_cmd_certify)
    p = sub.add_parser("patterns", help="mine discrimination patterns and their summaries")
    _pattern_args(p, engines=("auto", "dense", "search", "sample"))
    _jobs_arg(p)
    p.add_argument("--seed", type=int, default=0, help="seed of --engine sample (default 0)")
    p.add_argument("--runs", type=int, default=300,
                   help="runs of --engine sample without --time-limit (default 300)")
    p.add_argument("--kind", choices=("all", "topk", "maximal", "minimal", "pareto"),
                   default="all")
    p.add_argument("--k", type=int, default=None, help="how many for --kind topk (10)")
    p.add_argument("--rank-by", choices=("discrimination", "divergence"),
                   default="discrimination")
    p.add_argument("--count", action="store_true", help="print only the number of patterns")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table")
    p.set_defaults(func=_cmd_patterns)
    p = sub.add_parser("metrics", help="group-fairness metrics DI, SP, SP-1, EO of a circuit")
    _model_args(p)
    p.add_argument("--decision", required=True)
    p.add_argument("--sensitive", required=True, help="comma-separated sensitive variables")
    p.add_argument("--favorable", default="1")
    p.add_argument("--seed", type=int, default=0, help="seed when EO must be sampled")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=_cmd_metrics)
    p = sub.add_parser("learn", help="learn a circuit from a CSV file")
    p.add_argument("data", help="CSV file with a header; complete, categorical columns")
    p.add_argument("--decision", required=True, help="the decision column")
    p.add_argument("--structure", choices=("clt", "strudel"), default="clt")
    p.add_argument("--seed", type=int, default=0, help="seed of Strudel's validation split")
    p.add_argument("--pseudocount", type=float, default=1.0)
    p.add_argument("--test-fraction", type=float, default=0.0,
                   help="hold out this fraction of rows (seeded by --seed) and report its "
                        "log-likelihood")
    p.add_argument("--out", required=True, help="output model (.json; .psdd for binary data)")
    p.set_defaults(func=_cmd_learn)


def build_parser() -> argparse.ArgumentParser:
    """Build the argument parser with every sub-command registered."""
    parser = argparse.ArgumentParser(
        prog="pcfair",
        description="Certify the fairness of probabilistic circuits and audit models.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    _add_circuit_commands(sub)
    _add_report_command(sub)
    _add_audit_commands(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except PCFairError as exc:
        print(f"pcfair: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (FileNotFoundError, IsADirectoryError, PermissionError, ValueError) as exc:
        # ValueError: an argument out of range (e.g. --delta 1.5) reported by the library
        print(f"pcfair: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
