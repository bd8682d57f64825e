"""The view model: every section of the schema becomes display-ready strings."""

from __future__ import annotations

import copy
import re

import pytest

from calaudit.output.formatting import (
    fmt_count,
    fmt_percent,
    fmt_pvalue,
    fmt_signed,
    fmt_value,
    md_cell,
)
from calaudit.output.story import plain
from calaudit.report.context import build_context
from calaudit.report.local_context import MAX_BIAS_ROWS
from tests.report.synthetic import SCRIPT


def test_verdict_names_the_deciding_checks_and_the_gate(binary_synth):
    verdict = build_context(binary_synth).verdict
    assert verdict.status == "FAIL"
    assert [c.id for c in verdict.deciding] == ["klce_consistency", "klce_bootstrap"]
    assert verdict.deciding[0].detail == ("estimate 0.00092, p 0.005, adjusted p 0.020 (holm), "
                                          "alpha 0.05")
    assert plain(verdict.headline) == ("The predicted probabilities are right on average but "
                                       "off for some groups of similar rows.")
    assert plain(verdict.story[0]) == (
        "2 of 3 local tests reject (klce_consistency and klce_bootstrap: adjusted p 0.020 and "
        "0.020 <= alpha 0.05; raw p 0.005 and 0.005).")
    assert {(c.id, c.status) for c in verdict.attention} == {
        ("klce_permutation", "INCONCLUSIVE"), ("tce2", "WARN")}
    assert plain(verdict.gate) == (
        "The verdict rests on 5 primary test(s) at alpha = 0.05, their p-values adjusted for "
        "testing several at once (the gate's rule); a check with a status in FAIL, ERROR "
        "fails the audit.")
    assert {span.term for span in verdict.gate} >= {"primary-test", "adjusted-p", "gate-rule"}
    counts = {c.key: c.value for c in verdict.counts}
    assert counts == {"checks": "6 checks: 2 PASS, 1 WARN, 2 FAIL, 1 INCONCLUSIVE",
                      "groups (diagnostics)": "2 FAIL, 2 INCONCLUSIVE, 4 PASS"}


def test_verdict_story_says_where_from_the_groups_shown_first(binary_synth):
    verdict = build_context(binary_synth).verdict
    where = [plain(s) for s in verdict.story if plain(s).startswith("Where")]
    assert len(where) == 1 and "race=A +0.055 [+0.017, +0.093] (472 rows, under-predicted)" \
        in where[0]
    for test in binary_synth["tests"]:
        if test["status"] == "FAIL":
            test["status"] = "PASS"
    verdict = build_context(binary_synth).verdict
    assert verdict.deciding == ()
    assert not any(plain(s).startswith("Where") for s in verdict.story)


def test_a_weighted_group_is_told_by_its_weight_and_effective_size(binary_synth):
    from calaudit.output.formatting import fmt_size

    top = binary_synth["local"]["lcb"]["top_groups"][0]
    top.update(n=40672.0, weight=40672.0, effective_size=4667.48)
    where = [plain(s) for s in build_context(binary_synth).verdict.story
             if plain(s).startswith("Where")]
    assert f"{top['group']} " in where[0] and \
        "(weight 40,672, effective size 4,667, under-predicted)" in where[0]
    assert "rows" not in where[0].split(";")[0]
    assert [fmt_size(v) for v in (40672.0, 4667.48, 812, None)] == [
        "40,672", "4,667", "812", "-"]


def test_pass_without_tests(minimal_synth):
    context = build_context(minimal_synth)
    assert context.verdict.status == "PASS" and not context.verdict.deciding
    assert plain(context.verdict.gate).startswith("This result contains no hypothesis tests.")
    assert plain(context.verdict.headline) == "No hypothesis test ran: nothing below was tested."
    assert context.tests_note == "This result contains no hypothesis tests."
    assert context.local_note == ""
    assert context.local is None and context.nulls == () and context.figures() == ()
    assert context.reliability.figure is None
    assert context.title == "Calibration audit"
    minimal_synth["config"]["run_tests"] = False
    assert build_context(minimal_synth).tests_note.startswith("No hypothesis tests were run")


