"""The README's and the documentation pages' code blocks run as printed.

Every ``zstc`` command in the ``bash`` blocks of README.md and docs/*.md is either run here (in a scratch copy of the
working directory, with ``zstc`` and ``.venv/bin/zstc`` pointing at this checkout) or skipped for a reason this file
names: it needs the hub, a model folder the reader trains first, a placeholder the reader fills in, or minutes of
compute. Every ``python`` block runs too, and one followed by a ``text`` block must print exactly that text; so do the
examples in zstc.api's docstring. A block that cannot run here at all says so in the Markdown, on the line above it:
``<!-- not run: why -->`` (NOT_RUN); the test keeps those few and named. A new snippet is therefore either checked or
consciously skipped, never silently untested. The same command on two pages runs once.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from shared_data import REPO, SHARED_DATA

README = REPO / "README.md"
DOCS = REPO / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
"""Every page whose code blocks run: the README and the documentation site's pages."""

SKIP_RULES: list[tuple[str, str]] = [
    (r"--data hub|--tasks intent|\bdata pull\b", "needs the Hugging Face hub"),
    (r"\bmodels/|--backbone|train-nli", "needs a model folder the reader trains first (minutes to an hour)"),
    (r"\bserve\b", "starts a server that runs until stopped (tests/test_server.py covers it)"),
    (r"\bdemo\b", "the whole demo (make demo runs it)"),
    (
        r"\b(M|DIR|DIR_TRAIN|T|F|FILE|N|S|B|H|DEV\.jsonl|FOLDER_OR_HUB_ID)\b|\[|\]|\w\|\w|\.\.\.",
        "a template with placeholders for the reader",
    ),
    (
        r"\b(r|other|leaderboard|e5|probe|emotion)\.json\b|nli_train|texts\.(jsonl|txt)|\bbenchmarks/",
        "works on files an earlier, longer run writes",
    ),
    (r"--pooling cls --data|unseen|nli-probe", "scores complete datasets (minutes)"),
]
"""(pattern, reason): a command matching a pattern is not run here."""

NOT_RUN = re.compile(r"<!-- not run: (?P<reason>[^>]+?) -->\n")
"""The one visible mark of a code block that is not run here, on the line above its fence, with the reason."""
BLOCK = re.compile(rf"(?:{NOT_RUN.pattern})?```(?P<language>\w*)\n(?P<code>.*?)```\n?", flags=re.S)
MOST_NOT_RUN = 4
"""Blocks marked NOT_RUN, at most: a mark is for what cannot run anywhere a test runs, not for what is slow."""


def page_blocks(page: Path) -> list[tuple[str, str, str | None]]:
    """A page's fenced blocks in order: (language, code, the reason it is not run or None)."""
    return [(m["language"], m["code"], m["reason"]) for m in BLOCK.finditer(page.read_text(encoding="utf-8"))]


def doc_blocks(language: str) -> list[str]:
    """Every block of this language on every page that is run (not marked NOT_RUN), each text once."""
    found: list[str] = []
    for page in PAGES:
        for block_language, code, reason in page_blocks(page):
            if block_language == language and reason is None and code not in found:
                found.append(code)
    return found


def readme_blocks(language: str) -> list[str]:
    return [code for block_language, code, _ in page_blocks(README) if block_language == language]


def readme_commands() -> list[str]:
    """Every command line of the pages' run bash blocks (continuations joined, comments dropped), each once."""
    commands: list[str] = []
    for block in doc_blocks("bash"):
        for line in block.replace("\\\n", " ").splitlines():
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line and not line.startswith("#"):
                command = re.sub(r"\s+", " ", line)
                if command not in commands:
                    commands.append(command)
    return commands


def skip_reason(command: str) -> str | None:
    if not re.search(r"(^|\| |/)zstc\b", command):
        return "not a zstc command (installation and make targets are exercised by make itself)"
    for pattern, reason in SKIP_RULES:
        if re.search(pattern, command):
            return reason
    return None


