"""Step 1 of every operation: decode codes into sign / exponent / integer significand.

Same contract as rtl/fp_units/decode.py, the same steps. value = (-1)^sign * sig * 2^exp
exactly, for finite codes.
"""

from __future__ import annotations

from typing import NamedTuple

from fpforge.rtl.formats import FloatFormat, Specials

from ._jax import I32, U32, U64, jnp


class Unpacked(NamedTuple):
    sign: jnp.ndarray      # uint32 0/1
    exp: jnp.ndarray       # int32: weight of the significand's LSB
    sig: jnp.ndarray       # uint64 integer significand (hidden bit included); 0 for zeros
    is_zero: jnp.ndarray
    is_inf: jnp.ndarray
    is_nan: jnp.ndarray
    is_snan: jnp.ndarray


def decode(code, fmt: FloatFormat, sig_dtype=U64) -> Unpacked:
    """Unpack codes; ``sig_dtype`` (uint32 or uint64) is the width the core computes in."""
    code = jnp.asarray(code).astype(U32) & jnp.uint32((1 << fmt.width) - 1)
    M = fmt.man_bits
    mag = code & jnp.uint32(fmt.magnitude_mask)
    e = (mag >> M).astype(I32)
    f = mag & jnp.uint32((1 << M) - 1)
    sign = (code >> (fmt.width - 1)) & 1 if fmt.signed else jnp.zeros_like(code)

    if fmt.specials is Specials.IEEE:
        # One compare each on the magnitude instead of testing exponent and fraction apart.
        is_nan = mag > jnp.uint32(fmt.inf_code)
        is_inf = mag == jnp.uint32(fmt.inf_code)
    elif fmt.specials in (Specials.FN, Specials.FNU):
        is_nan = mag == fmt.magnitude_mask
        is_inf = jnp.zeros_like(is_nan)
    elif fmt.specials is Specials.FNUZ:
        is_nan = code == fmt.sign_mask
        is_inf = jnp.zeros_like(is_nan)
    elif fmt.specials is Specials.EXT:
        # P3109 extended: one NaN code, infinities at the top magnitude below it.
        is_nan = code == fmt.nan_code
        is_inf = mag == fmt.inf_code
    else:  # FINITE: every code is a number
        is_nan = jnp.zeros(code.shape, bool)
        is_inf = is_nan
    is_snan = (is_nan & ((f >> (M - 1)) & 1 == 0)) if fmt.has_snan else jnp.zeros_like(is_nan)

    if fmt.specials is Specials.FNU:
        # Exponent-only: code e is 2^(e - bias), significand 1.
        sig = jnp.ones_like(code).astype(sig_dtype)
        exp = e - fmt.bias
    else:
        is_sub = e == 0
        hidden = jnp.where(is_sub, 0, 1 << M).astype(U32)
        sig = (hidden | f).astype(sig_dtype)
        if not fmt.has_subnormals:
            sig = jnp.where(is_sub, 0, sig).astype(sig_dtype)   # denormals are zero
        exp = jnp.where(is_sub, 1, e) - fmt.bias - M
    special = is_nan | is_inf
    sig = jnp.where(special, 0, sig).astype(sig_dtype)
    is_zero = (sig == 0) & ~special
    # fnuz has no negative zero; its sign-only code is the NaN handled above.
    return Unpacked(sign.astype(U32), exp.astype(I32), sig, is_zero, is_inf, is_nan, is_snan)
