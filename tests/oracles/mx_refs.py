"""References for the MX tests: torchao's mx_formats, gfloat, and a plain-Python exact model.

Written from the specifications and the references' documented behaviour, not from golden/mx.py
or golden/dot.py: the Fraction model below rounds with its own code, so agreeing with it means
something.
"""

from __future__ import annotations

import importlib.util
import os
import warnings
from fractions import Fraction

import numpy as np
import pytest

from fpforge.rtl.formats import CATALOG, FloatFormat
from fpforge.rtl.format_names import resolve

os.environ.setdefault("TORCHINDUCTOR_DISABLE", "1")

ELEMS = ("fp8e4m3", "fp8e5m2", "fp6e3m2", "fp6e2m3", "fp4e2m1", "mxint8", "binary8p4se",
         "binary8p3se", "binary4p2sf", "int4", "fp8e4m3fnuz", "fp8e5m2fnuz")
FP_ELEMS = ELEMS[:5]         # the OCP FP ones: what torchao knows
OCP_ELEMS = ELEMS[:6]        # and MXINT8: what gfloat knows
RULES = ("floor", "ceil", "rceil", "even", "vllm")

# Grids of the element values, from the catalog (MXINT8: int8 / 64, symmetric, two's complement).
GRID = {"fp8e4m3": CATALOG["float8_e4m3fn"], "fp8e5m2": CATALOG["float8_e5m2"],
        "fp6e3m2": CATALOG["float6_e3m2fn"], "fp6e2m3": CATALOG["float6_e2m3fn"],
        "fp4e2m1": CATALOG["float4_e2m1fn"], "binary8p4se": resolve("binary8p4se"),
        "binary8p3se": resolve("binary8p3se"), "binary4p2sf": resolve("binary4p2sf"),
        "fp8e4m3fnuz": CATALOG["float8_e4m3fnuz"], "fp8e5m2fnuz": CATALOG["float8_e5m2fnuz"]}
# emax_elem: the exponent of the largest power of two each holds (P3109: Binary8p4se max 224 =
# 1.75 * 2^7, Binary8p3se 49152 = 1.5 * 2^15, Binary4p2sf 3 = 1.5 * 2^1).
EMAX = {"fp8e4m3": 8, "fp8e5m2": 15, "fp6e3m2": 4, "fp6e2m3": 2, "fp4e2m1": 2, "mxint8": 0,
        "binary8p4se": 7, "binary8p3se": 15, "binary4p2sf": 1, "int4": 0,
        "fp8e4m3fnuz": 7, "fp8e5m2fnuz": 15}     # FNUZ: max 240 = 1.875 * 2^7, 57344 = 1.75 * 2^15
# The integer elements: (width, fraction bits). MXINT8 is int8 / 64 (OCP MX 5.3); INT4 int4 / 4,
# the same construction on 4 bits (a symmetric integer, |x| <= 7).
INTS = {"mxint8": (8, 6), "int4": (4, 2)}


def needs(*modules):
    """Skip a test unless the references it reads are installed (pyproject.toml's mxref extra)."""
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    return pytest.mark.skipif(bool(missing), reason=f"needs {', '.join(missing)} "
                              "(pip install -e '.[mxref]')")


# ----- torchao ----------------------------------------------------------------------------------

def _torchao():
    import torch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from torchao.prototype.mx_formats.config import ScaleCalculationMode
        from torchao.prototype.mx_formats.mx_tensor import to_mx
    return torch, to_mx, ScaleCalculationMode


def torch_dtype_of(elem):
    torch, _, _ = _torchao()
    return {"fp8e4m3": torch.float8_e4m3fn, "fp8e5m2": torch.float8_e5m2,
            "fp6e3m2": "fp6_e3m2", "fp6e2m3": "fp6_e2m3",
            "fp4e2m1": torch.float4_e2m1fn_x2}[elem]


