"""The SKCE feature pass's columns of a multi-class row source (columns ``y``, ``proba``
(n, m), ``residuals`` ``e_y - p``), built per range by the task that reads the rows: the
kernel on the whole probability vector (``x = p``), the one-hot labels and the residuals,
the columns :func:`calaudit.inference.feature_tests.label_inputs` makes of the in-memory
arrays (Widmann et al. 2019, sec. 5: ``h_ij = kappa(p_i, p_j) <e_{y_i} - p_i, e_{y_j} -
p_j>``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calaudit.scale import DerivedRows


@dataclass(frozen=True)
class ClassRows(DerivedRows):
    """The feature pass's columns of an m-class source, built per range: ``x`` and
    ``proba`` (``p``, (n, m)), ``observed`` (``e_y``, (n, m) uint8) and ``residuals``
    (``e_y - p``, (n, m))."""

    source: Any

    def read(self, start: int, stop: int, names: Any) -> dict[str, NDArray]:
        part = self.source.read(start, stop, ["y", "proba", "residuals"])
        proba = np.asarray(part["proba"], dtype=np.float64)
        observed = np.zeros(proba.shape, np.uint8)
        observed[np.arange(proba.shape[0]), np.asarray(part["y"], dtype=np.int64)] = 1
        columns = {"x": proba, "proba": proba, "observed": observed,
                   "residuals": np.asarray(part["residuals"], dtype=np.float64)}
        return {name: columns[name] for name in names}
