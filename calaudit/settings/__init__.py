"""Configuration of the command line: files, ``CALAUDIT_*`` variables, flags, defaults.

``schema`` walks the configuration dataclasses, ``sources`` reads each source into a
layer, ``resolve`` merges the layers (flags > environment > file > defaults) and builds
the dataclasses, ``show`` prints the result (``calaudit config show`` / ``init``). Only
the standard library is imported here (plus ``tomli`` on Python 3.10); numpy loads with
``AuditConfig``, through :func:`cli_roots`, when a command runs.
"""

from __future__ import annotations

from typing import Any


def cli_roots() -> dict[str, Any]:
    """The settings roots of the command line: the audit, ``[data]``, ``[outputs]`` and
    ``[dask]``."""
    from calaudit.audit.config import AuditConfig
    from calaudit.settings.sections import DaskConfig, DataConfig, OutputConfig

    return {"": AuditConfig, "data": DataConfig, "outputs": OutputConfig, "dask": DaskConfig}
