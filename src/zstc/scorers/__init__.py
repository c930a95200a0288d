"""Scorers, one module per model family, looked up by family name.

Adding a family is one new scorer module plus one ``register_family(Family(...))`` entry (see
:mod:`zstc.models.families`). This package imports no torch until a scorer is built.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

from zstc.models.families import Family, families, get_family, register_family

if TYPE_CHECKING:
    from zstc.models.registry import ModelSpec
    from zstc.scorers.base import Capabilities, PairScorer, Scorer, ScoreResult


def scorer_class(family: str) -> type:
    """The scorer class of a model family (its module is imported on first use)."""
    return get_family(family).scorer_class()


def make_scorer(model: str | ModelSpec, family: str | None = None, *, shortlist: Any = None, **options: Any) -> Scorer:
    """Build the scorer for ``model`` (hub id, paper name, local folder or a :class:`ModelSpec`).

    ``options`` are checked against the family's option specs (:attr:`Family.options`); options left at
    ``None`` take the family's defaults. An option the family does not take is an error, not silently
    ignored: ``pooling`` means nothing to an NLI model, and a user who passes it should hear so. Nothing is
    loaded here: building a scorer is cheap, and a bad option fails before any download.

    ``shortlist`` (``K`` or ``MODEL:K``) puts it behind a cascade: a bi-encoder shortlists each text's top K
    labels and only those are scored by ``model`` (see :mod:`zstc.scorers.cascade`).
    """
    from zstc.models.registry import ModelSpec, get_model_spec

    spec = model if isinstance(model, ModelSpec) else get_model_spec(model, family)
    record = get_family(spec.family)
    checked = record.check_options(options, spec.model_id)
    scorer: Scorer = record.scorer_class()(spec, **checked)
    if shortlist is None:
        return scorer
    from zstc.scorers.cascade import with_shortlist

    # The shortlister runs where the main model runs; its other settings are its own defaults (fp32).
    device = options.get("device")
    return with_shortlist(scorer, shortlist, **({"device": device} if device is not None else {}))


_LAZY = {
    "Capabilities": "zstc.scorers.base",
    "Scorer": "zstc.scorers.base",
    "PairScorer": "zstc.scorers.base",
    "ScoreResult": "zstc.scorers.base",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'zstc.scorers' has no attribute {name!r}")


__all__ = [
    "Capabilities",
    "Family",
    "PairScorer",
    "ScoreResult",
    "Scorer",
    "families",
    "get_family",
    "make_scorer",
    "register_family",
    "scorer_class",
]
