"""The option vocabulary: each option declared once (zstc.validation.Option), and the CLI's flags, the service's
settings and fields and the library's checks all made from that one record."""

from __future__ import annotations

import math
import typing
from typing import Any

import numpy as np
import pytest
from pydantic import BaseModel, ValidationError

from zstc.cli.options import CLI_OPTIONS
from zstc.errors import OptionError, UnknownOptionError
from zstc.models.families import SCORER_OPTIONS, families
from zstc.server.settings import SERVE_OPTIONS, EngineConfig, Limits, ServeSettings
from zstc.validation import (
    OPTIONS,
    Choices,
    DeviceName,
    Interval,
    Option,
    check_options,
)

VOCABULARIES: dict[str, dict[str, Option]] = {
    "OPTIONS": OPTIONS,
    "SCORER_OPTIONS": SCORER_OPTIONS,
    "SERVE_OPTIONS": SERVE_OPTIONS,
    "CLI_OPTIONS": CLI_OPTIONS,
}


def _commands() -> dict[str, Any]:
    """Every command's click object, by its name (``cache list``)."""
    from typer.main import get_command

    from zstc.cli import app

    root = get_command(app)
    found = {}
    for name, command in root.commands.items():  # type: ignore[attr-defined]
        found[name] = command
        for sub, subcommand in getattr(command, "commands", {}).items():
            found[f"{name} {sub}"] = subcommand
    return found


def test_no_command_has_its_signature_rewritten() -> None:
    """Typer reads each command's own signature: no decorator wraps a command and forges its ``__signature__``."""
    for name, command in _commands().items():
        callback = command.callback
        if callback is None:  # a group
            continue
        original = getattr(callback, "__wrapped__", callback)  # typer's own wrapper keeps the command as __wrapped__
        assert "__signature__" not in vars(original) and not hasattr(original, "__wrapped__"), name


@pytest.mark.parametrize("vocabulary", ["SCORER_OPTIONS", "SERVE_OPTIONS", "OPTIONS", "CLI_OPTIONS"])
def test_every_flag_is_made_from_its_record(vocabulary: str) -> None:
    """A flag named like a record of the vocabulary has the record's help, declarations, panel and environment
    variable and is checked by it, and its parameter's type is the record's (the type written beside the record for
    mypy)."""
    from zstc.cli.options import AUTO_PRECISION

    records = VOCABULARIES[vocabulary]
    seen = 0
    for name, command in _commands().items():
        if command.callback is None:
            continue
        hints = typing.get_type_hints(getattr(command.callback, "__wrapped__", command.callback), include_extras=True)
        for param in command.params:
            record = records.get(param.name)
            auto = param.name == "precision" and param.help == AUTO_PRECISION.help
            if record is None or param.help != record.help and not auto:
                continue  # a command's own option of that name (train-nli's --batch-size: pairs per step)
            seen += 1
            declared = [flag for flag in record.flags for flag in flag.split("/")]
            assert not declared or sorted(param.opts + param.secondary_opts) == sorted(declared), (name, param.name)
            assert getattr(param, "rich_help_panel", None) == record.panel, (name, param.name)
            assert param.envvar == record.envvar, (name, param.name)
            assert param.callback is not None, (name, param.name)  # the record's check, as the flag is read
            written = typing.get_args(hints[param.name])[0]
            types = (written, *typing.get_args(written))
            assert record.type in (*types, *map(typing.get_origin, types)), (name, param.name, written)
    assert seen >= len([r for r in records.values() if r.help]) // 2, f"too few flags of {vocabulary} found: {seen}"


def test_the_serve_settings_and_flags_take_their_defaults_from_the_records() -> None:
    serve = _commands()["serve"]
    defaults = {param.name: param.default for param in serve.params}
    for name, record in SERVE_OPTIONS.items():
        assert defaults[name] == record.default, name
    settings = ServeSettings()
    for section in (EngineConfig(), Limits(), settings):
        for name, value in vars(section).items():
            if name in SERVE_OPTIONS:
                assert value == SERVE_OPTIONS[name].default and type(value) is type(SERVE_OPTIONS[name].default), name


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (0, "batch_size must be >= 1, got 0"),
        (1.5, "batch_size must be an integer, got 1.5"),
        (True, "batch_size must be an integer, got True"),
    ],
)
def test_one_rule_says_one_thing_from_the_cli_and_the_library(value: Any, message: str) -> None:
    """The CLI's early check of a scorer option (before any model loads) and a family's own check (make_scorer)
    are one rule with one message. They said "must be a whole number" and "must be an integer" for 1.5, and the
    family refused the 2.0 that the other took."""
    from zstc.cli.options import scorer_options
    from zstc.scorers import make_scorer

    with pytest.raises(OptionError) as cli:
        scorer_options(batch_size=value)
    with pytest.raises(OptionError) as library:
        make_scorer("some-org/some-model", "embedding", batch_size=value)
    assert str(cli.value) == str(library.value) == message
    assert cli.value.parameters == library.value.parameters == ("batch_size",)
    made = make_scorer("some-org/some-model", "embedding", batch_size=2.0)
    assert scorer_options(batch_size=2.0)["batch_size"] == made.batch_size == 2


