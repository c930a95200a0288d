"""Options shared by several commands, declared once so they read the same everywhere."""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from zstc.defaults import DEFAULT_MODEL
from zstc.errors import ZstcError
from zstc.models.families import AUTO_PRECISION, SCORER_OPTIONS, family_names  # no torch: start-up stays fast
from zstc.validation import OPTIONS, Option

if TYPE_CHECKING:
    from zstc.benchmark.catalog import DataSource


def typer_option(option: Option) -> Any:
    """The ``typer.Option`` of an option record: its flags, help, ``--help`` panel and environment variable, and the
    record's check of the value given (its range, choices or device), as the flag is read. A command's parameter is
    ``Annotated[T, typer_option(record)] = default``; its type ``T`` is written beside it for mypy, and a test holds
    it to the record's. The check is the record's, so ``--max-samples 0`` is refused in the words a library call
    with ``max_samples=0`` gets (``--max-samples must be >= 1, got 0``), not in typer's own."""
    noted = _from_environment(option.envvar) if option.envvar else None

    def check(context: typer.Context, parameter: typer.CallbackParam, value: Any) -> Any:
        if noted is not None:
            value = noted(context, parameter, value)
        if value is not None and parameter.name is not None:
            option.check(parameter.name, value)  # an OptionError naming the parameter, written as its flag
        return value

    return typer.Option(
        *option.flags, help=option.help, rich_help_panel=option.panel, envvar=option.envvar, callback=check
    )


FROM_ENVIRONMENT: dict[str, str] = {}
"""The parameters of this command line whose value came from their environment variable, and that variable: an error
about one names the variable the user set (``ZSTC_API_KEY must be printable ASCII``), not a flag they never typed."""


def _from_environment(envvar: str) -> Any:
    def note(context: typer.Context, parameter: typer.CallbackParam, value: Any) -> Any:
        name = parameter.name or ""
        FROM_ENVIRONMENT.pop(name, None)
        source = context.get_parameter_source(name)  # click's ParameterSource, as typer vendors it
        if source is not None and source.name == "ENVIRONMENT":
            FROM_ENVIRONMENT[name] = envvar
        elif value is None and os.environ.get(envvar) == "":  # set but empty: click reads it as unset, zstc refuses it
            FROM_ENVIRONMENT[name] = envvar
            return ""
        return value

    return note


MODEL = Option(
    str, DEFAULT_MODEL, help="Hub id, paper short name or local folder (see `zstc models`).", flags=("--model", "-m")
)
FAMILY = Option(
    str,
    None,
    allow_none=True,
    help=f"{', '.join(family_names())}; read from the registry when omitted.",
    flags=("--family", "-f"),
)
BF16 = Option(
    bool, None, allow_none=True, help="Aliases of --precision bf16 and --precision fp32.", flags=("--bf16/--no-bf16",)
)
"""``--bf16/--no-bf16``, the CLI's aliases of ``--precision`` (not a scorer option: :func:`requested_precision`)."""

Model = Annotated[str, typer_option(MODEL)]
Family = Annotated[Optional[str], typer_option(FAMILY)]
Pooling = Annotated[Optional[str], typer_option(SCORER_OPTIONS["pooling"])]
ScoreType = Annotated[Optional[str], typer_option(SCORER_OPTIONS["score_type"])]
EntailmentIndex = Annotated[Optional[int], typer_option(SCORER_OPTIONS["entailment_index"])]
PromptStyle = Annotated[Optional[str], typer_option(SCORER_OPTIONS["prompt_style"])]
BatchSize = Annotated[Optional[int], typer_option(SCORER_OPTIONS["batch_size"])]
PrecisionFp32 = Annotated[Optional[str], typer_option(SCORER_OPTIONS["precision"])]
PrecisionAuto = Annotated[Optional[str], typer_option(AUTO_PRECISION)]
Bf16 = Annotated[Optional[bool], typer_option(BF16)]
Device = Annotated[Optional[str], typer_option(SCORER_OPTIONS["device"])]
Shortlist = Annotated[Optional[str], typer_option(SCORER_OPTIONS["shortlist"])]
MaxLength = Annotated[Optional[int], typer_option(SCORER_OPTIONS["max_length"])]
Instruction = Annotated[Optional[str], typer_option(SCORER_OPTIONS["instruction"])]
RecheckMargin = Annotated[Optional[float], typer_option(SCORER_OPTIONS["recheck_margin"])]
TrustRemoteCode = Annotated[Optional[bool], typer_option(SCORER_OPTIONS["trust_remote_code"])]
Backend = Annotated[Optional[str], typer_option(SCORER_OPTIONS["backend"])]

