"""The tensor-core accumulators (golden/tensor_core.py) against MMA-Sim's algorithm written
out again in exact rationals: elements decoded by ml_dtypes, each step's terms truncated and
summed as Fractions, the result rounded toward zero by hand."""

from __future__ import annotations

import math
from fractions import Fraction

import gmpy2
import ml_dtypes
import numpy as np
import pytest

from fpforge.golden import mx_quantize
from fpforge.golden._jax import jnp
from fpforge.golden.gemm import code_values_f64, emulated_matmul
from fpforge.golden.gemm_config import GemmConfig
from fpforge.golden.mx import channel_quantize, decode_elements
from fpforge.golden.tensor_core import FUSED_PRESETS, exponents, fused_matmul, step_dtype
from fpforge.rtl.elements import element_format
from fpforge.rtl.mx import MxQuantSpec
from fpforge.rtl.options import OptionError

from oracles.references import ml_decode

E_ZERO = -133


def _exp(v: Fraction, emin: int) -> int:
    """MMA-Sim's exponent: floor(log2 |v|), the minimum one for subnormals, E_ZERO for 0."""
    if v == 0:
        return E_ZERO
    e = math.floor(math.log2(abs(v)))
    while Fraction(2) ** e > abs(v):            # exact floor(log2) for rationals
        e -= 1
    while Fraction(2) ** (e + 1) <= abs(v):
        e += 1
    return max(e, emin)


def _toward_zero(v: Fraction, man_bits: int) -> Fraction:
    if v == 0:
        return Fraction(0)
    q = Fraction(2) ** (_exp(v, -126) - man_bits)
    r = math.trunc(v / q) * q
    return r if abs(r) < Fraction(2) ** 128 else (math.inf if v > 0 else -math.inf)


