"""IEEE binary32 arithmetic on bit patterns, correctly rounded to nearest even, integer-only.

Quantization recipes (NVFP4's two-level scales, 4over6's error sums) are sequences of float32
operations whose every rounding shows in the bits they produce. To emulate them bit for bit the
golden model runs each operation through its own exact cores and the one rounder: ``mul``,
``add`` and ``sub`` are the scalar units' golden functions on float32, ``div`` the exact
quotient (with a sticky bit) rounded once, ``cast`` a conversion into a narrow format and back.
All take and return uint32 bit patterns (arrays that broadcast), and trace inside ``jax.jit``.
"""

from __future__ import annotations

import numpy as np

from fpforge.rtl.formats import CATALOG, FloatFormat
from fpforge.rtl.options import Rounding, UnitOptions
from fpforge.rtl.scalar import AddSpec, CvtSpec, MulSpec, SubSpec

from ._jax import I32, U32, U64, jax, jnp, msb
from .decode import decode
from .rounding import Mode, Raw, round_raw
from .scalar import add_unit, cvt_unit, mul_unit, sub_unit

__all__ = ["F32", "bits", "array_bits", "array_floats", "mul", "add", "sub", "div", "quotient",
           "fmin", "cast", "cast_flags", "cast_back", "FLT_MAX"]

F32 = CATALOG["float32"]
FLT_MAX = 0x7F7F_FFFF
_MUL, _ADD, _SUB = (S(F32, (F32, F32)) for S in (MulSpec, AddSpec, SubSpec))


def bits(value: float) -> int:
    """The bit pattern of a Python float rounded to float32 (for constants)."""
    return int(np.array([value], np.float32).view(np.uint32)[0])


def array_bits(x):
    """float32 values (arrays) as their uint32 bit patterns."""
    return jax.lax.bitcast_convert_type(jnp.asarray(x, jnp.float32), jnp.uint32)


def array_floats(patterns):
    """uint32 bit patterns (arrays) as the float32 values they encode."""
    return jax.lax.bitcast_convert_type(jnp.asarray(patterns, jnp.uint32), jnp.float32)


def _u32(x):
    return jnp.asarray(x).astype(U32)


def mul(a, b):
    """RN(a * b)."""
    return _u32(mul_unit(_MUL, {"a": _u32(a), "b": _u32(b)}, want=("y",))["y"])


def add(a, b):
    """RN(a + b)."""
    return _u32(add_unit(_ADD, {"a": _u32(a), "b": _u32(b)}, want=("y",))["y"])


def sub(a, b):
    """RN(a - b)."""
    return _u32(sub_unit(_SUB, {"a": _u32(a), "b": _u32(b)}, want=("y",))["y"])


def div(a, b):
    """RN(a / b), IEEE 754: x/0 is +-inf, 0/0 and inf/inf NaN, finite/inf zero."""
    raw = quotient(decode(_u32(a), F32, U64), decode(_u32(b), F32, U64))
    out, _ = round_raw(raw, F32, UnitOptions(), Mode(Rounding.RNE))
    return _u32(out)


def quotient(x, y) -> Raw:
    """The exact quotient of two decoded operands of up to 24 significant bits, as a raw value
    for the one rounder: 38 or more quotient bits and a sticky bit (the remainder), enough for
    any result format of up to 24 bits of precision."""
    # Significands normalized to a leading one at bit 23: (sig_x << 39) // sig_y has 39 or 40
    # bits and fits 64.
    lx, ly = msb(jnp.maximum(x.sig, 1)), msb(jnp.maximum(y.sig, 1))
    sx = x.sig.astype(U64) << (23 - lx).astype(U64)
    sy = jnp.maximum(y.sig.astype(U64) << (23 - ly).astype(U64), 1)
    num = sx << 39
    q, r = num // sy, num % sy
    exp = (x.exp + (lx - 23)) - (y.exp + (ly - 23)) - 39
    invalid_op = (x.is_zero & y.is_zero) | (x.is_inf & y.is_inf)
    is_nan = x.is_nan | y.is_nan | invalid_op
    is_inf = (x.is_inf | (y.is_zero & ~x.is_zero)) & ~is_nan
    zero = (x.is_zero | y.is_inf) & ~is_nan & ~is_inf
    return Raw(sign=x.sign ^ y.sign, exp=exp.astype(I32), sig=jnp.where(zero, 0, q).astype(U64),
               sticky=(r != 0) & ~zero, is_nan=is_nan, is_inf=is_inf,
               invalid=invalid_op | x.is_snan | y.is_snan)


def fmin(a, b):
    """C's fminf for non-NaN operands: the smaller value (integer order of the patterns)."""
    a, b = _u32(a), _u32(b)
    key = lambda v: jnp.where(v >> 31 == 1, -(v & 0x7FFF_FFFF).astype(I32),  # noqa: E731
                              (v & 0x7FFF_FFFF).astype(I32))
    return jnp.where(key(a) <= key(b), a, b)


def cast(x, fmt: FloatFormat, *, saturate: bool = False, rounding: str = "rne", rbits=None,
         sr_bits: int = 8):
    """(codes in ``fmt``, their value back as float32 patterns): a float32 rounded into a narrow
    format, the way a CUDA ``__nv_cvt_float_to_fp8(..., __NV_SATFINITE)`` or E2M1 cast does
    (``saturate``); ``rbits`` for a stochastic ``rounding``."""
    to = CvtSpec(fmt, (F32,), UnitOptions(rounding=rounding, saturate=saturate, sr_bits=sr_bits))
    inputs = {"x": _u32(x)} if rbits is None else {"x": _u32(x), "rbits": _u32(rbits)}
    codes = cvt_unit(to, inputs, want=("y",))["y"]
    return codes, cast_back(codes, fmt)


def cast_flags(x, fmt: FloatFormat, options: UnitOptions, rbits=None):
    """(codes, flags) of float32 ``x`` rounded into ``fmt`` under ``options`` (the cvt unit's
    golden function; ``rbits`` for a stochastic rounding)."""
    to = CvtSpec(fmt, (F32,), options)
    inputs = {"x": _u32(x)} if rbits is None else {"x": _u32(x), "rbits": _u32(rbits)}
    out = cvt_unit(to, inputs, want=("y", "flags"))
    return out["y"], out["flags"]


def cast_back(codes, fmt: FloatFormat):
    """The float32 patterns of ``fmt`` codes (exact: every format here fits in float32)."""
    return _u32(cvt_unit(CvtSpec(F32, (fmt,)), {"x": jnp.asarray(codes)}, want=("y",))["y"])
