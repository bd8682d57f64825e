"""Stage: local calibration (runs only when the data has covariates).

Vashistha & Farahi, *I-trustworthy models*: the KLCE^2 estimate (metric ``klce2``) and
the local tests (:class:`calaudit.local.kernel_tests.LocalTests`), then the diagnostics:
the recalibration model's attribution (:mod:`calaudit.attribution`), the local
calibration bias at every observation with its curves and plotted rows
(:class:`calaudit.local.lcb_estimation.LcbEstimation`), the group table with its
explained groups, the disparity between groups and the groups' reliability panels. With
``local.diagnostics = false`` only the statistic and the tests, which alone decide the
verdict. Shapes: ``docs/result-schema.md`` (``local``, ``groups``); conventions:
``docs/local-calibration.md``.

Random streams: the stage's generator is split (``Generator.spawn``) into one child per
purpose, in a fixed order, so e.g. changing the number of resamples of one test never
changes another test's draws or the group intervals.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from calaudit import registry
from calaudit.attribution.disparity import disparity
from calaudit.attribution.explain import AttributionSettings, attribute, mark_explained
from calaudit.attribution.rows import level_rows
from calaudit.attribution.weighted import ModelWeights
from calaudit.audit.config import AuditConfig
from calaudit.audit.stages import StageOutput
from calaudit.audit.weighting import effective_events, sample_size
from calaudit.data.dataset import CalibrationData
from calaudit.local import groups as grp
from calaudit.local.group_reliability import group_panels
from calaudit.local.group_sources import level_table
from calaudit.local.kernel_tests import LocalTests
from calaudit.local.lcb import top_label_residual
from calaudit.local.lcb_estimation import LcbEstimation, categorical_separation
from calaudit.local.row_columns import scalar_columns
from calaudit.local.weighted_groups import WeightedRows, weighted_group_table
from calaudit.local.weighted_lcb import LcbWeights
from calaudit.local.weighted_local import WeightedLocalTests
from calaudit.metrics.ece import indicator
from calaudit.results import MetricResult

STREAMS = ("bandwidth", "klce_consistency", "klce_bootstrap", "klce_permutation",
           "per_class", "groups", "points", "features", "lcb", "disparity",
           "group_reliability")


class LocalCalibrationStage:
    """KLCE tests, LCB diagnostics and the group table."""

    name = "local_calibration"

    def run(self, data: CalibrationData, config: AuditConfig,
            rng: np.random.Generator) -> StageOutput:
        if not data.covariates:
            return StageOutput()
        streams = dict(zip(STREAMS, rng.spawn(len(STREAMS)), strict=True))
        if data.weights is not None:
            return weighted_stage(data, config, streams)
        setup = LocalTests(data, config, streams)
        if setup.gathers and setup.features is not None:
            # a dataset read by tasks, random features: the pieces read their rows there
            # (the exact path holds the rows: its kernels are matrices of them)
            outcome, prediction, scalar_r = scalar_columns(setup)
        elif data.is_binary:  # r = y - p_1 is the scalar view's residual
            outcome, prediction = indicator(np.asarray(data.y_true), 1), setup.proba
            scalar_r = setup.r
        else:
            outcome, prediction = top_label_residual(data.y_true, data.y_proba)
            scalar_r = outcome - prediction
        tests, statistic, per_class = setup.run()
        metric = MetricResult("klce2", statistic, setup.kernel_params(),
                              title=registry.title("klce2"))
        klce = setup.klce_section(statistic, tests, per_class)
        if not config.local.diagnostics:
            return StageOutput(metrics=(metric,), tests=tuple(tests), local={"klce": klce})
        return StageOutput(metrics=(metric,), tests=tuple(tests),
                           **diagnostics(setup, scalar_r, outcome, prediction, klce))


def weighted_stage(data: CalibrationData, config: AuditConfig,
                   streams: dict[str, np.random.Generator]) -> StageOutput:
    """The local stage on weighted rows: ``KLCE^2_w`` and the weighted local tests
    (:mod:`calaudit.local.weighted_local`), then, with ``local.diagnostics``, the weighted
    group table (:mod:`calaudit.local.weighted_groups`), the weighted attribution
    (:mod:`calaudit.attribution.weighted`, explained groups marked), the groups' weighted
    reliability panels, the weighted LCB (:mod:`calaudit.local.weighted_lcb`, without
    its curves) and the disparity."""
    setup = WeightedLocalTests(data, config, streams, sample_size=sample_size(data),
                               events=effective_events(data))
    tests, statistic, per_class = setup.run()
    metric = MetricResult("klce2", statistic, setup.kernel_params(),
                          title=registry.title("klce2"))
    local = {"klce": setup.klce_section(statistic, tests, per_class)}
    if not config.local.diagnostics:
        return StageOutput(metrics=(metric,), tests=tuple(tests), local=local)
    lc = config.local
    if data.is_binary:
        outcome, prediction = indicator(np.asarray(data.y_true), 1), setup.proba
    else:
        outcome, prediction = top_label_residual(data.y_true, data.y_proba)
    settings = group_settings(config)
    rows = WeightedRows.of(data.weights, outcome, prediction)
    specs, table, values = weighted_group_table(
        setup.levels, lc.intersections, rows, data.weights.kind == "frequency",
        streams["groups"], settings, lc.n_resamples if config.run_tests else None)
    attribution = attribute_levels(setup, outcome, prediction,
                                   ModelWeights.of(data.weights, outcome))
    section = None if attribution is None else attribution.section
    lcb_weights = LcbWeights.of(data.weights, outcome)
    lcb, local["lcb"] = LcbEstimation(setup, lcb_weights).run(
        outcome - prediction, prediction, categorical_separation(section))
    spec_of = {spec.name: spec for spec in specs}
    for row in table:
        row["mean_lcb"] = lcb_weights.group_mean(lcb, spec_of[row["group"]].rows)
    if attribution is not None:
        mark_explained(table, specs, attribution, outcome, config.alpha)
    local["lcb"]["top_groups"] = grp.most_biased(table, lc.top_k)
    local["group_reliability"] = group_panels(
        table, specs, outcome, prediction, n_bins=config.binning.n_bins,
        strategy=config.binning.strategy,
        n_resamples=config.n_resamples if config.run_tests else None, level=0.95,
        rng=streams["group_reliability"], weights=data.weights)
    gaps = disparity(table, specs, data.covariate_names, values, streams["disparity"],
                     lc.group_ci_resamples, lc.confidence_level, resample=config.run_tests,
                     weighted=rows)
    return StageOutput(metrics=(metric,), tests=tuple(tests), local=local,
                       groups=tuple(table), disparity=tuple(gaps),
                       attribution=section or {})


def group_settings(config: Any) -> grp.GroupSettings:
    """The group table's thresholds and sizes from the audit's configuration."""
    lc = config.local
    return grp.GroupSettings(min_rows=lc.min_group_rows, min_events=lc.min_group_events,
                             adjust=lc.group_adjust, alpha=config.alpha,
                             ci_resamples=lc.group_ci_resamples, level=lc.confidence_level,
                             resample=config.run_tests)


def diagnostics(setup: LocalTests, scalar_r: np.ndarray, outcome: np.ndarray,
                prediction: np.ndarray, klce: dict[str, Any]) -> dict[str, Any]:
    """Attribution, LCB, group table (explained groups marked), disparity and the groups'
    reliability panels: the ``local``, ``groups``, ``attribution`` and ``disparity``
    parts of the stage's output."""
    data, config, lc, streams = setup.data, setup.config, setup.local, setup.streams
    attribution = attribute_levels(setup, outcome, prediction)
    section = None if attribution is None else attribution.section
    with LcbEstimation(setup) as estimation:  # estimation.rows: the LCB as a row source
        lcb_section = estimation.run(scalar_r, prediction, categorical_separation(section))[1]
        specs, table, values = level_table(data, setup.levels, lc.intersections, outcome,
                                           prediction, estimation.rows, streams["groups"],
                                           group_settings(config))
    if attribution is not None:
        mark_explained(table, specs, attribution, outcome, config.alpha)
    lcb_section["top_groups"] = grp.most_biased(table, lc.top_k)
    panels = group_panels(table, specs, None, None, n_bins=config.binning.n_bins,
                          strategy=config.binning.strategy,
                          n_resamples=config.n_resamples if config.run_tests else None,
                          level=0.95, rng=streams["group_reliability"], values=values)
    gaps = disparity(table, specs, data.covariate_names, values, streams["disparity"],
                     lc.group_ci_resamples, lc.confidence_level, resample=config.run_tests)
    return {"local": {"klce": klce, "lcb": lcb_section, "group_reliability": panels},
            "groups": tuple(table), "attribution": section or {}, "disparity": tuple(gaps)}


def attribute_levels(setup: LocalTests | WeightedLocalTests, outcome: np.ndarray,
                     prediction: np.ndarray, weights: ModelWeights | None = None):
    """The recalibration model's attribution on the group table's levels (``None`` when
    switched off); ``weights``: the rows' weights."""
    lc, config = setup.local, setup.config
    if not lc.attribution:
        return None
    settings = AttributionSettings(alpha=config.alpha, level=lc.confidence_level,
                                   min_rows=lc.min_group_rows,
                                   min_events=lc.min_group_events)
    return attribute(setup.levels, [c.kind for c in setup.data.covariates], outcome,
                     prediction, settings, "binary" if setup.data.is_binary else "top-label",
                     weights, level_rows(setup.data, setup.levels))
