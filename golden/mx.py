"""OCP MX block scaling: quantize and dequantize, bit-exact and integer-only (golden/dot.py
holds the dot product).

An MX block is k values (k = 32 by default) sharing one E8M0 scale X = 2^s; element i holds
P_i = V_i / X rounded into the element format, and decodes as X * P_i (OCP MX v1.0 sections 5-6).
The steps mirror the rest of the golden model:

    float32 / bfloat16 codes -> block amax (an integer max of magnitude bits)
        -> shared exponent s (integer rules below) -> raw V_i with its exponent lowered by s
        -> ``round_raw`` (the one shared rounder) into the element grid, saturating

Dividing by X = 2^s is exact: it only subtracts s from the raw value's exponent, so every element
is rounded exactly once, from the exact quotient.

Shared-exponent rules (named as torchao's ``ScaleCalculationMode``), with e = floor(log2 amax)
read from the exponent field (or the leading one of a subnormal), emax the element's largest
exponent and max_elem its largest value:

    floor  s = e - emax                               OCP MX v1.0 section 6.3, the default
    ceil   s = ceil(log2 amax) - emax                 = e - emax + (amax not a power of two)
    rceil  s = ceil(log2(amax / max_elem))            NVIDIA (cuBLAS): = e - emax + (sig(amax) >
                                                      sig(max_elem)), comparing significands
                                                      normalized to [1, 2) as integers
    even   s = floor(log2(rna(amax, 1 + M))) - emax   torchao: amax first rounded to the
                                                      element's precision, ties away (its
                                                      "add half an ulp to the bits" trick), by
                                                      the shared rounder
    vllm   s = floor(log2 amax) + (sig >= 1.75) - emax  vLLM's MXFP4 MoE quantizer (via Quark):
                                                      bits(amax) + 2^21, exponent field

Corner cases (docs/mx.md compares them with torchao, gfloat and microxcaling):

* s is clamped to the E8M0 range [-127, 127]. Finite inputs can only reach the top with MXINT8
  (emax 0) under ceil / rceil / even; the elements then saturate.
* An all-zero block gets s = -127 (code 0x00), as torchao, gfloat and microxcaling do; its
  elements are zeros of their own signs.
* A block holding an infinity or a NaN gets the NaN scale 0xFF (OCP: X = NaN makes the whole block
  NaN), and every element of it is NaN too: the element format's canonical NaN (0x7F for E4M3,
  0x7E for E5M2), or 0 for formats without a NaN code (FP6, FP4, MXINT8), as docs/numerics.md
  section 6 rounds a NaN into a ``finite`` format.
* Elements saturate: a value above the element's max normal becomes +-max, keeping its sign.
* MXINT8 elements are two's complement with an implicit 2^-6: value = int8 * 2^-6 * X. They are
  rounded on the sign-magnitude grid e1m6 (bias 1, no specials: 1 exponent bit and 6 fraction
  bits cover 0 .. 127/64 in steps of 2^-6), so the clamp is symmetric, +-127; -128 is never
  produced (the spec suggests it) but decodes as -2 * X.

Codes: scales are uint8 E8M0; elements are uint8, one element per byte (FP6 in the low 6 bits,
FP4 in the low 4 bits: unpacked), MXINT8 as the int8's two's complement bit pattern.
"""

from __future__ import annotations

import functools

from fpforge.rtl.elements import E8M0_BIAS, E8M0_NAN, SCALE_MAX, SCALE_MIN, ElementFormat
from fpforge.rtl.formats import CATALOG, FloatFormat, Specials
# The MX parameters and their bounds live in rtl/ (one description for the hardware and this
# model): the public functions below build the unit's spec, which validates them.
from fpforge.rtl.mx import MxDequantSpec, MxQuantSpec
from fpforge.rtl.options import Rounding, UnitOptions

