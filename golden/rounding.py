"""Step 3 of every operation: the ONE rounder, shared by every kind.

Same contract as rtl/fp_units/rounder.py (docs/numerics.md sections 3-7), a different algorithm
(arrays of 32/64-bit integers and variable shifts instead of a window sized per format), cut at
the same steps in the same order: 1 normalize (with the sign of a sum that cancels to zero,
section 6), 2 window: truncate and encode (section 3), 3 increment (section 3), 4 classify:
tininess (section 5) and overflow (section 4), 5 the result's code, its sign and the flags
(sections 6, 7). Input is a raw result, the exact value (-1)^sign * (sig + f) * 2^exp with
0 <= f < 1 and ``sticky`` = (f > 0); output is the encoded result and the exception flags.

``round_float`` is the same rounder for a narrowing convert whose codes, not flags, are wanted
(quantize's common case): steps 1 and 2 read the cut off the source's exponent field, steps 3-5
are this module's own functions.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from fpforge.rtl.formats import FloatFormat, Specials
from fpforge.rtl.options import (RM_CODES, RM_MAX, Flag, Rounding, Saturation, Tininess,
                                  UnitOptions)

from ._jax import I32, I64, U32, U64, jax, jnp, msb, shl, shr, uint_dtype, width


class Raw(NamedTuple):
    sign: jnp.ndarray      # uint32 0/1
    exp: jnp.ndarray       # int32/int64: weight of sig's LSB
    sig: jnp.ndarray       # uint64
    sticky: jnp.ndarray    # bool: nonzero bits below sig's LSB
    is_nan: jnp.ndarray    # result is NaN (operand NaN or invalid operation)
    is_inf: jnp.ndarray    # result is an exact infinity (is_nan wins when both are set)
    invalid: jnp.ndarray   # raise the invalid flag
    # Where true, a sum that vanished (sig == 0, no sticky) is an exact zero of opposite-signed
    # terms: +0, or -0 when rounding down (IEEE 754 6.3). None: no cancelling sum.
    cancels: jnp.ndarray | None = None
    # Where true, the result is an exact infinity from a finite non-zero dividend over zero
    # (IEEE 754 7.3): the divide-by-zero flag. None: no division.
    divzero: jnp.ndarray | None = None


def raw_from_float64(value) -> Raw:
    """Float64 values as exact raw values for the rounder (read from their bits: XLA's own
    conversions may flush subnormals)."""
    bits = jax.lax.bitcast_convert_type(value, U64)
    field = ((bits >> 52) & 0x7FF).astype(I32)
    mantissa = bits & ((1 << 52) - 1)
    false = jnp.zeros(value.shape, bool)
    return Raw(sign=(bits >> 63).astype(U32), exp=jnp.where(field == 0, -1074, field - 1075),
               sig=jnp.where(field == 0, mantissa, mantissa | (1 << 52)).astype(U64),
               sticky=false, is_nan=jnp.isnan(value), is_inf=jnp.isinf(value), invalid=false)


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
        if mode not in RM_CODES:          # rod and stochastic have no rm code
            return False
        if mode is Rounding.RNE:
            return (self.rm == RM_CODES[mode]) | (self.rm > RM_MAX)   # reserved codes: rne
        return self.rm == RM_CODES[mode]

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
            Rounding.STOCHASTIC_B: lambda: sr_carry,
            Rounding.STOCHASTIC_C: lambda: sr_carry,
        }
        if self.rm is None:
            return rules[self.rounding]()
        out = rules[Rounding.RNE]()
        for mode in (Rounding.RTZ, Rounding.RDN, Rounding.RUP, Rounding.RNA):
            out = jnp.where(self.is_(mode), rules[mode](), out)
        return out

    def shift_round(self, X, sh, sign, opts: UnitOptions, r=None):
        """Step 3 on an integer cut at bit ``sh``: X / 2^sh rounded to an integer by this mode
        (``sign`` uint32 0/1 of the value, ``r`` the random bits of a stochastic mode). The
        bits below the cut are the round bit (bit sh - 1, so 1 <= sh) and the sticky part; an
        ``sh`` of X's width or more keeps no bit (XLA's shift rule). X needs a spare top bit:
        the static modes add their rounding offset before the shift (the classic "add half an
        LSB, minus one plus the LSB, then shift" of round to nearest even), which reads no
        round or sticky bit apart."""
        one = jnp.ones((), X.dtype)
        sh = sh.astype(X.dtype)
        static = self.rm is None
        if static and self.rounding in (Rounding.RTZ, Rounding.RNE, Rounding.RNA):
            if self.rounding is Rounding.RTZ:
                return shr(X, sh)
            half = shl(one, sh - 1)               # 0 when sh - 1 >= width: X < half then
            if self.rounding is Rounding.RNA:
                return shr(X + half, sh)
            return shr(X + (half - 1) + (shr(X, sh) & 1), sh)
        if static and self.rounding.stochastic:
            # stochastic_carry's sums, with the kept bits above them: the carry out of the R
            # (B: R + 1) bits below the cut walks into the kept bits. C rounds those R bits to
            # nearest even first, by the rule above one cut lower.
            R = opts.sr_bits
            if self.rounding is Rounding.STOCHASTIC:
                return shr(shr(X, sh - R) + r, R)
            if self.rounding is Rounding.STOCHASTIC_B:
                return shr(shr(X, sh - (R + 1)) + 2 * r + 1, R + 1)
            return shr(Mode(Rounding.RNE).shift_round(X, sh - R, sign, opts) + r, R)
        if static:
            trunc = shr(X, sh)
            inexact = (shl(trunc, sh) != X).astype(X.dtype)
            if self.rounding is Rounding.ROD:
                return trunc | inexact
            up = sign if self.rounding is Rounding.RDN else sign ^ 1
            return trunc + (inexact & up.astype(X.dtype))
        # Per-element modes (none stochastic): round and sticky bits for the increment.
        k2 = shr(X, sh - 1)                       # kept bits, then the round bit
        rb, st = (k2 & 1) == 1, shl(k2, sh - 1) != X
        trunc = k2 >> 1
        return trunc + self.increment(sign == 1, (trunc & 1) == 1, rb, st).astype(X.dtype)

    def overflows_to_infinity(self, sign):
        """IEEE 754 7.4: which modes carry an overflow to infinity (else to max finite)."""
        away = self.is_(Rounding.RNE) | self.is_(Rounding.RNA) | \
            (self.rm is None and self.rounding.stochastic)
        return away | (self.is_(Rounding.RUP) & ~sign) | (self.is_(Rounding.RDN) & sign)


def round_raw(raw: Raw, fmt: FloatFormat, opts: UnitOptions, mode: Mode, rbits=None):
    """Round a raw result into ``fmt``; returns (codes, flags) in the narrowest unsigned
    dtypes that hold them (uint8 / uint16 / uint32 codes, uint8 flags)."""
    M, bias, emin = fmt.man_bits, fmt.bias, fmt.emin
    R = opts.sr_bits
    stochastic = opts.rounding.stochastic
    sig = raw.sig                        # uint32 or uint64, chosen by the core
    if stochastic and width(sig) < M + 1 + opts.rounding.exact_bits(R):
        sig = sig.astype(U64)            # room for the M+1 kept bits and the bits read below
    W = width(sig)
    # A NaN or infinite result skips the rounder: a finite addend beside an infinity (a*b + inf)
    # must not leak its own inexact/overflow/underflow flags.
    nonzero = ((sig != 0) | raw.sticky) & ~raw.is_inf & ~raw.is_nan

    # 1. Normalize (section 3). The sign of a sum that cancels to zero first (section 6).
    sign = raw.sign.astype(bool)
    if raw.cancels is not None:
        vanished = raw.cancels & (sig == 0) & ~raw.sticky & ~raw.is_inf & ~raw.is_nan
        sign = jnp.where(vanished, mode.is_(Rounding.RDN), sign)
    # 1, 2. Normalize and window (_window), then encode the kept bits directly: one formula
    #    for normal, subnormal and E8M0 codes (the kept hidden bit adds one to the exponent
    #    field, hence bias - 1).
    E, E_lsb, sig_n, rbit, kept, rb, st = _window(raw, sig, fmt)
    # A 32-bit format's code plus its carry needs 33 bits (0x7FFFFFFF + 1 must compare as too
    # big, not wrap to a negative code); narrower formats stay in int32.
    code_t = I32 if fmt.width < 32 else I64
    code = (E_lsb.astype(code_t) + (bias - 1)) * (1 << M) + kept.astype(code_t)
    parity = (code & 1) == 1
    inexact = rb | st

    # 3. Increment the code (section 3); a carry walks into the exponent field by itself.
    sr_carry = None
    if stochastic:
        sr_carry = stochastic_carry(opts.rounding, R, sig_n, rbit, raw.sticky,
                                     jnp.asarray(rbits).astype(sig.dtype) & ((1 << R) - 1))
    code = code + mode.increment(sign, parity, rb, st, sr_carry).astype(code_t)

    # 4. Classify: tininess (section 5) and then overflow. Before rounding (opts.tininess, always
    #    under stochastic rounding) the exact value is tiny when below 2^emin.
    below = nonzero & (E < emin)
    if opts.tininess is Tininess.BEFORE:
        tiny = below
    elif fmt.has_subnormals:
        # Tiny unless rounding to M+1 bits with an unbounded exponent reaches 2^emin: only from
        # E = emin - 1 with all M+1 kept bits ones. Cut at the normal LSB, bit W-1-M.
        kept_u = sig_n >> (W - 1 - M)
        rb_u = ((sig_n >> (W - 2 - M)) & 1) == 1
        st_u = ((sig_n & ((1 << (W - 2 - M)) - 1)) != 0) | raw.sticky
        # The parity of M+1 ones: odd, but with M == 0 it is the exponent field's, here 0.
        reaches = (E == emin - 1) & (kept_u == (1 << (M + 1)) - 1) & \
            mode.increment(sign, jnp.full_like(rb_u, M > 0), rb_u, st_u)
        tiny = below & ~reaches
    else:
        tiny = nonzero & (code < fmt.min_normal_code)
    flush = tiny if not fmt.has_subnormals else jnp.zeros_like(tiny)
    code = jnp.where(flush, 0, code)     # zero, or E8M0's smallest value 2^-127
    inexact = inexact | flush

    #    Overflow (section 4): round first, then compare with the largest finite code.
    sat = opts.saturation_for(fmt)
    nan_out, invalid = raw.is_nan, raw.invalid
    if sat is None:
        code, overflow, overflow_nan, inexact = _overflow_by_convention(
            fmt, opts, mode, sign, code, nonzero, raw.is_inf, inexact)
        nan_out = nan_out | overflow_nan
    else:
        code, overflow, nan_out, invalid, inexact, tiny = _saturate(
            fmt, sat, mode, sign, code, nonzero, raw.is_inf, inexact, tiny, nan_out, invalid)

    # 5. The result's code, its sign and the flags (sections 6, 7): NaN, unrepresentable values.
    if fmt.specials is Specials.FNU:
        # Unsigned, no zero: negative values and zero have no encoding.
        bad = ~raw.is_nan & (sign | ~(nonzero | raw.is_inf))
        nan_out, invalid = nan_out | bad, invalid | bad
        overflow, inexact, tiny = overflow & ~bad, inexact & ~bad, tiny & ~bad
    if not fmt.has_nan:
        invalid = invalid | raw.is_nan          # no NaN code: +0, invalid
    number = ~raw.is_nan
    flags = (_flag(invalid, Flag.NV) | _flag(number & overflow, Flag.OF) |
             _flag(number & tiny & inexact, Flag.UF) | _flag(number & inexact, Flag.NX))
    if raw.divzero is not None:
        flags = flags | _flag(raw.divzero, Flag.DZ)
    return _signed_code(fmt, code, sign, nan_out), flags


def _signed_code(fmt: FloatFormat, code, sign, nan_out):
    """Step 5's code: the magnitude's code with the sign bit, or the NaN code."""
    out = code.astype(U32)
    if fmt.signed:
        negative = sign & ~nan_out
        if not fmt.has_neg_zero:
            negative = negative & (code != 0)   # fnuz, ext: no negative zero
        out = out | (negative.astype(U32) << (fmt.width - 1))
    out = jnp.where(nan_out, jnp.uint32(fmt.nan_code if fmt.has_nan else 0), out)
    return out.astype(code_dtype(fmt))


def cuts_by_field(src: FloatFormat, fmt: FloatFormat) -> bool:
    """Whether :func:`round_float` can convert ``src`` codes into ``fmt``: ``src`` has IEEE
    specials and subnormals (its field says where a code's leading one is), ``fmt`` keeps
    subnormals, has no more fraction bits, and its 2^emin is a normal number of ``src``."""
    ieee = src.specials is Specials.IEEE and src.has_subnormals
    return ieee and (exponent_only_below(src, fmt) or (
        fmt.has_subnormals and fmt.man_bits <= src.man_bits and fmt.emin + src.bias >= 1))


def exponent_only_below(src: FloatFormat, fmt: FloatFormat) -> bool:
    """Whether ``fmt`` is E8M0-like to ``src``: exponent only (no zero, no subnormals) with
    2^emin one binade below src's smallest normal, so it lies in src's subnormals."""
    return fmt.specials is Specials.FNU and fmt.man_bits == 0 and fmt.emin + src.bias == 0


def round_float(codes, src: FloatFormat, fmt: FloatFormat, opts: UnitOptions, mode: Mode,
                rbits=None):
    """Convert ``src`` codes into ``fmt`` (where :func:`cuts_by_field`): the codes of
    :func:`round_raw` on the decoded operand, without its flags, by a shorter step 1.

    A code's exponent field already names the weight of its leading one, so nothing is searched
    for. Steps 1 and 2: the magnitude's bits with the field rebased to ``fmt``'s, read as one
    integer X, are the result's code followed by the S = M_src - M bits below its LSB for a
    normal result, the carry of step 3 walking into the exponent field as in round_raw. Below
    fmt's 2^emin, X is the significand with its hidden bit (field c, clamped to [1, E0], gives
    X = mag - (c - 1) * 2^M_src) and the cut moves up by the E0 - c fields the value lies below
    2^emin. Step 3 rounds X at that cut (:meth:`Mode.shift_round`). Fields above fmt's emax
    give codes above the largest finite one: those, infinities and NaNs take the code steps 4
    and 5 of round_raw give their class (:func:`_special_codes`).

    Everything is an unsigned integer of one width (uint32 from float32) and every step is an
    element-wise op, so XLA fuses the whole convert into one vectorized loop.
    """
    M, Ms = fmt.man_bits, src.man_bits
    E0 = fmt.emin + src.bias                # the source field of 2^emin
    # The round bit, and the exact bits a stochastic mode reads, lie below the LSB: shift
    # them in from below where the source has fewer (E8M0 cuts a subnormal one bit lower).
    # One spare bit on top: X plus half an LSB must not wrap (step 3).
    exponent_only = exponent_only_below(src, fmt)
    L = max(0, max(opts.rounding.exact_bits(opts.sr_bits), 1) - (Ms - M - exponent_only))
    dtype = U32 if src.width + L <= 32 else U64
    mag = jnp.asarray(codes).astype(U32) & jnp.uint32(src.magnitude_mask)
    sign = (jnp.asarray(codes).astype(U32) >> (src.width - 1)) & 1
    # 1, 2. The field clamped to [1, E0] sets the cut: bit sh of X is the result's LSB
    #    (sh >= 1: L makes room for the round bit).
    if exponent_only:
        # E8M0: a normal source's field is the code (M = 0) and its fraction is cut off. A
        # subnormal one from 2^-127 on is 1.f * 2^emin: code 0 with f cut off one bit lower;
        # below that the value is tiny and flushes to code 0 (2^emin) whatever the mode,
        # X = 0 gives that.
        sub = ((mag >> Ms) == 0).astype(U32)
        X = shl((jnp.maximum(mag, jnp.uint32(1 << (Ms - 1))) - (sub << (Ms - 1))).astype(dtype),
                L)
        sh = (Ms + L) - sub
    else:
        c = jnp.clip(mag >> Ms, jnp.uint32(1), jnp.uint32(E0))
        X = shl((mag - ((c - 1) << Ms)).astype(dtype), L)
        sh = (Ms - M + L + E0) - c
    # 3. Round at the cut (section 3).
    r = None
    if opts.rounding.stochastic:
        r = jnp.asarray(rbits).astype(dtype) & ((1 << opts.sr_bits) - 1)
    code = mode.shift_round(X, sh, sign, opts, r).astype(U32)
    # 4, 5. Above the largest finite code (overflows, infinities, NaNs): the class's code, as
    #    round_raw's steps 4 and 5 make it. Src's infinity overflows by its code unless fmt's
    #    fields reach as high as src's.
    inf, nan = mag == jnp.uint32(src.inf_code), mag > jnp.uint32(src.inf_code)
    over = code > fmt.max_finite_code
    inf_overflows = (src.inf_code - (max(E0 - 1, 0) << Ms)) >> (Ms - M) > fmt.max_finite_code
    special = over if inf_overflows else over | inf | nan
    zero = None
    if fmt.signed:
        negative = sign if fmt.has_neg_zero else sign & (code != 0).astype(U32)
        out = code | (negative << (fmt.width - 1))
    elif fmt.specials is Specials.FNU:
        # No zero (E8M0): zero and every negative value are classes of their own.
        zero = mag == 0
        special = special | (sign == 1) | zero
        out = code
    else:
        # Unsigned: a negative value that does not round to zero is a class of its own.
        special = special | ((sign == 1) & (code != 0))
        out = code
    out = jnp.where(special, _special_codes(fmt, opts, mode, sign, over, inf, nan,
                                            inf_overflows, zero), out)
    return out.astype(code_dtype(fmt))


def _special_codes(fmt: FloatFormat, opts: UnitOptions, mode: Mode, sign, over, inf, nan,
                   inf_overflows: bool, zero=None):
    """The codes round_raw's steps 4 and 5 give a value that overflows (or, unsigned, is
    negative), an infinity, a NaN or (``zero`` given: a format without zero) a zero, by its
    sign. Under a static mode they are 10 constants, computed here by those steps and selected
    by nested wheres (constants that agree fold away); per-element modes run the steps on the
    arrays."""
    if mode.rm is not None:
        code = jnp.where(over, jnp.uint32(fmt.max_finite_code + 1), jnp.uint32(1))
        nonzero = ~inf & ~nan if zero is None else ~inf & ~nan & ~zero
        return _finish(fmt, opts, mode, sign == 1, code, nonzero, inf, nan)
    K = 5
    with jax.ensure_compile_time_eval():
        # Classes: 0 in range (reaches here only unsigned and negative), 1 finite overflow,
        # 2 infinity, 3 NaN, 4 zero; the first five positive, the next five negative.
        cls = np.tile(np.arange(K), 2)
        neg = np.repeat([False, True], K)
        code = np.where(cls == 1, fmt.max_finite_code + 1, cls == 0).astype(np.uint32)
        table = [int(v) for v in np.asarray(_finish(
            fmt, opts, mode, jnp.asarray(neg), jnp.asarray(code), jnp.asarray(cls <= 1),
            jnp.asarray(cls == 2), jnp.asarray(cls == 3)))]

    def codes(k):
        return table[k], table[K + k]

    def pick(k):
        pos, neg_ = codes(k)
        if pos == neg_:
            return jnp.uint32(pos)
        return jnp.where(sign == 1, jnp.uint32(neg_), jnp.uint32(pos))
    # A class needs no select of its own where the selects before it already give its codes:
    # the overflow's, and the in-range class's where that one has a select and the class's
    # codes may be in range (infinities and NaNs when fmt's fields reach src's; zeros).
    out = pick(1)
    in_range = not fmt.signed and codes(0) != codes(1)
    if in_range:
        out = jnp.where(over, out, pick(0))
    for k, where, may_be_in_range in ((2, inf, not inf_overflows), (3, nan, not inf_overflows),
                                      (4, zero, True)):
        held = {codes(1)} | ({codes(0)} if in_range and may_be_in_range else set())
        if where is not None and held != {codes(k)}:
            out = jnp.where(where, pick(k), out)
    return out


def _finish(fmt: FloatFormat, opts: UnitOptions, mode: Mode, sign, code, nonzero, inf, nan):
    """Steps 4 and 5 of the codes alone (no flags): overflow, infinities, saturation, then the
    code's sign or NaN, as in round_raw."""
    no = jnp.zeros(code.shape, bool)
    sat = opts.saturation_for(fmt)
    if sat is None:
        code, _, overflow_nan, _ = _overflow_by_convention(fmt, opts, mode, sign, code, nonzero,
                                                           inf, no)
        nan_out = nan | overflow_nan
    else:
        code, _, nan_out, _, _, _ = _saturate(fmt, sat, mode, sign, code, nonzero, inf, no, no,
                                              nan, no)
    if fmt.specials is Specials.FNU:
        # Unsigned, no zero: negative values and zero have no encoding (as in round_raw).
        nan_out = nan_out | (~nan & (sign | ~(nonzero | inf)))
    return _signed_code(fmt, code, sign, nan_out).astype(U32)


