"""The paper's COMPAS case study (Sec. 5, App. C): scan settings, Table 4 and a side-by-side run.

The data are ProPublica's two-year COMPAS file preprocessed as the paper describes, available
as ``pcfair.datasets.fetch_compas(preprocess="cbs").frame`` (6,172 defendants; covariates
``sex``, ``race``, ``age``, ``charge_degree``, ``priors``; outcome ``two_year_recid``; P =
``predicted_prob``, the reoffence rate of the defendant's decile score; Pbin = ``high_risk``,
decile score >= 5).

:data:`PAPER_TABLE4` transcribes the paper's Table 4 (reference values to compare against,
never used by the computation) and :func:`compas_case_study` runs the port's scans for the
same protected classes and places both side by side.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from pcfair.audits.cbs.audit import conditional_bias_scan
from pcfair.audits.cbs.options import CBSOptionError

__all__ = [
    "COMPAS_ATTRIBUTES",
    "COMPAS_SCANS",
    "PAPER_PROTECTED",
    "PAPER_TABLE4",
    "compas_case_study",
]

#: Covariates of the case study; each of their values is in turn the protected class.
COMPAS_ATTRIBUTES = ["sex", "race", "age", "charge_degree", "priors"]

#: The four scans of the case study (paper Sec. 5) as keyword arguments of
#: :func:`~pcfair.audits.cbs.conditional_bias_scan`. The Gaussian scale is fixed to
#: ``sigma=1``: the paper never states it, and with sigma = 1 the port reproduces the paper's
#: separation-for-predictions scores (e.g. 83.9 vs 83.1 for 6+ priors, 42.5 vs 41.9 for Black
#: defendants), while the port's default (the standard deviation of the logit differences,
#: about 0.65 here) gives scores about 2.5 times larger.
COMPAS_SCANS = {
    "separation_probabilities": dict(
        family="separation", predictions="probabilities", condition_value=0,
        direction="positive", sigma=1.0,
    ),
    "separation_recommendations": dict(
        family="separation", predictions="recommendations", condition_value=0,
        direction="positive",
    ),
    "sufficiency_probabilities": dict(
        family="sufficiency", predictions="probabilities", condition_value=None,
        direction="negative",
    ),
    "sufficiency_recommendations": dict(
        family="sufficiency", predictions="recommendations", condition_value=1,
        direction="negative",
    ),
}

#: The paper's names of protected classes -> (column, value) in the preprocessed data.
PAPER_PROTECTED = {
    "Under 25": ("age", "Under 25"),
    "Age 25+": ("age", "25 and over"),
    "No priors": ("priors", "None"),
    "1 to 5 priors": ("priors", "1 to 5"),
    "6+ priors": ("priors", "Over 5"),
    "Black": ("race", "African-American"),
    "White": ("race", "Caucasian"),
    "Hispanic": ("race", "Hispanic"),
    "Asian": ("race", "Asian"),
    "Native American": ("race", "Native American"),
    "Other race": ("race", "Other"),
    "Female": ("sex", "Female"),
    "Male": ("sex", "Male"),
    "Felony": ("charge_degree", "Felony"),
    "Misdemeanor": ("charge_degree", "Misdemeanor"),
}

# Table 4 as printed: protected | detected | n | comparison | comparison n | score | rate |
# comparison rate, one block per scan.
_T4_TEXT = {
    "separation_probabilities": """
Under 25 | under 25, felony | 403 | 25+, felony | 1583 | 114.1 | 0.52 | 0.39
6+ priors | all 6+ priors | 349 | all 0-5 priors | 3014 | 83.1 | 0.54 | 0.38
Black | Black male | 1168 | non-Black male | 1433 | 41.9 | 0.45 | 0.35
Female | female, 6+ priors | 40 | male, 6+ priors | 309 | 25.3 | 0.59 | 0.54
1 to 5 priors | under 25, 1-5 priors | 227 | under 25, 0 or 6+ priors | 366 | 3.23 | 0.54 | 0.49
Felony | white female, felony | 139 | white female, misdemeanor | 173 | 2.40 | 0.42 | 0.34
Male | Asian male | 22 | Asian female | 1 | 0.62 | 0.30 | 0.22
Native American | all Native American | 6 | all non-Native American | 3357 | 0.15 | 0.49 | 0.39
""",
    "separation_recommendations": """