RUNNABLE = [c for c in readme_commands() if skip_reason(c) is None]


def test_readme_has_runnable_commands() -> None:
    # The quickstart's commands at least: a rule that skipped everything would make the test below vacuous.
    assert any(c.startswith("echo") for c in RUNNABLE)
    assert sum("classify" in c for c in RUNNABLE) >= 4
    assert any(c.startswith(".venv/bin/zstc") for c in RUNNABLE)
    # The README's own commands are among those run (not only the pages').
    readme = [c for c in readme_commands() if any(c in block.replace("\\\n", " ") for block in readme_blocks("bash"))]
    assert sum(c in RUNNABLE for c in readme) >= 5, readme


def test_blocks_not_run_are_few_and_say_why() -> None:
    """Every fenced block has a language; a block marked NOT_RUN names its reason, and such blocks stay few."""
    marked = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        blocks = page_blocks(page)
        assert len(blocks) == text.count("```") // 2, f"{page.name}: an unclosed or unmatched fence"
        for language, code, reason in blocks:
            assert language in ("bash", "python", "text"), f"{page.name}: a block without a known language: {code[:80]}"
            if reason is not None:
                marked.append((page.name, reason))
    assert 0 < len(marked) <= MOST_NOT_RUN and all(len(reason.split()) >= 3 for _, reason in marked), marked


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A scratch working directory that looks like the repository root beside ../shared, with ``zstc`` and
    ``.venv/bin/zstc`` running this checkout's source."""
    if not (SHARED_DATA / "btzsc").is_dir():
        pytest.skip(f"BTZSC data not found at {SHARED_DATA}")
    root = tmp_path_factory.mktemp("readme")
    work = root / "repo"
    work.mkdir()
    for name in ("tests", "examples"):
        (work / name).symlink_to(REPO / name)
    (root / "shared").mkdir()
    (root / "shared" / "data").symlink_to(SHARED_DATA)
    bin_dir = work / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    wrapper = f'#!/bin/sh\nPYTHONPATH="{REPO / "src"}" exec "{sys.executable}" -m zstc "$@"\n'
    for target in (bin_dir / "zstc", root / "zstc"):
        target.write_text(wrapper)
        target.chmod(0o755)
    return work


RunResult = tuple[int, str, str]
_RAN: dict[str, RunResult] = {}
"""Each README command's (exit status, stdout, stderr), run once per session: the tests of what a command printed
read its run instead of paying for the model again."""

SHELL_RUN = re.compile(r"^\.venv/bin/zstc |\|")
"""Commands run by bash, as a reader runs them (the console-script path and a pipe into ``zstc``): these prove the
commands work from a shell in a fresh interpreter. Every other ``zstc ...`` line runs in this process (the same
argv through :func:`zstc.cli.main`, from the same working directory), which saves an interpreter start and
torch's import per command."""


def run_readme_command(command: str, workdir: Path, monkeypatch: pytest.MonkeyPatch, zstc_cli) -> RunResult:
    """``command`` run once in ``workdir`` (later calls get the first run's result)."""
    if command in _RAN:
        return _RAN[command]
    if SHELL_RUN.search(command):
        env = {
            **os.environ,
            "PATH": f"{workdir.parent}{os.pathsep}{os.environ['PATH']}",
            "ZSTC_SHARED_DATA": str(SHARED_DATA),
        }
        done = subprocess.run(
            ["bash", "-c", command], cwd=workdir, env=env, capture_output=True, text=True, timeout=600
        )
        _RAN[command] = (done.returncode, done.stdout, done.stderr)
        return _RAN[command]
    import shlex

    args = shlex.split(command)
    assert args[0] == "zstc", command
    with monkeypatch.context() as patch:
        patch.chdir(workdir)
        patch.setenv("ZSTC_SHARED_DATA", str(SHARED_DATA))
        _RAN[command] = zstc_cli(*args[1:])
    return _RAN[command]


