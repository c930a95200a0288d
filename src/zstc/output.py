"""Writing predictions: one output row per input row, in chunks, resumable after a kill.

An output goes to ``OUT.partial`` (JSONL, CSV) or ``OUT.partial/`` (Parquet: one file per chunk) while it
is written; beside it, ``OUT.partial.json`` (the marker) records what identifies the run (the input's
sha256 and a fingerprint of every setting) and how much of the output is complete. A chunk counts only
once its bytes are on disk and the marker says so, so a run killed at any moment (even SIGKILL) leaves a
prefix of complete chunks, possibly followed by a torn chunk that the next run cuts off. Run again with the
same input and settings, classification continues after the last complete chunk; the finished file is
byte-equal to one written without interruption (a run killed as it finishes, after the output is moved into
place and before the marker is removed, is resumed with every row kept). A changed input or setting starts over. An ``OUT`` that exists
already (an earlier run's finished output has no marker) is said to be replaced before any work, and is replaced
only when the run completes: until then it is left as it is.

An input with no checksum (stdin, a FIFO: read once, as it streams) is checked a chunk at a time instead: the
marker holds a digest of each chunk's input rows (:func:`input_digest`), and a resumed run keeps the chunks
whose rows it reads again unchanged and continues from the first that differs (:meth:`ResumableWriter.keep`).

One run writes an output at a time: while it does, it holds an OS lock (:class:`OutputLock`) on ``OUT.partial.lock``,
which the kernel releases when the process ends however it ends (a SIGKILL too, so the next run resumes). A second
run on the same ``OUT`` would take the first's live partial output for an interrupted run's and both would write
into it; it is refused at once, naming the live run's PID, or waits for it to finish (``--wait``).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import datetime
import decimal
import io
import json
import os
import shutil
import sys
import weakref
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from zstc.errors import DataError, OutputError
from zstc.io import umask_mode, write_failed
from zstc.runs.files import write_json
from zstc.validation import check_choice

Row = dict[str, Any]

FORMATS: dict[str, str] = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".json": "jsonl",
    ".csv": "csv",
    ".parquet": "parquet",
}
"""Output format by the ``--out`` extension; ``--format`` overrides it."""


def output_format(path: Path | None, forced: str | None = None) -> str:
    """The format to write ``path`` in: ``forced`` when given, else from its extension (stdout: JSONL)."""
    if forced is not None:
        return check_choice("format", forced, tuple(dict.fromkeys(FORMATS.values())))
    if path is None:
        return "jsonl"
    if path.is_dir():  # said as what it is, not as an extension that tells no format
        raise DataError(f"--out {path}: is a directory, expected a file")
    try:
        return FORMATS[path.suffix.lower()]
    except KeyError:
        raise DataError(
            f"{path}: cannot tell the output format from {path.suffix or 'no extension'!r}; "
            "use .jsonl, .csv or .parquet, or give --format"
        ) from None


def prediction_record(prediction: Any) -> Row:
    """The fields of one prediction as written to a file: :func:`zstc.api.prediction_record` (labels ranked by
    score, scores rounded to 4 decimals), the record ``zstc classify`` writes."""
    from zstc.api import prediction_record as record_of

    return record_of(prediction)


def empty_record(text: str | None, *, multi_label: bool) -> Row:
    """The row of an empty text under ``--skip-empty``: present, but with no label and no scores. ``text`` is the
    input's value as read (a null stays null), so :func:`output_row` sees the classified text and keeps the columns
    every other row has."""
    if multi_label:
        return {"text": text, "labels": None, "scores": None}
    return {"text": text, "label": None, "score": None, "scores": None}


INPUT_PREFIX = "input_"


def _renamed(name: str, record: Row) -> bool:
    """Whether an input column ``name`` is written as ``input_<name>``: it is a prediction field's name
    (``label``), or the name such a rename gives (``input_label``, then ``input_input_label``, ...)."""
    while True:
        if name in record:
            return True
        if not name.startswith(INPUT_PREFIX):
            return False
        name = name[len(INPUT_PREFIX) :]


def output_row(kept: Row, record: Row) -> Row:
    """An input row's kept columns followed by its prediction. A kept column whose name a prediction field
    also uses is renamed ``input_<name>`` (a gold ``label`` column must not be overwritten by the predicted
    one), except a ``text`` column holding the very text that was classified. An input column that already
    has such a name is renamed too (``input_label`` -> ``input_input_label``), so no column replaces another
    (a classify output classified again keeps every column) and the names depend on the names alone."""
    row: Row = {}
    for name, value in kept.items():
        if name == "text" and "text" in record and value == record["text"]:
            continue  # the classified text, written by the prediction itself
        row[INPUT_PREFIX + name if _renamed(name, record) else name] = value
    row.update(record)
    return row


def _cell(name: str, value: Any) -> Any:
    """A CSV cell as JSON Lines writes the value: lists and mappings as JSON, dates and times as ISO 8601,
    decimals as their exact text. Binary data is a :class:`DataError` naming the column (Python's csv wrote
    ``b'\\x00\\x01'``, the repr, which reads back as that text)."""
    try:
        if isinstance(value, (list, dict)):
            return json.dumps(value, ensure_ascii=False, default=_json_value)
        if isinstance(value, (datetime.date, datetime.time, decimal.Decimal, bytes, bytearray, memoryview)):
            return _json_value(value)
    except TypeError as error:
        raise _unwritable(name, str(error), "CSV") from None
    return value


def _json_value(value: Any) -> Any:
    """A kept column's value that JSON has no type for (a Parquet input's dates, times and decimals): its exact
    text, ISO 8601 for dates and times. Anything else (bytes) is a TypeError."""
    if isinstance(value, (datetime.date, datetime.time)):  # a datetime is a date
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    raise TypeError(type(value).__name__)


def encode_jsonl(rows: Sequence[Row]) -> bytes:
    """JSON Lines; a column JSON cannot hold (binary data; NaN or an infinity, which ``json.dumps`` wrote as the
    invalid JSON ``NaN``) is a :class:`DataError` naming it."""
    try:
        return "".join(
            json.dumps(row, ensure_ascii=False, default=_json_value, allow_nan=False) + "\n" for row in rows
        ).encode("utf-8")
    except (TypeError, ValueError):
        for row in rows:
            for name, value in row.items():
                try:
                    json.dumps(value, default=_json_value, allow_nan=False)
                except TypeError as error:
                    raise _unwritable(name, str(error), "JSON Lines") from None
                except ValueError:
                    raise _unwritable(name, "NaN or infinite", "JSON Lines") from None
        raise


def _unwritable(column: str, kind: str, fmt: str) -> DataError:
    return DataError(
        f"column {column!r} holds {kind} values, which {fmt} cannot hold: leave it out with --keep-columns, "
        "or write .parquet"
    )


def encode_csv(rows: Sequence[Row], columns: Sequence[str], *, header: bool, first_row: int = 1) -> bytes:
    """CSV of ``rows`` in ``columns`` (a missing one is empty), cells as :func:`_cell` writes them, after a header
    row when ``header``. A row with a key ``columns`` lacks is a :class:`DataError` naming it (``first_row``: the
    number of ``rows[0]`` in the output): CSV cannot add a column after its header, and leaving the key out
    lost that row's value without a word (JSON Lines input whose rows differ in their keys)."""
    known = set(columns)
    for number, row in enumerate(rows, start=first_row):
        extra = [name for name in row if name not in known]
        if extra:
            raise DataError(
                f"row {number} has the column {extra[0]!r}, which earlier rows lack and the CSV header (the first "
                "row's columns) does not name: CSV gives every row the same columns. Choose them with "
                "--keep-columns, or write --format jsonl or parquet"
            )
    buffer = io.StringIO(newline="")
    writer = csv.DictWriter(buffer, fieldnames=list(columns), restval="", lineterminator="\n")
    if header:
        writer.writeheader()
    for row in rows:
        writer.writerow({name: _cell(name, value) for name, value in row.items()})
    return buffer.getvalue().encode("utf-8")