def torchao_quantize(x: np.ndarray, elem: str, rule: str, block: int = 32, bf16=False):
    """torchao's to_mx on the CPU: (scale codes, element codes one per byte) as numpy uint8."""
    torch, to_mx, mode = _torchao()
    t = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
    if bf16:
        t = t.to(torch.bfloat16)
    s, d = to_mx(t, torch_dtype_of(elem), block, mode(rule))
    s = s.view(torch.uint8).numpy().copy()
    d = d.view(torch.uint8).numpy().copy()
    if elem == "fp4e2m1":          # two per byte, element 2i in the low nibble
        d = np.stack([d & 0xF, d >> 4], axis=-1).reshape(*d.shape[:-1], d.shape[-1] * 2)
    return s, d


def torchao_dequantize(scales, elems, elem: str, block: int = 32):
    torch, _, _ = _torchao()
    from torchao.prototype.mx_formats.mx_tensor import to_dtype
    from torchao.prototype.mx_formats.kernels import pack_uint4
    d = torch.from_numpy(np.ascontiguousarray(elems, dtype=np.uint8))
    if elem in ("fp8e4m3", "fp8e5m2"):
        d = d.view(torch_dtype_of(elem))
    elif elem == "fp4e2m1":
        d = pack_uint4(d)
    s = torch.from_numpy(np.ascontiguousarray(scales, dtype=np.uint8)).view(torch.float8_e8m0fnu)
    return to_dtype(d, s, torch_dtype_of(elem), block, torch.float32).numpy()


# ----- gfloat -----------------------------------------------------------------------------------

def gfloat_formats():
    from gfloat.formats import (format_info_mxfp4_e2m1, format_info_mxfp6_e2m3,
                                format_info_mxfp6_e3m2, format_info_mxfp8_e4m3,
                                format_info_mxfp8_e5m2, format_info_mxint8)
    return {"fp8e4m3": format_info_mxfp8_e4m3, "fp8e5m2": format_info_mxfp8_e5m2,
            "fp6e3m2": format_info_mxfp6_e3m2, "fp6e2m3": format_info_mxfp6_e2m3,
            "fp4e2m1": format_info_mxfp4_e2m1, "mxint8": format_info_mxint8}


def gfloat_quantize_block(vals: np.ndarray, elem: str, rounding="rne", rbits=None, sr_bits=8):
    """gfloat's OCP scale (compute_scale_amax: floor(log2 amax) - emax, clipped to +-127,
    2^-127 for zero blocks) and its saturating element encoding. Stochastic rounding uses
    RoundMode.StochasticFastest (round away when frac + rbits * 2^-R >= 1)."""
    from gfloat import RoundMode, encode_float, round_float
    from gfloat.block import compute_scale_amax
    bfi = gfloat_formats()[elem]
    vals = np.asarray(vals, dtype=np.float64)
    scale = compute_scale_amax(bfi.etype.emax, vals)
    scale_code = encode_float(bfi.stype, round_float(bfi.stype, scale))
    codes = []
    for i, v in enumerate(vals / scale):
        if rounding == "rne":
            r = round_float(bfi.etype, v, RoundMode.TiesToEven, sat=True)
        else:
            r = round_float(bfi.etype, v, RoundMode.StochasticFastest, sat=True,
                            srbits=int(rbits[i]) & ((1 << sr_bits) - 1), srnumbits=sr_bits)
        codes.append(encode_float(bfi.etype, r))
    return scale_code, np.array(codes, dtype=np.int64)


# ----- plain-Python exact model -----------------------------------------------------------------

def elem_value(code: int, elem: str) -> Fraction:
    """Exact value of an element code (zeros as Fraction(0))."""
    if elem in INTS:
        w, f = INTS[elem]
        return Fraction(code - (1 << w) if code >= 1 << (w - 1) else code, 1 << f)
    v = GRID[elem].code_value(code)
    if isinstance(v, float) and v == 0:
        return Fraction(0)
    if isinstance(v, float):
        raise ValueError(f"special element {code:#x} of {elem}")
    return Fraction(v)


