"""The operand data sets of the energy figures (codesign/power_data.py): a scaled dot unit's
vectors come as its block quantizer makes them, scalar operands as the format holds N(0, 1)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from fpforge.codesign.power_data import operand_vectors
from fpforge.golden.mx import mx_dequantize
from fpforge.rtl.kinds import make_spec

N = 400
MX = make_spec("dot", in_format="fp8e4m3", n=32)
NVFP4 = make_spec("dot", in_format="fp4e2m1", scale_format="fp8e4m3", n=32, accum="fixed",
                  frac_bits=24, sum_group=16)


def _fp4_magnitudes(codes) -> np.ndarray:
    return np.abs(np.asarray(codes, np.uint8).view(ml_dtypes.float4_e2m1fn).astype(np.float32))


def test_mx_vectors_dequantize_to_standard_normal_values():
    """E8M0 scales by OCP's floor rule: the dequantized vectors of N(0, 1) values have unit
    spread, and each block's largest element sits in the element format's top binade."""
    v = operand_vectors(MX, "gaussian", N)
    for vector in ("a", "b"):
        scales = v[f"scale_{vector}"].reshape(N, 1)
        values = np.asarray(mx_dequantize(scales.astype(np.uint8), v[vector].astype(np.uint8),
                                          "fp8e4m3", block=32))
        assert 0.9 < float(np.std(values)) < 1.1
        elements = np.abs(v[vector].astype(np.uint8).view(ml_dtypes.float8_e4m3fn)
                          .astype(np.float32))
        assert (elements.max(axis=1) >= 256).all()


def test_nvfp4_vectors_have_a_scale_per_group_and_fill_the_element_range():
    """float8_e4m3fn scales per group of 16 by the NVFP4 recipe: each group's largest element
    is 4 or 6 (its amax maps onto E2M1's largest value, 6)."""
    v = operand_vectors(NVFP4, "minilm", N)
    for vector in ("a", "b"):
        assert v[f"scale_{vector}"].shape == (N, 2)
        groups = _fp4_magnitudes(v[vector]).reshape(N, 2, 16).max(axis=2)
        assert (groups >= 4).all()


def test_element_quantization_per_operand_would_be_caught():
    """The checks above fail on elements quantized one by one (no block scale): N(0, 1)
    never reaches E4M3's top binade, nor most groups E2M1's."""
    v = operand_vectors(make_spec("mul", format="fp8e4m3"), "gaussian", N * 32)
    elements = np.abs(v["a"].astype(np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float32))
    assert not (elements.reshape(N, 32).max(axis=1) >= 256).any()
    fp4 = operand_vectors(make_spec("mul", format="fp4e2m1"), "gaussian", N * 32)["a"]
    assert not (_fp4_magnitudes(fp4).reshape(N, 2, 16).max(axis=2) >= 4).all()


@pytest.mark.parametrize("spec", [MX, NVFP4, make_spec("fma", format="fp16")])
def test_zeros_are_zero_and_uniform_covers_the_scales(spec):
    zeros = operand_vectors(spec, "zeros", 50)
    assert all(not np.any(np.asarray(c, dtype=object)) for c in zeros.values())
    uniform = operand_vectors(spec, "uniform", 50)
    assert set(uniform) == set(zeros) == {p.name for p in spec.inputs()}
    assert all(np.any(np.asarray(c, dtype=object)) for c in uniform.values())


def test_a_multi_format_unit_held_at_a_member_gets_that_members_operands():
    """fmt held at member i: member i alone's codes in member i's elements, 0 elsewhere (one
    lane: the low bits; packed SIMD: each lane at its own width; a dot: each slot's low bits)."""
    one = make_spec("mul", formats="fp8e4m3,fp4e2m1")
    simd = make_spec("mul", formats="fp16,fp8e4m3", simd_width=16)
    dot = make_spec("dot", formats="fp8e4m3,fp4e2m1", n=8)
    for spec, i, lanes, width in ((one, 1, 1, 4), (simd, 1, 2, 8), (dot, 1, 1, 8)):
        held = operand_vectors(spec, "gaussian", 50, member=i)
        alone = operand_vectors(spec.members[i], "gaussian", 50 * lanes)
        assert (np.asarray(held["fmt"]) == i).all()
        for op in ("a", "b"):
            words = np.asarray(held[op], np.int64).reshape(50, -1)
            if spec is dot:
                assert (words == alone[op]).all()
                continue
            lane = [(words[:, 0] >> (j * width)) & ((1 << width) - 1) for j in range(lanes)]
            assert (np.stack(lane, 1).ravel() == alone[op]).all()
            assert (words[:, 0] >> (lanes * width) == 0).all()


@pytest.mark.parametrize("spec, member, says", [
    (make_spec("mul", format="fp8e4m3"), 0,
     "fp_mul_e4m3fn_rne has no fmt input to hold at a member"),
    (make_spec("mul", formats="fp8e4m3,fp4e2m1"), 2, "the member fmt is held at must be 0..1 "
     "for fp_mul_e4m3fn_or_e2m1fin_rne, not 2")])
def test_holding_fmt_where_there_is_no_such_member(spec, member, says):
    from fpforge.rtl.options import OptionError
    with pytest.raises(OptionError) as err:
        operand_vectors(spec, "gaussian", 8, member=member)
    assert str(err.value) == says
