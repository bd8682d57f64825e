"""JUnit XML for CI systems: one ``<testcase>`` per check of the result.

PASS passes; WARN passes with a ``<system-out>`` note (``<failure>`` if WARN is in
fail-on); FAIL is a ``<failure>``; INCONCLUSIVE a ``<failure>`` if in fail-on, else
``<skipped>``; ERROR an ``<error>``; SKIPPED ``<skipped>``. A diagnostic test passes, its
status in ``<system-out>``. ``classname`` is ``calaudit.<kind>``, ``name`` the check id; the
suite carries the verdict, seed, alpha and input hash as properties, a failure's
``message`` the facts that decided it. With ``SOURCE_DATE_EPOCH`` set no timing is written,
so the document is byte-identical across runs."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from typing import Any

from calaudit.audit.gate import Check
from calaudit.output.checklist import check_lines
from calaudit.output.formatting import reproducible

_INVALID_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _text(value: Any) -> str:
    """Text that XML 1.0 can carry (control characters dropped)."""
    return _INVALID_XML.sub("", str(value))


def junit_xml(payload: Mapping[str, Any], fail_on: Iterable[str],
              checks: list[Check] | None = None, suite: str = "calaudit") -> str:
    """The JUnit document for a result payload (or a comparison payload)."""
    gate = set(fail_on)
    lines = check_lines(payload, checks)
    root = ET.Element("testsuites", name=suite)
    element = ET.SubElement(root, "testsuite", name=suite)
    properties = ET.SubElement(element, "properties")
    for name, value in _properties(payload):
        ET.SubElement(properties, "property", name=name, value=_text(value))
    counts = {"failures": 0, "errors": 0, "skipped": 0}
    seen: dict[str, int] = {}
    for check in lines:
        seen[check.name] = seen.get(check.name, 0) + 1
        name = check.id if seen[check.name] == 1 else f"{check.id} #{seen[check.name]}"
        case = ET.SubElement(element, "testcase", classname=f"calaudit.{check.kind}",
                             name=_text(name), time="0")
        outcome = _outcome(check.status, gate) if check.gates else None
        if outcome is not None:
            counts[{"failure": "failures", "error": "errors", "skipped": "skipped"}[outcome]] += 1
            attributes = {"message": _text(_message(check))}
            if outcome != "skipped":
                attributes["type"] = check.status
            child = ET.SubElement(case, outcome, attributes)
            if outcome != "skipped":
                child.text = _text(_details(check))
        ET.SubElement(case, "system-out").text = _text(_details(check))
    total = str(len(lines))
    runtime = "0" if reproducible() else f"{payload.get('runtime_seconds') or 0:.3f}"
    for node in (root, element):
        node.set("tests", total)
        node.set("failures", str(counts["failures"]))
        node.set("errors", str(counts["errors"]))
        node.set("skipped", str(counts["skipped"]))
        node.set("time", runtime)
    if payload.get("created_at"):
        element.set("timestamp", payload["created_at"].rstrip("Z"))
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _outcome(status: str, gate: set[str]) -> str | None:
    if status == "FAIL":
        return "failure"
    if status == "ERROR":
        return "error"
    if status == "SKIPPED":
        return "skipped"
    if status in ("INCONCLUSIVE", "WARN"):
        return "failure" if status in gate else ("skipped" if status == "INCONCLUSIVE"
                                                 else None)
    return None


def _message(check: Check) -> str:
    """``FAIL: klce_consistency: statistic 0.0001, p 0.001, adjusted p 0.002 (holm), ..."""
    detail = check.detail
    return f"{check.status}: {check.id}: {detail}" if detail else f"{check.status}: {check.id}"


def _details(check: Check) -> str:
    head = f"status {check.status}" + ("" if check.gates else " (diagnostic: does not gate)")
    return f"{head}, {check.detail}" if check.detail else head


def _properties(payload: Mapping[str, Any]) -> list[tuple[str, Any]]:
    config = payload.get("config") or {}
    inputs = payload.get("inputs") or {}
    candidates = [
        ("verdict", payload.get("verdict")),
        ("calaudit_version", payload.get("calaudit_version")),
        ("input", inputs.get("path")),
        ("input_sha256", inputs.get("sha256")),
        ("seed", config.get("seed")),
        ("alpha", config.get("alpha")),
        ("multiple_testing", config.get("multiple_testing")),
        ("fail_on", ",".join(config.get("fail_on", ()))),
    ]
    return [(k, v) for k, v in candidates if v not in (None, "")]
