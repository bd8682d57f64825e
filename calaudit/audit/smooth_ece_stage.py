"""Stage: the smooth ECE and its smoothed reliability diagram.

Metric ``smece`` (Blasiok & Nakkiran 2023; :mod:`calaudit.metrics.smooth_ece`): binary
notion for two classes, top-label (confidence against correctness) otherwise; the
bandwidth is the fixed point ``sigma = smECE_sigma`` and is recorded in the params.
Diagram ``smooth_reliability``: the smoothed outcome rate ``mu(t)`` and the score density
at that bandwidth, drawn by the reports. With ``--ci``, a percentile bootstrap interval
(each resample at its own fixed-point bandwidth).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from calaudit.audit.config import AuditConfig
from calaudit.audit.stages import StageOutput
from calaudit.data.dataset import CalibrationData
from calaudit.metrics.ece import default_notion, scores_and_outcomes
from calaudit.inference.bootstrap_ci import bootstrap_replicates, percentile_interval
from calaudit.metrics.smooth_ece import smooth_ece_replicates, smooth_reliability
from calaudit.results import MetricResult


class SmoothEceStage:
    """smECE and the smoothed reliability diagram."""

    name = "smooth_ece"

    def run(self, data: CalibrationData, config: AuditConfig,
            rng: np.random.Generator) -> StageOutput:
        notion = default_notion(data.n_classes)
        scores, outcomes = scores_and_outcomes(data.y_true, data.y_proba, notion)
        curve = smooth_reliability(scores, outcomes)
        metric = MetricResult(
            "smece", curve.smece,
            {"notion": notion, "sigma": curve.sigma, "kernel": "reflected Gaussian",
             "bandwidth": "fixed point sigma = smECE_sigma (Blasiok & Nakkiran 2023)"},
            title=f"Smooth ECE ({notion})")
        if config.ci and config.run_tests:
            replicates = bootstrap_replicates(
                lambda weights: {"smece": smooth_ece_replicates(scores, outcomes, weights)},
                data.n, rng, config.n_resamples)
            metric = dataclasses.replace(
                metric, ci=percentile_interval(replicates["smece"], config.ci_level),
                params={**metric.params, "ci_method": "percentile bootstrap",
                        "ci_level": config.ci_level, "ci_resamples": config.n_resamples})
        return StageOutput(metrics=(metric,), diagrams={
            "smooth_reliability": {"notion": notion, **curve.to_dict()}})
