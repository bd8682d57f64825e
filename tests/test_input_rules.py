"""Every bad input of design notes 2.2: exit code 2, one stderr line naming file, column
and rule, nothing written; ``--drop-invalid`` drops and counts instead."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from calaudit.cli.app import app
from tests.conftest import binary_frame, multiclass_frame, write_frame

runner = CliRunner()


def run_cli(*args):
    return runner.invoke(app, [str(a) for a in args])


def assert_input_error(result, *fragments):
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("calaudit: error:")
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    assert "Traceback" not in result.output


def bad_binary(tmp_path, edit, name="bad.csv"):
    frame = binary_frame(50)
    edit(frame)
    return write_frame(frame, tmp_path / name)


CASES = {
    "nan_probability": (lambda f: f.__setitem__("prob", f["prob"].where(f.index != 3)),
                        ["column 'prob'", "nonfinite_probability", "data row 4"]),
    "inf_probability": (lambda f: f.__setitem__("prob", f["prob"].where(f.index != 5, np.inf)),
                        ["column 'prob'", "nonfinite_probability"]),
    "out_of_range": (lambda f: f.__setitem__("prob", f["prob"].where(f.index != 7, 1.2)),
                     ["column 'prob'", "probability_out_of_range", "value 1.2"]),
    "negative": (lambda f: f.__setitem__("prob", f["prob"].where(f.index != 7, -0.1)),
                 ["probability_out_of_range"]),
    "missing_label": (
        lambda f: f.__setitem__("label", f["label"].astype(float).where(f.index != 2)),
        ["column 'label'", "missing_label", "data row 3"]),
    "unknown_label": (lambda f: f.__setitem__("label", f["label"].where(f.index != 9, 2)),
                      ["column 'label'", "unknown_label", "data row 10"]),
    "missing_covariate": (
        lambda f: f.__setitem__("age", f["age"].astype(float).where(f.index != 1)),
        ["column 'age'", "missing_covariate"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_row_rule_fails_with_exit_2_and_writes_nothing(tmp_path, case):
    edit, fragments = CASES[case]
    path = bad_binary(tmp_path, edit)
    out = tmp_path / "result.json"
    result = run_cli("test", path, "--covariates", "age,race", "--json", out)
    assert_input_error(result, str(path), *fragments)
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [path]


@pytest.mark.parametrize("case", sorted(CASES))
def test_drop_invalid_drops_and_counts(tmp_path, case):
    edit, _ = CASES[case]
    path = bad_binary(tmp_path, edit)
    out = tmp_path / "result.json"
    result = run_cli("test", path, "--covariates", "age,race", "--drop-invalid", "--exit-zero",
                     "--json", out)
    assert result.exit_code == 0, result.output
    inputs = json.loads(out.read_text())["inputs"]
    assert inputs["rows_read"] == 50 and inputs["rows_used"] == 49
    assert sum(inputs["rows_excluded"].values()) == 1


def test_multiclass_rows_must_sum_to_one(tmp_path):
    frame = multiclass_frame(30)
    frame.loc[4, "p_c0"] += 0.01
    path = write_frame(frame, tmp_path / "m.csv")
    assert_input_error(run_cli("test", path), "probabilities_not_summing_to_one", "--renormalize")
    out = tmp_path / "r.json"
    result = run_cli("test", path, "--renormalize", "--json", out)
    assert result.exit_code == 0, result.output
    assert json.loads(out.read_text())["inputs"]["rows_renormalized"] >= 1


def test_multiclass_sum_within_tolerance_is_accepted(tmp_path):
    frame = multiclass_frame(30)
    frame.loc[4, "p_c0"] += 5e-7
    assert run_cli("test", write_frame(frame, tmp_path / "m.csv")).exit_code == 0


def test_unknown_string_label_in_multiclass(tmp_path):
    frame = multiclass_frame(30)
    frame.loc[6, "y"] = "c9"
    assert_input_error(run_cli("test", write_frame(frame, tmp_path / "m.csv")),
                       "column 'y'", "unknown_label", "c0, c1, c2, c3")


def test_missing_column_lists_available(tmp_path):
    path = write_frame(binary_frame(20), tmp_path / "p.csv")
    assert_input_error(run_cli("test", path, "--label-col", "target"),
                       "column 'target'", "missing_column", "available columns: id, label")


def test_missing_covariate_column(tmp_path):
    path = write_frame(binary_frame(20), tmp_path / "p.csv")
    assert_input_error(run_cli("test", path, "--covariates", "age,sex"),
                       "column 'sex'", "missing_column")


def test_fewer_than_two_rows(tmp_path):
    path = write_frame(binary_frame(20).head(1), tmp_path / "p.csv")
    assert_input_error(run_cli("test", path), "too_few_rows")


def test_empty_file_after_header(tmp_path):
    path = write_frame(binary_frame(20).head(0), tmp_path / "p.csv")
    assert_input_error(run_cli("test", path), "too_few_rows")


def test_single_class_present(tmp_path):
    frame = binary_frame(20).assign(label=1)
    path = write_frame(frame, tmp_path / "p.csv")
    assert_input_error(run_cli("test", path), "column 'label'", "single_class")
    assert run_cli("metrics", path).exit_code == 0


def test_length_mismatch_between_files(tmp_path):
    frame = binary_frame(20)
    preds = write_frame(frame[["prob"]], tmp_path / "preds.csv")
    labels = write_frame(frame[["label"]].head(15), tmp_path / "labels.csv")
    assert_input_error(run_cli("test", preds, "--labels", labels),
                       str(labels), "length_mismatch", "--id-col")


def test_unmatched_and_duplicate_ids(tmp_path):
    frame = binary_frame(20)
    preds = write_frame(frame[["id", "prob"]], tmp_path / "preds.csv")
    labels = write_frame(frame[["id", "label"]].head(18), tmp_path / "labels.csv")
    assert_input_error(run_cli("test", preds, "--labels", labels, "--id-col", "id"),
                       "unmatched_id")
    out = tmp_path / "r.json"
    result = run_cli("test", preds, "--labels", labels, "--id-col", "id", "--drop-invalid",
                     "--json", out)
    assert result.exit_code == 0
    assert json.loads(out.read_text())["inputs"]["rows_excluded"] == {"unmatched_id": 2}
    dup = write_frame(pd.concat([frame[["id", "label"]], frame[["id", "label"]].head(1)]),
                      tmp_path / "dup.csv")
    assert_input_error(run_cli("test", preds, "--labels", dup, "--id-col", "id"),
                       "duplicate_id")


def test_non_numeric_probability(tmp_path):
    frame = binary_frame(20).astype({"prob": object})
    frame.loc[3, "prob"] = "high"
    assert_input_error(run_cli("test", write_frame(frame, tmp_path / "p.csv")),
                       "column 'prob'", "non_numeric_probability", "'high'")


def test_unreadable_file(tmp_path):
    path = tmp_path / "p.parquet"
    path.write_bytes(b"PAR1 this is not parquet")
    assert_input_error(run_cli("test", path), str(path), "unreadable_file")


def test_npz_object_array_via_cli(tmp_path):
    path = tmp_path / "evil.npz"
    np.savez(path, probs=np.array([0.1, 0.9, 0.4]), labels=np.array([0, 1, 1], dtype=object))
    assert_input_error(run_cli("test", path), "npz_object_array")


def test_drop_invalid_counts_each_row_under_its_first_rule(tmp_path):
    frame = binary_frame(40)
    frame.loc[1, "prob"] = np.nan
    frame.loc[2, "prob"] = 1.5
    frame.loc[3, "label"] = 7
    frame.loc[4, "prob"] = 2.0
    frame.loc[4, "label"] = 7
    out = tmp_path / "r.json"
    result = run_cli("test", write_frame(frame, tmp_path / "p.csv"), "--drop-invalid",
                     "--json", out)
    assert result.exit_code == 0
    excluded = json.loads(out.read_text())["inputs"]["rows_excluded"]
    assert excluded == {"nonfinite_probability": 1, "probability_out_of_range": 2,
                        "unknown_label": 1}
