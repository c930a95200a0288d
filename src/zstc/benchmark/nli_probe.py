"""The NLI probe (PROTOCOL.md section 4): how well a model's score separates entailment from the rest.

For every NLI test file in a folder, score each (premise, hypothesis) pair and report the AUROC of the score
for "entailment" against "neutral or contradiction". Files are matched to the columns of the paper's
``roc_scores.csv`` (``mnli_matched.jsonl`` -> ``mnli_m``, ``lingnli_test.jsonl`` -> ``lingnli``, ...), so a
model that is one of the paper's 38 is shown beside its published row. Training files (``*train*``) are
skipped; other files are probed under their own name.

Every family that scores one (text, label description) pair at a time is probed, each by its own scorer's
``score_pairs``: cross-encoders (NLI models, rerankers) by their score of the pair, embedding models and base
encoders by the cosine of the premise's and the hypothesis's embeddings, the premise embedded as the text (the
query side, with the model's query prefix or instruction) and the hypothesis as the label description (the
document side), as BTZSC scores them; ``pooling`` matters as it does there (the paper's all-MiniLM-L6-v2 row is
reproduced by ``cls``). Instruction-tuned LLMs are refused: they choose among a text's options in one prompt, and
the paper publishes no rule for scoring a single premise-hypothesis pair with them (:data:`NO_PROBE_RULE`).

Generative yes/no rerankers (Qwen3-Reranker) are probed too, with the paper's NLI instruction
(:data:`~zstc.scorers.prompts.YESNO_NLI_INSTRUCTION`) unless another is given. Which side of a pair fills their
prompt's <Query> is published nowhere (:data:`QUERY_SIDES`): the instruction read literally ("retrieve the
passage that entails the text") makes the premise the <Document> and the hypothesis the <Query>, the default;
``query="premise"`` is the classification layout (the text as the query). Either way only the premise is cut.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from zstc.benchmark.baselines import paper_rows
from zstc.errors import DataError, ModelError, UnknownOptionError
from zstc.io import GROUPED_SUFFIXES, read_records
from zstc.scorers.base import PairScorer, Scorer
from zstc.validation import Choices, Option, check_options

if TYPE_CHECKING:
    from zstc.models.families import Family

PAPER_COLUMNS: tuple[str, ...] = ("anli_r1", "anli_r2", "anli_r3", "fevernli", "lingnli", "mnli_m", "mnli_mm", "wanli")
"""The NLI sets of the paper's ``roc_scores.csv``, in its column order."""

COLUMN_OF_FILE: dict[str, str] = {
    "mnli_matched": "mnli_m",
    "mnli_mismatched": "mnli_mm",
    "lingnli_test": "lingnli",
    "wanli_test": "wanli",
    "fevernli_test": "fevernli",
    **{column: column for column in PAPER_COLUMNS},
}
"""File stem -> paper column; a stem not listed is probed under its own name."""

ENTAILMENT = "entailment"
NOT_ENTAILMENT: frozenset[str] = frozenset({"neutral", "contradiction", "not_entailment", "non-entailment"})

QUERY_SIDES: tuple[str, ...] = ("hypothesis", "premise")
"""Which member of an NLI pair a yes/no reranker's prompt reads as its <Query> (the other is its <Document>). The
paper does not say; the first is the default (see the module docstring)."""
SCORER_QUERY: dict[str, str] = {"hypothesis": "label", "premise": "text"}
"""Probe side -> the yes/no scorer's ``query`` option: the probe scores premises as texts (first members of its
pairs) and hypotheses as labels (second members)."""
QUERY = Option(
    str,
    QUERY_SIDES[0],
    Choices(QUERY_SIDES),  # no meaning: the CLI would write "unknown --query side"
    help="yes/no rerankers: which member of each pair fills the prompt's <Query>",
)


@dataclass(frozen=True)
class NliSet:
    """One NLI test set of the probe: its premise/hypothesis pairs and which of them are entailed."""

    name: str
    """The paper's column name (or the file's stem)."""
    path: Path
    premises: list[str]
    hypotheses: list[str]
    entailed: np.ndarray
    """Boolean, one per pair: whether the gold label is entailment."""

    def __len__(self) -> int:
        return len(self.premises)