def test_covariates_without_local_results_are_reported(binary_synth):
    binary_synth["local"], binary_synth["groups"] = {}, []
    context = build_context(binary_synth)
    assert context.local is None
    assert context.local_note.startswith("Covariates were given")


def test_data_section(binary_synth):
    data = build_context(binary_synth).data
    facts = {f.key: f.value for f in data.facts}
    assert facts["rows read"] == "1,200" and facts["rows excluded"] == "20"
    assert facts["column: scores"] == f"p_{SCRIPT}"
    assert [(c.name, c.share) for c in data.classes] == [("no default", "82.5%"),
                                                          (SCRIPT, "17.5%")]
    assert [f.role for f in data.files] == ["predictions", "labels"]
    assert data.covariates[1].categories == f"A, B|pipe\nnewline, {SCRIPT}"


def test_test_rows_are_formatted_and_scoped(binary_synth):
    rows = {t.id: t for t in build_context(binary_synth).tests}
    assert rows["skce_consistency"].scope == "global"
    assert rows["klce_bootstrap"].scope == "local"
    assert rows["klce_permutation"].p_value == "-"
    assert rows["klce_permutation"].message.startswith("only 12 events")
    assert rows["klce_consistency"].p_value == "0.005"
    assert rows["skce_ul_asymptotic"].resamples == "-"


def test_one_null_figure_per_resampling_test(binary_synth):
    nulls = build_context(binary_synth).nulls
    assert [n.test.id for n in nulls] == ["skce_consistency", "klce_consistency",
                                          "klce_bootstrap"]
    assert "from 200 resamples" in nulls[0].summary


def test_reliability_section_counts_bins_outside_the_band(binary_synth):
    diagrams = binary_synth["diagrams"]["reliability"]
    diagrams["bins"]["observed_rate"][0] = 0.99  # far outside the band of bin 1
    reliability = build_context(binary_synth).reliability
    assert reliability.bins[0].outside
    assert sum(b.outside for b in reliability.bins) >= 1
    assert "fall outside the 95% consistency band (200 label redraws)" in reliability.summary
    assert reliability.per_class_figure is None


def test_multiclass_per_class_figure(multiclass_synth):
    reliability = build_context(multiclass_synth).reliability
    assert reliability.per_class_figure is not None
    assert len(reliability.per_class_figure.data["panels"]) == 4
    assert reliability.per_class_summary.startswith("All 4 classes")


def test_local_section(binary_synth):
    local = build_context(binary_synth).local
    assert local is not None and local.klce is not None
    assert [t.id for t in local.klce.tests] == ["klce_consistency", "klce_bootstrap",
                                                 "klce_permutation"]
    kernels = {k.key: k.value for k in local.klce.kernels}
    assert kernels["kernel on predictions"] == \
        "gaussian, bandwidth 0.083 (gamma 72.6, median heuristic)"
    # the bound is not exceeded while the resampling test FAILs: said without contradiction
    assert "does not contradict the FAIL above" in local.klce.hoeffding
    assert local.klce.hoeffding.startswith("Diagnostic, does not gate")
    assert len(local.lcb_figures) == 2 and len(local.top_groups) == 3
    statuses = [g.status for g in local.groups]
    assert statuses.count("INCONCLUSIVE") == 2
    assert local.group_counts == "8 groups: 2 FAIL, 2 INCONCLUSIVE, 4 PASS."
    assert {k.key: k.value for k in local.lcb_summary}["max"].startswith("+")


def test_klce_per_class(multiclass_synth):
    klce = build_context(multiclass_synth).local.klce
    assert [p.key for p in klce.per_class][:2] == ["cat", SCRIPT]
    assert klce.per_class[3].value == "statistic 0.0008, p < 0.001"


