"""Small building blocks shared by the units: the raw result bundle, a leading-zero counter,
pipeline registers and the decoded rounding mode."""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Cat, Const, Module, Mux, Signal, Value, signed, unsigned
from amaranth.utils import ceil_log2

from ..options import RM_CODES, RM_MAX, Rounding, UnitOptions

__all__ = ["Raw", "Operand", "by_fmt", "lzc", "max_tree", "register", "valid_chain", "Mode",
           "signed_for",
           "unsigned_for"]


def signed_for(lo: int, hi: int):
    """The narrowest signed shape holding every integer in [lo, hi]."""
    return signed(max(max(hi, 0).bit_length(), (-min(lo, 0) - 1).bit_length()) + 1)


def unsigned_for(hi: int):
    return unsigned(max(hi, 1).bit_length())


@dataclass
class Operand:
    """An exact finite value ``(-1)^sign * sig * 2^(exp + off)`` with what is statically known
    about it. Decoded operands and products are Operands; the add core takes two."""

    sign: Value
    exp: Value                 # unsigned or signed signal
    off: int                   # weight of sig's LSB is exp + off
    sig: Value                 # ``width`` bits
    width: int
    exp_range: tuple[int, int]  # values of exp for nonzero sig
    lz_max: int                # leading zeros of a nonzero sig
    zero: Value                # the value is zero (sig is 0 then, unless not sig_cleared)
    inf: Value                 # infinity (not NaN)
    nan: Value                 # NaN (including invalid operations)
    invalid: Value             # raise invalid
    # False: a zero's sig is undefined (a flushed subnormal's fraction, a normalized zero), and
    # a consumer that adds sigs must gate it out by ``zero``.
    sig_cleared: bool = True
    # A multi-format operand's member formats by fmt: operands decoded from different formats
    # for one fmt are not on one grid, whatever their union ranges say.
    members: tuple = ()

    @property
    def top_range(self) -> tuple[int, int]:
        """Range of the weight of sig's MSB."""
        c = self.off + self.width - 1
        return self.exp_range[0] + c, self.exp_range[1] + c

    def grid(self):
        """Operands on the same grid align without extra guard bits for leading zeros."""
        return (self.off, self.width, self.exp_range, self.lz_max, self.members)


@dataclass
class Raw:
    """Step 2 -> step 3: the raw result the one rounder takes (docs/numerics.md section 1).

    value = (-1)^sign * (sig + f) * 2^(exp + off), 0 <= f < 1, sticky = (f > 0). ``zero`` forces
    an exact zero of sign ``sign``; with ``cancels`` a vanished sum (sig == 0, no sticky) is an
    exact zero of opposite-signed addends: +0, or -0 when rounding down.
    """

    sign: Value
    exp: Value
    off: int
    sig: Value
    width: int
    exp_range: tuple[int, int]
    lz_max: int
    sticky: Value
    zero: Value
    inf: Value
    nan: Value
    invalid: Value
    cancels: bool = False
    # An exact infinity from a finite non-zero dividend over zero: the divide-by-zero flag
    # (IEEE 754 7.3). None: the unit does not divide.
    divzero: Value | None = None

    def values(self) -> dict:
        return dict(sign=self.sign, exp=self.exp, sig=self.sig, sticky=self.sticky,
                    zero=self.zero, inf=self.inf, nan=self.nan, invalid=self.invalid) | \
            ({} if self.divzero is None else {"divzero": self.divzero})


def by_fmt(m: Module, fmt: Value, values: list[int], name: str):
    """The constant ``values[fmt]`` (0 for a code past the list) as a signal, or a Python int
    when every value is the same (multi-format units: a member's constant by its code)."""
    if len(set(values)) == 1:
        return values[0]
    lo, hi = min(values + [0]), max(values + [0])
    sig = Signal(signed_for(lo, hi) if lo < 0 else unsigned_for(hi), name=name)
    with m.Switch(fmt):
        for v in dict.fromkeys(values):
            with m.Case(*[i for i, x in enumerate(values) if x == v]):
                m.d.comb += sig.eq(v)
    return sig


def lzc(m: Module, value: Value, name: str):
    """Leading-zero count of ``value`` as a balanced tree of 2:1 muxes.

    Returns (count, all_zero); count is only meaningful when all_zero is 0. The input is padded
    at the bottom with ones up to a power of two, which never changes a nonzero count.
    """
    n = len(value)
    size = 1 << ceil_log2(max(n, 2))
    padded = Cat(Const((1 << (size - n)) - 1, size - n), value) if size != n else value

    def tree(v, width):
        if width == 2:
            return ~v[1], ~v[1] & ~v[0]
        half = width // 2
        c_hi, z_hi = tree(v[half:], half)
        c_lo, z_lo = tree(v[:half], half)
        return Mux(z_hi, Cat(c_lo, Const(1, 1)), Cat(c_hi, Const(0, 1))), z_hi & z_lo

    count, _ = tree(padded, size)
    cnt = Signal(ceil_log2(size), name=f"{name}_count")
    zero = Signal(name=f"{name}_zero")
    m.d.comb += [cnt.eq(count), zero.eq(value == 0)]
    return cnt, zero


