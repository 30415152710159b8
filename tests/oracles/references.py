"""Third-party references: ml_dtypes (values, round to nearest even only), Berkeley SoftFloat via
softfloatpy (float16 / float32 / bfloat16, five IEEE modes, flags) and MPFR via gmpy2 (any
IEEE-style binary format, four directed/nearest modes).

Each returns (codes, flags) arrays like the candidates; ml_dtypes has no flags (None).
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

import gmpy2
import ml_dtypes
import numpy as np
import softfloatpy as sf

from fpforge.rtl.formats import CATALOG, FloatFormat
from fpforge.rtl.format_names import resolve

# ----- ml_dtypes ---------------------------------------------------------------------------------

NUMPY_TYPES = {"float16": np.float16, "float32": np.float32}
ML_NAMES = [n for n in CATALOG if n in NUMPY_TYPES or hasattr(ml_dtypes, n)]
ML_SMALL = [n for n in ML_NAMES if CATALOG[n].width <= 8]


def ml_type(name: str):
    return NUMPY_TYPES.get(name) or getattr(ml_dtypes, name)


def _storage(name):
    w = CATALOG[name].width
    return np.uint8 if w <= 8 else np.uint16 if w <= 16 else np.uint32


def ml_decode(codes, name) -> np.ndarray:
    """Codes -> float32 values through ml_dtypes."""
    return np.asarray(codes).astype(_storage(name)).view(ml_type(name)).astype(np.float32)


def ml_encode(values, name) -> np.ndarray:
    """float32 values -> codes through ml_dtypes' own cast (round to nearest even)."""
    fmt = CATALOG[name]
    with np.errstate(over="ignore", invalid="ignore"):
        out = np.asarray(values, np.float32).astype(ml_type(name)).view(_storage(name))
    return out.astype(np.int64) & ((1 << fmt.width) - 1)


def f32_bits(values) -> np.ndarray:
    return np.asarray(values, np.float32).view(np.uint32).astype(np.int64)


# ----- SoftFloat -------------------------------------------------------------------------------

SF_MODES = {"rne": sf.RoundingMode.NEAR_EVEN, "rtz": sf.RoundingMode.MIN_MAG,
            "rdn": sf.RoundingMode.MIN, "rup": sf.RoundingMode.MAX,
            "rna": sf.RoundingMode.NEAR_MAX_MAG}
_SF_TYPES = {"float16": sf.Float16, "float32": sf.Float32, "bfloat16": sf.BFloat16}
_SF_PREFIX = {"float16": "f16", "float32": "f32", "bfloat16": "bf16"}