from . import fp32
from ._jax import I32, U32, U64, jax, jnp, lax, shl
from .blockscale import value_dequantize_unit, value_quantize_unit
from .decode import Unpacked, decode
from .rounding import Mode, Raw, round_raw

__all__ = ["mx_quantize", "mx_dequantize", "mxq_unit", "mxdq_unit", "lane_axis",
           "decode_elements", "channel_quantize", "float_scaled_quantize", "shared_exponent"]

F32 = CATALOG["float32"]


# ----- quantize ---------------------------------------------------------------------------------

def mx_quantize(x, elem_fmt, *, block: int = 32, scale_rule: str = "floor", rounding="rne",
                rbits=None, sr_bits: int = 8, return_flags: bool = False):
    """Quantize float32 / bfloat16 ``x`` into MX blocks along its last axis.

    Returns (scales, elements): uint8 E8M0 codes of shape (..., n // block) and uint8 element
    codes of shape (..., n). ``rounding`` is any static mode of the shared rounder ("rne" by
    default; "stochastic" takes ``rbits``, an integer array shaped like x, of which the low
    ``sr_bits`` bits are used). ``return_flags`` adds per-element exception flags (uint8, RISC-V
    order) of the element rounding: inexact, underflow, overflow (saturated), invalid (NaN into a
    format without NaN).
    """
    x = jnp.asarray(x)
    if x.dtype not in (jnp.dtype(jnp.float32), jnp.dtype(jnp.bfloat16)):
        raise TypeError(f"mx_quantize takes float32 or bfloat16 arrays, not {x.dtype}")
    spec = MxQuantSpec(elem_fmt, in_fmt="float32" if x.dtype == jnp.float32 else "bfloat16",
                       block=block, scale_rule=scale_rule, rounding=rounding, sr_bits=sr_bits)
    if spec.value_scaled:
        raise ValueError(f"mx_quantize makes E8M0-scaled blocks; the {scale_rule} recipe is "
                         f"golden.blockscale.block_quantize(x, {scale_rule!r}, tensor_amax=...)")
    if x.ndim == 0 or x.shape[-1] % block:
        raise ValueError(f"the last axis of x (shape {x.shape}) must be a multiple of the block "
                         f"size {block}")
    if spec.has_rbits != (rbits is not None):
        raise ValueError("rbits is needed by, and only by, the stochastic roundings")
    bits = jax.lax.bitcast_convert_type(x, jnp.uint32 if x.dtype == jnp.float32 else jnp.uint16)
    return _mx_quantize(bits, None if rbits is None else jnp.asarray(rbits), spec=spec,
                        with_flags=return_flags)


def mxq_unit(spec: MxQuantSpec, inputs: dict, want=("scale", "y", "flags")) -> dict:
    """The golden function of the mxq kind: ``x`` (..., k) codes (float32, or bfloat16 as
    16-bit codes) [and ``rbits`` (..., k)] -> ``scale`` (...), ``y`` (..., k) and ``flags``
    (...), the block's element flags ORed as the unit reports them."""
    k = spec.block
    x = lane_axis(inputs["x"], k)
    x = x.astype(jnp.uint32 if spec.in_fmt.width == 32 else jnp.uint16)
    rbits = inputs.get("rbits")
    if spec.value_scaled:
        # An NVFP4 recipe (golden/blockscale.py): its float32 arithmetic from tensor_amax.
        r = None if rbits is None else lane_axis(rbits, k)
        scale, y, flags = value_quantize_unit(spec.scaling, x, inputs.get("tensor_amax"),
                                              spec.options, r)
        out = {"scale": scale, "y": _unlanes(y, k), "flags": jnp.bitwise_or.reduce(flags, -1)}
        return {p: out[p] for p in want}
    scales, elems, flags = _mx_quantize(x, None if rbits is None else lane_axis(rbits, k),
                                        spec=spec, with_flags=True)
    out = {"scale": scales[..., 0], "y": _unlanes(elems, k),
           "flags": jnp.bitwise_or.reduce(flags, axis=-1)}
    return {p: out[p] for p in want}


