"""How ``engine="auto"`` chooses, and the contracts every engine keeps on a wide model.

The models are Chow-Liu circuits learned from tables shaped like raw UCI Adult
(:mod:`_raw_tables`): twelve features with up to 16 values, a pattern lattice of about
7 × 10^9 points (too large to scan in a test), sensitive ``sex`` and ``race``, favourable
decision ``">50K"``.

- **unfair**: ``plant=0.3`` (``sex`` and ``race`` move the decision by 0.3): ``sex=Female``
  alone has ``|Δ| ≈ 0.15``, so ``certify`` at δ = 0.05 must answer "unfair" in seconds
  whatever the lattice's size.
- **fair**: ``plant=0`` on 30,000 rows, certified at δ = :data:`FAIR_DELTA` (the tree search
  proves it in under a hundred nodes; at δ = :data:`HARD_DELTA` no engine finishes in
  seconds, which the time-limit tests use).

Checked: the answers and their witnesses (against ``Circuit.conditional``), that ``"auto"``
picks the cheapest complete engine it estimated, that every engine keeps its time limit and
what it found so far, that ``n_jobs`` above the cores is capped with a warning, and two
properties of the source: ``pcfair/patterns`` imports without cycles, and only
``pcfair/patterns/engines.py`` decides what ``"auto"`` means.
"""

from __future__ import annotations

import ast
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import pcfair
from _raw_tables import (
    DECISION,
    INCOME,
    SENSITIVE,
    lattice_points,
    learned_model,
    raw_adult_like,
)
from pcfair.errors import ResourceCappedWarning

FAV = INCOME[1]
#: The fair model's threshold: above its largest |Δ| by a margin the bound sees at once.
FAIR_DELTA = 0.2
#: A threshold at which no engine finishes on the fair model within seconds.
HARD_DELTA = 0.1
#: The wall time within which "auto" must find the planted witness.
WITNESS_SECONDS = 10.0
#: ``estimate_engines`` must take at most this long (its own "seconds" field); the measured
#: wall time may add this much on top (the call's argument checks).
ESTIMATE_SECONDS = 2.0
ESTIMATE_SLACK = 0.5
TIME_LIMITS = (0.5, 2.0)
LIMITED_ENGINES = ("lattice", "search", "python_search", "auto")
SEARCH_ENGINES = ("naive_bayes_search", "tree_search", "python_search")
PATTERNS_DIR = Path(__file__).resolve().parents[2] / "pcfair" / "patterns"


def deadline_slack(limit: float) -> float:
    """Seconds within which a call with ``time_limit=limit`` must return (measured)."""
    return 1.1 * limit + 2.0


# --- models ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def warm():
    """Compile (or load from numba's cache) the kernels of every engine on a three-feature
    model, so that no timed call pays for it."""
    tiny = learned_model(raw_adult_like(500, random_state=1, plant=0.3)[
        ["age", "race", "sex", DECISION]])
    for engine in ("auto", "lattice", "search", "python_search"):
        for delta in (0.05, 0.99):
            pcfair.certify(tiny, DECISION, SENSITIVE, delta, favorable=FAV, engine=engine)
    pcfair.find_patterns(tiny, DECISION, SENSITIVE, 0.05, kind="all", favorable=FAV)
    return tiny


@pytest.fixture(scope="module")
def unfair():
    """The planted model: 3,000 rows, ``plant=0.3``."""
    return learned_model(raw_adult_like(3000, random_state=0, plant=0.3))


@pytest.fixture(scope="module")
def fair():
    """The model without a planted effect: 30,000 rows, ``plant=0``, fair at FAIR_DELTA."""
    return learned_model(raw_adult_like(30_000, random_state=0, plant=0.0))


def direct_score(pc, pattern) -> float:
    """``P(D = fav | x, y) − P(D = fav | y)`` of a returned pattern, from the circuit's own
    conditionals (no engine involved)."""
    query = {DECISION: FAV}
    with_x = pc.conditional(query, {**pattern.x, **pattern.y})
    without = pc.conditional(query, dict(pattern.y)) if pattern.y else pc.conditional(query)
    return float(with_x - without)


