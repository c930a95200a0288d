"""The one place where user-provided texts, labels, templates and option values are checked (scikit-learn style).

Every entry point (Python API, CLI, HTTP service, bench) calls these, so a message for a given mistake is
written once and reads the same everywhere.

Options are checked against data, not code: each option is declared once, as an :class:`Option` (type, one
constraint of one vocabulary, :class:`Interval`, :class:`Choices` or :class:`DeviceName`, default, help and
flag; scikit-learn's ``_param_validation`` is the model), and one function, :func:`check_options`, checks a
dict of values against a dict of options before any work starts. The CLI's flags and the service's settings
are made from the same records, so a flag, a field and a check cannot disagree. Messages name the Python
parameter (``batch_size must be >= 1, got 0``); the CLI rewrites the names it finds in
:attr:`OptionError.parameters` into its flags when it prints one.
"""

from __future__ import annotations

import itertools
import math
import numbers
import string
import sys
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from zstc.errors import DataError, LabelError, OptionError, UnknownOptionError, ZstcError, did_you_mean, quoted

_TYPE_WORDS: dict[type, str] = {bool: "true or false", int: "an integer", float: "a number", str: "a string"}


@dataclass(frozen=True)
class Interval:
    """Numbers from ``low`` to ``high`` (``None``: unbounded on that side), as scikit-learn's
    ``Interval(Real, 0, None, closed="left")``: ``closed`` says which ends belong to it, ``"both"``, ``"left"``,
    ``"right"`` or ``"neither"``. Whether they are whole numbers is the option's :attr:`Option.type`."""

    low: float | None = None
    high: float | None = None
    closed: str = "both"

    def problem(self, value: Any) -> str | None:
        """Why the number ``value`` lies outside the interval (``must be > 0, got 0``), or None."""
        low_open, high_open = self.closed in ("right", "neither"), self.closed in ("left", "neither")
        too_low = self.low is not None and (value <= self.low if low_open else value < self.low)
        too_high = self.high is not None and (value >= self.high if high_open else value > self.high)
        shown = value if isinstance(value, numbers.Integral) else f"{value:g}"  # a whole number as typed, not as 1e+23
        return f"must be {self.text()}, got {shown}" if too_low or too_high else None

    def text(self) -> str:
        """``"> 0"``, ``">= 0 and <= 1"``: the bounds as a message states them."""
        bounds = []
        if self.low is not None:
            bounds.append(f"{'>' if self.closed in ('right', 'neither') else '>='} {_number(self.low)}")
        if self.high is not None:
            bounds.append(f"{'<' if self.closed in ('left', 'neither') else '<='} {_number(self.high)}")
        return " and ".join(bounds) or "a number"


@dataclass(frozen=True)
class Choices:
    """One of a few values (scikit-learn's ``StrOptions``). ``meaning`` says what a value names, for the message:
    ``"score type"`` gives "unknown score type 'odds': score_type must be one of ..."."""

    values: tuple[Any, ...]
    meaning: str = ""

    def listed(self, value: Any) -> tuple[str, str]:
        """The choices as a message lists them, and a did-you-mean hint for ``value``."""
        hint = did_you_mean(value, [str(choice) for choice in self.values]) if isinstance(value, str) else ""
        return ", ".join(str(choice) for choice in self.values), hint


@dataclass(frozen=True)
class DeviceName:
    """A device torch understands and this machine has (``cpu``, ``cuda``, ``cuda:1``, ``mps``) or ``auto``."""


Constraint = Interval | Choices | DeviceName
"""The one constraint vocabulary of zstc's options."""
_ErrorClass = type[OptionError]


