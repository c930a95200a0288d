"""One self-contained ``index.html``: tables inline, figures embedded as base64 PNG, CSS inline.

Nothing is fetched when the page opens (no scripts, fonts or images from the network), so it can be
mailed, archived or opened offline.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Sequence
from dataclasses import dataclass, field

from zstc.reports.figures import SavedFigure
from zstc.reports.tables import Table

_CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto; max-width: 1200px; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; margin-bottom: .2em; } h2 { border-bottom: 1px solid #ddd; padding-bottom: .2em; margin-top: 2em; }
h3 { font-size: 1.05em; margin: 1.4em 0 .3em; }
.caption, .meta { color: #555; font-size: .9em; margin: .2em 0 .6em; }
.scroll { overflow-x: auto; }
table { border-collapse: collapse; font-size: 12px; }
th, td { padding: 3px 8px; border-bottom: 1px solid #eee; white-space: nowrap; }
td.text { white-space: normal; max-width: 40em; }  /* long descriptions wrap instead of pushing numbers off the page */
th { background: #f5f5f5; position: sticky; top: 0; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
tr.mine td { background: #fff4d6; font-weight: 600; }
figure { margin: 1em 0; } figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { color: #555; font-size: .9em; }
details { margin: .4em 0; } summary { cursor: pointer; }
nav a { margin-right: 1em; }
"""


@dataclass
class Section:
    """A heading with an introduction, then tables and figures in order."""

    anchor: str
    title: str
    intro: str = ""
    tables: list[Table] = field(default_factory=list)
    figures: list[SavedFigure] = field(default_factory=list)
    collapsed: bool = False
    """Figures folded into ``<details>`` (for many confusion matrices)."""


def _figure_html(figure: SavedFigure) -> str:
    data = base64.b64encode(figure.png.read_bytes()).decode("ascii")
    caption = html.escape(figure.title + (": " + figure.caption if figure.caption else ""))
    return (
        f'<figure id="fig-{html.escape(figure.name)}"><img alt="{html.escape(figure.title)}" '
        f'src="data:image/png;base64,{data}"><figcaption>{caption}</figcaption></figure>'
    )


def _section_html(section: Section) -> str:
    parts = [f'<h2 id="{section.anchor}">{html.escape(section.title)}</h2>']
    if section.intro:
        parts.append(f'<p class="meta">{html.escape(section.intro)}</p>')
    parts += [table.to_html() for table in section.tables]
    for figure in section.figures:
        rendered = _figure_html(figure)
        parts.append(
            f"<details><summary>{html.escape(figure.title)}</summary>{rendered}</details>"
            if section.collapsed
            else rendered
        )
    return "\n".join(parts)


def render_page(title: str, subtitle: str, sections: Sequence[Section]) -> str:
    """The report's HTML page: title, subtitle, a navigation bar and ``sections`` in order (text escaped)."""
    nav = " ".join(f'<a href="#{s.anchor}">{html.escape(s.title)}</a>' for s in sections)
    body = "\n".join(_section_html(s) for s in sections)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{html.escape(title)}</title>'
        f'<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1><p class="meta">{html.escape(subtitle)}</p>'
        f"<nav>{nav}</nav>\n{body}\n</body></html>\n"
    )
