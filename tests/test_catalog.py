from zstc.benchmark.catalog import catalog, families, get_task_spec, resolve_task_names
from zstc.errors import UnknownNameError

import pytest


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
