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


def one_seed(default: object = 0, **given: object) -> object:
    """The seed passed under one of several names (``random_state``, scikit-learn's name
    and calaudit's; ``rng``, scipy's; ``seed``, the configuration key), or ``default``.

    Passing more than one is an error: ``one_seed(random_state=None, rng=3) == 3``.
    """
    from calaudit.exceptions import ConfigError

    chosen = {name: value for name, value in given.items() if value is not None}
    if len(chosen) > 1:
        raise ConfigError(f"pass the seed once, as random_state; got {', '.join(chosen)}")
    return next(iter(chosen.values()), default)
