"""The decision rule of the gate: which tests decide, how they are adjusted, how groups gate.

Each question (``global``: is the model calibrated; ``local``, with covariates: in every
sub-population) has **primary tests**, chosen from the configuration and ``n`` only: per
slot of :data:`PRIMARY_SLOTS` the first candidate that ran or decided its own status
(``SKIPPED`` ones are passed over). The primaries are adjusted together by weighted Holm,
the local primary spending :data:`LOCAL_SHARE` of alpha. Every other test is a
**diagnostic**, adjusted within its family and never gating. A group can ``FAIL`` only
through the local primary (gatekeeping, :func:`gate_groups`); without a local test the local
primary is :data:`GROUPS_TEST_ID`. The global slots hold two consistency-resampling tests
(exact level at every ``n``): the SKCE, consistent against every miscalibration, and the
top-label ECE, which sees the over-confidence of many-class models that the
median-heuristic SKCE misses. Under the complete null weighted Holm keeps the probability
of a FAIL verdict at most ``alpha`` (``validation/gate_type1.py``)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from calaudit import registry
from calaudit.inference.multitest import adjust_pvalues
from calaudit.local.groups import excludes_zero
from calaudit.results import Status, TestResult

#: The one paragraph a reviewer checks against the code (rendered by the reports).
GATE_RULE = (
    "The verdict is decided by the primary tests: for global calibration skce_consistency "
    "and ece_consistency (exact consistency-resampling tests; with --method exact above "
    "skce.max_quadratic_n rows skce_ul_asymptotic replaces the first) and, when covariates "
    "are given, for local calibration local_consistency (an exact consistency-resampling "
    "test that aggregates, over the same label redraws, a recalibration score statistic per "
    "covariate, one for all covariates together and the KLCE; with --local-tests none, the "
    "Bonferroni combination of the group tests). The primary p-values are adjusted "
    "together by weighted Holm, the local primary spending half of alpha and the global "
    "primaries sharing the rest (without covariates they share all of it), and a primary "
    "test FAILs when its adjusted p-value is at most alpha; a primary that cannot run "
    "counts as p = 1. A resampling test whose smallest attainable p-value (1/(B+1)) could "
    "not reach its adjusted level is INCONCLUSIVE, never PASS. Every other test is a "
    "diagnostic: reported with its own adjusted p-value and status, never deciding. A "
    "group FAILs only when the local primary test FAILs (gatekeeping), its p-value adjusted "
    "among the groups (weighted Holm, the pairwise intersections spending a quarter of "
    "alpha) is at most alpha and its bias interval, simultaneous over the groups with the "
    "same weights (Bonferroni), excludes 0. With windows (--time-col/--window, or calaudit "
    "monitor) the e-process of calibration over time, calibration_eprocess, is one more "
    "primary that spends its own share of alpha, half of it, fixed when the monitoring run "
    "starts: it FAILs exactly when the e-process reaches 2/alpha in some window (the "
    "alarm), its p-value min(1, 1/max E) being valid however often it is looked at "
    "(Ville's inequality), and the other primaries share the other half by weighted Holm "
    "(Bonferroni between the two); calaudit monitor runs no fixed-sample test, so its "
    "verdict is the e-process alone and every continuation of a state together stays "
    "within that half. Thresholds and baseline comparisons configured "
    "by the "
    "user also gate. Under the complete null (the model calibrated given the predictions "
    "and covariates) the probability of a FAIL verdict from the tests is at most alpha; "
    "multiple_testing_scope = \"family\" (Holm within each family, every test gating) and "
    "multiple_testing = \"none\" or \"fdr_bh\" give up this guarantee."
)

#: Primary tests of each family: one per slot, the first candidate of the slot present.
PRIMARY_SLOTS = {
    "global": (("skce_consistency", "skce_uq_asymptotic", "skce_ul_asymptotic",
                "spiegelhalter", "hosmer_lemeshow", "skce_uq_bound", "skce_b_bound",
                "skce_ul_bound"),
               ("ece_consistency",)),
    "local": (("local_consistency", "klce_consistency", "klce_bootstrap", "klce_permutation",
               "groups_bonferroni"),),
}
#: Share of alpha spent on the local question when it has a primary (weighted Holm); the
#: global primaries share the rest equally.
LOCAL_SHARE = 0.5
GROUPS_TEST_ID = "groups_bonferroni"
#: The e-process of calibration over time: it decides its own status (the alarm) at the
#: level ``MONITOR_SHARE * alpha``, recorded in ``params["level"]``; the other tests are
#: graded at ``alpha`` less that level (Bonferroni between the two).
MONITOR_ID = "calibration_eprocess"
MONITOR_SHARE = 0.5


def primary_indices(tests: Sequence[TestResult]) -> list[int]:
    """Indices of the primary tests: per slot of :data:`PRIMARY_SLOTS`, the first candidate
    present (``SKIPPED`` tests passed over); a family with no registered candidate (a custom
    stage's tests) gets its first test that is not ``SKIPPED``."""
    usable = [i for i, t in enumerate(tests) if t.status is not Status.SKIPPED]
    chosen: list[int] = []
    for family in dict.fromkeys(tests[i].family for i in usable):
        members = [i for i in usable if tests[i].family == family]
        slots = PRIMARY_SLOTS.get(family, ())
        picked = []
        for slot in slots:
            ranked = sorted((slot.index(tests[i].id), i) for i in members
                            if tests[i].id in slot and i not in picked)
            if ranked:
                picked.append(ranked[0][1])
        if not picked and not any(tests[i].id in c for c in slots for i in members):
            picked = members[:1]
        chosen += picked
    return sorted(chosen)


def smallest_pvalue(test: TestResult) -> float | None:
    """The smallest p-value the test can produce at this n and B (``None``: not bounded
    away from 0). Resampling: ``1/(B+1)`` (KiTE's permutation p: ``1/B``); bounds record
    theirs in ``params["smallest_p_value"]``."""
    recorded = (test.params or {}).get("smallest_p_value")
    if recorded is not None:
        return float(recorded)
    if test.n_resamples:
        return 1.0 / test.n_resamples if test.id == "klce_permutation" else (
            1.0 / (test.n_resamples + 1))
    return None


def primary_weights(tests: Sequence[TestResult], members: Sequence[int]) -> list[float]:
    """Weights of the primaries ``members`` in the weighted Holm procedure: the local
    primary gets :data:`LOCAL_SHARE` of alpha and the global primaries share the rest;
    without a local primary every primary weighs the same."""
    local = [i for i in members if tests[i].family == "local"]
    others = [i for i in members if tests[i].family != "local"]
    if not local or not others:
        return [1.0] * len(members)
    return [LOCAL_SHARE / len(local) if tests[i].family == "local"
            else (1.0 - LOCAL_SHARE) / len(others) for i in members]


def grade_set(tests: list[TestResult], members: Sequence[int], alpha: float, method: str,
              role: str, count_undecided: bool = False,
              weights: Sequence[float] | None = None) -> None:
    """Adjust ``members`` together (in place): pending tests get ``FAIL``/``PASS``; tests that
    decided their own status count as ``p = 1`` with ``count_undecided`` (the primaries), else
    not at all. A ``PASS`` that could not have been a ``FAIL`` becomes ``INCONCLUSIVE``."""
    pending = [i for i in members if tests[i].status is None and math.isfinite(tests[i].p_value)]
    counted = list(members) if count_undecided else pending
    p = np.array([tests[i].p_value if i in pending else 1.0 for i in counted], dtype=float)
    w = None
    if weights is not None and method in ("holm", "bonferroni"):
        w = [weights[list(members).index(i)] for i in counted]
    adjusted = adjust_pvalues(p, method, w)
    for slot, i in enumerate(counted):
        test = tests[i]
        if i not in pending:
            tests[i] = dataclasses.replace(test, role=role, alpha=alpha)
            continue
        status, message = (Status.FAIL if adjusted[slot] <= alpha else Status.PASS), test.message
        floor = smallest_pvalue(test)
        if status is Status.PASS and floor is not None:
            best = p.copy()
            best[slot] = min(floor, p[slot])
            reachable = float(adjust_pvalues(best, method, w)[slot])
            if reachable > alpha:
                status = Status.INCONCLUSIVE
                message = (f"cannot reject: its smallest attainable p-value {floor:.3g} "
                           f"adjusts to {reachable:.3g} > alpha = {alpha:g}; use more "
                           "resamples" if test.n_resamples else
                           f"cannot reject: its smallest attainable p-value {floor:.3g} "
                           f"adjusts to {reachable:.3g} > alpha = {alpha:g}")
        tests[i] = dataclasses.replace(test, role=role, alpha=alpha,
                                       p_value_adjusted=float(adjusted[slot]), status=status,
                                       message=message)


def grade_tests(tests: Sequence[TestResult], alpha: float, method: str,
                scope: str = "primary") -> tuple[TestResult, ...]:
    """Roles, adjusted p-values and statuses of every test (the rule: :data:`GATE_RULE`).

    ``scope``: ``"primary"`` (the primaries together, the diagnostics within their family),
    ``"battery"`` (every test gates, all adjusted together) or ``"family"`` (every test gates,
    adjusted within its family: the error can reach ``alpha`` per family)."""
    over_time = [t for t in tests if t.id == MONITOR_ID]
    graded = [t for t in tests if t.id != MONITOR_ID]
    gate_alpha = alpha - sum(float(t.params.get("level", 0.0)) for t in over_time)
    if scope == "primary":
        primaries = primary_indices(graded)
        grade_set(graded, primaries, gate_alpha, method, "primary", count_undecided=True,
                  weights=primary_weights(graded, primaries))
        families: dict[str, list[int]] = {}
        for i, t in enumerate(graded):
            if i not in primaries:
                families.setdefault(t.family, []).append(i)
        for members in families.values():
            grade_set(graded, members, alpha, method, "diagnostic")
    else:
        families = {}
        for i, t in enumerate(graded):
            families.setdefault(t.family if scope == "family" else "battery", []).append(i)
        for members in families.values():
            grade_set(graded, members, gate_alpha, method, "primary")
    for i, test in enumerate(graded):
        if test.status is None:
            graded[i] = dataclasses.replace(test, alpha=alpha, status=Status.ERROR,
                                            message=test.message or "p-value is not finite")
    return tuple(graded) + tuple(over_time)


def groups_test(groups: Sequence[dict[str, Any]]) -> TestResult | None:
    """The local primary when no local test runs: ``p = min(1, k min_g p_g)`` over the
    ``k`` groups with a test (Bonferroni; valid under any dependence between groups).
    ``None`` without groups; ``INCONCLUSIVE`` when no group has a test."""
    if not groups:
        return None
    p_values = [g["p_value"] for g in groups if g.get("p_value") is not None]
    method = "Bonferroni combination of the group calibration tests: p = min(1, k min p_g)"
    title = registry.title(GROUPS_TEST_ID)
    if not p_values:
        return TestResult(GROUPS_TEST_ID, math.nan, math.nan, math.nan, method,
                          status=Status.INCONCLUSIVE, family="local", title=title,
                          message="no group is large enough for a test")
    smallest = float(min(p_values))
    return TestResult(GROUPS_TEST_ID, smallest, smallest, min(1.0, len(p_values) * smallest),
                      method, params={"groups_tested": len(p_values)}, family="local",
                      title=title)


def local_primary(tests: Sequence[TestResult]) -> TestResult | None:
    """The local primary test (the groups' gatekeeper), ``None`` when none ran."""
    return next((t for t in tests if t.family == "local" and t.role == "primary"), None)


def gate_groups(groups: Sequence[dict[str, Any]], tests: Sequence[TestResult],
                alpha: float) -> tuple[dict[str, Any], ...]:
    """Group statuses under gatekeeping, agreeing with the intervals.

    A group ``FAIL``s when the local primary test ``FAIL``ed, its p-value adjusted across the
    groups is at most ``alpha`` and its simultaneous bias interval excludes 0; else it is
    ``PASS`` (``INCONCLUSIVE`` stays), with a message when only some of these hold."""
    keeper = local_primary(tests)
    open_ = keeper is not None and keeper.status is Status.FAIL
    out = []
    for row in groups:
        row = {**row, "gatekeeper": None if keeper is None else keeper.id}
        if row.get("status") not in ("PASS", "FAIL"):
            out.append(row)
            continue
        significant = row.get("p_value_adjusted") is not None and (
            row["p_value_adjusted"] <= alpha)
        excludes = excludes_zero(row)
        fails = open_ and significant and excludes
        row["status"] = "FAIL" if fails else "PASS"
        notes = []
        if not fails and (significant or excludes):
            if keeper is None:
                notes.append("no local test ran, so no group can FAIL (gatekeeping)")
            elif not open_:
                notes.append(f"the local primary test ({keeper.id}) did not reject, so no "
                             "group can FAIL (gatekeeping)")
            if significant and not excludes:
                notes.append("adjusted p-value <= alpha but the simultaneous interval "
                             "contains 0")
            if excludes and not significant:
                notes.append(f"the simultaneous interval excludes 0 but the adjusted p-value "
                             f"{row['p_value_adjusted']:.3g} > alpha")
        row["message"] = "; ".join(notes) if notes else row.get("message", "")
        out.append(row)
    return tuple(out)
