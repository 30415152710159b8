"""The emulated matrix multiply (golden/gemm.py) against an independent model: elements decoded
by ml_dtypes, block sums in exact rationals, every rounding by MPFR (gmpy2)."""

from __future__ import annotations

from fractions import Fraction

import gmpy2
import numpy as np
import pytest

from fpforge.golden import mx_quantize
from fpforge.golden.gemm import emulated_matmul
from fpforge.golden.gemm_config import Accumulator, GemmConfig
from fpforge.golden.gemm_operands import float_scales, quantized_codes, seeded_bits
from fpforge.golden.mx import mx_dequantize
from fpforge.rtl.format_names import resolve
from fpforge.rtl.elements import element_format
from fpforge.rtl.options import OptionError

from oracles.references import ml_decode

MPFR_MODES = {"rne": gmpy2.RoundToNearest, "rtz": gmpy2.RoundToZero,
              "rdn": gmpy2.RoundDown, "rup": gmpy2.RoundUp}


def covering(rows, cols, row_id=str, col_id=str):
    """The (row, col) grid as pytest params, ids ``row-col``. make test keeps the pairs
    (k mod rows, k mod cols) for k < max(rows, cols): each row and each col at least once. The
    other pairs, the same code paths in another combination, are slow (make test-all)."""
    n = max(len(rows), len(cols))
    kept = {(k % len(rows), k % len(cols)) for k in range(n)}
    return [pytest.param(r, c, id=f"{row_id(r)}-{col_id(c)}",
                         marks=() if (i, j) in kept else pytest.mark.slow)
            for j, c in enumerate(cols) for i, r in enumerate(rows)]


def _context(fmt_name: str, rounding: str):
    fmt = resolve(fmt_name)
    return gmpy2.context(precision=fmt.precision, emin=fmt.emin - fmt.man_bits + 1,
                         emax=fmt.emax + 1, subnormalize=True, round=MPFR_MODES[rounding])


def _rounded(value: Fraction, ctx):
    with gmpy2.context(ctx) as c:
        return c.div(gmpy2.mpz(value.numerator), gmpy2.mpz(value.denominator))


def reference(a, b, config: GemmConfig, rounding: str | None = None):
    """config's matrix multiply, written from docs/codesign.md's rules alone."""
    k, acc = config.block, config.accum
    rounding = rounding or acc.rounding.value
    per = a.shape[1] if config.scaling == "channel" else k      # elements per scale
    ra, rb = seeded_bits(config.seed, a.shape, b.shape[::-1]) \
        if config.rounding == "stochastic" else (None, None)
    sa, ea = (np.asarray(v) for v in mx_quantize(a, config.elem_a, block=per,
                                                  rounding=config.rounding, rbits=ra))
    sb, eb = (np.asarray(v) for v in mx_quantize(np.ascontiguousarray(b.T), config.elem_a,
                                                  block=per, rounding=config.rounding,
                                                  rbits=rb))
    name = element_format(config.elem_a).grid.name     # the ml_dtypes name
    va, vb = ml_decode(ea, name), ml_decode(eb, name)        # exact values
    ctx, f32 = _context(acc.fmt.name, rounding), _context("float32", "rne")
    blocks = a.shape[1] // k
    every = (acc.promote_every or a.shape[1] + k) // k
    out = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            total, partial = gmpy2.mpfr(0), gmpy2.mpfr(0)
            for blk in range(blocks):
                s = slice(blk * k, (blk + 1) * k)
                exact = sum(Fraction(float(x)) * Fraction(float(y)) for x, y in zip(va[i, s], vb[j, s]))
                scale = blk * k // per
                exact *= Fraction(2) ** (int(sa[i, scale]) - 127 + int(sb[j, scale]) - 127)
                with gmpy2.context(ctx) as c:
                    partial = c.add(partial, _rounded(exact, ctx))
                if (blk + 1) % every == 0:
                    with gmpy2.context(f32) as c:
                        total, partial = c.add(total, partial), gmpy2.mpfr(0)
            if acc.promote_every is None:
                total = partial
            elif blocks % every:
                with gmpy2.context(f32) as c:
                    total = c.add(total, partial)
            out[i, j] = np.float32(float(total))
    return out


