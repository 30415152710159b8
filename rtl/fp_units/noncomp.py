"""The non-computational units (rtl/noncomp.py): sgnj, classify, min, max, cmp.

The same steps as golden/noncomp.py: each operand's class from the shared decoder, then the
codes themselves compared as sign-magnitude integers (no exponent or significand arithmetic).
A flushing format (``--no-subnormals``) reads a subnormal as zero in the decoder; min and max
give that zero's code. cmp of two formats compares magnitude keys instead of codes: the
normalized exponent over the two formats' common range above the significand widened to the
longer one (:func:`value_key`). Registers, when ``--stages`` asks, sit after the result
(output registers).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux

from ..noncomp import CLASS_BITS, flushes
from ..options import Flag
from .decode import Decode
from .unit import Unit

__all__ = ["FpSgnj", "FpClassify", "FpMin", "FpMax", "FpCmp", "value_key"]


def signed_less(sa, ma, sb, mb):
    """Sign-magnitude a below b (-0 below +0)."""
    return Mux(sa != sb, sa, Mux(sa, mb < ma, ma < mb))


def value_key(dec: Decode, fmts) -> tuple:
    """An unsigned key of the magnitude ``dec`` decodes that orders as the values of every
    format of ``fmts`` do (``dec`` built with ``normalize=True`` for one of them): 0 for a zero;
    above it the exponent of the leading bit, biased over the formats' common range to start
    at 1, then the fraction widened to the longest; all ones for infinity."""
    lo = min(f.emin - (f.man_bits if f.has_subnormals else 0) for f in fmts)
    hi = max(f.emax for f in fmts)
    frac_bits = max(f.man_bits for f in fmts)
    exp_bits = (hi - lo + 2).bit_length()
    M = dec.fmt.man_bits
    exp = (dec.exp + (dec.off + M - lo + 1))[:exp_bits]
    key = Cat(Const(0, frac_bits - M), dec.sig[:M], exp)
    top = (1 << (frac_bits + exp_bits)) - 1
    return Mux(dec.is_inf, top, Mux(dec.is_zero, 0, key))


class NoncompUnit(Unit):
    def decoded(self, m: Module, port: str, fmt=None, **kw) -> Decode:
        dec = Decode(fmt or self.spec.fmt, **kw)
        m.submodules[f"dec_{port}"] = dec
        m.d.comb += dec.code.eq(getattr(self, port))
        return dec

    def flushed(self, code, dec: Decode):
        """``code``, a subnormal read as zero replaced by that zero's code (DAZ)."""
        fmt = self.spec.fmt
        if not flushes(fmt):
            return code
        zero = code & fmt.sign_mask if fmt.has_neg_zero else 0
        return Mux(dec.is_zero, zero, code)

    def less(self, a, b):
        """a orders below b (non-NaN codes, -0 < +0): sign-magnitude compare."""
        fmt = self.spec.fmt
        ma, mb = a[:fmt.width - fmt.signed], b[:fmt.width - fmt.signed]
        if not fmt.signed:
            return ma < mb
        return signed_less(a[-1], ma, b[-1], mb)

    def invalid(self, cond):
        return Mux(cond, int(Flag.NV), 0)


class FpSgnj(NoncompUnit):
    """a's magnitude with the sign ``op`` selects (rtl/noncomp.py SGNJ_OPS)."""

    unit = "sgnj"

    def elaborate(self, platform):
        m = Module()
        fmt = self.spec.fmt
        a, b, op = self.a, self.b, self.op
        sign = Mux(op[1], a[-1] ^ b[-1], b[-1] ^ op[0])
        y = Cat(a[:-1], sign)
        if not fmt.has_neg_zero:
            dec = self.decoded(m, "a")
            y = Mux(dec.is_zero | dec.is_nan, a, y)
        self.outputs(m, {"y": y})
        return m


class FpClassify(NoncompUnit):
    """The RISC-V fclass mask of x (rtl/noncomp.py CLASS_BITS)."""

    unit = "classify"

    def elaborate(self, platform):
        m = Module()
        fmt = self.spec.fmt
        dec = self.decoded(m, "x")
        neg = dec.sign
        if flushes(fmt) and not fmt.has_neg_zero:
            neg = dec.sign & ~dec.is_zero     # a flushed negative subnormal is the one zero, +0
        finite = ~(dec.is_nan | dec.is_inf | dec.is_zero)
        if fmt.has_subnormals:
            sub = finite & (self.x[fmt.man_bits:fmt.man_bits + fmt.exp_bits] == 0)
        else:
            sub = Const(0, 1)     # one bit: a bare 0 would widen the mask's Cat
        normal = finite & ~sub
        bits = [dec.is_inf & neg, normal & neg, sub & neg, dec.is_zero & neg,
                dec.is_zero & ~neg, sub & ~neg, normal & ~neg, dec.is_inf & ~neg, dec.is_snan,
                dec.is_nan & ~dec.is_snan]
        assert len(bits) == len(CLASS_BITS)
        self.outputs(m, {"y": Cat(*bits)})
        return m


class _FpMinMax(NoncompUnit):
    smaller: bool

    def elaborate(self, platform):
        m = Module()
        spec = self.spec
        a, b = self.a, self.b
        da, db = self.decoded(m, "a"), self.decoded(m, "b")
        a, b = self.flushed(a, da), self.flushed(b, db)
        pick_a = self.less(a, b) if self.smaller else self.less(b, a)
        y = Mux(pick_a, a, b)
        nan = spec.fmt.nan_code or 0
        if spec.minmax == "number":
            y = Mux(da.is_nan & db.is_nan, nan, Mux(da.is_nan, b, Mux(db.is_nan, a, y)))
        else:
            y = Mux(da.is_nan | db.is_nan, nan, y)
        self.outputs(m, {"y": y, "flags": self.invalid(da.is_snan | db.is_snan)})
        return m


class FpMin(_FpMinMax):
    """The smaller of a and b, -0 < +0; a NaN operand as ``--minmax`` says."""

    unit = "min"
    smaller = True


class FpMax(_FpMinMax):
    """The larger of a and b, -0 < +0; a NaN operand as ``--minmax`` says."""

    unit = "max"
    smaller = False


class FpCmp(NoncompUnit):
    """{unordered, le, lt, eq}; invalid on a signaling NaN, or on any NaN when signaling."""

    unit = "cmp"

    def elaborate(self, platform):
        m = Module()
        a, b = self.a, self.b
        if self.spec.mixed:
            da, db = (self.decoded(m, p, f, normalize=True)
                      for p, f in zip("ab", self.spec.in_fmts))
            ka, kb = (value_key(d, self.spec.in_fmts) for d in (da, db))
            same = (da.sign == db.sign) & (ka == kb)
            less = signed_less(da.sign, ka, db.sign, kb)
        else:
            da, db = self.decoded(m, "a"), self.decoded(m, "b")
            same, less = a == b, self.less(a, b)
        un = da.is_nan | db.is_nan
        zeros = da.is_zero & db.is_zero
        eq = ~un & (same | zeros)
        lt = ~un & ~zeros & less
        invalid = Mux(self.signaling, un, da.is_snan | db.is_snan)
        self.outputs(m, {"y": Cat(eq, lt, eq | lt, un), "flags": self.invalid(invalid)})
        return m
