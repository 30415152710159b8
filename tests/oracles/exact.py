"""An exact, slow, pure-Python reference of docs/numerics.md (one scalar at a time).

Written from the contract alone, without reading golden/: its value is independence. Decoding uses
``FloatFormat.classify`` / ``code_value``; the operation is exact on ``fractions.Fraction``; the
one rounder below follows section 3 literally (truncated code, then an increment of 0 or 1 on the
*code*), sections 4-6 decide overflow, tininess after rounding, flushing and special values.

Every entry point returns ``(code, flags)`` with flags in RISC-V order (bit 4 invalid .. bit 0
inexact). ``apply`` runs an entry point over numpy arrays for the tests.

Where docs/numerics.md is silent or ambiguous this module makes one choice, named here so a
reviewer can disagree with it:

* An exact infinity under ``saturate=True`` follows the OCP 8-bit conversion table
  (numerics.md 4): +-max in IEEE-style and fn formats (E5M2: +-57344), NaN in fnuz formats, with
  overflow and inexact raised.
* "Subnormals kept" means gradual underflow (``fmt.has_subnormals``): a format with 0 mantissa
  bits and a zero (``e3m0fin``, P3109 Binary8p1*) rounds values below 2^emin to 0 or 2^emin, as
  IEEE 754 and P3109 4.7.4 (Q = max(floor(log2|X|), 1 - B) - P + 1) define.
* ``saturation`` ("finite", "propagate", "none") is P3109 4.7.5 Saturate read for any format:
  "Extended" is "has an infinity", Mhi the largest finite value, Mlo = -Mhi signed, 0 unsigned.
  Formats only P3109 defines (ext, unsigned with a zero) take "none" by default, "finite" under
  ``saturate``. Flags: results moved to +-Mhi by overflow or from an infinity raise overflow and
  inexact; a value below Mlo = 0 raises inexact when it becomes 0, invalid when it becomes NaN.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache

import numpy as np

from fpforge.rtl.formats import FloatFormat, Specials
from fpforge.rtl.format_names import resolve

NX, UF, OF, DZ, NV = 1, 2, 4, 8, 16

# RISC-V frm codes of the dynamic mode; 5..7 are reserved and round as rne (numerics.md 3).
RISCV_MODES = {0: "rne", 1: "rtz", 2: "rdn", 3: "rup", 4: "rna"}
STATIC_MODES = ("rne", "rtz", "rdn", "rup", "rna", "rod")
ALL_MODES = STATIC_MODES + ("stochastic", "stochastic_b", "stochastic_c", "dynamic")


@dataclass(frozen=True)
class Real:
    """A decoded operand: kind is 'num', 'inf', 'qnan' or 'snan'; mag >= 0 (0 for zero)."""
    kind: str
    sign: int
    mag: Fraction


def _fmt(f) -> FloatFormat:
    return f if isinstance(f, FloatFormat) else _resolve_name(f)


@lru_cache(maxsize=None)
def _resolve_name(name: str) -> FloatFormat:
    return resolve(name)


@lru_cache(maxsize=1 << 20)
def decode(code: int, fmt: FloatFormat) -> Real:
    cls = fmt.classify(code)
    sign = 1 if code & fmt.sign_mask else 0
    if cls == "nan":
        return Real("qnan", sign, Fraction(0))
    if cls == "snan":
        return Real("snan", sign, Fraction(0))
    if cls == "inf":
        return Real("inf", sign, Fraction(0))
    value = fmt.code_value(code)
    return Real("num", sign, abs(Fraction(value)))


def decode_float(x: float) -> Real:
    """A Python float (binary64) as an exact operand; sNaN from the bit pattern."""
    bits = struct.unpack("<Q", struct.pack("<d", x))[0]
    sign = bits >> 63
    if x != x:
        return Real("snan" if not (bits >> 51) & 1 else "qnan", sign, Fraction(0))
    if x in (float("inf"), float("-inf")):
        return Real("inf", sign, Fraction(0))
    return Real("num", sign, abs(Fraction(x)))


# ----- the one rounder ---------------------------------------------------------------------------

def _floor_log2(q: Fraction) -> int:
    n, d = q.numerator, q.denominator
    e = n.bit_length() - d.bit_length()
    if (n << max(0, -e)) < (d << max(0, e)):   # q < 2^e
        e -= 1
    return e


def _split(mag: Fraction, lsb: int):
    """Integer part and remainder of mag / 2^lsb: (kept, rem, den) with frac = rem / den."""
    n, d = mag.numerator, mag.denominator
    if lsb >= 0:
        d <<= lsb
    else:
        n <<= -lsb
    kept, rem = divmod(n, d)
    return kept, rem, d


def increment(mode, sign, parity, rem, den, r, sr_bits) -> int:
    if rem == 0:
        return 0
    twice = 2 * rem
    rnd = twice >= den
    sticky = twice != den                          # bits below the round bit (rem != 0 here)
    if mode == "rne":
        return int(rnd and (sticky or parity))
    if mode == "rna":
        return int(rnd)
    if mode == "rtz":
        return 0
    if mode == "rup":
        return int(not sign)
    if mode == "rdn":
        return int(bool(sign))
    if mode == "rod":
        return int(not parity)
    r &= (1 << sr_bits) - 1
    if mode == "stochastic":                    # P3109 StochasticA
        frac_r = (rem << sr_bits) // den        # the R bits directly below the LSB
        return (frac_r + r) >> sr_bits
    if mode == "stochastic_b":                  # floor(frac 2^(R+1)) + 2r + 1 >= 2^(R+1)
        frac_r1 = (rem << (sr_bits + 1)) // den
        return (frac_r1 + 2 * r + 1) >> (sr_bits + 1)
    if mode == "stochastic_c":                  # RNITE(frac 2^R) + r >= 2^R
        q, left = divmod(rem << sr_bits, den)
        if 2 * left > den or (2 * left == den and q & 1):
            q += 1
        return int(q + r >= 1 << sr_bits)
    raise ValueError(f"unknown rounding mode {mode!r}")


def _code_of(fmt: FloatFormat, lsb: int, kept: int) -> int:
    """numerics.md 3: code = ((lsb + M + bias - 1) << M) + kept (may be negative when unbounded)."""
    return ((lsb + fmt.man_bits + fmt.bias - 1) << fmt.man_bits) + kept


def _gradual(fmt: FloatFormat) -> bool:
    return fmt.has_subnormals


def nan_result(fmt: FloatFormat, invalid: bool):
    if fmt.specials is Specials.FINITE:          # no NaN code: +0, always invalid (numerics.md 6)
        return 0, NV
    return fmt.nan_code, NV if invalid else 0


def zero_result(sign: int, fmt: FloatFormat):
    if fmt.specials is Specials.FNU:             # E8M0 has no zero
        return nan_result(fmt, True)
    if not fmt.has_neg_zero or not sign:
        return 0, 0
    return fmt.sign_mask, 0


def _p3109_mode(fmt: FloatFormat, saturate):
    """The P3109 saturation mode, or None for the format's own convention."""
    if isinstance(saturate, str):
        return saturate
    if fmt.specials is Specials.EXT or (not fmt.signed and fmt.specials is not Specials.FNU):
        return "finite" if saturate else "none"
    return None


