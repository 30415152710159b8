"""Step 3 of every operation: the ONE rounder, shared by mul, add, fma and convert.

Mirrors rtl/fp_units' rounder and docs/numerics.md sections 3-6. Input is a raw result, the exact
value (-1)^sign * (sig + f) * 2^exp with 0 <= f < 1 and ``sticky`` = (f > 0); output is the
encoded result and the exception flags.
"""

from __future__ import annotations

from typing import NamedTuple

from rtl.formats import FloatFormat, Specials
from rtl.options import Flag, Rounding, UnitOptions

from ._jax import I32, U32, U64, any_below, jnp, lax, shl, shr, width


class Raw(NamedTuple):
    sign: jnp.ndarray      # uint32 0/1
    exp: jnp.ndarray       # int32/int64: weight of sig's LSB
    sig: jnp.ndarray       # uint64
    sticky: jnp.ndarray    # bool: nonzero bits below sig's LSB
    is_nan: jnp.ndarray    # result is NaN (operand NaN or invalid operation)
    is_inf: jnp.ndarray    # result is an exact infinity
    invalid: jnp.ndarray   # raise the invalid flag


class Mode:
    """The rounding mode of an operation: static (one jit per mode) or per element (rm array)."""

    def __init__(self, rounding: Rounding, rm=None):
        self.rounding = rounding
        if rounding is Rounding.DYNAMIC:
            if rm is None:
                raise ValueError("rounding 'dynamic' needs an rm array (RISC-V codes 0..4)")
            self.rm = jnp.asarray(rm).astype(U32)
        else:
            self.rm = None

    def is_(self, mode: Rounding):
        """Whether this element rounds with ``mode`` (a Python bool when static)."""
        if self.rm is None:
            return self.rounding is mode
        if mode is Rounding.RNE:
            return (self.rm == 0) | (self.rm > 4)   # reserved codes round as rne
        if mode in (Rounding.ROD, Rounding.STOCHASTIC):
            return False
        return self.rm == mode.code

    def increment(self, sign, parity, rb, st, sr_carry=None):
        """Round-up decision (0/1 added to the truncated code), docs/numerics.md section 3."""
        inexact = rb | st
        rules = {
            Rounding.RNE: lambda: rb & (st | parity),
            Rounding.RNA: lambda: rb,
            Rounding.RTZ: lambda: jnp.zeros_like(rb),
            Rounding.RUP: lambda: inexact & ~sign,
            Rounding.RDN: lambda: inexact & sign,
            Rounding.ROD: lambda: inexact & ~parity,
            Rounding.STOCHASTIC: lambda: sr_carry,
        }
        if self.rm is None:
            return rules[self.rounding]()
        out = rules[Rounding.RNE]()
        for mode in (Rounding.RTZ, Rounding.RDN, Rounding.RUP, Rounding.RNA):
            out = jnp.where(self.is_(mode), rules[mode](), out)
        return out

    def overflows_to_infinity(self, sign):
        """IEEE 754 7.4: which modes carry an overflow to infinity (else to max finite)."""
        away = self.is_(Rounding.RNE) | self.is_(Rounding.RNA) | self.is_(Rounding.STOCHASTIC)
        return away | (self.is_(Rounding.RUP) & ~sign) | (self.is_(Rounding.RDN) & sign)


def split_at(sig, sticky, shift):
    """Cut sig at bit ``shift``: (kept bits, round bit, sticky below the round bit)."""
    pos = shift > 0
    kept = jnp.where(pos, shr(sig, shift), shl(sig, -shift))
    rb = pos & ((shr(sig, shift - 1) & 1) == 1)
    st = (pos & any_below(sig, shift - 1)) | sticky
    return kept, rb, st


def stochastic_carry(sig, shift, rbits, sr_bits: int):
    """Carry out of (the sr_bits bits just below the LSB) + rbits: the stochastic increment."""
    wide = sig.astype(U64)
    mask = jnp.uint64((1 << sr_bits) - 1)
    a = shift - sr_bits
    frac = jnp.where(a >= 0, shr(wide, a), shl(wide, -a)) & mask
    frac = jnp.where(shift > 0, frac, jnp.uint64(0))
    r = jnp.asarray(rbits).astype(U64) & mask
    return ((frac + r) >> sr_bits) == 1


