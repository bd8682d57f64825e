"""``calaudit sample-data DIR``: copy the bundled example datasets."""

from __future__ import annotations

from pathlib import Path

from calaudit.resources import resource_dirs

SAMPLE_FILES = (
    "README.md",
    "credit_default.csv",
    "credit_default.parquet",
    "credit_default.npz",
    "image_classifier.npz",
)


def write_sample_data(directory: str | Path, force: bool = False) -> list[Path]:
    """Copy the sample files into ``directory`` (created if needed); return their paths.
    Existing files are a configuration error unless ``force`` (then they are replaced)."""
    from calaudit.exceptions import ConfigError
    from calaudit.output.files import check_targets, write_all

    source = resource_dirs("sample_data", "README.md")[0]
    target = Path(directory)
    if target.exists() and not target.is_dir():
        raise ConfigError(f"{target}: exists and is not a directory [output]",
                          hint="give a new or an existing directory")
    existing = [name for name in SAMPLE_FILES if (target / name).exists()]
    if existing and not force:
        raise ConfigError(f"{target}: would overwrite {', '.join(existing)} [output]",
                          hint="give another directory, or --force to replace them")
    check_targets([("sample-data", target / name) for name in SAMPLE_FILES])
    return [Path(p) for p in write_all([(target / name, (source / name).read_bytes())
                                         for name in SAMPLE_FILES])]
