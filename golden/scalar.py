"""Step 2: the exact cores of the scalar kinds (rtl/scalar.py), their golden functions
(rtl/kinds.py names them) and the public operations built on them.

Each operation is decode -> exact core -> ``round_raw`` (the one rounder) -> encode, the same
steps as rtl/fp_units. Cores keep every bit that can matter: products are exact (at most 48
bits); sums are formed in a frame with the larger addend's leading one at bit F, chosen so that
at least sr_bits + 2 exact bits lie below the result's LSB (docs/numerics.md section 1). Each
core computes in uint32 when its widths allow (8 lanes per AVX2 op), else uint64.
"""

from __future__ import annotations

import functools

from fpforge.rtl.format_names import resolve
from fpforge.rtl.options import UnitOptions
from fpforge.rtl.scalar import AddSpec, CvtSpec, FmaSpec, MulSpec, ScalarSpec, SubSpec

from ._jax import I32, U32, U64, any_below, jax, jnp, lax, msb, shl, shr
from .buckets import elementwise
from .decode import Unpacked, decode
from .model import evaluate
from .rounding import Mode, Raw, cuts_by_field, round_float, round_raw, rounding_case


def sum_frame(spec: ScalarSpec, addends) -> tuple[int, object]:
    """(F, dtype): the bit of the larger addend's leading one, and the integer width to use.

    A result's leading one is at F - 1 or above unless nothing was shifted out, so its LSB sits
    at F - p_out or above; F >= p_out + R + 2 leaves the R stochastic bits, the round bit and a
    guard bit exact. Addends (``addends(precisions)``: a whole fma product is one) must fit the
    frame too. Bit F + 1 is the carry.
    """
    R = spec.rounding.exact_bits(spec.options.sr_bits)
    widths = addends([f.precision for f in spec.in_fmts])
    F = max(spec.out_fmt.precision + R + 2, *widths)
    return (F, U32) if F <= 30 else (61, U64)


def core_dtype(spec: ScalarSpec, addends):
    if addends is not None:
        return sum_frame(spec, addends)[1]
    bits = sum(f.precision for f in spec.in_fmts)     # a product's width, or one operand
    return U32 if bits <= 32 else U64


def mul_core(a: Unpacked, b: Unpacked) -> Raw:
    invalid_op = (a.is_inf & b.is_zero) | (a.is_zero & b.is_inf)
    is_nan = a.is_nan | b.is_nan | invalid_op
    return Raw(sign=a.sign ^ b.sign, exp=a.exp + b.exp, sig=a.sig * b.sig,
               sticky=jnp.zeros(a.sig.shape, bool), is_nan=is_nan,
               is_inf=(a.is_inf | b.is_inf) & ~is_nan,
               invalid=invalid_op | a.is_snan | b.is_snan)


def _normalize(sig, exp, frame_msb):
    """Shift a nonzero significand so its leading one sits at ``frame_msb``."""
    n = jnp.where(sig == 0, 0, frame_msb - msb(sig))
    return shl(sig, n), exp - n


def add_core(x: Raw, y: Raw, frame_msb: int) -> Raw:
    """Exact x + y (x may itself be an exact product), kept in a frame plus sticky."""
    xs, xe = _normalize(x.sig, x.exp.astype(I32), frame_msb)
    ys, ye = _normalize(y.sig, y.exp.astype(I32), frame_msb)
    # Order by magnitude: zeros are smallest; otherwise exponent, then significand.
    y_bigger = (xs == 0) | ((ys != 0) & ((ye > xe) | ((ye == xe) & (ys > xs))))
    bs, be, bsign = (jnp.where(y_bigger, ys, xs), jnp.where(y_bigger, ye, xe),
                     jnp.where(y_bigger, y.sign, x.sign))
    ss, se, ssign = (jnp.where(y_bigger, xs, ys), jnp.where(y_bigger, xe, ye),
                     jnp.where(y_bigger, x.sign, y.sign))
    d = jnp.where(ss == 0, 0, be - se)
    small = shr(ss, d)
    lost = any_below(ss, d)
    same = bsign == ssign
    # Subtracting a value whose low bits were cut: floor(big - small) = big - small_hi - 1.
    sig = jnp.where(same, bs + small, bs - small - lost.astype(bs.dtype))

    inf_minus_inf = x.is_inf & y.is_inf & (x.sign != y.sign)
    is_nan = x.is_nan | y.is_nan | inf_minus_inf
    is_inf = (x.is_inf | y.is_inf) & ~is_nan
    inf_sign = jnp.where(x.is_inf, x.sign, y.sign)
    # A sum of opposite signs that vanishes is +0 (-0 rounding down): the rounder's rule, as in
    # the RTL; zeros of one sign keep it.
    return Raw(sign=jnp.where(is_inf, inf_sign, bsign).astype(U32), exp=be, sig=sig,
               sticky=lost, is_nan=is_nan, is_inf=is_inf,
               invalid=x.invalid | y.invalid | inf_minus_inf, cancels=~same)


