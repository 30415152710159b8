"""Operand codes for the benches: exhaustive ranges, named corner classes, biased random.

Every generator returns a dict of uint32 arrays, one per unit input (operands, then ``rm``
and ``rbits`` when the unit has them), all of one length. Randomness comes only from the
``numpy.random.Generator`` passed in, seeded from the :class:`~sim.bench.config.BenchConfig`
seed, so a run is repeated exactly by its seed.

Corner classes (:class:`Corner`) are single-operand encodings; :func:`corners` crosses them
over all operands. Relations between operands that single classes cannot express (ties, just
above/below a tie, overflow thresholds, massive cancellation, exponent differences 0/1/large)
come from :func:`relations`: candidate operand tuples are drawn with the wanted exponent
distance and the exact result's position between its two neighbouring codes is measured in
float64 (exact for products of <= 16-bit formats; a guide only for wide sums, where it only
picks stimuli and never decides an expectation).
"""

from __future__ import annotations

import enum
import functools

import numpy as np

from rtl.formats import FloatFormat, Specials
from rtl.spec import UnitSpec

__all__ = ["Corner", "corner_codes", "corners", "relations", "biased_random", "exhaustive",
           "space_size", "mode_inputs", "generate", "PARTS"]


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
            if fmt.specials is Specials.FNUZ:   # the sign-only code is the NaN, not -0
                neg = [c for c in neg if c != fmt.sign_mask or k is Corner.QNAN]
            out[k] = sorted(set(codes + neg))
    return out


def space_size(spec: UnitSpec) -> int:
    """Number of distinct operand tuples (rm and rbits not counted)."""
    return 1 << sum(f.width for f in spec.in_fmts)


def exhaustive(spec: UnitSpec, start: int, stop: int) -> dict[str, np.ndarray]:
    """Operand tuples number ``start`` .. ``stop - 1`` of the whole input space, the last
    operand in the low bits of the index."""
    idx = np.arange(start, stop, dtype=np.uint64)
    out, shift = {}, 0
    for op, fmt in reversed(list(zip(spec.operands, spec.in_fmts))):
        out[op] = ((idx >> np.uint64(shift)) & np.uint64((1 << fmt.width) - 1)).astype(np.uint32)
        shift += fmt.width
    return {op: out[op] for op in spec.operands}


