"""The value-scale datapaths of the block units: an NVFP4 recipe's E4M3 block scale and its
element scaling, computed in binary32 in the recipe's own operation order (rtl/blockscale.py
names the recipes, docs/blockscale.md gives each formula with its source). Same operations as
golden/blockscale.py, one circuit per float32 operation (rtl/fp_units/binary32.py), so every
intermediate rounding of the recipe is reproduced.

Quantizer: bamax (the block's largest magnitude pattern), tensor_amax -> the scale code and a
function that scales one element (x_i -> the float32 y_i the element cast rounds). Dequantizer:
the scale code and tensor_amax -> the float32 factor each element value is multiplied by.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux

from ..blockscale import Arithmetic, BlockScaling
from ..options import UnitOptions
from .binary32 import FLT_MAX, ONE, Binary32, bits

__all__ = ["block_scale", "four_over_six", "dequantize_factor", "is_nan"]


def _c(value: float):
    return Const(bits(value), 32)


def is_nan(v):
    return v[:31] > 0x7F80_0000


def block_scale(m: Module, s: BlockScaling, bamax, amax_t):
    """(scale code, scale_element): the block's scale code and a function f(x_i, i) -> the
    float32 y_i the element cast takes (ModelOpt: a division per element)."""
    f = Binary32(m, "bs")
    rule = s.rule
    gm6 = _c(6.0 * rule.global_max)
    scale_cast = UnitOptions(saturate=rule.scale_saturates)
    if rule.arithmetic is Arithmetic.TE:
        s_enc, s_dec = _te_tensor_scales(f, gm6, amax_t)
        k = f.mul(s_enc, _c(1 / 6), "k")
        code, _ = f.cast(f.mul(bamax, k, "sb"), s.scale_fmt, scale_cast, "code")
        inv = _te_reciprocal(f, code, s, s_dec, "")
        return code, lambda x, i: f.mul(x, inv, f"y{i}")
    s2 = f.div(amax_t, gm6, "s2")
    if rule.arithmetic is Arithmetic.MODELOPT:
        sb = f.div(bamax, f.mul(_c(6.0), s2, "s2x6"), "sb_q")
        if rule.zero_block_one:
            sb = f.named("sb", Mux(sb == 0, ONE, sb))
        code, _ = f.cast(sb, s.scale_fmt, scale_cast, "code")
        d = f.mul(f.widen(code, s.scale_fmt, "sf"), s2, "sf_s2")
        return code, lambda x, i: f.div(x, d, f"y{i}")
    # torchao: (bamax / 6) / s2, clamped to [scale_floor, 448] (NaN passes), then x * ((1/s2)/sf)
    sb = f.div(f.div(bamax, _c(6.0), "bamax6"), s2, "sb_q")
    if rule.scale_floor is not None:
        lo, hi = _c(float(rule.scale_floor)), _c(448.0)
        clamped = Mux(sb < lo, lo, Mux(sb > hi, hi, sb))
        sb = f.named("sb", Mux(is_nan(sb), sb, clamped))
    code, _ = f.cast(sb, s.scale_fmt, scale_cast, "code")
    sf = f.widen(code, s.scale_fmt, "sf")
    mult = f.div(f.div(Const(ONE, 32), s2, "inv_s2"), sf, "mult")
    return code, lambda x, i: f.mul(x, mult, f"y{i}")


def _te_tensor_scales(f: Binary32, gm6, amax_t):
    """TE's S_enc = RN(6 * global_max / amax), inf -> FLT_MAX, 0 or a zero quotient -> 1.0;
    and S_dec = RN(1 / S_enc)."""
    s_enc = f.fmin(f.div(gm6, amax_t, "s_enc_q"), Const(FLT_MAX, 32), "s_enc_min")
    s_enc = f.named("s_enc", Mux((amax_t == 0) | (s_enc == 0), ONE, s_enc))
    return s_enc, f.div(Const(ONE, 32), s_enc, "s_dec")


def _te_reciprocal(f: Binary32, code, s: BlockScaling, s_dec, tag: str):
    """TE's element multiplier min(RN(1 / RN(sf * S_dec)), FLT_MAX) of a block-scale code."""
    sf = f.widen(code, s.scale_fmt, f"sf{tag}")
    return f.fmin(f.div(Const(ONE, 32), f.mul(sf, s_dec, f"sf_dec{tag}"), f"inv_q{tag}"),
                  Const(FLT_MAX, 32), f"inv{tag}")


