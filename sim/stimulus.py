"""Stimulus for the benches, keyed by kind: exhaustive ranges, named corner classes, relations
between operands, biased random, and the block kinds' structured blocks.

A stimulus is a list of parts ``[name, params]``, run in order. :func:`generate` yields chunks of
input arrays, one per data input port of the spec (``spec.inputs()``): shape (N,) for a one-lane
port, (N, lanes) for a packed bus (element i in column i, the unit's bits [i*w +: w]). Every
draw comes from the ``numpy.random.Generator`` passed in, seeded by the run's seed, so a run is
repeated exactly by it.

Parts (``PARTS``):

- every kind: ``exhaustive`` (``start``/``stop``: a range of the whole input space; every data
  input but rm and rbits, the last port's last element in the low bits of the index);
- scalar kinds (mul, add, sub, fma, cvt): ``corners`` (:class:`Corner` codes crossed over all
  operands), ``relations`` (operands aimed at exponent differences 0/1/large, massive
  cancellation, exact ties and just above/below, overflow and underflow thresholds, through the
  kind's real-number operation ``spec.EXACT``: exact in float64 for products and sums of
  <= 16-bit formats, a guide only for wider ones, where it only picks stimuli and never decides
  an expectation), ``random`` (``count``: biased random); ``rm`` and ``rbits`` are drawn per
  vector;
- mxq: ``random`` (``count`` normal blocks at magnitudes 2^+-spread), ``nonfinite`` (one inf or
  NaN per block), ``adversarial`` (``per_class`` blocks of every class of
  :func:`adversarial_blocks`); random ``rbits`` under stochastic rounding;
- mxdq: ``pairs``: every element code under each of ``scales`` (all 256 by default);
- dot: ``random`` (:func:`cancelling_rows`), ``specials`` (:func:`special_rows`), ``pairs``
  (:func:`pair_rows`: every (a_0, b_0) code pair).
"""

from __future__ import annotations

import enum
import functools
import itertools

import ml_dtypes
import numpy as np

from fpforge.rtl.formats import FloatFormat, Specials
from fpforge.rtl.dot import MxDotSpec
from fpforge.rtl.elements import element_format
from fpforge.rtl.mx import MxDequantSpec, MxQuantSpec
from fpforge.rtl.scalar import ScalarSpec
from fpforge.rtl.spec import Spec

__all__ = ["Corner", "corner_codes", "corners", "relations", "biased_random", "exhaustive",
           "space_size", "generate", "parts_of", "adversarial_blocks", "finite_codes",
           "random_blocks", "nonfinite_blocks", "cancelling_rows", "special_rows", "pair_rows",
           "mixed_rows"]


# ----- every kind --------------------------------------------------------------------------------

def _fields(spec: Spec) -> list[tuple[str, int, int]]:
    """(port, lanes, lane width) of the inputs the exhaustive space spans (rm and rbits are
    drawn per vector instead)."""
    return [(p.name, p.lanes, p.lane_width) for p in spec.inputs() if p.name not in MODE_PORTS]


def space_size(spec: Spec) -> int:
    """Number of distinct input tuples (rm and rbits not counted)."""
    return 1 << sum(lanes * w for _, lanes, w in _fields(spec))


def exhaustive(spec: Spec, start: int, stop: int) -> dict[str, np.ndarray]:
    """Input tuples number ``start`` .. ``stop - 1`` of the whole input space: the last port's
    last element in the low bits of the index."""
    idx = np.arange(start, stop, dtype=np.uint64)
    out, shift = {}, 0
    for port, lanes, w in reversed(_fields(spec)):
        cols = []
        for _ in range(lanes):
            cols.append(((idx >> np.uint64(shift)) & np.uint64((1 << w) - 1)).astype(np.uint32))
            shift += w
        out[port] = cols[0] if lanes == 1 else np.stack(cols[::-1], axis=1)
    return {port: out[port] for port, _, _ in _fields(spec)}


MODE_PORTS = ("rm", "rbits")


