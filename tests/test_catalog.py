from zstc.benchmark.catalog import catalog, families, get_task_spec, resolve_task_names
from zstc.errors import UnknownNameError

import pytest

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def test_catalog_has_the_22_datasets_in_four_families():
    assert len(catalog()) == 22
    sizes = {family: len(names) for family, names in families().items()}
    assert sizes == {"sentiment": 6, "emotion": 2, "intent": 3, "topic": 11}


def test_class_order_is_python_sorted_byte_order():
    for spec in catalog().values():
        all_classes = sorted([*spec.labels, *spec.labels_without_hypothesis])
        assert list(spec.labels) == [c for c in all_classes if c not in spec.labels_without_hypothesis], spec.name
    assert get_task_spec("banking77").labels[0] == "Refund_not_showing_up"  # upper case sorts first


def test_quirks_of_the_published_data_are_kept():
    banking = get_task_spec("banking77")
    assert len(banking.hypotheses) == 72 and len(banking.labels_without_hypothesis) == 5
    assert get_task_spec("massive").labels_without_hypothesis == ("general_quirky",)
    every_hypothesis = " ".join(h for spec in catalog().values() for h in spec.hypotheses)
    # Typos are part of the benchmark: fixing them would change the numbers.
    assert "utteranceis" in every_hypothesis and "wheather" in every_hypothesis


def test_resolve_task_names_expands_families_and_rejects_unknown_names():
    assert resolve_task_names("intent") == ["banking77", "biasframes_intent", "massive"]
    assert resolve_task_names("agnews,intent,agnews")[0] == "agnews"
    assert len(resolve_task_names(None)) == 22
    with pytest.raises(UnknownNameError, match="unknown task 'agnewz'"):
        resolve_task_names("agnewz")


def test_tasks_counts_the_texts_bench_loads_from_a_csv_with_blank_lines(zstc_cli, tmp_path):
    """`zstc tasks` counted a CSV's blank lines as texts (4 here) where bench's reader skips them (2 texts)."""
    from zstc.benchmark.data import load_btzsc_task

    (tmp_path / "imdb.csv").write_text("text,label\ngreat film,1\n\ndull film,0\n\n", encoding="utf-8")
    loaded, _ = load_btzsc_task("imdb", tmp_path, unlabelled="exclude")
    code, stdout, err = zstc_cli("tasks", "--data", str(tmp_path), "--family", "sentiment")
    row = next(line for line in stdout.splitlines() if "imdb.csv" in line)
    assert code == 0 and len(loaded) == 2 and row.split("│")[6].strip() == "2", stdout + err


@pytest.mark.parametrize(
    "name, content",
    [
        ("imdb.parquet", b"not a parquet file"),
        ("agnews.csv", b"text,label\n\xff\xfe,1\n"),  # not UTF-8
    ],
)
def test_tasks_with_a_damaged_file_is_a_one_line_error(zstc_cli, tmp_path, name, content):
    """A damaged dataset file made `zstc tasks` end in a pyarrow or UnicodeDecodeError traceback."""
    (tmp_path / name).write_bytes(content)
    code, _, err = zstc_cli("tasks", "--data", str(tmp_path))
    assert code != 0 and err.startswith("error: ") and name in err and "Traceback" not in err, err


def test_sweep_finds_the_datasets_of_a_data_folder(zstc_cli, tmp_path, btzsc_dir):
    """sweep resolved --tasks without --data: `--tasks available` was refused as if --data were the hub, and the
    default ('all') failed on the first of the 22 datasets missing from a folder. As in bench, both now mean the
    datasets found in the folder."""
    data = tmp_path / "data"
    data.mkdir()
    lines = (btzsc_dir / "rottentomatoes.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    (data / "rottentomatoes.jsonl").write_text("".join(lines[:4] + lines[-4:]), encoding="utf-8")
    for tasks in ([], ["--tasks", "available"]):
        code, _, err = zstc_cli("sweep", "--models", MINILM, "--data", str(data), *tasks, "--out", str(tmp_path / "s"))
        assert code == 0 and "1 units" in err and "over 1 datasets" in err, err


PROTOCOL_FAMILIES = {  # PROTOCOL.md s.1, verbatim and in its order
    "sentiment": ["amazonpolarity", "imdb", "appreviews", "yelpreviews", "rottentomatoes", "financialphrasebank"],
    "emotion": ["emotiondair", "empathetic"],
    "intent": ["banking77", "biasframes_intent", "massive"],
    "topic": [
        "agnews",
        "yahootopics",
        "trueteacher",
        "manifesto",
        "capsotu",
        "biasframes_offensive",
        "biasframes_sex",
        "wikitoxic_toxicaggregated",
        "wikitoxic_obscene",
        "wikitoxic_threat",
        "wikitoxic_insult",
    ],
}


def test_datasets_families_and_order_are_the_protocols():
    assert list(families().items()) == list(PROTOCOL_FAMILIES.items())  # dict equality would ignore the order
    assert list(catalog()) == [name for names in PROTOCOL_FAMILIES.values() for name in names]
    assert resolve_task_names("topic") == PROTOCOL_FAMILIES["topic"]
    # massive has 59 hypotheses: general_quirky has none (banking77's 72 of 77 are checked above).
    assert len(get_task_spec("massive").hypotheses) == 59


def test_packaged_definitions_are_the_shared_tasks_json(shared_data):
    """Every dataset's family, domain, class names (class order), hypotheses (byte for byte, typos included) and
    classes without a hypothesis are those of data/btzsc/tasks.json, in its order."""
    import json

    published = json.loads((shared_data / "btzsc" / "tasks.json").read_text(encoding="utf-8"))
    assert list(catalog()) == list(published)
    for name, entry in published.items():
        spec = catalog()[name]
        assert (spec.family, spec.domain) == (entry["family"], entry["domain"]), name
        assert list(spec.labels) == entry["labels"], name
        assert list(spec.hypotheses) == entry["hypotheses"], name
        assert list(spec.labels_without_hypothesis) == entry.get("labels_without_hypothesis", []), name
