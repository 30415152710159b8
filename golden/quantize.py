"""The ML-facing API: quantize / dequantize / fake-quantize arrays, on the same rounder.

Inputs are float32, bfloat16 or float16 arrays; they are read bit for bit (bitcast), never through
float arithmetic, so float32 subnormals survive even though XLA on the CPU flushes them in
arithmetic. Results of ``dequantize`` are float32 (bitcast from exact codes), of ``fake_quantize``
the input's dtype.
"""

from __future__ import annotations

import functools

from fpforge.rtl.formats import CATALOG, FloatFormat
from fpforge.rtl.format_names import resolve
from fpforge.rtl.options import UnitOptions
from fpforge.rtl.scalar import CvtSpec

from ._jax import jax, jnp
from .buckets import elementwise
from .model import evaluate
from .scalar import cvt_unit

_FLOAT_INPUTS = {jnp.dtype(jnp.float32): "float32", jnp.dtype(jnp.bfloat16): "bfloat16",
                 jnp.dtype(jnp.float16): "float16"}
F32 = CATALOG["float32"]


def _source_format(x):
    x = jnp.asarray(x)
    if x.dtype not in _FLOAT_INPUTS:
        raise TypeError(f"quantize takes float32, bfloat16 or float16 arrays, not {x.dtype}")
    return x, CATALOG[_FLOAT_INPUTS[x.dtype]]


def quantize(x, fmt: "str | FloatFormat", *, rounding="rne", saturate=False, saturation=None,
             rbits=None, sr_bits=8, return_flags=False):
    """Encode a float array into ``fmt``: returns codes in the narrowest unsigned dtype (and
    flags if asked). The float array goes in as it is: the model reads its bits in the kernel."""
    x, src = _source_format(x)
    spec = CvtSpec(resolve(fmt), (src,),
                   UnitOptions(rounding=rounding, saturate=saturate, saturation=saturation,
                               sr_bits=sr_bits))
    inputs = {"x": x} if rbits is None else {"x": x, "rbits": rbits}
    out = evaluate(spec, want=("y", "flags") if return_flags else ("y",), **inputs)
    return (out["y"], out["flags"]) if return_flags else out["y"]


def dequantize(codes, fmt: "str | FloatFormat"):
    """Decode codes of ``fmt`` to float32 values (exact whenever float32 can hold them)."""
    spec = CvtSpec(F32, (resolve(fmt),))
    return elementwise(lambda c: _dequantize(spec, c), [codes], bits=(0,))


@functools.partial(jax.jit, static_argnums=0)
def _dequantize(spec: CvtSpec, codes):
    # One kernel: the float32 codes are bitcast inside the jit, not in a pass of their own.
    return jax.lax.bitcast_convert_type(cvt_unit(spec, {"x": codes}, ("y",))["y"], jnp.float32)


def fake_quantize(x, fmt: "str | FloatFormat", *, rounding="rne", saturate=False,
                  saturation=None, rbits=None, sr_bits=8):
    """Round a float array to the values of ``fmt`` and return them in ``x``'s dtype (float32,
    bfloat16 or float16; exact whenever that dtype holds ``fmt``'s values, as bfloat16 holds
    every format of at most 8 bits, and else rounded to nearest even into it).

    Differentiable for fine-tuning through it: ``jax.grad`` sees the straight-through estimator,
    the identity (the rounding's own derivative is zero almost everywhere)."""
    x, src = _source_format(x)
    forward = functools.partial(_fake_quantize, fmt=fmt, src=src, rounding=rounding,
                                saturate=saturate, saturation=saturation, sr_bits=sr_bits)
    return straight_through(forward, x, rbits)


def _fake_quantize(x, rbits, *, fmt, src: FloatFormat, rounding, saturate, saturation, sr_bits):
    y = dequantize(quantize(x, fmt, rounding=rounding, saturate=saturate, saturation=saturation,
                            rbits=rbits, sr_bits=sr_bits), fmt)
    if src == F32:
        return y
    # Back into the input's dtype by the shared rounder (XLA's own cast may flush subnormals).
    return jax.lax.bitcast_convert_type(quantize(y, src), x.dtype)


@functools.partial(jax.custom_vjp, nondiff_argnums=(0,))
def straight_through(forward, x, aux):
    """``forward(x, aux)`` with the straight-through gradient: d/dx is the identity, ``aux``
    (random bits, say) gets none."""
    return forward(x, aux)


def _straight_through_fwd(forward, x, aux):
    return forward(x, aux), None


def _straight_through_bwd(forward, _, g):
    return g, None


straight_through.defvjp(_straight_through_fwd, _straight_through_bwd)
