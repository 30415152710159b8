"""The tensor-core accumulators (golden/tensor_core.py) against MMA-Sim's algorithm written
out again in exact rationals: elements decoded by ml_dtypes, each step's terms truncated and
summed as Fractions, the result rounded toward zero by hand."""

from __future__ import annotations

import math
from fractions import Fraction

import gmpy2
import ml_dtypes
import numpy as np
import pytest

from fpforge.golden import mx_quantize
from fpforge.golden.gemm import GemmConfig, emulated_matmul
from fpforge.golden.mx import channel_quantize
from fpforge.golden.tensor_core import FUSED_PRESETS
from fpforge.rtl.mx import MxQuantSpec, element_format
from fpforge.rtl.options import OptionError

from oracles.references import ml_decode

E_ZERO = -133


def _exp(v: Fraction, emin: int) -> int:
    """MMA-Sim's exponent: floor(log2 |v|), the minimum one for subnormals, E_ZERO for 0."""
    if v == 0:
        return E_ZERO
    e = math.floor(math.log2(abs(v)))
    while Fraction(2) ** e > abs(v):            # exact floor(log2) for rationals
        e -= 1
    while Fraction(2) ** (e + 1) <= abs(v):
        e += 1
    return max(e, emin)


def _toward_zero(v: Fraction, man_bits: int) -> Fraction:
    if v == 0:
        return Fraction(0)
    q = Fraction(2) ** (_exp(v, -126) - man_bits)
    r = math.trunc(v / q) * q
    return r if abs(r) < Fraction(2) ** 128 else (math.inf if v > 0 else -math.inf)


def reference(a, b, config: GemmConfig, frac_bits: int | None = None):
    acc = config.accum
    F = acc.frac_bits if frac_bits is None else frac_bits
    name = element_format(config.elem_a).grid.name
    emin = int(ml_dtypes.finfo(getattr(ml_dtypes, name)).minexp)
    k, kk = config.block, a.shape[1]
    if config.scaling == "channel":
        spec = MxQuantSpec(config.elem_a, block=k)
        (sa, ea), (sb, eb) = (channel_quantize(x, spec=spec, blocks=kk // k)
                              for x in (a, np.ascontiguousarray(b.T)))
    else:
        (sa, ea), (sb, eb) = (mx_quantize(x, config.elem_a, block=k)
                              for x in (a, np.ascontiguousarray(b.T)))
    sa, sb = ([[int(s) - 127 for s in row] for row in np.asarray(x)] for x in (sa, sb))
    va = [[Fraction(float(v)) for v in row] for row in ml_decode(np.asarray(ea), name)]
    vb = [[Fraction(float(v)) for v in row] for row in ml_decode(np.asarray(eb), name)]
    out = np.zeros((a.shape[0], b.shape[1]), np.float32)
    f32 = gmpy2.context(precision=24, emin=-148, emax=128, subnormalize=True,
                        round=gmpy2.RoundToNearest)
    for i in range(a.shape[0]):
        for j in range(b.shape[1]):
            c = Fraction(0)
            for g in range(kk // k):
                terms = []
                for t in range(g * k, (g + 1) * k):
                    p, e = va[i][t] * vb[j][t], _exp(va[i][t], emin) + _exp(vb[j][t], emin)
                    if acc.scales_in_group:
                        p *= Fraction(2) ** (sa[i][g] + sb[j][g])
                        e += sa[i][g] + sb[j][g]
                    terms.append((p, E_ZERO if p == 0 else e))
                terms.append((c, _exp(c, -126)))
                big = max(e for _, e in terms)
                total = sum(math.trunc(p * Fraction(2) ** (F - big)) for p, _ in terms)
                c = _toward_zero(total * Fraction(2) ** (big - F), acc.result.man_bits)
            if not acc.scales_in_group:
                c = c * Fraction(2) ** (sa[i][0] + sb[j][0])
                with gmpy2.context(f32) as ctx:
                    c = ctx.div(gmpy2.mpz(c.numerator), gmpy2.mpz(c.denominator))
            out[i, j] = np.float32(float(c))
    return out


def _data(shape, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 2.0 ** rng.integers(-10, 11, shape)).astype(np.float32)


CASES = [GemmConfig("fp8e4m3", accum="hopper_fp8", scaling="channel"),
         GemmConfig("fp8e5m2", accum="hopper_fp8", scaling="channel"),
         GemmConfig("fp8e4m3", accum="blackwell_mxf8f6f4"),
         GemmConfig("fp4e2m1", accum="blackwell_mxf8f6f4"),
         GemmConfig("fp6e3m2", accum="blackwell_mxf8f6f4", scaling="channel"),
         GemmConfig("fp8e5m2", block=16, accum="ada_fp8", scaling="channel")]


@pytest.mark.parametrize("config", CASES, ids=lambda c: f"{c.elem_a}-{c.scaling}-"
                         f"{next(n for n, a in FUSED_PRESETS.items() if a == c.accum)}")
def test_fused_accumulators_match_the_exact_rational_model(config):
    a, b = _data((3, 96), 1), _data((96, 4), 2)       # 3 steps of 32 products and c
    got = np.asarray(emulated_matmul(a, b, config))
    np.testing.assert_array_equal(got.view(np.uint32), reference(a, b, config).view(np.uint32))


def test_the_comparison_catches_one_fraction_bit_more():
    config = CASES[0]
    a, b = _data((3, 96), 3), _data((96, 4), 4)
    got = np.asarray(emulated_matmul(a, b, config))
    assert (got.view(np.uint32) != reference(a, b, config, frac_bits=14).view(np.uint32)).any()


@pytest.mark.parametrize("kwargs, says", [
    (dict(accum="hopper_fp8"), "scaling must be channel or tensor, not block"),
    (dict(accum="hopper_fp8", scaling="channel", block=16), "block must be 32, not 16"),
    (dict(elem_a="mxint8", accum="blackwell_mxf8f6f4"), "floating-point elements, not mxint8"),
])
def test_tensor_core_presets_refuse_what_the_instruction_cannot_do(kwargs, says):
    with pytest.raises(OptionError, match=says):
        GemmConfig(**kwargs)
