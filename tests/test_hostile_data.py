"""Issue 11: broken and hostile data files end in one line and exit 2 (or are accepted
for a documented reason)."""

from __future__ import annotations

import errno
import io
import os
import zipfile

import numpy as np
import pandas as pd
import pytest

from calaudit.files import describe_os_error
from tests.cli_inprocess import assert_one_line_error, run_cli
from tests.conftest import binary_frame, write_frame


def csv(tmp_path, text, name="d.csv"):
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


ROWS = "".join(f"{i % 2},0.{i + 1}\n" for i in range(8))


@pytest.mark.parametrize("text, fragments", [
    ("label,prob\n" + ROWS + "1,0.99,extra\n", ["line 10 (data row 9) has 3 fields",
                                                  "[ragged_row]"]),
    ('label,prob\n"1",0.5\n' + ROWS + "1,0.99,extra\n", ["line 11", "[ragged_row]"]),
    ("label,prob,prob\n1,0.5,0.5\n0,0.5,0.5\n", ["column 'prob'", "[duplicate_column]"]),
    ("label,label,prob\n1,1,0.5\n0,0,0.5\n", ["column 'label'", "[duplicate_column]"]),
    ("label;prob\n1;0.5\n0;0.4\n", ["separated by ';'", "[delimiter]"]),
    (b"label,prob\n1,0.5\n0,0.\xff4\n", ["line 3 (data row 2) is not UTF-8", "[encoding]"]),
])
def test_broken_csv(tmp_path, text, fragments):
    assert_one_line_error(run_cli("metrics", csv(tmp_path, text)), *fragments)


def test_quoted_delimiters_are_not_extra_fields(tmp_path):
    path = csv(tmp_path, 'label,prob,note\n' + "".join(
        f'{i % 2},0.{i + 1},"a, b"\n' for i in range(8)))
    assert run_cli("metrics", path, "-q").code in (0, 1)


def test_duplicate_covariate_names(tmp_path):
    path = csv(tmp_path, "label,prob,age,age\n1,0.5,3,4\n0,0.4,5,6\n")
    assert_one_line_error(run_cli("metrics", path, "--covariates", "age"), "column 'age'",
                          "[duplicate_column]")