# Yin et al. (2019): hypothesis variants and multi-label decisions (bench and classify).
TEMPLATE = Option(
    str,
    None,
    allow_none=True,
    help="Turns a label into its hypothesis, e.g. 'This text is about {}.'; default: the aspect's "
    "(Yin et al.'s, as PROTOCOL.md writes them: topic 'this text is about {}', emotion 'this text expresses {}', "
    "situation 'the people there need {}'); '{}' fills in the bare name, definition or both. "
    "Not with --hypotheses dataset, whose hypotheses are the dataset's own.",
)
"""``--template``; what a template may hold is :func:`zstc.validation.check_template`'s rule."""
MULTI_LABEL = Option(
    bool,
    False,
    flags=("--multi-label",),
    help="Every label whose score passes its threshold; 'none' when no label does.",
)
LABEL_THRESHOLDS = Option(
    list,
    None,
    allow_none=True,
    flags=("--label-threshold",),
    help="Multi-label threshold for one label, LABEL=NUMBER (a plain cut for that label; the others keep theirs); "
    "repeatable.",
)
"""``--label-threshold``, each ``LABEL=NUMBER`` read by :func:`zstc.policy.parse_label_thresholds`."""

CLI_OPTIONS: dict[str, Option] = {
    "model": MODEL,
    "family": FAMILY,
    "bf16": BF16,
    "template": TEMPLATE,
    "multi_label": MULTI_LABEL,
    "label_thresholds": LABEL_THRESHOLDS,
}
"""The records of the flags that several commands share and no library function takes as such, by parameter name
(the library's are :data:`zstc.validation.OPTIONS` and :data:`zstc.models.families.SCORER_OPTIONS`)."""

Hypotheses = Annotated[str, typer_option(OPTIONS["hypotheses"])]
Template = Annotated[Optional[str], typer_option(TEMPLATE)]
MultiLabel = Annotated[bool, typer_option(MULTI_LABEL)]
Threshold = Annotated[Optional[float], typer_option(OPTIONS["threshold"])]
LabelThresholds = Annotated[Optional[list[str]], typer_option(LABEL_THRESHOLDS)]

DEFAULT = DEFAULT_MODEL


def requested_precision(precision: str | None, bf16: bool | None, default: str) -> str:
    """What the user asked for with ``--precision`` or its aliases ``--bf16/--no-bf16``, else the command's default."""
    from zstc.errors import UnknownNameError

    alias = None if bf16 is None else ("bf16" if bf16 else "fp32")
    if precision is not None and alias is not None and precision != alias:
        raise UnknownNameError(f"--precision {precision} contradicts --{'' if bf16 else 'no-'}bf16; give one of them")
    return precision or alias or default


def scorer_options(model_family: str | None = None, **given: Any) -> dict[str, Any]:
    """The scorer keyword arguments the user actually set (unset options take the family's defaults), checked
    against :data:`~zstc.models.families.SCORER_OPTIONS` before any model loads, with ``precision`` (when given)
    resolved to fp32 or bf16 for the device and the model's family (``auto`` is family-aware:
    :func:`zstc.scorers.runtime.resolve_precision`): once per run, here. A ``shortlist`` is recorded in its canonical
    ``MODEL:K`` form, so ``8`` and ``all-MiniLM-L6-v2:8`` are one setting (one fingerprint)."""
    from zstc.scorers.runtime import resolved_options
    from zstc.validation import check_options

    options = {name: value for name, value in given.items() if value is not None}
    # The ranges every family shares; a family's own check (which options it takes) follows when the scorer is made.
    check_options({name: value for name, value in options.items() if name in SCORER_OPTIONS}, SCORER_OPTIONS)
    if "shortlist" in options:
        from zstc.scorers.cascade import parse_shortlist

        shortlist = parse_shortlist(options["shortlist"])
        options["shortlist"] = shortlist.canonical if shortlist is not None else None
    if "precision" in options:
        return resolved_options(options.pop("precision"), options, model_family)
    return options


FLAGS: dict[str, str] = {
    "label_thresholds": "--label-threshold",
    "descriptions": "--labels-file descriptions",
    "draws": "--bootstrap",  # zstc.reports.build.build_report's
    "negatives_per_text": "--negatives",  # zstc.yin.unseen.UnseenConfig's
}
"""Parameter names whose flag is not simply ``--`` plus the name with dashes (label descriptions come from a
``--labels-file``; a library parameter named otherwise than its flag)."""


def flag(parameter: str) -> str:
    """The command-line flag of a Python parameter: ``batch_size`` -> ``--batch-size``; the environment variable that
    gave its value, where one did (:data:`FROM_ENVIRONMENT`)."""
    return FROM_ENVIRONMENT.get(parameter) or FLAGS.get(parameter, "--" + parameter.replace("_", "-"))


