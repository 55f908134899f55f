"""Shared helpers of the line-oriented readers: opening (gzip aware), tokenising, numbers."""

from __future__ import annotations

import gzip
import io
import math
import os
import re
import zlib
from collections.abc import Iterator
from pathlib import Path

from pcfair.errors import FormatError

_LINE_END = re.compile("\r\n?|\n")

PICKLE_MAGIC = (b"\x80", b"PK\x03\x04")

#: A log-probability may exceed 0 by this much (printing/rounding); above it is refused.
LOG_ROUNDING = 1e-9

#: Decompressed size limits of a ``.gz`` model file: at most ``MAX_GUNZIP_RATIO`` times the
#: compressed size plus ``GUNZIP_SLACK`` bytes, and never more than ``MAX_GUNZIPPED_BYTES``. Model
#: text (full-precision numbers) compresses 3-10 times; a gzip "bomb" is refused, not unpacked.
MAX_GUNZIPPED_BYTES = 1 << 30
MAX_GUNZIP_RATIO = 100
GUNZIP_SLACK = 64 << 20


def gunzip(raw: bytes, path: str) -> bytes:
    """Decompress gzip data (several members allowed), refusing corrupt or truncated data and
    output beyond the limits above with a :class:`FormatError`."""
    limit = min(MAX_GUNZIPPED_BYTES, MAX_GUNZIP_RATIO * len(raw) + GUNZIP_SLACK)
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as f:
            out = f.read(limit + 1)
    except (OSError, EOFError, zlib.error, ValueError) as exc:
        raise FormatError(f"corrupt gzip data ({type(exc).__name__}: {exc})", path) from None
    except MemoryError:
        raise FormatError("gzip data too large to decompress", path) from None
    if len(out) > limit:
        raise FormatError(f"gzip data decompresses to more than {limit} bytes "
                          f"({MAX_GUNZIP_RATIO} times its size plus {GUNZIP_SLACK >> 20} MiB): "
                          "refused as a likely gzip bomb", path)
    return out


def read_text(path: str | os.PathLike) -> str:
    """Read a text model file (transparently gunzipped); refuse binary (e.g. pickled) files,
    corrupt gzip data and text that is not UTF-8, all with a :class:`FormatError`."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except IsADirectoryError:
        raise FormatError("is a directory, not a model file", str(path)) from None
    if raw[:2] == b"\x1f\x8b":
        raw = gunzip(raw, str(path))
    if raw.startswith(PICKLE_MAGIC) or b"\x00" in raw[:4096]:
        raise FormatError(
            "binary file: this looks like a pickle (pyjuice saves pickles under '.jpc'); "
            "pcfair never loads pickles — export the circuit to a text format",
            str(path),
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise FormatError(f"not UTF-8 text ({exc.reason} at byte {exc.start})", str(path),
                          line) from None
    return text[1:] if text.startswith("\ufeff") else text


def write_text(path: str | os.PathLike, text: str) -> None:
    """Write text, gzipped when the name ends in ``.gz``."""
    path = Path(path)
    data = text.encode("utf-8")
    if path.name.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    path.write_bytes(data)


def records(text: str) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line number, tokens)`` of non-blank, non-comment lines (comments start with c).

    Lines end at ``\\n``, ``\\r\\n`` or ``\\r`` only, so line numbers are those an editor shows
    (other separators, such as form feeds, are whitespace inside a line)."""
    for lineno, line in enumerate(_LINE_END.split(text), start=1):
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
        """A natural-log probability: a number <= 0 or -inf (a zero probability). Values above 0
        by at most :data:`LOG_ROUNDING` are rounding and read as 0; larger ones, +inf and NaN
        are refused."""
        x = self.float(token, what)
        if x > LOG_ROUNDING:
            raise self.error(f"{what} {token} is the log of a probability above 1")
        return min(x, 0.0)

    def count(self, tokens: list[str], n: int, record: str) -> None:
        if len(tokens) != n:
            raise self.error(f"{record} record needs {n} fields, got {len(tokens)}")


def format_float(x: float) -> str:
    """Full-precision float text (``repr``), ``-inf`` for zero probabilities."""
    if x == -math.inf:
        return "-inf"
    return repr(float(x))
