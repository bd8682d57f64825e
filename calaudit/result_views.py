"""Tabular views of an :class:`~calaudit.results.AuditResult` as pandas DataFrames
(``result.to_frame()``, ``result.groups_frame()``); pandas loads only when asked for."""

from __future__ import annotations

import math
from typing import Any

#: Columns of :func:`checks_frame`, in order.
CHECK_COLUMNS = ("kind", "id", "title", "value", "ci_low", "ci_high", "statistic", "p_value",
                 "p_value_adjusted", "status", "message")


def status_text(value: Any) -> str | None:
    """A status (:class:`~calaudit.results.Status` or its text) as text; None stays None."""
    return None if value is None else str(getattr(value, "value", value))


def check_rows(result) -> list[dict[str, Any]]:
    """One row per metric and per test (``kind`` says which), in the audit's order."""
    rows = []
    for m in result.metrics:
        low, high = m.ci if m.ci is not None else (math.nan, math.nan)
        rows.append({"kind": "metric", "id": m.id, "title": m.title, "value": m.value,
                     "ci_low": low, "ci_high": high, "statistic": math.nan,
                     "p_value": math.nan, "p_value_adjusted": math.nan,
                     "status": status_text(m.status), "message": m.message})
    for t in result.tests:
        rows.append({"kind": "test", "id": t.id, "title": t.title, "value": t.estimate,
                     "ci_low": math.nan, "ci_high": math.nan, "statistic": t.statistic,
                     "p_value": t.p_value,
                     "p_value_adjusted": (math.nan if t.p_value_adjusted is None
                                          else t.p_value_adjusted),
                     "status": status_text(t.status), "message": t.message})
    return rows


def checks_frame(result):
    """``result.to_frame()``: metrics and tests as a DataFrame indexed by ``(kind, id)``."""
    import pandas as pd

    frame = pd.DataFrame(check_rows(result), columns=list(CHECK_COLUMNS))
    return frame.set_index(["kind", "id"])


def groups_frame(result):
    """``result.groups_frame()``: the group table (one row per group or intersection), the
    bias interval split into ``bias_ci_low`` / ``bias_ci_high``, sorted by adjusted p-value
    then by absolute bias. Empty (with the columns) when the audit had no covariates."""
    import pandas as pd

    rows = []
    for group in result.groups:
        row = {k: v for k, v in dict(group).items() if k not in ("bias_ci", "covariates")}
        low, high = (group.get("bias_ci") or (None, None))[:2]
        row["bias_ci_low"] = math.nan if low is None else low
        row["bias_ci_high"] = math.nan if high is None else high
        rows.append(row)
    columns = ["group", "kind", "n", "events", "mean_prediction", "observed_rate", "bias",
               "bias_ci_low", "bias_ci_high", "p_value", "p_value_adjusted", "status"]
    frame = pd.DataFrame(rows)
    if frame.empty:
        return pd.DataFrame(columns=columns)
    ordered = [c for c in columns if c in frame.columns]
    frame = frame[ordered + [c for c in frame.columns if c not in ordered]]
    order = frame.assign(_abs=frame["bias"].abs()).sort_values(
        ["p_value_adjusted", "_abs"], ascending=[True, False], kind="stable").index
    return frame.loc[order].reset_index(drop=True)