def test_a_commands_own_option_is_not_taken_for_a_scorer_option() -> None:
    """nli-probe's --query (hypothesis or premise) is the probe's; the yes/no scorer's query option has no flag."""
    from zstc.cli.options import ScorerOptions

    parameters = {"query": "premise", "batch_size": 8, "precision": None, "seed": 0, "model": "m"}
    assert ScorerOptions.of(parameters, "fp32").given == {"batch_size": 8, "precision": None}


@pytest.mark.parametrize(
    ("closed", "refused", "kept"),
    [
        ("both", [-0.5, 1.5], [0, 1]),
        ("left", [-0.5, 1], [0, 0.5]),
        ("right", [0, 1.5], [1, 0.5]),
        ("neither", [0, 1], [0.5]),
    ],
)
def test_an_interval_keeps_the_ends_it_closes(closed: str, refused: list[float], kept: list[float]) -> None:
    option = Option(float, constraint=Interval(0, 1, closed=closed))
    low, high = (">=" if closed in ("both", "left") else ">"), ("<=" if closed in ("both", "right") else "<")
    for value in refused:
        with pytest.raises(OptionError, match=rf"^x must be {low} 0 and {high} 1, got {value:g}$"):
            option.check("x", value)
    assert [option.check("x", value) for value in kept] == [float(value) for value in kept]
    with pytest.raises(OptionError, match=r"^x must be a finite number, got nan$"):
        option.check("x", math.nan)


def test_choices_and_devices() -> None:
    with pytest.raises(UnknownOptionError, match=r"^unknown score type 'odds': score_type must be one of logodds, "):
        SCORER_OPTIONS["score_type"].check("score_type", "odds")
    with pytest.raises(UnknownOptionError, match=r"^pooling must be one of native, cls, got 'mean'$"):
        SCORER_OPTIONS["pooling"].check("pooling", "mean")
    device = Option(str, constraint=DeviceName())
    assert device.check("device", "cpu") == "cpu" and device.check("device", "auto") == "auto"
    with pytest.raises(OptionError, match=r"^device must be cpu, cuda, cuda:N, mps or auto, got 'gpu0'$"):
        device.check("device", "gpu0")


def _outside(option: Option) -> Any:
    """A value of the option's type just outside its constraint (scikit-learn's generate_invalid_param_val)."""
    assert isinstance(option.constraint, Interval) and option.constraint.low is not None
    step = 1 if option.type is int else 0.5
    return option.constraint.low if option.constraint.closed in ("right", "neither") else option.constraint.low - step


@pytest.mark.parametrize("vocabulary", list(VOCABULARIES))
def test_every_declared_option_refuses_what_its_constraint_rules_out(vocabulary: str) -> None:
    """Invalid values made from each record's own constraint are refused naming the option; each default is valid."""
    for name, option in VOCABULARIES[vocabulary].items():
        assert option.default is None or option.check(name, option.default) == option.default, name
        if isinstance(option.constraint, Interval) and option.constraint.low is not None:
            with pytest.raises(OptionError, match=rf"^{name} must be >=? ") as refused:
                check_options({name: _outside(option)}, VOCABULARIES[vocabulary])
            assert refused.value.parameters == (name,)
        if isinstance(option.constraint, Choices):
            with pytest.raises(UnknownOptionError):
                option.check(name, "not-a-choice")
    for family in families():  # a family's own version of an option keeps the vocabulary's constraint
        for name, option in family.options.items():
            if name in SCORER_OPTIONS:
                shared = SCORER_OPTIONS[name]
                assert (option.type, option.constraint) == (shared.type, shared.constraint), name


def test_the_services_field_is_the_records_rule() -> None:
    """A pydantic field made from a record refuses what the record's check refuses: one rule, service and library."""
    option = Option(float, 0.5, Interval(0, 1, closed="right"))

    class Request(BaseModel):
        share: float = option.field(description="a share")

    assert Request().share == 0.5 and Request(share=1).share == 1
    for value in (0, 1.5, math.nan, math.inf):
        with pytest.raises(ValidationError):
            Request(share=value)
        with pytest.raises(OptionError):
            option.check("share", value)
    assert Request.model_json_schema()["properties"]["share"] == {
        "default": 0.5,
        "description": "a share",
        "exclusiveMinimum": 0,
        "maximum": 1,
        "title": "Share",
        "type": "number",
    }


def test_no_flag_carries_a_range_of_its_own() -> None:
    """A flag's range is its record's (checked as the flag is read, in the record's words): none has typer's own
    ``min``/``max``, whose message ("Input should be greater than or equal to 1") said another thing than the
    library's for the same value, and whose range disagreed with it (calibrate's --dev-fraction 0.05 to 0.95)."""
    ranged = [
        f"{name} {param.name}"
        for name, command in _commands().items()
        for param in command.params
        if getattr(param, "min", None) is not None or getattr(param, "max", None) is not None
    ]
    assert ranged == []


