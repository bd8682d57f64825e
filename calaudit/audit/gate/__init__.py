"""The gate: statuses, the one list of checks, the verdict and the exit code.

- :mod:`~calaudit.audit.gate.decision`, the tests: the primary tests decide (two for
  global calibration, one for local), adjusted together by weighted Holm (the local
  primary spends half of alpha); the other tests are diagnostics that never gate
  (``GATE_RULE`` states the rule). Tests that decided their own status
  (``INCONCLUSIVE``, ``ERROR``, ``SKIPPED``) keep it. Groups gate behind the local primary.
- :mod:`~calaudit.audit.gate.grading`, the metrics: thresholds, and the INCONCLUSIVE rule
  (too little data to report a ``PASS``).
- :mod:`~calaudit.audit.gate.baseline`, the comparison with a baseline result: regressions
  and checks that newly fail.
- :mod:`~calaudit.audit.gate.checks`, the checks: one function builds them from a graded
  result, once per audit; the result keeps them and every output reads that list.
- :mod:`~calaudit.audit.gate.verdict`: :func:`decide` runs the above over one audit; the
  verdict and the exit code over the gating checks.
"""

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
