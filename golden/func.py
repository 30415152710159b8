"""The golden functions of recip, rsqrt and exp2 (rtl/func.py), integer-exact.

A format of at most 16 bits has at most 2^16 codes, so the exact core is a table over every
code, built once per (function, format, accuracy) in Python integers and looked up in JAX:

1. decode each code into its exact value (``FloatFormat.code_value``, a Fraction);
2. the exact result truncated to P = 40 significant bits with an exact sticky bit: 1/x by
   integer division, 1/sqrt(x) by ``math.isqrt`` (the sticky from squaring back), 2^x = 2^i 2^f
   by an integer series with proven bounds (:func:`_exp2_bounds`; 2^f is irrational for
   0 < f < 1, so the sticky is 1 there); faithful truncates further to the result's precision
   p, what its datapath keeps;
3. ``round_raw`` (the one rounder) in the spec's mode, with divide-by-zero ORed in.

The tables are independent of rtl/fp_units/func.py's (a different algorithm for every entry),
and tests/sim/test_func.py checks them against MPFR.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np

from fpforge.rtl.formats import FloatFormat
from fpforge.rtl.func import FuncSpec

from ._jax import I32, U32, U64, jax, jnp
from .buckets import elementwise
from .rounding import Mode, Raw, round_raw, rounding_case

__all__ = ["recip_unit", "rsqrt_unit", "exp2_unit", "exact_raw", "P"]

P = 40                       # significant bits of the exact core (more than any mode reads)
_BIG = 5000                  # |exponent| of 2^x for |x| >= 2^12: beyond every format


def _trunc(r: Fraction) -> tuple[int, int, bool]:
    """(exp, sig, sticky): r > 0 as (sig + f) 2^exp, sig of P bits, sticky = f > 0."""
    e = r.numerator.bit_length() - r.denominator.bit_length()
    if Fraction(2) ** e > r:
        e -= 1                                       # now 2^e <= r < 2^(e+1)
    exp = e - (P - 1)
    scaled = r / Fraction(2) ** exp
    sig = scaled.numerator // scaled.denominator
    return exp, sig, sig != scaled


def _rsqrt(v: Fraction) -> tuple[int, int, bool]:
    """1/sqrt(v) for v > 0: sig = isqrt(floor(2^(-2 exp) / v)) (floor of a root of a floor is
    the floor of the root)."""
    t = 1 / v
    e = t.numerator.bit_length() - t.denominator.bit_length()   # 2^(e-1) < t < 2^(e+1)
    exp = (e - 1) // 2 - (P - 1)
    while True:
        scaled = t / Fraction(4) ** exp                       # sig^2 <= scaled
        sig = math.isqrt(scaled.numerator // scaled.denominator)
        if sig >> P:
            exp += 1
        elif not sig >> (P - 1):
            exp -= 1
        else:
            return exp, sig, sig * sig != scaled


def _ln2_bounds(K: int) -> tuple[int, int]:
    """ln 2 = sum_k 1/(k 2^k), scaled by 2^K: (lower, upper). Floors and ceilings of the
    first N terms, plus the tail sum_{k>N} 1/(k 2^k) < 2^-N < 2^-K for the upper bound."""
    N = K + 4
    lo = sum((1 << K) // (k << k) for k in range(1, N + 1))
    hi = sum(-(-(1 << K) // (k << k)) for k in range(1, N + 1)) + 1
    return lo, hi


def _exp_series(t: int, K: int, up: bool) -> int:
    """exp(t / 2^K) scaled by 2^K, 0 <= t < 2^K: a lower bound (terms floored, series cut:
    every term is positive) or an upper bound (terms ceiled, plus the cut tail, at most the
    last term: each term is below half the previous one once k >= 2)."""
    one = 1 << K
    total, term, k = one, one, 1
    while term:
        term = -(-term * t // (k * one)) if up else term * t // (k * one)
        total += term
        k += 1
        if up and term <= 1:
            return total + 2
    return total


@functools.lru_cache(maxsize=4)
def _ln2(K: int):
    return _ln2_bounds(K)


def _exp2_bounds(f: Fraction, K: int) -> tuple[int, int]:
    """2^f scaled by 2^K, 0 < f < 1 dyadic: (lower, upper), with f ln 2 bounded first."""
    lo2, hi2 = _ln2(K)
    a, b = f.numerator, f.denominator
    return (_exp_series(a * lo2 // b, K, False), _exp_series(-(-a * hi2 // b), K, True))


def _exp2(x: Fraction) -> tuple[int, int, bool]:
    if x >= 4096:
        return _BIG, 1 << (P - 1), True
    if x <= -4096:
        return -_BIG, 1 << (P - 1), True
    i = math.floor(x)
    f = x - i
    if f == 0:
        return i - (P - 1), 1 << (P - 1), False
    K = 2 * P + 32
    while True:
        lo, hi = _exp2_bounds(f, K)
        s_lo, s_hi = lo >> (K - P + 1), hi >> (K - P + 1)      # 2^f 2^(P-1), floored
        if s_lo == s_hi:
            return i - (P - 1), s_lo, True
        K *= 2                     # too close to a boundary for these bounds: more bits


_EXACT = {
    "recip": lambda v: _trunc(1 / v),
    "rsqrt": _rsqrt,
    "exp2": _exp2,
}


def exact_raw(unit: str, fmt: FloatFormat, code: int) -> dict:
    """The exact core of ``unit`` at one code: sign, exp, sig (P bits), sticky, is_nan,
    is_inf, invalid (an invalid operation or a signaling NaN), dz (divide by zero)."""
    cls = fmt.classify(code)
    v = fmt.code_value(code)
    neg = bool(code & fmt.sign_mask) if fmt.signed else False
    out = dict(sign=0, exp=0, sig=0, sticky=False, is_nan=False, is_inf=False,
               invalid=cls == "snan", dz=False)
    if cls in ("nan", "snan"):
        return out | dict(is_nan=True)
    if unit == "exp2":
        if cls == "inf":
            return out | dict(is_inf=not neg)               # 2^-inf = +0
        if cls == "zero":
            return out | dict(exp=-(P - 1), sig=1 << (P - 1))
        exp, sig, sticky = _exp2(v)
        return out | dict(exp=exp, sig=sig, sticky=sticky)
    if unit == "rsqrt" and neg and cls != "zero":
        return out | dict(is_nan=True, invalid=True)        # sqrt of a negative number
    if cls == "inf":
        return out | dict(sign=int(neg))                    # +-0 (rsqrt: +0)
    if cls == "zero":
        return out | dict(sign=int(neg), is_inf=True, dz=True)
    exp, sig, sticky = _EXACT[unit](abs(v))
    return out | dict(sign=int(neg), exp=exp, sig=sig, sticky=sticky)


@functools.lru_cache(maxsize=16)
def _table(unit: str, fmt: FloatFormat, accuracy: str) -> dict:
    """The exact core over every code, as numpy arrays; faithful keeps p bits of it."""
    rows = [exact_raw(unit, fmt, c) for c in range(1 << fmt.width)]
    cols = {k: np.array([r[k] for r in rows], dtype=np.int64 if k == "exp" else
                        np.uint64 if k == "sig" else np.uint32 if k == "sign" else bool)
            for k in rows[0]}
    if accuracy == "faithful":
        drop = P - fmt.precision
        low = cols["sig"] & np.uint64((1 << drop) - 1)
        cols["sig"] = cols["sig"] >> np.uint64(drop)
        cols["exp"] = np.where(cols["sig"] != 0, cols["exp"] + drop, cols["exp"])
        cols["sticky"] = cols["sticky"] | (low != 0)
    cols["exp"] = cols["exp"].astype(np.int32)
    return cols


def _raw(t: dict) -> Raw:
    return Raw(sign=t["sign"].astype(U32), exp=t["exp"].astype(I32), sig=t["sig"].astype(U64),
               sticky=t["sticky"], is_nan=t["is_nan"], is_inf=t["is_inf"],
               invalid=t["invalid"], divzero=t["dz"])


@functools.partial(jax.jit, static_argnums=0)
def _kernel(spec: FuncSpec, tab: dict, x, rm, rbits):
    t = {k: v[x.astype(U32)] for k, v in tab.items()}
    return round_raw(_raw(t), spec.out_fmt, spec.options, Mode(spec.rounding, rm), rbits)


@functools.partial(jax.jit, static_argnums=0)
def _case_kernel(fmt: FloatFormat, tab: dict, x):
    return rounding_case(_raw({k: v[x.astype(U32)] for k, v in tab.items()}), fmt)


def _unit(unit: str):
    def tables(spec: FuncSpec) -> dict:
        return {k: jnp.asarray(v) for k, v in _table(unit, spec.in_fmts[0],
                                                     spec.accuracy).items()}

    def golden(spec: FuncSpec, inputs: dict, want=("y", "flags")) -> dict:
        numerics, tab = spec.numerics(), tables(spec)
        y, flags = elementwise(lambda *arrays: _kernel(numerics, tab, *arrays),
                               [inputs["x"], inputs.get("rm"), inputs.get("rbits")])
        return {p: {"y": y, "flags": flags}[p] for p in want}

    def rounding_cases(spec: FuncSpec, inputs: dict):
        """golden/rounding.py's CASE_* bits of each exact result (sim/classes.py)."""
        tab = tables(spec)
        return elementwise(lambda x: _case_kernel(spec.out_fmt, tab, x), [inputs["x"]])
    golden.__doc__ = f"{unit} of x over its code table, rounded by the one rounder."
    golden.rounding_cases = rounding_cases
    return golden


recip_unit = _unit("recip")
rsqrt_unit = _unit("rsqrt")
exp2_unit = _unit("exp2")
