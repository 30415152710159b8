"""JAX set-up shared by the golden model: 64-bit integers on, CPU-friendly helpers.

The golden model needs 64-bit integers (exact fp32 products are 48 bits wide, fma sums wider), so
importing ``golden`` enables ``jax_enable_x64``. Nothing here does float arithmetic; ``msb`` uses
one exact integer-to-float conversion to find a leading one.

Speed notes (XLA on an AVX2 CPU; the whole model fuses into one vectorized loop, so every
element-wise op costs one or two instructions per 8 lanes):
- Variable shifts follow XLA's rule: an amount outside [0, width) gives 0. AVX2's ``vpsrlv*`` /
  ``vpsllv*`` do exactly that, so LLVM emits a bare shift; clamping the amount first would only
  add instructions. Callers rely on the rule (an LSB above the whole significand keeps nothing).
- ``lax.clz`` has no vector instruction before AVX-512 and expands to a long byte-table sequence;
  ``msb`` below costs about five instructions.
"""

import jax
import jax.numpy as jnp
from jax import lax

jax.config.update("jax_enable_x64", True)

U16, U32, U64, I32, I64 = jnp.uint16, jnp.uint32, jnp.uint64, jnp.int32, jnp.int64

__all__ = ["jax", "jnp", "lax", "U16", "U32", "U64", "I32", "I64", "shr", "shl", "low_mask", "msb",
           "width", "any_below", "uint_dtype"]


def shr(x, amount):
    """Logical right shift by per-element amounts; amounts outside [0, width) give 0."""
    return lax.shift_right_logical(x, jnp.asarray(amount).astype(x.dtype))


def shl(x, amount):
    """Left shift by per-element amounts; amounts outside [0, width) give 0."""
    return lax.shift_left(x, jnp.asarray(amount).astype(x.dtype))


def uint_dtype(bits: int):
    """The narrowest unsigned dtype that holds ``bits``-bit codes (a port's, a format's)."""
    return next(getattr(jnp, f"uint{n}") for n in (8, 16, 32, 64) if bits <= n)


def width(x) -> int:
    return jnp.iinfo(x.dtype).bits


def low_mask(n, dtype=U64):
    """All-ones in the low n bits, for 0 <= n (n >= the width gives all ones: 1 << n is 0)."""
    return shl(jnp.ones((), dtype), n) - jnp.ones((), dtype)


def any_below(x, n):
    """Whether any of the low n bits of x is set (n <= 0: none; n >= width: all of x)."""
    return shl(x, width(x) - jnp.minimum(n, width(x))) != 0


def msb(x):
    """Index of the leading one of unsigned x as int32 (x = 0 gives a negative number).

    Converting an integer to float is exact about its leading one, and vcvtdq2ps is one vector
    instruction: the float's exponent field is floor(log2 x) + bias. Two details keep it exact:
    clearing the bit below the leading one (x & ~(x >> 1)) means rounding to the float's
    precision can never carry into the next power of two, and a 32-bit x with its top bit set
    converts as a negative int32, whose sign bit makes the shifted field >= 256 and ``minimum``
    maps it to 31. 64-bit x splits into two 32-bit halves (AVX2 has no 64-bit conversion).
    """
    if x.dtype == U64:
        hi = msb((x >> 32).astype(U32))
        return jnp.where(hi >= 0, hi + 32, msb(x.astype(U32)))
    x = x.astype(U32)
    y = lax.convert_element_type((x & ~(x >> 1)).astype(I32), jnp.float32)
    field = lax.bitcast_convert_type(y, U32) >> 23
    return jnp.minimum(field, 127 + 31).astype(I32) - 127
