import gzip
import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import pcfair
from pcfair.circuit import Vtree
from pcfair.circuit.io import jpc, json_io, psdd, vtree_io
from conftest import SHARED_CIRCUITS, requires_shared
from _pcgen import all_assignments, random_psdd

ZOO = ["little_4var", "simple2.1", "simple2.2", "simple2.3", "exp-D15-N1000-C4", "nltcs.clt",
       "nltcs", "msnbc", "plants", "accidents", "ad"]
VTREE = {"simple2.1": "simple2", "simple2.2": "simple2", "simple2.3": "simple2",
         "nltcs.clt": "nltcs"}


def zoo(name):
    return pcfair.load(SHARED_CIRCUITS / f"{name}.psdd",
                       vtree=SHARED_CIRCUITS / f"{VTREE.get(name, name)}.vtree")


@requires_shared
@pytest.mark.parametrize("name", ZOO)
def test_every_zoo_psdd_is_normalised(name):
    c = zoo(name)
    tol = 1e-12 if c.num_variables < 1000 else 1e-13
    assert abs(c.log_marginal(None)[0]) < max(tol, 1e-12)


@requires_shared
def test_little_4var_golden():
    c = zoo("little_4var")
    p = lambda **kw: c.probability({k[1:]: v for k, v in kw.items()})
    assert p(x1=0, x2=0, x3=0, x4=0) == pytest.approx(0.07)
    assert p(x1=0, x2=1, x3=1, x4=0) == pytest.approx(0.03)
    assert p(x1=0, x2=0, x3=1, x4=1) == pytest.approx(0.14)
    assert p(x1=1) == pytest.approx(0.2)
    assert p(x3=1) == pytest.approx(0.5)
    assert p(x1=0, x3=1) == pytest.approx(0.4)
    probs = np.exp(c.log_marginal(all_assignments([2] * 4)))
    assert probs.sum() == pytest.approx(1.0)
    assert -(probs * np.log(probs)).sum() == pytest.approx(2.220302214489, rel=1e-9)


@requires_shared
def test_exp_d15_golden():
    c = zoo("exp-D15-N1000-C4")
    assert c.probability({"1": 1}) == pytest.approx(0.29141716566866266, rel=1e-9)
    assert c.log_marginal(np.ones((1, 15), int))[0] == pytest.approx(-15.180381912308967, rel=1e-9)
    assert c.log_marginal(np.zeros((1, 15), int))[0] == pytest.approx(-14.321633151916616, rel=1e-9)


@requires_shared
def test_cpp_dialect_reads_identically():
    text = (SHARED_CIRCUITS / "simple2.1.psdd").read_text()
    cpp = text.replace("T 4 1 2 -1.6094379124341003", "T 4 1 2 -0.2231435513142097 -1.6094379124341003")
    assert cpp != text
    a = psdd.parse_psdd(text)
    b = psdd.parse_psdd(cpp)
    xs = all_assignments([2, 2])
    np.testing.assert_allclose(a.log_marginal(xs), b.log_marginal(xs), atol=1e-15)
    np.testing.assert_allclose(np.exp(a.log_marginal(xs)), [0.4, 0.1, 0.25, 0.25])


