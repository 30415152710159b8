"""Stimulus of the integer conversions beyond exhaustive (32-bit integers for i2f, 32-bit
formats for f2i): ``corners`` (the range's ends, powers of two and their neighbours, ties at the
rounding position) and ``random`` (a bit length drawn uniformly, so every binade is as likely,
a quarter of them exact ties)."""

from __future__ import annotations

import numpy as np

from fpforge.rtl.intconv import F2iSpec, I2fSpec

from .base import unknown_part
from .scalar import corner_codes

__all__ = ["INTCONV_PARTS", "intconv_part"]

INTCONV_PARTS = ("corners", "random")


def _as_bits(values, ints) -> np.ndarray:
    """Python or numpy integers in the integer format's range as its N-bit codes."""
    v = np.asarray(values, dtype=np.int64)
    return (v & ((1 << ints.width) - 1)).astype(np.uint32)


def _i2f_corners(spec: I2fSpec) -> np.ndarray:
    ints, p = spec.int_fmt, spec.out_fmt.precision
    mags = {0, 1, ints.hi, ints.hi - 1, -ints.lo}
    for k in range(ints.width):
        mags |= {1 << k, (1 << k) - 1, (1 << k) + 1}
        if k >= p:                     # the tie between two neighbours, and beside it
            tie = (1 << k) + (1 << (k - p))
            mags |= {tie, tie - 1, tie + 1, tie + (1 << (k - p + 1))}
    signs = (1, -1) if ints.signed else (1,)
    return _as_bits(sorted(s * m for m in mags for s in signs if ints.lo <= s * m <= ints.hi),
                    ints)


def _i2f_random(spec: I2fSpec, rng, n: int) -> np.ndarray:
    ints, p = spec.int_fmt, spec.out_fmt.precision
    bits = ints.width - (1 if ints.signed else 0)
    length = rng.integers(1, bits + 1, n)
    mag = rng.integers(0, 1 << 62, n, dtype=np.int64) & ((1 << length) - 1) | (1 << (length - 1))
    below = np.maximum(length - p, 0)              # bits below the result's LSB
    tie = (rng.random(n) < 0.25) & (below > 0)
    tied = (mag >> below << below) | (1 << np.maximum(below - 1, 0))
    mag = np.where(tie, tied, mag)
    sign = np.where(rng.random(n) < 0.5, -1, 1) if ints.signed else 1
    return _as_bits(sign * mag, ints)


def _f2i_codes(spec: F2iSpec, weights, fractions) -> np.ndarray:
    """Codes of ``spec``'s format whose leading one weighs ``weights`` (normal binades only),
    with the M-bit ``fractions``, both signs where there is one."""
    fmt = spec.in_fmt
    M = fmt.man_bits
    field = np.asarray(weights, np.int64) + fmt.bias
    ok = (field >= 1) & ((field << M) <= fmt.max_finite_code)
    codes = (field[ok] << M) | (np.asarray(fractions, np.int64)[ok] & ((1 << M) - 1))
    codes = codes[codes <= fmt.max_finite_code]
    if fmt.signed:
        codes = np.concatenate([codes, codes | fmt.sign_mask])
    return codes.astype(np.uint32)


def _f2i_corners(spec: F2iSpec, rng) -> np.ndarray:
    """The format's corner codes, and in every binade from 2^-2 to 2^(N+1): fractions zero,
    one, all ones and the tie at the integer point with its neighbours (the range's ends,
    2^(N-1) and 2^N, among them)."""
    fmt = spec.in_fmt
    M = fmt.man_bits
    weights, fractions = [], []
    for w in range(-2, spec.int_fmt.width + 2):
        point = M - w                  # fraction bits below the integer point
        pats = {0, 1, (1 << M) - 1}
        if 0 < point <= M:
            tie = 1 << (point - 1)
            pats |= {tie, tie - 1, tie + 1, (1 << M) - 1 - tie}
        weights += [w] * len(pats)
        fractions += sorted(pats)
    own = [c for cs in corner_codes(fmt, rng).values() for c in cs]
    return np.unique(np.concatenate([_f2i_codes(spec, weights, fractions),
                                     np.asarray(own, np.uint32)]))


def _f2i_random(spec: F2iSpec, rng, n: int) -> np.ndarray:
    """Half uniform codes, half in the binades an integer distinguishes (2^-2 .. 2^(N+1)), a
    quarter of these exact ties at the integer point."""
    fmt = spec.in_fmt
    M = fmt.man_bits
    m = n - n // 2
    w = rng.integers(-2, spec.int_fmt.width + 2, 4 * m)
    frac = rng.integers(0, 1 << max(M, 1), 4 * m, dtype=np.int64)
    point = np.clip(M - w, 1, M)
    tie = (rng.random(4 * m) < 0.25) & (M - w > 0)
    frac = np.where(tie, (frac >> point << point) | (1 << (point - 1)), frac)
    near = _f2i_codes(spec, w, frac)
    near = rng.permutation(near)[:m]
    uniform = rng.integers(0, 1 << fmt.width, n - len(near), dtype=np.uint64).astype(np.uint32)
    return rng.permutation(np.concatenate([near, uniform]))


def intconv_part(spec, name: str, params: dict, rng) -> dict:
    i2f = isinstance(spec, I2fSpec)
    if name == "corners":
        return {"a": _i2f_corners(spec) if i2f else _f2i_corners(spec, rng)}
    if name == "random":
        n = int(params["count"])
        return {"a": _i2f_random(spec, rng, n) if i2f else _f2i_random(spec, rng, n)}
    raise unknown_part(spec, name, INTCONV_PARTS)
