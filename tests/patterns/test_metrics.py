import itertools
import json

import numpy as np
import pytest

import pcfair
from pcfair.patterns import fairness_metrics
from _pcgen import joint_table, random_psdd


def brute(pc, sens):
    xs, p = joint_table(pc)
    d = 0

    def cond(mask):
        return p[mask & (xs[:, d] == 1)].sum() / p[mask].sum()

    card = pc.variables.cardinalities
    groups = []
    for vals in itertools.product(*[range(card[v]) for v in sens]):
        m = np.all(xs[:, sens] == vals, axis=1)
        if p[m].sum() > 0:
            groups.append(cond(m))
    sp1 = {}
    for v in sens:
        ps = [cond(xs[:, v] == val) for val in range(card[v]) if p[xs[:, v] == val].sum() > 0]
        sp1[f"x{v}"] = max(ps) - min(ps)
    # classifier over complete features z: P(d=1|z) > 0.5
    feats = xs[:, 1:]
    dhat = {}
    for z in {tuple(r) for r in feats}:
        m = np.all(feats == z, axis=1)
        dhat[z] = cond(m) > 0.5 if p[m].sum() > 0 else False
    pred = np.array([dhat[tuple(r)] for r in feats])
    eo = 0.0
    for c in (0, 1):
        rates = []
        for vals in itertools.product(*[range(card[v]) for v in sens]):
            m = np.all(xs[:, sens] == vals, axis=1) & (xs[:, d] == c)
            if p[m].sum() > 0:
                rates.append(p[m & pred].sum() / p[m].sum())
        if rates:
            eo = max(eo, max(rates) - min(rates))
    return 1 - min(groups) / max(groups), max(groups) - min(groups), sp1, eo


@pytest.mark.parametrize("seed", range(6))
def test_metrics_match_brute_force(seed):
    rng = np.random.default_rng(seed)
    pc = random_psdd(rng, [2, 2, 3, 2], zeros=False)
    sens = [1, 2]
    di, sp, sp1, eo = brute(pc, sens)
    m = fairness_metrics(pc, "x0", ["x1", "x2"])
    assert m.di == pytest.approx(di, abs=1e-12) and m.sp == pytest.approx(sp, abs=1e-12)
    assert m.sp1 == pytest.approx(sp1, abs=1e-12)
    assert m.eo_exact and m.eo == pytest.approx(eo, abs=1e-12)
    sampled = fairness_metrics(pc, "x0", ["x1", "x2"], max_enumerate=1, n_samples=20_000,
                               random_state=seed)
    assert not sampled.eo_exact and sampled.eo_stderr > 0
    assert abs(sampled.eo - eo) <= 6 * sampled.eo_stderr + 1e-3


def test_metrics_cli(tmp_path, capsys):
    from pcfair.cli import main

    pc = random_psdd(np.random.default_rng(0), [2, 2, 2], zeros=False)
    pcfair.save(pc, tmp_path / "m.json")
    assert main(["metrics", str(tmp_path / "m.json"), "--decision", "x0", "--sensitive", "x1",
                 "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data) >= {"DI", "SP", "SP-1", "EO"}
    assert data["SP"] == pytest.approx(fairness_metrics(pc, "x0", ["x1"]).sp)
