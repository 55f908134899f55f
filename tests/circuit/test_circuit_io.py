
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
