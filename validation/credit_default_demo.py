"""The demonstration that matters: calibrated on average, biased in opposite directions for
two groups (sample_data/credit_default.csv; built-in truth in sample_data/README.md).

Command (saved output: validation/results/credit_default_demo.txt):

    python validation/credit_default_demo.py > validation/results/credit_default_demo.txt

Prints (1) global checks: the ECE with a consistency-resampling p-value and a global kernel
calibration test (the KLCE consistency test with no covariate kernel, l = 1), which should
not flag the model; (2) the local tests with covariates age, race, income (and race alone),
which must; (3) the group table for race against the truth: the true bias of group g is
the mean over its rows of s_g * 0.4 * p (1 - p) (s = +1 for A, -1 for B, 0 for C); (4) how
well the per-observation LCB tracks the true per-row bias.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from _common import REPO

from calaudit.audit.config import AuditConfig, LocalConfig
from calaudit.audit.runner import run_audit
from calaudit.data.load import load
from calaudit.local.bandwidth import choose_bandwidth
from calaudit.local.kernel import product_gram
from calaudit.local.resampling import consistency_test, label_sampler
from calaudit.metrics.ece import expected_calibration_error

B = 1000
TESTS = ("klce_consistency", "klce_bootstrap", "klce_permutation")


def ece_consistency_p(y: np.ndarray, p: np.ndarray, rng: np.random.Generator) -> tuple:
    proba = np.column_stack([1 - p, p])
    observed = expected_calibration_error(y, proba, n_bins=15, notion="binary")
    draws = np.empty((p.size, B))
    label_sampler(p)(rng, draws)
    draws += p[:, None]
    null = np.array([expected_calibration_error(draws[:, b].astype(int), proba, n_bins=15,
                                                notion="binary") for b in range(B)])
    return observed, (1 + np.count_nonzero(null >= observed)) / (1 + B)


def main() -> None:
    path = REPO / "sample_data" / "credit_default.csv"
    frame = pd.read_csv(path)
    y, p = frame["label"].to_numpy(), frame["prob"].to_numpy()
    rng = np.random.default_rng(1)
    print(f"# {path.name}: n={len(frame)}, mean label {y.mean():.4f}, mean prob {p.mean():.4f}")

    print("\n## 1. global checks (should not flag)")
    ece, ece_p = ece_consistency_p(y, p, rng)
    print(f"ECE (15 equal-width bins) = {ece:.4f}, consistency p-value = {ece_p:.3f} (B={B})")
    bw = choose_bandwidth(p, None, rng)
    global_test = consistency_test(product_gram(p, bw.gamma, None, 0.0), y - p, p, rng, B)
    print(f"global kernel calibration test (Gaussian k on p, bandwidth {bw.bandwidth:.4f}, "
          f"l = 1): statistic {global_test.statistic:.3e}, p-value {global_test.p_value:.3f}")

    print("\n## 2. local tests (must flag)")
    print(f"{'covariates':<18} {'test':<17} {'KLCE^2':>10} {'p-value':>8} {'status':>7}")
    for covs in ("age,race,income", "race"):
        data = load(path, covariates=covs)
        result = run_audit(data, AuditConfig(local=LocalConfig(tests=TESTS, n_resamples=500)))
        for t in result.tests:
            if t.id in TESTS:
                print(f"{covs:<18} {t.id:<17} {t.statistic:10.3e} {t.p_value:8.4f} "
                      f"{t.status.value:>7}")
        if covs == "age,race,income":
            main_result = result

    print("\n## 3. bias by race: estimate vs truth")
    sign = frame["race"].map({"A": 1.0, "B": -1.0, "C": 0.0}).to_numpy()
    true_bias = sign * 0.4 * p * (1 - p)
    by = {g["group"]: g for g in main_result.groups}
    print(f"{'group':<8} {'n':>5} {'observed':>9} {'predicted':>9} {'bias':>8} "
          f"{'95% interval':>19} {'mean LCB':>9} {'true bias':>9} {'covered':>7} {'p adj':>8}")
    for race in ("A", "B", "C"):
        g = by[f"race={race}"]
        truth = true_bias[frame["race"].to_numpy() == race].mean()
        low, high = g["bias_ci"]
        print(f"race={race:<3} {g['n']:>5} {g['observed_rate']:9.4f} {g['mean_prediction']:9.4f}"
              f" {g['bias']:+8.4f} [{low:+8.4f}, {high:+8.4f}] {g['mean_lcb']:+9.4f}"
              f" {truth:+9.4f} {'yes' if low <= truth <= high else 'no':>7}"
              f" {g['p_value_adjusted']:8.2g}")

    print("\n## 4. per-observation LCB vs the true per-row bias")
    points = main_result.local["lcb"]["points"]
    rows = np.asarray(points["row"])
    lcb = np.asarray(points["lcb"])
    corr = np.corrcoef(lcb, true_bias[rows])[0, 1]
    print(f"correlation(LCB, true bias) over {rows.size} rows = {corr:.3f}")
    for race in ("A", "B", "C"):
        mask = frame["race"].to_numpy()[rows] == race
        print(f"race={race}: mean LCB {lcb[mask].mean():+.4f}, "
              f"mean true bias {true_bias[rows][mask].mean():+.4f}")
    print("\n## top groups (summary table)")
    for g in main_result.local["lcb"]["top_groups"]:
        print(f"{g['rank']}. {g['group']}: bias {g['bias']:+.3f} [{g['bias_ci'][0]:+.3f}, "
              f"{g['bias_ci'][1]:+.3f}], p adj {g['p_value_adjusted']:.2g}, {g['status']}")


if __name__ == "__main__":
    main()
