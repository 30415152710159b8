"""(b) float16 / float32 mul, add, sub, fma and the f32<->f16, f32->bf16 conversions against
Berkeley SoftFloat (softfloatpy) in the five IEEE modes: results and flags, tininess after
rounding. NaN results compare as "both NaN" (SoftFloat's default NaN is not RISC-V's).
"""

from __future__ import annotations

import numpy as np
import pytest

from oracles.compare import check_candidate
from oracles.references import softfloat_apply
from oracles.vectors import binary_vectors, corner_codes, random_codes, triples
from fpforge.rtl.formats import CATALOG

MODES = ["rne", "rtz", "rdn", "rup", "rna"]
# The oracle's self-check runs in rne and rup by default; its other modes under -m slow.
CANDIDATES = ["golden", "oracle"]


def tiered(candidate, mode):
    slow = candidate == "oracle" and mode not in ("rne", "rup")
    return pytest.param(candidate, mode, id=f"{mode}-{candidate}",
                        marks=pytest.mark.slow if slow else ())


CAND_MODES = [tiered(c, m) for m in MODES for c in CANDIDATES]


def _ties_and_thresholds(name, seed):
    """Products that are exact ties or sit on the overflow / underflow thresholds."""
    fmt = CATALOG[name]
    M = fmt.man_bits
    rng = np.random.default_rng(seed)
    # (1 + k/2^M) * (1 + 2^-1): the product has M+2 significant bits -> ties when k is odd.
    k = rng.integers(0, 1 << M, 200)
    a = (fmt.bias << M) + k
    b = np.full(200, (fmt.bias << M) | (1 << (M - 1)))
    # Scale one operand to land near max finite and near min normal.
    hi = a + ((fmt.exp_all_ones - 1 - fmt.bias) << M)           # ~ 2^emax
    lo = np.clip(a - ((fmt.bias - 1) << M), 0, None) | (1 << M)   # ~ 2^emin
    near_one_below = np.full(200, ((fmt.bias - 1) << M) | ((1 << M) - 1)) - rng.integers(0, 3, 200)
    sub = rng.integers(1, 1 << M, 200)                           # subnormals
    return (np.concatenate([a, hi, hi, lo, lo, sub]),
            np.concatenate([b, b, b ^ 0, near_one_below, b, b]))


def binary_cases(name, candidate):
    a, b = binary_vectors(name, 600 if candidate == "oracle" else 3000, seed=11)
    ta, tb = _ties_and_thresholds(name, seed=12)
    return np.concatenate([a, ta]), np.concatenate([b, tb])


@pytest.mark.parametrize("candidate, mode", CAND_MODES)
@pytest.mark.parametrize("op", ["mul", "add", "sub"])
@pytest.mark.parametrize("name", ["float16", "float32"])
def test_binary_ops(name, op, mode, candidate):
    a, b = binary_cases(name, candidate)
    expected = softfloat_apply(op, a, b, fmts=(name, name, name), rounding=mode)
    check_candidate(candidate, op, (a, b), (name, name, name), expected, rounding=mode,
                    label=f"{op} {name} {mode} vs SoftFloat", nan="both")


