"""Gold-file comparison with scrubbing (the coverage.py pattern, ``tests/goldtest.py``).

``CALAUDIT_UPDATE_GOLD=1 pytest tests/report`` rewrites the gold files; on a mismatch the
actual output is saved to ``tests/report/actual/`` (gitignored) and a diff is shown.
"""

from __future__ import annotations

import difflib
import os
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
GOLD = HERE / "gold"
ACTUAL = HERE / "actual"

#: Volatile text: timestamps and every version string.
SCRUBS = (
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"), "DATE"),
    (re.compile(r"calaudit \d+\.\d+[\w.+-]*"), "calaudit VER"),
    (re.compile(r"^\| (calaudit|python|numpy|scipy|platform|BLAS|report rendered with) \| "
                r".* \|$", re.M), r"| \1 | VER |"),
)


def scrub(text: str) -> str:
    for pattern, replacement in SCRUBS:
        text = pattern.sub(replacement, text)
    return text


def compare(name: str, actual: str) -> None:
    """Assert that scrubbed ``actual`` equals the gold file ``gold/<name>``."""
    __tracebackhide__ = True
    text = scrub(actual)
    gold = GOLD / name
    if os.environ.get("CALAUDIT_UPDATE_GOLD") == "1":
        gold.parent.mkdir(parents=True, exist_ok=True)
        gold.write_text(text, encoding="utf-8")
        return
    expected = gold.read_text(encoding="utf-8") if gold.exists() else ""
    if text != expected:
        ACTUAL.mkdir(exist_ok=True)
        (ACTUAL / name).write_text(text, encoding="utf-8")
        diff = "".join(difflib.unified_diff(expected.splitlines(True), text.splitlines(True),
                                            f"gold/{name}", f"actual/{name}"))
        raise AssertionError(
            f"{name} differs from its gold file (actual saved to {ACTUAL / name}; "
            f"update with CALAUDIT_UPDATE_GOLD=1):\n{diff[:6000]}")
