"""Issue 27: the cost of "how sure is this?" against the point certificate, in the same run.

For each model, times (one process):

- the point certificate at δ (the baseline) and the top-10 by |Δ|;
- credible intervals of those ten patterns from ``--draws`` posterior draws
  (:func:`pcfair.patterns.uncertainty.with_intervals`);
- the probability of δ-fairness: every draw certified exactly
  (:func:`pcfair.patterns.uncertainty.fairness_probability`), at δ and at a second, fairer δ;

and prints each time, the ratio of the uncertainty work to the point certificate, and the
answers (intervals of the top pattern, the probabilities with their Monte-Carlo errors).
Models: the shipped COMPAS CLT (``circuits/compas_clt.json``, counts from the binarized COMPAS
table of the data cache, since the shipped file carries none) and a naive Bayes learned from the
binarized German table (its counts stored at learn time).

``--coverage R`` adds a coverage study on a fixed planted model (where the interval is *not*
guaranteed: the pattern is chosen from the data). The true model is a Chow-Liu circuit learned
from 50,000 rows of :func:`pcfair.datasets.make_planted` (8 features, a planted Δ of 0.2); each
of R replications draws 1,000 rows from it, fits the parameters on the true structure (the case
the posterior describes) and also re-learns the structure (which it does not describe), takes
the learned model's top pattern by |Δ| and a fixed pattern (the planted one), and counts how
often the nominal 90% interval holds the true model's Δ of that pattern.

Usage::

    python benchmarks/bench_uncertainty.py [--draws 200] [--coverage 100]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"


def _time(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def run(name, pc, decision, sensitive, deltas, data, draws):
    import pcfair
    from pcfair.patterns.uncertainty import fairness_probability, with_intervals

    delta = deltas[0]
    cert, t_cert = _time(lambda: pcfair.certify(pc, decision, sensitive, delta))
    top, t_top = _time(lambda: pcfair.find_patterns(pc, decision, sensitive, delta,
                                                    kind="topk", k=10))
    iv, t_iv = _time(lambda: with_intervals(top, pc, credible=0.95, draws=draws, data=data,
                                            random_state=0))
    print(f"\n{name}: point certificate at δ = {delta}: {t_cert:.2f} s "
          f"(fair {cert.fair}); top-10 {t_top:.2f} s")
    first = iv.patterns[0]
    lo, hi = first.interval["score"]
    print(f"  intervals of the top-10, {draws} draws: {t_iv:.2f} s "
          f"({t_iv / t_cert:.1f}× the certificate); top pattern Δ = {first.score:+.4f}, "
          f"95% [{lo:+.4f}, {hi:+.4f}], P(|Δ| > δ) = {first.interval['exceeds']:.3f}; "
          f"significant {sum(p.interval['significant'] for p in iv.patterns)} of 10")
    total = t_iv
    for d in deltas:
        fp, t_fp = _time(lambda: fairness_probability(pc, decision, sensitive, d, draws=draws,
                                                      data=data, random_state=0))
        total += t_fp
        print(f"  fairness probability at δ = {d}: {fp.text()}; {t_fp:.2f} s "
              f"({t_fp / t_cert:.1f}× the certificate)")
    print(f"  all uncertainty work: {total:.2f} s = {total / t_cert:.1f}× the point certificate")


def coverage(replications: int, draws: int) -> None:
    """The coverage study of the module docstring."""
    import numpy as np

    import pcfair
    from pcfair.datasets import make_planted
    from pcfair.inference.flows import parameter_counts
    from pcfair.inference.posterior import ParameterPosterior
    from pcfair.learn import learn_pc
    from pcfair.learn.parameters import fit_parameters
    from pcfair.patterns.results import Pattern
    from pcfair.patterns.uncertainty import pattern_draws

    data, truth = make_planted(50_000, n_features=8, effect=0.2, random_state=0)
    true_pc = learn_pc(data.frame, data.target)
    names = list(true_pc.variables.names)
    planted = Pattern(x=dict(truth.x), y=dict(truth.y), score=0.0, probability=0.0,
                             divergence=0.0)
    rng = np.random.default_rng(1)
    hits = {(how, which): 0 for how in ("fixed structure", "re-learned structure")
            for which in ("top pattern", "planted pattern")}
    t0 = time.perf_counter()
    for _ in range(replications):
        rows = true_pc.sample(1000, random_state=rng)[names]
        codes = true_pc.variables.evidence_matrix(rows)
        fixed = fit_parameters(true_pc, codes).with_counts(
            parameter_counts(true_pc, codes, 1.0))
        frame = rows.astype({c: pd_category(true_pc, c) for c in names})
        relearned = learn_pc(frame, data.target)
        for how, model in (("fixed structure", fixed), ("re-learned structure", relearned)):
            top = pcfair.find_patterns(model, data.target, data.sensitive, 0.0, kind="topk",
                                       k=1, time_limit=10).patterns[0]
            for which, p in (("top pattern", top), ("planted pattern", planted)):
                true_score = _exact(true_pc, data.target, p)
                scores, _ = pattern_draws(ParameterPosterior(model), data.target, 1, [p],
                                          draws=draws, random_state=rng)
                lo, hi = np.nanquantile(scores[:, 0], [0.05, 0.95])
                hits[how, which] += bool(lo <= true_score <= hi)
    print(f"\ncoverage of nominal 90% intervals, {replications} replications of 1,000 rows "
          f"({time.perf_counter() - t0:.0f} s):")
    for (how, which), h in hits.items():
        print(f"  {how:<21} {which:<16} {h / replications:.3f}")


def _exact(pc, decision, p) -> float:
    y, xy = dict(p.y), {**p.y, **p.x}
    return (float(pc.probability({**xy, decision: 1})) / float(pc.probability(xy))
            - float(pc.probability({**y, decision: 1})) / float(pc.probability(y)))


def pd_category(pc, name):
    import pandas as pd

    return pd.CategoricalDtype(pc.variables.domains[pc.variables.index(name)])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--coverage", type=int, default=0, metavar="R",
                        help="also the coverage study with R replications")
    args = parser.parse_args(argv)
    if SHARED.is_dir():
        os.environ.setdefault("PCFAIR_DATA", str(SHARED))
    import pcfair
    from pcfair.datasets import load_binarized
    from pcfair.learn import learn_pc

    compas = load_binarized("compas", labels=True)
    pc = pcfair.load(ROOT / "circuits" / "compas_clt.json")
    run("shipped COMPAS CLT", pc, compas.target, compas.sensitive, (0.05, 0.25),
        compas.frame, args.draws)
    german = load_binarized("german", labels=True)
    nb, t_learn = _time(lambda: learn_pc(german.frame, german.target,
                                         structure="naive_bayes"))
    print(f"\n(German naive Bayes learned in {t_learn:.2f} s; counts stored in it)")
    top1 = pcfair.find_patterns(nb, german.target, german.sensitive, 0.0, kind="topk", k=1)
    best = top1.patterns[0].abs_score
    run("German naive Bayes", nb, german.target, german.sensitive,
        (round(best - 0.02, 4), round(best + 0.005, 4)), None, args.draws)
    if args.coverage:
        coverage(args.coverage, args.draws)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
