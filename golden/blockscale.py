"""Generalized block scaling (rtl/blockscale.py), bit-exact and integer-only: quantize float32
tensors into blocks under any preset, and dequantize them, the way each recipe's code does.

Power-of-two rules (MX family) lower each value's exponent by s and round once, as golden/mx.py
does. Value rules (NVFP4, P3109) follow their recipe's float32 operation sequence, every
operation correctly rounded by golden/fp32.py, then cast the element as the recipe's cast does
(docs/blockscale.md lists the formulas and sources; its table pins where the recipes disagree).

Shapes: ``x`` is float32 (..., n) with n a multiple of the block (tiles: (..., r, c), both
multiples); scales come back one per block ((..., n // block), tiles (..., r // k, c // k)),
elements as uint8 codes shaped like x, and the per-tensor scale (value rules with one) as a
float32 bit pattern.
"""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import NamedTuple

from fpforge.rtl.blockscale import Arithmetic, BlockScaling, Pow2Rule, ValueRule, preset
from fpforge.rtl.formats import CATALOG, FloatFormat
from fpforge.rtl.options import Rounding, Saturation, UnitOptions

from . import fp32
from ._jax import I32, U32, jax, jnp, lax
from .decode import decode
from .rounding import Mode, Raw, round_raw

__all__ = ["BlockQuantized", "block_quantize", "block_dequantize", "value_quantize_unit",
           "value_dequantize_unit", "finite_amax", "gemm_alpha"]

F32, E8M0 = CATALOG["float32"], CATALOG["float8_e8m0fnu"]
E8M0_BIAS, E8M0_NAN = 127, 0xFF


class BlockQuantized(NamedTuple):
    scales: jnp.ndarray        # scale codes, one per block
    elements: jnp.ndarray      # element codes, shaped like x
    tensor_scale: jnp.ndarray | None   # float32 pattern of the second-level scale, or None


def block_quantize(x, scaling: "BlockScaling | str", *, elem=None, tensor_amax=None,
                   rbits=None, sr_bits: int = 8) -> BlockQuantized:
    """Quantize float32 ``x`` under ``scaling`` (a BlockScaling or a preset name; ``elem``
    replaces its element format). ``tensor_amax`` (float32) is the second-level amax a
    calibration supplies; by default the largest finite magnitude of x. ``rbits`` (shaped like
    x) makes the element rounding stochastic (P3109 StochasticA with ``sr_bits`` bits: TE's
    software rule)."""
    s = _resolve(scaling, elem)
    x = jnp.asarray(x)
    if x.dtype != jnp.float32:
        raise TypeError(f"block_quantize takes float32 arrays, not {x.dtype}")
    _check_shape(x.shape, s)
    r = None if rbits is None else jnp.broadcast_to(jnp.asarray(rbits), x.shape).astype(U32)
    amax_t = None if tensor_amax is None else \
        lax.bitcast_convert_type(jnp.asarray(tensor_amax, jnp.float32), U32)
    quantize = _quantize if _compiles_slowly(s) else _quantize_jit
    scales, elems, ts = quantize(lax.bitcast_convert_type(x, U32), amax_t, r, s=s,
                                 sr_bits=sr_bits)
    return BlockQuantized(scales, elems, ts)


def _compiles_slowly(s: BlockScaling) -> bool:
    """4over6 quantizes both candidates and sums 16 errors in float32 order, element by element:
    as one XLA program it compiles for longer (33 CPU-s at the bench batch) than it runs op by
    op (2.5)."""
    return isinstance(s.rule, ValueRule) and s.rule.four_over_six


def _quantize(bits, amax_t, rbits, *, s: BlockScaling, sr_bits: int):
    """(scale codes, element codes, second-level scale or None) of float32 patterns ``bits``.
    Integer arithmetic only (golden/fp32.py), so one XLA program gives the bits op-by-op
    evaluation does."""
    blocks = _blocks(bits, s)
    r = None if rbits is None else _blocks(rbits, s)
    if isinstance(s.rule, Pow2Rule):
        scales, elems = _pow2(blocks, s, r, sr_bits)
        ts = None
    else:
        amax_t = finite_amax(bits) if amax_t is None else amax_t
        scales, elems, ts, _ = _value(blocks, s, amax_t, _elem_options(r, sr_bits), r)
    return scales, _unblocks(elems, s, bits.shape), ts


