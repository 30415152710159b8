"""Emulated matrix multiply: the arithmetic of an array of fpforge dot units, bit for bit.

``emulated_matmul(a, b, config)`` computes a @ b (float32 in, float32 out) the way a
block-scaled matrix engine built from fpforge's units does (docs/codesign.md), as ``config``
(golden/gemm_config.py) describes it:

1. Both operands are quantized along the contraction axis K into OCP MX blocks of ``block``
   elements (one E8M0 scale per block, any power-of-two scale rule, any rounding): ``mx_quantize``
   (or per channel, per tensor, by a value rule: golden/gemm_operands.py).
2. Each block pair is one ``dot`` unit: the exact sum of the ``block`` exact products, times
   the two scales, rounded once into the accumulator's format (``dot_unit``, the RTL's own
   golden function).
3. The block results are summed in K order by a float adder of the accumulator's format and
   rounding (``add_unit``). With ``promote_every`` = N_C, that running sum restarts every N_C
   terms and each partial sum is added into a float32 running sum (DeepSeek-V3's promotion of
   the tensor cores' partial sums to CUDA-core float32 registers every 128 terms).

Every step is a golden function the benches compare with the RTL, so the emulated matrix
multiply is what that hardware computes, not a float32 stand-in.
"""

from __future__ import annotations

import functools

from fpforge.rtl.accum import Fixed, Grouped, TwoStage
from fpforge.rtl.elements import E8M0_BIAS, E8M0_NAN, element_format
from fpforge.rtl.formats import CATALOG, FloatFormat
from fpforge.rtl.options import Rounding, UnitOptions
from fpforge.rtl.scalar import AddSpec, CvtSpec

from ._jax import jax, jnp
from .blockscale import finite_amax, gemm_alpha
from .decode import decode
from .dot import dot_codes
from .fp32 import array_bits, array_floats
from .gemm_config import FLOAT_SCALINGS, Accumulator, GemmConfig
from .gemm_operands import float_scales, quantized_operand, seeded_bits
from .mx import decode_elements
from .rounding import Mode, raw_from_float64, round_raw
from .scalar import add_unit, cvt_unit
from .tensor_core import (FusedAccumulator, exponents, float32_exactly, fused_matmul,
                          group_sum_dtype, grouped_fast_path, grouped_fused_matmul,
                          grouped_prescaled_matmul, nearest_even_float32, step_dtype,
                          two_stage_dtype, two_stage_matmul)

__all__ = ["emulated_matmul", "matmul_codes", "FUSED_STEPS", "exact_in_float64",
           "code_values_f64", "scale_values_f64", "times_float32", "scaled_epilogue"]

F32, E8M0 = CATALOG["float32"], CATALOG["float8_e8m0fnu"]


def emulated_matmul(a, b, config: GemmConfig = GemmConfig(), *, rbits_a=None, rbits_b=None):
    """a (M, K) @ b (K, N), float32 -> float32 through ``config``'s hardware; K a multiple of
    the block. ``rbits_a`` / ``rbits_b`` (integer arrays shaped like a and b.T) feed a
    stochastic element rounding (default: ``seeded_bits(config.seed, ...)``).

    Differentiable with the straight-through estimator of quantization-aware training: the
    gradients are those of Q(a) @ Q(b) in float32 (dA = g Q(b)^T, dB = Q(a)^T g), Q the
    operands' block quantize-dequantize."""
    a, b = jnp.asarray(a, jnp.float32), jnp.asarray(b, jnp.float32)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"emulated_matmul takes (M, K) and (K, N) arrays, not {a.shape} and "
                         f"{b.shape}")
    step = config.accum.group if isinstance(config.accum, FusedAccumulator) else config.block
    if a.shape[1] % step:
        raise ValueError(f"K = {a.shape[1]} must be a multiple of the "
                         + (f"block size {step}" if step == config.block else
                            f"{config.accum.source} step's {step} products"))
    if Rounding.parse(config.rounding).stochastic and rbits_a is None and rbits_b is None:
        rbits_a, rbits_b = seeded_bits(config.seed, a.shape, b.shape[::-1])
    return _emulated(config, a, b, (rbits_a, rbits_b))




