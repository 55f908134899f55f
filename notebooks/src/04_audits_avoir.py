# %% [markdown]
# ## AVOIR: online fairness monitoring with optimised bounds
#
# `pcfair.audits.avoir` ports *AVOIR* (Maneriker, Burley, Parthasarathy, "Online Fairness
# Auditing through Iterative Refinement", KDD 2023). A fairness **specification** such as
# `E[r | sex == "F"] / E[r | sex == "M"] > 0.8` is monitored over a stream of decisions. Every
# 5 records the monitor tries to certify the specification: it stops at the first check where
# the specification is True (or False) with probability at least 1 − Δ.
#
# Each expectation `E[...]` gets a time-uniform (adaptive Hoeffding) confidence band. The rules
# for sums, products and ratios propagate the bands, and Kleene logic combines the comparisons.
# The failure budget Δ is split in one of two ways:
#
# * equally over the leaves: **AVOIR-VF**, the VeriFair-style baseline, provably valid;
# * by an optimiser: **AVOIR-OB**, the paper's method. It never stops later than the equal
#   split, because the equal split is always one of its candidates.

# %%
import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from pcfair.audits.avoir import circuit_stream, E, Monitor, parse_spec, Var
from pcfair.audits.avoir.export import export_tree
from pcfair.audits.avoir.opt import allocate
from pcfair.audits.avoir.plot import plot_history

# %% [markdown]
# ### Writing a specification
#
# There are two ways to write one: the builder (Python operators; wrap each comparison in
# parentheses before `&` or `|`) and the paper's text form. Both give the same tree.

# %%
r, sex = Var("r"), Var("sex")
built = (E(r, given=sex == "M") - E(r, given=sex == "F") < 0.5) & (E(r) > 0.1)
parsed = parse_spec('E[r | sex=M] - E[r | sex=F] < 0.5 & E[r] > 0.1')
print(parsed)
print("same tree:", built.same_as(parsed))

# %% [markdown]
# ### Why optimise the split? The paper's worked example
#
# Take Ê_X = 0.8 from 1550 records and Ê_Y = 0.5 from 310 records, with ψ: X − Y < 0.1 and
# Δ = 0.1. The equal split (δ = 0.05 each) gives ε_X + ε_Y = 0.2004 > 0.2, so nothing can be
# certified. The optimiser moves budget to the small group and certifies that ψ is False.

# %%
worked = "E[r | s == 1] - E[r | s == 0] < 0.1"
ob = allocate(worked, [0.8, 0.5], [1550, 310], failure_prob=0.1)
vf = allocate(worked, [0.8, 0.5], [1550, 310], failure_prob=0.1, split="equal")
print(f"equal split verdict: {vf.verdict}")
print(f"optimised verdict: {ob.verdict}, δ = {ob.failure_probs.round(5)}, Σδ = {ob.failure_prob:.5f}, "
      f"δ_Y/δ_X = {ob.failure_probs[1] / ob.failure_probs[0]:.2f}   (paper: Σδ = 0.09614, ratio 2.35)")

# %% [markdown]
# ### Case-study data
#
# The two views come from the public raw files, in file order: Adult federal employees
# (960 rows) and ProPublica's filtered COMPAS sample (6172 rows). The data are loaded with
# `pcfair.datasets` when it is available. Otherwise they are read from `$PCFAIR_DATA/raw`.

# %%
ADULT_COLUMNS = ["age", "workclass", "fnlwgt", "education", "education_num", "marital_status",
                 "occupation", "relationship", "race", "sex", "capital_gain", "capital_loss",
                 "hours_per_week", "native_country", "income"]
try:
    from pcfair.datasets import fetch_adult, fetch_compas

    adult_raw = fetch_adult(download_if_missing=False).frame
    compas_raw = fetch_compas(preprocess="propublica", download_if_missing=False).frame
