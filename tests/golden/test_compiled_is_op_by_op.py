"""golden/blockscale.py compiles block_quantize and block_dequantize as one XLA program per
recipe and shape, golden/gemm_operands.py the float32 scale of a row or tensor; XLA may treat
float arithmetic differently inside a program (on the CPU it contracts a float32 a * b + c into
one fused multiply-add). The model's float32 arithmetic is integer-only, so the programs must
give the bits op-by-op evaluation (``jax.disable_jit``) gives: this file compares them, byte
for byte, on a corpus of the corner cases. It is a claim about XLA's default compilation,
which make test's fast compilation would not test (tests/conftest.py): each test runs under
XLA's defaults."""

from __future__ import annotations

from dataclasses import replace

import jax
import numpy as np
import pytest

from fpforge.golden.blockscale import block_dequantize, block_quantize
from fpforge.golden.gemm_config import GemmConfig
from fpforge.golden.gemm_operands import float_scales
from fpforge.rtl.blockscale import PRESETS, Arithmetic, ValueRule, preset
from fpforge.rtl.formats import CATALOG

pytestmark = pytest.mark.xla_defaults


def _f32(*patterns):
    return np.array(patterns, np.uint32).view(np.float32)


def _rows(block, *values):
    """One row of 64: ``values`` in the first block, the rest of each block from a cycle of them."""
    row = np.resize(np.asarray(values, np.float32), 64)
    row[block:] = np.resize(np.asarray(values, np.float32)[::-1], 64 - block)
    return row


def corpus():
    """(64, 64) float32: special rows, then ties and random data over the whole exponent range.
    Blocks of 16 or 32 along a row, or 16 x 16 tiles, each see a mix of these."""
    rng = np.random.default_rng(35)
    e2m1_ties = [6.0, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, -0.25, -0.75, -1.25, -1.75, -2.5,
                 -3.5, -5.0, 0.0]
    s2 = np.float32(51.89953) / np.float32(2688)
    special = [
        np.zeros(64, np.float32),                                   # an all-zero block
        _rows(16, 0.0, -0.0, -0.0, 1.0),                            # signed zeros
        _rows(16, np.inf, 1.0, -2.0, 3.5),                          # infinities
        _rows(16, -np.inf, 0.5, np.inf, 0.0),
        _rows(16, *_f32(0x7FC0_0000, 0x3F80_0000, 0xFFC0_0000, 0x0)),   # NaNs, quiet
        _rows(16, *_f32(0x7F80_0001, 0x4000_0000, 0xFF80_0001, 0x7F80_0000)),  # signalling
        _f32(*rng.integers(1, 0x80_0000, 64)) * np.where(rng.random(64) < .5, -1, 1)
        .astype(np.float32),                                        # subnormals only
        _rows(16, *_f32(0x1, 0x8000_0001, 0x7F_FFFF, 0x0)),         # the smallest, the largest
        _rows(16, *_f32(0x7F7F_FFFF, 0xFF7F_FFFF, 0x3F80_0000, 0x1)),   # FLT_MAX, tiny
        _f32(*rng.integers(0x7F00_0000, 0x7F80_0000, 64)),          # near FLT_MAX
        _rows(16, *e2m1_ties),                                      # E2M1 ties at scale 1
        _rows(16, *_f32(0x41B0_D439, 0x4180_0000)),                 # an E4M3 block-scale tie
        _rows(16, np.float32(288.0) * np.float32(6) * s2, 13.901661),   # x / (sf s2) ties
        _rows(16, *(np.float32(448) * np.float32(2.0) ** -np.arange(16))),   # scale ladder
        np.array(([448.0, 464.0, 480.0, 0.0] * 16), np.float32),   # E4M3's overflow edge
        np.array(([6.0, 7.0, 3.0, 0.0] * 16), np.float32) * np.float32(2.0) ** -130,
    ]
    # Few significant bits over the whole exponent range make ties in every element format.
    sig = rng.integers(1, 64, (48, 64)).astype(np.float32)
    exp = rng.integers(-150, 124, (48, 1)) + rng.integers(-12, 1, (48, 64))
    few = sig * np.float32(2.0) ** exp.astype(np.float32) * np.where(rng.random((48, 64)) < .5,
                                                                     -1, 1)
    return np.concatenate([np.stack(special), few.astype(np.float32)])


def _tensor_amaxes(scaling):
    """The extremes: 0, the smallest and the largest subnormal, FLT_MAX, inf, NaN; 6 * 448
    (s2 = 1); the amaxes of the pinned ties. (P3109 and the power-of-two rules take none.)"""
    if not isinstance(scaling.rule, ValueRule) or scaling.rule.arithmetic is Arithmetic.P3109:
        return []
    return [*_f32(0x0, 0x1, 0x7F_FFFF, 0x7F7F_FFFF, 0x7F80_0000, 0x7FC0_0000, 0x4528_0000,
                  0x41D7_4524), np.float32(51.89953)]