def _operands(a, b, config: GemmConfig):
    """Both operands quantized along K by the golden model (E8M0 block or channel scales):
    (scale exponents, exact element values, the element format's minimum exponent)."""
    name = element_format(config.elem_a).grid.name
    emin = int(ml_dtypes.finfo(getattr(ml_dtypes, name)).minexp)
    k, kk = config.block, a.shape[1]
    if config.scaling == "channel":
        spec = MxQuantSpec(config.elem_a, block=k)
        (sa, ea), (sb, eb) = (channel_quantize(x, spec=spec, blocks=kk // k)
                              for x in (a, np.ascontiguousarray(b.T)))
    else:
        (sa, ea), (sb, eb) = (mx_quantize(x, config.elem_a, block=k)
                              for x in (a, np.ascontiguousarray(b.T)))
    sa, sb = ([[int(s) - 127 for s in row] for row in np.asarray(x)] for x in (sa, sb))
    va = [[Fraction(float(v)) for v in row] for row in ml_decode(np.asarray(ea), name)]
    vb = [[Fraction(float(v)) for v in row] for row in ml_decode(np.asarray(eb), name)]
    return sa, sb, va, vb, emin


F32_NEAREST = gmpy2.context(precision=24, emin=-148, emax=128, subnormalize=True,
                            round=gmpy2.RoundToNearest)


def _nearest32(v: Fraction) -> float:
    with gmpy2.context(F32_NEAREST) as ctx:
        return float(ctx.div(gmpy2.mpz(v.numerator), gmpy2.mpz(v.denominator)))


def reference(a, b, config: GemmConfig, frac_bits: int | None = None):
    acc = config.accum
    F = acc.accum.frac_bits if frac_bits is None else frac_bits
    k, kk = config.block, a.shape[1]
    sa, sb, va, vb, emin = _operands(a, b, config)
    out = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            c = Fraction(0)
            for g in range(kk // k):
                terms = []
                for t in range(g * k, (g + 1) * k):
                    p, e = va[i][t] * vb[j][t], _exp(va[i][t], emin) + _exp(vb[j][t], emin)
                    if acc.scales_in_group:
                        p *= Fraction(2) ** (sa[i][g] + sb[j][g])
                        e += sa[i][g] + sb[j][g]
                    terms.append((p, E_ZERO if p == 0 else e))
                terms.append((c, _exp(c, -126)))
                big = max(e for _, e in terms)
                total = sum(math.trunc(p * Fraction(2) ** (F - big)) for p, _ in terms)
                c = _toward_zero(total * Fraction(2) ** (big - F), acc.result.man_bits)
            if not acc.scales_in_group:
                c = _nearest32(c * Fraction(2) ** (sa[i][0] + sb[j][0]))
            out[i, j] = np.float32(float(c))
    return out


def _floor_to(v: Fraction, unit: Fraction) -> Fraction:
    return math.floor(v / unit) * unit


def two_stage_reference(a, b, config: GemmConfig, frac_bits: int | None = None):
    """AMD CDNA3 (MMA-Sim's gtr_fdpa) in exact rationals: per step of 16 products, the even and
    odd products each truncated toward zero to F bits below their largest exponent and summed,
    both floored to F bits below the larger; with E = max(that, c's exponent), the sum floored
    to F2 + 1 bits and c to F bits below 2^E (c dropped below 2^(E - F - 1)); their sum floored
    to F2 bits below its leading bit (at least -126) and rounded to nearest even; per-channel
    scales then times the float32 result, rounded to nearest even (MPFR)."""
    acc = config.accum
    F, F2 = acc.accum.frac_bits if frac_bits is None else frac_bits, acc.accum.frac_bits2
    k, kk = config.block, a.shape[1]
    sa, sb, va, vb, emin = _operands(a, b, config)
    two = Fraction(2)
    out = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            c = Fraction(0)
            for g in range(0, kk, k):
                halves = []
                for h in (0, 1):
                    ts = [(va[i][t] * vb[j][t], _exp(va[i][t], emin) + _exp(vb[j][t], emin))
                          for t in range(g + h, g + k, 2)]
                    es = [e for p, e in ts if p != 0]
                    big = max(es) if es else -999
                    halves.append((sum(math.trunc(p * two ** (F - big)) for p, _ in ts), big))
                e_dot = max(e for _, e in halves)
                t = sum(math.floor(Fraction(s) * two ** (e - e_dot)) for s, e in halves)
                e_c = -126 if c == 0 else _exp(c, -126)
                big = max(e_dot, e_c)
                u = _floor_to(t * two ** (e_dot - F), two ** (big - F2 - 1))
                v = Fraction(0) if e_c < big - F - 1 else _floor_to(c, two ** (big - F))
                total = u + v
                lead = -126 if total == 0 else _exp(total, -126)
                c = Fraction(_nearest32(_floor_to(total, two ** (lead - F2))))
            c = _nearest32(c * two ** (sa[i][0] + sb[j][0]))
            out[i, j] = np.float32(c)
    return out


def _data(shape, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 2.0 ** rng.integers(-10, 11, shape)).astype(np.float32)


CASES = [GemmConfig("fp8e4m3", accum="hopper_fp8", scaling="channel"),
         GemmConfig("fp8e5m2", accum="hopper_fp8", scaling="channel"),
         GemmConfig("fp8e4m3", accum="blackwell_mxf8f6f4"),
         GemmConfig("fp4e2m1", accum="blackwell_mxf8f6f4"),
         GemmConfig("fp6e3m2", accum="blackwell_mxf8f6f4", scaling="channel"),
         GemmConfig("fp8e5m2", block=16, accum="ada_fp8", scaling="channel")]
# In make test-all only: Hopper on E5M2 (Hopper's steps run on E4M3 above, E5M2 elements on
# Ada's) and Blackwell on E4M3 blocks (Blackwell's block scales run on FP4 above).
SLOW_CASES = (1, 2)


@pytest.mark.parametrize("config", [
    pytest.param(c, marks=pytest.mark.slow if i in SLOW_CASES else ()) for i, c in
    enumerate(CASES)], ids=lambda c: f"{c.elem_a}-{c.scaling}-"
                         f"{next(n for n, a in FUSED_PRESETS.items() if a == c.accum)}")
def test_fused_accumulators_match_the_exact_rational_model(config):
    a, b = _data((3, 96), 1), _data((96, 4), 2)       # 3 steps of 32 products and c
    got = np.asarray(emulated_matmul(a, b, config))
    np.testing.assert_array_equal(got.view(np.uint32), reference(a, b, config).view(np.uint32))


def test_the_comparison_catches_one_fraction_bit_more():
    config = CASES[0]
    a, b = _data((3, 96), 3), _data((96, 4), 4)
    got = np.asarray(emulated_matmul(a, b, config))
    assert (got.view(np.uint32) != reference(a, b, config, frac_bits=14).view(np.uint32)).any()


@pytest.mark.parametrize("elem", ["fp8e4m3fnuz", "fp8e5m2fnuz"])
def test_cdna3_matches_the_exact_rational_model(elem):
    config = GemmConfig(elem, block=16, accum="cdna3_fp8", scaling="channel")
    a, b = _data((3, 96), 5), _data((96, 4), 6)
    got = np.asarray(emulated_matmul(a, b, config)).view(np.uint32)
    np.testing.assert_array_equal(got, two_stage_reference(a, b, config).view(np.uint32))
    assert (got != two_stage_reference(a, b, config, frac_bits=12).view(np.uint32)).any()


def _one_cdna3_step(ea, eb, frac_bits, rng, rows=24):
    """(the dot unit's golden y, the emulation's) for every pair of ``rows`` a and b vectors of
    16 finite codes (a third built to cancel) and a c near each pair's sum (times 2^-30..2^30,
    or minus it, zeros and any finite code: sim/stimulus/dot.py's accumulator_codes)."""
    import jax.numpy as jnp
    from fpforge.golden.dot import dot_unit
    from fpforge.golden.gemm import code_values_f64
    from fpforge.golden.mx import decode_elements
    from fpforge.golden.tensor_core import exponents, two_stage_matmul
    from fpforge.rtl.accum import TwoStage
    from fpforge.rtl.dot import MxDotSpec
    from fpforge.sim.stimulus.dot import accumulator_codes, finite_codes
    acc = FUSED_PRESETS["cdna3_fp8"]
    fa, fb = element_format(ea), element_format(eb)
    A = rng.choice(finite_codes(ea), (rows, 16)).astype(np.uint8)
    B = rng.choice(finite_codes(eb), (rows, 16)).astype(np.uint8)
    A[:rows // 3, 8:] = np.where(A[:rows // 3, :8] == 0, 0, A[:rows // 3, :8] ^ 0x80)
    B[:, 8:] = B[:, :8]
    spec = MxDotSpec(ea, eb, n=16, scaled=False, accum=TwoStage(frac_bits, acc.accum.frac_bits2),
                     c_fmt="float32")
    a, b = np.repeat(A, rows, axis=0), np.tile(B, (rows, 1))
    c = accumulator_codes(spec, a, b, None, None, rng).astype(np.uint32)
    got = np.asarray(dot_unit(spec, {"a": a, "b": b, "c": c}, want=("y",))["y"])

    def operand(codes, f):
        u = decode_elements(jnp.arange(1 << f.width, dtype=jnp.uint32), f)
        i = codes.astype(np.int32)
        return code_values_f64(f)[i][None], exponents(u, f.grid.man_bits)[i][None]
    (va, xa), (vb, xb) = operand(A, fa), operand(B, fb)
    want = two_stage_matmul(va, xa, None, vb, xb, None, acc, c=c.reshape(rows, rows))
    return got.astype(np.uint32), np.asarray(want).view(np.uint32).reshape(-1)


# The mixed pair runs both formats through the unit; E4M3 FNUZ alone is in make test-all.
@pytest.mark.parametrize("ea,eb", [pytest.param("fp8e4m3fnuz", "fp8e4m3fnuz",
                                                marks=pytest.mark.slow),
                                   ("fp8e5m2fnuz", "fp8e4m3fnuz")])
def test_the_two_stage_dot_unit_is_one_cdna3_step(ea, eb):
    """golden/dot.py's two-stage dot unit (whose RTL the benches compare with it) against the
    emulation's step, itself the exact-rational model's and MMA-Sim's: any c, one step."""
    rng = np.random.default_rng(len(ea + eb))
    got, want = _one_cdna3_step(ea, eb, 24, rng)
    np.testing.assert_array_equal(got, want)
    got, want = _one_cdna3_step(ea, eb, 23, rng)            # F - 1 in the unit
    assert (got != want).any()


def grouped_reference(a, b, config: GemmConfig, frac_bits: int | None = None):
    """kind::mxf4nvf4 (MMA-Sim's gst_fdpa) in exact rationals: per step of 64, each group of 16
    products summed exactly, times its two scales' values, at the scales' exponents alone (E4M3
    subnormals at -6), e_zero = -139 for an all-zero group or zero scale and for c = 0;
    truncated to F bits below the largest, summed, rounded toward zero; NVFP4 then times TE's
    alpha = fl(fl(amax_a amax_b) / (6 * 448)^2), rounded to nearest (numpy's float32)."""
    from fpforge.golden.blockscale import block_quantize
    from fpforge.rtl.blockscale import preset
    acc = config.accum
    F = acc.accum.frac_bits if frac_bits is None else frac_bits
    k, kk = config.block, a.shape[1]
    bt = np.ascontiguousarray(b.T)
    if config.value_scaled:
        (sa, ea), (sb, eb) = ((q.scales, q.elements) for q in
                              (block_quantize(x, preset(config.scale_rule)) for x in (a, bt)))
        scale = lambda code: Fraction(float(ml_decode(np.array([code]), "float8_e4m3fn")[0]))
        s_emin = -6
    else:
        (sa, ea), (sb, eb) = (mx_quantize(x, "fp4e2m1", block=k) for x in (a, bt))
        scale = lambda code: Fraction(2) ** (int(code) - 127)
        s_emin = -127
    va = [[Fraction(float(v)) for v in row] for row in ml_decode(np.asarray(ea), "float4_e2m1fn")]
    vb = [[Fraction(float(v)) for v in row] for row in ml_decode(np.asarray(eb), "float4_e2m1fn")]
    sa, sb = np.asarray(sa), np.asarray(sb)
    out = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            c = Fraction(0)
            for step in range(0, kk, 64):
                terms = []
                for g in range(step, step + 64, 16):
                    p = sum(va[i][t] * vb[j][t] for t in range(g, g + 16))
                    fa, fb = scale(sa[i, g // k]), scale(sb[j, g // k])
                    zero = all(va[i][t] * vb[j][t] == 0 for t in range(g, g + 16)) or fa * fb == 0
                    e = -139 if zero else _exp(fa, s_emin) + _exp(fb, s_emin)
                    terms.append((p * fa * fb, e))
                terms.append((c, -139 if c == 0 else _exp(c, -126)))
                big = max(e for _, e in terms)
                total = sum(math.trunc(t * Fraction(2) ** (F - big)) for t, _ in terms)
                c = _toward_zero(total * Fraction(2) ** (big - F), 23)
            out[i, j] = np.float32(float(c))
    if config.value_scaled:
        alpha = np.float32(np.float32(np.abs(a).max() * np.abs(b).max()) / np.float32(7225344))
        out = (out.astype(np.float64) * np.float64(alpha)).astype(np.float32)
    return out


@pytest.mark.parametrize("config", [
    GemmConfig("fp4e2m1", block=32, accum="blackwell_mxf4nvf4"),
    GemmConfig("fp4e2m1", block=16, scale_rule="nvfp4_te", accum="blackwell_mxf4nvf4")],
    ids=["mxfp4", "nvfp4_te"])
def test_mxf4nvf4_matches_the_exact_rational_model(config):
    rng = np.random.default_rng(8)
    # blocks of very different magnitudes, so that truncation below the largest scale bites
    a = (rng.standard_normal((3, 192)) * 2.0 ** rng.integers(-12, 13, (3, 12)).repeat(16, 1))
    a = a.astype(np.float32)
    b = _data((192, 4), 7)
    got = np.asarray(emulated_matmul(a, b, config)).view(np.uint32)
    np.testing.assert_array_equal(got, grouped_reference(a, b, config).view(np.uint32))
    # normal values: close scales, each step one matrix multiply (grouped_prescaled_matmul)
    a, b = (rng.standard_normal(shape).astype(np.float32) for shape in ((3, 192), (192, 4)))
    got = np.asarray(emulated_matmul(a, b, config)).view(np.uint32)
    np.testing.assert_array_equal(got, grouped_reference(a, b, config).view(np.uint32))
    # The comparison can fail: with F = 35 truncation shows only when the largest terms
    # cancel. Two groups of one block cancel exactly (x, -x against y, y), and the other block
    # is 2^-17 of it in both operands, so its terms sit about 34 binades below E: F = 25 cuts
    # them, F = 35 keeps most of them.
    x, y = rng.standard_normal((3, 16)), rng.standard_normal((16, 4))
    a, b = np.zeros((3, 192), np.float32), np.zeros((192, 4), np.float32)
    a[:, :16], a[:, 16:32], a[:, 32:64] = x, -x, rng.standard_normal((3, 32)) * 2.0 ** -17
    b[:16], b[16:32], b[32:64] = y, y, rng.standard_normal((32, 4)) * 2.0 ** -17
    got = np.asarray(emulated_matmul(a, b, config)).view(np.uint32)
    np.testing.assert_array_equal(got, grouped_reference(a, b, config).view(np.uint32))
    assert (got != grouped_reference(a, b, config, frac_bits=25).view(np.uint32)).any()


@pytest.mark.parametrize("kwargs, says", [
    (dict(accum="hopper_fp8"), "scaling must be channel or tensor, not block"),
    (dict(accum="hopper_fp8", scaling="channel", block=16), "block must be 32, not 16"),
    (dict(elem_a="mxint8", accum="blackwell_mxf8f6f4"), "floating-point elements, not mxint8"),
    (dict(elem_a="fp8e4m3", accum="blackwell_mxf4nvf4"), "takes fp4e2m1 elements, not fp8e4m3"),
    (dict(elem_a="fp8e4m3", block=16, accum="cdna3_fp8", scaling="tensor"),
     "takes fp8e4m3fnuz or fp8e5m2fnuz elements, not fp8e4m3"),
    (dict(elem_a="fp4e2m1", block=8, accum="blackwell_mxf4nvf4"), "16 or 32 elements, not 8"),
    (dict(elem_a="fp4e2m1", scaling="channel", accum="blackwell_mxf4nvf4"),
     "scaling must be block, not channel"),
    (dict(elem_a="fp4e2m1", accum="blackwell_mxf4nvf4", scale_rule="p3109_maxabs"),
     "quantizes|E8M0 or E4M3"),
])
def test_tensor_core_presets_refuse_what_the_instruction_cannot_do(kwargs, says):
    with pytest.raises(OptionError, match=says):
        GemmConfig(**kwargs)


# ----- fused_matmul itself on edge cases: NaN and infinite elements and scales, zeros, ---------
# subnormal and overflowing results, every kind of c, and each value dtype step_dtype picks

def _step_reference(va, xa, sa, vb, xb, sb, acc, c, frac_bits=None):
    """MMA-Sim's steps on the (M, N, k) products in numpy float64 (products, truncated terms and
    their sums are exact there; numpy keeps subnormals), the result rounded toward zero in
    exact rationals; NaN as 0x7FC00000."""
    F = acc.accum.frac_bits if frac_bits is None else frac_bits
    c = c.view(np.float32).astype(np.float64)
    for j in range(va.shape[0]):
        a, b, x, y = va[j], vb[j], xa[j], xb[j]
        zero = (x[:, None, :] == E_ZERO) | (y[None, :, :] == E_ZERO)
        if acc.scales_in_group:
            ea, eb = sa[j].astype(int) - 127, sb[j].astype(int) - 127
            a = a * np.where(sa[j] == 255, np.nan, np.ldexp(1.0, ea))[:, None]
            b = b * np.where(sb[j] == 255, np.nan, np.ldexp(1.0, eb))[:, None]
            x, y = x + ea[:, None], y + eb[:, None]
        e = np.where(zero, E_ZERO, x[:, None, :] + y[None, :, :])
        e_c = np.where(c == 0, E_ZERO, np.where(np.isfinite(c),
                                                np.maximum(np.frexp(c)[1] - 1, -126), 128))
        big = np.maximum(e.max(axis=-1), e_c)
        with np.errstate(invalid="ignore"):
            p = a[:, None, :] * b[None, :, :]
            total = np.trunc(p * np.ldexp(1.0, F - big)[..., None]).sum(axis=-1) + \
                np.trunc(c * np.ldexp(1.0, F - big))
        value = np.ldexp(total, big - F)
        c = np.array([v if not np.isfinite(v) else
                      float(_toward_zero(Fraction(v), acc.result.man_bits))
                      for v in value.ravel()]).reshape(value.shape)
    bits = c.astype(np.float32).view(np.uint32)
    return np.where(np.isnan(c), 0x7FC0_0000, np.where(c == 0, 0, bits)).astype(np.uint32)


def _edge_operands(acc, elem: str, seed: int, m=16, n=24, blocks=5):
    """Element codes with rows of zeros, of the smallest and of the largest magnitudes, a few
    NaN (and E5M2 infinite) codes; E8M0 scales with extremes and NaN; c of every kind."""
    rng = np.random.default_rng(seed)
    e = element_format(elem)
    u = decode_elements(jnp.arange(1 << e.width, dtype=jnp.uint32), e)
    x, v = np.asarray(exponents(u, e.grid.man_bits)), np.asarray(code_values_f64(e))
    codes = np.arange(1 << e.width)
    finite, special = codes[np.isfinite(v)], codes[~np.isfinite(v)]
    by_size = finite[np.argsort(np.abs(v[finite]))]
    by_size = by_size[v[by_size] != 0]

    def draw(rows):
        cd = rng.choice(finite, (blocks, rows, acc.group))
        cd[rng.random(cd.shape) < 0.1] = codes[v == 0][0]
        # whole rows (every block) of zeros (1), the smallest (2), the largest (3) magnitudes
        kind = np.broadcast_to(rng.integers(0, 6, rows)[None, :], (blocks, rows))
        cd[kind == 1] = codes[v == 0][0]
        cd[kind == 2] = rng.choice(by_size[:4], cd[kind == 2].shape)
        cd[kind == 3] = rng.choice(by_size[-4:], cd[kind == 3].shape)
        if len(special):
            odd = rng.random(cd.shape) < 0.0005
            cd[odd] = rng.choice(special, odd.sum())
        return cd

    def scales(rows):
        if not acc.scales_in_group:
            return np.full((blocks, rows), 127, np.uint8)
        s = rng.integers(100, 155, (blocks, rows))
        s[rng.random(s.shape) < 0.1] = rng.choice([0, 1, 240, 254])
        s[rng.random(s.shape) < 0.02] = 255
        return s.astype(np.uint8)
    ca, cb = draw(m), draw(n)
    c = (rng.standard_normal((m, n)) * 2.0 ** rng.integers(-140, 100, (m, n)))
    c = c.astype(np.float32).view(np.uint32)
    odd = rng.random(c.shape) < 0.3
    c[odd] = rng.choice(np.array([0, 0x8000_0000, 1, 0x8000_0001, 0x007F_FFFF, 0x0080_0000,
                                  0x7F7F_FFFF, 0xFF7F_FFFF, 0x7F80_0000, 0xFF80_0000,
                                  0x7FC0_0000, 0x0000_0400], np.uint32), odd.sum())
    return v[ca], x[ca], scales(m), v[cb], x[cb], scales(n), c


# make test runs each preset and each element format (E5M2's infinities with Blackwell's NaN
# scales); Hopper on E5M2 and Blackwell on E4M3, the same steps again, in make test-all.
@pytest.mark.parametrize("preset, elem", [
    ("hopper_fp8", "fp8e4m3"), pytest.param("hopper_fp8", "fp8e5m2", marks=pytest.mark.slow),
    ("hopper_fp8", "fp4e2m1"), ("ada_fp8", "fp8e5m2"),
    pytest.param("blackwell_mxf8f6f4", "fp8e4m3", marks=pytest.mark.slow),
    ("blackwell_mxf8f6f4", "fp8e5m2"), ("blackwell_mxf8f6f4", "fp6e3m2")])
def test_fused_matmul_matches_the_steps_on_edge_cases(preset, elem):
    acc = FUSED_PRESETS[preset]
    va, xa, sa, vb, xb, sb, c = _edge_operands(acc, elem, seed=11)
    want = _step_reference(va, xa, sa, vb, xb, sb, acc, c)
    fmt = element_format(elem)
    for dtype in {np.dtype(step_dtype(acc, fmt, fmt)), np.dtype(np.float64)}:   # fast, float64
        got = np.asarray(fused_matmul(va.astype(dtype), xa, sa, vb.astype(dtype), xb, sb, acc,
                                      c=c)).view(np.uint32)
        np.testing.assert_array_equal(got, want, err_msg=f"values in {dtype}")
    # the data reach every kind of result, and one fraction bit more changes some
    magnitude = want & 0x7FFF_FFFF
    assert (want == 0x7FC0_0000).any() and (magnitude == 0x7F80_0000).any()
    assert (want == 0).any() and ((magnitude > 0) & (magnitude < 0x0080_0000)).any()
    assert (want != _step_reference(va, xa, sa, vb, xb, sb, acc, c,
                                    frac_bits=acc.accum.frac_bits + 1)).any()


# ----- the float32 paths against the float64 steps, on tiles of columns ---------------------------
# (float32 values run the fast paths: step_dtype's, two_stage_dtype's and group_sum_dtype's;
# n = 2 * TILE columns runs them on two tiles of columns)

@pytest.mark.parametrize("preset, elem", [("hopper_fp8", "fp8e4m3"),
                                          ("blackwell_mxf8f6f4", "fp8e5m2")])
def test_fused_matmul_on_column_tiles_matches_the_steps(preset, elem):
    from fpforge.golden.tensor_core import TILE
    acc = FUSED_PRESETS[preset]
    va, xa, sa, vb, xb, sb, c = _edge_operands(acc, elem, seed=12, n=2 * TILE, blocks=3)
    want = _step_reference(va, xa, sa, vb, xb, sb, acc, c)
    got = np.asarray(fused_matmul(va.astype(np.float32), xa, sa, vb.astype(np.float32), xb, sb,
                                  acc, c=c)).view(np.uint32)
    np.testing.assert_array_equal(got, want)


# The mixed pair runs both formats through the path; E4M3 FNUZ alone is in make test-all.
@pytest.mark.parametrize("ea, eb", [pytest.param("fp8e4m3fnuz", "fp8e4m3fnuz",
                                                 marks=pytest.mark.slow),
                                    ("fp8e5m2fnuz", "fp8e4m3fnuz")])
def test_two_stage_float32_path_is_the_float64_step_on_edge_cases(ea, eb):
    """The first stage per product in float32 and int32 and the rest on exact integers against
    the step on (M, N, k) float64 products: NaN elements, zero rows, extreme magnitudes, c of
    every kind."""
    from dataclasses import replace
    from fpforge.golden.tensor_core import TILE, two_stage_dtype, two_stage_matmul
    acc = FUSED_PRESETS["cdna3_fp8"]
    assert two_stage_dtype(acc, element_format(ea), element_format(eb)) == jnp.float32
    va, xa, _, _, _, _, c = _edge_operands(acc, ea, seed=13, n=2 * TILE)
    _, _, _, vb, xb, _, _ = _edge_operands(acc, eb, seed=14, n=2 * TILE)

    def run(dtype, acc=acc):
        return np.asarray(two_stage_matmul(va.astype(dtype), xa, None, vb.astype(dtype), xb,
                                           None, acc, c=c)).view(np.uint32)
    want = run(np.float64)
    np.testing.assert_array_equal(run(np.float32), want)
    magnitude = want & 0x7FFF_FFFF
    assert (want == 0x7FC0_0000).any() and (magnitude == 0x7F80_0000).any()
    assert (want == 0).any() and ((magnitude > 0) & (magnitude < 0x0080_0000)).any()
    # the comparison can fail: the fast path with one fraction bit fewer in the first stage
    fewer = replace(acc, accum=replace(acc.accum, frac_bits=acc.accum.frac_bits - 1))
    assert (run(np.float32, fewer) != want).any()


def _grouped_step_reference(va, fa, vb, fb, acc, scale_emin: int, c, frac_bits=None):
    """kind::mxf4nvf4's steps on (M, N, groups) float64 arrays in numpy (every value exact
    there), the result rounded toward zero in exact rationals; NaN as 0x7FC00000."""
    F = acc.accum.frac_bits if frac_bits is None else frac_bits
    g, per = acc.accum.group, acc.group // va.shape[2]

    def normalized(v):
        e = np.maximum(np.frexp(np.nan_to_num(v))[1] - 1, scale_emin)
        return v * np.ldexp(1.0, -e), e
    c = c.view(np.float32).astype(np.float64)
    for j in range(0, va.shape[0], per):
        a = np.concatenate(list(va[j:j + per]), axis=-1)                 # (M, step)
        b = np.concatenate(list(vb[j:j + per]), axis=-1)
        rep = va.shape[2] // g
        (sa, ea), (sb, eb) = (normalized(np.repeat(s[j:j + per].T, rep, axis=1))
                              for s in (fa, fb))                         # (R, groups)
        ga, gb = a.reshape(a.shape[0], -1, g), b.reshape(b.shape[0], -1, g)
        p = np.einsum("mqi,nqi->mnq", ga, gb)
        nonzero = np.einsum("mqi,nqi->mnq", (ga != 0) * 1.0, (gb != 0) * 1.0) > 0
        s_scale = sa[:, None, :] * sb[None, :, :]
        e_scale = ea[:, None, :] + eb[None, :, :]
        with np.errstate(invalid="ignore"):
            value = p * s_scale * np.ldexp(1.0, e_scale)
            e = np.where(nonzero & (s_scale != 0), e_scale, acc.e_zero)
            e_c = np.where(c == 0, acc.e_zero, np.where(
                np.isfinite(c), np.maximum(np.frexp(c)[1] - 1, -126), 128))
            big = np.maximum(e.max(axis=-1), e_c)
            total = np.trunc(value * np.ldexp(1.0, F - big)[..., None]).sum(axis=-1) + \
                np.trunc(c * np.ldexp(1.0, F - big))
        value = np.ldexp(total, big - F)
        c = np.array([v if not np.isfinite(v) else float(_toward_zero(Fraction(v), 23))
                      for v in value.ravel()]).reshape(value.shape)
    bits = c.astype(np.float32).view(np.uint32)
    return np.where(np.isnan(c), 0x7FC0_0000, np.where(c == 0, 0, bits)).astype(np.uint32)


def _fp4_values(rng, shape, zeros: float):
    """(blocks, rows, block) E2M1 values: random codes, a fraction ``zeros`` of them zero, row 1
    zero in every block and row 2 in the first (zero rows and groups)."""
    cd = rng.integers(0, 16, shape)
    cd[:, 1], cd[0, 2], cd[rng.random(cd.shape) < zeros] = 0, 0, 0
    return np.asarray(code_values_f64(element_format("fp4e2m1")))[cd]


@pytest.mark.parametrize("block, scale", [(32, "float8_e8m0fnu"), (16, "float8_e4m3fn")])
def test_grouped_matmul_matches_the_steps_on_edge_cases(block, scale):
    """The group sums as float32 matrix multiplies (and float64 ones), nonzero groups from bit
    masks, on tiles of columns, against the (M, N, groups) steps: zero rows and groups, NaN,
    zero, subnormal and extreme scales, c of every kind."""
    from fpforge.golden.gemm import scale_values_f64
    from fpforge.golden.tensor_core import TILE, group_sum_dtype, grouped_fused_matmul
    from fpforge.rtl.formats import CATALOG
    acc, fmt = FUSED_PRESETS["blackwell_mxf4nvf4"], CATALOG[scale]
    fp4 = element_format("fp4e2m1")
    assert group_sum_dtype(acc, fp4, fp4, fmt) == jnp.float32
    rng = np.random.default_rng(block)
    m, n, blocks = 16, 2 * TILE, 3 * 64 // block

    def elements(rows):
        return _fp4_values(rng, (blocks, rows, block), zeros=0.3)

    def scales(rows):
        if scale == "float8_e8m0fnu":
            s = rng.integers(100, 155, (blocks, rows))
            s[rng.random(s.shape) < 0.1] = rng.choice([0, 1, 240, 254])
        else:
            s = rng.integers(0, 0x7F, (blocks, rows))
            s[rng.random(s.shape) < 0.1] = rng.choice([0, 1, 3, 0x7E, 0x80])  # zeros, tiny
        s[rng.random(s.shape) < 0.02] = 0xFF if scale == "float8_e8m0fnu" else 0x7F  # NaN
        return np.asarray(scale_values_f64(jnp.asarray(s.astype(np.uint8)), fmt))
    va, vb, fa, fb = elements(m), elements(n), scales(m), scales(n)
    _, _, _, _, _, _, c = _edge_operands(FUSED_PRESETS["hopper_fp8"], "fp8e4m3", 15, m=m, n=n)
    want = _grouped_step_reference(va, fa, vb, fb, acc, fmt.emin, c)
    for dtype in (np.float32, np.float64):
        got = grouped_fused_matmul(va.astype(dtype), fa, vb.astype(dtype), fb, acc, fmt.emin,
                                   c=c)
        np.testing.assert_array_equal(np.asarray(got).view(np.uint32), want,
                                      err_msg=f"values in {dtype}")
    magnitude = want & 0x7FFF_FFFF
    assert (want == 0x7FC0_0000).any() and (magnitude == 0x7F80_0000).any()
    assert (want == 0).any() and ((magnitude > 0) & (magnitude < 0x0080_0000)).any()
    # the comparison can fail: one fraction bit fewer
    assert (want != _grouped_step_reference(va, fa, vb, fb, acc, fmt.emin, c,
                                            frac_bits=acc.accum.frac_bits - 1)).any()


@pytest.mark.parametrize("block, scale", [(32, "float8_e8m0fnu"), (16, "float8_e4m3fn")])
def test_grouped_prescaled_path_is_the_steps_where_it_says_so(block, scale):
    """One matrix multiply per step, c added in float64: equal to the (M, N, groups) steps
    wherever it claims exactness, on rows of close and of far-apart scales (extreme, NaN),
    zero groups and c of every kind; and trusted everywhere it would be wrong."""
    from fpforge.golden.gemm import scale_values_f64
    from fpforge.golden.tensor_core import grouped_fast_path, grouped_prescaled_matmul
    from fpforge.rtl.formats import CATALOG
    acc, fmt = FUSED_PRESETS["blackwell_mxf4nvf4"], CATALOG[scale]
    fp4 = element_format("fp4e2m1")
    assert grouped_fast_path(acc, fp4, fp4, fmt)
    rng = np.random.default_rng(block + 1)
    m, n, blocks = 24, 40, 4 * 64 // block

    def elements(rows):
        return _fp4_values(rng, (blocks, rows, block), zeros=0.2)

    def scales(rows):
        close = (121, 123) if scale == "float8_e8m0fnu" else (0x38, 0x3F)  # one or two exponents
        s = rng.integers(*close, (blocks, rows))
        far = rng.random(rows) < 0.25                                     # whole rows far apart
        s[:, far] = rng.choice([0, 1, 0x7E, 0x80, 254] if scale == "float8_e8m0fnu" else
                               [0, 1, 3, 0x20, 0x7E, 0x80], (blocks, far.sum()))
        s[rng.random(s.shape) < 0.01] = 0xFF if scale == "float8_e8m0fnu" else 0x7F  # NaN
        return np.asarray(scale_values_f64(jnp.asarray(s.astype(np.uint8)), fmt))
    va, vb, fa, fb = elements(m), elements(n), scales(m), scales(n)
    _, _, _, _, _, _, c = _edge_operands(FUSED_PRESETS["hopper_fp8"], "fp8e4m3", 16, m=m, n=n)
    near = rng.random(c.shape) < 0.6
    c[near] = (rng.standard_normal(near.sum()) * 2.0 ** rng.integers(-30, 30, near.sum())
               ).astype(np.float32).view(np.uint32)
    want = _grouped_step_reference(va, fa, vb, fb, acc, fmt.emin, c)
    got, exact = grouped_prescaled_matmul(va.astype(np.float32), fa, vb.astype(np.float32), fb,
                                          acc, fp4, fp4, fmt, c=c)
    got, exact = np.asarray(got).view(np.uint32), np.asarray(exact)
    np.testing.assert_array_equal(got[exact], want[exact])
    assert 0.2 < exact.mean() < 0.9
    # the check is needed: trusted everywhere, the path would be wrong
    assert (got[~exact] != want[~exact]).any()
