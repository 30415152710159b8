"""golden.mx_dot: the exact accumulator against Fractions, the fixed-width accumulator against
its stated rule written out in plain Python (oracles.mx_refs.dot_reference), and the special
cases."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from fpforge import golden
from fpforge.golden.dot import exact_limbs
from oracles.mx_refs import NV, dot_reference, grouped_dot_reference
from fpforge.rtl.formats import CATALOG
from fpforge.rtl.format_names import resolve
from fpforge.rtl.dot import DOT_N_RANGE
from fpforge.rtl.elements import element_format
from fpforge.sim.stimulus.dot import cancelling_rows as vectors

PAIRS = [("fp8e4m3", "fp8e4m3"), ("fp8e5m2", "fp8e5m2"), ("fp6e3m2", "fp6e2m3"),
         ("fp4e2m1", "fp4e2m1"), ("mxint8", "mxint8"), ("fp8e5m2", "fp4e2m1"),
         ("int4", "int4"), ("int4", "fp8e4m3"), ("fp8e4m3fnuz", "fp8e5m2fnuz")]
IDS = [f"{a}x{b}" for a, b in PAIRS]


def check(a, b, sa, sb, ea, eb, *, out="float32", accum="exact", frac_bits=24, rounding="rne"):
    y, f = golden.mx_dot(a, b, ea, eb, scales_a=sa, scales_b=sb, accum=accum,
                         frac_bits=frac_bits, out_fmt=out, rounding=rounding)
    y, f = np.asarray(y).astype(np.int64), np.asarray(f).astype(np.int64)
    fmt = CATALOG[out]
    for i in range(len(a)):
        want = dot_reference(a[i].tolist(), b[i].tolist(), ea, eb, int(sa[i]), int(sb[i]),
                             out_fmt=fmt, accum=accum, frac_bits=frac_bits, mode=rounding)
        assert (int(y[i]), int(f[i])) == want, (i, a[i], b[i], sa[i], sb[i])


@pytest.mark.parametrize("n", [32] + [pytest.param(n, marks=pytest.mark.slow) for n in (4, 8, 16)])
@pytest.mark.parametrize("ea,eb", PAIRS, ids=IDS)
def test_exact_matches_fractions(ea, eb, n):
    a, b, sa, sb = vectors(ea, eb, n, 64, seed=n * 7 + len(ea + eb))
    check(a, b, sa, sb, ea, eb)


@pytest.mark.parametrize("out,rounding", [("bfloat16", "rne"),
                                          pytest.param("float32", "rtz", marks=pytest.mark.slow),
                                          pytest.param("float16", "rdn", marks=pytest.mark.slow)])
def test_exact_other_outputs_and_modes(out, rounding):
    a, b, sa, sb = vectors("fp8e5m2", "fp8e4m3", 16, 64, seed=3)
    sa[:] = np.minimum(sa, 130)
    sb[:] = np.minimum(sb, 130)
    check(a, b, sa, sb, "fp8e5m2", "fp8e4m3", out=out, rounding=rounding)


def test_exact_limbs_frame():
    """The frame sizing of _exact_sum: only fp8e5m2 x fp8e5m2-like spans need two limbs."""
    assert exact_limbs(element_format("fp8e5m2"), element_format("fp8e5m2")) == 2
    assert exact_limbs(element_format("fp8e4m3"), element_format("fp8e4m3")) == 2
    assert exact_limbs(element_format("fp4e2m1"), element_format("mxint8")) == 1
    # the widest frame: e5m2 extremes cancelling leave the smallest product exact
    e5 = element_format("fp8e5m2").grid
    big, tiny = e5.max_finite_code, 1
    a = np.array([[big, big | 0x80, tiny, 0]], np.uint8)
    b = np.array([[big, big, tiny, 0]], np.uint8)
    y, f = golden.mx_dot(a, b, "fp8e5m2")
    assert np.asarray(y).view(np.float32)[0] == np.float32(2.0 ** -32) and int(f[0]) == 0


@pytest.mark.parametrize("frac_bits", [12] + [pytest.param(f, marks=pytest.mark.slow)
                                              for f in (4, 24, 40)])
@pytest.mark.parametrize("ea,eb", PAIRS[:5] + PAIRS[6:], ids=IDS[:5] + IDS[6:])
def test_fixed_matches_rule(ea, eb, frac_bits):
    a, b, sa, sb = vectors(ea, eb, 32, 48, seed=frac_bits + len(ea))
    check(a, b, sa, sb, ea, eb, accum="fixed", frac_bits=frac_bits)


def test_fixed_wide_equals_exact_when_nothing_is_cut():
    """With F at least the products' span the fixed accumulator drops nothing: same as exact."""
    a, b, sa, sb = vectors("fp4e2m1", "fp4e2m1", 32, 64, seed=1)
    y1, f1 = golden.mx_dot(a, b, "fp4e2m1", scales_a=sa, scales_b=sb, accum="fixed",
                           frac_bits=20)
    y2, f2 = golden.mx_dot(a, b, "fp4e2m1", scales_a=sa, scales_b=sb)
    np.testing.assert_array_equal(np.asarray(y1), np.asarray(y2))
    np.testing.assert_array_equal(np.asarray(f1), np.asarray(f2))


