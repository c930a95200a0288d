"""Read a user's files and write zstc's outputs.

Reading: texts, labelled texts and label descriptions (JSONL, CSV/TSV, Parquet, .txt, stdin), JSON result
files. Text is UTF-8, with or without a byte-order mark; every malformed input raises
:class:`zstc.errors.DataError` naming the file, the row (or byte offset) and the reason.

Writing: :func:`check_output_path` refuses an output that would destroy an input or cannot be written,
before any work starts; :func:`atomic_write` writes a file so that it is either the old one or the complete
new one, never half of either.
"""

from __future__ import annotations

import contextlib
import csv
import json
import math
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import IO, Any, BinaryIO

from zstc.errors import DataError, OutputError, quoted
from zstc.validation import NONE_LABEL, blank_detail, check_encodable, check_labels, is_blank

BOM = "\ufeff"
TEMP_SUFFIX = ".tmp"
"""Temporary files are ``.<target name>.<random>.<pid>.tmp`` beside their target (see :func:`remove_orphan_temps`)."""


# -- decoding -------------------------------------------------------------------------------------------


def decode_utf8(data: bytes, source: str, *, offset: int = 0) -> str:
    """``data`` as text, or :class:`DataError` naming ``source`` and the byte offset of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        # A UTF-16 byte-order mark says what the file is (Windows tools save "Unicode" so): latin1 would be wrong advice.
        encoding = "utf-16" if offset == 0 and data[:2] in (b"\xff\xfe", b"\xfe\xff") else "latin1"
        raise DataError(
            f"{source}: not UTF-8 text (byte offset {offset + error.start}: 0x{data[error.start]:02x}, {error.reason}); "
            f"save it as UTF-8, e.g. iconv -f {encoding} -t utf-8"
        ) from None


_LINE_END = re.compile(r"\r\n|\r|\n")
"""The line ends of every file zstc reads: LF, CRLF and a lone CR (old Mac files, some exports), nothing else:
U+2028, form feeds and the other breaks of :meth:`str.splitlines` are characters of a line, not ends."""
_LONE_CR = re.compile(r"\r(?!\r*\n)")
"""A CR that ends a line on its own: not one of a CRLF (nor of ``\\r\\r\\n``, a CRLF converted twice)."""


def split_lines(text: str) -> list[str]:
    """``text``'s lines, without their ends (:data:`_LINE_END`)."""
    lines = _LINE_END.split(text)
    return lines[:-1] if lines and not lines[-1] else lines


def utf8_lines(stream: Iterable[bytes], source: str) -> Iterator[str]:
    """Decoded lines (ends kept) of a binary stream, a leading byte-order mark dropped; streams, never reads all.
    A lone CR ends a line as LF and CRLF do (a CR-only file was one line: one text of a .txt, a malformed CSV).

    Splitting bytes at ``\\n`` and ``\\r`` is safe: those bytes never occur inside a multi-byte UTF-8 sequence.
    """
    offset = 0
    for raw in stream:
        line = decode_utf8(raw, source, offset=offset)
        if offset == 0 and line.startswith(BOM):
            line = line[1:]
        offset += len(raw)
        if "\r" not in line[:-1]:
            yield line
            continue
        start = 0
        for end in _LONE_CR.finditer(line):
            yield line[start : end.end()]
            start = end.end()
        if start < len(line):
            yield line[start:]


def read_text(path: str | Path) -> str:
    """A whole UTF-8 text file (byte-order mark dropped)."""
    path = Path(path)
    with _open_binary(path) as handle:
        text = decode_utf8(handle.read(), str(path))
    return text[1:] if text.startswith(BOM) else text