_quantize_jit = functools.partial(jax.jit, static_argnames=("s", "sr_bits"))(_quantize)


def block_dequantize(q: BlockQuantized, scaling: "BlockScaling | str", *, elem=None,
                     tensor_amax=None):
    """float32 values of quantized blocks, as the recipe's dequantizer computes them."""
    s = _resolve(scaling, elem)
    elements = jnp.asarray(q.elements)
    _check_shape(elements.shape, s)
    rule = s.rule
    amax_t = None
    if isinstance(rule, ValueRule) and rule.arithmetic is Arithmetic.TE:
        if tensor_amax is None:
            raise ValueError("TE's dequantizer needs the tensor amax (tensor_amax=)")
        amax_t = lax.bitcast_convert_type(jnp.asarray(tensor_amax, jnp.float32), U32)
    tensor_scale = None if q.tensor_scale is None else jnp.asarray(q.tensor_scale)
    return _dequantize(elements, jnp.asarray(q.scales), tensor_scale, amax_t, s=s)


@functools.partial(jax.jit, static_argnames=("s",))
def _dequantize(elements, scales, tensor_scale, amax_t, *, s: BlockScaling):
    codes = _blocks(elements.astype(U32), s)
    values = fp32.cast_back(codes, s.elem)                     # element values, float32
    scales = scales[..., None]
    rule = s.rule
    if isinstance(rule, Pow2Rule):
        e = scales.astype(I32)
        raw_v = decode(values, F32, jnp.uint64)
        raw = Raw(raw_v.sign, raw_v.exp + (e - E8M0_BIAS), raw_v.sig,
                  jnp.zeros(raw_v.sig.shape, bool), raw_v.is_nan | (e == E8M0_NAN),
                  raw_v.is_inf, raw_v.is_snan)
        out, _ = round_raw(raw, F32, UnitOptions(), Mode(Rounding.RNE))
    else:
        sf = fp32.cast_back(scales.astype(U32), s.scale_fmt)
        if rule.arithmetic is Arithmetic.TE:
            out = _dequantize_values(values, sf, rule, amax_t)
        elif rule.arithmetic is Arithmetic.P3109:
            out = fp32.mul(values, sf)
        else:   # ModelOpt and torchao: q * (sf * s2) (torchao writes s2 * sf: the same product)
            out = fp32.mul(values, fp32.mul(sf, tensor_scale))
    return lax.bitcast_convert_type(_unblocks(jnp.asarray(out).astype(U32), s, elements.shape),
                                    jnp.float32)


def _resolve(scaling, elem) -> BlockScaling:
    if isinstance(scaling, str):
        return preset(scaling, elem)
    return scaling.with_elem(elem) if elem is not None else scaling


# ----- blocks -----------------------------------------------------------------------------------

