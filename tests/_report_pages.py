"""Structural readers of pcfair reports for the tests: HTML by ``html.parser``, markdown by line.

``read_html`` returns the section ids, every table's rows and caption, every embedded image and
every tag seen; ``read_markdown`` returns the sections by heading with their tables and image
links. ``check_pattern_tables`` and ``check_png`` hold the checks every report must pass.
"""

from __future__ import annotations

import base64
import io
import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
PATTERN_SECTIONS = ("top_discrimination", "top_divergence", "maximal", "minimal", "pareto")
SECTIONS = ("summary", "model", "metrics", "certificate", "counts", *PATTERN_SECTIONS, "front")
TITLES = {"summary": "Summary", "model": "Model", "metrics": "Group-fairness metrics",
          "certificate": "Certification", "counts": "Pattern counts by threshold",
          "top_discrimination": "Top patterns by discrimination score",
          "top_divergence": "Top patterns by divergence", "maximal": "Maximal patterns",
          "minimal": "Minimal patterns", "pareto": "Pareto-optimal patterns",
          "front": "Discrimination score against probability", "sampled": "Sampled run",
          "notes": "Notes"}
_SHOWING = re.compile(r"^showing ([\d,]+) of ([\d,]+) ")
_ALL = re.compile(r"^([\d,]+) ")


@dataclass
class TableData:
    id: str
    section: str | None
    caption: str = ""
    header: list = field(default_factory=list)
    rows: list = field(default_factory=list)


@dataclass
class Page:
    sections: list = field(default_factory=list)
    tables: dict = field(default_factory=dict)
    images: list = field(default_factory=list)  # (figure id, section, src, alt)
    captions: dict = field(default_factory=dict)  # figure id -> figcaption text
    notes: dict = field(default_factory=dict)  # section -> texts of <p class="note">
    tags: set = field(default_factory=set)
    text: str = ""


class _Reader(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.page = Page()
        self.section = None
        self.table = None
        self.row = None
        self.cell = None
        self.in_head = False
        self.figure = None
        self.capture = None  # ("caption" | "figcaption" | "note", buffer)
        self.text = []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.page.tags.add(tag)
        if tag == "section":
            self.section = a.get("id")
            self.page.sections.append(self.section)
        elif tag == "table":
            self.table = TableData(a.get("id"), self.section)
            self.page.tables[self.table.id] = self.table
        elif tag == "thead":
            self.in_head = True
        elif tag == "tbody":
            self.in_head = False
        elif tag == "tr":
            self.row = []
        elif tag in ("td", "th"):
            self.cell = []
        elif tag == "figure":
            self.figure = a.get("id")
        elif tag == "img":
            self.page.images.append((self.figure, self.section, a.get("src", ""), a.get("alt")))
        elif tag in ("caption", "figcaption") or (tag == "p" and a.get("class") == "note"):
            self.capture = (tag, [])

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self.cell is not None:
            self.row.append("".join(self.cell).strip())
            self.cell = None
        elif tag == "tr" and self.row is not None:
            (self.table.header if self.in_head else self.table.rows).append(self.row)
            self.row = None
        elif tag == "table":
            self.table = None
        elif tag == "figure":
            self.figure = None
        elif self.capture is not None and tag == self.capture[0]:
            text = "".join(self.capture[1]).strip()
            if self.capture[0] == "caption":
                self.table.caption = text
            elif self.capture[0] == "figcaption":
                self.page.captions[self.figure] = text
            else:
                self.page.notes.setdefault(self.section, []).append(text)
            self.capture = None

    def handle_data(self, data):
        self.text.append(data)
        if self.cell is not None:
            self.cell.append(data)
        if self.capture is not None:
            self.capture[1].append(data)


def read_html(text: str) -> Page:
    reader = _Reader()
    reader.feed(text)
    reader.close()
    reader.page.text = "".join(reader.text)
    return reader.page


def _split_row(line: str) -> list[str]:
    """Cells of a markdown table row (pipes escaped with a backslash stay in the cell)."""
    cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
    return [c.strip() for c in cells]


@dataclass
class MdSection:
    title: str
    lines: list = field(default_factory=list)
    tables: list = field(default_factory=list)  # (caption, header, rows)
    images: list = field(default_factory=list)  # (alt, path)


def read_markdown(text: str) -> dict:
    sections: dict[str, MdSection] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("## "):
            current = MdSection(line[3:].replace("\\", ""))
            sections[current.title] = current
        elif current is not None:
            current.lines.append(line)
    for s in sections.values():
        caption, block = "", []
        for line in [*s.lines, ""]:
            if line.startswith("|"):
                block.append(_split_row(line))
                continue
            if block:
                s.tables.append((caption, block[0], block[2:]))
                block, caption = [], ""
            if line.startswith("*") and line.endswith("*") and len(line) > 2:
                caption = line.strip("*").replace("\\", "")
            m = re.match(r"!\[(.*)\]\((.*)\)", line)
            if m:
                s.images.append((m.group(1), m.group(2)))
    return sections


def expected_rows(caption: str, limit: int) -> int:
    """Rows a pattern table's caption announces ("showing N of M ..." or "M ...")."""
    m = _SHOWING.match(caption)
    if m:
        shown, total = (int(g.replace(",", "")) for g in m.groups())
        assert shown == limit < total, caption
        return shown
    m = _ALL.match(caption)
    assert m, caption
    n = int(m.group(1).replace(",", ""))
    return n


def check_png(data: bytes) -> tuple[int, int]:
    """The bytes are a PNG that matplotlib reads back; returns its (height, width)."""
    import matplotlib.image

    assert data[:8] == PNG_SIGNATURE
    img = matplotlib.image.imread(io.BytesIO(data), format="png")
    assert img.ndim == 3 and img.shape[0] > 50 and img.shape[1] > 50
    return img.shape[:2]


def data_uri_png(src: str) -> bytes:
    prefix = "data:image/png;base64,"
    assert src.startswith(prefix), src[:40]
    return base64.b64decode(src[len(prefix):], validate=True)
