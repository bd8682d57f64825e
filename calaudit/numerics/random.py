"""Random streams derived from the one user seed.

Every stage of an audit draws from its own generator, keyed by the seed and a stable name,
so adding or reordering stages never changes another stage's numbers.
"""

from __future__ import annotations

import zlib

import numpy as np


def stream(seed: int, name: str) -> np.random.Generator:
    """A PCG64 generator seeded by ``(seed, crc32(name))``: same inputs, same stream."""
    return np.random.default_rng([int(seed), zlib.crc32(name.encode("utf-8"))])
