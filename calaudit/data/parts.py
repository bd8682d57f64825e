"""The parts of the validated data object: a covariate column (:class:`Covariate`) and
where the rows came from (:class:`Provenance`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from calaudit.data.readers import SourceFile

CovariateKind = Literal["numeric", "categorical"]


def read_only(array: np.ndarray) -> np.ndarray:
    array = np.ascontiguousarray(array)
    array.setflags(write=False)
    return array


class CovariateRows:
    """What a covariate derives from its ``name``, ``kind``, ``values`` and
    ``categories`` (:class:`Covariate`, and a dataset's covariate read by tasks)."""

    def labels(self) -> NDArray[np.object_]:
        """Category name of each row (categorical covariates only)."""
        return np.asarray(self.categories, dtype=object)[self.values]

    def take(self, rows: NDArray[np.intp]) -> Covariate:
        return Covariate(self.name, self.kind, self.values[rows], self.categories)


@dataclass(frozen=True)
class Covariate(CovariateRows):
    """One covariate column: ``numeric`` float64 ``values``, or ``categorical`` int64 codes
    into ``categories`` (sorted; integer-coded categories sort numerically)."""

    name: str
    kind: CovariateKind
    values: NDArray
    categories: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", read_only(self.values))


@dataclass(frozen=True)
class Provenance:
    """Where the data came from; ``rows_excluded`` counts dropped rows by rule."""

    files: tuple[SourceFile, ...] = ()
    rows_read: int = 0
    rows_used: int = 0
    rows_excluded: Mapping[str, int] = field(default_factory=dict)
    label_column: str | None = None
    score_columns: tuple[str, ...] = ()
    score_kind: str = "probability"
    id_column: str | None = None
    renormalized_rows: int = 0
    #: The predictions input when it is a dataset: ``{"path": as given, "kind":
    #: "directory" | "glob" | "url", "format", "files", "partition_columns"}``.
    dataset: Mapping[str, object] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "rows_excluded", MappingProxyType(dict(self.rows_excluded)))
