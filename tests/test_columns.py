"""Column autodetection, explicit options and label mapping."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from calaudit.data.columns import class_suffixes
from calaudit.data.load import load
from calaudit.exceptions import InputError
from tests.conftest import binary_frame, multiclass_frame, write_frame


def test_autodetects_label_and_probability(binary_csv):
    data = load(binary_csv)
    assert data.provenance.label_column == "label"
    assert data.provenance.score_columns == ("prob",)


def test_autodetects_multiclass_family(multiclass_csv):
    data = load(multiclass_csv)
    assert data.provenance.score_columns == ("p_c0", "p_c1", "p_c2", "p_c3")
    assert data.classes == ("c0", "c1", "c2", "c3")


def test_ambiguous_probability_names_the_candidates(tmp_path):
    frame = binary_frame().assign(score=0.5)
    with pytest.raises(InputError, match="prob; score") as info:
        load(write_frame(frame, tmp_path / "a.csv"))
    assert info.value.rule == "ambiguous_column"


def test_ambiguous_label_names_the_candidates(tmp_path):
    frame = binary_frame().assign(y=1)
    with pytest.raises(InputError, match="label, y") as info:
        load(write_frame(frame, tmp_path / "a.csv"))
    assert "--label-col" in info.value.hint


def test_explicit_options_win(tmp_path):
    frame = binary_frame().assign(score=0.5, y=1)
    data = load(write_frame(frame, tmp_path / "a.csv"), label_col="label", prob_cols="prob")
    assert data.provenance.score_columns == ("prob",)


def test_missing_explicit_column_suggests_close_match(binary_csv):
    with pytest.raises(InputError) as info:
        load(binary_csv, prob_cols="proba")
    assert info.value.rule == "missing_column"
    assert "did you mean 'prob'" in info.value.hint
    assert "label" in info.value.hint


def test_glob_and_list_prob_cols(multiclass_csv):
    by_glob = load(multiclass_csv, prob_cols="p_*")
    by_list = load(multiclass_csv, prob_cols="p_c0,p_c1,p_c2,p_c3")
    np.testing.assert_array_equal(by_glob.y_proba, by_list.y_proba)
    assert by_glob.classes == by_list.classes


def test_class_suffixes_cut_at_separator():
    assert class_suffixes(["p_cat", "p_dog"]) == ["cat", "dog"]
    assert class_suffixes(["p_10", "p_11"]) == ["10", "11"]
    assert class_suffixes(["cat", "dog"]) == ["cat", "dog"]


def test_integer_labels_match_integer_class_names(tmp_path):
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(3), 40)
    frame = pd.DataFrame({f"p_{k + 1}": probs[:, k] for k in range(3)})
    frame["label"] = rng.integers(1, 4, 40)  # 1-based, like CIFAR-10's labels.csv
    data = load(write_frame(frame, tmp_path / "m.csv"))
    np.testing.assert_array_equal(data.y_true, frame["label"].to_numpy() - 1)


def test_integer_labels_are_positions_for_named_classes(tmp_path):
    frame = multiclass_frame()
    frame["y"] = [int(s[1:]) for s in frame["y"]]
    data = load(write_frame(frame, tmp_path / "m.csv"))
    np.testing.assert_array_equal(data.y_true, frame["y"].to_numpy())


def test_logit_columns_softmax(tmp_path):
    logits = np.array([[1.0, 2.0, 0.5], [0.0, 0.0, 3.0], [2.0, 1.0, 1.0]])
    frame = pd.DataFrame(logits, columns=["logit_a", "logit_b", "logit_c"])
    frame["label"] = ["a", "c", "b"]
    data = load(write_frame(frame, tmp_path / "l.csv"), require_two_classes=False)
    expected = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(data.y_proba, expected, rtol=1e-15)
    assert data.provenance.score_kind == "logit"


def test_single_logit_is_sigmoid(tmp_path):
    frame = pd.DataFrame({"label": [0, 1, 1], "z": [0.0, 2.0, -1.0]})
    data = load(write_frame(frame, tmp_path / "l.csv"), logit_cols="z")
    np.testing.assert_allclose(data.positive_proba, 1 / (1 + np.exp(-frame["z"])))


def test_string_binary_labels_with_usual_positive_name(tmp_path):
    frame = binary_frame()
    frame["label"] = np.where(frame["label"] == 1, "yes", "no")
    data = load(write_frame(frame, tmp_path / "s.csv"))
    assert data.classes == ("no", "yes")
    np.testing.assert_array_equal(data.y_true, (frame["label"] == "yes").astype(int))


def test_string_binary_labels_need_positive_label(tmp_path):
    frame = binary_frame()
    frame["label"] = np.where(frame["label"] == 1, "default", "repaid")
    path = write_frame(frame, tmp_path / "s.csv")
    with pytest.raises(InputError) as info:
        load(path)
    assert info.value.rule == "positive_label" and "--positive-label" in info.value.hint
    data = load(path, positive_label="default")
    assert data.classes == ("repaid", "default")


def test_categorical_integer_codes(tmp_path):
    frame = binary_frame().assign(region=lambda f: f["age"] % 3 + 1)
    path = write_frame(frame, tmp_path / "c.csv")
    data = load(path, covariates="age,region", categorical="region")
    region = data.covariate("region")
    assert region.kind == "categorical" and region.categories == ("1", "2", "3")
    assert data.covariate("age").kind == "numeric"


def test_categorical_must_be_a_covariate(binary_csv):
    with pytest.raises(InputError, match="not a covariate"):
        load(binary_csv, covariates="age", categorical="race")


def test_separate_files_joined_on_id(tmp_path):
    frame = binary_frame()
    preds = write_frame(frame[["id", "prob"]], tmp_path / "preds.csv")
    shuffled = frame[["id", "label"]].sample(frac=1.0, random_state=0)
    labels = write_frame(shuffled, tmp_path / "labels.parquet")
    covs = write_frame(frame[["id", "age", "race"]].iloc[::-1], tmp_path / "covs.csv")
    data = load(preds, labels=labels, covariates_file=covs, covariates="age,race", id_col="id")
    whole = load(write_frame(frame, tmp_path / "all.csv"), covariates="age,race")
    np.testing.assert_array_equal(data.y_true, whole.y_true)
    np.testing.assert_array_equal(data.covariate("age").values, whole.covariate("age").values)
    assert [f.role for f in data.provenance.files] == ["predictions", "labels", "covariates"]


def test_separate_files_by_row_order(tmp_path):
    frame = binary_frame()
    preds = write_frame(frame[["prob"]], tmp_path / "preds.csv")
    labels = write_frame(frame[["label"]], tmp_path / "labels.csv")
    data = load(preds, labels=labels)
    np.testing.assert_array_equal(data.y_true, frame["label"].to_numpy())


def test_from_arrays_matches_file_path(binary_csv):
    frame = pd.read_csv(binary_csv)
    from_file = load(binary_csv)
    from calaudit.data.dataset import CalibrationData

    arrays = CalibrationData.from_arrays(frame["label"].to_numpy(), frame["prob"].to_numpy())
    np.testing.assert_array_equal(arrays.y_proba, from_file.y_proba)
    np.testing.assert_array_equal(arrays.y_true, from_file.y_true)


def test_data_object_is_immutable(binary_csv):
    data = load(binary_csv)
    with pytest.raises(ValueError):
        data.y_proba[0, 0] = 0.5
    with pytest.raises(AttributeError):
        data.classes = ("a", "b")  # type: ignore[misc]
