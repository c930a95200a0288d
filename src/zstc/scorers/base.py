"""The scorer interface: texts x label descriptions -> score matrix (higher = more likely).

A scorer is the only code that touches a model. Constructors check and store options and do no work; the
model is loaded on first use, once, under a lock, into a :class:`LoadedModel` that holds everything resolved
from the model's files (its token limit, parameter count, which output is entailment...). Scoring reads the
options and the loaded model and changes neither: what a call has to tell (texts truncated, a cache not
used) comes back with its scores in a :class:`ScoreResult`, so one scorer can serve several threads at once
(``zstc serve`` runs requests in a thread pool).
"""

from __future__ import annotations

import copy
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, Self, TypeVar, runtime_checkable

import numpy as np

from zstc.errors import NonFiniteScoresError
from zstc.models.offline import LOADING_LOCK
from zstc.models.registry import ModelSpec
from zstc.models.families import get_family
from zstc.scorers.recheck import recheck_in_fp32

if TYPE_CHECKING:
    import torch

    from zstc.scorers.runtime import Precision

F = TypeVar("F")
V = TypeVar("V")


@dataclass(frozen=True)
class Capabilities:
    """What a scorer offers beyond ``score(texts, labels)``, declared by its class as ``CAPABILITIES`` and read by
    callers (:func:`capabilities`), never discovered by probing its attributes. The contract tests check that each
    class's declaration matches the methods it implements."""

    notes: bool = False
    """``score_with_notes(texts, labels)``: the scores with what the call has to tell (a :class:`ScoreResult`)."""
    pair_scoring: bool = False
    """``score_pairs`` and ``score_pairs_with_notes``: aligned (text, label) pairs, as :class:`PairScorer`."""
    request_batching: bool = False
    """``score_requests``: several requests' texts and labels in one call (the service batches across requests)."""
    rechecks: bool = False
    """``score_with_notes(..., thresholds=)`` takes multi-label cuts (the embedding families ``margins=`` too): a bf16
    run rescores in fp32 the pairs near them."""
    twin: bool = False
    """``twin(precision=, recheck_margin=)``: the same model in another precision, sharing its loaded weights."""
    read_apart: bool = False
    """``indistinguishable(labels)``: which label descriptions the model reads as the very same input."""


NO_CAPABILITIES = Capabilities()
"""What a scorer that declares nothing (a user's own object with ``score``) offers: ``score`` alone."""


def capabilities(scorer: object) -> Capabilities:
    """What ``scorer`` declares it offers: its ``CAPABILITIES`` (a class's, or a cascade's own, which depend on the
    scorer it wraps), else :data:`NO_CAPABILITIES`."""
    declared = getattr(scorer, "CAPABILITIES", NO_CAPABILITIES)
    return declared if isinstance(declared, Capabilities) else NO_CAPABILITIES


@dataclass(frozen=True)
class ScoreResult:
    """A score matrix (or, for pairs, a vector) and the notes of the call that produced it."""

    scores: np.ndarray
    notes: list[str] = field(default_factory=list)
    truncated: tuple[int, ...] = field(default=(), kw_only=True)  # keyword only: subclasses add positional fields
    """The positions (rows of a matrix; pairs of a pair call) of the texts cut to the model's token limit, which
    :attr:`notes` only counts: a caller that scored several users' texts in one call (``zstc serve``) tells each
    user which of theirs. Filled by zstc's families (a text cut beside a cross-encoder's label description or inside a
    generative family's prompt too), and by a cascade, for the rows its shortlister or its main model cut; each
    position once, from the first pass (bf16's fp32 recheck reads again what that pass cut, and adds none)."""
    rescored: tuple[int, ...] = field(default=(), kw_only=True)
    """bf16: the positions its fp32 recheck read again, so that a server counts the tokens it cost: pairs of a cross-encoder's
    pair call (``score_pairs_with_notes``), rows (texts, embedded again whole) of an embedding model's ``score_requests``
    matrices. Empty in fp32, and in the other calls and families, which do not say."""


