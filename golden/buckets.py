"""Element-wise kernels run on a few canonical shapes, so that calls differing only in their
arrays' lengths (or in the integer dtype carrying the codes) share one compilation.

A jitted kernel compiles once per shape and dtype of its arrays: about 0.3 CPU-s for a golden
unit, more than evaluating it on a million elements. So up to MAX_PADDED elements the arrays are
broadcast together, flattened, cast to uint32 and padded with zeros to the next power of two (at
least MIN_LENGTH), and the outputs are cut back to the broadcast shape: at most 9 compilations of
a kernel for every shape up to that size. Larger arrays go in as given, with no copy and no
padding: they are typically evaluated again and again at one length, and the copy would slow
every call (a 2^20-element fp16 mul runs in about 7 ms; the copy to uint32 adds a tenth).
"""

from __future__ import annotations

import math

import numpy as np

from ._jax import jax, jnp

__all__ = ["elementwise", "bucket_length", "MIN_LENGTH", "MAX_PADDED"]

MIN_LENGTH = 1 << 8
MAX_PADDED = 1 << 16


def bucket_length(n: int) -> int:
    """The padded length of ``n`` elements: the next power of two, at least MIN_LENGTH."""
    return max(MIN_LENGTH, 1 << max(n - 1, 0).bit_length())


def elementwise(kernel, arrays, bits=()):
    """``kernel(*arrays)`` for a kernel that maps its arrays element by element (they
    broadcast) to a pytree of arrays of their broadcast shape, compiled for a canonical shape.

    ``arrays`` may hold None (an absent input, passed on as None). The canonical form is exact
    for kernels that read of an integer array only its low 32 bits (as the golden units do: they
    cast codes, ``rm`` and ``rbits`` to uint32 first, or mask to at most 32 bits) and that read
    the float arrays at the positions in ``bits`` bit for bit (codes given as floats); other
    float arrays keep their dtype. A zero must be a valid input of every array: it fills the
    padding. Inside a trace (a caller's jit, grad or vmap) the kernel sees the arrays as given.
    """
    if any(isinstance(x, jax.core.Tracer) for x in arrays):
        return kernel(*arrays)
    shape = np.broadcast_shapes(*(np.shape(x) for x in arrays if x is not None))
    n = math.prod(shape)
    if n > MAX_PADDED:
        return kernel(*(None if x is None else jnp.asarray(x) for x in arrays))
    length = bucket_length(n)
    out = kernel(*(None if x is None else _padded(np.asarray(x), i in bits, shape, length)
                   for i, x in enumerate(arrays)))
    if shape == (length,):
        return out
    # Cut on the host: slicing the device array would compile a program for every shape again.
    return jax.tree.map(lambda y: jnp.asarray(np.asarray(y)[:n].reshape(shape)), out)


def _padded(x: np.ndarray, as_bits: bool, shape: tuple, length: int) -> np.ndarray:
    """``x`` broadcast to ``shape``, flattened, in its canonical dtype, zero-padded to
    ``length``: one pass over memory."""
    dtype = x.dtype
    if jnp.issubdtype(dtype, jnp.floating) and as_bits and dtype.itemsize <= 4:
        x = x.view(np.dtype(f"uint{8 * dtype.itemsize}"))      # the codes, zero-extended below
        dtype = np.dtype(np.uint32)
    elif jnp.issubdtype(dtype, jnp.integer) or dtype == np.bool_:
        dtype = np.dtype(np.uint32)                           # wraps modulo 2^32, as XLA's cast
    buf = np.zeros(length, dtype)
    np.copyto(buf[:math.prod(shape)].reshape(shape), x, casting="unsafe")
    return buf