def corners(spec: UnitSpec, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Every corner-class code crossed with every other, over all operands."""
    per_op = [np.array(sorted({c for codes in corner_codes(f, rng).values() for c in codes}),
                       dtype=np.uint32) for f in spec.in_fmts]
    grids = np.meshgrid(*per_op, indexing="ij")
    return {op: g.reshape(-1) for op, g in zip(spec.operands, grids)}


# ----- relations between operands ----------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _value_table(fmt: FloatFormat) -> np.ndarray:
    """float64 value of every code of a <= 16-bit format (exact); NaN for NaNs."""
    codes = np.arange(1 << fmt.width, dtype=np.int64)
    M = fmt.man_bits
    mag = codes & fmt.magnitude_mask
    e, f = mag >> M, mag & ((1 << M) - 1)
    sub = (e == 0) & (fmt.specials is not Specials.FNU)
    sig = np.where(sub, f if fmt.has_subnormals else 0, f + (1 << M)).astype(np.float64)
    v = np.ldexp(sig, (np.where(sub, 1, e) - fmt.bias - M).astype(np.int32))
    v = np.where(codes & fmt.sign_mask, -v, v)
    cls = [fmt.classify(c) for c in range(1 << fmt.width)]   # once per format
    cls = np.array(cls)
    v = np.where(cls == "inf", np.copysign(np.inf, v), v)
    return np.where((cls == "nan") | (cls == "snan"), np.nan, v)


@functools.lru_cache(maxsize=None)
def _finite_table(fmt: FloatFormat):
    """(codes, values) of every finite code of a <= 16-bit format, sorted by value."""
    vals = _value_table(fmt)
    codes = np.flatnonzero(np.isfinite(vals)).astype(np.uint32)
    order = np.argsort(vals[codes], kind="stable")
    return codes[order], vals[codes][order]


def _values(fmt: FloatFormat, codes: np.ndarray) -> np.ndarray:
    return _value_table(fmt)[np.asarray(codes, dtype=np.int64)]


def _random_normals(fmt: FloatFormat, rng, n, exp=None):
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
        if fmt.specials is Specials.FNUZ:
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


def relations(spec: UnitSpec, rng: np.random.Generator, n: int = 4096
              ) -> dict[str, np.ndarray]:
    """Operand tuples related to each other: exponent differences 0/1/large, massive
    cancellation, exact ties and just above/below, overflow and underflow thresholds."""
    ops, fmts, out = spec.operands, spec.in_fmts, spec.out_fmt
    if spec.unit == "cvt" or max(f.width for f in fmts + (out,)) > 16:
        return {op: np.zeros(0, np.uint32) for op in ops}
    parts = []
    fa = fmts[0]
    if spec.unit in ("add", "fma"):
        # The addend c (or b) against the other operand (or the product a*b).
        fx = fmts[-1]
        x = _random_normals(fa, rng, n)
        if spec.unit == "add":
            lhs = {"a": x}
            lval = _values(fa, x)
        else:
            b = _random_normals(fmts[1], rng, n)
            lhs = {"a": x, "b": b}
            lval = _values(fa, x) * _values(fmts[1], b)
        sign = -1.0 if spec.subtract else 1.0
        # exponent difference 0, 1, 2, p, p+1, p+2 and large, either way round
        p = out.precision
        d = rng.choice(np.array([0, 1, -1, 2, -2, p, -p, p + 1, -(p + 1), p + 2, 3 * p, -3 * p]),
                       n)
        target = np.abs(lval) * np.exp2(-d.astype(np.float64)) * \
            np.where(rng.integers(0, 2, n) == 1, 1.0, -1.0) * \
            (1 + rng.random(n))  # random significand
        parts.append({**lhs, ops[-1]: _nearest(fx, target * sign)[0]})
        # massive cancellation: the addend is minus the other side, give or take a few codes
        for off in (-2, -1, 0, 1, 2):
            parts.append({**lhs, ops[-1]: _nearest(fx, -lval * sign, (off,))[0]})
        # ties: candidates over a spread of exponent distances, keep those nearest a tie
        cands = {**lhs, ops[-1]: _nearest(fx, target * sign, (0, 1))[rng.integers(0, 2)]}
        exact = lval + sign * _values(fx, cands[ops[-1]])
        parts.append({k: v[_select_ties(_tie_position(out, exact), n // 16)]
                      for k, v in cands.items()})
        # overflow threshold: max + half an ulp, and around it
        mx = out.code_value(out.max_finite_code)
        ulp = float(mx) - float(out.code_value(out.max_finite_code - 1))
        for frac in (0.25, 0.5, 0.75, 1.0):
            tgt = np.full(n // 8, float(mx) + frac * ulp)
            xs = _nearest(fa, tgt * rng.uniform(0.5, 1.0, n // 8))[0] if spec.unit == "add" \
                else None
            if spec.unit == "add":
                rest = tgt - _values(fa, xs)
                parts.append({"a": xs, "b": _nearest(fx, rest * sign)[0]})
    if spec.unit in ("mul", "fma"):
        fb = fmts[1]
        a = _random_normals(fa, rng, 8 * n)
        b = _random_normals(fb, rng, 8 * n)
        prod = _values(fa, a) * _values(fb, b)
        sel = _select_ties(_tie_position(out, prod), n // 8)
        tri = {"a": a[sel], "b": b[sel]}
        if spec.unit == "fma":   # a tiny c keeps the product's tie position (or just breaks it)
            tri["c"] = _nearest(fmts[2], np.zeros(len(sel)), (0,))[0]
        parts.append(tri)
        # overflow and underflow thresholds: b ~ max / a and b ~ min_normal / a
        a = _random_normals(fa, rng, n)
        va = np.abs(_values(fa, a))
        for bound in (float(out.max_finite), float(out.min_normal), float(out.min_subnormal)):
            for off in (-1, 0, 1):
                bb = _nearest(fb, bound / va * np.where(rng.integers(0, 2, n) == 1, 1, -1),
                              (off,))[0]
                tri = {"a": a, "b": bb}
                if spec.unit == "fma":
                    tri["c"] = _random_normals(fmts[2], rng, n,
                                               exp=rng.integers(0, 3, n)) * 0
                parts.append(tri)
    return {op: np.concatenate([p[op] for p in parts]).astype(np.uint32) for op in ops}


def biased_random(spec: UnitSpec, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """n operand tuples: a quarter uniform codes, a quarter corner-class codes, a quarter
    normals with small exponent distances, a quarter from :func:`relations`."""
    q = n // 4
    out = {}
    classes = [np.array(sorted({c for cs in corner_codes(f, rng, mids=8).values() for c in cs}),
                        dtype=np.uint32) for f in spec.in_fmts]
    base = _random_normals(spec.in_fmts[0], rng, q)
    e0 = _exp_field(spec.in_fmts[0], base)
    for i, (op, f) in enumerate(zip(spec.operands, spec.in_fmts)):
        uniform = rng.integers(0, 1 << f.width, n - 3 * q, dtype=np.uint64).astype(np.uint32)
        special = rng.choice(classes[i], q)
        near = base if i == 0 else _random_normals(f, rng, q, exp=e0 + rng.integers(-3, 4, q))
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


def mode_inputs(spec: UnitSpec, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """Per-vector ``rm`` (every code 0..7, reserved ones included) and ``rbits``."""
    out = {}
    if spec.has_rm:
        out["rm"] = rng.integers(0, 8, n).astype(np.uint32)
    if spec.has_rbits:
        out["rbits"] = rng.integers(0, 1 << spec.options.sr_bits, n,
                                    dtype=np.uint64).astype(np.uint32)
    return out


PARTS = ("exhaustive", "corners", "relations", "random")


def generate(spec: UnitSpec, part: str, params: dict, rng: np.random.Generator,
             chunk: int):
    """Yield dicts of input arrays of at most ``chunk`` vectors for one stimulus part."""
    if part == "exhaustive":
        start = int(params.get("start", 0))
        stop = int(params.get("stop", space_size(spec)))
        for s in range(start, stop, chunk):
            ops = exhaustive(spec, s, min(stop, s + chunk))
            yield {**ops, **mode_inputs(spec, rng, len(ops[spec.operands[0]]))}
        return
    if part == "corners":
        ops = corners(spec, rng)
    elif part == "relations":
        ops = relations(spec, rng, int(params.get("count", 4096)))
    elif part == "random":
        ops = biased_random(spec, rng, int(params["count"]))
    else:
        raise ValueError(f"unknown stimulus part {part!r}; valid: {', '.join(PARTS)}")
    n = len(ops[spec.operands[0]])
    for s in range(0, n, chunk):
        piece = {op: v[s:s + chunk] for op, v in ops.items()}
        yield {**piece, **mode_inputs(spec, rng, len(piece[spec.operands[0]]))}
