"""The scalar kinds' stimulus (mul, add, sub, fma, fms, cvt): named corner classes crossed over
all operands, operands related to each other through the kind's real operation, biased random."""

from __future__ import annotations

import enum
import functools

import numpy as np

from fpforge.rtl.formats import FloatFormat, Specials
from fpforge.rtl.noncomp import NoncompSpec
from fpforge.rtl.scalar import ScalarSpec

from .base import code_values, unknown_part, value_table

__all__ = ["Corner", "corner_codes", "corners", "relations", "biased_random", "SCALAR_PARTS",
           "NONCOMP_PARTS", "noncomp_part",
           "scalar_part"]

SCALAR_PARTS = ("corners", "relations", "random")
NONCOMP_PARTS = ("corners", "random")


class Corner(enum.Enum):
    ZERO = "zero"
    MIN_SUBNORMAL = "min subnormal"
    MAX_SUBNORMAL = "max subnormal"
    MIN_NORMAL = "min normal"
    MAX_NORMAL = "max normal"
    ONE = "one"
    ONE_PLUS_ULP = "one plus ulp"
    ONE_MINUS_ULP = "one minus ulp"
    INF = "infinity"
    QNAN = "quiet NaN"
    SNAN = "signalling NaN"
    MID = "random normal"


def corner_codes(fmt: FloatFormat, rng: np.random.Generator, mids: int = 2
                 ) -> dict[Corner, list[int]]:
    """Codes of each corner class that ``fmt`` has, both signs where it has a sign.

    Subnormal classes come from the encoding, so a flushing format still offers them (they must
    read as zero)."""
    M = fmt.man_bits
    out: dict[Corner, list[int]] = {}
    if fmt.has_zero:
        out[Corner.ZERO] = [0]
    if M and fmt.specials is not Specials.FNU:
        out[Corner.MIN_SUBNORMAL] = [1]
        out[Corner.MAX_SUBNORMAL] = [(1 << M) - 1]
    out[Corner.MIN_NORMAL] = [fmt.min_normal_code]
    out[Corner.MAX_NORMAL] = [fmt.max_finite_code]
    one = fmt.bias << M
    if one <= fmt.max_finite_code:
        out[Corner.ONE] = [one]
        if one + 1 <= fmt.max_finite_code:
            out[Corner.ONE_PLUS_ULP] = [one + 1]
        out[Corner.ONE_MINUS_ULP] = [one - 1]
    if fmt.has_inf:
        out[Corner.INF] = [fmt.inf_code]
    if fmt.has_nan:
        out[Corner.QNAN] = [fmt.nan_code]
        if fmt.specials is Specials.IEEE:
            out[Corner.QNAN].append(fmt.magnitude_mask)      # quiet, all payload bits set
    if fmt.has_snan:
        out[Corner.SNAN] = [(fmt.exp_all_ones << M) | 1,
                            (fmt.exp_all_ones << M) | ((1 << (M - 1)) - 1)]
    lo, hi = fmt.min_normal_code, fmt.max_finite_code
    out[Corner.MID] = [int(c) for c in rng.integers(lo, hi + 1, mids)]
    if fmt.signed:
        for k, codes in out.items():
            neg = [c | fmt.sign_mask for c in codes]
            if not fmt.has_neg_zero:   # fnuz, ext: the sign-only code is the NaN, not -0
                neg = [c for c in neg if c != fmt.sign_mask or k is Corner.QNAN]
            out[k] = sorted(set(codes + neg))
    return out


