"""``zstc classify --engine ray``: a pool of Ray scorer actors labels the inputs' chunks, and this process reads
the inputs and writes one Parquet file per input into the output folder.

* Reading: this process reads each input with zstc's own reader (:func:`zstc.io.read_records`), as ``zstc
  classify`` reads it, and cuts it into the chunks of ``chunk_size`` rows ``zstc classify`` cuts. Every input
  column is kept (Ray Data's ``include_paths`` wrote its own ``path`` column over the user's), a malformed row or
  a missing text column is the same one-line error, and each chunk passes the checks that need no model
  (:meth:`zstc.output.ChunkLabeller.checked`) before an actor gets it. This process hashes every input anyway (its
  sha256 identifies the run), so reading it here costs one more pass, not a new bottleneck: scoring is the work.
* Scoring: ``--actors`` Ray actors, each reserving ``num_cpus``/``num_gpus`` and loading the model once, label
  whole chunks with the same :class:`zstc.output.ChunkLabeller` that ``zstc classify`` uses; rows travel back
  pickled, as Python values (dates, decimals and bytes of a Parquet input included). A few chunks per actor are in
  flight at a time, so memory is bounded by ``chunk_size``, not by the input.
* Writing: chunks are written in input order through :class:`zstc.output.ResumableWriter` into
  ``OUT_DIR/<input stem>.parquet``. Its forward passes are those of ``zstc classify --chunk-size N`` (the same
  texts together), so a file's bytes are those ``zstc classify --out <stem>.parquet`` writes, in bf16 too.
  ``OUT_DIR/_zstc_classify.json`` records each finished input (its sha256, the settings and the sha256 of the
  output written for it): run again after an interrupt, finished inputs whose outputs are still theirs are
  skipped, and a half-written one continues after its last complete chunk (its finished rows are not scored again).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import itertools
import json
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from zstc import errors
from zstc.errors import DataError, OptionError, OutputError, ZstcError
from zstc.io import read_records, same_file
from zstc.output import ChunkLabeller, ResumableWriter, folder_lock
from zstc.runs.files import write_json
from zstc.runs.provenance import sha256_file
from zstc.scale import connect_ray, require_ray
from zstc.validation import check_options

INPUT_SUFFIXES = (".jsonl", ".ndjson", ".csv", ".parquet")
"""The files ``--engine ray`` reads (with zstc's own reader, as ``zstc classify`` reads them)."""
MANIFEST = "_zstc_classify.json"
Failure = tuple[str, str, tuple[str, ...]]
"""A user's error as an actor returns it: type name, message, the parameters it names (:func:`_rebuilt`). Returned,
not raised: Ray wraps what an actor raises, and not every error class pickles (DescriptionTooLongError)."""
IN_FLIGHT_PER_ACTOR = 2
"""Chunks handed to an actor before its oldest comes back: one scored while the next one travels."""
ACTOR_RESTARTS = 3
"""How often a scorer actor that dies (a node lost, a killed process) is restarted, its chunk scored again."""


def input_files(sources: str | list[str]) -> list[Path]:
    """The files named, and the .jsonl/.csv/.parquet files inside the folders named, in a stable order."""
    found: list[Path] = []
    for source in [sources] if isinstance(sources, str) else sources:
        path = Path(source)
        if path.is_dir():
            for entry in sorted(p for p in path.iterdir() if p.suffix.lower() in INPUT_SUFFIXES):
                if (
                    not entry.is_file()
                ):  # a Spark/pyarrow dataset folder "x.parquet/", a broken link: said, not a traceback
                    what = "a folder" if entry.is_dir() else "not a readable file (a broken link?)"
                    raise DataError(
                        f"{entry}: {what}, named like an input file; --engine ray reads files: name its "
                        f"files, or move it out of {path}"
                    )
                found.append(entry)
        elif path.is_file():
            if path.suffix.lower() not in INPUT_SUFFIXES:
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


class LabelChunks:
    """A scorer actor: built once (loads the model and checks the labels against it), then labels chunks.

    A user's error (labels the model reads alike, a model that cannot load) is returned, not raised: Ray wraps an
    exception of an actor's constructor in its own ActorDiedError, without the cause, and the driver is to say
    the same one line and exit status as ``zstc classify`` (:func:`_rebuilt`)."""

    def __init__(
        self,
        model: str,
        family: str | None,
        options: dict[str, Any],
        labeller: ChunkLabeller,
        revisions: dict[str, str] | None = None,
    ) -> None:
        from zstc.api import Classifier, check_labels_read_apart
        from zstc.models.loading import pin_revisions

        self.labeller = labeller
        self.failed: Failure | None = None
        try:
            # The driver's hub commits (:func:`zstc.models.loading.hub_revisions`): the ones the settings fingerprint names.
            pin_revisions(revisions or {})
            self.classifier = Classifier(model, family=family, **options)
            if labeller is not None:  # as classify checks them before it writes anything
                check_labels_read_apart(self.classifier.scorer, labeller.names, labeller.descriptions)
        except ZstcError as error:
            self.failed = _failure(error)

    def ready(self) -> Failure | list[str]:
        """The constructor's error (:data:`Failure`), or the classifier's notes (said once, before any row)."""
        return self.failed if self.failed is not None else list(self.classifier.notes)

    def label(
        self, records: list[tuple[str, dict[str, Any]]], adaptation: Any = None
    ) -> Failure | tuple[list[dict[str, Any]], list[str]]:
        """``(output rows, the scorer's notes)`` of one chunk, decided with ``adaptation`` (``--adapt``: its input's,
        :meth:`adaptation`), or a user's error (:data:`Failure`)."""
        try:
            notes: list[str] = []
            labeller = (
                self.labeller if adaptation is None else dataclasses.replace(self.labeller, adaptation=adaptation)
            )
            return labeller.rows(self.classifier, records, notes), notes
        except ZstcError as error:
            return _failure(error)

    def sample_scores(self, records: list[tuple[str, dict[str, Any]]], limit: int | None) -> Any:
        """``--adapt``: the raw scores of one chunk's texts (its first ``limit``), as ``zstc classify`` estimates
        from them (:meth:`zstc.output.ChunkLabeller.sample_scores`), or a user's error (:data:`Failure`)."""
        try:
            return self.labeller.sample_scores(self.classifier, records, limit)
        except ZstcError as error:
            return _failure(error)

    def adaptation(self, matrices: list[Any], method: str, where: str) -> Any:
        """``--adapt``: ``method``'s adaptation of one input, estimated from its chunks' :meth:`sample_scores` (in
        input order) at this model's scale and temperature, or a user's error (:data:`Failure`)."""
        try:
            return self.labeller.adaptation_of(self.classifier, matrices, method, where)
        except ZstcError as error:
            return _failure(error)


def classify_with_ray(sources: str | list[str], out_dir: Path, labeller: ChunkLabeller, **settings: Any) -> int:
    """Label every input into ``out_dir``; returns how many predictions the output folder holds. ``on_note`` hears
    what ``zstc classify`` says: the model's notes before any row; at the end ``notes`` (the descriptions') and the
    scorer's (texts truncated), merged over the chunks as ``zstc classify`` merges them. ``adapt`` (not ``none``):
    each input is decided as one corpus, as ``zstc classify --adapt`` decides it: its chunks are scored by the actors,
    the adaptation estimated from all of their scores (or the first ``adapt_sample`` texts), then every chunk is
    decided with it. A second run on the folder while one runs is refused at once, naming the live one (the folder is
    locked as soon as it exists)."""
    with folder_lock(Path(out_dir)) as folder_made:
        return _classify_with_ray(sources, out_dir, labeller, folder_made=folder_made, **settings)


def _classify_with_ray(
    sources: str | list[str],
    out_dir: Path,
    labeller: ChunkLabeller,
    *,
    folder_made: Callable[[], None],
    model: str,
    family: str | None,
    options: dict[str, Any],
    settings: str,
    chunk_size: int = 1000,
    address: str | None = None,
    actors: int = 1,
    cpus_per_actor: float = 1.0,
    gpus_per_actor: float = 0.0,
    on_note: Callable[[str], None] = lambda note: None,
    notes: Sequence[str] = (),
    adapt: str = "none",
    adapt_sample: int | None = None,
) -> int:
    from zstc.scorers.base import merge_batch_notes

    check_options(
        {"actors": actors, "cpus_per_actor": cpus_per_actor, "gpus_per_actor": gpus_per_actor, "chunk_size": chunk_size}
    )  # before Ray starts
    files = input_files(sources)
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise DataError(f"--out {out_dir}: --engine ray writes a folder of Parquet files, and this is a file")
    for path in files:  # --out the inputs' own folder: a Parquet input's output is its own name there
        if same_file(out_dir / _output_name(path), path):
            raise OutputError(
                f"--out {out_dir}: would overwrite the input {path} with its output {_output_name(path)}; "
                "choose another folder"
            )
    manifest_path = out_dir / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        manifest = {}
    # The device too, as the local engine's marker holds it: rows scored on GPU actors and rows scored on CPU actors
    # differ (in bf16 by whole decisions), so an input begun on the one is not finished or continued on the other.
    device = actor_device(options, gpus_per_actor)
    identities = {
        str(path): {
            "input_sha256": sha256_file(path),
            "settings": settings,
            "precision": options.get("precision"),
            "device": device,
        }
        for path in files
    }

    def finished(path: Path) -> bool:
        return _finished(manifest.get(str(path)), identities[str(path)], out_dir / _output_name(path))

    pending = [path for path in files if not finished(path)]
    if len(pending) < len(files):
        on_note(f"{len(files) - len(pending)} of {len(files)} inputs are finished already in {out_dir}")
    for (
        path
    ) in pending:  # the header (a repeated column would be silently dropped) and the first row, before Ray starts
        first = next(read_records(path, parquet_batch=1), None)  # a Parquet file converts that row alone
        if first is None:  # as classify says it (Ray wrote no output and said nothing)
            raise DataError(f"{path}: no texts")
        labeller.checked(
            [(f"{path}:{first[0]}", first[1])]
        )  # a misnamed --text-column or --keep-columns, as classify's
        labeller.kept(first[1])
    if pending:
        ray = require_ray()
        started_here = connect_ray(address)
        pool: list[Any] = []
        try:
            _check_resources(ray.cluster_resources(), actors, cpus_per_actor, gpus_per_actor)
            pool = _start_actors(ray, actors, cpus_per_actor, gpus_per_actor, model, family, options, labeller, on_note)
            out_dir.mkdir(parents=True, exist_ok=True)  # after every check: a refused run leaves no folder behind
            folder_made()
            scorer_notes: list[list[str]] = []
            adapting = (adapt, adapt_sample) if adapt != "none" else None
            for path, count in _label_files(
                ray, pool, pending, labeller, out_dir, identities, chunk_size, scorer_notes, on_note, adapting
            ):
                output = out_dir / _output_name(path)
                # Whatever entry named this output before is no longer its input's (an input of the same stem elsewhere).
                for key in [
                    key
                    for key, entry in manifest.items()
                    if isinstance(entry, dict) and entry.get("output") == output.name
                ]:
                    del manifest[key]
                manifest[str(path)] = {
                    **identities[str(path)],
                    "rows": count,
                    "output": output.name,
                    "output_sha256": sha256_file(output),
                }
                write_json(manifest_path, manifest)
            notes = [*notes, *merge_batch_notes(scorer_notes)]
        finally:
            if started_here:
                ray.shutdown()  # its actors with it (killed first, each chunk in flight was logged as a task to retry)
            else:
                for actor in pool:  # a cluster joined outlives this run: its actors must not
                    ray.kill(actor)
    for message in notes:
        on_note(message)
    return sum(int(manifest.get(str(path), {}).get("rows", 0)) for path in files)


def actor_device(options: dict[str, Any], gpus_per_actor: float) -> str:
    """The kind of device the scorer actors compute on, as the resume identity records it: the ``device`` option's
    type where one is given, else ``cuda`` for actors that reserve a GPU (``gpus_per_actor`` > 0) and ``cpu`` for the
    others (Ray hides the GPUs from an actor that reserves none). Known before any actor starts, so a finished input
    is skipped without starting Ray; unlike the local engine's it does not name the GPU model, which each actor's
    node decides."""
    device = options.get("device")
    if device not in (None, "auto"):
        return str(device).split(":")[0]  # cuda:1 names a slot, not the hardware
    return "cuda" if gpus_per_actor > 0 else "cpu"


def _output_name(path: Path) -> str:
    return f"{path.stem}.parquet"


def _finished(entry: dict[str, Any] | None, identity: dict[str, Any], output: Path) -> bool:
    """Whether ``output`` is the finished output of the input ``identity`` names: the manifest says so, and the file
    is still the one written for it (by its sha256; another input of the same stem, run into the same folder since,
    replaced it)."""
    if entry is None or not all(entry.get(k) == v for k, v in identity.items()) or not output.is_file():
        return False
    return entry.get("output") == output.name and entry.get("output_sha256") == sha256_file(output)


def _check_resources(cluster: dict[str, float], actors: int, cpus: float, gpus: float) -> None:
    """Refuse actors the cluster cannot place all at once: Ray would wait for the missing CPUs or GPUs forever, with
    no word (an actor's chunks never come back)."""
    for resource, per_actor, name in (("CPU", cpus, "cpus_per_actor"), ("GPU", gpus, "gpus_per_actor")):
        needed, available = actors * per_actor, float(cluster.get(resource, 0))
        if needed > available:
            raise OptionError(
                f"actors {actors} x {name} {per_actor:g} = {needed:g} {resource}s, and the Ray cluster has "
                f"{available:g}: lower actors or {name}",
                "actors",
                name,
            )


def _start_actors(
    ray: Any,
    actors: int,
    cpus: float,
    gpus: float,
    model: str,
    family: str | None,
    options: dict[str, Any],
    labeller: ChunkLabeller,
    on_note: Callable[[str], None],
) -> list[Any]:
    """The scorer actors, each with its model loaded; a model that cannot load is its one-line error here, before any
    output is opened."""
    from zstc.models.loading import hub_revisions

    actor_class = ray.remote(LabelChunks)
    pool = [
        actor_class.options(
            num_cpus=cpus, num_gpus=gpus, max_restarts=ACTOR_RESTARTS, max_task_retries=ACTOR_RESTARTS
        ).remote(model, family, options, labeller, hub_revisions())
        for _ in range(actors)
    ]
    answers = ray.get([actor.ready.remote() for actor in pool])
    for answer in answers:
        if isinstance(answer, tuple):
            raise _rebuilt(*answer)
    for message in answers[0]:
        on_note(message)
    return pool


def _chunks(path: Path, skip: int, chunk_size: int) -> Iterator[list[tuple[str, dict[str, Any]]]]:
    """``path``'s rows after the first ``skip`` (written by an interrupted run: read past, never scored again) as
    ``(where, record)`` chunks of ``chunk_size``, named as ``zstc classify`` names them."""
    rows = ((f"{path}:{line}", record) for line, record in read_records(path))
    for _ in itertools.islice(rows, skip):
        pass
    while chunk := list(itertools.islice(rows, chunk_size)):
        yield chunk


def _label_files(
    ray: Any,
    pool: Sequence[Any],
    files: list[Path],
    labeller: ChunkLabeller,
    out_dir: Path,
    identities: dict[str, dict[str, Any]],
    chunk_size: int,
    scorer_notes: list[list[str]],
    on_note: Callable[[str], None],
    adapting: tuple[str, int | None] | None = None,
) -> Iterator[tuple[Path, int]]:
    """Score ``files`` chunk by chunk on ``pool`` and write them in input order; yields ``(input, rows in its
    output)`` as each output is finished. A user's error in a chunk is raised after the chunks before it are
    written, as ``zstc classify`` writes them. ``adapting``: ``(method, sample)`` of ``--adapt``, each input's
    adaptation estimated (:func:`_estimate`) before its first chunk is labelled."""
    from ray.exceptions import RayActorError

    window: collections.deque[tuple[Path, ResumableWriter, Any, int]] = collections.deque()
    busy = [0] * len(pool)

    def settle_oldest() -> Iterator[tuple[Path, int]]:
        path, writer, ref, actor = window.popleft()
        if ref is None:  # the end of an input: its output goes into place
            writer.finish()
            yield path, writer.resumed_rows
            return
        busy[actor] -= 1
        try:
            answer = ray.get(ref)
        except RayActorError as error:  # restarted ACTOR_RESTARTS times already, and it died again
            raise ZstcError(
                f"a scorer actor died while labelling {path} (restarted {ACTOR_RESTARTS} times: "
                f"{type(error).__name__}); run again to resume"
            ) from None
        if isinstance(answer[0], str):
            raise _rebuilt(*answer)
        rows, notes = answer
        writer.write_chunk(rows)
        scorer_notes.append(notes)

    for path in files:
        writer = ResumableWriter(out_dir / _output_name(path), "parquet", identities[str(path)], on_note=on_note)
        adaptation = None
        if adapting is not None:  # the chunks before it are written: this input's estimate reads all of them again
            while window:
                yield from settle_oldest()
            adaptation = _estimate(ray, pool, path, labeller, chunk_size, *adapting)
            on_note(labeller.adaptation_note(adaptation))
        chunks = _chunks(path, writer.resumed_rows, chunk_size)
        while True:
            try:
                chunk = next(chunks, None)
                if chunk is None:
                    break
                # The checks that need no model, in order (a malformed row, a missing text column, a type that changes
                # mid-file): the chunks before a bad one are written first, as classify writes them. The chunks in
                # flight count as written for the types (``ahead``): a column's type is checked against all before it.
                labeller.checked(chunk, functools.partial(writer.check_chunk, ahead=True))
            except ZstcError:
                while window:  # an earlier chunk's error, if any, is the one said
                    yield from settle_oldest()
                raise
            while len(window) >= IN_FLIGHT_PER_ACTOR * len(pool):
                yield from settle_oldest()
            actor = busy.index(min(busy))
            busy[actor] += 1
            window.append((path, writer, pool[actor].label.remote(chunk, adaptation), actor))
        window.append((path, writer, None, -1))
    while window:
        yield from settle_oldest()


def _estimate(
    ray: Any, pool: Sequence[Any], path: Path, labeller: ChunkLabeller, chunk_size: int, method: str, sample: int | None
) -> Any:
    """``method``'s adaptation of the input ``path``: its chunks (all of them, or up to its first ``sample`` texts)
    scored on ``pool``, a few per actor at a time, their scores estimated from in input order by one actor, as
    ``zstc classify --adapt`` estimates from the same chunks."""
    pending: collections.deque[Any] = collections.deque()
    matrices: list[Any] = []

    def settle() -> None:
        answer = ray.get(pending.popleft())
        if isinstance(answer, tuple):
            raise _rebuilt(*answer)
        matrices.append(answer)

    seen = 0
    for index, chunk in enumerate(_chunks(path, 0, chunk_size)):
        if sample is not None and seen >= sample:
            break
        limit = None if sample is None else sample - seen
        seen += len([text for text in labeller.checked(chunk) if text is not None][:limit])
        while len(pending) >= IN_FLIGHT_PER_ACTOR * len(pool):
            settle()
        pending.append(pool[index % len(pool)].sample_scores.remote(chunk, limit))
    while pending:
        settle()
    answer = ray.get(pool[0].adaptation.remote(matrices, method, str(path)))
    if isinstance(answer, tuple):
        raise _rebuilt(*answer)
    return answer


def _failure(error: ZstcError) -> Failure:
    return type(error).__name__, str(error), tuple(error.parameters)


def _rebuilt(type_name: str, message: str, parameters: tuple[str, ...] = ()) -> ZstcError:
    """The :mod:`zstc.errors` class named ``type_name`` (so the exit status is the same as in ``zstc classify``),
    or the nearest base that takes a message alone (DescriptionTooLongError takes more: ModelError says the same),
    with the ``parameters`` its message names (so the CLI writes them as flags, as ``zstc classify`` does)."""
    kind = getattr(errors, type_name, ZstcError)
    classes = kind.__mro__ if isinstance(kind, type) and issubclass(kind, ZstcError) else (ZstcError,)
    rebuilt = ZstcError(message)
    for error_class in classes:
        if issubclass(error_class, ZstcError):
            try:
                rebuilt = error_class(message)
                break
            except TypeError:
                continue
    rebuilt.parameters = tuple(parameters)
    return rebuilt
