"""The local aggregate test: one exact Monte-Carlo test over a family of statistics.

Every member is computed on the same label redraws ``y*_i ~ Cat(p_i)``: column 0 holds the
observed value, columns ``1..B`` the redraws. Under local calibration the ``B + 1`` columns
are exchangeable, so the p-value is exact (the aggregation of Schrab et al., *MMD aggregated
two-sample test*, JMLR 2023; the min-p combination of Westfall & Young 1993).

1. Each member's values are mapped to tail probabilities ``q_jb``: a score statistic by its
   chi-square law (``df`` degrees of freedom); a kernel statistic by a Pearson type III
   law with the mean, standard deviation and skewness of its ``B + 1`` values (Zhang 2005;
   a normal law when the skewness is not positive). These laws only weigh the members.
2. ``A_b = max_j (log w_j - log q_jb)`` (weights ``w_j`` sum to 1).
3. ``p = (1 + #{b >= 1: A_b >= A_0}) / (1 + B)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy import special

from calaudit.numerics.resampling import monte_carlo_pvalue

#: Skewness below which a kernel member's law is taken as normal.
MIN_SKEWNESS = 0.05


def gamma_log_tail(x: NDArray[np.float64], shape: float) -> NDArray[np.float64]:
    """``log Q(shape, x)``, the log upper regularised incomplete gamma function, with its
    asymptote ``(shape - 1) log x - x - log Gamma(shape)`` where ``Q`` underflows."""
    x = np.maximum(np.asarray(x, dtype=np.float64), 0.0)
    tail = special.gammaincc(shape, x)
    with np.errstate(divide="ignore"):
        out = np.log(tail)
    deep = tail < 1e-300
    if deep.any():
        xd = np.maximum(x[deep], 1e-300)
        out[deep] = (shape - 1.0) * np.log(xd) - xd - special.gammaln(shape)
    return out


def chi_square_log_tail(values: NDArray[np.float64], df: float) -> NDArray[np.float64]:
    """``log P(chi2_df >= values)`` (``df = 0``: 0, a member that cannot reject)."""
    if df <= 0:
        return np.zeros_like(values)
    return gamma_log_tail(np.asarray(values) / 2.0, df / 2.0)


def moment_log_tail(values: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log`` tail of a Pearson type III law with the mean, standard deviation and
    skewness of ``values`` (all columns, observed included: the map is symmetric in the
    columns, so the level stays exact)."""
    mean, sd = float(np.mean(values)), float(np.std(values))
    if not sd > 0.0:
        return np.zeros_like(values)
    skew = float(np.mean(((values - mean) / sd) ** 3))
    if not skew > MIN_SKEWNESS:
        return special.log_ndtr(-(values - mean) / sd)
    shape = 4.0 / skew**2
    scale = sd * skew / 2.0
    origin = mean - shape * scale
    return gamma_log_tail((values - origin) / scale, shape)


@dataclass(frozen=True)
class MemberValues:
    """One member: name, kind (``score`` or ``kernel``), degrees of freedom (score), its
    weight, its values on the columns (observed first, then the redraws) and its own
    Monte-Carlo p-value when its test computed it (else from the values)."""

    name: str
    kind: str
    values: NDArray[np.float64]
    df: float = 0.0
    weight: float = 1.0
    p_value: float | None = None

    def log_tail(self) -> NDArray[np.float64]:
        if self.kind == "score":
            return chi_square_log_tail(self.values, self.df)
        return moment_log_tail(self.values)


@dataclass(frozen=True)
class AggregateResult:
    """The aggregate's observed value, its null (``B`` values), p-value and the members'
    own Monte-Carlo p-values (each from the same redraws)."""

    statistic: float
    null_distribution: NDArray[np.float64]
    p_value: float
    members: tuple[dict, ...]
    deciding: str


def combine(members: Sequence[MemberValues]) -> AggregateResult:
    """The aggregate test of ``members`` (module docstring); weights are normalised to
    sum to 1."""
    total = float(sum(m.weight for m in members))
    scores = np.array([np.log(m.weight / total) - m.log_tail() for m in members])
    aggregate = scores.max(axis=0)
    observed, null = float(aggregate[0]), aggregate[1:]
    rows = []
    for member, score in zip(members, scores, strict=True):
        own = member.p_value if member.p_value is not None else monte_carlo_pvalue(
            float(member.values[0]), member.values[1:])
        rows.append({"name": member.name, "kind": member.kind,
                     "statistic": float(member.values[0]),
                     "df": member.df if member.kind == "score" else None,
                     "weight": member.weight / total, "p_value": float(own),
                     "tail": float(np.exp(np.log(member.weight / total) - score[0]))})
    deciding = members[int(np.argmax(scores[:, 0]))].name
    return AggregateResult(observed, null, monte_carlo_pvalue(observed, null), tuple(rows),
                           deciding)