class Window(NamedTuple):
    E: jnp.ndarray         # int32: weight of the leading one (clamped, see _window)
    E_lsb: jnp.ndarray     # int32: weight of the result's LSB
    sig_n: jnp.ndarray     # the significand with its leading one at its top bit
    rbit: jnp.ndarray      # bit of sig_n just below the LSB (W or more: none)
    kept: jnp.ndarray      # the bits kept, hidden bit included
    rb: jnp.ndarray        # bool: the round bit
    st: jnp.ndarray        # bool: the sticky bit (any bit below the round bit)


def _window(raw: Raw, sig, fmt: FloatFormat) -> Window:
    """Steps 1 and 2 of :func:`round_raw` on ``sig`` (raw.sig, maybe widened): normalize, then
    cut at the result's LSB into kept bits, round bit and sticky (the increment is the mode's,
    step 3; :func:`rounding_case` reads the same cut)."""
    M, emin, W = fmt.man_bits, fmt.emin, width(sig)
    # 1. The leading one moves to bit W-1 and E is its weight. Then the result's LSB
    #    is at bit W-1-M of sig_n for a normal result, E_lsb - E bits further up for a subnormal
    #    one (precision M+1, floor at emin): every cut below is a right shift.
    top = msb(sig)
    E = raw.exp.astype(I32) + top
    sig_n = shl(sig, (W - 1 - top) & (W - 1))         # & (W-1): in range, so no guard is emitted
    # Beyond emax+1 the result overflows whatever the low bits are; clamping there keeps the
    # code below in int32 and makes it exceed the largest finite code by itself.
    E = jnp.minimum(E, fmt.emax + 1)
    if not fmt.has_subnormals:
        E = jnp.maximum(E, emin - M - 3)   # flushed whatever its bits; keeps int32 in range
    E_lsb = jnp.maximum(E, emin) if fmt.has_subnormals else E    # exponent the LSB belongs to
    rbit = (W - 2 - M) + (E_lsb - E)

    # 2. Window (section 3): one variable shift yields the kept bits and the round bit; what it
    #    dropped is the sticky part.
    k2 = shr(sig_n, rbit)                # kept bits, then the round bit
    st = (shl(k2, rbit) != sig_n) | raw.sticky
    return Window(E, E_lsb, sig_n, rbit, k2 >> 1, (k2 & 1) == 1, st)


