"""The paper's COMPAS case study on ProPublica's two-year data (spec test 16).

Needs ../shared/data (raw/compas-scores-two-years.csv); skipped otherwise.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import SHARED_DATA, requires_data

from pcfair.audits.cbs import conditional_bias_scan
from pcfair.audits.cbs.case_study import (
    COMPAS_ATTRIBUTES,
    COMPAS_SCANS,
    PAPER_PROTECTED,
    PAPER_TABLE4,
    compas_case_study,
)

pytestmark = requires_data()


@pytest.fixture(scope="module")
def compas():
    from pcfair.datasets import fetch_compas

    return fetch_compas(preprocess="cbs", data_home=SHARED_DATA, download_if_missing=False).frame


def test_descriptive_numbers_match_the_paper(compas):
    assert len(compas) == 6172
    assert int((compas.two_year_recid == 0).sum()) == 3363
    assert int(compas.high_risk.sum()) == 2751
    y0 = compas[compas.two_year_recid == 0]
    male = y0.sex == "Male"
    black = y0.race == "African-American"
    assert int((male & black).sum()) == 1168 and int((male & ~black).sum()) == 1433
    assert y0[male & black].high_risk.mean() == pytest.approx(0.44, abs=0.005)
    assert y0[male & ~black].high_risk.mean() == pytest.approx(0.19, abs=0.005)
    assert y0[black].high_risk.mean() == pytest.approx(0.42, abs=0.005)
    assert y0[~black].high_risk.mean() == pytest.approx(0.20, abs=0.005)
    # P is the reoffence rate of the decile score, Pbin is decile >= 5
    rates = compas.groupby("decile_score").two_year_recid.mean()
    np.testing.assert_allclose(compas.predicted_prob, rates.loc[compas.decile_score].to_numpy())


def test_fpr_scan_for_black_defendants_finds_black_males(compas):
    res = conditional_bias_scan(
        compas, protected=("race", "African-American"), outcome="two_year_recid",
        prediction="predicted_prob", recommendation="high_risk",
        covariates=[c for c in COMPAS_ATTRIBUTES if c != "race"], n_restarts=50,
        n_permutations=0, random_state=0, **COMPAS_SCANS["separation_recommendations"],
    )
    assert res.subgroup == {"sex": ["Male"]}
    assert res.score == pytest.approx(100.9, rel=0.10)
    assert (res.n, res.comparison_n) == (1168, 1433)
    assert res.observed_rate == pytest.approx(0.44, abs=0.005)
    assert res.comparison_rate == pytest.approx(0.19, abs=0.005)


def test_case_study_table_matches_most_of_table4(compas):
    """All four scans for every protected class of Table 4 (port vs paper, side by side)."""
    table = compas_case_study(compas, n_restarts=50, n_permutations=0, random_state=0)
    assert len(table) == 4 * len(PAPER_PROTECTED)
    both = table[table.paper_score.notna()]
    assert len(both) == len(PAPER_TABLE4) == 40
    same_size = (both.n == both.paper_n).mean()
    log_ratio = np.abs(np.log(both.score.clip(lower=1e-3) / both.paper_score))
    assert same_size >= 0.65
    assert np.median(log_ratio) < 0.1
    # the findings the paper's text states
    row = both.set_index(["scan", "protected"])
    assert row.loc[("separation_recommendations", "Black"), "n"] == 1168
    assert row.loc[("separation_probabilities", "Black"), "n"] == 1168
    assert row.loc[("sufficiency_probabilities", "No priors"), "score"] == pytest.approx(
        111.5, rel=0.05)
    assert row.loc[("sufficiency_recommendations", "Age 25+"), "n"] == 772