def _data(shape, seed):
    rng = np.random.default_rng(seed)
    # magnitudes over several binades, so blocks get different scales
    return (rng.standard_normal(shape) * 2.0 ** rng.integers(-6, 7, shape)).astype(np.float32)


CASES = [
    GemmConfig("fp8e4m3", block=32, accum="fp32"),
    GemmConfig("fp4e2m1", block=16, accum=Accumulator("bfloat16", "rtz")),
    GemmConfig("fp8e5m2", block=32, accum=Accumulator("bfloat16", promote_every=64)),
    GemmConfig("fp6e2m3", block=8, accum="fp16"),
    GemmConfig("fp8e4m3", block=32, accum="bf16", scaling="channel"),
    GemmConfig("fp4e2m1", block=32, rounding="stochastic", seed=7),
]


@pytest.mark.parametrize("config", CASES, ids=lambda c: f"{c.elem_a}-{c.scaling}{c.block}-"
                         f"{c.rounding}-"
                         f"{c.accum.fmt.name}-{c.accum.rounding.value}-p{c.accum.promote_every}")
def test_emulated_matmul_matches_exact_rationals_and_mpfr(config):
    a, b = _data((3, 224), 1), _data((224, 4), 2)       # 224: 7 blocks of 32, a partial promotion
    got = np.asarray(emulated_matmul(a, b, config))
    want = reference(a, b, config)
    assert got.dtype == np.float32 and got.shape == (3, 4)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))


def test_the_comparison_catches_a_wrong_accumulator_rounding():
    config = GemmConfig("fp8e4m3", block=32, accum=Accumulator("bfloat16"))
    a, b = _data((3, 224), 3), _data((224, 4), 4)
    got = np.asarray(emulated_matmul(a, b, config))
    assert (got.view(np.uint32) != reference(a, b, config, rounding="rtz").view(np.uint32)).any()


def test_emulated_matmul_differs_from_fake_quantize_plus_float32():
    """The point of emulating the hardware: a bf16 running sum is not a float32 matmul."""
    a, b = _data((4, 256), 5), _data((256, 4), 6)
    config = GemmConfig("fp8e4m3", accum="bf16")
    got = np.asarray(emulated_matmul(a, b, config))
    fp32 = np.asarray(emulated_matmul(a, b, GemmConfig("fp8e4m3")))
    assert (got != fp32).any()
    # 8 blocks, each rounded to bf16 (8 bits) as it is added: within 8 bf16 ulps of the terms
    assert (np.abs(got - fp32) <= 8 * 2.0 ** -8 * (np.abs(a) @ np.abs(b))).all()


@pytest.mark.parametrize("kwargs, says", [
    (dict(accum="fp64"), "unknown accumulator 'fp64'; valid: fp32, bf16"),
    (dict(accum=Accumulator(promote_every=48)), "must be a multiple of the block (32)"),
    (dict(elem_a="fp16"), "MX element format must be one of"),
    (dict(scaling="row"), "unknown scaling 'row'; valid: block, channel"),
])
def test_bad_configurations_are_one_line(kwargs, says):
    with pytest.raises(OptionError) as info:
        GemmConfig(**kwargs)
    assert says in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("fmt, says", [("fp8e4m3", "signed format with infinities"),
                                       ("e8m20_b100", "that float32 holds"), ("fp9", "unknown format")])
def test_accumulator_formats_that_float32_cannot_hold_are_refused(fmt, says):
    with pytest.raises(OptionError, match=says):
        Accumulator(fmt)


