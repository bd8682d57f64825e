"""JUnit XML, the GitHub step summary and annotations."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from calaudit.audit.gate import Check, result_checks
from calaudit.output.github import (
    GITHUB_LIMIT,
    annotations,
    append_step_summary,
    escape_data,
    escape_property,
    summary_budget,
    summary_markdown,
)
from calaudit.output.junit import junit_xml


def payload(metric_statuses=("PASS", "FAIL", "WARN"), test_statuses=("PASS", "ERROR",
                                                                     "SKIPPED", "INCONCLUSIVE")):
    metrics = [{"id": f"m{i}", "title": f"metric {i}", "value": 0.1 * i, "ci": None, "params": {},
                "status": s, "threshold": {"fail": 0.05}, "message": f"m{i} says {s}"}
               for i, s in enumerate(metric_statuses)]
    metrics.append({"id": "plain", "title": "no threshold", "value": 1.0, "ci": None,
                    "params": {}})
    tests = [{"id": f"t{i}", "title": f"test {i}", "estimate": 0.01, "p_value": 0.01,
              "p_value_adjusted": 0.02, "status": s, "message": "" if s == "PASS" else f"why {i}"}
             for i, s in enumerate(test_statuses)]
    return {"schema_version": 1, "calaudit_version": "0.1.0", "created_at": "2026-01-02T03:04:05Z",
            "verdict": "FAIL", "runtime_seconds": 1.25,
            "inputs": {"path": "preds.csv", "sha256": "ab" * 32},
            "data": {"n": 1000, "n_classes": 2},
            "config": {"seed": 3, "alpha": 0.05, "multiple_testing": "holm",
                       "fail_on": ["FAIL", "ERROR"]},
            "metrics": metrics, "tests": tests,
            "gate": {"unmatched_thresholds": [{"metric": "ecee", "status": "SKIPPED",
                                               "message": "did you mean 'ece'?"}]}}


def cases(xml_text):
    root = ET.fromstring(xml_text)
    suite = root.find("testsuite")
    return root, suite, {(c.get("classname"), c.get("name")): c for c in suite.iter("testcase")}


def test_junit_one_testcase_per_check_with_status_mapping():
    xml_text = junit_xml(payload(), ("FAIL", "ERROR"))
    assert xml_text.startswith("<?xml version='1.0' encoding='utf-8'?>")
    root, suite, by_name = cases(xml_text)
    assert len(by_name) == 3 + 4 + 1  # graded metrics, tests, unmatched threshold
    assert ("calaudit.metric", "plain") not in by_name
    outcome = {key: [child.tag for child in case if child.tag != "system-out"]
               for key, case in by_name.items()}
    assert outcome[("calaudit.metric", "m0")] == []
    assert outcome[("calaudit.metric", "m1")] == ["failure"]
    assert outcome[("calaudit.metric", "m2")] == []                 # WARN: passes
    assert outcome[("calaudit.test", "t1")] == ["error"]
    assert outcome[("calaudit.test", "t2")] == ["skipped"]
    assert outcome[("calaudit.test", "t3")] == ["skipped"]          # INCONCLUSIVE, not gating
    assert outcome[("calaudit.threshold", "ecee")] == ["skipped"]
    failure = by_name[("calaudit.metric", "m1")].find("failure")
    assert failure.get("type") == "FAIL" and failure.get("message") == (
        "FAIL: m1: m1 says FAIL")
    assert "WARN" in by_name[("calaudit.metric", "m2")].find("system-out").text
    for node in (root, suite):
        assert (node.get("tests"), node.get("failures"), node.get("errors"),
                node.get("skipped"), node.get("time")) == ("8", "1", "1", "3", "1.250")
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["verdict"] == "FAIL" and props["seed"] == "3" and props["fail_on"] == "FAIL,ERROR"
    assert suite.get("timestamp") == "2026-01-02T03:04:05"


def test_junit_gating_inconclusive_and_warn_become_failures():
    _, _, by_name = cases(junit_xml(payload(), ("FAIL", "ERROR", "INCONCLUSIVE", "WARN")))
    inconclusive = by_name[("calaudit.test", "t3")].find("failure")
    assert inconclusive is not None and inconclusive.get("type") == "INCONCLUSIVE"
    assert by_name[("calaudit.metric", "m2")].find("failure").get("type") == "WARN"


def test_junit_survives_control_characters_and_duplicates():
    data = payload(metric_statuses=("FAIL", "FAIL"))
    data["metrics"][0]["message"] = "bad \x01 char <&>"
    data["metrics"][1]["id"] = "m0"
    _, suite, by_name = cases(junit_xml(data, ("FAIL",)))
    assert ("calaudit.metric", "m0 #2") in by_name
    assert by_name[("calaudit.metric", "m0")].find("failure").get("message") == (
        "FAIL: m0: bad  char <&>")


def test_junit_for_a_comparison_payload():
    section = {"metrics": [{"label": "ece", "status": "FAIL", "delta": 0.02,
                            "message": "regression"}],
               "checks": [{"kind": "test", "id": "t1", "status": "FAIL", "message": "newly"}]}
    _, suite, by_name = cases(junit_xml({"baseline": section}, ("FAIL",)))
    assert set(by_name) == {("calaudit.baseline", "ece"), ("calaudit.baseline", "test:t1")}
    assert suite.get("failures") == "2"


# ---------------------------------------------------------------------------- GitHub

def test_escaping_of_workflow_commands():
    assert escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext"
    assert escape_property("a: b, c") == "a%3A b%2C c"


def test_annotations_errors_warnings_and_roll_up():
    checks = [Check("test", f"t{i}", "FAIL", message="x") for i in range(15)]
    checks += [Check("metric", "m", "WARN", value=0.1, message="close"),
               Check("test", "i", "INCONCLUSIVE"), Check("test", "p", "PASS"),
               Check("test", "s", "SKIPPED"), Check("test", "e", "ERROR", message="boom")]
    lines = annotations(checks, ("FAIL",))
    errors = [line for line in lines if line.startswith("::error ")]
    warnings = [line for line in lines if line.startswith("::warning ")]
    assert len(errors) == 10 and "6 more check(s)" in errors[-1]
    assert errors[0] == "::error title=calaudit FAIL%3A test%3At0::t0: x"
    assert len(warnings) == 3
    assert warnings[0] == "::warning title=calaudit WARN%3A metric%3Am::m, estimate 0.1: close"
    assert not any(":p" in line or ":s::" in line for line in lines)
    assert annotations([Check("test", "p", "PASS")], ("FAIL",)) == []


def test_step_summary_content():
    data = payload()
    text = summary_markdown(data, result_checks(data), ("FAIL", "ERROR"))
    assert text.startswith("### calaudit: FAIL\n")
    assert "**Verdict: FAIL**: 2 of 8 checks have a status in fail-on (FAIL, ERROR)." in text
    assert "#### Checks that fail the gate" in text
    assert "| m1 | metric | **FAIL** | 0.1 | - | - | m1 says FAIL |" in text
    assert "8 checks: 2 PASS, 1 WARN, 1 FAIL, 1 INCONCLUSIVE, 1 ERROR, 2 SKIPPED." in text
    assert "<details><summary>All checks (8)</summary>" in text and "</details>" in text
    assert "`preds.csv` · n = 1000 · 2 classes · seed 3 · alpha 0.05" in text


def test_step_summary_is_cut_to_its_budget():
    data = payload(metric_statuses=("FAIL",) * 5000, test_statuses=())
    checks = result_checks(data)
    text = summary_markdown(data, checks, ("FAIL",), budget=20_000)
    assert len(text.encode("utf-8")) <= 20_000
    assert "more row(s) left out" in text and text.startswith("### calaudit: FAIL")
    full = summary_markdown(data, checks, ("FAIL",), budget=10 ** 9)
    assert len(full.encode()) > 20_000


def test_step_summary_append_respects_the_github_limit(tmp_path):
    target = tmp_path / "summary.md"
    assert summary_budget(target) == 512 * 1024
    assert append_step_summary(target, "# one\n") and append_step_summary(target, "# two\n")
    assert target.read_text() == "# one\n# two\n"
    target.write_bytes(b"x" * (GITHUB_LIMIT - 100))
    assert summary_budget(target) == 0
    assert not append_step_summary(target, "y" * 200)
    assert target.stat().st_size == GITHUB_LIMIT - 100


def failing_test_payload():
    data = payload(metric_statuses=(), test_statuses=())
    data["tests"] = [{"id": "klce_consistency", "title": "KLCE test", "statistic": 0.000106,
                      "estimate": 0.000106, "p_value": 0.002, "p_value_adjusted": 0.004,
                      "alpha": 0.05, "status": "FAIL", "message": ""}]
    data["gate"] = {}
    return data


def test_junit_failure_of_a_test_carries_statistic_p_adjusted_p_and_alpha():
    _, _, by_name = cases(junit_xml(failing_test_payload(), ("FAIL",)))
    failure = by_name[("calaudit.test", "klce_consistency")].find("failure")
    assert failure.get("message") == ("FAIL: klce_consistency: estimate 0.000106, p 0.002, "
                                      "adjusted p 0.004 (holm), alpha 0.05")
    assert "adjusted p 0.004 (holm)" in failure.text


def test_step_summary_detail_cell_is_filled_for_failing_tests():
    data = failing_test_payload()
    text = summary_markdown(data, result_checks(data), ("FAIL",))
    row = next(line for line in text.splitlines() if line.startswith("| klce\\_consistency"))
    assert row.endswith("| estimate 0.000106, p 0.002, adjusted p 0.004 (holm), alpha 0.05 |")


def test_a_test_statistic_other_than_the_estimate_is_named_by_its_definition():
    """One number per test everywhere (the estimate); the statistic the p-value comes from
    is named, with its definition, where it is another number (the same words in JUnit,
    the step summary and the reports' checks)."""
    data = failing_test_payload()
    data["tests"][0].update(id="skce_uq_asymptotic", statistic=-6.724e-05, estimate=0.002079,
                            params={"statistic": "n/(n-1) SKCE_uq - SKCE_b"})
    words = ("estimate 0.002079, test statistic -6.724e-05 (n/(n-1) SKCE_uq - SKCE_b), "
             "p 0.002, adjusted p 0.004 (holm), alpha 0.05")
    _, _, by_name = cases(junit_xml(data, ("FAIL",)))
    failure = by_name[("calaudit.test", "skce_uq_asymptotic")].find("failure")
    assert failure.get("message") == f"FAIL: skce_uq_asymptotic: {words}"
    text = summary_markdown(data, result_checks(data), ("FAIL",))
    assert "| **FAIL** | 0.002079 |" in text and words.replace("_", "\\_") in text


def test_junit_has_no_timing_with_source_date_epoch(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    root, suite, _ = cases(junit_xml(payload(), ("FAIL",)))
    assert root.get("time") == suite.get("time") == "0"
    assert {c.get("time") for c in suite.iter("testcase")} == {"0"}


def test_errors_under_github_actions_give_an_annotation_and_a_summary_line(tmp_path, capsys):
    from calaudit.output.github import report_error

    summary = tmp_path / "summary.md"
    report_error("preds.csv: column 'p': bad, 50%", {"GITHUB_ACTIONS": "true",
                                                    "GITHUB_STEP_SUMMARY": str(summary)})
    err = capsys.readouterr().err
    assert err == "::error title=calaudit error::preds.csv: column 'p': bad, 50%25\n"
    assert "**The audit did not run:** preds.csv: column 'p': bad, 50%" in summary.read_text()
    report_error("x", {"GITHUB_ACTIONS": "true", "CALAUDIT_OUTPUTS__GITHUB": "off"})
    assert capsys.readouterr().err == ""


def diagnostic(status: str):
    """A check as the gate records a diagnostic test (``role``)."""
    return Check(kind="test", id="skce_ul_asymptotic", status=status, title="SKCE_ul",
                 value=0.1, p_value=0.001, message="", role="diagnostic")


def test_a_failing_diagnostic_never_fails_junit_or_the_annotations():
    data = failing_test_payload()
    checks = [*result_checks(data), diagnostic("FAIL")]
    _, suite, by_name = cases(junit_xml(data, ("FAIL",), checks=checks))
    case = by_name[("calaudit.test", "skce_ul_asymptotic")]
    assert case.find("failure") is None
    assert case.find("system-out").text.startswith("status FAIL (diagnostic: does not gate)")
    assert suite.get("failures") == "1"
    from calaudit.output.checklist import check_lines

    lines = annotations(check_lines(data, checks), ("FAIL",))
    assert [line.split("::")[1].split()[0] for line in lines] == ["error", "warning"]
    text = summary_markdown(data, checks, ("FAIL",))
    assert "1 of 1 checks have a status in fail-on" in text
    assert "1 diagnostic test(s) (do not gate): 1 FAIL" in text
    assert "| skce\\_ul\\_asymptotic | test (diagnostic) | **FAIL** |" in text