@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def _emulated(config: GemmConfig, a, b, rbits):
    return _emulated_fwd(config, a, b, rbits)[0]


def _emulated_fwd(config, a, b, rbits):
    qa = quantized_operand(a, config.elem_a, config, rbits[0])
    qb = quantized_operand(b.T, config.elem_b or config.elem_a, config, rbits[1])
    y = matmul_codes(qa.elements, qa.scales, qb.elements, qb.scales, config=config)
    if config.scaling in FLOAT_SCALINGS:
        y = scaled_epilogue(y, *float_scales(config, a, b))
    elif config.value_scaled:
        # the GEMM's per-tensor factor of a two-level recipe (NVFP4), from the tensors' amaxes
        alpha = gemm_alpha(config.quant_spec(config.elem_a).scaling,
                           finite_amax(array_bits(a)), finite_amax(array_bits(b)))
        if alpha is not None:
            y = times_float32(y, alpha)
    return y, (qa.values, qb.values)


@jax.jit
def times_float32(y, scale):
    """y (M, N) float32 times float32 scale patterns that broadcast against it, each product
    rounded once to nearest even into float32 (an exact float64 product through the shared
    rounder: IEEE's bits, subnormals included)."""
    value = float32_exactly(array_bits(y))[0] * \
        float32_exactly(jnp.asarray(scale, jnp.uint32))[0]
    codes, _ = round_raw(raw_from_float64(value), F32, UnitOptions(), Mode(Rounding.RNE))
    return array_floats(codes.astype(jnp.uint32))


@jax.jit
def scaled_epilogue(y, fa, fb):
    """y (M, N) float32 times the float32 scales: y x RN32(fa_i x fb_j), each product rounded
    once to nearest even into float32 (a per-channel or per-tensor scaled GEMM's epilogue)."""
    scale = float32_exactly(array_bits(fa))[0][:, None] * \
        float32_exactly(array_bits(fb))[0][None, :]
    codes, _ = round_raw(raw_from_float64(scale), F32, UnitOptions(), Mode(Rounding.RNE))
    return times_float32(y, codes.astype(jnp.uint32))


def _emulated_bwd(config, residuals, g):
    qa, qb = residuals                      # (M, K) and (N, K)
    return g @ qb, (qa.T @ g), None


_emulated.defvjp(_emulated_fwd, _emulated_bwd)


@functools.partial(jax.jit, static_argnames=("config", "via_float64"))
def matmul_codes(ea, sa, eb, sb, *, config: GemmConfig, via_float64: bool | None = None):
    """(M, K) and (N, K) element codes with their (M, K/k) and (N, K/k) scales -> (M, N).
    The block results come from float64 sums where that is exact (``exact_in_float64``),
    else from the dot unit's integer model; ``via_float64`` forces one (the tests compare
    them)."""
    k, acc = config.block, config.accum
    m, n, blocks = ea.shape[0], eb.shape[0], ea.shape[1] // k
    ea = ea.reshape(m, blocks, k).transpose(1, 0, 2)            # (blocks, M, k)
    eb = eb.reshape(n, blocks, k).transpose(1, 0, 2)
    sa, sb = sa.T, sb.T                                          # (blocks, M)
    # Blocks per promotion; without promotion, one past the last block (never).
    every = acc.promote_every // k if acc.promote_every else blocks + 1
    if isinstance(acc, FusedAccumulator):
        return _fused(ea, sa, eb, sb, config)
    if not (exact_in_float64(config) if via_float64 is None else via_float64):
        spec = config.dot_spec

        def dot(block):
            xa, xb, ya, yb = block
            return dot_codes(xa[:, None, :], xb[None, :, :], ya[:, None], yb[None, :],
                             spec=spec)[0]
        return _running_sum((ea, eb, sa, sb), dot, (m, n), blocks, every, acc)
    scaled = _scaled_block_sums(ea, sa, eb, sb, config)

    def exact():
        return _running_sum(_rounded(scaled, config), lambda y: y, (m, n), blocks, every, acc)
    if acc.fmt != F32 or acc.rounding is not Rounding.RNE:
        return exact()
    # float32 hardware where it provably gives IEEE's bits, the shared rounder elsewhere.
    y, doubtful = _float32_running_sum(scaled, blocks, every)
    return jax.lax.cond(doubtful, exact, lambda: y)


