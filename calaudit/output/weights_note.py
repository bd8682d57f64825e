"""The one line that says an audit is weighted (terminal, reports): the kind of weights,
their sum and effective sample size, and what was left out because it is not weighted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def weights_line(data: Mapping[str, Any]) -> str | None:
    """``weighted audit: ...`` from the ``data`` section (None when unweighted)."""
    weights = data.get("weights")
    if not weights:
        return None
    kind = "negatives kept at a rate, weighted back by 1/r" if weights.get(
        "label_dependent") else f"{weights['kind']} weights"
    column = f" from '{weights['column']}'" if weights.get("column") else ""
    left_out = "; ".join(f"{item['id']} ({item['reason']})"
                         for item in weights.get("not_weighted") or ())
    return (f"weighted audit ({kind}{column}): sum of weights {weights['sum']:.6g}, "
            f"effective sample size {weights['effective_sample_size']:.6g}, "
            f"sample size of the rules {weights['sample_size']:.6g}"
            + (f"; not weighted, left out: {left_out}" if left_out else ""))
