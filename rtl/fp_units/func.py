"""The function units (rtl/func.py): recip, rsqrt and exp2, each a table and the shared rounder
(exp2 beyond 8,192 codes, i.e. fp16: a fixed-point datapath, ``exp2_datapath``).

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

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.lib.memory import Memory

from ..formats import FloatFormat, Specials
from ..func import FuncSpec
from .common import Operand, Raw, signed_for
from .unit import FpUnit

__all__ = ["FpRecip", "FpRsqrt", "FpExp2", "exp2_regions", "exp2_table", "exp2_datapath",
           "EXP2_CODE_TABLE_MAX"]

# exp2 looks its mid range up per code up to this many codes (the 8-bit formats, bf16's 4,368:
# smaller and faster there), and computes it by the fixed-point datapath beyond (fp16's
# 36,224, whose table does not synthesize): docs/func.md has the measured crossover.
EXP2_CODE_TABLE_MAX = 8192


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
        e_lo, e_hi = reg["exp_range"]
        if c_hi - c_lo > EXP2_CODE_TABLE_MAX:
            m_exp, m_sig, m_sticky = self.datapath(m, x, mag, neg, reg)
        else:
            m_exp, m_sig, m_sticky = self.code_table(m, mag, neg, reg)
        one = 1 << (Q - 1)
        exp = Signal(signed_for(e_lo, e_hi), name="exp2_exp")
        sig = Signal(Q, name="exp2_sig")
        sticky = Signal(name="exp2_sticky")
        with m.If(x.zero):
            m.d.comb += [exp.eq(0), sig.eq(one), sticky.eq(0)]        # 2^0 = 1 exactly
        with m.Elif(mid):
            m.d.comb += [exp.eq(m_exp), sig.eq(m_sig), sticky.eq(m_sticky)]
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

    def code_table(self, m, mag, neg, reg):
        """The narrow formats' mid range: one entry per code (exponent, significand, sticky)."""
        fmt, Q, (c_lo, c_hi) = self.spec.in_fmts[0], self.Q, (reg["c_lo"], reg["c_hi"])
        table = exp2_table(fmt, Q, self.spec.clamp_bits)
        ew = signed_for(*reg["exp_range"]).width
        packed = [(e & ((1 << ew) - 1)) | (s << ew) | (st << (ew + Q)) for e, s, st in table]
        span = c_hi - c_lo
        bits = max(1, (span - 1).bit_length())
        idx = Cat((mag - c_lo)[:bits], neg) if fmt.signed else (mag - c_lo)[:bits]
        if fmt.signed:
            packed = packed[:span] + [0] * ((1 << bits) - span) + packed[span:]
        entry = rom(m, "exp2_table", idx, packed, ew + Q + 1)
        return entry[:ew].as_signed(), entry[ew:ew + Q], entry[-1]

    def datapath(self, m, x, mag, neg, reg):
        """The wide formats' mid range: x = i + f in fixed point (two's complement for a
        negative x), 2^f ~ T[f_hi] + D[f_hi] u + T[f_hi] Sq[u_top] (``_exp2_approx``); then the
        codes where that W-bit value truncates to the wrong Q-bit one, found at generation time
        against the exact table, corrected by one unit (docs/func.md)."""
        fmt, Q = self.spec.in_fmts[0], self.Q
        d = exp2_datapath(fmt, Q, self.spec.clamp_bits)
        F, W, k, L, mq, XW = d["F"], d["W"], d["k"], d["L"], d["m"], d["XW"]
        # X = |x| 2^F, exact for every code of the mid range (F = their most fraction bits).
        s = Signal(signed_for(x.exp_range[0] + x.off + F, x.exp_range[1] + x.off + F),
                   name="exp2_shift")
        m.d.comb += s.eq(x.exp + (x.off + F))
        sh = Signal(range(XW), name="exp2_sh")
        m.d.comb += sh.eq(Mux(s < 0, 0, s))
        mag_fx = Signal(XW, name="exp2_abs")
        m.d.comb += mag_fx.eq(x.sig << sh)
        fx = Signal(signed(XW + 1), name="exp2_fx")
        m.d.comb += fx.eq(Mux(neg, -mag_fx, mag_fx))
        i, f = fx >> F, fx[:F]
        u = f[:F - k]
        ut = u[F - k - L:] if F - k >= L else Cat(Const(0, L - F + k), u)
        t = rom(m, "exp2_t", f[F - k:], d["T"], W + 1)
        dt = rom(m, "exp2_d", f[F - k:], d["D"], W - k + 2)
        sq = rom(m, "exp2_sq", ut[L - mq:], d["Sq"], max(1, W - 2 * k))
        a = Signal(W + 1, name="exp2_a")
        m.d.comb += a.eq(_exp2_approx(d, t, dt, sq, ut))
        up, down = ([(mag == c) & (neg == n) for n, c in d[key]] for key in ("up", "down"))
        up = Cat(*up).any() if up else Const(0, 1)
        down = Cat(*down).any() if down else Const(0, 1)
        sig = Signal(Q, name="exp2_dsig")
        m.d.comb += sig.eq(a[W - Q + 1:] + up - down)
        e_lo, e_hi = reg["exp_range"]
        exp = Signal(signed_for(e_lo, e_hi), name="exp2_dexp")
        nz = f != 0
        over = (i > reg["big_exp"]) | ((i == reg["big_exp"]) & nz)
        tiny = i <= reg["tiny_exp"]
        m.d.comb += exp.eq(Mux(over, reg["big_exp"], Mux(tiny, reg["tiny_exp"], i)))
        return exp, Mux(over | tiny, 1 << (Q - 1), sig), nz | over | tiny


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


