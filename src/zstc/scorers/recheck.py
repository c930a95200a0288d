"""bf16 that makes fp32's decisions: rescore in fp32 the scores whose decision bf16's rounding could change.

bf16 runs about twice as fast as fp32 on CPUs with bf16 instructions (and on GPUs), but its rounding (a few
hundredths of a logit on a MiniLM cross-encoder, a few tenths on a small causal LM) flips decisions that fp32
makes by less than that. So a bf16 call rechecks them: every score within ``margin`` of its group's best (a
text's labels) is scored again in fp32 (:func:`near_ties`, :func:`recheck_in_fp32`). If every bf16 score is
within half the margin of its fp32 value, each group's argmax is then exactly fp32's: fp32's best ``i`` and bf16's
best ``j`` have ``b_i > f_i - m/2 >= f_j - m/2 > b_j - m``, so ``i`` is rechecked, and its fp32 score beats every
score left in bf16 (``b_k < b_j - m < f_j - m/2 <= f_i``). The margin widens by itself when the rechecked scores
show a larger bf16 error than half of it.

Multi-label decisions are cuts, not argmaxes: a caller that decides by thresholds passes them, and every score
within the margin of its cut is rescored instead (:func:`near_cuts`). The same bound gives the same guarantee: a
score on the other side of its cut in fp32 has ``|b - t| <= |b - f| < m/2``. The embedding family's default rule
also asks a label to be near the text's best (``s >= best - d``, :func:`zstc.policy.decide`): its cut is
``max(t, best - d)`` (:func:`margin_cuts`), which moves with the best, and bf16's is off fp32's by less than
``m/2`` too, so a score on the other side of it in fp32 is within ``m`` of bf16's cut (``|b - c_b| <
|b - f| + |c_b - c_f| < m``): the pairs within the margin of it are rescored, their texts whole.

The guarantee holds in whatever space the scores are compared in, as long as the decision is an argmax or a cut
there: a cross-encoder's logits, a yes/no judge's log-odds ``v_yes - v_no`` (its ``p_yes`` is their sigmoid, so
the same order and, through the logit of a threshold, the same cuts), an LLM's log-softmax over its options. The
scorers say what they rescore (:func:`recheck_in_fp32`'s ``rescore``); this module decides which, and how far. A
decision on an average of several scorings (a label's description variants) is rechecked on the average
(:func:`zstc.hypotheses.variants.average_rechecked` says why the same margin holds there).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = [
    "RECHECK_COSTLY",
    "RECHECK_PROBES",
    "RECHECK_ROUNDS",
    "call_cuts",
    "closest_calls",
    "closest_decisions",
    "closest_to_cuts",
    "label_cuts",
    "logit_cuts",
    "margin_cuts",
    "near_cuts",
    "near_decisions",
    "near_ties",
    "pair_cuts",
    "recheck_in_fp32",
]


# -- which decisions bf16 could change ---------------------------------------------------------------------


def near_ties(scores: np.ndarray, groups: np.ndarray, margin: float) -> np.ndarray:
    """Which scores are within ``margin`` of the best score of their group, in groups where more than one is.

    ``groups[i]`` says which decision score ``i`` competes in (a text's labels); a group whose best score
    leads every other by more than ``margin`` has no near tie, and none of its scores is returned.
    """
    scores, groups = np.asarray(scores, dtype=np.float64), np.asarray(groups, dtype=np.int64)
    if not len(scores):
        return np.zeros(0, dtype=bool)
    best = np.full(int(groups.max()) + 1, -np.inf)
    np.maximum.at(best, groups, scores)
    near = scores >= best[groups] - margin
    contenders = np.bincount(groups[near], minlength=len(best))
    return near & (contenders[groups] > 1)


def closest_calls(scores: np.ndarray, groups: np.ndarray, count: int) -> np.ndarray:
    """The best two scores of the ``count`` groups whose best two are closest together (a mask; groups of
    one score have no second and are never chosen)."""
    scores, groups = np.asarray(scores, dtype=np.float64), np.asarray(groups, dtype=np.int64)
    chosen = np.zeros(len(scores), dtype=bool)
    if len(scores) < 2:
        return chosen
    order = np.lexsort((-scores, groups))  # by group, best score first
    ordered_groups = groups[order]
    heads = np.flatnonzero(np.r_[True, ordered_groups[1:] != ordered_groups[:-1]])
    heads = heads[
        (heads + 1 < len(order)) & (ordered_groups[np.minimum(heads + 1, len(order) - 1)] == ordered_groups[heads])
    ]
    gaps = scores[order[heads]] - scores[order[heads + 1]]
    closest = heads[np.argsort(gaps, kind="stable")[:count]]
    chosen[order[closest]] = chosen[order[closest + 1]] = True
    return chosen


def near_cuts(scores: np.ndarray, cuts: np.ndarray, margin: float) -> np.ndarray:
    """Which scores are within ``margin`` of their own cut (a multi-label threshold); a cut of ``nan`` or
    ``+-inf`` is near no score."""
    scores, cuts = np.asarray(scores, dtype=np.float64), np.asarray(cuts, dtype=np.float64)
    with np.errstate(invalid="ignore"):  # inf - inf: a cut no score can reach
        return np.isfinite(cuts) & (np.abs(scores - cuts) <= margin)


def closest_to_cuts(scores: np.ndarray, cuts: np.ndarray, count: int) -> np.ndarray:
    """The ``count`` scores closest to their own finite cut (a mask)."""
    scores, cuts = np.asarray(scores, dtype=np.float64), np.asarray(cuts, dtype=np.float64)
    chosen = np.zeros(len(scores), dtype=bool)
    candidates = np.flatnonzero(np.isfinite(cuts))
    distance = np.abs(scores[candidates] - cuts[candidates])
    chosen[candidates[np.argsort(distance, kind="stable")[:count]]] = True
    return chosen


def near_decisions(scores: np.ndarray, groups: np.ndarray, cuts: np.ndarray | None, margin: float) -> np.ndarray:
    """The scores whose decision bf16's rounding could change: near ties of their group's best (:func:`near_ties`)
    or, for a pair with a cut (not ``nan``), near its cut (:func:`near_cuts`)."""
    return _by_decision(
        scores, groups, cuts, lambda s, g: near_ties(s, g, margin), lambda s, c: near_cuts(s, c, margin)
    )


def closest_decisions(scores: np.ndarray, groups: np.ndarray, cuts: np.ndarray | None, count: int) -> np.ndarray:
    """The probes of a recheck: the best two of the ``count`` closest calls (:func:`closest_calls`) and the
    ``count`` pairs closest to their cuts (:func:`closest_to_cuts`)."""
    return _by_decision(
        scores, groups, cuts, lambda s, g: closest_calls(s, g, count), lambda s, c: closest_to_cuts(s, c, count)
    )


def _by_decision(
    scores: np.ndarray,
    groups: np.ndarray,
    cuts: np.ndarray | None,
    by_group: Callable[[np.ndarray, np.ndarray], np.ndarray],
    by_cut: Callable[[np.ndarray, np.ndarray], np.ndarray],
) -> np.ndarray:
    """A mask made by ``by_group`` for the pairs decided by their group's best, by ``by_cut`` for those with a cut."""
    if cuts is None:
        return by_group(scores, groups)
    has_cut = ~np.isnan(cuts)
    chosen = np.zeros(len(scores), dtype=bool)
    chosen[has_cut] = by_cut(scores[has_cut], cuts[has_cut])
    chosen[~has_cut] = by_group(scores[~has_cut], groups[~has_cut])
    return chosen


RECHECK_PROBES = 4
"""Each recheck also rescores the best two labels of this many texts whose best two are closest, whether or not
they are near ties (and this many pairs closest to their cuts): the bf16 error is then measured on every call, so
a margin set below it widens."""
RECHECK_ROUNDS = 8
"""The margin widens at most this many times in one call, at least doubling each time (from 0.1: to 25.6 or more,
beyond any score's rounding)."""

RECHECK_COSTLY = 0.25
"""Past this share of a call's pairs rescored, fp32 alone would have been about as fast, and the note says so.
A model that barely tells its labels apart has near ties everywhere: with a random NLI head every pair is one,
and with SmolLM2-135M as a yes/no judge most are."""


def _near_what(cuts: np.ndarray | None, fast: str = "bf16") -> str:
    """What the recheck note says the rescored pairs were near: their text's best, their threshold, or either."""
    by_cut = np.zeros(0, dtype=bool) if cuts is None else ~np.isnan(cuts)
    if not by_cut.any():
        return f"near ties of their text's best {fast} score"
    return (
        "near their threshold"
        if by_cut.all()
        else f"near ties of their text's best {fast} score or near their threshold"
    )


def label_cuts(thresholds: Sequence[float] | np.ndarray | None, n_labels: int) -> np.ndarray | None:
    """``thresholds`` (one multi-label cut per label) as an array, checked against the number of labels; None stays None."""
    if thresholds is None:
        return None
    cuts = np.asarray(thresholds, dtype=np.float64)
    if cuts.shape != (n_labels,):
        raise ValueError(f"{cuts.size} thresholds for {n_labels} labels")
    return cuts


def pair_cuts(cuts: Sequence[Sequence[float] | np.ndarray | None], counts: Sequence[int]) -> np.ndarray | None:
    """The ``cuts`` of one ``score_pairs`` call made of runs of pairs: run ``i`` holds
    ``counts[i]`` pairs, decided by ``cuts[i]`` (one cut per pair) or, for None, by their group's best (``nan``).
    None when no run has cuts: every pair is an argmax decision."""
    if all(cut is None for cut in cuts):
        return None
    return np.concatenate(
        [
            np.full(count, np.nan) if cut is None else np.asarray(cut, dtype=np.float64)
            for cut, count in zip(cuts, counts)
        ]
    )


CallCuts = list[Sequence[float] | np.ndarray | None]
"""One entry per call of a batch: its multi-label cuts or default-rule margins (one per label), or None."""


def call_cuts(
    thresholds: Sequence[Sequence[float] | np.ndarray | None] | None,
    margins: Sequence[Sequence[float] | np.ndarray | None] | None,
    n_calls: int,
) -> tuple[CallCuts, CallCuts]:
    """A batch of ``n_calls`` calls' multi-label cuts and default-rule margins, one entry per call (None given: none
    for any call), checked against the number of calls."""
    cuts: CallCuts = list(thresholds) if thresholds is not None else [None] * n_calls
    near: CallCuts = list(margins) if margins is not None else [None] * n_calls
    if len(cuts) != n_calls or len(near) != n_calls:
        raise ValueError(f"{len(cuts)} threshold and {len(near)} margin lists for {n_calls} calls")
    return cuts, near


def margin_cuts(scores: np.ndarray, groups: np.ndarray, cuts: np.ndarray | None, margins: np.ndarray) -> np.ndarray:
    """The cut each pair is decided by under a margin rule (:func:`zstc.policy.decide`): a pair with a margin
    (not ``nan``) passes when it reaches its cut and its group's best score minus its margin, so its cut is the
    larger of the two (``cuts`` None: the margin's alone); a pair without keeps its own. Computed from bf16 ``scores``, these
    are the cuts the recheck rescores the pairs near (the module docstring's bound)."""
    scores, groups = np.asarray(scores, dtype=np.float64), np.asarray(groups, dtype=np.int64)
    margins = np.asarray(margins, dtype=np.float64)
    own = np.full(len(scores), np.nan) if cuts is None else np.asarray(cuts, dtype=np.float64)
    if not len(scores):
        return own
    best = np.full(int(groups.max()) + 1, -np.inf)
    np.maximum.at(best, groups, scores)
    return np.where(np.isnan(margins), own, np.fmax(own, best[groups] - margins))


def logit_cuts(cuts: np.ndarray | None) -> np.ndarray | None:
    """Cuts on probabilities (a yes/no judge's ``p_yes``) as cuts on their log-odds, where the recheck compares:
    ``log(t / (1 - t))``; a cut of 0 or below is ``-inf`` and 1 or above ``+inf`` (every score, or none, passes:
    near no score); ``nan`` (an argmax decision) stays ``nan``."""
    if cuts is None:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        clipped = np.clip(cuts, 0.0, 1.0)
        return np.where(np.isnan(cuts), np.nan, np.log(clipped) - np.log1p(-clipped))


# -- the loop -----------------------------------------------------------------------------------------------


def recheck_in_fp32(
    scores: np.ndarray,
    groups: np.ndarray,
    cuts: np.ndarray | None,
    margin: float,
    rescore: Callable[[np.ndarray], np.ndarray],
    *,
    whole_groups: bool = False,
    unit: str = "(text, label) pairs",
    probes: int = RECHECK_PROBES,
    fast: str = "bf16",
    exact_name: str = "fp32",
) -> tuple[np.ndarray, list[str]]:
    """bf16 ``scores`` with every near tie or near cut (:func:`near_decisions`) replaced by its fp32 score, and the
    notes saying how many.

    ``rescore(todo)``: the fp32 scores of the positions of the mask ``todo``, in their order. ``whole_groups``: a
    group is rescored whole or not at all (an LLM reads all its options in one pass, so one near tie costs the
    whole text's); the notes then count groups, each one of ``unit``.

    The margin starts at ``margin`` and doubles (or goes to three times the error seen) while a rechecked score is
    off its fp32 value by half the margin or more: the module docstring's guarantee needs every error below half
    the margin, and the rechecked scores are where it is measured (with :data:`RECHECK_PROBES` close calls among
    them, so that it is measured even when none is a near tie).

    ``probes``: how many close calls are rescored besides (:data:`RECHECK_PROBES`; a caller that measures the error
    across calls may ask for fewer). ``fast`` and ``exact_name``: what the notes call the two computations (another
    fp32 kernel library and torch's fp32, for an embedding model run by ONNX Runtime).
    """
    if margin <= 0 or not len(scores):
        return scores, []
    start, exact = margin, scores.astype(np.float32, copy=True)
    done = np.zeros(len(scores), dtype=bool)
    largest_error = 0.0
    for round_ in range(RECHECK_ROUNDS + 1):
        todo = near_decisions(scores, groups, cuts, margin)
        if round_ == 0 and probes > 0:
            todo |= closest_decisions(scores, groups, cuts, probes)
        if whole_groups:
            todo = np.isin(groups, groups[todo])
        todo &= ~done
        if todo.any():
            exact[todo] = rescore(todo)
            done |= todo
            largest_error = max(largest_error, float(np.abs(exact[todo] - scores[todo]).max()))
        if 2 * largest_error < margin or round_ == RECHECK_ROUNDS:
            break
        margin = max(2 * margin, 3 * largest_error)
    rescored, total = (
        (len(np.unique(groups[done])), len(np.unique(groups))) if whole_groups else (int(done.sum()), len(scores))
    )
    notes = (
        [f"{rescored} of {total} {unit} rescored in {exact_name}: {_near_what(cuts, fast)}"]
        if rescored or probes > 0
        else []
    )
    if rescored > RECHECK_COSTLY * total and fast == "bf16":
        notes.append(
            f"bf16 left more than {RECHECK_COSTLY:.0%} of the {unit} near ties (the model barely tells these labels "
            "apart), so rescoring them cost a good part of an fp32 run: for this model --precision fp32 costs "
            "about as much, and --recheck-margin 0 less, with bf16's decisions"
        )
    if margin > start:
        notes.append(
            f"the {fast} recheck margin widened from {start:g} to {margin:.3g}: a rechecked score's {fast} "
            f"value was {largest_error:.3g} off its {exact_name} value"
        )
    return exact, notes
