"""The non-computational kinds (rtl/noncomp.py): sgnj, classify, min, max, cmp, on codes.

Nothing is rounded, so each golden function works on the codes themselves, the same steps as
rtl/fp_units/noncomp.py: (1) decode the class of each operand (golden/decode.py), (2) order the
non-NaN codes by :func:`order_key`, an integer that sorts as the values do with -0 just below
+0, (3) pick or compare. Integers only. A flushing format reads a subnormal as zero in step 1
and min/max give that zero's code (:func:`flushed`); cmp of two formats compares the decoded
values instead of the codes (:func:`value_less`).
"""

from __future__ import annotations

from fpforge.rtl.noncomp import NoncompSpec, flushes
from fpforge.rtl.options import Flag

from ._jax import I32, U32, jax, jnp, msb, shl
from .buckets import elementwise
from .decode import decode
from .rounding import code_dtype

__all__ = ["order_key", "flushed", "value_less", "sgnj_unit", "classify_unit", "min_unit", "max_unit", "cmp_unit"]


def order_key(code, fmt):
    """A signed integer per non-NaN code, ordered as the values with -0 < +0: the magnitude,
    or for a negative code its ones' complement, -magnitude - 1 (sign-magnitude to total
    order, as 754's totalOrder reads codes)."""
    mag = (code & jnp.uint32(fmt.magnitude_mask)).astype(I32)
    if not fmt.signed:
        return mag
    neg = (code >> (fmt.width - 1)) & 1
    return jnp.where(neg == 1, -mag - 1, mag)


def flushed(code, d, fmt):
    """``code``, a subnormal read as zero (``d`` its decoding) replaced by that zero's code:
    the operand IS zero (DAZ), signed where the format has -0."""
    if not flushes(fmt):
        return code
    zero = code & jnp.uint32(fmt.sign_mask) if fmt.has_neg_zero else jnp.zeros_like(code)
    return jnp.where(d.is_zero, zero, code)


def _magnitude(d, width):
    """(exponent of the leading bit, significand with its leading bit at ``width - 1``) of the
    finite magnitudes of ``d``; zero below every number, infinity above."""
    top = msb(d.sig)
    lead = d.exp + top
    sig = shl(d.sig, width - 1 - top)
    lead = jnp.where(d.is_zero, -(1 << 20), jnp.where(d.is_inf, 1 << 20, lead))
    return lead, jnp.where(d.is_zero | d.is_inf, 0, sig)


def value_less(da, db, width):
    """a's value below b's (non-NaN, not both zero; -0 below +0): the decoded values compared
    exactly, sign first, then the magnitudes' leading exponents, then their significands
    (each at most ``width`` bits)."""
    (ea, ma), (eb, mb) = _magnitude(da, width), _magnitude(db, width)
    below = (ea < eb) | ((ea == eb) & (ma < mb))
    above = (eb < ea) | ((ea == eb) & (mb < ma))
    return jnp.where(da.sign != db.sign, da.sign == 1, jnp.where(da.sign == 1, above, below))


def _nan(fmt, like):
    return jnp.full(like.shape, fmt.nan_code or 0, U32)


def _invalid(cond):
    """The flags (RISC-V fflags order, uint8): invalid where ``cond``."""
    return jnp.where(cond, jnp.uint8(int(Flag.NV)), jnp.uint8(0))


def _unit(compute):
    """``f(spec, inputs, want)`` from ``compute(spec, codes...) -> {port: array}``, jitted."""
    kernel = jax.jit(lambda spec, *codes: compute(spec, *(c.astype(U32) for c in codes)),
                     static_argnums=0)

    def unit(spec: NoncompSpec, inputs: dict, want=None) -> dict:
        names = [p.name for p in spec.inputs()]
        out = elementwise(lambda *codes: kernel(spec, *codes), [inputs[n] for n in names])
        return {p: out[p] for p in (want or out)}
    unit.__doc__ = compute.__doc__
    return unit