def _roundtrip_equal(c, d, names=False):
    """Same distribution; .psdd and .jpc number their variables, JSON keeps the names.

    .jpc stores no domain sizes: a value no node mentions is not in the loaded domain (its
    probability is 0 in the original), so compare on the loaded domain."""
    card = d.variables.cardinalities
    assert np.all(card <= c.variables.cardinalities)
    xs = all_assignments(list(card))
    np.testing.assert_allclose(c.log_marginal(xs), d.log_marginal(xs), atol=1e-14)
    if names:
        assert c.variables == d.variables


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_roundtrips(tmp_path, seed, gz):
    rng = np.random.default_rng(seed)
    binary = random_psdd(rng, [2, 2, 2, 2])
    categorical = random_psdd(rng, [3, 2, 4])
    ext = ".gz" if gz else ""
    pcfair.save(binary, tmp_path / f"m.psdd{ext}")
    back = pcfair.load(tmp_path / f"m.psdd{ext}")
    _roundtrip_equal(binary, back)
    assert back.vtree == binary.vtree
    for c in (binary, categorical):
        for suffix in (".json", ".jpc"):
            pcfair.save(c, tmp_path / f"m{suffix}{ext}")
            _roundtrip_equal(c, pcfair.load(tmp_path / f"m{suffix}{ext}"), suffix == ".json")
    back = pcfair.load(tmp_path / f"m.json{ext}")
    assert back.vtree == categorical.vtree
    pcfair.save(binary.vtree, tmp_path / f"v.vtree{ext}")
    assert pcfair.load(tmp_path / f"v.vtree{ext}") == binary.vtree


@pytest.mark.parametrize("text,match", [
    ("psdd 1\nX 0 0 1\n", "unknown record 'X'"),
    ("psdd 2\nL 0 0 1\nD 1 0 1 0 7 -0.5\n", "not defined before"),
    ("psdd 1\nT 0 0 1\n", "T record needs 5"),
    ("psdd 1\nT 0 0 1 abc\n", "bad log θ 'abc'"),
    ("psdd 1\nT 0 0 1 nan\n", "NaN"),
    ("psdd 1\nT 0 0 1 0.5\n", "above 1"),
    ("psdd 2\nL 0 0 1\nL 1 0 -1\nD 2 0 2 0 1 -0.6 1 0\n", "needs 10 fields"),
    ("psdd 3\nL 0 0 1\nL 0 0 -1\n", "defined twice"),
    ("c only comments\n", "no node lines"),
    ("psdd 2\nT 0 0 1 -0.5\nT 1 0 2 -0.1 -0.2\n", "mix"),
    ("psdd 3\nL 0 0 1\nL 1 1 2\nL 2 1 -2\n", "does not mention"),
])
def test_malformed_psdd_names_the_line(text, match):
    with pytest.raises(pcfair.FormatError, match=match) as exc:
        psdd.parse_psdd(text, "bad.psdd")
    assert "bad.psdd" in str(exc.value)


def test_malformed_vtree_and_jpc(tmp_path):
    with pytest.raises(pcfair.FormatError, match="not defined before"):
        vtree_io.parse_vtree("vtree 3\nL 0 1\nI 2 0 1\nL 1 2\n")
    with pytest.raises(pcfair.FormatError, match="header says 3"):
        jpc.parse_jpc("jpc 3\nL 0 0 1\nL 1 0 -1\n")
    with pytest.raises(pcfair.FormatError, match="binomial"):
        jpc.parse_jpc("jpc 1\nB 0 0 1 3 -0.5\n")
    pickled = tmp_path / "m.jpc"
    pickled.write_bytes(b"\x80\x04\x95 pickle bytes")
    with pytest.raises(pcfair.FormatError, match="pickle"):
        pcfair.load(pickled)
    with pytest.raises(pcfair.FormatError, match="unsupported pcfair circuit version"):
        json_io.from_dict({"format": "pcfair-circuit", "version": 99})
    with pytest.raises(pcfair.FormatError, match="unknown model file type"):
        (tmp_path / "m.txt").write_text("x")
        pcfair.load(tmp_path / "m.txt")