def lane_axis(x, lanes: int):
    """A port's array with its lane axis (a one-lane port's arrays have none)."""
    x = jnp.asarray(x)
    return x[..., None] if lanes == 1 else x


def _unlanes(x, lanes: int):
    return x[..., 0] if lanes == 1 else x


@functools.partial(jax.jit, static_argnames=("spec", "with_flags"))
def _mx_quantize(bits, rbits, *, spec: MxQuantSpec, with_flags: bool):
    elem, block, rule, opts = spec.elem, spec.block, spec.scale_rule, spec.options
    # 1. Work on float32 bit patterns: bfloat16 is the top half of one, exactly.
    if bits.dtype == jnp.uint16:
        bits = bits.astype(U32) << 16
    shape = bits.shape
    bits = bits.reshape(*shape[:-1], shape[-1] // block, block)

    # 2. amax as an integer: for non-negative IEEE patterns the order of the magnitude bits is
    #    the order of the values, and NaN > inf > every finite value.
    mag = bits & jnp.uint32(0x7FFF_FFFF)
    amax = jnp.max(mag, axis=-1)
    nonfinite = amax >= jnp.uint32(0x7F80_0000)
    s = jnp.clip(shared_exponent(amax, elem, rule), SCALE_MIN, SCALE_MAX)
    s = jnp.where(amax == 0, SCALE_MIN, s)
    scales = jnp.where(nonfinite, jnp.uint8(E8M0_NAN), (s + E8M0_BIAS).astype(jnp.uint8))
    r = None if rbits is None else jnp.broadcast_to(rbits, shape).reshape(bits.shape)
    elements, flags = _scaled_elements(bits, scales, spec, r)
    elements = elements.reshape(shape)
    if with_flags:
        return scales, elements, flags.reshape(shape)
    return scales, elements


def _scaled_elements(bits, scales, spec: MxQuantSpec, rbits):
    """Steps 3 and 4 of the quantizer: float32 patterns (..., blocks, block) over E8M0 scale
    codes (..., blocks) into element codes and flags."""
    elem, opts = spec.elem, spec.options
    # 3. V_i / 2^s: the exact value with its exponent lowered by s; a block holding inf or NaN
    #    (its scale is the E8M0 NaN) gives NaN elements (the rounder writes the format's NaN, or
    #    0 where it has none).
    s = scales.astype(I32) - E8M0_BIAS
    v = decode(bits, F32, U32)
    raw = Raw(sign=v.sign, exp=v.exp - s[..., None], sig=v.sig,
              sticky=jnp.zeros(v.sig.shape, bool),
              is_nan=jnp.broadcast_to((scales == E8M0_NAN)[..., None], v.sig.shape),
              is_inf=jnp.zeros(v.sig.shape, bool), invalid=v.is_snan)
    codes, flags = round_raw(raw, elem.grid, opts, Mode(opts.rounding), rbits)

    # 4. MXINT8 / INT4: the grid's sign-magnitude code holds |int| in its magnitude bits.
    if elem.twos_complement:
        w = elem.width
        m = codes.astype(I32) & ((1 << (w - 1)) - 1)
        codes = jnp.where((codes >> (w - 1)) == 1, -m, m) & ((1 << w) - 1)
    return codes.astype(jnp.uint8), flags


@functools.partial(jax.jit, static_argnames=("spec", "blocks", "whole"))
def channel_quantize(x, rbits=None, *, spec: MxQuantSpec, blocks: int, whole: bool = False):
    """One E8M0 scale per row of float32 ``x`` (rows, blocks * spec.block), or with ``whole``
    one for the whole tensor: the scale the rule gives the row (tensor), repeated for each of
    its ``blocks`` blocks, and the elements quantized against it. Every rule's exponent grows
    with amax, so the row's is the largest of its blocks' (the E8M0 NaN, 0xFF, the largest
    code, wins as it should)."""
    bits = jax.lax.bitcast_convert_type(jnp.asarray(x, jnp.float32), U32)
    rows = bits.shape[0]
    block_scales, _ = _mx_quantize(bits, rbits, spec=spec, with_flags=False)
    shared = jnp.max(block_scales) if whole else jnp.max(block_scales, axis=-1, keepdims=True)
    scales = jnp.broadcast_to(shared, (rows, blocks))
    r = None if rbits is None else jnp.asarray(rbits).reshape(rows, blocks, spec.block)
    elements, _ = _scaled_elements(bits.reshape(rows, blocks, spec.block), scales, spec, r)
    return scales, elements.reshape(rows, blocks * spec.block)


@functools.partial(jax.jit, static_argnames=("spec", "blocks"))
def float_scaled_quantize(x, scale, rbits=None, *, spec: MxQuantSpec, blocks: int):
    """Rows of float32 ``x`` (rows, blocks * spec.block) over a float32 ``scale`` per row: the
    elements of x / scale (one IEEE float32 division, subnormals kept, then the element
    rounding, saturating as the MX quantizer does), under unit E8M0 scales (rows, blocks) for
    the dot units."""
    rows = x.shape[0]
    as_bits = lambda v: jax.lax.bitcast_convert_type(jnp.asarray(v, jnp.float32), U32)
    bits = fp32.div(as_bits(x), as_bits(scale)[:, None]).reshape(rows, blocks, spec.block)
    unit = jnp.full((rows, blocks), E8M0_BIAS, jnp.uint8)
    r = None if rbits is None else jnp.asarray(rbits).reshape(rows, blocks, spec.block)
    elements, _ = _scaled_elements(bits, unit, spec, r)
    return unit, elements.reshape(rows, blocks * spec.block)


def shared_exponent(amax, elem: ElementFormat, rule: str):
    """Unclamped shared exponent s of blocks with float32 magnitude patterns ``amax`` (> 0 and
    finite where it matters; other blocks are overridden by the caller). Integer-only."""
    e_field = (amax >> 23).astype(I32)
    frac = amax & jnp.uint32(0x7F_FFFF)
    subnormal = e_field == 0
    # floor(log2 amax): the exponent field, or the leading one of a subnormal's fraction.
    lead = 31 - lax.clz(frac).astype(I32)
    floor_log2 = jnp.where(subnormal, lead - 149, e_field - 127)
    if rule == "floor":
        return floor_log2 - elem.emax
    if rule == "vllm":
        # The 1.75 threshold as vLLM's bit trick (bf16: + 1 << 5; here on the float32 pattern),
        # carrying into the exponent field when the significand is >= 1.75.
        field = ((amax + jnp.uint32(1 << 21)) >> 23).astype(I32)
        return field - 127 - elem.emax
    if rule == "ceil":
        pow2 = jnp.where(subnormal, (frac & (frac - 1)) == 0, frac == 0)
        return floor_log2 + (~pow2).astype(I32) - elem.emax
    if rule == "rceil":
        # amax / max_elem lies in (2^(k-1), 2^(k+1)) with k = floor_log2 - emax, so the ceiling
        # is k, or k + 1 exactly when amax's significand exceeds max_elem's (both in [1, 2)).
        sig24 = jnp.where(subnormal, shl(frac, 23 - lead), frac | jnp.uint32(1 << 23))
        g = elem.grid
        max_sig24 = (g.max_finite_code & ((1 << g.man_bits) - 1) | (1 << g.man_bits)) \
            << (23 - g.man_bits)
        return floor_log2 - elem.emax + (sig24 > jnp.uint32(max_sig24)).astype(I32)
    # even: round amax to the element's precision (ties away, carrying into the exponent, as
    # torchao's bit trick does) with the shared rounder, into binary32's exponent range.
    M = elem.grid.man_bits
    target = FloatFormat(8, M, 127, Specials.IEEE)
    v = decode(amax, F32, U32)
    opts = UnitOptions(rounding=Rounding.RNA)
    rounded, _ = round_raw(Raw(v.sign, v.exp, v.sig, jnp.zeros(amax.shape, bool), v.is_nan,
                               v.is_inf, v.is_snan), target, opts, Mode(Rounding.RNA))
    r_field = (rounded.astype(I32) >> M) & 0xFF
    # A rounded subnormal is below 2^-126; any such block clamps to s = -127 below.
    return jnp.where(r_field == 0, -127, r_field - 127) - elem.emax


# ----- dequantize -------------------------------------------------------------------------------

def mx_dequantize(scales, elements, elem_fmt, block: int = 32):
    """Decode MX blocks to float32: X * P_i, rounded once (rne) by the shared rounder, so exact
    whenever float32 holds the value; overflow gives +-inf, a NaN scale a NaN block."""
    spec = MxDequantSpec(elem_fmt, block=block)
    elements, scales = jnp.asarray(elements), jnp.asarray(scales)
    if elements.ndim == 0 or elements.shape[-1] % block or \
            scales.shape[-1:] != (elements.shape[-1] // block,):
        raise ValueError(f"elements of shape {elements.shape} need scales of shape "
                         f"(..., {elements.shape[-1] // block if elements.ndim else '?'}) for "
                         f"block {block}, not {scales.shape}")
    y = _mx_dequantize(scales, elements, elem=spec.elem, block=block)
    return jax.lax.bitcast_convert_type(y, jnp.float32)


def mxdq_unit(spec: MxDequantSpec, inputs: dict, want=("y",)) -> dict:
    """The golden function of the mxdq kind: ``scale`` (...) and ``x`` (..., k) element codes
    -> ``y`` (..., k) float32 codes."""
    k = spec.block
    if spec.value_scaled:
        y = value_dequantize_unit(spec.scaling, inputs["scale"], lane_axis(inputs["x"], k),
                                  inputs.get("tensor_amax"))
        return {"y": _unlanes(y, k)}
    y = _mx_dequantize(jnp.asarray(inputs["scale"])[..., None], lane_axis(inputs["x"], k),
                       elem=spec.elem, block=k)
    return {"y": _unlanes(y, k)}


@functools.partial(jax.jit, static_argnames=("elem", "block"))
def _mx_dequantize(scales, elements, *, elem, block):
    shape = elements.shape
    e = decode_elements(elements.reshape(*shape[:-1], shape[-1] // block, block), elem, U32)
    s = scales.astype(I32)[..., None]
    raw = Raw(sign=e.sign, exp=e.exp + (s - E8M0_BIAS), sig=e.sig,
              sticky=jnp.zeros(e.sig.shape, bool), is_nan=e.is_nan | (s == E8M0_NAN),
              is_inf=e.is_inf, invalid=e.is_snan)
    y, _ = round_raw(raw, F32, UnitOptions(), Mode(Rounding.RNE))
    return y.reshape(shape)


def decode_elements(codes, elem: ElementFormat, sig_dtype=U64) -> Unpacked:
    """Decode element codes: value = (-1)^sign * sig * 2^exp (MXINT8: int8 * 2^-6; INT4:
    int4 * 2^-2)."""
    if not elem.twos_complement:
        return decode(codes, elem.grid, sig_dtype)
    up = 8 - elem.width          # sign-extend through int8's sign bit
    v = jax.lax.bitcast_convert_type(jnp.asarray(codes).astype(jnp.uint8) << up,
                                     jnp.int8).astype(I32) >> up
    sign = (v < 0).astype(U32)
    sig = jnp.abs(v).astype(sig_dtype)
    false = jnp.zeros(v.shape, bool)
    return Unpacked(sign, jnp.full(v.shape, elem.lsb_min, I32), sig, sig == 0, false, false,
                    false)