def test_specials():
    e4, e5 = 0x7F, 0x7C                           # e4m3 NaN, e5m2 +inf
    one4, one5 = 0x38, 0x3C                       # 1.0
    a = np.array([[e4, one4], [one4, one4], [one4, one4], [0x00, one4]], np.uint8)
    b = np.array([[one4, one4], [one4, one4], [one4, one4], [one4, one4]], np.uint8)
    y, f = golden.mx_dot(a, b, "fp8e4m3", scales_a=np.array([127, 255, 127, 127], np.uint8))
    y = np.asarray(y).view(np.float32)
    assert np.isnan(y[0]) and np.isnan(y[1]) and y[2] == 2.0 and y[3] == 1.0
    assert not (np.asarray(f) & NV).any()
    # e5m2: inf - inf and 0 x inf are invalid; inf + finite is inf; an sNaN raises invalid
    a = np.array([[e5, e5 | 0x80], [e5, one5], [0x00, one5], [e5, one5], [0x7D, one5]], np.uint8)
    b = np.array([[one5, one5], [0x00, one5], [e5, one5], [one5, one5], [one5, one5]], np.uint8)
    y, f = golden.mx_dot(a, b, "fp8e5m2")
    y, f = np.asarray(y).view(np.float32), np.asarray(f)
    assert np.isnan(y[:3]).all() and (f[:3] & NV).all()
    assert y[3] == np.inf and f[3] == 0
    assert np.isnan(y[4]) and f[4] & NV
    # signed zeros: all products -0 gives -0; cancellation gives +0 (-0 under rdn)
    z = np.array([[0x80, 0x80], [0x38, 0xB8]], np.uint8)
    o = np.array([[0x38, 0x38], [0x38, 0x38]], np.uint8)
    y = np.asarray(golden.mx_dot(z, o, "fp8e4m3")[0])
    assert list(y) == [0x8000_0000, 0]
    y = np.asarray(golden.mx_dot(z, o, "fp8e4m3", rounding="rdn")[0])
    assert list(y) == [0x8000_0000, 0x8000_0000]


def test_batch_axes_and_errors():
    a, b, sa, sb = vectors("fp8e4m3", "fp8e4m3", 8, 12, seed=2)
    y, f = golden.mx_dot(a.reshape(3, 4, 8), b.reshape(3, 4, 8), "fp8e4m3",
                         scales_a=sa.reshape(3, 4), scales_b=sb.reshape(3, 4))
    y2, _ = golden.mx_dot(a, b, "fp8e4m3", scales_a=sa, scales_b=sb)
    assert np.asarray(y).shape == (3, 4)
    np.testing.assert_array_equal(np.asarray(y).reshape(-1), np.asarray(y2))
    with pytest.raises(ValueError, match=r"^accumulator must be one of exact, fixed, not "
                       r"'kahan'$"):
        golden.mx_dot(a, b, "fp8e4m3", accum="kahan")
    with pytest.raises(ValueError, match=r"^frac_bits must be an integer 1\.\.55, not 60$"):
        golden.mx_dot(a, b, "fp8e4m3", accum="fixed", frac_bits=60)
    with pytest.raises(ValueError, match=r"^the dot unit takes a static rounding mode \(rne, rtz, "
                       r"rdn, rup, rna, rod\), not 'stochastic'$"):
        golden.mx_dot(a, b, "fp8e4m3", rounding="stochastic")
    with pytest.raises(ValueError, match=r"^mx_dot needs vectors of equal length 1\.\.64 on "
                       r"the last axis, not shapes \(12, 8\) and \(12, 4\)$"):
        golden.mx_dot(a, b[:, :4], "fp8e4m3")
    wide = np.zeros((2, 65), np.uint8)
    with pytest.raises(ValueError, match=r"^mx_dot needs vectors of equal length 1\.\.64 on "
                       r"the last axis, not shapes \(2, 65\) and \(2, 65\)$"):
        golden.mx_dot(wide, wide, "fp8e4m3")


