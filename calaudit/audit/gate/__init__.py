"""The gate: statuses, the one list of checks, the verdict and the exit code.

``decision`` (the tests: primaries by weighted Holm, diagnostics never gate, groups behind
the local primary), ``grading`` (thresholds and the INCONCLUSIVE data rule), ``baseline``
(regressions), ``checks`` (the one list, built once per audit) and ``verdict``
(:func:`decide`, the verdict and the exit code)."""

from calaudit.audit.gate.checks import (
    Check,
    baseline_checks,
    diagnostic_checks,
    failing,
    gating,
    result_checks,
    statistic_text,
    status_counts,
)
from calaudit.audit.gate.decision import GATE_RULE, gate_groups, grade_tests, groups_test
from calaudit.audit.gate.grading import (
    apply_data_rule,
    data_rule,
    grade_metrics,
    threshold_status,
)
from calaudit.audit.gate.verdict import (
    Decision,
    ExitCode,
    decide,
    describe_gate,
    exit_code,
    gate_counts,
    verdict,
)

__all__ = ["Check", "Decision", "ExitCode", "GATE_RULE", "apply_data_rule", "baseline_checks",
           "data_rule", "decide", "describe_gate", "diagnostic_checks", "exit_code",
           "failing", "gate_counts", "gate_groups", "grade_metrics", "grade_tests",
           "gating", "groups_test", "result_checks", "statistic_text", "status_counts",
           "threshold_status", "verdict"]
