"""Load BTZSC tasks from files, directories and the Hugging Face hub.

Three layouts:

* paired (the hub's ``btzsc/btzsc``): rows ``text, hypothesis, labels`` with one row per (text, candidate),
  ``labels == 1`` for the gold candidate. Regrouped by text and checked group by group.
* grouped: one row per text with ``text`` and ``label`` (class index) or ``label_text`` (class name);
  the directory layout of ``shared/data/btzsc`` is one grouped file per dataset.
* a user's own labelled file (``load_user_task``), with label descriptions the user supplies.

Reading the files themselves (JSONL, CSV, Parquet) is :mod:`zstc.io`'s.

Every malformed input raises :class:`zstc.errors.DataError` naming the file, the row and the reason.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from zstc.benchmark.catalog import TaskSpec, data_directory, get_task_spec, local_task_file
from zstc.errors import DataError
from zstc.benchmark.tasks import HARNESS_DRAWS, NO_HYPOTHESIS, Task, apply_unlabelled_policy, sample_task
from zstc.io import GROUPED_SUFFIXES, TEXT_SUFFIXES, Record, read_records, text_of
from zstc.validation import check_labels, is_blank, is_whole_number

HUB_DATASET = "btzsc/btzsc"

# --- paired layout -------------------------------------------------------------------------------------


def group_paired_rows(
    rows: Iterable[tuple[int, Record]], *, name: str, source: str
) -> tuple[list[str], np.ndarray, list[str]]:
    """Regroup paired rows into ``(texts, gold, hypotheses)``.

    A group is a run of consecutive rows with the same text that does not repeat a hypothesis (so two
    equal texts in a row still form two groups). Every group must list the same hypotheses in the same
    order, with at most one positive row; a group with none gets ``NO_HYPOTHESIS``.
    """
    texts: list[str] = []
    gold: list[int] = []
    reference: list[str] | None = None
    group_hypotheses: list[str] = []
    group_positive: int | None = None
    group_start = 0

    def close_group() -> None:
        nonlocal reference
        if not group_hypotheses:
            return
        if reference is None:
            reference = list(group_hypotheses)
        elif group_hypotheses != reference:
            detail = _first_difference(reference, group_hypotheses)
            raise DataError(
                f"{source}: {name}: the group starting at row {group_start} has other hypotheses than the first group ({detail})"
            )
        gold.append(NO_HYPOTHESIS if group_positive is None else group_positive)

    for row_number, record in rows:
        where = f"{source}:{row_number}"
        text = text_of(record, where)
        hypothesis = record.get("hypothesis")
        if not isinstance(hypothesis, str) or is_blank(hypothesis):
            raise DataError(f"{where}: missing or empty 'hypothesis'")
        positive = _whole_number(record.get("labels"), f"{where}: 'labels' must be 0 or 1")
        if positive not in (0, 1):
            raise DataError(f"{where}: 'labels' must be 0 or 1, got {positive}")
        if not texts or text != texts[-1] or hypothesis in group_hypotheses:
            close_group()
            texts.append(text)
            group_hypotheses, group_positive, group_start = [], None, row_number
        if positive:
            if group_positive is not None:
                raise DataError(
                    f"{where}: {name}: a second positive row for the text of the group starting at row {group_start}"
                )
            group_positive = len(group_hypotheses)
        group_hypotheses.append(hypothesis)
    close_group()
    if not texts:
        raise DataError(f"{source}: no rows")
    return texts, np.asarray(gold, dtype=np.int64), reference or []


def _whole_number(value: object, problem: str) -> int:
    """``value`` as a whole number (a CSV cell's ``"2"``, JSON's ``2`` or ``2.0``, Parquet's ``numpy.int64``), else
    :class:`DataError` "``problem``, got VALUE": ``1.7`` and ``true`` are not class 1."""
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            pass
    elif is_whole_number(value):
        return int(value)  # type: ignore[call-overload]
    raise DataError(f"{problem}, got {value!r}")


def _first_difference(expected: Sequence[str], found: Sequence[str]) -> str:
    if len(expected) != len(found):
        return f"{len(found)} hypotheses instead of {len(expected)}"
    for i, (a, b) in enumerate(zip(expected, found)):
        if a != b:
            return f"hypothesis {i + 1} is {b!r}, expected {a!r}"
    return "same hypotheses"


def load_paired(rows: Iterable[tuple[int, Record]], spec: TaskSpec, *, source: str) -> Task:
    """A BTZSC dataset in the published paired layout (one row per text and hypothesis, grouped by text),
    checked against the catalog's hypotheses for ``spec``."""
    texts, gold, hypotheses = group_paired_rows(rows, name=spec.name, source=source)
    if tuple(hypotheses) != spec.hypotheses:
        raise DataError(
            f"{source}: {spec.name}: hypotheses differ from the catalog's ({_first_difference(spec.hypotheses, hypotheses)})"
        )
    return Task(spec.name, texts, gold, list(spec.labels), list(spec.hypotheses), family=spec.family, source=source)


# --- grouped layout ------------------------------------------------------------------------------------


def load_grouped(path: str | Path, spec: TaskSpec) -> Task:
    """A grouped file of one BTZSC dataset: ``text`` with ``label`` (index, -1 = no hypothesis) or ``label_text``."""
    index_of = {name: i for i, name in enumerate(spec.labels)}
    missing = set(spec.labels_without_hypothesis)
    texts: list[str] = []
    gold: list[int] = []
    for row_number, record in read_records(path):
        where = f"{path}:{row_number}"
        texts.append(text_of(record, where))
        if record.get("label") not in (None, ""):
            label = _whole_number(record["label"], f"{where}: 'label' must be a class index")
            if not NO_HYPOTHESIS <= label < len(spec.labels):
                raise DataError(f"{where}: label {label} out of range for {spec.name} ({len(spec.labels)} classes)")
        elif record.get("label_text") not in (None, ""):
            name = str(record["label_text"])
            if name in index_of:
                label = index_of[name]
            elif name in missing:
                label = NO_HYPOTHESIS
            else:
                raise DataError(f"{where}: unknown class {name!r} for {spec.name}")
        else:
            raise DataError(f"{where}: no 'label' or 'label_text' field")
        gold.append(label)
    if not texts:
        raise DataError(f"{path}: no rows")
    return Task(
        spec.name,
        texts,
        np.asarray(gold, dtype=np.int64),
        list(spec.labels),
        list(spec.hypotheses),
        family=spec.family,
        source=str(path),
    )


def _is_paired_file(path: Path) -> bool:
    for _, record in read_records(path):
        return "hypothesis" in record
    return False


def find_task_file(directory: Path, name: str) -> Path:
    """The file of task ``name`` in ``directory`` (``.jsonl``, ``.csv`` or ``.parquet``); a :class:`DataError`
    that lists the dataset files there when there is none."""
    found = local_task_file(directory, name)
    if found is not None:
        return found
    available = (
        sorted(p.stem for p in directory.iterdir() if p.suffix in GROUPED_SUFFIXES) if directory.is_dir() else []
    )
    raise DataError(
        f"{directory}: no file for task {name!r} (looked for {name}.jsonl/.csv/.parquet; found: {', '.join(available) or 'none'})"
    )


# --- BTZSC tasks from a directory or the hub -----------------------------------------------------------


def data_folder_files(*folders: str | Path) -> list[Path]:
    """The files of the data folders a command reads that are data (``hub``, and a path that is no folder, skipped), so
    that no output (--out, --figure, any file it writes) can be pointed at one: every file a loader could read (JSON
    Lines, CSV, TSV, Parquet, text; not only the datasets chosen now) and the folder's own description (``tasks.json``,
    ``manifest.json``, a README or LICENSE). Other ``.json`` files are not: a bench summary, a calibration or probe
    result written beside the data is what running the same command again replaces."""
    found: list[Path] = []
    for folder in folders:
        directory = Path(folder).expanduser()
        if str(folder) != "hub" and directory.is_dir():
            found.extend(path for path in directory.iterdir() if path.is_file() and _is_data(path))
    return found


_DATA_SUFFIXES = frozenset(suffix for suffix in TEXT_SUFFIXES if suffix != ".json")
_FOLDER_DESCRIPTIONS = frozenset({"tasks.json", "manifest.json"})


def _is_data(path: Path) -> bool:
    name = path.name.lower()
    return (
        path.suffix.lower() in _DATA_SUFFIXES or name in _FOLDER_DESCRIPTIONS or name.startswith(("readme", "license"))
    )


def load_btzsc_task(name: str, data: str | Path, *, unlabelled: str = "paper") -> tuple[Task, int]:
    """Load a BTZSC dataset from a directory (grouped or paired files) or ``"hub"``.

    Returns the task and how many of its texts the unlabelled policy affected.
    """
    return apply_unlabelled_policy(_load_btzsc_file(name, data, unlabelled=unlabelled), unlabelled)


def _load_btzsc_file(name: str, data: str | Path, *, unlabelled: str) -> Task:
    """Every text of a BTZSC dataset in file order, before the unlabelled policy (the harness's quirks applied
    under policy ``paper``)."""
    spec = get_task_spec(name)
    if str(data) == "hub":
        task = _load_from_hub(spec)
    else:
        path = find_task_file(data_directory(data), name)
        task = (
            load_paired(read_records(path), spec, source=str(path))
            if _is_paired_file(path)
            else load_grouped(path, spec)
        )
    return _apply_harness_sampling_quirks(task) if unlabelled == "paper" else task


def load_btzsc_sample(
    name: str,
    data: str | Path,
    *,
    max_samples: int | None,
    seed: int = 0,
    unlabelled: str = "paper",
    sampling: str = "stratified",
) -> tuple[Task, int, int]:
    """A BTZSC dataset as :func:`load_btzsc_task` loads it, then its deterministic sample of ``max_samples``
    texts by ``sampling`` (all of them when None). Returns (task, texts the unlabelled policy affected,
    texts before sampling).

    The paper's and the harness's draws are positions in the whole file, so they are drawn before the policy:
    under ``exclude`` they score the paper's texts less those without a hypothesis (banking77: 929 of 1000),
    not another draw from the renumbered rest."""
    if sampling in HARNESS_DRAWS:
        task = _load_btzsc_file(name, data, unlabelled=unlabelled)
        sampled, affected = apply_unlabelled_policy(sample_task(task, sampling, max_samples, seed), unlabelled)
        # The texts the policy keeps, as a stratified draw counts them: every one scored is no sample.
        kept = len(task) - (task.n_unlabelled if unlabelled == "exclude" else 0)
        return sampled, affected, kept
    task, affected = load_btzsc_task(name, data, unlabelled=unlabelled)
    return sample_task(task, sampling, max_samples, seed), affected, len(task)


def hub_datasets() -> Any:
    """The ``datasets`` package that reads the hub, or a :class:`DataError` saying how to install it."""
    try:
        import datasets
    except ImportError:
        raise DataError("loading from the hub needs the datasets package: pip install 'zstc[hub]'") from None
    return datasets


def _load_from_hub(spec: TaskSpec) -> Task:
    datasets = hub_datasets()
    try:
        rows = datasets.load_dataset(HUB_DATASET, spec.name, split="test")
    except Exception as error:  # network, auth and missing-config errors all land here
        raise DataError(
            f"cannot load {HUB_DATASET} config {spec.name!r} from the hub: {type(error).__name__}: {error}"
        ) from None
    # The hub's dataset can change under the same name: its content, digested as it is read, is its identity
    # (what a file's sha256 is for a folder of files), so a result from other rows is never taken for this one.
    digest = hashlib.sha256()

    def digested(records: Iterable[Record]) -> Iterator[Record]:
        for record in records:
            digest.update(
                json.dumps(record, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass")
                + b"\n"
            )
            yield record

    task = load_paired(enumerate(digested(rows), start=1), spec, source=f"hub:{HUB_DATASET}/{spec.name}")
    return replace(task, content_sha256=digest.hexdigest())


def _apply_harness_sampling_quirks(task: Task) -> Task:
    """The public harness keeps only the first two yahootopics texts of class "Business & Finance".

    Applied with the ``paper`` policy so numbers compare with the published ones; reported in the notes.
    """
    if task.name != "yahootopics" or "Business & Finance" not in task.label_names:
        return task
    cls = task.label_names.index("Business & Finance")
    members = np.flatnonzero(task.gold == cls)
    if len(members) <= 2:
        return task
    keep = np.setdiff1d(np.arange(len(task)), members[2:])
    return task.subset(
        keep, f"dropped {len(members) - 2} 'Business & Finance' texts as the public harness does (policy 'paper')"
    )


def load_user_task(path: str | Path, descriptions: Mapping[str, str] | None = None, *, name: str | None = None) -> Task:
    """A labelled file of the user's (``text`` and ``label_text`` or ``label``) as a task.

    ``descriptions`` maps each label to the hypothesis it is scored with; without it the labels are the
    sorted distinct gold labels, each described by its name.
    """
    path = Path(path)
    rows = [(row, record) for row, record in read_records(path)]
    texts = [text_of(record, f"{path}:{row}") for row, record in rows]
    raw_gold: list[str] = []
    for row, record in rows:
        value = record.get("label_text", record.get("label"))
        if value in (None, ""):
            raise DataError(f"{path}:{row}: no 'label_text' or 'label' field")
        raw_gold.append(str(value))
    if not texts:
        raise DataError(f"{path}: no rows")
    if descriptions is None:
        descriptions = {label: label for label in sorted(set(raw_gold))}
    labels = check_labels(list(descriptions))
    index_of = {label: i for i, label in enumerate(labels)}
    gold = np.asarray([index_of.get(label, NO_HYPOTHESIS) for label in raw_gold], dtype=np.int64)
    return Task(name or path.stem, texts, gold, labels, [descriptions[label] for label in labels], source=str(path))


# --- zstc data pull: the hub's datasets, downloaded once, checked, kept for offline runs -----------------------------

PULL_MANIFEST = "manifest.json"


def pull_dataset(name: str, folder: Path) -> dict[str, object]:
    """Download BTZSC dataset ``name`` from the hub (paired layout, regrouped and checked by :func:`load_paired`: every
    text has the catalog's hypotheses, in order), check its size against the catalog where known, and store it in
    ``folder`` as a grouped ``NAME.jsonl`` (every text, in the hub's order, before any policy or quirk). Returns its
    manifest entry (texts, paired rows, sha256 of the rows served and of the file written), which is also recorded
    in ``folder/manifest.json``; a dataset stored before is replaced only once the new one has passed every check."""
    from zstc.runs.provenance import sha256_file
    from zstc.io import atomic_write

    spec = get_task_spec(name)
    task = _load_from_hub(spec)
    if spec.texts is not None and len(task) != spec.texts:
        raise DataError(
            f"{task.source}: {len(task)} texts, but the published {name} test set has {spec.texts} "
            "(tasks.json); not stored"
        )
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.jsonl"
    with atomic_write(path) as handle:
        for text, gold in zip(task.texts, task.gold.tolist()):
            record: dict[str, object] = {"text": text, "label": gold}
            if gold != NO_HYPOTHESIS:
                record["label_text"] = spec.labels[gold]
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    entry: dict[str, object] = {
        "texts": len(task),
        "paired_rows": len(task) * len(spec.hypotheses),
        "unlabelled_texts": task.n_unlabelled,
        "source": task.source,
        "rows_sha256": task.content_sha256,
        "sha256": sha256_file(path),
    }
    manifest = read_pull_manifest(folder)
    manifest[name] = entry
    with atomic_write(folder / PULL_MANIFEST) as handle:
        json.dump(manifest, handle, indent=1, sort_keys=True)
        handle.write("\n")
    return entry


def read_pull_manifest(folder: Path) -> dict[str, dict[str, object]]:
    """What ``zstc data pull`` recorded in ``folder`` (empty before the first pull); a damaged manifest is a
    :class:`DataError` naming it."""
    path = folder / PULL_MANIFEST
    if not path.is_file():
        return {}
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise DataError(f"{path}: unreadable ({error}); remove it and pull again") from None
    if not isinstance(manifest, dict):
        raise DataError(f"{path}: expected a JSON object; remove it and pull again")
    return manifest


def pulled_intact(name: str, folder: Path) -> bool:
    """Whether ``folder`` holds dataset ``name`` as ``zstc data pull`` stored it (its sha256 as recorded)."""
    from zstc.runs.provenance import sha256_file

    entry = read_pull_manifest(folder).get(name)
    path = folder / f"{name}.jsonl"
    return isinstance(entry, dict) and path.is_file() and entry.get("sha256") == sha256_file(path)
