"""``python -m pcfair.datasets NAME``: write a binarized table of :func:`load_binarized` as CSV.

Examples::

    python -m pcfair.datasets compas --labels --out compas_labelled.csv
    python -m pcfair.datasets adult > adult.csv
    python -m pcfair.datasets --download-all      # fill the cache with every known file
    python -m pcfair.datasets --raw adult.data --out adult.data   # UCI's file, as published

The table is read from the cache (``--data-home``, else ``PCFAIR_DATA``, else
``~/.pcfair_data``), downloaded first when missing. ``--labels`` writes the value labels of
the binarisation recipe (``"0 (Male)"``, ``"1 (Female)"``) instead of the 0/1 codes of the
features (the decision keeps 0/1): ``pcfair learn`` on that file gives a circuit whose
witnesses say what each value means. The shipped ``circuits/*.json`` were learned that way.
Exit codes: 0 written, 2 bad input or a file that cannot be fetched.
"""

from __future__ import annotations

import argparse
import sys

from pcfair.datasets._binarized import BINARIZED_NAMES, load_binarized
from pcfair.datasets._cache import fetch_file, get_data_home
from pcfair.datasets._registry import REGISTRY
from pcfair.errors import PCFairError


def main(argv=None) -> int:
    """Run the command line; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m pcfair.datasets",
        description="Write a binarized table of the discrimination-pattern papers as CSV.")
    parser.add_argument("name", nargs="?", choices=BINARIZED_NAMES)
    parser.add_argument("--download-all", action="store_true",
                        help="download every known data file (binarized tables and raw public "
                             "files) into the cache, checking each digest, and write nothing "
                             "else")
    parser.add_argument("--raw", default=None, metavar="FILE",
                        help="copy a raw public file as published (e.g. adult.data: no header, "
                             "', ' separators; compas-scores-two-years.csv) to --out, from the "
                             "cache (downloaded and checked first when missing)")
    parser.add_argument("--labels", action="store_true",
                        help="value labels such as '1 (Female)' instead of the 0/1 codes of "
                             "the features")
    parser.add_argument("--out", default=None, help="output CSV file (default: stdout)")
    parser.add_argument("--data-home", default=None, help="cache directory")
    parser.add_argument("--no-download", action="store_true",
                        help="fail instead of downloading a missing file")
    args = parser.parse_args(argv)
    if args.download_all:
        return _download_all(args.data_home)
    if args.raw is not None:
        return _copy_raw(args)
    if args.name is None:
        parser.error("name a table (one of " + ", ".join(BINARIZED_NAMES) + ") or give "
                     "--download-all")
    try:
        ds = load_binarized(args.name, data_home=args.data_home,
                            download_if_missing=not args.no_download, labels=args.labels)
        ds.frame.to_csv(args.out if args.out is not None else sys.stdout, index=False)
    except BrokenPipeError:  # the reader went away (``... | head``)
        return 141
    except (PCFairError, OSError) as exc:
        print(f"python -m pcfair.datasets: error: {' '.join(str(exc).split())}",
              file=sys.stderr)
        return 2
    if args.out is not None:
        print(f"wrote {args.name} ({len(ds.frame):,} rows, decision {ds.target}) to {args.out}",
              file=sys.stderr)
    return 0


def _copy_raw(args) -> int:
    """Copy the cached raw file ``--raw`` to ``--out`` (stdout without it)."""
    import shutil

    try:
        path = fetch_file(args.raw, data_home=args.data_home,
                          download_if_missing=not args.no_download)
        if args.out is None:
            with open(path, "rb") as f:
                shutil.copyfileobj(f, sys.stdout.buffer)
            return 0
        shutil.copyfile(path, args.out)
    except BrokenPipeError:
        return 141
    except (PCFairError, OSError) as exc:
        print(f"python -m pcfair.datasets: error: {' '.join(str(exc).split())}",
              file=sys.stderr)
        return 2
    print(f"copied {path.name} to {args.out}", file=sys.stderr)
    return 0


def _download_all(data_home) -> int:
    """Fetch every registered file into the cache; exit 2 if any could not be had."""
    failed = 0
    for path in REGISTRY:
        try:
            fetch_file(path, data_home=data_home)
            print(f"ok  {path}", file=sys.stderr)
        except (PCFairError, OSError) as exc:
            failed += 1
            print(f"python -m pcfair.datasets: error: {' '.join(str(exc).split())}",
                  file=sys.stderr)
    print(f"{len(REGISTRY) - failed} of {len(REGISTRY)} file(s) in {get_data_home(data_home)}",
          file=sys.stderr)
    return 2 if failed else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