@requires_shared
@settings(max_examples=150, deadline=None)
@given(st.data())
def test_fuzzed_files_load_or_raise_format_error(data):
    """Mutated valid files either load as a valid circuit or raise FormatError; never crash."""
    name = data.draw(st.sampled_from(["little_4var.psdd", "simple2.2.psdd", "nltcs.clt.psdd",
                                      "exp-D15-N1000-C4.psdd", "little_4var.vtree"]))
    lines = (SHARED_CIRCUITS / name).read_text().splitlines()
    op = data.draw(st.sampled_from(["drop", "truncate", "swap", "token", "dup"]))
    i = data.draw(st.integers(0, len(lines) - 1))
    if op == "drop":
        del lines[i]
    elif op == "truncate":
        lines = lines[:i] + [lines[i][: data.draw(st.integers(0, len(lines[i])))]]
    elif op == "swap":
        j = data.draw(st.integers(0, len(lines) - 1))
        lines[i], lines[j] = lines[j], lines[i]
    elif op == "dup":
        lines.insert(i, lines[i])
    else:
        toks = lines[i].split()
        if toks:
            k = data.draw(st.integers(0, len(toks) - 1))
            toks[k] = data.draw(st.sampled_from(["-1", "0", "999", "nan", "inf", "-inf", "x",
                                                 "1e400", "3.5", "Z"]))
            lines[i] = " ".join(toks)
    text = "\n".join(lines)
    try:
        if name.endswith(".vtree"):
            vt, _ = vtree_io.parse_vtree(text, name)
            assert vt.num_variables >= 1
        else:
            c = psdd.parse_psdd(text, name)
            z = c.log_marginal(None)[0]
            assert not np.isnan(z)
    except pcfair.FormatError as exc:
        assert name in str(exc)


def test_sdd_reader_spec_example():
    """circuit-layer.md §2.2: x1 ∨ x2 over simple2.vtree, as a logical circuit."""
    from pcfair.circuit.io import sdd

    vt = vtree_io.parse_vtree("vtree 3\nL 0 1\nL 1 2\nI 2 0 1\n")[0]
    c = sdd.parse_sdd("sdd 5\nL 0 0 1\nT 1\nL 2 0 -1\nL 3 1 2\nD 4 2 2 0 1 2 3\n", vtree=vt)
    truth = np.exp(c.log_marginal(all_assignments([2, 2])))
    np.testing.assert_allclose(truth, [0, 1, 1, 1])  # 00 false; the rest true
    with pytest.raises(pcfair.FormatError, match="unknown record"):
        sdd.parse_sdd("sdd 1\nX 0\n")


def test_compatible_with():
    rng = np.random.default_rng(5)
    vt = Vtree.from_nested(((0, 1), (2, 3)))
    p = random_psdd(rng, [2] * 4, vt)
    q = random_psdd(rng, [2] * 4, vt)
    r = random_psdd(rng, [2] * 4, Vtree.from_nested(((0, 3), (1, 2))), max_elements=2)
    assert p.compatible_with(q)
    assert not p.compatible_with(r)  # the roots split {0,1,2,3} differently


# ------------------------------------------------------------------ issue 14 item 8 regressions
from pathlib import Path  # noqa: E402

from pcfair.circuit import CircuitBuilder  # noqa: E402
from pcfair.errors import ParameterError, StructureError  # noqa: E402

CIRCUITS = Path(__file__).resolve().parents[2] / "circuits"
SIMPLE2_1 = """psdd 9
L 0 0 1
L 1 0 -1
L 2 1 2
L 3 1 -2
T 4 1 2 -1.6094379124341003
D 5 2 3 1 4 -0.6931471805599453 0 2 -1.3862943611198906 0 3 -1.3862943611198906
"""
SIMPLE2_VTREE = "vtree 3\nL 0 1\nL 1 2\nI 2 0 1\n"


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    return p


def _json_data(name="compas_clt.json"):
    return json.loads((CIRCUITS / name).read_text())