except Exception as err:  # noqa: BLE001 - fall back to the raw files
    raw_dir = Path(os.environ["PCFAIR_DATA"]) / "raw"
    print(f"pcfair.datasets not usable here ({type(err).__name__}); reading {raw_dir}")
    adult_raw = pd.read_csv(raw_dir / "adult.data", header=None, names=ADULT_COLUMNS,
                            skipinitialspace=True, na_values="?", dtype=str)
    compas_raw = pd.read_csv(raw_dir / "compas-scores-two-years.csv")

# Adult federal employees, in file order; h = high income; sex M/F and race W as the specs write them
fed = adult_raw[adult_raw["workclass"].astype(str).str.strip() == "Federal-gov"]
fed = fed[fed["income"].notna()].reset_index(drop=True)
race = fed["race"].astype(str).str.strip()
adult = pd.DataFrame({
    "race": np.where(race == "White", "W", race),
    "sex": fed["sex"].astype(str).str.strip().map({"Male": "M", "Female": "F"}),
    "h": (fed["income"].astype(str).str.strip().str.rstrip(".") == ">50K").astype(int),
})
# COMPAS with ProPublica's filters; hrisk = decile_score > 3 as in the authors' code
keep = (compas_raw["days_b_screening_arrest"].abs() <= 30) & (compas_raw["is_recid"] != -1) \
    & (compas_raw["c_charge_degree"] != "O") & compas_raw["score_text"].notna() \
    & (compas_raw["score_text"] != "N/A")
view = compas_raw[keep].reset_index(drop=True)
compas = pd.DataFrame({"race": view["race"], "sex": view["sex"], "age": view["age"],
                       "hrisk": (view["decile_score"] > 3).astype(int),
                       "recid": view["two_year_recid"].astype(int)})
print(len(adult), "Adult federal employees;", len(compas), "COMPAS defendants")

# %% [markdown]
# ### Adult: refining a specification interactively (paper §3.2)
#
# The first specification asks that the high-income rate differ by less than 0.5 between men and
# women, and between White and non-White employees, at Δ = 0.15. With 960 records neither split
# reaches a verdict.

# %%
def run_both(spec, data, failure_prob):
    rows = {}
    for split in ("optimized", "equal"):
        monitor = Monitor(spec, failure_prob=failure_prob, split=split)
        res = monitor.run(data)
        rows[split] = {"verdict": res.verdict, "stop": res.stop, "failure_prob": res.failure_prob}
    return pd.DataFrame(rows).T


ADULT_SPEC = "(E[h | sex=M] - E[h | sex=F] < 0.5) & (E[h | race=W] - E[h | race!=W] < 0.5)"
print(ADULT_SPEC)
run_both(ADULT_SPEC, adult, 0.15)

# %% [markdown]
# The history of each subtree shows why. The sex term's upper band never falls below 0.5, but
# the race term's band does. So we raise the sex threshold to 0.55 and run again.

# %%
monitor = Monitor(ADULT_SPEC, failure_prob=0.15)
monitor.run(adult, until_verdict=False)
axes = plot_history(monitor)
plt.tight_layout()

# %%
ADULT_SPEC_REFINED = ADULT_SPEC.replace("< 0.5)", "< 0.55)", 1)
print(ADULT_SPEC_REFINED)
adult_table = run_both(ADULT_SPEC_REFINED, adult, 0.15)
adult_table

# %%
refined = Monitor(ADULT_SPEC_REFINED, failure_prob=0.15)
res = refined.run(adult, until_verdict=False)
alloc = res.allocation
print(f"OB per-leaf δ at {res.stop}: {alloc.round(6)}; conjuncts "
      f"({alloc[:2].sum():.6f}, {alloc[2:].sum():.6f})")
print("paper: OB 870, VF 960, split ≈ (0.135, 3.6e-4)")
axes = plot_history(refined)
plt.tight_layout()