def test_readme_commands_run_in_a_shell_too() -> None:
    """At least the console script and a pipe into zstc classify (which loads a model) run from bash."""
    shell = [c for c in RUNNABLE if SHELL_RUN.search(c)]
    assert any(c.startswith(".venv/bin/zstc") for c in shell) and any("| zstc classify" in c for c in shell), shell


@pytest.mark.parametrize("command", RUNNABLE)
def test_readme_command_runs(command: str, workdir: Path, monkeypatch: pytest.MonkeyPatch, zstc_cli) -> None:
    status, out, err = run_readme_command(command, workdir, monkeypatch, zstc_cli)
    assert status == 0, f"{command}\nstdout: {out[-2000:]}\nstderr: {err[-2000:]}"
    assert "Traceback" not in err
    # Quiet by default: no third-party progress bars or load reports.
    assert "Loading weights" not in err and "it/s]" not in err, err[-2000:]


def test_readme_echo_example_answers_positive(workdir: Path, monkeypatch: pytest.MonkeyPatch, zstc_cli) -> None:
    import json

    command = next(c for c in RUNNABLE if c.startswith('echo "I loved it"'))
    _, stdout, _ = run_readme_command(command, workdir, monkeypatch, zstc_cli)
    row = json.loads(stdout)
    assert row["label"] == "positive" and list(row["scores"]) == ["positive", "negative"]
    assert sum(row["scores"].values()) == pytest.approx(1, abs=1e-3)
    assert row["scores"]["positive"] > 0.8  # the polarity phrases, not a close call
    # The line each page prints under this command is this command's own output, to the digit.
    shown = [
        s for page in PAGES for s in re.findall(r'`(\{"text": "I loved it".*?\})`', page.read_text(encoding="utf-8"))
    ]
    assert shown and all(stdout.strip() == line for line in shown), shown
    assert re.search(r'`\{"text": "I loved it"', README.read_text(encoding="utf-8"))


def test_readme_review_examples_label_every_clear_review(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, zstc_cli
) -> None:
    """The README's reviews.csv examples as printed: 20/20 single-label; multi-label with the default rule
    no "none" and every review's own label first (the file's `expected` column is carried through)."""
    import json

    for flag in ("--out predictions.jsonl", "--multi-label --scores raw"):
        command = next(c for c in RUNNABLE if c.startswith("zstc classify tests/data/reviews.csv") and c.endswith(flag))
        status, stdout, err = run_readme_command(command, workdir, monkeypatch, zstc_cli)
        assert status == 0, err[-2000:]
        if "--out" in flag:  # the same records, in the file the command names
            stdout = (workdir / "predictions.jsonl").read_text(encoding="utf-8")
        rows = [json.loads(line) for line in stdout.splitlines()]
        assert len(rows) == 20
        if "--multi-label" in flag:
            assert all(row["labels"][0] == row["expected"] and "none" not in row["labels"] for row in rows), rows
        else:
            assert [row["label"] for row in rows] == [row["expected"] for row in rows]


def test_readme_polarity_default_and_what_turns_it_off() -> None:
    """As docs/classify.md says: `--template "This is {}."` is the default itself (the opinions stay); `{}` turns them off."""
    from zstc import classify

    text, labels = ["I loved it"], ["positive", "negative"]
    default = classify(text, labels)[0]
    assert classify(text, labels, template="This is {}.")[0].raw_scores == default.raw_scores
    assert classify(text, labels, template="{}")[0].raw_scores != default.raw_scores
    assert default.scores["positive"] == pytest.approx(0.888, abs=1e-3)  # docs/classify.md's number


def _printed_after(block: str) -> str | None:
    """The ``text`` block that follows a python block on its page: what the block prints, exactly."""
    for page in PAGES:
        blocks = page_blocks(page)
        for (language, code, _), after in zip(blocks, blocks[1:]):
            if language == "python" and code == block and after[0] == "text":
                return after[1]
    return None


PYTHON_BLOCKS = doc_blocks("python")