@functools.lru_cache(maxsize=None)
def exp2_datapath(fmt: FloatFormat, Q: int, guard: int) -> dict:
    """The wide formats' exp2 datapath: its sizes, constants and exceptions.

    x = i + f, f in [0, 1) with F fraction bits (every mid-range code exact); f = f_hi + u with
    f_hi the top k bits; 2^f ~ A = T[f_hi] + D[f_hi] u' + T[f_hi] Sq[u'_top] (u' = u's top L
    bits, D = T ln 2, Sq the quadratic term at the middle of each of 2^m intervals), all on W
    fraction bits. Some codes' A truncates to one unit above or below the exact Q-bit
    significand (the table maker's dilemma: a value within 2^-(W-Q) units of a boundary); this
    bit-accurate model of the datapath finds them against ``exp2_table`` and the unit corrects
    them by code (``up``, ``down``: (sign, magnitude code) pairs). W = Q + M - 3 (about 100
    such codes for fp16) was chosen by synthesis: docs/func.md.
    """
    reg = exp2_regions(fmt, Q, guard)
    table = exp2_table(fmt, Q, guard)
    signs = (0, 1) if fmt.signed else (0,)
    codes = [(n, c) for n in signs for c in range(reg["c_lo"], reg["c_hi"])]
    values = [(-1) ** n * fmt.code_value(c) for n, c in codes]
    F = max(v.denominator.bit_length() - 1 for v in values)
    XW = F + max(abs(math.floor(v)) for v in values).bit_length() + 1
    W = Q + fmt.man_bits - 3
    k = -(-W // 3)
    L, mq = W - k, max(1, W - 2 * k - 2)
    with decimal.localcontext() as ctx:
        ctx.prec = 60
        ln2 = decimal.Decimal(2).ln()
        T = [int(((decimal.Decimal(j) / (1 << k) * ln2).exp() * (1 << W)).to_integral_value())
             for j in range(1 << k)]
        D = [int(((decimal.Decimal(j) / (1 << k) * ln2).exp() * ln2 * (1 << W))
                 .to_integral_value()) for j in range(1 << k)]
        Sq = [int(((decimal.Decimal(2 * t + 1) / (1 << (k + mq + 1)) * ln2) ** 2 / 2
                   * (1 << W)).to_integral_value()) for t in range(1 << mq)]
    d = {"F": F, "XW": XW, "W": W, "k": k, "L": L, "m": mq, "T": T,
         "D": [v >> (k - 1) for v in D], "Sq": Sq}
    up, down = [], []
    for (n, c), x, (e, sig, sticky) in zip(codes, values, table):
        X = int(x * (1 << F))
        i, f = X >> F, X & ((1 << F) - 1)
        if i > reg["big_exp"] or i == reg["big_exp"] and f or i <= reg["tiny_exp"]:
            continue                                 # clamped: the unit's over/tiny path
        u = f & ((1 << (F - k)) - 1)
        ut = u >> (F - k - L) if F - k >= L else u << (L - F + k)
        fh = f >> (F - k)
        a = _exp2_approx(d, T[fh], d["D"][fh], Sq[ut >> (L - mq)], ut) >> (W - Q + 1)
        if not 1 << (Q - 1) <= a < 1 << Q:        # the unit keeps W + 1 bits of it
            raise ArithmeticError(f"exp2 datapath out of [1, 2) at 2^{x}")
        if a == sig - 1:
            up.append((n, c))
        elif a == sig + 1:
            down.append((n, c))
        elif a != sig:
            raise ArithmeticError(f"exp2 datapath off by {a - sig} at 2^{x}")
    return d | {"up": tuple(up), "down": tuple(down)}


def _exp2_approx(d: dict, t, dt, sq, ut):
    """2^f_hi (1 + u ln 2 + (u ln 2)^2 / 2) on W fraction bits: T + D u + T Sq, with D (the
    table 2^f_hi ln 2) and T cut to the bits their products need, the two products side by
    side. Python integers (the model) or Amaranth values (the unit) alike."""
    W, k, L = d["W"], d["k"], d["L"]
    return t + ((dt * ut) >> (L + 1)) + (((t >> (2 * k - 1)) * sq) >> (W - 2 * k + 1))

