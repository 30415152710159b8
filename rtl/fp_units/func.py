"""The function units (rtl/func.py): recip, rsqrt and exp2, each a table and the shared rounder.

Every table entry is the function's value truncated to Q = p + guard significant bits (p the
result's precision, guard the spec's ``guard_bits``) and every entry's sticky bit says whether
the value is exact, so the raw result the rounder takes is exact in its contract (value =
(sig + f) 2^(exp + off), sticky = f > 0): the rounder rounds it in any mode, at any position,
normal or subnormal. docs/func.md says why Q bits suffice and why faithful keeps p.

The entries are computed here once per spec, from exact integers (recip, rsqrt: integer
division and ``math.isqrt``) or from ``decimal``'s correctly rounded exp and ln at 60 digits
with the error checked (exp2, whose non-integer values are irrational), independently of the
golden model, which tests compare with these units over every input.
"""

from __future__ import annotations

import decimal
import functools
import math
from fractions import Fraction

from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib.memory import Memory

from ..formats import FloatFormat, Specials
from ..func import FuncSpec
from .common import Operand, Raw, signed_for
from .unit import FpUnit

__all__ = ["FpRecip", "FpRsqrt", "FpExp2", "exp2_regions", "exp2_table"]


def rom(m: Module, name: str, index, entries: list[int], width: int) -> Signal:
    """A combinational table: ``entries[index]``, a memory with an asynchronous read port and
    its contents as its initial value (a case statement of 36k entries elaborates for
    minutes; the memory in no time), which synthesis maps to logic."""
    out = Signal(width, name=name)
    if len(entries) == 1:
        m.d.comb += out.eq(entries[0])
        return out
    mem = Memory(shape=unsigned(width), depth=len(entries), init=entries)
    m.submodules[name] = mem
    port = mem.read_port(domain="comb")
    m.d.comb += [port.addr.eq(index), out.eq(port.data)]
    return out


class _FpFunc(FpUnit):
    """A function unit: ``table_raw`` builds the raw result; a zero operand's exact infinity
    gives divide-by-zero through the rounder, as div's does."""

    def core(self, m: Module, ops: list[Operand]) -> Raw:
        (x,) = ops
        raw, dz = self.table_raw(m, x)
        return Raw(**{**raw.__dict__, "divzero": dz})

    @property
    def Q(self) -> int:
        return self.spec.out_fmt.precision + self.spec.guard_bits


