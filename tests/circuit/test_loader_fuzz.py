"""Mutation fuzzing of :func:`pcfair.load` (issue 14, item 8).

Every model file shipped in ``circuits/`` (and, when ``../shared`` is beside the checkout, the
small zoo PSDDs) is mutated many times: byte flips, tokens replaced by huge or special numbers
(``10**8``, ``10**30``, ``-1``, ``inf``, ``nan``, ``1e309``...), lines deleted, duplicated,
swapped or truncated, random bytes, gzip corruption, and for JSON mutations of values, keys and
types. Each mutated file is loaded, and the outcome must be either a :class:`FormatError` naming
the file, or a model that passes validation here, checked independently of the loader:

* a circuit has no NaN/+inf parameters, is smooth (not for ``.sdd``) and decomposable, respects
  its vtree (``properties.respects_vtree``); for the normalised formats (``.psdd``, ``.jpc``,
  ``.json``) every log-weight is <= 1e-9, every sum and categorical leaf sums to 1 within
  ``|log Σ| <= 1e-6``, and log Z (the kernel's marginal and, for small models, the sum over all
  assignments) is 0 within 1e-5;
* a vtree is a valid :class:`Vtree`;

and each load takes less than :data:`TIME_LIMIT` seconds. The RNG is seeded; a failure lists the
seed, the source file, the mutation and the exception.
"""

from __future__ import annotations

import gzip
import itertools
import json
import math
import time
import traceback
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from conftest import SHARED_CIRCUITS

import pcfair
from pcfair.circuit import CATEGORICAL, SUM, Circuit, Vtree
from pcfair.circuit.properties import _smooth_decomposable, respects_vtree
from pcfair.inference.marginals import log_marginals

CIRCUITS = Path(__file__).resolve().parents[2] / "circuits"
TIME_LIMIT = 2.0
SPECIAL = ["100000000", "1000000000", "1" + "0" * 30, "-1", "0", "1", "2", "inf", "-inf", "nan",
           "1e309", "-1e309", "0.5", "-0.5", "800", "1e-12", "x", "", "9" * 5000, "+1",
           "3.0", "0x10", "1_0", "-0", "NaN", "Infinity"]
ZOO_SMALL = [("little_4var.psdd", "little_4var.vtree"), ("simple2.1.psdd", "simple2.vtree"),
             ("simple2.2.psdd", "simple2.vtree"), ("simple2.3.psdd", "simple2.vtree"),
             ("exp-D15-N1000-C4.psdd", "exp-D15-N1000-C4.vtree"),
             ("nltcs.clt.psdd", "nltcs.vtree"), ("nltcs.psdd", "nltcs.vtree"),
             ("little_4var.vtree", None)]


@dataclass
class Source:
    name: str               # file name to write (suffix decides the reader)
    data: bytes             # the unmutated content (uncompressed)
    vtree: bytes | None     # the sibling vtree's content, written beside it
    vtree_name: str | None


def _psdd_to_sdd(text: str) -> str:
    """A PSDD's logical skeleton as SDD text: ``T`` leaves (Bernoulli, full support) become the
    constant true, decision elements lose their weights."""
    out = []
    for line in text.splitlines():
        tok = line.split()
        if not tok or tok[0][0] == "c":
            continue
        if tok[0] == "psdd":
            out.append("sdd " + tok[1])
        elif tok[0] == "L":
            out.append(line)
        elif tok[0] == "T":
            out.append(f"T {tok[1]}")
        elif tok[0] == "D":
            k = int(tok[3])
            pairs = [f"{tok[4 + 3 * j]} {tok[5 + 3 * j]}" for j in range(k)]
            out.append(f"D {tok[1]} {tok[2]} {k} " + " ".join(pairs))
    return "\n".join(out) + "\n"


