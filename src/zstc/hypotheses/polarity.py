"""Default descriptions of sentiment polarity labels: how ``positive``, ``negative`` and ``neutral`` are said.

A sentence-embedding model compares a text with each label's description. Through a template the polarity
names read as ``This is positive.`` and ``This is negative.``, two sentences that all-MiniLM-L6-v2 embeds
almost alike and that are about as close to a glowing review as to a scathing one ("Terrible quality. The
handle snapped off" is nearer ``This is positive.``): the model was trained to match what texts are
*about*, and both sentences are about an evaluation. Opinions themselves ("It was terrible.", "I love
it.") it places well. So a label set made only of polarity names gets, by default, each label described
by five short opinions (a verbalizer, as in pattern-exploiting training, used the other way round), scored
as Yin et al.'s hypothesis ensembles are: one score per phrase, averaged
(:class:`zstc.hypotheses.variants.HypothesisSet`).

Only label sets whose every name is a polarity name (case and surrounding blanks ignored) are described
this way, and only when the labels come by name through the default template: a ``--template``, a
``--labels-file`` with descriptions or ``--template "{}"`` are used as given. The phrases were chosen on the
local sentiment sets (imdb, rottentomatoes, financialphrasebank), never on the review files of the tests;
``scripts/measure_label_defaults.py`` re-measures them and docs/classify.md has the numbers.
"""

from __future__ import annotations

from collections.abc import Sequence

POLARITY_PHRASES: dict[str, tuple[str, ...]] = {
    "positive": ("It was great.", "I love it.", "Excellent.", "Very good.", "Highly recommended."),
    "negative": ("It was terrible.", "I hate it.", "Awful.", "Very bad.", "A waste of money."),
    "neutral": ("It was okay.", "Nothing special.", "Average.", "It is fine.", "It is what it is."),
}
"""Five opinions per polarity, phrased without negation (embeddings read "not good" close to "good")."""


def is_polarity_label_set(labels: Sequence[str]) -> bool:
    """Whether every label is a polarity name (``Positive``, `` negative``, ...), so the phrases describe them."""
    return bool(labels) and all(label.strip().lower() in POLARITY_PHRASES for label in labels)


def polarity_variants(labels: Sequence[str]) -> dict[str, list[str]]:
    """One variant per phrase position: variant ``i`` describes every label by its ``i``-th phrase."""
    phrases = [POLARITY_PHRASES[label.strip().lower()] for label in labels]
    return {f"opinion {i + 1}": [own[i] for own in phrases] for i in range(len(phrases[0]))}