def _signed_max(sign, fmt):
    return fmt.max_finite_code | (fmt.sign_mask if sign else 0), OF | NX


def _below_unsigned_zero(fmt, mode, sat, infinite: bool):
    """P3109 Saturate of X < Mlo = 0 in an unsigned format."""
    if sat == "none" and (infinite or mode not in ("rtz", "rup")):
        return fmt.nan_code, NV
    return 0, NX


def _p3109_inf(sign, fmt, sat, mode):
    if sign and not fmt.signed:
        return _below_unsigned_zero(fmt, mode, sat, True)
    if sat != "finite" and fmt.has_inf:
        return fmt.inf_code | (fmt.sign_mask if sign else 0), 0
    return _signed_max(sign, fmt)


def _p3109_overflow(sign, fmt, sat, mode):
    if sign and not fmt.signed:
        return _below_unsigned_zero(fmt, mode, sat, False)
    inward = mode == "rtz" or (mode == "rdn" and not sign) or (mode == "rup" and sign) or \
        (mode == "rod" and not fmt.signed)
    if sat == "none" and fmt.has_inf and not inward:
        return fmt.inf_code | (fmt.sign_mask if sign else 0), OF | NX
    return _signed_max(sign, fmt)


def inf_result(sign: int, fmt: FloatFormat, saturate, mode: str = "rne"):
    sat = _p3109_mode(fmt, saturate)
    if sat is not None:
        return _p3109_inf(sign, fmt, sat, mode)
    if fmt.specials is Specials.FNU and sign:
        return nan_result(fmt, True)
    if fmt.has_inf and not saturate:
        return fmt.inf_code | (fmt.sign_mask if sign else 0), 0
    if fmt.specials is Specials.FNUZ or (not saturate and fmt.has_nan):
        return fmt.nan_code, OF | NX
    return fmt.max_finite_code | (fmt.sign_mask if sign else 0), OF | NX