def test_straight_through_gradients_of_the_emulated_matmul():
    import jax

    from fpforge.golden import mx_dequantize
    a, b = _data((3, 64), 7), _data((64, 2), 8)
    g = np.arange(6, dtype=np.float32).reshape(3, 2) - 2
    ga, gb = jax.grad(lambda x, y: (emulated_matmul(x, y) * g).sum(), argnums=(0, 1))(a, b)
    qa = mx_dequantize(*mx_quantize(a, "fp8e4m3", block=32), "fp8e4m3", 32)
    qb = mx_dequantize(*mx_quantize(np.ascontiguousarray(b.T), "fp8e4m3", block=32),
                       "fp8e4m3", 32)
    np.testing.assert_array_equal(np.asarray(ga), g @ np.asarray(qb))
    np.testing.assert_array_equal(np.asarray(gb), np.asarray(qa).T @ g)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_fake_quantize_passes_gradients_straight_through_in_the_input_dtype(dtype):
    import jax
    import jax.numpy as jnp

    from fpforge import golden
    x = jnp.asarray([0.3, -1.7, 2.2, 5.0e3, 1.0e-3], dtype)
    y = golden.fake_quantize(x, "fp8e4m3", saturate=True)
    assert y.dtype == x.dtype
    # every fp8e4m3 value is exact in the three dtypes: the values are E4M3's
    want = np.asarray(golden.fake_quantize(x.astype(jnp.float32), "fp8e4m3", saturate=True))
    np.testing.assert_array_equal(np.asarray(y, np.float32), want)
    w = jnp.arange(5, dtype=dtype)
    grad = jax.grad(lambda v: (golden.fake_quantize(v, "fp8e4m3", saturate=True) * w).sum())(x)
    assert grad.dtype == x.dtype
    np.testing.assert_array_equal(np.asarray(grad, np.float32), np.arange(5))


# make test: each element format once, each accumulator at least once (see covering)
@pytest.mark.parametrize("accum, elem", covering(
    [Accumulator("float32", "rne"), Accumulator("bfloat16", "rup"),
     Accumulator("float16", "rtz", promote_every=64)],
    ["fp8e4m3", "fp4e2m1", "fp6e2m3", "fp6e3m2", "mxint8"], row_id=lambda a: a.describe()))
def test_float64_block_sums_equal_the_dot_units_integer_model(elem, accum):
    """Every code (NaN elements, +-0, subnormals), zero blocks, and every scale from 0 to the
    E8M0 NaN: the float64 path and the dot unit's integer model give the same bits."""
    from fpforge.golden.gemm import matmul_codes, exact_in_float64
    config = GemmConfig(elem, block=16, accum=accum)
    assert exact_in_float64(config)
    rng = np.random.default_rng(9)
    width = element_format(elem).width
    m, n, k = 6, 5, 16 * 6
    ea = rng.integers(0, 1 << width, (m, k)).astype(np.uint8)
    eb = rng.integers(0, 1 << width, (n, k)).astype(np.uint8)
    ea[0, :16] = 0                                  # a zero block
    eb[1, 16:32] = ea[1, 16:32] = 1 << (width - 1)  # -0 x -0 products (MXINT8: -128)
    sa = rng.integers(0, 256, (m, 6)).astype(np.uint8)
    sb = rng.integers(100, 155, (n, 6)).astype(np.uint8)
    sa[2] = 127
    sb[3, 2] = 255                                  # the NaN scale
    both = [np.asarray(matmul_codes(ea, sa, eb, sb, config=config, via_float64=f))
            for f in (True, False)]
    np.testing.assert_array_equal(both[0].view(np.uint32), both[1].view(np.uint32))


def test_float64_path_is_refused_where_it_would_not_be_exact():
    from fpforge.golden.gemm import exact_in_float64
    assert not exact_in_float64(GemmConfig("fp8e5m2"))           # 64 + 5 bits of span
    assert not exact_in_float64(GemmConfig("fp8e4m3", accum=Accumulator(rounding="rdn")))
    assert exact_in_float64(GemmConfig("fp8e4m3", block=64))     # 36 + 6 bits


# make test: each element format once, with and without promotion (see covering)
@pytest.mark.parametrize("promote, elem", covering([None, 64], ["fp8e4m3", "fp4e2m1", "mxint8"]))
def test_float32_hardware_sum_equals_the_shared_rounder(elem, promote):
    """The float32 accumulator's fast path (XLA's float32 where it is IEEE's) against the dot
    unit's integer model and the shared rounder; then a subnormal block result, which XLA
    would flush, must send it to the shared rounder and still agree."""
    _fast_path_agrees(elem, promote, blocks=7)