@dataclass(frozen=True)
class Option:
    """One option, declared once: its type, constraint, default and help, and the flag that gives it on the command
    line. The CLI's typer parameters (:func:`zstc.cli.options.typer_option`), the service's settings and the
    library's checks (:meth:`check`, :func:`check_options`) are all made from it. Its name is its key in the dict
    of options it belongs to, as in scikit-learn's ``_parameter_constraints``."""

    type: type
    """``bool``, ``int``, ``float`` or ``str`` (an ``int`` is accepted where a ``float`` is asked for; a ``float``
    is finite)."""
    default: Any = None
    constraint: Constraint | None = None
    allow_none: bool = False
    """Whether ``None`` is a value of its own (it then means what :attr:`help` says, e.g. "the model's own")."""
    help: str = ""
    """The help of its flag (``zstc CMD --help``)."""
    flags: tuple[str, ...] = ()
    """The flag's declarations when they are not ``--`` plus the name with dashes (``("--model", "-m")``,
    ``("--bf16/--no-bf16",)``)."""
    panel: str | None = None
    """The ``--help`` panel that lists the flag (None: Options)."""
    envvar: str | None = None
    """An environment variable that gives the value when the flag is not given (``--help`` shows it)."""

    def but(self, **changes: Any) -> Option:
        """This option with some fields changed (a family's own default batch size, a command's narrower range)."""
        return replace(self, **changes)

    def field(self, **extra: Any) -> Any:
        """The pydantic ``Field`` of this option in the service's request models: its default and its constraint
        (an :class:`Interval` as ``ge``/``gt``/``le``/``lt``, a ``float`` finite), with ``extra`` (a description)."""
        from pydantic import Field

        bounds: dict[str, Any] = {"allow_inf_nan": False} if self.type is float else {}
        if isinstance(self.constraint, Interval):
            if self.constraint.low is not None:
                bounds["gt" if self.constraint.closed in ("right", "neither") else "ge"] = self.constraint.low
            if self.constraint.high is not None:
                bounds["lt" if self.constraint.closed in ("left", "neither") else "le"] = self.constraint.high
        return Field(default=self.default, **bounds, **extra)

    def problem(self, value: Any) -> tuple[_ErrorClass, str] | None:
        """Why ``value`` breaks this option, as an error class and a message to follow the option's name
        (``must be >= 1, got 0``); None when it keeps it. Each rule's one message is written here."""
        if value is None:
            return None if self.allow_none else (OptionError, f"must be {self._type_words()}, got None")
        if not _is_instance(value, self.type):
            return OptionError, f"must be {self._type_words()}, got {quoted(value)}"
        if self.type is float and not math.isfinite(value):
            return OptionError, f"must be a finite number, got {value}"
        if isinstance(self.constraint, Interval):
            problem = self.constraint.problem(value)
            return (OptionError, problem) if problem else None
        if isinstance(self.constraint, Choices) and value not in self.constraint.values:
            expected, hint = self.constraint.listed(value)
            return UnknownOptionError, f"must be one of {expected}, got {quoted(value)}{hint}"
        if isinstance(self.constraint, DeviceName):
            problem = _device_problem(value)
            return (OptionError, problem) if problem else None
        return None

    def _type_words(self) -> str:
        return _TYPE_WORDS.get(self.type, self.type.__name__)

    def check(self, name: str, value: Any) -> Any:
        """``value`` if it keeps this option (an ``int`` as a ``float`` for a ``float`` option), else
        :class:`OptionError` naming ``name``."""
        found = self.problem(value)
        if found is not None:
            error, problem = found
            if error is UnknownOptionError and isinstance(self.constraint, Choices) and self.constraint.meaning:
                expected, hint = self.constraint.listed(value)
                meaning = self.constraint.meaning
                raise error(f"unknown {meaning} {quoted(value)}: {name} must be one of {expected}{hint}", name)
            raise error(f"{name} {problem}", name)
        if value is None:
            return None
        return float(value) if self.type is float else int(value) if self.type is int else value