def assert_consistent_choice(choice: dict, budget: float | None) -> None:
    """``"auto"`` ran the cheapest complete engine it had a figure for.

    ``choice`` is ``stats["choice"]`` (or :func:`estimate_engines`' answer). Where the chosen
    engine has a finite estimate it is the smallest finite estimate among the engines that
    apply and answer completely; where it has none (a search that did not finish its probe),
    the lattice was not within ``budget`` (or does not apply); and a lattice chosen while a
    search's cost stayed unknown was estimated within ``budget``."""
    assert isinstance(choice, dict) and {"engine", "reason", "estimates"} <= set(choice)
    assert isinstance(choice["reason"], str) and choice["reason"]
    estimates = choice["estimates"]
    chosen = choice["engine"]
    assert chosen in estimates, (chosen, estimates)
    for name, est in estimates.items():
        assert {"seconds", "complete", "note"} <= set(est), (name, est)
        assert est["seconds"] is None or (math.isfinite(est["seconds"]) and est["seconds"] >= 0)
    usable = {name: est["seconds"] for name, est in estimates.items()
              if est.get("applies", True) and est["complete"] and est["seconds"] is not None}
    own = estimates[chosen]["seconds"]
    if chosen in usable:
        assert own <= min(usable.values()) * 1.1 + 1e-3, (chosen, estimates)
    elif own is None:
        lattice = estimates.get("lattice", {})
        if lattice.get("applies", True) and lattice.get("seconds") is not None:
            assert budget is not None and lattice["seconds"] > budget, (chosen, estimates)
    unknown = [name for name, est in estimates.items()
               if est.get("applies", True) and est["seconds"] is None and name != "lattice"]
    if chosen == "lattice" and unknown:
        assert budget is None or estimates["lattice"]["seconds"] <= budget, estimates


def auto_budget() -> float:
    """Seconds within which "auto" scans the lattice when no time limit is given."""
    from pcfair.patterns import engines

    return float(getattr(engines, "AUTO_LATTICE_SECONDS", 900.0))


def test_models_are_wide(unfair, fair):
    """The premise: both lattices are far too large to scan in a test."""
    assert lattice_points(unfair) >= 1e9 and lattice_points(fair) >= 1e9
    cards = dict(zip(fair.variables.names, fair.variables.cardinalities))
    assert cards["education"] == 16 and cards["occupation"] == 14


# --- auto: answers and choices --------------------------------------------------------------

def test_auto_finds_the_planted_witness_in_seconds(warm, unfair):
    t = time.perf_counter()
    cert = pcfair.certify(unfair, DECISION, SENSITIVE, 0.05, favorable=FAV)
    spent = time.perf_counter() - t
    assert spent <= WITNESS_SECONDS, f"auto took {spent:.1f} s ({cert.stats.get('choice')})"
    assert cert.fair is False and cert.complete
    assert cert.engine in ("lattice", "search")
    w = cert.witness
    assert w is not None and abs(w.score) > 0.05
    assert set(w.x) <= set(SENSITIVE) and w.x
    assert direct_score(unfair, w) == pytest.approx(w.score, abs=1e-9)
    assert 0 < w.probability <= 1
    top = pcfair.find_patterns(unfair, DECISION, SENSITIVE, 0.05, kind="topk", k=1,
                               favorable=FAV, engine="search", time_limit=5)
    assert len(top) == 1 and top[0].abs_score > 0.05
    if top.complete:
        assert top[0].abs_score >= abs(w.score) - 1e-12


def test_auto_certifies_the_fair_model_with_the_cheapest_engine(warm, fair):
    cert = pcfair.certify(fair, DECISION, SENSITIVE, FAIR_DELTA, favorable=FAV)
    assert cert.fair is True and cert.complete and cert.witness is None
    choice = cert.stats["choice"]
    assert_consistent_choice(choice, auto_budget())
    assert cert.stats["engine"] == choice["engine"]
    assert cert.engine == ("lattice" if choice["engine"] == "lattice" else "search")
    # the forced engines agree where they finish, and never contradict where they do not
    for engine, limit in (("search", 10.0), ("lattice", 5.0)):
        other = pcfair.certify(fair, DECISION, SENSITIVE, FAIR_DELTA, favorable=FAV,
                               engine=engine, time_limit=limit)
        assert other.fair is (True if other.complete else None), (engine, other.stats)
        if other.max_abs_score is not None:
            assert other.max_abs_score <= FAIR_DELTA + 1e-12