def as_raw(u: Unpacked) -> Raw:
    """A decoded operand as a raw (exact) value: the core of convert."""
    return Raw(sign=u.sign, exp=u.exp, sig=u.sig, sticky=jnp.zeros(u.sig.shape, bool),
               is_nan=u.is_nan, is_inf=u.is_inf, invalid=u.is_snan)


# ----- the golden functions of the scalar kinds --------------------------------------------------

def scalar_unit(*, addends=None):
    """Make the golden function of a scalar kind from its exact core, ``core(spec, operands,
    frame)`` (decoded operands -> Raw): ``f(spec, inputs, want) -> {"y": codes, "flags": flags}``.
    ``addends(precisions)`` gives the widths of the addends of the core's sum (a whole product
    is one), which size the sum's frame (``frame`` is its top bit); None: the core is no sum.

    Operands are arrays of codes (or scalars) that broadcast together; float arrays are read bit
    for bit, as their codes (quantize's inputs); ``rm`` (RISC-V codes) and ``rbits`` likewise.
    The kernel runs on golden/buckets.py's canonical shapes: one compilation serves many lengths.
    Codes come back in the narrowest unsigned dtype of the output format, flags as uint8 in
    RISC-V fflags order. Without ``flags`` in ``want`` the flag logic is compiled away.
    """
    def wrap(core):
        def unit(spec: ScalarSpec, inputs: dict, want=("y", "flags")) -> dict:
            with_flags = "flags" in want
            n = len(spec.operands)

            def run(*arrays):
                return _kernel(spec, core, addends, with_flags, arrays[:n], *arrays[n:])
            out = elementwise(run, [*(inputs[p] for p in spec.operands), inputs.get("rm"),
                                    inputs.get("rbits")], bits=range(n))
            outs = {"y": out[0], "flags": out[1]} if with_flags else {"y": out}
            return {p: outs[p] for p in want}
        unit.__doc__ = core.__doc__
        unit.core, unit.addends = core, addends
        return unit
    return wrap


def _exact(spec: ScalarSpec, core, addends, operands) -> Raw:
    """Steps 1 and 2: decode the operands and form the exact result."""
    dec = [decode(_codes(o), f, core_dtype(spec, addends))
           for o, f in zip(operands, spec.in_fmts)]
    frame = sum_frame(spec, addends)[0] if addends is not None else None
    return core(spec, dec, frame)


@functools.partial(jax.jit, static_argnums=(0, 1, 2, 3))
def _kernel(spec: ScalarSpec, core, addends, with_flags: bool, operands, rm, rbits):
    mode = Mode(spec.rounding, rm)
    src = spec.in_fmts[0]
    if core is cvt_unit.core and not with_flags and cuts_by_field(src, spec.out_fmt):
        # A narrowing convert needs no search for the leading one (round_float).
        return round_float(_codes(operands[0]), src, spec.out_fmt, spec.options, mode, rbits)
    y, flags = round_raw(_exact(spec, core, addends, operands), spec.out_fmt, spec.options,
                         mode, rbits)
    return (y, flags) if with_flags else y


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def _case_kernel(spec: ScalarSpec, core, addends, operands):
    return rounding_case(_exact(spec, core, addends, operands), spec.out_fmt)


def rounding_cases(spec: ScalarSpec, inputs: dict):
    """Where each exact result of the scalar unit ``spec`` lies between its neighbours in the
    output format: golden/rounding.py's CASE_* bits (uint8), read at the rounder's own cut, the
    same for every rounding mode (so ``rm`` and ``rbits`` are not needed). The verdict's
    classes (sim/classes.py) use it to name exact ties and the subnormal/normal boundary."""
    from fpforge.rtl.kinds import golden_function
    unit = golden_function(spec)
    if hasattr(unit, "rounding_cases"):           # a kind whose exact core is its own
        return unit.rounding_cases(spec, inputs)
    spec = spec.numerics()
    return elementwise(lambda *ops: _case_kernel(spec, unit.core, unit.addends, ops),
                       [inputs[p] for p in spec.operands], bits=range(len(spec.operands)))


def _two(p):
    return p


def _product_then_one(p):
    return [p[0] + p[1], p[2]]


@scalar_unit()
def mul_unit(spec, ops, frame):
    """a * b: the exact product."""
    return mul_core(*ops)


