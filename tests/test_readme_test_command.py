"""The README's test command says, next to it, which tests skip without a browser, poppler
and Azurite, and gives the one command that installs them: the tools ``.ci/run``
installs before it runs the same test command."""

from __future__ import annotations

import re

from tests.conftest import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")
CI = (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def after_test_command() -> str:
    """The README from the test command to the next paragraph that is not about it."""
    return README.split("<!-- test-command -->", 1)[1].split("The sample model", 1)[0]


def test_readme_names_the_tests_that_skip_and_how_to_run_them():
    text = " ".join(after_test_command().split())
    for words in ("browser", "PDF", "abfs://", "skip"):
        assert words in text, words
    blocks = re.findall(r"```sh\n(.*?)```", after_test_command(), flags=re.S)
    assert len(blocks) == 2  # the test command, then the one that installs the tools
    install = blocks[1]
    packages = set(re.search(r"apt-get install -y ([^&\n]+)", install).group(1).split())
    ci_packages = {word for line in re.findall(r"apt-get install -y -qq "
                                               r"--no-install-recommends ([^\n]+)", CI)
                   for word in line.split()}
    assert packages == ci_packages == {"chromium", "poppler-utils", "nodejs", "npm"}
    assert "npm ci --prefix tests/object_stores" in install
    assert "npm ci --prefix tests/object_stores" in CI
