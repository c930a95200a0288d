"""Cascade scoring: a cheap bi-encoder shortlists each text's labels, the main scorer scores only those.

A cross-encoder, yes/no reranker or LLM costs one pass per (text, label) (or, for an LLM, a prompt that
grows with the labels), so its cost grows with the number of labels. A bi-encoder embeds each label once
(label embeddings are cached) and ranks all labels of a text with one dot product; the cascade hands the
main scorer only each text's top ``k`` of that ranking.

The result keeps the full ``(texts, labels)`` shape:

* a shortlisted label gets the main scorer's score for that (text, label), as the full run computes it
  (pair families score exactly the same token sequences; only batch composition, i.e. the order of
  floating-point sums, differs);
* a label outside the shortlist gets ``m - 1 - r / (L - k)``, where ``m`` is the lowest shortlisted score of
  that text, ``L`` the number of labels and ``r`` (0, 1, ...) its rank in the shortlister's order among
  the unlisted labels: always below every shortlisted label, finite (so JSON and metrics stay well
  defined), and ordered as the shortlister ranked them. Those values are placeholders, not probabilities;
  a multi-label threshold sees them as clearly below the row's lowest shortlisted score.
* For the LLM family the prompt lists only the ``k`` shortlisted options (in the labels' own order, with
  the symbols A, B, ...; with ``prompt_style="harness"`` sorted, as the harness sorts any list of labels), so
  its scores are a softmax over those ``k`` options: that is a different prompt from the full run's, and the
  scorer notes it.
* A text that either model cut to its token limit is among the result's ``truncated`` rows (one the shortlister cut
  was shortlisted on its beginning), and the shortlister's notes follow the main model's, marked as its.

``k >= L`` runs the main scorer alone on all labels: exactly the full run. Ties in the shortlister's scores
are broken by label position (the earlier label wins), so the shortlist is deterministic.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, cast

import numpy as np

from zstc.errors import OptionError
from zstc.scorers.base import (
    Capabilities,
    PairScorer,
    Scorer,
    ScoreResult,
    capabilities,
    indistinguishable_labels,
    rechecks_thresholds,
    score_with_notes,
)
from zstc.models.families import find_family
from zstc.scorers.recheck import call_cuts

DEFAULT_SHORTLISTER = "sentence-transformers/all-MiniLM-L6-v2"
"""The bi-encoder that shortlists when ``--shortlist K`` names no model (runs offline here)."""


def flattens_to_pairs(family: str | None) -> bool:
    """Whether a family's grid may be flattened into aligned pairs: its scorer scores arbitrary (text, label) pairs
    in one batched run (``score_pairs``), each pair exactly as a texts x labels run scores it (each pair truncated on
    its own), so the cascade's shortlisted pairs and the service's requests are scored across texts and calls (the
    family record's ``flattens_to_pairs``; the yes/no family's says why it is not one)."""
    record = find_family(family)
    return record is not None and record.flattens_to_pairs


def labels_in_one_prompt(family: str | None) -> bool:
    """Whether a family's prompt lists all of a text's labels (LLMs): under a shortlist it lists only the K kept, so a
    label's score is not the full run's; the cascade says so in its description and notes."""
    record = find_family(family)
    return record is not None and record.labels_in_one_prompt


@dataclass(frozen=True)
class ShortlistSpec:
    """Which bi-encoder shortlists and how many labels it keeps per text."""

    model: str
    k: int

    @property
    def canonical(self) -> str:
        """``MODEL:K`` with the model's full id: the form recorded in settings and result files."""
        return f"{self.model}:{self.k}"


def parse_shortlist(value: str | int | ShortlistSpec | None) -> ShortlistSpec | None:
    """``K``, ``MODEL:K`` (or a :class:`ShortlistSpec`) -> the spec with the model's registry id; None stays None.

    The model part is resolved through the registry, so ``8``, ``all-MiniLM-L6-v2:8`` and
    ``sentence-transformers/all-MiniLM-L6-v2:8`` are the same setting (and the same fingerprint).
    """
    from zstc.models.registry import get_model_spec

    if value is None or isinstance(value, ShortlistSpec):
        return value
    if isinstance(value, bool):
        raise OptionError(f"shortlist takes K or MODEL:K, got {value!r}", "shortlist")
    if isinstance(value, int):
        model, count = DEFAULT_SHORTLISTER, str(value)
    else:
        model, sep, count = str(value).strip().rpartition(":")
        model = model if sep else DEFAULT_SHORTLISTER
    try:
        k = int(count)
    except ValueError:
        raise OptionError(f"shortlist takes K or MODEL:K with K a whole number, got {value!r}", "shortlist") from None
    if k < 1:
        raise OptionError(f"shortlist K must be at least 1, got {k}", "shortlist")
    if not model:
        raise OptionError(f"shortlist {value!r} names no model before ':'", "shortlist")
    return ShortlistSpec(get_model_spec(model).model_id, k)


