"""``--help`` and the option declarations: every option declared once, mapped explicitly to
its setting, shown whole (never cut), as plain text, and ``calaudit test --help`` short
enough to read (at most 120 lines at 100 columns)."""

from __future__ import annotations

import pytest
import typer.main
from rich.cells import cell_len
from typer.testing import CliRunner

from calaudit.cli import options as opt
from calaudit.cli.app import app
from calaudit.settings import cli_roots
from calaudit.settings.resolve import combined_schema
from calaudit.settings.schema import Leaf, schema_node

COMMANDS = [("test",), ("metrics",), ("compare",), ("report",), ("sample-data",),
            ("config", "show"), ("config", "init"), ("config",), ()]


def help_text(*command: str, columns: int = 100) -> str:
    result = CliRunner().invoke(app, [*command, "--help"],
                                env={"COLUMNS": str(columns), "NO_COLOR": "1"})
    assert result.exit_code == 0, result.output
    return result.stdout


def click_command(*path: str):
    command = typer.main.get_command(app)
    for name in path:
        command = command.commands[name]
    return command


def test_test_help_fits_120_lines_of_100_columns():
    text = help_text("test")
    lines = text.rstrip("\n").splitlines()
    assert len(lines) <= 120, len(lines)
    assert max(cell_len(line) for line in lines) <= 100


@pytest.mark.parametrize("columns", [80, 100])
@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_name_is_shown_whole(command, columns):
    text = help_text(*command, columns=columns)
    assert "…" not in text
    tokens = set(text.replace(",", " ").split())
    for param in click_command(*command).params:
        for name in param.opts:
            if name.startswith("-"):
                assert name in tokens, (command, name)


@pytest.mark.parametrize("command", COMMANDS)
def test_help_is_plain_text_without_type_placeholders(command):
    text = help_text(*command)
    assert "<bool>" not in text and "<str>" not in text and "\\[" not in text


def test_brackets_in_help_are_text_not_markup():
    assert "calaudit[pdf]" in help_text("test")
    assert "calaudit[dask]" in help_text("test")
    assert "[tool.calaudit]" in help_text("config", "init")
    assert "[tool.calaudit]" in help_text()


def test_report_help_names_the_pdf():
    text = help_text("report")
    assert "PDF" in text.split("Arguments")[0] and "--pdf PATH" in text
    assert "--pdf-appendix" in text


def test_options_are_grouped_in_panels():
    text = help_text("test")
    for title in (opt.DATA, opt.GATE, opt.OUT, opt.LOCAL, opt.BINS, opt.LARGE, opt.DASK,
                  opt.SIGNOFF, opt.CONF):
        assert f"─ {title} ─" in text, title


def test_every_option_is_declared_once_and_names_its_setting():
    """Each command's options are :data:`calaudit.cli.options.FLAGS` entries; a flag's
    setting is a leaf of the settings schema and its shown default is that leaf's."""
    schema = combined_schema(cli_roots())
    for path in COMMANDS[:-2]:  # the commands (the groups' --version is not one)
        command = click_command(*path)
        for param in command.params:
            if param.param_type_name == "argument":
                continue
            assert param.name in opt.FLAGS, (path, param.name)
    for flag in opt.FLAGS.values():
        if flag.setting is None:
            continue
        leaf = schema_node(schema, tuple(flag.setting.split(".")))
        assert isinstance(leaf, Leaf), flag.setting
        if flag.default is not None and flag.name not in opt.COMPOSITE:
            shown = tuple(flag.default.split(",")) if isinstance(leaf.default, tuple) \
                else flag.default
            assert shown == leaf.default, (flag.name, shown, leaf.default)


def test_test_and_metrics_share_the_audit_options():
    test, metrics = click_command("test"), click_command("metrics")
    shared = {p.name: p for p in metrics.params}
    assert set(opt.AUDIT) <= set(shared)
    for param in test.params:
        if param.name in shared:
            assert (param.opts, param.help) == (shared[param.name].opts,
                                                shared[param.name].help)


def test_an_option_sets_its_declared_setting(tmp_path, monkeypatch):
    """The explicit mapping at work: ``--n-bins`` and ``--kite-width`` set
    ``binning.n_bins`` and ``local.kite_prob_kernel_width``, named as their source."""
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["test", "x.csv", "--n-bins", "7", "--kite-width",
                                      "0.3", "--show-config"])
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines()
            if line.strip()}
    assert rows["binning.n_bins"][:2] == ["7", "--n-bins"]
    assert rows["local.kite_prob_kernel_width"][:2] == ["0.3", "--kite-width"]


def test_sample_data_does_not_overwrite_without_force(tmp_path):
    runner = CliRunner()
    target = tmp_path / "demo"
    assert runner.invoke(app, ["sample-data", str(target)]).exit_code == 0
    (target / "README.md").write_text("my notes")
    again = runner.invoke(app, ["sample-data", str(target)])
    assert again.exit_code == 2
    assert "would overwrite README.md" in again.stderr and "--force" in again.stderr
    assert (target / "README.md").read_text() == "my notes"
    forced = runner.invoke(app, ["sample-data", str(target), "--force"])
    assert forced.exit_code == 0 and (target / "README.md").read_text() != "my notes"