Under 25 | under 25, felony | 403 | 25+, felony | 1583 | 149.2 | 0.55 | 0.29
6+ priors | all 6+ priors | 349 | all 0-5 priors | 3014 | 125.5 | 0.66 | 0.26
Black | Black male | 1168 | non-Black male | 1433 | 100.9 | 0.44 | 0.19
Female | female, 6+ priors | 40 | male, 6+ priors | 309 | 46.9 | 0.80 | 0.65
Male | Asian and Hispanic male | 286 | Asian and Hispanic female | 57 | 22.3 | 0.21 | 0.05
1 to 5 priors | under 25, 1-5 priors | 227 | under 25, 0 or 6+ priors | 366 | 12.5 | 0.64 | 0.47
Felony | white female, felony | 139 | white female, misdemeanor | 173 | 9.40 | 0.38 | 0.21
White | white female, under 25, no priors | 31 | non-white female, under 25, no priors | 70 | 1.98 | 0.71 | 0.56
Misdemeanor | Native American, 1-5 priors, misdemeanor | 2 | Native American, 1-5 priors, felony | 1 | 1.67 | 1.00 | 0.00
Age 25+ | Asian, 25+, felony | 10 | Asian, under 25, felony | 1 | 0.75 | 0.20 | 0.00
Native American | all Native American | 6 | all non-Native American | 3357 | 0.20 | 0.50 | 0.30
""",
    "sufficiency_probabilities": """
No priors | all no priors | 2085 | all 1+ priors | 4087 | 111.5 | 0.29 | 0.54
Age 25+ | male, 25+, 0-5 priors | 2867 | male, under 25, 0-5 priors | 1041 | 92.6 | 0.35 | 0.59
Male | male Native American, 25+ | 7 | female Native American, 25+ | 2 | 31.2 | 0.14 | 1.00
Female | female, under 25 | 246 | male, under 25 | 1101 | 18.7 | 0.38 | 0.60
Misdemeanor | female, misdemeanor | 491 | female, felony | 684 | 3.51 | 0.26 | 0.41
Asian | Asian, misdemeanor | 12 | non-Asian, misdemeanor | 2190 | 3.20 | 0.00 | 0.38
White | white, under 25 | 347 | non-white, under 25 | 1000 | 2.36 | 0.49 | 0.58
Black | Black female | 549 | non-Black female | 626 | 2.22 | 0.37 | 0.34
1 to 5 priors | Black, 25+, 1-5 priors | 1038 | Black, 25+, 0 or 6+ priors | 1328 | 2.18 | 0.42 | 0.55
Hispanic | all Hispanic | 509 | all non-Hispanic | 5663 | 0.27 | 0.37 | 0.46
Native American | all Native American | 11 | all non-Native American | 6161 | 0.17 | 0.45 | 0.46
""",
    "sufficiency_recommendations": """
