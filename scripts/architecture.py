"""Draw zstc's architecture as two SVG files under docs/images/, from the code's own records so they cannot drift.

- ``architecture.svg``: the layers of the import-linter contract in pyproject.toml, top to bottom (a module imports
  only from layers below its own), the scorer layer with one box per registered model family.
- ``overview.svg`` (the README's picture): the front doors (CLI, Python API, HTTP service, Ray) over the one decision
  policy and the model families.

Hand-laid SVG, no graphviz or matplotlib: the output is the same text on every machine, so tests/test_docs.py
compares the committed files with what this script draws (run it after changing a layer or a family).

    python scripts/architecture.py          # rewrite both files
    python scripts/architecture.py --check  # exit 1 if either is stale
"""

from __future__ import annotations

import argparse
import sys
import tomllib
from html import escape
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
IMAGES = REPO / "docs" / "images"

FONT = 'font-family="DejaVu Sans, Helvetica, Arial, sans-serif"'
FRONT_DOORS = [
    ("CLI", "zstc classify, bench, ..."),
    ("Python API", "classify(), Classifier"),
    ("HTTP service", "zstc serve"),
    ("Ray", "sweeps, --engine ray"),
]
"""The ways in, each a layer of the contract (cli, api, server, scale): checked against it by :func:`layers`."""


def layers() -> list[str]:
    """The layers contract's layers, top to bottom, as pyproject.toml writes them (``a | b`` independent siblings,
    ``a : b`` siblings that may import one another)."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    contract = next(c for c in config["tool"]["importlinter"]["contracts"] if c["id"] == "layers")
    return [str(layer) for layer in contract["layers"]]


def family_names() -> list[str]:
    from zstc.models.families import families

    return [family.name for family in families()]


def _box(x: float, y: float, w: float, h: float, label: str, fill: str, size: int = 13, bold: bool = False) -> str:
    weight = ' font-weight="bold"' if bold else ""
    return (
        f'<rect x="{x}" y="{y}" width="{w}" height="{h}" rx="6" fill="{fill}" stroke="#37474f" stroke-width="1"/>\n'
        f'<text x="{x + w / 2}" y="{y + h / 2 + size / 3}" text-anchor="middle" font-size="{size}"{weight} {FONT}>'
        f"{escape(label)}</text>\n"
    )


def _svg(width: int, height: int, body: str, title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'role="img" aria-label="{escape(title)}">\n<title>{escape(title)}</title>\n'
        f'<rect width="{width}" height="{height}" fill="white"/>\n{body}</svg>\n'
    )


def architecture_svg() -> str:
    """The layers, top to bottom, with the families inside the scorer layer."""
    rows = layers()
    families = family_names()
    width, left, row_h, gap = 760, 20, 34, 8
    body = (
        f'<text x="{left}" y="24" font-size="15" font-weight="bold" {FONT}>Layers: a module imports only from the '
        f"layers below its own (pyproject.toml's import-linter contract)</text>\n"
    )
    y = 40
    for layer in rows:
        if layer in ("scorers",):
            h = row_h + 40
            body += _box(left, y, width - 2 * left, h, "", "#fff3e0")
            body += (
                f'<text x="{left + 12}" y="{y + 22}" font-size="13" font-weight="bold" {FONT}>scorers: one module per '
                f"family, none importing another</text>\n"
            )
            slot = (width - 2 * left - 24) / len(families)
            for i, name in enumerate(families):
                body += _box(left + 12 + i * slot, y + 32, slot - 8, 30, name, "#ffe0b2", 12)
        else:
            h = row_h
            parts = [p.strip() for p in layer.replace(":", "|").split("|")]
            slot = (width - 2 * left) / len(parts)
            for i, part in enumerate(parts):
                body += _box(left + i * slot, y, slot - (gap if i < len(parts) - 1 else 0), h, part, "#e3f2fd")
        y += h + gap
    body += (
        f'<text x="{left}" y="{y + 14}" font-size="12" fill="#455a64" {FONT}>Boxes side by side are one layer; data '
        f"flows tasks -&gt; scorer -&gt; score matrix -&gt; decisions (policy) -&gt; metrics -&gt; store -&gt; reports."
        f"</text>\n"
    )
    return _svg(width, int(y + 30), body, "zstc's import layers and model families")


def overview_svg() -> str:
    """The front doors over the one decision policy over the families."""
    families = family_names()
    width, left = 760, 20
    body = ""
    slot = (width - 2 * left) / len(FRONT_DOORS)
    for i, (name, what) in enumerate(FRONT_DOORS):
        x = left + i * slot
        body += _box(x, 10, slot - 10, 44, name, "#e3f2fd", 14, bold=True)
        body += (
            f'<text x="{x + (slot - 10) / 2}" y="70" text-anchor="middle" font-size="11" fill="#455a64" {FONT}>'
            f"{escape(what)}</text>\n"
        )
    body += _box(
        left,
        84,
        width - 2 * left,
        40,
        "one scorer interface, one decision policy (labels, probabilities, 'none')",
        "#e8f5e9",
        13,
    )
    slot = (width - 2 * left) / len(families)
    for i, name in enumerate(families):
        body += _box(left + i * slot, 140, slot - 10, 40, name, "#ffe0b2", 13)
    body += (
        f'<text x="{width / 2}" y="204" text-anchor="middle" font-size="11" fill="#455a64" {FONT}>model families: '
        f"any hub id or local folder of one of these</text>\n"
    )
    return _svg(width, 214, body, "zstc: four front doors over one policy and six model families")


PICTURES = {"architecture.svg": architecture_svg, "overview.svg": overview_svg}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a committed picture is stale, writing nothing")
    args = parser.parse_args()
    stale = []
    for name, draw in PICTURES.items():
        path, text = IMAGES / name, draw()
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                stale.append(name)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    if stale:
        print(f"stale: {', '.join(stale)} (run python scripts/architecture.py)", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