class StdoutWriter:
    """Predictions streamed (JSONL or CSV) to stdout, or to an ``--out`` that is not a regular file
    (``/dev/stdout``, a FIFO: :func:`zstc.io.is_special_file`), written directly: nothing to resume."""

    resumed_rows = 0

    def __init__(self, fmt: str, stream: Any, name: str = "stdout") -> None:
        if fmt == "parquet":
            raise DataError(f"Parquet cannot be streamed to {name}: give --out FILE.parquet")
        self.fmt, self.stream, self.name = fmt, stream, name
        self.columns: list[str] | None = None
        self.rows = 0

    def close(self) -> None:
        """Nothing to release: a stream holds no lock (:meth:`ResumableWriter.close`'s counterpart)."""

    def write_chunk(self, rows: Sequence[Row], input_digest: str | None = None) -> None:
        """Write and flush one chunk's rows (CSV: the header before the first); ``input_digest`` is unused here."""
        if self.fmt == "jsonl":
            data = encode_jsonl(rows)
        else:
            header = self.columns is None
            columns = self.columns = self.columns or list(rows[0])
            data = encode_csv(rows, columns, header=header, first_row=self.rows + 1)
        self.rows += len(rows)
        try:
            _write_utf8(self.stream, data)
        except OSError as error:
            if self.stream is sys.stdout:  # a closed pipe: the CLI's own handling of stdout
                raise
            raise write_failed(self.name, error) from None

    def discard(self) -> None:
        """Nothing was written (no texts): nothing to clean up."""

    def finish(self) -> None:
        """Close a stream the writer opened; stdout stays open."""
        if self.stream is not sys.stdout:  # a stream the writer opened (--out /dev/stdout, a FIFO)
            try:
                self.stream.close()
            except OSError as error:
                raise write_failed(self.name, error) from None


