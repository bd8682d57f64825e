"""Row weights of a weighted audit (docs/weights.md): their meaning, validation and summary.

``frequency``: row ``i`` stands for ``d_i`` identical units (sample sizes are ``sum d``).
``design``: weights that do not depend on the label (sample sizes are Kish's effective
size). Label-dependent sampling (``negative_rate``): the negatives of row ``i`` were kept
with probability ``r_i``, so a sampled label is Bernoulli(p / (p + r (1 - p))) under
"calibrated" and a row weighs ``d_i * (1 if y_i = 1 else 1 / r_i)``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.data import rows as rules
from calaudit.data.parts import read_only
from calaudit.exceptions import InputError

KINDS = ("frequency", "design")
#: Positive weights lie in [1 / WEIGHT_RANGE, WEIGHT_RANGE] (sums of squares stay finite).
WEIGHT_RANGE = 1e100
#: Frequency weights count units exactly in float64 up to 2^53 units in all.
MAX_UNITS = 2.0 ** 53
#: The hint of a weight or rate that is not a number.
NOT_NUMBERS = "weights and rates must be numbers"


@dataclass(frozen=True)
class SampleWeights:
    """The label-independent weight ``design`` of every row, its ``kind`` and the kept rate
    of negatives ``negative_rate`` (None: the sampling did not depend on the label)."""

    design: NDArray[np.float64]
    kind: str = "frequency"
    negative_rate: NDArray[np.float64] | None = None
    column: str | None = None
    rate_from: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "design", read_only(np.asarray(self.design, np.float64)))
        if self.negative_rate is not None:
            object.__setattr__(self, "negative_rate",
                               read_only(np.asarray(self.negative_rate, np.float64)))

    @property
    def label_dependent(self) -> bool:
        return self.negative_rate is not None

    def of_labels(self, positive: NDArray) -> NDArray[np.float64]:
        """The weight of each row for 0/1 outcomes ``positive`` ((n,) or (n, q))."""
        d = self.design if np.ndim(positive) == 1 else self.design[:, None]
        if self.negative_rate is None:
            return np.broadcast_to(d, np.shape(positive)).astype(np.float64)
        r = self.negative_rate if np.ndim(positive) == 1 else self.negative_rate[:, None]
        return np.where(np.asarray(positive) > 0, d, d / r)

    def in_grid_range(self, limit: int = 60) -> SampleWeights:
        """These weights with design weights scaled by a power of two into [1/2, 1) when
        the largest lies outside [2^-limit, 2^limit], for the float32 grid sums of the
        feature paths (whose statistics a common power of two does not change)."""
        top = float(np.max(self.design, initial=0.0))
        if self.kind == "frequency" or top == 0.0 or 2.0 ** -limit <= top <= 2.0 ** limit:
            return self
        return dataclasses.replace(self, design=np.ldexp(self.design, -int(np.frexp(top)[1])))

    def unit_split(self) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(t, f)``: the units of each row and the weight of each unit, ``(d, 1)`` for
        frequency weights, ``(1, d)`` otherwise."""
        ones = np.ones(self.design.size)
        return (self.design, ones) if self.kind == "frequency" else (ones, self.design)

    @property
    def repeated_rows(self) -> bool:
        """Frequency weights without label-dependent sampling (a result is the repeated
        rows')."""
        return self.kind == "frequency" and not self.label_dependent

    def per_unit(self, values: NDArray[np.float64]) -> NDArray[np.float64]:
        """``values / t``: a row's value per unit it stands for (0 on rows of no unit)."""
        t = self.unit_split()[0]
        return np.divide(values, t, out=np.zeros_like(values), where=t > 0)

    def null_positive_rate(self, p: NDArray[np.float64]) -> NDArray[np.float64]:
        """The law of a sampled positive under "calibrated": ``p`` without label-dependent
        sampling, else ``p / (p + r (1 - p))``."""
        if self.negative_rate is None:
            return p
        denominator = p + self.negative_rate * (1.0 - p)
        return np.where(denominator > 0, p / np.where(denominator > 0, denominator, 1.0), 0.0)

    def units(self, weights: NDArray[np.float64]) -> NDArray[np.float64]:
        """``weights`` on the scale of sample sizes: as given for frequency weights, else
        rescaled to sum to Kish's effective size."""
        if self.kind == "frequency":
            return weights
        return weights * (kish(weights) / float(weights.sum()))


def kish(weights: NDArray[np.float64]) -> float:
    """Kish's effective sample size ``(sum w)^2 / sum w^2`` (0 for no weight), on
    ``w / max w`` (free of overflow)."""
    largest = float(np.max(weights, initial=0.0))
    if not largest > 0:
        return 0.0
    scaled = weights / largest
    total, squares = float(scaled.sum()), float(np.dot(scaled, scaled))
    return total * total / squares


