import numpy as np
import pytest

from zstc.benchmark.metrics import aggregate, aggregate_by_family, dataset_metrics


def test_macro_metrics_match_a_hand_computation():
    gold = np.array([0, 0, 1, 1, 2])
    pred = np.array([0, 1, 1, 1, 0])
    m = dataset_metrics(gold, pred)
    # class 0: P=1/2 R=1/2 F=1/2; class 1: P=2/3 R=1 F=0.8; class 2: P=0 R=0 F=0 (zero_division=0)
    assert m["accuracy"] == pytest.approx(3 / 5)
    assert m["macro_precision"] == pytest.approx((1 / 2 + 2 / 3 + 0) / 3)
    assert m["macro_recall"] == pytest.approx((1 / 2 + 1 + 0) / 3)
    assert m["macro_f1"] == pytest.approx((0.5 + 0.8 + 0) / 3)


def test_classes_absent_from_truth_and_predictions_do_not_count():
    # The harness passes no labels=: a 72-class task sampled down to 2 classes averages over those 2.
    m = dataset_metrics(np.array([0, 5]), np.array([0, 5]))
    assert m["macro_f1"] == 1.0


def test_overall_is_the_mean_over_datasets_not_over_families():
    by_dataset = {"a": {"macro_f1": 1.0}, "b": {"macro_f1": 0.0}, "c": {"macro_f1": 0.0}}
    for scores in by_dataset.values():
        scores.update(accuracy=0.0, macro_precision=0.0, macro_recall=0.0)
    overall = aggregate(by_dataset)
    assert overall["macro_f1"] == pytest.approx(1 / 3)
    assert overall["macro_f1_std"] == pytest.approx(np.std([1, 0, 0]))
    families = aggregate_by_family(by_dataset, {"a": "topic", "b": "sentiment", "c": "sentiment"})
    assert families["topic"]["macro_f1"] == 1.0 and families["sentiment"]["macro_f1"] == 0.0
