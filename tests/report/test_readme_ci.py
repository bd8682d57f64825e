"""The README's CI examples install calaudit in a way that works (it is not on PyPI):
from a checkout of the repository, or from a wheel built from it. The install commands
are taken from the README and run against this checkout (linked as ``calaudit-src``),
into a fresh virtual environment without network access (dependencies come from the
current environment through a ``.pth`` file; the environment has no pip of its own, this
one installs into it: ``pip --python``)."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow
README = (ROOT / "README.md").read_text(encoding="utf-8")
OFFLINE = ["--no-deps", "--no-index", "--no-build-isolation"]


def ci_install_commands() -> list[str]:
    """Every ``pip install`` / ``pip wheel`` command of the README's CI section."""
    section = README.split("## Using calaudit in CI", 1)[1].split("\n## ", 1)[0]
    found = re.findall(r"(pip (?:install|wheel) [^`\n]+)", section)
    return [command.strip().rstrip("`").strip() for command in found]


def test_ci_examples_never_install_from_pypi():
    commands = ci_install_commands()
    assert commands, "no install command in the README's CI section"
    for command in commands:
        assert "calaudit-src" in command or "wheels/" in command, command
        assert not re.search(r"pip install calaudit\b", command), command


def run(cmd, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, f"{cmd}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.mark.parametrize("kind", ["checkout", "wheel"])
def test_ci_install_commands_work(tmp_path, kind):
    (tmp_path / "calaudit-src").symlink_to(ROOT, target_is_directory=True)
    venv = tmp_path / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], tmp_path)
    python = str(venv / "bin" / "python")
    site = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
               tmp_path).stdout.strip()
    Path(site, "_calaudit_test_deps.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    wanted = [c for c in ci_install_commands()
              if ("wheels" in c) == (kind == "wheel") and "[pdf]" not in c]
    assert wanted
    for command in wanted:
        words = shlex.split(command)
        words = [str(p) for w in words for p in (sorted(tmp_path.glob(w)) if "*" in w
                                                  else [w])]
        assert words[0] == "pip", command
        run([sys.executable, "-m", "pip", "--python", python, *words[1:], *OFFLINE], tmp_path)
    where = run([python, "-c", "import calaudit; print(calaudit.__file__)"], tmp_path)
    assert where.stdout.startswith(str(venv)), where.stdout
    version = run([str(venv / "bin" / "calaudit"), "--version"], tmp_path)
    assert "calaudit" in version.stdout
