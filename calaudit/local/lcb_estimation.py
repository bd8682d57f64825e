"""The local calibration bias (LCB, Vashistha & Farahi eq. 7) as an estimate of the bias
function: its bandwidths, kernel sums ``(K r, K 1)`` (exact, or random features with exact
categorical cells), the plotted rows with pointwise intervals, and the per-group curves;
on weighted rows those of :mod:`calaudit.local.weighted_lcb`.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace
from typing import Any

import numpy as np

from calaudit.local.bandwidth import GaussianBandwidth
from calaudit.local.curve_rows import DatasetCurveColumns, dataset_curve_design
from calaudit.local.groups import index_dtype, rows_where
from calaudit.local.kernel import GaussianProductGram
from calaudit.local.kernel_sources import (
    Picked,
    dataset_kernel,
    picked_covariates,
    planned_kernel,
    taker,
)
from calaudit.local.lcb import (
    QUANTILES,
    LocalBias,
    RowProducts,
    plot_points,
    row_products,
    summarize,
)
from calaudit.local.lcb_bandwidth import (
    CAT_GRID,
    COV_GRID,
    PROB_GRID,
    BandwidthSelection,
    EstimationRows,
    estimation_gram,
    kernel_sums,
    select_bandwidths,
)
from calaudit.local.lcb_cells import categorical_columns, rows_cell_kernel
from calaudit.local.lcb_curves import (
    CurveColumns,
    CurveDesign,
    CurveRequest,
    curve_design,
    curves_from_products,
)
from calaudit.local.lcb_features import feature_kernel_sums, feature_row_products, lcb_computation
from calaudit.local.lcb_rows import KeptBias, ResidualRows, kept_kernel_sums
from calaudit.local.lcb_summary import kept_summary
from calaudit.local.weighted_lcb import LcbWeights
from calaudit.numerics.distributions import norm_ppf
from calaudit.scale import ArrayRows

#: Categorical covariates with more categories are not used to split LCB curves.
MAX_CURVE_GROUPS = 8
#: Curve standard errors use at least this many rows (the plotted rows, or more).
MIN_SE_ROWS = 1000

CATEGORICAL_RULE = ("a categorical covariate is separated (bandwidth 0.25) when its terms "
                    "lower the recalibration GLM's AIC given the other covariates (LR "
                    "statistic > 2 df), else pooled (10); AIC ~ leave-one-out CV (Stone "
                    "1977) on all rows; without attribution the CV decides")


def categorical_separation(section: dict[str, Any] | None) -> dict[str, float]:
    """Bandwidths of the categorical covariates decided by the recalibration model's AIC
    (empty when attribution is off or could not test them)."""
    if not section:
        return {}
    return {e["covariate"]: CAT_GRID[0] if statistic(e) > 2 * e["df"] else CAT_GRID[-1]
            for e in section["covariates"]
            if e["kind"] == "categorical" and statistic(e) is not None}


def statistic(entry: dict[str, Any]) -> float | None:
    """A covariate's likelihood-ratio statistic, or the Wald statistic of weighted rows
    (design weights, label-dependent sampling)."""
    value = entry.get("lr_statistic")
    return entry.get("wald_statistic") if value is None else value


def ratio(weighted: np.ndarray, mass: np.ndarray) -> np.ndarray:
    """``weighted / mass``."""
    return np.divide(weighted, mass)


class LcbEstimation:
    """The LCB of one data set, from the setup its tests used (:class:`LocalTests`:
    data, settings, encoded covariates, streams, exact or feature path; weighted rows: the
    :class:`calaudit.local.weighted_local.WeightedLocalTests` and the rows' ``weights``).
    On a dataset whose tasks read their own rows (feature path, unweighted) the LCB of
    every row stays where the tasks computed it (:mod:`calaudit.local.lcb_rows`): ``rows``
    is then that row source (column ``lcb``), kept until :meth:`close` (or the ``with``
    block's end); else the in-memory values (after :meth:`run`)."""

    def __init__(self, setup: Any, weights: LcbWeights | None = None) -> None:
        self.stack = contextlib.ExitStack()
        self.rows: Any = None
        self.data, self.local, self.config = setup.data, setup.local, setup.config
        self.n, self.streams, self.weights = setup.data.n, setup.streams, weights
        self.encoded = setup.encoded
        self.choice, self.prob_features = setup.choice, setup.prob_features
        self.lcb_kernel, self.lcb_features = setup.lcb_kernel, setup.lcb_features

    def __enter__(self) -> LcbEstimation:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Drop the kept LCB rows (:attr:`rows`)."""
        self.rows = None
        self.stack.close()

    def residual_rows(self, use: str) -> ResidualRows | None:
        """The residual columns built by the tasks (:class:`ResidualRows`) when the
        data's rows read their own rows and the rows are unweighted, else None."""
        source = getattr(self.data, "rows", None)
        if self.weights is not None or not getattr(source, "reads_own_rows", False):
            return None
        return ResidualRows(source, use)

    def run(self, scalar_r: np.ndarray, prediction: np.ndarray,
            separation: dict[str, float]) -> tuple[np.ndarray | None, dict[str, Any]]:
        """The LCB at every row and ``local.lcb`` without its top groups: bandwidths,
        curves by group with their bands, the plotted rows with pointwise intervals. On
        a dataset whose tasks read their own rows the LCB is not fetched (``None``; it
        stays in :attr:`rows`) and the curves' requests, grids and columns come from
        reductions over those rows (:mod:`calaudit.local.curve_rows`)."""
        lc = self.local
        bias, selection, lcb_gram = self.local_bias(scalar_r, separation)
        if self.weights is not None:
            return self.weighted_section(scalar_r, prediction, bias, selection, lcb_gram,
                                         separation)
        kept = isinstance(bias, KeptBias)
        # V is never stored: built a row block at a time (CurveColumns), on a dataset by
        # the tasks from the range's rows (DatasetCurveColumns)
        design: Any = dataset_curve_design(
            self.data, self.groupings(), self.minimum_rows(), lc.curve_points) if kept \
            else curve_design(self.curve_requests(), bias.weight_sums, lc.curve_points,
                              dense=False)
        plotted = plot_points(self.n, max(lc.max_points, min(self.n, MIN_SE_ROWS)),
                              self.streams["points"])
        if self.lcb_kernel is not None:
            if kept:  # D_j of a few rows; V built by the tasks
                sums: Any = Picked(bias.rows, "weight_sums", (self.n,))
                columns: Any = DatasetCurveColumns(design, bias.rows)
            else:
                sums = bias.weight_sums
                columns = CurveColumns(design, sums, np.float32)
            at = feature_row_products(self.lcb_kernel, plotted, scalar_r, sums, columns,
                                      self.lcb_features, self.choice.frequency_seed,
                                      squares=self.residual_rows("squares"))
        else:
            at = row_products(lcb_gram.features, plotted, scalar_r, bias.weight_sums,
                              CurveColumns(design, bias.weight_sums, np.float64))
        curves = self.curves(design, bias, at, scalar_r)
        summary = kept_summary(bias.rows, self.n, QUANTILES) if kept \
            else summarize(bias.values)
        points = self.points(bias, prediction, at)
        lcb = None if kept else bias.values  # kept: the callers read :attr:`rows`
        section = self.section(selection, separation, summary, curves, points)
        if self.rows is None:
            self.rows = ArrayRows({"lcb": lcb})
        return lcb, section

    def weighted_section(self, scalar_r: np.ndarray, prediction: np.ndarray,
                         bias: LocalBias, selection: BandwidthSelection,
                         gram: GaussianProductGram, separation: dict[str, float]
                         ) -> tuple[np.ndarray, dict[str, Any]]:
        """``local.lcb`` on weighted rows (module docstring): plotted rows among the rows
        of positive weight."""
        lc, weights = self.local, self.weights
        design = curve_design(self.curve_requests(), bias.weight_sums, lc.curve_points,
                              dense=False, grid_of=weights.curve_grid)
        positive = np.flatnonzero(weights.w > 0)
        plotted = positive[plot_points(positive.size,
                                       max(lc.max_points, min(positive.size, MIN_SE_ROWS)),
                                       self.streams["points"])]
        centre = None if weights.frequency else bias.values[plotted]
        if self.lcb_kernel is not None:
            at = feature_row_products(self.lcb_kernel, plotted, scalar_r, bias.weight_sums,
                                      CurveColumns(design, bias.weight_sums, np.float32),
                                      self.lcb_features, self.choice.frequency_seed,
                                      meat=weights.m, centre=centre)
        else:
            at = row_products(gram.features, plotted, scalar_r, bias.weight_sums,
                              CurveColumns(design, bias.weight_sums, np.float64),
                              meat=weights.m, centre=centre)
        curves = [] if not design.requests else curves_from_products(
            design, at.curve_weights, bias, scalar_r[at.rows], lc.confidence_level,
            scale=positive.size / max(at.rows.size, 1), meat=weights.m[at.rows],
            size_of=lambda request: weights.size(request.rows))
        return bias.values, self.section(selection, separation,
                                         summarize(bias.values, weights), curves,
                                         self.points(bias, prediction, at))

    def section(self, selection: BandwidthSelection, separation: dict[str, float],
                summary: dict[str, Any], curves: list[dict[str, Any]],
                points: dict[str, Any]) -> dict[str, Any]:
        """``local.lcb`` without its top groups (weighted rows: the weighted LCB, its
        bandwidths' criterion and its interval)."""
        weights, method, rule = self.weights, selection.to_dict(), CATEGORICAL_RULE
        definition = ("sum_i r_i k(p_i, p) l(x_i, x) / sum_i k(p_i, p) l(x_i, x) (eq. 7) at "
                      "every observation, bandwidths chosen for estimation")
        interval = "pointwise: LCB_j -/+ z sqrt(sum_i K_ij^2 r_i^2) / sum_i K_ij"
        extra: dict[str, Any] = {}
        if weights is not None:
            definition = ("sum_i w_i r_i k(p_i, p) l(x_i, x) / sum_i w_i k(p_i, p) l(x_i, x) "
                          "(eq. 7 of the weighted law) at every observation, bandwidths "
                          "chosen for estimation")
            interval = ("pointwise: LCB_j -/+ z sqrt(sum_i K_ij^2 w_i r_i^2) / sum_i K_ij w_i "
                        "(the repeated rows')" if weights.frequency else
                        "pointwise: LCB_j -/+ z sqrt(sum_i K_ij^2 m_i (r_i - LCB_j)^2) / "
                        "sum_i K_ij w_i, m_i = w_i^2 / (units of row i) (linearised ratio)")
            method["criterion"] = ("sum_j w_j (r_j - m_{-j})^2 / sum_j w_j, m_{-j} = (sum_i "
                                   "K_ij w_i r_i - u_j r_j) / (sum_i K_ij w_i - u_j), u_j the "
                                   "weight of one unit of row j")
            rule = rule.replace("(LR statistic", "(LR statistic, Wald statistic for design "
                                "weights,")
            extra = {"weights": {"kind": self.data.weights.kind,
                                 "label_dependent": self.data.weights.label_dependent}}
        return {
            "definition": definition,
            "view": "binary" if self.data.is_binary else "top-label", **extra,
            "prob_kernel": GaussianBandwidth(selection.prob_bandwidth, selection.source
                                             ).to_dict(),
            "cov_kernel": {"type": "gaussian", "bandwidths": dict(selection.cov_bandwidths),
                           "formula": "exp(-sum_c |x_c - x'_c|^2 / (2 bandwidth_c^2))",
                           "source": selection.source},
            "bandwidth_selection": {**method, "categorical": {
                "rule": rule, "separated": separation}},
            "interval": interval,
            "computation": lcb_computation(self.choice, self.lcb_kernel, self.lcb_features),
            "summary": summary,
            "curves": curves,
            "points": points,
        }

    def groupings(self) -> list[Any]:
        """The categorical covariates that split the curves."""
        return [c for c in self.data.covariates
                if c.kind == "categorical" and len(c.categories) <= MAX_CURVE_GROUPS]

    def minimum_rows(self) -> int:
        """The fewest rows (or units of weight) of a curve's group."""
        return max(self.local.min_group_rows, 5)

    def curve_requests(self) -> list[CurveRequest]:
        covs = self.data.covariates
        groupings, minimum = self.groupings(), self.minimum_rows()
        weights = self.weights
        size = len if weights is None else weights.size
        requests = []
        for cov in (c for c in covs if c.kind == "numeric"):
            x = np.asarray(cov.values, dtype=np.float64)
            if not groupings:
                rows = np.arange(self.n, dtype=index_dtype(self.n))
                requests.append(CurveRequest(cov.name, None, "all", rows, x, None
                                             if weights is None else weights.w))
            for g in groupings:
                for code, label in enumerate(g.categories):
                    rows = rows_where(g.values == code)
                    if size(rows) >= minimum:
                        requests.append(CurveRequest(cov.name, g.name, label, rows, x[rows],
                                                     None if weights is None
                                                     else weights.w[rows]))
        return requests

    def points(self, bias: Any, prediction: np.ndarray, at: RowProducts
               ) -> dict[str, Any]:
        """The plotted rows with their LCB, pointwise interval and covariates (at most
        ``max_points``: evenly spaced among the rows whose products were computed)."""
        keep = np.arange(at.rows.size)
        if at.rows.size > self.local.max_points:
            keep = np.unique(np.linspace(0, at.rows.size - 1, self.local.max_points
                                         ).round().astype(np.intp))
        rows, se = at.rows[keep], at.se[keep]
        z = float(norm_ppf(0.5 + self.local.confidence_level / 2.0))
        covs = self.data.covariates
        if isinstance(bias, KeptBias):  # the plotted rows' values fetched from the tasks
            lcb, values = bias.at(rows)["lcb"], picked_covariates(self.data, rows)
        else:
            lcb, values = bias.values[rows], {c.name: np.asarray(c.values)[rows] for c in covs}
        return {
            "covariate_values": {c.name: values[c.name] for c in covs if c.kind == "numeric"},
            "group": {c.name: np.asarray(c.categories, dtype=object)[values[c.name]]
                      for c in covs if c.kind == "categorical"},
            "lcb": lcb, "lcb_se": se, "lcb_low": lcb - z * se, "lcb_high": lcb + z * se,
            "prediction": prediction[rows], "row": rows, "n_total": self.n}

    def lcb_bandwidths(self, scalar_r: np.ndarray, fixed: dict[str, float] | None = None
                       ) -> BandwidthSelection:
        """The LCB estimate's bandwidths: given, or chosen by LOO-CV (a given one fixes
        its grid to that value, for every covariate); ``fixed`` covariates keep theirs."""
        lc = self.local
        prob_grid = (lc.lcb_prob_bandwidth,) if lc.lcb_prob_bandwidth else PROB_GRID
        cov_grid = (lc.lcb_cov_bandwidth,) if lc.lcb_cov_bandwidth else COV_GRID
        selection = select_bandwidths(self.prob_features, self.encoded.features, scalar_r,
                                      self.streams["lcb"], self.encoded.blocks,
                                      self.data.covariate_names,
                                      [c.kind for c in self.data.covariates],
                                      fixed=None if lc.lcb_cov_bandwidth else fixed,
                                      max_rows=lc.lcb_cv_max_rows,
                                      prob_grid=prob_grid, cov_grid=cov_grid,
                                      weights=self.weights,
                                      take=taker(self.data, self.encoded)
                                      if self.residual_rows("sums") else None)
        if lc.lcb_prob_bandwidth and lc.lcb_cov_bandwidth:
            return replace(selection, source="option")
        return selection

    def local_bias(self, scalar_r: np.ndarray, fixed: dict[str, float] | None = None
                   ) -> tuple[LocalBias, BandwidthSelection, GaussianProductGram | None]:
        """LCB at every row with the estimation bandwidths. The exact path returns the estimation
        Gram; the feature path keeps only ``lcb_kernel`` and returns ``None``."""
        selection = self.lcb_bandwidths(scalar_r, fixed)
        columns = selection.column_bandwidths(self.encoded.blocks, self.data.covariate_names)
        if self.lcb_kernel is not None:
            # the estimation Gram's scaled rows on demand: only the categorical cells are
            # stored (2 bytes a row)
            rows = EstimationRows(self.prob_features, selection.prob_bandwidth,
                                  self.encoded.features, columns)
            categorical = categorical_columns(self.prob_features.shape[1],
                                              self.data.covariates, self.encoded.blocks)
            residuals = self.residual_rows("sums")
            if residuals is not None:  # every per-row column made and kept by the tasks
                self.lcb_kernel = planned_kernel(rows, self.data, self.encoded, categorical)
                self.rows = self.stack.enter_context(kept_kernel_sums(
                    self.lcb_kernel, residuals, self.lcb_features,
                    self.choice.frequency_seed))
                return KeptBias(self.rows), selection, None
            self.lcb_kernel = dataset_kernel(rows_cell_kernel(rows, categorical), rows,
                                             self.data, self.encoded, categorical)
            weighted, mass = feature_kernel_sums(
                self.lcb_kernel, scalar_r, self.lcb_features, self.choice.frequency_seed,
                None if self.weights is None else self.weights.w)
            return LocalBias(ratio(weighted, mass), mass), selection, None
        cov = np.asarray(self.encoded.features)
        gram = estimation_gram(self.prob_features, selection.prob_bandwidth, cov, columns)
        weighted, mass = kernel_sums(self.prob_features, selection.prob_bandwidth,
                                     cov, columns, scalar_r,
                                     None if self.weights is None else self.weights.w)
        return LocalBias(ratio(weighted, mass), mass), selection, gram

    def curves(self, design: CurveDesign, bias: LocalBias, at: RowProducts,
               scalar_r: np.ndarray) -> list[dict[str, Any]]:
        """Per-group LCB curves; their standard errors from the plotted rows' products
        (exact when every row is plotted, else an unbiased subsample estimate)."""
        if not design.requests:
            return []
        return curves_from_products(design, at.curve_weights, bias, scalar_r[at.rows],
                                    self.local.confidence_level,
                                    scale=self.n / max(at.rows.size, 1),
                                    size_of=lambda request: getattr(
                                        request, "n", None) or int(request.rows.size))