@pytest.mark.parametrize("block", PYTHON_BLOCKS, ids=[b.splitlines()[0][:40] for b in PYTHON_BLOCKS])
def test_python_blocks_run(block: str) -> None:
    """Every python block on every page runs as printed (in a fresh interpreter, from the repository root), and prints
    what the ``text`` block after it shows, if one does."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    result = subprocess.run(
        [sys.executable, "-c", block], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-2000:]
    printed = _printed_after(block)
    if printed is not None:
        assert result.stdout == printed
    if "from zstc import classify" in block:  # the quickstart: the headlines get their topics
        assert result.stdout.splitlines()[0].startswith("economy") and result.stdout.splitlines()[1].startswith(
            "sports"
        )


def test_python_blocks_include_the_quickstart_and_a_printed_output() -> None:
    assert any("from zstc import classify" in b for b in readme_blocks("python"))
    assert any("from zstc import classify" in b for b in PYTHON_BLOCKS)
    assert any(_printed_after(b) for b in PYTHON_BLOCKS)


def test_api_module_docstring_examples_run() -> None:
    """zstc.api's module docstring is the Python API's first example: its scores are checked, so they cannot go
    stale (they read 0.8.../0.1... while the model gave 0.9048/0.0952)."""
    import doctest

    import zstc.api

    results = doctest.testmod(zstc.api, optionflags=doctest.ELLIPSIS, verbose=False)
    assert results.attempted >= 3 and results.failed == 0, results


# -- the Layout table and the tree ------------------------------------------------------------------------

PACKAGE = REPO / "src" / "zstc"
INTERNALS = DOCS / "internals.md"
"""The page with the Layout table."""
PLUMBING = {"__init__.py", "__main__.py", "py.typed"}
"""Files every package (or this one) has for Python's sake; the Layout names them in one sentence."""


def _layout_rows() -> dict[str, str]:
    """The Layout table (docs/internals.md): each entry of its first column (``scorers/``, ``api.py``) -> its description."""
    text = INTERNALS.read_text(encoding="utf-8")
    table = text[text.index("| folder / module | what lives there |") :].split("\n\n", 1)[0]
    rows: dict[str, str] = {}
    for line in table.splitlines()[2:]:
        entries, description = line.strip("|").split("|", 1)
        for entry in re.findall(r"`([^`]+)`", entries):
            rows[entry] = description
    return rows


def _tree(folder: Path) -> set[str]:
    """A folder's entries as the table names them: ``name.py``, ``data.json``, ``sub/``; caches and plumbing left out."""
    return {
        path.name + "/" if path.is_dir() else path.name
        for path in folder.iterdir()
        if path.name not in PLUMBING and not path.name.startswith((".", "__pycache__"))
    }


def test_readme_layout_table_matches_the_tree() -> None:
    rows = _layout_rows()
    assert set(rows) == _tree(PACKAGE), "the Layout table's first column lists every folder and top-level module"
    for entry, description in rows.items():
        if entry.endswith("/"):
            named = set(re.findall(r"`(\w+\.(?:py|json)|\w+/)`", description))
            assert named == _tree(PACKAGE / entry), f"the {entry} row names every file of {entry} and no other"


def _cli_commands() -> dict[str, str]:
    """Every ``zstc`` command (a group such as ``cache`` counts as one) -> the stem of the cli/ module defining it."""
    from zstc.cli import app

    commands = {
        (info.name or info.callback.__name__.replace("_", "-")): info.callback.__module__.rsplit(".", 1)[-1]
        for info in app.registered_commands
        if info.callback is not None
    }
    for group in app.registered_groups:
        assert group.name is not None and group.typer_instance is not None, group
        modules = {
            info.callback.__module__.rsplit(".", 1)[-1]
            for info in group.typer_instance.registered_commands
            if info.callback is not None
        }
        assert len(modules) == 1, (group.name, modules)
        commands[group.name] = modules.pop()
    return commands