def _overflow(sign, fmt, mode, saturate):
    sat = _p3109_mode(fmt, saturate)
    if sat is not None:
        return _p3109_overflow(sign, fmt, sat, mode)
    if saturate or fmt.specials is Specials.FINITE:
        return fmt.max_finite_code | (fmt.sign_mask if sign else 0), OF | NX
    to_inf = mode in ("rne", "rna") or mode.startswith("stochastic") or \
        (mode == "rup" and not sign) or \
        (mode == "rdn" and sign)
    if not to_inf:
        return fmt.max_finite_code | (fmt.sign_mask if sign else 0), OF | NX
    if fmt.has_inf:
        return fmt.inf_code | (fmt.sign_mask if sign else 0), OF | NX
    return fmt.nan_code, OF | NX


def round_real(sign: int, mag: Fraction, fmt, mode: str = "rne", saturate: bool = False,
               r: int = 0, sr_bits: int = 8):
    """Round the exact value (-1)^sign * mag into fmt: (code, flags)."""
    fmt = _fmt(fmt)
    if mag == 0:
        return zero_result(sign, fmt)
    if fmt.specials is Specials.FNU and sign:
        return nan_result(fmt, True)
    M = fmt.man_bits
    E = _floor_log2(mag)
    emin = fmt.emin
    if mode.startswith("stochastic"):
        tiny = E < emin                           # before rounding under stochastic rounding
    else:
        # After rounding: round to M+1 bits with an unbounded exponent, compare with 2^emin.
        lsb_u = E - M
        kept_u, rem_u, den_u = _split(mag, lsb_u)
        parity_u = _code_of(fmt, lsb_u, kept_u) & 1
        kept_u += increment(mode, sign, parity_u, rem_u, den_u, r, sr_bits)
        # kept_u is 2^M .. 2^(M+1): the rounded value is below 2^emin unless it carried into E+1.
        tiny = E + (kept_u >> (M + 1)) < emin
    lsb = (max(E, emin) if _gradual(fmt) else E) - M
    kept, rem, den = _split(mag, lsb)
    code = _code_of(fmt, lsb, kept)
    code += increment(mode, sign, code & 1, rem, den, r, sr_bits)
    inexact = rem != 0
    if tiny and not _gradual(fmt):
        if fmt.specials is Specials.FNU:          # no zero: the smallest value 2^-bias
            return 0, UF | NX
        code, _ = zero_result(sign, fmt)
        return code, UF | NX
    if code > fmt.max_finite_code:
        return _overflow(sign, fmt, mode, saturate)
    if sign and code and not fmt.signed and _p3109_mode(fmt, saturate) is not None:
        return _p3109_overflow(sign, fmt, _p3109_mode(fmt, saturate), mode)
    flags = (NX if inexact else 0) | (UF if tiny and inexact else 0)
    if code == 0 and fmt.has_zero:               # E8M0's code 0 is the number 2^-127
        return zero_result(sign, fmt)[0], flags
    return code | (fmt.sign_mask if sign else 0), flags


# ----- operations ----------------------------------------------------------------------------

