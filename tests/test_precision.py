"""Precision is one explicit choice, resolved once per run and recorded (issue 11)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pytest
import torch

from conftest import skip_unless_cpu_reduces_fp32_products
from shared_data import sample_task
from zstc.errors import UnknownNameError
from zstc.scorers.runtime import bf16_fast, bf16_fast_on_cpu, check_precision, cpu_flags, resolve_precision

CPU = torch.device("cpu")


@pytest.mark.parametrize(
    ("flags", "fast"),
    [
        ({"avx2", "fma"}, False),  # AMD Zen 2/3: bf16 emulated, ~600x slower
        ({"avx2", "avx512f", "avx512_bf16"}, True),  # AMD Zen 4 (measured: README, "Precision")
        ({"avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile"}, True),  # Intel Sapphire Rapids
        ({"avx2", "avx512f"}, False),  # Intel Skylake/Ice Lake
        (set(), False),  # no /proc/cpuinfo
    ],
)
def test_auto_picks_bf16_by_the_cpu_flags(flags: set[str], fast: bool) -> None:
    assert bf16_fast_on_cpu(frozenset(flags)) is fast


def test_cpuinfo_is_read_from_the_flags_line(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text(
        "processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu avx2 amx_bf16\n\nprocessor\t: 1\nflags\t: fpu\n"
    )
    assert cpu_flags(str(info)) == frozenset({"fpu", "avx2", "amx_bf16"})
    assert cpu_flags(str(tmp_path / "missing")) == frozenset()


def test_resolve_precision(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ZSTC_AUTO_PRECISION", raising=False)  # the suite pins auto to fp32 (conftest)
    assert resolve_precision(None, CPU) == "fp32"  # a library caller who says nothing gets fp32 everywhere
    assert resolve_precision("fp32", CPU) == "fp32" and resolve_precision("bf16", CPU) == "bf16"
    monkeypatch.setattr("zstc.scorers.runtime.bf16_fast", lambda device: True)
    assert resolve_precision("auto", CPU) == "bf16"
    monkeypatch.setattr("zstc.scorers.runtime.bf16_fast", lambda device: False)
    assert resolve_precision("auto", CPU) == "fp32"
    with pytest.raises(UnknownNameError, match="fp32, bf16, auto"):
        resolve_precision("fp16", CPU)


def test_auto_precision_is_family_aware_on_a_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a CPU with fast bf16, auto keeps fp32 for the embedding families (their recheck embeds a text again whole,
    which eats bf16's gain) and picks bf16 for the others; on a GPU, and when asked for, bf16 stays bf16."""
    monkeypatch.delenv("ZSTC_AUTO_PRECISION", raising=False)  # the suite pins auto to fp32 (conftest)
    monkeypatch.setattr("zstc.scorers.runtime.bf16_fast", lambda device: True)
    assert resolve_precision("auto", CPU, "embedding") == resolve_precision("auto", CPU, "encoder") == "fp32"
    assert resolve_precision("auto", CPU, "nli") == resolve_precision("auto", CPU, "llm") == "bf16"
    assert resolve_precision("auto", torch.device("cuda"), "embedding") == "bf16"
    assert resolve_precision("bf16", CPU, "embedding") == "bf16"
    monkeypatch.setenv("ZSTC_AUTO_PRECISION", "bf16")  # a pin is a pin, for every family
    assert resolve_precision("auto", CPU, "embedding") == "bf16"


