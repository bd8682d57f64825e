"""``run_audit``: the only orchestrator. Data and configuration in, result out."""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np

from calaudit import progress, scale
from calaudit._version import __version__
from calaudit.attribution.explain import finish_summary
from calaudit.audit.battery import stages as default_stages
from calaudit.audit.config import AuditConfig
from calaudit.audit.gate import decide
from calaudit.audit.gate.baseline import LoadedResult, check_comparable
from calaudit.audit.gate.decision import local_primary
from calaudit.audit.stages import Stage, StageOutput
from calaudit.audit.weighting import describe as describe_weights
from calaudit.audit.weighting import effective_events, refuse
from calaudit.data.dataset import CalibrationData
from calaudit.local.groups import most_biased
from calaudit.numerics.random import stream
from calaudit.progress import ProgressEvent, Reporter, reporter_for, reporting
from calaudit.results import AuditResult, Status, TestResult


def created_at() -> str:
    """UTC timestamp, ISO 8601; ``SOURCE_DATE_EPOCH`` fixes it for reproducible output."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    moment = (datetime.fromtimestamp(int(epoch), tz=timezone.utc) if epoch
              else datetime.now(tz=timezone.utc))
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def runtime(started: float) -> float:
    """Seconds since ``started``; 0 when ``SOURCE_DATE_EPOCH`` asks for reproducible output
    (the timing is the one field that differs between two runs)."""
    if os.environ.get("SOURCE_DATE_EPOCH"):
        return 0.0
    return time.perf_counter() - started


def describe_inputs(data: CalibrationData) -> dict[str, Any]:
    """The ``inputs`` section: main file, hashes, rows read / used / excluded by reason."""
    prov = data.provenance
    main = prov.files[0] if prov.files else None
    dataset = dict(prov.dataset) if prov.dataset else None
    section = {
        "path": dataset["path"] if dataset else main.path if main else None,
        "sha256": None if dataset else main.sha256 if main else None,
        "format": dataset["format"] if dataset else main.format if main else "arrays",
        "rows_read": prov.rows_read or data.n,
        "rows_used": data.n,
        "rows_excluded": dict(prov.rows_excluded),
        "rows_renormalized": prov.renormalized_rows,
        "files": [f.to_dict() for f in prov.files],
        "total": {"files": len(prov.files),
                  "bytes": sum(f.size or 0 for f in prov.files),
                  "rows": sum(f.rows for f in prov.files)},
        "columns": {"label": prov.label_column, "scores": list(prov.score_columns),
                    "score_kind": prov.score_kind, "id": prov.id_column},
    }
    if dataset:
        section["dataset"] = dataset
    return section


def describe_data(data: CalibrationData, config: AuditConfig | None = None
                  ) -> dict[str, Any]:
    """The ``data`` section: n, classes, class counts, covariates; for weighted rows,
    ``weights`` (:func:`calaudit.audit.weighting.describe`)."""
    section = {
        "n": data.n,
        "n_classes": data.n_classes,
        "classes": list(data.classes),
        "class_counts": data.class_counts(),
        "covariates": [{"name": c.name, "type": c.kind,
                        **({"categories": list(c.categories)} if c.categories else {})}
                       for c in data.covariates],
    }
    weights = describe_weights(data, config or AuditConfig())
    if weights is not None:
        section["weights"] = weights
    return section


def environment() -> dict[str, Any]:
    """Versions that determine the numbers (numpy, scipy), the platform and the BLAS
    libraries with their thread counts."""
    import numpy
    import scipy

    return {"python": platform.python_version(), "numpy": numpy.__version__,
            "scipy": scipy.__version__, "platform": platform.platform(terse=True),
            "blas": blas_libraries()}


BLAS_FIELDS = ("user_api", "internal_api", "version", "num_threads", "threading_layer",
               "architecture")


def blas_libraries() -> list[dict[str, Any]]:
    """The BLAS/OpenMP libraries loaded in this process and their thread counts
    (threadpoolctl), without file paths, in a stable order (threadpoolctl's order
    follows the hash seed)."""
    from threadpoolctl import threadpool_info

    libraries = [{key: lib.get(key) for key in BLAS_FIELDS} for lib in threadpool_info()]
    return sorted(libraries, key=lambda lib: tuple(str(lib[key]) for key in BLAS_FIELDS))


def count_events(data: CalibrationData) -> float:
    """Events for the INCONCLUSIVE rule: the rarer class (binary), the rarer of top-label hits
    and misses (multi-class), the effective number of events (weighted rows)."""
    if data.n == 0:
        return 0
    if data.weights is not None:
        return effective_events(data)
    if data.is_binary:
        return int(min(data.class_counts().values()))
    hits = (data.top_label_hits() if hasattr(data, "top_label_hits")  # counted by tasks
            else int(np.count_nonzero(np.argmax(data.y_proba, axis=1) == data.y_true)))
    return min(hits, data.n - hits)


def peak_rss_mib() -> float | None:
    """The process' peak resident set size in MiB (``None`` where ``resource`` is
    missing, e.g. Windows)."""
    try:
        import resource
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (2**20 if sys.platform == "darwin" else 1024)


def run_stages(data: CalibrationData, config: AuditConfig,
               stages: tuple[Stage, ...]) -> list[StageOutput]:
    """Run each stage on its own random stream, reporting progress per stage."""
    outputs = []
    with progress.task("audit", total=len(stages)) as advance:
        for stage in stages:
            started, cpu = time.perf_counter(), time.process_time()
            with progress.task(stage.name):
                outputs.append(stage.run(data, config, stream(config.seed, stage.name)))
            rss = peak_rss_mib()
            # Dask: the data moved so far
            traffic = getattr(getattr(config, "executor", None), "traffic", None)
            progress.note(f"stage {stage.name}: {time.perf_counter() - started:.2f} s "
                          f"(cpu {time.process_time() - cpu:.2f} s"
                          + ("" if rss is None else f", peak RSS so far {rss:.0f} MiB")
                          + ("" if traffic is None else f"; {traffic()}") + ")")
            advance()
    return outputs


def run_audit(data: CalibrationData, config: AuditConfig | None = None,
              stages: tuple[Stage, ...] | None = None,
              baseline: LoadedResult | dict[str, Any] | None = None, *,
              progress: bool | Callable[[ProgressEvent], Any] | Reporter | None = None
              ) -> AuditResult:
    """Run every stage of the battery on ``data``, grade the checks and decide the verdict.

    Each stage draws from ``stream(config.seed, stage.name)``. ``baseline`` (a result read by
    :func:`calaudit.audit.gate.baseline.read_result`, or its payload) adds the comparison.
    ``progress``: ``True`` (a line per stage on stderr) or a callback of
    :class:`calaudit.progress.ProgressEvent`."""
    reporter = reporter_for(progress)
    if reporter is None:
        return _run_audit(data, config, stages, baseline)
    with reporting(reporter):
        return _run_audit(data, config, stages, baseline)


def local_rejected(tests: Sequence[TestResult]) -> bool | None:
    """Whether the local primary test rejected (``None``: none ran)."""
    keeper = local_primary(tests)
    return None if keeper is None else keeper.status is Status.FAIL


def _run_audit(data: CalibrationData, config: AuditConfig | None,
               stages: tuple[Stage, ...] | None,
               baseline: LoadedResult | dict[str, Any] | None) -> AuditResult:
    config = config or AuditConfig()
    refuse(data, config)
    started = time.perf_counter()
    if baseline is not None:
        loaded = baseline if isinstance(baseline, LoadedResult) else LoadedResult(baseline)
        check_comparable(loaded.payload, list(data.classes), loaded.path)
    with scale.using(config.executor):  # None: the caller's choice, else threads
        outputs = run_stages(data, config, stages if stages is not None else default_stages())
    sections = {"config": config.to_dict(), "data": describe_data(data, config)}
    decided = decide((m for out in outputs for m in out.metrics),
                     (t for out in outputs for t in out.tests),
                     tuple(g for out in outputs for g in out.groups), config, sections,
                     count_events(data), baseline)
    local = {k: v for out in outputs for k, v in out.local.items()}
    if "lcb" in local and "top_groups" in local["lcb"]:  # the gated statuses, re-ranked
        local["lcb"] = {**local["lcb"],
                        "top_groups": most_biased(decided.groups, config.local.top_k)}
    monitoring = next((dict(out.monitoring) for out in outputs if out.monitoring), None)
    if monitoring is not None:  # the alarm shows the graded check's status
        graded = next(t for t in decided.tests if t.id == monitoring["eprocess"]["id"])
        monitoring["eprocess"] = {**monitoring["eprocess"], "status": graded.status.value}
    return AuditResult(
        calaudit_version=__version__,
        created_at=created_at(),
        inputs=describe_inputs(data),
        data=sections["data"],
        config=sections["config"],
        metrics=decided.metrics,
        tests=decided.tests,
        local=local,
        groups=decided.groups,
        diagrams={k: v for out in outputs for k, v in out.diagrams.items()},
        attribution=finish_summary({k: v for out in outputs for k, v in out.attribution.items()},
                                   decided.groups, local_rejected(decided.tests)),
        disparity=tuple(d for out in outputs for d in out.disparity),
        verdict=decided.verdict,
        runtime_seconds=runtime(started),
        environment=environment(),
        gate=decided.gate,
        baseline=decided.baseline,
        checks=decided.checks,
        monitoring=monitoring,
    )