def round_raw(raw: Raw, fmt: FloatFormat, opts: UnitOptions, mode: Mode, rbits=None):
    """Round a raw result into ``fmt``; returns (codes, flags) in the narrowest unsigned
    dtypes that hold them (uint8 / uint16 / uint32 codes, uint8 flags)."""
    M, bias, emin = fmt.man_bits, fmt.bias, fmt.emin
    sign = raw.sign.astype(bool)
    sig = raw.sig                        # uint32 or uint64, chosen by the core
    exp = raw.exp.astype(I32)
    nonzero = (sig != 0) | raw.sticky
    stochastic = opts.rounding is Rounding.STOCHASTIC

    # 1. Where the result's LSB falls: leading one at E, precision M+1, subnormal floor at emin.
    #    E is clamped just outside the range: beyond it the result overflows (or is a flushed
    #    tiny value) whatever the low bits are, and the code below stays within int32.
    E = exp + (width(sig) - 1 - lax.clz(sig).astype(I32))
    huge = E > fmt.emax + 1
    E = jnp.clip(E, emin - M - 3, fmt.emax + 1)
    lsb = (jnp.maximum(E, emin) if fmt.has_subnormals else E) - M
    shift = lsb - exp

    # 2. Truncate and encode directly: one formula for normal, subnormal and E8M0 codes.
    kept, rb, st = split_at(sig, raw.sticky, shift)
    code = (lsb + (M + bias - 1)) * (1 << M) + kept.astype(I32)
    parity = (code & 1) == 1
    inexact = rb | st

    # 3. Increment the code; a carry walks into the exponent field by itself.
    sr_carry = stochastic_carry(sig, shift, rbits, opts.sr_bits) if stochastic else None
    code = code + mode.increment(sign, parity, rb, st, sr_carry).astype(I32)
    code = jnp.where(huge, fmt.max_finite_code + 1, code)

    # 4. Tininess after rounding (before rounding under stochastic rounding).
    below = nonzero & (E < emin)
    if stochastic:
        tiny = below
    elif fmt.has_subnormals:
        # Tiny unless rounding to M+1 bits with an unbounded exponent reaches 2^emin.
        kept_u, rb_u, st_u = split_at(sig, raw.sticky, shift - 1)
        reaches = (E == emin - 1) & (kept_u == (1 << (M + 1)) - 1) & \
            mode.increment(sign, jnp.ones_like(rb_u), rb_u, st_u)
        tiny = below & ~reaches
    else:
        tiny = nonzero & (code < fmt.min_normal_code)
    flush = tiny if not fmt.has_subnormals else jnp.zeros_like(tiny)
    code = jnp.where(flush, 0, code)     # zero, or E8M0's smallest value 2^-127
    inexact = inexact | flush

    # 5. Overflow: round first, then compare with the largest finite code. An exact infinity
    #    is an overflow too when the format has no infinity.
    inf_in = raw.is_inf & ~raw.is_nan
    overflow = (nonzero & (code > fmt.max_finite_code)) | (inf_in & (not fmt.has_inf))
    to_big = (mode.overflows_to_infinity(sign) & (not opts.saturate)) | inf_in
    if fmt.has_inf:
        big_code, overflow_nan = fmt.inf_code, jnp.zeros_like(overflow)
    else:
        big_code = fmt.max_finite_code
        overflow_nan = overflow & to_big & (not opts.saturate) & fmt.has_nan
    code = jnp.where(overflow, jnp.where(to_big & (not opts.saturate), big_code,
                                         fmt.max_finite_code), code)
    if fmt.has_inf:
        code = jnp.where(inf_in, fmt.inf_code, code)
    code = jnp.where(nonzero | inf_in, code, 0)
    inexact = (inexact & nonzero) | overflow

    # 6. NaN, unrepresentable values, and the sign.
    nan_out = raw.is_nan | overflow_nan
    invalid = raw.invalid
    if fmt.specials is Specials.FNU:
        # Unsigned, no zero: negative values and zero have no encoding.
        bad = ~raw.is_nan & (sign | ~(nonzero | inf_in))
        nan_out, invalid = nan_out | bad, invalid | bad
        overflow, inexact, tiny = overflow & ~bad, inexact & ~bad, tiny & ~bad
    if not fmt.has_nan:
        invalid = invalid | raw.is_nan          # no NaN code: +0, invalid
    out = code.astype(U32)
    if fmt.signed:
        negative = sign & ~nan_out
        if fmt.specials is Specials.FNUZ:
            negative = negative & (code != 0)   # no negative zero
        out = out | (negative.astype(U32) << (fmt.width - 1))
    out = jnp.where(nan_out, jnp.uint32(fmt.nan_code if fmt.has_nan else 0), out)

    number = ~raw.is_nan
    flags = (_flag(invalid, Flag.NV) | _flag(number & overflow, Flag.OF) |
             _flag(number & tiny & inexact, Flag.UF) | _flag(number & inexact, Flag.NX))
    return out.astype(code_dtype(fmt)), flags


def code_dtype(fmt: FloatFormat):
    """The narrowest unsigned dtype that holds a code of ``fmt``."""
    return jnp.uint8 if fmt.width <= 8 else jnp.uint16 if fmt.width <= 16 else jnp.uint32


def _flag(cond, flag: Flag):
    return jnp.where(cond, jnp.uint8(int(flag)), jnp.uint8(0))
