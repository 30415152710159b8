"""fp add and sub: a + b and a - b, rounded once, and the aligned-sum core that fma reuses.

Same contract as golden/scalar.py ``add_core``, a different frame: sized from the formats here,
32 or 64 bits there.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.utils import bits_for

from ..formats import FloatFormat
from ..options import Rounding, UnitOptions
from .common import Operand, Raw, signed_for, unsigned_for
from .unit import FpUnit

__all__ = ["FpAdd", "FpSub", "aligned_sum", "frame_width"]


def frame_width(x: Operand, y: Operand, out: FloatFormat, options: UnitOptions) -> int:
    """Bits K of the alignment frame (the larger addend's top bit at K-1, a sticky bit below).

    Let Z be the leading zeros the larger addend (by top weight) may have. Cancellation of more
    than one bit needs an exponent difference of at most Z+1, and then both addends must fit
    exactly: K >= Z + 1 + P. Otherwise the sum's leading one is at most Z+1 below the top, and
    the rounder needs M+1 kept bits and G guard bits below it: K >= Z + M + G + 2. Operands on
    one grid (same format) need no Z: a larger subnormal means both are subnormal and aligned.
    A frame that holds every possible shift exactly needs no more bits.
    """
    guard = options.rounding.exact_bits(options.sr_bits) or 2
    z = 0 if x.grid() == y.grid() else max(x.lz_max, y.lz_max)
    p = max(x.width, y.width)
    need = max(z + 1 + p, z + out.man_bits + guard + 2)
    (xl, xh), (yl, yh) = x.top_range, y.top_range
    d_max = max(xh - yl, yh - xl, 0)
    return max(p + 1, min(need, d_max + p + 1))


def aligned_sum(m: Module, x: Operand, y: Operand, out: FloatFormat,
                options: UnitOptions, stage=None) -> Raw:
    """Exact x + y as a raw result: floor of the sum in the frame plus a sticky bit.
    ``stage`` (FpUnit.stager, the "align" cut): a pipeline register between the alignment
    shift and the adder."""
    K = frame_width(x, y, out, options)
    cx, cy = x.off + x.width - 1, y.off + y.width - 1        # top weight = exp + c
    c0 = min(cx, cy)
    tx_hi, ty_hi = x.exp_range[1] + cx - c0, y.exp_range[1] + cy - c0
    tx = Signal(unsigned_for(tx_hi), name="top_x")
    ty = Signal(unsigned_for(ty_hi), name="top_y")
    m.d.comb += [tx.eq(x.exp + (cx - c0)), ty.eq(y.exp + (cy - c0))]
    lo = min(x.exp_range[0] + cx, y.exp_range[0] + cy) - c0
    d = Signal(signed_for(-ty_hi, tx_hi), name="exp_diff")
    m.d.comb += d.eq(tx - ty)

    # The larger addend by top weight; a zero is always the smaller one.
    x_big = Signal(name="x_big")
    m.d.comb += x_big.eq(((d >= 0) & ~x.zero) | y.zero)
    sh_w = bits_for(K)
    shift = Signal(sh_w, name="align_shift")
    dabs = Mux(x_big, d, -d)
    m.d.comb += shift.eq(Mux(dabs > K, K, dabs))

    fx = Signal(K, name="frame_x")
    fy = Signal(K, name="frame_y")
    m.d.comb += [fx.eq(x.sig << (K - x.width)), fy.eq(y.sig << (K - y.width))]
    if x.sig_cleared and y.sig_cleared:
        big = Mux(x_big, fx, fy)
        small = Mux(x_big, fy, fx)
    else:
        # A zero's sig is undefined (a flushed subnormal's fraction): the select gates it out,
        # an AND-OR per bit where the mux was, instead of M AND gates per operand in decode.
        def pick(take_x):
            return (fx & (take_x & ~x.zero).replicate(K)) | (fy & (~take_x & ~y.zero).replicate(K))
        big = pick(x_big)
        small = pick(~x_big)
    ext = Signal(2 * K, name="aligned")
    m.d.comb += ext.eq(Cat(Const(0, K), small) >> shift)
    lost = ext[:K] != 0
    ext_hi = ext[K:]
    if stage is not None:
        keep = ("sign", "inf", "nan", "zero", "invalid")
        r = stage({"big": big, "small": ext_hi, "lost": lost, "x_big": x_big, "tx": tx,
                   "ty": ty, **{f"x_{k}": getattr(x, k) for k in keep},
                   **{f"y_{k}": getattr(y, k) for k in keep}})
        big, ext_hi, lost, x_big, tx, ty = (r[k] for k in ("big", "small", "lost", "x_big",
                                                           "tx", "ty"))
        x = Operand(**{**x.__dict__, **{k: r[f"x_{k}"] for k in keep}})
        y = Operand(**{**y.__dict__, **{k: r[f"y_{k}"] for k in keep}})

    # One adder for both signs: big + small, or big + ~small + 1; a negative difference (the
    # smaller-exponent addend had the larger significand) is negated afterwards.
    sub = Signal(name="eff_sub")
    m.d.comb += sub.eq(x.sign ^ y.sign)
    big2 = Cat(Const(0, 1), big)                              # sticky position below bit 0
    small2 = Cat(lost, ext_hi)
    total = Signal(K + 2, name="sum")
    m.d.comb += total.eq(big2 + Cat(small2 ^ sub.replicate(K + 1), sub) + sub)
    neg = sub & total[K + 1]
    mag = Signal(K + 2, name="sum_mag")
    m.d.comb += mag.eq(Mux(neg, -total, total))

    sign_big = Mux(x_big, x.sign, y.sign)
    exp = Signal(unsigned_for(max(tx_hi, ty_hi)), name="sum_exp")
    m.d.comb += exp.eq(Mux(x_big, tx, ty))

    inf_minus_inf = x.inf & y.inf & sub
    nan = x.nan | y.nan | inf_minus_inf
    inf = (x.inf | y.inf) & ~nan
    # Zeros of one sign add to that zero; opposite zeros vanish in the rounder (+0 / -0 rdn).
    zero = x.zero & y.zero & ~sub
    return Raw(sign=Mux(inf, Mux(x.inf, x.sign, y.sign), sign_big ^ neg), exp=exp,
               off=c0 - (K - 1), sig=mag[1:], width=K + 1,
               exp_range=(max(lo, 0), max(tx_hi, ty_hi)), lz_max=K, sticky=mag[0],
               zero=zero, inf=inf, nan=nan, invalid=x.invalid | y.invalid | inf_minus_inf,
               cancels=True)


class FpAdd(FpUnit):
    """``y = a + b`` with one rounding."""

    unit = "add"
    decoders_clear_flushed = False      # aligned_sum gates zeros in its operand select

    def core(self, m, ops):
        a, b = ops
        return aligned_sum(m, a, b, self.frame_format, self.spec.options,
                           stage=self.stager(m, "align"))


class FpSub(FpAdd):
    """``y = a - b`` with one rounding: the adder with b's sign flipped."""

    unit = "sub"

    def core(self, m, ops):
        a, b = ops
        b_sign = Signal(name="b_neg")
        m.d.comb += b_sign.eq(~b.sign)
        return super().core(m, [a, Operand(**{**b.__dict__, "sign": b_sign})])
