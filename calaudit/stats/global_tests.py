"""Global calibration tests: "the model is calibrated" (no covariates). Each function
validates its arguments as the configuration does and calls the statistics core that the
audit's stage calls (:mod:`calaudit.inference.skce_battery`,
:mod:`calaudit.inference.consistency`, :mod:`calaudit.inference.classical`) on the stage's
random stream, so the numbers are those of ``calaudit test`` with the same seed."""

from __future__ import annotations

from calaudit.audit.config import AuditConfig, BinningConfig, GlobalTestsConfig, SkceConfig
from calaudit.inference import classical
from calaudit.inference.consistency import ece_consistency
from calaudit.inference.method import Computation
from calaudit.inference.skce_battery import SKCE_TESTS, skce_battery
from calaudit.numerics.random import stream
from calaudit.results import TestResult
from calaudit.stats.result import as_data, seed_of


def skce_test(y_true, y_proba, *, method: str = "consistency", kernel: str = "exponential",
              bandwidth: float | None = None, n_resamples: int = 1000, alpha: float = 0.05,
              random_state: int | None = None, rng: int | None = None,
              computation: str = "auto", n_features: int | None = None
              ) -> TestResult:
    """Test "the model is calibrated" with the squared kernel calibration error.

    ``method``: ``consistency`` (SKCE_uq against labels redrawn from the predictions;
    default), ``uq_asymptotic`` (Arcones-Gine bootstrap), ``ul_asymptotic`` (normal
    z-test of the linear estimator), or the distribution-free bounds ``b_bound``,
    ``uq_bound``, ``ul_bound``. ``kernel`` and ``bandwidth`` choose the prediction kernel
    (default: exponential with the median heuristic); ``alpha`` only decides whether a
    bound test can reject at all (else ``pvalue`` is NaN and ``message`` says why).
    ``random_state`` (alias ``rng``) is the audit's ``--seed``. ``computation``: the
    audit's ``--method`` (``auto``, ``exact`` or ``features``: random Fourier features,
    ``docs/scale.md``), ``n_features`` its ``--n-features``.
    """
    if f"skce_{method}" not in SKCE_TESTS:
        raise ValueError(f"method must be one of {', '.join(t[5:] for t in SKCE_TESTS)}; "
                         f"got {method!r}")
    AuditConfig(n_resamples=n_resamples, alpha=alpha, method=computation,  # validation
                n_features=n_features, skce=SkceConfig(kernel=kernel, bandwidth=bandwidth))
    seed, data = seed_of(random_state, rng), as_data(y_true, y_proba)
    battery = skce_battery(data.y_proba, data.residuals, kernel=kernel, bandwidth=bandwidth,
                           tests=(f"skce_{method}",), n_resamples=n_resamples,
                           alpha=alpha, computation=Computation(computation, n_features),
                           rng=stream(seed, "skce"))
    return battery.tests[0]


def ece_test(y_true, y_proba, *, n_bins: int = 15, strategy: str = "uniform",
             n_resamples: int = 1000, random_state: int | None = None,
             rng: int | None = None) -> TestResult:
    """Consistency resampling test of the binned ECE: the observed ECE against the ECEs
    of labels redrawn from the predictions (binary notion for two classes, top-label
    otherwise). ``statistic`` is the ECE; ``null_distribution`` the redrawn ECEs."""
    AuditConfig(n_resamples=n_resamples,  # validation
                binning=BinningConfig(n_bins=n_bins, strategy=strategy))
    seed, data = seed_of(random_state, rng), as_data(y_true, y_proba)
    _, test_rng = stream(seed, "ece_family").spawn(2)  # the stage's (intervals, test)
    return (ece_consistency(
        data.y_true, data.y_proba, n_bins=n_bins, strategy=strategy,
        n_resamples=n_resamples, rng=test_rng))


def spiegelhalter_test(y_true, y_proba) -> TestResult:
    """Spiegelhalter's z test (binary models; two-sided normal p-value)."""
    data = _binary(y_true, y_proba, "spiegelhalter_test")
    return (classical.spiegelhalter(data.y_true, data.positive_proba))


def hosmer_lemeshow_test(y_true, y_proba, *, n_groups: int = 10) -> TestResult:
    """Hosmer-Lemeshow chi-square test on ``n_groups`` quantile groups (binary models)."""
    GlobalTestsConfig(hosmer_lemeshow_groups=n_groups)  # validation
    data = _binary(y_true, y_proba, "hosmer_lemeshow_test")
    return (classical.hosmer_lemeshow(data.y_true, data.positive_proba, n_groups))


def _binary(y_true, y_proba, name: str):
    data = as_data(y_true, y_proba)
    if not data.is_binary:
        raise ValueError(f"{name} is defined for binary models; got {data.n_classes} classes")
    return data