def find_nli_sets(directory: str | Path) -> dict[str, Path]:
    """Paper column (or stem) -> file, for every NLI test file in ``directory``, in the paper's column order."""
    folder = Path(directory).expanduser()
    if not folder.is_dir():
        what = "not a directory" if folder.exists() else "no such directory"  # a missing folder was "not a directory"
        raise DataError(f"{folder}: {what}; expected a folder of NLI files such as mnli_matched.jsonl")
    found: dict[str, Path] = {}
    for path in sorted(folder.iterdir()):
        if path.suffix.lower() not in GROUPED_SUFFIXES or "train" in path.stem.lower():
            continue
        name = COLUMN_OF_FILE.get(path.stem.lower(), path.stem)
        if name in found:
            raise DataError(f"{folder}: both {found[name].name} and {path.name} are the {name} set; keep one")
        found[name] = path
    if not found:
        raise DataError(
            f"{folder}: no NLI test files (expected e.g. mnli_matched.jsonl or anli_r1.jsonl with premise, "
            "hypothesis and label columns)"
        )
    order = {column: index for index, column in enumerate(PAPER_COLUMNS)}
    return dict(sorted(found.items(), key=lambda item: (order.get(item[0], len(order)), item[0])))


def load_nli_set(name: str, path: Path, *, max_samples: int | None = None, seed: int = 0) -> NliSet:
    """Read ``premise``, ``hypothesis`` and ``label`` (a name: entailment, neutral, contradiction) per row;
    with ``max_samples``, a seeded random sample of that many rows."""
    premises: list[str] = []
    hypotheses: list[str] = []
    entailed: list[bool] = []
    for row, record in read_records(path):
        missing = [column for column in ("premise", "hypothesis", "label") if record.get(column) in (None, "")]
        if missing:
            raise DataError(f"{path}:{row}: no {', '.join(missing)}; expected premise, hypothesis and label")
        label = str(record["label"]).strip().casefold()
        if label != ENTAILMENT and label not in NOT_ENTAILMENT:
            raise DataError(
                f"{path}:{row}: label {record['label']!r} is not a label name; expected entailment, neutral or contradiction"
            )
        premises.append(str(record["premise"]))
        hypotheses.append(str(record["hypothesis"]))
        entailed.append(label == ENTAILMENT)
    if not premises:  # not "found only others": there is nothing in it at all
        raise DataError(f"{path}: no premise-hypothesis pairs; expected rows with premise, hypothesis and label")
    keep = np.arange(len(premises))
    if max_samples is not None and max_samples < len(keep):
        keep = np.sort(np.random.default_rng(seed).choice(len(keep), size=max_samples, replace=False))
    gold = np.array(entailed, dtype=bool)[keep]
    if gold.all() or not gold.any():
        raise DataError(
            f"{path}: AUROC needs both entailment and other pairs; found only {'entailment' if gold.any() else 'others'}"
        )
    return NliSet(name, path, [premises[i] for i in keep], [hypotheses[i] for i in keep], gold)


NO_PROBE_RULE: dict[str, str] = {
    "llm": "an instruction-tuned LLM chooses one of a text's options in a single prompt, and neither the paper nor "
    "PROTOCOL.md gives a rule for scoring one premise-hypothesis pair with it (its roc_scores.csv rows cannot be "
    "reproduced)",
}
"""Why a family is not probed, where its scorer could be asked for pairs only by a rule made up here."""


def probe_scorer(scorer: Scorer) -> PairScorer:
    """The scorer, if it can score aligned pairs; the probe's pairs are not a texts x labels grid."""
    if not isinstance(scorer, PairScorer):
        raise _not_probed(scorer.spec.model_id, getattr(scorer, "family", None) or scorer.spec.family)
    return scorer


def _not_probed(model: str, family: str) -> ModelError:
    why = NO_PROBE_RULE.get(family, "its scorer cannot score one premise-hypothesis pair at a time")
    return ModelError(
        f"the NLI probe scores each premise-hypothesis pair on its own (families {', '.join(probe_families())}); "
        f"{model} is scored as family {family!r}: {why}"
    )


def probe_families() -> list[str]:
    """The registered families the probe takes: those whose scorer scores aligned pairs (not the cascade's
    :func:`~zstc.scorers.cascade.flattens_to_pairs`: those whose grids may be flattened into pairs)."""
    from zstc.models.families import families

    return [family.name for family in families() if _scores_pairs(family)]


def _scores_pairs(family: Family) -> bool:
    """Whether the family's scorer scores aligned pairs (``score_pairs_with_notes``); imports only its own module."""
    return callable(getattr(family.scorer_class(), "score_pairs_with_notes", None))