@dataclass(frozen=True)
class CascadeResult(ScoreResult):
    """A cascade call's scores and notes, with the facts of that call: returned, never kept on the scorer,
    so one cascade can serve several threads at once."""

    ranks: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))
    """Each text's labels in shortlist order (row ``i``: label indices, best first)."""
    pairs_scored: int = 0
    """(text, label) pairs the main model ran."""
    pairs_total: int = 0
    """(text, label) pairs the main model would have run without the cascade."""


class PairCall(NamedTuple):
    """One call of a cascade's pair run: its texts and labels, each row's labels in shortlist order, its multi-label
    cuts (one per label, or None) and the shortlister's result (None where it did not run: no more labels than K)."""

    texts: list[str]
    labels: list[str]
    ranks: np.ndarray
    thresholds: Sequence[float] | np.ndarray | None
    shortlisting: ScoreResult | None


def shortlist_ranks(scores: np.ndarray) -> np.ndarray:
    """Each row's label indices, best first; ties go to the earlier label (a stable sort)."""
    return np.argsort(-np.asarray(scores, dtype=np.float64), axis=1, kind="stable")


def fill_unlisted(main_scores: np.ndarray, ranks: np.ndarray, k: int) -> np.ndarray:
    """The full ``(texts, labels)`` matrix from the main scores of each row's top ``k`` (``main_scores[i, r]``
    belongs to label ``ranks[i, r]``), unlisted labels filled as the module docstring says."""
    n, n_labels = ranks.shape
    full = np.empty((n, n_labels), dtype=np.float32)
    rows = np.arange(n)[:, None]
    full[rows, ranks[:, :k]] = main_scores
    if k < n_labels:
        lowest = main_scores.min(axis=1, keepdims=True).astype(np.float64)
        steps = np.arange(n_labels - k, dtype=np.float64)[None, :] / (n_labels - k)
        full[rows, ranks[:, k:]] = (lowest - 1.0 - steps).astype(np.float32)
    return full


def scored_labels(scores: np.ndarray, k: int) -> np.ndarray:
    """Which labels of each row of a cascade's matrix the main model scored, as a boolean mask: the row's top
    ``k`` (unlisted labels' placeholders are below every shortlisted score); every label when ``k >= L``.

    Decisions and probabilities need it: a placeholder is a rank, not a score, and must never pass a
    multi-label threshold or take a share of a softmax."""
    scores = np.atleast_2d(np.asarray(scores))
    if k >= scores.shape[1]:
        return np.ones(scores.shape, dtype=bool)
    mask = np.zeros(scores.shape, dtype=bool)
    np.put_along_axis(mask, np.argsort(-scores, axis=1, kind="stable")[:, :k], True, axis=1)
    return mask


def scored_by(scorer: object, scores: np.ndarray) -> np.ndarray | None:
    """:func:`scored_labels` of ``scores`` when ``scorer`` is a cascade that left labels out, else ``None`` (its
    model scored every label)."""
    scores = np.atleast_2d(np.asarray(scores))
    if not isinstance(scorer, CascadeScorer) or scorer.k >= scores.shape[1]:
        return None
    return scored_labels(scores, scorer.k)


