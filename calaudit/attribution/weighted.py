"""The recalibration model's attribution on weighted rows (docs/weights.md).

Row ``i`` weighs ``a_i`` (``d_i``, times ``1 / r_i`` for a negative under label-dependent
sampling). The fits are the GLMs of :mod:`.model` with prior weights ``a``:

* frequency weights, no sampling: the repeated rows' fits, tests and intervals;
* otherwise the sandwich covariance ``H^{-1} B H^{-1}``,
  ``B = sum_i m_i (y_i - q_i)^2 x_i x_i'``, ``m_i = a_i^2 / t_i`` (``t_i`` the row's units;
  HC0 as statsmodels ``GLM(var_weights=a).fit(cov_type="HC0")``) and Wald tests; a level's
  rows and events are Kish's sizes of its weights.

A failing group is *explained* when the weighted residual sum of its rows about the
adjusted model's ``q`` is not rejected (:func:`calaudit.local.weighted_groups.residual_test`
or, for frequency weights, the repeated rows' Poisson-binomial test).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.data.weights import SampleWeights
from calaudit.local.poisson_binomial import group_test
from calaudit.local.weighted_groups import WeightedRows, residual_test


@dataclass(frozen=True)
class ModelWeights:
    """The row weights of the attribution: ``weights`` as given, the prior weights ``a``
    of the rows (their outcome known), the meat weights ``m`` (None: frequency weights,
    model-based covariance)."""

    weights: SampleWeights
    a: NDArray[np.float64]
    m: NDArray[np.float64] | None

    @classmethod
    def of(cls, weights: SampleWeights, outcome: NDArray[np.float64]) -> ModelWeights:
        a = np.asarray(weights.of_labels(outcome), dtype=np.float64)
        return cls(weights, a, None if weights.repeated_rows else weights.per_unit(a * a))

    @property
    def frequency(self) -> bool:
        return self.m is None

    def size(self, count: float) -> int | float:
        """A sum of frequency weights as the whole number it is."""
        return int(round(count)) if self.frequency else count

    def describe(self) -> dict[str, Any]:
        """The section's ``weights`` entry."""
        return {"kind": self.weights.kind, "label_dependent": self.weights.label_dependent,
                "covariance": ("model-based, the repeated rows'" if self.frequency
                               else "sandwich (HC0) of the weighted score")}


TEST_ROBUST = ("Wald (chi^2) of the sandwich covariance, given the other covariates; Holm "
               "across covariates")


def explained_check(model_weights: ModelWeights, outcome: NDArray[np.float64],
                    q: NDArray[np.float64], rows: NDArray[np.intp]) -> tuple[float, float]:
    """``(bias after adjusting, p-value)`` of a group's rows about the adjusted fit ``q``
    (every row; module docstring)."""
    a, y = model_weights.a[rows], outcome[rows]
    bias = float(np.dot(a, y - q[rows]) / a.sum())
    if model_weights.frequency:
        return bias, group_test(int(round(float(np.dot(a, y)))), q[rows], a)[0]
    table = WeightedRows.of(model_weights.weights, outcome, q)
    return bias, residual_test(table, rows, None, None)[0]  # type: ignore[arg-type]
