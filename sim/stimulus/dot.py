"""The dot product's stimulus (dot): rows built to cancel, special codes, every code pair, and
the scale and accumulator inputs that go with them."""

from __future__ import annotations

import itertools

import numpy as np

from fpforge.rtl.dot import MxDotSpec
from fpforge.rtl.elements import element_format
from fpforge.rtl.formats import FloatFormat

from .base import code_values, unknown_part

__all__ = ["finite_codes", "cancelling_rows", "special_rows", "pair_rows", "mixed_rows",
           "value_scale_codes", "group_scales", "element_values", "codes_toward_zero",
           "accumulator_codes", "DOT_PARTS", "dot_part"]

DOT_PARTS = ("random", "specials", "pairs")


SPECIALS = {  # codes that are not finite numbers, per element format
    "fp8e4m3": [0x7F, 0xFF], "fp8e5m2": [0x7C, 0xFC, 0x7D, 0x7E, 0xFF],
}


def finite_codes(elem) -> np.ndarray:
    """Every element code that is a finite number."""
    e = element_format(elem)
    if e.twos_complement:
        return np.arange(1 << e.width)
    return np.array([c for c in range(1 << e.width) if e.grid.classify(c) not in
                     ("nan", "snan", "inf")])


def cancelling_rows(ea, eb, n, rows, seed, scales=True):
    """Random finite codes, plus rows built to cancel: b repeated and a's halves opposite, with
    one small product left over, and rows of extreme scales (float32 overflow and underflow)."""
    rng = np.random.default_rng(seed)
    ca, cb = finite_codes(ea), finite_codes(eb)
    a = rng.choice(ca, (rows, n)).astype(np.uint8)
    b = rng.choice(cb, (rows, n)).astype(np.uint8)
    half = n // 2
    e = element_format(ea)
    cancel = slice(0, rows // 4)
    if not e.twos_complement:       # -x (a zero stays +0 where -0 is a NaN: FNUZ, P3109)
        a[cancel, half:2 * half] = np.where(a[cancel, :half] == 0, _negative_zero(e),
                                            a[cancel, :half] ^ e.grid.sign_mask)
    else:       # -x in the element's width
        a[cancel, half:2 * half] = (-a[cancel, :half].astype(np.int16)) & ((1 << e.width) - 1)
    b[cancel, half:2 * half] = b[cancel, :half]
    a[cancel, 0] = rng.choice(ca[:8], rows // 4)          # the small leftover
    sa = rng.integers(100, 155, rows).astype(np.uint8)
    sb = rng.integers(100, 155, rows).astype(np.uint8)
    sa[-4:] = [0, 0, 254, 254]
    sb[-4:] = [0, 1, 254, 200]
    if not scales:
        sa[:] = sb[:] = 127
    return a, b, sa, sb


def _negative_zero(elem) -> int:
    """The code of -0, or of the one zero (integers, FNUZ, P3109: their 0x80 is not -0)."""
    e = element_format(elem)
    return e.grid.sign_mask if not e.twos_complement and e.grid.has_neg_zero else 0


def special_rows(ea, eb, n, rows, seed):
    """inf / NaN elements (where the format has them), zeros of both signs, NaN scales."""
    rng = np.random.default_rng(seed)
    ca, cb = finite_codes(ea), finite_codes(eb)
    a = rng.choice(ca, (rows, n)).astype(np.uint8)
    b = rng.choice(cb, (rows, n)).astype(np.uint8)
    za, zb = _negative_zero(ea), _negative_zero(eb)
    q = rows // 4
    # all-zero rows with random zero signs
    a[:q] = np.where(rng.random((q, n)) < 0.5, 0, za)
    b[:q] = np.where(rng.random((q, n)) < 0.5, 0, zb)
    a[:q // 2, :] = za
    for col, (elem, arr) in enumerate(((ea, a), (eb, b))):
        sp = SPECIALS.get(elem)
        if sp:
            c = col % n                                           # short vectors: n = 1, 2
            arr[q:3 * q, c] = rng.choice(sp, 2 * q)
            if n > 1:
                arr[q:2 * q:3, (c + 1) % n] = 0                   # 0 x inf
    sa = rng.integers(110, 145, rows).astype(np.uint8)
    sb = rng.integers(110, 145, rows).astype(np.uint8)
    sa[3 * q::5] = 0xFF
    return a, b, sa, sb


def pair_rows(ea, eb, n, seed):
    """Every (a_0, b_0) pair of element codes, the other n - 1 products random and small."""
    rng = np.random.default_rng(seed)
    wa, wb = element_format(ea).width, element_format(eb).width
    pairs = np.array(list(itertools.product(range(1 << wa), range(1 << wb))))
    rows = len(pairs)
    a = rng.choice(finite_codes(ea)[:16], (rows, n)).astype(np.uint8)
    b = rng.choice(finite_codes(eb)[:16], (rows, n)).astype(np.uint8)
    a[:, 0], b[:, 0] = pairs[:, 0], pairs[:, 1]
    a[rows // 2:, 1:] = 0                                          # the pair alone
    sa = np.full(rows, 127, np.uint8)
    sb = rng.integers(120, 135, rows).astype(np.uint8)
    return a, b, sa, sb


def mixed_rows(ea, eb, n, seed, rows=96):
    """Random finite codes, cancelling rows, extreme scales and specials."""
    r1 = cancelling_rows(ea, eb, n, rows, seed)
    r2 = special_rows(ea, eb, n, rows // 2, seed + 1)
    return tuple(np.concatenate([x, y]) for x, y in zip(r1, r2))


def value_scale_codes(fmt: FloatFormat, rng, rows: int) -> np.ndarray:
    """Scale codes of a value-scale format (the dot's E4M3...): every code equally likely
    (zeros, subnormals, NaN and set sign bits included), the first rows zero and the largest
    finite magnitude."""
    codes = rng.integers(0, 1 << fmt.width, rows).astype(np.uint8)
    corners = [0, fmt.max_finite_code, fmt.sign_mask if fmt.signed else 1]
    codes[:len(corners)] = corners[:rows]
    return codes


def group_scales(codes, groups: int, rng) -> np.ndarray:
    """E8M0 scales for each group of lanes from one per row: the row's scale moved by up to 40
    binades per group (so that groups far apart truncate each other away), the row's extreme
    codes (0, 254, the NaN 255) kept in its first group; every eighth row (the same rows for a
    and b) has every scale near 2^-65, so that its groups stand near GROUP_ZERO_EXP (2^-139),
    where a zero term sets Emax."""
    codes = np.asarray(codes, np.int64)
    out = np.clip(codes[:, None] + rng.integers(-40, 41, (len(codes), groups)), 0, 254)
    out[:, 0] = codes
    tiny = np.arange(len(codes)) % 8 == 7
    out[tiny] = rng.integers(52, 72, (int(tiny.sum()), groups))
    return out.astype(np.uint8)


def element_values(elem, codes) -> np.ndarray:
    """float64 values of element codes (MXINT8: int8 * 2^-6; INT4: int4 * 2^-2)."""
    e = element_format(elem)
    if e.twos_complement:
        up = 8 - e.width            # sign-extend through int8's sign bit
        ints = (np.asarray(codes, np.uint8) << up).view(np.int8).astype(np.int64) >> up
        return ints * 2.0 ** e.lsb_min
    return code_values(e.grid, codes)


def codes_toward_zero(fmt: FloatFormat, values: np.ndarray) -> np.ndarray:
    """Codes of a signed float format (any width) nearest to finite ``values`` toward zero,
    clamped to its largest finite magnitude."""
    v = np.asarray(values, np.float64)
    M, bias = fmt.man_bits, fmt.bias
    emin = 1 - bias
    e = np.frexp(np.abs(v))[1].astype(np.int64) - 1
    e = np.maximum(e, emin)
    q = np.floor(np.abs(v) * np.ldexp(1.0, (M - e).astype(np.int32))).astype(np.int64)
    if not fmt.has_subnormals:
        q = np.where(q < (1 << M), 0, q)
    field = np.where(q >= (1 << M), e + bias, 0)
    mag = np.minimum((field << M) | (q & ((1 << M) - 1)), fmt.max_finite_code)
    return (np.where(v < 0, fmt.sign_mask, 0) | mag).astype(np.uint64)


def accumulator_codes(spec: MxDotSpec, a, b, sa, sb, rng, specials: bool = False):
    """The dot unit's c input: codes near the products' sum, so that the truncation of c and of
    the products both matter. Row classes: a signed zero; the sum times 2^k (k in -30..30) or
    exactly minus it (the sum cancels to the truncation's remainder); any finite code; and,
    in ``specials``, infinities and NaNs."""
    fmt = spec.c_fmt
    rows = len(a)
    with np.errstate(invalid="ignore", over="ignore"):            # inf x 0: NaN, replaced
        prods = element_values(spec.elem_a, a) * element_values(spec.elem_b, b)
        if spec.accum.group is not None:          # each group times its own scales
            sums = prods.reshape(rows, spec.groups, spec.accum.group).sum(-1)
            va, vb = code_values(spec.scale_fmt, sa), code_values(spec.scale_fmt, sb)
            total = np.sum(sums * va * vb, -1)
        else:
            total = np.sum(prods, -1)
    if spec.scaled and spec.accum.group is None:
        total = total * np.ldexp(1.0, sa.astype(np.int32) + sb.astype(np.int32) - 254)
    total = np.where(np.isfinite(total) & (total != 0), total, np.ldexp(1.0, rng.integers(
        -20, 20, rows)))
    k = rng.integers(-30, 31, rows)
    k[rng.random(rows) < 0.2] = 0
    near = np.ldexp(total, k) * np.where(rng.random(rows) < 0.5, -1.0, 1.0)
    near = np.where(rng.random(rows) < 0.15, -total, near)
    codes = codes_toward_zero(fmt, near)
    kind = rng.random(rows)
    signed_zero = np.where(rng.random(rows) < 0.5, fmt.sign_mask, 0).astype(np.uint64)
    codes = np.where(kind < 0.15, signed_zero, codes)
    wide = rng.integers(0, fmt.max_finite_code + 1, rows, dtype=np.uint64) | \
        np.where(rng.random(rows) < 0.5, fmt.sign_mask, 0).astype(np.uint64)
    codes = np.where((kind >= 0.15) & (kind < 0.25), wide, codes)
    if specials:
        snan = fmt.inf_code + 1 if fmt.has_snan else None
        nonfinite = [c for c in (fmt.inf_code if fmt.has_inf else None, fmt.nan_code, snan)
                     if c is not None]
        pick = rng.choice(np.array(nonfinite, np.uint64), rows) | \
            np.where(rng.random(rows) < 0.5, fmt.sign_mask, 0).astype(np.uint64)
        codes = np.where(kind > 0.8, pick, codes)
    return codes


def dot_part(spec: MxDotSpec, name: str, params: dict, rng) -> dict:
    ea, eb, n = spec.elem_a.name, spec.elem_b.name, spec.n
    seed = int(rng.integers(1 << 31))
    if name == "random":
        rows = cancelling_rows(ea, eb, n, params["count"], seed)
    elif name == "specials":
        rows = special_rows(ea, eb, n, params["count"], seed)
    elif name == "pairs":
        rows = pair_rows(ea, eb, n, seed)
    else:
        raise unknown_part(spec, name, DOT_PARTS)
    a, b, sa, sb = rows
    out = {"a": a, "b": b}
    shape = (len(a),) if spec.accum.group is None else (len(a), spec.groups)
    if spec.value_scales:
        sa, sb = (value_scale_codes(spec.scale_fmt, rng, int(np.prod(shape))).reshape(shape)
                  for _ in range(2))
    elif spec.accum.group is not None:
        sa, sb = group_scales(sa, spec.groups, rng), group_scales(sb, spec.groups, rng)
    if spec.scaled:
        out |= {"scale_a": sa, "scale_b": sb}
    if spec.c_fmt is not None:
        out["c"] = accumulator_codes(spec, a, b, sa, sb, rng, specials=name == "specials")
    return out