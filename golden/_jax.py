"""JAX set-up shared by the golden model: 64-bit integers on, CPU-friendly helpers.

The golden model needs 64-bit integers (exact fp32 products are 48 bits wide, fma sums wider), so
importing ``golden`` enables ``jax_enable_x64``. Nothing here uses float arithmetic.
"""

import jax
import jax.numpy as jnp
from jax import lax

jax.config.update("jax_enable_x64", True)

U16, U32, U64, I32, I64 = jnp.uint16, jnp.uint32, jnp.uint64, jnp.int32, jnp.int64

__all__ = ["jax", "jnp", "lax", "U16", "U32", "U64", "I32", "I64", "u64", "shr", "shl", "low_mask"]


def u64(x):
    return jnp.asarray(x, dtype=U64)


def shr(x, amount):
    """Logical right shift by a per-element amount; amounts >= 64 give 0 (XLA's rule too)."""
    return lax.shift_right_logical(x, jnp.clip(amount, 0, 64).astype(x.dtype))


def shl(x, amount):
    return lax.shift_left(x, jnp.clip(amount, 0, 64).astype(x.dtype))


def low_mask(n, dtype=U64):
    """All-ones in the low n bits (n may be an array, 0 <= n <= 64)."""
    n = jnp.asarray(n)
    ones = jnp.array(-1, dtype=jnp.int64).astype(dtype)
    return jnp.where(n >= 64, ones, shl(jnp.ones_like(n, dtype=dtype), n) - jnp.ones((), dtype))