def _sources(tmp_root: Path) -> list[Source]:
    out: list[Source] = []
    for p in sorted(CIRCUITS.glob("*")):
        if p.suffix in (".json", ".psdd", ".vtree"):
            vt = p.with_suffix(".vtree") if p.suffix == ".psdd" else None
            out.append(Source(p.name, p.read_bytes(), vt.read_bytes() if vt else None,
                              vt.name if vt else None))
    for p in sorted(CIRCUITS.glob("*_clt.json")) + sorted(CIRCUITS.glob("compas_*.psdd")):
        c = pcfair.load(p)
        target = tmp_root / (p.stem + ("_psdd" if p.suffix == ".psdd" else "") + ".jpc")
        pcfair.save(c, target)
        out.append(Source(target.name, target.read_bytes(), None, None))
    for p in sorted(CIRCUITS.glob("*_clt.psdd")):
        sdd = _psdd_to_sdd(p.read_text())
        vt = p.with_suffix(".vtree")
        out.append(Source(p.stem + ".sdd", sdd.encode(), vt.read_bytes(), p.stem + ".vtree"))
    if SHARED_CIRCUITS.is_dir():
        for name, vt in ZOO_SMALL:
            data = (SHARED_CIRCUITS / name).read_bytes()
            if vt is None:
                out.append(Source(name, data, None, None))
            else:
                stem = name[: -len(".psdd")]
                out.append(Source(name, data, (SHARED_CIRCUITS / vt).read_bytes(), stem + ".vtree"))
    return out


# ------------------------------------------------------------------------------ mutations
def _lines_mutation(rng, text: str) -> tuple[str, str]:
    lines = text.split("\n")
    n = len(lines)
    op = rng.choice(["token", "token", "token", "token", "delete", "duplicate", "swap", "move",
                     "truncate_line", "insert_copy", "number_shift", "rewire", "rewire"])
    i = int(rng.integers(n))
    if op == "rewire":  # a token replaced by a token of another line: ids, variables, weights
        cand = [j for j, l in enumerate(lines) if len(l.split()) > 1 and not l.lstrip().startswith("c")]
        if len(cand) < 2:
            return text + "\nX", "append junk"
        i, j = (cand[int(x)] for x in rng.integers(len(cand), size=2))
        ti, tj = lines[i].split(), lines[j].split()
        k, m = int(rng.integers(1, len(ti))), int(rng.integers(1, len(tj)))
        desc = f"line {i + 1} token {k}: {ti[k][:30]!r} -> {tj[m][:30]!r} (from line {j + 1})"
        ti[k] = tj[m]
        lines[i] = " ".join(ti)
        return "\n".join(lines), desc
    if op == "token" or op == "number_shift":
        cand = [j for j, l in enumerate(lines) if l.split() and not l.lstrip().startswith("c")]
        if not cand:
            return text + "\nX", "append junk"
        i = cand[int(rng.integers(len(cand)))]
        toks = lines[i].split()
        k = int(rng.integers(len(toks)))
        if op == "number_shift":
            try:
                x = float(toks[k])
            except ValueError:
                return text, "no-op"
            new = repr(x + float(rng.choice([800.0, 1.0, -1.0, 1e-3, 1e-8, 1e-5])))
        elif rng.random() < 0.15:
            new = toks[int(rng.integers(len(toks)))]
        else:
            new = str(rng.choice(SPECIAL))
        desc = f"line {i + 1} token {k}: {toks[k][:30]!r} -> {new[:30]!r}"
        toks[k] = new
        lines[i] = " ".join(toks)
        return "\n".join(lines), desc
    if op == "delete":
        del lines[i]
        return "\n".join(lines), f"delete line {i + 1}"
    if op == "duplicate":
        lines.insert(i, lines[i])
        return "\n".join(lines), f"duplicate line {i + 1}"
    if op == "swap":
        j = int(rng.integers(n))
        lines[i], lines[j] = lines[j], lines[i]
        return "\n".join(lines), f"swap lines {i + 1} and {j + 1}"
    if op == "move":
        line = lines.pop(i)
        j = int(rng.integers(len(lines) + 1))
        lines.insert(j, line)
        return "\n".join(lines), f"move line {i + 1} to {j + 1}"
    if op == "insert_copy":
        j = int(rng.integers(n))
        lines.insert(j, lines[i])
        return "\n".join(lines), f"copy line {i + 1} to {j + 1}"
    cut = int(rng.integers(len(lines[i]) + 1))
    lines[i] = lines[i][:cut]
    return "\n".join(lines), f"truncate line {i + 1} at {cut}"


