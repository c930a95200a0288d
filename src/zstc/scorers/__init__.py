"""Scorers, one module per model family, looked up by family name.

Adding a family is one new module plus one line in ``FAMILY_SCORERS``.
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

from zstc.errors import UnknownNameError
from zstc.models.registry import get_model_spec
from zstc.scorers.base import Scorer

FAMILY_SCORERS: dict[str, str] = {
    "embedding": "zstc.scorers.embedding:EmbeddingScorer",
    "encoder": "zstc.scorers.embedding:EncoderScorer",
    "nli": "zstc.scorers.nli:NliScorer",
    "reranker": "zstc.scorers.reranker:RerankerScorer",
    "yesno": "zstc.scorers.yesno:YesNoScorer",
    "llm": "zstc.scorers.llm:LLMScorer",
}
"""Family name -> ``module:class`` of its scorer, imported only when used."""


def scorer_class(family: str) -> type:
    try:
        target = FAMILY_SCORERS[family]
    except KeyError:
        raise UnknownNameError(f"no scorer for family {family!r}; available: {', '.join(FAMILY_SCORERS)}") from None
    module_name, _, class_name = target.partition(":")
    return getattr(importlib.import_module(module_name), class_name)


def make_scorer(model: str, family: str | None = None, *, shortlist: Any = None, **options: Any) -> Scorer:
    """Build the scorer for ``model``; ``options`` left at ``None`` take the scorer's defaults.

    ``shortlist`` (``K`` or ``MODEL:K``) puts it behind a cascade: a bi-encoder shortlists each text's top K
    labels and only those are scored by ``model`` (see :mod:`zstc.scorers.cascade`).

    An option the family does not take is an error, not silently ignored: ``--pooling`` means nothing to
    an NLI model, and a user who passes it should hear so.
    """
    spec = get_model_spec(model, family)
    cls = scorer_class(spec.family)
    accepted = inspect.signature(cls).parameters
    given = {name: value for name, value in options.items() if value is not None}
    unknown = [name for name in given if name not in accepted]
    if unknown:
        flags = ", ".join("--" + name.replace("_", "-") for name in unknown)
        raise UnknownNameError(f"{flags} does not apply to {spec.family} models ({spec.model_id})")
    scorer = cls(spec, **given)
    if shortlist is None:
        return scorer
    from zstc.scorers.cascade import with_shortlist

    # The shortlister runs where the main model runs; its other settings are its own defaults (fp32).
    return with_shortlist(scorer, shortlist, **({"device": given["device"]} if "device" in given else {}))


__all__ = ["FAMILY_SCORERS", "Scorer", "make_scorer", "scorer_class"]