def max_tree(m: Module, values: list, name: str, greater=None, stage=None):
    """Largest of ``values`` (unsigned, or by ``greater(a, b)``) as a balanced tree of
    compare-and-select; ``stage(level, values)`` (levels from 1), if given, may register each
    level's values (amax's cut points; the MX quantizers' block amax takes it unstaged)."""
    level = 0
    while len(values) > 1:
        nxt = []
        for i in range(0, len(values) - 1, 2):
            s = Signal(len(values[i]), name=f"{name}_l{level}_{i // 2}")
            a, b = values[i], values[i + 1]
            m.d.comb += s.eq(Mux(a > b if greater is None else greater(a, b), a, b))
            nxt.append(s)
        if len(values) % 2:
            nxt.append(values[-1])
        values, level = nxt, level + 1
        if stage is not None:
            values = stage(level, values)
    return values[0]


def register(m: Module, enable: bool, prefix: str, values: dict) -> dict:
    """A pipeline cut: registered copies of ``values`` (in ``sync``) when enabled, else the
    values themselves. Python constants pass through."""
    if not enable:
        return dict(values)
    out = {}
    for key, value in values.items():
        if isinstance(value, (bool, int)):
            out[key] = value
            continue
        value = Value.cast(value)
        reg = Signal(value.shape(), name=f"{prefix}_{key}")
        m.d.sync += reg.eq(value)
        out[key] = reg
    return out


class Mode:
    """The rounding mode as one-bit values: Python bools when static, decoded from ``rm``
    (RISC-V frm; reserved codes 5-7 round as rne) when dynamic."""

    def __init__(self, options: UnitOptions, rm: Value | None = None):
        r = options.rounding
        if r is Rounding.DYNAMIC:
            if rm is None:
                raise ValueError("rounding 'dynamic' needs an rm value")
            self.rtz, self.rdn, self.rup, self.rna = (
                rm == RM_CODES[m] for m in (Rounding.RTZ, Rounding.RDN, Rounding.RUP, Rounding.RNA))
            self.rne = (rm == RM_CODES[Rounding.RNE]) | (rm > RM_MAX)   # reserved codes: rne
            self.rod = self.sr = False
        else:
            self.rne, self.rtz, self.rdn, self.rup, self.rna, self.rod, self.sr = (
                r is Rounding.RNE, r is Rounding.RTZ, r is Rounding.RDN, r is Rounding.RUP,
                r is Rounding.RNA, r is Rounding.ROD, r.stochastic)

    def increment(self, sign, parity, rnd, sticky, sr_carry=0):
        """The increment added to the truncated code (docs/numerics.md section 3)."""
        inexact = rnd | sticky
        terms = [(self.rne, rnd & (sticky | parity)), (self.rna, rnd),
                 (self.rup, inexact & ~sign), (self.rdn, inexact & sign),
                 (self.rod, inexact & ~parity), (self.sr, sr_carry)]
        return _or_of(sel & val if not isinstance(sel, bool) else (val if sel else None)
                      for sel, val in terms)

    def overflows_to_infinity(self, sign):
        """IEEE 754 7.4: modes that carry an overflow to infinity (else to the largest finite)."""
        terms = [(self.rne, 1), (self.rna, 1), (self.sr, 1), (self.rup, ~sign),
                 (self.rdn, sign)]
        return _or_of((val if sel else None) if isinstance(sel, bool) else sel & val
                      for sel, val in terms)


    def keeps_finite(self, sign, unsigned: bool):
        """P3109 SatNone (4.7.5): the modes whose overflow stays at +-max finite -- rounding
        toward the range (rtz; rdn above, rup below), and ToOdd in unsigned formats."""
        terms = [(self.rtz, 1), (self.rdn, ~sign), (self.rup, sign)] + \
            ([(self.rod, 1)] if unsigned else [])
        return _or_of((val if sel else None) if isinstance(sel, bool) else sel & val
                      for sel, val in terms)

    def toward_zero_or_up(self):
        """P3109 SatNone: the modes that take a finite value below 0 to 0 in unsigned formats."""
        return _or_of(sel if not isinstance(sel, bool) else (1 if sel else None)
                      for sel in (self.rtz, self.rup))


def valid_chain(m: Module, valid_i: Value, valid_o: Value, stages: int) -> None:
    """``valid_o`` = ``valid_i`` delayed by ``stages`` clock cycles (cleared by reset); every
    pipelined unit's valid signals go through this one chain."""
    valid = valid_i
    for i in range(stages):
        nxt = Signal(name=f"valid_s{i + 1}")
        m.d.sync += nxt.eq(valid)
        valid = nxt
    m.d.comb += valid_o.eq(valid)


def _or_of(terms):
    out = None
    for t in terms:
        if t is None:
            continue
        if isinstance(t, int):
            t = Const(t, 1)
        out = t if out is None else out | t
    return Const(0, 1) if out is None else out