def probe_options(family: str, options: Mapping[str, Any], query: str | None = None) -> dict[str, Any]:
    """The scorer options of an NLI probe of a ``family`` model: ``options``, and for a family whose prompt has
    an instruction and a <Query> (yes/no rerankers) the paper's NLI instruction unless ``options`` give one, and
    ``query`` (:data:`QUERY_SIDES`, default ``hypothesis``) as the scorer's ``query`` option. Other families read
    premise and hypothesis in fixed places, so ``query`` for them is an error naming it."""
    from zstc.models.families import get_family
    from zstc.scorers.prompts import YESNO_NLI_INSTRUCTION

    taken = get_family(family).options
    if "query" not in taken:
        if query is not None:
            raise UnknownOptionError(
                f"query chooses which side of a pair fills a yes/no reranker's prompt; {family} models "
                "read the premise and the hypothesis in fixed places",
                "query",
            )
        return dict(options)
    probed = {**options, "query": SCORER_QUERY[QUERY.check("query", QUERY.default if query is None else query)]}
    if "instruction" in taken and probed.get("instruction") is None:
        probed["instruction"] = YESNO_NLI_INSTRUCTION  # the probe's own, not BTZSC's classification instruction
    return probed


def probe_layout(described: Mapping[str, Any]) -> dict[str, str]:
    """What a yes/no reranker's prompt read (from its ``describe()``): ``query`` and ``document``, the sides of the
    pair in its <Query> and <Document>, and its ``instruction``; empty for other scorers."""
    if "query" not in described:
        return {}
    query = next(side for side, option in SCORER_QUERY.items() if option == described["query"])
    document = next(side for side in QUERY_SIDES if side != query)
    return {"query": query, "document": document, "instruction": str(described.get("instruction"))}


def probe_family(model: str, family: str | None = None) -> str:
    """The family to probe ``model`` as: ``family`` if given, else the registry's (or its folder's), else
    ``nli``, the family the probe is for (elsewhere an unknown model without a family is an error). A family
    whose scorer cannot score pairs (an LLM, :data:`NO_PROBE_RULE`) is refused here, before its model loads."""
    from zstc.models.registry import get_model_spec
    from zstc.models.families import get_family

    if family is None:
        try:
            family = get_model_spec(model).family
        except ModelError:
            family = "nli"
    if not _scores_pairs(get_family(family)):
        raise _not_probed(model, family)
    return family


def run_probe(
    scorer: Scorer,
    sets: dict[str, Path],
    *,
    max_samples: int | None = None,
    seed: int = 0,
    on_event: Callable[[str, Any], None] | None = None,
    show_progress: bool = False,
) -> dict[str, Any]:
    """AUROC per NLI set, with the paper's published row when the model is one of its 38."""
    from sklearn.metrics import roc_auc_score

    from zstc.scorers.base import check_finite_scores

    check_options({"max_samples": max_samples, "seed": seed})  # nli-probe's --max-samples and --seed
    scorer = probe_scorer(scorer)
    report = on_event or (lambda kind, payload: None)
    results: dict[str, dict[str, Any]] = {}
    # Every set read (and checked) before any is scored: a damaged last file must not cost the scoring of the others.
    loaded = [load_nli_set(name, path, max_samples=max_samples, seed=seed) for name, path in sets.items()]
    for nli_set in loaded:
        name, path = nli_set.name, nli_set.path
        report("start", nli_set)
        scored = scorer.score_pairs_with_notes(nli_set.premises, nli_set.hypotheses, show_progress=show_progress)
        scores = scored.scores
        check_finite_scores(scores)  # sklearn's own refusal of NaN was a traceback
        results[name] = {
            "auroc": float(roc_auc_score(nli_set.entailed, scores)),
            "pairs": len(nli_set),
            "entailment_share": float(nli_set.entailed.mean()),
            "file": str(path),
            "notes": scored.notes,
        }
        report("done", (name, results[name]))
    published = paper_rows(scorer.spec, "auroc")
    described = scorer.describe()
    return {
        "model": described,
        "evaluation": {
            "probe": "NLI AUROC, entailment vs. rest",
            "max_samples": max_samples,
            "seed": seed,
            **probe_layout(described),
        },
        "auroc": {name: result["auroc"] for name, result in results.items()},
        "sets": results,
        # How this run was made otherwise than the paper's row (all-MiniLM-L6-v2's is --pooling cls), beside the row.
        "paper": (
            {
                "model": scorer.spec.paper_name,
                "auroc": published,
                "differences": scorer.spec.paper_option_differences(described),
            }
            if published is not None
            else None
        ),
    }
