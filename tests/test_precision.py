"""Precision is one explicit choice, resolved once per run and recorded (issue 11)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

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
    info.write_text("processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: fpu avx2 amx_bf16\n\nprocessor\t: 1\nflags\t: fpu\n")
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
    assert Classifier().scorer.describe()["precision"] == "bf16"
    assert Classifier(precision="fp32").scorer.describe()["precision"] == "fp32"
    monkeypatch.setattr("zstc.scorers.runtime.bf16_fast", lambda device: False)
    assert Classifier().scorer.describe()["precision"] == "fp32"


def test_cli_precision_and_its_aliases() -> None:
    from zstc.cli.options import requested_precision, scorer_options

    assert requested_precision(None, None, "fp32") == "fp32"
    assert requested_precision(None, None, "auto") == "auto"
    assert requested_precision(None, True, "fp32") == "bf16" and requested_precision(None, False, "auto") == "fp32"
    assert requested_precision("bf16", True, "fp32") == "bf16"
    with pytest.raises(UnknownNameError, match="contradicts"):
        requested_precision("fp32", True, "fp32")
    assert scorer_options(precision="bf16", device="cpu", pooling=None) == {"precision": "bf16", "device": "cpu"}


def test_bench_defaults_to_fp32_and_records_it(zstc_cli, btzsc_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Even where bf16 would be fast, a benchmark computes in fp32 unless asked: its numbers are the paper's.
    monkeypatch.setattr("zstc.scorers.runtime.bf16_fast", lambda device: True)
    out = tmp_path / "r.json"
    code, printed, err = zstc_cli("bench", "--model", "sentence-transformers/all-MiniLM-L6-v2", "--data", str(btzsc_dir),
                            "--tasks", "financialphrasebank", "--max-samples", "8", "--out", str(out), "--device", "cpu")
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
    print(f"bf16 vs fp32 on {len(texts)} texts x {len(labels)} labels: argmax agreement {agreement:.4f}, max |diff| {max_diff:.3e}, "
          f"fp32 margins of the changed decisions {flip_margins}")
    return agreement, max_diff, flip_margins


def _sample(btzsc_dir: Path, name: str, n: int):
    from zstc.benchmark.data import load_btzsc_task
    from zstc.benchmark.tasks import stratified_sample

    task, _ = load_btzsc_task(name, btzsc_dir)
    return stratified_sample(task, n, 0)


@requires_fast_bf16
@pytest.mark.slow
def test_bf16_keeps_the_embedding_models_decisions(btzsc_dir: Path, record_property) -> None:
    from zstc.scorers import make_scorer

    task = _sample(btzsc_dir, "agnews", 300)
    agreement, max_diff, _ = _compare(lambda p: make_scorer(MINILM, precision=p, device="cpu"), task.texts, task.hypotheses, record_property)
    assert agreement >= 0.99
    assert 0 < max_diff < 0.05  # bf16 really ran (the scores differ), and only by rounding


@pytest.fixture(scope="session")
def briefly_trained_nli(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """MiniLM-L6 trained for 60 steps of 8 LingNLI pairs with the paper's recipe (``zstc train-nli``), in fp32."""
    from shared_data import shared_path

    from zstc.training import TrainConfig, train_nli

    folder = tmp_path_factory.mktemp("nli")
    lines = shared_path("nli/lingnli_train.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    # Every 14th pair (the file is grouped by label): all three labels, and only what 60 steps and the dev set use.
    data = folder / "lingnli-part.jsonl"
    data.write_text("".join(lines[::14][: 60 * 8 + 64]), encoding="utf-8")
    out = folder / "minilm-lingnli-60"
    train_nli(TrainConfig(backbone=MINILM, data=str(data), out=str(out), max_steps=60, batch_size=8, dev_size=60, eval_fraction=1.0,
                          max_length=128, device="cpu", precision="fp32"), progress=False, log=lambda line: None)
    return out


@requires_fast_bf16
@pytest.mark.slow
def test_bf16_keeps_the_nli_cross_encoders_decisions(briefly_trained_nli: Path, btzsc_dir: Path, record_property) -> None:
    from zstc.scorers import make_scorer

    # banking77 (72 labels): a 60-step model separates them (median fp32 top-2 margin 0.14 log-odds). On agnews (4)
    # and rottentomatoes (2) its scores barely depend on the label (median margin 0.03 and 0.01), so bf16's rounding
    # (max |diff| ~0.01) flips near-ties there: 0.95 and 0.88 agreement measured, every flip at a margin < 0.007.
    # On banking77 with 64-pair passes one text of 72 is such a near-tie (fp32 margin 0.0005; with 256-pair passes
    # none flipped): so at most one changed decision, and only one that fp32 barely made.
    # This is bf16 alone (recheck_margin=0); the default rechecks near ties in fp32 (the next tests).
    task = _sample(btzsc_dir, "banking77", 72)
    agreement, max_diff, flip_margins = _compare(lambda p: make_scorer(str(briefly_trained_nli), "nli", precision=p, device="cpu", recheck_margin=0),
                                                 task.texts, task.hypotheses, record_property)
    assert agreement >= 71 / 72
    assert all(margin < 0.02 for margin in flip_margins), flip_margins  # a near-tie, not a different decision
    assert 0 < max_diff < 0.05  # log-odds: rounding, not a different model


# -- bf16 with fp32 rechecks of near ties: fp32's decisions at bf16's speed -------------------------------------


def test_near_ties_are_the_scores_within_the_margin_of_their_groups_best() -> None:
    from zstc.scorers.pairs import near_ties

    scores = np.array([1.0, 0.95, 0.5, 2.0, 1.0, 0.3, 0.31, 0.29])
    groups = np.array([0, 0, 0, 1, 1, 2, 2, 2])
    # group 0: 1.0 and 0.95 tie within 0.1; group 1: 2.0 leads by 1 (no tie); group 2: all three within 0.1
    assert near_ties(scores, groups, 0.1).tolist() == [True, True, False, False, False, True, True, True]
    assert not near_ties(scores, groups, 0.0).any()  # a margin of 0: only exact ties, and there are none
    assert near_ties(np.array([0.5, 0.5]), np.array([3, 3]), 0.0).tolist() == [True, True]
    assert near_ties(np.zeros(0), np.zeros(0, dtype=np.int64), 0.1).tolist() == []


def test_closest_calls_are_the_best_two_of_the_texts_whose_best_two_are_closest() -> None:
    from zstc.scorers.pairs import closest_calls

    scores = np.array([1.0, 0.95, 0.5, 2.0, 1.0, 0.3, 0.31, 0.29, 7.0])
    groups = np.array([0, 0, 0, 1, 1, 2, 2, 2, 3])  # gaps: 0.05, 1.0, 0.01; group 3 has one label
    assert np.flatnonzero(closest_calls(scores, groups, 1)).tolist() == [5, 6]
    assert np.flatnonzero(closest_calls(scores, groups, 2)).tolist() == [0, 1, 5, 6]
    assert np.flatnonzero(closest_calls(scores, groups, 9)).tolist() == [0, 1, 3, 4, 5, 6]
    assert not closest_calls(np.zeros(0), np.zeros(0, dtype=np.int64), 4).any()


def test_rechecking_the_near_ties_gives_the_exact_argmax_whenever_errors_stay_below_half_the_margin() -> None:
    """The rule of zstc.scorers.pairs, on 2,000 random score sets: bf16 = fp32 + an error below m/2; the rechecked
    near ties take their fp32 scores; every group's argmax is then fp32's. With errors above m/2 it is not."""
    from zstc.scorers.pairs import near_ties

    rng = np.random.default_rng(0)
    margin, broken = 0.1, 0
    for _ in range(2000):
        n_groups, n_labels = int(rng.integers(1, 6)), int(rng.integers(2, 12))
        exact = np.round(rng.normal(0, 0.1, (n_groups, n_labels)), 2)  # rounded: many close calls
        groups = np.repeat(np.arange(n_groups), n_labels)
        for bound, must_hold in ((0.499 * margin, True), (2 * margin, False)):
            rounded = exact + rng.uniform(-bound, bound, exact.shape)
            near = near_ties(rounded.ravel(), groups, margin).reshape(exact.shape)
            final = np.where(near, exact, rounded)
            same = (final.argmax(1) == exact.argmax(1)) | (exact.max(1) == exact[np.arange(n_groups), final.argmax(1)])  # ties: either is fp32's
            if must_hold:
                assert same.all()
            else:
                broken += int((~same).sum())
    assert broken > 0, "errors beyond half the margin can break it: the test can fail"


@requires_fast_bf16
@pytest.mark.slow
def test_bf16_with_rechecks_makes_fp32s_decisions(briefly_trained_nli: Path, btzsc_dir: Path, record_property) -> None:
    """agnews (4 labels) with a 60-step model: its label scores are near ties (median fp32 margin 0.03), so bf16
    alone changes decisions (0.95 agreement measured); with the default recheck every decision is fp32's."""
    from zstc.scorers import make_scorer

    task = _sample(btzsc_dir, "agnews", 120)
    model = str(briefly_trained_nli)
    fp32 = make_scorer(model, "nli", precision="fp32", device="cpu").score(task.texts, task.hypotheses)
    plain = make_scorer(model, "nli", precision="bf16", device="cpu", recheck_margin=0).score_with_notes(task.texts, task.hypotheses)
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
    widened = make_scorer(model, "nli", precision="bf16", device="cpu", recheck_margin=1e-4).score_with_notes(task.texts, task.hypotheses)
    assert any(note.startswith("the bf16 recheck margin widened from 0.0001 to ") for note in widened.notes), widened.notes
    assert (widened.scores.argmax(1) == fp32.argmax(1)).all()


@requires_fast_bf16
@pytest.mark.slow
def test_bf16_pairs_recheck_each_group_on_its_own_labels(briefly_trained_nli: Path, btzsc_dir: Path) -> None:
    """The service's path: the same texts in two requests with different label sets, flattened into one score_pairs
    call with a group per (request, text); in bf16 every group's argmax is fp32's."""
    from zstc.scorers import make_scorer

    task = _sample(btzsc_dir, "agnews", 40)
    hypotheses = list(task.hypotheses)
    label_sets = [hypotheses[:3], hypotheses[1:]]  # two requests, overlapping labels
    firsts = [text for labels in label_sets for text in task.texts for _ in labels]
    seconds = [label for labels in label_sets for _ in task.texts for label in labels]
    groups = np.repeat(np.arange(2 * len(task.texts)), 3)
    model = str(briefly_trained_nli)
    fp32 = make_scorer(model, "nli", precision="fp32", device="cpu").score_pairs(firsts, seconds).reshape(-1, 3)
    checked = make_scorer(model, "nli", precision="bf16", device="cpu").score_pairs_with_notes(firsts, seconds, groups=groups)
    assert (checked.scores.reshape(-1, 3).argmax(1) == fp32.argmax(1)).all()
    assert checked.notes[0].endswith(f"of {len(firsts)} (text, label) pairs rescored in fp32: near ties of their text's best bf16 score")