def _running_sum(xs, block_result, shape, blocks: int, every: int, acc: Accumulator):
    """Steps 3 and 4: add each block's result (``block_result(x)``, codes of the accumulator's
    format) into the running sum, promoting it into float32 every ``every`` blocks."""
    add = AddSpec(acc.fmt, (acc.fmt, acc.fmt), UnitOptions(rounding=acc.rounding))

    def step(carry, x):
        total, partial, i = carry
        partial = add_unit(add, {"a": partial, "b": block_result(x)}, want=("y",))["y"]
        promote = (i + 1) % every == 0
        total = jnp.where(promote, _add_f32(total, _widen(partial, acc.fmt)), total)
        partial = jnp.where(promote, jnp.zeros_like(partial), partial)
        return (total, partial, i + 1), None

    zero_acc = jnp.zeros(shape, jnp.dtype(f"uint{_code_bits(acc.fmt)}"))
    (total, partial, _), _ = jax.lax.scan(step, (jnp.zeros(shape, jnp.uint32), zero_acc, 0), xs)
    if acc.promote_every is None:
        total = _widen(partial, acc.fmt)
    elif blocks % every:                    # a last, partial promotion interval
        total = _add_f32(total, _widen(partial, acc.fmt))
    return jax.lax.bitcast_convert_type(total.astype(jnp.uint32), jnp.float32)


# ----- the block results through float64 --------------------------------------------------------
# Every element value is a multiple of 2^lsb_min below 2^(emax + 1), so every product of a block,
# and every partial sum of them in any order, is an integer multiple of 2^(lsb_a + lsb_b) below
# k * 2^(emax_a + emax_b + 2): when that span fits float64's 53 bits, a float64 matrix multiply
# of the element values forms each block's exact sum, whatever order the BLAS adds in, and the
# scales' power of two keeps it exact (far inside float64's normal range). The shared rounder
# then rounds it, as the dot unit rounds its exact sum. Two things the float64 sum does not
# carry are kept out: the sign of a zero sum (a block of -0 products gives +0 in float64, -0
# from the dot unit) matters only to a running sum rounded down (x + -0 = x, and +0 + -0 = +0,
# in every other mode); infinite elements (E5M2's) never meet the span bound.

def _fused(ea, sa, eb, sb, config: GemmConfig):
    """A tensor core's fused, truncating steps (golden/tensor_core.py, chosen by the step's
    accumulation class: FUSED_STEPS), then per-channel scales, if any, times the float32
    result, rounded once to nearest even."""
    acc = config.accum
    if type(acc.accum) not in FUSED_STEPS:
        raise TypeError(f"golden/gemm.py FUSED_STEPS has no steps for {type(acc.accum).__name__}")
    fa, fb = element_format(config.elem_a), element_format(config.elem_b or config.elem_a)
    c = FUSED_STEPS[type(acc.accum)](ea, sa, eb, sb, fa, fb, config)
    if acc.scales_in_group:
        return c
    value = float32_exactly(jax.lax.bitcast_convert_type(c, jnp.uint32))[0] * \
        scale_values_f64(sa[0])[:, None] * scale_values_f64(sb[0])[None, :]    # exact
    return jax.lax.bitcast_convert_type(nearest_even_float32(value), jnp.float32)


def _with_exponents(ea, eb, fa, fb, dtype):
    """The elements' values in ``dtype`` and the exponents of their leading bits."""
    ua, ub = (decode_elements(jnp.arange(1 << e.width, dtype=jnp.uint32), e) for e in (fa, fb))
    xa = exponents(ua, fa.grid.man_bits)[ea.astype(jnp.int32)]
    xb = exponents(ub, fb.grid.man_bits)[eb.astype(jnp.int32)]
    va = code_values_f64(fa).astype(dtype)[ea.astype(jnp.int32)]
    vb = code_values_f64(fb).astype(dtype)[eb.astype(jnp.int32)]
    return va, xa, vb, xb


def _fixed_steps(ea, sa, eb, sb, fa, fb, config: GemmConfig):
    """Hopper's, Ada's and Blackwell's kind::mxf8f6f4 step: ``fused_matmul``."""
    va, xa, vb, xb = _with_exponents(ea, eb, fa, fb, step_dtype(config.accum, fa, fb))
    return fused_matmul(va, xa, sa, vb, xb, sb, config.accum)


