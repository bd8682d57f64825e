"""Add up ``local_power_study.py`` outputs of disjoint data-set ranges (``--start``): each
cell's counts are its rates times its runs, so the tables of several runs combine exactly.

    python validation/merge_power_runs.py run1.txt run2.txt ... > merged.txt
"""

from __future__ import annotations

import re
import sys

from local_power_study import CELLS, Tally, clopper_pearson  # noqa: F401

COLUMNS = ("verdict", "old", "z-Bonf", "chi2", "LR")


def rows(path: str) -> dict[str, dict]:
    out = {}
    for line in open(path):
        parts = line.split()
        if len(parts) < 13 or parts[0] not in {c.name for c in CELLS}:
            continue
        runs = int(parts[1])
        rates = [float(parts[2])] + [float(v) for v in parts[5:9]]
        agree = re.match(r"(\d+)/(\d+)", parts[12])
        out[parts[0]] = {"runs": runs, "counts": [round(r * runs) for r in rates],
                         "agree": tuple(int(v) for v in agree.groups()) if agree else (0, 0)}
    return out


def main() -> None:
    total: dict[str, dict] = {}
    for path in sys.argv[1:]:
        for cell, row in rows(path).items():
            t = total.setdefault(cell, {"runs": 0, "counts": [0] * 5, "agree": (0, 0)})
            t["runs"] += row["runs"]
            t["counts"] = [a + b for a, b in zip(t["counts"], row["counts"])]
            t["agree"] = (t["agree"][0] + row["agree"][0], t["agree"][1] + row["agree"][1])
    print("local_power_study.py, runs over disjoint data-set ranges added up "
          f"({', '.join(sys.argv[1:])}); alpha = 0.05")
    print(f"{'cell':<24}{'runs':>5}{'verdict':>9}  {'95% CI':<15}{'old':>7}{'z-Bonf':>8}"
          f"{'chi2':>7}{'LR':>7}{'best':>7}{'ratio':>7}{'ok':>4}  {'agree':<10}")
    for cell in CELLS:
        t = total.get(cell.name)
        if t is None:
            continue
        runs = t["runs"]
        verdict, old, *base = (c / runs for c in t["counts"])
        best = max(base)
        low, high = clopper_pearson(t["counts"][0], runs)
        agree = f"{t['agree'][0]}/{t['agree'][1]}" if t["agree"][1] else "-"
        print(f"{cell.name:<24}{runs:>5}{verdict:>9.3f}  [{low:.2f}, {high:.2f}]  {old:>6.3f}"
              f"{base[0]:>8.3f}{base[1]:>7.3f}{base[2]:>7.3f}{best:>7.3f}"
              f"{verdict / best:>7.2f}{'yes' if verdict >= 0.85 * best else 'NO':>4}  {agree:<10}")


if __name__ == "__main__":
    main()
