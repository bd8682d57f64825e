"""Readers agree across formats, and unreadable files fail cleanly."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from calaudit.data.load import load
from calaudit.exceptions import InputError
from calaudit.metrics.ece import expected_calibration_error
from tests.conftest import SAMPLE, binary_frame, multiclass_frame, write_frame

FORMATS = ["csv", "tsv", "csv.gz", "tsv.gz", "parquet", "npz"]


@pytest.mark.parametrize("suffix", FORMATS)
def test_binary_formats_give_identical_data(tmp_path, suffix):
    frame = binary_frame()
    reference = load(write_frame(frame, tmp_path / "ref.csv"), covariates="age,race")
    data = load(write_frame(frame, tmp_path / f"preds.{suffix}"), covariates="age,race")
    np.testing.assert_array_equal(data.y_proba, reference.y_proba)
    np.testing.assert_array_equal(data.y_true, reference.y_true)
    assert data.classes == reference.classes == ("0", "1")
    for ours, theirs in zip(data.covariates, reference.covariates):
        assert ours.kind == theirs.kind and ours.categories == theirs.categories
        np.testing.assert_array_equal(ours.values, theirs.values)


@pytest.mark.parametrize("suffix", FORMATS)
def test_multiclass_formats_give_identical_data(tmp_path, suffix):
    frame = multiclass_frame()
    reference = load(write_frame(frame, tmp_path / "ref.csv"))
    data = load(write_frame(frame, tmp_path / f"multi.{suffix}"))
    assert data.classes == reference.classes == ("c0", "c1", "c2", "c3")
    np.testing.assert_array_equal(data.y_proba, reference.y_proba)
    np.testing.assert_array_equal(data.y_true, reference.y_true)


def test_bundled_sample_formats_agree_on_metrics():
    values = []
    for name in ("credit_default.csv", "credit_default.parquet", "credit_default.npz"):
        data = load(SAMPLE / name, covariates="age,race")
        values.append(expected_calibration_error(data.y_true, data.y_proba))
        assert data.n == 4000 and data.covariate("race").categories == ("A", "B", "C")
    assert values[0] == values[1] == values[2]


def test_npz_two_dimensional_probs_with_class_names(tmp_path):
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), 50)
    path = tmp_path / "m.npz"
    np.savez(path, probs=probs, labels=rng.integers(0, 3, 50),
             class_names=np.array(["cat", "dog", "owl"]),
             covariates=rng.normal(size=(50, 2)), covariate_names=np.array(["a", "b"]))
    data = load(path, covariates="a,b")
    assert data.classes == ("cat", "dog", "owl")
    np.testing.assert_array_equal(data.y_proba, probs)
    assert data.covariate_names == ("a", "b")


def test_npz_object_array_is_refused(tmp_path):
    path = tmp_path / "evil.npz"
    np.savez(path, probs=np.array([0.1, 0.9]), labels=np.array([0, 1], dtype=object))
    with pytest.raises(InputError, match="object array") as info:
        load(path)
    assert info.value.rule == "npz_object_array"


def test_truncated_gzip_is_unreadable(tmp_path):
    path = write_frame(binary_frame(), tmp_path / "p.csv.gz")
    raw = path.read_bytes()
    path.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(InputError) as info:
        load(path)
    assert info.value.rule == "unreadable_file"


def test_truncated_parquet_is_unreadable(tmp_path):
    path = write_frame(binary_frame(), tmp_path / "p.parquet")
    path.write_bytes(path.read_bytes()[:200])
    with pytest.raises(InputError) as info:
        load(path)
    assert info.value.rule == "unreadable_file"


def test_binary_garbage_with_csv_suffix_is_unreadable(tmp_path):
    path = tmp_path / "p.csv"
    path.write_bytes(gzip.compress(b"label,prob\n1,0.5\n"))
    with pytest.raises(InputError) as info:
        load(path)
    assert info.value.rule in {"unreadable_file", "missing_column"}


def test_unknown_suffix(tmp_path):
    path = tmp_path / "p.xlsx"
    path.write_text("x")
    with pytest.raises(InputError, match="unsupported file type") as info:
        load(path)
    assert info.value.rule == "unsupported_format"


def test_missing_file(tmp_path):
    with pytest.raises(InputError) as info:
        load(tmp_path / "nope.csv")
    assert info.value.rule == "file_not_found"
