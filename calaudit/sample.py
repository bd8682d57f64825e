"""``calaudit sample-data DIR``: copy the bundled example datasets."""

from __future__ import annotations

import shutil
from pathlib import Path

from calaudit.resources import resource_dirs

SAMPLE_FILES = (
    "README.md",
    "credit_default.csv",
    "credit_default.parquet",
    "credit_default.npz",
    "image_classifier.npz",
)


def write_sample_data(directory: str | Path) -> list[Path]:
    """Copy the sample files into ``directory`` (created if needed); return their paths."""
    source = resource_dirs("sample_data", "README.md")[0]
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for name in SAMPLE_FILES:
        shutil.copyfile(source / name, target / name)
        written.append(target / name)
    return written
