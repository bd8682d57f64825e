"""Generate the bundled sample datasets in ``sample_data/`` (deterministic).

    python scripts/make_sample_data.py

credit_default: a binary credit-default model that is calibrated on average but biased in
opposite directions for two groups. image_classifier: 10-class predictions from the
Dirichlet generative model of Widmann et al. (2019), appendix J.2, with labels drawn from
a calibrated and from a miscalibrated version of the model. sample_data/README.md
documents the built-in truth.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

OUT = Path(__file__).resolve().parent.parent / "sample_data"
SEED = 20261121
N_CREDIT = 4000
BIAS_SCALE = 0.4          # group bias is +-BIAS_SCALE * p * (1 - p)
GROUP_SHARES = {"A": 0.4, "B": 0.4, "C": 0.2}
GROUP_SIGN = {"A": +1.0, "B": -1.0, "C": 0.0}
N_IMAGES = 1000
CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship",
           "truck")
DIRICHLET_ALPHA = 0.1
MISCALIBRATION_PI = 0.25  # P[Z = 1]: label forced to class 0 (Widmann et al. J.2)


def credit_default(rng: np.random.Generator) -> pd.DataFrame:
    """Columns id, label, prob, age, race, income.

    prob = sigmoid(-1.6 - 0.035 (age - 45) - 0.9 (log income - 10.6)); race is drawn
    independently of everything else; the true default rate is
    prob + sign(race) * 0.4 * prob * (1 - prob), sign A = +1 (under-predicted),
    B = -1 (over-predicted), C = 0. A and B have equal shares at every prob, so
    E[label | prob] = prob exactly: calibrated on average, not locally.
    """
    age = np.round(rng.uniform(21, 75, N_CREDIT)).astype(np.int64)
    income = np.round(np.exp(rng.normal(10.6, 0.55, N_CREDIT)), -2)
    race = rng.choice(list(GROUP_SHARES), size=N_CREDIT, p=list(GROUP_SHARES.values()))
    logit = -1.6 - 0.035 * (age - 45) - 0.9 * (np.log(income) - 10.6)
    prob = np.round(1.0 / (1.0 + np.exp(-logit)), 6)
    sign = np.array([GROUP_SIGN[r] for r in race])
    true_rate = prob + sign * BIAS_SCALE * prob * (1.0 - prob)
    label = (rng.uniform(size=N_CREDIT) < true_rate).astype(np.int64)
    return pd.DataFrame({"id": np.arange(1, N_CREDIT + 1), "label": label, "prob": prob,
                         "age": age, "race": race, "income": income})


def image_classifier(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """probs ~ Dir(0.1 * 1_10); labels ~ Cat(probs) (calibrated); labels_miscalibrated
    ~ Cat(e_1) with probability 0.25, else Cat(probs)."""
    probs = rng.dirichlet(np.full(len(CLASSES), DIRICHLET_ALPHA), size=N_IMAGES)
    probs = probs / probs.sum(axis=1, keepdims=True)
    cumulative = np.cumsum(probs, axis=1)
    draw = rng.uniform(size=(N_IMAGES, 1))
    labels = np.minimum((draw > cumulative).sum(axis=1), len(CLASSES) - 1)
    forced = rng.uniform(size=N_IMAGES) < MISCALIBRATION_PI
    redraw = np.minimum((rng.uniform(size=(N_IMAGES, 1)) > cumulative).sum(axis=1),
                        len(CLASSES) - 1)
    labels_mis = np.where(forced, 0, redraw)
    return {"probs": probs, "labels": labels.astype(np.int64),
            "labels_miscalibrated": labels_mis.astype(np.int64),
            "class_names": np.array(CLASSES)}


def main() -> None:
    rng = np.random.default_rng(SEED)
    OUT.mkdir(exist_ok=True)
    credit = credit_default(rng)
    credit.to_csv(OUT / "credit_default.csv", index=False)
    credit.to_parquet(OUT / "credit_default.parquet", index=False)
    np.savez_compressed(
        OUT / "credit_default.npz", probs=credit["prob"].to_numpy(),
        labels=credit["label"].to_numpy(), id=credit["id"].to_numpy(),
        age=credit["age"].to_numpy(), race=credit["race"].to_numpy().astype(str),
        income=credit["income"].to_numpy())
    np.savez_compressed(OUT / "image_classifier.npz", **image_classifier(rng))
    for name in sorted(p.name for p in OUT.iterdir()):
        print(name, (OUT / name).stat().st_size, "bytes")


if __name__ == "__main__":
    main()