def floor_log2(q: Fraction) -> int:
    e = q.numerator.bit_length() - q.denominator.bit_length()
    while Fraction(2) ** e > q:
        e -= 1
    while Fraction(2) ** (e + 1) <= q:
        e += 1
    return e


def round_to_grid(v: Fraction, fmt: FloatFormat, *, saturate: bool, mode="rne"):
    """Round an exact value into fmt's grid (subnormals kept): (value, inexact, overflow).

    value is a Fraction, or +-inf when it overflows a format with infinities unsaturated.
    Modes: rne, rtz, rdn, rup, rna.
    """
    if v == 0:
        return Fraction(0), False, False
    neg, mag = v < 0, abs(v)
    lsb = max(floor_log2(mag), fmt.emin) - fmt.man_bits
    q = mag / Fraction(2) ** lsb
    n, rem = divmod(q.numerator, q.denominator)
    half = Fraction(rem, q.denominator)
    up = {"rne": half > Fraction(1, 2) or (half == Fraction(1, 2) and n % 2 == 1),
          "rna": half >= Fraction(1, 2), "rtz": False,
          "rup": half > 0 and not neg, "rdn": half > 0 and neg}[mode]
    r = (n + up) * Fraction(2) ** lsb
    inexact = half != 0
    if r > fmt.max_finite:
        to_inf = mode in ("rne", "rna") or (mode == "rup" and not neg) or \
            (mode == "rdn" and neg)
        if saturate or not to_inf or not fmt.has_inf:
            r = fmt.max_finite
        else:
            return (float("-inf") if neg else float("inf")), True, True
        return (-r if neg else r), True, True
    return (-r if neg else r), inexact, False


_CODE_OF: dict = {}


def code_of(value, fmt: FloatFormat, negative_zero=False) -> int:
    """Code of an exactly representable value in a format of at most 32 bits."""
    if fmt == CATALOG["float32"]:
        f = np.float32(float(value))
        assert Fraction(float(f)) == value if not isinstance(value, float) else True
        bits = int(np.array([f], np.float32).view(np.uint32)[0])
        return bits | (0x8000_0000 if negative_zero and value == 0 else 0)
    if fmt in (CATALOG["bfloat16"], CATALOG["float16"]):
        import ml_dtypes
        dt = ml_dtypes.bfloat16 if fmt == CATALOG["bfloat16"] else np.float16
        bits = int(np.array([float(value)], np.float64).astype(dt).view(np.uint16)[0])
        return bits | (0x8000 if negative_zero and value == 0 else 0)
    table = _CODE_OF.get(fmt)
    if table is None:
        table = {}
        for c in range(1 << fmt.width):
            cls = fmt.classify(c)
            if cls in ("nan", "snan"):
                continue
            key = fmt.code_value(c)
            if cls == "zero":
                key = ("zero", bool(c & fmt.sign_mask))
            table.setdefault(key, c)
        _CODE_OF[fmt] = table
    if value == 0:          # -0 where the format has one (P3109 formats have none)
        return table[("zero", negative_zero and fmt.has_neg_zero)]
    return table[value]


