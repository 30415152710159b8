"""The integer conversions (rtl/intconv.py): i2f and f2i, integer-exact.

i2f is the one rounder on an exact raw value: the integer's sign and magnitude, weight 2^0
(golden/rounding.py). f2i mirrors rtl/fp_units/intconv.py step by step: (1) decode, (2) the
magnitude on the integer grid, the G bits below it (the round bit; under stochastic rounding the
bits the mode reads, as the rounder's window keeps them) and a sticky bit (an operand whose
leading one weighs 2^(N+1) or more is out of range whatever the mode), (3) the increment of the
rounding mode (golden/rounding.py's Mode and stochastic carry), (4) the range check: out of
range, infinities and NaN give the saturated integer with invalid alone, as ``--int-overflow``
says; else the two's complement code, inexact when a bit was dropped.
"""

from __future__ import annotations

import functools

from fpforge.rtl.intconv import F2iSpec, I2fSpec
from fpforge.rtl.options import Flag

from ._jax import I32, U32, U64, any_below, jax, jnp, msb, shl, shr, uint_dtype
from .buckets import elementwise
from .decode import decode
from .rounding import Mode, Raw, round_raw, stochastic_carry

__all__ = ["i2f_unit", "f2i_unit"]




def _unit(kernel):
    """``f(spec, inputs, want)`` from ``kernel(spec, a, rm, rbits) -> (y, flags)``, which reads
    the bits of a as uint32 (golden/buckets.py's canonical shapes)."""
    def unit(spec, inputs: dict, want=("y", "flags")) -> dict:
        y, flags = elementwise(lambda *arrays: kernel(spec, *arrays),
                               [inputs["a"], inputs.get("rm"), inputs.get("rbits")])
        out = {"y": y, "flags": flags}
        return {p: out[p] for p in (want or out)}
    unit.__doc__ = kernel.__doc__
    return unit


@_unit
@functools.partial(jax.jit, static_argnums=0)
def i2f_unit(spec: I2fSpec, a, rm, rbits):
    """The integer a (its two's complement or unsigned bits) rounded into the format."""
    n = spec.int_fmt.width
    a = a.astype(U32) & jnp.uint32((1 << n) - 1)
    neg = (a >> (n - 1)) & 1 if spec.int_fmt.signed else jnp.zeros_like(a)
    # The magnitude: 2^N - a for a negative a (-2^(N-1) included), in 64 bits.
    mag = jnp.where(neg == 1, (1 << n) - a.astype(U64), a.astype(U64))
    false = jnp.zeros(a.shape, bool)
    raw = Raw(sign=neg.astype(U32), exp=jnp.zeros(a.shape, I32), sig=mag, sticky=false,
              is_nan=false, is_inf=false, invalid=false)
    return round_raw(raw, spec.out_fmt, spec.options, Mode(spec.rounding, rm), rbits)


@_unit
@functools.partial(jax.jit, static_argnums=0)
def f2i_unit(spec: F2iSpec, a, rm, rbits):
    """The float a rounded to the integer format; invalid (alone) where it has no integer."""
    ints = spec.int_fmt
    n = ints.width
    u = decode(a, spec.in_fmt, U64)
    sign = u.sign == 1
    # 2. G bits below the integer's LSB: q = floor(|a|), low = the next G bits, the rest
    #    sticky (the unit's Y is q and low side by side; apart here, as N + 1 + G bits may
    #    exceed 64). A leading one at 2^(N+1) or above is out of range in every mode (and
    #    would not fit q's N + 1 bits).
    G = max(1, spec.rounding.exact_bits(spec.sr_bits))
    big = (u.sig != 0) & (msb(u.sig) + u.exp >= n + 1)
    q = jnp.where(u.exp >= 0, shl(u.sig, jnp.maximum(u.exp, 0)), shr(u.sig, jnp.maximum(-u.exp, 0)))
    k = u.exp + G                               # low's shift: left when >= 0
    low = jnp.where(k >= 0, shl(u.sig, jnp.maximum(k, 0)), shr(u.sig, jnp.maximum(-k, 0))) & \
        jnp.uint64((1 << G) - 1)
    sticky = (k < 0) & any_below(u.sig, -k)
    rb = ((low >> (G - 1)) & 1) == 1
    below = sticky | ((low & jnp.uint64((1 << (G - 1)) - 1)) != 0)
    # 3. The rounding mode's increment; a stochastic one compares low (and sticky) with rbits.
    sr_carry = None
    if spec.has_rbits:
        R = spec.sr_bits
        sr_carry = stochastic_carry(spec.rounding, R, low, G - 1, sticky,
                                    jnp.asarray(rbits).astype(U64) & ((1 << R) - 1))
    mode = Mode(spec.rounding, rm)
    mag = q + mode.increment(sign, (q & 1) == 1, rb, below, sr_carry).astype(U64)
    # 4. The range: -2^(N-1) .. 2^(N-1) - 1, or 0 .. 2^N - 1 (a negative value that rounds to
    #    0 is 0, inexact only, as RISC-V).
    if ints.signed:
        fits = jnp.where(sign, mag <= -ints.lo, mag <= ints.hi)
    else:
        fits = jnp.where(sign, mag == 0, mag <= ints.hi)
    invalid = u.is_nan | u.is_inf | big | ~fits
    mask = (1 << n) - 1
    code = jnp.where(sign, (jnp.uint64(1 << n) - mag) & mask, mag)
    nan_int = ints.hi if spec.int_overflow == "riscv" else 0
    end = jnp.where(sign, ints.lo & mask, ints.hi).astype(U64)
    code = jnp.where(u.is_nan, jnp.uint64(nan_int), jnp.where(invalid, end, code))
    inexact = (rb | below) & ~invalid
    flags = jnp.where(invalid, jnp.uint8(int(Flag.NV)), jnp.uint8(0)) | \
        jnp.where(inexact, jnp.uint8(int(Flag.NX)), jnp.uint8(0))
    return code.astype(uint_dtype(n)), flags