@pytest.mark.parametrize("promote", [None, 64])
def test_float32_hardware_sum_over_more_blocks_than_one_unrolled_step(promote):
    """2 x FLOAT32_SUM_UNROLL + 6 blocks: the fast path's loop over whole unrolled steps and a
    part of one, a promotion interval (4 blocks) straddling each step's end, and a last,
    partial interval."""
    from fpforge.golden.gemm import FLOAT32_SUM_UNROLL
    _fast_path_agrees("fp8e4m3", promote, blocks=2 * FLOAT32_SUM_UNROLL + 6)


def _fast_path_agrees(elem, promote, blocks):
    from fpforge.golden.gemm import matmul_codes
    config = GemmConfig(elem, block=16, accum=Accumulator(promote_every=promote))
    rng = np.random.default_rng(11)
    width = element_format(elem).width
    nan_free = [c for c in range(1 << width) if not np.isnan(ml_decode(
        np.array([c]), element_format(elem).grid.name)[0])] if elem != "mxint8" else \
        list(range(256))
    m, n, k = 8, 7, 16 * blocks
    ea = rng.choice(nan_free, (m, k)).astype(np.uint8)
    eb = rng.choice(nan_free, (n, k)).astype(np.uint8)
    sa = rng.integers(110, 140, (m, blocks)).astype(np.uint8)
    sb = rng.integers(110, 140, (n, blocks)).astype(np.uint8)
    for _ in range(2):
        fast, slow = (np.asarray(matmul_codes(ea, sa, eb, sb, config=config, via_float64=f))
                      for f in (True, False))
        np.testing.assert_array_equal(fast.view(np.uint32), slow.view(np.uint32))
        sa[0, :], sb[:, :] = 1, 103      # 2^-126 x 2^-24: subnormal block results in row 0
    assert ((np.abs(fast[0]) < 2.0 ** -126) & (fast[0] != 0)).any()


def test_bench_gemm_checks_its_bits_and_refuses_bad_sizes(capsys):
    from fpforge.cli import main
    from fpforge.golden.bench_gemm import run_bench
    assert run_bench(size=64, repeat=1) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("emulated: ")]
    assert len(rows) == 7 and all(line.split()[-1] == "True" for line in rows)
    for name in ("Hopper FP8", "Ada FP8", "kind::mxf8f6f4", "kind::mxf4nvf4", "CDNA3 FP8"):
        assert sum(name in line for line in out.splitlines()) == 2     # its row and its target
    assert main(["bench-gemm", "--size", "96"]) == 2
    err = capsys.readouterr().err
    assert "--size must be a positive multiple of 64" in err and err.count("\n") == 1


# make test: each rule once, each element format at least once (the diagonal; see covering)
@pytest.mark.parametrize("elem, rule", covering(["fp8e4m3", "fp4e2m1", "mxint8"],
                                                ["floor", "ceil", "rceil", "even", "vllm"]))
def test_channel_scales_are_the_rule_on_the_whole_row(rule, elem):
    """Per-channel quantization (the row's scale, repeated per block) equals the MX quantizer
    with one block as long as the row, where that block fits the quantizer (K <= 256)."""
    from fpforge.golden.mx import channel_quantize
    from fpforge.rtl.mx import MxQuantSpec
    x = _data((64, 256), 12)
    x[0, :] = 0.0
    x[1, 5] = np.inf
    x[2, 7] = np.nan
    x[3, :] = 2.0 ** -140                          # float32 subnormals
    scales, elems = channel_quantize(x, spec=MxQuantSpec(elem, block=32, scale_rule=rule),
                                     blocks=8)
    want_s, want_e = mx_quantize(x, elem, block=256, scale_rule=rule)
    np.testing.assert_array_equal(np.asarray(scales), np.repeat(np.asarray(want_s), 8, axis=1))
    np.testing.assert_array_equal(np.asarray(elems), np.asarray(want_e))