# %% [markdown]
# ### COMPAS (paper Appendix G)
#
# Here `hrisk = decile_score > 3`, as in the authors' code. ProPublica's FPR-balance
# specification cannot be certified at Δ = 0.1: the Caucasian false-positive rate in the
# denominator is small, and that makes the ratio's band wide. The reciprocal specification is
# certified False at record 4590. The paper's text says 3350, but the authors' released code
# gives 4590. Northpointe's FDR specifications are never decided.

# %%
compas_specs = {
    "FPR AA/C < 1.1": "E[hrisk | race=African-American & recid=0] / "
                      "E[hrisk | race=Caucasian & recid=0] < 1.1",
    "FPR C/AA > 0.9 (reciprocal)": "E[hrisk | race=Caucasian & recid=0] / "
                                   "E[hrisk | race=African-American & recid=0] > 0.9",
    "FDR C/AA > 0.9": "E[recid=0 | race=Caucasian & hrisk] / "
                      "E[recid=0 | race=African-American & hrisk] > 0.9",
    "FDR AA/C > 0.9": "E[recid=0 | race=African-American & hrisk] / "
                      "E[recid=0 | race=Caucasian & hrisk] > 0.9",
}
rows = []
for name, spec_text in compas_specs.items():
    for split in ("optimized", "equal"):
        res = Monitor(spec_text, failure_prob=0.1, split=split).run(compas)
        rows.append({"specification": name, "split": split, "verdict": res.verdict,
                     "stop": res.stop, "estimate": round(float(res.terms["value"].iloc[0]), 4)})
pd.DataFrame(rows)

# %% [markdown]
# ### Paper against port

# %%
pd.DataFrame([
    {"case": "Adult c1 = 0.5", "paper": "no verdict", "port OB / VF": "no verdict"},
    {"case": "Adult c1 = 0.55", "paper": "OB 870, VF 960",
     "port OB / VF": f"OB {adult_table.loc['optimized', 'stop']}, "
                     f"VF {adult_table.loc['equal', 'stop']}"},
    {"case": "COMPAS FPR AA/C < 1.1", "paper": "no verdict", "port OB / VF": "no verdict"},
    {"case": "COMPAS FPR C/AA > 0.9", "paper": "False, 3350 (code: 4590)",
     "port OB / VF": ", ".join(f"{r['verdict']} at {r['stop']}" for r in rows
                               if r["specification"].startswith("FPR C/AA"))},
    {"case": "COMPAS FDR (both)", "paper": "no verdict", "port OB / VF": "no verdict"},
])

# %% [markdown]
# ### Monitoring a model against its own population model
#
# A probabilistic circuit can serve as the population: individuals are sampled from it and a
# classifier decides for each one. Any object with `sample(n, evidence, random_state)` works.
# The stand-in below has a known `P(d | s)`, so we know the truth that the verdict must find.

# %%
class TwoGroupPopulation:
    """s ~ Bern(0.4); d | s ~ Bern(0.65 if s else 0.32)."""

    def sample(self, n, evidence=None, random_state=None):
        rng = np.random.default_rng(random_state)
        s = (rng.random(n) < 0.4).astype(int)
        d = (rng.random(n) < np.where(s == 1, 0.65, 0.32)).astype(int)
        return pd.DataFrame({"s": s, "d": d})


stream = circuit_stream(TwoGroupPopulation(), lambda X: X["s"].to_numpy(), outcome="d",
                        batch_size=200, n_records=20_000, random_state=0)
psi = "E[y | s == 1] - E[y | s == 0] > 0.2"  # truth: 0.65 − 0.32 = 0.33
res = Monitor(psi, failure_prob=0.05).run(stream)
print(f"verdict {res.verdict} after {res.stop} sampled individuals (truth: True)")

# %% [markdown]
# ### Export for Vega
#
# `export_tree` (and `to_json`) gives one row per node of the specification tree, with its
# history of values and bands at every check. This is the tabular JSON that the paper's
# visualisation reads.

# %%
rows = export_tree(refined)
pd.DataFrame([{k: row[k] for k in ("idx", "type", "repr")} | {"checks": len(row["vals"])}
              for row in rows])
