"""Multiple-testing adjustment and the grading of tests (foundation gate functions)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from calaudit.audit.gate import ExitCode, exit_code, grade_tests, verdict
from calaudit.inference.multitest import adjust_pvalues
from calaudit.results import Status, TestResult
from tests.reference import holm_loops


@given(st.lists(st.floats(0, 1), min_size=1, max_size=12))
def test_holm_matches_textbook_recursion(p):
    np.testing.assert_allclose(adjust_pvalues(p, "holm"), holm_loops(p), atol=1e-15)


def test_bonferroni_bh_none():
    p = [0.01, 0.04, 0.03, 0.5]
    np.testing.assert_allclose(adjust_pvalues(p, "bonferroni"), [0.04, 0.16, 0.12, 1.0])
    # BH: sorted .01 .03 .04 .5 -> 4*.01/1, 4*.03/2, 4*.04/3, .5 -> cummin from the top
    np.testing.assert_allclose(adjust_pvalues(p, "fdr_bh"), [0.04, 0.0533333333, 0.0533333333,
                                                             0.5], rtol=1e-8)
    np.testing.assert_allclose(adjust_pvalues(p, "none"), p)
    with pytest.raises(ValueError):
        adjust_pvalues(p, "sidak")


def make_test(test_id, p, status=None):
    return TestResult(test_id, statistic=1.0, estimate=0.1, p_value=p, method="m",
                      status=status)


def test_grading_adjusts_pending_tests_only():
    tests = [make_test("a", 0.01), make_test("b", 0.04),
             make_test("c", float("nan"), Status.INCONCLUSIVE), make_test("d", 0.03)]
    graded = grade_tests(tests, alpha=0.05, method="holm", scope="family")
    assert [t.status for t in graded] == [Status.FAIL, Status.PASS, Status.INCONCLUSIVE,
                                         Status.PASS]
    assert graded[0].p_value_adjusted == pytest.approx(0.03)
    assert graded[2].p_value_adjusted is None
    assert all(t.alpha == 0.05 for t in graded if t.status in (Status.PASS, Status.FAIL))


def test_non_finite_pending_p_value_becomes_error():
    graded = grade_tests([make_test("a", float("nan"))], 0.05, "holm")
    assert graded[0].status is Status.ERROR


def test_verdict_and_exit_code():
    fail_on = ("FAIL", "ERROR")
    assert verdict([], fail_on) is Status.NO_CHECKS
    assert verdict([Status.PASS, Status.INCONCLUSIVE], fail_on) is Status.INCONCLUSIVE
    assert verdict([Status.PASS, Status.FAIL], fail_on) is Status.FAIL
    assert verdict([Status.WARN], fail_on) is Status.WARN
    assert verdict([Status.INCONCLUSIVE], ("INCONCLUSIVE",)) is Status.FAIL
    assert exit_code([Status.PASS], fail_on) is ExitCode.OK
    assert exit_code([Status.ERROR], fail_on) is ExitCode.GATE_FAILED
    assert exit_code([Status.FAIL], fail_on, exit_zero=True) is ExitCode.OK


def test_families_are_adjusted_separately_unless_scope_is_battery():
    def test(test_id, p, family):
        return TestResult(test_id, 1.0, 0.1, p, "m", family=family)

    tests = [test("g1", 0.01, "global"), test("g2", 0.2, "global"), test("g3", 0.5, "global"),
             test("local", 0.02, "local")]
    by_family = grade_tests(tests, 0.05, "holm", scope="family")
    assert [t.p_value_adjusted for t in by_family] == pytest.approx([0.03, 0.4, 0.5, 0.02])
    assert by_family[3].status is Status.FAIL
    together = grade_tests(tests, 0.05, "holm", scope="battery")
    assert [t.p_value_adjusted for t in together] == pytest.approx([0.04, 0.4, 0.5, 0.06])
    assert together[3].status is Status.PASS
