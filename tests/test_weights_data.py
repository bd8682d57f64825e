"""Row weights as data: ``--weight-col`` in every input format, ``sample_weight=`` in the
API, the validation rules (one line, exit 2), the JSON ``data.weights`` section and the
line that says an audit is weighted."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from calaudit import CalibrationData
from calaudit.exceptions import InputError
from tests.cli_inprocess import assert_one_line_error, run_cli
from tests.conftest import binary_frame, write_frame


def weighted_frame(n: int = 400, seed: int = 3) -> pd.DataFrame:
    frame = binary_frame(n, seed=seed)[["id", "label", "prob"]]
    frame["w"] = np.random.default_rng(seed).integers(0, 4, n).astype(np.float64)
    return frame


@pytest.mark.parametrize("suffix", [".csv", ".parquet", ".npz"])
def test_weight_column_is_read_in_every_format(tmp_path: Path, suffix: str) -> None:
    frame = weighted_frame()
    if suffix == ".npz":
        frame = frame.rename(columns={"w": "weights"})
    path = write_frame(frame, tmp_path / f"preds{suffix}")
    column = "weights" if suffix == ".npz" else "w"
    out = run_cli("metrics", path, "--label-col", "label", "--prob-cols", "prob",
                  "--weight-col", column, "--json", tmp_path / "r.json")
    assert out.code == 0, out.stderr
    weights = json.loads((tmp_path / "r.json").read_text())["data"]["weights"]
    w = frame[column].to_numpy()
    assert weights["sum"] == pytest.approx(w.sum())
    assert weights["effective_sample_size"] == pytest.approx(w.sum() ** 2 / (w ** 2).sum())
    assert (weights["min"], weights["max"]) == (w.min(), w.max())
    assert weights["kind"] == "frequency" and weights["column"] == column
    assert "weighted audit (frequency weights from" in out.stdout


def test_partitioned_dataset_takes_the_weight_column(tmp_path: Path) -> None:
    frame = weighted_frame()
    folder = tmp_path / "dataset"
    folder.mkdir()
    for part, rows in enumerate(np.array_split(np.arange(len(frame)), 3)):
        frame.iloc[rows].to_parquet(folder / f"part-{part}.parquet", index=False)
    out = run_cli("metrics", folder, "--label-col", "label", "--prob-cols", "prob",
                  "--weight-col", "w", "--json", tmp_path / "r.json")
    assert out.code == 0, out.stderr
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["data"]["weights"]["sum"] == pytest.approx(frame["w"].sum())


@pytest.mark.parametrize(("value", "rule"), [
    (-1.0, "negative_weight"), (np.inf, "nonfinite_weight"), (np.nan, "nonfinite_weight"),
    ("heavy", "non_numeric_weight")])
def test_bad_weight_is_one_line_naming_file_column_and_rule(tmp_path: Path, value, rule
                                                             ) -> None:
    frame = weighted_frame().astype({"w": object})
    frame.loc[5, "w"] = value
    path = write_frame(frame, tmp_path / "preds.csv")
    out = run_cli("test", path, "--label-col", "label", "--prob-cols", "prob",
                  "--weight-col", "w")
    assert_one_line_error(out, "preds.csv", "'w'", rule)


def test_all_zero_weights_and_a_missing_column_are_refused(tmp_path: Path) -> None:
    frame = weighted_frame()
    frame["w"] = 0.0
    path = write_frame(frame, tmp_path / "preds.csv")
    out = run_cli("test", path, "--label-col", "label", "--prob-cols", "prob",
                  "--weight-col", "w")
    assert_one_line_error(out, "zero_weights", "hint")
    out = run_cli("test", path, "--label-col", "label", "--prob-cols", "prob",
                  "--weight-col", "mass")
    assert_one_line_error(out, "mass")


def test_drop_invalid_drops_rows_with_bad_weights(tmp_path: Path) -> None:
    frame = weighted_frame()
    frame.loc[[3, 9], "w"] = -2.0
    path = write_frame(frame, tmp_path / "preds.csv")
    out = run_cli("metrics", path, "--label-col", "label", "--prob-cols", "prob",
                  "--weight-col", "w", "--drop-invalid", "--json", tmp_path / "r.json")
    assert out.code == 0, out.stderr
    result = json.loads((tmp_path / "r.json").read_text())
    assert result["inputs"]["rows_excluded"] == {"negative_weight": 2}
    assert result["data"]["weights"]["sum"] == pytest.approx(frame["w"].clip(0).sum())


def test_from_arrays_sample_weight_validation() -> None:
    y, p = np.array([0, 1, 1, 0]), np.array([0.2, 0.7, 0.9, 0.4])
    data = CalibrationData.from_arrays(y, p, sample_weight=[1, 2, 0, 3])
    np.testing.assert_array_equal(data.sample_weight, [1, 2, 0, 3])
    with pytest.raises(InputError, match="'x' at index 2 is not a number"):
        CalibrationData.from_arrays(y, p, sample_weight=np.array(["1", "2", "x", "1"]))
    for weights, rule in (([1, -1, 1, 1], "negative_weight"), ([0, 0, 0, 0], "zero_weights"),
                          ([1, np.nan, 1, 1], "nonfinite_weight"),
                          ([1, 2, 3], "length_mismatch")):
        with pytest.raises(InputError, match=rule):
            CalibrationData.from_arrays(y, p, sample_weight=weights)


def test_frequency_weights_are_whole_numbers() -> None:
    y, p = np.array([0, 1, 1, 0]), np.array([0.2, 0.7, 0.9, 0.4])
    with pytest.raises(InputError, match="fractional_frequency_weight") as error:
        CalibrationData.from_arrays(y, p, sample_weight=[1, 2.5, 1, 1])
    assert "weight_kind='design'" in error.value.one_line()
    data = CalibrationData.from_arrays(y, p, sample_weight=[1, 2.5, 1, 1],
                                       weight_kind="design")
    assert data.weights.kind == "design"


def test_fractional_frequency_weights_are_not_dropped_by_drop_invalid() -> None:
    """A fractional weight says the column holds real-valued weights: dropping its rows
    would bias the audit, so drop_invalid does not apply; other bad rows still drop."""
    y, p = np.array([0, 1, 1, 0, 1]), np.array([0.2, 0.7, 0.9, 0.4, 0.5])
    with pytest.raises(InputError, match="fractional_frequency_weight") as error:
        CalibrationData.from_arrays(y, p, sample_weight=[1, -1, 2.5, 1, 1],
                                    drop_invalid=True)
    assert "drop_invalid" not in error.value.one_line()
    assert "weight_kind='design'" in error.value.one_line()
    kept = CalibrationData.from_arrays(y, p, sample_weight=[1, -1, 2, 1, 1], drop_invalid=True)
    assert kept.n == 4


def test_negative_rate_weights_negatives_back() -> None:
    y, p = np.array([0, 1, 1, 0]), np.array([0.2, 0.7, 0.9, 0.4])
    data = CalibrationData.from_arrays(y, p, negative_rate=0.25)
    np.testing.assert_array_equal(data.sample_weight, [4, 1, 1, 4])
    with pytest.raises(InputError, match="sampling_rate_range"):
        CalibrationData.from_arrays(y, p, negative_rate=1.5)
    with pytest.raises(InputError, match="sampling_needs_binary"):
        CalibrationData.from_arrays([0, 1, 2], np.full((3, 3), 1 / 3), negative_rate=0.5)


def test_sampling_rate_column_and_bad_rates(tmp_path: Path) -> None:
    frame = weighted_frame()
    frame["rate"] = 0.5
    path = write_frame(frame, tmp_path / "preds.csv")
    out = run_cli("metrics", path, "--label-col", "label", "--prob-cols", "prob",
                  "--sampling-rate-col", "rate", "--json", tmp_path / "r.json")
    assert out.code == 0, out.stderr
    weights = json.loads((tmp_path / "r.json").read_text())["data"]["weights"]
    negatives = int((frame["label"] == 0).sum())
    assert weights["sum"] == pytest.approx(len(frame) + negatives)
    assert weights["label_dependent"] is True
    frame.loc[7, "rate"] = 0.0
    write_frame(frame, path)
    out = run_cli("metrics", path, "--label-col", "label", "--prob-cols", "prob",
                  "--sampling-rate-col", "rate")
    assert_one_line_error(out, "'rate'", "sampling_rate_range")


def test_weight_column_cannot_double_as_a_prediction(tmp_path: Path) -> None:
    path = write_frame(weighted_frame(), tmp_path / "preds.csv")
    out = run_cli("test", path, "--label-col", "label", "--prob-cols", "prob",
                  "--weight-col", "prob")
    assert_one_line_error(out, "conflicting_options")


def test_bad_weight_kind_is_a_usage_error(tmp_path: Path) -> None:
    path = write_frame(weighted_frame(), tmp_path / "preds.csv")
    out = run_cli("test", path, "--label-col", "label", "--prob-cols", "prob",
                  "--weight-col", "w", "--weight-kind", "survey")
    assert_one_line_error(out, "weight_kind")


def test_reports_say_the_audit_is_weighted(tmp_path: Path) -> None:
    path = write_frame(weighted_frame(), tmp_path / "preds.csv")
    out = run_cli("test", path, "--label-col", "label", "--prob-cols", "prob",
                  "--weight-col", "w", "--weight-kind", "design", "--n-resamples", "99",
                  "--md", tmp_path / "r.md", "--html", tmp_path / "r.html")
    assert out.code in (0, 1), out.stderr
    for name in ("r.md", "r.html"):
        text = (tmp_path / name).read_text()
        assert "weighted audit (design weights" in text and "effective sample size" in text


def test_weights_from_the_configuration_file(tmp_path: Path) -> None:
    path = write_frame(weighted_frame(), tmp_path / "preds.csv")
    config = tmp_path / "calaudit.toml"
    config.write_text('[data]\nweight_col = "w"\nweight_kind = "design"\n')
    out = run_cli("metrics", path, "--label-col", "label", "--prob-cols", "prob",
                  "--config", config, "--json", tmp_path / "r.json")
    assert out.code == 0, out.stderr
    weights = json.loads((tmp_path / "r.json").read_text())["data"]["weights"]
    assert weights["kind"] == "design" and weights["column"] == "w"
    config.write_text('[data]\nweight_col = "w"\nnegative_rate = 0\n')
    out = run_cli("metrics", path, "--label-col", "label", "--prob-cols", "prob",
                  "--config", config)
    assert_one_line_error(out, "negative_rate")


@pytest.mark.parametrize("weights, kind, rule", [
    ([1e308, 1, 1, 1], "design", "weight_range"), ([1e-300, 1, 1, 1], "design", "weight_range"),
    ([1e101, 1, 1, 1], "frequency", "weight_range"),
    ([2.0 ** 52, 2.0 ** 52, 2.0 ** 52, 1], "frequency", "frequency_weight_total")])
def test_weights_beyond_what_float64_sums_hold_are_refused(weights, kind, rule) -> None:
    y, p = np.array([0, 1, 1, 0]), np.array([0.2, 0.7, 0.9, 0.4])
    with pytest.raises(InputError, match=rule):
        CalibrationData.from_arrays(y, p, sample_weight=weights, weight_kind=kind)


def test_effective_sample_size_does_not_depend_on_the_scale_of_the_weights() -> None:
    from calaudit.data.weights import kish

    w = np.random.default_rng(0).uniform(0.5, 2.0, 1000)
    reference = w.sum() ** 2 / (w ** 2).sum()
    for scale_factor in (1e-99, 1.0, 1e99):
        assert kish(w * scale_factor) == pytest.approx(reference, rel=1e-12)
    assert kish(np.zeros(3)) == 0.0
