"""amax's stimulus (rtl/amax.py): blocks of n codes where the largest magnitude is decided late.

- ``corners`` (``count`` blocks): lanes drawn from the corner classes (zeros, subnormals, max
  normal, infinities, quiet and signaling NaNs, both signs); a quarter with one NaN among
  numbers, a few all NaN, all zeros of either sign;
- ``random`` (``count`` blocks): a third uniform codes, a third normals within a few binades of
  each other, a third with the block's largest magnitude repeated negated in another lane.
"""

from __future__ import annotations

import numpy as np

from fpforge.rtl.amax import AmaxSpec

from .base import unknown_part
from .scalar import Corner, corner_codes, random_normals

__all__ = ["AMAX_PARTS", "amax_part"]

AMAX_PARTS = ("corners", "random")


def _corner_blocks(spec: AmaxSpec, rng, count: int) -> np.ndarray:
    fmt, n = spec.fmt, spec.n
    classes = corner_codes(fmt, rng, mids=8)
    every = np.array(sorted({c for cs in classes.values() for c in cs}), dtype=np.uint32)
    x = rng.choice(every, (count, n))
    q = count // 4
    nans = classes.get(Corner.QNAN, []) + classes.get(Corner.SNAN, [])
    if nans:
        rows = np.arange(q, 2 * q)
        x[rows] = random_normals(fmt, rng, q * n).reshape(q, n)
        x[rows, rng.integers(0, n, q)] = rng.choice(np.array(nans, np.uint32), q)
        x[2 * q:2 * q + 8] = rng.choice(np.array(nans, np.uint32), (min(8, count - 2 * q), n))
    zeros = classes.get(Corner.ZERO, [0])
    k = min(8, max(0, count - 2 * q - 8))
    x[count - k:] = rng.choice(np.array(zeros, np.uint32), (k, n))
    return x


def _random_blocks(spec: AmaxSpec, rng, count: int) -> np.ndarray:
    fmt, n = spec.fmt, spec.n
    t = count // 3
    uniform = rng.integers(0, 1 << fmt.width, (count - 2 * t, n), dtype=np.uint64)
    base = random_normals(fmt, rng, t)
    e0 = (base.astype(np.int64) & fmt.magnitude_mask) >> fmt.man_bits
    near = random_normals(fmt, rng, t * n, exp=np.repeat(e0, n) + rng.integers(-2, 3, t * n))
    twin = random_normals(fmt, rng, t * n).reshape(t, n)
    if fmt.signed:
        mag = twin & np.uint32(fmt.magnitude_mask)
        top = np.argmax(mag, axis=1)
        other = (top + 1 + rng.integers(0, n - 1, t)) % n
        twin[np.arange(t), other] = twin[np.arange(t), top] ^ np.uint32(fmt.sign_mask)
    return np.concatenate([uniform.astype(np.uint32), near.reshape(t, n), twin]).astype(np.uint32)


def amax_part(spec: AmaxSpec, name: str, params: dict, rng) -> dict:
    count = int(params.get("count", 4096))
    if name == "corners":
        x = _corner_blocks(spec, rng, count)
    elif name == "random":
        x = _random_blocks(spec, rng, count)
    else:
        raise unknown_part(spec, name, AMAX_PARTS)
    return {"x": x[rng.permutation(len(x))]}