def _json_paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _json_paths(v, prefix + (k,))
    elif isinstance(obj, list):
        # lists are long: sample a few indices instead of all
        idx = sorted(set([0, len(obj) - 1, len(obj) // 2])) if obj else []
        for j in idx:
            yield from _json_paths(obj[j], prefix + (j,))


JSON_VALUES = [10**8, 10**9, 10**30, 10**400, -1, -2, 0, 1, 2, 3, 1e309, -1e309, float("nan"),
               "-inf", "inf", "x", None, True, False, [], {}, [1, 2], 0.5, 1.5, -0.0, 800.0]


def _json_mutation(rng, text: str) -> tuple[str, str]:
    data = json.loads(text)
    paths = list(_json_paths(data))
    path = paths[int(rng.integers(len(paths)))]
    parent, key = None, None
    node = data
    for p in path:
        parent, key, node = node, p, node[p]
    op = rng.choice(["replace", "replace", "replace", "numeric", "delete", "dup", "list_pick"])
    if parent is None:
        op = "replace"
    if op == "replace":
        new = JSON_VALUES[int(rng.integers(len(JSON_VALUES)))]
        if parent is None:
            data = new
        else:
            parent[key] = new
        desc = f"{list(path)} = {str(new)[:30]}"
    elif op == "numeric":
        if isinstance(node, (int, float)) and not isinstance(node, bool):
            shift = rng.choice([1, -1, 800, 10**8])
            parent[key] = node + (int(shift) if isinstance(node, int) else float(shift))
            desc = f"{list(path)} += {shift}"
        elif isinstance(node, list) and node and all(isinstance(x, (int, float)) and not
                                                    isinstance(x, bool) for x in node):
            j = int(rng.integers(len(node)))
            node[j] = node[j] + float(rng.choice([800.0, 1.0, 1e-4])) * (1 if rng.random() < .5 else -1)
            desc = f"{list(path)}[{j}] shifted"
        else:
            return _lines_mutation(rng, text)
    elif op == "delete":
        if isinstance(parent, dict):
            del parent[key]
        else:
            parent.pop(key)
        desc = f"delete {list(path)}"
    elif op == "dup":
        if isinstance(parent, list):
            parent.insert(key, parent[key])
        else:
            parent[str(key) + "_x"] = node
        desc = f"duplicate {list(path)}"
    else:  # replace a whole array by a prefix or a shuffled copy
        if isinstance(node, list) and len(node) > 1:
            if rng.random() < 0.5:
                parent[key] = node[: int(rng.integers(len(node)))]
                desc = f"truncate list {list(path)}"
            else:
                perm = rng.permutation(len(node))
                parent[key] = [node[j] for j in perm]
                desc = f"shuffle list {list(path)}"
        else:
            return _lines_mutation(rng, text)
    return json.dumps(data), "json " + desc


def mutate(rng, src: Source) -> tuple[str, bytes, bytes | None, str]:
    """(file name, mutated bytes, vtree bytes or None, description)."""
    data, vt = src.data, src.vtree
    name = src.name
    r = rng.random()
    if vt is not None and r < 0.12:  # mutate the sibling vtree instead of the model
        text, desc = _lines_mutation(rng, vt.decode())
        return name, data, text.encode("utf-8", "surrogatepass"), f"vtree: {desc}"
    r = rng.random()
    if r < 0.08:
        b = bytearray(data)
        for _ in range(int(rng.integers(1, 4))):
            j = int(rng.integers(len(b)))
            b[j] ^= int(rng.integers(1, 256))
        out, desc = bytes(b), "byte flips"
    elif r < 0.12:
        cut = int(rng.integers(len(data)))
        out, desc = data[:cut], f"truncate at byte {cut}"
    elif r < 0.14:
        out, desc = rng.bytes(int(rng.integers(1, 200))), "random bytes"
    elif r < 0.16:
        j = int(rng.integers(len(data)))
        out, desc = data[:j] + rng.bytes(int(rng.integers(1, 20))) + data[j:], "insert random bytes"
    elif name.endswith(".json") and r < 0.75:
        text, desc = _json_mutation(rng, data.decode())
        out = text.encode()
    else:
        text, desc = _lines_mutation(rng, data.decode())
        for _ in range(int(rng.choice([0, 0, 0, 1, 2]))):  # sometimes stack a few
            text, more = _lines_mutation(rng, text)
            desc += "; " + more
        out = text.encode()
    if rng.random() < 0.2:
        name = name + ".gz"
        gz = bytearray(gzip.compress(out, mtime=0))
        g = rng.random()
        if g < 0.25:
            j = int(rng.integers(10, len(gz)))
            gz[j] ^= int(rng.integers(1, 256))
            desc += "; gzip byte flipped"
        elif g < 0.5:
            gz = gz[: int(rng.integers(2, len(gz)))]
            desc += "; gzip truncated"
        elif g < 0.6:
            gz += b"junk"
            desc += "; junk after gzip"
        out = bytes(gz)
    return name, out, vt, desc


def _vtree_label(text: str) -> str:
    """A short label of a vtree text for failure messages: its number of leaves."""
    return f"{sum(1 for l in text.splitlines() if l.startswith('L '))} leaves"


# ------------------------------------------------------------------------------ the oracle
NORMALISED = (".psdd", ".jpc", ".json")


def _suffix(name: str) -> str:
    name = name[:-3] if name.endswith(".gz") else name
    return Path(name).suffix


def check_valid(model, name: str) -> str | None:
    """None if ``model`` is a valid model of the format of ``name``, else the reason."""
    suffix = _suffix(name)
    if suffix == ".vtree":
        if not isinstance(model, Vtree):
            return f"expected a Vtree, got {type(model).__name__}"
        Vtree(model.left, model.right, model.var)  # re-validate
        return None
    if not isinstance(model, Circuit):
        return f"expected a Circuit, got {type(model).__name__}"
    c = model
    leaf = [c.params[c.param_ptr[i]: c.param_ptr[i] + c.param_len[i]]
            for i in np.flatnonzero(c.kind == CATEGORICAL)]
    allp = np.concatenate([c.edge_logw] + leaf) if leaf else c.edge_logw
    if np.any(np.isnan(allp)) or np.any(allp == np.inf):
        return "NaN or +inf parameter"
    problems: list = []
    smooth, dec = _smooth_decomposable(c, problems)
    if not dec or (suffix != ".sdd" and not smooth):
        return f"not smooth/decomposable: {problems[0].message}"
    if c.vtree is not None:
        prob = respects_vtree(c, c.vtree)
        if prob is not None:
            return f"does not respect its vtree: {prob.message}"
    if suffix in NORMALISED:
        if np.any(allp > 1e-9):
            return f"log-parameter above 0: {allp.max()}"
        for i in np.flatnonzero(c.kind == SUM):
            w = c.edge_logw[c.edge_ptr[i]: c.edge_ptr[i + 1]]
            if len(w) == 0 or not w.max() > -np.inf:
                return f"sum {i} has no non-zero weight"
            lse = w.max() + math.log(np.exp(w - w.max()).sum())
            if abs(lse) > 1e-6:
                return f"sum {i} weights sum to {math.exp(lse)}"
        for p in leaf:
            if not p.max() > -np.inf or abs(p.max() + math.log(np.exp(p - p.max()).sum())) > 1e-6:
                return "categorical leaf not normalised"
        z = float(c.log_marginal(None, backend="numpy")[0])
        if not abs(z) <= 1e-5:
            return f"log Z = {z}"
        card = c.variables.cardinalities
        if np.prod(card.astype(float)) <= 4096:
            xs = np.array(list(itertools.product(*[range(k) for k in card])), np.int32)
            total = float(np.exp(log_marginals(c, xs, backend="numpy")).sum())
            if not abs(total - 1) <= 1e-5:
                return f"sum over all assignments = {total}"
    return None


def run_fuzz(tmp_path: Path, n: int, seed: int) -> Counter:
    rng = np.random.default_rng(seed)
    srcs = _sources(tmp_path)
    vtree_sources = [s.vtree for s in srcs if s.vtree is not None] + \
        [s.data for s in srcs if s.name.endswith(".vtree")]
    outcomes: Counter = Counter()
    failures: list[str] = []
    slow: list[str] = []
    for t in range(n):
        src = srcs[int(rng.integers(len(srcs)))]
        name, data, vt, desc = mutate(rng, src)
        d = tmp_path / f"m{t}"
        d.mkdir()
        target = d / name
        target.write_bytes(data)
        if vt is not None:
            (d / src.vtree_name).write_bytes(vt)
        given = None
        if _suffix(name) != ".vtree" and rng.random() < 0.12:
            # an explicit vtree= (another model's, maybe mutated): must match or be refused
            vsrc = vtree_sources[int(rng.integers(len(vtree_sources)))]
            vtext = vsrc.decode()
            vdesc = "unchanged"
            if rng.random() < 0.3:
                vtext, vdesc = _lines_mutation(rng, vtext)
            given = d / "given.vtree"
            given.write_text(vtext)
            desc += f"; load(vtree=a {vdesc} vtree of {_vtree_label(vtext)})"
        what = f"#{t} (seed {seed}) {src.name} -> {name}: {desc}"
        start = time.perf_counter()
        try:
            model = pcfair.load(target, vtree=given) if given else pcfair.load(target)
        except pcfair.FormatError as exc:
            elapsed = time.perf_counter() - start
            if str(d) not in str(exc):
                failures.append(f"{what}: FormatError does not name the file: {exc}")
            outcomes["FormatError"] += 1
        except Exception as exc:  # noqa: BLE001 - that is what the test looks for
            elapsed = time.perf_counter() - start
            tb = traceback.format_exception(exc)[-3:]
            failures.append(f"{what}: {type(exc).__name__}: {str(exc)[:200]}\n{''.join(tb)}")
            outcomes[type(exc).__name__] += 1
        else:
            elapsed = time.perf_counter() - start
            reason = check_valid(model, name)
            if reason is None and given is not None:
                if model.vtree is None or model.vtree != pcfair.load(given):
                    reason = "the given vtree is not the circuit's vtree"
            if reason is not None:
                failures.append(f"{what}: loaded an invalid model: {reason}")
                outcomes["invalid"] += 1
            else:
                outcomes["valid"] += 1
        if elapsed > TIME_LIMIT:
            slow.append(f"{what}: {elapsed:.2f}s")
        for p in d.iterdir():
            p.unlink()
        d.rmdir()
    print(f"\nloader fuzz, seed {seed}: {n} mutations, outcomes {dict(outcomes)}")
    assert not failures, f"{len(failures)} bad outcomes:\n" + "\n".join(failures[:30])
    assert not slow, "slow loads:\n" + "\n".join(slow)
    return outcomes


def test_unmutated_sources_load_and_are_valid(tmp_path):
    """The fuzzer's starting points are valid, so refusals are caused by the mutations."""
    for j, src in enumerate(_sources(tmp_path)):
        d = tmp_path / f"u{j}"
        d.mkdir()
        (d / src.name).write_bytes(src.data)
        if src.vtree is not None:
            (d / src.vtree_name).write_bytes(src.vtree)
        model = pcfair.load(d / src.name)
        assert check_valid(model, src.name) is None, src.name
        if src.vtree is not None:
            assert model.vtree is not None


def test_loader_fuzz_default(tmp_path):
    out = run_fuzz(tmp_path, 500, seed=20240614)
    assert out["FormatError"] > 0 and out["valid"] > 0


@pytest.mark.slow
def test_loader_fuzz_slow(tmp_path):
    total: Counter = Counter()
    for seed in range(4):
        (tmp_path / str(seed)).mkdir()
        total += run_fuzz(tmp_path / str(seed), 5000, seed=seed)
    print(f"loader fuzz, slow suite: {sum(total.values())} mutations, outcomes {dict(total)}")
    assert sum(total.values()) >= 20_000