def four_over_six(m: Module, s: BlockScaling, xs: list, bamax, amax_t, options, rbits: list):
    """TE's 4over6 (arXiv 2512.02010): the block quantized under two scales, one mapping the
    block's amax to 6 and one to 4, each candidate's summed absolute error in TE's float32
    order, and the map-to-4 candidate kept when strictly better. -> (scale code, element
    codes, element flags)."""
    f = Binary32(m, "bs")
    rule = s.rule
    gm6 = _c(6.0 * rule.global_max)
    scale_cast = UnitOptions(saturate=rule.scale_saturates)
    s_enc, s_dec = _te_tensor_scales(f, gm6, amax_t)
    base = f.mul(f.div(bamax, _c(6.0), "bamax6"), s_enc, "base")
    cap = Const(bits(448.0), 32)
    candidates = {"4": f.fmin(f.mul(base, _c(1.5), "base15"), cap, "sb4"),
                  "6": f.fmin(base, cap, "sb6")}
    results = {}
    for tag, sb in candidates.items():
        code, _ = f.cast(sb, s.scale_fmt, scale_cast, f"code{tag}")
        sf = f.widen(code, s.scale_fmt, f"sf{tag}_err")
        inv = _te_reciprocal(f, code, s, s_dec, tag)
        err = Const(0, 32)
        codes, flags = [], []
        for i, x in enumerate(xs):
            y = f.mul(x, inv, f"y{tag}_{i}")
            q, fl = f.cast(y, s.elem, options, f"q{tag}_{i}", rbits[i])
            deq = f.widen(q, s.elem, f"deq{tag}_{i}")
            val = f.div(f.mul(f.mul(deq, sf, f"deq_sf{tag}_{i}"), amax_t, f"deq_amax{tag}_{i}"),
                        gm6, f"val{tag}_{i}")
            d = f.sub(val, x, f"diff{tag}_{i}")
            err = f.add(err, Cat(d[:31], Const(0, 1)), f"err{tag}_{i}")
            codes.append(q)
            flags.append(fl)
        results[tag] = (code, codes, flags, err)
    (c4, q4, f4, e4), (c6, q6, f6, e6) = results["4"], results["6"]
    four = f.named("map_to_4", (e4 < e6) & ~((e4 > 0x7F80_0000) | (e6 > 0x7F80_0000)), 1)
    return (f.named("code", Mux(four, c4, c6), 8),
            [f.named(f"q{i}", Mux(four, a, b), len(a)) for i, (a, b) in enumerate(zip(q4, q6))],
            [Mux(four, a, b) for a, b in zip(f4, f6)])


def dequantize_factor(m: Module, s: BlockScaling, scale, amax_t):
    """The float32 factor of a block: TE sf * amax * fl(1/2688); ModelOpt, torchao sf * s2;
    P3109 the scale itself."""
    f = Binary32(m, "dq")
    rule = s.rule
    sf = f.widen(scale, s.scale_fmt, "sf")
    if rule.arithmetic is Arithmetic.P3109:
        return sf
    if rule.arithmetic is Arithmetic.TE:
        return f.mul(f.mul(sf, amax_t, "sf_amax"), _c(1 / (6 * rule.global_max)), "factor")
    return f.mul(sf, f.div(amax_t, _c(6.0 * rule.global_max), "s2"), "factor")