def _npz_bytes(**arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def _huge_header_npz(path):
    buf = io.BytesIO()
    np.save(buf, np.arange(2.0))
    raw = buf.getvalue()
    header = "{'descr': '<f8', 'fortran_order': False, 'shape': (1099511627776,), }"
    header = header.ljust(118) + "\n"
    member = b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode()
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("probs.npy", member + raw[128:])
        archive.writestr("labels.npy", _npy(np.arange(2)))


def _npy(array):
    buf = io.BytesIO()
    np.save(buf, array)
    return buf.getvalue()


def test_npz_that_is_not_a_plain_archive(tmp_path):
    probs, labels = np.array([0.1, 0.9, 0.3, 0.7]), np.array([0, 1, 0, 1])
    (tmp_path / "renamed.npz").write_bytes(_npy(probs))
    assert_one_line_error(run_cli("metrics", tmp_path / "renamed.npz"), "not an NPZ archive")
    extra = tmp_path / "extra.npz"
    extra.write_bytes(_npz_bytes(probs=probs, labels=labels))
    with zipfile.ZipFile(extra, "a") as archive:
        archive.writestr("notes.txt", "hello")
    assert_one_line_error(run_cli("metrics", extra), "member 'notes.txt' is not a .npy")
    bad = tmp_path / "bad.npz"
    with zipfile.ZipFile(bad, "w") as archive:
        archive.writestr("probs.npy", b"\x93NUMPY\x01\x00\x10\x00{garbage}      \n")
        archive.writestr("labels.npy", _npy(labels))
    assert_one_line_error(run_cli("metrics", bad), "array 'probs': bad .npy header")
    huge = tmp_path / "huge.npz"
    _huge_header_npz(huge)
    assert_one_line_error(run_cli("metrics", huge), "declares shape (1099511627776,)")
    complex_ = tmp_path / "complex.npz"
    complex_.write_bytes(_npz_bytes(probs=probs + 1j, labels=labels))
    assert_one_line_error(run_cli("metrics", complex_), "complex128", "[npz_dtype]")


def test_renormalize_refuses_an_all_zero_row(tmp_path):
    path = csv(tmp_path, "label,p_a,p_b\na,0.5,0.5\nb,0,0\na,0.2,0.2\n")
    assert_one_line_error(run_cli("metrics", path, "--renormalize"), "every class probability "
                          "is 0", "first at data row 2", "[zero_probability_row]")


def test_parquet_nested_and_timestamp_columns(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 40
    frame = binary_frame(n)
    table = pa.table({"label": frame["label"], "prob": frame["prob"],
                      "tags": pa.array([[1, 2]] * n),
                      "attrs": pa.array([[("a", 1)]] * n, pa.map_(pa.string(), pa.int64())),
                      "when": pa.array(pd.to_datetime(frame["prob"] * 1e9))})
    path = tmp_path / "d.parquet"
    pq.write_table(table, path)
    for column in ("tags", "attrs"):
        assert_one_line_error(run_cli("metrics", path, "--covariates", column),
                              f"column '{column}'", "one value per cell")
    assert_one_line_error(run_cli("metrics", path, "--prob-cols", "when"), "timestamps")


def test_errors_name_the_right_column_and_row(tmp_path):
    rows = ["a,0.5,0.5"] * 8
    rows[1], rows[7] = "b,0.5,nan", "b,nan,0.5"
    path = csv(tmp_path, "label,p_a,p_b\n" + "\n".join(rows) + "\n")
    assert_one_line_error(run_cli("metrics", path), "column 'p_b'", "first at data row 2",
                          "(value nan)")
    rows = ["a,0.5,0.5"] * 8
    rows[1], rows[7] = "b,0.5,1.5", "b,-1,0.5"
    path = csv(tmp_path, "label,p_a,p_b\n" + "\n".join(rows) + "\n")
    assert_one_line_error(run_cli("metrics", path, "--renormalize"), "column 'p_b'",
                          "first at data row 2", "(value 1.5)")


def test_joined_files_name_the_predictions_row_and_id(tmp_path):
    preds = csv(tmp_path, "id,prob\nx1,0.5\nx2,0.4\nx9,0.3\nx4,0.2\n", "p.csv")
    labels = csv(tmp_path, "id,label\nx1,1\nx2,0\nx3,1\nx4,\n", "l.csv")
    line = assert_one_line_error(run_cli("metrics", preds, "--labels", labels, "--id-col", "id"),
                                 "p.csv: column 'id'", "no match in", "l.csv",
                                 "first at data row 3", "(value 'x9')", "[unmatched_id]")
    labels.write_text("id,label\nx1,1\nx2,\nx9,1\nx4,0\n")
    line = assert_one_line_error(run_cli("metrics", preds, "--labels", labels, "--id-col", "id"),
                                 "l.csv: column 'label'", "[missing_label]")
    assert "first at data row 2 of" in line and "p.csv (id 'x2')" in line


def test_positive_label_that_does_not_occur(tmp_path):
    path = write_frame(binary_frame(40), tmp_path / "d.csv")
    line = assert_one_line_error(run_cli("metrics", path, "--positive-label", "7"),
                                 "--positive-label '7' is not one of the labels ('0', '1')")
    assert "not 7" not in line


def test_long_values_and_names_are_shortened_and_escapes_shown(tmp_path):
    big = "9" * 2_000_000
    path = csv(tmp_path, f"label,prob\n1,0.5\n0,{big}x\n")
    line = assert_one_line_error(run_cli("metrics", path), "[non_numeric_probability]")
    assert len(line) < 600
    name = "\x1b[31m" + "n" * 100_000
    path = csv(tmp_path, f"label,{name}\n1,0.5\n0,0.4\n", "n.csv")
    line = assert_one_line_error(run_cli("metrics", path, "--prob-cols", "x"))
    assert "\x1b" not in line and len(line) <= 600


def test_special_files_as_data(tmp_path):
    loop = tmp_path / "loop.csv"
    os.symlink(loop, loop)
    assert_one_line_error(run_cli("metrics", loop), "symbolic link loop", "[symlink_loop]")
    fifo = tmp_path / "f.csv"
    os.mkfifo(fifo)
    assert_one_line_error(run_cli("metrics", fifo), "FIFO", "[not_a_file]")
    assert_one_line_error(run_cli("metrics", "/dev/null", "--labels", "/dev/zero"), "device",
                          "[not_a_file]")
    folder = tmp_path / "dir.csv"
    folder.mkdir()
    # a directory is a dataset: an empty one is one line
    assert_one_line_error(run_cli("metrics", folder), "directory holds no data file",
                          "[empty_dataset]")
    data = write_frame(binary_frame(40), tmp_path / "ok.csv")
    assert_one_line_error(run_cli("metrics", data, "--labels", fifo), "FIFO")
    assert_one_line_error(run_cli("metrics", data, "--covariates-file", loop), "link loop")


def test_permission_denied_is_described():
    problem = describe_os_error(PermissionError(errno.EACCES, "Permission denied"))
    assert "permission denied" in problem.message and problem.rule == "permission_denied"


@pytest.mark.skipif(os.geteuid() == 0, reason="root ignores directory permissions")
def test_data_in_a_directory_without_search_permission(tmp_path):
    folder = tmp_path / "closed"
    folder.mkdir()
    path = write_frame(binary_frame(40), folder / "d.csv")
    folder.chmod(0o600)
    try:
        assert_one_line_error(run_cli("metrics", path), "permission denied")
    finally:
        folder.chmod(0o755)


def test_no_warning_reaches_stderr(tmp_path):
    path = csv(tmp_path, "label,prob\n1e300,0.5\n0,0.4\n1,0.3\n")
    assert_one_line_error(run_cli("metrics", path), "[unknown_label]")


@pytest.mark.parametrize("option, spec", [("--prob-cols", ",,,"), ("--logit-cols", ",")])
def test_empty_column_lists(tmp_path, option, spec):
    path = write_frame(binary_frame(40), tmp_path / "d.csv")
    assert_one_line_error(run_cli("metrics", path, option, spec), "names no column")


def test_huge_covariate_values_render(tmp_path):
    frame = binary_frame(120)
    frame["x"] = np.where(np.arange(120) % 2 == 0, 1e308, -1e308)
    path = write_frame(frame, tmp_path / "d.csv")
    outcome = run_cli("test", path, "--covariates", "x", "--n-resamples", "20",
                      "--local-resamples", "20", "--html", tmp_path / "r.html", "-q")
    assert outcome.code in (0, 1) and outcome.stderr == "", outcome.stderr
    assert (tmp_path / "r.html").stat().st_size > 1000


@pytest.mark.parametrize("newline", ["\r", "\r\n"])
def test_ragged_rows_with_other_line_ends(tmp_path, newline):
    rows = ["label,prob", *[f"{i % 2},0.{i + 1}" for i in range(6)]]
    path = csv(tmp_path, newline.join(rows) + newline)
    assert run_cli("metrics", path, "-q").code in (0, 1)
    path = csv(tmp_path, newline.join([*rows, "1,0.9,x"]) + newline)
    assert_one_line_error(run_cli("metrics", path), "line 8 (data row 7) has 3 fields")


def test_corrupt_gzip_is_unreadable(tmp_path):
    import gzip

    data = gzip.compress(("label,prob\n" + ROWS * 50).encode())
    path = csv(tmp_path, data[: len(data) // 2], "d.csv.gz")
    assert_one_line_error(run_cli("metrics", path), "[unreadable_file]")


@pytest.mark.parametrize("folder, fragment", [
    ("missing", "the spill directory does not exist"),
    ("d.csv", "the spill directory is not a directory"),
    ("d.csv/sub", "cannot use the spill directory"),
    ("s" * 300, "cannot use the spill directory"),
])
def test_a_spill_directory_that_cannot_be_used_is_one_line(tmp_path, folder, fragment):
    write_frame(binary_frame(60), tmp_path / "d.csv")
    assert_one_line_error(run_cli("metrics", "d.csv", "--spill", "always", "--spill-dir",
                                  folder, cwd=tmp_path), fragment, "[spill_failed]")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.csv"]