def _bits(a):
    return None if a is None else np.asarray(a).tobytes()


def _run(scaling, x, amax, rbits):
    q = block_quantize(x, scaling, tensor_amax=amax, rbits=rbits)
    te = isinstance(scaling.rule, ValueRule) and scaling.rule.arithmetic is Arithmetic.TE
    y = block_dequantize(q, scaling, tensor_amax=(np.float32(1.0) if amax is None else amax)
                         if te else None)
    return [_bits(q.scales), _bits(q.elements), _bits(q.tensor_scale), _bits(y)]


def assert_jit_is_op_by_op(scaling, *, every_call=True):
    """``every_call``: also the data's own amax and a stochastic rounding (two more programs to
    compile); without it, the given amaxes (one program) or, for rules without one, the
    data's."""
    x = corpus()
    rbits = np.random.default_rng(7).integers(0, 1 << 32, x.shape, dtype=np.uint32)
    calls = [(amax, None) for amax in _tensor_amaxes(scaling)]
    if every_call or not calls:
        calls += [(None, None), (None, rbits)]
    for amax, r in calls:
        jitted = _run(scaling, x, amax, r)
        with jax.disable_jit():
            eager = _run(scaling, x, amax, r)
        for part, a, b in zip(("scales", "elements", "tensor scale", "values"), jitted, eager):
            assert a == b, f"{scaling.name}, tensor amax {amax}, rbits {r is not None}: " \
                f"{part} differ"


E4M3 = CATALOG["float8_e4m3fn"]
VARIANTS = {
    **PRESETS,
    "mx_ceil-fp4e2m1": preset("mx_ceil", "fp4e2m1"),
    "mx_even-fp6e3m2": preset("mx_even", "fp6e3m2"),
    "mx_rceil-fp6e2m3": preset("mx_rceil", "fp6e2m3"),
    "mx_floor-fp8e5m2": preset("mx_floor", "fp8e5m2"),
    "mx_floor-e4m3-scales": replace(preset("mx_floor", "fp4e2m1"), name="mx_floor_e4m3",
                                    scale_fmt=E4M3),
    "mx_floor-tiles": replace(preset("mx_floor"), block=16, tile=True),
    "nvfp4_te-tiles": replace(preset("nvfp4_te"), tile=True),
    "nvfp4_modelopt-fp8e4m3": preset("nvfp4_modelopt", "fp8e4m3"),
}
# make test: NVFP4's two arithmetics, TE's (a division into the encode scale, products with
# reciprocals) and ModelOpt's (divisions by products), on the extreme tensor amaxes. torchao,
# P3109 and the power-of-two rules run the same float32 operations (golden/fp32.py) in other
# orders; they, other formats, tiles, the data's amax and stochastic rounding, on every call,
# in make test-all (test_every_variant_compiled_is_op_by_op).
QUICK = {"nvfp4_te", "nvfp4_modelopt"}


@pytest.mark.parametrize("name", sorted(QUICK))
def test_compiled_blockscale_is_op_by_op(name):
    """Scales, element codes, the second-level scale and the dequantized values of the corpus,
    compiled and op by op, byte for byte."""
    assert_jit_is_op_by_op(VARIANTS[name], every_call=False)


@pytest.mark.slow
@pytest.mark.parametrize("name", VARIANTS)
def test_every_variant_compiled_is_op_by_op(name):
    assert_jit_is_op_by_op(VARIANTS[name])


@pytest.mark.parametrize("scaling", ["channel_f32", "tensor_f32"])
def test_compiled_float_scales_are_op_by_op(scaling):
    """The float32 scale of each row (and of the tensor) of the corpus: zero, infinite, NaN,
    subnormal and FLT_MAX rows, for FP4's and FP8's largest values."""
    x = corpus()
    for elem in ("fp4e2m1", "fp8e4m3"):
        config = GemmConfig(elem, scaling=scaling)
        jitted = [np.asarray(f).tobytes() for f in float_scales(config, x, x.T)]
        with jax.disable_jit():
            eager = [np.asarray(f).tobytes() for f in float_scales(config, x, x.T)]
        assert jitted == eager, f"{elem} {scaling}"


def test_this_file_compiles_as_users_do():
    """Why the file runs under XLA's defaults: compiled so, a * b + c is one fused multiply-add
    (one rounding) where op-by-op evaluation rounds twice; make test's fast compilation
    (tests/conftest.py) rounds twice in both, and would hide a kernel that contracts."""
    a, b, c = np.random.default_rng(5).standard_normal((3, 4096)).astype(np.float32)
    jitted = np.asarray(jax.jit(lambda a, b, c: a * b + c)(a, b, c))
    with jax.disable_jit():
        eager = np.asarray(jax.numpy.asarray(a) * b + c)
    assert (jitted.view(np.uint32) != eager.view(np.uint32)).any()
