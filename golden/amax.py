"""amax (rtl/amax.py): the largest magnitude of n codes, the same steps as
rtl/fp_units/amax.py, integers only:

1. decode each input's class (golden/decode.py); its magnitude's order key, the min/max kinds'
   ``order_key`` of the code with its sign cleared (golden/noncomp.py);
2. the largest key over the lanes: under ``number`` NaN lanes sit below every number (-1);
3. NaN where the policy says (``ieee``: any NaN; ``number``: every input NaN), the canonical NaN
   code; invalid on a signaling NaN. The result is the winning magnitude: -0 and +0 give +0.
"""

from __future__ import annotations

import functools

from fpforge.rtl.amax import AmaxSpec
from fpforge.rtl.options import Flag

from ._jax import U32, jax, jnp
from .decode import decode
from .noncomp import order_key
from .rounding import code_dtype

__all__ = ["amax_unit", "amax_codes"]


@functools.partial(jax.jit, static_argnames=("spec",))
def amax_codes(x, spec: AmaxSpec):
    """(y, flags) of ``x`` (..., n) codes of ``spec.fmt``."""
    fmt = spec.fmt
    x = jnp.asarray(x).astype(U32)
    d = decode(x, fmt)
    key = order_key(x & jnp.uint32(fmt.magnitude_mask), fmt)
    if spec.minmax == "number":
        key = jnp.where(d.is_nan, jnp.int32(-1), key)
        nan = jnp.all(d.is_nan, axis=-1)
    else:
        nan = jnp.any(d.is_nan, axis=-1)
    top = jnp.max(key, axis=-1).astype(U32)
    y = jnp.where(nan, jnp.uint32(fmt.nan_code or 0), top).astype(code_dtype(fmt))
    flags = jnp.where(jnp.any(d.is_snan, axis=-1), jnp.uint8(int(Flag.NV)), jnp.uint8(0))
    return y, flags


def amax_unit(spec: AmaxSpec, inputs: dict, want=("y", "flags")) -> dict:
    """The golden function of the amax kind: ``x`` (..., n) codes -> ``y``, ``flags`` (...)."""
    y, flags = amax_codes(jnp.asarray(inputs["x"]), spec=spec.numerics())
    out = {"y": y, "flags": flags}
    return {p: out[p] for p in want}