def _grouped_steps(ea, sa, eb, sb, fa, fb, config: GemmConfig):
    """Blackwell's kind::mxf4nvf4 step: ``grouped_fused_matmul`` on the scales' values, the
    group sums in the dtype ``group_sum_dtype`` allows; first ``grouped_prescaled_matmul``
    where it applies, whose result stands if it is exact everywhere."""
    acc, scale_fmt = config.accum, config.scale_fmt
    dtype = group_sum_dtype(acc, fa, fb, scale_fmt)
    va, vb = (code_values_f64(f).astype(dtype)[e.astype(jnp.int32)]
              for f, e in ((fa, ea), (fb, eb)))
    fsa, fsb = scale_values_f64(sa, scale_fmt), scale_values_f64(sb, scale_fmt)

    def steps():
        return grouped_fused_matmul(va, fsa, vb, fsb, acc, scale_fmt.emin)
    if dtype != jnp.float32 or not grouped_fast_path(acc, fa, fb, scale_fmt):
        return steps()
    # one matrix multiply per step where no truncation acts; the steps wherever one might
    y, exact = grouped_prescaled_matmul(va, fsa, vb, fsb, acc, fa, fb, scale_fmt)
    return jax.lax.cond(jnp.all(exact), lambda: y, steps)


def _two_stage_steps(ea, sa, eb, sb, fa, fb, config: GemmConfig):
    """CDNA3's step: ``two_stage_matmul``, in the values' dtype ``two_stage_dtype`` allows."""
    va, xa, vb, xb = _with_exponents(ea, eb, fa, fb, two_stage_dtype(config.accum, fa, fb))
    return two_stage_matmul(va, xa, sa, vb, xb, sb, config.accum)


# A tensor core's steps over the blocks, keyed by the step's accumulation class (rtl/accum.py),
# as the RTL dot unit's MxDot.ACCUMULATE and golden/dot.py's SUMS are.
FUSED_STEPS = {Fixed: _fixed_steps, Grouped: _grouped_steps, TwoStage: _two_stage_steps}


def exact_in_float64(config: GemmConfig) -> bool:
    ea, eb = element_format(config.elem_a), element_format(config.elem_b or config.elem_a)
    # value scales (NVFP4's E4M3) multiply each block's sum by their significands' product
    scale_bits = 2 * config.scale_fmt.precision if config.value_scaled else 0
    span = (ea.emax + 1 - ea.lsb_min) + (eb.emax + 1 - eb.lsb_min) + \
        (config.block - 1).bit_length() + scale_bits
    return span <= 53 and isinstance(config.accum, Accumulator) and \
        config.accum.rounding is not Rounding.RDN


def code_values_f64(elem):
    """Every code's value as float64 (NaN for NaN codes): the decoder's own sig * 2^exp."""
    u = decode_elements(jnp.arange(1 << elem.width, dtype=jnp.uint32), elem)
    v = jnp.where(u.is_inf, jnp.inf, jnp.ldexp(u.sig.astype(jnp.float64), u.exp))
    return jnp.where(u.is_nan, jnp.nan, jnp.where(u.sign == 1, -v, v))


def _scaled_block_sums(ea, sa, eb, sb, config: GemmConfig):
    """(blocks, M, N) float64: each block's exact sum times its two scales, NaN where an
    element or a scale is NaN. Each operand's scale multiplies its elements before the sum (a
    power of two: exact, and every block's products share it, so the span argument holds)."""
    spec = config.dot_spec
    va = code_values_f64(spec.elem_a)[ea.astype(jnp.int32)] * \
        scale_values_f64(sa, spec.scale_fmt)[:, :, None]
    vb = code_values_f64(spec.elem_b)[eb.astype(jnp.int32)] * \
        scale_values_f64(sb, spec.scale_fmt)[:, :, None]
    return jnp.einsum("bmk,bnk->bmn", va, vb, precision=jax.lax.Precision.HIGHEST)


