"""The report as GitHub-flavoured markdown, for terminals and pull requests.

Text is backslash-escaped so that names cannot turn into markup; pattern texts are code spans.
Figures are referenced by relative path when the caller saved them beside the file, and are
otherwise replaced by their caption and a pointer to the HTML format.
"""

from __future__ import annotations

import re

from pcfair.reporting.document import BulletList, Document, Paragraph, Table
from pcfair.reporting.figures import ReportFigure

__all__ = ["escape_markdown", "render_markdown"]

_SPECIAL = re.compile(r"([\\`*_\[\]<>|#])")


def escape_markdown(text: str) -> str:
    """Backslash-escape the characters markdown could read as markup.

    Examples
    --------
    >>> escape_markdown("a_b | <c>")
    'a\\\\_b \\\\| \\\\<c\\\\>'
    """
    return _SPECIAL.sub(r"\\\1", text).replace("\n", " ")


def _code(text: str) -> str:
    """A code span that survives a table cell: pipes escaped, backticks fenced."""
    text = text.replace("|", "\\|").replace("\n", " ")
    fence = "``" if "`" in text else "`"
    pad = " " if fence == "``" else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _table(t: Table) -> str:
    def cell(i: int, text: str) -> str:
        return _code(text) if i in t.code_columns else escape_markdown(text)

    lines = []
    if t.caption:
        lines += [f"*{escape_markdown(t.caption)}*", ""]
    lines.append("| " + " | ".join(escape_markdown(h) for h in t.headers) + " |")
    lines.append("|" + "|".join("---" for _ in t.headers) + "|")
    lines += ["| " + " | ".join(cell(i, c) for i, c in enumerate(row)) + " |" for row in t.rows]
    return "\n".join(lines)


def _figure(f: ReportFigure, images: dict[str, str]) -> str:
    caption = f"*{escape_markdown(f.caption)}*"
    if f.key in images:
        return f"![{escape_markdown(f.title)}]({images[f.key]})\n\n{caption}"
    return (f"> Figure “{escape_markdown(f.title)}” is in the HTML report "
            f"(`format=\"html\"`).\n\n{caption}")


def _block(b, images: dict[str, str]) -> str:
    if isinstance(b, Paragraph):
        text = escape_markdown(b.text)
        if b.kind.startswith("banner-"):
            return f"> **{text}**"
        return {"verdict": f"**{text}**", "note": f"> {text}"}.get(b.kind, text)
    if isinstance(b, BulletList):
        return "\n".join(f"- {escape_markdown(item)}" for item in b.items)
    if isinstance(b, Table):
        return _table(b)
    return _figure(b, images)


def render_markdown(doc: Document, images: dict[str, str] | None = None) -> str:
    """The document as markdown; ``images`` maps figure keys to relative paths of saved PNGs.

    Examples
    --------
    >>> from pcfair.reporting.document import Document, Section, Table
    >>> t = Table("t", ("pattern",), (("a=1 | b=2",),), code_columns=frozenset({0}))
    >>> print(render_markdown(Document("R", "", [Section("s", "S", [t])])))
    # R
    <BLANKLINE>
    ## S
    <BLANKLINE>
    | pattern |
    |---|
    | `a=1 \\| b=2` |
    <BLANKLINE>
    """
    images = images or {}
    parts = [f"# {escape_markdown(doc.title)}"]
    if doc.subtitle:
        parts.append(escape_markdown(doc.subtitle))
    for s in doc.sections:
        parts.append(f"## {escape_markdown(s.title)}")
        parts.extend(_block(b, images) for b in s.blocks)
    return "\n\n".join(parts) + "\n"