Age 25+ | male, 25+, 0-5 priors | 772 | male, under 25, 0-5 priors | 641 | 52.9 | 0.52 | 0.67
No priors | all no priors | 553 | all 1+ priors | 2198 | 51.0 | 0.46 | 0.67
Female | female, no priors | 150 | male, no priors | 403 | 35.3 | 0.33 | 0.50
Misdemeanor | male, 0-5 priors, misdemeanor | 398 | male, 0-5 priors, felony | 1015 | 28.2 | 0.52 | 0.61
1 to 5 priors | male, 25+, 1-5 priors | 595 | male, 25+, 0 or 6+ priors | 981 | 26.8 | 0.54 | 0.70
Male | male Native American, 25+ | 4 | female Native American, 25+ | 2 | 14.1 | 0.25 | 1.00
Hispanic | all Hispanic | 141 | all non-Hispanic | 2610 | 2.40 | 0.56 | 0.63
6+ priors | Asian, 6+ priors | 1 | Asian, 0-5 priors | 6 | 0.41 | 0.00 | 0.83
White | white female, under 25 | 57 | non-white female, under 25 | 110 | 0.40 | 0.39 | 0.47
Black | Black, 25+, 0-5 priors | 581 | non-Black, 25+, 0-5 priors | 404 | 0.34 | 0.50 | 0.52
""",
}


def _parse_table4() -> pd.DataFrame:
    rows = []
    for scan, text in _T4_TEXT.items():
        for line in text.strip().splitlines():
            fields = [f.strip() for f in line.split("|")]
            prot, det, n, comp, comp_n, score, rate, comp_rate = fields
            rows.append((scan, prot, det, int(n), comp, int(comp_n), float(score), float(rate),
                         float(comp_rate)))
    return pd.DataFrame(rows, columns=[
        "scan", "protected", "detected", "n", "comparison", "comparison_n", "score", "rate",
        "comparison_rate",
    ])


#: The paper's Table 4 (every run with a positive score), as printed.
PAPER_TABLE4 = _parse_table4()


def compas_case_study(
    frame: pd.DataFrame,
    *,
    scans: Sequence[str] | None = None,
    protected: Sequence[str] | None = None,
    n_restarts: int = 50,
    n_permutations: int = 0,
    min_group_size: int = 1,
    n_jobs: int | None = -1,
    random_state: int | np.random.Generator | None = 0,
    **scan_options,
) -> pd.DataFrame:
    """Run the case study's scans and put the port's results beside the paper's Table 4.

    Parameters
    ----------
    frame : pandas.DataFrame
        ``fetch_compas(preprocess="cbs").frame``.
    scans : sequence of str, optional
        Keys of :data:`COMPAS_SCANS` (default: all four).
    protected : sequence of str, optional
        Keys of :data:`PAPER_PROTECTED` (default: all of them).
    n_restarts, n_permutations, n_jobs, random_state
        Passed to :func:`~pcfair.audits.cbs.conditional_bias_scan` (the paper used 500
        restarts; 0 permutations skips the test).
    min_group_size : int, default 1
        The paper's scan is unconstrained (1), which is what Table 4 reports; the scan's own
        default (30) leaves out its smallest subgroups.
    **scan_options
        Other options of the scan (penalty, C...); they override :data:`COMPAS_SCANS`.

    Returns
    -------
    pandas.DataFrame
        One row per (scan, protected class): the port's ``detected``, ``n``, ``score``,
        ``rate``, ``comparison_n``, ``comparison_rate``, ``p_value``, and the paper's values
        in ``paper_*`` columns (NaN where Table 4 has no row, i.e. the paper's score was 0).

    Examples
    --------
    >>> from pcfair.datasets import fetch_compas  # doctest: +SKIP
    >>> frame = fetch_compas(preprocess="cbs").frame  # doctest: +SKIP
    >>> t = compas_case_study(frame, scans=["separation_recommendations"],
    ...                       protected=["Black"])  # doctest: +SKIP
    >>> t.loc[0, ["detected", "n", "paper_n"]].tolist()  # doctest: +SKIP
    ['race = African-American & sex = Male', 1168, 1168.0]
    """
    scans = list(COMPAS_SCANS if scans is None else scans)
    protected = list(PAPER_PROTECTED if protected is None else protected)
    for s in scans:
        if s not in COMPAS_SCANS:
            raise CBSOptionError(f"scan {s!r} is not one of {', '.join(COMPAS_SCANS)}")
    for p in protected:
        if p not in PAPER_PROTECTED:
            raise CBSOptionError(f"protected {p!r} is not one of {', '.join(PAPER_PROTECTED)}")
    rng = np.random.default_rng(random_state)
    rows = []
    for s in scans:
        for p in protected:
            col, value = PAPER_PROTECTED[p]
            res = conditional_bias_scan(
                frame,
                protected=(col, value),
                outcome="two_year_recid",
                prediction="predicted_prob",
                recommendation="high_risk",
                covariates=[c for c in COMPAS_ATTRIBUTES if c != col],
                n_restarts=n_restarts,
                n_permutations=n_permutations,
                min_group_size=min_group_size,
                n_jobs=n_jobs,
                random_state=rng,
                **{**COMPAS_SCANS[s], **scan_options},
            )
            rows.append(
                {
                    "scan": s,
                    "protected": p,
                    "detected": res.subgroup_text,
                    "n": res.n,
                    "score": res.score,
                    "rate": res.observed_rate,
                    "comparison_n": res.comparison_n,
                    "comparison_rate": res.comparison_rate,
                    "p_value": res.p_value,
                }
            )
    port = pd.DataFrame(rows)
    paper = PAPER_TABLE4.rename(
        columns={c: f"paper_{c}" for c in PAPER_TABLE4.columns if c not in ("scan", "protected")}
    )
    return port.merge(paper, on=["scan", "protected"], how="left")