class _RepeatedKey(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _object_of_distinct_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found = dict(pairs)
    if len(found) != len(pairs):
        keys = [key for key, _ in pairs]
        raise _RepeatedKey(next(key for index, key in enumerate(keys) if key in keys[:index]))
    return found


# Built once: json.loads(text, object_pairs_hook=...) would build a decoder per call (twice as slow per row).
_DISTINCT_KEYS_JSON = json.JSONDecoder(object_pairs_hook=_object_of_distinct_keys)


def parse_json(text: str, source: str) -> Any:
    """JSON, or :class:`DataError` naming ``source`` (malformed, nested too deeply for the parser, or an object
    that repeats a key: ``json.loads`` would keep the last value and drop the others without a word, and Arrow's
    reader, which ``--engine ray`` uses, refuses such a row)."""
    try:
        return _DISTINCT_KEYS_JSON.decode(text)
    except json.JSONDecodeError as error:
        raise DataError(f"{source}: malformed JSON ({error.msg}, line {error.lineno} column {error.colno})") from None
    except RecursionError:
        raise DataError(f"{source}: JSON nested too deeply to read") from None
    except _RepeatedKey as repeated:
        raise DataError(
            f"{source}: key {repeated.key!r} appears twice in one object; "
            "only one value could be read, so give each its own key"
        ) from None


def check_distinct_keys(text: str, source: str) -> None:
    """:func:`parse_json`'s :class:`DataError` when ``text`` is JSON with an object that repeats a key (a service's
    body: ``{"labels": [...], "labels": [...]}`` kept the last); malformed JSON passes, for its reader to say why."""
    try:
        _DISTINCT_KEYS_JSON.decode(text)
    except _RepeatedKey:
        parse_json(text, source)
    except (ValueError, RecursionError):
        return


def read_json(path: str | Path) -> Any:
    """A UTF-8 JSON file, with every way it can be unreadable as a :class:`DataError` naming it."""
    return parse_json(read_text(path), str(path))


@contextlib.contextmanager
def _open_binary(path: Path) -> Iterator[BinaryIO]:
    if not path.exists():
        raise DataError(f"{path}: no such file")
    if path.is_dir():
        raise DataError(f"{path}: is a directory, expected a file")
    try:
        handle = path.open("rb")
    except OSError as error:
        raise DataError(f"{path}: cannot read ({error.strerror})") from None
    with handle:
        yield handle


# -- outputs --------------------------------------------------------------------------------------------


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether two paths name one file: same path, another spelling, a symlink or a hard link."""
    a, b = Path(a), Path(b)
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
        return a.resolve() == b.resolve()
    except OSError:
        return False


def check_output_path(
    path: Path, *, inputs: Sequence[str | Path | None] = (), option: str = "--out", beside: Sequence[Path] = ()
) -> Path:
    """Refuse, before any work, an output file that would destroy an input or cannot be written.

    Raises :class:`OutputError` naming ``option`` and ``path`` when the path resolves to one of ``inputs``
    (``-`` and None in ``inputs`` are skipped), is a directory, is a read-only file (no write bit for anyone:
    the file renamed over it would replace it all the same), or lies in a missing or unwritable folder (one
    with no write bit for anyone, even for root, or one a write fails in, such as a read-only mount).
    A target that exists and is not a regular file (``/dev/null``, a FIFO), or is ``/dev/stdout`` (even to a
    shell's file), is accepted: it is written directly. ``beside``: the files the run writes beside it as it runs
    (a resumable output's partial file and marker), none of which may be an input either. Returns ``path``.
    """
    path = Path(path)
    where = f"{option} {path}"
    for source in inputs:
        if source is None or str(source) == "-":
            continue
        if same_file(path, source):
            raise OutputError(f"{where}: is the input {source}; writing there would destroy it, choose another path")
        for companion in beside:
            if same_file(companion, source):
                raise OutputError(
                    f"{where}: writes {companion} as it runs, which is the input {source}; writing there "
                    "would destroy it, choose another path"
                )
    if path.is_dir():
        raise OutputError(f"{where}: is a directory, expected a file")
    if path.exists() and is_special_file(path):  # a device, a FIFO, /dev/stdout even to a shell's file
        if not os.access(path, os.W_OK):
            raise OutputError(f"{where}: not writable")
        return path
    # The mode bits, not os.access, which says yes to root whatever they are.
    if path.is_file() and not path.stat().st_mode & 0o222:
        raise OutputError(
            f"{where}: is read-only; writing there would replace it, make it writable (chmod u+w) or choose another path"
        )
    # Through a symlink, the folder written in is the target's (a dangling link's missing folder was created).
    _check_writable_folder(write_target(path).absolute().parent, where)
    return path


def check_output_dir(
    path: Path, *, inputs: Sequence[str | Path | None] = (), option: str = "--out", files: Sequence[str] = ()
) -> Path:
    """Like :func:`check_output_path` for an output folder: refuses an existing file, a missing or unwritable
    parent, and ``files`` (names written inside it) that would overwrite one of ``inputs``."""
    path = Path(path)
    where = f"{option} {path}"
    if path.exists() and not path.is_dir():
        raise OutputError(f"{where}: is a file, expected a folder (new or existing)")
    for source in inputs:
        if source is None or str(source) == "-":
            continue
        if same_file(path, source):
            raise OutputError(f"{where}: is the input {source}; choose another path")
        for name in files:
            if same_file(path / name, source):
                raise OutputError(f"{where}: would overwrite the input {source} with its {name}; choose another folder")
    _check_writable_folder(path if path.is_dir() else path.absolute().parent, where)
    return path


def check_folder_creatable(folder: Path, what: str, hint: str) -> None:
    """Refuse a folder zstc creates as needed (a cache) that cannot be: one of its parents is a file, or the
    nearest that exists cannot be written in. An :class:`OutputError` naming ``what``, the folder and the cause,
    then ``hint`` (where the folder was set)."""
    existing = Path(folder).expanduser().absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        _check_writable_folder(existing, f"{what} {folder}")
    except OutputError as error:
        raise OutputError(f"{error}; {hint}") from None


def _check_writable_folder(folder: Path, where: str) -> None:
    if not folder.exists():
        raise OutputError(f"{where}: folder {folder} does not exist")
    if not folder.is_dir():
        raise OutputError(f"{where}: {folder} is not a folder")
    # The mode bits first, as for a file (check_output_path): root writes in a folder no one may write in, and
    # neither the probe below nor os.access would say no to it.
    if not folder.stat().st_mode & 0o222:
        raise OutputError(
            f"{where}: cannot write in {folder} (read-only: no write bit for anyone; make it writable "
            "(chmod u+w) or choose another folder)"
        )
    # A real probe rather than os.access: access() says yes to root on a read-only mount or in /proc.
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".zstc-write-probe.", suffix=TEMP_SUFFIX)
    except OSError as error:
        raise OutputError(f"{where}: cannot write in {folder} ({error.strerror})") from None
    os.close(fd)
    os.unlink(probe)


def umask_mode(base: int = 0o666) -> int:
    """``base`` as the process's umask leaves it: the mode ``open()`` would give a new file (``0o777`` for a folder)."""
    mask = os.umask(0)
    os.umask(mask)
    return base & ~mask


def _file_mode(existing: Path) -> int:
    """An existing target's permissions, else those the umask gives a new file (mkstemp's own are 0600)."""
    with contextlib.suppress(OSError):
        return existing.stat().st_mode & 0o7777
    return umask_mode()


def write_failed(path: Path | str, error: OSError) -> OutputError:
    """The one-line error for a write that failed (a full disk, a file size limit, a read-only folder), naming what
    was written and the cause as the OS words its error number (pyarrow wraps it in a sentence of its own)."""
    cause = os.strerror(error.errno) if isinstance(error.errno, int) and error.errno > 0 else error.strerror or error
    return OutputError(f"cannot write {path}: {cause}")


def is_special_file(path: Path) -> bool:
    """Whether ``path`` is written directly, never replaced by a file renamed over it: it exists and is neither
    a regular file nor a folder (``/dev/full``, a FIFO), or it lies under ``/dev`` or ``/proc``
    (``/dev/stdout``, ``/proc/self/fd/1``), which name another file only for this process, even a regular one
    (a shell's ``> file``)."""
    path = Path(path)
    if path.absolute().parts[1:2] in (("dev",), ("proc",)):
        return True
    return path.exists() and not path.is_file() and not path.is_dir()


def write_target(path: Path) -> Path:
    """Where writing ``path`` goes: a symlink's target (as ``open()`` would write), so that a file renamed into
    place replaces what the link points to, not the link."""
    path = Path(path)
    return Path(os.path.realpath(path)) if path.is_symlink() else path


@contextlib.contextmanager
def atomic_write(path: Path, mode: str = "w") -> Iterator[IO[Any]]:
    """Write ``path`` all at once: into a temporary file beside it, flushed to disk, renamed over it only when
    the block completes. Interrupted or failing, the old file (if any) is untouched and the temporary removed.

    ``mode`` is ``"w"`` (UTF-8 text) or ``"wb"``. A target that is not a regular file (``/dev/stdout``,
    ``/dev/full``, a FIFO) is written directly. Write errors (a full disk, a read-only folder) raise
    :class:`OutputError` naming the path.
    """
    path = Path(path)
    target = write_target(path)
    encoding = None if "b" in mode else "utf-8"
    if is_special_file(path) or is_special_file(target):
        # Opened as given: /dev/stdout's target (/proc/PID/fd/pipe:[N]) cannot be opened by name, and a shell's
        # ``> file`` behind it is the shell's file, written through the descriptor, not replaced.
        try:
            with open(path, mode, encoding=encoding) as handle:
                yield handle
        except OSError as error:
            raise write_failed(path, error) from None
        return
    path = target
    if path.is_dir():
        raise OutputError(f"cannot write {path}: is a directory")
    try:
        fd, temporary = tempfile.mkstemp(
            dir=path.absolute().parent, prefix=f".{path.name}.", suffix=f".{os.getpid()}{TEMP_SUFFIX}"
        )
    except OSError as error:
        raise write_failed(path, error) from None
    try:
        with os.fdopen(fd, mode, encoding=encoding) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, _file_mode(path))
        os.replace(temporary, path)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise write_failed(path, error) from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_directory(path: Path, *, first: Sequence[str] = (), last: Sequence[str] = ()) -> Iterator[Path]:
    """Fill a folder all at once: the block writes into a temporary folder beside ``path``; when it completes,
    each file is moved into ``path`` (created if needed), the names in ``first`` before all others (a file that
    says whose the folder is, there before anything it vouches for) and those in ``last`` after all others (a file
    whose presence marks the folder complete). Interrupted or failing, ``path`` is untouched."""
    path = Path(path)
    try:
        staging = Path(
            tempfile.mkdtemp(dir=path.absolute().parent, prefix=f".{path.name}.", suffix=f".{os.getpid()}{TEMP_SUFFIX}")
        )
    except OSError as error:
        raise write_failed(path, error) from None
    try:
        yield staging
        path.mkdir(exist_ok=True)

        def order(entry: Path) -> tuple[int, int]:
            if entry.name in first:
                return 0, first.index(entry.name)
            return (2, last.index(entry.name)) if entry.name in last else (1, 0)

        _usual_modes(staging, path)
        entries = sorted(staging.iterdir(), key=order)
        for entry in entries:
            target = path / entry.name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target)
            os.replace(entry, target)
    except OutputError as error:  # a file of the block that could not be written: named where the user will look for it
        raise OutputError(str(error).replace(str(staging), str(path))) from None
    except OSError as error:
        raise write_failed(path, error) from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _usual_modes(staging: Path, path: Path) -> None:
    """Give what the block wrote into ``staging`` the permissions :func:`atomic_write` gives a file: those of the file
    it replaces in ``path``, else the umask's (safetensors writes its files 0600 whatever the umask, and a trained
    model folder is shared as any other output is)."""
    for entry in staging.rglob("*"):
        if entry.is_symlink():
            continue
        target = path / entry.relative_to(staging)
        if entry.is_dir():
            entry.chmod(umask_mode(0o777) if not target.is_dir() else target.stat().st_mode & 0o7777)
        else:
            entry.chmod(_file_mode(target))


def remove_orphan_temps(folder: Path) -> list[Path]:
    """Delete the temporary files and folders that a killed zstc process left in ``folder``: those named
    by :func:`atomic_write` whose process id no longer runs. Returns what was removed."""
    removed: list[Path] = []
    if not Path(folder).is_dir():
        return removed
    for entry in Path(folder).glob(f".*{TEMP_SUFFIX}"):
        pid = entry.name[: -len(TEMP_SUFFIX)].rpartition(".")[2]
        if not pid.isdigit() or _process_alive(int(pid)):
            continue
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
        removed.append(entry)
    return removed


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


# -- reading user files ---------------------------------------------------------------------------------

GROUPED_SUFFIXES: tuple[str, ...] = (".jsonl", ".csv", ".parquet")

RECORD_SUFFIXES: tuple[str, ...] = (".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".parquet")
"""The files of rows :func:`read_records` reads: JSON Lines (``.jsonl``, ``.ndjson``, ``.json``), CSV, TSV, Parquet."""
TEXT_SUFFIXES: tuple[str, ...] = (*RECORD_SUFFIXES, ".txt")
"""The files of texts :func:`read_texts` and ``zstc classify`` read: those, and ``.txt``, one text per line."""


def suffix_list(suffixes: Sequence[str]) -> str:
    """``".a, .b or .c"``: the one wording of a list of accepted suffixes, for errors, ``--help`` and the README."""
    return f"{', '.join(suffixes[:-1])} or {suffixes[-1]}" if len(suffixes) > 1 else "".join(suffixes)


def unsupported_type(path: str | Path, suffixes: Sequence[str]) -> DataError:
    """The error for a file whose suffix is none of ``suffixes``, naming the file and every accepted suffix."""
    return DataError(f"{path}: unsupported file type {Path(path).suffix.lower()!r}; expected {suffix_list(suffixes)}")


Record = dict[str, Any]


def read_records(path: str | Path, *, parquet_batch: int = 4096) -> Iterator[tuple[int, Record]]:
    """Yield ``(row_number, record)`` from a JSONL, CSV/TSV or Parquet file; row numbers are 1-based lines.
    ``parquet_batch``: the rows a Parquet file converts at a time (1 to peek at its first row cheaply)."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path}: no such file")
    if path.is_dir():
        raise DataError(f"{path}: is a directory, expected a file")
    suffix = path.suffix.lower()
    if suffix in (".jsonl", ".json", ".ndjson"):
        yield from _read_jsonl(path)
    elif suffix in (".csv", ".tsv"):
        yield from _read_csv(path, delimiter="\t" if suffix == ".tsv" else ",")
    elif suffix == ".parquet":
        yield from _read_parquet(path, parquet_batch)
    else:
        raise unsupported_type(path, RECORD_SUFFIXES)


def _read_jsonl(path: Path) -> Iterator[tuple[int, Record]]:
    # A .json file is read as JSON Lines too: a whole-file array or a pretty-printed object fails on its first line,
    # with a message that said nothing of why a valid JSON file was refused.
    hint = (
        "; .json input is read as JSON Lines, one object per line (convert an array with jq -c '.[]')"
        if path.suffix.lower() == ".json"
        else ""
    )
    with _open_binary(path) as handle:
        for line_number, line in enumerate(utf8_lines(handle, str(path)), start=1):
            if not line.strip():
                continue
            try:
                record = parse_json(line, f"{path}:{line_number}")
            except DataError as error:
                raise DataError(f"{error}{hint}") from None
            if not isinstance(record, dict):
                raise DataError(f"{path}:{line_number}: expected a JSON object, got {type(record).__name__}{hint}")
            yield line_number, record


def check_header(names: Sequence[str], source: str) -> None:
    """:class:`DataError` when a CSV header repeats a name: it would be one dict key (Python's csv) or one column
    of an Arrow row (``--engine ray``), and the later column would silently replace the earlier."""
    seen: dict[str, int] = {}
    for position, name in enumerate(names, start=1):
        if name in seen:
            raise DataError(
                f"{source}:1: column {name!r} is repeated in the header (columns {seen[name]} and {position}); "
                "give each column its own name"
            )
        seen[name] = position


def csv_field_limit() -> int:
    """Raise Python's CSV cell limit (128 KiB: a long document, which JSON Lines reads whole, was "malformed CSV")
    to the largest the platform takes, and return it: a cell is then bounded by memory, as a JSON Lines text is."""
    limit = sys.maxsize
    while True:
        try:
            csv.field_size_limit(limit)
            return limit
        except OverflowError:  # a C long of 32 bits (Windows)
            limit = (limit + 1) // 2 - 1 if limit > 2**31 - 1 else 2**31 - 1


def csv_problem(error: csv.Error) -> str:
    """Python's CSV error in the words of the file: its advice on "universal-newline mode" is about how Python opens
    files, which zstc does, and means a line break inside an unquoted cell."""
    message = str(error)
    if "new-line character seen in unquoted field" in message:
        return "a line break inside an unquoted cell; quote the cell"
    if "field larger than field limit" in message:
        return f"a cell larger than {csv.field_size_limit():,} characters, the most this platform's CSV reader takes"
    return f"{message}; an unterminated quote?"


def _read_csv(path: Path, delimiter: str) -> Iterator[tuple[int, Record]]:
    csv_field_limit()
    with _open_binary(path) as handle:
        # strict: an unterminated quote is an error, not a field that swallows the rest of the file.
        reader = csv.DictReader(utf8_lines(handle, str(path)), delimiter=delimiter, strict=True)
        try:
            if reader.fieldnames is None:
                raise DataError(f"{path}: empty file, expected a header row")
            check_header(reader.fieldnames, str(path))
            for record in reader:
                if None in record:  # more fields than the header has
                    raise DataError(f"{path}:{reader.line_num}: more fields than the header's {len(reader.fieldnames)}")
                if None in record.values():  # fewer: Python's csv fills the rest with None, which read as missing cells
                    given = sum(value is not None for value in record.values())
                    raise DataError(
                        f"{path}:{reader.line_num}: {given} field{'s' if given != 1 else ''}, the header has "
                        f"{len(reader.fieldnames)} (a cell left out, or a delimiter missing?)"
                    )
                yield reader.line_num, record
        except csv.Error as error:
            # The csv reader's own line count: the DictReader's stops at the last complete row.
            raise DataError(f"{path}:{reader.reader.line_num}: malformed CSV ({csv_problem(error)})") from None


def _read_parquet(path: Path, batch_rows: int = 4096) -> Iterator[tuple[int, Record]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise DataError(f"{path}: reading Parquet needs pyarrow: pip install 'zstc[parquet]'") from None
    try:
        parquet = pq.ParquetFile(path)
    except Exception as error:  # pyarrow raises several types for corrupt files
        raise DataError(f"{path}: not a readable Parquet file ({error})") from None
    row = 0
    # Batch by batch: a file of millions of rows is never held in memory at once.
    for batch in parquet.iter_batches(batch_size=batch_rows):
        for record in batch.to_pylist():
            row += 1
            yield row, record


def text_of(record: Record, where: str, column: str = "text", *, hint: str = "") -> str:
    """The text in ``record[column]``, or :class:`DataError` naming ``where`` (the row) when it is missing, null, not
    a string, blank (:func:`zstc.validation.is_blank`), or not encodable (:func:`check_encodable`). ``hint`` ends the
    message on a null or blank text (classify's ``--skip-empty``)."""
    if column not in record:
        raise DataError(f"{where}: no {column!r} field (fields: {', '.join(map(str, record))})")
    text = record[column]
    if text is None:  # JSON null, a Parquet null cell: "NoneType" is Python's word, not the file's
        raise DataError(f"{where}: {column!r} is null, expected a string{hint}")
    if not isinstance(text, str):
        raise DataError(f"{where}: {column!r} is {type(text).__name__}, expected a string")
    check_encodable(text, where)  # first: a NUL is binary data, not an invisible character
    if is_blank(text):
        raise DataError(f"{where}: empty text{blank_detail(text)}{hint}")
    return text


def read_texts(source: str | Path, *, text_column: str = "text") -> list[str]:
    """Texts to classify: a JSONL/CSV/Parquet file with a text column, a .txt file, or ``-`` (stdin), one per line."""
    if str(source) == "-":
        # The bytes, decoded here: the terminal's text layer would let undecodable bytes through as surrogates.
        stdin = getattr(sys.stdin, "buffer", None)
        return _plain_lines(utf8_lines(stdin, "<stdin>") if stdin is not None else sys.stdin, "<stdin>")
    path = Path(source)
    if path.suffix.lower() not in TEXT_SUFFIXES and path.is_file():  # read_records would name its own list, less .txt
        raise unsupported_type(path, TEXT_SUFFIXES)
    if path.suffix.lower() == ".txt":
        with _open_binary(path) as handle:
            return _plain_lines(utf8_lines(handle, str(path)), str(path))
    texts = [text_of(record, f"{path}:{row}", text_column) for row, record in read_records(path)]
    if not texts:
        raise DataError(f"{path}: no texts")
    return texts


def read_label_sets(
    path: str | Path, *, text_column: str = "text", label_column: str = "label", labels: Sequence[str] | None = None
) -> tuple[list[str], list[list[str]]]:
    """Labelled texts for fitting multi-label thresholds: each row's text and its labels. The label column
    holds one label name, ``"none"``, or (JSONL/Parquet) a list of label names; with ``labels``, each must be one
    of them (or ``"none"``), else a :class:`DataError` naming the file and row."""
    texts: list[str] = []
    label_sets: list[list[str]] = []
    for row, record in read_records(path):
        where = f"{path}:{row}"
        texts.append(text_of(record, where, text_column))
        value = _json_list_cell(record.get(label_column))
        if isinstance(value, str) and not is_blank(value):
            label_sets.append([value.strip()])
        elif isinstance(value, list) and all(isinstance(name, str) for name in value):
            label_sets.append([name.strip() for name in value])
        else:
            raise DataError(
                f"{where}: expected column {label_column!r} to hold a label, 'none' or a list of labels, found {value!r}"
            )
        if labels is not None:  # the fit said "dev text 3 has label ...", naming neither file nor line
            unknown = [name for name in label_sets[-1] if name != NONE_LABEL and name not in labels]
            if unknown:
                raise DataError(f"{where}: label {quoted(unknown[0])} is not one of the labels: {', '.join(labels)}")
    if not texts:
        raise DataError(f"{path}: no labelled texts")
    return texts, label_sets


def _json_list_cell(value: Any) -> Any:
    """A CSV cell holding a JSON list of strings (``["sports", "economy"]``, as ``classify --multi-label`` writes its
    labels to CSV) as that list; any other value as it is."""
    if isinstance(value, str) and value.lstrip().startswith("["):
        try:
            parsed = json.loads(value)
        except ValueError:
            return value
        if isinstance(parsed, list) and all(isinstance(name, str) for name in parsed):
            return parsed
    return value


def _plain_lines(lines: Iterable[str], source: str) -> list[str]:
    texts = []
    for number, line in enumerate(lines, start=1):
        text = line.rstrip("\r\n")
        check_encodable(text, f"{source}:{number}")  # before the blank test: a line of NUL is binary data, not skipped
        if not is_blank(text):
            texts.append(text)
    if not texts:
        raise DataError(f"{source}: no texts")
    return texts


def read_label_descriptions(path: str | Path, *, allow_single: bool = False) -> dict[str, str]:
    """Labels and their descriptions from a file.

    ``.json``: an object ``{label: description}`` or a list of labels; otherwise one label per line,
    optionally ``label<TAB>description``; every non-blank line is a label (there are no comment lines: a leading
    ``#`` is part of the label). A label without a description is described by its own name.
    ``allow_single`` admits one label, as :func:`zstc.validation.check_labels` does (multi-label: yes or no).
    """
    path = Path(path)
    if path.suffix.lower() == ".json":
        content = read_json(path)
        if isinstance(content, list):
            pairs = [
                (_label_string(label, path, f"item {i + 1}"), _label_string(label, path, f"item {i + 1}"))
                for i, label in enumerate(content)
            ]
        elif isinstance(content, dict):
            pairs = [
                (label, _label_string(description, path, f"the description of {label!r}"))
                for label, description in content.items()
            ]
        else:
            raise DataError(f"{path}: expected a JSON object {{label: description}} or a list of labels")
    else:
        pairs = []
        for line in split_lines(read_text(path)):
            if is_blank(line):  # no comment syntax: '#sports' is a label (hashtags are), not a line to drop
                continue
            label, _, description = line.partition("\t")
            pairs.append((label.strip(), description.strip() or label.strip()))
    labels = check_labels([label for label, _ in pairs], what=f"labels in {path}", allow_single=allow_single)
    return dict(zip(labels, (description for _, description in pairs)))


def _label_string(value: Any, path: Path, what: str) -> str:
    """A label or description from JSON: a string (or a number, written as one); nothing else is guessed at."""
    if isinstance(value, str):
        return value
    if (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and (isinstance(value, int) or math.isfinite(value))
    ):
        return str(value)
    raise DataError(f"{path}: {what} is {json.dumps(value)[:40]}, expected a string")  # NaN was the description "nan"