def test_bias_plot_keeps_the_strongest_evidence_and_leaves_out_noise(binary_synth):
    """Intersections whose interval contains 0 are left out; of the rest, the strongest
    evidence (smallest adjusted p-value) is kept."""
    template = dict(binary_synth["groups"][0], kind="single")
    binary_synth["groups"] = [dict(template, group=f"g{i}", bias=i / 1000,
                                   p_value=1 - i / 100, p_value_adjusted=1 - i / 100)
                              for i in range(MAX_BIAS_ROWS + 5)]
    binary_synth["groups"].append(dict(template, group="no data", bias=None))
    binary_synth["groups"].append(dict(template, group="a & b", kind="intersection",
                                       bias=0.5, bias_ci=[-0.1, 1.1], p_value=0.001,
                                       p_value_adjusted=0.001))
    figure = build_context(binary_synth).local.bias_figure
    shown = {row["group"] for row in figure.data["rows"]}
    assert len(shown) == MAX_BIAS_ROWS and "g0" not in shown and "g28" in shown
    assert "a & b" not in shown
    assert figure.caption.startswith(f"{MAX_BIAS_ROWS} of {MAX_BIAS_ROWS + 7} groups: each "
                                     "covariate's groups and the intersections whose "
                                     "interval excludes 0")


def test_figure_names_are_unique_and_safe(binary_synth):
    binary_synth["local"]["lcb"]["curves"][0]["covariate"] = "../../etc/<x>|y"
    names = [f.filename for f in build_context(binary_synth).figures()]
    assert len(names) == len(set(names)) == 7
    assert all(re.fullmatch(r"figure-\d\d-[a-z0-9-]+\.svg", n) for n in names)


def test_missing_optional_keys_do_not_break_the_view(binary_synth):
    trimmed = copy.deepcopy(binary_synth)
    for key in ("hoeffding", "encoding", "prob_kernel", "cov_kernel", "per_class"):
        trimmed["local"]["klce"].pop(key, None)
    trimmed["local"].pop("lcb")
    for test in trimmed["tests"]:
        test.pop("null_distribution")
    context = build_context(trimmed)
    assert context.nulls == () and context.local.lcb_figures == ()
    assert context.local.klce.hoeffding == ""


def test_signoff_fields(binary_synth):
    signoff = build_context(binary_synth, {"name": "Ada", "role": "auditor"}).signoff
    assert (signoff.name, signoff.role, signoff.date) == ("Ada", "auditor", "")


@pytest.mark.parametrize(("raw", "cell"), [
    ("a|b", "a\\|b"),
    ("line\nbreak", "line break"),
    ("a\r\nb\u2028c", "a b c"),
    (SCRIPT, "&lt;script&gt;alert(1)&lt;/script&gt;"),
    ("back\\|slash", "back\\\\\\|slash"),
    ("*x* _y_ `z` [l](u)", "\\*x\\* \\_y\\_ \\`z\\` \\[l\\](u)"),
    (0.5, "0.5"),
])
def test_md_cell(raw, cell):
    assert md_cell(raw) == cell


def test_formatters():
    assert fmt_pvalue(0.0001) == "< 0.001" and fmt_pvalue(None) == "-"
    assert fmt_count(4000) == "4,000" and fmt_count(None) == "-"
    assert fmt_percent(0.175) == "17.5%" and fmt_percent(float("nan")) == "-"
    assert fmt_signed(0.05712) == "+0.0571" and fmt_signed(-0.0005) == "-0.0005"
    assert fmt_value({"a": [1, 2.5], "b": None, "c": True}) == "a=1, 2.5, b=-, c=yes"


def test_diagnostic_tests_never_decide_the_verdict(binary_synth):
    from calaudit.audit.gate import Check
    from calaudit.output.checklist import check_lines
    from calaudit.report.gate_context import build_verdict

    checks = [Check(kind="test", id=t["id"], status=t["status"], title=t["title"],
                    value=None, p_value=t.get("p_value_adjusted"), message="",
                    role="diagnostic" if t["id"] == "klce_bootstrap" else "primary")
              for t in binary_synth["tests"]]
    binary_synth["tests"][[t["id"] for t in binary_synth["tests"]].index(
        "klce_bootstrap")]["role"] = "diagnostic"
    verdict = build_verdict(binary_synth, check_lines(binary_synth, checks))
    assert [c.id for c in verdict.deciding] == ["klce_consistency"]
    assert "klce_bootstrap" not in {c.id for c in verdict.attention}  # told in the story
    counts = {c.key: c.value for c in verdict.counts}
    assert counts["checks"].endswith("; 1 diagnostic test(s) (do not gate): 1 FAIL")
    assert "1 diagnostic test(s) are reported but do not decide: 1 FAIL." in {
        plain(s) for s in verdict.story}
    assert "klce_bootstrap" not in plain(verdict.story[0])