@scalar_unit(addends=_two)
def add_unit(spec, ops, frame):
    """a + b: the exact sum in a frame plus a sticky bit."""
    return add_core(as_raw(ops[0]), as_raw(ops[1]), frame)


@scalar_unit(addends=_two)
def sub_unit(spec, ops, frame):
    """a - b: the sum with b's sign flipped."""
    b = ops[1]._replace(sign=ops[1].sign ^ 1)
    return add_core(as_raw(ops[0]), as_raw(b), frame)


@scalar_unit(addends=_product_then_one)
def fma_unit(spec, ops, frame):
    """a * b + c: the exact product is the first addend of the sum."""
    return add_core(mul_core(ops[0], ops[1]), as_raw(ops[2]), frame)


@scalar_unit(addends=_product_then_one)
def fms_unit(spec, ops, frame):
    """a * b - c: the fma's sum with c's sign flipped."""
    c = ops[2]._replace(sign=ops[2].sign ^ 1)
    return add_core(mul_core(ops[0], ops[1]), as_raw(c), frame)


@scalar_unit()
def cvt_unit(spec, ops, frame):
    """x: the decoded operand itself."""
    return as_raw(ops[0])


def _codes(x):
    """The codes of an operand: float arrays (quantize's inputs) are read bit for bit. Done here,
    the bitcast fuses into the kernel; outside the jit it is a pass over memory of its own."""
    if jnp.issubdtype(x.dtype, jnp.floating):
        return lax.bitcast_convert_type(x, jnp.dtype(f"uint{8 * x.dtype.itemsize}"))
    return x.astype(U32)


# ----- public operations ------------------------------------------------------------------------

def _scalar(cls, fmts, fmt_out, rounding, saturate: dict, sr_bits, a, rm, rbits, *operands):
    fmts = [None if f is None else resolve(f) for f in fmts]
    fmts = [fmts[0] if f is None else f for f in fmts]
    out = fmts[0] if fmt_out is None else resolve(fmt_out)
    opts = UnitOptions(rounding=rounding, sr_bits=sr_bits, **saturate)
    # Formats carry their own flushing; subnormals=True leaves them as given.
    spec = cls(out, tuple(fmts), opts)
    inputs = dict(zip(spec.operands, (a, *operands)))
    if rm is not None:
        inputs["rm"] = rm
    if rbits is not None:
        inputs["rbits"] = rbits
    out = evaluate(spec, **inputs)
    return out["y"], out["flags"]


def mul(a, b, fmt_a, fmt_b=None, fmt_out=None, *, rounding="rne", saturate=False, saturation=None, rm=None,
        rbits=None, sr_bits=8):
    """a * b, rounded once into fmt_out. Returns (codes, flags): codes in the narrowest
    unsigned dtype of fmt_out, flags uint8."""
    return _scalar(MulSpec, [fmt_a, fmt_b], fmt_out, rounding,
                   dict(saturate=saturate, saturation=saturation), sr_bits, a, rm, rbits,
                   b)


def add(a, b, fmt_a, fmt_b=None, fmt_out=None, *, rounding="rne", saturate=False, saturation=None, rm=None,
        rbits=None, sr_bits=8):
    """a + b, rounded once into fmt_out."""
    return _scalar(AddSpec, [fmt_a, fmt_b], fmt_out, rounding,
                   dict(saturate=saturate, saturation=saturation), sr_bits, a, rm, rbits,
                   b)


def sub(a, b, fmt_a, fmt_b=None, fmt_out=None, *, rounding="rne", saturate=False, saturation=None, rm=None,
        rbits=None, sr_bits=8):
    """a - b, rounded once into fmt_out."""
    return _scalar(SubSpec, [fmt_a, fmt_b], fmt_out, rounding,
                   dict(saturate=saturate, saturation=saturation), sr_bits, a, rm, rbits,
                   b)


def fma(a, b, c, fmt_a, fmt_b=None, fmt_c=None, fmt_out=None, *, rounding="rne",
        saturate=False, saturation=None, rm=None, rbits=None, sr_bits=8):
    """a * b + c with a single rounding into fmt_out."""
    return _scalar(FmaSpec, [fmt_a, fmt_b, fmt_c], fmt_out, rounding,
                   dict(saturate=saturate, saturation=saturation), sr_bits, a, rm,
                   rbits, b, c)


def convert(x, fmt_in, fmt_out, *, rounding="rne", saturate=False, saturation=None, rm=None, rbits=None,
            sr_bits=8):
    """Convert codes of fmt_in into fmt_out (quantize, widen, or narrow <-> narrow)."""
    return _scalar(CvtSpec, [fmt_in], fmt_out, rounding,
                   dict(saturate=saturate, saturation=saturation), sr_bits, x, rm, rbits)
