"""(g) Where the golden model deliberately differs from ml_dtypes (docs/numerics.md), pinned.

Each test shows both sides: the golden answer equals the exact oracle, and ml_dtypes really does
answer otherwise (so the pin notices if either side changes).
"""

from __future__ import annotations

from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from oracles import exact
from oracles.compare import check_candidate, golden_module
from oracles.references import f32_bits, ml_encode
from fpforge.rtl.format_names import resolve

E8M0 = resolve("float8_e8m0fnu")


def _golden_convert_f32(x, name, **kw):
    from oracles.compare import golden_apply
    return golden_apply("convert", f32_bits(x), fmts=("float32", name), **kw)


def test_e8m0_ties_go_to_the_even_code():
    ties = np.array([1.5 * 2.0 ** k for k in range(-126, 127)], np.float32)
    codes, flags = _golden_convert_f32(ties, "float8_e8m0fnu")
    expected = exact.apply("convert", f32_bits(ties), fmts=("float32", "float8_e8m0fnu"))
    assert np.array_equal(codes, expected[0]) and np.array_equal(flags, expected[1])
    assert np.all(codes % 2 == 0) and np.all(flags == exact.NX)
    # The documented example: 3.0 -> 2.0 here, 4.0 in ml_dtypes (ties away / up).
    three = np.array([3.0], np.float32)
    assert E8M0.code_value(int(_golden_convert_f32(three, "float8_e8m0fnu")[0][0])) == 2
    assert E8M0.code_value(int(ml_encode(three, "float8_e8m0fnu")[0])) == 4
    ml = ml_encode(ties, "float8_e8m0fnu")
    assert np.count_nonzero(ml != codes) == np.count_nonzero(ml % 2 == 1) > 100


@pytest.mark.parametrize("name", ["float4_e2m1fn", "float6_e3m2fn", "float6_e2m3fn"])
def test_nan_into_fp4_fp6_is_plus_zero_and_invalid(name):
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF], np.uint32).view(np.float32)
    codes, flags = _golden_convert_f32(nans, name)
    expected = exact.apply("convert", f32_bits(nans), fmts=("float32", name))
    assert np.array_equal(codes, expected[0]) and np.array_equal(flags, expected[1])
    assert np.all(codes == 0) and np.all(flags == exact.NV)
    # ml_dtypes gives a zero whose sign depends on the NaN's: not always +0.
    ml = ml_encode(nans, name)
    fmt = resolve(name)
    assert all(fmt.code_value(int(c)) == 0 for c in ml)
    assert np.any(ml == fmt.sign_mask)


def test_nan_product_into_fp4_is_plus_zero_and_invalid():
    # float16 NaN * 1 written into FP4: the NaN result has no code.
    check_candidate("golden", "mul", (np.array([0x7E00, 0x7C01, 0xFE00]), np.array([0x3C00] * 3)),
                    ("float16", "float16", "float4_e2m1fn"),
                    exact.apply("mul", np.array([0x7E00, 0x7C01, 0xFE00]),
                                np.array([0x3C00] * 3),
                                fmts=("float16", "float16", "float4_e2m1fn")),
                    label="NaN product into fp4")


def test_float64_double_rounding_is_not_reproduced():
    """ml_dtypes: float64 -> float32 -> e4m3fn gives 1.0 for 1 + 2^-4 + 2^-30; correct is 1.125.

    The golden model must either round the float64 value exactly once or refuse float64."""
    x = 1 + 2 ** -4 + 2 ** -30
    fmt = resolve("float8_e4m3fn")
    ml = np.array([x], np.float64).astype(ml_dtypes.float8_e4m3fn).view(np.uint8)
    assert fmt.code_value(int(ml[0])) == 1
    code, flags = exact.convert_float(x, fmt)
    assert fmt.code_value(code) == Fraction(9, 8) and flags == exact.NX
    golden = golden_module()
    try:
        q = np.asarray(golden.quantize(np.array([x], np.float64), "float8_e4m3fn"))
    except TypeError as err:
        assert "float64" in str(err)
    else:
        assert int(q[0]) == code
    # The same rounding from an exactly representable float32 (1 + 2^-4 + 2^-20).
    y = np.array([1 + 2 ** -4 + 2 ** -20], np.float32)
    got, gflags = _golden_convert_f32(y, "float8_e4m3fn")
    want = exact.convert_float(float(y[0]), fmt)
    assert (int(got[0]), int(gflags[0])) == want and fmt.code_value(want[0]) == Fraction(9, 8)


def test_float32_subnormals_into_e8m0():
    """ml_dtypes rounds float32 subnormals just above 2^-127 (1.0000002 * 2^-127) up to 2^-126;
    the nearest E8M0 value is 2^-127 (code 0)."""
    x = np.array([0x00400001, 0x004FB57E, 0x003C2EFC, 0x00400000, 0x00000001],
                 np.uint32).view(np.float32)
    codes, flags = _golden_convert_f32(x, "float8_e8m0fnu")
    expected = exact.apply("convert", f32_bits(x), fmts=("float32", "float8_e8m0fnu"))
    assert np.array_equal(codes, expected[0]) and np.array_equal(flags, expected[1])
    assert not np.any(codes == E8M0.nan_code)
    ml = ml_encode(x, "float8_e8m0fnu")
    assert ml[0] == 1 and codes[0] == 0          # 2^-126 vs the nearest, 2^-127


def test_quantize_matches_convert_and_dequantize_matches_decode():
    golden = golden_module()
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(4000) * 2.0 ** rng.integers(-20, 20, 4000)).astype(np.float32)
    for name in ("float8_e4m3fn", "float8_e5m2", "float4_e2m1fn", "float8_e8m0fnu"):
        fmt = resolve(name)
        xs = np.abs(x) if name == "float8_e8m0fnu" else x
        q = np.asarray(golden.quantize(xs, name)).astype(np.int64)
        c, _ = _golden_convert_f32(xs, name)
        assert np.array_equal(q, c), name
        codes = np.arange(1 << fmt.width)
        d = np.asarray(golden.dequantize(codes.astype(np.uint8), name), np.float32)
        for code, v in zip(codes, d):
            want = fmt.code_value(int(code))
            if want != want:
                assert np.isnan(v), (name, code)
            else:
                assert float(v) == float(want) and np.signbit(v) == np.signbit(float(want)), \
                    (name, hex(code), v, want)
        fq = np.asarray(golden.fake_quantize(xs, name), np.float32)
        back = np.asarray(golden.dequantize(q.astype(np.uint8), name), np.float32)
        assert np.array_equal(fq, back, equal_nan=True), name