def test_small_multiples_are_carried_by_the_bins_with_the_rows():
    """In a per-class or per-group panel the bin that holds the rows carries the eye: its
    dot is the largest, and the whiskers and bands of bins of a few rows are faint (they
    span most of [0, 1] and would dominate otherwise)."""
    from matplotlib.collections import LineCollection, PathCollection

    from calaudit.report.plots import plot_reliability

    bins = {"mean_score": [0.05, 0.35, 0.62, 0.91], "observed_rate": [0.04, 0.5, 0.0, 1.0],
            "rate_low": [0.03, 0.09, 0.0, 0.34], "rate_high": [0.06, 0.91, 0.71, 1.0],
            "lower": [0.0, 0.3, 0.6, 0.9], "upper": [0.1, 0.4, 0.7, 1.0],
            "count": [864, 2, 3, 10]}
    band = {"low": [0.03, 0.0, 0.0, 0.6], "high": [0.07, 1.0, 1.0, 1.0], "level": 0.95}
    ax = plot_reliability(bins, band, weighted=True, legend=False)
    dots = next(c for c in ax.collections if isinstance(c, PathCollection))
    sizes = dots.get_sizes()
    assert sizes.argmax() == 0 and sizes[0] > 4 * sizes[1:].max()
    whiskers = next(c for c in ax.collections if isinstance(c, LineCollection))
    alphas = whiskers.get_colors()[:, 3]
    assert alphas[0] == pytest.approx(1.0) and alphas[1:3].max() < 0.3
    bars = [patch.get_facecolor()[3] for patch in ax.patches]
    assert bars[0] > 2 * max(bars[1:3])
    plain = plot_reliability(bins, band, legend=False)  # the main diagram: as before
    assert not any(isinstance(c, PathCollection) for c in plain.collections)


def _fail_only(result, family):
    """``result`` with the tests of one family failing the gate and the others passing."""
    listed = set(result["local"]["klce"]["tests"])
    for test in result["tests"]:
        local = test.get("family") == "local" or test["id"] in listed
        test["status"] = "FAIL" if local == (family == "local") else "PASS"
        test["family"] = "local" if local else "global"
        test["role"] = "primary"
    return result


def test_the_first_screen_leads_with_the_picture_of_what_failed(binary_synth):
    """A global failure leads with the reliability diagram; a local failure with the
    reliability diagrams of the groups shown first (else the bias by group)."""
    global_fail = build_context(_fail_only(copy.deepcopy(binary_synth), "global"))
    assert global_fail.lead.kind == "reliability" and global_fail.lead_section == "reliability"
    assert "How: " in plain(global_fail.verdict.story[1])
    local = _fail_only(copy.deepcopy(binary_synth), "local")
    assert build_context(local).lead.kind == "bias_by_group"
    panel = {"group": "race=A", "bins": local["diagrams"]["reliability"]["bins"],
             "bias": 0.055, "status": "FAIL"}
    local["local"]["group_reliability"] = [panel, {**panel, "group": "age=(56, 75]"}]
    context = build_context(local)
    assert context.lead.kind == "reliability_by_group" and context.lead_section == "diagnosis"
    assert [p["group"] for p in context.lead.data["panels"]] == ["race=A"]


