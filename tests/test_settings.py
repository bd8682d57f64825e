"""The configuration layer: schema walk, coercion, sources, precedence, error messages."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field

import pytest

from calaudit.audit.config import AuditConfig, ThresholdConfig
from calaudit.exceptions import ConfigError
from calaudit.settings import cli_roots
from calaudit.settings.resolve import combined_schema, resolve
from calaudit.settings.schema import Leaf, Mismatch, Table, build_schema, coerce, schema_node
from calaudit.settings.show import init_template, show_json, show_text

ROOTS = cli_roots()


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path, monkeypatch):
    """Labels are relative to the working directory: run each test in its tmp_path."""
    monkeypatch.chdir(tmp_path)


def write(path, text):
    path.write_text(textwrap.dedent(text))
    return path


def resolved(tmp_path, text=None, *, env=None, flags=None, name="calaudit.toml", roots=ROOTS,
             **kwargs):
    if text is not None:
        write(tmp_path / name, text)
    return resolve(roots, environ=env or {}, flags=flags, cwd=tmp_path, **kwargs)


# --------------------------------------------------------------------- a later section

@dataclass(frozen=True)
class KernelSection:
    """Stands for a section another issue adds (``skce``): the layer must need no change."""

    bandwidth: float | None = field(default=None, metadata={"help": "distance scale"})
    kernel: str = field(default="exponential_tv", metadata={"help": "kernel"})
    estimators: tuple[str, ...] = field(default=("skce_uq",), metadata={"help": "which"})
    block: bool = False

    def __post_init__(self) -> None:
        if self.kernel not in ("exponential_tv", "gaussian"):
            raise ConfigError(f"kernel must be exponential_tv or gaussian; got {self.kernel!r}")


@dataclass(frozen=True)
class ExtendedConfig(AuditConfig):
    skce: KernelSection = field(default_factory=KernelSection)


EXTENDED = {**ROOTS, "": ExtendedConfig}


def test_new_section_works_from_file_env_and_flags(tmp_path):
    settings = resolved(tmp_path, """
        [skce]
        kernel = "gaussian"
        estimators = ["skce_b", "skce_ul"]
    """, env={"CALAUDIT_SKCE__BANDWIDTH": "0.5"}, flags={"skce.block": ("true", "--block")},
        roots=EXTENDED)
    skce = settings[""].skce
    assert skce == KernelSection(0.5, "gaussian", ("skce_b", "skce_ul"), True)
    origins = {key: origin.label for key, _, origin in settings.items()}
    assert origins["skce.kernel"] == "calaudit.toml"
    assert origins["skce.bandwidth"] == "CALAUDIT_SKCE__BANDWIDTH"
    assert origins["skce.block"] == "--block"


def test_new_section_validation_names_the_source(tmp_path):
    with pytest.raises(ConfigError, match=r"^calaudit.toml: skce.kernel: kernel must be"):
        resolved(tmp_path, "[skce]\nkernel = 'cosine'\n", roots=EXTENDED)
    with pytest.raises(ConfigError, match="unknown key 'skce.kernal'.*'skce.kernel'"):
        resolved(tmp_path, "[skce]\nkernal = 'gaussian'\n", roots=EXTENDED)


# ------------------------------------------------------------------------------ schema

def test_schema_walks_sections_tables_and_leaves():
    schema = combined_schema(ROOTS)
    assert isinstance(schema_node(schema, ("binning", "n_bins")), Leaf)
    assert isinstance(schema_node(schema, ("thresholds",)), Table)
    leaf = schema_node(schema, ("thresholds", "anything", "warn"))
    assert isinstance(leaf, Leaf) and leaf.key == "thresholds.<metric>.warn"
    assert schema_node(schema, ("outputs", "junit")).is_path
    assert schema_node(schema, ("binning", "nope")) is None
    assert "metric" not in build_schema(AuditConfig).children["thresholds"].entry.children


@pytest.mark.parametrize("value, annotation, from_text, expected", [
    (3, float, False, 3.0),
    ("0.5", float, True, 0.5),
    ("7", int, True, 7),
    ("yes", bool, True, True),
    ("off", bool, True, False),
    ("FAIL, WARN", tuple[str, ...], True, ("FAIL", "WARN")),
    (["a", "b"], tuple[str, ...], False, ("a", "b")),
    ("none", float | None, True, None),
    ("", str | None, True, None),
    ("x", str | None, True, "x"),
    (0.1, float | None, False, 0.1),
])
def test_coerce_accepts(value, annotation, from_text, expected):
    assert coerce(value, annotation, from_text=from_text) == expected


@pytest.mark.parametrize("value, annotation, from_text, expected", [
    (True, int, False, "an integer"),
    ("3", int, False, "an integer"),
    (1.5, int, False, "an integer"),
    ("x", float, True, "a number"),
    ("nan", float, True, "a number"),
    ("maybe", bool, True, "true or false"),
    ("FAIL", tuple[str, ...], False, "a list of strings"),
    ([1, 2], tuple[str, ...], False, "a list of strings"),
    ("x", float | None, True, "a number (or nothing)"),
])
def test_coerce_rejects_with_expectation(value, annotation, from_text, expected):
    with pytest.raises(Mismatch) as info:
        coerce(value, annotation, from_text=from_text)
    assert info.value.expected == expected


# ------------------------------------------------------------------------- precedence

def test_precedence_flags_over_env_over_file_over_defaults(tmp_path):
    text = "alpha = 0.01\nseed = 7\nn_resamples = 200\n[binning]\nn_bins = 10\n"
    env = {"CALAUDIT_ALPHA": "0.02", "CALAUDIT_SEED": "8"}
    settings = resolved(tmp_path, text, env=env, flags={"alpha": (0.03, "--alpha")})
    config = settings[""]
    assert (config.alpha, config.seed, config.n_resamples, config.binning.n_bins,
            config.binning.strategy) == (0.03, 8, 200, 10, "uniform")
    sources = settings.sources()
    assert sources == {"alpha": "--alpha", "seed": "CALAUDIT_SEED",
                       "n_resamples": "calaudit.toml", "binning.n_bins": "calaudit.toml"}
    origins = {key: origin.kind for key, _, origin in settings.items()}
    assert origins["binning.strategy"] == "default"


def test_command_override_wins(tmp_path):
    settings = resolved(tmp_path, "run_tests = true\n",
                        overrides={"run_tests": (False, "calaudit metrics")})
    assert settings[""].run_tests is False
    assert settings.sources()["run_tests"] == "calaudit metrics"


def test_thresholds_from_file_and_env_merge_per_key(tmp_path):
    settings = resolved(tmp_path, """
        [thresholds.ece]
        warn = 0.03
        fail = 0.05
    """, env={"CALAUDIT_THRESHOLDS__ECE__FAIL": "0.08", "CALAUDIT_THRESHOLDS__MCE__FAIL": "0.3"})
    assert settings[""].thresholds == (ThresholdConfig("ece", warn=0.03, fail=0.08),
                                       ThresholdConfig("mce", fail=0.3))


def test_tuple_settings_from_env_and_flags(tmp_path):
    settings = resolved(tmp_path, env={"CALAUDIT_FAIL_ON": "fail,warn",
                                       "CALAUDIT_DATA__COVARIATES": "age, race"},
                        flags={"data.categorical": ("race", "--categorical")})
    assert settings[""].fail_on == ("FAIL", "WARN")
    assert settings["data"].covariates == ("age", "race")
    assert settings["data"].categorical == ("race",)


# -------------------------------------------------------------------------- discovery

def test_discovers_calaudit_toml_upwards(tmp_path):
    write(tmp_path / "calaudit.toml", "alpha = 0.01\n")
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    settings = resolve(ROOTS, environ={}, cwd=deep)
    assert settings[""].alpha == 0.01
    assert settings.file.path == tmp_path / "calaudit.toml"


def test_pyproject_tool_table_and_closest_wins(tmp_path):
    write(tmp_path / "calaudit.toml", "alpha = 0.01\n")
    project = tmp_path / "project"
    project.mkdir()
    write(project / "pyproject.toml", "[project]\nname = 'x'\n[tool.calaudit]\nalpha = 0.02\n")
    settings = resolve(ROOTS, environ={}, cwd=project)
    assert settings[""].alpha == 0.02 and settings.file.is_pyproject
    assert settings.file.label.endswith("pyproject.toml [tool.calaudit]")


def test_pyproject_without_tool_table_is_skipped(tmp_path):
    write(tmp_path / "calaudit.toml", "alpha = 0.01\n")
    project = tmp_path / "project"
    project.mkdir()
    write(project / "pyproject.toml", "[project]\nname = 'x'\n")
    assert resolve(ROOTS, environ={}, cwd=project)[""].alpha == 0.01


def test_calaudit_toml_beats_pyproject_in_same_directory(tmp_path):
    write(tmp_path / "pyproject.toml", "[tool.calaudit]\nalpha = 0.02\n")
    write(tmp_path / "calaudit.toml", "alpha = 0.01\n")
    assert resolve(ROOTS, environ={}, cwd=tmp_path)[""].alpha == 0.01


def test_explicit_config_replaces_discovery(tmp_path):
    write(tmp_path / "calaudit.toml", "alpha = 0.01\n")
    other = write(tmp_path / "ci.toml", "alpha = 0.2\n")
    assert resolve(ROOTS, environ={}, cwd=tmp_path, config_path=other)[""].alpha == 0.2
    assert resolve(ROOTS, environ={"CALAUDIT_CONFIG": str(other)}, cwd=tmp_path)[""].alpha == 0.2
    pyproject = write(tmp_path / "pyproject.toml", "[tool.calaudit]\nseed = 5\n")
    assert resolve(ROOTS, environ={}, config_path=pyproject)[""].seed == 5


def test_no_config_file_gives_defaults(tmp_path):
    settings = resolve(ROOTS, environ={}, cwd=tmp_path, discover=False)
    assert settings[""] == AuditConfig() and settings.file is None


def test_paths_in_a_file_are_relative_to_the_file(tmp_path):
    write(tmp_path / "calaudit.toml", "[outputs]\njunit = 'out/junit.xml'\njson = '-'\n"
                                      "[baseline]\npath = 'released.json'\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    settings = resolve(ROOTS, environ={"CALAUDIT_OUTPUTS__MD": "report.md"}, cwd=sub)
    assert settings["outputs"].junit == str(tmp_path / "out" / "junit.xml")
    assert settings["outputs"].json == "-"
    assert settings["outputs"].md == "report.md"  # env and flags: relative to the CWD
    assert settings[""].baseline.path == str(tmp_path / "released.json")


# ---------------------------------------------------------------------- error messages

@pytest.mark.parametrize("text, message", [
    ("[binning]\nnbins = 3\n", "calaudit.toml: unknown key 'binning.nbins' "
                               "(did you mean 'binning.n_bins'?)"),
    ("n_bins = 3\n", "unknown key 'n_bins' (did you mean 'binning.n_bins'?)"),
    ("alhpa = 0.1\n", "unknown key 'alhpa' (did you mean 'alpha'?)"),
    ("[thresholds.ece]\nwran = 0.1\n", "(did you mean 'thresholds.ece.warn'?)"),
    ("[tool.calaudit]\nalpha = 0.1\n", "[tool.calaudit] is for pyproject.toml"),
    ("alpha = 'high'\n", "'alpha' expects a number, got 'high' (a string)"),
    ("seed = true\n", "'seed' expects an integer, got True (a boolean)"),
    ("fail_on = 'FAIL'\n", "'fail_on' expects a list of strings"),
    ("binning = 3\n", "'binning' is a section"),
    ("[thresholds]\nece = 0.05\n", "'thresholds.ece' must be a table ([thresholds.<metric>])"),
    ("alpha = 2.0\n", "calaudit.toml: alpha must be in (0, 1); got 2.0"),
    ("[binning]\nn_bins = 0\n", "calaudit.toml: binning.n_bins must be an integer in [1, 10000]"),
    ("[thresholds.ece]\nwarn = 0.1\nfail = 0.05\n", "warn (0.1) must be below fail (0.05)"),
    ("fail_on = ['NOPE']\n", "unknown status 'NOPE'"),
    ("alpha = \n", "calaudit.toml: invalid TOML"),
])
def test_file_errors_are_one_clear_line(tmp_path, text, message):
    with pytest.raises(ConfigError) as info:
        resolved(tmp_path, text)
    line = info.value.one_line()
    assert message in line and "\n" not in line


def test_env_errors_and_warnings(tmp_path):
    with pytest.raises(ConfigError, match=r"CALAUDIT_BINNING__N_BINS='ten': expected an integer"):
        resolved(tmp_path, env={"CALAUDIT_BINNING__N_BINS": "ten"})
    with pytest.raises(ConfigError, match=r"^CALAUDIT_ALPHA: alpha must be in"):
        resolved(tmp_path, env={"CALAUDIT_ALPHA": "1.5"})
    settings = resolved(tmp_path, env={"CALAUDIT_ALHPA": "0.1", "CALAUDIT_DEBUG": "1",
                                       "CALAUDIT_BINNING_N_BINS": "3"})
    assert settings.warnings == (
        "ignoring CALAUDIT_ALHPA: not a calaudit setting (did you mean CALAUDIT_ALPHA?)",
        "ignoring CALAUDIT_BINNING_N_BINS: not a calaudit setting "
        "(did you mean CALAUDIT_BINNING__N_BINS?)")


def test_flag_errors_name_the_option(tmp_path):
    with pytest.raises(ConfigError, match=r"^--alpha: alpha must be in"):
        resolved(tmp_path, flags={"alpha": (3.0, "--alpha")})
    with pytest.raises(ConfigError, match=r"--color: outputs.color must be one of"):
        resolved(tmp_path, flags={"outputs.color": ("red", "--color")})


def test_missing_and_misplaced_config_files(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        resolve(ROOTS, environ={}, config_path=tmp_path / "nope.toml")
    write(tmp_path / "pyproject.toml", "[calaudit]\nalpha = 0.1\n")
    with pytest.raises(ConfigError, match=r"go under \[tool.calaudit\]"):
        resolve(ROOTS, environ={}, cwd=tmp_path)
    with pytest.raises(ConfigError, match=r"no \[tool.calaudit\] table"):
        resolve(ROOTS, environ={}, config_path=write(tmp_path / "pyproject.toml", "[x]\n"))


# ------------------------------------------------------------------------------- show

def test_show_text_and_json_list_every_value_with_its_source(tmp_path):
    import json

    settings = resolved(tmp_path, "[binning]\nn_bins = 10\n", env={"CALAUDIT_ALPHA": "0.01"})
    text = show_text(settings)
    assert text.startswith("config file: calaudit.toml\n")
    lines = {line.split()[0]: line.split() for line in text.splitlines()[3:]}
    assert lines["alpha"][1:] == ["0.01", "CALAUDIT_ALPHA"]
    assert lines["binning.n_bins"][1:] == ["10", "calaudit.toml"]
    assert lines["seed"][1:] == ["0", "default"]
    payload = json.loads(show_json(settings))
    entry = next(s for s in payload["settings"] if s["key"] == "binning.n_bins")
    assert entry == {"key": "binning.n_bins", "value": 10, "source": "calaudit.toml",
                     "source_kind": "file", "env": "CALAUDIT_BINNING__N_BINS"}


def test_init_template_is_valid_toml_and_names_every_setting(tmp_path):
    from calaudit.settings.sources import tomllib

    template = init_template(EXTENDED)
    parsed = tomllib.loads(template)  # every setting commented out: only empty tables
    assert all(table == {} for table in parsed.values())
    assert {"binning", "gate", "baseline", "skce", "data", "outputs"} <= parsed.keys()
    for key in ("# alpha = 0.05", "# n_bins = 15", "# [thresholds.ece]", "CALAUDIT_SKCE__KERNEL",
                "# kernel = \"exponential_tv\""):
        assert key in template
    write(tmp_path / "calaudit.toml", template)
    assert resolve(EXTENDED, environ={}, cwd=tmp_path)[""] == ExtendedConfig()
    pyproject = init_template(ROOTS, pyproject=True)
    assert "[tool.calaudit.binning]" in pyproject
    assert tomllib.loads(pyproject)["tool"]["calaudit"]["binning"] == {}