@_unit
def sgnj_unit(spec, a, b, op):
    """a's magnitude with the sign op selects (0: b's, 1: not b's, 2 and 3: a's xor b's);
    where the sign-only code is the NaN (fnuz, P3109) zero and NaN have no sign to change."""
    fmt = spec.fmt
    top = fmt.width - 1
    sa, sb = (a >> top) & 1, (b >> top) & 1
    sign = jnp.where(op == 0, sb, jnp.where(op == 1, sb ^ 1, sa ^ sb))
    y = (a & jnp.uint32(fmt.magnitude_mask)) | (sign << top)
    if not fmt.has_neg_zero:
        da = decode(a, fmt)
        y = jnp.where(da.is_zero | da.is_nan, a, y)
    return {"y": y.astype(code_dtype(fmt))}


@_unit
def classify_unit(spec, x):
    """One bit of the RISC-V fclass mask (rtl/noncomp.py CLASS_BITS)."""
    fmt = spec.fmt
    d = decode(x, fmt)
    neg = (d.sign == 1) & ~(d.is_zero & (not fmt.has_neg_zero))   # fnuz's one zero is +0
    finite = ~(d.is_nan | d.is_inf | d.is_zero)
    field0 = ((x & jnp.uint32(fmt.magnitude_mask)) >> fmt.man_bits) == 0
    sub = finite & field0 if fmt.has_subnormals else jnp.zeros_like(finite)
    normal = finite & ~sub
    qnan = d.is_nan & ~d.is_snan
    bits = [d.is_inf & neg, normal & neg, sub & neg, d.is_zero & neg,
            d.is_zero & ~neg, sub & ~neg, normal & ~neg, d.is_inf & ~neg, d.is_snan, qnan]
    y = sum(b.astype(U32) << i for i, b in enumerate(bits))
    return {"y": y.astype(jnp.uint16)}


def _minmax(spec, a, b, pick_a):
    fmt = spec.fmt
    da, db = decode(a, fmt), decode(b, fmt)
    a, b = flushed(a, da, fmt), flushed(b, db, fmt)
    ka, kb = order_key(a, fmt), order_key(b, fmt)
    y = jnp.where(pick_a(ka, kb), a, b)
    either = da.is_nan | db.is_nan
    if spec.minmax == "number":
        y = jnp.where(da.is_nan, b, jnp.where(db.is_nan, a, y))
        y = jnp.where(da.is_nan & db.is_nan, _nan(fmt, a), y)
    else:
        y = jnp.where(either, _nan(fmt, a), y)
    return {"y": y.astype(code_dtype(fmt)), "flags": _invalid(da.is_snan | db.is_snan)}


@_unit
def min_unit(spec, a, b):
    """The smaller of a and b (-0 < +0); a NaN operand by spec.minmax; invalid on sNaN."""
    return _minmax(spec, a, b, lambda ka, kb: ka < kb)


@_unit
def max_unit(spec, a, b):
    """The larger of a and b (-0 < +0); a NaN operand by spec.minmax; invalid on sNaN."""
    return _minmax(spec, a, b, lambda ka, kb: ka > kb)


@_unit
def cmp_unit(spec, a, b, signaling):
    """{unordered, le, lt, eq} (bit 3 .. 0); invalid on a signaling NaN, or on any NaN when
    ``signaling`` is 1."""
    fa, fb = spec.in_fmts
    da, db = decode(a, fa), decode(b, fb)
    un = da.is_nan | db.is_nan
    zeros = da.is_zero & db.is_zero                   # -0 == +0
    if spec.mixed:
        less = value_less(da, db, max(fa.precision, fb.precision))
        same = ~less & ~value_less(db, da, max(fa.precision, fb.precision))
    else:
        less, same = order_key(a, fa) < order_key(b, fa), a == b
    eq = ~un & (same | zeros)
    lt = ~un & ~zeros & less
    y = eq.astype(U32) | (lt.astype(U32) << 1) | ((eq | lt).astype(U32) << 2) | \
        (un.astype(U32) << 3)
    invalid = jnp.where(signaling == 1, un, da.is_snan | db.is_snan)
    return {"y": y.astype(jnp.uint8), "flags": _invalid(invalid)}

