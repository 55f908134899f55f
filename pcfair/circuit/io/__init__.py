"""Reading and writing circuits and vtrees; :func:`load` and :func:`save` dispatch on the suffix.

=========  =====  =====  ==================================================
suffix     read   write  notes
=========  =====  =====  ==================================================
``.psdd``  yes    yes    both dialects read; writing also writes ``X.vtree``
``.vtree`` yes    yes    SDD-package in-order ids on write
``.sdd``   yes    no     logical circuit with unit weights
``.jpc``   yes    yes    Juice text format; pickled pyjuice files are refused
``.json``  yes    yes    pcfair's exact, versioned format
=========  =====  =====  ==================================================

A trailing ``.gz`` is handled transparently. No format is ever read with pickle.

Every load returns a valid model or raises :class:`~pcfair.errors.FormatError` naming the file
(and the line where there is one), never another exception for a malformed file: each reader
checks what its format promises through one function,
:func:`pcfair.circuit.io._validate.check_loaded` (numbers, normalisation for ``.psdd``,
``.jpc`` and ``.json``, smoothness, decomposability, the vtree), and sizes are bounded by the
file's own content. Each writer refuses (``StructureError``) what its reader would refuse.
"""

from __future__ import annotations

import os
from pathlib import Path

from pcfair.circuit.circuit import Circuit
from pcfair.circuit.io.jpc import read_jpc, write_jpc
from pcfair.circuit.io.json_io import read_json, write_json
from pcfair.circuit.io.psdd import read_psdd, write_psdd
from pcfair.circuit.io.sdd import read_sdd
from pcfair.circuit.io.vtree_io import read_vtree, write_vtree
from pcfair.circuit.variables import Variables
from pcfair.circuit.vtree import Vtree
from pcfair.errors import FormatError

_READERS = {".psdd": read_psdd, ".sdd": read_sdd, ".jpc": read_jpc}


def _suffix(path: Path) -> str:
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    return Path(name).suffix.lower()


def _sibling_vtree(path: Path) -> Path | None:
    gz = path.name.endswith(".gz")
    stem = Path(path.name[:-3] if gz else path.name).stem
    names = [stem + ".vtree.gz", stem + ".vtree"] if gz else [stem + ".vtree", stem + ".vtree.gz"]
    for cand in (path.with_name(n) for n in names):
        if cand.is_file():
            return cand
    return None


def _sibling_recipe(path: Path) -> Path:
    gz = path.name.endswith(".gz")
    return path.with_name(Path(path.name[:-3] if gz else path.name).stem + ".recipe.json")


