"""docs/api.md and the README: every ``python`` block runs, in order, in one namespace."""

from __future__ import annotations

import re

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.slow  # the documented audits, as written
PAGE = ROOT / "docs" / "api.md"
README = ROOT / "README.md"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def test_api_page_examples_run(tmp_path, monkeypatch, capsys):
    blocks = python_blocks(PAGE.read_text(encoding="utf-8"))
    assert len(blocks) >= 8
    (tmp_path / "sample_data").symlink_to(ROOT / "sample_data")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "api_md"}
    for number, block in enumerate(blocks, 1):
        try:
            exec(compile(block, f"{PAGE.name} block {number}", "exec"), namespace)
        except Exception as error:  # name the block that broke
            raise AssertionError(f"docs/api.md block {number} failed: {error!r}") from error
    import matplotlib.pyplot as plt

    plt.close("all")
    out = capsys.readouterr()
    assert "FAIL" in out.out and "first at index 2" in out.out
    assert "valid ids: ece, mce" in out.out
    assert "calaudit: [1/" in out.err
    assert (tmp_path / "reliability.png").stat().st_size > 0


def test_readme_python_block_runs_as_written(tmp_path, monkeypatch, capsys):
    """The README's Python example defines every name it uses and runs from a clone."""
    (block,) = python_blocks(README.read_text(encoding="utf-8"))
    (tmp_path / "sample_data").symlink_to(ROOT / "sample_data")
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "readme"}
    exec(compile(block, "README.md python block", "exec"), namespace)
    import matplotlib.pyplot as plt

    plt.close("all")
    assert capsys.readouterr().out.startswith("0.00886893")
    assert namespace["result"].estimator in ("bin", "kde", "kkr", "ukkr")