# The rounding case of an exact result (:func:`rounding_case`), as bits.
CASE_ROUND_BIT = 1       # the first bit below the result's LSB is one
CASE_STICKY = 2          # some bit further below is one
CASE_BELOW_NORMAL = 4    # the exact result is nonzero, finite and below 2^emin in magnitude


def rounding_case(raw: Raw, fmt: FloatFormat):
    """Where an exact result lies between its two neighbours in ``fmt``, as CASE_* bits (uint8),
    read at the rounder's own cut: round bit without sticky is an exact tie, neither is exact.
    NaN and infinite results have none."""
    w = _window(raw, raw.sig, fmt)
    finite = ~raw.is_inf & ~raw.is_nan
    nonzero = ((raw.sig != 0) | raw.sticky) & finite
    bits = (jnp.where(w.rb & finite, CASE_ROUND_BIT, 0) | jnp.where(w.st & finite, CASE_STICKY, 0)
            | jnp.where(nonzero & (w.E < fmt.emin), CASE_BELOW_NORMAL, 0))
    return bits.astype(jnp.uint8)


def stochastic_carry(rounding: Rounding, R: int, sig_n, rbit, sticky, r):
    """The increment of stochastic rounding, P3109 4.7.4 RoundAway(Stochastic[ABC]_R, r), from
    the bits of ``sig_n`` below the LSB (bit ``rbit`` is the first; the widening in round_raw
    keeps rbit + 1 - exact_bits >= 0) and ``sticky``, the bits below ``sig_n``. The rounder
    and f2i's integer grid (golden/intconv.py) both read it."""
    mask = (1 << R) - 1
    if rounding is Rounding.STOCHASTIC:
        # A: floor(frac 2^R) + r >= 2^R, tested without overflow as r > (2^R - 1) - frac_R.
        frac = shr(sig_n, rbit + 1 - R) & mask
        return r > (mask - frac)
    if rounding is Rounding.STOCHASTIC_B:
        # B: floor(frac 2^(R+1)) + 2r + 1 >= 2^(R+1).
        frac = shr(sig_n, rbit - R) & ((mask << 1) | 1)
        return frac + 2 * r + 1 > (mask << 1) | 1
    # C: RNITE(frac 2^R) + r >= 2^R: the R bits, rounded to nearest even by the next bit and
    # the sticky of the rest (which may carry them to 2^R).
    q = shr(sig_n, rbit + 1 - R) & mask
    half = (shr(sig_n, rbit - R) & 1) == 1
    rest = (shl(shr(sig_n, rbit - R), rbit - R) != sig_n) | sticky
    q = q + (half & (rest | ((q & 1) == 1))).astype(q.dtype)
    return q + r > mask