def test_auto_precision_can_be_pinned(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("zstc.scorers.runtime.bf16_fast", lambda device: True)
    monkeypatch.setenv("ZSTC_AUTO_PRECISION", "fp32")
    assert resolve_precision("auto", CPU) == "fp32"
    assert resolve_precision("bf16", CPU) == "bf16"  # an explicit choice is not overridden
    monkeypatch.setenv("ZSTC_AUTO_PRECISION", "fp16")
    with pytest.raises(UnknownNameError, match="ZSTC_AUTO_PRECISION"):
        resolve_precision("auto", CPU)


def test_scorers_take_only_a_resolved_precision() -> None:
    from zstc.scorers import make_scorer

    with pytest.raises(UnknownNameError, match="resolve_precision"):
        check_precision("auto")
    with pytest.raises(UnknownNameError, match="resolve_precision"):
        make_scorer("sentence-transformers/all-MiniLM-L6-v2", precision="auto")
    scorer = make_scorer("sentence-transformers/all-MiniLM-L6-v2", precision="bf16", device="cpu")
    assert scorer.describe()["precision"] == "bf16" and scorer.describe()["device"] == "cpu"
    assert make_scorer("sentence-transformers/all-MiniLM-L6-v2").describe()["precision"] == "fp32"


def test_classifier_defaults_to_auto(monkeypatch: pytest.MonkeyPatch) -> None:
    from zstc.api import Classifier

    monkeypatch.delenv("ZSTC_AUTO_PRECISION", raising=False)  # the suite pins auto to fp32 (conftest)

    monkeypatch.setattr("zstc.scorers.runtime.bf16_fast", lambda device: True)
    assert (
        Classifier(device="cpu").scorer.describe()["precision"] == "fp32"
    )  # the default embedding model: family-aware auto
    assert Classifier("cross-encoder/nli-roberta-base", device="cpu").scorer.describe()["precision"] == "bf16"
    assert Classifier(precision="bf16").scorer.describe()["precision"] == "bf16"
    monkeypatch.setattr("zstc.scorers.runtime.bf16_fast", lambda device: False)
    assert Classifier("cross-encoder/nli-roberta-base", device="cpu").scorer.describe()["precision"] == "fp32"


def test_cli_precision_and_its_aliases() -> None:
    from zstc.cli.options import requested_precision, scorer_options

    assert requested_precision(None, None, "fp32") == "fp32"
    assert requested_precision(None, None, "auto") == "auto"
    assert requested_precision(None, True, "fp32") == "bf16" and requested_precision(None, False, "auto") == "fp32"
    assert requested_precision("bf16", True, "fp32") == "bf16"
    with pytest.raises(UnknownNameError, match="contradicts"):
        requested_precision("fp32", True, "fp32")
    assert scorer_options(precision="bf16", device="cpu", pooling=None) == {"precision": "bf16", "device": "cpu"}


def test_cli_auto_precision_is_resolved_for_the_models_family(monkeypatch: pytest.MonkeyPatch) -> None:
    """classify and serve resolve --precision auto for their model's family (or --family's), as the Classifier does."""
    from zstc.cli.options import ScorerOptions

    monkeypatch.delenv("ZSTC_AUTO_PRECISION", raising=False)
    monkeypatch.setattr("zstc.scorers.runtime.bf16_fast", lambda device: True)
    auto = ScorerOptions({"device": "cpu"}, default_precision="auto")
    assert auto.kwargs(model="all-MiniLM-L6-v2")["precision"] == "fp32"
    assert auto.kwargs(model="cross-encoder/nli-roberta-base")["precision"] == "bf16"
    assert auto.kwargs(model="cross-encoder/nli-roberta-base", family="embedding")["precision"] == "fp32"
    assert auto.kwargs()["precision"] == "bf16"  # no model named: the hardware alone


def test_bench_defaults_to_fp32_and_records_it(
    zstc_cli, btzsc_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Even where bf16 would be fast, a benchmark computes in fp32 unless asked: its numbers are the paper's.
    monkeypatch.setattr("zstc.scorers.runtime.bf16_fast", lambda device: True)
    out = tmp_path / "r.json"
    code, printed, err = zstc_cli(
        "bench",
        "--model",
        "sentence-transformers/all-MiniLM-L6-v2",
        "--data",
        str(btzsc_dir),
        "--tasks",
        "financialphrasebank",
        "--max-samples",
        "8",
        "--out",
        str(out),
        "--device",
        "cpu",
    )
    assert code == 0, err
    summary = json.loads(out.read_text())
    assert summary["model"]["precision"] == "fp32" and summary["run"]["precision"] == "fp32"
    assert summary["run"]["device"] == "cpu"
    assert "on BTZSC (fp32, cpu)" in printed  # the table's title


# -- bf16 is never a silent accuracy change: where it is fast, it keeps the fp32 decisions ------------------

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
requires_fast_bf16 = pytest.mark.skipif(
    not bf16_fast(CPU),
    reason="bf16 is not fast on this CPU (neither amx_bf16 nor avx512_bf16 in /proc/cpuinfo): auto keeps fp32 here",
)


def _compare(make, texts: list[str], labels: list[str], record_property) -> tuple[float, float, list[float]]:
    """Argmax agreement and max |diff| between fp32 and bf16 scores of the same texts, recorded for the report;
    and, for every text whose decision bf16 changed, fp32's margin between its own label and bf16's."""
    fp32 = make("fp32").score(texts, labels)
    bf16 = make("bf16").score(texts, labels)
    ours, theirs = fp32.argmax(1), bf16.argmax(1)
    agreement = float((ours == theirs).mean())
    max_diff = float(np.abs(fp32 - bf16).max())
    flipped = np.flatnonzero(ours != theirs)
    flip_margins = [float(fp32[i, ours[i]] - fp32[i, theirs[i]]) for i in flipped]
    record_property("argmax_agreement", agreement)
    record_property("max_abs_diff", max_diff)
    print(
        f"bf16 vs fp32 on {len(texts)} texts x {len(labels)} labels: argmax agreement {agreement:.4f}, max |diff| {max_diff:.3e}, "
        f"fp32 margins of the changed decisions {flip_margins}"
    )
    return agreement, max_diff, flip_margins


@requires_fast_bf16
@pytest.mark.slow
def test_bf16_keeps_the_embedding_models_decisions(btzsc_dir: Path, record_property) -> None:
    from zstc.scorers import make_scorer

    task = sample_task(btzsc_dir, "agnews", 300)
    agreement, max_diff, _ = _compare(
        lambda p: make_scorer(MINILM, precision=p, device="cpu"), task.texts, task.hypotheses, record_property
    )
    assert agreement >= 0.99
    assert 0 < max_diff < 0.05  # bf16 really ran (the scores differ), and only by rounding


@requires_fast_bf16
@pytest.mark.slow
def test_bf16_keeps_the_nli_cross_encoders_decisions(
    briefly_trained_nli: Path, btzsc_dir: Path, record_property
) -> None:
    from zstc.scorers import make_scorer

    # banking77 (72 labels): a 60-step model separates them (median fp32 top-2 margin 0.14 log-odds). On agnews (4)
    # and rottentomatoes (2) its scores barely depend on the label (median margin 0.03 and 0.01), so bf16's rounding
    # (max |diff| ~0.01) flips near-ties there: 0.95 and 0.88 agreement measured, every flip at a margin < 0.007.
    # On banking77 with 64-pair passes one text of 72 is such a near-tie (fp32 margin 0.0005; with 256-pair passes
    # none flipped): so at most one changed decision, and only one that fp32 barely made. With one thread per core
    # (make test's xdist workers) the kernels sum in another order, and a second such near-tie flipped (margin < 0.02).
    # This is bf16 alone (recheck_margin=0); the default rechecks near ties in fp32 (the next tests). Here on 24 texts.
    task = sample_task(btzsc_dir, "banking77", 24)
    agreement, max_diff, flip_margins = _compare(
        lambda p: make_scorer(str(briefly_trained_nli), "nli", precision=p, device="cpu", recheck_margin=0),
        task.texts,
        task.hypotheses,
        record_property,
    )
    assert agreement >= 22 / 24
    assert all(margin < 0.02 for margin in flip_margins), flip_margins  # a near-tie, not a different decision
    assert 0 < max_diff < 0.05  # log-odds: rounding, not a different model


# -- bf16 with fp32 rechecks of near ties: fp32's decisions at bf16's speed -------------------------------------


def test_near_ties_are_the_scores_within_the_margin_of_their_groups_best() -> None:
    from zstc.scorers.recheck import near_ties

    scores = np.array([1.0, 0.95, 0.5, 2.0, 1.0, 0.3, 0.31, 0.29])
    groups = np.array([0, 0, 0, 1, 1, 2, 2, 2])
    # group 0: 1.0 and 0.95 tie within 0.1; group 1: 2.0 leads by 1 (no tie); group 2: all three within 0.1
    assert near_ties(scores, groups, 0.1).tolist() == [True, True, False, False, False, True, True, True]
    assert not near_ties(scores, groups, 0.0).any()  # a margin of 0: only exact ties, and there are none
    assert near_ties(np.array([0.5, 0.5]), np.array([3, 3]), 0.0).tolist() == [True, True]
    assert near_ties(np.zeros(0), np.zeros(0, dtype=np.int64), 0.1).tolist() == []


def test_closest_calls_are_the_best_two_of_the_texts_whose_best_two_are_closest() -> None:
    from zstc.scorers.recheck import closest_calls

    scores = np.array([1.0, 0.95, 0.5, 2.0, 1.0, 0.3, 0.31, 0.29, 7.0])
    groups = np.array([0, 0, 0, 1, 1, 2, 2, 2, 3])  # gaps: 0.05, 1.0, 0.01; group 3 has one label
    assert np.flatnonzero(closest_calls(scores, groups, 1)).tolist() == [5, 6]
    assert np.flatnonzero(closest_calls(scores, groups, 2)).tolist() == [0, 1, 5, 6]
    assert np.flatnonzero(closest_calls(scores, groups, 9)).tolist() == [0, 1, 3, 4, 5, 6]
    assert not closest_calls(np.zeros(0), np.zeros(0, dtype=np.int64), 4).any()


def _errors_the_rule_leaves(wrong_decisions) -> None:
    """``wrong_decisions(rng, exact, bound, margin)``: how many decisions a recheck rule gets wrong when bf16 =
    ``exact`` + an error within ``+-bound``. On 2,000 random score sets it gets none wrong while the errors stay
    below half the margin, and some once they go beyond it (so the check can fail)."""
    rng = np.random.default_rng(0)
    margin, broken = 0.1, 0
    for _ in range(2000):
        exact = np.round(
            rng.normal(0, 0.1, (int(rng.integers(1, 6)), int(rng.integers(2, 12)))), 2
        )  # rounded: many close calls
        assert wrong_decisions(rng, exact, 0.499 * margin, margin) == 0
        broken += wrong_decisions(rng, exact, 2 * margin, margin)
    assert broken > 0, "errors beyond half the margin can break it: the test can fail"


def test_rechecking_the_near_ties_gives_the_exact_argmax_whenever_errors_stay_below_half_the_margin() -> None:
    """The rule of zstc.scorers.pairs: the near ties take their fp32 scores; every group's argmax is then fp32's."""
    from zstc.scorers.recheck import near_ties

    def wrong_decisions(rng: np.random.Generator, exact: np.ndarray, bound: float, margin: float) -> int:
        rounded = exact + rng.uniform(-bound, bound, exact.shape)
        groups = np.repeat(np.arange(len(exact)), exact.shape[1])
        final = np.where(near_ties(rounded.ravel(), groups, margin).reshape(exact.shape), exact, rounded)
        chosen = final.argmax(1)
        return int((exact[np.arange(len(exact)), chosen] != exact.max(1)).sum())  # ties: either label is fp32's

    _errors_the_rule_leaves(wrong_decisions)


@requires_fast_bf16
@pytest.mark.slow
def test_bf16_with_rechecks_makes_fp32s_decisions(briefly_trained_nli: Path, btzsc_dir: Path, record_property) -> None:
    """agnews (4 labels) with a 60-step model: its label scores are near ties (median fp32 margin 0.03), so bf16
    alone changes decisions (0.95 agreement measured); with the default recheck every decision is fp32's."""
    from zstc.scorers import make_scorer

    task = sample_task(btzsc_dir, "agnews", 60)
    model = str(briefly_trained_nli)
    fp32 = make_scorer(model, "nli", precision="fp32", device="cpu").score(task.texts, task.hypotheses)
    plain = make_scorer(model, "nli", precision="bf16", device="cpu", recheck_margin=0).score_with_notes(
        task.texts, task.hypotheses
    )
    checked = make_scorer(model, "nli", precision="bf16", device="cpu").score_with_notes(task.texts, task.hypotheses)
    record_property("bf16_alone_agreement", float((plain.scores.argmax(1) == fp32.argmax(1)).mean()))
    assert plain.notes == []
    assert (checked.scores.argmax(1) == fp32.argmax(1)).all()
    note, *costly = checked.notes
    rescored, total = (int(word) for word in note.split()[:3:2])
    assert note.endswith("pairs rescored in fp32: near ties of their text's best bf16 score") and total == fp32.size
    assert 0 < rescored < total
    # Past a quarter of the pairs the note says that fp32 alone would cost about as much (this model's agnews scores
    # are that close).
    assert bool(costly) == (rescored > total / 4) and all("--precision fp32" in line for line in costly)
    record_property("rescored_share", rescored / total)
    changed = checked.scores != plain.scores  # exactly the rescored pairs left bf16, and they now hold fp32's scores
    assert changed.sum() <= rescored and np.allclose(checked.scores[changed], fp32[changed], atol=1e-5)
    assert np.abs(checked.scores - fp32).max() > 0, "the other pairs kept their bf16 scores"
    # A margin below bf16's own error widens by itself, from what the rechecked pairs show, and still gives fp32's decisions.
    widened = make_scorer(model, "nli", precision="bf16", device="cpu", recheck_margin=1e-4).score_with_notes(
        task.texts, task.hypotheses
    )
    assert any(note.startswith("the bf16 recheck margin widened from 0.0001 to ") for note in widened.notes), (
        widened.notes
    )
    assert (widened.scores.argmax(1) == fp32.argmax(1)).all()


@requires_fast_bf16
@pytest.mark.slow
def test_bf16_pairs_recheck_each_group_on_its_own_labels(briefly_trained_nli: Path, btzsc_dir: Path) -> None:
    """The service's path: the same texts in two requests with different label sets, flattened into one score_pairs
    call with a group per (request, text); in bf16 every group's argmax is fp32's."""
    from zstc.scorers import make_scorer

    task = sample_task(btzsc_dir, "agnews", 40)
    hypotheses = list(task.hypotheses)
    label_sets = [hypotheses[:3], hypotheses[1:]]  # two requests, overlapping labels
    firsts = [text for labels in label_sets for text in task.texts for _ in labels]
    seconds = [label for labels in label_sets for _ in task.texts for label in labels]
    groups = np.repeat(np.arange(2 * len(task.texts)), 3)
    model = str(briefly_trained_nli)
    fp32 = make_scorer(model, "nli", precision="fp32", device="cpu").score_pairs(firsts, seconds).reshape(-1, 3)
    checked = make_scorer(model, "nli", precision="bf16", device="cpu").score_pairs_with_notes(
        firsts, seconds, groups=groups
    )
    assert (checked.scores.reshape(-1, 3).argmax(1) == fp32.argmax(1)).all()
    assert checked.notes[0].endswith(
        f"of {len(firsts)} (text, label) pairs rescored in fp32: near ties of their text's best bf16 score"
    )


# -- multi-label: the pairs near their threshold are rechecked, so bf16 passes exactly fp32's labels ----------------


def test_near_cuts_are_the_scores_within_the_margin_of_their_own_cut() -> None:
    from zstc.scorers.recheck import closest_to_cuts, near_cuts, near_decisions

    scores = np.array([0.05, -0.2, 0.5, 0.31, 7.0, -3.0])
    cuts = np.array([0.0, 0.0, 0.45, np.inf, np.nan, -np.inf])  # an infinite cut no score sits at; nan: no cut
    assert near_cuts(scores, cuts, 0.1).tolist() == [True, False, True, False, False, False]
    assert np.flatnonzero(closest_to_cuts(scores, cuts, 2)).tolist() == [0, 2]
    assert np.flatnonzero(closest_to_cuts(scores, cuts, 9)).tolist() == [0, 1, 2]
    # One service batch: a multi-label text's pairs are decided by their cuts, a single-label text's (nan) by its best.
    mixed = np.array([1.0, 0.95, 0.5, 0.02, 0.9])
    groups = np.array([0, 0, 0, 1, 1])
    pair_cuts = np.array([np.nan, np.nan, np.nan, 0.0, 0.0])
    assert near_decisions(mixed, groups, pair_cuts, 0.1).tolist() == [True, True, False, True, False]
    assert near_decisions(mixed, groups, None, 0.1).tolist() == [True, True, False, False, False]


def test_rechecking_the_pairs_near_their_cut_gives_the_exact_decisions_whenever_errors_stay_below_half_the_margin() -> (
    None
):
    """The multi-label rule: the pairs within the margin of their cut take their fp32 scores; every pair is then on
    fp32's side of its cut."""
    from zstc.scorers.recheck import near_cuts

    def wrong_decisions(rng: np.random.Generator, exact: np.ndarray, bound: float, margin: float) -> int:
        rounded = exact + rng.uniform(-bound, bound, exact.shape)
        cuts = np.round(
            rng.normal(0, 0.1, exact.shape), 2
        )  # rounded as the scores: some pairs sit exactly on their cut
        final = np.where(near_cuts(rounded, cuts, margin), exact, rounded)
        return int(((final >= cuts) != (exact >= cuts)).sum())

    _errors_the_rule_leaves(wrong_decisions)


@requires_fast_bf16
@pytest.mark.slow
def test_bf16_multi_label_passes_fp32s_labels(briefly_trained_nli: Path, btzsc_dir: Path, record_property) -> None:
    """Classifier.predict_multi_label (classify --multi-label) with a cut where the scores are densest: bf16 alone puts
    texts in other label sets; with the recheck every text gets fp32's, under a global cut, per-label cuts and a
    Platt calibration's probability cut."""
    from zstc.api import Classifier
    from zstc.probabilities import Calibration

    task = sample_task(btzsc_dir, "banking77", 24)
    hypotheses = list(task.hypotheses)[::3]  # 26 of the intents: enough pairs at the cut, a third of the cost
    labels = [f"intent {j}" for j in range(len(hypotheses))]
    model = str(briefly_trained_nli)
    fp32 = Classifier(model, family="nli", precision="fp32")
    plain = Classifier(model, family="nli", precision="bf16", recheck_margin=0)
    checked = Classifier(model, family="nli", precision="bf16")
    cut = float(np.median(fp32.scores(task.texts, labels, hypotheses)))  # half the pairs pass: many sit near the cut

    def label_sets(classifier: Classifier, **options) -> list[set[str]]:
        return [set(p.labels) for p in classifier.predict_multi_label(task.texts, labels, hypotheses, **options)]

    expected = label_sets(fp32, threshold=cut)
    alone = label_sets(plain, threshold=cut)
    record_property("bf16_alone_label_set_agreement", float(np.mean([a == e for a, e in zip(alone, expected)])))
    assert alone != expected, "bf16 alone changes some label sets here: the test can fail"
    notes: list[str] = []
    assert label_sets(checked, threshold=cut, notes=notes) == expected
    assert notes[0].endswith("pairs rescored in fp32: near their threshold"), notes
    per_label = {labels[j]: cut + 0.02 * (j % 5 - 2) for j in range(0, len(labels), 3)}
    assert label_sets(checked, threshold=cut, per_label=per_label) == label_sets(
        fp32, threshold=cut, per_label=per_label
    )
    platt = Calibration("platt", {"slope": 4.0, "intercept": -4.0 * cut})  # probability 0.5 at the raw cut
    calibrated = [Classifier(model, family="nli", precision=p, calibration=platt) for p in ("fp32", "bf16")]
    assert label_sets(calibrated[1], threshold=0.5) == label_sets(calibrated[0], threshold=0.5)


def test_margin_cuts_are_the_larger_of_a_pairs_cut_and_its_texts_best_minus_its_margin() -> None:
    from zstc.scorers.recheck import margin_cuts, near_decisions

    scores = np.array([0.50, 0.46, 0.10, 0.30, 0.29, 0.05])
    groups = np.array([0, 0, 0, 1, 1, 1])
    cuts = np.full(6, 0.2)
    margins = np.array(
        [0.05, 0.05, np.nan, 0.05, 0.05, 0.05]
    )  # nan: a label with a cut of its own (decided by it alone)
    assert np.allclose(margin_cuts(scores, groups, cuts, margins), [0.45, 0.45, 0.2, 0.25, 0.25, 0.25])
    assert np.allclose(margin_cuts(scores, groups, None, margins)[[0, 3]], [0.45, 0.25])
    # 0.46 sits 0.01 above its text's best minus the margin, 0.10 0.10 below its own cut, 0.29 0.04 above its best's
    assert near_decisions(scores, groups, margin_cuts(scores, groups, cuts, margins), 0.02).tolist() == [
        False,
        True,
        False,
        False,
        False,
        False,
    ]


class EmotionsByMiniLM(NamedTuple):
    """200 emotiondair texts (dense cosines: bf16 alone changes decisions) and all-MiniLM-L6-v2 in fp32, bf16 alone and
    bf16 rechecked, with fp32's scores and the embedding family's default multi-label rule (its margin and cut)."""

    task: Any
    hypotheses: list[str]
    labels: list[str]
    fp32: Any
    plain: Any
    checked: Any
    exact: np.ndarray
    margin: float
    cut: float


@pytest.fixture(scope="module")
def emotiondair_minilm(btzsc_dir: Path) -> EmotionsByMiniLM:
    from zstc.api import Classifier

    task = sample_task(btzsc_dir, "emotiondair", 200)
    hypotheses = list(task.hypotheses)
    labels = [f"emotion {j}" for j in range(len(hypotheses))]
    fp32 = Classifier(MINILM, precision="fp32", device="cpu")
    exact = fp32.scores(task.texts, labels, hypotheses)
    margin = fp32.default_margin()
    assert margin is not None  # the embedding family's default rule: near the text's best
    return EmotionsByMiniLM(
        task,
        hypotheses,
        labels,
        fp32,
        Classifier(MINILM, precision="bf16", device="cpu", recheck_margin=0),
        Classifier(MINILM, precision="bf16", device="cpu"),
        exact,
        margin,
        fp32.default_threshold(),
    )


def _barely_decided(
    exact: np.ndarray, labels: list[str], cut: float, margin: float, per_label: dict[str, float]
) -> np.ndarray:
    """The (text, label) pairs fp32 decides by less than its noise (1e-5: a rechecked text runs in another batch): within
    it of their cut under the multi-label rule of ``per_label`` and, for the other labels, ``cut`` and ``margin``."""
    from zstc.scorers.recheck import margin_cuts

    own = np.array([label in per_label for label in labels])
    cuts = np.tile([per_label.get(label, cut) for label in labels], len(exact))
    groups = np.repeat(np.arange(len(exact)), len(labels))
    effective = margin_cuts(exact.ravel(), groups, cuts, np.tile(np.where(own, np.nan, margin), len(exact)))
    return (np.abs(exact.ravel() - effective) < 1e-5).reshape(exact.shape)


@requires_fast_bf16
@pytest.mark.slow
def test_bf16_embedding_models_make_fp32s_decisions(emotiondair_minilm: EmotionsByMiniLM, record_property) -> None:
    """An embedding model in bf16 (classify's default model, and auto's choice where bf16 is fast): alone, its cosines'
    rounding (a few thousandths) puts texts in other label sets under the default multi-label rule (labels near the
    text's best) and under a mixed rule (some labels with a cut of their own, the others by the default rule);
    with the recheck each text with a near decision is embedded again in fp32, and every decision is fp32's, in
    single-label too. A decision fp32 itself makes by less than its run-to-run noise (1e-5: a rechecked text runs in
    another batch) may go either way."""
    from zstc.api import Classifier
    from zstc.policy import decide

    task, hypotheses, labels, fp32, plain, checked, exact, margin, cut = emotiondair_minilm

    def barely(per_label: dict[str, float]) -> np.ndarray:
        return _barely_decided(exact, labels, cut, margin, per_label)

    def decisions(classifier: Classifier, per_label: dict[str, float], notes: list[str] | None = None) -> np.ndarray:
        predictions = classifier.predict_multi_label(task.texts, labels, hypotheses, per_label=per_label, notes=notes)
        return np.array([[label in p.labels for label in labels] for p in predictions])

    for per_label in ({}, {labels[0]: 0.3, labels[1]: 0.25}):
        expected = decide(exact, labels, cut, per_label, margin)
        assert (decisions(fp32, per_label) == expected).all()
        alone = decisions(plain, per_label)
        record_property(
            f"bf16_alone_texts_changed_{len(per_label)}_own_cuts", int((alone != expected).any(axis=1).sum())
        )
        assert (alone != expected).any(), "bf16 alone changes some label sets here: the test can fail"
        notes: list[str] = []
        differ = decisions(checked, per_label, notes) != expected
        assert not (differ & ~barely(per_label)).any(), np.argwhere(differ)
        assert "texts rescored in fp32: near their threshold" in notes[0], notes
    single = [p.label for p in checked.predict(task.texts, labels, hypotheses)]
    top_two = np.sort(exact, axis=1)[:, -2:]
    assert all(
        label == labels[int(best)]
        for label, best, (second, first) in zip(single, exact.argmax(1), top_two)
        if first - second >= 1e-5
    )


@requires_fast_bf16
@pytest.mark.slow
@pytest.mark.parametrize("shortlist", [None, 36])
def test_a_bf16_server_passes_fp32s_labels(briefly_trained_nli: Path, btzsc_dir: Path, shortlist: int | None) -> None:
    """``zstc serve`` in bf16: a multi-label request gets fp32's labels, also batched with a single-label request for
    the same texts (whose pairs are rechecked as near ties, not by a cut), and behind --shortlist (the cuts travel
    with each request to the cross-encoder's shared run)."""
    pytest.importorskip("fastapi")
    from concurrent.futures import ThreadPoolExecutor

    from fastapi.testclient import TestClient

    from zstc.api import Classifier
    from zstc.server.app import ServeSettings, create_app
    from zstc.server.engine import EngineConfig

    task = sample_task(btzsc_dir, "banking77", 24)
    # Without a shortlist 26 of the intents, as in the library's test above; a shortlist of 36 picks from all of them.
    hypotheses = list(task.hypotheses)[:: 1 if shortlist else 3]
    labels = [f"intent {j}" for j in range(len(hypotheses))]
    model = str(briefly_trained_nli)
    fp32, plain, served = (
        Classifier(model, family="nli", precision=precision, shortlist=shortlist, **options)
        for precision, options in (("fp32", {}), ("bf16", {"recheck_margin": 0}), ("bf16", {}))
    )
    matrix = fp32.scores(task.texts, labels, hypotheses)
    scored = fp32.scored(matrix)
    cut = float(np.median(matrix if scored is None else matrix[scored]))  # where the scored pairs are densest

    def label_sets(classifier: Classifier) -> list[set[str]]:
        return [set(p.labels) for p in classifier.predict_multi_label(task.texts, labels, hypotheses, threshold=cut)]

    expected = label_sets(fp32)
    assert label_sets(plain) != expected, "bf16 alone changes some label sets here: the test can fail"
    multi = {"texts": task.texts, "labels": labels, "descriptions": hypotheses, "multi_label": True, "threshold": cut}
    single = {"texts": task.texts, "labels": labels, "descriptions": hypotheses}
    with TestClient(
        create_app(served, ServeSettings(engine=EngineConfig(max_wait_ms=200, max_batch_pairs=6000)))
    ) as client:
        while client.get("/health/ready").status_code != 200:
            time.sleep(0.05)
        batches = client.app.state.telemetry.registry.get_sample_value("zstc_batch_requests_count") or 0
        with ThreadPoolExecutor(2) as pool:
            answer, other = pool.map(lambda body: client.post("/classify", json=body), [multi, single])
        assert (
            client.app.state.telemetry.registry.get_sample_value("zstc_batch_requests_count") - batches == 1
        )  # one batch
    assert answer.status_code == 200 and other.status_code == 200, (answer.text, other.text)
    assert [set(result["labels"]) for result in answer.json()["results"]] == expected


@requires_fast_bf16
def test_score_requests_rechecks_a_services_decisions_with_fp32_labels_cached_apart() -> None:
    """score_requests rechecks in bf16 only when its calls are decisions (a server's requests, not a cascade's
    shortlists), embedding the rechecked texts and their labels in fp32; the labels' fp32 embeddings go to a cache of
    their own, bounded, never into the bf16 one."""
    from zstc.scorers import make_scorer
    from zstc.scorers.base import LruCache

    scorer = make_scorer(MINILM, precision="bf16", device="cpu")
    texts = ["What a wonderful surprise party!", "I lost my keys again.", "The weather is fine."]
    labels = ["This text expresses joy.", "This text expresses sadness.", "This text expresses anger."]
    exact = make_scorer(MINILM, precision="fp32", device="cpu").score(texts, labels)
    bf16_cache, fp32_cache = LruCache(8), LruCache(2)
    (shortlist,) = scorer.score_requests([(texts, labels)], label_cache=bf16_cache, fp32_label_cache=fp32_cache)
    assert (
        len(fp32_cache) == 0 and shortlist.notes == [] and not np.allclose(shortlist.scores, exact, atol=1e-4, rtol=0)
    )
    (served,) = scorer.score_requests(
        [(texts, labels)], label_cache=bf16_cache, recheck=True, fp32_label_cache=fp32_cache
    )
    # Three texts: each is among the closest calls every recheck measures bf16's error on, so each is embedded again.
    assert "3 of 3 texts rescored in fp32" in served.notes[0], served.notes
    np.testing.assert_allclose(served.scores, exact, atol=1e-5, rtol=0)
    assert len(fp32_cache) == 2 and len(bf16_cache) == 3  # the fp32 cache's own bound
    assert all(not torch.equal(fp32_cache._items[d], bf16_cache._items[d]) for d in fp32_cache._items)


def _answers_in_one_batch(
    classifier: Any, bodies: list[dict[str, Any]], max_batch_pairs: int
) -> list[list[dict[str, Any]]]:
    """Each ``POST /classify`` body's results from ``zstc serve`` of ``classifier``, the requests sent at once and scored
    in one batch (asserted), each answered with its own texts' rows."""
    from concurrent.futures import ThreadPoolExecutor

    from fastapi.testclient import TestClient

    from zstc.server.app import ServeSettings, create_app
    from zstc.server.engine import EngineConfig

    settings = ServeSettings(engine=EngineConfig(max_wait_ms=500, max_batch_pairs=max_batch_pairs))
    with TestClient(create_app(classifier, settings)) as client:
        while client.get("/health/ready").status_code != 200:
            time.sleep(0.05)
        batches = client.app.state.telemetry.registry.get_sample_value("zstc_batch_requests_count") or 0
        with ThreadPoolExecutor(len(bodies)) as pool:
            answers = list(pool.map(lambda body: client.post("/classify", json=body), bodies))
        assert (
            client.app.state.telemetry.registry.get_sample_value("zstc_batch_requests_count") - batches == 1
        )  # one batch
    assert all(answer.status_code == 200 for answer in answers), [answer.text for answer in answers]
    results = [answer.json()["results"] for answer in answers]
    for body, result in zip(bodies, results):
        assert [r["text"] for r in result] == body["texts"], "each request gets its own texts' rows"
    return results


@requires_fast_bf16
@pytest.mark.slow
def test_a_bf16_embedding_server_makes_fp32s_decisions(emotiondair_minilm: EmotionsByMiniLM, record_property) -> None:
    """``zstc serve`` with an embedding model in bf16 (auto's choice where bf16 is fast): each request's texts with a
    near decision (a near tie of its best label; under the default multi-label rule, a cosine near its cut or near
    the text's best minus the margin) are embedded again in fp32, so it answers as an fp32 Classifier does, though it
    embeds every request of a batch in one run. Four requests (single- and multi-label, two halves of the texts) in
    one batch: each gets its own texts' rows. Decisions fp32 makes by less than its noise may go either way."""
    pytest.importorskip("fastapi")
    task, hypotheses, labels, fp32, plain, served, exact, margin, cut = emotiondair_minilm
    barely_multi, barely_single = _barely_decided(exact, labels, cut, margin, {}).any(axis=1), ~_decided(exact)
    expected_sets = [set(p.labels) for p in fp32.predict_multi_label(task.texts, labels, hypotheses)]
    expected_best = [p.label for p in fp32.predict(task.texts, labels, hypotheses)]
    alone = [set(p.labels) for p in plain.predict_multi_label(task.texts, labels, hypotheses)]
    changed = sum(a != e for a, e, skip in zip(alone, expected_sets, barely_multi) if not skip)
    record_property("bf16_alone_label_sets_changed", changed)
    assert changed, "bf16 alone puts some texts in other label sets here: the test can fail"

    halves = [task.texts[:100], task.texts[100:]]
    bodies = [
        {"texts": half, "labels": labels, "descriptions": hypotheses, "multi_label": multi}
        for multi in (True, False)
        for half in halves
    ]
    results = _answers_in_one_batch(served, bodies, max_batch_pairs=len(task.texts) * len(labels) * 2)
    label_sets = [
        set(r["labels"]) for r in results[0] + results[1]
    ]  # multi-label: compared as sets (order follows scores)
    best = [r["label"] for r in results[2] + results[3]]
    assert [i for i, skip in enumerate(barely_multi) if not skip and label_sets[i] != expected_sets[i]] == []
    assert [i for i, skip in enumerate(barely_single) if not skip and best[i] != expected_best[i]] == []


# -- fp32 is IEEE fp32, whatever the process asked torch for -----------------------------------------------


@pytest.mark.parametrize("how", ["legacy", "per-backend"])
def test_fp32_scores_ignore_a_reduced_precision_matmul_setting(
    how: str, process_wide_matmul_precision, btzsc_dir: Path
) -> None:
    """``torch.set_float32_matmul_precision("medium")`` (or ``torch.backends.mkldnn.matmul.fp32_precision = "bf16"``)
    in the user's process lets fp32 products run in bf16 on a CPU with AVX512-BF16 or AMX (TF32 on a GPU): zstc's fp32
    scores stay IEEE fp32, bitwise, and the user's setting is theirs again afterwards."""
    from zstc.scorers import make_scorer
    from zstc.scorers.runtime import IEEE_MATMUL

    texts = sample_task(btzsc_dir, "financialphrasebank", 24).texts
    labels = ["This text is positive.", "This text is negative.", "This text is neutral."]
    scorer = make_scorer(MINILM, precision="fp32", device="cpu")
    expected = scorer.score(texts, labels)
    if how == "legacy":
        torch.set_float32_matmul_precision("medium")
    else:
        torch.backends.mkldnn.matmul.fp32_precision = "bf16"
    chosen = IEEE_MATMUL._read()
    skip_unless_cpu_reduces_fp32_products()
    assert np.array_equal(scorer.score(texts, labels), expected)
    assert IEEE_MATMUL._read() == chosen


# -- the generative families: the same recheck in their own decision spaces ----------------------------------------

NOISE = 1e-5
"""fp32 is not bit-reproducible across batch shapes (a rescored pair runs in another batch than in the fp32 run):
scores move by ~1e-6. A decision fp32 makes by less than this is fp32's noise, not a decision to keep."""


def _decided(fp32: np.ndarray) -> np.ndarray:
    """The texts whose fp32 best label leads the second by more than :data:`NOISE`."""
    ordered = np.sort(fp32, axis=1)
    return ordered[:, -1] - ordered[:, -2] > NOISE


@requires_fast_bf16
@pytest.mark.slow
def test_bf16_yesno_rechecks_make_fp32s_decisions(smollm2_folder: Path, btzsc_dir: Path, record_property) -> None:
    """SmolLM2 as a yes/no judge barely tells AG News labels apart (p_yes a median 0.005 apart), so bf16 alone changes
    many decisions (0.74 agreement on 100 texts); with the recheck every pair near its text's best, or near its
    threshold, is rescored in fp32 and every decision fp32 makes above its own noise is kept."""
    from zstc.scorers import make_scorer

    task = sample_task(btzsc_dir, "agnews", 10)
    make = lambda **options: make_scorer(str(smollm2_folder), "yesno", device="cpu", batch_size=8, **options)  # noqa: E731
    fp32 = make(precision="fp32").score(task.texts, task.hypotheses)
    alone = make(precision="bf16", recheck_margin=0)
    plain = alone.score_with_notes(task.texts, task.hypotheses)
    checked_scorer = make(precision="bf16")
    checked = checked_scorer.score_with_notes(task.texts, task.hypotheses)
    decided = _decided(fp32)
    record_property("bf16_alone_agreement", float((plain.scores.argmax(1) == fp32.argmax(1)).mean()))
    assert plain.notes == [] and np.abs(plain.scores - fp32).max() > 1e-3  # bf16 alone: its own scores
    assert (checked.scores.argmax(1) == fp32.argmax(1))[decided].all()
    note = checked.notes[0]
    rescored = int(note.split()[0])
    assert (
        note
        == f"{rescored} of {fp32.size} (text, label) pairs rescored in fp32: near ties of their text's best bf16 score"
    )
    # The rescored pairs hold fp32's scores (split into prefix and rest as the fp32 run split them); the others bf16's.
    assert (np.abs(checked.scores - fp32) <= NOISE).sum() == rescored > 0
    # Without the recheck the weights load in bf16 (half the memory); with it they stay fp32 and bf16 is autocast.
    assert alone.loaded.model.dtype == torch.bfloat16 and checked_scorer.loaded.model.dtype == torch.float32
    assert alone.describe()["weights"] == "bf16" and checked_scorer.describe()["weights"] == "fp32"
    # Aligned pairs (the service's yes/no path batches grids, the NLI probe pairs): each text's labels compete.
    firsts = [text for text in task.texts for _ in task.hypotheses]
    seconds = [label for _ in task.texts for label in task.hypotheses]
    pairs = checked_scorer.score_pairs_with_notes(firsts, seconds)
    assert (pairs.scores.reshape(fp32.shape).argmax(1) == fp32.argmax(1))[decided].all()
    assert pairs.notes[0].endswith("rescored in fp32: near ties of their text's best bf16 score")
    # Multi-label: a cut at the median p_yes, where this judge's scores are densest. Every pair fp32 puts on either
    # side of it by more than its noise stays there.
    cut = float(np.median(fp32))
    far = np.abs(fp32 - cut) > NOISE
    multi = checked_scorer.score_with_notes(task.texts, task.hypotheses, thresholds=[cut] * len(task.hypotheses))
    assert ((multi.scores > cut) == (fp32 > cut))[far].all()
    assert multi.notes[0].endswith("rescored in fp32: near their threshold")
    assert (((plain.scores > cut) != (fp32 > cut)) & far).any(), (
        "bf16 alone crosses the cut somewhere (else this proves nothing)"
    )


@requires_fast_bf16
@pytest.mark.slow
def test_bf16_llm_rechecks_rescore_whole_texts_in_fp32(smollm2_folder: Path, btzsc_dir: Path) -> None:
    """An LLM reads all its options in one pass, so a text with a near tie runs again in fp32, whole: its row is then
    fp32's, and the others keep their bf16 scores. A margin past every gap rescores every text."""
    from zstc.scorers import make_scorer

    task = sample_task(btzsc_dir, "agnews", 10)
    make = lambda **options: make_scorer(str(smollm2_folder), "llm", device="cpu", batch_size=8, **options)  # noqa: E731
    fp32 = make(precision="fp32").score(task.texts, task.label_names)
    alone = make(precision="bf16", recheck_margin=0)
    assert (
        alone.score_with_notes(task.texts, task.label_names).notes == [] and alone.loaded.model.dtype == torch.bfloat16
    )
    checked = make(precision="bf16").score_with_notes(task.texts, task.label_names)
    rescored = int(checked.notes[0].split()[0])
    assert (
        checked.notes[0]
        == f"{rescored} of {len(task.texts)} texts rescored in fp32: near ties of their text's best bf16 score"
    )
    as_fp32 = np.abs(checked.scores - fp32).max(axis=1) <= NOISE
    assert as_fp32.sum() == rescored >= 2  # at least the probes' texts (the closest calls), whole rows
    assert (checked.scores.argmax(1) == fp32.argmax(1))[_decided(fp32)].all()
    everything = make(precision="bf16", recheck_margin=50.0).score_with_notes(task.texts, task.label_names)
    assert everything.notes[0].startswith(f"{len(task.texts)} of {len(task.texts)} texts rescored in fp32")
    assert np.allclose(everything.scores, fp32, atol=NOISE)
    # Multi-label (a cut at the median probability): a text with an option near its cut runs again in fp32, and
    # every decision fp32 makes beyond its noise is kept. Without the cuts, the near ties alone were rechecked.
    cut = float(np.median(fp32))
    far = np.abs(fp32 - cut) > NOISE
    multi = make(precision="bf16").score_with_notes(
        task.texts, task.label_names, thresholds=[cut] * len(task.label_names)
    )
    assert ((multi.scores > cut) == (fp32 > cut))[far].all()
    assert multi.notes[0].endswith("texts rescored in fp32: near their threshold"), multi.notes
    plain = alone.score_with_notes(task.texts, task.label_names).scores
    assert (((plain > cut) != (fp32 > cut)) & far).any(), (
        "bf16 alone crosses the cut somewhere (else this proves nothing)"
    )


# -- averages of description variants (polarity labels, Yin's ensemble): the decision is on the average -----------


@requires_fast_bf16
@pytest.mark.slow
def test_bf16_decides_an_average_of_description_variants_as_fp32(btzsc_dir: Path, record_property) -> None:
    """Polarity labels get five descriptions each (zstc.hypotheses.polarity), scored separately and averaged: bf16
    alone, and bf16 rechecking each variant's own near ties, picked another label than fp32 for one of these 100
    financialphrasebank texts (text 77: fp32 decides by 0.0003, bf16's error is 0.001). The average is what decides,
    so it is what bf16 rechecks: every decision is then fp32's, single-label and under the embedding family's
    default multi-label rule (labels near the text's best), and the notes say how many texts were embedded again."""
    from zstc.api import Classifier
    from zstc.policy import decide

    texts = sample_task(btzsc_dir, "financialphrasebank", 100).texts
    labels = ["positive", "negative", "neutral"]
    fp32, alone, checked = (
        Classifier(precision=p, device="cpu", **how)
        for p, how in (("fp32", {}), ("bf16", {"recheck_margin": 0}), ("bf16", {}))
    )
    exact = fp32.scores(texts, labels)
    top_two = np.sort(exact, axis=1)[:, -2:]
    assert (top_two[:, 1] - top_two[:, 0] > 1e-5).all()  # no decision within fp32's own noise here
    plain = alone.scores(texts, labels)
    flipped = int((plain.argmax(1) != exact.argmax(1)).sum())
    record_property("bf16_alone_single_label_flips", flipped)
    assert flipped, "bf16 alone changes a decision here: the test can fail"
    notes: list[str] = []
    predicted = [p.label for p in checked.predict(texts, labels, notes=notes)]
    assert predicted == [labels[int(j)] for j in exact.argmax(1)]
    assert any(note.endswith("texts rescored in fp32: near ties of their text's best bf16 score") for note in notes), (
        notes
    )

    def label_sets(classifier: Classifier, notes: list[str] | None = None) -> np.ndarray:
        return np.array(
            [
                [label in p.labels for label in labels]
                for p in classifier.predict_multi_label(texts, labels, notes=notes)
            ]
        )

    margin = fp32.default_margin()
    assert margin is not None  # the default model is an embedding model: its default rule is near the text's best
    expected = decide(exact, labels, fp32.default_threshold(), {}, margin)
    assert (label_sets(fp32) == expected).all()
    multi_notes: list[str] = []
    assert (label_sets(checked, multi_notes) == expected).all()
    assert any("texts rescored in fp32: near their threshold" in note for note in multi_notes), multi_notes


def test_a_twin_shares_the_model_and_keeps_its_label_embeddings_apart() -> None:
    """A scorer's fp32 twin (what rechecks an average of variants) runs the same loaded model in fp32, and the label
    embeddings it caches are fp32's, kept apart from the bf16 scorer's own (and from a bf16 twin's, shared with it)."""
    from zstc.scorers import make_scorer

    bf16 = make_scorer(MINILM, precision="bf16", device="cpu")
    exact, plain = bf16.twin(precision="fp32"), bf16.twin(recheck_margin=0.0)
    assert exact.loaded is bf16.loaded is plain.loaded
    assert (exact.precision, exact.describe()["precision"], plain.recheck_margin, bf16.recheck_margin > 0) == (
        "fp32",
        "fp32",
        0.0,
        True,
    )
    texts, labels = ["the market rallied", "shares fell sharply"], ["positive news", "negative news"]
    fp32 = make_scorer(MINILM, precision="fp32", device="cpu").score(texts, labels)
    np.testing.assert_allclose(exact.score(texts, labels), fp32, atol=1e-6)
    assert exact._label_cache is bf16._fp32_label_cache and plain._label_cache is bf16._label_cache


def _served_decisions(classifier: Any, bodies: list[dict[str, Any]], max_batch_pairs: int) -> list[list[Any]]:
    """Each request's decisions from ``zstc serve`` of ``classifier`` (:func:`_answers_in_one_batch`): the label of each
    text (single-label), or its label set (multi-label)."""
    return [
        [set(r["labels"]) if body.get("multi_label") else r["label"] for r in results]
        for body, results in zip(bodies, _answers_in_one_batch(classifier, bodies, max_batch_pairs))
    ]


@requires_fast_bf16
@pytest.mark.slow
def test_a_bf16_server_decides_an_average_of_description_variants_as_fp32(btzsc_dir: Path) -> None:
    """``zstc serve`` in bf16 with polarity labels (five descriptions each, averaged): the decision is on the average,
    so that is what the server rechecks, for every request of a batch by its own rule, as the library does. On the 100
    financialphrasebank texts where bf16 picks another label than fp32 for text 77 (alone, and rechecking each
    description's near ties: the server's answer before), its answers are an fp32 Classifier's and the bf16 library's,
    single-label and under the embedding family's default multi-label rule, four requests in one batch."""
    pytest.importorskip("fastapi")
    from zstc.api import Classifier

    texts = sample_task(btzsc_dir, "financialphrasebank", 100).texts
    labels = ["positive", "negative", "neutral"]
    fp32, checked = (Classifier(precision=p, device="cpu") for p in ("fp32", "bf16"))
    exact = fp32.scores(texts, labels)
    assert (np.diff(np.sort(exact, axis=1)[:, -2:], axis=1) > 1e-5).all()  # no decision within fp32's own noise here
    expected_best = [labels[int(j)] for j in exact.argmax(1)]
    expected_sets = [set(p.labels) for p in fp32.predict_multi_label(texts, labels)]
    assert [p.label for p in checked.predict(texts, labels)] == expected_best
    assert [set(p.labels) for p in checked.predict_multi_label(texts, labels)] == expected_sets

    halves = [texts[:50], texts[50:]]
    bodies = [{"texts": half, "labels": labels, "multi_label": multi} for multi in (False, True) for half in halves]
    served = _served_decisions(Classifier(precision="bf16", device="cpu"), bodies, max_batch_pairs=len(texts) * 15 * 2)
    assert served[0] + served[1] == expected_best
    assert served[2] + served[3] == expected_sets


@requires_fast_bf16
@pytest.mark.slow
def test_a_bf16_cross_encoder_server_decides_an_average_of_description_variants_as_fp32(
    nli_folder: Path, btzsc_dir: Path
) -> None:
    """The pair backend (an NLI cross-encoder, every request's pairs in one run) with polarity labels in bf16: each
    text's average of its five descriptions per label is rechecked on the average, its pairs not one by one, so the
    server decides as an fp32 Classifier and as the bf16 library, single-label and under a cut where the averages are
    densest. Decisions fp32 makes by less than its noise may go either way. (No flip of bf16 alone was found cheaply for
    this model: on 60 texts it flipped none, so this checks the pair backend's path to the same answers, on 12; the
    flip is the embedding server's test above.)"""
    pytest.importorskip("fastapi")
    from zstc.api import Classifier

    texts = sample_task(btzsc_dir, "financialphrasebank", 12).texts
    labels = ["positive", "negative", "neutral"]
    fp32, checked = (Classifier(str(nli_folder), family="nli", precision=p) for p in ("fp32", "bf16"))
    exact = fp32.scores(texts, labels)
    cut = float(np.median(exact))
    decided, far = _decided(exact), (np.abs(exact - cut) > NOISE).all(axis=1)
    expected_best = [labels[int(j)] for j in exact.argmax(1)]
    expected_sets = [set(p.labels) for p in fp32.predict_multi_label(texts, labels, threshold=cut)]
    library_best = [p.label for p in checked.predict(texts, labels)]
    library_sets = [set(p.labels) for p in checked.predict_multi_label(texts, labels, threshold=cut)]

    halves = [texts[:6], texts[6:]]
    bodies = [
        {"texts": half, "labels": labels, **({"multi_label": True, "threshold": cut} if multi else {})}
        for multi in (False, True)
        for half in halves
    ]
    served = _served_decisions(Classifier(str(nli_folder), family="nli", precision="bf16"), bodies, len(texts) * 15 * 2)
    best, sets = served[0] + served[1], served[2] + served[3]
    assert decided.sum() >= len(texts) // 2 and far.sum() >= len(texts) // 2, (decided, far)  # the checks below bite
    assert [
        i for i in np.flatnonzero(decided) if best[i] != expected_best[i] or library_best[i] != expected_best[i]
    ] == []
    assert [i for i in np.flatnonzero(far) if sets[i] != expected_sets[i] or library_sets[i] != expected_sets[i]] == []


# -- fp32 whatever the thread count -------------------------------------------------------------------------------

THREAD_PROBE = """
import hashlib, json, sys
{first}
from zstc.scorers import make_scorer
from zstc.scorers.runtime import blas_thread_invariant
texts, labels = json.loads(sys.argv[1])
scores = make_scorer("sentence-transformers/all-MiniLM-L6-v2", family="embedding", precision="fp32").score(texts, labels)
print(json.dumps([hashlib.sha256(scores.tobytes()).hexdigest(), blas_thread_invariant()]))
"""


def _scored_with_threads(threads: int, task: Any, first: str = "") -> tuple[str, bool | None]:
    import os
    import subprocess
    import sys

    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    env.pop("MKL_CBWR", None)
    done = subprocess.run(
        [sys.executable, "-c", THREAD_PROBE.format(first=first), json.dumps([task.texts, task.hypotheses])],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    digest, invariant = json.loads(done.stdout.splitlines()[-1])
    return digest, invariant


def test_fp32_scores_do_not_depend_on_the_thread_count(btzsc_dir: Path) -> None:
    """A Ray worker scores with one thread, bench with one per core: the same texts must give the same bits. On an
    Intel Xeon, MKL split all-MiniLM-L6-v2's 12 x 72 cosine product by thread count (banking77: 12 texts, 72 labels)
    and the last bits moved, so a sweep's results were not bench's; zstc asks MKL for its strict mode on import
    (zstc.REPRODUCIBLE_BLAS). Where MKL started before zstc could ask (torch used first), it says so."""
    task = sample_task(btzsc_dir, "banking77", 12)
    one, two = _scored_with_threads(1, task), _scored_with_threads(2, task)
    assert one[0] == two[0]
    # Whether MKL reports its strict mode is not asserted: on another vendor's processor it may choose a mode of its own.
    late = _scored_with_threads(1, task, first="import torch; torch.ones(2, 2) @ torch.ones(2, 2)")
    assert late[1] in (False, None)  # MKL started in its default mode: not thread-invariant (or no MKL to ask)


def test_cli_backend_onnxruntime_in_bf16_is_refused_naming_both_flags(zstc_cli, tmp_path: Path) -> None:
    """--backend onnxruntime runs fp32 only: with --precision bf16, classify refuses it before any model loads,
    naming both flags; with a family that has no backend (NLI), the option is refused as unknown."""
    texts = tmp_path / "texts.txt"
    texts.write_text("a text\n", encoding="utf-8")
    status, _, err = zstc_cli(
        "classify", str(texts), "--labels", "a,b", "--backend", "onnxruntime", "--precision", "bf16"
    )
    assert status == 2 and "--backend 'onnxruntime' runs fp32 only" in err and "--precision" in err, err
    status, _, err = zstc_cli(
        "classify",
        str(texts),
        "--labels",
        "a,b",
        "--model",
        "cross-encoder/nli-roberta-base",
        "--backend",
        "onnxruntime",
    )
    assert status != 0 and "--backend" in err and "Traceback" not in err, err