def _mode(rounding: str, rm) -> str:
    rounding = getattr(rounding, "value", rounding)
    if rounding == "dynamic":
        if rm is None:
            raise ValueError("dynamic rounding needs rm")
        return RISCV_MODES.get(int(rm), "rne")
    return rounding


def _sum(sx, mx, sy, my, fmt_out, mode, saturate, r, sr_bits):
    total = (-mx if sx else mx) + (-my if sy else my)
    if total == 0:
        if mx == 0 and my == 0 and sx == sy:
            return zero_result(sx, fmt_out)
        return zero_result(1 if mode == "rdn" else 0, fmt_out)
    return round_real(int(total < 0), abs(total), fmt_out, mode, saturate, r, sr_bits)


def _nan(ops) -> bool:
    return any(o.kind in ("qnan", "snan") for o in ops)


def _snan(ops) -> bool:
    return any(o.kind == "snan" for o in ops)


def _prep(fmt_a, fmt_b, fmt_out, rounding, rm, rbits):
    fa = _fmt(fmt_a)
    fb = fa if fmt_b is None else _fmt(fmt_b)
    fo = fa if fmt_out is None else _fmt(fmt_out)
    return fa, fb, fo, _mode(rounding, rm), 0 if rbits is None else int(rbits)


def mul(a, b, fmt_a, fmt_b=None, fmt_out=None, *, rounding="rne", saturate=False, rm=None,
        rbits=None, sr_bits=8, saturation=None):
    saturate = saturation or saturate
    fa, fb, fo, mode, r = _prep(fmt_a, fmt_b, fmt_out, rounding, rm, rbits)
    x, y = decode(int(a), fa), decode(int(b), fb)
    if _nan((x, y)):
        return nan_result(fo, _snan((x, y)))
    sign = x.sign ^ y.sign
    if "inf" in (x.kind, y.kind):
        if (x.kind == "num" and x.mag == 0) or (y.kind == "num" and y.mag == 0):
            return nan_result(fo, True)
        return inf_result(sign, fo, saturate, mode)
    return round_real(sign, x.mag * y.mag, fo, mode, saturate, r, sr_bits)


def _add(x: Real, y: Real, fo, mode, saturate, r, sr_bits):
    if _nan((x, y)):
        return nan_result(fo, _snan((x, y)))
    if x.kind == "inf" and y.kind == "inf" and x.sign != y.sign:
        return nan_result(fo, True)
    if x.kind == "inf" or y.kind == "inf":
        return inf_result(x.sign if x.kind == "inf" else y.sign, fo, saturate, mode)
    return _sum(x.sign, x.mag, y.sign, y.mag, fo, mode, saturate, r, sr_bits)


def add(a, b, fmt_a, fmt_b=None, fmt_out=None, *, rounding="rne", saturate=False, rm=None,
        rbits=None, sr_bits=8, saturation=None):
    saturate = saturation or saturate
    fa, fb, fo, mode, r = _prep(fmt_a, fmt_b, fmt_out, rounding, rm, rbits)
    return _add(decode(int(a), fa), decode(int(b), fb), fo, mode, saturate, r, sr_bits)


def sub(a, b, fmt_a, fmt_b=None, fmt_out=None, *, rounding="rne", saturate=False, rm=None,
        rbits=None, sr_bits=8, saturation=None):
    saturate = saturation or saturate
    fa, fb, fo, mode, r = _prep(fmt_a, fmt_b, fmt_out, rounding, rm, rbits)
    y = decode(int(b), fb)
    return _add(decode(int(a), fa), Real(y.kind, y.sign ^ 1, y.mag), fo, mode, saturate, r,
                sr_bits)


