"""The emulated matrix multiply (golden/gemm.py) is the arithmetic of fpforge's RTL: its inner
loop run on the simulated units gives the same float32 bits.

For a small GEMM under each accumulator preset, the operands are quantized by the golden model,
then every block's dot product runs on the simulated RTL ``dot`` unit and the running sum on the
simulated ``add`` unit (a float accumulator), or the chain of tensor-core steps on the ``dot``
unit with its accumulator input ``c`` (MMA-Sim's presets: each step's result is the next c). The
float32 results must equal ``emulated_matmul`` bit for bit; with the tensor-core unit built one
fraction bit short (F - 1) they must not. The units run on the batch engine (Icarus, whole
arrays per run: no cocotb start per step); make test runs one case of each step, make test-all
every format of each.
"""

import numpy as np
import pytest

from fpforge.golden.gemm import emulated_matmul, matmul_codes
from fpforge.golden.gemm_config import Accumulator, GemmConfig
from fpforge.golden.gemm_operands import quantized_codes
from fpforge.golden.tensor_core import FUSED_PRESETS, FusedAccumulator, chained_steps
from fpforge.rtl.accum import TwoStage
from fpforge.rtl.scalar import AddSpec
from fpforge.rtl.options import UnitOptions
from fpforge.sim.design import Design
from fpforge.sim.engines.batch import BatchEngine
from fpforge.sim.faults import faulty_design

M, N = 3, 4


def _data(shape, seed):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 2.0 ** rng.integers(-6, 7, shape)).astype(np.float32)


def _simulate(design, inputs):
    out = BatchEngine().simulate(design, inputs)
    return np.asarray(out["y"]).astype(np.uint64)


