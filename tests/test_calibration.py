"""Temperature and Platt scaling, ECE and Brier score."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.special import softmax

from zstc.yin.calibration import (
    PlattScaling,
    TemperatureScaling,
    calibrate,
    expected_calibration_error,
    single_label_report,
)
from zstc.errors import DataError, UnknownNameError


def test_ece_by_hand() -> None:
    # Bin (0.6, 0.6667]: confidences 0.61 and 0.62, one right -> |0.5 - 0.615|; bin (0.9333, 1]: 0.95 right -> 0.05.
    ece = expected_calibration_error(np.array([0.61, 0.62, 0.95]), np.array([1, 0, 1]))
    assert ece == pytest.approx((2 * 0.115 + 0.05) / 3)


def test_brier_of_a_perfect_and_a_uniform_forecast() -> None:
    gold = np.array([0, 1])
    assert single_label_report(np.eye(2), gold)["brier"] == 0.0
    assert single_label_report(np.full((2, 2), 0.5), gold)["brier"] == pytest.approx(0.5)


def synthetic(n: int, temperature: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Logits whose gold labels are drawn from softmax(logits / temperature): the right T is known."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0, 3, size=(n, 4))
    gold = np.array([rng.choice(4, p=p) for p in softmax(logits / temperature, axis=1)])
    return logits, gold


def test_temperature_scaling_recovers_temperature_and_improves_calibration() -> None:
    logits, gold = synthetic(3000, temperature=2.5, seed=0)
    assert TemperatureScaling().fit(logits, gold).temperature == pytest.approx(2.5, rel=0.15)
    test_logits, test_gold = synthetic(2000, temperature=2.5, seed=1)
    report = calibrate(logits, gold, test_logits, test_gold, method="temperature")
    assert report["after"]["ece"] < report["before"]["ece"] / 2
    assert report["after"]["brier"] < report["before"]["brier"]


def test_platt_scaling_on_cosine_like_scores() -> None:
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 3, size=400)
    scores = rng.normal(0.1, 0.05, size=(400, 3))
    scores[np.arange(400), gold] += 0.15  # cosine-like: small values, gold a little higher
    report = calibrate(scores[:200], gold[:200], scores[200:], gold[200:], method="platt", score_type="cosine")
    assert report["parameters"]["slope"] > 0
    assert report["after"]["ece"] < report["before"]["ece"]
    assert report["after"]["brier"] < report["before"]["brier"]


def test_platt_scaling_fits_scores_of_a_small_spread_and_keeps_the_raw_scale() -> None:
    """An NLI head's log-odds 0.01 apart: the solver stopped at its first step, slope 0 and intercept 0, and the
    report showed ECE falling to 0. Fitted on standardised scores and mapped back: the same fit as on scores
    spread 10,000 times wider (the raw-score slope 10,000 times steeper), and the optimum of the likelihood."""
    from scipy.optimize import minimize

    rng = np.random.default_rng(0)
    gold = rng.integers(0, 3, size=300)
    wide = rng.normal(0.0, 1.0, size=(300, 3))
    wide[np.arange(300), gold] += 1.0
    narrow = -0.6 + wide / 10_000
    fitted = PlattScaling().fit(narrow, gold)
    reference = PlattScaling().fit(wide, gold)
    assert fitted.slope == pytest.approx(10_000 * reference.slope, rel=1e-3)
    assert fitted.converged and fitted.slope > 0
    np.testing.assert_allclose(fitted.transform(narrow), reference.transform(wide), atol=1e-4)
    truth = np.eye(3)[gold].ravel()

    def nll(parameters: np.ndarray) -> float:
        p = np.clip(PlattScaling(*parameters).transform(wide.ravel()), 1e-12, 1 - 1e-12)
        return float(-(truth * np.log(p) + (1 - truth) * np.log(1 - p)).mean())

    best = minimize(nll, [1.0, 0.0]).x
    assert (reference.slope, reference.intercept) == pytest.approx(tuple(best), abs=1e-3)


def test_a_platt_fit_that_did_not_converge_is_noted(monkeypatch: pytest.MonkeyPatch) -> None:
    import sklearn.linear_model

    class OneStep(sklearn.linear_model.LogisticRegression):
        def __init__(self, C: float = 1.0) -> None:
            super().__init__(C=C, max_iter=1)

    monkeypatch.setattr(sklearn.linear_model, "LogisticRegression", OneStep)
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 3, size=60)
    scores = rng.normal(0.0, 1.0, size=(60, 3)) + 2.0 * np.eye(3)[gold]
    report = calibrate(scores[:30], gold[:30], scores[30:], gold[30:], method="platt", score_type="cosine")
    assert any("did not converge" in note for note in report["notes"]), report["notes"]


def test_platt_scaling_refuses_scores_without_spread() -> None:
    with pytest.raises(DataError, match="all 0.5: Platt scaling has no spread"):
        PlattScaling().fit(np.full((4, 2), 0.5), np.array([0, 1, 0, 1]))


def test_unknown_method() -> None:
    with pytest.raises(UnknownNameError, match="temperature"):
        calibrate(np.zeros((2, 2)), np.array([0, 1]), np.zeros((2, 2)), np.array([0, 1]), method="isotonic")


@pytest.mark.parametrize("command, extra", [("calibrate", []), ("template-robustness", ["--template", "It is {}."])])
def test_experiment_reports_record_the_datas_content(zstc_cli, tmp_path, btzsc_dir, command, extra) -> None:
    """calibrate and template-robustness recorded the data folder's path only: a file edited or replaced under the
    same name gave other numbers with the same record. The file's sha256 is now in the settings."""
    from zstc.runs.provenance import sha256_file

    lines = (btzsc_dir / "rottentomatoes.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    data = tmp_path / "data"
    data.mkdir()
    (data / "rottentomatoes.jsonl").write_text("".join(lines[:6] + lines[-6:]), encoding="utf-8")
    out = tmp_path / "report.json"
    code, _, err = zstc_cli(
        command,
        "-m",
        "sentence-transformers/all-MiniLM-L6-v2",
        "--data",
        str(data),
        "--task",
        "rottentomatoes",
        *extra,
        "-o",
        str(out),
    )
    assert code == 0, err
    assert json.loads(out.read_text(encoding="utf-8"))["settings"]["data_sha256"] == sha256_file(
        data / "rottentomatoes.jsonl"
    )


def test_a_temperature_on_its_bound_is_said() -> None:
    """A temperature that ran to the edge of its search range was reported as if fitted, silently."""
    logits, gold = synthetic(3000, temperature=2.5, seed=0)
    assert calibrate(logits, gold, logits, gold, method="temperature")["notes"] == []
    one = calibrate(
        logits[:1], gold[:1], logits, gold, method="temperature"
    )  # one text: the NLL falls all the way to a bound
    assert one["parameters"]["temperature"] in (pytest.approx(0.01, rel=1e-2), pytest.approx(100, rel=1e-2))
    assert len(one["notes"]) == 1 and "bound" in one["notes"][0]


@pytest.mark.parametrize("samples, fraction", [("3", "0.34"), ("4", "0.05")])
def test_calibrate_refuses_a_dev_part_too_small_to_fit(zstc_cli, btzsc_dir, tmp_path, samples, fraction) -> None:
    """A dev part of one text (--max-samples 2 did that) fitted nothing: the temperature silently ran to its bound of 100."""
    code, _, err = zstc_cli(
        "calibrate",
        "-m",
        "sentence-transformers/all-MiniLM-L6-v2",
        "--data",
        str(btzsc_dir),
        "--task",
        "agnews",
        "--max-samples",
        samples,
        "--dev-fraction",
        fraction,
        "--out",
        str(tmp_path / "calib.json"),
    )
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("error: "), err
    assert "dev part" in err and "--max-samples" in err and "--dev-fraction" in err, err
    assert not (tmp_path / "calib.json").exists()