def test_readme_layout_names_the_module_of_every_command() -> None:
    """The cli/ row names each command's module: `bench.py` for bench, or `report.py (report, export, validate,
    schema)` for a module that holds several (the row once left `schema` out)."""
    row = _layout_rows()["cli/"]
    held = {
        module: {name.strip() for name in names.split(",")}
        for module, names in re.findall(r"`(\w+)\.py` \(([^)]*)\)", row)
    }
    commands = _cli_commands()
    assert len(commands) >= 17, commands
    for command, module in commands.items():
        assert f"`{module}.py`" in row, f"the cli/ row names {module}.py, where `zstc {command}` lives"
        assert command == module or command in held.get(module, set()), (
            f"the cli/ row says which commands {module}.py holds, `zstc {command}` among them"
        )


def test_no_two_modules_share_a_name() -> None:
    names = [
        path.stem for path in PACKAGE.rglob("*.py") if path.name not in PLUMBING and "__pycache__" not in path.parts
    ]
    names += [path.name for path in PACKAGE.rglob("*") if path.is_dir() and path.name != "__pycache__"]
    assert sorted(name for name in set(names) if names.count(name) > 1) == []


def test_service_error_types_are_the_documented_ones() -> None:
    """Every `error_type` the service's page (docs/service.md) names, and every one the service answers with, is one
    the OpenAPI schema (/docs) allows: the schema once left out the 408's `timeout`."""
    import typing

    pytest.importorskip("fastapi")
    from zstc.server.app import REASONS
    from zstc.server.schemas import ErrorResponse

    allowed = set(typing.get_args(ErrorResponse.model_fields["error_type"].annotation))
    text = (DOCS / "service.md").read_text(encoding="utf-8")
    paragraph = text[text.index("**Errors** have") :].split("\n\n", 1)[0]
    documented = set(re.findall(r"\b\d{3} `(\w+)`", paragraph))
    assert {"unauthorized", "timeout", "too_large", "validation", "overloaded", "unhealthy"} <= documented, documented
    sent = {reason for code, reason in REASONS.items() if code != 499}  # 499: the client left, nothing is sent
    assert documented | sent | {"backend"} <= allowed, (documented | sent) - allowed


def test_service_info_publishes_limits_as_the_options_give_them() -> None:
    """The service page's `--max-texts 128` is published in /info as 128, not 128.0 (the response model once made every
    limit a float)."""
    from dataclasses import asdict

    pytest.importorskip("fastapi")
    from zstc.server.settings import Limits
    from zstc.server.schemas import InfoResponse

    info = InfoResponse(
        model="m",
        family="embedding",
        score_type="cosine",
        temperature=1.0,
        single_label_temperature=1.0,
        own_probability_temperature=0.05,
        own_probability_center=0.0,
        scorer={},
        limits=asdict(Limits()),
        batching={},
        version="0",
    )
    limits = json.loads(info.model_dump_json())["limits"]
    assert limits == asdict(Limits()) and all(type(limits[k]) is type(v) for k, v in asdict(Limits()).items()), limits


NOT_ZSTC_OPTIONS = {
    "--no-deps": "pip's",
    "--max-concurrent-requests": "TEI's, compared with",
    "--max-batch-tokens": "TEI's, compared with (also a benchmarks/ script's)",
    "--backend": "the option zstc says it does not have (`--backend onnx`)",
    "--option": "the placeholder in `error: --option must be ...`",
    "--strict": "mkdocs build's",
}
"""Options the pages name that no zstc command or script of this repository takes, and whose they are."""


