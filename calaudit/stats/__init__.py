"""Public calibration tests, one function per test, returning scipy-like result objects.

>>> import numpy as np
>>> from calaudit.stats import ece_test
>>> rng = np.random.default_rng(0)
>>> p = rng.uniform(size=500)
>>> y = (rng.uniform(size=500) < p).astype(int)
>>> result = ece_test(y, p, n_resamples=200, random_state=1)
>>> statistic, pvalue = result
>>> bool(pvalue > 0.05), result.null_distribution.shape
(True, (200,))

Every function runs the same code as the audit (the statistics core, or for the local
tests the local stage, on the stage's random stream), so ``random_state=s`` gives the
numbers of ``calaudit test --seed s``. p-values are raw: the audit's multiple-testing
adjustment and gate are not applied (``calaudit.run_audit`` does that).
"""

from __future__ import annotations

from calaudit.results import TestResult
from calaudit.stats.global_tests import (
    ece_test,
    hosmer_lemeshow_test,
    skce_test,
    spiegelhalter_test,
)
from calaudit.stats.local import klce_test, local_test

__all__ = ["TestResult", "local_test", "klce_test", "skce_test", "ece_test",
           "spiegelhalter_test", "hosmer_lemeshow_test"]
