# %% [markdown]
# pcfair has one model type, the probabilistic circuit, and five ways to question a model about
# fairness: the **certifier** (discrimination patterns, exact) and four ported **audits**
# (Conditional Bias Scan, TestSGD, structured regression, AVOIR). Each audit takes the circuit
# itself as `model=`: it is asked for `P(favourable | row)` by exact inference, with missing
# values marginalised, and where an audit needs new inputs they are sampled from the circuit.
#
# This notebook puts the shipped COMPAS circuit (`circuits/compas_clt.json`, a Chow-Liu tree
# learned from the binarized COMPAS table) through all five and lines up what they find. It
# needs no data file: the audited population is drawn from the circuit, so every audit's
# target quantity also has an exact value we can compute and compare against. It runs in
# well under a minute.

# %%
import itertools
import time
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm without ipywidgets
import pcfair  # noqa: E402
from pcfair.audits import as_model
from pcfair.audits import testsgd
from pcfair.audits.avoir import monitor_model
from pcfair.audits.cbs import CBSScans, conditional_bias_scan
from pcfair.audits.structured_regression import StructuredRegression

pd.set_option("display.width", 160)
pd.set_option("display.max_colwidth", 80)
T0 = time.perf_counter()
CIRCUITS = Path(pcfair.__file__).resolve().parents[1] / "circuits"
pc = pcfair.load(CIRCUITS / "compas_clt.json")
D = "ScoreText_"  # 1 = low or medium risk score: the favourable decision
S = ["Ethnic_Code_Text_", "MaritalStatus_", "Sex_", "Age"]
FEATURES = [n for n in pc.names if n != D]
RACE = "Ethnic_Code_Text_"
model = as_model(pc, outcome=D, favorable=1)
model

# %% [markdown]
# ## 1. The certifier: discrimination patterns
#
# A pattern `(x, y)` is a group described by features `y` whose probability of the favourable
# decision moves by more than δ when it also discloses sensitive values `x`. The certifier
# proves their absence or returns the worst one.

# %%
cert = pcfair.certify(pc, D, S, delta=0.05)
print("fair at 0.05:", cert.fair, "| largest |Δ|:", round(cert.max_abs_score, 4))
print("witness:", cert.witness)
top = pcfair.find_patterns(pc, D, S, 0.05, kind="topk", k=5)
top.to_frame()[["x", "y", "score", "probability"]]

# %% [markdown]
# ## 2. The audited population and the model's decisions
#
# 6,000 people drawn from the circuit. The outcome column is the circuit's own `ScoreText_`;
# the model's decision is `P(ScoreText_ = 1 | features) >= 0.5`. Because the feature space is
# small (2^7 combinations), the exact rate of favourable decisions in any group can be summed
# over all combinations, which gives every audit below a known target.

# %%
population = pc.sample(6000, random_state=0)
X = population[FEATURES]
grid = pd.DataFrame(list(itertools.product(*[pc.variables.domains[pc.variables.index(f)]
                                             for f in FEATURES])), columns=FEATURES)
grid_p = np.exp(pc.log_marginal(grid))  # P(x) of each combination
grid_hit = model.hits(grid)


def exact_rate(**group):
    """Exact P(decision favourable | group) under the circuit."""
    m = np.ones(len(grid), dtype=bool)
    for k, v in group.items():
        m &= (grid[k] == v).to_numpy()
    return float((grid_p * grid_hit * m).sum() / (grid_p * m).sum())


races = pc.variables.domains[pc.variables.index(RACE)]
pd.DataFrame({"exact favourable-decision rate": [exact_rate(**{RACE: v}) for v in races],
              "P(ScoreText_=1 | race)": [pc.conditional({D: 1}, {RACE: v}) for v in races]},
             index=races)

# %% [markdown]
# ## 3. Conditional Bias Scan
#
# One scan per race value as the protected class; the other features are the covariates.
# CBS looks for the subgroup where the model's probabilities depart most from what the other
# class would lead one to expect, given the true outcome (separation), and tests it by
# permutation.

# %%
scans = CBSScans([
    conditional_bias_scan(population, protected=(RACE, v), outcome=D, model=model,
                          covariates=[f for f in FEATURES if f != RACE], definition="fpr",
                          n_restarts=10, n_permutations=19, n_jobs=1, random_state=0)
    for v in races])