class FpRecip(_FpFunc):
    """1/x: the reciprocal of x's significand m in [1, 2) from a table of 2^M entries."""

    unit = "recip"
    normalized_operands = True

    def table_raw(self, m, x):
        M, Q = self.spec.in_fmts[0].man_bits, self.Q
        # floor(2^(M+Q) / sig) for sig = 2^M + f: in (2^(Q-1), 2^Q], exact only at f = 0.
        entries = [(1 << (M + Q)) // ((1 << M) + f) for f in range(1 << M)]
        frac = x.sig[:M] if M else Const(0, 1)
        sig = rom(m, "recip_table", frac, entries, Q + 1)
        lo, hi = x.exp_range
        exp = Signal(signed_for(-hi, -lo), name="recip_exp")
        m.d.comb += exp.eq(-x.exp)
        raw = Raw(sign=x.sign, exp=exp, off=-x.off - M - Q, sig=sig, width=Q + 1,
                  exp_range=(-hi, -lo), lz_max=1, sticky=frac != 0, zero=x.inf, inf=x.zero,
                  nan=x.nan, invalid=x.invalid)
        return raw, x.zero & ~x.nan


class FpRsqrt(_FpFunc):
    """1/sqrt(x): x = m' 2^(2k) with m' in [1, 4); a table of 2^(M+1) entries by the exponent's
    parity and the fraction."""

    unit = "rsqrt"
    normalized_operands = True

    def table_raw(self, m, x):
        M, Q = self.spec.in_fmts[0].man_bits, self.Q
        # floor(2^Q / sqrt(m')), m' = sig / 2^M (even exponent) or 2 sig / 2^M (odd).
        entries = [math.isqrt((1 << (2 * Q + M)) // (((1 << M) + f) << odd))
                   for odd in (0, 1) for f in range(1 << M)]
        lo, hi = x.exp_range
        c = x.off + M                                    # x = sig/2^M * 2^(exp + c)
        e = Signal(signed_for(lo + c, hi + c), name="rsqrt_e")
        m.d.comb += e.eq(x.exp + c)
        frac = x.sig[:M] if M else Const(0, 0)
        sig = rom(m, "rsqrt_table", Cat(frac, e[0]), entries, Q + 1)
        half_lo, half_hi = (lo + c) >> 1, (hi + c) >> 1
        exp = Signal(signed_for(-half_hi, -half_lo), name="rsqrt_exp")
        m.d.comb += exp.eq(-(e >> 1))
        negative = x.sign & ~x.zero & ~x.nan             # sqrt of a negative number
        raw = Raw(sign=x.sign, exp=exp, off=-Q, sig=sig, width=Q + 1,
                  exp_range=(-half_hi, -half_lo), lz_max=1,
                  sticky=(frac != 0) | e[0] if M else e[0],
                  zero=x.inf & ~x.sign, inf=x.zero, nan=x.nan | negative,
                  invalid=x.invalid | negative)
        return raw, x.zero & ~x.nan


class FpExp2(_FpFunc):
    """2^x: near 0 (|x| < 2^-Q) 2^x is 1 + or - less than an LSB of Q bits; beyond the range
    it overflows or is smaller than any rounding can tell; in between a table by code."""

    unit = "exp2"

    def table_raw(self, m, x):
        spec = self.spec
        fmt, Q = spec.in_fmts[0], self.Q
        M = fmt.man_bits
        reg = exp2_regions(fmt, Q, spec.clamp_bits)
        c_lo, c_hi = reg["c_lo"], reg["c_hi"]
        # The magnitude code from the decoded fields (registered with them at a decode cut).
        if M == 0:
            mag = x.exp
        elif fmt.has_subnormals:
            mag = Cat(x.sig[:M], Mux(x.sig[M], x.exp, 0))
        else:
            mag = Cat(x.sig[:M], x.exp)
        neg = x.sign
        mid = (mag >= c_lo) & (mag < c_hi)
        table = exp2_table(fmt, Q, spec.clamp_bits)
        e_lo, e_hi = reg["exp_range"]
        ew = signed_for(e_lo, e_hi).width
        # Entry: exponent (two's complement), significand (Q bits), sticky.
        packed = [(e & ((1 << ew) - 1)) | (s << ew) | (st << (ew + Q)) for e, s, st in table]
        span = c_hi - c_lo
        idx = Cat((mag - c_lo)[:max(1, (span - 1).bit_length())], neg) if fmt.signed else \
            (mag - c_lo)[:max(1, (span - 1).bit_length())]
        if fmt.signed:
            packed = packed[:span] + [0] * ((1 << max(1, (span - 1).bit_length())) - span) + \
                packed[span:]
        entry = rom(m, "exp2_table", idx, packed, ew + Q + 1)
        one = 1 << (Q - 1)
        exp = Signal(signed_for(e_lo, e_hi), name="exp2_exp")
        sig = Signal(Q, name="exp2_sig")
        sticky = Signal(name="exp2_sticky")
        with m.If(x.zero):
            m.d.comb += [exp.eq(0), sig.eq(one), sticky.eq(0)]        # 2^0 = 1 exactly
        with m.Elif(mid):
            m.d.comb += [exp.eq(entry[:ew].as_signed()), sig.eq(entry[ew:ew + Q]),
                         sticky.eq(entry[-1])]
        with m.Elif(mag < c_lo):
            # 1 + d or 1 - d with 0 < d < 2^-Q: 1.000.. or 0.111.. on Q bits, inexact.
            m.d.comb += [exp.eq(Mux(neg, -1, 0)), sig.eq(Mux(neg, (1 << Q) - 1, one)),
                         sticky.eq(1)]
        with m.Else():
            m.d.comb += [exp.eq(Mux(neg, reg["tiny_exp"], reg["big_exp"])), sig.eq(one),
                         sticky.eq(1)]
        raw = Raw(sign=Const(0, 1), exp=exp, off=-(Q - 1), sig=sig, width=Q,
                  exp_range=(e_lo, e_hi), lz_max=0, sticky=sticky, zero=x.inf & neg,
                  inf=x.inf & ~neg, nan=x.nan, invalid=x.invalid)
        return raw, Const(0, 1)


def _first_code_at_least(fmt: FloatFormat, value) -> int:
    """The smallest finite positive magnitude code whose value is >= ``value`` (or one past
    the largest finite)."""
    lo, hi = fmt.min_normal_code if not fmt.has_subnormals else 1, fmt.max_finite_code + 1
    if fmt.specials is Specials.FNU:
        lo = 0
    while lo < hi:                                 # values grow with the magnitude code
        mid = (lo + hi) // 2
        if fmt.code_value(mid) >= value:
            hi = mid
        else:
            lo = mid + 1
    return lo


@functools.lru_cache(maxsize=None)
def exp2_regions(fmt: FloatFormat, Q: int, guard: int) -> dict:
    """Where exp2's table starts and ends (magnitude codes ``c_lo`` <= mag < ``c_hi``), and
    the exponents of the clamped values: 2^x >= 2^(emax+1) overflows in every mode as any
    value above it does (``big_exp``), and 2^x < 2^(emin - M - guard) rounds in every mode as
    any smaller positive value does (``tiny_exp``: the sticky says it is not zero), ``guard``
    being the most bits below the subnormal LSB the rounder reads."""
    M = fmt.man_bits
    big_exp, tiny_exp = fmt.emax + 1, fmt.emin - M - guard - 1
    c_lo = _first_code_at_least(fmt, Fraction(1, 1 << Q))
    c_hi = max(c_lo, _first_code_at_least(fmt, max(big_exp, -tiny_exp)))
    return {"c_lo": c_lo, "c_hi": c_hi, "big_exp": big_exp, "tiny_exp": tiny_exp,
            "exp_range": (min(tiny_exp, -1), big_exp)}


@functools.lru_cache(maxsize=None)
def exp2_table(fmt: FloatFormat, Q: int, guard: int) -> list[tuple[int, int, int]]:
    """(exponent, Q-bit significand, sticky) of 2^x for the table's codes: +x for magnitude
    codes c_lo..c_hi-1, then -x for the same codes in a signed format."""
    reg = exp2_regions(fmt, Q, guard)
    signs = (1, -1) if fmt.signed else (1,)
    return [_exp2_entry(s * fmt.code_value(c), Q, reg["big_exp"], reg["tiny_exp"])
            for s in signs for c in range(reg["c_lo"], reg["c_hi"])]



def _exp2_entry(x: Fraction, Q: int, big_exp: int, tiny_exp: int) -> tuple[int, int, int]:
    i = math.floor(x)
    f = x - i
    if i >= big_exp and f or i > big_exp:
        return big_exp, 1 << (Q - 1), 1
    if i <= tiny_exp:
        return tiny_exp, 1 << (Q - 1), 1
    if f == 0:
        return i, 1 << (Q - 1), 0
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        # exp and ln are correctly rounded at 60 digits: 2^f * 2^(Q-1) is within 1e-55
        # relative of the value, far less than its distance to an integer (checked).
        v = (decimal.Decimal(f.numerator) / f.denominator * decimal.Decimal(2).ln()).exp()
        scaled = v * (1 << (Q - 1))
        sig = int(scaled)                        # floor: scaled > 0
        if not decimal.Decimal("1e-40") < scaled - sig < 1 - decimal.Decimal("1e-40"):
            raise ArithmeticError(f"2^{x} lies too close to a {Q}-bit boundary for 60 digits")
    return i, sig, 1
