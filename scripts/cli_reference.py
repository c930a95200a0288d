"""Write docs/cli.md, the CLI reference, from the typer app itself: every command, its help and every option.

Generated, so it cannot drift: tests/test_docs.py fails when the committed page differs from what this script writes
(run it after changing a command, an option or its help). ``--check`` exits 1 when the page is stale.

    python scripts/cli_reference.py          # rewrite docs/cli.md
    python scripts/cli_reference.py --check  # exit 1 if docs/cli.md is not what the app says
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

PAGE = Path(__file__).resolve().parents[1] / "docs" / "cli.md"

INTRO = """# CLI reference

Every `zstc` command with its help and every option, generated from the command line itself by
`scripts/cli_reference.py` (a test fails when this page is stale). The other pages say when and why to use them.
Options of the root command go before the command: `zstc --quiet classify ...`.
"""


def _escape(text: str) -> str:
    """Markdown-safe table text: pipes, angle brackets, emphasis markers and backslashes as literals."""
    text = re.sub(r"([\\|*_])", r"\\\1", text)
    return text.replace("<", "&lt;").replace(">", "&gt;")


def _default(param: Any) -> str:
    default = param.default
    if param.required or default is None or callable(default) or isinstance(default, (list, tuple)):
        return ""
    if isinstance(default, bool):
        return "" if not getattr(param, "secondary_opts", None) and default is False else str(default).lower()
    return f"`{default}`"


def _commands(command: Any, path: list[str]) -> list[tuple[list[str], Any]]:
    found = [(path, command)]
    for name, sub in getattr(command, "commands", {}).items():
        found += _commands(sub, [*path, name])
    return found


def reference() -> str:
    """docs/cli.md as the app says it."""
    from typer.main import get_command

    from zstc.cli import app

    sections = [INTRO]
    for path, command in _commands(get_command(app), ["zstc"]):
        name = " ".join(path)
        sections.append(f"## `{name}`\n\n" + (command.help or "").strip() + "\n")
        rows = []
        for param in command.params:
            names = [*param.opts, *getattr(param, "secondary_opts", [])]
            if param.param_type_name == "argument":
                names = [(param.name or "").upper()]
            flags = " / ".join(f"`{flag}`" for flag in names)
            rows.append(
                f"| {flags} | {_escape(' '.join((getattr(param, 'help', '') or '').split()))} | {_default(param)} |"
            )
        if rows:
            sections.append("| option | what | default |\n|---|---|---|\n" + "\n".join(rows) + "\n")
    return "\n".join(sections)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if docs/cli.md is stale, writing nothing")
    args = parser.parse_args()
    text = reference()
    if args.check:
        sys.exit(0 if PAGE.read_text(encoding="utf-8") == text else 1)
    PAGE.write_text(text, encoding="utf-8")
    print(f"wrote {PAGE}")


if __name__ == "__main__":
    main()
