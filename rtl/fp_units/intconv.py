"""The integer conversions (rtl/intconv.py): i2f through the one rounder, f2i by a shift to the
integer's grid, the mode's increment and a range check (golden/intconv.py, the same steps)."""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal

from ..intconv import F2iSpec, I2fSpec
from ..options import FLAGS_WIDTH
from .common import Mode, Raw, signed_for
from .decode import Decode
from .rounder import stochastic_carry
from .unit import FpUnit, Unit

__all__ = ["FpI2f", "FpF2i"]


class FpI2f(FpUnit):
    """``y = a``: the integer's sign and magnitude are the raw result (weight 2^0) the rounder
    takes; there is no float operand to decode."""

    unit = "i2f"

    def __init__(self, spec: I2fSpec):
        super().__init__(spec)

    def core(self, m, ops):
        ints = self.spec.int_fmt
        n = ints.width
        neg = self.a[n - 1] if ints.signed else Const(0, 1)
        mag = Signal(n, name="magnitude")        # -(-2^(N-1)) is 2^(N-1) as N unsigned bits
        m.d.comb += mag.eq(Mux(neg, -self.a, self.a))
        no = Const(0, 1)
        return Raw(sign=neg, exp=Const(0, 1), off=0, sig=mag, width=n, exp_range=(0, 0),
                   lz_max=n - 1, sticky=no, zero=self.a == 0, inf=no, nan=no, invalid=no)


class FpF2i(Unit):
    """``y = a`` rounded to an integer of N bits: (1) decode; (2) cut ``decode``; the magnitude
    on the integer grid with G bits below it (Y, N + 1 + G bits) and a sticky bit, the operand
    out of range whatever the mode when its leading one weighs 2^(N+1) or more; (3) cut
    ``core``; the mode's increment; (4) the range check and the saturated integer
    (rtl/intconv.py). G is 1 (the round bit), or the exact bits a stochastic mode reads (R,
    or R + 1 for P3109's B and C), as the rounder's window keeps them below a float's LSB."""

    unit = "f2i"

    def __init__(self, spec: F2iSpec):
        super().__init__(spec)

    def elaborate(self, platform):
        m = Module()
        spec = self.spec
        ints, fmt = spec.int_fmt, spec.in_fmt
        n = ints.width
        dec = Decode(fmt)
        m.submodules[f"dec_a_{fmt.ident}"] = dec
        m.d.comb += dec.code.eq(self.a)
        controls = {"rm": self.rm} if spec.has_rm else {}
        if spec.has_rbits:
            controls["rbits"] = self.rbits
        d = self.cut(m, "decode", {"sign": dec.sign, "exp": dec.exp, "sig": dec.sig,
                                   "nan": dec.is_nan, "inf": dec.is_inf, **controls})

        # 2. Y = floor(|a| * 2^G) on N + 1 + G bits, the bits below it sticky. The exponent
        #    field (subnormals at 1) and the P-bit sig: |a| = sig * 2^(exp + off), so Y's left
        #    shift is k = exp + off + G. big: a normal leading one (weight exp + off + P - 1) at
        #    2^(N+1) or above; subnormals lie below 2^emin <= 2 (a bias is never negative).
        G = max(1, spec.rounding.exact_bits(spec.sr_bits))
        P, off = dec.width, dec.off
        e_hi = (1 << fmt.exp_bits) - 1
        first_big = n + 2 - off - P             # the first exponent field that is big
        big = Const(0, 1) if first_big > e_hi else d["exp"] >= first_big
        k_lo, k_hi = off + G, min(e_hi, first_big - 1) + off + G
        k = Signal(signed_for(k_lo, e_hi + off + G), name="shift")
        m.d.comb += k.eq(d["exp"] + (off + G))
        sig = d["sig"]
        y2 = Signal(n + 1 + G, name="y2")
        sticky = Signal(name="sticky")
        left = right = None
        if k_hi > 0:
            amount = Signal(range(k_hi + 1), name="lshift")
            m.d.comb += amount.eq(Mux(k < 0, 0, Mux(k > k_hi, k_hi, k)))
            left = (sig << amount)[:n + 1 + G]
        if k_lo < 0:
            # Shifted right by up to P + 1: every bit below Y, into the sticky part.
            amount = Signal(range(P + 2), name="rshift")
            m.d.comb += amount.eq(Mux(k >= 0, 0, Mux(k < -(P + 1), P + 1, -k)))
            ext = Signal(2 * P + 1, name="rshifted")
            m.d.comb += ext.eq(Cat(Const(0, P + 1), sig) >> amount)
            right = ext[P + 1:]
            m.d.comb += sticky.eq(ext[:P + 1] != 0)
        if left is not None and right is not None:
            m.d.comb += y2.eq(Mux(k < 0, right, left))
        else:
            m.d.comb += y2.eq(left if left is not None else right)
        c = self.cut(m, "core", {"sign": d["sign"], "y2": y2, "sticky": sticky, "big": big,
                                 "nan": d["nan"], "inf": d["inf"],
                                 **{k: d[k] for k in controls}})

        # 3. The increment of the rounding mode; a stochastic one reads the G bits below the
        #    integer's LSB and the sticky of the rest against rbits, as the rounder does.
        sign, y2 = c["sign"], c["y2"]
        q, rb = y2[G:], y2[G - 1]
        below = c["sticky"] | (y2[:G - 1] != 0) if G > 1 else c["sticky"]
        mode = Mode(spec.options, c.get("rm"))
        sr_carry = stochastic_carry(spec.options, y2, c["sticky"], c["rbits"]) \
            if spec.has_rbits else 0
        mag = Signal(n + 2, name="mag")
        m.d.comb += mag.eq(q + mode.increment(sign, q[0], rb, below, sr_carry))

        # 4. The range and the result: out of range, infinities, NaN saturate with invalid.
        if ints.signed:
            fits = Mux(sign, mag <= -ints.lo, mag <= ints.hi)
        else:
            fits = Mux(sign, mag == 0, mag <= ints.hi)
        invalid = Signal(name="invalid")
        inexact = Signal(name="inexact")
        m.d.comb += [invalid.eq(c["nan"] | c["inf"] | c["big"] | ~fits),
                     inexact.eq((rb | below) & ~invalid)]
        mask = (1 << n) - 1
        nan_int = ints.hi if spec.int_overflow == "riscv" else 0
        y = Signal(n, name="y")
        m.d.comb += y.eq(Mux(c["nan"], nan_int,
                             Mux(invalid, Mux(sign, ints.lo & mask, ints.hi),
                                 Mux(sign, -mag, mag)[:n])))
        flags = Signal(FLAGS_WIDTH, name="flags")
        m.d.comb += flags.eq(Cat(inexact, Const(0, 3), invalid))
        self.outputs(m, {"y": y, "flags": flags})
        return m
