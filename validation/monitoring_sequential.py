"""False alarms and detection delays of the sequential calibration test (the e-process of
``calaudit.monitoring``), beside the naive fixed-sample test repeated every window.

Streams: windows of 5,000 rows; per row ``logit p ~ N(-1, 1)`` and a group uniform over
four. Under the null ``y ~ Bernoulli(p)``. The alternatives start at window 20:

* ``citl_logit``: calibration-in-the-large (the logistic intercept) shifted by +0.03:
  ``y ~ Bernoulli(expit(logit p + 0.03))``;
* ``citl_prob``: the same shift on the probability scale, ``y ~ Bernoulli(p + 0.03)``;
* ``slope``: calibration slope 0.8: ``y ~ Bernoulli(expit(0.8 logit p))``;
* ``group``: a bias of +0.05 in one group of four: ``y ~ Bernoulli(min(p + 0.05, 1))``
  there.

Null: ``--nulls`` streams of 50 windows, the alarm rate of the e-process (``E >= 1/alpha``
at any window) with its 99 % Clopper-Pearson interval, beside the naive test: the 2-df
score test of logistic recalibration (Cox 1958: intercept and slope) at alpha in every
window, an alarm at its first rejection. Alternatives: ``--alts`` streams each, run until
the alarm (at most ``--max-windows``); the delay is the number of changed windows seen when
the alarm fires (1: the alarm comes at the end of window 20); alarms before window 20 are
counted as false alarms.

The streams are processed window by window for all streams at once with the package's own
functions (``window_sums``, ``update_log_wealth``, ``direction_log_values``,
``family_log_values``, ``combined_log_value``); the first streams are also run through
``calaudit.monitoring.monitor.update`` (the whole product path) and must give the same
values. Every random draw comes from ``--seed``.

    nice -n 10 .venv/bin/python validation/monitoring_sequential.py \
        --out validation/results/monitoring_sequential.txt
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import special, stats

from calaudit.monitoring import eprocess as ep
from calaudit.monitoring.monitor import MonitorConfig, start, update

ROWS, WINDOWS, CHANGE, GROUPS = 5_000, 50, 20, 4
SCENARIOS = ("citl_logit", "citl_prob", "slope", "group")


def draw(rng: np.random.Generator, streams: int, scenario: str | None):
    """One window for ``streams`` streams: ``p``, ``y``, group codes (streams x rows)."""
    logit = rng.normal(-1.0, 1.0, size=(streams, ROWS))
    p = special.expit(logit)
    codes = rng.integers(0, GROUPS, size=(streams, ROWS))
    q = p
    if scenario == "citl_logit":
        q = special.expit(logit + 0.03)
    elif scenario == "citl_prob":
        q = np.minimum(p + 0.03, 1.0)
    elif scenario == "slope":
        q = special.expit(0.8 * logit)
    elif scenario == "group":
        q = np.where(codes == 0, np.minimum(p + 0.05, 1.0), p)
    y = (rng.random((streams, ROWS)) < q).astype(np.float64)
    return p, y, codes


class Streams:
    """The e-process of many streams, advanced one window at a time (the formulas of
    ``calaudit.monitoring.eprocess.advance``, vectorised over streams)."""

    def __init__(self, streams: int, alpha: float) -> None:
        self.log_a = None
        self.j = 0
        self.logit_sum = np.zeros(streams)
        self.rows = 0
        self.threshold = -np.log(alpha)
        self.alarm = np.zeros(streams, dtype=np.int64)
        self.log_values: list[np.ndarray] = []

    def advance(self, p, y, codes) -> None:
        self.j += 1
        center = self.logit_sum / self.rows if self.rows else np.zeros(p.shape[0])
        s, v = ep.window_sums(p, y, [codes], GROUPS, center)
        self.log_a = ep.update_log_wealth(self.log_a, self.j, s, v)
        families = ep.family_log_values(ep.direction_log_values(self.log_a, self.j), GROUPS)
        log_value = ep.combined_log_value(families)
        self.log_values.append(log_value)
        self.logit_sum = self.logit_sum + np.sum(special.logit(np.clip(p, 1e-12, 1 - 1e-12)),
                                                 axis=-1)
        self.rows += p.shape[-1]
        self.alarm[(self.alarm == 0) & (log_value >= self.threshold)] = self.j


def naive_rejects(p, y, alpha: float) -> np.ndarray:
    """The 2-df score test of ``logit P(y=1) = a + b logit p`` at ``a = 0, b = 1`` per
    stream: ``U' I^-1 U`` against chi-square(2)."""
    logit = special.logit(p)
    r, v = y - p, p * (1.0 - p)
    u = np.stack([r.sum(-1), (logit * r).sum(-1)], -1)
    i00, i01, i11 = v.sum(-1), (logit * v).sum(-1), (logit * logit * v).sum(-1)
    det = i00 * i11 - i01 ** 2
    stat = (i11 * u[:, 0] ** 2 - 2 * i01 * u[:, 0] * u[:, 1] + i00 * u[:, 1] ** 2) / det
    return stats.chi2.sf(stat, 2) < alpha


def clopper_pearson(k: int, n: int, level: float = 0.99) -> tuple[float, float]:
    tail = (1 - level) / 2
    low = stats.beta.ppf(tail, k, n - k + 1) if k else 0.0
    high = stats.beta.ppf(1 - tail, k + 1, n - k) if k < n else 1.0
    return float(low), float(high)


