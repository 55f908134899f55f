"""Shared helpers of the line-oriented readers: opening (gzip aware), tokenising, numbers."""

from __future__ import annotations

import gzip
import math
import os
from collections.abc import Iterator
from pathlib import Path

from pcfair.errors import FormatError

PICKLE_MAGIC = (b"\x80", b"PK\x03\x04")


def read_text(path: str | os.PathLike) -> str:
    """Read a text model file (transparently gunzipped); refuse binary (e.g. pickled) files."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except IsADirectoryError:
        raise FormatError("is a directory, not a model file", str(path)) from None
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise FormatError(f"corrupt gzip data ({exc})", str(path)) from None
    if raw.startswith(PICKLE_MAGIC) or b"\x00" in raw[:4096]:
        raise FormatError(
            "binary file: this looks like a pickle (pyjuice saves pickles under '.jpc'); "
            "pcfair never loads pickles — export the circuit to a text format",
            str(path),
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", str(path)) from None


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write text, gzipped when the name ends in ``.gz``."""
    path = Path(path)
    data = text.encode("utf-8")
    if path.name.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    path.write_bytes(data)


def records(text: str) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line number, tokens)`` of non-blank, non-comment lines (comments start with c)."""
    for lineno, line in enumerate(text.splitlines(), start=1):
        tokens = line.split()
        if not tokens or tokens[0][0] == "c":
            continue
        yield lineno, tokens


class LineReader:
    """Number parsing that raises :class:`FormatError` with the file and line."""

    def __init__(self, path: str):
        self.path = path
        self.line: int | None = None

    def error(self, message: str) -> FormatError:
        return FormatError(message, self.path, self.line)

    def int(self, token: str, what: str) -> int:
        try:
            return int(token)
        except ValueError:
            raise self.error(f"bad {what} {token!r}: expected an integer") from None

    def float(self, token: str, what: str) -> float:
        try:
            x = float(token)
        except ValueError:
            raise self.error(f"bad {what} {token!r}: expected a number") from None
        if math.isnan(x):
            raise self.error(f"{what} is NaN")
        return x

    def log_prob(self, token: str, what: str) -> float:
        """A natural-log probability: a number <= 0 (tiny rounding above 0 tolerated), or -inf."""
        x = self.float(token, what)
        if x > 1e-6:
            raise self.error(f"{what} {token} is log of a probability above 1")
        return min(x, 0.0)

    def count(self, tokens: list[str], n: int, record: str) -> None:
        if len(tokens) != n:
            raise self.error(f"{record} record needs {n} fields, got {len(tokens)}")


def format_float(x: float) -> str:
    """Full-precision float text (``repr``), ``-inf`` for zero probabilities."""
    if x == -math.inf:
        return "-inf"
    return repr(float(x))