def is_number(value: Any) -> bool:
    """Whether ``value`` is a real number as a user means one: Python's ``int`` and ``float`` and numpy's scalars
    (``numpy.float32(0.3)``, ``numpy.int64(3)``), never a bool (``True`` is an int to Python, never a threshold or
    a class index to a user). The one number check of zstc: options, calibration parameters, class indices."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, _numpy_bool()))


def is_whole_number(value: Any) -> bool:
    """Whether ``value`` is a number (:func:`is_number`) with no fractional part: ``3``, ``numpy.int64(3)`` and
    ``3.0`` (as JSON and pandas write a whole number), not ``1.7``, NaN or ``True``."""
    if not is_number(value):
        return False
    return isinstance(value, numbers.Integral) or (math.isfinite(value) and float(value).is_integer())


def _is_instance(value: Any, kind: type) -> bool:
    if kind is bool:
        return isinstance(value, (bool, _numpy_bool()))
    if kind is int:  # a batch size of 2.0 (JSON, pandas) is the number 2
        return is_whole_number(value)
    if kind is float:
        return is_number(value)
    return isinstance(value, kind)


def _numpy_bool() -> type:
    try:
        import numpy

        return numpy.bool_
    except ImportError:  # pragma: no cover - numpy is a dependency
        return bool


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def check_sequence(values: Any, what: str, error: type[ZstcError], *, source: str = "", each: str = "") -> list[Any]:
    """``values`` as a list (any iterable: a list, tuple, numpy array, pandas Series, generator), else ``error``
    naming ``what``: ``None`` or a number is the user's mistake, not a TypeError from deep inside. ``each`` says
    what the entries must match (``one per label``)."""
    prefix, expected = f"{source}: " if source else "", f"a sequence of strings{', ' + each if each else ''}"
    if isinstance(values, str):  # iterable, but as one entry per character
        raise error(f"{prefix}{what} must be {expected}, got one string {quoted(values)}", parameters=(what,))
    if values is None or isinstance(values, (bytes, bytearray)) or not isinstance(values, Iterable):
        raise error(f"{prefix}{what} must be {expected}, got {type(values).__name__}", parameters=(what,))
    if isinstance(values, Mapping) or type(values).__name__ == "DataFrame":
        # Iterated, a dict gives its keys and a DataFrame (pandas, polars) its column names: classified in silence.
        if not isinstance(values, Mapping):
            got, hint = "a DataFrame, whose iteration gives its column names", "pass one column, e.g. df['text']"
        else:
            got, hint = f"a {type(values).__name__}, whose iteration gives its keys alone", "pass a list"
            if what == "labels":
                hint = "for a {label: description} mapping m, pass labels=list(m) and descriptions=list(m.values())"
        raise error(f"{prefix}{what} must be {expected}, got {got}: {hint}", parameters=(what,))
    if isinstance(values, (set, frozenset)):
        # A set of strings iterates in hash order, which changes with every process (PYTHONHASHSEED): the
        # score columns, the text rows and which label wins a tie would change from run to run.
        raise error(
            f"{prefix}{what} is a {type(values).__name__}, which has no order: the results would follow one that "
            f"changes from run to run; pass a list, e.g. sorted({what})",
            parameters=(what,),
        )
    return list(values)


NONE_LABEL = "none"
"""What multi-label classification predicts for a text no label applies to, so no label may be called it (a file of
labelled texts for fitting thresholds writes it for such a text)."""


def check_labels(
    labels: Sequence[str], *, what: str = "labels", allow_single: bool = False, allow_repeats: bool = False
) -> list[str]:
    """Return the labels as a list of stripped strings, or raise :class:`LabelError`.

    A zero-shot decision among fewer than two candidates is meaningless for argmax; multi-label
    scoring (one label, yes or no) passes ``allow_single=True``. ``allow_repeats``: an entry may repeat (rerank's
    documents, each scored once), and errors still name positions in ``labels`` as given.
    """
    given = check_sequence(labels, what, LabelError)
    for i, label in enumerate(given):
        # A whole number reads as its digits; None, NaN (a missing cell) or bytes would become the label 'None',
        # 'nan' or "b'x'" and be scored as that, silently.
        if isinstance(label, bool) or not isinstance(label, (str, numbers.Integral)):
            raise LabelError(
                f"{what}: entry {i + 1} is {type(label).__name__} {quoted(label)}, expected a string",
                parameters=(what,),
            )
    cleaned = [
        check_encodable(str(label).strip(), f"{what}: entry {i + 1}", LabelError) for i, label in enumerate(given)
    ]
    if not cleaned:
        raise LabelError(f"no {what} given: expected at least two")
    empty = [i for i, label in enumerate(cleaned) if is_blank(label)]
    if empty:
        raise LabelError(f"{what} contain an empty entry at position {empty[0] + 1}{blank_detail(cleaned[empty[0]])}")
    if len(cleaned) < 2 and not allow_single:
        raise LabelError(f"only one label given ({quoted(cleaned[0])}): zero-shot classification needs at least two")
    return cleaned if allow_repeats else check_distinct(cleaned, what)


def check_distinct(values: list[str], what: str, *, parameter: str | None = None) -> list[str]:
    """``values`` unchanged if no entry repeats, else :class:`LabelError` naming the repeated ones and ``what``
    (``parameter``: the option ``what`` is, for the CLI to write as its flag)."""
    duplicates = [value for value, count in Counter(values).items() if count > 1]
    if duplicates:
        raise LabelError(
            f"duplicate {what}: {', '.join(quoted(d) for d in duplicates)}",
            parameters=(parameter,) if parameter else (),
        )
    return values


def check_distinct_descriptions(labels: Sequence[str], descriptions: Sequence[str]) -> None:
    """Refuse two labels that the model would read the same way (``positive`` and ``Positive`` both become the
    same opinion phrases; a labels file may give two labels one description): their scores tie on every text,
    and the first would always win, silently. Refuse a blank description too: the model reads nothing for its
    label, whose score then means nothing (all-MiniLM-L6-v2 gave it nearly every text)."""
    first: dict[str, str] = {}
    for label, description in zip(labels, descriptions):
        if not isinstance(description, str):
            raise LabelError(f"the description of {quoted(label)} is {type(description).__name__}, expected a string")
        check_encodable(description, f"the description of {quoted(label)}", LabelError)
        if is_blank(description):
            raise LabelError(
                f"the description of {quoted(label)} is empty{blank_detail(description)}: describe the label, "
                "or give no description to use its name"
            )
        if description in first:
            raise LabelError(
                f"labels {quoted(first[description])} and {quoted(label)} have the same description "
                f"({quoted(description)}): no model can tell them apart; describe them differently or merge them"
            )
        first[description] = label


def check_read_apart(
    labels: Sequence[str], descriptions: Sequence[str], alike: Sequence[Sequence[int]], model: str
) -> None:
    """Refuse labels that ``model`` reads as the very same input, although their descriptions differ: ``alike``
    holds groups of their positions, found by the model's scorer
    (:func:`zstc.scorers.base.indistinguishable_labels`). An uncased tokenizer reads ``Sports`` and ``sports``
    alike; their scores would tie on every text and the first would always win, silently."""
    if not alike:
        return
    group = list(alike[0])
    names = [labels[i] for i in group]
    first, second = descriptions[group[0]], descriptions[group[1]]
    why = _normalisation_joining(first, second)
    named = ", ".join(quoted(name) for name in names[:-1]) + f" and {quoted(names[-1])}"
    # Named by the labels; their descriptions too unless the labels' own difference is the one read away.
    plain = (first, second) == (names[0], names[1]) or (
        why is not None and _normalisation_joining(names[0], names[1]) == why
    )
    described = "" if plain else f" (described {quoted(first)} and {quoted(second)})"
    reason = f"its tokenizer {why}" if why else "its tokenizer gives them the very same tokens"
    raise LabelError(
        f"labels {named}{described} read the same to {model} ({reason}): their scores would tie on every text "
        "and the first would always win; describe them differently or merge them"
    )


_NORMALISATIONS: tuple[tuple[str, Callable[[str], str]], ...] = (
    ("ignores extra spaces", lambda text: " ".join(text.split())),
    ("normalises Unicode (NFKC)", lambda text: unicodedata.normalize("NFKC", text)),
    ("lowercases", str.casefold),
    (
        "drops accents",
        lambda text: "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c)),
    ),
)
"""What tokenizers commonly do before they split (BERT's uncased ones lowercase and drop accents), each as a
phrase for a message."""


def _normalisation_joining(first: str, second: str) -> str | None:
    """The fewest of :data:`_NORMALISATIONS` that make ``first`` and ``second`` one string, as a phrase
    ("lowercases and drops accents"); None when none do (characters outside the vocabulary, read as one unknown token)."""
    for size in range(1, len(_NORMALISATIONS) + 1):
        for steps in itertools.combinations(_NORMALISATIONS, size):
            a, b = first, second
            for _, normalise in steps:
                a, b = normalise(a), normalise(b)
            if a == b:
                return " and ".join(what for what, _ in steps)
    return None


_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp"})
"""Unicode categories with nothing for a model to read: control characters, format characters (zero-width space,
byte-order mark, word joiner, soft hyphen) and separators."""


def is_blank(text: str) -> bool:
    """Whether ``text`` holds nothing a model can read: every character is whitespace or in :data:`_INVISIBLE_CATEGORIES`.
    The one rule for empty texts, labels, descriptions, documents and queries: ``str.strip()`` keeps a zero-width
    space or a control character, which tokenizers drop, and such a text was classified on the template alone."""
    return all(
        char.isspace() or unicodedata.category(char) in _INVISIBLE_CATEGORIES | _MARK_CATEGORIES for char in text
    )


_MARK_CATEGORIES = frozenset({"Mn", "Me"})
"""Combining marks (accents, enclosing circles): nothing to read without a letter to sit on (an uncased tokenizer
strips them), so a text or label of marks alone is blank; beside a letter (``e`` + U+0301) they are part of it."""


def blank_detail(text: str) -> str:
    """What a message on a blank ``text`` adds: `` (only invisible characters, such as U+200B)`` when it holds some
    besides whitespace (a reader sees no reason for "empty" otherwise), else nothing."""
    invisible = next((char for char in text if not char.isspace()), None)
    if invisible is None:
        return ""
    kinds = "combining marks" if unicodedata.category(invisible) in _MARK_CATEGORIES else "invisible characters"
    return f" (only {kinds}, such as U+{ord(invisible):04X})"


def check_texts(texts: Sequence[str], *, source: str = "input") -> list[str]:
    """Return the texts as a list, or raise :class:`DataError` naming the first empty one."""
    result = check_sequence(texts, "texts", DataError, source=source)
    if not result:
        raise DataError(f"{source}: no texts to classify")
    for i, text in enumerate(result):
        if not isinstance(text, str):
            raise DataError(f"{source}: text {i + 1} is {type(text).__name__}, expected a string")
        check_encodable(text, f"{source}: text {i + 1}")  # first: a NUL is binary data, not an invisible character
        if is_blank(text):
            raise DataError(f"{source}: text {i + 1} is empty{blank_detail(text)}")
    return result


def check_encodable(
    text: str, where: str, error: type[ZstcError] = DataError, *, parameters: tuple[str, ...] = ()
) -> str:
    """``text`` unchanged, or ``error`` naming ``where`` if no tokenizer can take it: a lone UTF-16 surrogate (a JSON
    ``"\\ud800"``) or a NUL character (binary data). One rule for files, the Python API and the service.
    ``parameters``: the option names ``where`` mentions, for the CLI to write as its flags."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as failure:
        raise error(
            f"{where} holds a lone UTF-16 surrogate (U+{ord(text[failure.start]):04X}) at character {failure.start}",
            parameters=parameters,
        ) from None
    if "\x00" in text:
        raise error(f"{where} holds a NUL character (binary data?)", parameters=parameters)
    return text


def check_hypotheses_template(hypotheses: str, template: str | None) -> None:
    """Refuse a ``template`` beside ``hypotheses="dataset"`` (bench, sweep, calibrate, unseen): the dataset's own
    hypotheses are whole sentences with no slot, so the template was silently ignored."""
    if template is not None and hypotheses == "dataset":
        # Worded so that the CLI's rewrite of the parameter names into flags reads right.
        raise OptionError(
            "template cannot be used with hypotheses dataset (the default), whose sentences are the dataset's "
            "own with no slot to fill; leave template out, or choose hypotheses name, definition, both or ensemble",
            "template",
            "hypotheses",
        )


def check_template(template: str, *, what: str = "template") -> str:
    """A hypothesis template: exactly one ``{}`` where the label goes; other braces doubled (``{{``).

    Parsed as :meth:`str.format` parses it, so a named field (``{x}``), a stray brace or a format spec is
    refused here with a message rather than failing in ``format`` later.
    """
    # The parameter's name, which the CLI writes as its flag (--template); a ``what`` that is a flag already stays.
    parameters = () if what.startswith("-") else (what,)
    if not isinstance(template, str):
        raise LabelError(f"{what} must be a string, got {type(template).__name__}", parameters=parameters)
    # Here, not when a description built from it is checked: that named the first label's description.
    check_encodable(template, what, LabelError, parameters=parameters)
    cannot = f"{what} {quoted(template)} cannot be filled"
    try:
        fields = [
            (name, spec, conversion)
            for _, name, spec, conversion in string.Formatter().parse(template)
            if name is not None
        ]
    except ValueError as error:  # "Single '}' encountered", "unmatched '{'"
        raise LabelError(f"{cannot}: {error}; write a literal brace as {{{{ or }}}}", parameters=parameters) from None
    if len(fields) != 1:
        raise LabelError(f"{cannot}: it must contain exactly one '{{}}' where the label goes", parameters=parameters)
    name, spec, conversion = fields[0]
    if name not in ("", "0") or spec or conversion:
        slot = "{" + name + (f"!{conversion}" if conversion else "") + (f":{spec}" if spec else "") + "}"
        raise LabelError(f"{cannot}: the label slot must be a plain '{{}}', got '{slot}'", parameters=parameters)
    return template


# -- option ranges ----------------------------------------------------------------------------------------


def _device_problem(value: Any) -> str | None:
    import torch

    if value == "auto":
        return None
    try:
        device = torch.device(value)
    except (RuntimeError, TypeError, ValueError):
        return f"must be cpu, cuda, cuda:N, mps or auto, got {value!r}"
    if device.type == "cuda" and not torch.cuda.is_available():
        # "GPU", not "device": the CLI writes the parameter's name as its flag wherever the message says it.
        return f"asks for {value!r}, but this machine has no CUDA GPU"
    if device.type == "cuda" and device.index is not None and device.index >= torch.cuda.device_count():
        return f"asks for {value!r}, but this machine has {torch.cuda.device_count()} CUDA GPU(s)"
    return None


POSITIVE = Option(float, constraint=Interval(0, closed="right"))
COUNT = Option(int, constraint=Interval(1))
FRACTION = Option(float, constraint=Interval(0, 1, closed="right"))
RESERVED = Option(float, constraint=Interval(0))
"""What a Ray actor reserves (0 is Ray's own "none of it")."""

HYPOTHESIS_VARIANTS: tuple[str, ...] = ("dataset", "name", "definition", "both", "ensemble")
"""How labels become hypotheses (:mod:`zstc.hypotheses.variants`): the choices of the ``hypotheses`` option."""

OPTIONS: dict[str, Option] = {
    # decisions
    "threshold": Option(
        float,
        help="Multi-label threshold, a plain cut for every label; default: the family's measured cut (embedding "
        "models: with the margin rule), else the score type's (see `zstc.multilabel`).",
    ),
    "alpha": Option(float, constraint=Interval(0, 1)),
    "hypotheses": Option(
        str,
        "dataset",
        Choices(HYPOTHESIS_VARIANTS, meaning="hypothesis variant"),
        help="How labels become hypotheses: 'dataset' (the dataset's own / as given), 'name', 'definition' "
        "(WordNet), 'both', or 'ensemble' (the three averaged).",
    ),
    # data and samples
    "max_samples": COUNT,
    "max_train_samples": COUNT,
    "dev_fraction": Option(float, constraint=Interval(0, 1, closed="neither")),
    "dev_size": COUNT,
    "negatives": Option(int, constraint=Interval(0)),
    "bootstrap": Option(int, constraint=Interval(100)),
    # numpy takes no negative seed, and its legacy one (transformers' set_seed) none past 32 bits
    "seed": Option(int, constraint=Interval(0, 2**32 - 1)),
    # training (train-nli and unseen's fine-tuning)
    "backbone_lr": POSITIVE,
    "head_lr": POSITIVE,
    "epochs": POSITIVE,
    "max_steps": COUNT,
    "max_minutes": POSITIVE,
    "patience": COUNT,
    "eval_fraction": FRACTION,
    "batch_size": COUNT,
    "max_length": COUNT.but(
        allow_none=True, help="Token limit per input; default: the model's own. Only texts are truncated."
    ),
    "device": Option(
        str, constraint=DeviceName(), allow_none=True, help="cpu, cuda, cuda:1, ...; default: CUDA when present."
    ),
    "chunk_size": Option(int, constraint=Interval(1, sys.maxsize)),  # classify: itertools.islice takes no larger count
    "adapt_sample": COUNT,
    # Ray
    "actors": COUNT,
    "cpus_per_actor": RESERVED,
    "gpus_per_actor": RESERVED,
    "cpus_per_model": RESERVED,
    "gpus_per_model": RESERVED,
    "max_retries": Option(int, constraint=Interval(0)),
}
"""zstc's options that are not one scorer family's (those are :data:`zstc.models.families.SCORER_OPTIONS`), by
parameter name. A command checks its options with :func:`check_options` before loading anything; a command whose
option is narrower passes its own (``OPTIONS["max_samples"].but(constraint=Interval(3))``)."""


def check_choice(name: str, value: Any, choices: Sequence[str]) -> str:
    """``value`` if it is one of ``choices``, else :class:`~zstc.errors.UnknownOptionError` naming ``name`` (with
    a did-you-mean hint): one message for every option that names one of a few things."""
    checked: str = Option(str, constraint=Choices(tuple(choices))).check(name, value)
    return checked


def check_options(
    values: Mapping[str, Any], options: Mapping[str, Option] | None = None, *, context: str = ""
) -> dict[str, Any]:
    """The values checked against their options (default: :data:`OPTIONS`); raises :class:`OptionError` naming
    the first parameter whose value breaks its option (``eval_fraction must be > 0 and <= 1, got 1.5``).

    A value of ``None`` counts as not given (front ends pass ``None`` for what the user left unset) and gives the
    option's default. A name the options do not have is an :class:`UnknownOptionError` ("pooling does not apply
    to nli models"), never silently ignored; ``context`` says to what (``"nli models (m)"``). The result has
    every option, each the value given or its default.
    """
    options = OPTIONS if options is None else options
    unknown = [name for name, value in values.items() if name not in options and value is not None]
    if unknown:
        target = context or f"this call (it takes {', '.join(options) or 'no options'})"
        raise UnknownOptionError(f"{', '.join(unknown)} does not apply to {target}", *unknown)
    return {
        name: option.default if values.get(name) is None else option.check(name, values[name])
        for name, option in options.items()
    }


def check_option(name: str, value: Any, option: Option) -> Any:
    """One option (``None`` is its default): ``check_options({name: value}, {name: option})[name]``."""
    return check_options({name: value}, {name: option})[name]
