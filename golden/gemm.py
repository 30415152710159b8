"""Emulated matrix multiply: the arithmetic of an array of fpforge dot units, bit for bit.

``emulated_matmul(a, b, config)`` computes a @ b (float32 in, float32 out) the way a
block-scaled matrix engine built from fpforge's units does (docs/codesign.md):

1. Both operands are quantized along the contraction axis K into OCP MX blocks of ``block``
   elements (one E8M0 scale per block, any power-of-two scale rule, any rounding): ``mx_quantize``.
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
from dataclasses import dataclass
from typing import NamedTuple

from fpforge.rtl.accum import Grouped, TwoStage
from fpforge.rtl.formats import CATALOG, FloatFormat, FormatError
from fpforge.rtl.format_names import resolve
from fpforge.rtl.dot import MxDotSpec
from fpforge.rtl.elements import E8M0_BIAS, E8M0_NAN, element_format
from fpforge.rtl.mx import SCALE_RULES, VALUE_RULES, MxQuantSpec
from fpforge.rtl.options import OptionError, Rounding, UnitOptions
from fpforge.rtl.scalar import AddSpec, CvtSpec

from . import fp32
from ._jax import jax, jnp
from .blockscale import block_dequantize, block_quantize, finite_amax, gemm_alpha
from .decode import decode
from .dot import dot_codes
from .mx import (channel_quantize, decode_elements, float_scaled_quantize, mx_dequantize,
                 mx_quantize)
from .rounding import Mode, raw_from_float64, round_raw
from .tensor_core import (FUSED_PRESETS, FusedAccumulator, exponents, float32_exactly,
                          fused_matmul, grouped_fused_matmul, step_dtype, two_stage_matmul)
from .ops import add_unit, cvt_unit

__all__ = ["Accumulator", "GemmConfig", "emulated_matmul", "ACCUMULATOR_PRESETS", "matmul_codes",
           "quantized_codes", "code_values_f64", "scale_values_f64"]

F32, E8M0 = CATALOG["float32"], CATALOG["float8_e8m0fnu"]


@dataclass(frozen=True)
class Accumulator:
    """How the dot units' block results are summed: a running sum in ``fmt`` rounded by
    ``rounding`` after every block (the dot unit rounds into it too), promoted into a float32
    running sum every ``promote_every`` K terms (None: never)."""

    fmt: FloatFormat = F32
    rounding: Rounding = Rounding.RNE
    promote_every: int | None = None

    def __post_init__(self):
        try:
            fmt = resolve(self.fmt)
        except FormatError as err:
            raise OptionError(str(err)) from None
        # Promotion and the result widen the running sum into float32: exact for these.
        if not fmt.has_inf or fmt.unsigned or fmt.precision > F32.precision or \
                fmt.emax > F32.emax or fmt.emin < F32.emin:
            raise OptionError(f"accumulator format must be a signed format with infinities "
                              f"that float32 holds (float32, bfloat16, float16, fp8e5m2...), "
                              f"not {fmt.name}")
        object.__setattr__(self, "fmt", fmt)
        object.__setattr__(self, "rounding",
                           Rounding.parse_static(self.rounding, "the accumulator"))
        if self.promote_every is not None and (not isinstance(self.promote_every, int)
                                               or self.promote_every < 1):
            raise OptionError(f"promote_every must be a positive number of K terms or None, "
                              f"not {self.promote_every!r}")

    def describe(self) -> str:
        promote = f", promoted to float32 every {self.promote_every} terms" \
            if self.promote_every else ""
        return f"{self.fmt.name} running sum, {self.rounding.value}{promote}"


# Named accumulators (docs/codesign.md): a float32 running sum as GPU epilogues keep it; bf16 and
# fp16 running sums; DeepSeek-V3's recipe (a narrow running sum promoted every 128 terms; its
# narrow sum is modelled as bf16 here, Hopper's own fixed-point sum is MMA-Sim's preset).
ACCUMULATOR_PRESETS = {
    "fp32": Accumulator(),
    "bf16": Accumulator("bfloat16"),
    "fp16": Accumulator("float16"),
    "bf16_promote128": Accumulator("bfloat16", promote_every=128),
}


# Where the operands' E8M0 scales come from: one per block of ``block`` elements along K (OCP
# MX), one per row of a and column of b over all of K (per channel), or one per operand (per
# tensor, a power of two); the dot units' blocks share their row's or tensor's scale. The
# ``_f32`` scalings give each channel / tensor a float32 scale amax / max_elem instead (the
# symmetric scale of an INT8, INT4 or FP8 recipe: with mxint8 elements int8 in -127..127, with
# int4 elements int4 in -7..7); the dot units then see unit E8M0 scales and the float32 scales
# multiply the result.
SCALINGS = ("block", "channel", "tensor", "channel_f32", "tensor_f32")
FLOAT_SCALINGS = ("channel_f32", "tensor_f32")


@dataclass(frozen=True)
class GemmConfig:
    """Element formats, scaling, block size (the dot units' lanes), scale rule and element
    rounding of both operands, and the accumulator."""

    elem_a: str = "fp8e4m3"
    elem_b: str | None = None
    block: int = 32
    scale_rule: str = "floor"
    rounding: str = "rne"
    accum: Accumulator | FusedAccumulator | str = "fp32"
    scaling: str = "block"
    seed: int = 0               # a stochastic rounding's random bits, when none are given

    def __post_init__(self):
        elems = element_format(self.elem_a), element_format(self.elem_b or self.elem_a)
        if self.scaling not in SCALINGS:
            raise OptionError(f"unknown scaling {self.scaling!r}; valid: {', '.join(SCALINGS)}")
        if self.scale_rule not in SCALE_RULES + VALUE_RULES:
            raise OptionError(f"unknown scale rule {self.scale_rule!r}; valid: "
                              f"{', '.join(SCALE_RULES + VALUE_RULES)}")
        if self.value_scaled:
            if self.scaling != "block":
                raise OptionError(f"scale rule {self.scale_rule} gives each block its own "
                                  f"scale: scaling must be block, not {self.scaling}")
            for e in elems:         # the quantizer's one-line errors (NVFP4 rules: E2M1 only)
                self.quant_spec(e.name)
        if isinstance(self.accum, str):
            presets = ACCUMULATOR_PRESETS | FUSED_PRESETS
            if self.accum not in presets:
                raise OptionError(f"unknown accumulator {self.accum!r}; valid: "
                                  f"{', '.join(presets)}")
            object.__setattr__(self, "accum", presets[self.accum])
        if isinstance(self.accum, FusedAccumulator):
            if any(e.twos_complement for e in elems):
                raise OptionError("the tensor-core accumulators take floating-point elements, "
                                  f"not {', '.join(e.name for e in elems if e.twos_complement)}")
            other = {e.name for e in elems} - set(self.accum.elements or {e.name for e in elems})
            if other:
                raise OptionError(f"the {self.accum.source} step takes "
                                  f"{' or '.join(self.accum.elements)} elements, not "
                                  f"{', '.join(sorted(other))}")
            if isinstance(self.accum.accum, Grouped):
                self._check_grouped_step()
            else:
                if self.block != self.accum.group:
                    raise OptionError(f"the {self.accum.source} step takes {self.accum.group} "
                                      f"products: block must be {self.accum.group}, not "
                                      f"{self.block}")
                if self.value_scaled:
                    raise OptionError(f"the {self.accum.source} step takes E8M0 scales, not "
                                      f"the {self.scale_rule} recipe's")
            if not self.accum.scales_in_group and self.scaling == "block":
                raise OptionError(f"{self.accum.source} applies its scales after the sum: "
                                  f"scaling must be channel or tensor, not block")
        p = self.accum.promote_every
        if p is not None and p % self.block:
            raise OptionError(f"promote_every ({p}) must be a multiple of the block ({self.block})"
                              f": a dot unit's block is never split")

    def _check_grouped_step(self):
        """kind::mxf4nvf4: E2M1 elements, scale blocks of 16 or 32 along its 64 products,
        E8M0 scales (MXFP4) or NVFP4's E4M3."""
        acc = self.accum
        if self.block % acc.accum.group or acc.group % self.block:
            raise OptionError(f"the {acc.source} step's scale blocks are 16 or 32 elements, "
                              f"not {self.block}")
        if self.scaling != "block":
            raise OptionError(f"the {acc.source} step applies block scales: scaling must be "
                              f"block, not {self.scaling}")
        if self.value_scaled and self.scale_fmt != CATALOG["float8_e4m3fn"]:
            raise OptionError(f"the {acc.source} step takes E8M0 or E4M3 (NVFP4) scales, not "
                              f"the {self.scale_rule} recipe's {self.scale_fmt.name}")

    @property
    def value_scaled(self) -> bool:
        """Block scales that are numbers of a scale format (NVFP4's E4M3, P3109's), by a
        recipe's own float32 arithmetic (golden/blockscale.py), not E8M0 powers of two."""
        return self.scale_rule in VALUE_RULES

    def quant_spec(self, elem: str) -> MxQuantSpec:
        """The quantizer of one operand's blocks."""
        return MxQuantSpec(elem, block=self.block, scale_rule=self.scale_rule,
                           rounding=self.rounding)

    @property
    def scale_fmt(self) -> FloatFormat:
        return self.quant_spec(self.elem_a).scale_fmt

    @property
    def dot_spec(self) -> MxDotSpec:
        return MxDotSpec(self.elem_a, self.elem_b, n=self.block, out_fmt=self.accum.fmt,
                         rounding=self.accum.rounding, scale_fmt=self.scale_fmt)


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


def seeded_bits(seed: int, shape_a, shape_b):
    """Random bits for a stochastic rounding of both operands: a function of the seed and the
    shapes, so a configuration's results repeat (pass rbits_a / rbits_b for fresh bits)."""
    key = jax.random.key(seed)
    return tuple(jax.random.bits(jax.random.fold_in(key, i), shape, jnp.uint32)
                 for i, shape in enumerate((tuple(shape_a), tuple(shape_b))))


def quantized_codes(config: GemmConfig, a, b, rbits):
    """(element codes, scales per block) of a along K and of b.T along K."""
    qa = quantized_operand(a, config.elem_a, config, rbits[0])
    qb = quantized_operand(b.T, config.elem_b or config.elem_a, config, rbits[1])
    return qa.elements, qa.scales, qb.elements, qb.scales


class QuantizedOperand(NamedTuple):
    scales: jnp.ndarray        # (rows, K / block) scale codes: E8M0, or the value rule's format
    elements: jnp.ndarray      # (rows, K) element codes
    values: jnp.ndarray        # (rows, K) float32: Q(x), what the codes and every scale stand for


def quantized_operand(x, elem: str, config: GemmConfig, rbits=None) -> QuantizedOperand:
    """x (rows, K) quantized along K as ``config`` quantizes an operand, with Q(x): the values
    the dot units see times the scales they do not (a float32 scale per row or tensor, a value
    rule's second level), by the same float32 arithmetic the recipe's dequantizer uses. Q(x)
    is the straight-through estimator's and the tensor QSNR's."""
    x = jnp.asarray(x, jnp.float32)
    if config.value_scaled:
        scaling = config.quant_spec(elem).scaling
        amax = _floats(finite_amax(_bits(x)))
        q = block_quantize(x, scaling, tensor_amax=amax, rbits=rbits)
        return QuantizedOperand(q.scales, q.elements,
                                block_dequantize(q, scaling, tensor_amax=amax))
    scales, elements = operand_quantize(x, elem, config, rbits)
    values = mx_dequantize(scales, elements, elem, config.block)
    if config.scaling in FLOAT_SCALINGS:
        scale = _bits(_float_scale(x, elem, config))[:, None]
        values = _floats(fp32.mul(_bits(values), scale))
    return QuantizedOperand(scales, elements, values)


def float_scales(config: GemmConfig, a, b):
    """The float32 scales of a's rows and b's columns (``_f32`` scalings), each (rows,)."""
    fa = _float_scale(a, config.elem_a, config)
    fb = _float_scale(b.T, config.elem_b or config.elem_a, config)
    return fa, fb


def _float_scale(x, elem: str, config: GemmConfig):
    """RN32(amax / max_elem) per row (channel_f32) or for the whole tensor, broadcast to the
    rows; 1 where amax is 0 or not finite (the elements then carry the zeros or NaNs). On bit
    patterns through the integer-exact IEEE division: XLA turns a division by a constant into a
    multiplication by its rounded reciprocal, and flushes subnormals."""
    mag = _bits(x) & 0x7FFF_FFFF
    amax = jnp.max(mag) if config.scaling == "tensor_f32" else jnp.max(mag, axis=-1)
    scale = fp32.div(amax, fp32.bits(float(element_format(elem).grid.max_finite)))
    scale = jnp.where((amax < 0x7F80_0000) & (scale != 0), scale, fp32.bits(1.0))
    return _floats(jnp.broadcast_to(scale, x.shape[:1]))


def operand_quantize(x, elem: str, config: GemmConfig, rbits=None):
    """(scales, elements) of x (rows, K) under config's E8M0 scaling: one E8M0 scale per block
    of ``block`` along K, per row, or per tensor (repeated for each block); with a float32
    scale (``_f32``), unit E8M0 scales and the elements of x / scale. A value rule's blocks come
    from ``quantized_operand``."""
    spec = config.quant_spec(elem)
    blocks = x.shape[1] // config.block
    if config.scaling in FLOAT_SCALINGS:
        return float_scaled_quantize(x, _float_scale(x, elem, config), rbits, spec=spec,
                                     blocks=blocks)
    if config.scaling == "block":
        return mx_quantize(x, elem, block=config.block, scale_rule=config.scale_rule,
                           rounding=config.rounding, rbits=rbits)
    return channel_quantize(x, rbits, spec=spec, blocks=blocks, whole=config.scaling == "tensor")


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
        alpha = gemm_alpha(config.quant_spec(config.elem_a).scaling, finite_amax(_bits(a)),
                           finite_amax(_bits(b)))
        if alpha is not None:
            y = times_float32(y, alpha)
    return y, (qa.values, qb.values)


def _bits(x):
    return jax.lax.bitcast_convert_type(jnp.asarray(x, jnp.float32), jnp.uint32)


def _floats(bits):
    return jax.lax.bitcast_convert_type(jnp.asarray(bits, jnp.uint32), jnp.float32)


@jax.jit
def times_float32(y, scale):
    """y (M, N) float32 times float32 scale patterns that broadcast against it, each product
    rounded once to nearest even into float32 (an exact float64 product through the shared
    rounder: IEEE's bits, subnormals included)."""
    value = float32_exactly(_bits(y))[0] * float32_exactly(jnp.asarray(scale, jnp.uint32))[0]
    codes, _ = round_raw(raw_from_float64(value), F32, UnitOptions(), Mode(Rounding.RNE))
    return _floats(codes.astype(jnp.uint32))


@jax.jit
def scaled_epilogue(y, fa, fb):
    """y (M, N) float32 times the float32 scales: y x RN32(fa_i x fb_j), each product rounded
    once to nearest even into float32 (a per-channel or per-tensor scaled GEMM's epilogue)."""
    scale = float32_exactly(_bits(fa))[0][:, None] * float32_exactly(_bits(fb))[0][None, :]
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
    """A tensor core's fused, truncating steps (golden/tensor_core.py), then per-channel
    scales, if any, times the float32 result, rounded once to nearest even."""
    acc = config.accum
    fa, fb = element_format(config.elem_a), element_format(config.elem_b or config.elem_a)
    if isinstance(acc.accum, Grouped):
        return grouped_fused_matmul(
            code_values_f64(fa)[ea.astype(jnp.int32)], scale_values_f64(sa, config.scale_fmt),
            code_values_f64(fb)[eb.astype(jnp.int32)], scale_values_f64(sb, config.scale_fmt), acc,
            config.scale_fmt.emin)
    ua, ub = (decode_elements(jnp.arange(1 << e.width, dtype=jnp.uint32), e) for e in (fa, fb))
    xa = exponents(ua, fa.grid.man_bits)[ea.astype(jnp.int32)]
    xb = exponents(ub, fb.grid.man_bits)[eb.astype(jnp.int32)]
    two_stage = isinstance(acc.accum, TwoStage)
    dtype = jnp.float64 if two_stage else step_dtype(acc, fa, fb)
    va = code_values_f64(fa).astype(dtype)[ea.astype(jnp.int32)]
    vb = code_values_f64(fb).astype(dtype)[eb.astype(jnp.int32)]
    steps = two_stage_matmul if two_stage else fused_matmul
    c = steps(va, xa, sa, vb, xb, sb, acc)
    if acc.scales_in_group:
        return c
    value = float32_exactly(jax.lax.bitcast_convert_type(c, jnp.uint32))[0] * \
        scale_values_f64(sa[0])[:, None] * scale_values_f64(sb[0])[None, :]
    y, _ = round_raw(raw_from_float64(value), F32, UnitOptions(), Mode(Rounding.RNE))
    return jax.lax.bitcast_convert_type(y.astype(jnp.uint32), jnp.float32)


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


def _float32_running_sum(scaled, blocks: int, every: int):
    """The float32 round-to-nearest-even running sum (with promotion) in XLA's float32, and
    whether its bits may differ from IEEE's. Every conversion (float64 to float32) and every
    addition of normal or zero float32 values whose result is normal or an exact zero is IEEE
    binary32 round to nearest even, the shared rounder's result, signed zeros included. XLA on
    the CPU flushes subnormal inputs and results to zero and makes NaNs of its own: a result
    that is infinite, NaN, subnormal, or zero where the exact value is not (flushed), sends
    the whole product to the shared rounder. The loop is unrolled so that XLA fuses the
    additions into one pass."""
    tiny = jnp.float32(2.0 ** -126)

    def doubtful(result, flushed):
        return ~jnp.isfinite(result) | ((result != 0) & (jnp.abs(result) < tiny)) | \
            ((result == 0) & flushed)

    def add(x, y, bad):
        r = x + y
        return r, bad | doubtful(r, x != -y)

    zero = jnp.zeros(scaled.shape[1:], jnp.float32)
    total, partial, bad = zero, zero, jnp.zeros(zero.shape, bool)
    for i in range(blocks):
        y = scaled[i].astype(jnp.float32)
        bad = bad | doubtful(y, scaled[i] != 0)
        partial, bad = add(partial, y, bad)
        if (i + 1) % every == 0 or (i + 1 == blocks and every <= blocks):
            total, bad = add(total, partial, bad)
            partial = zero
    return (partial if every > blocks else total), jnp.any(bad)


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