@pytest.mark.parametrize("n", DOT_N_RANGE)
def test_shortest_and_longest_vectors(n):
    """The bounds of rtl.mx.DOT_N_RANGE, both accumulators, against the Fraction reference."""
    a, b, sa, sb = vectors("fp8e4m3", "mxint8", n, 16, seed=n)
    check(a, b, sa, sb, "fp8e4m3", "mxint8")
    check(a, b, sa, sb, "fp8e4m3", "mxint8", accum="fixed", frac_bits=12)


# ----- value scales (NVFP4's UE4M3, P3109's Binary8p1uf) ------------------------------------------

def _scale_value(code: int, fmt) -> Fraction:
    """A scale code's value, on Fractions."""
    sign = -1 if fmt.signed and code & fmt.sign_mask else 1
    code &= fmt.magnitude_mask
    e, f = code >> fmt.man_bits, code & ((1 << fmt.man_bits) - 1)
    if e == 0:
        return sign * Fraction(f, 1 << fmt.man_bits) * Fraction(2) ** fmt.emin
    return sign * (1 + Fraction(f, 1 << fmt.man_bits)) * Fraction(2) ** (e - fmt.bias)


@pytest.mark.parametrize("scale_fmt,ea,eb,accum", [
    ("float8_e4m3fn", "fp4e2m1", "fp4e2m1", "exact"),
    ("float8_e4m3fn", "fp8e4m3", "fp8e4m3", "exact"),
    ("float8_e4m3fn", "fp8e5m2", "fp4e2m1", "fixed"),
    ("binary8p1uf", "fp6e3m2", "fp6e2m3", "exact"),
    ("binary8p1uf", "fp8e5m2", "fp8e5m2", "exact"),      # the two-limb sum's 64-bit window
])
def test_value_scales_match_fractions(scale_fmt, ea, eb, accum):
    fmt = resolve(scale_fmt)
    a, b, _, _ = vectors(ea, eb, 16, 64, seed=len(ea + eb + scale_fmt))
    rng = np.random.default_rng(5)
    finite = [c for c in range(1 << fmt.width) if (c & fmt.magnitude_mask) !=
              (fmt.nan_code & fmt.magnitude_mask)]
    sa, sb = rng.choice(finite, len(a)), rng.choice(finite, len(a))
    sa[:3], sb[:3] = [0, fmt.max_finite_code, 1], [fmt.max_finite_code, 0, 1]
    y, f = golden.mx_dot(a, b, ea, eb, scales_a=sa.astype(np.uint8), scales_b=sb.astype(np.uint8),
                         accum=accum, frac_bits=16, scale_fmt=scale_fmt)
    for i in range(len(a)):
        want = dot_reference(a[i].tolist(), b[i].tolist(), ea, eb, out_fmt=CATALOG["float32"],
                             accum=accum, frac_bits=16,
                             scale_factor=_scale_value(int(sa[i]), fmt) *
                             _scale_value(int(sb[i]), fmt))
        assert (int(y[i]), int(f[i])) == want, (i, sa[i], sb[i])


