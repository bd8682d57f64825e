"""What the public test functions share: validated data from arrays (as from files) and
the seed. Each function returns the :class:`calaudit.results.TestResult` the audit reports
(``statistic``, ``p_value`` (alias ``pvalue``), ``null_distribution``; it unpacks as
``statistic, p_value = result``)."""

from __future__ import annotations

import numpy as np

from calaudit.data.dataset import CalibrationData
from calaudit.numerics.random import one_seed


def seed_of(random_state: int | None, rng: int | None) -> int:
    """The integer seed (``random_state``, or its alias ``rng``; default 0)."""
    seed = one_seed(0, random_state=random_state, rng=rng)
    if isinstance(seed, np.random.Generator) or not isinstance(seed, (int, np.integer)):
        raise TypeError("random_state must be a non-negative integer (the audit's seed), "
                        f"not {type(seed).__name__}")
    return int(seed)


def as_data(y_true, y_proba, covariates=None) -> CalibrationData:
    """Validated data from arrays (``y_proba`` (n,) for binary models, or (n, m))."""
    return CalibrationData.from_arrays(y_true, y_proba, covariates=covariates)