def _blocks(a, s: BlockScaling):
    """(..., nblocks, k) for 1 x k blocks, (..., tiles, k * k) for k x k tiles."""
    k = s.block
    if not s.tile:
        return a.reshape(*a.shape[:-1], a.shape[-1] // k, k)
    r, c = a.shape[-2] // k, a.shape[-1] // k
    t = a.reshape(*a.shape[:-2], r, k, c, k)
    t = jnp.moveaxis(t, -3, -2)                     # (..., r, c, k, k)
    return t.reshape(*a.shape[:-2], r, c, k * k)


def _check_shape(shape, s: BlockScaling):
    """Blocks must tile the array: checked before tracing, on the concrete shape."""
    k = s.block
    if not s.tile:
        if len(shape) == 0 or shape[-1] % k:
            raise ValueError(f"the last axis (shape {shape}) must be a multiple of the block "
                             f"size {k}")
    elif len(shape) < 2 or shape[-1] % k or shape[-2] % k:
        raise ValueError(f"{k}x{k} tiles need the last two axes (shape {shape}) to be "
                         f"multiples of {k}")


def _unblocks(b, s: BlockScaling, shape):
    k = s.block
    if not s.tile:
        return b.reshape(shape)
    r, c = shape[-2] // k, shape[-1] // k
    t = b.reshape(*shape[:-2], r, c, k, k)
    return jnp.moveaxis(t, -2, -3).reshape(shape)


def _amax(blocks):
    """Largest magnitude per block as a float32 pattern: NaN > inf > every finite value."""
    return jnp.max(blocks & jnp.uint32(0x7FFF_FFFF), axis=-1)


def finite_amax(bits):
    """The largest finite magnitude of the tensor (NaN and inf left out, as fmaxf over finite
    data; a calibrated amax replaces it)."""
    mag = bits & jnp.uint32(0x7FFF_FFFF)
    return jnp.max(jnp.where(mag < 0x7F80_0000, mag, 0))


def gemm_alpha(scaling: BlockScaling, amax_a, amax_b):
    """The per-tensor factor a GEMM of two operands quantized under ``scaling`` multiplies its
    block-scaled result by (float32 patterns of the tensors' amaxes in, a float32 pattern
    out), or None for a recipe without a second level. TransformerEngine's NVFP4 GEMM:
    alpha = amax_a * amax_b / (6 * global_max)^2 in float32 (its compute_nvfp4_per_tensor_scale,
    6 * 6 * 448 * 448 exact); ModelOpt and torchao: s2_a * s2_b, each s2 = amax / (6 * 448)."""
    rule = scaling.rule
    if not scaling.tensor_scale:
        return None
    if rule.arithmetic is Arithmetic.TE:
        factor = fp32.bits((6.0 * rule.global_max) ** 2)
        return fp32.div(fp32.mul(amax_a, amax_b), factor)
    return fp32.mul(_second_level(amax_a, rule), _second_level(amax_b, rule))


# ----- power-of-two scales (MX family) ----------------------------------------------------------

def _pow2(blocks, s: BlockScaling, rbits, sr_bits):
    rule, elem = s.rule, s.elem
    amax = _amax(blocks)
    nan_block = amax > 0x7F80_0000
    inf_block = amax == 0x7F80_0000
    if rule.divisor == "max":
        code = _rceil_code(amax, elem)
    else:
        e = _floor_log2(_pre_round(amax, rule, elem))
        if rule.direction == "ceil":
            e = e + (~_is_pow2(amax)).astype(I32)
        code = jnp.clip(e - elem.emax, -127, 127) + E8M0_BIAS
        code = jnp.where(amax == 0, 0, code)
        code = jnp.where(inf_block | nan_block, E8M0_NAN, code)
    shift = code.astype(I32) - E8M0_BIAS
    nan_scale = code == E8M0_NAN
    if s.scale_fmt != E8M0:
        # Another scale format holds fewer powers of two: the exponent clamps to its range
        # (an all-zero block takes the smallest), and the scale is 2^s's code in it.
        lo, hi = pow2_range(s.scale_fmt)
        shift = jnp.where(amax == 0, lo, jnp.clip(shift, lo, hi))
        pattern = ((shift + 127).astype(U32) << 23)           # 2^shift as float32 (normal)
        code, _ = fp32.cast(jnp.where(nan_scale, jnp.uint32(0x7FC0_0000), pattern),
                            s.scale_fmt)
    scales = code.astype(jnp.uint8)
    # x / 2^s: the exponent lowered by s, one rounding (saturating); a NaN scale, a NaN block.
    v = decode(blocks, F32, jnp.uint64)
    shift, nan_scale = shift[..., None], nan_scale[..., None]
    raw = Raw(v.sign, v.exp - shift, v.sig, jnp.zeros(v.sig.shape, bool), v.is_nan | nan_scale,
              v.is_inf & ~nan_scale, v.is_snan)
    opts = _elem_options(rbits, sr_bits)
    elems, _ = round_raw(raw, elem, opts, Mode(opts.rounding), rbits)
    return scales, elems.astype(jnp.uint8)


def pow2_range(fmt: FloatFormat) -> tuple[int, int]:
    """The smallest and largest power-of-two exponents ``fmt`` holds."""
    lo = fmt.emin - fmt.man_bits if fmt.has_subnormals else fmt.emin
    return lo, fmt.emax


def _elem_options(rbits, sr_bits):
    rounding = Rounding.STOCHASTIC if rbits is not None else Rounding.RNE
    return UnitOptions(rounding=rounding, saturate=True, sr_bits=sr_bits)


def _floor_log2(a):
    """floor(log2) of nonzero float32 magnitude patterns (the leading one of a subnormal)."""
    e_field = (a >> 23).astype(I32)
    frac = a & jnp.uint32(0x7F_FFFF)
    lead = 31 - lax.clz(jnp.maximum(frac, 1)).astype(I32)
    return jnp.where(e_field == 0, lead - 149, e_field - 127)


def _is_pow2(a):
    frac = a & jnp.uint32(0x7F_FFFF)
    return jnp.where((a >> 23) == 0, (frac & (frac - 1)) == 0, frac == 0)


def _pre_round(amax, rule: Pow2Rule, elem: FloatFormat):
    """amax with the pre-rounding applied, then its fraction cleared: torchao's EVEN and vLLM's
    threshold are one trick, adding (2 - threshold) * 2^23 to the pattern and masking."""
    if rule.pre == "none":
        return amax
    threshold = rule.threshold if rule.pre == "threshold" else \
        2 - Fraction(1, 1 << (elem.man_bits + 1))
    add = int((2 - threshold) * (1 << 23))
    a = (amax + jnp.uint32(add)) & jnp.uint32(0xFF80_0000)
    # A subnormal amax that does not reach 2^-126 has no exponent: it clamps to 2^-127 below.
    return jnp.where(a == 0, jnp.uint32(1), a)


def _rceil_code(amax, elem: FloatFormat):
    """TransformerEngine's float_to_e8m0(amax * max_norm_rcp): ceil(log2) of the float32 product
    with the rounded reciprocal, saturating: NaN 0xFF, inf 0xFE, 0 -> 0x00."""
    d = fp32.mul(amax, fp32.bits(1 / float(elem.max_finite)))
    e, m = (d >> 23).astype(I32), d & jnp.uint32(0x7F_FFFF)
    up = (m > 0) & (e != 0xFE) & ~((e == 0) & (m <= 0x40_0000))
    code = jnp.where(e == 0xFF, jnp.where(m == 0, 0xFE, 0xFF), e + up.astype(I32))
    return code


# ----- value scales (NVFP4, P3109) --------------------------------------------------------------

def _value(blocks, s: BlockScaling, amax_t, opts: UnitOptions, rbits):
    """(scale codes, element codes, the second-level scale, element flags) of value-scaled
    blocks: ``amax_t`` broadcasts against the block axis; ``opts`` is the element cast's."""
    rule = s.rule
    bamax = _amax(blocks)
    if rule.arithmetic is Arithmetic.P3109:
        return _p3109(blocks, s, opts, rbits)
    if rule.arithmetic is Arithmetic.TE:
        return _te(blocks, s, amax_t, bamax, opts, rbits)
    return _two_level(blocks, s, amax_t, bamax, opts, rbits)


def value_quantize_unit(s: BlockScaling, x, tensor_amax, opts: UnitOptions, rbits=None):
    """One block per row, as the mxq unit of a value rule sees it: ``x`` (..., k) float32
    patterns, ``tensor_amax`` (...) -> (scale codes (...), element codes (..., k), flags
    (..., k))."""
    blocks = jnp.asarray(x).astype(U32)[..., None, :]
    amax_t = None if tensor_amax is None else jnp.asarray(tensor_amax).astype(U32)[..., None]
    r = None if rbits is None else jnp.asarray(rbits).astype(U32)[..., None, :]
    codes, elems, _, flags = _value(blocks, s, amax_t, opts, r)
    return codes[..., 0], elems[..., 0, :], flags[..., 0, :]


def value_dequantize_unit(s: BlockScaling, scale, x, tensor_amax):
    """The mxdq unit of a value rule: scale codes (...), element codes (..., k) and the tensor
    amax (...) -> float32 patterns (..., k), in the recipe's dequantizer order."""
    values = fp32.cast_back(jnp.asarray(x), s.elem)
    sf = fp32.cast_back(jnp.asarray(scale), s.scale_fmt)[..., None]
    amax_t = None if tensor_amax is None else jnp.asarray(tensor_amax).astype(U32)[..., None]
    return _dequantize_values(values, sf, s.rule, amax_t)


def _dequantize_values(values, sf, rule, amax_t):
    if rule.arithmetic is Arithmetic.TE:
        f = fp32.mul(fp32.mul(sf, amax_t), fp32.bits(1 / (6 * rule.global_max)))
        return fp32.mul(values, f)
    if rule.arithmetic is Arithmetic.P3109:
        return fp32.mul(values, sf)
    # ModelOpt and torchao: q * (sf * s2) (torchao writes s2 * sf: the same product)
    return fp32.mul(values, fp32.mul(sf, _second_level(amax_t, rule)))


def _second_level(amax_t, rule):
    """ModelOpt's and torchao's per-tensor scale s2 = amax / (6 * 448)."""
    return fp32.div(amax_t, fp32.bits(6.0 * rule.global_max))


def _te(blocks, s, amax_t, bamax, opts, rbits):
    rule = s.rule
    one, fmax = fp32.bits(1.0), fp32.FLT_MAX
    # The encode scale S_enc = RN(6 * global_max / amax): inf (tiny amax) -> FLT_MAX, and 1.0 for
    # an amax of 0 or one that makes S_enc 0.
    s_enc = fp32.fmin(fp32.div(fp32.bits(6.0 * rule.global_max), amax_t), fmax)
    s_enc = jnp.where((amax_t == 0) | (s_enc == 0), one, s_enc)
    s_dec = fp32.div(one, s_enc)
    if rule.four_over_six:
        base = fp32.mul(fp32.div(bamax, fp32.bits(6.0)), s_enc)
        candidates = [fp32.fmin(fp32.mul(base, fp32.bits(1.5)), fp32.bits(448.0)),
                      fp32.fmin(base, fp32.bits(448.0))]
    else:
        k = fp32.mul(s_enc, fp32.bits(1 / 6))          # 0x3E2AAAAB
        candidates = [fp32.mul(bamax, k)]
    results = []
    for sb in candidates:
        codes, sf = fp32.cast(sb, s.scale_fmt, saturate=rule.scale_saturates)
        inv = fp32.fmin(fp32.div(one, fp32.mul(sf, s_dec)), fmax)
        y = fp32.mul(blocks, inv[..., None])
        q, flags = _elements(y, s.elem, opts, rbits)
        results.append((codes, sf, q, flags))
    if not rule.four_over_six:
        codes, _, q, flags = results[0]
        return codes.astype(jnp.uint8), q, s_enc, flags
    # 4over6: the summed absolute error of each candidate, in TE's float32 order; map to 4 only
    # when strictly better.
    errs = []
    denom = fp32.bits(6.0 * rule.global_max)
    for codes, sf, q, _ in results:
        deq = fp32.cast_back(q, s.elem)
        val = fp32.div(fp32.mul(fp32.mul(deq, sf[..., None]), jnp.asarray(amax_t)[..., None]),
                       denom)
        d = fp32.sub(val, blocks) & jnp.uint32(0x7FFF_FFFF)
        err = jnp.zeros(d.shape[:-1], U32)
        for i in range(d.shape[-1]):
            err = fp32.add(err, d[..., i])
        errs.append(err)
    four = _less(errs[0], errs[1])
    codes = jnp.where(four, results[0][0], results[1][0]).astype(jnp.uint8)
    q = jnp.where(four[..., None], results[0][2], results[1][2])
    flags = jnp.where(four[..., None], results[0][3], results[1][3])
    return codes, q, s_enc, flags


def _less(a, b):
    """a < b for non-negative float32 patterns (NaN: never)."""
    nan = (a > 0x7F80_0000) | (b > 0x7F80_0000)
    return (a < b) & ~nan


def _two_level(blocks, s, amax_t, bamax, opts, rbits):
    """ModelOpt and torchao: s2 = amax / (6 * 448); the block scale and the element division in
    their orders, with their clamps and casts."""
    rule = s.rule
    s2 = _second_level(amax_t, rule)
    if rule.arithmetic is Arithmetic.MODELOPT:
        sb = fp32.div(bamax, fp32.mul(fp32.bits(6.0), s2))
        if rule.zero_block_one:
            sb = jnp.where(sb == 0, fp32.bits(1.0), sb)
        codes, sf = fp32.cast(sb, s.scale_fmt, saturate=rule.scale_saturates)   # > 464: NaN
        y = fp32.div(blocks, fp32.mul(sf, s2)[..., None])
        q, flags = _elements(y, s.elem, opts, rbits)
        # ModelOpt's E2M1 cast: NaN gives code 7 (+6), the sign from x < 0 (-0 gives 0x0).
        q = jnp.where(_is_nan(y), 7, q)
        q = jnp.where(q == 0x8, 0, q)
    else:
        sb = fp32.div(fp32.div(bamax, fp32.bits(6.0)), s2)
        if rule.scale_floor is not None:
            sb = _clamp_not_nan(sb, fp32.bits(float(rule.scale_floor)), fp32.bits(448.0))
        codes, sf = fp32.cast(sb, s.scale_fmt, saturate=rule.scale_saturates)
        mult = fp32.div(fp32.div(fp32.bits(1.0), s2), sf)
        y = fp32.mul(blocks, mult[..., None])
        q, flags = _elements(y, s.elem, opts, rbits)
    return codes.astype(jnp.uint8), q, s2, flags


def _is_nan(v):
    return (v & jnp.uint32(0x7FFF_FFFF)) > 0x7F80_0000


def _clamp_not_nan(v, lo, hi):
    """torch.clamp(min=lo, max=hi) of non-negative patterns: NaN passes."""
    return jnp.where(_is_nan(v), v, jnp.minimum(jnp.maximum(v, lo), hi))


def _elements(y, elem: FloatFormat, opts: UnitOptions, rbits):
    """(codes, flags) of the element cast of float32 values: ``opts`` round and saturate
    (cvt.rn.satfinite.e2m1 by default; stochastic with ``rbits``)."""
    codes, flags = fp32.cast_flags(y, elem, opts, rbits)
    return codes.astype(jnp.uint8), flags


def _p3109(blocks, s: BlockScaling, opts: UnitOptions, rbits):
    """ConvertToBlockMaxAbsFinite: S = the largest finite magnitude (NaN when there is none);
    s = Project(S) into the scale format, rounding up, SatFinite; r_i = Project(X_i / s) in the
    element rounding of ``opts`` (rne by default), SatFinite; a zero scale makes every element
    zero, a NaN scale every element NaN."""
    mag = blocks & jnp.uint32(0x7FFF_FFFF)
    finite = mag < 0x7F80_0000
    S = jnp.max(jnp.where(finite, mag, 0), axis=-1)
    none = ~jnp.any(finite, axis=-1)
    S = jnp.where(none, jnp.uint32(0x7FC0_0000), S)
    scale_opts = UnitOptions(rounding=Rounding.RUP, saturation=Saturation.FINITE)
    sv = decode(S, F32, jnp.uint64)
    raw = Raw(sv.sign, sv.exp, sv.sig, jnp.zeros(S.shape, bool), sv.is_nan, sv.is_inf,
              sv.is_snan)
    codes, _ = round_raw(raw, s.scale_fmt, scale_opts, Mode(Rounding.RUP))
    scale = decode(codes, s.scale_fmt, jnp.uint64)
    x = decode(blocks, F32, jnp.uint64)
    sc = jax.tree_util.tree_map(lambda a: a[..., None], scale)
    q = fp32.quotient(x, sc)
    q = q._replace(is_nan=q.is_nan | sc.is_nan, sig=jnp.where(sc.is_zero, 0, q.sig),
                   is_inf=q.is_inf & ~sc.is_zero, invalid=q.invalid & ~sc.is_zero,
                   sticky=q.sticky & ~sc.is_zero)
    q = q._replace(is_nan=q.is_nan & ~(sc.is_zero & ~x.is_nan))
    elem_opts = UnitOptions(rounding=opts.rounding, saturation=Saturation.FINITE,
                            sr_bits=opts.sr_bits, tininess=opts.tininess)
    elems, flags = round_raw(q, s.elem, elem_opts, Mode(elem_opts.rounding), rbits)
    return codes.astype(jnp.uint8), elems.astype(jnp.uint8), None, flags