def mode_inputs(spec: Spec, rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    """Per-vector ``rm`` (every code the port can carry, reserved ones included) and ``rbits``
    (uniform), for the ports the spec has."""
    out = {}
    for p in spec.inputs():
        if p.name in MODE_PORTS:
            shape = (n,) if p.lanes == 1 else (n, p.lanes)
            out[p.name] = rng.integers(0, 1 << p.lane_width, shape,
                                       dtype=np.uint64).astype(np.uint32)
    return out


# ----- scalar kinds ------------------------------------------------------------------------------

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
        rest = {op: _random_normals(f, rng, m) for op, f in zip(ops[:-1], fmts[:-1])}
        vals = [_values(f, rest[op]) for op, f in zip(ops[:-1], fmts[:-1])]
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
        term = np.abs(base) * np.exp2(-d.astype(np.float64)) * \
            np.where(rng.integers(0, 2, n) == 1, 1.0, -1.0) * (1 + rng.random(n))
        parts.append({**rest, last: aim(base + term, slope, base)[0]})
        # massive cancellation: the result nearly zero, give or take a few codes
        for off in (-2, -1, 0, 1, 2):
            parts.append({**rest, last: aim(np.zeros(n), slope, base, (off,))[0]})
    # ties: candidates aimed near the rest's magnitude and at random, keep those nearest a tie
    rest, vals, base, slope = draw(8 * n)
    x = np.where(rng.integers(0, 2, 8 * n) == 1,
                 aim(base * (1 + rng.random(8 * n)), slope, base, (0, 1))[rng.integers(0, 2)],
                 _random_normals(fx, rng, 8 * n))
    with np.errstate(all="ignore"):
        result = exact(*vals, _values(fx, x))
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


def _scalar_part(spec: ScalarSpec, name: str, params: dict, rng) -> dict:
    if name == "corners":
        return corners(spec, rng)
    if name == "relations":
        return relations(spec, rng, int(params.get("count", 4096)))
    if name == "random":
        return biased_random(spec, rng, int(params["count"]))
    raise _unknown(spec, name)


# ----- block kinds -------------------------------------------------------------------------------

NAN_PATTERNS = (0x7F80_0000, 0xFF80_0000, 0x7FC0_0000, 0x7F80_0001, 0xFFFF_FFFF)  # inf, sNaN..


def random_blocks(rng, rows: int, k: int, spread: int = 40) -> np.ndarray:
    return (rng.standard_normal((rows, k)) *
            np.exp2(rng.integers(-spread, spread, (rows, 1)))).astype(np.float32)


def nonfinite_blocks(rng, rows: int, k: int) -> np.ndarray:
    """Random blocks with one inf or NaN (quiet or signalling, either sign) somewhere."""
    bits = random_blocks(rng, rows, k).view(np.uint32).copy()
    bits[np.arange(rows), rng.integers(0, k, rows)] = \
        np.array(NAN_PATTERNS, np.uint32)[np.arange(rows) % len(NAN_PATTERNS)]
    return bits.view(np.float32)


def _quantizer_part(spec: MxQuantSpec, name: str, params: dict, rng) -> dict:
    k = spec.block
    if name == "random":
        x = random_blocks(rng, params["count"], k, params.get("spread", 40))
    elif name == "nonfinite":
        x = nonfinite_blocks(rng, params["count"], k)
    elif name == "adversarial":
        x = np.concatenate(list(adversarial_blocks(spec.elem, rng, k,
                                                   params.get("per_class", 4)).values()))
    else:
        raise _unknown(spec, name)
    if spec.in_fmt.name == "bfloat16":
        with np.errstate(invalid="ignore"):        # NaN blocks stay NaN in bfloat16
            codes = x.astype(ml_dtypes.bfloat16).view(np.uint16)
    else:
        codes = x.view(np.uint32)
    out = {"x": codes}
    if spec.value_scaled:
        out["tensor_amax"] = tensor_amaxes(rng, x)
    if spec.has_rbits:
        out["rbits"] = rng.integers(0, 1 << spec.sr_bits, codes.shape, dtype=np.uint64)
    return out


# Tensor amaxes that are not a multiple of a block's: zero, the smallest subnormal, FLT_MAX,
# inf and NaN (the recipes' guards: S_enc's 1.0 and FLT_MAX, torchao's clamp).
AMAX_CORNERS = np.array([0, 1, 0x7F7F_FFFF, 0x7F80_0000, 0x7FC0_0000, 0x0080_0000],
                        np.uint32)


def tensor_amaxes(rng, x: np.ndarray) -> np.ndarray:
    """A float32 tensor amax per block (row): mostly the block's own largest finite magnitude
    times 2^j, j in [-4, 12] (a block below the tensor's largest, or one above a calibrated
    amax), the block amax itself, and every AMAX_CORNERS value."""
    with np.errstate(invalid="ignore", over="ignore"):
        mag = np.abs(x.astype(np.float64))
        amax = np.max(np.where(np.isfinite(mag), mag, 0), axis=-1)
        j = rng.integers(-4, 13, len(x))
        j[::5] = 0
        t = np.ldexp(amax, j).astype(np.float32).view(np.uint32).copy()
    t[::7][:len(AMAX_CORNERS)] = AMAX_CORNERS[:len(t[::7])]
    return t


def _max_elem(elem) -> float:
    return float(element_format(elem).grid.max_finite)


def _man_bits(elem) -> int:
    return element_format(elem).grid.man_bits


def adversarial_blocks(elem, rng, k: int = 32, per_class: int = 24) -> dict:
    """Named classes of float32 blocks (each an array (per_class, k)) that probe the scale rules
    and the element rounding. All values are exact float32 numbers (built with ldexp)."""
    e = element_format(elem)
    M, emax, mx = _man_bits(e), e.emax, _max_elem(e)
    f32 = np.float32

    def signs(shape):
        return np.where(rng.random(shape) < 0.5, -1.0, 1.0)

    def body(exps):
        # random values a few binades below the block's top, mixed signs
        n = (per_class, k)
        return signs(n) * np.ldexp(1 + rng.integers(0, 1 << 23, n) / 2**23,
                                   exps[:, None] - rng.integers(0, 12, n))

    def with_amax(amax):
        exps = np.floor(np.log2(amax)).astype(int)
        b = body(exps)
        b = np.clip(b, -amax[:, None], amax[:, None])
        pos = rng.integers(0, k, per_class)
        b[np.arange(per_class), pos] = amax * signs(per_class)
        return b

    ks = rng.integers(-100, 100, per_class)
    out = {}
    out["pow2_amax"] = with_amax(np.ldexp(1.0, ks))
    out["below_pow2"] = with_amax(np.ldexp(1 - 2.0**-24, ks))
    out["above_pow2"] = with_amax(np.ldexp(1 + 2.0**-23, ks))
    out["at_max_elem"] = with_amax(np.ldexp(mx, ks))
    out["above_max_elem"] = with_amax(np.ldexp(mx, ks) * (1 + 2.0**-23))
    # even: amax at / just below the tie where rounding to M+1 bits carries into the exponent
    tie = 2 - 2.0 ** -(M + 1)
    out["even_tie"] = with_amax(np.ldexp(tie, ks))
    out["below_even_tie"] = with_amax(np.ldexp(tie - 2.0**-23, ks))
    # element ties: odd multiples of half a grid step at random binades, amax pinning the scale
    # (an integer element's binades reach M / 2 below its 2^0, MXINT8's 3: the lowest fall
    # under its fixed 2^-M step)
    s = rng.integers(-60, 60, per_class)
    lo = -(M // 2) if e.twos_complement else e.grid.emin
    j = rng.integers(min(lo, emax) - M, emax - M + 1, (per_class, k))
    t = signs((per_class, k)) * np.ldexp(2 * rng.integers(0, 1 << (M + 1), (per_class, k)) + 1,
                                         j - 1 + s[:, None])
    t = np.clip(t, -np.ldexp(1.0, emax + s)[:, None], np.ldexp(1.0, emax + s)[:, None])
    t[:, 0] = np.ldexp(1.0, emax + s)
    out["element_ties"] = t
    # subnormal elements: values far below amax (element subnormals and float32 subnormals)
    b = with_amax(np.ldexp(1.0, rng.integers(-30, 30, per_class)))
    b[:, 1::2] = np.ldexp(signs((per_class, k // 2)) * rng.integers(1, 64, (per_class, k // 2)),
                          rng.integers(-40, -8, (per_class, k // 2)) + np.floor(
                              np.log2(np.abs(b[:, :1]))).astype(int))
    out["subnormal_elems"] = b
    fs = np.ldexp(rng.integers(1, 1 << 23, (per_class, k)).astype(np.float64), -149) * \
        signs((per_class, k))
    fs[:, 0] = np.ldexp(1.0, rng.integers(-126, -100, per_class))
    out["f32_subnormals_in_block"] = fs
    z = np.zeros((per_class, k))
    z[::2] = -0.0
    z[1::2, 3 % k] = -0.0
    out["all_zero"] = z
    h = body(np.full(per_class, -20)) * 1e-3
    h[:, 5 % k] = signs(per_class) * np.ldexp(1.5, rng.integers(60, 127, per_class))
    out["single_huge"] = h
    out["near_f32_max"] = with_amax(np.ldexp(2 - 2.0**-23, np.full(per_class, 127)))
    # blocks whose scale is 2^-127 (E8M0 code 0) but whose elements are not all zero
    # (floor(log2 amax) <= emax - 128 keeps every rule's exponent at or below -127)
    out["tiny_scale"] = with_amax(np.ldexp(1.0 + rng.integers(0, 7, per_class) / 8,
                                           rng.integers(-149, emax - 127, per_class)))
    return {name: v.astype(f32) for name, v in out.items()}


# ----- dequantizer ------------------------------------------------------------------------------

def _dequantizer_part(spec: MxDequantSpec, name: str, params: dict, rng) -> dict:
    """Every element code under each scale, in a random order, k codes per vector: each row of
    codes is every code once, repeated until the rows fill whole blocks."""
    if name != "pairs":
        raise _unknown(spec, name)
    scales = np.asarray(params.get("scales") or range(256))
    size, k = 1 << spec.elem.width, spec.block
    reps = k // np.gcd(size, k)
    codes = np.stack([np.concatenate([rng.permutation(size) for _ in range(reps)])
                      for _ in scales])
    per_scale = codes.shape[1] // k
    out = {"scale": np.repeat(scales, per_scale), "x": codes.reshape(-1, k)}
    if spec.value_scaled:
        # per block a random normal float32 amax, and the corners
        n = len(out["scale"])
        t = (rng.integers(1, 0xFF, n, dtype=np.uint32) << 23) | \
            rng.integers(0, 1 << 23, n, dtype=np.uint32)
        t[::7][:len(AMAX_CORNERS)] = AMAX_CORNERS[:len(t[::7])]
        out["tensor_amax"] = t
    return out


# ----- dot product ------------------------------------------------------------------------------

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
    return _values(e.grid, codes)


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
            total = np.sum(sums * _values(spec.scale_fmt, sa) * _values(spec.scale_fmt, sb), -1)
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


def _dot_part(spec: MxDotSpec, name: str, params: dict, rng) -> dict:
    ea, eb, n = spec.elem_a.name, spec.elem_b.name, spec.n
    seed = int(rng.integers(1 << 31))
    if name == "random":
        rows = cancelling_rows(ea, eb, n, params["count"], seed)
    elif name == "specials":
        rows = special_rows(ea, eb, n, params["count"], seed)
    elif name == "pairs":
        rows = pair_rows(ea, eb, n, seed)
    else:
        raise _unknown(spec, name)
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


# ----- the parts of each kind --------------------------------------------------------------------

# Spec class -> (its parts, the function that makes one); "exhaustive" is every kind's.
_PARTS = {
    ScalarSpec: (("corners", "relations", "random"), _scalar_part),
    MxQuantSpec: (("random", "nonfinite", "adversarial"), _quantizer_part),
    MxDequantSpec: (("pairs",), _dequantizer_part),
    MxDotSpec: (("random", "specials", "pairs"), _dot_part),
}
PARTS = ("exhaustive",) + tuple(dict.fromkeys(p for parts, _ in _PARTS.values() for p in parts))


def _kind_parts(spec: Spec):
    for cls in type(spec).__mro__:
        if cls in _PARTS:
            return _PARTS[cls]
    return (), None


def parts_of(spec: Spec) -> tuple[str, ...]:
    """The stimulus parts ``spec``'s kind has."""
    return ("exhaustive",) + _kind_parts(spec)[0]


def _unknown(spec: Spec, name: str) -> ValueError:
    return ValueError(f"unknown stimulus part {name!r} for unit {spec.unit}; valid: "
                      f"{', '.join(parts_of(spec))}")


def _shaped(spec: Spec, arrays: dict) -> dict:
    """The port-shape convention: (N,) for one lane, (N, lanes) for a bus."""
    out = {}
    for p in spec.inputs():
        if p.name not in arrays:
            continue
        v = np.asarray(arrays[p.name])
        if p.lanes == 1 and v.ndim == 2:
            v = v[:, 0]
        if v.ndim != (1 if p.lanes == 1 else 2) or (p.lanes > 1 and v.shape[1] != p.lanes):
            raise ValueError(f"stimulus for {p.name} has shape {v.shape}; the port has "
                             f"{p.lanes} lane(s)")
        out[p.name] = v
    return out


def generate(spec: Spec, parts: list, rng: np.random.Generator, chunk: int):
    """Yield dicts of input arrays (``spec.inputs()``) of at most ``chunk`` vectors, for every
    part of ``parts`` in order."""
    for name, params in parts:
        if name == "exhaustive":
            start = int(params.get("start", 0))
            stop = int(params.get("stop", space_size(spec)))
            for s in range(start, stop, chunk):
                piece = exhaustive(spec, s, min(stop, s + chunk))
                yield piece | mode_inputs(spec, rng, min(stop, s + chunk) - s)
            continue
        _, make = _kind_parts(spec)
        if make is None:
            raise _unknown(spec, name)
        full = _shaped(spec, make(spec, name, params, rng))
        n = len(next(iter(full.values())))
        for s in range(0, n, chunk):
            piece = {p: np.asarray(v[s:s + chunk]).astype(np.uint32) for p, v in full.items()}
            m = len(next(iter(piece.values())))
            yield piece | {p: v for p, v in mode_inputs(spec, rng, m).items() if p not in piece}