def quantize_block_exact(vals, elem: str, rule: str):
    """One block by the OCP rule written out on Fractions: (scale code, element codes).

    For finite blocks; the scale exponent is clamped to [-127, 127], zero blocks get -127.
    """
    fr = [Fraction(float(v)) for v in vals]
    amax = max(abs(v) for v in fr)
    emax = EMAX[elem]
    grid = GRID.get(elem) or FloatFormat(1, INTS[elem][1], 1, CATALOG["float4_e2m1fn"].specials)
    if amax == 0:
        s = -127
    elif rule == "floor":
        s = floor_log2(amax) - emax
    elif rule == "ceil":
        e = floor_log2(amax)
        s = e - emax + (Fraction(2) ** e != amax)
    elif rule == "rceil":
        q = amax / grid.max_finite
        e = floor_log2(q)
        s = e + (Fraction(2) ** e != q)
    elif rule == "vllm":
        # The exponent of amax goes up when its significand is >= 1.75; a float32 subnormal
        # amax reaches 2^-126 from 1.5 * 2^-127 (vLLM adds 1/4 of 2^-126's ulp range to the
        # pattern), and below that it has no exponent: -127 after the clamp.
        tiny = Fraction(2) ** -126
        if amax < tiny:
            s = (-126 if amax >= Fraction(3, 2) * Fraction(2) ** -127 else -1000) - emax
        else:
            e = floor_log2(amax)
            s = e + (amax / Fraction(2) ** e >= Fraction(7, 4)) - emax
    else:  # even: amax rounded to the element's precision, ties away, then floor
        r, _, _ = round_to_grid(amax, FloatFormat(8, grid.man_bits, 127), saturate=False,
                                mode="rna")
        # (a float32 subnormal amax may round to 0: every such block clamps to -127)
        s = 128 if r == float("inf") else -127 if r == 0 else floor_log2(r)
        s -= emax
    s = max(-127, min(127, s))
    X = Fraction(2) ** s
    codes = []
    for v, raw in zip(fr, vals):
        r, _, _ = round_to_grid(v / X, grid, saturate=True)
        neg = np.signbit(raw)
        if elem in INTS:
            w, f = INTS[elem]
            codes.append(int(r * (1 << f)) & ((1 << w) - 1))
        else:
            codes.append(code_of(abs(r) if r == 0 else r, grid, negative_zero=bool(neg)))
    return s + 127, codes


# ----- dot product reference --------------------------------------------------------------------

NX, UF, OF, NV = 1, 2, 4, 16


def elem_exponent(code: int, elem: str) -> int:
    """Unbiased exponent of an element as an aligner sees it: subnormals at emin, MXINT8 0."""
    if elem in INTS:
        return 0
    g = GRID[elem]
    e = (code & g.magnitude_mask) >> g.man_bits
    return (1 if e == 0 else e) - g.bias


def elem_negative(code: int, elem: str) -> bool:
    if elem in INTS:
        return bool(code >> (INTS[elem][0] - 1))
    return bool(code & GRID[elem].sign_mask)


def dot_reference(a, b, elem_a, elem_b, scale_a=127, scale_b=127, *, out_fmt, accum="exact",
                  frac_bits=24, mode="rne", scale_factor=None):
    """One dot product on Fractions: (code, flags). Finite elements and scales only.
    ``scale_factor`` (a Fraction) replaces the E8M0 scales' 2^(scale_a + scale_b - 254).

    fixed: E_i = exponent(a_i) + exponent(b_i) over the nonzero products, Emax their maximum;
    each product truncated toward zero to a multiple of 2^(Emax - frac_bits); summed exactly;
    rounded once. The inexact flag also reports truncation.
    """
    prods = [elem_value(x, elem_a) * elem_value(y, elem_b) for x, y in zip(a, b)]
    neg = [elem_negative(x, elem_a) != elem_negative(y, elem_b) for x, y in zip(a, b)]
    lost = False
    if accum == "exact":
        total = sum(prods, Fraction(0))
    else:
        exps = [elem_exponent(x, elem_a) + elem_exponent(y, elem_b)
                for x, y, p in zip(a, b, prods) if p != 0]
        total = Fraction(0)
        if exps:
            unit = Fraction(2) ** (max(exps) - frac_bits)
            for p in prods:
                t = abs(p) // unit * unit
                lost |= t != abs(p)
                total += t if p > 0 else -t
    total *= Fraction(2) ** (scale_a - 127 + scale_b - 127) if scale_factor is None else \
        scale_factor
    return _rounded(total, all(p == 0 for p in prods), neg, lost, out_fmt, mode)