scans.to_frame()[["protected", "detected", "n", "score", "observed_rate", "expected_rate",
                  "p_value"]]

# %% [markdown]
# ## 4. TestSGD
#
# Rule sets over the sensitive features, ranked by the gap in favourable decisions between a
# group and everyone else; group members are sampled from the circuit conditioned on the group
# (`sampler="circuit"`).

# %%
sgd = testsgd.audit(X, model, sensitive=S, outcome=D, sampler="circuit", sup_thr=0.05,
                    sample_thr=400, error_thr=0.08, random_state=0)
sgd.to_frame()[["rule_set", "score", "p_group", "p_rest", "margin"]].head(8)

# %% [markdown]
# Each estimated group rate has an exact value; for the single-feature race rules the two
# agree within the stated margins:

# %%
rows = []
for v in races:
    hit = sgd.table[sgd.table["rule_set"] == f"{RACE}={v}"]
    if len(hit):
        rows.append({"group": f"{RACE}={v}", "TestSGD p_group": hit["p_group"].iloc[0],
                     "margin": hit["margin_group"].iloc[0], "exact": exact_rate(**{RACE: v})})
pd.DataFrame(rows)

# %% [markdown]
# ## 5. Structured regression
#
# The selection rate (share of favourable decisions) of every race × sex group, the plain
# per-group estimate next to the structured one, with the exact value beside them.

# %%
sr = StructuredRegression([RACE, "Sex_"], outcome=D, model=model, n_boot_var=30, n_splits=3,
                          random_state=0).fit(population, "sel").result_
table = sr.to_frame()
table["exact"] = [exact_rate(**{RACE: r, "Sex_": s}) for r, s in zip(table[RACE], table["Sex_"])]
table[[RACE, "Sex_", "n", "standard", "structured", "exact"]]

# %% [markdown]
# ## 6. AVOIR
#
# The population replayed as a stream: is the gap in favourable decisions between the two race
# values below 0.2? AVOIR stops at the first check where the answer holds with probability at
# least 1 − 0.05.

# %%
spec = (f'E[r | {RACE} == "{races[1]}"] - E[r | {RACE} == "{races[0]}"] < 0.2 & '
        f'E[r | {RACE} == "{races[0]}"] - E[r | {RACE} == "{races[1]}"] < 0.2')
mon = monitor_model(model, X, spec, failure_prob=0.05)
print(mon.summary())
print("exact gap:", round(exact_rate(**{RACE: races[1]}) - exact_rate(**{RACE: races[0]}), 4))

# %% [markdown]
# ## 7. How the findings relate
#
# * The **certifier** answers a question about *individuals who disclose their sensitive
#   features*: its witness is a narrow context where disclosing race, marital status and sex
#   moves the probability by more than 0.05 (and it proves where nothing does).
# * **TestSGD**, **structured regression** and **AVOIR** measure *group rates of decisions*:
#   averages of the model's behaviour over everyone in a group. They estimate the same
#   numbers, so they agree with the exact rates above within their uncertainty; they differ in how
#   they spend samples (TestSGD: a margin per rule set; structured regression: borrowing
#   strength across small groups; AVOIR: stopping as soon as a specification is decided).
#   A small group-level gap can coexist with large patterns: averaging over contexts hides
#   them, which is why the certifier reports patterns the group metrics do not show.
# * **CBS** asks a third question: given the true outcome, does a subgroup of a protected
#   class receive systematically different probabilities than comparable people outside it?
#   The circuit is its own population's calibrated model here, so the scans' permutation
#   p-values show whether any such departure is beyond chance.
#
# All five results share one shape: `to_frame()`, `to_dict()` (what `pcfair audit ...
# --format json` prints) and `plot()`.

# %%
fig, axes = plt.subplots(3, 1, figsize=(9, 11), gridspec_kw={"height_ratios": [1, 3, 2]})
scans.plot(ax=axes[0])
sgd.plot(ax=axes[1], top=8)
mon.plot(ax=axes[2])
fig.subplots_adjust(left=0.55, hspace=0.45)
print(f"notebook ran in {time.perf_counter() - T0:.1f} s")
