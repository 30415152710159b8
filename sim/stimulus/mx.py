"""The quantizer's and the dequantizer's stimulus (mxq, mxdq): random, non-finite and adversarial
float32 blocks; every element code under every scale."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from fpforge.rtl.elements import element_format
from fpforge.rtl.mx import MxDequantSpec, MxQuantSpec

from .base import unknown_part

__all__ = ["random_blocks", "nonfinite_blocks", "tensor_amaxes", "adversarial_blocks",
           "QUANTIZER_PARTS", "quantizer_part", "DEQUANTIZER_PARTS", "dequantizer_part"]

QUANTIZER_PARTS = ("random", "nonfinite", "adversarial")
DEQUANTIZER_PARTS = ("pairs",)


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


def quantizer_part(spec: MxQuantSpec, name: str, params: dict, rng) -> dict:
    k = spec.block
    if name == "random":
        x = random_blocks(rng, params["count"], k, params.get("spread", 40))
    elif name == "nonfinite":
        x = nonfinite_blocks(rng, params["count"], k)
    elif name == "adversarial":
        x = np.concatenate(list(adversarial_blocks(spec.elem, rng, k,
                                                   params.get("per_class", 4)).values()))
    else:
        raise unknown_part(spec, name, QUANTIZER_PARTS)
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

def dequantizer_part(spec: MxDequantSpec, name: str, params: dict, rng) -> dict:
    """Every element code under each scale, in a random order, k codes per vector: each row of
    codes is every code once, repeated until the rows fill whole blocks."""
    if name != "pairs":
        raise unknown_part(spec, name, DEQUANTIZER_PARTS)
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