def _sf_obj(code, name):
    t = _SF_TYPES[name]
    return t.from_bytes(int(code).to_bytes(CATALOG[name].width // 8, "big"))


def softfloat_apply(op, *operands, fmts, rounding="rne", tininess="after"):
    """SoftFloat with tininess after rounding (or ``before``); softfloat's flag bits are
    RISC-V's order."""
    names = [resolve(f).name for f in fmts]
    if op == "convert":
        fn = getattr(sf, f"{_SF_PREFIX[names[0]]}_to_{_SF_PREFIX[names[1]]}")
    else:
        assert len(set(names)) == 1, "softfloat ops take one format"
        fn = getattr(sf, f"{_SF_PREFIX[names[0]]}_{ {'fma': 'mul_add'}.get(op, op)}")
    sf.set_rounding_mode(SF_MODES[rounding])
    sf.set_tininess_mode({"after": sf.TininessMode.AFTER_ROUNDING,
                          "before": sf.TininessMode.BEFORE_ROUNDING}[tininess])
    arrays = [np.asarray(o).ravel() for o in operands]
    codes = np.empty(arrays[0].size, np.int64)
    flags = np.empty(arrays[0].size, np.int64)
    for i in range(arrays[0].size):
        objs = [_sf_obj(a[i], n) for a, n in zip(arrays, names)]
        sf.set_exception_flags(0)
        r = fn(*objs)
        flags[i] = int(sf.get_exception_flags())
        codes[i] = int.from_bytes(r.to_bytes(), "big")
    sf.set_rounding_mode(sf.RoundingMode.NEAR_EVEN)
    shape = np.shape(operands[0])
    return codes.reshape(shape), flags.reshape(shape)


# ----- MPFR ------------------------------------------------------------------------------------

MPFR_MODES = {"rne": gmpy2.RoundToNearest, "rtz": gmpy2.RoundToZero, "rup": gmpy2.RoundUp,
              "rdn": gmpy2.RoundDown}
_BIG = 1 << 20


@lru_cache(maxsize=None)
def _value_to_code(fmt: FloatFormat) -> dict:
    table = {}
    for code in range(1 << fmt.width):
        if fmt.classify(code) in ("zero", "subnormal", "normal"):
            v = fmt.code_value(code)
            neg = bool(code & fmt.sign_mask)
            table.setdefault((Fraction(v), neg if v == 0 else False), code)
    return table


def _mpfr_exact(code, fmt: FloatFormat):
    v = fmt.code_value(int(code))
    with gmpy2.context(precision=64, emin=-_BIG, emax=_BIG):
        if isinstance(v, float):                 # +-0.0 as float, inf
            return gmpy2.mpfr(v)
        return gmpy2.mpfr(v.numerator) / v.denominator   # exact: power-of-two denominator


def mpfr_apply(op, *operands, fmts, rounding="rne"):
    """Round with MPFR: precision M+1, subnormals via subnormalize, emax of the format.

    Returns (codes, flags) and a boolean array ``covered``: MPFR's overflow model (the whole top
    binade finite) is right only for IEEE-style outputs, so results past max_finite in other
    formats are left to the exact oracle.
    """
    fo = resolve(fmts[-1])
    ins = [resolve(f) for f in fmts[:-1]]
    p = fo.precision
    sub_ctx = gmpy2.context(precision=p, emin=fo.emin - fo.man_bits + 1,
                            emax=fo.emax + 1 if fo.has_inf else _BIG,
                            subnormalize=True, round=MPFR_MODES[rounding])
    wide_ctx = gmpy2.context(precision=p, emin=-_BIG, emax=_BIG, round=MPFR_MODES[rounding])
    table = _value_to_code(fo)
    arrays = [np.asarray(o).ravel() for o in operands]
    n = arrays[0].size
    codes = np.zeros(n, np.int64)
    flags = np.zeros(n, np.int64)
    covered = np.ones(n, bool)
    for i in range(n):
        xs = [_mpfr_exact(a[i], f) for a, f in zip(arrays, ins)]
        results = []
        for ctx in (sub_ctx, wide_ctx):
            ctx.clear_flags()
            with gmpy2.context(ctx) as c:        # a copy of ctx, current inside the block
                if op == "mul":
                    y = c.mul(xs[0], xs[1])
                elif op == "add":
                    y = c.add(xs[0], xs[1])
                elif op == "sub":
                    y = c.sub(xs[0], xs[1])
                elif op == "fma":
                    y = c.fma(xs[0], xs[1], xs[2])
                else:
                    y = c.plus(xs[0])
                results.append((y, c.inexact, c.overflow))
        (y, inexact, overflow), (y_wide, _, _) = results
        f = int(bool(inexact))
        if gmpy2.is_infinite(y) or overflow:
            f |= 4 | 1
        tiny = (not gmpy2.is_zero(y_wide)) and abs(y_wide) < gmpy2.mpfr(2) ** fo.emin
        if tiny and inexact:
            f |= 2
        flags[i] = f
        if gmpy2.is_infinite(y):
            codes[i] = fo.inf_code | (fo.sign_mask if y < 0 else 0)
            continue
        value = Fraction(*y.as_integer_ratio()) if not gmpy2.is_zero(y) else Fraction(0)
        if abs(value) > fo.max_finite:
            covered[i] = False
            continue
        key = (value, bool(gmpy2.is_signed(y)) if value == 0 else False)
        if key not in table:            # -0 in a format without -0
            key = (value, False)
        codes[i] = table[key]
    shape = np.shape(operands[0])
    return codes.reshape(shape), flags.reshape(shape), covered.reshape(shape)
