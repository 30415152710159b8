"""Operand generators: named corner classes, biased random codes, exhaustive grids. Fixed seeds."""

from __future__ import annotations


import numpy as np

from fpforge.rtl.format_names import resolve


def corner_codes(fmt) -> list[int]:
    """Zeros, subnormal edges, min/max normal and neighbours, one, infinities, NaNs (both signs)."""
    fmt = resolve(fmt)
    M, ones = fmt.man_bits, fmt.exp_all_ones
    mags = {0, 1, 2, (1 << M) - 1 if M else 0, fmt.min_normal_code, fmt.min_normal_code + 1,
            fmt.max_finite_code, fmt.max_finite_code - 1, fmt.max_finite_code - (1 << M),
            fmt.bias << M, (fmt.bias << M) + 1, (fmt.bias << M) - 1, ((fmt.bias + 1) << M) | 1,
            ((fmt.bias - 1) << M) | ((1 << M) - 1)}
    if fmt.has_inf:
        mags |= {ones << M, (ones << M) | 1, fmt.magnitude_mask, fmt.inf_code}
        if M:
            mags.add((ones << M) | (1 << (M - 1)))
    if fmt.nan_code is not None:
        mags.add(fmt.nan_code & fmt.magnitude_mask)
    mags = {m for m in mags if 0 <= m <= fmt.magnitude_mask}
    codes = set(mags)
    if fmt.signed:
        codes |= {m | fmt.sign_mask for m in mags}
    return sorted(codes)


def random_codes(fmt, n, seed) -> np.ndarray:
    """Uniform codes, half of them with exponents near the middle or the edges of the range."""
    fmt = resolve(fmt)
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 1 << fmt.width, n, dtype=np.int64)
    M = fmt.man_bits
    edge = rng.choice(np.array(sorted({0, 1, 2, fmt.bias - 1, fmt.bias, fmt.bias + 1,
                                       fmt.exp_all_ones - 1, fmt.exp_all_ones}) , np.int64),
                      n // 2)
    edge = np.clip(edge, 0, fmt.exp_all_ones)
    codes[: n // 2] = (codes[: n // 2] & ~(fmt.exp_all_ones << M)) | (edge << M)
    return codes


def pairs(codes_a, codes_b=None):
    codes_b = codes_a if codes_b is None else codes_b
    a, b = np.meshgrid(np.asarray(codes_a, np.int64), np.asarray(codes_b, np.int64),
                       indexing="ij")
    return a.ravel(), b.ravel()


def all_codes(fmt) -> np.ndarray:
    return np.arange(1 << resolve(fmt).width, dtype=np.int64)


def exhaustive_pairs(fmt):
    return pairs(all_codes(fmt))


def triples(codes, n, seed):
    rng = np.random.default_rng(seed)
    codes = np.asarray(codes, np.int64)
    return tuple(rng.choice(codes, n) for _ in range(3))


def binary_vectors(fmt, n_random, seed):
    """Every pair of corner codes, plus n_random biased random pairs, plus cancellations."""
    fmt = resolve(fmt)
    ca, cb = pairs(corner_codes(fmt))
    ra, rb = random_codes(fmt, n_random, seed), random_codes(fmt, n_random, seed + 1)
    # Cancellation: b = -(a +- a few ulps) (same exponent, exponent difference 0 or 1).
    rng = np.random.default_rng(seed + 2)
    base = random_codes(fmt, n_random // 4, seed + 3)
    delta = rng.integers(-3, 4, base.size)
    mag = np.clip((base & fmt.magnitude_mask) + delta, 0, fmt.max_finite_code)
    cancel_b = mag | ((base & fmt.sign_mask) ^ fmt.sign_mask)
    a = np.concatenate([ca, ra, base])
    b = np.concatenate([cb, rb, cancel_b])
    return a, b