def test_regression_corrupt_gz(tmp_path):
    good = gzip.compress(SIMPLE2_1.encode(), mtime=0)
    flipped = bytearray(good)
    flipped[len(flipped) // 2] ^= 0xFF
    cases = {"flip.psdd.gz": bytes(flipped), "trunc.psdd.gz": good[: len(good) // 2],
             "header.psdd.gz": b"\x1f\x8b" + b"garbage" * 10, "junk.json.gz": good + b"junk"}
    for name, data in cases.items():
        p = _write(tmp_path, name, data)
        with pytest.raises(pcfair.FormatError, match="gzip") as exc:
            pcfair.load(p)
        assert name in str(exc.value)


def test_regression_not_utf8_names_the_line(tmp_path):
    p = _write(tmp_path, "m.psdd", SIMPLE2_1.encode().replace(b"L 2 1 2", b"L 2 1 \xff2"))
    with pytest.raises(pcfair.FormatError, match="UTF-8") as exc:
        pcfair.load(p)
    assert exc.value.line == 4


@pytest.mark.parametrize("where,value", [
    (("nodes", "var", 0), 10**30), (("nodes", "edge_a", 0), 10**30),
    (("nodes", "params", 0), 10**400), (("nodes", "params", 0), 1e309),
    (("nodes", "edge_logw", 0), float("nan")), (("nodes", "kind", 0), 1.0),
    (("vtree", "var", 0), 10**30), (("variables", 0, "values"), "01"),
])
def test_regression_json_overflowing_or_mistyped_numbers(tmp_path, where, value):
    data = _json_data()
    node = data
    for k in where[:-1]:
        node = node[k]
    node[where[-1]] = value
    p = _write(tmp_path, "m.json", json.dumps(data))
    with pytest.raises(pcfair.FormatError, match="m.json"):
        pcfair.load(p)


def test_regression_json_too_many_digits_and_deep_nesting(tmp_path):
    text = (CIRCUITS / "compas_clt.json").read_text().replace('"version":1', '"version":' + "1" * 5000)
    with pytest.raises(pcfair.FormatError, match="invalid JSON"):
        pcfair.load(_write(tmp_path, "digits.json", text))
    with pytest.raises(pcfair.FormatError, match="invalid JSON"):
        pcfair.load(_write(tmp_path, "deep.json", "[" * 100_000 + "]" * 100_000))


def test_regression_json_positive_log_weights(tmp_path):
    """Issue 14 item 1: +800 on every root log-weight normalises to the same distribution, but
    the format stores normalised log-probabilities, so the file is refused."""
    data = _json_data()
    ptr = data["nodes"]["edge_ptr"]
    lo, hi = ptr[-2], ptr[-1]
    for e in range(lo, hi):
        w = data["nodes"]["edge_logw"][e]
        data["nodes"]["edge_logw"][e] = (-math.inf if w == "-inf" else w) + 800
    p = _write(tmp_path, "m.json", json.dumps(data).replace("-Infinity", '"-inf"'))
    with pytest.raises(pcfair.FormatError, match="above 1"):
        pcfair.load(p)
    # a small excess (weights summing to 1.01) is unnormalised too
    data = _json_data()
    data["nodes"]["edge_logw"][lo] = math.log(math.exp(data["nodes"]["edge_logw"][lo]) * 0.9)
    with pytest.raises(pcfair.FormatError, match="sum to"):
        pcfair.load(_write(tmp_path, "u.json", json.dumps(data)))


@pytest.mark.parametrize("line,match", [
    ("S 4 0 2 2 inf 3 -0.2231435513142097", "above 1"),
    ("S 4 0 2 2 1e309 3 -0.2231435513142097", "above 1"),
    ("S 4 0 2 2 nan 3 -0.2231435513142097", "NaN"),
    ("S 4 0 2 2 -1.6 3 -0.3", "sum to"),
])
def test_regression_inf_and_unnormalised_jpc(tmp_path, line, match):
    text = """jpc 9
L 0 0 1
L 1 0 -1
L 2 0 2
L 3 0 -2
S 4 0 2 2 -1.6094379124341003 3 -0.2231435513142097
P 5 0 2 1 4
P 6 0 2 0 2
P 7 0 2 0 3
S 8 0 3 5 -0.6931471805599453 6 -1.3862943611198906 7 -1.3862943611198906
"""
    assert pcfair.load(_write(tmp_path, "ok.jpc", text)).num_variables == 2
    bad = text.replace("S 4 0 2 2 -1.6094379124341003 3 -0.2231435513142097", line)
    with pytest.raises(pcfair.FormatError, match=match) as exc:
        pcfair.load(_write(tmp_path, "bad.jpc", bad))
    assert "bad.jpc:6" in str(exc.value)


@pytest.mark.parametrize("name,text", [
    ("v.psdd", "psdd 1\nT 0 0 100000000 -0.5\n"),
    ("v.psdd", "psdd 3\nL 0 0 1\nL 1 0 -1000000000000000000000000000000\nD 2 0 1 0 1 0\n"),
    ("v.jpc", "jpc 1\nC 0 0 100000000 -0.6931471805599453 -0.6931471805599453\n"),
    ("v.sdd", "sdd 1\nL 0 0 100000000\n"),
    ("v.vtree", "vtree 3\nL 0 1\nL 1 100000000\nI 2 0 1\n"),
    ("a.jpc", "jpc 1\nI 0 0 1 1000000000\n"),
    ("a.jpc", "jpc 2\nI 0 0 1 0\nI 1 0 1 1000000000\n"),
])
def test_regression_huge_variable_or_arity_is_refused_fast(tmp_path, name, text):
    import time

    start = time.perf_counter()
    with pytest.raises(pcfair.FormatError, match=name) as exc:
        pcfair.load(_write(tmp_path, name, text))
    assert time.perf_counter() - start < 1.0
    assert exc.value.line is not None or name.endswith(".vtree")


def test_regression_non_smooth_and_non_decomposable_psdd(tmp_path):
    w = -0.6931471805599453
    non_smooth = f"psdd 5\nL 0 0 1\nL 1 0 -1\nL 2 2 2\nL 3 4 3\nD 4 1 2 0 2 {w} 1 3 {w}\n"
    with pytest.raises(pcfair.FormatError, match="not smooth") as exc:
        pcfair.load(_write(tmp_path, "s.psdd", non_smooth))
    assert exc.value.line == 6
    non_dec = f"psdd 3\nL 0 0 1\nL 1 0 -1\nD 2 1 2 0 1 {w} 1 0 {w}\n"
    with pytest.raises(pcfair.FormatError, match="not decomposable"):
        pcfair.load(_write(tmp_path, "d.psdd", non_dec))


def test_regression_vtree_mismatch(tmp_path):
    w = -0.6931471805599453
    swapped = f"psdd 5\nL 0 0 1\nL 1 0 -1\nL 2 1 2\nL 3 1 -2\nD 4 2 2 2 0 {w} 3 1 {w}\n"
    p = _write(tmp_path, "m.psdd", swapped)
    assert pcfair.load(p).vtree is None  # no vtree: structure alone is fine
    vt = _write(tmp_path, "v.vtree", SIMPLE2_VTREE)
    with pytest.raises(pcfair.FormatError, match="does not follow the vtree") as exc:
        pcfair.load(p, vtree=vt)
    assert "m.psdd:6" in str(exc.value)
    mirrored = _write(tmp_path, "w.vtree", "vtree 3\nL 0 2\nL 1 1\nI 2 0 1\n")
    assert pcfair.load(p, vtree=mirrored).vtree == pcfair.load(mirrored)
    _write(tmp_path, "m.vtree", SIMPLE2_VTREE)  # the sibling is used by default
    with pytest.raises(pcfair.FormatError, match="does not follow the vtree"):
        pcfair.load(p)
    three = _write(tmp_path, "three.vtree", "vtree 5\nL 0 1\nL 1 2\nL 2 3\nI 3 0 1\nI 4 3 2\n")
    good = _write(tmp_path, "g.psdd", SIMPLE2_1)
    for model in (good, CIRCUITS / "compas_clt.json", CIRCUITS / "compas_clt.psdd"):
        with pytest.raises(pcfair.FormatError, match="variable|vtree"):
            pcfair.load(model, vtree=three)
    # a json whose stored vtree the circuit does not respect, and a given one of the right size
    # that it does not respect
    pc = pcfair.load(CIRCUITS / "compas_clt.json")
    reversed_vt = Vtree.right_linear(list(range(pc.num_variables))[::-1])
    assert respects(pc, reversed_vt) is False
    vt_path = tmp_path / "rev.vtree"
    pcfair.save(reversed_vt, vt_path)
    with pytest.raises(pcfair.FormatError, match="vtree"):
        pcfair.load(CIRCUITS / "compas_clt.json", vtree=vt_path)
    data = _json_data()
    data["vtree"] = {"left": reversed_vt.left.tolist(), "right": reversed_vt.right.tolist(),
                     "var": reversed_vt.var.tolist()}
    with pytest.raises(pcfair.FormatError, match="stored in the file"):
        pcfair.load(_write(tmp_path, "stored.json", json.dumps(data)))


def respects(pc, vt):
    from pcfair.circuit.properties import respects_vtree

    return respects_vtree(pc, vt) is None


def test_regression_writers_refuse_what_readers_refuse(tmp_path):
    b = CircuitBuilder(2)
    unnormalised = b.build(b.sum([b.literal("1"), b.literal("1", False)], [1.0, 1.0]))
    for suffix in (".json", ".jpc"):
        with pytest.raises(StructureError, match="sum to"):
            pcfair.save(unnormalised, tmp_path / f"m{suffix}")
    b = CircuitBuilder(2)
    non_smooth = b.build(b.sum([b.literal("1"), b.bernoulli("2", 0.5)], [0.5, 0.5]))
    with pytest.raises(StructureError, match="smooth"):
        pcfair.save(non_smooth, tmp_path / "s.json")


def test_regression_builder_refuses_bad_log_weights():
    b = CircuitBuilder(2)
    x, nx = b.literal("1"), b.literal("1", False)
    for bad in ([math.inf, 0.0], [math.nan, 0.0], [800.0, -1.0], [1e-6, -1.0]):
        with pytest.raises(ParameterError):
            b.sum([x, nx], log_weights=bad)
        with pytest.raises(ParameterError):
            b.decision([(x, None, bad[0]), (nx, None, bad[1])], log=True)
        with pytest.raises(ParameterError):
            b.categorical("2", log_probs=bad)
    with pytest.raises(ValueError):  # ParameterError is a ValueError
        b.categorical("2", [0.5, math.inf])
    # rounding above 0, -inf and unnormalised linear weights are fine
    b.sum([x, nx], log_weights=[1e-12, -math.inf])
    b.sum([x, nx], weights=[2.0, 3.0])


def test_regression_vtree_construction_and_deep_vtrees():
    with pytest.raises(StructureError):
        Vtree([10**30, -1, 0], [-1, -1, 1], [0, 1, -1])
    with pytest.raises(StructureError):
        Vtree([0.5], [-1], [0])
    deep = Vtree.right_linear(range(3000))  # no RecursionError building, comparing, hashing
    assert deep == Vtree.right_linear(range(3000)) and hash(deep) == hash(deep)
    assert deep != Vtree.balanced(range(3000))
    assert Vtree.from_nested(deep.to_nested()) == deep


def test_regression_gzip_bomb_is_refused_fast(tmp_path):
    import time
    import zlib

    comp = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip container
    chunk = b" " * (1 << 20)
    data = comp.compress(b"c") + b"".join(comp.compress(chunk) for _ in range(200)) + comp.flush()
    p = _write(tmp_path, "bomb.psdd.gz", data)
    start = time.perf_counter()
    with pytest.raises(pcfair.FormatError, match="gzip bomb"):
        pcfair.load(p)
    assert time.perf_counter() - start < 2.0
