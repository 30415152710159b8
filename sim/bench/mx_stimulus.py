"""What an MX bench run feeds its unit: the run's description and seeded rows of input codes.

A vector is one row of codes per input port: a block of k codes for ``x`` / ``rbits`` / ``a`` /
``b`` and a single code for ``scale`` / ``scale_a`` / ``scale_b``. Stimulus is a dict
``{port: (vectors, count) uint32}``, element i of a vector in column i (the unit's bits
[i*w +: w]). ``rtl.fp_units.mx_port_layout`` gives each port's (count, width).

Parts (``[name, params]`` in :class:`MxBenchConfig.stimulus`, run in order):

- mxq: ``random`` (normal blocks at magnitudes 2^+-spread), ``nonfinite`` (one inf or NaN per
  block), ``adversarial`` (every class of :func:`adversarial_blocks`); bfloat16 codes when the
  spec reads bfloat16, random ``rbits`` when it rounds stochastically;
- mxdq: ``pairs``: every element code under each of ``scales`` (all 256 by default);
- dot: ``random`` (:func:`cancelling_rows`), ``specials`` (:func:`special_rows`), ``pairs``
  (:func:`pair_rows`: every (a_0, b_0) code pair).

Every draw comes from the config's seed, so a run is repeated exactly by it.
"""

from __future__ import annotations

import itertools
from dataclasses import fields

import ml_dtypes
import numpy as np

from rtl.mx import MxDequantSpec, MxDotSpec, MxQuantSpec, element_format
from sim.bench.config import BenchConfig

__all__ = ["MxBenchConfig", "generate", "adversarial_blocks", "finite_codes",
           "cancelling_rows", "special_rows", "pair_rows", "mixed_rows", "SPEC_CLASSES"]

SPEC_CLASSES = {"mxq": MxQuantSpec, "mxdq": MxDequantSpec, "dot": MxDotSpec}


# ----- the run ----------------------------------------------------------------------------------