@pytest.mark.parametrize("elem", ["fp8e4m3", "fp6e3m2", "fp4e2m1"])
def test_tensor_scale_is_the_floor_rule_on_the_tensor_and_elements_round_to_it(elem):
    """Per-tensor scaling against numpy and MPFR: one scale, floor(log2(amax)) - emax of the
    whole tensor (OCP MX 6.3's rule), every element x / 2^s rounded to nearest even (MPFR at
    the element's precision and exponent range) and clamped to its largest finite value."""
    from fpforge.golden.gemm_operands import operand_quantize
    from fpforge.rtl.format_names import resolve as resolve_fmt
    x = _data((8, 128), 13)
    scales, codes = (np.asarray(v) for v in operand_quantize(
        x, elem, GemmConfig(elem, block=32, scaling="tensor")))
    grid = element_format(elem).grid
    s = int(np.floor(np.log2(np.abs(x).max()))) - grid.emax
    assert (scales == s + 127).all()
    fmt = resolve_fmt(grid.name)
    ctx = gmpy2.context(precision=fmt.precision, emin=fmt.emin - fmt.man_bits + 1,
                        emax=fmt.emax + 1, subnormalize=True, round=gmpy2.RoundToNearest)
    top = Fraction(fmt.max_finite)
    want = []
    for v in x.ravel():
        r = Fraction(*_rounded(Fraction(float(v)) / Fraction(2) ** s, ctx).as_integer_ratio())
        want.append(float(max(-top, min(top, r))))
    got = ml_decode(codes.ravel(), grid.name).astype(np.float64)
    np.testing.assert_array_equal(got, np.array(want))


def test_stochastic_rounding_repeats_per_seed_and_moves_with_it():
    a, b = _data((4, 64), 14), _data((64, 3), 15)
    one, again, other = (np.asarray(emulated_matmul(a, b, GemmConfig("fp4e2m1",
                                                                     rounding="stochastic",
                                                                     seed=s)))
                         for s in (1, 1, 2))
    np.testing.assert_array_equal(one, again)
    assert (one != other).any()


def _symmetric_int_reference(a, b, bits=8, rounder=np.rint):
    """INT8 / INT4 with one symmetric float32 scale per row of a / column of b, written out in
    numpy: q = round(x / s) clamped to +-top (top = 127 or 7), with the element grid's scale
    s = amax / (top / 2^f) (f = 6 or 2 fraction bits); exact integer block sums of 32, a float32
    running sum (numpy's IEEE adds), then y x RN32(s_a s_b) rounded once (float64 products are
    exact)."""
    top, f = (1 << (bits - 1)) - 1, bits - 2
    max_elem = np.float32(top / (1 << f))
    sa = (np.abs(a).max(1) / max_elem).astype(np.float32)
    sb = (np.abs(b).max(0) / max_elem).astype(np.float32)
    qa = np.clip(rounder((a / sa[:, None]).astype(np.float32) * (1 << f)), -top, top)
    qb = np.clip(rounder((b / sb[None, :]).astype(np.float32) * (1 << f)), -top, top)
    qa, qb = qa.astype(np.int64), qb.astype(np.int64)
    out = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            acc = np.float32(0)
            for k0 in range(0, a.shape[1], 32):
                acc = np.float32(acc + np.float32(int(qa[i, k0:k0 + 32] @ qb[k0:k0 + 32, j])
                                                  / (1 << 2 * f)))
            scale = np.float32(np.float64(sa[i]) * np.float64(sb[j]))
            out[i, j] = np.float32(np.float64(acc) * np.float64(scale))
    return out


@pytest.mark.parametrize("elem,bits", [("mxint8", 8), ("int4", 4)])
def test_float32_channel_scales_on_integers_are_symmetric_int(elem, bits):
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((5, 128)) * 2.0 ** rng.integers(-3, 4, (5, 1))).astype(np.float32)
    b = (rng.standard_normal((128, 6)) * 3).astype(np.float32)
    y = np.asarray(emulated_matmul(a, b, GemmConfig(elem, scaling="channel_f32")))
    np.testing.assert_array_equal(y.view(np.uint32),
                                  _symmetric_int_reference(a, b, bits).view(np.uint32))
    # the comparison can fail: the same reference truncating instead of rounding
    wrong = _symmetric_int_reference(a, b, bits, np.trunc)
    assert np.count_nonzero(y.view(np.uint32) != wrong.view(np.uint32)) > 0


