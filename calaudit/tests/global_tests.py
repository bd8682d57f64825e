"""Global calibration tests: "the model is calibrated" (no covariates).

Each function runs the audit stage that owns the test with only that test enabled, so the
numbers are those of ``calaudit test`` with the same seed and settings:

* :func:`skce_test`: squared kernel calibration error tests (Widmann et al. 2019;
  :class:`~calaudit.audit.skce_stage.SkceStage`);
* :func:`ece_test`: consistency resampling test of the binned ECE (Broecker & Smith 2007;
  :class:`~calaudit.audit.ece_family.EceFamilyStage`);
* :func:`spiegelhalter_test`, :func:`hosmer_lemeshow_test`: classical tests of binary
  models (:class:`~calaudit.audit.clinical_stage.ClinicalStage`).
"""

from __future__ import annotations

from calaudit.audit.clinical_stage import ClinicalStage
from calaudit.audit.config import AuditConfig, BinningConfig, GlobalTestsConfig, SkceConfig
from calaudit.audit.ece_family import EceFamilyStage
from calaudit.audit.skce_stage import SkceStage
from calaudit.tests.result import CalibrationTestResult, as_data, run_stage_test, seed_of

SKCE_METHODS = {"consistency": "skce_consistency", "uq_asymptotic": "skce_uq_asymptotic",
                "ul_asymptotic": "skce_ul_asymptotic", "b_bound": "skce_b_bound",
                "uq_bound": "skce_uq_bound", "ul_bound": "skce_ul_bound"}


def _only(test_id: str, **changes) -> GlobalTestsConfig:
    return GlobalTestsConfig(tests=(test_id,), **changes)


def skce_test(y_true, y_proba, *, method: str = "consistency", kernel: str = "exponential",
              bandwidth: float | None = None, n_resamples: int = 1000, alpha: float = 0.05,
              random_state: int | None = None, rng: int | None = None,
              computation: str = "auto", n_features: int | None = None
              ) -> CalibrationTestResult:
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
    if method not in SKCE_METHODS:
        raise ValueError(f"method must be one of {', '.join(SKCE_METHODS)}; got {method!r}")
    test_id = SKCE_METHODS[method]
    config = AuditConfig(seed=seed_of(random_state, rng), n_resamples=n_resamples,
                         alpha=alpha, skce=SkceConfig(kernel=kernel, bandwidth=bandwidth),
                         global_tests=_only(test_id), method=computation,
                         n_features=n_features)
    return run_stage_test(SkceStage(), test_id, as_data(y_true, y_proba), config)


def ece_test(y_true, y_proba, *, n_bins: int = 15, strategy: str = "uniform",
             n_resamples: int = 1000, random_state: int | None = None,
             rng: int | None = None) -> CalibrationTestResult:
    """Consistency resampling test of the binned ECE: the observed ECE against the ECEs
    of labels redrawn from the predictions (binary notion for two classes, top-label
    otherwise). ``statistic`` is the ECE; ``null_distribution`` the redrawn ECEs."""
    test_id = "ece_consistency"
    config = AuditConfig(seed=seed_of(random_state, rng), n_resamples=n_resamples,
                         binning=BinningConfig(n_bins=n_bins, strategy=strategy),
                         global_tests=_only(test_id))
    return run_stage_test(EceFamilyStage(), test_id, as_data(y_true, y_proba), config)


def spiegelhalter_test(y_true, y_proba) -> CalibrationTestResult:
    """Spiegelhalter's z test (binary models; two-sided normal p-value)."""
    data = as_data(y_true, y_proba)
    _binary_only(data, "spiegelhalter_test")
    config = AuditConfig(global_tests=_only("spiegelhalter"))
    return run_stage_test(ClinicalStage(), "spiegelhalter", data, config)


def hosmer_lemeshow_test(y_true, y_proba, *, n_groups: int = 10) -> CalibrationTestResult:
    """Hosmer-Lemeshow chi-square test on ``n_groups`` quantile groups (binary models)."""
    data = as_data(y_true, y_proba)
    _binary_only(data, "hosmer_lemeshow_test")
    config = AuditConfig(global_tests=_only("hosmer_lemeshow", hosmer_lemeshow=True,
                                            hosmer_lemeshow_groups=n_groups))
    return run_stage_test(ClinicalStage(), "hosmer_lemeshow", data, config)


def _binary_only(data, name: str) -> None:
    if not data.is_binary:
        raise ValueError(f"{name} is defined for binary models; got {data.n_classes} classes")
