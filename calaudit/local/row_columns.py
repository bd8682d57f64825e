"""The local stage's setup on a dataset whose tasks read their own rows: its columns as
array-likes that fetch only the rows asked for, and the numeric covariates' moments
computed where the rows are.

The setup (:class:`calaudit.local.kernel_tests.LocalTests`) needs a few rows, not all: the
bandwidths' median-heuristic subsamples, the approximation check's rows, the covariates'
means and standard deviations. :class:`GatheredColumn` gives ``column[index array]`` by one
reduction (:func:`calaudit.inference.skce_rows.gather`: each task returns its rows among
those asked for, in their places; the values, not a computation on them) and reads the
whole column into this process only for anything else (``np.asarray``), through the
data's own lazy load. :func:`covariate_moments` gives ``x.mean()`` and ``x.std()`` of each
numeric covariate with numpy's bits (:func:`calaudit.numerics.pairwise_sums.pairwise_sums`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.inference.skce_rows import gather
from calaudit.local.klce import residuals
from calaudit.local.lcb import top_label_residual
from calaudit.numerics.pairwise_sums import pairwise_sums


class GatheredColumn:
    """A per-row column of the row source ``rows`` ((n,) or, with ``width``, (n, width))
    as an array-like: an integer index array gathers those rows by one reduction (the
    source's ``columns``, ``{name: width}``, turned into the column by ``make``, row by
    row); any other use reads the whole column through ``load`` (a callable)."""

    dtype = np.dtype(np.float64)

    def __init__(self, rows: Any, columns: dict[str, int], make: Any, load: Any,
                 width: int | None = None) -> None:
        self.rows, self.columns, self.make, self.load = rows, columns, make, load
        self.width = width
        self.shape = (int(rows.n),) if width is None else (int(rows.n), width)

    @classmethod
    def of(cls, rows: Any, name: str, load: Any, width: int | None = None
           ) -> GatheredColumn:
        """Column ``name`` of ``rows`` as it is."""
        return cls(rows, {name: width or 1}, lambda found: found[name], load, width)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, index: Any) -> NDArray:
        if isinstance(index, (np.ndarray, list)) and np.asarray(index).dtype.kind in "iu":
            return self.at(np.asarray(index, dtype=np.int64))
        return np.asarray(self)[index]

    def at(self, index: NDArray[np.int64]) -> NDArray[np.float64]:
        """The rows ``index`` (any order, repeats allowed), gathered by one reduction."""
        order = np.argsort(index, kind="stable")
        found = gather(self.rows, index[order], self.columns)
        made = np.asarray(self.make(found)).reshape(index.size, -1)
        out = np.empty_like(made)
        out[order] = made
        return out if self.width else out[:, 0]

    def __array__(self, dtype: Any = None, copy: Any = None) -> NDArray:
        values = np.asarray(self.load()).reshape(self.shape)
        return values if dtype is None else values.astype(dtype, copy=False)

    def __sizeof__(self) -> int:
        """The rows held here: none (``dask.sizeof``)."""
        return 0


def scalar_columns(setup: Any) -> tuple[GatheredColumn, GatheredColumn, GatheredColumn]:
    """The scalar view's outcome, prediction and residual of a dataset read by tasks
    (:class:`calaudit.local.kernel_tests.LocalTests` ``setup``), as gathered columns with
    the arrays' bits: binary ``1{y = 1}``, ``p_1`` and ``y - p_1``; multi-class top-label
    ``1{y = argmax p}``, ``max p`` and their difference
    (:func:`calaudit.local.lcb.top_label_residual`)."""
    data = setup.data
    rows, width = data.rows, len(data.classes)
    if not data.is_binary:
        def top(found: dict[str, NDArray]) -> tuple[NDArray, NDArray]:
            return top_label_residual(found["y"][:, 0], found["proba"])

        def loaded() -> tuple[NDArray, NDArray]:
            return top_label_residual(data.y_true, data.y_proba)

        def difference(pair: tuple[NDArray, NDArray]) -> NDArray[np.float64]:
            return pair[0] - pair[1]

        read = {"y": 1, "proba": width}
        return (GatheredColumn(rows, read, lambda f: top(f)[0], lambda: loaded()[0]),
                GatheredColumn(rows, read, lambda f: top(f)[1], lambda: loaded()[1]),
                GatheredColumn(rows, read, lambda f: difference(top(f)),
                               lambda: difference(loaded())))

    def outcome(found: dict[str, NDArray]) -> NDArray[np.float64]:
        return (found["y"][:, 0] == 1).astype(np.float64)

    def residual(found: dict[str, NDArray]) -> NDArray[np.float64]:
        return residuals(found["y"][:, 0].astype(np.int64), found["proba"])

    return (GatheredColumn(rows, {"y": 1}, outcome,
                           lambda: (np.asarray(data.y_true) == 1).astype(np.float64)),
            GatheredColumn.of(rows, "p", lambda: setup.proba),
            GatheredColumn(rows, {"y": 1, "proba": 2}, residual, lambda: setup.r))


def class_column(data: Any, c: int) -> GatheredColumn:
    """The probability of class ``c`` of a dataset read by tasks as an (n, 1) gathered
    column (a one-vs-rest view's prediction, the bits of ``y_proba[:, c]``)."""
    return GatheredColumn(data.rows, {"proba": len(data.classes)},
                          lambda found: found["proba"][:, c:c + 1],
                          lambda: np.asarray(data.y_proba)[:, c].copy(), 1)


class GatheredCovariate:
    """A covariate of a dataset read by tasks (the duck type
    :mod:`calaudit.local.encoding` reads): ``values`` a :class:`GatheredColumn` of its
    values or codes."""

    def __init__(self, data: Any, covariate: Any) -> None:
        self.name, self.kind = covariate.name, covariate.kind
        self.categories = covariate.categories
        self.values = GatheredColumn.of(data.rows, data.rows.covariate_column(covariate.name),
                                        lambda: covariate.values)


def covariate_moments(data: Any) -> dict[str, tuple[float, float]]:
    """``(x.mean(), x.std())`` of each numeric covariate of ``data`` (its ``rows`` read by
    tasks), the bits numpy gives on the whole column: the sum, then the sum of squared
    deviations from the mean, each by numpy's pairwise tree cut at the task ranges."""
    out = {}
    for cov in data.covariates:
        if cov.kind == "categorical":
            continue
        column, n = data.rows.covariate_column(cov.name), data.n
        mean = np.float64(pairwise_sums(data.rows, column, n)[0]) / n
        squares = np.float64(pairwise_sums(data.rows, column, n, centre=float(mean))[0])
        out[cov.name] = (float(mean), float(np.sqrt(squares / n)))
    return out


def residuals_at(data: Any, index: NDArray[np.int64]) -> NDArray[np.float64]:
    """The KLCE residuals (:func:`calaudit.local.klce.residuals`) of the rows ``index``
    of a dataset read by tasks: row by row, so the whole array's values at those rows."""
    columns = {"y": 1, "proba": len(data.classes)}
    order = np.argsort(index, kind="stable")
    found = gather(data.rows, np.asarray(index, np.int64)[order], columns)
    y, proba = np.empty_like(found["y"]), np.empty_like(found["proba"])
    y[order], proba[order] = found["y"], found["proba"]
    return residuals(y[:, 0].astype(np.int64), proba)
