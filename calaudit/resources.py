"""Locating the directories shipped next to the package: ``templates`` and
``sample_data``. The wheel holds them inside the package (``calaudit/templates``); a
source checkout or an editable install finds them at the repository root."""

from __future__ import annotations

from pathlib import Path


def resource_dirs(name: str, marker: str) -> list[Path]:
    """Existing copies of resource directory ``name`` that contain ``marker``."""
    package = Path(__file__).resolve().parent
    candidates = [package / name, package.parent / name]
    found = [path for path in candidates if (path / marker).is_file()]
    if not found:
        raise FileNotFoundError(
            f"calaudit's {name} directory is missing (looked in "
            + ", ".join(str(c) for c in candidates) + "); reinstall calaudit"
        )
    return found