def scale_values_f64(codes, fmt: FloatFormat = E8M0):
    """Scale codes as float64 values: E8M0's powers of two (2^-127 .. 2^127; NaN for 0xFF), or
    the values of a value scale's format (NaN for its NaNs)."""
    if fmt == E8M0:
        e = codes.astype(jnp.int32) - E8M0_BIAS
        return jnp.where(codes == E8M0_NAN, jnp.nan,
                         jnp.ldexp(jnp.ones(e.shape, jnp.float64), e))
    u = decode(codes.astype(jnp.uint32), fmt)
    v = jnp.ldexp(u.sig.astype(jnp.float64), u.exp)
    return jnp.where(u.is_nan, jnp.nan, jnp.where(u.sign == 1, -v, v))


def _rounded(scaled, config: GemmConfig):
    """The scaled block sums rounded into the accumulator's format by the shared rounder."""
    acc = config.accum
    return round_raw(raw_from_float64(scaled), acc.fmt, config.dot_spec.options,
                     Mode(acc.rounding))[0]


# Blocks of the float32 running sum unrolled per loop step. Unrolling all of them made XLA's
# compile time grow with K: 64 x 4096 x 64 in blocks of 8 (512 blocks) compiled in 17 CPU-s
# and ran in 111 ms; 32 at a time, 1.7 CPU-s and 48 ms, the same bits (XLA's defaults, 2-core
# AMD EPYC). bench-gemm's 1024^3 in blocks of 32 stays one unrolled step.
FLOAT32_SUM_UNROLL = 32


def _float32_running_sum(scaled, blocks: int, every: int):
    """The float32 round-to-nearest-even running sum (with promotion) in XLA's float32, and
    whether its bits may differ from IEEE's. Every conversion (float64 to float32) and every
    addition of normal or zero float32 values whose result is normal or an exact zero is IEEE
    binary32 round to nearest even, the shared rounder's result, signed zeros included. XLA on
    the CPU flushes subnormal inputs and results to zero and makes NaNs of its own: a result
    that is infinite, NaN, subnormal, or zero where the exact value is not (flushed), sends
    the whole product to the shared rounder. The loop is unrolled FLOAT32_SUM_UNROLL blocks at
    a time, so that XLA fuses their additions into one pass."""
    tiny = jnp.float32(2.0 ** -126)

    def doubtful(result, flushed):
        return ~jnp.isfinite(result) | ((result != 0) & (jnp.abs(result) < tiny)) | \
            ((result == 0) & flushed)

    def add(x, y, bad):
        r = x + y
        return r, bad | doubtful(r, x != -y)

    promoting = every <= blocks

    def step(carry, block):
        total, partial, bad, i = carry
        y = block.astype(jnp.float32)
        bad = bad | doubtful(y, block != 0)
        partial, bad = add(partial, y, bad)
        if promoting:
            promote = (i + 1) % every == 0
            promoted, promoted_bad = add(total, partial, bad)
            total = jnp.where(promote, promoted, total)
            bad = jnp.where(promote, promoted_bad, bad)
            partial = jnp.where(promote, jnp.zeros_like(partial), partial)
        return (total, partial, bad, i + 1), None

    zero = jnp.zeros(scaled.shape[1:], jnp.float32)
    (total, partial, bad, _), _ = jax.lax.scan(
        step, (zero, zero, jnp.zeros(zero.shape, bool), 0), scaled,
        unroll=min(blocks, FLOAT32_SUM_UNROLL))
    if promoting and blocks % every:          # a last, partial promotion interval
        total, bad = add(total, partial, bad)
    return (total if promoting else partial), jnp.any(bad)


def _code_bits(fmt: FloatFormat) -> int:
    return 8 if fmt.width <= 8 else 16 if fmt.width <= 16 else 32


_F32_ADD = AddSpec(F32, (F32, F32))


def _add_f32(x, y):
    return add_unit(_F32_ADD, {"a": x, "b": y}, want=("y",))["y"].astype(jnp.uint32)


def _widen(codes, fmt: FloatFormat):
    """Codes of ``fmt`` as float32 codes (exact: the accumulator formats fit in float32)."""
    if fmt == F32:
        return codes.astype(jnp.uint32)
    return cvt_unit(CvtSpec(F32, (fmt,)), {"x": codes}, ("y",))["y"].astype(jnp.uint32)