def _library(call: str, tmp_path: Any) -> None:
    """The library's own check of one option, as a Python caller meets it."""
    from zstc.benchmark.nli_probe import run_probe
    from zstc.benchmark.runner import Bench, BenchConfig
    from zstc.benchmark.tasks import Task, stratified_sample
    from zstc.cli.experiments import CALIBRATION_SAMPLES
    from zstc.reports.build import build_report
    from zstc.scale.planner import SweepPlan, run_sweep
    from zstc.scale.ray_classify import classify_with_ray
    from zstc.training import TrainConfig
    from zstc.yin.unseen import UnseenConfig

    task = Task("t", ["a", "b"], np.array([0, 1]), ["x", "y"], ["x", "y"])
    ray = dict(out_dir=tmp_path, labeller=None, model="m", family=None, options={}, settings="")
    calls: dict[str, Any] = {
        "chunk_size": lambda: classify_with_ray([], chunk_size=0, **ray),
        "actors": lambda: classify_with_ray([], actors=0, **ray),
        "adapt_sample": lambda: check_options({"adapt_sample": 0}),
        "draws": lambda: build_report([], tmp_path / "report", draws=5),
        "bench": lambda: Bench(
            BenchConfig("m", ["imdb"], str(tmp_path), max_samples=0, out=tmp_path / "r.json")
        ).validate(),
        "sample": lambda: stratified_sample(task, 0),
        "seed": lambda: stratified_sample(task, 1, seed=-1),
        "max_retries": lambda: run_sweep(SweepPlan([], [], [], {}), max_retries=-1),
        "probe": lambda: run_probe(None, {}, max_samples=0),  # type: ignore[arg-type]
        "dev_fraction": lambda: check_options({"dev_fraction": 1}),
        "calibration_samples": lambda: CALIBRATION_SAMPLES.check("max_samples", 2),
        "negatives": lambda: UnseenConfig(negatives_per_text=-1),
        "eval_fraction": lambda: TrainConfig("b", "d", "o", eval_fraction=0.0),
        "max_train_samples": lambda: check_options({"max_train_samples": 0}),
    }
    calls[call]()


@pytest.mark.parametrize(
    ("args", "call"),
    [
        (["classify", "in.csv", "--labels", "a,b", "--chunk-size", "0"], "chunk_size"),
        (["classify", "in.csv", "--labels", "a,b", "--actors", "0"], "actors"),
        (["classify", "in.csv", "--labels", "a,b", "--adapt-sample", "0"], "adapt_sample"),
        (["report", "r.json", "--bootstrap", "5"], "draws"),
        (["bench", "-m", "m", "--max-samples", "0"], "bench"),
        (["sweep", "--models", "m", "--max-samples", "0"], "sample"),
        (["sweep", "--models", "m", "--max-retries", "-1"], "max_retries"),
        (["nli-probe", "-m", "m", "--max-samples", "0"], "probe"),
        (["dataset-similarity", "--max-samples", "0"], "sample"),
        (["template-robustness", "-m", "m", "--data", "d", "--task", "t", "--max-samples", "0"], "sample"),
        (["calibrate", "-m", "m", "--data", "d", "--task", "t", "--dev-fraction", "1"], "dev_fraction"),
        (["calibrate", "-m", "m", "--data", "d", "--task", "t", "--max-samples", "2"], "calibration_samples"),
        (["unseen", "-m", "m", "--data", "d", "--train-data", "t", "--negatives", "-1"], "negatives"),
        (["unseen", "-m", "m", "--data", "d", "--train-data", "t", "--eval-fraction", "0"], "eval_fraction"),
        (["unseen", "-m", "m", "--data", "d", "--train-data", "t", "--max-samples", "0"], "sample"),
        (["template-robustness", "-m", "m", "--data", "d", "--task", "imdb", "--seed", "-1"], "seed"),
        (["unseen", "-m", "m", "--data", "d", "--train-data", "t", "--max-train-samples", "0"], "max_train_samples"),
    ],
)
def test_a_flag_and_the_library_refuse_a_value_out_of_range_alike(
    args: list[str], call: str, zstc_cli: Any, tmp_path: Any
) -> None:
    """Each flag that carried typer's own range is refused by its record: the CLI's line is the library's message
    for the same value with the parameter written as its flag (``draws`` as --bootstrap, ``negatives_per_text`` as
    --negatives), and the exit status is a usage error's."""
    from zstc.cli.options import cli_message

    with pytest.raises(OptionError) as library:
        _library(call, tmp_path)
    code, out, err = zstc_cli(*args)
    assert (code, out, err) == (2, "", f"error: {cli_message(library.value)}\n")
