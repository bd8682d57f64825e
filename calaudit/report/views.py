"""The report's view model: frozen dataclasses of display-ready raw strings (the HTML
template autoescapes them, the Markdown one applies the ``md`` filter), built by
:mod:`calaudit.report.context`. ``FigureView.data`` is the slice of the result a figure is
drawn from (:mod:`calaudit.report.figures`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class KeyValue:
    """One labelled fact: ``key: value``."""

    key: str
    value: str


@dataclass(frozen=True)
class FigureView:
    """One figure: what it shows (title, alt text, caption) and where its data is."""

    key: str
    kind: str
    title: str
    alt: str
    caption: str
    filename: str
    data: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class CheckRef:
    """A check named in the verdict box: kind (test, metric, group), id, status, why."""

    kind: str
    id: str
    title: str
    status: str
    detail: str


@dataclass(frozen=True)
class VerdictView:
    """The decision (``headline``), its evidence (``story``) and how the gate decides
    (``gate``), as sentences of :class:`calaudit.output.story.Span`."""

    status: str
    headline: tuple[Any, ...]
    gate: tuple[Any, ...]
    deciding: tuple[CheckRef, ...]
    attention: tuple[CheckRef, ...]
    counts: tuple[KeyValue, ...]
    story: tuple[tuple[Any, ...], ...] = ()


@dataclass(frozen=True)
class CheckRow:
    """One row of the one check list (:mod:`calaudit.output.checklist`)."""

    kind: str
    id: str
    name: str
    title: str
    status: str
    value: str
    p_value: str
    p_adjusted: str
    detail: str
    role: str = "primary"


@dataclass(frozen=True)
class BaselineRow:
    label: str
    better: str
    old: str
    new: str
    delta: str
    tolerance: str
    status: str
    message: str


@dataclass(frozen=True)
class BaselineView:
    """The comparison with the baseline result: where it is, its fingerprint, the deltas."""

    facts: tuple[KeyValue, ...]
    status: str
    regressions: int
    rows: tuple[BaselineRow, ...]
    transitions: tuple[BaselineRow, ...]
    differences: tuple[KeyValue, ...]


@dataclass(frozen=True)
class EvidenceSection:
    """A collapsible evidence section rendered from its own template partials, built by a
    function of :data:`calaudit.report.context.EVIDENCE_BUILDERS`; ``data`` is what the
    partial reads, ``figures`` the figures it shows."""

    id: str
    title: str
    summary: str
    html_template: str
    md_template: str = ""
    data: Any = None
    figures: tuple[FigureView, ...] = ()
    open: bool = False


@dataclass(frozen=True)
class ClassRow:
    name: str
    count: str
    share: str


@dataclass(frozen=True)
class CovariateRow:
    name: str
    type: str
    categories: str


@dataclass(frozen=True)
class FileRow:
    role: str
    path: str
    format: str
    sha256: str
    rows: str
    size: str = "-"
    #: ``sha256 <hex>`` or ``etag <value>`` (docs/result-schema.md, inputs.files)
    fingerprint: str = "-"


@dataclass(frozen=True)
class DataView:
    facts: tuple[KeyValue, ...]
    excluded: tuple[KeyValue, ...]
    files: tuple[FileRow, ...]
    classes: tuple[ClassRow, ...]
    covariates: tuple[CovariateRow, ...]
    #: files read but not listed (the report lists at most MAX_FILES; the JSON has all)
    files_more: int = 0
    #: classes not listed (at most ``limits.REPORT_MAX_ROWS``; the JSON has all)
    classes_more: int = 0


@dataclass(frozen=True)
class MetricRow:
    id: str
    title: str
    value: str
    ci: str
    status: str
    threshold: str
    direction: str = ""
    ideal: str = ""
    unit: str = ""
    note: str = ""


@dataclass(frozen=True)
class TestRow:
    """``statistic``: the test statistic when it is another number than the estimate
    (``""`` otherwise), ``statistic_definition`` its formula."""

    id: str
    title: str
    scope: str
    statistic: str
    estimate: str
    p_value: str
    p_adjusted: str
    alpha: str
    status: str
    method: str
    resamples: str
    message: str
    statistic_definition: str = ""


@dataclass(frozen=True)
class BinRow:
    range: str
    count: str
    mean_score: str
    observed: str
    interval: str
    band: str
    outside: bool


@dataclass(frozen=True)
class ReliabilityView:
    summary: str
    figure: FigureView | None
    bins: tuple[BinRow, ...]
    per_class_figure: FigureView | None
    per_class_summary: str
    smooth_figure: FigureView | None = None
    #: bins not listed in the table (at most ``limits.REPORT_MAX_ROWS``; the JSON has all)
    bins_more: int = 0


@dataclass(frozen=True)
class NullView:
    test: TestRow
    figure: FigureView
    summary: str


@dataclass(frozen=True)
class GroupRow:
    group: str
    kind: str
    n: str
    events: str
    mean_prediction: str
    observed_rate: str
    bias: str
    bias_ci: str
    mean_lcb: str
    test: str
    p_value: str
    p_adjusted: str
    status: str
    message: str
    #: the first screen's plain note (why a group with a clear bias is not a FAIL)
    note: str = ""


@dataclass(frozen=True)
class KlceView:
    statistic: str
    covariates: str
    encoding: tuple[KeyValue, ...]
    kernels: tuple[KeyValue, ...]
    tests: tuple[TestRow, ...]
    hoeffding: str
    per_class: tuple[KeyValue, ...]


@dataclass(frozen=True)
class LocalView:
    klce: KlceView | None
    lcb_summary: tuple[KeyValue, ...]
    lcb_figures: tuple[FigureView, ...]
    top_groups: tuple[GroupRow, ...]
    bias_figure: FigureView | None
    groups: tuple[GroupRow, ...]
    group_counts: str


@dataclass(frozen=True)
class Term:
    """A glossary entry the first screen links to (``#term-<key>``)."""

    key: str
    term: str
    text: str


@dataclass(frozen=True)
class Note:
    """A plain-language note: a heading and its paragraphs."""

    title: str
    paragraphs: tuple[str, ...]


@dataclass(frozen=True)
class SettingsRow:
    """One estimator or test of the methods appendix: its name, method and settings
    split into columns (``columns`` follows the table's header)."""

    name: str
    method: str
    columns: tuple[str, ...]
    other: str


@dataclass(frozen=True)
class SettingsTable:
    header: tuple[str, ...]
    rows: tuple[SettingsRow, ...]


@dataclass(frozen=True)
class ConfigGroup:
    """The resolved configuration of one section (``""`` for top-level keys)."""

    section: str
    items: tuple[KeyValue, ...]


@dataclass(frozen=True)
class AppendixView:
    methods: tuple[KeyValue, ...]
    seeds: tuple[KeyValue, ...]
    environment: tuple[KeyValue, ...]
    metric_settings: SettingsTable | None = None
    test_settings: SettingsTable | None = None
    config_groups: tuple[ConfigGroup, ...] = ()


@dataclass(frozen=True)
class SignOffView:
    name: str
    role: str
    date: str
    decision: str


@dataclass(frozen=True)
class ReportContext:
    """Everything a report template shows, in section order."""

    title: str
    subtitle: str
    created_at: str
    calaudit_version: str
    verdict: VerdictView
    data: DataView
    metrics: tuple[MetricRow, ...]
    tests: tuple[TestRow, ...]
    tests_note: str
    reliability: ReliabilityView
    nulls: tuple[NullView, ...]
    local: LocalView | None
    local_note: str
    how_to_read: Mapping[str, str]
    notes: tuple[Note, ...]
    appendix: AppendixView
    signoff: SignOffView
    checks: tuple[CheckRow, ...] = ()
    check_counts: str = ""
    baseline: BaselineView | None = None
    evidence: tuple[EvidenceSection, ...] = ()
    provenance: tuple[KeyValue, ...] = ()
    top_groups: tuple[GroupRow, ...] = ()
    sections: tuple[tuple[str, str], ...] = ()
    test_summary: str = ""
    data_summary: str = ""
    local_summary: str = ""
    diagnosis: Any = None  # calaudit.report.diagnosis_context.DiagnosisView (diagnosis helper)
    #: the picture the verdict rests on, shown under the verdict (and not again in its
    #: section, ``lead_section``)
    lead: FigureView | None = None
    lead_section: str = ""
    lead_section_title: str = ""
    glossary: tuple[Term, ...] = ()
    appendix_sections: tuple[tuple[str, str], ...] = ()

    def figures(self) -> tuple[FigureView, ...]:
        """Every figure of the report, in order of appearance."""
        found: list[FigureView | None] = [self.lead, self.reliability.figure,
                                          self.reliability.per_class_figure,
                                          self.reliability.smooth_figure]
        found += [null.figure for null in self.nulls]
        if self.local is not None:
            found += list(self.local.lcb_figures) + [self.local.bias_figure]
        if self.diagnosis is not None:
            found += list(self.diagnosis.figures())
        for section in self.evidence:
            found += list(section.figures)
        unique = {f.key: f for f in found if f is not None}
        return tuple(unique.values())