def companion_paths(path: Path) -> list[Path]:
    """The files a resumable run writes beside ``path`` while it runs: the partial output, its marker and its lock.
    None of them may be an input (the marker written over an input named ``OUT.partial.json`` destroyed it)."""
    path = Path(path)
    return [path.with_name(path.name + suffix) for suffix in (".partial", ".partial.json", ".partial.lock")]


FOLDER_LOCK = ".zstc.lock"
"""The lock file of an output folder (``sweep --out``, ``classify --engine ray --out``), inside it."""


class OutputLock:
    """An exclusive lock on the output ``path``: ``fcntl.flock`` on ``path.partial.lock`` (``path/.zstc.lock`` for an
    output ``folder``, which must exist), which holds the PID of the run that has it. The kernel releases it when the
    process ends, however it ends; :meth:`release` removes the file (while holding the lock: a run that waited on the
    removed file sees that it was, and locks the new one).

    A lock held by another run is an :class:`OutputError` naming its PID, or, with ``wait``, waited for (said
    through ``on_note``). Where the OS has no ``flock`` (Windows), nothing is locked."""

    def __init__(
        self,
        path: Path,
        *,
        wait: bool = False,
        on_note: Callable[[str], None] = lambda note: None,
        folder: bool = False,
    ) -> None:
        self.output = Path(path)
        self.path = self.output / FOLDER_LOCK if folder else companion_paths(self.output)[2]
        self.fd: int | None = None
        try:
            import fcntl
        except ImportError:  # pragma: no cover - no flock on this OS
            return
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, umask_mode())
            except OSError as error:
                raise write_failed(self.path, error) from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = _lock_holder(fd)
                if not wait:
                    os.close(fd)
                    waiting = "" if folder else "give --wait to start when it has, "  # a folder's commands do not wait
                    raise OutputError(
                        f"{self.output}: another zstc run ({holder}) is writing it now; let it finish, "
                        f"{waiting}or choose another --out"
                    ) from None
                on_note(f"waiting for the zstc run ({holder}) that is writing {self.output}")
                fcntl.flock(fd, fcntl.LOCK_EX)
            if _same_inode(fd, self.path):
                break
            os.close(fd)  # removed by the run that held it, as it finished: lock the file there now
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self.fd = fd
        self._close = weakref.finalize(self, os.close, fd)  # a writer dropped without release() lets go of it too

    def release(self) -> None:
        """Remove the lock file and release the lock (nothing if released already)."""
        if self.fd is None:
            return
        self.path.unlink(missing_ok=True)
        self._close()
        self.fd = None


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[Callable[[], None]]:
    """Hold the lock of the output ``folder`` (:class:`OutputLock`) for the block: from its start if the folder exists
    (a live run's is refused at once, before any work), else from when the block calls the function it is given,
    right after making the folder."""
    held: list[OutputLock] = [OutputLock(folder, folder=True)] if Path(folder).is_dir() else []

    def made() -> None:
        if not held:
            held.append(OutputLock(folder, folder=True))

    try:
        yield made
    finally:
        for lock in held:
            lock.release()


def _lock_holder(fd: int) -> str:
    """``PID n``, as the lock file's holder wrote it (``PID unknown`` where it has not yet)."""
    written = os.pread(fd, 32, 0).decode("ascii", "replace").strip()
    return f"PID {written}" if written.isdigit() else "PID unknown"


def _same_inode(fd: int, path: Path) -> bool:
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


def check_not_locked(path: Path) -> None:
    """Refuse, before any work, an output another run is writing (:class:`OutputLock`); the lock is taken for real
    when the output is opened."""
    OutputLock(path).release()


def _write_utf8(stream: Any, data: bytes) -> None:
    """Write UTF-8 ``data`` (JSON Lines and zstc's CSV are UTF-8) to a text stream and flush it. A stream of another
    encoding (``PYTHONIOENCODING=ascii``, a C locale) gets the bytes through its buffer: encoded its way, a
    non-ASCII text was a UnicodeEncodeError after the chunk was scored."""
    import codecs

    buffer = getattr(stream, "buffer", None)
    encoding = getattr(stream, "encoding", None) or "utf-8"
    if buffer is not None and codecs.lookup(encoding).name != "utf-8":
        stream.flush()
        buffer.write(data)
        buffer.flush()
        return
    stream.write(data.decode("utf-8"))
    stream.flush()