def fma(a, b, c, fmt_a, fmt_b=None, fmt_c=None, fmt_out=None, *, rounding="rne", saturate=False,
        rm=None, rbits=None, sr_bits=8, saturation=None):
    saturate = saturation or saturate
    fa, fb, fo, mode, r = _prep(fmt_a, fmt_b, fmt_out, rounding, rm, rbits)
    fc = fa if fmt_c is None else _fmt(fmt_c)
    x, y, z = decode(int(a), fa), decode(int(b), fb), decode(int(c), fc)
    zero_times_inf = ({x.kind, y.kind} == {"inf", "num"} and
                      (x.mag == 0 if x.kind == "num" else y.mag == 0))
    if _nan((x, y, z)):
        # 0 x inf + qNaN is invalid too (numerics.md 8).
        return nan_result(fo, _snan((x, y, z)) or zero_times_inf)
    if zero_times_inf:
        return nan_result(fo, True)
    sp = x.sign ^ y.sign
    if "inf" in (x.kind, y.kind):
        if z.kind == "inf" and z.sign != sp:
            return nan_result(fo, True)
        return inf_result(sp, fo, saturate, mode)
    if z.kind == "inf":
        return inf_result(z.sign, fo, saturate, mode)
    return _sum(sp, x.mag * y.mag, z.sign, z.mag, fo, mode, saturate, r, sr_bits)


def _convert_real(x: Real, fo, mode, saturate, r, sr_bits):
    if x.kind in ("qnan", "snan"):
        return nan_result(fo, x.kind == "snan")
    if x.kind == "inf":
        return inf_result(x.sign, fo, saturate, mode)
    return round_real(x.sign, x.mag, fo, mode, saturate, r, sr_bits)


def convert(x, fmt_in, fmt_out, *, rounding="rne", saturate=False, rm=None, rbits=None,
            sr_bits=8, saturation=None):
    saturate = saturation or saturate
    fi, _, fo, mode, r = _prep(fmt_in, None, fmt_out, rounding, rm, rbits)
    return _convert_real(decode(int(x), fi), fo, mode, saturate, r, sr_bits)


def convert_float(x: float, fmt_out, *, rounding="rne", saturate=False, rm=None, rbits=None,
                  sr_bits=8, saturation=None):
    saturate = saturation or saturate
    """Round a Python float (binary64, taken exactly) into fmt_out."""
    fo = _fmt(fmt_out)
    mode = _mode(rounding, rm)
    return _convert_real(decode_float(float(x)), fo, mode, saturate,
                         0 if rbits is None else int(rbits), sr_bits)


# ----- arrays --------------------------------------------------------------------------------

OPS = {"mul": mul, "add": add, "sub": sub, "fma": fma, "convert": convert}
ARITY = {"mul": 2, "add": 2, "sub": 2, "fma": 3, "convert": 1}


def apply(op: str, *operands, fmts, rounding="rne", saturate=False, rm=None, rbits=None,
          sr_bits=8):
    """Run ``op`` elementwise over integer arrays; fmts is (operand formats..., output format).

    Returns (codes, flags) as uint32 arrays, the golden model's shapes.
    """
    fn = OPS[op]
    arrays = [np.asarray(o).astype(np.int64).ravel() for o in operands]
    n = arrays[0].size
    rm_a = None if rm is None else np.broadcast_to(np.asarray(rm).astype(np.int64), (n,))
    rb_a = None if rbits is None else np.broadcast_to(np.asarray(rbits).astype(np.int64), (n,))
    if op == "convert":
        fmt_kw = dict(fmt_in=fmts[0], fmt_out=fmts[1])
    elif op == "fma":
        fmt_kw = dict(fmt_a=fmts[0], fmt_b=fmts[1], fmt_c=fmts[2], fmt_out=fmts[3])
    else:
        fmt_kw = dict(fmt_a=fmts[0], fmt_b=fmts[1], fmt_out=fmts[2])
    fmt_kw = {k: _fmt(v) for k, v in fmt_kw.items()}
    codes = np.empty(n, np.uint32)
    flags = np.empty(n, np.uint32)
    for i in range(n):
        codes[i], flags[i] = fn(*(int(a[i]) for a in arrays), **fmt_kw, rounding=rounding,
                                saturate=saturate,
                                rm=None if rm_a is None else int(rm_a[i]),
                                rbits=None if rb_a is None else int(rb_a[i]), sr_bits=sr_bits)
    shape = np.asarray(operands[0]).shape
    return codes.reshape(shape), flags.reshape(shape)