def _blocks(codes, scales, k):
    """(rows, K) codes and (rows, K/k) scales -> per block: (rows, k) codes, (rows,) scales."""
    return [(codes[:, j * k:(j + 1) * k], scales[:, j]) for j in range(codes.shape[1] // k)]


def _pairs(a_part, b_part):
    """Every (row of a, row of b) pair as one vector: M * N rows, i-major."""
    return np.repeat(np.asarray(a_part), N, axis=0), \
        np.tile(np.asarray(b_part), (M,) + (1,) * (np.ndim(b_part) - 1))


def _widen(codes, fmt):
    """Codes of a format with float32's exponent field as float32 bit patterns."""
    return codes << (23 - fmt.man_bits)


def _float_accumulator_on_rtl(config, ea, sa, eb, sb):
    acc = config.accum
    dot = Design.of(config.dot_spec)
    add = Design.of(AddSpec(acc.fmt, (acc.fmt, acc.fmt), UnitOptions(rounding=acc.rounding)))
    add32 = Design.of(AddSpec("float32", ("float32", "float32"), UnitOptions()))
    blocks_a, blocks_b = _blocks(ea, sa, config.block), _blocks(eb, sb, config.block)
    every = (acc.promote_every or 1 << 30) // config.block
    partial = np.zeros(M * N, np.uint64)
    total = np.zeros(M * N, np.uint64)
    for j, ((xa, ya), (xb, yb)) in enumerate(zip(blocks_a, blocks_b)):
        a, b = _pairs(xa, xb)
        s_a, s_b = _pairs(ya, yb)
        y = _simulate(dot, {"a": a, "b": b, "scale_a": s_a, "scale_b": s_b})
        partial = _simulate(add, {"a": partial, "b": y})
        if (j + 1) % every == 0:
            total = _simulate(add32, {"a": total, "b": _widen(partial, acc.fmt)})
            partial = np.zeros_like(partial)
    if acc.promote_every is None:
        return _widen(partial, acc.fmt)
    if len(blocks_a) % every:
        total = _simulate(add32, {"a": total, "b": _widen(partial, acc.fmt)})
    return total


def _tensor_core_on_rtl(config, ea, sa, eb, sb, fault=None):
    spec = config.accum.dot_spec(config.elem_a, config.elem_b, config.scale_fmt)
    design = faulty_design(spec, fault) if fault else Design.of(spec)
    return chained_steps(config.accum, ea, sa, eb, sb, lambda inputs: _simulate(design, inputs))


FLOAT_CASES = [GemmConfig("fp8e4m3", block=32, accum="fp32"),
               GemmConfig("fp4e2m1", "fp6e2m3", block=16,
                          accum=Accumulator("bfloat16", promote_every=32))]
FUSED_CASES = [GemmConfig("fp8e4m3", accum="hopper_fp8", scaling="channel"),
               # slow: Hopper's step of [fp8e4m3xfp8e4m3-hopper_fp8-k32-floor] again, on E5M2
               pytest.param(GemmConfig("fp8e5m2", accum="hopper_fp8", scaling="channel"),
                            marks=pytest.mark.slow),
               GemmConfig("fp8e4m3", block=16, accum="ada_fp8", scaling="channel"),
               # slow: the step of [fp4e2m1xfp6e3m2-blackwell_mxf8f6f4-...] below, on E4M3
               pytest.param(GemmConfig("fp8e4m3", accum="blackwell_mxf8f6f4"),
                            marks=pytest.mark.slow),
               GemmConfig("fp4e2m1", "fp6e3m2", accum="blackwell_mxf8f6f4"),
               # kind::mxf4nvf4's grouped step: MXFP4 (slow: make test runs the step in
               # [fp4e2m1xfp4e2m1-blackwell_mxf4nvf4-k16-nvfp4_te]), and NVFP4 under
               # TransformerEngine's recipe
               pytest.param(GemmConfig("fp4e2m1", block=32, accum="blackwell_mxf4nvf4"),
                            marks=pytest.mark.slow),
               GemmConfig("fp4e2m1", block=16, accum="blackwell_mxf4nvf4",
                          scale_rule="nvfp4_te"),
               # CDNA3's two-stage step on its FNUZ formats
               GemmConfig("fp8e5m2fnuz", "fp8e4m3fnuz", block=16, accum="cdna3_fp8",
                          scaling="channel")]


def _operands(config, k_blocks, seed):
    k = config.accum.group if isinstance(config.accum, FusedAccumulator) else config.block
    a, b = _data((M, k_blocks * k), seed), _data((k_blocks * k, N), seed + 1)
    return a, b, [np.asarray(x) for x in quantized_codes(config, a, b, (None, None))]


@pytest.mark.parametrize("config", FLOAT_CASES, ids=["fp8e4m3-fp32", "fp4xfp6-bf16-promote"])
def test_emulated_matmul_is_the_simulated_dot_and_add_units(config):
    a, b, (ea, sa, eb, sb) = _operands(config, 3, seed=1)
    want = np.asarray(emulated_matmul(a, b, config)).view(np.uint32).reshape(-1)
    got = _float_accumulator_on_rtl(config, ea, sa, eb, sb).astype(np.uint32)
    np.testing.assert_array_equal(got, want)


def _fused_ids(c):
    step = next(name for name, acc in FUSED_PRESETS.items() if acc == c.accum)
    return f"{c.elem_a}x{c.elem_b or c.elem_a}-{step}-k{c.block}-{c.scale_rule}"


@pytest.mark.parametrize("config", FUSED_CASES, ids=_fused_ids)
def test_emulated_matmul_is_the_simulated_tensor_core_step(config):
    a, b, (ea, sa, eb, sb) = _operands(config, 3, seed=2)
    if config.value_scaled:     # the chain of steps, before the recipe's per-tensor factor
        want = np.asarray(matmul_codes(ea, sa, eb, sb, config=config))
    else:
        want = np.asarray(emulated_matmul(a, b, config))
    want = want.view(np.uint32).reshape(-1)
    got = _tensor_core_on_rtl(config, ea, sa, eb, sb).astype(np.uint32)
    np.testing.assert_array_equal(got, want)


def test_one_fraction_bit_fewer_in_the_unit_is_caught():
    config = FUSED_CASES[0]      # Hopper's E4M3 step
    a, b, (ea, sa, eb, sb) = _operands(config, 3, seed=2)
    want = np.asarray(emulated_matmul(a, b, config)).view(np.uint32).reshape(-1)
    got = _tensor_core_on_rtl(config, ea, sa, eb, sb, fault="frac-bits-fewer")
    assert np.count_nonzero(got.astype(np.uint32) != want) > 0


def test_every_tensor_core_preset_has_its_rtl_unit():
    for name, acc in FUSED_PRESETS.items():
        spec = acc.dot_spec((acc.elements or ("fp8e4m3",))[0])
        assert (spec.n, spec.accum, spec.out_fmt, spec.scaled) == \
            (acc.group, acc.accum, acc.result, acc.scales_in_group), name
        assert spec.accum.option_values()["accum"] == "fixed", name
        assert spec.c_fmt.name == "float32"
        assert spec.rounding.value == ("rne" if isinstance(acc.accum, TwoStage) else "rtz"), name
    assert isinstance(FUSED_PRESETS["hopper_fp8"], FusedAccumulator)
