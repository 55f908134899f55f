"""Fair learning against its baselines on the binarized COMPAS, Adult and German tables.

For each table (``../shared/data`` through ``pcfair.datasets``), a seeded 80/20 train/test
split; on the training rows: the maximum-likelihood CLT, the "independent" baseline (sensitive
variables independent of the rest), the CLT fitted on reweighed ("repaired") rows, and, for each
δ, :func:`pcfair.learn_fair_pc`. Prints per dataset and δ: iterations, constrained patterns,
wall time, whether a complete run certified the fair model, mean log-likelihood per row (train
and test) and test accuracy of the classifier ``P(d | z) > 0.5`` for each model, and the number
of discrimination patterns of each model (dense engine; ``n/a`` where the lattice does not fit,
as for German, whose certificates come from the branch-and-bound engine). Usage::

    python benchmarks/bench_fair_learning.py [--data compas adult german raw-german
        raw-compas] [--delta 0.05 0.1] [--structure clt naive_bayes] [--k 10] [--max-iter 50]
        [--oracle-time-limit 30] [--certify-time-limit 300] [--time-limit 600]

Each ``--structure`` runs in turn on the same split: ``naive_bayes`` is LearnFairNB's model
class (Choi et al., AAAI-20: its fair naive Bayes, learned here by the same loop), so the
table puts the fair CLT, the fair naive Bayes and the independent baseline (fair for every
δ) side by side, measured in the same run.

German's lattice does not fit the dense engine, so its oracle and certificate use branch and
bound.

``--data raw-german`` runs the raw UCI table (``fetch_german()``, the 20 attributes, numeric
ones in 4 quantile bins over all rows, sensitive personal_status, sex, age and
foreign_worker, favourable "good"): the loop with ``--time-limit`` seconds (default 600), then
the decoupling of :mod:`pcfair.learn.decouple` if the loop ends uncertified, against the same
decoupling started from the MLE (``max_iter=0``), which shows what the loop's constraints add.
``--data raw-compas`` does the same on ProPublica's raw table (``fetch_compas()``: sex, age,
age_cat, race, the juvenile counts (capped at 3: "3 or more") and prior counts,
c_charge_degree and two_year_recid, numeric ones in 4 quantile bins; sensitive race, sex and age_cat; favourable 0, no re-offence).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
os.environ.setdefault("PCFAIR_DATA", str(SHARED))

from pcfair.datasets import fetch_compas, fetch_german, load_binarized  # noqa: E402
from pcfair.tables.data import prepare_frame  # noqa: E402
from pcfair.patterns import certify  # noqa: E402
from pcfair.errors import PCFairError  # noqa: E402
from pcfair.inference.marginals import log_marginals  # noqa: E402
from pcfair.learn.clt import train_valid_split  # noqa: E402
from pcfair.learn.fair import (  # noqa: E402
    learn_fair_pc,
    learn_independent_pc,
    learn_mle_pc,
    learn_repaired_pc,
)
from pcfair.patterns import find_patterns  # noqa: E402


def accuracy(circuit, frame, target: str, favorable) -> float:
    """Accuracy of ``P(d | z) > 0.5`` (``d`` the favourable value, ``z`` every other column)."""
    ev = circuit.evidence_matrix(frame)  # value codes
    d = circuit.variables.index(target)
    fav = circuit.variables.value_index(d, favorable)
    truth = ev[:, d] == fav
    ev[:, d] = -1
    log_z = log_marginals(circuit, ev)
    ev[:, d] = fav
    predicted = np.exp(log_marginals(circuit, ev) - log_z) > 0.5
    return float(np.mean(predicted == truth))


def count(circuit, ds, delta: float) -> str:
    """Number of discrimination patterns (dense engine), or ``n/a`` when it does not fit."""
    try:
        return str(find_patterns(circuit, ds.target, ds.sensitive, delta, engine="lattice",
                                 count_only=True, favorable=ds.favorable).count)
    except PCFairError:
        return "n/a"


RAW_GERMAN_SENSITIVE = ["personal_status", "sex", "age", "foreign_worker"]
RAW_COMPAS_COLUMNS = ["sex", "age", "age_cat", "race", "juv_fel_count", "juv_misd_count",
                      "juv_other_count", "priors_count", "c_charge_degree", "two_year_recid"]


def raw_table(name: str):
    """``(frame, target, sensitive, favourable)`` of a raw table (module docstring)."""
    if name == "raw-german":
        ds = fetch_german()
        frame, sens = ds.frame, RAW_GERMAN_SENSITIVE
    else:
        ds = fetch_compas()
        frame, sens = ds.frame[RAW_COMPAS_COLUMNS].dropna(), list(ds.sensitive)
        for c in ("juv_fel_count", "juv_misd_count", "juv_other_count"):  # 0, 1, 2, 3 or more
            frame[c] = frame[c].clip(upper=3)
    frame, _ = prepare_frame(frame, ds.target, 4)
    return frame, ds.target, sens, ds.favorable


def raw_run(args, name: str) -> None:
    """The raw German or raw COMPAS run (module docstring)."""
    frame, target, sens, fav = raw_table(name)
    train, test = train_valid_split(frame, 0.2, random_state=args.seed)
    models = {"mle": learn_mle_pc(train, target),
              "independent": learn_independent_pc(train, target, sens),
              "repaired": learn_repaired_pc(train, target, sens)}
    print(f"\n== {name} (clt): {len(train)} train / {len(test)} test rows, {frame.shape[1]} "
          f"columns, sensitive {sens}")
    for delta in args.delta:
        runs = {}
        for label, max_iter, limit in (("decoupled MLE", 0, None),
                                       ("fair", args.max_iter, args.time_limit)):
            t = time.perf_counter()
            res = learn_fair_pc(train, target, sens, delta, k=args.k, max_iter=max_iter,
                                time_limit=limit, favorable=fav,
                                oracle_time_limit=args.oracle_time_limit,
                                certify_time_limit=args.certify_time_limit)
            wall = time.perf_counter() - t
            runs[label] = res.circuit
            steps = res.decoupling
            print(f"\n-- delta={delta}, {label}: {res.iterations} re-fits, "
                  f"{res.num_constraints} patterns constrained, {wall:.1f} s; certified fair: "
                  f"{res.fair} (complete={res.certificate.complete}); {res.status}")
            print("   train LL per row: " + ", ".join(
                f"{k} {v:.4f}" for k, v in res.stats["log_likelihood"].items()))
            hist = res.history
            print(f"   loop: {len(hist)} oracle calls, {hist['seconds'].iloc[-1]:.1f} s, "
                  f"largest |Δ| found per call "
                  f"{', '.join(f'{v:.3f}' for v in hist['max_abs_score'])}")
            if not steps.empty:
                fair = steps[steps["fair"].astype(bool)]
                print(f"   decoupling: {len(steps)} certifications "
                      f"({int((~steps['complete'].astype(bool)).sum())} cut at their limit), "
                      f"{steps['seconds'].sum():.1f} s, {len(fair)} certified; weights "
                      f"{res.stats['decouple_lambda']}; train LL fully decoupled "
                      f"{steps['log_likelihood'].iloc[0]:.4f}, chosen "
                      f"{fair['log_likelihood'].iloc[-1]:.4f}")
        print(f"{'model':<14} {'train LL':>9} {'test LL':>9} {'test acc':>9} {'certified':>10}")
        for label, pc in {**models, **runs}.items():
            cert = certify(pc, target, sens, delta, favorable=fav, time_limit=60)
            print(f"{label:<14} {pc.log_marginal(train).mean():>9.4f} "
                  f"{pc.log_marginal(test).mean():>9.4f} "
                  f"{accuracy(pc, test, target, fav):>9.4f} "
                  f"{str(cert.fair) + ('' if cert.complete else ' (cut)'):>10}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", nargs="+", default=["compas", "adult", "german"])
    ap.add_argument("--delta", nargs="+", type=float, default=[0.05, 0.1])
    ap.add_argument("--structure", nargs="+", default=["clt", "naive_bayes"],
                    choices=["clt", "strudel", "naive_bayes"])
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--max-iter", type=int, default=50)
    ap.add_argument("--margin", type=float, default=None,
                    help="constraints are |Δ| <= δ - margin (default 0.05 δ)")
    ap.add_argument("--oracle-time-limit", type=float, default=30.0,
                    help="seconds per branch-and-bound oracle run (German)")
    ap.add_argument("--certify-time-limit", type=float, default=300.0,
                    help="seconds for the final branch-and-bound certification (German)")
    ap.add_argument("--time-limit", type=float, default=600.0,
                    help="seconds of the fair-learning loop (raw German)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    for name in args.data:
        if name in ("raw-german", "raw-compas"):
            raw_run(args, name)
            continue
        ds = load_binarized(name)
        train, test = train_valid_split(ds.frame, 0.2, random_state=args.seed)
        summary: dict = {delta: {} for delta in args.delta}
        for st in args.structure:
            t = time.perf_counter()
            models = {"mle": learn_mle_pc(train, ds.target, st, random_state=args.seed),
                      "independent": learn_independent_pc(train, ds.target, ds.sensitive, st),
                      "repaired": learn_repaired_pc(train, ds.target, ds.sensitive, st,
                                                    random_state=args.seed)}
            print(f"\n== {name} ({st}): {len(train)} train / {len(test)} test rows, "
                  f"sensitive {ds.sensitive}; baselines in {time.perf_counter() - t:.2f} s")
            for delta in args.delta:
                t = time.perf_counter()
                res = learn_fair_pc(train, ds.target, ds.sensitive, delta, st, k=args.k,
                                    random_state=args.seed,
                                    max_iter=args.max_iter, margin=args.margin,
                                    favorable=ds.favorable,
                                    oracle_time_limit=args.oracle_time_limit,
                                    certify_time_limit=args.certify_time_limit)
                wall = time.perf_counter() - t
                cert = res.certificate
                print(f"\n-- delta={delta}: {res.iterations} iterations, "
                      f"{res.num_constraints} patterns constrained, {wall:.1f} s; certified "
                      f"fair: {res.fair} ({cert.engine}, complete={cert.complete}, "
                      f"{cert.stats.get('seconds', float('nan')):.1f} s); {res.status}")
                print(f"{'model':<12} {'train LL':>9} {'test LL':>9} {'test acc':>9} "
                      f"{'patterns':>10}")
                for label, pc in {**models, "fair": res.circuit}.items():
                    row = (pc.log_marginal(train).mean(), pc.log_marginal(test).mean(),
                           accuracy(pc, test, ds.target, ds.favorable))
                    if label != "repaired":
                        summary[delta][f"{label} ({st})"] = row
                    print(f"{label:<12} {row[0]:>9.4f} {row[1]:>9.4f} {row[2]:>9.4f} "
                          f"{count(pc, ds, delta):>10}")
                hist = res.history
                print("history (iteration: train LL, constraints, patterns found / "
                      "remaining, s): "
                      + "; ".join(f"{int(r.iteration)}: {r.log_likelihood:.4f}, "
                                  f"{int(r.n_constraints)}, {int(r.patterns_found)}/"
                                  + ("-" if np.isnan(r.patterns_remaining)
                                     else f"{int(r.patterns_remaining)}")
                                  + f", {r.seconds:.0f}" for r in hist.itertuples()))
        for delta, rows in summary.items():
            print(f"\n== {name}, delta={delta}, side by side (fair (naive_bayes) is "
                  f"LearnFairNB's fair naive Bayes):")
            print(f"{'model':<26} {'train LL':>9} {'test LL':>9} {'test acc':>9}")
            for label, (tr, te, acc) in rows.items():
                print(f"{label:<26} {tr:>9.4f} {te:>9.4f} {acc:>9.4f}")

if __name__ == "__main__":
    main()