@pytest.mark.parametrize("elem", ["fp8e4m3", "fp4e2m1", "int4"])
def test_float32_scales_are_ieee_divisions(elem):
    """amax / max_elem is IEEE float32 division (numpy's), subnormal scales included: XLA alone
    would multiply by the rounded reciprocal of max_elem (about half of these rows differ) and
    flush subnormals."""
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((4096, 32)) * 2.0 ** rng.integers(-20, 20, (4096, 1)))
    x[:16] *= 2.0 ** -115                      # amax near 2^-126: subnormal scales
    x = x.astype(np.float32)
    fa, _ = float_scales(GemmConfig(elem, scaling="channel_f32"), x, x.T)
    want = np.abs(x).max(1) / np.float32(element_format(elem).grid.max_finite)
    assert (want[:16] < np.float32(2.0 ** -126)).any()
    np.testing.assert_array_equal(np.asarray(fa).view(np.uint32), want.view(np.uint32))
    reciprocal = np.abs(x).max(1) * np.float32(1 / float(element_format(elem).grid.max_finite))
    assert (reciprocal.view(np.uint32) != want.view(np.uint32)).any()


@pytest.mark.parametrize("elem", ["fp8e4m3", "fp4e2m1"])
def test_float32_tensor_scale_maps_amax_to_the_largest_element(elem):
    rng = np.random.default_rng(4)
    a = (rng.standard_normal((8, 64)) * 1e-3).astype(np.float32)
    config = GemmConfig(elem, scaling="tensor_f32")
    ea, sa, _, _ = quantized_codes(config, a, a.T, (None, None))
    grid = element_format(elem).grid
    values = np.abs(np.asarray(mx_dequantize(sa, ea, elem, 32)))
    assert np.all(np.asarray(sa) == 127) and values.max() == float(grid.max_finite)


# ----- value-scaled blocks (NVFP4, P3109) --------------------------------------------------------

