"""How the clip before the logit decides the calibration slope when a model predicts 0 or 1.

A Gaussian naive Bayes model of home ownership on the 2019 American Housing Survey (each
feature given six times, so that naive Bayes counts its evidence six times: a common way
such models become over-confident) predicts some rows at exactly 1 and many within 1e-7 of
0 or 1. Its calibration slope and calibration-in-the-large on 5,000 held-out rows, by the
three conventions in use:

* calaudit: p clipped to [1e-12, 1 - 1e-12] before the logit (``params.logit_clip``);
* calzone (``cox_regression_analysis``): p clipped to [1e-7, 1 - 1e-7];
* rms ``val.prob`` (and CalibrationCurves ``val.prob.ci.2``): rows with p = 0 or 1 left out
  of the logistic calibration.

The fits other than calaudit's are statsmodels' logistic regressions on the same rows.
Needs the shared datasets. Output: ``validation/logit_clip.txt``.

    python validation/logit_clip.py
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import statsmodels.api as sm
from scipy.special import logit
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB

from calaudit.metrics.clinical import CLIP, logistic_recalibration

DATA = Path("/work/shared/datasets/ahs2019_homeownership.csv")


def predictions() -> tuple[np.ndarray, np.ndarray]:
    data = pd.read_csv(DATA, index_col=0)
    features = np.column_stack([data.drop(columns="OWNER").to_numpy(float)] * 6)
    train, test = train_test_split(np.arange(len(data)), test_size=5000, random_state=0)
    model = GaussianNB().fit(features[train], data["OWNER"].to_numpy()[train])
    return data["OWNER"].to_numpy()[test].astype(int), model.predict_proba(features[test])[:, 1]


def slope_and_intercept(y: np.ndarray, p: np.ndarray) -> tuple[float, float]:
    """Slope of logit P(y=1) = a + b logit(p), and a of logit P(y=1) = a + logit(p)."""
    slope = sm.Logit(y, sm.add_constant(logit(p))).fit(disp=0).params[1]
    large = sm.GLM(y, np.ones((y.size, 1)), family=sm.families.Binomial(),
                   offset=logit(p)).fit().params[0]
    return float(slope), float(large)


def main() -> None:
    y, p = predictions()
    ours = logistic_recalibration(y, p)
    keep = (p > 0) & (p < 1)
    rows = [("calaudit (clip 1e-12)", ours.slope, ours.citl, y.size),
            ("clip 1e-7 (calzone)", *slope_and_intercept(y, np.clip(p, 1e-7, 1 - 1e-7)),
             y.size),
            ("p = 0 or 1 dropped (rms val.prob)", *slope_and_intercept(y[keep], p[keep]),
             int(keep.sum()))]
    lines = [f"Gaussian naive Bayes, AHS 2019, 5,000 held-out rows: {int((p == 0).sum())} "
             f"predicted exactly 0, {int((p == 1).sum())} exactly 1, "
             f"{int(((p < 1e-7) | (p > 1 - 1e-7)).sum())} within 1e-7 of 0 or 1, "
             f"{ours.clipped} clipped at calaudit's bound {CLIP:g}.",
             f"{'convention':<36} {'slope':>8} {'CITL':>8} {'rows':>6}"]
    lines += [f"{name:<36} {slope:8.4f} {large:8.4f} {n:6d}" for name, slope, large, n in rows]
    text = "\n".join(lines) + "\n"
    print(text, end="")
    Path(__file__).with_name("logit_clip.txt").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
