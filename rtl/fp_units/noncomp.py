"""The non-computational units (rtl/noncomp.py): sgnj, classify, min, max, cmp.

The same steps as golden/noncomp.py: each operand's class from the shared decoder, then the
codes themselves compared as sign-magnitude integers (no exponent or significand arithmetic).
Registers, when ``--stages`` asks, sit after the result (output registers).
"""

from __future__ import annotations

from amaranth.hdl import Cat, Module, Mux

from ..noncomp import CLASS_BITS
from ..options import Flag
from .decode import Decode
from .unit import Unit

__all__ = ["FpSgnj", "FpClassify", "FpMin", "FpMax", "FpCmp"]


class _Noncomp(Unit):
    def decoded(self, m: Module, port: str) -> Decode:
        dec = Decode(self.spec.fmt)
        m.submodules[f"dec_{port}"] = dec
        m.d.comb += dec.code.eq(getattr(self, port))
        return dec

    def less(self, a, b):
        """a orders below b (non-NaN codes, -0 < +0): sign-magnitude compare."""
        fmt = self.spec.fmt
        ma, mb = a[:fmt.width - fmt.signed], b[:fmt.width - fmt.signed]
        if not fmt.signed:
            return ma < mb
        sa, sb = a[-1], b[-1]
        return Mux(sa != sb, sa, Mux(sa, mb < ma, ma < mb))

    def invalid(self, cond):
        return Mux(cond, int(Flag.NV), 0)


class FpSgnj(_Noncomp):
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


class FpClassify(_Noncomp):
    """The RISC-V fclass mask of x (rtl/noncomp.py CLASS_BITS)."""

    unit = "classify"

    def elaborate(self, platform):
        m = Module()
        fmt = self.spec.fmt
        dec = self.decoded(m, "x")
        neg = dec.sign
        finite = ~(dec.is_nan | dec.is_inf | dec.is_zero)
        if fmt.has_subnormals:
            sub = finite & (self.x[fmt.man_bits:fmt.man_bits + fmt.exp_bits] == 0)
        else:
            sub = 0
        normal = finite & ~sub
        bits = [dec.is_inf & neg, normal & neg, sub & neg, dec.is_zero & neg,
                dec.is_zero & ~neg, sub & ~neg, normal & ~neg, dec.is_inf & ~neg, dec.is_snan,
                dec.is_nan & ~dec.is_snan]
        assert len(bits) == len(CLASS_BITS)
        self.outputs(m, {"y": Cat(*bits)})
        return m


class _FpMinMax(_Noncomp):
    smaller: bool

    def elaborate(self, platform):
        m = Module()
        spec = self.spec
        a, b = self.a, self.b
        da, db = self.decoded(m, "a"), self.decoded(m, "b")
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


class FpCmp(_Noncomp):
    """{unordered, le, lt, eq}; invalid on a signaling NaN, or on any NaN when signaling."""

    unit = "cmp"

    def elaborate(self, platform):
        m = Module()
        a, b = self.a, self.b
        da, db = self.decoded(m, "a"), self.decoded(m, "b")
        un = da.is_nan | db.is_nan
        zeros = da.is_zero & db.is_zero
        eq = ~un & ((a == b) | zeros)
        lt = ~un & ~zeros & self.less(a, b)
        invalid = Mux(self.signaling, un, da.is_snan | db.is_snan)
        self.outputs(m, {"y": Cat(eq, lt, eq | lt, un), "flags": self.invalid(invalid)})
        return m