def _nvfp4_reference(a, b, rule, float64_sum=False):
    """An NVFP4 GEMM written out in numpy from the recipe's block codes (golden.block_quantize,
    checked against TransformerEngine / torchao in test_blockscale): each block of 16 summed
    exactly in float64 from ml_dtypes' values, times its two E4M3 scales (exact), rounded to
    float32; a float32 running sum; then times the per-tensor factor, rounded once.
    TE: alpha = fl(fl(amax_a amax_b) / 7225344); torchao: fl(s2_a s2_b), s2 = fl(amax / 2688).
    ``float64_sum`` keeps the running sum in float64 (a wrong accumulator)."""
    from fpforge.golden.blockscale import block_quantize
    from fpforge.rtl.blockscale import preset
    s = preset(rule)
    qa, qb = block_quantize(a, s), block_quantize(np.ascontiguousarray(b.T), s)
    va = ml_decode(np.asarray(qa.elements), "float4_e2m1fn").astype(np.float64)
    vb = ml_decode(np.asarray(qb.elements), "float4_e2m1fn").astype(np.float64)
    fa = ml_decode(np.asarray(qa.scales), "float8_e4m3fn").astype(np.float64)
    fb = ml_decode(np.asarray(qb.scales), "float8_e4m3fn").astype(np.float64)
    amax_a, amax_b = np.float32(np.abs(a).max()), np.float32(np.abs(b).max())
    if rule == "nvfp4_te":
        alpha = np.float32(np.float32(amax_a * amax_b) / np.float32(7225344.0))
    else:
        alpha = np.float32((amax_a / np.float32(2688.0)) * (amax_b / np.float32(2688.0)))
    out = np.zeros((a.shape[0], b.shape[1]), np.float32)
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            acc = np.float64(0) if float64_sum else np.float32(0)
            for blk in range(a.shape[1] // 16):
                cols = slice(16 * blk, 16 * blk + 16)
                term = np.float32((va[i, cols] @ vb[j, cols]) * fa[i, blk] * fb[j, blk])
                acc = acc + term if float64_sum else np.float32(acc + term)
            out[i, j] = np.float32(np.float64(acc) * np.float64(alpha))
    return out


@pytest.mark.parametrize("rule", ["nvfp4_te", "nvfp4_torchao"])
def test_nvfp4_gemm_is_the_recipe_written_out(rule):
    rng = np.random.default_rng(21)
    # blocks of very different magnitudes: the float32 running sum rounds
    a = (rng.standard_normal((6, 96)) * 2.0 ** rng.integers(-8, 8, (6, 6)).repeat(16, 1))
    a = a.astype(np.float32)
    b = (rng.standard_normal((96, 5)) * 0.01).astype(np.float32)
    y = np.asarray(emulated_matmul(a, b, GemmConfig("fp4e2m1", block=16, scale_rule=rule)))
    want = _nvfp4_reference(a, b, rule)
    np.testing.assert_array_equal(y.view(np.uint32), want.view(np.uint32))
    wrong = _nvfp4_reference(a, b, rule, float64_sum=True)
    assert np.count_nonzero(y.view(np.uint32) != wrong.view(np.uint32)) > 0


@pytest.mark.parametrize("elem,rule,block", [
    pytest.param("fp4e2m1", "nvfp4_modelopt", 16, marks=pytest.mark.slow),
    pytest.param("fp4e2m1", "nvfp4_4over6", 16, marks=pytest.mark.slow),
    pytest.param("binary8p4se", "p3109_maxabs", 32, marks=pytest.mark.slow)])
def test_value_scaled_blocks_float64_path_is_the_dot_unit(elem, rule, block):
    """The float64 block sums (with the scales' values) agree with the dot unit's integer model
    (scale_format = the recipe's scale format) on codes and scales of the recipe."""
    from fpforge.golden.gemm import matmul_codes
    from fpforge.golden.gemm_operands import quantized_operand
    config = GemmConfig(elem, block=block, scale_rule=rule, accum="bf16")
    rng = np.random.default_rng(22)
    a = (rng.standard_normal((5, 4 * block)) * 2.0 ** rng.integers(-8, 8, (5, 4))
         .repeat(block, 1)).astype(np.float32)
    b = rng.standard_normal((4 * block, 4)).astype(np.float32)
    sa, ea, _ = quantized_operand(a, elem, config)
    sb, eb, _ = quantized_operand(np.ascontiguousarray(b.T), elem, config)
    assert config.dot_spec.value_scales
    fast, slow = (np.asarray(matmul_codes(ea, sa, eb, sb, config=config, via_float64=f))
                  for f in (True, False))
    np.testing.assert_array_equal(fast.view(np.uint32), slow.view(np.uint32))
    assert np.count_nonzero(fast) > 10


@pytest.mark.parametrize("kw,message", [
    (dict(elem_a="fp8e4m3", block=16, scale_rule="nvfp4_te"),
     "nvfp4_te quantizes fp4e2m1 elements"),
    (dict(elem_a="fp4e2m1", block=16, scale_rule="nvfp4_te", scaling="channel"),
     "scaling must be block, not channel"),
    (dict(elem_a="fp4e2m1", scale_rule="nvfp4"), "unknown scale rule 'nvfp4'; valid: floor"),
    (dict(elem_a="fp8e4m3", scale_rule="p3109_maxabs", accum="blackwell_mxf8f6f4"),
     "step takes E8M0 scales"),
])
def test_value_scaled_config_errors(kw, message):
    with pytest.raises(OptionError, match=message):
        GemmConfig(**kw)


@pytest.mark.parametrize("elem,bits", [("mxint8", 8), ("int4", 4)])
def test_quantized_operand_values_carry_the_float32_scale(elem, bits):
    """Q(x) under a float32 per-row scale is fl(q / 2^f * s), the symmetric integer's value
    (a tensor QSNR of x against the unscaled elements would be meaningless)."""
    from fpforge.golden.gemm_operands import quantized_operand
    rng = np.random.default_rng(23)
    # the shape of test_float32_channel_scales_on_integers_are_symmetric_int's a: the model's
    # operations, run op by op here, are then compiled once for both
    x = (rng.standard_normal((5, 128)) * 2.0 ** rng.integers(-9, 9, (5, 1))).astype(np.float32)
    top, f = (1 << (bits - 1)) - 1, bits - 2
    s = (np.abs(x).max(1) / np.float32(top / (1 << f))).astype(np.float32)
    q = np.clip(np.rint((x / s[:, None]).astype(np.float32) * (1 << f)), -top, top)
    want = (q / np.float32(1 << f)).astype(np.float32) * s[:, None] + np.float32(0)  # one zero
    got = np.asarray(quantized_operand(x, elem, GemmConfig(elem, scaling="channel_f32")).values)
    np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
