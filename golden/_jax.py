"""JAX set-up shared by the golden model: 64-bit integers on, CPU-friendly helpers.

The golden model needs 64-bit integers (exact fp32 products are 48 bits wide, fma sums wider), so
importing ``golden`` enables ``jax_enable_x64``. Nothing here uses float arithmetic.
"""

import jax
import jax.numpy as jnp
from jax import lax

jax.config.update("jax_enable_x64", True)

U16, U32, U64, I32, I64 = jnp.uint16, jnp.uint32, jnp.uint64, jnp.int32, jnp.int64

__all__ = ["jax", "jnp", "lax", "U16", "U32", "U64", "I32", "I64", "u64", "shr", "shl", "low_mask", "clz", "width", "any_below"]


def u64(x):
    return jnp.asarray(x, dtype=U64)


def shr(x, amount):
    """Logical right shift by a per-element amount; amounts >= the width give 0."""
    return lax.shift_right_logical(x, jnp.clip(amount, 0, width(x)).astype(x.dtype))


def shl(x, amount):
    return lax.shift_left(x, jnp.clip(amount, 0, width(x)).astype(x.dtype))


def width(x) -> int:
    return jnp.iinfo(x.dtype).bits


def any_below(x, n):
    """Whether any of the low n bits of x is set (n may be an array; n >= width means all)."""
    return shl(x, width(x) - jnp.clip(n, 0, width(x))) != 0


def low_mask(n, dtype=U64):
    """All-ones in the low n bits (n may be an array, 0 <= n <= 64)."""
    n = jnp.asarray(n)
    ones = jnp.array(-1, dtype=jnp.int64).astype(dtype)
    bits = jnp.iinfo(dtype).bits
    return jnp.where(n >= bits, ones, shl(jnp.ones_like(n, dtype=dtype), n) - jnp.ones((), dtype))


def clz(x):
    """Count leading zeros by binary search: plain compares and shifts, which XLA vectorizes on
    CPUs without a vector lzcnt (lax.clz is scalarized there). Returns the bit width for 0."""
    bits = jnp.iinfo(x.dtype).bits
    n = jnp.zeros(x.shape, I32)
    step = bits // 2
    while step:
        top = shr(x, bits - step) == 0
        n = jnp.where(top, n + step, n)
        x = jnp.where(top, shl(x, step), x)
        step //= 2
    return jnp.where(x == 0, bits, n)