def corners(spec: ScalarSpec, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Every corner-class code crossed with every other, over all operands."""
    per_op = [np.array(sorted({c for codes in corner_codes(f, rng).values() for c in codes}),
                       dtype=np.uint32) for f in spec.in_fmts]
    grids = np.meshgrid(*per_op, indexing="ij")
    return {op: g.reshape(-1) for op, g in zip(spec.operands, grids)}


# ----- relations between operands ----------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def _finite_table(fmt: FloatFormat):
    """(codes, values) of every finite code of a <= 16-bit format, sorted by value."""
    vals = value_table(fmt)
    codes = np.flatnonzero(np.isfinite(vals)).astype(np.uint32)
    order = np.argsort(vals[codes], kind="stable")
    return codes[order], vals[codes][order]


def random_normals(fmt: FloatFormat, rng, n, exp=None):
    """n random normal codes, random sign; exponent field ``exp`` (array) when given."""
    M = fmt.man_bits
    lo_e = 0 if fmt.specials is Specials.FNU else 1
    hi_e = fmt.max_finite_code >> M
    e = rng.integers(lo_e, hi_e + 1, n) if exp is None else np.clip(exp, lo_e, hi_e)
    codes = (e.astype(np.int64) << M) | rng.integers(0, 1 << M, n) if M else \
        e.astype(np.int64)
    codes = np.minimum(codes, fmt.max_finite_code)
    if fmt.signed:
        codes |= rng.integers(0, 2, n) * fmt.sign_mask
        if not fmt.has_neg_zero:
            codes = np.where(codes == fmt.sign_mask, 0, codes)
    return codes.astype(np.uint32)


def _exp_field(fmt, codes):
    return (codes.astype(np.int64) & fmt.magnitude_mask) >> fmt.man_bits


def _nearest(fmt: FloatFormat, values: np.ndarray, offsets=(0,)) -> list[np.ndarray]:
    """Codes nearest to ``values`` and their neighbours by ``offsets`` positions in value."""
    codes, vals = _finite_table(fmt)
    pos = np.clip(np.searchsorted(vals, values), 0, len(vals) - 1)
    return [codes[np.clip(pos + o, 0, len(vals) - 1)] for o in offsets]


def _tie_position(out: FloatFormat, exact: np.ndarray) -> np.ndarray:
    """Where an exact value sits between its two neighbouring output codes: 0.5 is a tie."""
    _, vals = _finite_table(out)
    hi = np.clip(np.searchsorted(vals, exact), 1, len(vals) - 1)
    lo_v, hi_v = vals[hi - 1], vals[hi]
    with np.errstate(invalid="ignore", divide="ignore"):
        return (exact - lo_v) / (hi_v - lo_v)


def _select_ties(pos: np.ndarray, per_side: int) -> np.ndarray:
    """Indices of exact ties, and of the candidates closest to a tie from above and below."""
    ok = np.isfinite(pos)
    ties = np.flatnonzero(ok & (pos == 0.5))
    d = np.where(ok, pos - 0.5, np.nan)
    above = np.flatnonzero(d > 0)
    below = np.flatnonzero(d < 0)
    above = above[np.argsort(d[above])[:per_side]]
    below = below[np.argsort(-d[below])[:per_side]]
    return np.concatenate([ties[:4 * per_side], above, below])


def relations(spec: ScalarSpec, rng: np.random.Generator, n: int = 4096
              ) -> dict[str, np.ndarray]:
    """Operand tuples related to each other, aimed through the kind's real operation
    ``spec.EXACT``: the last operand against the value of the others (exponent differences
    0/1/2/p/large either way, massive cancellation), exact ties and the candidates nearest them
    from above and below, overflow and underflow thresholds. Kinds whose result is affine in
    the last operand (all of fpforge's) are aimed exactly; cvt has none (one operand)."""
    ops, fmts, out = spec.operands, spec.in_fmts, spec.out_fmt
    if len(ops) < 2 or max(f.width for f in fmts + (out,)) > 16:
        return {op: np.zeros(0, np.uint32) for op in ops}
    exact, fx, last = spec.EXACT, fmts[-1], ops[-1]

    def draw(m):
        rest = {op: random_normals(f, rng, m) for op, f in zip(ops[:-1], fmts[:-1])}
        vals = [code_values(f, rest[op]) for op, f in zip(ops[:-1], fmts[:-1])]
        with np.errstate(all="ignore"):
            base = exact(*vals, np.zeros(m))
            slope = exact(*vals, np.ones(m)) - base
        return rest, vals, base, slope

    def aim(target, slope, base, offsets=(0,)):
        with np.errstate(all="ignore"):
            want = np.where(slope != 0, (target - base) / slope, 0.0)
        return _nearest(fx, np.nan_to_num(want), offsets)

    parts = []
    rest, vals, base, slope = draw(n)
    if np.any(base != 0):
        # exponent difference 0, 1, 2, p, p+1, p+2 and large, either way round, between the
        # last operand's term and the rest
        p = out.precision
        d = rng.choice(np.array([0, 1, -1, 2, -2, p, -p, p + 1, -(p + 1), p + 2, 3 * p, -3 * p]),
                       n)
        # a quotient's base can be infinite (inf + -inf is NaN, which aim maps to zero)
        with np.errstate(all="ignore"):
            term = np.abs(base) * np.exp2(-d.astype(np.float64)) * \
                np.where(rng.integers(0, 2, n) == 1, 1.0, -1.0) * (1 + rng.random(n))
            target = base + term
        parts.append({**rest, last: aim(target, slope, base)[0]})
        # massive cancellation: the result nearly zero, give or take a few codes
        for off in (-2, -1, 0, 1, 2):
            parts.append({**rest, last: aim(np.zeros(n), slope, base, (off,))[0]})
    # ties: candidates aimed near the rest's magnitude and at random, keep those nearest a tie
    rest, vals, base, slope = draw(8 * n)
    x = np.where(rng.integers(0, 2, 8 * n) == 1,
                 aim(base * (1 + rng.random(8 * n)), slope, base, (0, 1))[rng.integers(0, 2)],
                 random_normals(fx, rng, 8 * n))
    with np.errstate(all="ignore"):
        result = exact(*vals, code_values(fx, x))
    sel = _select_ties(_tie_position(out, result), n // 8)
    parts.append({**{op: v[sel] for op, v in rest.items()}, last: x[sel]})
    # overflow and underflow thresholds: max finite (+ a fraction of its ulp), the smallest
    # normal and subnormal, either sign, and the codes next to them
    m = max(16, n // 4)
    rest, vals, base, slope = draw(m)
    mx = float(out.max_finite)
    ulp = mx - float(out.code_value(out.max_finite_code - 1))
    sign = np.where(rng.integers(0, 2, m) == 1, 1.0, -1.0)
    for bound in (mx, mx + 0.5 * ulp, mx + ulp, float(out.min_normal), float(out.min_subnormal)):
        for off in (-1, 0, 1):
            parts.append({**rest, last: aim(sign * bound, slope, base, (off,))[0]})
    return {op: np.concatenate([p[op] for p in parts]).astype(np.uint32) for op in ops}


def biased_random(spec: ScalarSpec, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """n operand tuples: a quarter uniform codes, a quarter corner-class codes, a quarter
    normals with small exponent distances, a quarter from :func:`relations`."""
    q = n // 4
    out = {}
    classes = [np.array(sorted({c for cs in corner_codes(f, rng, mids=8).values() for c in cs}),
                        dtype=np.uint32) for f in spec.in_fmts]
    base = random_normals(spec.in_fmts[0], rng, q)
    e0 = _exp_field(spec.in_fmts[0], base)
    for i, (op, f) in enumerate(zip(spec.operands, spec.in_fmts)):
        uniform = rng.integers(0, 1 << f.width, n - 3 * q, dtype=np.uint64).astype(np.uint32)
        special = rng.choice(classes[i], q)
        near = base if i == 0 else random_normals(f, rng, q, exp=e0 + rng.integers(-3, 4, q))
        out[op] = [uniform, special, near]
    rel = relations(spec, rng, max(64, q // 8))
    m = len(rel[spec.operands[0]])
    pick = rng.integers(0, m, q) if m else None
    for i, (op, f) in enumerate(zip(spec.operands, spec.in_fmts)):
        extra = rel[op][pick] if m else \
            rng.integers(0, 1 << f.width, q, dtype=np.uint64).astype(np.uint32)
        out[op] = np.concatenate(out[op] + [extra]).astype(np.uint32)
    perm = rng.permutation(n)
    return {op: v[perm] for op, v in out.items()}


def scalar_part(spec: ScalarSpec, name: str, params: dict, rng) -> dict:
    if name == "corners":
        return corners(spec, rng)
    if name == "relations":
        return relations(spec, rng, int(params.get("count", 4096)))
    if name == "random":
        return biased_random(spec, rng, int(params["count"]))
    raise unknown_part(spec, name, SCALAR_PARTS)

# ----- the kinds that do not round (rtl/noncomp.py) ------------------------------------------------

def _with_controls(spec: NoncompSpec, rng, ops: dict) -> dict:
    """The operands and a uniform draw of each control input (sgnj's op, cmp's signaling)."""
    n = len(next(iter(ops.values())))
    return ops | {p.name: rng.integers(0, 1 << p.width, n, dtype=np.uint64).astype(np.uint32)
                  for p in spec.control_ports()}


def _classes(fmt: FloatFormat, rng) -> np.ndarray:
    return np.array(sorted({c for cs in corner_codes(fmt, rng, mids=8).values() for c in cs}),
                    dtype=np.uint32)


def _nearest_codes(fa: FloatFormat, fb: FloatFormat, a, step) -> np.ndarray:
    """The finite code of ``fb`` nearest above each of ``fa``'s codes ``a`` in value (a NaN
    reads as 0), ``step`` codes away in fb's order."""
    codes, vals = _finite_table(fb)
    va = np.nan_to_num(value_table(fa)[a], nan=0.0)
    i = np.clip(np.searchsorted(vals, va) + step, 0, len(codes) - 1)
    return codes[i]


def near_pairs(spec: NoncompSpec, rng, n: int) -> dict[str, np.ndarray]:
    """n operand tuples where the order is decided late: a quarter uniform codes, a quarter
    corner-class codes, and b equal to a, to a with its sign flipped, or one code away (cmp of
    two formats of at most 16 bits: b's code nearest a's value, or one code away)."""
    fa, fb = spec.in_fmts[0], spec.in_fmts[-1]
    q = n // 4
    a = np.concatenate([rng.integers(0, 1 << fa.width, n - 2 * q, dtype=np.uint64),
                        rng.choice(_classes(fa, rng), 2 * q)]).astype(np.uint32)
    b = rng.integers(0, 1 << fb.width, n, dtype=np.uint64).astype(np.uint32)
    b[q:2 * q] = rng.choice(_classes(fb, rng), q)
    step = rng.integers(-1, 2, n - 2 * q)
    if fa != fb:
        if max(fa.width, fb.width) <= 16:     # wider: b stays uniform (no value table)
            b[2 * q:] = _nearest_codes(fa, fb, a[2 * q:], step)
    else:
        flip = rng.random(n - 2 * q) < 0.25
        near = (a[2 * q:].astype(np.int64) + step) & ((1 << fa.width) - 1)
        b[2 * q:] = np.where(flip, a[2 * q:] ^ np.uint32(fa.sign_mask), near)
    ops = {"a": a, "b": b} if len(spec.operands) == 2 else {spec.operands[0]: a}
    perm = rng.permutation(n)
    return {op: v[perm] for op, v in ops.items()}


def noncomp_part(spec: NoncompSpec, name: str, params: dict, rng) -> dict:
    if name == "corners":
        return _with_controls(spec, rng, corners(spec, rng))
    if name == "random":
        return _with_controls(spec, rng, near_pairs(spec, rng, int(params["count"])))
    raise unknown_part(spec, name, NONCOMP_PARTS)