def summary(weights: SampleWeights, values: NDArray[np.float64],
            sample_size: float) -> dict[str, Any]:
    """The ``data.weights`` section of the JSON result."""
    out: dict[str, Any] = {
        "kind": weights.kind, "column": weights.column,
        "label_dependent": weights.label_dependent,
        "sum": float(values.sum()), "effective_sample_size": kish(values),
        "min": float(values.min()), "max": float(values.max()),
        "sample_size": sample_size,
        "null": ("negatives kept at rate r: a sampled label is Bernoulli(p / (p + r (1 - p))) "
                 "when the model is calibrated on the population; statistics weight negatives "
                 "by 1 / r" if weights.label_dependent else "weights do not depend on the "
                 "label: a sampled label is Bernoulli(p) when the model is calibrated"),
    }
    if weights.negative_rate is not None:
        out["negative_rate"] = {"from": weights.rate_from,
                                "min": float(weights.negative_rate.min()),
                                "max": float(weights.negative_rate.max())}
    return out


def weight_problems(values: np.ndarray, source: str, column: str,
                    kind: str = "frequency") -> list:
    """Row rules of a weight column: finite, >= 0, whole for frequency weights."""
    finite = np.isfinite(values)
    whole = [] if kind != "frequency" else [rules.problem(
        "fractional_frequency_weight", source, column,
        finite & (values >= 0) & (values != np.floor(np.where(finite, values, 0.0))),
        "frequency weight is not a whole number",
        "frequency weights count units; use --weight-kind design (weight_kind='design') "
        "for survey, importance or other real-valued weights")]
    return whole + [
        rules.problem("nonfinite_weight", source, column, ~finite,
                      "weight is missing or infinite", "give every row a finite weight"),
        rules.problem("negative_weight", source, column, finite & (values < 0),
                      "weight is negative", "weights must be >= 0"),
        rules.problem("weight_range", source, column, finite & (values > 0)
                      & ((values > WEIGHT_RANGE) | (values < 1.0 / WEIGHT_RANGE)),
                      f"weight is outside [{1 / WEIGHT_RANGE:g}, {WEIGHT_RANGE:g}]",
                      "only the ratios of weights matter: divide them by a common factor")]


def finish(design: np.ndarray | None, rates: np.ndarray | None, *, kind: str,
           column: str | None, rate_from: str | None, source: str, n_classes: int,
           codes: np.ndarray) -> SampleWeights | None:
    """The weights of the kept rows, after the row rules."""
    if design is None and rates is None:
        return None
    if kind not in KINDS:
        raise InputError(f"weight kind must be one of {', '.join(KINDS)}; got {kind!r}",
                         rule="weight_kind", hint="--weight-kind frequency or design")
    if rates is not None and n_classes != 2:
        raise InputError("label-dependent sampling (--negative-rate, --sampling-rate-col) "
                         "is defined for binary models only", source=source,
                         rule="sampling_needs_binary",
                         hint="weight a multi-class audit with --weight-col")
    if design is None:
        design = np.ones(codes.shape[0])
    if kind == "frequency" and float(design.sum()) > MAX_UNITS:
        raise InputError(f"frequency weights sum to {float(design.sum()):.3g} units, more "
                         f"than the {MAX_UNITS:.3g} that float64 counts exactly",
                         source=source, column=column, rule="frequency_weight_total",
                         hint="use --weight-kind design if the weights are not counts")
    weights = SampleWeights(design, kind, rates, column, rate_from)
    if not (weights.of_labels(codes == 1) > 0).any():
        raise InputError("every weight is 0", source=source, column=column,
                         rule="zero_weights", hint="give at least one row a positive weight")
    return weights


def read_columns(raw: Any, negative_rate: float | None, n: int, kind: str = "frequency"
                 ) -> tuple[np.ndarray | None, np.ndarray | None, list]:
    """The weight and sampling-rate columns of ``raw`` (a ``RawInputs``) as float64, and
    their row problems."""
    design = rates = None
    found: list = []
    if raw.weights is not None:
        design = rules.numbers(raw.weights, raw.score_source, raw.weight_column,
                               "non_numeric_weight", NOT_NUMBERS)
        found += weight_problems(design, raw.score_source, raw.weight_column, kind)
    if raw.rates is not None:
        if negative_rate is not None:
            raise InputError("--negative-rate and --sampling-rate-col both give the kept "
                             "rate of negatives", rule="conflicting_options",
                             hint="give one of them")
        rates = rules.numbers(raw.rates, raw.score_source, raw.rate_column,
                              "non_numeric_sampling_rate", NOT_NUMBERS)
        found.append(rules.problem("sampling_rate_range", raw.score_source, raw.rate_column,
                                   ~(np.isfinite(rates) & (rates > 0) & (rates <= 1)),
                                   "sampling rate is not in (0, 1]",
                                   "give the kept fraction of negatives, 0 < r <= 1"))
    elif negative_rate is not None:
        if not (isinstance(negative_rate, (int, float)) and 0 < negative_rate <= 1):
            raise InputError(f"--negative-rate must be in (0, 1]; got {negative_rate!r}",
                             rule="sampling_rate_range",
                             hint="give the kept fraction of negatives, e.g. 0.1")
        rates = np.full(n, float(negative_rate))
    return design, rates, found
