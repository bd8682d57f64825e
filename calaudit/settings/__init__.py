"""Configuration of the command line: ``schema`` walks the configuration dataclasses,
``sources`` reads files, ``CALAUDIT_*`` variables and flags, ``resolve`` merges them (flags
> environment > file > defaults), ``show`` prints them. Standard library only (plus
``tomli`` on Python 3.10); numpy loads with ``AuditConfig`` through :func:`cli_roots`."""

from __future__ import annotations

from typing import Any


def cli_roots() -> dict[str, Any]:
    """The settings roots of the command line: the audit, ``[data]``, ``[outputs]`` and
    ``[dask]``."""
    from calaudit.audit.config import AuditConfig
    from calaudit.settings.sections import DaskConfig, DataConfig, OutputConfig

    return {"": AuditConfig, "data": DataConfig, "outputs": OutputConfig, "dask": DaskConfig}
