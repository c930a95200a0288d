"""Issue 17's property-based fuzz test: random bytes, random JSON and random CSV shapes never make a file loader
raise anything but zstc's own errors, and any JSON-shaped body is accepted or refused by the service's request
models with a validation error. Bounded (``max_examples`` per test, no deadline) so CI runs it every time.

In a module of its own: without hypothesis (the ``dev`` extra) only these tests are skipped.
"""

from __future__ import annotations

import csv
import io
import json
import tempfile
from pathlib import Path

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

from zstc.errors import ZstcError  # noqa: E402


FUZZ = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4),
    max_leaves=20,
)


def load_everything(path: Path) -> None:
    """Every loader that reads ``path``; each may only succeed or raise a :class:`ZstcError`."""
    from zstc.benchmark.catalog import get_task_spec
    from zstc.benchmark.data import load_grouped, load_user_task
    from zstc.benchmark.leaderboard import validate_file
    from zstc.benchmark.store import load_summary
    from zstc.io import read_label_descriptions, read_label_sets, read_records, read_texts

    loaders = [
        read_texts,
        read_label_descriptions,
        read_label_sets,
        lambda p: list(read_records(p)),
        load_user_task,
        lambda p: load_grouped(p, get_task_spec("financialphrasebank")),
        load_summary,
        validate_file,
    ]
    for load in loaders:
        try:
            load(path)
        except ZstcError:
            pass


def fuzz_file(suffix: str, content: bytes) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / f"f{suffix}"
        path.write_bytes(content)
        load_everything(path)


@FUZZ
@given(suffix=st.sampled_from([".jsonl", ".csv", ".tsv", ".txt", ".json", ".parquet"]), content=st.binary(max_size=300))
def test_fuzz_random_bytes(suffix: str, content: bytes) -> None:
    fuzz_file(suffix, content)


@FUZZ
@given(values=st.lists(JSON, max_size=5), suffix=st.sampled_from([".jsonl", ".json"]))
def test_fuzz_random_json(values: list, suffix: str) -> None:
    text = "\n".join(json.dumps(v) for v in values) if suffix == ".jsonl" else json.dumps(values[0] if values else {})
    fuzz_file(suffix, text.encode("utf-8", "surrogatepass"))


@FUZZ
@given(
    header=st.lists(st.sampled_from(["text", "label", "label_text", "premise", "hypothesis", "x", ""]), max_size=4),
    rows=st.lists(st.lists(st.text(max_size=12), max_size=5), max_size=5),
    quoting=st.sampled_from([csv.QUOTE_MINIMAL, csv.QUOTE_NONE]),
)
def test_fuzz_random_csv_shapes(header: list[str], rows: list[list[str]], quoting: int) -> None:
    buffer = io.StringIO()
    writer = csv.writer(buffer, quoting=quoting, escapechar="\\")
    try:
        writer.writerows([header, *rows])
    except csv.Error:
        return  # a shape the csv module itself cannot write
    fuzz_file(".csv", buffer.getvalue().encode("utf-8", "surrogatepass"))


REQUEST_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "texts": JSON | st.lists(st.text(max_size=8), max_size=3),
        "labels": JSON | st.lists(st.text(max_size=8), max_size=3),
        "template": JSON,
        "descriptions": JSON,
        "threshold": JSON,
        "multi_label": JSON,
        "inputs": JSON,
        "parameters": JSON,
        "query": JSON,
        "documents": JSON,
        "top_n": JSON,
    },
)


@FUZZ
@given(body=REQUEST_FIELDS, lone=st.sampled_from(["", "\ud800", "\udfff"]))
def test_fuzz_request_models(body: dict, lone: str) -> None:
    """The service's request models accept or reject any JSON-shaped body with a validation error, never a crash."""
    pytest.importorskip("fastapi")
    from pydantic import ValidationError

    from zstc.server.schemas import ClassifyRequest, HFZeroShotRequest, RerankRequest

    if lone and isinstance(body.get("texts"), list):
        body["texts"] = [*body["texts"], f"bad {lone} text"]
    for model in (ClassifyRequest, HFZeroShotRequest, RerankRequest):
        try:
            model.model_validate(body)
        except ValidationError:
            pass


# -- issue 43: every file format splits lines the same way --------------------------------------------------------

LINE_TEXT = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n\x00"), min_size=1, max_size=12
).filter(lambda text: text.strip() and not text.startswith("\ufeff"))


