"""``zstc classify --engine ray``: Ray Data reads the inputs, a pool of scorer actors labels them, and this
process writes one Parquet file per input into the output folder.

* Reading: ``ray.data.read_json`` / ``read_csv`` / ``read_parquet`` (with each row's file path), in order.
  Each input's first row is read here first, as ``zstc classify`` reads it (a repeated CSV column, a file that
  is not what its name says: an error before Ray starts); when Ray's readers fail later in a file, the file
  is read here to name the row and the reason, as ``zstc classify`` would.
* Scoring: ``map_batches`` with a callable class on an actor pool (``ActorPoolStrategy``), each actor
  reserving ``num_cpus``/``num_gpus`` and loading the model once; batches of ``chunk_size`` rows are turned
  into output rows by the same :class:`zstc.output.ChunkLabeller` that ``zstc classify`` uses.
* Writing: rows stream back in input order and go through :class:`zstc.output.ResumableWriter`, chunk by
  chunk, into ``OUT_DIR/<input stem>.parquet``, so a file's bytes are those ``zstc classify --out
  <stem>.parquet`` writes. ``OUT_DIR/_zstc_classify.json`` records each finished input (its sha256 and the
  settings): run again after an interrupt, finished inputs are skipped and a half-written one continues
  after its last complete chunk.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import sys
from collections.abc import Callable, Generator, Iterator
from pathlib import Path
from typing import Any

from zstc import errors
from zstc.benchmark.provenance import sha256_file
from zstc.benchmark.store import write_json
from zstc.errors import DataError, ZstcError
from zstc.io import read_records
from zstc.output import ChunkLabeller, ResumableWriter
from zstc.scale import connect_ray, require_ray
from zstc.validation import check_options

READERS = {".jsonl": "json", ".ndjson": "json", ".csv": "csv", ".parquet": "parquet"}
MANIFEST = "_zstc_classify.json"
PATH_COLUMN = "__zstc_path"
ERROR_KEY = "__zstc_error"


def input_files(sources: str | list[str]) -> list[Path]:
    """The files named, and the .jsonl/.csv/.parquet files inside the folders named, in a stable order."""
    found: list[Path] = []
    for source in [sources] if isinstance(sources, str) else sources:
        path = Path(source)
        if path.is_dir():
            found += sorted(p for p in path.iterdir() if p.suffix.lower() in READERS)
        elif path.is_file():
            if path.suffix.lower() not in READERS:
                raise DataError(f"{path}: --engine ray reads .jsonl, .csv and .parquet files, not {path.suffix!r}")
            found.append(path)
        else:
            raise DataError(f"{path}: no such file or folder")
    if not found:
        raise DataError(f"{sources}: no .jsonl, .csv or .parquet files")
    stems = [p.stem for p in found]
    clash = next((s for s in stems if stems.count(s) > 1), None)
    if clash:
        raise DataError(f"two inputs are named {clash!r}; their outputs would collide in one folder")
    return found


class LabelBatches:
    """The ``map_batches`` callable class: built once per actor (loads the model), then called per batch."""

    def __init__(self, model: str, family: str | None, options: dict[str, Any], labeller: ChunkLabeller,
                 revisions: dict[str, str] | None = None) -> None:
        from zstc.api import Classifier
        from zstc.models.loading import pin_revisions

        # The driver's hub commits (:func:`zstc.models.loading.hub_revisions`): the ones the settings fingerprint names.
        pin_revisions(revisions or {})
        self.classifier = Classifier(model, family=family, **options)
        self.labeller = labeller

    def __call__(self, batch: Any) -> Any:
        import pyarrow as pa

        records = batch.to_pylist()
        paths = [record.pop(PATH_COLUMN) for record in records]
        try:
            rows = self.labeller.rows(self.classifier, [(path, record) for path, record in zip(paths, records)])
        except ZstcError as error:
            # Ray Data re-raises a failed batch in the driver as its own UserCodeException, without the cause (Ray
            # 2.60), so a user's error (an empty text, a missing column) travels back as a row, in order: the
            # rows before it are written, as after an interrupt, then the driver raises it (:func:`_row`).
            failed = {ERROR_KEY: {"type": type(error).__name__, "message": str(error)}}
            return pa.table({PATH_COLUMN: pa.array(paths[:1], pa.string()), "row": pa.array([json.dumps(failed)], pa.string())})
        # Rows travel back as JSON: their columns (nested scores, None for skipped texts) vary by batch.
        return pa.table({PATH_COLUMN: pa.array(paths, pa.string()), "row": pa.array([json.dumps(row) for row in rows], pa.string())})


def classify_with_ray(sources: str | list[str], out_dir: Path, labeller: ChunkLabeller, *, model: str, family: str | None,
                      options: dict[str, Any], settings: str, chunk_size: int = 1000, address: str | None = None,
                      actors: int = 1, cpus_per_actor: float = 1.0, gpus_per_actor: float = 0.0,
                      on_note: Callable[[str], None] = lambda note: None) -> int:
    """Label every input into ``out_dir``; returns how many predictions the output folder holds."""
    check_options({"actors": actors, "cpus_per_actor": cpus_per_actor, "gpus_per_actor": gpus_per_actor})  # before Ray starts
    files = input_files(sources)
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise DataError(f"--out {out_dir}: --engine ray writes a folder of Parquet files, and this is a file")
    manifest_path = out_dir / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        manifest = {}
    identities = {str(path): {"input_sha256": sha256_file(path), "settings": settings, "precision": options.get("precision")} for path in files}

    def finished(path: Path) -> bool:
        return _finished(manifest.get(str(path)), identities[str(path)], out_dir / f"{path.stem}.parquet")

    pending = [path for path in files if not finished(path)]
    if len(pending) < len(files):
        on_note(f"{len(files) - len(pending)} of {len(files)} inputs are finished already in {out_dir}")
    for path in pending:  # the header (a repeated column would be silently dropped) and the first row
        if next(read_records(path), None) is None:  # as classify says it (Ray wrote no output and said nothing)
            raise DataError(f"{path}: no texts")
    out_dir.mkdir(parents=True, exist_ok=True)  # after the checks: a refused run leaves no folder behind
    if pending:
        ray = require_ray()
        started_here = connect_ray(address)
        labelled = _labelled(ray, pending, labeller, model, family, options, chunk_size, actors, cpus_per_actor, gpus_per_actor)
        try:
            with _ray_failure_logs_silenced():
                for path, rows in labelled:
                    writer = ResumableWriter(out_dir / f"{path.stem}.parquet", "parquet", identities[str(path)], on_note=on_note)
                    count = _write(writer, rows, chunk_size)
                    manifest[str(path)] = {**identities[str(path)], "rows": count, "output": f"{path.stem}.parquet"}
                    write_json(manifest_path, manifest)
        except Exception as error:
            found = _user_error(error)
            if found is None or isinstance(found, DataError):  # a row's fault: name its line, as classify does
                found = _input_error([path for path in pending if not finished(path)], labeller) or found
            raise found or error
        finally:
            labelled.close()  # stops Ray's row iterator while Ray is up (left to the collector, it logs a traceback)
            if started_here:
                ray.shutdown()
    return sum(int(manifest.get(str(path), {}).get("rows", 0)) for path in files)


@contextlib.contextmanager
def _ray_failure_logs_silenced() -> Iterator[None]:
    """Ray Data's loggers of a failed pipeline are silent while it runs (their levels are restored after).

    Ray logs a failed read or batch as stack traces of its internals, then raises the same failure here; zstc
    turns it into one line naming the file and row (a user's error), or re-raises Ray's exception, whose text
    carries the worker's traceback. Ray's log files miss those records too: the exception is where they are.
    """
    loggers = [logging.getLogger(name) for name in ("ray.data.exceptions", "ray.data._internal.execution.streaming_executor_state")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels):
            logger.setLevel(level)


def _finished(entry: dict[str, Any] | None, identity: dict[str, Any], output: Path) -> bool:
    return entry is not None and all(entry.get(k) == v for k, v in identity.items()) and output.exists()


def _labelled(ray: Any, files: list[Path], labeller: ChunkLabeller, model: str, family: str | None, options: dict[str, Any],
              chunk_size: int, actors: int, cpus: float, gpus: float) -> Generator[tuple[Path, Iterator[dict[str, Any]]], None, None]:
    """``(input file, its output rows in order)`` for each file, streamed from one Ray Data pipeline."""
    import ray.data

    from zstc.models.loading import hub_revisions

    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True  # rows come back in input order, file after file
    context.enable_progress_bars = sys.stderr.isatty()
    by_path = {str(Path(p).resolve()): p for p in files}
    seen: set[Path] = set()
    # One pipeline per file format (Ray's union interleaves its inputs' blocks; one read keeps file order).
    for reader in dict.fromkeys(READERS[p.suffix.lower()] for p in files):
        paths = [str(p) for p in files if READERS[p.suffix.lower()] == reader]
        read = {"json": ray.data.read_json, "csv": ray.data.read_csv, "parquet": ray.data.read_parquet}[reader]
        extra = {"convert_options": _csv_as_text(paths)} if reader == "csv" else {}
        dataset = read(paths, include_paths=True, file_extensions=None, **extra).rename_columns({"path": PATH_COLUMN})
        labelled = dataset.map_batches(
            LabelBatches, fn_constructor_kwargs={"model": model, "family": family, "options": options, "labeller": labeller,
                                                 "revisions": hub_revisions()},
            batch_size=chunk_size, batch_format="pyarrow", compute=ray.data.ActorPoolStrategy(size=actors),
            num_cpus=cpus, num_gpus=gpus,
        )
        rows = iter(labelled.iter_rows())
        try:
            # Rows arrive in input order, so each file's rows are one run: groupby hands them over file by file.
            for path, group in itertools.groupby(rows, key=lambda item: item[PATH_COLUMN]):
                source = by_path[str(Path(path).resolve())]
                if source in seen:  # never write a file twice from rows that came back out of order
                    raise RuntimeError(f"Ray Data returned the rows of {source} out of order")
                seen.add(source)
                yield source, (_row(item["row"]) for item in group)
        finally:
            getattr(rows, "close", lambda: None)()


def _row(encoded: str) -> dict[str, Any]:
    """An output row sent back by :class:`LabelBatches`; the user's error it stands for is raised here."""
    row: dict[str, Any] = json.loads(encoded)
    failed = row.get(ERROR_KEY) if len(row) == 1 else None
    if failed is None:
        return row
    raise _rebuilt(failed["type"], failed["message"])


def _rebuilt(type_name: str, message: str) -> ZstcError:
    """The :mod:`zstc.errors` class named ``type_name`` (so the exit status is the same as in ``zstc classify``),
    or the nearest base that takes a message alone (DescriptionTooLongError takes more: ModelError says the same)."""
    kind = getattr(errors, type_name, ZstcError)
    classes = kind.__mro__ if isinstance(kind, type) and issubclass(kind, ZstcError) else (ZstcError,)
    for error_class in classes:
        if issubclass(error_class, ZstcError):
            try:
                return error_class(message)
            except TypeError:
                continue
    return ZstcError(message)


def _csv_as_text(paths: list[str]) -> Any:
    """Arrow's CSV options that keep every cell a string, as ``zstc classify`` (Python's csv) reads them:
    an ``id`` of ``007`` stays ``"007"``, an empty cell stays ``""``."""
    import csv

    import pyarrow as pa
    import pyarrow.csv as pacsv

    from zstc.io import utf8_lines

    names: dict[str, None] = {}
    for path in paths:
        # zstc.io's decoding: a byte-order mark is not part of the first name (Arrow drops it, so "\ufeffid" named
        # no column and an id of 007 became 7), and non-UTF-8 bytes are a DataError naming the offset.
        with open(path, "rb") as handle:
            names.update(dict.fromkeys(next(csv.reader(utf8_lines(handle, path)), [])))
    return pacsv.ConvertOptions(column_types={name: pa.string() for name in names}, strings_can_be_null=False,
                                quoted_strings_can_be_null=False)


def _write(writer: ResumableWriter, rows: Iterator[dict[str, Any]], chunk_size: int) -> int:
    """Write ``rows`` in chunks after the rows a previous run finished (re-scored, but never written twice)."""
    skip = writer.resumed_rows
    count = skip
    for _ in itertools.islice(rows, skip):
        pass
    while chunk := list(itertools.islice(rows, chunk_size)):
        writer.write_chunk(chunk)
        count += len(chunk)
    writer.finish()
    return count


def _user_error(error: BaseException) -> ZstcError | None:
    """The zstc error (an empty text, a missing column) behind Ray's wrapping of a failed actor call."""
    seen = 0
    while error is not None and seen < 10:
        if isinstance(error, ZstcError):
            return error
        error = getattr(error, "cause", None) or error.__cause__  # type: ignore[assignment]  # Ray's wrapper keeps the cause there
        seen += 1
    return None


def _input_error(files: list[Path], labeller: ChunkLabeller) -> DataError | None:
    """The first bad row of ``files`` as ``zstc classify`` reads and checks them (file, line and reason), or None.

    Asked only after the pipeline failed: Ray's readers report a malformed line (a repeated key, broken JSON, an
    unterminated quote) as a stack of their own internals that names neither the file nor the line, and an actor
    knows a row only by its file (an empty text, a missing column).
    """
    for path in files:
        try:
            for line, record in read_records(path):
                labeller.text(record, f"{path}:{line}")
                labeller.kept(record)
        except DataError as error:
            return error
    return None
