"""What determines a run's numbers, and the fingerprint that names it.

A stored result is reused only under the same fingerprint, so everything that can move a number is part of an
identity here (the weights' revision, the hypotheses' lookup rules, what sampling drew) and nothing that cannot
(where the data folder is, the output path).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Protocol

from zstc.errors import ZstcError
from zstc.hypotheses.wordnet import WORDNET_LOOKUP_VERSION
from zstc.models.loading import model_source
from zstc.models.registry import ModelSpec, get_model_spec
from zstc.runs.provenance import file_sha256, model_identity


class DataSource(Protocol):
    """What a task says of where its texts came from (:class:`zstc.benchmark.tasks.Task` is one)."""

    @property
    def source(self) -> str: ...

    @property
    def content_sha256(self) -> str | None: ...


def fingerprint(settings: dict[str, Any]) -> str:
    """A short stable hash of the settings that determine a dataset's numbers."""
    canonical = json.dumps(settings, sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def hypotheses_identity(variant: str, template: str | None, precision: str = "fp32") -> dict[str, Any]:
    """What a run records of its hypotheses: the variant and template, and for the variants that read WordNet
    the lookup rules' version (:data:`zstc.hypotheses.wordnet.WORDNET_LOOKUP_VERSION`): its notes (labels tied
    or defined in part) are not in a dataset's hypotheses, so a result of older rules would be reused without them.
    A bf16 ensemble also records that its average is what bf16 rechecks in fp32
    (:func:`zstc.hypotheses.variants.average_rechecked`): results stored before rechecked each variant alone, and
    decided otherwise where the average is a near tie (fp32's and every other variant's identity are unchanged)."""
    identity: dict[str, Any] = {"variant": variant, "template": template}
    if variant in ("definition", "both", "ensemble"):
        identity["wordnet_lookup"] = WORDNET_LOOKUP_VERSION
    if variant == "ensemble" and precision == "bf16":
        identity["bf16_recheck"] = "average"
    return identity


def sampling_identity(method: str, max_samples: int | None, seed: int | None) -> dict[str, Any]:
    """What a run's sampling settings record: only what can change which texts are scored. Without
    ``max_samples`` every text is scored whatever ``--sampling`` and ``--seed`` say, so such a run records the
    defaults (the record the default command always wrote, which results stored before keep matching): a
    ``--seed 3`` on full data was otherwise a run of other settings, refused beside the default's results and
    cached apart from them. The paper's and the harness's draws have no seed."""
    if max_samples is None:
        return {"method": "stratified", "max_samples": None, "seed": 0}
    return {"method": method, "max_samples": max_samples, "seed": seed if method == "stratified" else None}


def data_sha256(task: DataSource) -> str | None:
    """The sha256 of the data ``task`` was read from: its file's, or the hub rows' (see ``Task.content_sha256``);
    None for a task built in memory."""
    return task.content_sha256 or (file_sha256(task.source) if task.source else None)


def model_weights_identity(spec: ModelSpec) -> str | None:
    """The weights ``spec`` loads: the hub revision, or a content hash of a local folder or packaged checkpoint
    (see :func:`zstc.runs.provenance.model_identity`, files hashed once and cached); None where neither is knowable."""
    try:
        return model_identity(model_source(spec))
    except ZstcError:
        return None


def weights_identity(spec: ModelSpec, shortlist: Any = None) -> dict[str, str | None]:
    """What pins every weight a run computes with: the model's (``model_revision``) and, behind a ``shortlist``
    (``K`` or ``MODEL:K``), the shortlister's (``shortlist_revision``: a folder retrained in place keeps its name,
    and its shortlists decide which labels the model scores). None where the weights' revision is not knowable."""
    from zstc.scorers.cascade import parse_shortlist

    identity = {"model_revision": model_weights_identity(spec)}
    shortlister = parse_shortlist(shortlist)
    if shortlister is not None:
        identity["shortlist_revision"] = model_weights_identity(get_model_spec(shortlister.model))
    return identity
