"""The OCP MX dot product, bit-exact and integer-only: X_A * X_B * sum a_i * b_i (+ c), rounded
once, under the accumulator contracts of rtl/dot.py (exact; fixed-width; its grouped and
two-stage variants, a tensor core's step). The steps mirror rtl/fp_units/dot.py:

    element codes -> decode (golden/mx.py ``decode_elements``) -> exact products
        -> accumulate -> specials and scales -> ``round_raw`` (the one shared rounder)

docs/mx.md states the semantics.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from fpforge.rtl.accum import GROUP_ZERO_EXP, Exact, Fixed, Grouped, TwoStage, accumulation
from fpforge.rtl.dot import DOT_N_RANGE, MxDotSpec
from fpforge.rtl.elements import E8M0_BIAS, E8M0_NAN, ElementFormat
from fpforge.rtl.options import Flag, Rounding

from ._jax import I32, I64, U32, U64, any_below, jax, jnp, lax, msb, shl, shr
from .decode import decode
from .mx import decode_elements, lane_axis
from .rounding import Mode, Raw, round_raw

__all__ = ["mx_dot", "dot_unit", "dot_codes", "exact_limbs", "Terms", "Sum", "SUMS"]


def mx_dot(a_elems, b_elems, elem_fmt_a, elem_fmt_b=None, *, scales_a=None, scales_b=None,
           accum: str = "exact", frac_bits: int = 24, out_fmt="float32", rounding="rne",
           scale_fmt="float8_e8m0fnu", c=None, c_fmt="float32", sum_group=None,
           frac_bits2=None):
    """Dot product of element vectors along the last axis (N <= 64), optionally scaled by one
    E8M0 scale per vector (OCP MX Dot: X_A * X_B * sum P_A,i * P_B,i), rounded once into
    ``out_fmt`` (a catalog format; non-saturating). Returns (codes, flags).

    ``accum``:

    * ``"exact"``: the exact sum of the exact products, one rounding at the end.
    * ``"fixed"``: a fixed-width accumulator. With E_i = ea_i + eb_i the sum of the elements'
      unbiased exponents (subnormals count as emin, MXINT8 as 0), so that product i is below
      2^(E_i + 2), and Emax the largest E_i over the nonzero products, every product is
      truncated toward zero to a multiple of 2^(Emax - F), F = ``frac_bits`` (1..55); the
      truncated products are summed exactly and the sum rounded once. The inexact flag is also
      raised when truncation dropped a nonzero bit.

    ``scale_fmt``: the scales' format, E8M0 by default; another (float8_e4m3fn: NVFP4's
    scales, whose sign bit is 0) multiplies the exact sum by the scales' values (a zero scale
    gives the zero of a vanished sum, a zero scale times an infinite sum NaN).

    ``c``: codes of ``c_fmt`` (...), the accumulator input of ``accum="fixed"``: one more term,
    its exponent joining Emax and its value truncated like a product's (a tensor core's step,
    y = the sum + c; docs/mx.md).

    ``sum_group``: with ``accum="fixed"``, the lanes summed exactly in groups of this many, each
    group times its own scales (``scales_a`` / ``scales_b`` (..., N / sum_group)) and aligned
    at their exponent: a grouped tensor-core step (Blackwell's kind::mxf4nvf4; docs/mx.md).

    ``frac_bits2``: with ``accum="fixed"`` and ``c``, unscaled: a two-stage sum (AMD CDNA3's
    step, F2 = 31; docs/mx.md).

    ``accum``, ``frac_bits`` (read by ``accum="fixed"`` alone), ``sum_group`` and
    ``frac_bits2`` are the command line's options: rtl/accum.py ``accumulation`` builds the
    step from them.

    Specials follow docs/numerics.md: a NaN element or scale gives NaN, 0 x inf and inf - inf are
    invalid, an sNaN element raises invalid. A zero result is -0 only when every product is a
    negative zero (or, under rdn, when the products are not all +0).
    """
    a, b = jnp.asarray(a_elems), jnp.asarray(b_elems)
    lo, hi = DOT_N_RANGE
    if a.ndim == 0 or b.ndim == 0 or a.shape[-1] != b.shape[-1] or not lo <= a.shape[-1] <= hi:
        raise ValueError(f"mx_dot needs vectors of equal length {lo}..{hi} on the last axis, not "
                         f"shapes {a.shape} and {b.shape}")
    scaled = scales_a is not None or scales_b is not None
    acc = accumulation(accum, frac_bits if accum == "fixed" else None, sum_group, frac_bits2)
    spec = MxDotSpec(elem_fmt_a, elem_fmt_b, n=a.shape[-1], scaled=scaled, accum=acc,
                     out_fmt=out_fmt, rounding=rounding,
                     scale_fmt=scale_fmt if scaled else "float8_e8m0fnu",
                     c_fmt=None if c is None else c_fmt)
    one = jnp.uint8(E8M0_BIAS)
    sa = one if scales_a is None else jnp.asarray(scales_a)
    sb = one if scales_b is None else jnp.asarray(scales_b)
    return dot_codes(a, b, sa, sb, None if c is None else jnp.asarray(c), spec=spec)


def dot_unit(spec: MxDotSpec, inputs: dict, want=("y", "flags")) -> dict:
    """The golden function of the dot kind: ``a``, ``b`` (..., n) element codes [and
    ``scale_a``, ``scale_b`` (...), ``c`` (...)] -> ``y`` (...) and ``flags`` (...)."""
    one = jnp.uint8(E8M0_BIAS)
    c = None if spec.c_fmt is None else jnp.asarray(inputs["c"])
    sa, sb = (jnp.asarray(inputs.get(p, one)) for p in ("scale_a", "scale_b"))
    if spec.accum.group is not None:                # one scale per group: a lane axis
        sa, sb = lane_axis(sa, spec.groups), lane_axis(sb, spec.groups)
    y, flags = dot_codes(lane_axis(inputs["a"], spec.n), lane_axis(inputs["b"], spec.n), sa, sb,
                         c, spec=spec)
    out = {"y": y, "flags": flags}
    return {p: out[p] for p in want}


def _value_scales(sa, sb, fmt):
    """(exponent, significand product, NaN, zero, sign) of two scale codes of ``fmt``."""
    da = decode(jnp.asarray(sa).astype(U32), fmt, U64)
    db = decode(jnp.asarray(sb).astype(U32), fmt, U64)
    return (da.exp + db.exp).astype(I32), da.sig * db.sig, da.is_nan | db.is_nan, \
        da.is_zero | db.is_zero, (da.sign ^ db.sign).astype(U32)


def exact_limbs(ea: ElementFormat, eb: ElementFormat) -> int:
    """Radix-2^32 limbs the exact accumulator needs (1 or 2); see ``_exact_sum``."""
    t_max = (ea.emax + 1 - ea.lsb_min) + (eb.emax + 1 - eb.lsb_min)
    return 1 if t_max <= 31 else 2


def _exact_sum(sign, sig, exp, ea: ElementFormat, eb: ElementFormat):
    """The exact sum of products (-1)^sign * sig * 2^exp along the last axis, as a raw value.

    Frame: every product is an integer multiple of 2^E0, E0 = the sum of the element formats'
    smallest LSB weights, so product i is sig_i << t_i units with t_i = exp_i - E0 >= 0. The
    product's top bit sits below 2^(emax_a + 1 + emax_b + 1), so t_i + bits(sig_i) <= T =
    (emax_a + 1 - lsb_a) + (emax_b + 1 - lsb_b): 8 (fp4) .. 64 (fp8e5m2 x fp8e5m2), too wide for
    one int64 once signs and 64 summands are added. So the frame is cut into radix-2^32 limbs:
    product i adds +-(sig_i << (t_i mod 32)) to limb t_i // 32. Each addend is below
    2^(sig bits + 31) <= 2^(16 + 31), a limb sums at most 64 of them: |limb| < 2^53, exact in
    int64. T <= 64 means at most limbs 0 and 1 (``exact_limbs``). After a carry from limb 0 to
    limb 1 the value is hi * 2^32 + lo with 0 <= lo < 2^32, negative exactly when hi is; its
    magnitude is cut to a 64-bit window for the rounder, the bits below going into sticky.
    """
    E0 = ea.lsb_min + eb.lsb_min
    t = jnp.where(sig == 0, 0, exp - E0)
    w = shl(sig.astype(U64), t & 31).astype(I64)
    w = jnp.where(sign == 1, -w, w)
    q = t >> 5
    if exact_limbs(ea, eb) == 1:
        total = jnp.sum(w, axis=-1)
        mag = jnp.abs(total).astype(U64)
        return (total < 0).astype(U32), jnp.full(total.shape, E0, I32), mag, \
            jnp.zeros(total.shape, bool)
    lo = jnp.sum(jnp.where(q == 0, w, 0), axis=-1)
    hi = jnp.sum(jnp.where(q == 1, w, 0), axis=-1)
    hi = hi + (lo >> 32)                        # arithmetic shift: floor(lo / 2^32)
    lo = lo & 0xFFFF_FFFF
    negative = hi < 0
    # -(hi * 2^32 + lo) = (-hi - 1) * 2^32 + (2^32 - lo) when lo != 0.
    lo_n = jnp.where(negative & (lo != 0), (1 << 32) - lo, lo)
    hi_n = jnp.where(negative, jnp.where(lo != 0, -hi - 1, -hi), hi)
    hi_u, lo_u = hi_n.astype(U64), lo_n.astype(U64)
    drop = jnp.maximum(32 - lax.clz(hi_u).astype(I32), 0)    # bits of hi beyond 32
    sig64 = shl(hi_u, 32 - drop) | shr(lo_u, drop)
    sticky = any_below(lo_u, drop)
    return negative.astype(U32), (E0 + drop).astype(I32), sig64, sticky


def _append(x, y):
    """``x`` (..., n) with ``y`` (...) as one more element along the last axis."""
    y = jnp.asarray(y).astype(x.dtype)[..., None]
    return jnp.concatenate([x, jnp.broadcast_to(y, x.shape[:-1] + (1,))], -1)


def _fixed_sum(sign, sig, exp, ea: ElementFormat, eb: ElementFormat, frac_bits: int,
               c=None):
    """The fixed-width accumulator of ``mx_dot``: truncate each product to 2^(Emax - F), sum.

    Product value sig * 2^exp with E = exp + Ma + Mb (the exponent sum, 2 integer bits). The
    truncated term is floor(sig * 2^(exp - Emax + F)), below 2^(F + 2) (2^(F + 2) itself only
    for MXINT8's -128 x -128); 64 of them fit int64 for F <= 55.

    ``c``: the accumulator input as one more term (sign, sig, exp, E) in the products' frame:
    its exponent E (of its leading bit) joins Emax and it is truncated like a product.
    """
    # The grids' fraction bits: for MXINT8 (grid e1m6) that makes E = 0, its fixed point 1.6.
    E = exp + ea.grid.man_bits + eb.grid.man_bits
    if c is not None:
        sign, sig, exp, E = (_append(x, y) for x, y in zip((sign, sig, exp, E), c))
    emax = jnp.max(jnp.where(sig != 0, E, jnp.iinfo(I32).min // 2), axis=-1)
    return _truncated_sum(sign, sig, exp, emax, frac_bits)


class Terms(NamedTuple):
    """What an accumulation sums: the exact products (-1)^sign * sig * 2^exp along the last
    axis, the accumulator input ``c`` as (sign, sig, exp, E) in their frame (E the exponent of
    its leading bit; None without c), and the scale codes."""
    sign: object
    sig: object
    exp: object
    c: tuple | None
    sa: object
    sb: object


class Sum(NamedTuple):
    """An accumulation's result, the raw value the rounder reads: (-1)^sign * sig * 2^exp, the
    bits below in ``sticky``, ``lost`` when a truncation dropped a nonzero bit (inexact);
    ``group_scales`` when the step applied the scales group by group itself: each lane's sign
    with its group's scale signs, whether its group's scale is zero, whether a scale is NaN."""
    sign: object
    exp: object
    sig: object
    sticky: object
    lost: object
    group_scales: tuple | None = None


def _exact(acc: Exact, t: Terms, spec: MxDotSpec) -> Sum:
    sign, exp, sig, sticky = _exact_sum(t.sign, t.sig, t.exp, spec.elem_a, spec.elem_b)
    return Sum(sign, exp, sig, sticky, jnp.zeros(sign.shape, bool))


def _fixed(acc: Fixed, t: Terms, spec: MxDotSpec) -> Sum:
    sign, exp, sig, lost = _fixed_sum(t.sign, t.sig, t.exp, spec.elem_a, spec.elem_b,
                                      acc.frac_bits, t.c)
    return Sum(sign, exp, sig, jnp.zeros(sign.shape, bool), lost)


def _grouped(acc: Grouped, t: Terms, spec: MxDotSpec) -> Sum:
    """The grouped accumulator (MMA-Sim's gst_fdpa; ``Grouped``): the products of
    each group of lanes summed exactly, times the group's scales; the group's term stands at
    the exponent of its scales alone (each normalised to [1, 2), subnormals at the format's
    smallest exponent), or at GROUP_ZERO_EXP when all its products or a scale are zero; c at
    its own exponent (GROUP_ZERO_EXP when zero, or absent). Emax is the largest; every term is
    truncated toward zero to 2^(Emax - F) and summed. A scaled group sum fits 64 bits and the
    truncated sum int64 (``Grouped.check``). The sum carries its ``group_scales`` (for the zero
    and infinity rules)."""
    sign, sig, exp, sa, sb, c = t.sign, t.sig, t.exp, t.sa, t.sb, t.c
    g, groups = acc.group, spec.groups
    shape = sig.shape[:-1] + (groups, g)
    lanes = [x.reshape(shape) for x in (sign, sig, exp)]
    p_sign, p_exp, p_sig, _ = _exact_sum(*lanes, spec.elem_a, spec.elem_b)
    s_exp, s_sig, s_nan, s_zero, s_sign = _value_scales(sa, sb, spec.scale_fmt)
    active = jnp.any(lanes[1] != 0, axis=-1) & ~s_zero
    E = jnp.where(active, s_exp + 2 * spec.scale_fmt.man_bits, GROUP_ZERO_EXP)
    t_sign, t_sig, t_exp = p_sign ^ s_sign, p_sig * s_sig, p_exp + s_exp
    if c is None:
        emax = jnp.maximum(jnp.max(E, axis=-1), GROUP_ZERO_EXP)
    else:
        c_sign, c_sig, c_exp, c_E = c
        c_E = jnp.where(c_sig != 0, c_E, GROUP_ZERO_EXP)
        t_sign, t_sig, t_exp, E = (_append(x, y) for x, y in zip((t_sign, t_sig, t_exp, E),
                                                                 (c_sign, c_sig, c_exp, c_E)))
        emax = jnp.max(E, axis=-1)
    lane_sign = (lanes[0] ^ s_sign[..., None]).reshape(sign.shape)
    lane_zero = jnp.repeat(s_zero, g, axis=-1)
    r_sign, r_exp, r_sig, lost = _truncated_sum(t_sign, t_sig, t_exp, emax, acc.frac_bits)
    return Sum(r_sign, r_exp, r_sig, jnp.zeros(r_sign.shape, bool), lost,
               (lane_sign, lane_zero, jnp.any(s_nan, axis=-1)))


def _two_stage(acc: TwoStage, t: Terms, spec: MxDotSpec) -> Sum:
    """The two-stage accumulator (MMA-Sim's gtr_fdpa, AMD CDNA3; ``TwoStage``):

    1. the even and the odd lanes' products each truncated toward zero to F bits below their
       own largest exponent (``_fixed_sum``) and summed;
    2. both sums floored to F bits below the larger exponent and added: t;
    3. with E the larger of that and c's exponent (c = 0 at the format's emin; E is c's when
       every product is zero), t floored to F2 + 1 bits below 2^E, c floored to F bits (or
       dropped below 2^(E - F - 1)), their sum floored to F2 fraction bits below its own leading
       bit (at least the output's emin).

    lost: when any stage dropped a nonzero bit."""
    sign, sig, exp, c = t.sign, t.sig, t.exp, t.c
    ea, eb, F, F2 = spec.elem_a, spec.elem_b, acc.frac_bits, acc.frac_bits2
    L = F2 + 1 - F
    low = jnp.iinfo(I32).min // 4
    halves, lost = [], False
    for part in (slice(0, None, 2), slice(1, None, 2)):
        h_sign, h_exp, h_mag, h_lost = _fixed_sum(sign[..., part], sig[..., part],
                                                  exp[..., part], ea, eb, F)
        nonzero = jnp.any(sig[..., part] != 0, axis=-1)
        value = jnp.where(h_sign == 1, -h_mag.astype(I64), h_mag.astype(I64))
        halves.append((value, jnp.where(nonzero, h_exp + F, low), nonzero))
        lost = lost | h_lost
    (s0, e0, nz0), (s1, e1, nz1) = halves
    e_dot = jnp.maximum(e0, e1)
    (f0, l0), (f1, l1) = _floor_shift(s0, e_dot - e0), _floor_shift(s1, e_dot - e1)
    t = f0 + f1                                             # units 2^(e_dot - F)
    c_sign, c_sig, c_exp, c_E = c
    c_E = jnp.where(c_sig == 0, spec.c_fmt.emin, c_E)
    big = jnp.where(nz0 | nz1, jnp.maximum(e_dot, c_E), c_E)
    u, lu = _floor_shift(t << L, big - e_dot)               # units 2^(big - F2 - 1)
    c_int = jnp.where(c_sign == 1, -c_sig.astype(I64), c_sig.astype(I64))
    shift = big - F - c_exp                                 # > 0: right, < 0: left
    v, lv = _floor_shift(c_int, shift)                      # units 2^(big - F)
    dropped = c_E < big - F - 1
    v = jnp.where(dropped, 0, v)
    lv = jnp.where(dropped, c_sig != 0, lv)
    total = u + (v << L)
    mag = jnp.abs(total).astype(U64)
    lead = jnp.maximum(msb(mag) + big - F2 - 1, spec.out_fmt.emin)
    k = jnp.maximum(lead - big + 1, 0)                      # low bits the last floor drops
    kept = shl(shr(mag, k), k)
    lk = kept != mag
    kept = jnp.where((total < 0) & lk, kept + shl(jnp.ones_like(mag), k), kept)
    lost = lost | l0 | l1 | lu | lv | lk
    return Sum((total < 0).astype(U32), (big - F2 - 1).astype(I32), kept,
               jnp.zeros(total.shape, bool), lost)


# One function per accumulation step, keyed by its class (rtl/accum.py; the RTL's table is
# ``MxDot.ACCUMULATE``, rtl/fp_units/dot_accum.py).
SUMS = {Exact: _exact, Fixed: _fixed, Grouped: _grouped, TwoStage: _two_stage}


def _floor_shift(x, shift):
    """floor(x * 2^-shift) of int64 x (shift < 0: a left shift), and whether bits were
    dropped. Shifts are capped at 63: beyond, the floor is 0 or -1."""
    right = jnp.clip(shift, 0, 63)
    out = jnp.where(shift >= 0, x >> right, x << jnp.clip(-shift, 0, 63))
    return out, (shift > 0) & any_below(jnp.abs(x).astype(U64), right)


def _truncated_sum(sign, sig, exp, emax, frac_bits: int):
    """Terms (-1)^sign * sig * 2^exp along the last axis, each truncated toward zero to a
    multiple of 2^(emax - F), summed: (sign, exponent, |sum|, whether a nonzero bit was
    lost)."""
    emax = emax[..., None]
    nonzero = sig != 0
    shift = emax - frac_bits - exp                # > 0: right shift, < 0: left shift
    sig = sig.astype(U64)
    term = jnp.where(shift > 0, shr(sig, shift), shl(sig, -shift))
    lost = jnp.any(nonzero & (shift > 0) & any_below(sig, shift), axis=-1)
    t = jnp.where(sign == 1, -term.astype(I64), term.astype(I64))
    total = jnp.sum(t, axis=-1)
    return (total < 0).astype(U32), (emax[..., 0] - frac_bits).astype(I32), \
        jnp.abs(total).astype(U64), lost


@functools.partial(jax.jit, static_argnames=("spec",))
def dot_codes(a, b, sa, sb, c=None, *, spec: MxDotSpec):
    ea, eb, acc = spec.elem_a, spec.elem_b, spec.accum
    out, opts = spec.out_fmt, spec.options
    # 1. Decode and multiply exactly: significands of at most 8 bits, products of at most 16.
    a, b = jnp.broadcast_arrays(a, b)
    ua, ub = decode_elements(a, ea), decode_elements(b, eb)
    sign = ua.sign ^ ub.sign
    sig = ua.sig * ub.sig
    exp = ua.exp + ub.exp
    zero_inf = (ua.is_inf & ub.is_zero) | (ua.is_zero & ub.is_inf)
    p_nan = ua.is_nan | ub.is_nan | zero_inf
    p_inf = (ua.is_inf | ub.is_inf) & ~p_nan
    p_snan = ua.is_snan | ub.is_snan
    grouped = acc.group is not None
    # E8M0's X_A * X_B as an exponent (0 unscaled: the scales are then 127; grouped scales
    # act inside the sum).
    e8m0_exp = 0 if grouped else (sa.astype(I32) - E8M0_BIAS) + (sb.astype(I32) - E8M0_BIAS)
    if c is not None:
        # The accumulator input joins as one more term, in the products' frame before the
        # scales (its exponent less theirs), so it is aligned and truncated like a product.
        uc = decode(jnp.asarray(c).astype(U32), spec.c_fmt, U64)
        c_exp = uc.exp - e8m0_exp
        c_term = (uc.sign, uc.sig, c_exp, c_exp + spec.c_fmt.man_bits)
        sign_all = _append(sign, uc.sign)
        p_nan, p_inf, p_snan = _append(p_nan, uc.is_nan), _append(p_inf, uc.is_inf), \
            _append(p_snan, uc.is_snan)
        zero_all = _append(sig == 0, uc.sig == 0)
    else:
        c_term, sign_all, zero_all = None, sign, sig == 0

    # 2. Accumulate: the step's own function (SUMS, keyed by its class).
    if type(acc) not in SUMS:
        raise TypeError(f"golden/dot.py SUMS has no function for {type(acc).__name__}")
    r_sign, r_exp, r_sig, sticky, lost, group_scales = \
        SUMS[type(acc)](acc, Terms(sign, sig, exp, c_term, sa, sb), spec)
    if grouped:
        lane_sign, lane_zero, scale_nan = group_scales
        sign_all = lane_sign if c is None else _append(lane_sign, uc.sign)
    mode = Mode(opts.rounding)
    # Every term zero: -0 only when every one is -0 (rdn: when any is). A sum of nonzero
    # terms that vanishes is the rounder's rule (+0, -0 rounding down), as in the RTL.
    all_zero = jnp.all(zero_all, axis=-1)
    zero_sign = jnp.any(sign_all == 1, axis=-1) if mode.is_(Rounding.RDN) else \
        jnp.all(sign_all == 1, axis=-1)
    r_sign = jnp.where(all_zero, zero_sign.astype(U32), r_sign)
    sign = sign_all

    # 3. Specials, then the scales: E8M0's X_A * X_B only moves the exponent; a value scale's
    #    significands multiply the sum (exact: the spec keeps it within 64 bits).
    pos_inf = jnp.any(p_inf & (sign == 0), axis=-1)
    neg_inf = jnp.any(p_inf & (sign == 1), axis=-1)
    if grouped:
        # Per group: a NaN scale makes the result NaN (scale_nan), a zero one times an
        # infinity too.
        scale_zero = jnp.any(p_inf[..., :spec.n] & lane_zero, axis=-1)   # inf x a zero scale
        s_exp, s_sign = 0, jnp.zeros(scale_nan.shape, U32)
    elif spec.value_scales:
        s_exp, s_sig, scale_nan, scale_zero, s_sign = _value_scales(sa, sb, spec.scale_fmt)
        r_sig = r_sig * s_sig
    else:
        s_exp = e8m0_exp
        scale_nan = (sa == E8M0_NAN) | (sb == E8M0_NAN)
        scale_zero = jnp.zeros(scale_nan.shape, bool)
        s_sign = jnp.zeros(scale_nan.shape, U32)
    inf_minus_inf = pos_inf & neg_inf
    inf_times_zero = (pos_inf | neg_inf) & scale_zero
    is_nan = jnp.any(p_nan, axis=-1) | inf_minus_inf | scale_nan | inf_times_zero
    is_inf = (pos_inf | neg_inf) & ~is_nan
    invalid = jnp.any(zero_inf, axis=-1) | jnp.any(p_snan, axis=-1) | inf_minus_inf | \
        inf_times_zero
    r_sign = jnp.where(is_inf, neg_inf.astype(U32), r_sign) ^ s_sign
    raw = Raw(sign=r_sign, exp=r_exp + s_exp, sig=r_sig,
              sticky=sticky, is_nan=is_nan, is_inf=is_inf, invalid=invalid, cancels=~all_zero)
    y, flags = round_raw(raw, out, opts, mode)
    flags = flags | jnp.where(lost & ~is_nan & ~is_inf, jnp.uint8(int(Flag.NX)), jnp.uint8(0))
    return y, flags