def cli_message(error: ZstcError) -> str:
    """The error's message with the parameters it names written as the flags a CLI user typed."""
    if not error.parameters:
        return str(error)
    # A value the message quotes (Python's repr, as ``quoted`` writes it) is the user's own text, kept as typed:
    # a template "the template: {} {}" is not "the --template: {} {}". An apostrophe after a letter is prose.
    names = "|".join(re.escape(parameter) for parameter in sorted(error.parameters, key=len, reverse=True))
    pattern = re.compile(rf"""(?<!\w)'(?:[^'\\]|\\.)*'|(?<!\w)"(?:[^"\\]|\\.)*"|(?<![\w-])(?:{names})(?![\w-])""")
    return pattern.sub(lambda match: match[0] if match[0][0] in "'\"" else flag(match[0]), str(error))


# -- the scorer options, as one bundle --------------------------------------------------------------------

SCORER_FLAGS: tuple[str, ...] = (
    "pooling",
    "score_type",
    "entailment_index",
    "prompt_style",
    "batch_size",
    "precision",
    "bf16",
    "device",
    "max_length",
    "recheck_margin",
    "backend",
    "trust_remote_code",
    "instruction",
    "shortlist",
)
"""The scorer options that have a flag (each declared in :data:`~zstc.models.families.SCORER_OPTIONS`, ``bf16``
here), in ``--help``'s order: the parameters :meth:`ScorerOptions.of` gathers. Not ``query``, a yes/no scorer's
option without a flag: nli-probe's ``--query`` is the probe's own (which side of a pair), not the scorer's."""


@dataclass(frozen=True)
class ScorerOptions:
    """The scorer options of one command line: what the user set (``None``: left to the family's default)."""

    given: dict[str, Any]
    default_precision: str = "fp32"

    @classmethod
    def of(cls, parameters: dict[str, Any], default_precision: str) -> ScorerOptions:
        """The scorer flags among a command's ``parameters`` (its ``locals()`` on entry: each flag is a parameter
        of its own, typed from its record); ``default_precision`` is the command's (fp32 for benchmark numbers,
        auto for classifying)."""
        return cls({name: value for name, value in parameters.items() if name in SCORER_FLAGS}, default_precision)

    def get(self, name: str) -> Any:
        """The value given for option ``name`` (None: not given, so the family's default applies)."""
        return self.given.get(name)

    @property
    def precision(self) -> str:
        """``--precision`` or its ``--bf16/--no-bf16`` alias, else the command's default (not yet resolved)."""
        return requested_precision(self.given.get("precision"), self.given.get("bf16"), self.default_precision)

    def kwargs(
        self,
        only: Collection[str] | None = None,
        *,
        model: str | None = None,
        family: str | None = None,
        **override: Any,
    ) -> dict[str, Any]:
        """Keyword arguments for :func:`zstc.scorers.make_scorer`: the options set (those named in ``only``,
        when given), ``override`` on top, and the precision resolved for the device and, for ``auto``, for the
        family of ``model`` (``family``: the user's ``--family``) when given."""
        given = {
            name: value
            for name, value in self.given.items()
            if name not in ("precision", "bf16") and (only is None or name in only)
        }
        model_family = None
        if model is not None and self.precision == "auto":
            from zstc.models.registry import get_model_spec

            try:
                model_family = get_model_spec(model, family).family
            except ZstcError:  # an unknown model is refused where the model is made, after the input's own checks
                model_family = None
        return scorer_options(model_family, **{**given, **override, "precision": self.precision})


# -- shared by several commands: labels on the command line, and where the benchmark data comes from -----------


def split_labels(value: str) -> list[str]:
    """``--labels``: comma-separated, a label holding a comma in double quotes (``'"Food, drink",Travel'``), as
    in a CSV row; a plain split made ``"Food`` and ``drink"`` two labels."""
    import csv

    from zstc.errors import LabelError
    from zstc.io import csv_field_limit, csv_problem

    csv_field_limit()
    try:
        return next(csv.reader([value], skipinitialspace=True, strict=True))
    except csv.Error as error:
        raise LabelError(
            f"--labels {value!r}: {csv_problem(error)} (quote a label that holds a comma: '\"a, b\",c')"
        ) from None


DataOption = Annotated[
    Optional[str],
    typer.Option(
        help="A directory of dataset files (grouped or paired layout), 'hub' for btzsc/btzsc, or 'sample' (the "
        "packaged sample, not the paper's protocol); default: $ZSTC_DATA, else what `zstc data pull` stored, else "
        "shared/data/btzsc."
    ),
]
"""``--data`` of the benchmark commands; where it is left out, :func:`zstc.benchmark.catalog.data_source` decides."""


def data_location(data: str | Path | None) -> str:
    """Where a command reads BTZSC datasets from (``--data``, else the rule's next step), said by :func:`announce`;
    a :class:`zstc.errors.DataError` saying how to get data when nothing is found."""
    from zstc.benchmark.catalog import require_data_source

    source = require_data_source(data)
    announce(source)
    return source.location


def announce(source: DataSource) -> None:
    """Say where the data comes from in one line on stderr, unless it is the folder ``--data`` named (the user said
    it already, and an error after it stays one line)."""
    from zstc.cli.verbosity import say

    if source.origin != "--data":
        say(source.line())
