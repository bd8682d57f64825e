"""At 10^6 rows: a 2 % segment under-predicted by 0.08 is found, a calibrated model passes.

Two data sets of ``--n`` rows (default 1,000,000; binary; covariates ``age`` ~ U(20, 80)
and ``region`` in four categories; ``p = sigmoid(-1 + 0.03 (age - 50) + N(0, 1))``):

* ``calibrated``: ``y ~ Bernoulli(p)``;
* ``segment``: the same except rows with ``region == "north"`` and ``age > 75.2`` (2 % of
  rows) have ``y ~ Bernoulli(min(1, p + 0.08))``: the model under-predicts there by 0.08.

Each goes through ``run_audit`` at the defaults (``method = "auto"``: the kernel tests run
through random features at this size). Printed: the local test's p-value and status, the
global verdict, the most biased groups of the group table (the segment should be among
them: its intersection group ``age=(top band] & region=north`` is not exactly the segment,
so its bias is diluted below 0.08), the attribution sentence with each covariate's status
and most biased level, the per-stage times (wall, CPU, peak RSS) and the process' CPU
seconds and peak RSS.

Expected: ``calibrated`` passes (verdict not FAIL, local test not rejected, no group
FAILs); ``segment`` fails the local test, its top group is the segment's intersection with
a positive bias, and the attribution points at north and the top age band.

Command: ``nice -n 10 python validation/scale_million.py > validation/results/scale_million.txt``
"""

from __future__ import annotations

import argparse
import os
import resource
import time

import numpy as np

from calaudit.audit.config import AuditConfig
from calaudit.audit.runner import run_audit
from calaudit.data.dataset import CalibrationData

REGIONS = np.array(["north", "south", "east", "west"])


def make(n: int, segment: bool, rng: np.random.Generator):
    age = rng.uniform(20, 80, n)
    region = rng.choice(REGIONS, n)
    p = 1 / (1 + np.exp(-(-1 + 0.03 * (age - 50) + rng.normal(0, 1, n))))
    # north (1/4) x age > 75.2 (8/60 of ages) = 2 % of rows
    inside = (region == "north") & (age > 75.2)
    truth = np.where(inside, np.minimum(1.0, p + 0.08), p) if segment else p
    y = (rng.random(n) < truth).astype(int)
    return CalibrationData.from_arrays(y, p, covariates={"age": age, "region": region}), inside


class NoteLog:
    """A progress reporter that keeps the notes (the per-stage time lines)."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines

    def start(self, name, total):
        return None

    def advance(self, handle, amount):
        return None

    def stop(self, handle):
        return None

    def note(self, message: str) -> None:
        self.lines.append(message)


def attribution_lines(result: dict) -> list[str]:
    section = result.get("attribution") or {}
    lines = [f"  attribution: {section.get('summary')}"]
    for entry in section.get("covariates", []):
        levels = [lv for lv in entry["levels"] if lv.get("bias") is not None]
        top = max(levels, key=lambda lv: abs(lv["bias"]), default=None)
        where = (f"; most biased level {top['level']} {top['bias']:+.4f} "
                 f"[{top['ci'][0]:+.4f}, {top['ci'][1]:+.4f}]" if top else "")
        lines.append(f"    {entry['covariate']:<8} {entry['status']:<12} "
                     f"p_adj {entry.get('p_value_adjusted')}{where}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    args = parser.parse_args()
    stages: list[str] = []
    for kind in ("calibrated", "segment"):
        rng = np.random.default_rng(1 if kind == "calibrated" else 2)
        data, inside = make(args.n, kind == "segment", rng)
        started, wall = time.process_time(), time.perf_counter()
        stages.clear()
        result = run_audit(data, AuditConfig(), progress=NoteLog(stages)).to_dict()
        cpu = time.process_time() - started
        wall = time.perf_counter() - wall
        local = next(t for t in result["tests"] if t["id"] == "klce_consistency")
        comp = local["params"]["computation"]
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{kind}: n = {args.n:,}, segment share {inside.mean():.4f}; cpu {cpu:.0f} s, "
              f"wall {wall:.0f} s (load average {os.getloadavg()[0]:.1f}, 2 cores shared), "
              f"process peak RSS {rss:.0f} MiB; verdict {result['verdict']}")
        for line in stages:
            print(f"  {line}")
        print(f"  klce_consistency ({comp['method']}, D = {comp.get('n_features')}): "
              f"statistic {local['statistic']:.3e}, p = {local['p_value']:.4f}, "
              f"adjusted {local.get('p_value_adjusted')}, status {local['status']}")
        for t in result["tests"]:
            if t["family"] == "global":
                print(f"  {t['id']:<22} {t['status']:<12} p = {t['p_value']}")
        for row in result["local"]["lcb"]["top_groups"][:5]:
            print(f"  top group {row['rank']}: {row['group']:<40} n = {row['n']:>7} "
                  f"bias {row['bias']:+.4f} p_adj {row.get('p_value_adjusted')} "
                  f"{row['status']}")
        failing = [g for g in result["groups"] if g["status"] == "FAIL"]
        print(f"  groups FAIL: {len(failing)} of {len(result['groups'])}: "
              + ", ".join(g["group"] for g in failing[:6]))
        for line in attribution_lines(result):
            print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