def test_auto_choice_is_reported_for_the_unfair_model(warm, unfair):
    cert = pcfair.certify(unfair, DECISION, SENSITIVE, 0.05, favorable=FAV)
    assert_consistent_choice(cert.stats["choice"], auto_budget())
    assert cert.stats["engine"] == cert.stats["choice"]["engine"]


@pytest.mark.parametrize("which", ["unfair", "fair"])
def test_estimate_engines_is_quick_and_consistent(warm, request, which):
    from pcfair.patterns.engines import estimate_engines

    pc = request.getfixturevalue(which)
    delta = 0.05 if which == "unfair" else FAIR_DELTA
    t = time.perf_counter()
    est = estimate_engines(pc, DECISION, SENSITIVE, delta, favorable=FAV)
    spent = time.perf_counter() - t
    assert est["seconds"] <= ESTIMATE_SECONDS and spent <= ESTIMATE_SECONDS + ESTIMATE_SLACK
    assert_consistent_choice(est, auto_budget())
    json.dumps(est, default=str)  # the CLI prints it as JSON


def test_cli_dry_run_prints_the_estimate_as_one_json_object(warm, unfair, tmp_path):
    script = Path(sys.executable).with_name("pcfair")
    if not script.exists():
        pytest.skip("the pcfair script is not installed beside this Python")
    path = tmp_path / "unfair.json"
    pcfair.save(unfair, path)
    proc = subprocess.run(
        [str(script), "certify", str(path), "--decision", DECISION, "--sensitive",
         ",".join(SENSITIVE), "--delta", "0.05", "--favorable", FAV, "--dry-run",
         "--format", "json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    est = json.loads(proc.stdout)
    assert est["seconds"] <= ESTIMATE_SECONDS
    assert_consistent_choice(est, auto_budget())


# --- time limits ----------------------------------------------------------------------------

def assert_partial_stats(stats: dict) -> None:
    """A stopped run still says how far it got."""
    assert stats, "a stopped run must keep its statistics"
    for key in ("nodes", "chunks_done", "points"):
        if key in stats:
            assert stats[key] >= 0, (key, stats)


@pytest.mark.parametrize("limit", TIME_LIMITS)
@pytest.mark.parametrize("engine", LIMITED_ENGINES)
def test_certify_keeps_its_time_limit(warm, fair, engine, limit):
    t = time.perf_counter()
    cert = pcfair.certify(fair, DECISION, SENSITIVE, HARD_DELTA, favorable=FAV, engine=engine,
                          time_limit=limit)
    spent = time.perf_counter() - t
    assert spent <= deadline_slack(limit), (f"{engine} with time_limit={limit} took "
                                            f"{spent:.2f} s", cert.stats)
    assert cert.fair is not True or cert.complete
    if cert.complete:  # it legitimately finished
        assert cert.fair in (True, False)
    else:
        assert cert.fair is None and cert.witness is None
    if cert.witness is not None:
        assert abs(cert.witness.score) > HARD_DELTA
        assert direct_score(fair, cert.witness) == pytest.approx(cert.witness.score, abs=1e-9)
    assert_partial_stats(cert.stats)
    if engine != "auto":
        concrete = cert.stats["engine"]
        assert (concrete == "lattice") if engine == "lattice" else (concrete in SEARCH_ENGINES)
        if engine == "python_search":
            assert concrete == "python_search"


@pytest.mark.parametrize("limit", TIME_LIMITS)
@pytest.mark.parametrize("engine", LIMITED_ENGINES)
def test_find_all_keeps_its_time_limit_and_what_it_found(warm, unfair, engine, limit):
    """Every pattern of the planted model is far too many to list in seconds: the run stops
    at its limit, says it is incomplete, and returns the patterns found so far."""
    t = time.perf_counter()
    ps = pcfair.find_patterns(unfair, DECISION, SENSITIVE, 0.05, kind="all", favorable=FAV,
                              engine=engine, time_limit=limit)
    spent = time.perf_counter() - t
    assert spent <= deadline_slack(limit), (f"{engine} with time_limit={limit} took "
                                            f"{spent:.2f} s, {len(ps.patterns)} patterns",
                                            ps.stats)
    assert not ps.complete, f"{engine} listed every pattern in {spent:.2f} s?"
    assert_partial_stats(ps.stats)
    concrete = ps.stats.get("engine")
    if concrete in SEARCH_ENGINES:
        assert len(ps.patterns) > 0, ps.stats
    elif ps.stats.get("chunks_done", 0) > 0:
        assert len(ps.patterns) > 0, ps.stats
    for p in ps.patterns[:: max(1, len(ps.patterns) // 5)][:5]:
        assert abs(p.score) > 0.05
        assert direct_score(unfair, p) == pytest.approx(p.score, abs=1e-9)


# --- resources ------------------------------------------------------------------------------

def test_n_jobs_above_the_cores_is_capped_with_a_warning(warm, unfair):
    too_many = (os.cpu_count() or 1) + 1
    with pytest.warns(ResourceCappedWarning):
        cert = pcfair.certify(unfair, DECISION, SENSITIVE, 0.05, favorable=FAV,
                              n_jobs=too_many)
    assert cert.fair is False and abs(cert.witness.score) > 0.05


def test_n_jobs_above_the_cores_still_answers_on_the_lattice(warm):
    too_many = (os.cpu_count() or 1) + 1
    with pytest.warns(ResourceCappedWarning):
        ps = pcfair.find_patterns(warm, DECISION, SENSITIVE, 0.0, kind="topk", k=1,
                                  favorable=FAV, engine="lattice", n_jobs=too_many)
    ref = pcfair.find_patterns(warm, DECISION, SENSITIVE, 0.0, kind="topk", k=1,
                               favorable=FAV, engine="lattice")
    assert ps.complete and ref.complete
    assert ps[0].abs_score == pytest.approx(ref[0].abs_score, abs=1e-12)


# --- the source of pcfair/patterns ----------------------------------------------------------

PACKAGE = "pcfair.patterns"


def _modules() -> dict[str, Path]:
    """``pcfair.patterns`` (its ``__init__``) and every ``pcfair.patterns.X`` by file."""
    out = {}
    for path in sorted(PATTERNS_DIR.glob("*.py")):
        out[PACKAGE if path.stem == "__init__" else f"{PACKAGE}.{path.stem}"] = path
    return out


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of the statements under ``if TYPE_CHECKING:`` (never executed)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If):
            test = node.test
            name = (test.id if isinstance(test, ast.Name) else
                    test.attr if isinstance(test, ast.Attribute) else None)
            if name == "TYPE_CHECKING":
                for stmt in node.body:
                    skip.update(id(n) for n in ast.walk(stmt))
    return skip


def _imported(module: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The modules of ``pcfair.patterns`` that ``module`` imports anywhere in its file (inside
    functions too; not under ``if TYPE_CHECKING:``): ``import a.b``, ``from a.b import c``
    (``c`` a submodule, else ``a.b``), and relative forms."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    skip = _type_checking_nodes(tree)
    package = module if path.stem == "__init__" else module.rsplit(".", 1)[0]
    found: set[str] = set()

    def owner(name: str) -> str | None:
        """The module of ``pcfair.patterns`` that ``name`` (a module path) is or lies in."""
        parts = name.split(".")
        for n in range(len(parts), 0, -1):
            candidate = ".".join(parts[:n])
            if candidate in modules:
                return candidate
        return None

    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = owner(alias.name)
                if target is not None:
                    found.add(target)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                target = sub if sub in modules else owner(base)
                if target is not None:
                    found.add(target)
    found.discard(module)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {m: _imported(m, p, modules) for m, p in modules.items()}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` as a list of modules (first repeated last), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if state.get(nxt) is None:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if state.get(node) is None:
            cycle = visit(node)
            if cycle:
                return cycle
    return None


def test_import_graph_resolution(tmp_path):
    """The resolver sees every import form (a check of the checker, on a made-up package)."""
    files = {
        "__init__.py": "from .a import f\n",
        "a.py": "from pcfair.patterns import b\n\ndef f():\n    from .c import thing\n",
        "b.py": "import pcfair.patterns.c\nfrom pcfair.patterns import certify\n",
        "c.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                 "    from pcfair.patterns.a import A\nimport numpy\n"),
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    modules = {PACKAGE if n == "__init__.py" else f"{PACKAGE}.{n[:-3]}": tmp_path / n
               for n in files}
    graph = {m: _imported(m, p, modules) for m, p in modules.items()}
    pkg = PACKAGE
    assert graph == {pkg: {f"{pkg}.a"}, f"{pkg}.a": {f"{pkg}.b", f"{pkg}.c"},
                     f"{pkg}.b": {f"{pkg}.c", pkg}, f"{pkg}.c": set()}
    assert find_cycle(graph) == [pkg, f"{pkg}.a", f"{pkg}.b", pkg]
    assert find_cycle({"a": {"b"}, "b": set()}) is None
    real = import_graph()
    assert len(real) > 10 and sum(map(len, real.values())) > 20


def test_patterns_imports_have_no_cycle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle in pcfair/patterns: " + " -> ".join(cycle)


def _engine_decisions(tree: ast.AST) -> list[str]:
    """What in ``tree`` decides engines: ``AUTO_*`` constants, functions named ``_engine`` or
    ``choose_engine``, and comparisons of an ``*engine*`` name with ``"auto"``."""

    def is_auto(node: ast.AST) -> bool:
        if isinstance(node, ast.Constant):
            return node.value == "auto"
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return any(is_auto(e) for e in node.elts)
        return False

    def mentions_engine(node: ast.AST) -> bool:
        name = (node.id if isinstance(node, ast.Name) else
                node.attr if isinstance(node, ast.Attribute) else "")
        return "engine" in name.lower()

    found = []
    for node in ast.walk(tree):
        targets = (node.targets if isinstance(node, ast.Assign) else
                   [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
        for t in targets:
            for n in ast.walk(t):
                if isinstance(n, ast.Name) and n.id.startswith("AUTO_"):
                    found.append(f"line {node.lineno}: constant {n.id}")
        if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.name in ("_engine", "choose_engine")):
            found.append(f"line {node.lineno}: function {node.name}")
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(is_auto(s) for s in sides) and any(mentions_engine(s) for s in sides):
                found.append(f"line {node.lineno}: compares an engine with 'auto'")
    return found


def test_only_engines_decides_what_auto_means():
    modules = _modules()
    engines = modules[f"{PACKAGE}.engines"]
    assert "auto" in engines.read_text(encoding="utf-8")
    offenders = {}
    for name, path in modules.items():
        if path == engines:
            continue
        found = _engine_decisions(ast.parse(path.read_text(encoding="utf-8")))
        if found:
            offenders[path.name] = found
    assert not offenders, f"engine decisions outside engines.py: {offenders}"


# --- the command line -----------------------------------------------------------------------

def test_cli_engine_choices_are_the_engine_tables_names():
    from pcfair.cli import ENGINE_CHOICES
    from pcfair.patterns import engines

    assert set(ENGINE_CHOICES) == {*engines.FAMILIES, *engines.SEARCH_KINDS, *engines.ALIASES}
    assert set(engines.ENGINES) == {"lattice", "sample", *engines.SEARCH_KINDS}


def test_cli_verbose_and_max(warm, unfair, tmp_path, capsys):
    """``--verbose`` says which engine ran and why; ``--max`` makes the lattice establish the
    exact largest |Δ| (the witness is then the largest), without it a witness chunk ends the
    scan."""
    from pcfair.cli import main

    path = tmp_path / "small.json"
    pcfair.save(warm, path)
    args = ["certify", str(path), "--decision", DECISION, "--sensitive", ",".join(SENSITIVE),
            "--delta", "0.01", "--favorable", FAV]
    assert main([*args, "--verbose"]) == 1
    captured = capsys.readouterr()
    assert "engine lattice: the lattice is estimated at" in captured.err
    assert main([*args, "--engine", "lattice", "--max", "--format", "json"]) == 1
    exact = json.loads(capsys.readouterr().out)
    top = pcfair.find_patterns(warm, DECISION, SENSITIVE, 0.01, kind="topk", k=1,
                               favorable=FAV, engine="lattice")
    assert exact["max_abs_exact"] and exact["max_abs_score"] == pytest.approx(top[0].abs_score)
    assert abs(exact["witness"]["score"]) == pytest.approx(top[0].abs_score)


def test_cli_says_when_the_witness_describes_almost_nobody(tmp_path, capsys):
    """A naive Bayes where only a context of probability 2·10⁻⁶ moves the decision by more
    than δ: the witness is that rare, the CLI says so, and finds that no pattern with
    ``P(x, y) >= 1e-4`` discriminates."""
    from pcfair.circuit import CircuitBuilder
    from pcfair.cli import main

    b = CircuitBuilder({"d": [0, 1], "s": [0, 1], "z": [0, 1]})
    pc = b.build(b.decision([
        (b.indicator("d", 1), b.product(b.categorical("s", [0.5, 0.5]),
                                        b.categorical("z", [1 - 1e-6, 1e-6])), 0.99),
        (b.indicator("d", 0), b.product(b.categorical("s", [0.9, 0.1]),
                                        b.categorical("z", [1 - 99e-6, 99e-6])), 0.01)]))
    path = tmp_path / "rare.json"
    pcfair.save(pc, path)
    args = ["certify", str(path), "--decision", "d", "--sensitive", "s", "--delta", "0.05"]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "| z=1" in out and "describes P(x,y) = " in out
    assert "no witness with P(x,y) >= 0.0001 exists" in out
    assert main([*args, "--format", "json"]) == 1
    answer = json.loads(capsys.readouterr().out)
    assert answer["witness"]["probability"] < 1e-4 and answer["supported_witness"] is None
    assert answer["favorable"] == 1 and answer["decision"] == "d"
    ranked = ["patterns", *args[1:], "--kind", "topk", "--k", "1"]
    assert main(ranked) == 0
    assert "note: the first pattern describes P(x,y) = " in capsys.readouterr().out
    assert main([*ranked, "--min-support", "1e-4"]) == 0
    assert "note:" not in capsys.readouterr().out
    # a model that knows its 100 training rows: one row (0.01) is the bar, not 1e-4
    from pcfair.tables.recipe import Recipe

    pcfair.save(pc.with_recipe(Recipe(columns=("d", "s", "z"), decision="d", rows=100)), path)
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "(under 0.01, one of the model's 100 training rows)" in out


@pytest.mark.parametrize("lattice,search,left,cap", [
    (None, True, None, None), (None, False, 0.3, None), (0.5, True, None, None),
    (3.0, True, None, None), (40.0, True, None, None), (40.0, False, None, None),
    (40.0, True, 30.0, None), (40.0, True, 60.0, None), (40.0, True, None, 0.5),
    (4000.0, True, None, None), (1e9, True, 1e10, None)])
def test_the_probe_risks_at_most_a_quarter_of_the_lattice(lattice, search, left, cap):
    """A search's probe before a lattice that would run after it is a quarter of the lattice's
    estimate when that is over PROBE_SECONDS; never over half the estimate, the time left or
    the cap; PROBE_SECONDS (or less) otherwise."""
    from pcfair.patterns.engines import PROBE_SECONDS, PROBE_SHARE, probe_length

    got = probe_length(lattice, search, left, cap)
    limits = [c for c in (left, cap) if c is not None]
    if lattice is not None:
        limits.append(lattice / 2)
    runs_after = (search and lattice is not None
                  and lattice <= (left if left is not None else 900.0))
    want = max(PROBE_SECONDS, PROBE_SHARE * lattice) if runs_after else PROBE_SECONDS
    assert got == pytest.approx(min([want] + limits))
    if lattice is not None and runs_after:
        assert got <= PROBE_SHARE * lattice or got <= PROBE_SECONDS


def test_an_exact_max_cut_by_the_time_limit_stays_a_bound_and_says_so(capsys):
    """``--max`` with a time limit too short for the top-1 (the shipped German CLT's takes
    over a minute by the search): a lower bound, printed with ``>=`` and a note, never
    presented as exact."""
    from pcfair.cli import main

    model = Path(__file__).resolve().parents[2] / "circuits" / "german_clt.json"
    sens = ["age", "foreign_worker", "sex", "marital_status"]
    cert = pcfair.certify(pcfair.load(model), "loan_status", sens, 0.05, engine="search",
                          exact_max=True, time_limit=0.3)
    assert not cert.max_abs_exact and "the value is a lower bound" in cert.stats["max_abs_note"]
    main(["certify", str(model), "--decision", "loan_status", "--sensitive", ",".join(sens),
          "--delta", "0.05", "--engine", "search", "--max", "--time-limit", "0.3"])
    out = capsys.readouterr().out
    assert "max |Δ| >= " in out and "note: the top-1 run for the exact largest |Δ|" in out
