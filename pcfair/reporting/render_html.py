"""One self-contained HTML file: inline CSS, images as base64 PNG, no script, no network.

Every name and value is escaped with :func:`html.escape`.
"""

from __future__ import annotations

import base64
from html import escape

from pcfair.reporting.document import BulletList, Document, Paragraph, Table
from pcfair.reporting.figures import ReportFigure

__all__ = ["render_html"]

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto;
       max-width: 62rem; padding: 0 1rem; color: #222; line-height: 1.45; }
h1 { font-size: 1.6rem; margin-bottom: 0.2rem; }
h2 { font-size: 1.25rem; border-bottom: 1px solid #ddd; padding-bottom: 0.2rem;
     margin-top: 2rem; }
p.subtitle { color: #555; margin-top: 0; }
p.verdict { font-weight: bold; font-size: 1.05rem; }
p.banner-fair, p.banner-unfair, p.banner-incomplete { font-weight: bold; font-size: 1.15rem;
  padding: 0.7rem 0.9rem; border-left: 0.5rem solid; border-radius: 0.2rem; }
p.banner-fair { background: #e6f4ea; border-color: #1e7b34; color: #0d4a1e; }
p.banner-unfair { background: #fde8e8; border-color: #b3261e; color: #6e1510; }
p.banner-incomplete { background: #fff4d6; border-color: #a86b00; color: #5c3b00; }
p.note { color: #7a4b00; background: #fff6e0; padding: 0.4rem 0.6rem; }
table { border-collapse: collapse; margin: 0.6rem 0; font-size: 0.9rem; }
caption { caption-side: top; text-align: left; color: #555; padding-bottom: 0.2rem; }
th, td { border: 1px solid #ddd; padding: 0.25rem 0.55rem; text-align: left;
         vertical-align: top; }
th { background: #f4f4f4; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code { font-size: 0.88rem; }
figure { margin: 1rem 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: 0.88rem; max-width: 50rem; }
"""


def _numeric(text: str) -> bool:
    try:
        float(text.replace(",", "").lstrip("≥ "))
    except ValueError:
        return False
    return True


def _table(t: Table) -> str:
    out = [f'<table id="{escape(t.id)}">']
    if t.caption:
        out.append(f"<caption>{escape(t.caption)}</caption>")
    out.append("<thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in t.headers)
               + "</tr></thead>")
    out.append("<tbody>")
    for row in t.rows:
        cells = []
        for i, cell in enumerate(row):
            if i in t.code_columns:
                cells.append(f"<td><code>{escape(cell)}</code></td>")
            else:
                cls = ' class="num"' if _numeric(cell) else ""
                cells.append(f"<td{cls}>{escape(cell)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def _figure(f: ReportFigure) -> str:
    data = base64.b64encode(f.png).decode("ascii")
    return (f'<figure id="figure-{escape(f.key)}">'
            f'<img src="data:image/png;base64,{data}" alt="{escape(f.title)}">'
            f"<figcaption>{escape(f.caption)}</figcaption></figure>")


def _block(b) -> str:
    if isinstance(b, Paragraph):
        cls = "" if b.kind == "text" else f' class="{escape(b.kind)}"'
        return f"<p{cls}>{escape(b.text)}</p>"
    if isinstance(b, BulletList):
        return "<ul>" + "".join(f"<li>{escape(item)}</li>" for item in b.items) + "</ul>"
    if isinstance(b, Table):
        return _table(b)
    return _figure(b)


def render_html(doc: Document) -> str:
    """The document as one HTML page.

    Examples
    --------
    >>> from pcfair.reporting.document import Document, Paragraph, Section
    >>> page = render_html(Document("R & D", "", [Section("a", "<A>", [Paragraph("x < y")])]))
    >>> '<section id="a">' in page, "<h2>&lt;A&gt;</h2>" in page, "<p>x &lt; y</p>" in page
    (True, True, True)
    """
    parts = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{escape(doc.title)}</title>", f"<style>{CSS}</style>", "</head>",
             "<body>", f"<h1>{escape(doc.title)}</h1>"]
    if doc.subtitle:
        parts.append(f'<p class="subtitle">{escape(doc.subtitle)}</p>')
    toc = "".join(f'<li><a href="#{escape(s.id)}">{escape(s.title)}</a></li>'
                  for s in doc.sections)
    parts.append(f'<nav id="contents"><ul>{toc}</ul></nav>')
    for s in doc.sections:
        parts.append(f'<section id="{escape(s.id)}">')
        parts.append(f"<h2>{escape(s.title)}</h2>")
        parts.extend(_block(b) for b in s.blocks)
        parts.append("</section>")
    parts += ["</body>", "</html>", ""]
    return "\n".join(parts)
