"""``pcfair patterns MODEL --kind topk --data TABLE.csv --distinct-rows``: a top-k without
rephrasings of the same rows, named in the header and a note; clear errors where it has no
meaning."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

import pcfair
from pcfair.cli import EXIT_BAD_INPUT, EXIT_OK, main
from pcfair.learn import learn_pc

ARGS = ["--decision", "d", "--sensitive", "s", "--delta", "0.01", "--min-support", "0.01"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A model and its training table, where ``b`` repeats ``a`` (so ``s=0 | a=1`` and
    ``s=0 | a=1, b=1`` describe the same rows)."""
    rng = np.random.default_rng(0)
    s, a, c = (rng.integers(0, 2, 400) for _ in range(3))
    d = (rng.random(400) < 0.2 + 0.4 * s * a + 0.2 * c).astype(int)
    table = pd.DataFrame({"d": d, "s": s, "a": a, "b": a, "c": c})
    folder = tmp_path_factory.mktemp("distinct")
    model, csv = folder / "m.json", folder / "t.csv"
    pcfair.save(learn_pc(table, "d"), model)
    table.to_csv(csv, index=False)
    return str(model), str(csv)


def test_the_listing_says_it_is_distinct_and_how_many_were_merged(files, capsys):
    model, csv = files
    assert main(["patterns", model, *ARGS, "--kind", "topk", "--k", "5", "--data", csv,
                 "--format", "json"]) == EXIT_OK
    plain = json.loads(capsys.readouterr().out)
    assert main(["patterns", model, *ARGS, "--kind", "topk", "--k", "5", "--data", csv,
                 "--distinct-rows", "--format", "json"]) == EXIT_OK
    top = json.loads(capsys.readouterr().out)
    merged = top["stats"]["distinct_rows"]["merged"]
    assert top["count"] == len(top["patterns"]) == 5 and merged > 0
    assert top["patterns"][0] == plain["patterns"][0]
    assert any(p not in top["patterns"] for p in plain["patterns"])   # rephrasings left out
    assert main(["patterns", model, *ARGS, "--kind", "topk", "--k", "5", "--data", csv,
                 "--distinct-rows"]) == EXIT_OK
    out = capsys.readouterr().out
    header = out.splitlines()[0]
    assert header.startswith("5 topk pattern(s)") and f"distinct rows of {csv}" in header
    assert (f"note: distinct rows: {merged:,} pattern(s) matching the same rows of {csv} as "
            "one listed above them were left out") in out
    assert "rows" in out.splitlines()[1]


@pytest.mark.parametrize("extra, words", [
    (["--kind", "topk"], "--distinct-rows needs --data TABLE.csv"),
    (["--data", "{csv}"], "--distinct-rows lists a top-k: it goes with --kind topk, not "
                          "--kind all"),
    (["--kind", "topk", "--data", "{csv}", "--count"], "not --count"),
    (["--kind", "topk", "--data", "{csv}", "--engine", "sample"], "not --engine sample"),
])
def test_distinct_rows_where_it_has_no_meaning_exits_2_with_one_line(files, capsys, extra,
                                                                     words):
    model, csv = files
    argv = ["patterns", model, *ARGS, "--distinct-rows", *(a.format(csv=csv) for a in extra)]
    assert main(argv) == EXIT_BAD_INPUT
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pcfair: error:") and words in lines[0]
    assert captured.out == ""