@runtime_checkable
class Scorer(Protocol):
    """What every model family offers."""

    family: ClassVar[str]
    spec: ModelSpec

    def score(self, texts: Sequence[str], labels: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        """A float32 matrix of shape ``(len(texts), len(labels))``; higher means more likely."""
        ...

    def describe(self) -> dict[str, Any]:
        """Facts about the model and settings, for the result file."""
        ...


@runtime_checkable
class PairScorer(Scorer, Protocol):
    """A scorer that can score aligned (text, hypothesis) pairs, not only texts x labels (cross-encoders; bi-encoders by
    each pair's cosine, for the NLI probe)."""

    def score_pairs(
        self,
        firsts: Sequence[str],
        seconds: Sequence[str],
        *,
        groups: Sequence[int] | np.ndarray | None = None,
        cuts: Sequence[float] | np.ndarray | None = None,
        show_progress: bool = False,
    ) -> np.ndarray:
        """One float32 score per pair ``(firsts[i], seconds[i])``; ``groups[i]`` names the decision pair ``i``
        competes in (default: the pairs sharing its first sequence), ``cuts[i]`` (not ``nan``) the multi-label
        threshold it is decided by instead."""
        ...

    def score_pairs_with_notes(
        self,
        firsts: Sequence[str],
        seconds: Sequence[str],
        *,
        groups: Sequence[int] | np.ndarray | None = None,
        cuts: Sequence[float] | np.ndarray | None = None,
        show_progress: bool = False,
    ) -> ScoreResult:
        """:meth:`score_pairs`'s scores with the notes of the call (sequences truncated, pairs rescored in fp32)."""
        ...


def check_pair_arguments(
    firsts: Sequence[str],
    seconds: Sequence[str],
    groups: Sequence[int] | np.ndarray | None = None,
    cuts: Sequence[float] | np.ndarray | None = None,
) -> np.ndarray | None:
    """Check the arguments of a :meth:`PairScorer.score_pairs` call (one second sequence, group and cut per first
    sequence; :class:`ValueError` otherwise) and return the cuts as a float64 array (``None`` stays ``None``)."""
    if len(firsts) != len(seconds):
        raise ValueError(f"{len(firsts)} first sequences for {len(seconds)} second sequences")
    if groups is not None and len(groups) != len(firsts):
        raise ValueError(f"{len(groups)} groups for {len(firsts)} pairs")
    checked = None if cuts is None else np.asarray(cuts, dtype=np.float64)
    if checked is not None and checked.shape != (len(firsts),):
        raise ValueError(f"{checked.size} cuts for {len(firsts)} pairs")
    return checked


def rechecks_thresholds(scorer: Any) -> bool:
    """Whether ``scorer`` takes multi-label thresholds (``score_with_notes(..., thresholds=)``): a cross-encoder,
    whose bf16 run rescores in fp32 the pairs near them (:mod:`zstc.scorers.pairs`), or an embedding model, which
    embeds those texts again in fp32 (and takes the default rule's ``margins`` too). Other scorers' decisions need
    no thresholds in advance."""
    return capabilities(scorer).rechecks


def score_with_notes(
    scorer: Scorer,
    texts: Sequence[str],
    labels: Sequence[str],
    *,
    show_progress: bool = False,
    thresholds: Sequence[float] | np.ndarray | None = None,
    margins: Sequence[float] | np.ndarray | None = None,
) -> ScoreResult:
    """Scores and notes from any scorer: its own ``score_with_notes``, or, for a scorer that only has
    ``score``, its matrix and whatever ``notes`` attribute it keeps. ``thresholds`` (one per label: the caller
    decides by cuts) and ``margins`` (one per label, ``nan`` for none: the embedding family's default rule, which only
    it has) reach the scorers that use them (:func:`rechecks_thresholds`)."""
    if capabilities(scorer).notes:
        given = {
            name: value
            for name, value in (("thresholds", thresholds), ("margins", margins))
            if value is not None and rechecks_thresholds(scorer)
        }
        result: ScoreResult = scorer.score_with_notes(texts, labels, show_progress=show_progress, **given)  # type: ignore[attr-defined]
    else:  # a user's own object may have the documented score(texts, labels) without show_progress
        progress = {"show_progress": show_progress} if _takes(scorer.score, "show_progress") else {}
        result = ScoreResult(scorer.score(texts, labels, **progress), list(getattr(scorer, "notes", [])))
    matrix = _score_matrix(scorer, result.scores, len(texts), len(labels))
    if matrix is not result.scores:
        result = replace(result, scores=matrix)
    check_finite_scores(result.scores)
    return result


def _takes(method: Callable[..., Any], name: str) -> bool:
    """Whether ``method`` takes the keyword argument ``name`` (or any keyword); True where it cannot be told."""
    import inspect

    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return True
    return any(p.name == name or p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)


def _score_matrix(scorer: Any, scores: Any, texts: int, labels: int) -> np.ndarray:
    """``scores`` as the float matrix every caller decides on, or a :class:`zstc.errors.ModelError` naming the scorer
    and what it returned: a user's scorer returning fewer rows than texts gave fewer predictions, in silence, and a
    list of strings or a wrong shape a traceback from deep inside."""
    from zstc.errors import ModelError

    name = f"scorer {type(scorer).__name__}"
    try:
        matrix = np.asarray(scores)
    except (TypeError, ValueError) as error:  # ragged rows
        raise ModelError(f"{name} returned {type(scores).__name__} that is no matrix of numbers ({error})") from None
    if matrix.dtype.kind not in "fiu" or matrix.dtype.kind == "b":
        raise ModelError(f"{name} returned {matrix.dtype} values, expected numbers (a float matrix of texts x labels)")
    if matrix.shape != (texts, labels):
        raise ModelError(
            f"{name} returned a matrix of shape {matrix.shape} for {texts} texts and {labels} labels; "
            f"it must return one row per text and one column per label, shape ({texts}, {labels})"
        )
    return matrix if matrix.dtype.kind == "f" else matrix.astype(np.float32)


def indistinguishable_labels(scorer: Any, labels: Sequence[str]) -> list[tuple[int, ...]]:
    """The groups of positions in ``labels`` (label descriptions, as ``score`` takes them) that ``scorer``'s model
    reads as the very same input (:meth:`TorchScorer.indistinguishable`): their scores tie on every text. Empty for
    a scorer that cannot tell (one without the capability, such as a user's own object with ``score``)."""
    if not capabilities(scorer).read_apart:
        return []
    groups: list[tuple[int, ...]] = scorer.indistinguishable(labels)
    return groups


def check_finite_scores(scores: np.ndarray) -> None:
    """Refuse scores that hold NaN or infinite values (:class:`NonFiniteScoresError`), naming how many and the
    first by position: a (text, label) of a matrix, or a pair of a vector of pair scores."""
    finite = np.isfinite(scores)
    if not finite.all():
        first = [int(i) + 1 for i in np.argwhere(~finite)[0]]
        pairs, where = (
            ("(text, label) pairs", f"text {first[0]} and label {first[1]}")
            if scores.ndim == 2
            else ("pairs", f"pair {first[0]}")
        )
        raise NonFiniteScoresError(
            f"the model gave non-finite scores (NaN or infinite) for {int((~finite).sum())} of {scores.size} {pairs}, "
            f"the first for {where}: its weights or its precision cannot score them "
            "(in bf16, try precision fp32)"
        )


def add_note(notes: list[str], message: str) -> None:
    """Append ``message`` unless it is already there."""
    if message not in notes:
        notes.append(message)


_COUNT_NOTE = re.compile(r"^(\d+) of (\d+) (.+)$")


def merge_batch_notes(per_batch: Sequence[Sequence[str]]) -> list[str]:
    """Combine the notes of many scorer calls: ``"N of M <what>"`` counts are summed, others kept once."""
    counts: dict[str, list[int]] = {}
    merged: list[str] = []
    for notes in per_batch:
        for note in notes:
            match = _COUNT_NOTE.match(note)
            if match:
                key = match.group(3)
                if key not in counts:
                    counts[key] = [0, 0]
                    merged.append(key)
                counts[key][0] += int(match.group(1))
                counts[key][1] += int(match.group(2))
            elif note not in merged:
                merged.append(note)
    return [f"{counts[n][0]} of {counts[n][1]} {n}" if n in counts else n for n in merged]


@dataclass
class LoadedModel(Generic[F]):
    """A model as loaded, and the facts resolved from its files; built once per scorer, then only read."""

    model: Any
    tokenizer: Any
    max_length: int
    """The token limit in force: the user's ``max_length``, else the model's own."""
    parameters: int
    """Counted from the weights: a local folder has no registered size, and reports place runs by size."""
    facts: F
    """What the family derives once from the model (an output column, answer token ids, option symbols)."""
    tokenizer_lock: threading.RLock = field(default_factory=threading.RLock)
    """Held around tokenizer calls: a fast tokenizer changes its truncation and padding settings in place,
    and two threads doing that at once fail ("Already borrowed")."""
    model_lock: threading.RLock = field(default_factory=threading.RLock)
    """Held around a call that tokenizes inside the model with the model's own tokenizer (an embedding model's
    ``encode``) where :attr:`tokenizer` is a copy of it, so that tokenizer calls never wait for a forward pass."""


def count_parameters(model: torch.nn.Module) -> int:
    """The number of weights in ``model`` (every parameter tensor's elements)."""
    return sum(parameter.numel() for parameter in model.parameters())


class LruCache(Generic[V]):
    """A small thread-safe least-recently-used cache (label embeddings per label set, or per description).

    :attr:`hits` and :attr:`misses` count keys looked up since it was made (a server's cache metric)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.hits = 0
        self.misses = 0
        self._items: OrderedDict[Hashable, V] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_compute(self, key: Hashable, compute: Callable[[], V]) -> V:
        """The value of ``key``, from ``compute()`` when it is not cached."""
        return self.get_many([key], lambda missing: [compute()])[0]

    def get_many(self, keys: Sequence[Hashable], compute: Callable[[list[Hashable]], Sequence[V]]) -> list[V]:
        """The values of ``keys``, in order; those not cached come from one ``compute(missing keys)`` call (a
        single run of the model for all of them), then are cached. Values are returned even when there are
        more keys than the cache holds."""
        with self._lock:
            found = {key: self._items[key] for key in keys if key in self._items}
            for key in found:
                self._items.move_to_end(key)
            missing = [key for key in dict.fromkeys(keys) if key not in found]
            hits = sum(key in found for key in keys)
            self.hits += hits
            self.misses += len(keys) - hits
        if missing:
            # Outside the lock: two threads may compute the same value once each, harmlessly.
            found.update(zip(missing, compute(missing), strict=True))
            with self._lock:
                for key in missing:
                    self._items[key] = found[key]
                    self._items.move_to_end(key)
                while len(self._items) > self.size:
                    self._items.popitem(last=False)
        return [found[key] for key in keys]

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._items


ALIKE_CACHE_SIZE = 256
"""Label sets whose :meth:`TorchScorer.indistinguishable` answer is kept (least recently used dropped first)."""


class TorchScorer(Generic[F]):
    """Shared plumbing for scorers that run a torch model: options, device, precision, loading once."""

    family: ClassVar[str] = ""
    SCORING_VERSION: ClassVar[str] = ""
    """Version of the scoring math, per family (each scorer class sets its own); part of result fingerprints."""
    CAPABILITIES: ClassVar[Capabilities] = Capabilities(notes=True, twin=True, read_apart=True)

    def __init__(self, spec: ModelSpec, **options: Any) -> None:
        from zstc.scorers.runtime import check_precision, resolve_device

        self.spec = spec
        self.options: dict[str, Any] = get_family(self.family).check_options(options, spec.model_id)
        """Every option of the family, as given or defaulted (see :attr:`zstc.models.families.Family.options`)."""
        self.device = resolve_device(self.options["device"])
        # Already resolved (fp32 or bf16): `auto` is decided once per run by resolve_precision, not here.
        self.precision: Precision = check_precision(self.options["precision"])
        self.batch_size: int = self.options["batch_size"]
        self.max_length: int | None = self.options["max_length"]
        """As given (``None``: the model's own limit, in :attr:`LoadedModel.max_length` once loaded)."""
        self.recheck_margin: float = self.options.get("recheck_margin", 0.0)
        """bf16 only: scores within this margin of a decision (their text's best, or a threshold) are rescored in fp32,
        in the family's own decision space (:mod:`zstc.scorers.recheck`); 0, and in a family without the option,
        none are."""
        self._loaded: LoadedModel[F] | None = None
        self._load_lock = threading.Lock()
        self._alike_cache: LruCache[list[tuple[int, ...]]] = LruCache(ALIKE_CACHE_SIZE)

    @property
    def model_id(self) -> str:
        """The model's hub id or local path, as its spec names it."""
        return self.spec.model_id

    @property
    def loaded(self) -> LoadedModel[F]:
        """The loaded model, loaded on first use (once, even when several threads ask at the same time;
        never while another scorer loads, see :data:`~zstc.models.offline.LOADING_LOCK`)."""
        loaded = self._loaded
        if loaded is None:
            with self._load_lock:
                if self._loaded is None:
                    with LOADING_LOCK:
                        self._loaded = self._load_model()
                loaded = self._loaded
        return loaded

    def _load_model(self) -> LoadedModel[F]:
        raise NotImplementedError

    def limit(self, loaded: LoadedModel[F]) -> int:
        """The token limit of a call: ``max_length`` as set now, else the loaded model's."""
        return self.max_length if self.max_length is not None else loaded.max_length

    def _label_inputs(self, labels: Sequence[str]) -> list[str] | None:
        """What the model reads for each label, as a string its tokenizer turns into the label's input: by default the
        label description as a document (the embedding families embed it, the cross-encoders pair it with the text).
        ``None``: a family whose labels cannot read alike (each LLM option has its own symbol)."""
        return [self.spec.format_document(label) for label in labels]

    def indistinguishable(self, labels: Sequence[str]) -> list[tuple[int, ...]]:
        """The groups of positions in ``labels`` (two or more each) whose inputs (:meth:`_label_inputs`) the tokenizer
        turns into the very same token ids: an uncased tokenizer reads ``Sports`` and ``sports`` alike, so their
        scores tie on every text and the first always wins. Empty when every label reads differently. Cached per
        label set (a service sees the same ones again and again)."""
        key = tuple(labels)
        return self._alike_cache.get_or_compute(key, lambda: self._indistinguishable(key))

    def _indistinguishable(self, labels: tuple[str, ...]) -> list[tuple[int, ...]]:
        inputs = self._label_inputs(labels)
        if inputs is None or len(inputs) < 2:
            return []
        loaded = self.loaded
        with loaded.tokenizer_lock:
            ids = loaded.tokenizer(list(inputs), add_special_tokens=False)["input_ids"]
        groups: dict[tuple[int, ...], list[int]] = {}
        for position, token_ids in enumerate(ids):
            groups.setdefault(tuple(token_ids), []).append(position)
        return [tuple(members) for members in groups.values() if len(members) > 1]

    def score(self, texts: Sequence[str], labels: Sequence[str], *, show_progress: bool = False) -> np.ndarray:
        """A float32 matrix of shape ``(len(texts), len(labels))``; higher means more likely."""
        return self.score_with_notes(texts, labels, show_progress=show_progress).scores

    def score_with_notes(
        self, texts: Sequence[str], labels: Sequence[str], *, show_progress: bool = False
    ) -> ScoreResult:
        """:meth:`score`'s matrix with the notes of the call (texts truncated, ...); each family defines it."""
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        """What a result records about this scorer: model, family, device, precision, batch size, token limit, parameters
        once loaded, and in bf16 the recheck margin."""
        loaded = self._loaded
        return {
            "name": self.spec.model_id,
            "family": self.family,
            "paper_name": self.spec.paper_name,
            "parameters_millions": self.spec.params_millions,
            "device": str(self.device),
            "precision": self.precision,
            "batch_size": self.batch_size,
            "max_length": self.max_length if loaded is None else self.limit(loaded),
            **({"parameters": loaded.parameters} if loaded is not None else {}),
            **(
                {"recheck_margin": self.recheck_margin}
                if self.precision == "bf16" and "recheck_margin" in self.options
                else {}
            ),
        }

    def twin(self, *, precision: Precision | None = None, recheck_margin: float | None = None) -> Self:
        """This scorer in another ``precision`` or with another ``recheck_margin``, sharing its loaded model (loaded
        now if it was not): a shallow copy, so nothing is loaded twice and this scorer is left as it was (safe while
        other threads score with it). What averages several scorings of one text rechecks the average with two twins
        (:func:`zstc.hypotheses.variants.score_hypotheses_with_notes`): bf16 without a recheck of its own, and fp32.

        The weights are this scorer's: an fp32 twin of a causal LM loaded with bf16 weights (``recheck_margin`` 0,
        :attr:`~zstc.scorers.causal.CausalLMScorer.weights_dtype`) would not be fp32's, so that is refused."""
        from zstc.scorers.runtime import check_precision

        self.loaded  # noqa: B018  # loaded once, here: a twin made before would load its own copy of the weights
        twin = copy.copy(self)
        twin.precision = self.precision if precision is None else check_precision(precision)
        twin.recheck_margin = self.recheck_margin if recheck_margin is None else recheck_margin
        # The options are what describe() and a result record: the twin's own, not a view of this scorer's dict.
        twin.options = {
            **self.options,
            "precision": twin.precision,
            **({"recheck_margin": twin.recheck_margin} if "recheck_margin" in self.options else {}),
        }
        if getattr(self, "weights_dtype", "fp32") == "bf16" and twin.precision == "fp32":
            raise ValueError(
                f"{self.spec.model_id} was loaded with bf16 weights (recheck_margin 0): it has no fp32 twin"
            )
        return twin

    def _recheck(
        self,
        scores: np.ndarray,
        groups: np.ndarray,
        cuts: np.ndarray | None,
        rescore: Callable[[np.ndarray], np.ndarray],
        record: list[np.ndarray] | None = None,
        margin: float | None = None,
        **how: Any,
    ) -> tuple[np.ndarray, list[str]]:
        """In bf16, ``scores`` (in the family's decision space) with the near decisions rescored in fp32 and the notes
        saying how many (:func:`~zstc.scorers.recheck.recheck_in_fp32`, which ``how`` goes to); in fp32, as they are.
        ``record``, when given, receives the positions of ``scores`` each fp32 pass rescored (:attr:`ScoreResult.rescored`).
        ``margin``: where given, the margin to start from whatever the precision (a family whose fp32 runs on another
        kernel library rechecks that too); None: bf16's :attr:`recheck_margin`."""
        if margin is None:
            if self.precision != "bf16":
                return scores, []
            margin = self.recheck_margin
        if record is not None:
            compute = rescore

            def rescore(todo: np.ndarray) -> np.ndarray:
                record.append(np.flatnonzero(todo))
                return compute(todo)

        return recheck_in_fp32(scores, groups, cuts, margin, rescore, **how)


def unbounded(limit: object) -> bool:
    """Whether a tokenizer's ``model_max_length`` (or a config's position limit) states no real limit.

    Tokenizers without one report a huge sentinel (``int(1e30)``); no model reads a million tokens.
    """
    return not isinstance(limit, int) or limit <= 0 or limit >= 1_000_000


def token_limit(spec: ModelSpec, requested: int | None, tokenizer: Any, position_limit: object = None) -> int:
    """The token limit of a run: ``requested`` (``max_length``) when the model has positions for it, else the
    model's own (:func:`model_max_length`). A longer request is an error here, at load time, not a tensor-size
    error from deep inside the model at the first long text."""
    from zstc.errors import OptionError

    if requested is None:
        return model_max_length(spec, tokenizer, position_limit)
    if isinstance(position_limit, int) and not unbounded(position_limit) and requested > position_limit:
        raise OptionError(
            f"max_length {requested} is more than {spec.model_id} has position embeddings for "
            f"({position_limit}); leave it out to use the model's own limit",
            "max_length",
        )
    return requested


def model_max_length(spec: ModelSpec, tokenizer: Any, position_limit: object = None) -> int:
    """The model's own token limit: the smaller of what its tokenizer and its position embeddings allow."""
    from zstc.errors import ModelError

    stated = (getattr(tokenizer, "model_max_length", None), position_limit)
    limits = [n for n in stated if isinstance(n, int) and not unbounded(n)]
    if not limits:
        raise ModelError(
            f"{spec.model_id} does not state its maximum input length: pass max_length", parameters=("max_length",)
        )
    return min(limits)
