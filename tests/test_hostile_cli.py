"""Issue 11: usage errors, option ranges and the error line format."""

from __future__ import annotations

import pytest

from calaudit import limits
from calaudit.cli.errors import clean_line
from tests.cli_inprocess import assert_one_line_error, run_cli
from tests.conftest import ROOT


@pytest.fixture
def data(tmp_path):
    path = tmp_path / "d.csv"
    path.write_text("label,prob\n1,0.9\n0,0.2\n1,0.7\n0,0.1\n1,0.6\n0,0.3\n")
    return path


@pytest.mark.parametrize("extra, fragment", [
    (["--seed", "-1"], "'--seed'"),
    (["--n-bins", "0"], "'--n-bins'"),
    (["--alpha", "abc"], "'--alpha'"),
    (["--n-resamples", "0"], "'--n-resamples'"),
    (["--regression-tolerance", "-1"], "'--regression-tolerance'"),
    (["--no-such-option"], "--no-such-option"),
    (["extra.csv"], "extra argument"),
    (["--n-bins", "9223372036854775808"], "'--n-bins'"),
    (["--n-bins", str(10**18)], "'--n-bins'"),
    (["--n-bins", "1000000000"], "'--n-bins'"),
    (["--n-resamples", str(10**12)], "'--n-resamples'"),
    (["--local-resamples", str(10**10)], "'--local-resamples'"),
])
def test_option_errors_are_one_line(data, extra, fragment):
    assert_one_line_error(run_cli("test", data, *extra), "calaudit test:", fragment, "[usage]")


def test_missing_argument_and_dash_file_name(tmp_path):
    assert_one_line_error(run_cli("test"), "Missing argument")
    line = assert_one_line_error(run_cli("test", "-x.csv"), "No such option")
    assert "./-name" in line


@pytest.mark.parametrize("extra, fragment", [
    (["--cov-bandwidth", "1e-300", "--covariates", "label"], "local.cov_bandwidth must be"),
    (["--prob-bandwidth", "inf", "--covariates", "label"], "local.prob_bandwidth must be"),
    (["--bandwidth", "1e-300"], "skce.bandwidth must be a number in [1e-06, 1e+06]"),
    (["--kite-width", "nan"], "kite_prob_kernel_width"),
])
def test_scales_have_a_range(data, extra, fragment):
    assert_one_line_error(run_cli("test", data, *extra), fragment)


@pytest.mark.parametrize("text, fragment", [
    ("n_resamples = 1000000000000\n", "n_resamples must be an integer in [1, 100000]"),
    ("[local]\nn_resamples = 10000000000\n", "local.n_resamples must be an integer"),
    ("[binning]\nn_bins = 1000000000\n", "binning.n_bins must be an integer in [1, 10000]"),
    ("seed = -1\n", "seed must be an integer"),
])
def test_config_counts_have_a_range(data, tmp_path, text, fragment):
    config = tmp_path / "c.toml"
    config.write_text(text)
    assert_one_line_error(run_cli("test", data, "--config", config), fragment)


def test_every_count_range_is_documented():
    text = (ROOT / "docs" / "configuration.md").read_text()
    for key, (low, high) in limits.COUNTS.items():
        assert f"`{key}`" in text, key


def test_every_shape_limit_and_wait_is_documented_with_its_value():
    """docs/configuration.md names each bound of limits.py with its value; the README's
    input and Dask sections and docs/inputs.md list the URL protocols and the waits."""
    from calaudit.data.remote import PROTOCOLS
    from calaudit.scale.dask_waits import WAIT_SECONDS
    from calaudit.settings.sections import DaskConfig

    config = (ROOT / "docs" / "configuration.md").read_text()
    table = [line for line in config.splitlines() if line.startswith("|")]
    for name, shown in (("MAX_COVARIATES", "20"), ("MAX_CATEGORIES", "256"),
                        ("MAX_KERNEL_COLUMNS", "512"), ("DATASET_MAX_FILES", "100,000"),
                        ("DATASET_MAX_DEPTH", "32"), ("DATASET_MAX_ENTRIES", "1,000,000"),
                        ("REPORT_MAX_ROWS", "200"), ("REPORT_MAX_TEXT", "2,000"),
                        ("REMOTE_TIMEOUT", "30 s"), ("REMOTE_LIST_TIMEOUT", "90 s")):
        assert float(shown.replace(",", "").replace(" s", "")) == getattr(limits, name), name
        assert any(f"(`{name}`)" in row and f"| {shown} |" in row for row in table), name
    assert any("(`WAIT_SECONDS`" in row and f"| {WAIT_SECONDS} s |" in row for row in table)
    assert limits.WORKER_MIN_MEMORY == 256 * 2**20 and "256 MiB (`WORKER_MIN_MEMORY`)" in config
    timeout = DaskConfig.__dataclass_fields__["timeout"].default
    readme = (ROOT / "README.md").read_text()
    inputs = (ROOT / "docs" / "inputs.md").read_text()
    for protocol in [*PROTOCOLS, "file"]:
        assert f"`{protocol}://`" in readme and f"`{protocol}://`" in inputs, protocol
    for text in (readme, inputs):
        assert f"{limits.REMOTE_TIMEOUT:g} s" in text
        assert f"{limits.REMOTE_LIST_TIMEOUT:g} s" in text
    assert " ".join(readme.split()).count(f"`dask.timeout` ({timeout:g} s)") >= 1
    assert f"{WAIT_SECONDS} s" in readme


def test_error_line_escapes_control_characters_and_is_bounded():
    line = clean_line("column '\x1b[31mred\x1b[0m': " + "x" * 5000 + " [rule] (hint: h)")
    assert "\x1b" not in line and "\\x1b" in line
    assert len(line) <= 600 and line.endswith("[rule] (hint: h)")