def test_readme_options_exist() -> None:
    """Every `--option` the README and the docs pages name is taken by a zstc command or by a script of benchmarks/ or scripts/
    (or is one of NOT_ZSTC_OPTIONS): a renamed option leaves no stale spelling behind."""
    from typing import Any

    from typer.main import get_command

    from zstc.cli import app

    def options(command: Any) -> set[str]:  # typer's own vendored click Command
        names = {name for param in command.params for name in [*param.opts, *getattr(param, "secondary_opts", [])]}
        for sub in getattr(command, "commands", {}).values():
            names |= options(sub)
        return names

    taken = options(get_command(app)) | {"--help"}  # click adds --help to every command outside its params
    for script in [*(REPO / "benchmarks").glob("*.py"), *(REPO / "scripts").glob("*.py")]:
        taken |= set(re.findall(r"[\"'](--[a-z][a-z0-9-]*)[\"'=]", script.read_text(encoding="utf-8")))
    named = {
        option
        for page in PAGES
        for option in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", page.read_text(encoding="utf-8"))
    }
    assert "--max-queued-pairs" in taken and "--no-yesno" in taken  # a command's option and a script's
    assert sorted(named - taken - set(NOT_ZSTC_OPTIONS)) == []


def test_readme_paths_exist() -> None:
    """Every file of this repository the README and the docs pages name (`tests/...`, `benchmarks/...`, `docs/...`) is
    there."""
    named = {
        path
        for page in PAGES
        for path in re.findall(
            r"\b((?:tests|src|docs|scripts|benchmarks|examples)/[\w./-]+\.[a-z]+)\b", page.read_text(encoding="utf-8")
        )
    }
    assert len(named) > 20 and sorted(path for path in named if not (REPO / path).exists()) == []


def test_dotted_names_in_docs_and_comments_resolve() -> None:
    """Every dotted name such as `zstc.api.Classifier` that the README, the Makefile, scripts/, benchmarks/, tests/
    or src/ writes is a module or an attribute of one: after the layout moved, a comment in scripts/ still gave the
    WordNet module's old path."""
    import importlib

    sources = [
        *PAGES,
        REPO / "Makefile",
        *(REPO / "scripts").iterdir(),
        *(REPO / "benchmarks").glob("*.py"),
        *(REPO / "tests").glob("*.py"),
        *(REPO / "src" / "zstc").rglob("*.py"),
    ]
    names = {
        name
        for path in sources
        if path.is_file()
        for name in re.findall(
            r"(?<![.\w])zstc(?:\.[a-z_]\w*)+", path.read_text(encoding="utf-8")
        )  # not .zstc.lock, a file
    }

    def resolves(name: str) -> bool:
        parts = name.split(".")
        for split in range(len(parts), 0, -1):
            try:
                found: object = importlib.import_module(".".join(parts[:split]))
            except ModuleNotFoundError as error:
                if not (error.name or "").startswith("zstc"):
                    return True  # an optional dependency missing here (fastapi, ...): the module exists
                continue
            for part in parts[split:]:
                if part in ("json", "py"):  # `zstc.json`-like file names in prose
                    return True
                if not hasattr(found, part):
                    return False
                found = getattr(found, part)
            return True
        return False

    assert len(names) > 50 and sorted(name for name in names if not resolves(name)) == []


def test_readme_lists_every_extra_that_pyproject_declares() -> None:
    """Getting started's "Extras:" sentence once left out `ray`, `onnx` and `dev`."""
    import tomllib

    extras = set(
        tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    )
    text = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    sentence = text[text.index("\nExtras: ") :].split("\n\n", 1)[0]
    listed = set(re.findall(r"(?:^|, )`([\w-]+)`", sentence.replace("\n", " ").removeprefix(" Extras: ")))
    assert listed == extras, (listed, extras)


def test_readme_states_the_python_that_pyproject_requires() -> None:
    """The README said Python 3.10+ while pyproject asked for 3.11 (the service uses asyncio.timeout)."""
    import tomllib

    required = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["requires-python"]
    oldest = re.fullmatch(r">=\s*3\.(\d+)", required)
    assert oldest is not None, required
    stated = {
        minor
        for page in PAGES
        for minor in re.findall(r"Python 3\.(\d+)(?:\+| or newer)", page.read_text(encoding="utf-8"))
    }
    assert stated == {oldest.group(1)}, (stated, required)