def load(path: str | os.PathLike, vtree: "str | os.PathLike | Vtree | None" = None) -> Circuit | Vtree:
    """Load a circuit (or a vtree) from a file, dispatching on the suffix.

    Parameters
    ----------
    path : path-like
        ``.psdd``, ``.sdd``, ``.jpc``, ``.json`` or ``.vtree`` (optionally ``.gz``).
    vtree : path-like or Vtree, optional
        The vtree to attach. For ``.psdd``/``.sdd``/``.jpc`` files, ``X.vtree`` beside ``X.psdd``
        is used when this is not given and the file exists. A recipe ``X.recipe.json`` beside
        a ``.psdd`` or ``.jpc`` (written by :func:`save` for a learned model) is attached, and
        its columns name the variables that the format numbers ``1..n``.

    Returns
    -------
    Circuit (or Vtree for a ``.vtree`` file).

    Raises
    ------
    FormatError
        For unknown suffixes and for every file that is not a valid model of its format (with
        the file name, and the line number where there is one): corrupt gzip data, text that is
        not UTF-8, malformed records, numbers that are NaN, +inf or out of range, sizes the
        file's own content does not support, and models that break the format's promises
        (normalisation, smoothness, decomposability, respecting the vtree; see each reader's
        module docstring). A vtree (given or the sibling file) whose variable count differs
        from the circuit's, or that the circuit does not respect, is a FormatError too.
    FileNotFoundError
        When ``path`` (or the ``vtree`` path) does not exist.

    Examples
    --------
    >>> import pcfair, tempfile, os
    >>> from pcfair.circuit import CircuitBuilder, Vtree
    >>> b = CircuitBuilder(2)
    >>> pc = b.build(b.decision([(b.literal("1"), b.bernoulli("2", 0.3), 0.5),
    ...                          (b.literal("1", False), b.bernoulli("2", 0.6), 0.5)]),
    ...              vtree=Vtree.from_nested((0, 1)))
    >>> path = os.path.join(tempfile.mkdtemp(), "m.psdd")
    >>> pcfair.save(pc, path)
    >>> round(float(pcfair.load(path).probability({"2": 1})), 3)
    0.45
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no such model file: {path}")
    suffix = _suffix(path)
    if suffix == ".vtree":
        return read_vtree(path)
    if isinstance(vtree, (str, os.PathLike)):
        vtree = read_vtree(vtree)
    elif vtree is not None and not isinstance(vtree, Vtree):
        raise TypeError(f"vtree must be a path or a Vtree, not {type(vtree).__name__}")
    if suffix == ".json":
        return read_json(path, vtree)
    if suffix not in _READERS:
        raise FormatError(f"unknown model file type {suffix!r} (expected .psdd, .sdd, .jpc, "
                          ".json or .vtree)", str(path))
    if vtree is None and suffix in (".psdd", ".sdd"):
        sib = _sibling_vtree(path)
        vtree = read_vtree(sib) if sib is not None else None
    circuit = _READERS[suffix](path, vtree)
    recipe_path = _sibling_recipe(path)
    if recipe_path.is_file():
        from pcfair.tables.recipe import Recipe  # the learners' record, read with the model

        recipe = Recipe.from_json(recipe_path)
        circuit = _named_by(recipe, circuit)
        unknown = [n for n in recipe.bins if n not in circuit.variables.names]
        if unknown:
            raise FormatError(f"the recipe bins {unknown}, which are not variables of "
                              f"{path.name}", str(recipe_path))
        circuit = circuit.with_recipe(recipe)
    return circuit


def _named_by(recipe, circuit: Circuit) -> Circuit:
    """``circuit`` with its variables named by ``recipe``'s model columns (the raw table's
    columns not dropped, in order: the variables of the model learned from it), when the
    file could not keep names (the PSDD and JPC formats number them ``1..n``) and the counts
    agree; else ``circuit`` as it is."""
    names = list(circuit.variables.names)
    used = [c for c in recipe.columns if c not in recipe.dropped]
    if names != [str(i + 1) for i in range(len(names))] or len(used) != len(names):
        return circuit
    return Circuit(Variables(used, circuit.variables.domains), circuit.kind, circuit.var,
                   circuit.value, circuit.param_ptr, circuit.param_len, circuit.params,
                   circuit.edge_ptr, circuit.edge_a, circuit.edge_b, circuit.edge_logw,
                   circuit.vtree, None, circuit.counts)


def save(circuit: Circuit | Vtree, path: str | os.PathLike) -> None:
    """Save a circuit (or vtree), dispatching on the suffix.

    Saving ``X.psdd`` also writes ``X.vtree`` (the circuit needs a vtree). ``.json`` keeps
    everything (names, categorical domains, vtree, recipe); ``.jpc`` keeps the structure and
    parameters. A circuit's recipe (:mod:`pcfair.tables.recipe`) is written beside a ``.psdd`` or
    ``.jpc`` as ``X.recipe.json`` (and read back by :func:`load`); saving one without a recipe
    removes a stale ``X.recipe.json``.
    """
    path = Path(path)
    suffix = _suffix(path)
    if isinstance(circuit, Vtree):
        if suffix != ".vtree":
            raise FormatError("a vtree is saved as .vtree", str(path))
        write_vtree(circuit, path)
        return
    if suffix == ".psdd":
        write_psdd(circuit, path)
        gz = path.name.endswith(".gz")
        stem = Path(path.name[:-3] if gz else path.name).stem
        write_vtree(circuit.vtree, path.with_name(stem + ".vtree" + (".gz" if gz else "")))
    elif suffix == ".json":
        write_json(circuit, path)
    elif suffix == ".jpc":
        write_jpc(circuit, path)
    else:
        raise FormatError(f"cannot save as {suffix!r} (use .psdd, .json or .jpc)", str(path))
    if suffix != ".json":
        sidecar = _sibling_recipe(path)
        if circuit.recipe is not None:
            circuit.recipe.to_json(sidecar)
        elif sidecar.is_file():
            sidecar.unlink()


__all__ = ["load", "save", "read_psdd", "read_vtree", "read_sdd", "read_jpc", "read_json",
           "write_psdd", "write_vtree", "write_jpc", "write_json"]
