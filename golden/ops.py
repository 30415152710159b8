"""Step 2: the exact cores (mul, add, fma, convert), and the jitted public operations.

Each operation is decode -> exact core -> ``round_raw`` (the one rounder) -> encode, the same
steps as rtl/fp_units. Cores keep every bit that can matter: products are exact (at most 48
bits); sums are formed in a frame with the larger addend's leading one at bit F, chosen so that
at least sr_bits + 2 exact bits lie below the result's LSB (docs/numerics.md section 1). Each
core computes in uint32 when its widths allow (8 lanes per AVX2 op), else uint64.
"""

from __future__ import annotations

import functools

from rtl.formats import FloatFormat, resolve
from rtl.options import Rounding, UnitOptions
from rtl.spec import UnitSpec

from ._jax import I32, U32, U64, any_below, jax, jnp, lax, msb, shl, shr
from .decode import Unpacked, decode
from .rounding import Mode, Raw, round_raw

def sum_frame(spec: UnitSpec) -> tuple[int, object]:
    """(F, dtype): the bit of the larger addend's leading one, and the integer width to use.

    A result's leading one is at F - 1 or above unless nothing was shifted out, so its LSB sits
    at F - p_out or above; F >= p_out + R + 2 leaves the R stochastic bits, the round bit and a
    guard bit exact. Addends (a whole fma product) must fit the frame too. Bit F + 1 is the carry.
    """
    R = spec.options.sr_bits if spec.rounding is Rounding.STOCHASTIC else 0
    widths = [f.precision for f in spec.in_fmts]
    if spec.unit == "fma":
        widths = [widths[0] + widths[1], widths[2]]
    F = max(spec.out_fmt.precision + R + 2, *widths)
    return (F, U32) if F <= 30 else (61, U64)


def core_dtype(spec: UnitSpec):
    if spec.unit in ("add", "fma"):
        return sum_frame(spec)[1]
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


def add_core(x: Raw, y: Raw, mode: Mode, frame_msb: int) -> Raw:
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
    exact_zero = (sig == 0) & ~lost
    # IEEE 754 6.3: an exact zero sum of opposite signs is +0, or -0 when rounding down.
    zero_sign = jnp.where(same, bsign, jnp.asarray(mode.is_(Rounding.RDN)).astype(U32))
    sign = jnp.where(exact_zero, zero_sign, bsign)

    inf_minus_inf = x.is_inf & y.is_inf & (x.sign != y.sign)
    is_nan = x.is_nan | y.is_nan | inf_minus_inf
    is_inf = (x.is_inf | y.is_inf) & ~is_nan
    inf_sign = jnp.where(x.is_inf, x.sign, y.sign)
    return Raw(sign=jnp.where(is_inf, inf_sign, sign).astype(U32), exp=be, sig=sig,
               sticky=lost, is_nan=is_nan, is_inf=is_inf,
               invalid=x.invalid | y.invalid | inf_minus_inf)


def as_raw(u: Unpacked) -> Raw:
    """A decoded operand as a raw (exact) value: the core of convert."""
    return Raw(sign=u.sign, exp=u.exp, sig=u.sig, sticky=jnp.zeros(u.sig.shape, bool),
               is_nan=u.is_nan, is_inf=u.is_inf, invalid=u.is_snan)


# ----- public operations ------------------------------------------------------------------------

def evaluate(spec: UnitSpec, *operands, rm=None, rbits=None, with_flags=True):
    """Run the golden model of a generated unit: the codes ``y`` and ``flags`` it must produce.

    Operands are arrays of codes (or scalars) that broadcast together (float arrays are read
    bit for bit, as their codes); ``rm`` (dynamic rounding,
    RISC-V codes) and ``rbits`` (stochastic) likewise. Returns (y, flags) -- codes in the
    narrowest unsigned dtype of the output format, flags uint8 in RISC-V fflags order -- or y
    alone with ``with_flags=False`` (faster: the flag logic is compiled away).
    """
    if len(operands) != len(spec.operands):
        raise ValueError(f"unit {spec.unit} takes operands {spec.operands}, got {len(operands)}")
    _check_mode_inputs(spec.options, rm, rbits)
    return _evaluate(spec, *[jnp.asarray(o) for o in operands], with_flags=with_flags,
                     rm=None if rm is None else jnp.asarray(rm),
                     rbits=None if rbits is None else jnp.asarray(rbits))


