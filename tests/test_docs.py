"""The documentation site stays true to the code: the pages that are generated are what their scripts generate, every
CLI option is explained on a page, every page is in the site's navigation, and ``--help`` reads as prose.

The code blocks of every page run in tests/test_readme.py; ``mkdocs build --strict`` (broken links and anchors, pages
left out) runs in ``make test``.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from shared_data import REPO

DOCS = REPO / "docs"


def _script(name: str) -> ModuleType:
    """A script of scripts/ imported as a module (they are not a package)."""
    spec = importlib.util.spec_from_file_location(f"docs_script_{name}", REPO / "scripts" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _commands(command: Any, path: tuple[str, ...] = ("zstc",)) -> list[tuple[tuple[str, ...], Any]]:
    found = [(path, command)]
    for name, sub in getattr(command, "commands", {}).items():
        found += _commands(sub, (*path, name))
    return found


@pytest.fixture(scope="module")
def cli() -> Any:
    from typer.main import get_command

    from zstc.cli import app

    return get_command(app)


def test_cli_reference_is_what_the_app_says() -> None:
    """docs/cli.md is generated from the typer app: a changed option or help text regenerates it."""
    generated = _script("cli_reference").reference()
    assert (DOCS / "cli.md").read_text(encoding="utf-8") == generated, "stale: run python scripts/cli_reference.py"


def test_every_cli_option_is_explained_on_a_page(cli: Any) -> None:
    """Each option of each command is named on a page a user reads (the README or a docs page other than the generated
    reference): an option added without a word of documentation fails here."""
    pages = [REPO / "README.md", *(page for page in DOCS.glob("*.md") if page.name != "cli.md")]
    text = "\n".join(page.read_text(encoding="utf-8") for page in pages)
    unexplained = []
    options = 0
    for path, command in _commands(cli):
        for param in command.params:
            if param.param_type_name != "option":
                continue
            options += 1
            flags = [flag for flag in [*param.opts, *param.secondary_opts] if flag.startswith("--")]
            if not any(re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", text) for flag in flags):
                unexplained.append(f"{' '.join(path)} {flags[0]}")
    assert options > 200 and unexplained == []


def test_every_page_is_in_the_navigation() -> None:
    """mkdocs.yml's nav lists every page of docs/ (a page outside it is reachable by no menu)."""
    import yaml

    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))

    def pages(entries: list[Any]) -> set[str]:
        found: set[str] = set()
        for entry in entries:
            for value in entry.values():
                found |= pages(value) if isinstance(value, list) else {value}
        return found

    assert pages(config["nav"]) == {page.name for page in DOCS.glob("*.md")}
    assert config["theme"]["font"] is False  # the built site loads no fonts from Google


def test_architecture_pictures_are_what_the_script_draws() -> None:
    """The committed SVGs are drawn from pyproject.toml's layers contract and the registered families."""
    script = _script("architecture")
    for name, draw in script.PICTURES.items():
        assert (DOCS / "images" / name).read_text(encoding="utf-8") == draw(), (
            f"stale {name}: run scripts/architecture.py"
        )
    from zstc.models.families import families

    svg = (DOCS / "images" / "architecture.svg").read_text(encoding="utf-8")
    for layer in script.layers():
        for part in re.split(r"[|:]", layer):
            assert f">{part.strip()}<" in svg or part.strip() == "scorers", part
    assert all(f">{family.name}<" in svg for family in families())


def test_help_lists_one_line_summaries_and_reads_as_prose(cli: Any, zstc_cli, monkeypatch: pytest.MonkeyPatch) -> None:
    """Docstring line breaks leaked into rich's wrapping ("... Cross-encoders\\n score each pair", and command rows of
    four ragged lines in `zstc --help`): each command's help is paragraphs of one line each, led by a summary."""
    for path, command in _commands(cli):
        paragraphs = (command.help or "").split("\n\n")
        assert all("\n" not in paragraph for paragraph in paragraphs), path
        summary = paragraphs[0]
        assert summary.endswith(".") and (len(summary) <= 100 or path == ("zstc",)), (path, summary)  # a listed row
    monkeypatch.setenv("COLUMNS", "200")
    status, out, _ = zstc_cli("--help")
    assert status == 0
    rows = [line for line in out.splitlines() if re.match(r"│ [a-z]", line)]
    for name, command in cli.commands.items():
        summary = (command.help or "").split("\n\n")[0]
        assert any(row.split()[1] == name and summary in row for row in rows), (name, summary)


def test_screenshots_script_takes_a_screenshot(chromium: str, tmp_path: Path) -> None:
    """scripts/screenshots.py's screenshot function on a committed picture (its fast part: the full script starts a
    server and runs a benchmark), and the committed screenshots are the PNGs of the sizes it takes."""
    from matplotlib.image import imread

    script = _script("screenshots")
    shot = tmp_path / "overview.png"
    script.screenshot(chromium, (DOCS / "images" / "overview.svg").as_uri(), shot, (800, 240))
    assert imread(shot).shape[:2] == (240, 800) and imread(shot)[..., :3].std() > 0.05, "the screenshot is blank"
    for name, (width, height) in script.SIZES.items():
        pixels = imread(DOCS / "images" / name)
        assert pixels.shape[:2] == (height, width) and pixels[..., :3].std() > 0.05, name


def test_size_accuracy_figure_is_what_the_script_draws(tmp_path: Path) -> None:
    """docs/images/size-accuracy.svg is drawn from the published scores shipped in the package (scripts/figures.py)."""
    pytest.importorskip("matplotlib")
    drawn = _script("figures").size_accuracy(tmp_path)
    assert drawn.read_text(encoding="utf-8") == (DOCS / "images" / "size-accuracy.svg").read_text(encoding="utf-8"), (
        "stale: run python scripts/figures.py"
    )


def test_api_reference_shows_docstrings_in_markdown_forms() -> None:
    """The API reference (mkdocstrings) showed `:func:` roles and ``>>>`` examples as plain text; the griffe
    extension mkdocs.yml loads turns them into inline code and a Python block."""
    markdown = _script("griffe_sphinx_text").markdown
    assert markdown("see :func:`zstc.api.classify` and ``x``") == "see `zstc.api.classify` and `x`"
    assert markdown("Example:\n\n>>> f()\n1\n\nAfter.") == "Example:\n\n```python\n>>> f()\n1\n```\n\nAfter."
