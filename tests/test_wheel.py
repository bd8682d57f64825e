"""The built wheel carries the templates and sample data, and its CLI runs.

Builds the wheel from this checkout, installs it into a fresh virtual environment (whose
dependencies come from the current environment through a ``.pth`` file, so no network is
needed; it has no pip of its own, this one installs into it: ``pip --python``), and runs
the installed ``calaudit`` from an unrelated directory.
"""

from __future__ import annotations

import json
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow


def run(cmd, **kwargs):
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True, timeout=600,
                          **kwargs)
    assert done.returncode == 0, f"{cmd}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    base = tmp_path_factory.mktemp("wheel")
    run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "-w", base / "dist", ROOT])
    wheel = next((base / "dist").glob("calaudit-*.whl"))
    venv = base / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", venv])
    python = venv / "bin" / "python"
    site = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    deps = sysconfig.get_paths()["purelib"]
    Path(site.stdout.strip(), "_calaudit_test_deps.pth").write_text(deps + "\n")
    run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps",
         "--no-index", wheel])
    return wheel, venv, base


def test_wheel_contains_templates_and_sample_data(installed):
    wheel, _, _ = installed
    names = zipfile.ZipFile(wheel).namelist()
    assert "calaudit/templates/report.md" in names
    assert "calaudit/sample_data/credit_default.csv" in names
    assert "calaudit/sample_data/README.md" in names


def test_installed_cli_finds_templates_and_runs(installed):
    _, venv, base = installed
    work = base / "work"
    work.mkdir()
    where = run([venv / "bin" / "python", "-c",
                 "import calaudit, calaudit.resources as r;"
                 "print(calaudit.__file__); print(r.resource_dirs('templates', 'report.md')[0])"],
                cwd=work)
    package_file, templates = where.stdout.split()
    assert package_file.startswith(str(venv)) and templates.startswith(str(venv))
    run([venv / "bin" / "calaudit", "sample-data", "demo"], cwd=work)
    audit = subprocess.run([str(venv / "bin" / "calaudit"), "test", "demo/credit_default.parquet",
                            "--covariates", "age,race", "--json", "r.json", "--md", "r.md"],
                           cwd=work, capture_output=True, text=True, timeout=600)
    assert audit.returncode == 1, audit.stderr  # the local test finds the group bias
    assert json.loads((work / "r.json").read_text())["verdict"] == "FAIL"
    assert (work / "r.md").read_text().startswith("# Calibration audit")