def run_null(streams: int, chunk: int, alpha: float, seeds) -> dict:
    e_alarm, naive_first = [], []
    for c, seed in enumerate(seeds.spawn(-(-streams // chunk))):
        size = min(chunk, streams - c * chunk)
        rng = np.random.default_rng(seed)
        state = Streams(size, alpha)
        first = np.zeros(size, dtype=np.int64)
        for w in range(1, WINDOWS + 1):
            p, y, codes = draw(rng, size, None)
            state.advance(p, y, codes)
            first[(first == 0) & naive_rejects(p, y, alpha)] = w
        e_alarm.append(state.alarm)
        naive_first.append(first)
    return {"e": np.concatenate(e_alarm), "naive": np.concatenate(naive_first)}


def run_alternative(scenario: str, streams: int, alpha: float, max_windows: int,
                    seed) -> np.ndarray:
    rng = np.random.default_rng(seed)
    state = Streams(streams, alpha)
    for w in range(1, max_windows + 1):
        p, y, codes = draw(rng, streams, scenario if w >= CHANGE else None)
        state.advance(p, y, codes)
        if np.all(state.alarm > 0):
            break
    return state.alarm


def check_product_path(alpha: float, seed) -> float:
    """Largest |log E| difference between the vectorised streams and ``monitor.update``
    on three streams of 25 windows with a group bias from window 20."""
    rng = np.random.default_rng(seed)
    state = Streams(3, alpha)
    runs = [start(MonitorConfig(alpha=alpha, window=str(ROWS),
                                groups=(("g", tuple(str(g) for g in range(GROUPS))),),
                                n_boot=2)) for _ in range(3)]
    worst = 0.0
    for w in range(1, 26):
        p, y, codes = draw(rng, 3, "group" if w >= CHANGE else None)
        state.advance(p, y, codes)
        for k in range(3):
            runs[k] = update(runs[k], p[k], y[k].astype(int),
                             covariates={"g": codes[k].astype(str)})
            worst = max(worst, abs(runs[k].history[-1].log_e - state.log_values[-1][k]))
    assert all(runs[k].eprocess.alarm_window == state.alarm[k] for k in range(3))
    return worst


def delay_lines(scenario: str, alarm: np.ndarray, max_windows: int) -> list[str]:
    false = int(np.sum((alarm > 0) & (alarm < CHANGE)))
    late = alarm[alarm >= CHANGE] - CHANGE + 1
    missed = int(np.sum(alarm == 0))
    q = np.quantile(late, [0.1, 0.25, 0.5, 0.75, 0.9]) if late.size else [np.nan] * 5
    by50 = np.mean((alarm >= CHANGE) & (alarm <= WINDOWS))
    lines = [f"{scenario:<11} {alarm.size:>6} {false:>6} {missed:>7} {by50:>8.3f}  "
             + " ".join(f"{x:>5.0f}" for x in q) + f"  {late.mean():>6.2f}"]
    hist = np.bincount(late.astype(int), minlength=int(late.max()) + 1)[1:] if late.size \
        else np.array([])
    pairs = [f"{d}:{c}" for d, c in enumerate(hist, start=1) if c]
    lines.append("    delay:count  " + " ".join(pairs))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nulls", type=int, default=2000)
    parser.add_argument("--alts", type=int, default=1000)
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--max-windows", type=int, default=200)
    parser.add_argument("--chunk", type=int, default=250)
    parser.add_argument("--seed", type=int, default=20240601)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    began = time.time()
    seeds = np.random.SeedSequence(args.seed).spawn(2 + len(SCENARIOS))
    worst = check_product_path(args.alpha, seeds[0])
    null = run_null(args.nulls, args.chunk, args.alpha, seeds[1])
    out = [f"monitoring_sequential.py: alpha = {args.alpha}, windows of {ROWS:,} rows, "
           f"logit p ~ N(-1, 1), 4 groups, seed {args.seed}",
           f"product path check: monitor.update == vectorised streams "
           f"(max |log E| difference {worst:.1e}, same alarms)", "",
           f"Calibrated streams ({args.nulls} streams): alarm rate by number of looks, "
           "99% Clopper-Pearson interval",
           "looks  e-process  99% CI              naive (score test every window)"]
    for looks in (1, 10, 20, 30, 40, 50):
        k_e = int(np.sum((null["e"] > 0) & (null["e"] <= looks)))
        k_n = int(np.sum((null["naive"] > 0) & (null["naive"] <= looks)))
        lo, hi = clopper_pearson(k_e, args.nulls)
        out.append(f"{looks:>5}  {k_e / args.nulls:>9.4f}  [{lo:.4f}, {hi:.4f}]"
                   f"    {k_n / args.nulls:.4f}   (1 - {1 - args.alpha:g}^{looks} = "
                   f"{1 - (1 - args.alpha) ** looks:.3f})")
    k_e = int(np.sum(null["e"] > 0))
    lo, hi = clopper_pearson(k_e, args.nulls)
    verdict = "yes" if lo <= args.alpha else "NO"
    out += [f"level kept over 50 looks (CI contains {args.alpha} or lies below): {verdict}",
            "", f"Drifts from window {CHANGE} ({args.alts} streams each, run to the alarm "
            f"or {args.max_windows} windows): delay = changed windows seen at the alarm",
            "scenario     runs  false  missed  by w.50   q10   q25   q50   q75   q90    mean"]
    for k, scenario in enumerate(SCENARIOS):
        alarm = run_alternative(scenario, args.alts, args.alpha, args.max_windows,
                                seeds[2 + k])
        out += delay_lines(scenario, alarm, args.max_windows)
    out += ["", f"wall time {time.time() - began:.0f} s"]
    text = "\n".join(out) + "\n"
    print(text, end="")
    if args.out:
        with open(args.out, "w") as handle:
            handle.write(text)


if __name__ == "__main__":
    main()