def grouped_dot_reference(a, b, elem_a, elem_b, scales_a, scales_b, c=None, *, scale_fmt,
                          group, out_fmt, frac_bits, mode="rne", zero_exp=-139):
    """One grouped dot product (MMA-Sim's gst_fdpa) on Fractions: (code, flags). Finite
    elements, scales and float32 c only. Group j's exact sum times its two scale values stands
    at E_j = e(scale_a_j) + e(scale_b_j), e the scale's exponent (1 <= s < 2, subnormals at the
    format's smallest), or at ``zero_exp`` when its products are all zero or a scale is; c at
    its own exponent (``zero_exp`` when zero or None). Every term is truncated toward zero to a
    multiple of 2^(Emax - frac_bits); the sum rounded once."""
    def scale(code):
        v = Fraction(scale_fmt.code_value(code))
        e = floor_log2(abs(v)) if v else None
        return v, None if e is None else max(e, scale_fmt.emin)
    terms, neg, nonzero_lane = [], [], []
    for j in range(len(a) // group):
        lanes = range(j * group, (j + 1) * group)
        (va, ea), (vb, eb) = scale(scales_a[j]), scale(scales_b[j])
        prods = [elem_value(a[i], elem_a) * elem_value(b[i], elem_b) for i in lanes]
        nonzero_lane += [p != 0 for p in prods]
        flip = (va < 0) != (vb < 0)
        neg += [(elem_negative(a[i], elem_a) != elem_negative(b[i], elem_b)) != flip
                for i in lanes]
        active = any(p != 0 for p in prods) and va * vb != 0
        terms.append((sum(prods, Fraction(0)) * va * vb, ea + eb if active else zero_exp))
    if c is not None:
        cv = Fraction(float(np.array([c], np.uint32).view(np.float32)[0]))
        terms.append((cv, max(floor_log2(abs(cv)), -126) if cv else zero_exp))
        neg.append(bool(c >> 31))
    unit = Fraction(2) ** (max([e for _, e in terms] + [zero_exp]) - frac_bits)
    total, lost = Fraction(0), False
    for v, _ in terms:
        t = abs(v) // unit * unit
        lost |= t != abs(v)
        total += t if v > 0 else -t
    all_zero = not any(nonzero_lane) and (c is None or terms[-1][0] == 0)
    return _rounded(total, all_zero, neg, lost, out_fmt, mode)


def _rounded(total: Fraction, all_zero: bool, neg: list, lost: bool, out_fmt, mode):
    """A dot product's exact (or truncated) sum rounded once: (code, flags). ``all_zero``:
    every term was zero, ``neg`` their signs (the sign of a zero result), ``lost``: truncation
    dropped a bit (inexact)."""
    value, inexact, overflow = round_to_grid(total, out_fmt, saturate=False, mode=mode)
    tiny = False
    if total != 0 and not overflow:
        # tininess after rounding: round to the precision with an unbounded exponent range
        mag = abs(total)
        lsb = floor_log2(mag) - out_fmt.man_bits
        q = mag / Fraction(2) ** lsb
        n, rem = divmod(q.numerator, q.denominator)
        h = Fraction(rem, q.denominator)
        up = {"rne": h > Fraction(1, 2) or (h == Fraction(1, 2) and n % 2 == 1),
              "rna": h >= Fraction(1, 2), "rtz": False, "rup": h > 0 and total > 0,
              "rdn": h > 0 and total < 0}[mode]
        tiny = (n + up) * Fraction(2) ** lsb < out_fmt.min_normal
    if isinstance(value, float):                       # +-inf
        code = out_fmt.inf_code | (out_fmt.sign_mask if value < 0 else 0)
    elif value == 0:
        if total != 0:
            zneg = total < 0
        elif all_zero:
            zneg = any(neg) if mode == "rdn" else all(neg)
        else:
            zneg = mode == "rdn"
        code = code_of(Fraction(0), out_fmt, negative_zero=zneg)
    else:
        code = code_of(value, out_fmt)
    flags = (NX if inexact or lost else 0) | (OF if overflow else 0) | \
        (UF if tiny and inexact else 0)
    return code, flags
