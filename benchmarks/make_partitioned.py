"""Write a seeded, partitioned predictions dataset for the scaling benchmarks.

    python benchmarks/make_partitioned.py OUT_DIR --rows 1e7 --files 20
    python benchmarks/make_partitioned.py OUT_DIR --rows 1e6 --files 7 --format csv
    python benchmarks/make_partitioned.py OUT_DIR --rows 1e6 --files 4 --layout hive

Columns (the model of benchmarks/scale_rows.py): ``label`` (int8), ``prob`` (float64),
``age ~ U(20, 80)`` (a numeric covariate) and ``region`` (a categorical covariate, one of
north/south/east/west). ``p = sigmoid(-1 + 0.03 (age - 50) + N(0, 1))`` and
``y ~ Bernoulli(p)``, except that region ``east`` is biased: its labels come from
``p + 0.03`` (clipped), so an audit has something to find.

Rows are generated in fixed blocks of ``BLOCK`` rows, each from a generator keyed by
``(seed, block)``, and then cut into ``--files`` files of (nearly) equal size. So the
dataset's rows, in global order, do not depend on the number of files: 1, 3, 7 or 20 files
hold the same table (the partition-invariance benchmark relies on this). Memory stays at
one block. ``--layout hive`` writes ``part=KK/part-KKKKK.parquet`` directories (``part`` then
becomes a column); the default is flat ``part-KKKKK.parquet`` files.

Importable: ``write_dataset(out, rows, files, fmt="parquet", layout="flat", seed=...)``
returns the file paths in row order.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

#: Rows generated per seeded block (a constant, so the rows never depend on --files).
BLOCK = 1 << 20
SEED = 20261122
REGIONS = np.array(["north", "south", "east", "west"])


def block_table(block: int, start: int, stop: int, seed: int = SEED) -> pa.Table:
    """Rows ``start .. stop`` (global, within block ``block``) as an Arrow table."""
    rng = np.random.default_rng([seed, block])
    size = BLOCK
    age = rng.uniform(20, 80, size)
    region_code = rng.integers(0, len(REGIONS), size)
    p = 1.0 / (1.0 + np.exp(-(-1.0 + 0.03 * (age - 50) + rng.normal(0, 1, size))))
    truth = np.where(region_code == 2, np.minimum(p + 0.03, 1.0), p)
    y = (rng.random(size) < truth).astype(np.int8)
    lo, hi = start - block * BLOCK, stop - block * BLOCK
    return pa.table({"label": y[lo:hi], "prob": p[lo:hi], "age": age[lo:hi],
                     "region": pa.array(REGIONS[region_code[lo:hi]], pa.string())})


def rows_of(index: int, rows: int, files: int) -> tuple[int, int]:
    """Global row range of file ``index`` (sizes differ by at most one row)."""
    return index * rows // files, (index + 1) * rows // files


def write_dataset(out: Path, rows: int, files: int, fmt: str = "parquet",
                  layout: str = "flat", seed: int = SEED) -> list[Path]:
    """Write the dataset; returns the file paths in row order."""
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for index in range(files):
        start, stop = rows_of(index, rows, files)
        folder = out / f"part={index:02d}" if layout == "hive" else out
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"part-{index:05d}.{fmt}"
        _write_file(path, start, stop, fmt, seed)
        paths.append(path)
    return paths


def _write_file(path: Path, start: int, stop: int, fmt: str, seed: int) -> None:
    schema = block_table(0, 0, 0, seed).schema
    writer = (pq.ParquetWriter(path, schema) if fmt == "parquet"
              else pacsv.CSVWriter(str(path), schema))
    with writer:
        row = start
        while row < stop:
            block = row // BLOCK
            upto = min(stop, (block + 1) * BLOCK)
            writer.write_table(block_table(block, row, upto, seed))
            row = upto


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--rows", type=float, default=1e7)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--format", choices=("parquet", "csv"), default="parquet")
    parser.add_argument("--layout", choices=("flat", "hive"), default="flat")
    parser.add_argument("--seed", type=int, default=SEED)
    args = parser.parse_args()
    paths = write_dataset(args.out, int(args.rows), args.files, args.format, args.layout,
                          args.seed)
    total = sum(p.stat().st_size for p in paths)
    print(f"wrote {len(paths)} files, {int(args.rows):,} rows, {total / 2**20:.1f} MiB "
          f"to {args.out}")


if __name__ == "__main__":
    main()