def _field_value(v):
    """A spec field as JSON: formats and modes by name (the specs resolve names back)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return getattr(v, "value", None) or v.name     # Rounding, ElementFormat, FloatFormat


def spec_to_dict(spec) -> dict:
    return {"unit": spec.unit, **{f.name: _field_value(getattr(spec, f.name))
                                  for f in fields(spec)}}


def spec_from_dict(d: dict):
    d = dict(d)
    return SPEC_CLASSES[d.pop("unit")](**d)


class MxBenchConfig(BenchConfig):
    """A :class:`~sim.bench.config.BenchConfig` whose spec is an MX spec (``lanes``, ``steps``
    and ``batch`` unused: the MX bench drives one vector per cycle)."""

    @classmethod
    def create(cls, spec, stimulus, **kw) -> "MxBenchConfig":
        return cls(spec=spec_to_dict(spec), stimulus=[list(p) for p in stimulus], **kw)

    @property
    def unit_spec(self):
        return spec_from_dict(self.spec)


def generate(spec, stimulus: list, seed: int) -> dict[str, np.ndarray]:
    """Every part of ``stimulus`` for ``spec``, concatenated in order."""
    rng = np.random.default_rng(seed)
    makers = {"mxq": _quantizer_part, "mxdq": _dequantizer_part, "dot": _dot_part}[spec.unit]
    parts = [makers(spec, name, params, rng) for name, params in stimulus]
    return {p: np.concatenate([part[p] for part in parts]).astype(np.uint32) for p in parts[0]}


# ----- quantizer --------------------------------------------------------------------------------

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
        raise ValueError(f"unknown mxq stimulus part {name!r}; valid: random, nonfinite, "
                         f"adversarial")
    if spec.in_fmt.name == "bfloat16":
        with np.errstate(invalid="ignore"):        # NaN blocks stay NaN in bfloat16
            codes = x.astype(ml_dtypes.bfloat16).view(np.uint16)
    else:
        codes = x.view(np.uint32)
    out = {"x": codes}
    if spec.has_rbits:
        out["rbits"] = rng.integers(0, 1 << spec.sr_bits, codes.shape, dtype=np.uint64)
    return out


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
    # (MXINT8's binades reach 3 below its 2^0: the lowest fall under its fixed 2^-6 step)
    s = rng.integers(-60, 60, per_class)
    lo = -3 if e.twos_complement else e.grid.emin
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
    z[1::2, 3] = -0.0
    out["all_zero"] = z
    h = body(np.full(per_class, -20)) * 1e-3
    h[:, 5] = signs(per_class) * np.ldexp(1.5, rng.integers(60, 127, per_class))
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
        raise ValueError(f"unknown mxdq stimulus part {name!r}; valid: pairs")
    scales = np.asarray(params.get("scales") or range(256))
    size, k = 1 << spec.elem.width, spec.block
    reps = k // np.gcd(size, k)
    codes = np.stack([np.concatenate([rng.permutation(size) for _ in range(reps)])
                      for _ in scales])
    per_scale = codes.shape[1] // k
    return {"scale": np.repeat(scales, per_scale)[:, None], "x": codes.reshape(-1, k)}


# ----- dot product ------------------------------------------------------------------------------

SPECIALS = {  # codes that are not finite numbers, per element format
    "fp8e4m3": [0x7F, 0xFF], "fp8e5m2": [0x7C, 0xFC, 0x7D, 0x7E, 0xFF],
}


def finite_codes(elem) -> np.ndarray:
    """Every element code that is a finite number."""
    e = element_format(elem)
    if e.twos_complement:
        return np.arange(256)
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
    twos = element_format(ea).twos_complement
    sign_a = 0x80 if twos else element_format(ea).grid.sign_mask
    cancel = slice(0, rows // 4)
    if not twos:
        a[cancel, half:2 * half] = a[cancel, :half] ^ sign_a
    else:
        a[cancel, half:2 * half] = (-a[cancel, :half].astype(np.int8)).view(np.uint8)
    b[cancel, half:2 * half] = b[cancel, :half]
    a[cancel, 0] = rng.choice(ca[:8], rows // 4)          # the small leftover
    sa = rng.integers(100, 155, rows).astype(np.uint8)
    sb = rng.integers(100, 155, rows).astype(np.uint8)
    sa[-4:] = [0, 0, 254, 254]
    sb[-4:] = [0, 1, 254, 200]
    if not scales:
        sa[:] = sb[:] = 127
    return a, b, sa, sb


def special_rows(ea, eb, n, rows, seed):
    """inf / NaN elements (where the format has them), zeros of both signs, NaN scales."""
    rng = np.random.default_rng(seed)
    ca, cb = finite_codes(ea), finite_codes(eb)
    a = rng.choice(ca, (rows, n)).astype(np.uint8)
    b = rng.choice(cb, (rows, n)).astype(np.uint8)
    za = 0x80 if ea == "mxint8" else element_format(ea).grid.sign_mask
    zb = 0x80 if eb == "mxint8" else element_format(eb).grid.sign_mask
    q = rows // 4
    # all-zero rows with random zero signs (MXINT8 has one zero)
    a[:q] = np.where(rng.random((q, n)) < 0.5, 0, za if ea != "mxint8" else 0)
    b[:q] = np.where(rng.random((q, n)) < 0.5, 0, zb if eb != "mxint8" else 0)
    a[:q // 2, :] = za if ea != "mxint8" else 0
    for col, (elem, arr) in enumerate(((ea, a), (eb, b))):
        sp = SPECIALS.get(elem)
        if sp:
            arr[q:3 * q, col] = rng.choice(sp, 2 * q)
            arr[q:2 * q:3, col + 1] = 0                           # 0 x inf
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
        raise ValueError(f"unknown dot stimulus part {name!r}; valid: random, specials, pairs")
    a, b, sa, sb = rows
    out = {"a": a, "b": b}
    if spec.scaled:
        out |= {"scale_a": sa[:, None], "scale_b": sb[:, None]}
    return out