def test_the_verdict_box_speaks_plainly_and_links_its_terms(credit_result):
    """The first screen keeps the jargon out of its words: no method names, and the terms
    it needs link to the glossary, whose entries exist (with the gate's own rule)."""
    from calaudit.report.render import render_html

    html = render_html(credit_result).text
    box = html.split('<section id="verdict"', 1)[1].split("</section>", 1)[0]
    words = re.sub(r'<a class="term"[^>]*>.*?</a>', " ", box)
    for jargon in ("Holm", "step-down", "simultaneous", "gatekeeping", "KLCE",
                   "neighbourhood", "resampled from predictions"):
        assert jargon not in words, jargon
    terms = set(re.findall(r'<a class="term" href="#term-([a-z-]+)"', box))
    assert {"local-test", "adjusted-p", "gate-rule", "bias", "interval"} <= terms
    for term in terms:
        assert f'id="term-{term}"' in html, term
    rule = credit_result["gate"]["rule"]
    assert html.count(rule.replace("'", "&#39;").replace('"', "&#34;")[:60]) >= 1


def test_a_test_statistic_other_than_its_estimate_is_named_in_the_tests_table(credit_result):
    rows = {t.id: t for t in build_context(credit_result).tests}
    uq = rows["skce_uq_asymptotic"]
    assert uq.estimate == fmt_value(next(t["estimate"] for t in credit_result["tests"]
                                         if t["id"] == "skce_uq_asymptotic"))
    assert uq.statistic and uq.statistic_definition == "n/(n-1) SKCE_uq - SKCE_b"
    assert rows["skce_consistency"].statistic == ""  # its statistic is its estimate


def _payload(statuses: dict[str, str], weights: dict | None = None) -> dict:
    tests = [{"id": test_id, "family": "global", "role": "primary", "status": status,
              "p_value": 0.01 if status == "FAIL" else 0.6,
              "p_value_adjusted": 0.02 if status == "FAIL" else 0.7, "alpha": 0.05}
             for test_id, status in statuses.items()]
    data = {"n": 1000, **({"weights": weights} if weights else {})}
    return {"tests": tests, "metrics": [], "groups": [], "data": data,
            "verdict": {"status": "FAIL" if "FAIL" in statuses.values() else "PASS",
                        "fail_on": ["FAIL", "ERROR"]},
            "gate": {"fail_on": ["FAIL", "ERROR"], "alpha": 0.05}}


def test_a_quiet_test_beside_a_rejecting_one_does_not_say_all_is_well():
    from calaudit.output.story import story

    text = [plain(s) for s in story(_payload({"ece_consistency": "FAIL",
                                              "spiegelhalter": "PASS"}))]
    quiet = [s for s in text if "does not reject" in s]
    assert quiet == [s for s in text if s.startswith("The other global test (spiegelhalter)")]
    assert quiet and not any("match the outcomes" in s for s in text)
    calm = [plain(s) for s in story(_payload({"ece_consistency": "PASS",
                                              "spiegelhalter": "PASS"}))]
    assert any(s.startswith("The global tests do not reject") and "match the outcomes" in s
               for s in calm)


def test_a_weighted_audit_says_so_with_its_effective_size():
    from calaudit.output.story import story

    weights = {"kind": "design", "column": "w", "effective_sample_size": 812.4,
               "label_dependent": False}
    text = [plain(s) for s in story(_payload({"ece_consistency": "PASS"}, weights))]
    assert ("Weighted audit (design weights from 'w'): effective sample size 812 of 1,000 "
            "rows") in " ".join(text)
    assert not any("Weighted" in s for s in
                   map(plain, story(_payload({"ece_consistency": "PASS"}))))


def test_a_group_note_says_when_no_local_test_ran():
    from calaudit.report.local_context import first_screen_note

    group = {"status": "PASS", "p_value_adjusted": 0.0001, "bias_ci": [0.02, 0.05]}
    assert first_screen_note({**group, "gatekeeper": None}, 0.05) == (
        "not gated: no local test ran")
    assert first_screen_note({**group, "gatekeeper": "local_consistency"}, 0.05) == (
        "not a finding: the local test did not reject")
    assert first_screen_note({**group, "p_value_adjusted": 0.2}, 0.05) == (
        "not a finding: adjusted p above alpha")