def _overflow_by_convention(fmt, opts, mode, sign, code, nonzero, inf_in, inexact):
    """Section 4 when no P3109 saturation mode is asked for. An exact infinity becomes +-max (or
    NaN) where the format has no infinity or saturation is asked for -- OCP 8-bit FP:
    saturating E5M2 turns +-inf into +-57344, saturating fnuz into NaN (the ONNX table)."""
    sat = opts.saturate
    inf_converts = (not fmt.has_inf) or sat
    finite_overflow = nonzero & (code > fmt.max_finite_code)
    overflow = finite_overflow | (inf_in & inf_converts)
    inf_to_nan = (not sat) or fmt.specials is Specials.FNUZ
    big = (finite_overflow & mode.overflows_to_infinity(sign) & (not sat)) | \
        (inf_in & inf_to_nan)                    # inf where there is one, else NaN, else max
    if fmt.has_inf:
        code = jnp.where(overflow, jnp.where(big, fmt.inf_code, fmt.max_finite_code), code)
        code = jnp.where(inf_in & ~overflow, fmt.inf_code, code)
        overflow_nan = jnp.zeros_like(overflow)
    else:
        code = jnp.where(overflow, fmt.max_finite_code, code)
        overflow_nan = overflow & big & fmt.has_nan
    code = jnp.where(nonzero | inf_in, code, 0)
    inexact = (inexact & nonzero) | overflow
    return code, overflow, overflow_nan, inexact