@FUZZ
@given(
    texts=st.lists(LINE_TEXT, min_size=1, max_size=5),
    ends=st.lists(st.sampled_from(["\n", "\r\n", "\r"]), min_size=5, max_size=5),
    inner=st.sampled_from(["", "\u2028", "\x0c", "\x85"]),
)
def test_fuzz_line_endings_read_alike_in_every_format(texts: list[str], ends: list[str], inner: str) -> None:
    """LF, CRLF and a lone CR end a line in .txt, CSV, TSV, JSON Lines and labels files alike (a CR-only .txt was one
    text, a CR-only CSV "malformed ... universal-newline mode"); U+2028, a form feed or NEL inside a line is a character
    of it (a labels line with U+2028 was two labels)."""
    from zstc.io import read_label_descriptions, read_records, read_texts
    from zstc.validation import is_blank

    texts = [f"{text}{inner}x" for text in texts]
    texts = [text for text in dict.fromkeys(texts) if not is_blank(text)]
    if not texts:
        return
    joined = lambda lines: "".join(line + ends[i % len(ends)] for i, line in enumerate(lines))  # noqa: E731
    with tempfile.TemporaryDirectory() as folder:
        base = Path(folder)
        (base / "t.txt").write_bytes(joined(texts).encode("utf-8"))
        assert read_texts(base / "t.txt") == [text for text in texts if text.strip()]
        for suffix, delimiter in ((".csv", ","), (".tsv", "\t")):
            lines = [
                '"' + cell.replace('"', '""') + '"' + delimiter + "1" for cell in ["text", *texts]
            ]  # quoted, as csv does
            (base / f"t{suffix}").write_bytes(joined(lines).encode("utf-8"))
            assert [record["text"] for _, record in read_records(base / f"t{suffix}")] == texts
        (base / "t.jsonl").write_bytes(
            joined([json.dumps({"text": text}, ensure_ascii=False) for text in texts]).encode("utf-8")
        )
        assert [record["text"] for _, record in read_records(base / "t.jsonl")] == texts
        if len(texts) >= 2 and all(text == text.strip() and "\t" not in text for text in texts):
            (base / "labels.txt").write_bytes(joined(texts).encode("utf-8"))
            assert list(read_label_descriptions(base / "labels.txt")) == texts


# -- issue 43: request bodies with unknown or repeated keys --------------------------------------------------------

KEY = st.text(
    st.characters(min_codepoint=0x20, max_codepoint=0x7E, blacklist_characters='"\\'), min_size=1, max_size=12
)


@FUZZ
@given(
    extra=KEY,
    where=st.sampled_from(["top", "parameters", "options"]),
    labels=st.lists(st.text(min_size=1, max_size=6), max_size=3),
)
def test_fuzz_hf_shape_refuses_unknown_keys(extra: str, where: str, labels: list[str]) -> None:
    """The Hugging Face shape ignored unknown and misspelt keys (``"multilabel": true`` answered single-label, a body
    with ``inputs`` and ``texts`` dropped ``texts``); now any key it does not know is refused, as the zstc shape's."""
    pytest.importorskip("fastapi")
    from pydantic import ValidationError

    from zstc.server.schemas import HFZeroShotRequest

    known = {
        "top": {"inputs", "parameters", "options"},
        "parameters": {"candidate_labels", "hypothesis_template", "multi_label"},
        "options": {"use_cache", "wait_for_model"},
    }[where]
    body: dict = {
        "inputs": "a text",
        "parameters": {"candidate_labels": labels or "a,b"},
        "options": {"wait_for_model": True},
    }
    HFZeroShotRequest.model_validate(body)
    if extra in known:
        return
    (body if where == "top" else body[where])[extra] = True
    with pytest.raises(ValidationError, match="Extra inputs are not permitted"):
        HFZeroShotRequest.model_validate(body)


@FUZZ
@given(
    body=REQUEST_FIELDS,
    repeated=st.sampled_from(["texts", "labels", "inputs", "parameters", "query", "documents", "top_n"]),
    value=JSON,
)
def test_fuzz_a_repeated_key_is_refused(body: dict, repeated: str, value) -> None:
    """``{"labels": [...], "labels": [...]}`` kept the last (json.loads); the service's body check refuses it, and
    every body without a repeat passes it."""
    from zstc.io import check_distinct_keys

    text = json.dumps(body)
    check_distinct_keys(text, "the body")
    twice = (
        text[:-1] + (", " if body else "") + f"{json.dumps(repeated)}: {json.dumps(value)}, {json.dumps(repeated)}: 1}}"
    )
    with pytest.raises(ZstcError, match=f"the body: key '{repeated}' appears twice in one object"):
        check_distinct_keys(twice, "the body")


# -- issue 43: the Python API's argument types ------------------------------------------------------------------------

np = pytest.importorskip("numpy")