@functools.partial(jax.jit, static_argnums=0, static_argnames="with_flags")
def _evaluate(spec: UnitSpec, *operands, rm=None, rbits=None, with_flags=True):
    mode = Mode(spec.rounding, rm)
    dtype = core_dtype(spec)
    dec = [decode(_codes(o), f, dtype) for o, f in zip(operands, spec.in_fmts)]
    if spec.unit == "mul":
        raw = mul_core(*dec)
    elif spec.unit == "add":
        b = dec[1]._replace(sign=dec[1].sign ^ int(spec.subtract))
        raw = add_core(as_raw(dec[0]), as_raw(b), mode, sum_frame(spec)[0])
    elif spec.unit == "fma":
        raw = add_core(mul_core(dec[0], dec[1]), as_raw(dec[2]), mode, sum_frame(spec)[0])
    else:
        raw = as_raw(dec[0])
    y, flags = round_raw(raw, spec.out_fmt, spec.options, mode, rbits)
    return (y, flags) if with_flags else y


def _codes(x):
    """The codes of an operand: float arrays (quantize's inputs) are read bit for bit. Done here,
    the bitcast fuses into the kernel; outside the jit it is a pass over memory of its own."""
    if jnp.issubdtype(x.dtype, jnp.floating):
        return lax.bitcast_convert_type(x, jnp.dtype(f"uint{8 * x.dtype.itemsize}"))
    return x.astype(U32)


def _check_mode_inputs(opts: UnitOptions, rm, rbits):
    if opts.rounding is Rounding.DYNAMIC and rm is None:
        raise ValueError("rounding 'dynamic' needs rm (an array of RISC-V rounding codes 0..4)")
    if opts.rounding is not Rounding.DYNAMIC and rm is not None:
        raise ValueError(f"rm is only used with rounding 'dynamic', not {opts.rounding.value!r}")
    if opts.rounding is Rounding.STOCHASTIC and rbits is None:
        raise ValueError("rounding 'stochastic' needs rbits (an array of random integers)")
    if opts.rounding is not Rounding.STOCHASTIC and rbits is not None:
        raise ValueError(f"rbits is only used with rounding 'stochastic', not "
                         f"{opts.rounding.value!r}")


def _spec(unit, fmts, fmt_out, rounding, saturate, sr_bits, subtract=False):
    fmts = [None if f is None else resolve(f) for f in fmts]
    first = fmts[0]
    fmts = [first if f is None else f for f in fmts]
    out = first if fmt_out is None else resolve(fmt_out)
    opts = UnitOptions(rounding=rounding, saturate=saturate, sr_bits=sr_bits)
    # Formats carry their own flushing; UnitSpec(subnormals=True) leaves them as given.
    return UnitSpec(unit, out, tuple(fmts), opts, subtract=subtract)


def _resolve_opt(f):
    return None if f is None else resolve(f)


def mul(a, b, fmt_a, fmt_b=None, fmt_out=None, *, rounding="rne", saturate=False, rm=None,
        rbits=None, sr_bits=8):
    """a * b, rounded once into fmt_out. Returns (codes, flags) as uint32 arrays."""
    spec = _spec("mul", [fmt_a, _resolve_opt(fmt_b)], fmt_out, rounding, saturate, sr_bits)
    return evaluate(spec, a, b, rm=rm, rbits=rbits)


def add(a, b, fmt_a, fmt_b=None, fmt_out=None, *, rounding="rne", saturate=False, rm=None,
        rbits=None, sr_bits=8):
    """a + b, rounded once into fmt_out."""
    spec = _spec("add", [fmt_a, _resolve_opt(fmt_b)], fmt_out, rounding, saturate, sr_bits)
    return evaluate(spec, a, b, rm=rm, rbits=rbits)


def sub(a, b, fmt_a, fmt_b=None, fmt_out=None, *, rounding="rne", saturate=False, rm=None,
        rbits=None, sr_bits=8):
    """a - b, rounded once into fmt_out."""
    spec = _spec("add", [fmt_a, _resolve_opt(fmt_b)], fmt_out, rounding, saturate, sr_bits,
                 subtract=True)
    return evaluate(spec, a, b, rm=rm, rbits=rbits)


def fma(a, b, c, fmt_a, fmt_b=None, fmt_c=None, fmt_out=None, *, rounding="rne",
        saturate=False, rm=None, rbits=None, sr_bits=8):
    """a * b + c with a single rounding into fmt_out."""
    spec = _spec("fma", [fmt_a, _resolve_opt(fmt_b), _resolve_opt(fmt_c)], fmt_out, rounding,
                 saturate, sr_bits)
    return evaluate(spec, a, b, c, rm=rm, rbits=rbits)


def convert(x, fmt_in, fmt_out, *, rounding="rne", saturate=False, rm=None, rbits=None,
            sr_bits=8):
    """Convert codes of fmt_in into fmt_out (quantize, widen, or narrow <-> narrow)."""
    spec = _spec("cvt", [fmt_in], fmt_out, rounding, saturate, sr_bits)
    return evaluate(spec, x, rm=rm, rbits=rbits)