def _saturate(fmt, sat, mode, sign, code, nonzero, inf_in, inexact, tiny, nan_out, invalid):
    """P3109 4.7.5 Saturate, after rounding, for any format: "extended" is "has infinities",
    Mhi the largest finite value, Mlo = -Mhi (signed) or 0 (unsigned). docs/numerics.md 4."""
    ext = fmt.has_inf
    finite_over = nonzero & (code > fmt.max_finite_code)
    if sat is Saturation.NONE:
        # Directed rounding that points back into range keeps Mhi (Mlo); P3109 also keeps Mhi
        # under ToOdd in unsigned extended formats, whose Mhi code is odd.
        inward = mode.is_(Rounding.RTZ) | (mode.is_(Rounding.RDN) & ~sign) | \
            (mode.is_(Rounding.RUP) & sign)
        if fmt.unsigned:
            inward = inward | mode.is_(Rounding.ROD)
        to_inf = finite_over & ext & ~inward
    else:
        to_inf = jnp.zeros_like(finite_over)
    stays_inf = inf_in & (ext and sat is not Saturation.FINITE)
    overflow = finite_over | (inf_in & ~stays_inf)
    code = jnp.where(overflow, fmt.max_finite_code, code)
    if ext:
        code = jnp.where(to_inf | stays_inf, fmt.inf_code, code)
    code = jnp.where(nonzero | inf_in, code, 0)
    inexact = (inexact & nonzero) | overflow
    if fmt.unsigned and fmt.has_zero:
        # Below Mlo = 0: 0 when saturating, NaN under SatNone unless rounding toward zero or
        # up from a finite value.
        below = sign & (inf_in | (code != 0))
        if sat is Saturation.NONE:
            to_zero = below & ~inf_in & (mode.is_(Rounding.RTZ) | mode.is_(Rounding.RUP))
        else:
            to_zero = below
        to_nan = below & ~to_zero
        code = jnp.where(below, 0, code)
        nan_out, invalid = nan_out | to_nan, invalid | to_nan
        overflow, tiny = overflow & ~below, tiny & ~below
        inexact = jnp.where(below, to_zero, inexact)
    return code, overflow, nan_out, invalid, inexact, tiny


def code_dtype(fmt: FloatFormat):
    """The narrowest unsigned dtype that holds a code of ``fmt``."""
    return uint_dtype(fmt.width)


def _flag(cond, flag: Flag):
    return jnp.where(cond, jnp.uint8(int(flag)), jnp.uint8(0))
