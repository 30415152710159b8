"""IEEE binary32 arithmetic as circuits, for the block units whose scales are computed in float32
(the NVFP4 recipes): the same operations as golden/fp32.py, built from the same parts.

``mul``, ``add``, ``sub`` and the casts are the scalar units themselves (FpMul, FpAdd, FpSub,
FpCvt on float32), instantiated as submodules; ``div`` is the one new core, a restoring divider whose quotient and remainder go to
the shared Rounder, as golden/fp32.py ``quotient`` does. Every operation rounds to nearest even
except the casts, which take the unit's options. Each call adds a named submodule to ``m``.
"""

from __future__ import annotations

import struct

from amaranth.hdl import Cat, Const, Elaboratable, Module, Mux, Signal, signed

from ..formats import CATALOG, FloatFormat
from ..options import UnitOptions
from ..scalar import AddSpec, CvtSpec, MulSpec, SubSpec
from .add import FpAdd, FpSub
from .common import Raw
from .cvt import FpCvt
from .decode import Decode
from .mul import FpMul
from .rounder import Rounder

__all__ = ["Binary32", "F32", "FLT_MAX", "ONE", "bits"]

class _Mul(FpMul):
    """FpMul without the rounder's early overflow test: the NVFP4 units keep the Verilog their
    verification record holds (with it the float32 mul alone maps to 6169 GE / 4770 ps
    instead of 6513 / 5125; adopting it here needs those units proven equivalent)."""

    early_overflow = False


F32 = CATALOG["float32"]
FLT_MAX = 0x7F7F_FFFF
ONE = 0x3F80_0000
_MUL, _ADD, _SUB = (S(F32, (F32, F32)) for S in (MulSpec, AddSpec, SubSpec))
# Quotient bits: significands normalized to [2^23, 2^24) divide into 26 or 27 bits, two beyond
# binary32's 24 (guard and round); the remainder is the sticky bit.
QUOTIENT_BITS = 27


def bits(value: float) -> int:
    """A float32 constant's bit pattern (as golden/fp32.py ``bits``)."""
    return struct.unpack("<I", struct.pack("<f", value))[0]


class Divider(Elaboratable):
    """y = RN(a / b) in binary32, IEEE 754 (x/0 = +-inf, 0/0 and inf/inf NaN)."""

    def __init__(self):
        self.a, self.b, self.y = Signal(32, name="a"), Signal(32, name="b"), Signal(32, name="y")

    def elaborate(self, platform):
        m = Module()
        da, db = Decode(F32, normalize=True), Decode(F32, normalize=True)
        m.submodules.dec_a, m.submodules.dec_b = da, db
        m.d.comb += [da.code.eq(self.a), db.code.eq(self.b)]
        # floor(sa * 2^26 / sb) one bit at a time; sa < 2 sb keeps every partial remainder < sb.
        # One subtractor per bit: its borrow is the compare.
        rem, q = da.sig, []
        for j in reversed(range(QUOTIENT_BITS)):
            trial = rem if j == QUOTIENT_BITS - 1 else Cat(Const(0, 1), rem)
            diff = Signal(26, name=f"diff{j}")
            bit = Signal(name=f"q{j}")
            nxt = Signal(25, name=f"rem{j}")
            m.d.comb += [diff.eq(trial - db.sig), bit.eq(~diff[25]),
                         nxt.eq(Mux(bit, diff[:25], trial))]
            q.append(bit)
            rem = nxt
        invalid_op = (da.is_zero & db.is_zero) | (da.is_inf & db.is_inf)
        nan = da.is_nan | db.is_nan | invalid_op
        inf = (da.is_inf | (db.is_zero & ~da.is_zero)) & ~nan
        exp = Signal(signed(11), name="exp")
        m.d.comb += exp.eq(da.exp - db.exp)
        (alo, ahi), (blo, bhi) = da.exp_range, db.exp_range
        raw = Raw(sign=da.sign ^ db.sign, exp=exp, off=da.off - db.off - (QUOTIENT_BITS - 1),
                  sig=Cat(*reversed(q)), width=QUOTIENT_BITS, exp_range=(alo - bhi, ahi - blo),
                  lz_max=1, sticky=rem != 0,
                  zero=(da.is_zero | db.is_inf) & ~nan & ~inf, inf=inf, nan=nan,
                  invalid=invalid_op | da.is_snan | db.is_snan)
        rnd = Rounder(F32, UnitOptions(), raw)
        m.submodules.round = rnd
        m.d.comb += self.y.eq(rnd.y)
        return m


class Binary32:
    """Builds float32 operations into module ``m``; submodules are named ``<prefix>_<op><n>``."""

    def __init__(self, m: Module, prefix: str):
        self.m, self.prefix, self.count = m, prefix, 0

    def _add(self, what: str, unit):
        self.m.submodules[f"{self.prefix}_{what}{self.count}"] = unit
        self.count += 1
        return unit

    def named(self, name: str, value, width: int = 32):
        """``value`` as a signal called ``<prefix>_<name>`` (readable Verilog)."""
        s = Signal(width, name=f"{self.prefix}_{name}")
        self.m.d.comb += s.eq(value)
        return s

    def mul(self, a, b, name: str):
        """RN(a * b)."""
        u = self._add("mul", _Mul(_MUL))
        self.m.d.comb += [u.a.eq(a), u.b.eq(b)]
        return self.named(name, u.y)

    def add(self, a, b, name: str):
        """RN(a + b)."""
        u = self._add("add", FpAdd(_ADD))
        self.m.d.comb += [u.a.eq(a), u.b.eq(b)]
        return self.named(name, u.y)

    def sub(self, a, b, name: str):
        """RN(a - b)."""
        u = self._add("sub", FpSub(_SUB))
        self.m.d.comb += [u.a.eq(a), u.b.eq(b)]
        return self.named(name, u.y)

    def div(self, a, b, name: str):
        """RN(a / b)."""
        u = self._add("div", Divider())
        self.m.d.comb += [u.a.eq(a), u.b.eq(b)]
        return self.named(name, u.y)

    def fmin(self, a, b, name: str):
        """C's fminf for non-NaN operands, as golden/fp32.py ``fmin`` (sign-magnitude order)."""
        key_a, key_b = _order_key(a), _order_key(b)
        return self.named(name, Mux(key_a <= key_b, a, b))

    def cast(self, x, fmt: FloatFormat, options: UnitOptions, name: str, rbits=None):
        """(code, flags): float32 ``x`` rounded into ``fmt`` by the cvt unit of ``options``."""
        u = self._add("cvt", FpCvt(CvtSpec(fmt, (F32,), options)))
        self.m.d.comb += u.x.eq(x)
        if rbits is not None:
            self.m.d.comb += u.rbits.eq(rbits)
        return self.named(name, u.y, fmt.width), u.flags

    def widen(self, code, fmt: FloatFormat, name: str):
        """The float32 pattern of a ``fmt`` code (exact)."""
        u = self._add("cvt", FpCvt(CvtSpec(F32, (fmt,))))
        self.m.d.comb += u.x.eq(code)
        return self.named(name, u.y)


def _order_key(v):
    """The value order of a float32 pattern as a signed integer: -magnitude when negative."""
    mag = v[:31]
    return Mux(v[31], -mag, mag).as_signed()