def test_value_scale_specials():
    """A NaN scale gives NaN; a zero scale times an infinite sum is invalid; a negative scale
    negates the result."""
    a = np.array([[0x7C, 0x38]], np.uint8)           # fp8e5m2: +inf, 0.5
    b = np.array([[0x2, 0x2]], np.uint8)             # fp4e2m1: 1.0, 1.0
    nan, f = golden.mx_dot(a, b, "fp8e5m2", "fp4e2m1", scales_a=np.array([0x7F], np.uint8),
                           scales_b=np.array([0x38], np.uint8), scale_fmt="float8_e4m3fn")
    assert np.isnan(np.asarray(nan).view(np.float32)[0])
    inv, f = golden.mx_dot(a, b, "fp8e5m2", "fp4e2m1", scales_a=np.array([0x00], np.uint8),
                           scales_b=np.array([0x38], np.uint8), scale_fmt="float8_e4m3fn")
    assert np.isnan(np.asarray(inv).view(np.float32)[0]) and int(f[0]) & 0x10
    a[0, 0] = 0x3C
    pos, _ = golden.mx_dot(a, b, "fp8e5m2", "fp4e2m1", scales_a=np.array([0xB8], np.uint8),
                           scales_b=np.array([0x38], np.uint8), scale_fmt="float8_e4m3fn")
    assert np.asarray(pos).view(np.float32)[0] == np.float32(-1.5)


GROUPED = [  # elements, scale format, group, F, with c, output rounding
    ("fp4e2m1", "fp4e2m1", "float8_e4m3fn", 16, 35, True, "rtz"),      # kind::mxf4nvf4, NVFP4
    ("fp4e2m1", "fp4e2m1", "float8_e8m0fnu", 16, 35, True, "rtz"),     # ... MXFP4
    ("fp8e4m3", "fp6e2m3", "float8_e8m0fnu", 4, 10, False, "rne"),
    ("int4", "fp4e2m1", "float8_e4m3fn", 8, 6, True, "rdn"),
]


@pytest.mark.parametrize("ea,eb,sf,g,F,with_c,rounding", GROUPED,
                         ids=[f"{a}x{b}-{s[7:11]}-g{g}-F{f}" for a, b, s, g, f, *_ in GROUPED])
def test_grouped_matches_rule(ea, eb, sf, g, F, with_c, rounding):
    """The grouped accumulator against its rule on Fractions (oracles.mx_refs), with rows built
    to cancel, group scales up to 40 binades apart, value scales over every finite code and c
    near the products' sum."""
    from fpforge.rtl.accum import Grouped
    from fpforge.rtl.dot import MxDotSpec
    from fpforge.sim.stimulus.dot import accumulator_codes, group_scales, value_scale_codes
    n, rows = 32, 96
    spec = MxDotSpec(ea, eb, n=n, accum=Grouped(F, g), scale_fmt=sf,
                     rounding=rounding, c_fmt="float32" if with_c else None)
    rng = np.random.default_rng(F + g)
    a, b, sa, sb = vectors(ea, eb, n, rows, seed=F)
    fmt = resolve(sf)
    if spec.value_scales:
        finite = [c for c in range(256) if fmt.classify(c) not in ("nan", "snan")]
        sa, sb = (rng.choice(finite, (rows, spec.groups)).astype(np.uint8) for _ in range(2))
    else:
        sa, sb = group_scales(sa, spec.groups, rng), group_scales(sb, spec.groups, rng)
        sa, sb = np.minimum(sa, 254), np.minimum(sb, 254)
    c = accumulator_codes(spec, a, b, sa, sb, rng) if with_c else None
    y, f = golden.mx_dot(a, b, ea, eb, scales_a=sa, scales_b=sb, accum="fixed", frac_bits=F,
                         rounding=rounding, scale_fmt=sf, c=c, sum_group=g)
    y, f = np.asarray(y).astype(np.int64), np.asarray(f).astype(np.int64)
    for i in range(rows):
        want = grouped_dot_reference(a[i].tolist(), b[i].tolist(), ea, eb, sa[i].tolist(),
                                     sb[i].tolist(), None if c is None else int(c[i]),
                                     scale_fmt=fmt, group=g, out_fmt=CATALOG["float32"],
                                     frac_bits=F, mode=rounding)
        assert (int(y[i]), int(f[i])) == want, (i, a[i], b[i], sa[i], sb[i])
