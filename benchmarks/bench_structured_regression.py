"""Benchmark: accuracy and interval coverage of structured regression on semi-synthetic data.

For each of the paper's four generating models (Section 5.2: model_age, model_expl,
model_age+rc, model_age*rc) it draws evaluation sets of n = 5000 from a fixed 75k-row
diabetes-like population (``make_diabetes_like_population`` of ``tests/audits/_case_studies.py``;
the Diabetes 130-US data are not shipped) and prints, measured in the same run:

* MAE against the population truth by group-size bucket, for the standard, pooled,
  James-Stein, empirical-Bayes and structured estimates;
* average coverage of the standard (Eq. 7), rBLPR and plain lasso-percentile intervals at
  80/90/95%, and the mean rBLPR width relative to Eq. 7;
* seconds per structured-regression fit (CV included) and per rBLPR bootstrap;
* the goodness-of-fit p-values of the paper's Table 2 (median over draws, and the share of
  draws with p < 0.05) next to the paper's printed values.

Run: ``.venv/bin/python benchmarks/bench_structured_regression.py [--draws 20] [--quick]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "audits"))
from _case_studies import add_semi_synthetic_output, make_diabetes_like_population  # noqa: E402

from pcfair.audits.structured_regression import (
    stratified_draw,
    StructuredRegression,
    true_group_metric,
)
from pcfair.audits.structured_regression.gof import gof_table
from pcfair.audits.structured_regression.evaluation import prepare_evaluation

SENS = ["race", "age", "gender"]
EXPL = ["number_inpatient", "number_outpatient", "number_emergency", "number_diagnoses", "chf"]
MODELS = ("age", "expl", "age+rc", "age*rc")
ESTIMATORS = ("standard", "pooled", "james_stein", "empirical_bayes", "structured")
BUCKETS = ((0, 10, "n<=10"), (11, 25, "11-25"), (26, 100, "26-100"), (101, 10**9, ">100"))
# Table 2 of the paper: (reduced, full) feature sets and the printed p-values per model
TABLE2 = (
    ("∅", "expl"),
    ("∅", "age"),
    ("expl", "expl+age"),
    ("expl", "expl+race"),
    ("expl+age", "expl+age+race"),
    ("expl+race", "expl+age+race"),
    ("expl+age+race", "expl+age+race+age*race"),
)
TABLE2_PAPER = {
    "age": (0.025, 0.000, 0.000, 0.487, 0.153, 0.000, 0.576),
    "expl": (0.000, 0.000, 0.323, 0.366, 0.608, 0.551, 0.000),
    "age+rc": (0.013, 0.661, 0.142, 0.000, 0.000, 0.000, 0.089),
    "age*rc": (0.003, 0.000, 0.000, 0.040, 0.015, 0.000, 0.002),
}


def run_gof(model: str, pop: pd.DataFrame, args) -> pd.DataFrame:
    """Table 2 on ``args.gof_draws`` evaluation sets: paper value, port median p, share p < 0.05."""
    data = add_semi_synthetic_output(pop, model, random_state=args.seed + 1)
    pvalues = []
    for d in range(args.gof_draws):
        draw = stratified_draw(data, SENS, args.n, random_state=args.seed + 5000 + d)
        ev = prepare_evaluation(
            draw, "mean", sensitive=SENS, outcome="readmitted", output="y_hat", explanatory=EXPL, random_state=d
        )
        pvalues.append(gof_table(ev, TABLE2)["p"])
    p = pd.concat(pvalues, axis=1)
    return pd.DataFrame(
        {"paper p": TABLE2_PAPER[model], "port median p": p.median(axis=1), "share p<0.05": (p < 0.05).mean(axis=1)},
        index=p.index,
    )


def run_model(model: str, pop: pd.DataFrame, args) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    data = add_semi_synthetic_output(pop, model, random_state=args.seed + 1)
    truth = true_group_metric(data, SENS, output="y_hat")
    levels = [float(v) for v in args.levels.split(",")]
    tables, cover, widths = [], [], []
    fit_s, ci_s = [], []
    for d in range(args.draws):
        draw = stratified_draw(data, SENS, args.n, random_state=args.seed + 100 + d)
        t0 = time.perf_counter()
        sr = StructuredRegression(
            SENS, explanatory=EXPL, outcome="readmitted", output="y_hat", random_state=args.seed + d
        ).fit(draw, "mean")
        fit_s.append(time.perf_counter() - t0)
        table = sr.baseline_estimates()
        table["truth"] = truth
        tables.append(table)
        t0 = time.perf_counter()
        sr.confint(levels[0], B=args.B)
        ci_s.append(time.perf_counter() - t0)
        for lv in levels:
            std = sr.standard_confint(lv)
            ok = (std["status"] == "ok").to_numpy()
            for name, ci in (
                ("standard (Eq. 7)", std),
                ("rBLPR", sr.confint(lv, B=args.B)),
                ("lasso percentile", sr.confint(lv, B=args.B, method="lasso_percentile")),
            ):
                hit = ((ci["lower"] <= truth) & (truth <= ci["upper"])).to_numpy()
                cover.append({"interval": name, "level": lv, "coverage": hit[ok].mean()})
            rb = sr.confint(lv, B=args.B)
            widths.append(((rb["upper"] - rb["lower"]) / (std["upper"] - std["lower"])).to_numpy()[ok].mean())
    all_ = pd.concat(tables)
    ok = all_["status"] == "ok"
    mae = {}
    for lo, hi, label in BUCKETS:
        mask = ok & all_["n"].between(lo, hi)
        mae[f"{label} ({int(mask.sum())})"] = {c: (all_.loc[mask, c] - all_.loc[mask, "truth"]).abs().mean() for c in ESTIMATORS}
    for label, mask in (("small n<=25", ok & (all_["n"] <= 25)), ("large n>25", ok & (all_["n"] > 25)), ("all", ok)):
        mae[f"{label} ({int(mask.sum())})"] = {c: (all_.loc[mask, c] - all_.loc[mask, "truth"]).abs().mean() for c in ESTIMATORS}
    cov = pd.DataFrame(cover).groupby(["interval", "level"])["coverage"].mean().unstack("level")
    timing = {"fit_s": float(np.median(fit_s)), "rblpr_s": float(np.median(ci_s)), "rel_width_95": float(np.mean(widths))}
    return pd.DataFrame(mae).T, cov, timing


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=20, help="evaluation sets per model (paper: 20)")
    parser.add_argument("--n", type=int, default=5000, help="rows per evaluation set (paper: 5000)")
    parser.add_argument("--population", type=int, default=75_000, help="population rows")
    parser.add_argument("--B", type=int, default=100, help="bootstrap replicates of the intervals")
    parser.add_argument("--levels", default="0.8,0.9,0.95")
    parser.add_argument("--models", default=",".join(MODELS))
    parser.add_argument("--gof-draws", type=int, default=20, help="evaluation sets for the Table 2 F-tests")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="3 draws per model (smoke run)")
    args = parser.parse_args(argv)
    if args.quick:
        args.draws = 3
        args.gof_draws = 3
    pop = make_diabetes_like_population(args.population, random_state=args.seed)
    print(f"population: {len(pop)} rows; {args.draws} draws of n={args.n} per model; B={args.B}\n")
    pd.set_option("display.width", 140)
    for model in args.models.split(","):
        t0 = time.perf_counter()
        mae, cov, timing = run_model(model.strip(), pop, args)
        print(f"=== model_{model}  ({time.perf_counter() - t0:.1f} s) ===")
        print("MAE by group size (number of group-draws in brackets):")
        print(mae.round(4).to_string())
        ratio = mae.filter(like="small", axis=0)
        small = ratio.iloc[0]
        print(
            f"small groups: structured / standard = {small['structured'] / small['standard']:.3f}, "
            f"structured / min(JS, EB) = {small['structured'] / min(small['james_stein'], small['empirical_bayes']):.3f}"
        )
        print("coverage (average over groups and draws):")
        print(cov.round(3).to_string())
        print(
            f"rBLPR width / Eq. 7 width at 95%: {timing['rel_width_95']:.3f};  "
            f"median seconds per SR fit: {timing['fit_s']:.3f}, per rBLPR (B={args.B}): {timing['rblpr_s']:.3f}\n"
        )
    print(f"=== Table 2: goodness-of-fit F-tests, {args.gof_draws} draws per model ===")
    for model in args.models.split(","):
        print(f"model_{model.strip()}:")
        print(run_gof(model.strip(), pop, args).round(3).to_string())
        print()


if __name__ == "__main__":
    main()
