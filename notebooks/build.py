"""Assemble and execute the notebooks from their percent-format sources in ``notebooks/src``.

Each notebook is a title cell followed by the cells of its source files in order (e.g.
``notebooks/04_audits.ipynb`` is the four audit-port sections). Sources are plain Python files
(``# %%`` starts a code cell, ``# %% [markdown]`` a markdown cell whose lines start with
``# ``), so they diff and review like code. A notebook whose sources are not all present is
left out (:data:`NOTEBOOKS` lists those that can be built).

Usage::

    python notebooks/build.py                         # assemble and execute every notebook
    python notebooks/build.py 01_certify_compas.ipynb # only these (needs the notebooks extra)
    python notebooks/build.py --no-exec               # assemble only
"""

from __future__ import annotations

import argparse
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
#: Every notebook the project knows, by file name: its title cell and its sources in order.
ALL_NOTEBOOKS = {
    "01_certify_compas.ipynb": {
        "title": (
            "# Certify and explain a COMPAS circuit\n\n"
            "Learn a probabilistic circuit from the binarized COMPAS data, check its "
            "structure, certify it, mine and summarise its discrimination patterns, plot the "
            "Pareto front, and compare group-fairness metrics with patterns. Runs in about "
            "half a minute.\n"
        ),
        "sections": ["01_certify_compas.py"],
    },
    "02_search_vs_sampling.ipynb": {
        "title": (
            "# Exact search versus sampling under a time budget\n\n"
            "Branch and bound against the sampling miner on the shipped COMPAS, Income and "
            "Adult circuits, with the lattice engine as ground truth (the paper's Tables 3 and "
            "4 and Figure 2b-c). Needs only the shipped circuits; runs in under a minute.\n"
        ),
        "sections": ["02_search_vs_sampling.py"],
    },
    "03_fair_learning.ipynb": {
        "title": (
            "# Learning fair probabilistic circuits\n\n"
            "Remove discrimination patterns while learning, and compare the fair circuit "
            "with the unconstrained one.\n"
        ),
        "sections": ["03_fair_learning.py"],
    },
    "04_audits.ipynb": {
        "title": (
            "# Auditing models for intersectional bias\n\n"
            "pcfair ports four audit methods beside its circuit certifier. Each section below "
            "runs one of them on real data (the COMPAS and Adult tables, fetched with "
            "`pcfair.datasets`) with small settings so the notebook executes in a minute or "
            "two:\n\n"
            "1. **Conditional Bias Scan** — the most biased subgroup of a protected class;\n"
            "2. **TestSGD** — interpretable rule sets that a classifier treats unfairly;\n"
            "3. **Structured regression** — disaggregated performance for small "
            "intersectional groups;\n"
            "4. **AVOIR** — online monitoring of a fairness specification with guarantees.\n"
        ),
        "sections": ["04_audits_cbs.py", "04_audits_testsgd.py",
                     "04_audits_structured_regression.py", "04_audits_avoir.py"],
    },
    "05_one_model_all_audits.ipynb": {
        "title": (
            "# One model, every audit\n\n"
            "The shipped COMPAS circuit through the certifier and the four audit ports, each "
            "given the circuit itself as `model=`, with exact values to compare against. Needs "
            "only the shipped circuits; runs in a few seconds.\n"
        ),
        "sections": ["05_one_model_all_audits.py"],
    },
}
#: The notebooks whose sources all exist (a notebook is added by writing its sources).
NOTEBOOKS = {name: spec for name, spec in ALL_NOTEBOOKS.items()
             if all((HERE / "src" / src).is_file() for src in spec["sections"])}


def percent_cells(text: str) -> list:
    """Split a percent-format source into notebook cells."""
    cells = []
    kind, lines = None, []

    def flush():
        body = "\n".join(lines).strip("\n")
        if kind is None or not body.strip():
            return
        if kind == "markdown":
            md = "\n".join(ln[2:] if ln.startswith("# ") else ln.lstrip("#")
                           for ln in body.splitlines())
            cells.append(nbformat.v4.new_markdown_cell(md))
        else:
            cells.append(nbformat.v4.new_code_cell(body))

    for line in text.splitlines():
        if line.startswith("# %%"):
            flush()
            kind, lines = ("markdown" if "[markdown]" in line else "code"), []
        else:
            if kind is None:
                kind = "code"
            lines.append(line)
    flush()
    return cells


def assemble(name: str) -> nbformat.NotebookNode:
    spec = NOTEBOOKS[name]
    nb = nbformat.v4.new_notebook()
    nb.cells.append(nbformat.v4.new_markdown_cell(spec["title"]))
    for src in spec["sections"]:
        nb.cells.extend(percent_cells((HERE / "src" / src).read_text()))
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    return nb


def execute(nb: nbformat.NotebookNode, timeout: int = 600) -> nbformat.NotebookNode:
    """Run every cell headlessly (figures render inline); raises on the first failing cell.
    Progress bars are off (``PCFAIR_PROGRESS=0``): a headless run records every update of a
    bar as its own output, which a reader does not need."""
    import os

    from nbclient import NotebookClient

    before = os.environ.get("PCFAIR_PROGRESS")
    os.environ["PCFAIR_PROGRESS"] = "0"  # the kernel inherits this process's environment
    try:
        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(HERE)}}).execute()
    finally:
        if before is None:
            del os.environ["PCFAIR_PROGRESS"]
        else:
            os.environ["PCFAIR_PROGRESS"] = before
    return nb


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", metavar="NOTEBOOK",
                    help=f"notebooks to build (default: all of {sorted(NOTEBOOKS)})")
    ap.add_argument("--no-exec", action="store_true", help="assemble without executing")
    args = ap.parse_args()
    unknown = sorted(set(args.names) - set(NOTEBOOKS))
    if unknown:
        ap.error(f"unknown or incomplete notebooks {unknown}; buildable: {sorted(NOTEBOOKS)}")
    for name in args.names or NOTEBOOKS:
        nb = assemble(name)
        if not args.no_exec:
            nb = execute(nb)
        nbformat.write(nb, HERE / name)
        print(f"wrote {HERE / name}")


if __name__ == "__main__":
    main()
