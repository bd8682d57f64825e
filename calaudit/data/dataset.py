"""The validated, immutable data object every later stage consumes: :class:`CalibrationData`,
built by :mod:`calaudit.data.build` from files or in-memory arrays."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from calaudit.data.parts import Covariate, Provenance, read_only
from calaudit.data.weights import SampleWeights


class LabelledRows:
    """What a data object derives from its ``classes``, ``n``, ``y_true``, ``y_proba`` and
    ``covariates`` (:class:`CalibrationData` and :class:`calaudit.data.planned.RowsData`)."""

    @property
    def covariate_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.covariates)

    def covariate(self, name: str) -> Any:
        """The covariate called ``name`` (KeyError naming those there are)."""
        for cov in self.covariates:
            if cov.name == name:
                return cov
        raise KeyError(f"no covariate {name!r}; covariates: "
                       + (", ".join(self.covariate_names) or "none"))

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def is_binary(self) -> bool:
        return self.n_classes == 2

    @property
    def positive_proba(self) -> NDArray[np.float64]:
        """Probability of the positive class (binary data only)."""
        if not self.is_binary:
            raise ValueError("positive_proba is defined for binary data only")
        return self.y_proba[:, 1]

    @property
    def residuals(self) -> NDArray[np.float64]:
        """``e_{y_i} - p_i``, shape (n, m)."""
        return self.residual_rows(0, self.n)

    def residual_rows(self, start: int, stop: int) -> NDArray[np.float64]:
        """Rows ``start:stop`` of :attr:`residuals` (the same operations, so the same bits)."""
        return residuals_of(self.y_true[start:stop], self.y_proba[start:stop])


def residuals_of(codes: NDArray[np.int64], proba: NDArray[np.float64]) -> NDArray[np.float64]:
    """``e_y - p`` of rows with class codes ``codes`` and probabilities ``proba``."""
    out = -np.array(proba)
    out[np.arange(out.shape[0]), codes] += 1.0
    return out


@dataclass(frozen=True)
class CalibrationData(LabelledRows):
    """Predictions, labels and covariates, validated: ``y_proba`` (n, m) float64 rows on
    the simplex (binary: column 1 is the positive class), ``y_true`` (n,) int64 class
    indices, the m ``classes`` in column order, the ``covariates``, the ``provenance``
    (files, row counts, exclusions), the ``spill`` store holding spilled columns (else
    None) and the row ``weights`` (None: unweighted)."""

    y_proba: NDArray[np.float64]
    y_true: NDArray[np.int64]
    classes: tuple[str, ...]
    covariates: tuple[Covariate, ...] = ()
    provenance: Provenance = field(default_factory=Provenance)
    spill: object | None = field(default=None, repr=False, compare=False)
    weights: SampleWeights | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "y_proba", read_only(np.asarray(self.y_proba, np.float64)))
        object.__setattr__(self, "y_true", read_only(np.asarray(self.y_true, np.int64)))

    @property
    def n(self) -> int:
        return int(self.y_true.shape[0])

    @property
    def sample_weight(self) -> NDArray[np.float64] | None:
        """The weight of every row (None: unweighted): the design weight, times ``1 / r``
        for the negatives of label-dependent sampling (docs/weights.md)."""
        if self.weights is None:
            return None
        return self.weights.of_labels(self.y_true == 1) if self.is_binary else \
            self.weights.of_labels(np.ones(self.n))

    def class_counts(self) -> dict[str, int]:
        counts = np.bincount(self.y_true, minlength=self.n_classes)
        return {name: int(c) for name, c in zip(self.classes, counts)}


    @classmethod
    def from_arrays(cls, y_true, y_proba, *, covariates: object = None,
                    categorical: tuple[str, ...] | list[str] = (),
                    classes: tuple[str, ...] | list[str] | None = None,
                    positive_label: str | None = None, renormalize: bool = False,
                    drop_invalid: bool = False, sample_weight: object = None,
                    weight_kind: str = "frequency", negative_rate: float | None = None
                    ) -> CalibrationData:
        """Validate in-memory arrays with the same rules as files.

        ``y_proba`` is (n,) for binary (positive-class probability) or (n, m);
        ``y_true`` holds labels (integers, booleans or strings); ``covariates`` is a pandas
        ``DataFrame`` (one covariate per column), a named ``Series``, or a mapping of names
        to 1-D arrays. Messages about bad values name the array (``y_proba``,
        ``y_proba[:, k]``, ``y_true``, the covariate) and the 0-based index of the first
        bad entry. ``sample_weight`` (n,) weights the rows (``weight_kind`` ``frequency``
        or ``design``) and ``negative_rate`` says that negatives were kept at that rate
        (docs/weights.md).

        >>> import pandas as pd
        >>> frame = pd.DataFrame({"age": [30, 41, 52], "region": ["n", "s", "n"]})
        >>> data = CalibrationData.from_arrays([0, 1, 1], [0.2, 0.7, 0.9], covariates=frame)
        >>> data.covariate_names, data.covariate("region").categories
        (('age', 'region'), ('n', 's'))
        """
        from calaudit.data.build import LoadOptions, build_from_arrays

        options = LoadOptions(tuple(categorical), positive_label, renormalize, drop_invalid,
                              False, weight_kind, negative_rate)
        return cls(*build_from_arrays(y_true, y_proba, covariate_columns(covariates),
                                      None if classes is None else tuple(classes),
                                      sample_weight, options))


def covariate_columns(covariates: object) -> dict[str, object]:
    """``{name: 1-D values}`` from a DataFrame, a named Series, a mapping or ``None`` (an
    index is ignored: rows match by position)."""
    if covariates is None:
        return {}
    if isinstance(covariates, pd.DataFrame):
        return {str(name): covariates[name].to_numpy() for name in covariates.columns}
    if isinstance(covariates, pd.Series):
        if covariates.name is None:
            raise TypeError("a covariate Series needs a name (Series.rename('age'))")
        return {str(covariates.name): covariates.to_numpy()}
    if isinstance(covariates, Mapping):
        return {str(name): (values.to_numpy() if isinstance(values, pd.Series) else values)
                for name, values in covariates.items()}
    raise TypeError("covariates must be a pandas DataFrame, a named Series or a mapping of "
                    f"names to 1-D arrays; got {type(covariates).__name__}")
