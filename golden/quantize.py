"""The ML-facing API: quantize / dequantize / fake-quantize arrays, on the same rounder.

Inputs are float32, bfloat16 or float16 arrays; they are read bit for bit (bitcast), never through
float arithmetic, so float32 subnormals survive even though XLA on the CPU flushes them in
arithmetic. Results of ``dequantize``/``fake_quantize`` are float32 (bitcast from exact codes).
"""

from __future__ import annotations

import functools

from fpforge.rtl.formats import CATALOG, FloatFormat, resolve
from fpforge.rtl.options import UnitOptions
from fpforge.rtl.scalar import CvtSpec

from ._jax import jax, jnp
from .ops import cvt_unit

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
    from . import evaluate
    inputs = {"x": x} if rbits is None else {"x": x, "rbits": rbits}
    out = evaluate(spec, want=("y", "flags") if return_flags else ("y",), **inputs)
    return (out["y"], out["flags"]) if return_flags else out["y"]


def dequantize(codes, fmt: "str | FloatFormat"):
    """Decode codes of ``fmt`` to float32 values (exact whenever float32 can hold them)."""
    return _dequantize(CvtSpec(F32, (resolve(fmt),)), jnp.asarray(codes))


@functools.partial(jax.jit, static_argnums=0)
def _dequantize(spec: CvtSpec, codes):
    # One kernel: the float32 codes are bitcast inside the jit, not in a pass of their own.
    return jax.lax.bitcast_convert_type(cvt_unit(spec, {"x": codes}, ("y",))["y"], jnp.float32)


def fake_quantize(x, fmt: "str | FloatFormat", *, rounding="rne", saturate=False,
                  saturation=None, rbits=None, sr_bits=8):
    """Round a float array to the values of ``fmt`` and return them as float32."""
    return dequantize(quantize(x, fmt, rounding=rounding, saturate=saturate,
                               saturation=saturation, rbits=rbits, sr_bits=sr_bits), fmt)


