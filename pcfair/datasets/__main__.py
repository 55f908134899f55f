"""``python -m pcfair.datasets NAME``: write a binarized table of :func:`load_binarized` as CSV.

Examples::

    python -m pcfair.datasets compas --labels --out compas_labelled.csv
    python -m pcfair.datasets adult > adult.csv

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
from pcfair.errors import PCFairError


def main(argv=None) -> int:
    """Run the command line; returns the exit code."""
    parser = argparse.ArgumentParser(
        prog="python -m pcfair.datasets",
        description="Write a binarized table of the discrimination-pattern papers as CSV.")
    parser.add_argument("name", choices=BINARIZED_NAMES)
    parser.add_argument("--labels", action="store_true",
                        help="value labels such as '1 (Female)' instead of the 0/1 codes of "
                             "the features")
    parser.add_argument("--out", default=None, help="output CSV file (default: stdout)")
    parser.add_argument("--data-home", default=None, help="cache directory")
    parser.add_argument("--no-download", action="store_true",
                        help="fail instead of downloading a missing file")
    args = parser.parse_args(argv)
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


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
