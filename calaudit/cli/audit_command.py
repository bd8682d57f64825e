"""What ``calaudit test`` and ``calaudit metrics`` do once options are parsed:
load -> audit -> render every output in memory -> write them atomically -> summary ->
exit code. Heavy modules are imported here, not at CLI start-up."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from calaudit.audit.config import AuditConfig
from calaudit.audit.gate import ExitCode, exit_code
from calaudit.data.load import load
from calaudit.output.files import write_atomic
from calaudit.output.json_result import to_json
from calaudit.output.summary import print_summary


@dataclass(frozen=True)
class DataOptions:
    """The data options of the command line, passed through to :func:`calaudit.load`."""

    path: Path
    label_col: str | None = None
    prob_cols: str | None = None
    logit_cols: str | None = None
    id_col: str | None = None
    labels: Path | None = None
    covariates_file: Path | None = None
    covariates: str | None = None
    categorical: str | None = None
    positive_label: str | None = None
    renormalize: bool = False
    drop_invalid: bool = False


@dataclass(frozen=True)
class OutputOptions:
    """Where results go."""

    json: str | None = None
    md: Path | None = None
    html: Path | None = None
    exit_zero: bool = False
    signoff: tuple[tuple[str, str], ...] = ()
    """Sign-off fields of the reports (``name``, ``role``, ``date``)."""


def run(data_opts: DataOptions, config: AuditConfig, outputs: OutputOptions) -> ExitCode:
    """Run one audit from the command line and return the exit code."""
    data = load(
        data_opts.path, label_col=data_opts.label_col, prob_cols=data_opts.prob_cols,
        logit_cols=data_opts.logit_cols, id_col=data_opts.id_col, labels=data_opts.labels,
        covariates_file=data_opts.covariates_file, covariates=data_opts.covariates or "",
        categorical=data_opts.categorical or "", positive_label=data_opts.positive_label,
        renormalize=data_opts.renormalize, drop_invalid=data_opts.drop_invalid,
        require_two_classes=config.run_tests,
    )
    from calaudit.audit.runner import run_audit

    result = run_audit(data, config)
    payload = result.to_dict()
    documents: list[tuple[str | Path, str]] = []
    if outputs.json:
        documents.append((outputs.json, to_json(payload)))
    if outputs.md or outputs.html:
        from calaudit.report.render import render_reports

        documents += render_reports(payload, html=outputs.html, md=outputs.md,
                                    signoff=dict(outputs.signoff))
    for target, content in documents:
        write_atomic(target, content)
    if outputs.json != "-":
        print_summary(payload)
    statuses = [t.status for t in result.tests]
    return exit_code(statuses, config.fail_on, outputs.exit_zero)
