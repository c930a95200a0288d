"""How alike the BTZSC datasets' texts are (PROTOCOL.md section 6): the weighted Jaccard similarity of token
distributions, for every pair of datasets.

Each dataset becomes the relative frequency of every token over all its texts (a distribution, so a dataset's
size does not count, only what its texts say); two distributions ``p`` and ``q`` have the weighted Jaccard
similarity ``sum_t min(p_t, q_t) / sum_t max(p_t, q_t)``: 1 for the same distribution, 0 for no token in
common. The paper does not say how it tokenized; here a token is a maximal run of Unicode word characters
(``\\w+``), lower-cased, which no model's vocabulary biases. Nothing here touches a model.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from zstc.errors import DataError

TOKEN = re.compile(r"\w+")
"""A token: a maximal run of word characters (letters, digits, underscore, in any script)."""


def tokens(text: str) -> list[str]:
    """The tokens of ``text``, lower-cased (``casefold``), in order."""
    return TOKEN.findall(text.casefold())


def token_counts(texts: Iterable[str]) -> Counter[str]:
    """How often each token occurs over all of ``texts``."""
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update(tokens(text))
    return counts


def weighted_jaccard(p: Mapping[str, float], q: Mapping[str, float]) -> float:
    """``sum min(p_t, q_t) / sum max(p_t, q_t)`` over every token of either: the weighted Jaccard similarity of
    two distributions (normalise counts first: raw counts would weigh the larger dataset more). 0 when both
    are empty."""
    shared = sum(min(weight, q[token]) for token, weight in p.items() if token in q)
    union = sum(p.values()) + sum(q.values()) - shared  # max(a, b) = a + b - min(a, b)
    return shared / union if union > 0 else 0.0


@dataclass(frozen=True)
class DatasetSimilarity:
    """The weighted Jaccard similarity of every pair of datasets, and what it was computed from."""

    datasets: list[str]
    matrix: np.ndarray
    """Square, symmetric, ones on the diagonal; ``matrix[i, j]`` compares ``datasets[i]`` and ``datasets[j]``."""
    texts: dict[str, int]
    """Texts read per dataset."""
    vocabulary: dict[str, int]
    """Distinct tokens per dataset."""

    def most_similar(self, dataset: str) -> tuple[str, float]:
        """The other dataset most like ``dataset``, and their similarity (the first in order on a tie)."""
        i = self.datasets.index(dataset)
        others = [j for j in range(len(self.datasets)) if j != i]
        best = max(others, key=lambda j: (self.matrix[i, j], -j))
        return self.datasets[best], float(self.matrix[i, best])

    def pairs(self) -> list[tuple[str, str, float]]:
        """Every unordered pair once, most similar first (ties in dataset order)."""
        n = len(self.datasets)
        found = [
            (self.datasets[i], self.datasets[j], float(self.matrix[i, j])) for i in range(n) for j in range(i + 1, n)
        ]
        return sorted(found, key=lambda pair: -pair[2])


def check_dataset_count(count: int) -> None:
    """Refuse (:class:`DataError`) fewer than two datasets: there is no pair to compare."""
    if count < 2:
        raise DataError(f"dataset similarity compares datasets: give at least two (got {count})")


def dataset_similarity(texts_by_dataset: Mapping[str, Sequence[str]]) -> DatasetSimilarity:
    """The weighted Jaccard similarity of the token distributions of every pair of datasets, in the given order.

    Raises :class:`DataError` for fewer than two datasets or a dataset without a single token."""
    check_dataset_count(len(texts_by_dataset))
    distributions: dict[str, dict[str, float]] = {}
    for name, texts in texts_by_dataset.items():
        counts = token_counts(texts)
        total = sum(counts.values())
        if total == 0:
            raise DataError(f"{name}: its {len(texts)} texts hold no word at all; nothing to compare")
        distributions[name] = {token: count / total for token, count in counts.items()}
    names = list(distributions)
    matrix = np.eye(len(names))
    for i, first in enumerate(names):
        for j in range(i + 1, len(names)):
            matrix[i, j] = matrix[j, i] = weighted_jaccard(distributions[first], distributions[names[j]])
    return DatasetSimilarity(
        names,
        matrix,
        {name: len(texts) for name, texts in texts_by_dataset.items()},
        {name: len(distribution) for name, distribution in distributions.items()},
    )
