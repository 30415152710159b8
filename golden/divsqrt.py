"""Step 2 of div and sqrt (rtl/divsqrt.py): the exact cores, by digit recurrence on uint64 lanes.

The same steps as rtl/fp_units/divsqrt.py (decode -> recurrence -> the one rounder), in another
frame: the golden model normalizes each significand by its leading one (``msb``) to a frame of
its own, while the hardware's decoders normalize subnormals by a leading-zero count and align the
two operands' widths. Either way the recurrence forms enough bits that the rounder sees the
exact result's bits down to the guard bits and a sticky bit (the remainder is not zero).

1. Normalize: a nonzero significand's leading one moves to bit F.
2. Recur: div, restoring radix 2: q_i = [r >= b], r = 2(r - q_i b), from r = a, gives
   floor(a 2^k / b) and the remainder; sqrt, restoring radix 2 on the radicand's bit pairs:
   r = 4r + pair, q_i = [r >= 4q + 1], r -= q_i (4q + 1), q = 2q + q_i, gives isqrt and
   its remainder (the bits the root misses). No float arithmetic anywhere.
3. Specials: IEEE 754-2019 7.2 (invalid: 0/0, inf/inf, sqrt of a negative non-zero, sNaN)
   and 7.3 (divide by zero: a finite non-zero a over a zero b); sqrt(-0) = -0.
"""

from __future__ import annotations

from fpforge.rtl.divsqrt import DivSpec, SqrtSpec

from ._jax import I32, U64, jnp, msb, shl, shr
from .decode import Unpacked
from .rounding import Raw
from .scalar import scalar_unit


def _normalize(u: Unpacked, frame_msb: int):
    """A nonzero significand with its leading one at bit ``frame_msb`` (zeros stay 0)."""
    sig = u.sig.astype(U64)
    n = jnp.where(sig == 0, 0, frame_msb - msb(sig))
    return shl(sig, n), u.exp.astype(I32) - n


def div_core(spec: DivSpec, a: Unpacked, b: Unpacked) -> Raw:
    """a / b: floor(a 2^k / b) for normalized a, b (k + 1 digits) and the remainder's sticky."""
    F = max(f.precision for f in spec.in_fmts) - 1
    na, ea = _normalize(a, F)
    nb, eb = _normalize(b, F)
    n = spec.digits
    zero_b = nb == 0
    nb = jnp.where(zero_b, 1, nb)            # the quotient of x / 0 is replaced below
    q, r = jnp.zeros_like(na), na
    for i in range(n):
        if i:
            r = r << 1                       # r < b here, so 2r < 2^(F+2)
        bit = r >= nb
        r = jnp.where(bit, r - nb, r)
        q = (q << 1) | bit.astype(U64)

    invalid_op = (a.is_zero & b.is_zero) | (a.is_inf & b.is_inf)
    is_nan = a.is_nan | b.is_nan | invalid_op
    is_inf = (a.is_inf | b.is_zero) & ~is_nan
    zero = a.is_zero | b.is_inf | is_inf | is_nan
    return Raw(sign=a.sign ^ b.sign, exp=ea - eb - (n - 1), sig=jnp.where(zero, 0, q),
               sticky=(r != 0) & ~zero, is_nan=is_nan, is_inf=is_inf,
               invalid=invalid_op | a.is_snan | b.is_snan,
               divzero=b.is_zero & ~a.is_zero & ~a.is_inf & ~a.is_nan)


def sqrt_core(spec: SqrtSpec, a: Unpacked) -> Raw:
    """sqrt(a): the radicand a 2^2s (exponent made even) has 2k + 2 bits; its integer root has
    its leading one at bit k, and its remainder's sticky."""
    c = spec.radicand_bits                   # even: the normalized leading one's bit
    na, ea = _normalize(a, c)
    odd = (ea & 1) == 1
    x = jnp.where(odd, na << 1, na)          # [2^c, 2^(c+2)), its exponent even
    e = jnp.where(odd, ea - 1, ea)
    n = spec.digits
    k = n - 1
    s = k - c // 2                           # radicand = x 2^2s
    q, r = jnp.zeros_like(x), jnp.zeros_like(x)
    for i in range(k, -1, -1):
        pair = shr(x, 2 * (i - s)) & 3 if i >= s else 0    # bits 2i+1, 2i of x 2^2s
        r = (r << 2) | pair
        t = (q << 2) | 1
        bit = r >= t
        r = jnp.where(bit, r - t, r)
        q = (q << 1) | bit.astype(U64)

    negative = (a.sign == 1) & ~a.is_zero & ~a.is_nan
    is_nan = a.is_nan | negative
    is_inf = a.is_inf & ~is_nan
    zero = a.is_zero | is_nan | is_inf
    return Raw(sign=a.sign, exp=(e >> 1) - s, sig=jnp.where(zero, 0, q),
               sticky=(r != 0) & ~zero, is_nan=is_nan, is_inf=is_inf,
               invalid=negative | a.is_snan)


@scalar_unit()
def div_unit(spec, ops, frame):
    """a / b: the quotient's bits and the remainder's sticky."""
    return div_core(spec, *ops)


@scalar_unit()
def sqrt_unit(spec, ops, frame):
    """sqrt(a): the root's bits and the remainder's sticky."""
    return sqrt_core(spec, ops[0])