class _EchoScorer:
    """A scorer with the documented ``score(texts, labels)``: a label scores 1 where its text contains it. What it
    was asked to score is kept, so a test sees whether a dict's keys were scored."""

    family = ""

    def __init__(self) -> None:
        self.seen: list[tuple[list[str], list[str]]] = []

    def score(self, texts, labels):
        self.seen.append((list(texts), list(labels)))
        return np.array([[float(label in text) for label in labels] for text in texts])

    def describe(self):
        return {}


ARGUMENT = st.one_of(
    st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=3),
    st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=3).map(tuple),
    st.dictionaries(st.text(min_size=1, max_size=8), st.text(min_size=1, max_size=8), min_size=1, max_size=3),
    st.sets(st.text(min_size=1, max_size=8), min_size=1, max_size=3),
    st.none(),
    st.integers(),
    st.text(max_size=8),
    st.lists(st.one_of(st.integers(), st.none(), st.floats(), st.binary(max_size=3)), min_size=1, max_size=3),
)


@FUZZ
@given(texts=ARGUMENT, labels=ARGUMENT, notes=st.sampled_from([None, [], (), "x"]))
def test_fuzz_api_argument_types(texts, labels, notes) -> None:
    """Any argument types: a result, or zstc's error or a TypeError naming the parameter; never another exception,
    and never a dict's keys scored (a dict as texts classified its keys, as labels dropped its descriptions)."""
    from zstc.api import Classifier

    scorer = _EchoScorer()
    try:
        predictions = Classifier(scorer).predict(texts, labels, notes=notes)
    except ZstcError as error:
        assert str(error)
        return
    except TypeError as error:
        assert str(error).startswith("notes must be a list"), error
        return
    assert not isinstance(texts, dict) and not isinstance(labels, dict)
    assert isinstance(notes, list) or notes is None
    assert len(predictions) == len(list(texts)) and scorer.seen


# -- issue 43: class indices in bench data ----------------------------------------------------------------------------

CLASS_CELL = st.one_of(
    st.booleans(),
    st.integers(-3, 5),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-3, 5).map(float),
    st.text(max_size=4),
    st.none(),
)


@FUZZ
@given(label=CLASS_CELL, paired=st.booleans())
def test_fuzz_a_class_index_is_a_whole_number_or_refused(label, paired: bool) -> None:
    """A bench row's ``label`` (grouped) or ``labels`` (paired) is a whole number or refused naming file, row and
    value: ``1.7`` and ``true`` counted as class 1."""
    from zstc.benchmark.catalog import get_task_spec
    from zstc.benchmark.data import load_grouped, load_paired
    from zstc.io import read_records

    spec = get_task_spec("financialphrasebank")
    whole = not isinstance(label, bool) and (
        isinstance(label, int) or (isinstance(label, float) and label.is_integer())
    )
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "f.jsonl"
        if paired:
            rows = [
                {"text": "t", "hypothesis": h, "labels": label if i == 0 else 0} for i, h in enumerate(spec.hypotheses)
            ]
        else:
            rows = [{"text": "t", "label": label}]
        path.write_text("".join(json.dumps(row) + "\n" for row in rows))
        try:
            task = load_paired(read_records(path), spec, source=str(path)) if paired else load_grouped(path, spec)
        except ZstcError as error:
            if whole or label in (None, "") or (isinstance(label, str) and label.strip().lstrip("+-").isdigit()):
                return  # out of range, or no label at all: refused for that
            assert f"{path}:1: " in str(error) and repr(label) in str(error), error
            return
        assert whole or isinstance(label, str), f"{label!r} was read as class {task.gold[0]}"


NUMBER_KINDS = st.sampled_from([int, float, bool, np.float16, np.float32, np.float64, np.int32, np.int64, np.bool_])


@FUZZ
@given(kind=NUMBER_KINDS, value=st.floats(-2, 2, allow_nan=False), per_label=st.booleans())
def test_fuzz_a_threshold_of_any_number_type(kind, value: float, per_label: bool) -> None:
    """A threshold of any of Python's or numpy's number types decides as that number does as a Python float
    (``numpy.float32(0.3)`` failed in ``zstc.classify``); a bool of either is refused naming the parameter."""
    import zstc
    from zstc.api import Classifier

    def decide(threshold):
        if per_label:
            cuts = {"a": threshold, "b": threshold}
            return Classifier(_EchoScorer()).predict_multi_label(["a"], ["a", "b"], per_label=cuts)[0].labels
        return zstc.classify(["a"], ["a", "b"], model=_EchoScorer(), multi_label=True, threshold=threshold)[0].labels

    threshold = kind(value)
    try:
        labels = decide(threshold)
    except ZstcError as error:
        assert kind in (bool, np.bool_), error
        assert "must be a number" in str(error) and ("threshold" in str(error) or "per_label" in str(error)), error
        return
    assert kind not in (bool, np.bool_), f"{threshold!r} was taken as a threshold"
    assert labels == decide(float(threshold))