class CascadeScorer:
    """``main`` scores only each text's top ``k`` labels by ``shortlister``; same interface as any scorer.

    >>> from zstc.scorers import make_scorer
    >>> cascade = CascadeScorer(make_scorer("my-nli-model"), make_scorer("all-MiniLM-L6-v2"), 8)
    >>> cascade.score(texts, labels).shape == (len(texts), len(labels))
    True

    :meth:`score_with_notes` returns a :class:`CascadeResult`: the call's shortlist ranks and pair counts
    travel with its scores, and the cascade keeps nothing of a call (safe to share between threads).
    """

    def __init__(self, main: Scorer, shortlister: Scorer, k: int) -> None:
        if k < 1:
            raise OptionError(f"shortlist K must be at least 1, got {k}", "shortlist")
        self.main = main
        self.shortlister = shortlister
        self.k = int(k)

    # The cascade stands in for its main scorer by what it delegates here, explicitly: family, spec and device are the
    # main's, its description is the main's with a shortlist section (score type included); nothing else is forwarded.
    @property
    def family(self) -> str:
        """The main scorer's family: the cascade stands in for it."""
        return self.main.family

    @property
    def spec(self) -> Any:
        """The main scorer's model spec."""
        return self.main.spec

    @property
    def CAPABILITIES(self) -> Capabilities:  # the name every scorer declares its capabilities by
        """What the cascade offers, of its own: notes, requests batched (:meth:`score_requests`) and which labels its
        main scorer reads alike; multi-label cuts where the main scorer takes them (each text's shortlisted labels'
        cuts reach it, in the pair path's one run or in each shortlist group's call, :meth:`_score_groups`). No pair
        scoring (a pair outside a shortlist has no score), and no twin (its shortlists would be drawn again)."""
        return Capabilities(notes=True, request_batching=True, rechecks=rechecks_thresholds(self.main), read_apart=True)

    @property
    def device(self) -> Any:
        """Where the main scorer computes (the shortlister runs there too, :func:`with_shortlist`)."""
        return getattr(self.main, "device", None)  # a plugin family's scorer may name none

    @property
    def shortlist(self) -> ShortlistSpec:
        """The shortlist setting (shortlister model and K), canonical as results record it."""
        return ShortlistSpec(self.shortlister.spec.model_id, self.k)

    def describe(self) -> dict[str, Any]:
        """The main scorer's description with a ``shortlist`` section: the shortlister, K and how unlisted labels are ranked."""
        shortlister = self.shortlister.describe()
        facts = {
            "model": self.shortlister.spec.model_id,
            "k": self.k,
            "setting": self.shortlist.canonical,
            "shortlister": {
                key: shortlister.get(key)
                for key in ("family", "pooling", "precision", "dtype", "device")
                if key in shortlister
            },
            "unlisted_scores": "lowest shortlisted score of the text - 1 - (shortlister rank among unlisted) / (labels - K)",
            "ties": "earlier label first",
        }
        if labels_in_one_prompt(self.family):
            order = (
                "sorted order (prompt_style harness)"
                if getattr(self.main, "prompt_style", None) == "harness"
                else "label order"
            )
            facts["prompt"] = f"lists only the K shortlisted options, in {order} (differs from the full run's prompt)"
        return {**self.main.describe(), "shortlist": facts}

    def indistinguishable(self, labels: Sequence[str]) -> list[tuple[int, ...]]:
        """The main scorer's (:func:`~zstc.scorers.base.indistinguishable_labels`): its scores decide; the shortlister's
        ties only order the labels it leaves out."""
        return indistinguishable_labels(self.main, labels)

    # -- scoring --------------------------------------------------------------------------------------

    def score_with_notes(
        self,
        texts: Sequence[str],
        labels: Sequence[str],
        *,
        show_progress: bool = False,
        thresholds: Sequence[float] | np.ndarray | None = None,
        margins: Sequence[float] | np.ndarray | None = None,
    ) -> CascadeResult:
        """``thresholds`` (one per label, multi-label cuts) go to the main scorer's bf16 recheck of the shortlisted
        pairs, and ``margins`` (the embedding family's default rule: one per label, ``nan`` for none) to an embedding
        main scorer's: each text's best label is shortlisted, so the rule's "near the best" is the same on its K."""
        texts, labels = list(texts), list(labels)
        n, n_labels = len(texts), len(labels)
        if self.k >= n_labels or n == 0:
            # Nothing to leave out: exactly the main scorer's run (the shortlister is not even loaded).
            result = score_with_notes(
                self.main, texts, labels, show_progress=show_progress, thresholds=thresholds, margins=margins
            )
            ranks = shortlist_ranks(result.scores) if n else np.zeros((0, n_labels), dtype=np.int64)
            return CascadeResult(
                result.scores, list(result.notes), ranks, n * n_labels, n * n_labels, truncated=result.truncated
            )
        shortlisting = score_with_notes(self.shortlister, texts, labels)
        ranks = shortlist_ranks(shortlisting.scores)
        if self._pairs_path():  # cross-encoders: cuts only (the margin rule is the embedding family's)
            return self._score_pairs([PairCall(texts, labels, ranks, thresholds, shortlisting)], show_progress)[0]
        main_scores, notes, truncated = self._score_groups(texts, labels, ranks, show_progress, thresholds, margins)
        return self._result(main_scores, ranks, notes, truncated, shortlisting)

    def score_requests(
        self,
        requests: Sequence[tuple[Sequence[str], Sequence[str]]],
        thresholds: Sequence[Sequence[float] | None] | None = None,
        margins: Sequence[Sequence[float] | None] | None = None,
    ) -> list[CascadeResult]:
        """Several calls at once, each ``(texts, labels)`` with its own labels: a service's batch of requests;
        ``thresholds[i]`` and ``margins[i]``, when given, are call ``i``'s multi-label cuts and default-rule margins
        (see :meth:`score_with_notes`).

        Each request is shortlisted on its own labels; for the pair families (NLI, rerankers) the shortlisted
        pairs of all requests are scored in one batched run of the main scorer, so passes span requests, and
        a request with no more labels than ``k`` has all of its labels scored in that run. Other families
        score request by request. Each request gets what :meth:`score_with_notes` would give it (for pair
        families up to the float noise of other batch compositions); the notes of the shared run are on each.
        """
        calls = [(list(texts), list(labels)) for texts, labels in requests]
        cuts, near = call_cuts(thresholds, margins, len(calls))
        if not self._pairs_path():
            return [
                self.score_with_notes(texts, labels, thresholds=cut, margins=margin)
                for (texts, labels), cut, margin in zip(calls, cuts, near)
            ]
        shortlisted = [i for i, (texts, labels) in enumerate(calls) if self.k < len(labels) and texts]
        ranks = {
            i: np.tile(np.arange(len(labels), dtype=np.int64), (len(texts), 1))
            for i, (texts, labels) in enumerate(calls)
        }
        shortlists: list[ScoreResult]
        if capabilities(self.shortlister).request_batching:  # an embedding model: every call's texts encoded in one run
            shortlists = list(cast(Any, self.shortlister).score_requests([calls[i] for i in shortlisted]))
        else:
            shortlists = [score_with_notes(self.shortlister, *calls[i]) for i in shortlisted]
        ranks.update({i: shortlist_ranks(result.scores) for i, result in zip(shortlisted, shortlists)})
        shortlist_of = dict(zip(shortlisted, shortlists))
        return self._score_pairs(
            [
                PairCall(texts, labels, ranks[i], cuts[i], shortlist_of.get(i))
                for i, (texts, labels) in enumerate(calls)
            ],
            show_progress=False,
        )

    def score(self, texts: Sequence[str], labels: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        """The (texts x labels) matrix: the main model's scores for each text's shortlist, placeholders below them."""
        return self.score_with_notes(texts, labels, show_progress=show_progress).scores

    def _pairs_path(self) -> bool:
        return flattens_to_pairs(self.family) and isinstance(self.main, PairScorer)

    def _result(
        self,
        main_scores: np.ndarray,
        ranks: np.ndarray,
        notes: list[str],
        truncated: Iterable[int],
        shortlisting: ScoreResult | None,
    ) -> CascadeResult:
        """A call's result from the main model's scores of each row's shortlist, its notes and the rows it cut to its token
        limit, and the shortlister's result (None where it did not run). A row either model cut was not read whole: the
        result's :attr:`~zstc.scorers.base.ScoreResult.truncated` holds both's, and the shortlister's notes (a text it
        cut was shortlisted on its beginning) follow the main model's, marked as its."""
        n, n_labels = ranks.shape
        kept = min(self.k, n_labels)
        full = fill_unlisted(main_scores, ranks, kept)
        if shortlisting is not None:
            notes = [*notes, *(f"{note} (shortlister {self.shortlister.spec.model_id})" for note in shortlisting.notes)]
            truncated = {*truncated, *shortlisting.truncated}
        rows = tuple(sorted(set(truncated)))
        if kept == n_labels:  # every label scored: ranked in the main model's own order, as the full run is
            return CascadeResult(full, notes, shortlist_ranks(full), n * n_labels, n * n_labels, truncated=rows)
        notes = [
            f"{n * kept} of {n * n_labels} (text, label) pairs scored by the main model "
            f"(the rest ranked below them by the {self.shortlist.canonical} shortlist)",
            *notes,
        ]
        if labels_in_one_prompt(self.family):
            notes.append(
                f"LLM prompts list only each text's {self.k} shortlisted options (a different prompt from the full run's)"
            )
        return CascadeResult(full, notes, ranks, n * kept, n * n_labels, truncated=rows)

    def _score_pairs(self, calls: list[PairCall], show_progress: bool) -> list[CascadeResult]:
        """The shortlisted pairs of every call in one batched run of the pair scorer (batches span texts and calls);
        each text's pairs compete as one decision, or are decided by their label's cut where the call gives
        thresholds (for bf16's recheck)."""
        from zstc.scorers.recheck import label_cuts, pair_cuts

        spec = self.main.spec
        firsts: list[str] = []
        seconds: list[str] = []
        cuts: list[np.ndarray | None] = []
        shapes: list[tuple[int, int]] = []
        for texts, labels, ranks, thresholds, _ in calls:
            kept = min(self.k, len(labels))
            documents = [spec.format_document(label) for label in labels]
            firsts += [spec.format_query(text) for text in texts for _ in range(kept)]
            columns = ranks[:, :kept].ravel()
            seconds += [documents[j] for j in columns]
            per_label = label_cuts(thresholds, len(labels))
            cuts.append(None if per_label is None else per_label[columns])
            shapes.append((len(texts), kept))
        groups = np.repeat(np.arange(sum(n for n, _ in shapes)), [kept for n, kept in shapes for _ in range(n)])
        multi_label = pair_cuts(cuts, [n * kept for n, kept in shapes])
        scored = cast(PairScorer, self.main).score_pairs_with_notes(
            firsts,
            seconds,
            groups=groups,
            show_progress=show_progress,
            **({"cuts": multi_label} if multi_label is not None else {}),
        )
        scores, notes = np.asarray(scored.scores, dtype=np.float32), list(scored.notes)
        results, start = [], 0
        for call, (n, kept) in zip(calls, shapes):
            # The pairs the main model cut, by their text's row in the call (pair start + row * kept + rank).
            rows = {(pair - start) // kept for pair in scored.truncated if start <= pair < start + n * kept}
            results.append(
                self._result(
                    scores[start : start + n * kept].reshape(n, kept), call.ranks, notes, rows, call.shortlisting
                )
            )
            start += n * kept
        return results

    def _score_groups(
        self,
        texts: list[str],
        labels: list[str],
        ranks: np.ndarray,
        show_progress: bool,
        thresholds: Sequence[float] | np.ndarray | None = None,
        margins: Sequence[float] | np.ndarray | None = None,
    ) -> tuple[np.ndarray, list[str], set[int]]:
        """Texts that share a shortlist are scored in one call on just those labels, in their own order, with those
        labels' multi-label cuts and margins where given (for the main scorer's bf16 recheck near them). Returns each
        row's main scores (in its shortlist's order), the calls' notes and the rows their model cut to its token limit."""
        from tqdm.auto import tqdm

        groups: dict[tuple[int, ...], list[int]] = {}
        for i, row in enumerate(ranks[:, : self.k]):
            groups.setdefault(tuple(sorted(row.tolist())), []).append(i)
        main_scores = np.empty((len(texts), self.k), dtype=np.float32)
        per_call: list[list[str]] = []
        truncated: set[int] = set()
        for shortlist, members in tqdm(groups.items(), desc="shortlists", disable=not show_progress, leave=False):
            sub_result = score_with_notes(
                self.main,
                [texts[i] for i in members],
                [labels[j] for j in shortlist],
                thresholds=None if thresholds is None else [thresholds[j] for j in shortlist],
                margins=None if margins is None else [margins[j] for j in shortlist],
            )
            sub = sub_result.scores
            column = {label: c for c, label in enumerate(shortlist)}
            for row, i in enumerate(members):
                main_scores[i] = sub[row, [column[j] for j in ranks[i, : self.k].tolist()]]
            per_call.append(list(sub_result.notes))
            truncated.update(members[row] for row in sub_result.truncated)  # the call's rows are its members, in order
        return main_scores, _merge_notes(per_call), truncated


def _merge_notes(per_call: list[list[str]]) -> list[str]:
    from zstc.scorers.base import merge_batch_notes  # "N of M" counts are summed

    return merge_batch_notes(per_call)


def with_shortlist(main: Scorer, shortlist: str | int | ShortlistSpec | None, **shortlister_options: Any) -> Scorer:
    """``main`` behind a :class:`CascadeScorer` for ``shortlist`` (``K`` or ``MODEL:K``); ``main`` itself for None."""
    from zstc.scorers import make_scorer

    spec = parse_shortlist(shortlist)
    if spec is None:
        return main
    # The cascade stands in for its main scorer (family and spec are the main's, read through properties).
    return cast(Scorer, CascadeScorer(main, make_scorer(spec.model, **shortlister_options), spec.k))