def input_digest(records: Iterable[Row]) -> str:
    """A digest of a chunk's input rows, to tell on a resume whether a stream gives the rows it gave before."""
    import hashlib

    data = json.dumps(list(records), sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(data.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class ResumableWriter:
    """Writes ``path`` chunk by chunk through ``path.partial`` and a marker; see the module docstring.

    ``identity`` holds what must not change between a run and its resumption (input sha256, settings
    fingerprint); ``on_note`` receives what the user should hear (resuming, starting over)."""

    def __init__(
        self,
        path: Path,
        fmt: str,
        identity: dict[str, Any],
        on_note: Callable[[str], None] = lambda note: None,
        *,
        wait: bool = False,
    ) -> None:
        self.path, self.fmt, self.identity = Path(path), fmt, identity
        self.partial, self.marker, _ = companion_paths(self.path)
        self.lock = OutputLock(self.path, wait=wait, on_note=on_note)  # before the marker is read: one run at a time
        try:
            self._open(on_note)
        except BaseException:
            self.lock.release()
            raise

    def _open(self, on_note: Callable[[str], None]) -> None:
        # "ends": (rows, bytes) after each chunk, and "inputs" each chunk's input_digest: what keep() cuts back to.
        self.state: dict[str, Any] = {
            "identity": self.identity,
            "rows": 0,
            "chunks": 0,
            "bytes": 0,
            "columns": None,
            "ends": [],
            "inputs": [],
        }
        self._schema: Any = None
        """Parquet: the columns' types over the chunks written (None: not known yet, read from them when needed)."""
        previous = self._read_marker()
        if previous is not None and previous.get("identity") == self.identity and self._finished_in_place(previous):
            # Killed after finish() moved the output into place, before the marker went: the output is this run's.
            # Parquet's chunks are still there (removed after the marker); a JSONL/CSV output becomes the partial
            # output again. Either way the run resumes with every row kept, and finishes again.
            if self.fmt != "parquet":
                os.replace(self.path, self.partial)
        elif self.path.is_file():  # an earlier run's output: said before any work, not replaced in silence at the end
            on_note(f"replacing {self.path}, which exists already: it stays as it is until this run completes")
        if previous is not None and previous.get("identity") == self.identity and self._partial_intact(previous):
            previous.pop("finished", None)
            self.state = previous
            self._cut_torn_chunk()
            if self.state["rows"]:
                on_note(f"resuming {self.path}: {self.state['rows']} predictions from an interrupted run are kept")
        else:
            if previous is not None:
                on_note(f"starting {self.path} over: the input or the settings changed since the interrupted run")
            elif self.partial.exists():  # a run killed as it removed its finished state, or a marker deleted by hand
                on_note(f"starting {self.path} over: {self.partial} has no marker to resume it by")
            self._remove_partial()
            write_json(self.marker, self.state)

    def _finished_in_place(self, state: dict[str, Any]) -> bool:
        """Whether ``path`` is the very file :meth:`finish` moved into place, unchanged (:func:`_file_identity`)."""
        try:
            return state.get("finished") == _file_identity(self.path)
        except OSError:
            return False

    @property
    def resumed_rows(self) -> int:
        """Rows an interrupted run already wrote (the marker's count), which this run skips."""
        return int(self.state["rows"])

    def _per_chunk(self, key: str) -> list[Any]:
        """The marker's list ``key`` with one entry per chunk written; empty where it has not (a marker of a
        zstc that recorded none)."""
        entries = self.state.get(key)
        return list(entries) if isinstance(entries, list) and len(entries) == self.state["chunks"] else []

    @property
    def chunk_inputs(self) -> list[str | None]:
        """The input digest of each chunk written (None where none was given); see :meth:`_per_chunk`."""
        return self._per_chunk("inputs")

    def keep(self, chunks: int) -> None:
        """Keep only the first ``chunks`` chunks (a resumed stream whose later rows differ from the interrupted
        run's): the output is cut back to them and writing continues after them."""
        if chunks >= self.state["chunks"]:
            return
        ends = self._per_chunk("ends")
        if not ends:  # a marker without chunk ends: nothing can be kept
            chunks = 0
        rows, size = ends[chunks - 1] if chunks else (0, 0)
        if self.fmt == "parquet":
            for index in range(chunks, self.state["chunks"]):
                self._chunk_path(index).unlink(missing_ok=True)
        elif self.partial.exists():
            with self.partial.open("r+b") as handle:
                handle.truncate(size)
        self.state.update(rows=rows, chunks=chunks, bytes=size, ends=ends[:chunks], inputs=self.chunk_inputs[:chunks])
        self._schema = None  # the chunks cut off may have typed a column
        if not chunks:
            self.state["columns"] = None  # the CSV header goes with the first chunk
        write_json(self.marker, self.state)

    def _read_marker(self) -> dict[str, Any] | None:
        try:
            content = json.loads(self.marker.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return None
        return content if isinstance(content, dict) else None

    def _partial_intact(self, state: dict[str, Any]) -> bool:
        if not int(state.get("chunks", 0)):  # no chunk was complete: nothing to lose, whatever is (or is not) there
            return True
        if self.fmt == "parquet":
            return all(self._chunk_path(i).exists() for i in range(int(state.get("chunks", 0))))
        return self.partial.is_file() and self.partial.stat().st_size >= int(state.get("bytes", 0))

    def _chunk_path(self, index: int) -> Path:
        return self.partial / f"chunk-{index:06d}.parquet"

    def _cut_torn_chunk(self) -> None:
        """Drop whatever a killed run wrote after its last complete chunk."""
        if not self.partial.exists():  # killed before its first chunk reached the disk
            return
        if self.fmt == "parquet":
            for stray in self.partial.iterdir():
                if stray.name not in {self._chunk_path(i).name for i in range(self.state["chunks"])}:
                    stray.unlink()
        else:
            with self.partial.open("r+b") as handle:
                handle.truncate(self.state["bytes"])

    def _remove_partial(self) -> None:
        if self.partial.is_dir():
            shutil.rmtree(self.partial)
        else:
            self.partial.unlink(missing_ok=True)

    def write_chunk(self, rows: Sequence[Row], input_digest: str | None = None) -> None:
        """Append one chunk durably, then record it in the marker (in that order: the marker never runs ahead);
        ``input_digest``: the chunk's input rows' (:func:`input_digest`), for a resumed stream to check."""
        if not rows:
            return
        if self.fmt == "parquet":
            self._write_parquet_chunk(rows)
        else:
            if self.fmt == "csv":
                header = self.state["columns"] is None
                columns = self.state["columns"] or list(rows[0])
                data = encode_csv(rows, columns, header=header, first_row=self.state["rows"] + 1)
                self.state["columns"] = columns
            else:
                data = encode_jsonl(rows)
            try:  # a full disk, a file size limit: the chunks before this one stay, and the next run resumes after them
                with self.partial.open("ab") as handle:
                    handle.write(data)
                    handle.flush()
                    os.fsync(handle.fileno())
            except OSError as error:
                raise write_failed(self.partial, error) from None
            self.state["bytes"] += len(data)
        inputs, ends = self._per_chunk("inputs"), self._per_chunk("ends")
        self.state["rows"] += len(rows)
        self.state["chunks"] += 1
        if inputs or self.state["chunks"] == 1:  # a marker that lacks them for earlier chunks never gets them
            self.state["inputs"] = [*inputs, input_digest]
        if ends or self.state["chunks"] == 1:
            self.state["ends"] = [*ends, [self.state["rows"], self.state["bytes"]]]
        write_json(self.marker, self.state)

    def check_chunk(self, rows: Sequence[Row], where: Sequence[str], *, ahead: bool = False) -> None:
        """Refuse, before the chunk is scored, output rows (``rows``: the chunk's kept columns, with empty
        predictions) that Parquet cannot write after the chunks written so far: a column whose values change type
        (JSON Lines ``"id": 1`` then ``"id": "a2"``), an integer beyond 64 bits. A :class:`DataError` naming the
        column and the row (``where``: each row's name). JSON Lines: a value JSON cannot hold (NaN, binary data),
        named by :func:`encode_jsonl`. ``ahead``: the chunk is scored before the chunks checked earlier are written
        (the Ray engine's actors), so its types count for the chunks checked after it as a written chunk's do."""
        if self.fmt == "jsonl":
            for row, name in zip(rows, where):
                try:
                    encode_jsonl([row])
                except DataError as error:
                    raise DataError(f"{name}: {error}") from None
        if self.fmt == "parquet" and rows:
            schema = self._parquet_schema(_parquet_table(rows, where).schema, rows, where)
            if ahead:
                self._schema = schema

    def _parquet_schema(self, schema: Any, rows: Sequence[Row], where: Sequence[str]) -> Any:
        """The types of the chunks written so far unified with ``schema`` (the table of ``rows``, named by
        ``where``), as :meth:`_merge_parquet` unifies them; a column whose types do not unify is a
        :class:`DataError` naming it and the chunk's first row that has a value in it."""
        if self._schema is None:
            self._schema = self._written_schema()
        pa = _pyarrow()[0]
        try:
            return _unify([self._schema, schema])
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            pass
        name = _conflicting_column(self._schema, schema)
        first = next(index for index, row in enumerate(rows) if row.get(name) is not None)
        raise _mixed_types(
            name,
            f"{type(rows[first][name]).__name__} ({_short(rows[first][name])})",
            self._schema.field(name).type,
            where[first],
        )

    def _written_schema(self) -> Any:
        """The unified types of the chunks on disk (a resumed run: read from their footers, not their rows)."""
        pa, pq = _pyarrow()
        schema = pa.schema([])
        for index in range(self.state["chunks"]):
            chunk = pq.read_schema(self._chunk_path(index))
            try:
                schema = _unify([schema, chunk])
            except (pa.ArrowInvalid, pa.ArrowTypeError):  # chunks an older zstc wrote, which failed at its merge
                name = _conflicting_column(schema, chunk)
                raise _mixed_types(
                    name, f"{chunk.field(name).type} values", schema.field(name).type, f"{self._chunk_path(index)}"
                ) from None
        return schema

    def _write_parquet_chunk(self, rows: Sequence[Row]) -> None:
        pa, pq = _pyarrow()
        where = [f"row {number}" for number in range(self.state["rows"] + 1, self.state["rows"] + len(rows) + 1)]
        table = _parquet_table(rows, where)
        schema = self._parquet_schema(table.schema, rows, where)  # never a chunk the final merge would refuse
        self.partial.mkdir(parents=True, exist_ok=True)
        target = self._chunk_path(self.state["chunks"])
        temporary = target.with_name("." + target.name + ".tmp")
        try:
            pq.write_table(table, temporary)
            with temporary.open("rb") as handle:
                os.fsync(handle.fileno())
            os.replace(temporary, target)
        except OSError as error:  # pyarrow's write errors are OSErrors too
            temporary.unlink(missing_ok=True)
            raise write_failed(target, error) from None
        self._schema = schema

    def discard(self) -> None:
        """Remove the partial output and its marker: an input with no rows at all (an empty stdin) leaves nothing."""
        self._remove_partial()
        self.marker.unlink(missing_ok=True)
        self.lock.release()

    def close(self) -> None:
        """Release the output's lock: the run ends (finished, or stopped by an error, its partial state kept)."""
        self.lock.release()

    def finish(self) -> None:
        """Move the complete output into place and remove the partial state.

        The marker first names the file about to be moved (:meth:`_finished_in_place`), and Parquet's chunks go
        after the marker: a run killed between the move and the marker's removal is resumed by the next with every
        row kept, not made again."""
        if self.fmt == "parquet":
            complete = self._merge_parquet()
        else:
            if not self.partial.exists():  # no rows at all
                self.partial.write_bytes(b"")
            complete = self.partial
        self.state["finished"] = _file_identity(complete)
        write_json(self.marker, self.state)
        try:
            os.replace(complete, self.path)
        except OSError as error:
            raise write_failed(self.path, error) from None
        self.marker.unlink(missing_ok=True)
        self._remove_partial()
        self.lock.release()

    def _merge_parquet(self) -> Path:
        """One Parquet file, one row group per chunk, read and written a chunk at a time; returns where it was
        written, beside ``path``."""
        pa, pq = _pyarrow()
        chunks = [self._chunk_path(i) for i in range(self.state["chunks"])]
        schemas = [pq.read_schema(chunk) for chunk in chunks]
        # A column that is all null in one chunk and typed in another: the permissive union types it.
        schema = _unify(schemas) if schemas else pa.schema([])
        temporary = self.path.with_name("." + self.path.name + ".tmp")
        try:
            with pq.ParquetWriter(temporary, schema) as writer:
                for chunk in chunks:
                    table = pq.read_table(chunk)
                    columns = [
                        table[f.name] if f.name in table.column_names else pa.nulls(len(table), f.type) for f in schema
                    ]
                    writer.write_table(pa.Table.from_arrays(columns, schema=schema))
        except OSError as error:  # the chunks stay: the next run merges them again
            temporary.unlink(missing_ok=True)
            raise write_failed(self.path, error) from None
        return temporary


def _file_identity(path: Path) -> list[int]:
    """What tells a finished output from any other file at its path: device, inode, size and modification time,
    which a rename keeps; an older file of that name has another inode, and one written over in place (``cp`` keeps
    the inode) another modification time. A list, as the marker's JSON reads it back."""
    found = path.stat()
    return [found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns]


def _unify(schemas: Sequence[Any]) -> Any:
    """The chunks' schemas as one: a column that is all null in one chunk and typed in another is typed, ints
    and floats are floats; a column of two types (int and string) is pyarrow's ArrowTypeError."""
    return _pyarrow()[0].unify_schemas(list(schemas), promote_options="permissive")


def _conflicting_column(earlier: Any, schema: Any) -> str:
    """The first column of ``schema`` whose type does not unify with its type in ``earlier`` (two schemas that
    :func:`_unify` refused)."""
    return next(
        field.name for field in schema if field.name in earlier.names and not _unifies(earlier.field(field.name), field)
    )


def _unifies(first: Any, second: Any) -> bool:
    """Whether two fields of one name unify (:func:`_unify`)."""
    pa = _pyarrow()[0]
    try:
        _unify([pa.schema([first]), pa.schema([second])])
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return False
    return True


def _mixed_types(column: str, kind: Any, earlier: Any, where: str) -> DataError:
    return DataError(
        f"{where}: column {column!r} holds {kind} where earlier rows hold {earlier}: a Parquet column "
        "has one type. Leave it out with --keep-columns, or write --format jsonl or csv"
    )


def _parquet_table(rows: Sequence[Row], where: Sequence[str]) -> Any:
    """``rows`` as an Arrow table (rows of JSON Lines input may differ in keys: a missing one is null). A column
    pyarrow cannot type (``1`` then ``"a2"``, an integer beyond 64 bits) is a :class:`DataError` naming it and
    its first row that does not fit (``where``: each row's name), not pyarrow's traceback."""
    pa = _pyarrow()[0]
    names = list(dict.fromkeys(name for row in rows for name in row))
    failures = (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError)
    try:
        return pa.Table.from_pylist([{name: row.get(name) for name in names} for row in rows])
    except failures:
        pass
    for name in names:
        values = [row.get(name) for row in rows]
        try:
            pa.array(values)
            continue
        except failures:
            pass
        good, bad = 0, len(values)  # values[:good] convert, values[:bad] do not: the first row that breaks it
        while bad - good > 1:
            middle = (good + bad) // 2
            try:
                pa.array(values[:middle])
                good = middle
            except failures:
                bad = middle
        value = values[bad - 1]
        if isinstance(value, int) and not isinstance(value, bool):
            try:
                pa.array([value])
            except OverflowError:
                raise DataError(
                    f"{where[bad - 1]}: column {name!r} holds the integer {value}, beyond the 64 bits of a "
                    "Parquet integer. Leave it out with --keep-columns, or write --format jsonl or csv"
                ) from None
        earlier = pa.array(values[: bad - 1]).type
        raise _mixed_types(name, f"{type(value).__name__} ({_short(value)})", earlier, where[bad - 1])
    raise AssertionError("Table.from_pylist failed on no single column")


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 40 else text[:39] + "…"


def _pyarrow() -> tuple[Any, Any]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError("writing Parquet needs pyarrow: pip install 'zstc[parquet]'") from None
    return pa, pq


LABELLING_VERSION = "6"
"""Version of how ``classify`` turns scores into output rows; with the family's ``SCORING_VERSION`` it is part of a
resumable run's identity, so a run resumed under another zstc starts over instead of mixing rows of two versions.
2: in bf16, multi-label decisions recheck in fp32 the pairs near their threshold (zstc.scorers.pairs).
3: an input column already named ``input_<field>`` is renamed too, not replaced (:func:`output_row`).
4: in bf16, decisions on an average of description variants (polarity labels, ``--hypotheses ensemble``) recheck the
average in fp32, not each variant alone (:func:`zstc.hypotheses.variants.average_rechecked`).
5: a null text skipped by ``--skip-empty`` is written null, not "" (which renamed the input's to ``input_text``).
6: multi-label ``--scores probs`` are >= 0.5 exactly when their label passed (:meth:`zstc.policy.MultiLabelRule.probabilities`),
not the raw probabilities of yes/no or LLM scores, nor Platt's at a cut other than 0.5."""


@dataclasses.dataclass
class ChunkLabeller:
    """Turns a chunk of input records into output rows with a :class:`zstc.api.Classifier`: one row per
    record, in order. The same object serves ``zstc classify`` and its Ray engine."""

    names: list[str]
    descriptions: Sequence[str]
    text_column: str = "text"
    keep_columns: list[str] | None = None
    """Input columns carried into the output; None: all of them."""
    multi_label: bool = False
    threshold: float | None = None
    per_label: dict[str, float] = dataclasses.field(default_factory=dict)
    skip_empty: bool = False
    scores: str | None = None
    """``probs`` or ``raw`` (``zstc.api.SCORE_KINDS``); None: the Classifier's default for the kind of decision."""
    adaptation: Any = None
    """Single-label: a :class:`zstc.adapt.Adaptation` estimated on the whole input (``classify --adapt``), applied to
    every chunk; None: each text decided alone."""

    def __post_init__(self) -> None:
        if self.scores is not None:  # before any model loads, not at the first chunk
            from zstc.api import check_score_kind

            check_score_kind(self.scores)

    def text(self, record: Row, where: str) -> str | None:
        """The record's text; None for an empty one under ``skip_empty`` (blank, only whitespace, or null: JSON
        ``null``, a Parquet null cell), else an error naming the row. A record without the text column is an
        error with ``skip_empty`` too: a misnamed ``--text-column`` wrote every row unlabelled, with exit 0."""
        from zstc.io import text_of
        from zstc.validation import check_encodable, is_blank

        value = record.get(self.text_column)
        # check_encodable first: a text of NUL characters is binary data, an error, not an empty text to skip
        if (
            self.skip_empty
            and self.text_column in record
            and (value is None or (isinstance(value, str) and is_blank(check_encodable(value, where))))
        ):
            return None
        return text_of(record, where, self.text_column, hint=": give --skip-empty to write such a row without a label")

    def kept(self, record: Row) -> Row:
        """The input columns carried into the output row (all of them, or ``keep_columns``, each of which must exist)."""
        if self.keep_columns is None:
            return record
        missing = [name for name in self.keep_columns if name not in record]
        if missing:
            raise DataError(
                f"--keep-columns: no column {missing[0]!r} in the input (columns: {', '.join(map(str, record))})"
            )
        return {name: record[name] for name in self.keep_columns}

    def checked(
        self, records: Sequence[tuple[str, Row]], check: Callable[[list[Row], list[str]], None] | None = None
    ) -> list[str | None]:
        """Each record's text (None: an empty one under ``skip_empty``) after the checks that need no model: the text
        column, the kept columns and ``check`` (see :meth:`rows`). The Ray engine's driver runs them before an actor
        scores the chunk, so its errors are those of ``zstc classify``, row for row."""
        texts = [self.text(record, where) for where, record in records]
        if check is not None:
            check(
                [
                    output_row(
                        self.kept(record),
                        empty_record(
                            text if text is not None else record.get(self.text_column), multi_label=self.multi_label
                        ),
                    )
                    for (_, record), text in zip(records, texts)
                ],
                [where for where, _ in records],
            )
        return texts

    def sample_scores(self, classifier: Any, records: Sequence[tuple[str, Row]], limit: int | None = None) -> Any:
        """The raw (texts, labels) scores of the chunk's texts (its first ``limit``; empty ones under ``skip_empty``
        left out), scored as :meth:`rows` scores them: what ``--adapt`` estimates from (:meth:`adaptation_of`)."""
        import numpy as np

        texts = [text for text in self.checked(records) if text is not None][:limit]
        if not texts:
            return np.zeros((0, len(self.names)))
        return classifier.scores(texts, self.names, self.descriptions)

    def adaptation_of(self, classifier: Any, matrices: Sequence[Any], method: str, where: str) -> Any:
        """``method``'s :class:`zstc.adapt.Adaptation` estimated from the :meth:`sample_scores` of an input's chunks, in
        input order (``classify --adapt``, local and Ray); an input (``where``) with no text is an error."""
        import numpy as np

        matrix = np.concatenate(matrices) if matrices else np.zeros((0, len(self.names)))
        if not len(matrix):
            raise DataError(f"--adapt {method}: {where} has no text to estimate from")
        return classifier.adaptation(matrix, method)

    def adaptation_note(self, adaptation: Any) -> str:
        """What ``classify --adapt`` says of an estimated adaptation: its texts and the label shares it implies."""
        return f"--adapt {adaptation.method}: estimated from {adaptation.texts} texts; label shares after adapting " + (
            ", ".join(f"{name} {share:.2f}" for name, share in zip(self.names, adaptation.shares))
        )

    def rows(
        self,
        classifier: Any,
        records: Sequence[tuple[str, Row]],
        notes: list[str] | None = None,
        check: Callable[[list[Row], list[str]], None] | None = None,
    ) -> list[Row]:
        """Output rows for ``(where, record)`` pairs; ``where`` names the row in error messages; ``notes``
        receives what the scorer had to say (truncated texts, ...). ``check`` (:meth:`ResumableWriter.check_chunk`)
        sees the rows with empty predictions before the texts are scored: a row the output cannot hold stops the
        run before its chunk's work, not when it is written."""
        texts = self.checked(records, check)
        present = [text for text in texts if text is not None]
        predicted: list[Any] = []
        if present:
            if self.multi_label:
                predicted = classifier.predict_multi_label(
                    present,
                    self.names,
                    self.descriptions,
                    threshold=self.threshold,
                    per_label=self.per_label,
                    notes=notes,
                    scores=self.scores,
                )
            else:
                predicted = classifier.predict(
                    present,
                    self.names,
                    self.descriptions,
                    notes=notes,
                    scores=self.scores or "probs",
                    adapt=self.adaptation,
                )
        found = iter(predicted)
        out = []
        for (_, record), text in zip(records, texts):
            fields = (
                prediction_record(next(found))
                if text is not None
                else empty_record(record.get(self.text_column), multi_label=self.multi_label)
            )
            out.append(output_row(self.kept(record), fields))
        return out
