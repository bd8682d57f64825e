"""The JSON result (docs/result-schema.md): sorted, indented, stable bytes for a given result."""

from __future__ import annotations

import json
from typing import Any

from calaudit.results import AuditResult


def to_json(result: AuditResult | dict[str, Any]) -> str:
    """Serialise a result; floats use Python's shortest round-trip representation."""
    payload = result.to_dict() if isinstance(result, AuditResult) else result
    return json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
