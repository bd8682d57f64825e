"""The compact terminal summary on stdout: one row per metric and test, then the verdict."""

from __future__ import annotations

from typing import Any, TextIO

from rich.console import Console
from rich.table import Table

from calaudit.output.formatting import fmt_number, fmt_pvalue

STATUS_STYLE = {"PASS": "green", "WARN": "yellow", "FAIL": "bold red",
                "INCONCLUSIVE": "magenta", "ERROR": "bold red", "SKIPPED": "dim"}


def summary_table(result: dict[str, Any]) -> Table:
    """A rich table of checks: id, estimate, p-value (adjusted when available), status."""
    table = Table(title=None, show_edge=False, pad_edge=False)
    table.add_column("check")
    table.add_column("estimate", justify="right")
    table.add_column("p-value", justify="right")
    table.add_column("status")
    for metric in result["metrics"]:
        status = metric.get("status") or ""
        table.add_row(metric["id"], fmt_number(metric["value"]), "",
                      _styled(status))
    for test in result["tests"]:
        p = test["p_value_adjusted"] if test["p_value_adjusted"] is not None else test["p_value"]
        table.add_row(test["id"], fmt_number(test["estimate"]), fmt_pvalue(p),
                      _styled(test["status"] or ""))
    return table


def top_groups_table(result: dict[str, Any]) -> Table | None:
    """The most biased groups of the local-calibration diagnostics (``local.lcb.top_groups``),
    or ``None`` when there are none."""
    top = (result.get("local") or {}).get("lcb", {}).get("top_groups") or []
    if not top:
        return None
    table = Table(title="most biased groups (bias = observed - predicted)", show_edge=False,
                  pad_edge=False, title_justify="left")
    for name, justify in (("#", "right"), ("group", "left"), ("n", "right"),
                          ("obs / pred", "right"), ("bias [interval]", "right"),
                          ("p adj.", "right"), ("status", "left")):
        table.add_column(name, justify=justify)
    for row in top:
        low, high = row["bias_ci"] or (None, None)
        interval = "" if low is None else f" [{low:+.3f}, {high:+.3f}]"
        table.add_row(str(row["rank"]), row["group"], str(row["n"]),
                      f"{row['observed_rate']:.3f} / {row['mean_prediction']:.3f}",
                      f"{row['bias']:+.3f}{interval}", fmt_pvalue(row["p_value_adjusted"]),
                      _styled(row["status"] or ""))
    return table


def _styled(status: str) -> str:
    style = STATUS_STYLE.get(status)
    return f"[{style}]{status}[/]" if style else status


def print_summary(result: dict[str, Any], file: TextIO | None = None,
                  color: bool | None = None) -> None:
    """Print the data line, the table and the verdict."""
    console = Console(file=file, no_color=color is False, force_terminal=color or None,
                      highlight=False, width=None if color else 100, soft_wrap=False)
    data, inputs = result["data"], result["inputs"]
    excluded = sum(inputs["rows_excluded"].values())
    console.print(
        f"{inputs['path'] or 'arrays'}: n={data['n']} ({excluded} excluded), "
        f"{data['n_classes']} classes, covariates: "
        f"{', '.join(c['name'] for c in data['covariates']) or 'none'}",
        markup=False,
    )
    console.print(summary_table(result))
    groups = top_groups_table(result)
    if groups is not None:
        console.print(groups)
    tests = result["tests"]
    failing = sum(1 for t in tests if t["status"] in result["config"]["fail_on"])
    verdict = result["verdict"]
    console.print(f"verdict: {_styled(verdict)} ({len(tests)} tests, {failing} in fail-on)")
