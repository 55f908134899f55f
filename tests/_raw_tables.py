"""Seeded tables shaped like the raw UCI Adult file, for engine tests (not a test module).

:func:`raw_adult_like` draws a table with the columns and the kind of values of
``adult.data`` as :func:`pcfair.datasets._adult.read_adult` parses it (``fnlwgt`` and
``native-country`` left out): continuous numeric columns that the learners must bin, string
categoricals with up to 16 values, and the string decision ``income``. Unlike the binarised
tables the shipped circuits were learned from, its categoricals are wide, so the pattern
lattice of a model learned from it is large (about 7 × 10^9 points with ``bins=4``, see
:func:`lattice_points`) while the table stays small enough to learn from in a second.

``plant`` sets how strongly ``sex`` and ``race`` move the decision. Both are drawn
independently of every other column, and with ``plant=0`` the decision ignores them, so any
discrimination pattern of a model learned from the table is estimation noise. With ``plant > 0``
the probability of ``">50K"`` is shifted by ``+plant/2`` for men and ``-plant/2`` for women,
and by ``±plant/4`` for white and non-white people (clipped to ``[0.01, 0.99]``).

The noise is not small. A Chow-Liu circuit conditions every feature on the decision, so the
tables of ``sex`` and ``race`` given their (noise-chosen) parent and ``D`` have cells of a few
rows, and the scores of patterns whose context ``y`` is nearly impossible (``P(x, y)`` of
10^-13) follow those cells: with ``adult.data``'s own marginals (80% white, 1% of the rows
with some education levels, ``P(>50K)`` near 0 for them) a model learned from 3,000
``plant=0`` rows had a largest ``|Δ|`` near 0.8. The marginals here are therefore flattened:
every categorical value has at least 3% of the rows, ``sex`` is 50/50, ``race`` 40% white and
15% each other value (so that the pseudocount's uniform prior matches), and ``P(>50K)`` stays
in ``[0.15, 0.85]`` whatever the other columns. Measured (``random_state=0``, ``bins=4``):

- ``raw_adult_like(3000, 0, plant=0.3)``: ``certify(..., 0.05)`` finds ``sex=Female``
  (Δ ≈ −0.15) at the first node of the tree search;
- ``raw_adult_like(30_000, 0, plant=0.0)``: fair at δ = 0.2 (the tree search proves it in 42
  nodes; seeds 1 and 2 too) and at δ = 0.15 (67 nodes; not seed 2: its search did not finish
  in 20 s); at δ = 0.1 no engine finishes in seconds.

Run as a script it learns the models and prints their lattice sizes and their certificates at
a few thresholds (``python tests/_raw_tables.py``; the defaults are those two models).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: Values of the categorical columns (those of ``adult.names``; ``workclass`` without
#: ``Never-worked``), in the order ``adult.names`` lists them.
CATEGORIES: dict[str, list[str]] = {
    "workclass": ["Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov",
                  "State-gov", "Without-pay"],
    "education": ["Preschool", "1st-4th", "5th-6th", "7th-8th", "9th", "10th", "11th", "12th",
                  "HS-grad", "Some-college", "Assoc-voc", "Assoc-acdm", "Bachelors", "Masters",
                  "Prof-school", "Doctorate"],
    "marital-status": ["Married-civ-spouse", "Divorced", "Never-married", "Separated",
                       "Widowed", "Married-spouse-absent", "Married-AF-spouse"],
    "occupation": ["Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial",
                   "Prof-specialty", "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical",
                   "Farming-fishing", "Transport-moving", "Priv-house-serv", "Protective-serv",
                   "Armed-Forces"],
    "relationship": ["Wife", "Own-child", "Husband", "Not-in-family", "Other-relative",
                     "Unmarried"],
    "race": ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"],
    "sex": ["Female", "Male"],
}

#: The decision column and its values (favourable: ``">50K"``).
DECISION = "income"
INCOME = ["<=50K", ">50K"]
#: The sensitive columns the engine tests use.
SENSITIVE = ["sex", "race"]

#: Column order of the table (that of ``adult.data`` without ``fnlwgt`` and
#: ``native-country``): 12 features and the decision.
COLUMNS = ["age", "workclass", "education", "education-num", "marital-status", "occupation",
           "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week",
           DECISION]

# Marginal frequencies in adult.data's order of magnitude, floored at 3% (module docstring):
# every value occurs in a table of a few thousand rows (the learned domain is the set of
# values that occur) and no cell of the learned tables is nearly empty.
_WORKCLASS_P = [0.60, 0.08, 0.05, 0.05, 0.08, 0.07, 0.07]
_EDUCATION_P = [0.03, 0.03, 0.03, 0.03, 0.03, 0.04, 0.04, 0.03, 0.22, 0.17, 0.05, 0.05,
                0.12, 0.05, 0.03, 0.03]
_RACE_P = [0.40, 0.15, 0.15, 0.15, 0.15]
_SEX_P = [0.5, 0.5]


def _draw(rng: np.random.Generator, values: list[str], p, size: int | None = None):
    """``size`` draws from ``values`` with probabilities ``p`` (normalised here)."""
    p = np.asarray(p, dtype=float)
    return np.asarray(values, dtype=object)[rng.choice(len(values), size=size, p=p / p.sum())]


def raw_adult_like(n_rows: int = 3000, random_state: int = 0, plant: float = 0.0
                   ) -> pd.DataFrame:
    """A seeded table shaped like raw UCI Adult (see the module docstring).

    Parameters
    ----------
    n_rows : int, default 3000
        Number of rows.
    random_state : int, default 0
        Seed of the :class:`numpy.random.Generator` that draws every column.
    plant : float, default 0.0
        Direct effect of ``sex`` and ``race`` on the decision: ``P(income = ">50K")`` moves by
        ``±plant/2`` with sex (men up) and ``±plant/4`` with race (white up). ``0``: the
        decision, like every other column, is independent of both.

    Returns
    -------
    pandas.DataFrame
        The columns :data:`COLUMNS`: ``age``, ``education-num`` (years of schooling with a
        decimal), ``capital-gain``, ``capital-loss`` and ``hours-per-week`` numeric with more
        than 20 distinct values (binned by :func:`pcfair.tables.data.prepare_frame`; the capital
        columns are zero in about 70% of the rows, so they bin into two intervals), the others
        strings with the values of :data:`CATEGORIES` (7, 16, 7, 14, 6, 5 and 2 of them), and
        ``income`` in ``{"<=50K", ">50K"}``.

    Examples
    --------
    >>> df = raw_adult_like(500, random_state=1)
    >>> df.shape, sorted(df["income"].unique())
    ((500, 13), ['<=50K', '>50K'])
    """
    if n_rows < 1:
        raise ValueError(f"n_rows must be positive, got {n_rows}")
    if not 0.0 <= plant <= 1.0:
        raise ValueError(f"plant must be in [0, 1], got {plant}")
    rng = np.random.default_rng(random_state)
    n = int(n_rows)
    age = np.clip(np.round(17 + rng.gamma(3.0, 7.0, n)), 17, 90).astype(np.int64)
    workclass = _draw(rng, CATEGORIES["workclass"], _WORKCLASS_P, n)
    edu_code = rng.choice(16, size=n, p=np.asarray(_EDUCATION_P) / np.sum(_EDUCATION_P))
    education = np.asarray(CATEGORIES["education"], dtype=object)[edu_code]
    # years of schooling: the level's number (1..16 as in adult.data) plus noise, one decimal
    education_num = np.round(edu_code + 1 + rng.normal(0.0, 0.6, n), 1)
    # marital status depends on age: the young are mostly never married
    young = age < 27
    marital = np.where(
        young,
        _draw(rng, CATEGORIES["marital-status"], [0.15, 0.05, 0.62, 0.05, 0.04, 0.05, 0.04], n),
        _draw(rng, CATEGORIES["marital-status"], [0.50, 0.16, 0.14, 0.05, 0.06, 0.05, 0.04], n))
    # occupation depends on education: graduates lean to professional and managerial work
    grad = edu_code >= 12
    occupation = np.where(
        grad,
        _draw(rng, CATEGORIES["occupation"],
              [4, 3, 3, 10, 22, 35, 3, 3, 6, 3, 3, 3, 3, 3], n),
        _draw(rng, CATEGORIES["occupation"],
              [3, 15, 13, 10, 7, 5, 6, 8, 12, 4, 7, 3, 3, 3], n))
    # relationship follows marital status (a spouse in the married rows), drawn without sex
    married = np.isin(marital, ["Married-civ-spouse", "Married-AF-spouse"])
    relationship = np.where(
        married,
        _draw(rng, CATEGORIES["relationship"], [0.25, 0.04, 0.59, 0.04, 0.04, 0.04], n),
        _draw(rng, CATEGORIES["relationship"], [0.04, 0.28, 0.04, 0.40, 0.06, 0.18], n))
    # the sensitive columns: independent of everything else
    race = _draw(rng, CATEGORIES["race"], _RACE_P, n)
    sex = _draw(rng, CATEGORIES["sex"], _SEX_P, n)
    # capital columns: zero in ~70% of the rows, else heavy-tailed; more often non-zero for
    # the self-employed and the well educated
    self_emp = np.isin(workclass, ["Self-emp-not-inc", "Self-emp-inc"])
    gain_p = 0.25 + 0.10 * self_emp + 0.05 * grad
    gain = np.where(rng.random(n) < gain_p, np.round(rng.lognormal(8.0, 1.0, n)), 0.0)
    loss = np.where(rng.random(n) < 0.3, np.round(rng.lognormal(7.4, 0.4, n)), 0.0)
    full_time = rng.random(n) < 0.45
    hours = np.where(full_time, 40,
                     np.clip(np.round(rng.normal(40 + 6 * self_emp - 8 * young, 11.0, n)),
                             1, 99)).astype(np.int64)
    # the decision: a logistic model of the non-sensitive columns ...
    logit = (-3.0 + 0.35 * (education_num - 10.0) + 0.04 * (np.minimum(age, 60) - 38)
             + 1.6 * married + 0.03 * (hours - 40) + 0.8 * (gain > 0)
             + 0.5 * np.isin(occupation, ["Exec-managerial", "Prof-specialty"]))
    p = 0.15 + 0.7 / (1.0 + np.exp(-logit))
    # ... plus the planted direct effect of sex and race
    p = p + plant * (np.where(sex == "Male", 0.5, -0.5)
                     + np.where(race == "White", 0.25, -0.25))
    p = np.clip(p, 0.01, 0.99)
    income = np.where(rng.random(n) < p, INCOME[1], INCOME[0])
    frame = pd.DataFrame({
        "age": age, "workclass": workclass, "education": education,
        "education-num": education_num, "marital-status": marital, "occupation": occupation,
        "relationship": relationship, "race": race, "sex": sex, "capital-gain": gain,
        "capital-loss": loss, "hours-per-week": hours, DECISION: income})
    for c in CATEGORIES:
        frame[c] = frame[c].astype(str)
    frame[DECISION] = frame[DECISION].astype(str)
    return frame[COLUMNS]


def learned_model(df: pd.DataFrame, bins: int = 4):
    """The Chow-Liu circuit of ``df`` with ``income`` as the decision, numeric columns cut
    into ``bins`` quantile bins (:func:`pcfair.tables.data.prepare_frame`, then
    :func:`pcfair.learn.clt.learn_pc`).

    Parameters
    ----------
    df : pandas.DataFrame
        A table such as :func:`raw_adult_like` draws.
    bins : int, default 4
        Quantile bins of each continuous column (ties merge bins).

    Returns
    -------
    pcfair.circuit.Circuit
    """
    from pcfair.learn.clt import learn_pc
    from pcfair.tables.data import prepare_frame

    return learn_pc(prepare_frame(df, DECISION, bins)[0], DECISION)


def lattice_points(pc, decision: str = DECISION, sensitive=tuple(SENSITIVE)) -> float:
    """Points of the pattern lattice of ``pc``: the product over the features of
    ``arity + 1`` (a value or absent), with ``2 * arity + 1`` for the sensitive ones (a value
    in ``x``, in ``y``, or absent).

    Parameters
    ----------
    pc : pcfair.circuit.Circuit
    decision : str
    sensitive : sequence of str

    Returns
    -------
    float
    """
    names = list(pc.variables.names)
    cards = pc.variables.cardinalities
    sens = set(sensitive)
    return float(np.prod([2.0 * cards[i] + 1 if name in sens else cards[i] + 1.0
                          for i, name in enumerate(names) if name != decision]))


#: The configurations the engine tests use: (rows, plant, thresholds certified).
CONFIGS = [(3000, 0.3, (0.05,)), (30_000, 0.0, (0.2, 0.15))]


def _main() -> None:
    """Learn models from raw-Adult-like tables and print their lattice sizes and certificates
    (by default the two of :data:`CONFIGS`)."""
    import argparse
    import time

    import pcfair

    ap = argparse.ArgumentParser(description=_main.__doc__)
    ap.add_argument("--rows", type=int, help="one model from this many rows (with --plant)")
    ap.add_argument("--plant", type=float, default=0.0)
    ap.add_argument("--deltas", default="0.05,0.1,0.15,0.2")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--engine", default="search")
    ap.add_argument("--time-limit", type=float, default=20.0)
    args = ap.parse_args()
    configs = CONFIGS if args.rows is None else [
        (args.rows, args.plant, tuple(float(x) for x in args.deltas.split(",")))]
    for rows, plant, deltas in configs:
        t = time.perf_counter()
        pc = learned_model(raw_adult_like(rows, args.seed, plant))
        arities = dict(zip(pc.variables.names, pc.variables.cardinalities.tolist()))
        print(f"rows={rows} plant={plant} seed={args.seed}: learned in "
              f"{time.perf_counter() - t:.2f} s; arities {arities}; lattice "
              f"{lattice_points(pc):.3g} points", flush=True)
        for delta in deltas:
            t = time.perf_counter()
            cert = pcfair.certify(pc, DECISION, SENSITIVE, delta, favorable=INCOME[1],
                                  engine=args.engine, time_limit=args.time_limit)
            w = cert.witness
            print(f"  δ={delta}: fair={cert.fair} complete={cert.complete} "
                  f"engine={cert.engine} ({cert.stats.get('engine')}) "
                  f"nodes={cert.stats.get('nodes')} {time.perf_counter() - t:.2f} s"
                  + (f"; witness Δ={w.score:+.4f} {w.text()}" if w is not None else ""),
                  flush=True)


if __name__ == "__main__":
    _main()
