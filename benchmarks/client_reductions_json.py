"""Check: the audit's JSON is the same bytes in one process and on ``--workers 1`` and
``--workers 2``, and on 1, 3 and 7 Parquet partitions, at a size with several reduction
ranges (the clinical fits and their bootstrap replicates, the group moments).

    python benchmarks/client_reductions_json.py [ROWS]

The data are ``benchmarks/scale_rows.py``'s (binary, ``age`` numeric, ``region`` with 4
levels); the command is ``calaudit test --ci`` (so the clinical bootstrap runs) with small
resample counts. ``created_at``, ``runtime_seconds`` and ``inputs`` (the file list) are
left out of the comparison.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from scale_rows import make_data  # noqa: E402


def run(data: Path, out: Path, extra: list[str]) -> str:
    command = [sys.executable, "-m", "calaudit", "test", str(data), "--covariates",
               "age,region", "--ci", "--n-resamples", "200", "--local-resamples", "49",
               "--seed", "5", "--json", str(out), "-q", "--exit-zero", *extra]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subprocess.run(command, check=True, env=env)
    payload = json.loads(out.read_text())
    for volatile in ("created_at", "runtime_seconds", "inputs", "config_sources"):
        payload.pop(volatile, None)
    return json.dumps(payload, sort_keys=True)


def main() -> int:
    n = int(float(sys.argv[1])) if len(sys.argv) > 1 else 150_000
    digests = {}
    with tempfile.TemporaryDirectory() as tmp:
        whole = Path(tmp) / "rows.parquet"
        make_data(n, whole)
        frame = pd.read_parquet(whole)
        for parts in (1, 3, 7):
            folder = Path(tmp) / f"p{parts}"
            folder.mkdir()
            for j in range(parts):
                lo, hi = n * j // parts, n * (j + 1) // parts
                frame.iloc[lo:hi].to_parquet(folder / f"part-{j}.parquet", index=False)
        runs = [("1 file, one process", whole, []),
                ("3 files, one process", Path(tmp) / "p3", []),
                ("7 files, one process", Path(tmp) / "p7", []),
                ("1 file, --workers 1", whole, ["--workers", "1"]),
                ("7 files, --workers 2", Path(tmp) / "p7", ["--workers", "2"])]
        for label, data, extra in runs:
            started = time.perf_counter()
            text = run(data, Path(tmp) / "r.json", extra)
            digests[label] = hashlib.sha256(text.encode()).hexdigest()[:16]
            print(f"{label:<24} sha256 {digests[label]}  ({time.perf_counter() - started:.0f} s)",
                  flush=True)
    same = len(set(digests.values())) == 1
    print(f"{n:,} rows ({-(-n // 65536)} reduction ranges): JSON "
          + ("identical in every run" if same else "DIFFERS"))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
