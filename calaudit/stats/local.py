"""Local calibration tests: ``local_test`` (the audit's primary, an aggregate of
recalibration scores and KLCE) and ``klce_test`` (the KLCE^2 tests of Vashistha & Farahi,
*I-trustworthy models*).

Each runs the local stage's tests (:class:`calaudit.local.kernel_tests.LocalTests`) on the
stage's random streams with only the requested test, so the statistic, p-value and null
distribution are those of ``calaudit test --covariates ...`` with the same seed.
"""

from __future__ import annotations

from calaudit.audit.config import AuditConfig, LocalConfig
from calaudit.audit.local_calibration import STREAMS, LocalCalibrationStage
from calaudit.local.kernel_tests import LocalTests
from calaudit.numerics.random import stream
from calaudit.results import TestResult, lookup
from calaudit.stats.result import as_data, seed_of

METHODS = {"consistency": "klce_consistency", "bootstrap": "klce_bootstrap",
           "permutation": "klce_permutation"}


def klce_test(y_true, y_proba, covariates, *, method: str = "consistency",
              n_resamples: int = 500, prob_bandwidth: float | None = None,
              cov_bandwidth: float | None = None, resample_dtype: str = "float32",
              random_state: int | None = None, rng: int | None = None,
              computation: str = "auto", n_features: int | None = None
              ) -> TestResult:
    """Test "the model is calibrated in every neighbourhood of the covariates" (KLCE^2).

    Parameters
    ----------
    y_true : (n,) labels (integers, booleans or strings)
    y_proba : (n,) positive-class probabilities of a binary model, or (n, m)
    covariates : pandas DataFrame, named Series or mapping of names to 1-D arrays
        (strings and booleans are categorical)
    method : ``consistency`` (labels redrawn from the predictions; default),
        ``bootstrap`` (residual bootstrap, Algorithm 1) or ``permutation`` (KiTE's ELCE2)
    n_resamples : resamples of the null distribution (default 500, as the audit)
    prob_bandwidth, cov_bandwidth : Gaussian kernel bandwidths (default: median heuristic)
    resample_dtype : precision of the resampled statistics, ``float32`` or ``float64``
    random_state : seed (``rng`` is an alias); the audit's ``--seed``
    computation : the audit's ``--method``: ``auto`` (default), ``exact`` or ``features``
        (random Fourier features, ``docs/scale.md``); ``n_features`` its ``--n-features``

    Returns
    -------
    TestResult with ``statistic`` (the unbiased KLCE^2 estimate), ``pvalue``,
    ``null_distribution`` and ``method``. Too small a sample (fewer than 30 rows, or
    fewer than 5 events for a binary model) gives ``pvalue`` NaN and a ``message``.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}; got {method!r}")
    test_id = METHODS[method]
    data = as_data(y_true, y_proba, covariates)
    if not data.covariates:
        raise ValueError("klce_test needs at least one covariate")
    local = LocalConfig(tests=(test_id,), n_resamples=n_resamples,
                        prob_bandwidth=prob_bandwidth, cov_bandwidth=cov_bandwidth,
                        resample_dtype=resample_dtype, per_class=False,
                        group_ci_resamples=1, intersections=False)
    config = AuditConfig(seed=seed_of(random_state, rng), local=local, method=computation,
                         n_features=n_features)
    return _run(test_id, data, config)


def local_test(y_true, y_proba, covariates, *, n_resamples: int = 500, n_bands: int = 4,
               prob_bandwidth: float | None = None, cov_bandwidth: float | None = None,
               random_state: int | None = None, rng: int | None = None,
               computation: str = "auto", n_features: int | None = None
               ) -> TestResult:
    """Test "the model is calibrated for every sub-population of the covariates" with
    the audit's local primary test (``local_consistency``): labels redrawn from the
    predictions, and on the same redraws a recalibration score statistic per covariate
    (its categories, or ``n_bands`` quantile bands of a numeric covariate), one for all
    covariates together and the KLCE^2, aggregated into one exact p-value
    (``docs/local-calibration.md``).

    Returns
    -------
    TestResult with ``statistic`` (the aggregate, the largest weighted
    ``-log`` tail of the members), ``pvalue``, ``null_distribution`` and ``params``
    (``members``: each member's statistic, degrees of freedom and own p-value).
    Arguments as :func:`klce_test`.
    """
    data = as_data(y_true, y_proba, covariates)
    if not data.covariates:
        raise ValueError("local_test needs at least one covariate")
    local = LocalConfig(tests=("local_consistency",), n_resamples=n_resamples,
                        n_bands=n_bands, prob_bandwidth=prob_bandwidth,
                        cov_bandwidth=cov_bandwidth, per_class=False, group_ci_resamples=1,
                        intersections=False)
    config = AuditConfig(seed=seed_of(random_state, rng), local=local, method=computation,
                         n_features=n_features)
    return _run("local_consistency", data, config)


def _run(test_id: str, data, config: AuditConfig) -> TestResult:
    """The local stage's tests on its own random streams, as the audit runs them."""
    rng = stream(config.seed, LocalCalibrationStage.name)
    setup = LocalTests(data, config, dict(zip(STREAMS, rng.spawn(len(STREAMS)), strict=True)))
    tests, _, _ = setup.run()
    return lookup(tests, test_id, "test")