@pytest.mark.parametrize("candidate, mode", CAND_MODES)
@pytest.mark.parametrize("name", ["float16", "float32"])
def test_fma(name, mode, candidate):
    corners = corner_codes(name)
    n = 1500 if candidate == "oracle" else 6000
    a, b, c = triples(corners, n // 3, seed=21)
    ra, rb, rc = (random_codes(name, n, seed=22 + i) for i in range(3))
    # c close to -(a*b): cancellation inside the fma.
    fa, fb = random_codes(name, n // 3, 30), random_codes(name, n // 3, 31)
    prod, _ = softfloat_apply("mul", fa, fb, fmts=(name,) * 3, rounding="rtz")
    fmt = CATALOG[name]
    fc = (prod ^ fmt.sign_mask) + np.random.default_rng(32).integers(-2, 3, prod.size)
    fc = np.clip(fc, 0, (1 << fmt.width) - 1)
    a, b, c = (np.concatenate(x) for x in ((a, ra, fa), (b, rb, fb), (c, rc, fc)))
    expected = softfloat_apply("fma", a, b, c, fmts=(name,) * 4, rounding=mode)
    check_candidate(candidate, "fma", (a, b, c), (name,) * 4, expected, rounding=mode,
                    label=f"fma {name} {mode} vs SoftFloat", nan="both")


CONVERSIONS = [("float32", "float16"), ("float32", "bfloat16"), ("float16", "float32"),
               ("bfloat16", "float32")]


def conversion_inputs(src, dst, candidate):
    fs, fd = CATALOG[src], CATALOG[dst]
    if fs.width < fd.width:
        return np.concatenate([np.array(corner_codes(src)), random_codes(src, 3000, 41)])
    # Narrowing float32: every target value's float32 neighbourhood (ties, ties +- 1 ulp),
    # overflow thresholds and the subnormal range, plus random patterns.
    shift = fs.man_bits - fd.man_bits
    rng = np.random.default_rng(42)
    n = 800 if candidate == "oracle" else 6000
    target = random_codes(dst, n, 43).astype(np.int64)
    exp_shift = fs.bias - fd.bias
    mag = target & fd.magnitude_mask
    e = mag >> fd.man_bits
    f = mag & ((1 << fd.man_bits) - 1)
    e_src = np.where(e == 0, 0, e + exp_shift)
    base = (e_src << fs.man_bits) | (f << shift)
    base = np.where(e == 0, 0, base)
    low = rng.choice([0, 1 << (shift - 1), (1 << (shift - 1)) - 1, (1 << (shift - 1)) + 1,
                      (1 << shift) - 1, 1], n)
    codes = (base + low) | np.where(target & fd.sign_mask, fs.sign_mask, 0)
    # Below the target's normal range: exponents down to its subnormals and past them.
    tiny_e = rng.integers(max(1, fs.bias + fd.emin - fd.man_bits - 3), fs.bias + fd.emin + 1, n)
    tiny = (tiny_e << fs.man_bits) | rng.integers(0, 1 << fs.man_bits, n)
    codes = np.concatenate([codes, tiny, np.array(corner_codes(src)),
                            random_codes(src, n // 2, 44)])
    return codes & ((1 << fs.width) - 1)


@pytest.mark.parametrize("candidate, mode", CAND_MODES)
@pytest.mark.parametrize("src, dst", CONVERSIONS, ids=[f"{s}-{d}" for s, d in CONVERSIONS])
def test_conversions(src, dst, mode, candidate):
    x = conversion_inputs(src, dst, candidate)
    expected = softfloat_apply("convert", x, fmts=(src, dst), rounding=mode)
    check_candidate(candidate, "convert", (x,), (src, dst), expected, rounding=mode,
                    label=f"{src} -> {dst} {mode} vs SoftFloat", nan="both")


@pytest.mark.parametrize("candidate", CANDIDATES)
@pytest.mark.parametrize("name", ["float16", "float32"])
def test_dynamic_rm_matches_softfloat_per_element(name, candidate):
    """One call with a per-element rm array equals five static SoftFloat runs."""
    a, b = binary_cases(name, "oracle")
    rm = np.random.default_rng(51).integers(0, 5, a.size)
    exp_codes = np.zeros(a.size, np.int64)
    exp_flags = np.zeros(a.size, np.int64)
    for code, mode in enumerate(MODES):
        sel = rm == code
        c, f = softfloat_apply("mul", a[sel], b[sel], fmts=(name,) * 3, rounding=mode)
        exp_codes[sel], exp_flags[sel] = c, f
    check_candidate(candidate, "mul", (a, b), (name,) * 3, (exp_codes, exp_flags),
                    rounding="dynamic", rm=rm, label=f"mul {name} dynamic vs SoftFloat",
                    nan="both")
