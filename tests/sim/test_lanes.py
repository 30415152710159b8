"""Multi-lane units (--lanes, --simd-width; rtl/fp_units/lanes.py) on the batch engine against
the golden model: each lane computes its own element, a corner placed in each lane in turn among
random neighbours; stochastic rounding's bits per lane, a dynamic rm shared; pipelined; and a
unit with two lanes exchanged is caught."""

import numpy as np
import pytest

from fpforge import golden
from fpforge.rtl.kinds import make_spec
from fpforge.sim.design import Design
from fpforge.sim.engines.batch import BatchEngine
from fpforge.sim.faults import faulty_design

# fp8e4m3 codes of every class: +-0, the smallest and largest subnormal, the smallest normal,
# 1, 1.875, the largest finite (448), NaN.
E4M3_CORNERS = [0x00, 0x80, 0x01, 0x07, 0x08, 0x38, 0x3f, 0x7e, 0xfe, 0x7f]


def random_inputs(spec, n: int, rng) -> dict:
    """Uniform codes on every input port (a lane axis for ports of lanes); rm over all eight
    codes (reserved ones included), fmt over every code of its width."""
    out = {}
    for p in spec.ports():
        if p.is_input and not p.is_control:
            shape = (n, p.lanes) if p.lanes > 1 else (n,)
            out[p.name] = rng.integers(0, 1 << p.lane_width, shape, dtype=np.uint64) \
                .astype(np.uint32)
    return out


def corner_in_each_lane(spec, corners, rng) -> dict:
    """Every pair of ``corners`` on a and b of one lane, in each lane in turn, the other lanes
    random (a slot layout: ports of lanes)."""
    pairs = np.array([(a, b) for a in corners for b in corners], dtype=np.uint32)
    L = spec.max_lanes
    out = random_inputs(spec, L * len(pairs), rng)
    for j in range(L):
        rows = slice(j * len(pairs), (j + 1) * len(pairs))
        out["a"][rows, j], out["b"][rows, j] = pairs[:, 0], pairs[:, 1]
    return out


def mismatches(design, spec, inputs) -> dict:
    """{port: how many vectors differ} between the design and the golden model of ``spec``."""
    got = BatchEngine().simulate(design, inputs)
    want = golden.evaluate(spec, **inputs)
    return {p: int((np.asarray(got[p]).astype(np.uint64) !=
                    np.asarray(want[p]).astype(np.uint64)).reshape(len(got[p]), -1)
                   .any(axis=1).sum()) for p in want}


def check(spec, inputs):
    assert mismatches(Design.of(spec), spec, inputs) == {"y": 0, "flags": 0}


MUL_X4 = make_spec("mul", format="fp8e4m3", lanes=4)


def test_mul_four_lanes_random_and_a_corner_in_each_lane():
    rng = np.random.default_rng(34)
    inputs = corner_in_each_lane(MUL_X4, E4M3_CORNERS, rng)
    extra = random_inputs(MUL_X4, 4000, rng)
    check(MUL_X4, {p: np.concatenate([inputs[p], extra[p]]) for p in inputs})


def test_cvt_from_float32_two_lanes():
    spec = make_spec("cvt", format="fp8e4m3", in_format="float32", lanes=2)
    rng = np.random.default_rng(35)
    n = 4000
    # Exponents around E4M3's range (2^-12 .. 2^10), and uniform codes (mostly out of range).
    near = (rng.integers(0, 2, (n, 2)) << 31) | ((127 + rng.integers(-12, 11, (n, 2))) << 23) | \
        rng.integers(0, 1 << 23, (n, 2))
    x = np.concatenate([near.astype(np.uint32), random_inputs(spec, n, rng)["x"]])
    check(spec, {"x": x})


@pytest.mark.parametrize("fmt, lanes", [("fp16", 2), ("fp8e4m3", 4)])
def test_simd_width_32_one_member(fmt, lanes):
    spec = make_spec("mul", formats=fmt, simd_width=32)
    assert spec.max_lanes == lanes and spec.packed
    check(spec, random_inputs(spec, 6000, np.random.default_rng(36)))


def test_stochastic_rounding_takes_its_bits_per_lane():
    spec = make_spec("add", format="fp8e4m3", lanes=3, rounding="stochastic")
    assert spec.port("rbits").lanes == 3
    rng = np.random.default_rng(37)
    inputs = random_inputs(spec, 6000, rng)
    # The same operands in every lane, different random bits: lanes that round differently.
    inputs["b"][:3000] = inputs["b"][:3000, :1]
    inputs["a"][:3000] = inputs["a"][:3000, :1]
    check(spec, inputs)


def test_dynamic_rounding_mode_is_shared_by_the_lanes():
    spec = make_spec("fma", format="fp8e5m2", lanes=2, rounding="dynamic")
    check(spec, random_inputs(spec, 6000, np.random.default_rng(38)))


@pytest.mark.parametrize("options", [dict(stages=2), dict(cuts="product,round",
                                                          rounding="dynamic")],
                         ids=["stages2", "cuts"])
def test_pipelined_lanes(options):
    spec = make_spec("mul", format="fp8e4m3", lanes=4, **options)
    check(spec, random_inputs(spec, 4000, np.random.default_rng(39)))


def test_packed_lanes_pipelined_with_bits_no_member_reads():
    """fp6 five lanes in 32 bits: a, b and c's top two bits ignored, y's zero."""
    spec = make_spec("fms", formats="fp6e3m2", simd_width=32, stages=1)
    assert spec.max_lanes == 5
    check(spec, random_inputs(spec, 4000, np.random.default_rng(40)))


def packed_inputs(spec, n: int, rng) -> dict:
    """``n`` vectors for every fmt code (those without a member included): random words with
    each element of the selected member drawn half uniform, half of moderate magnitude (its
    exponent field within 4 of the bias: products and sums that stay in range)."""
    codes = 1 << spec.fmt_width
    out = random_inputs(spec, n * codes, rng)
    out["fmt"] = np.repeat(np.arange(codes, dtype=np.uint32), n)
    for i, member in enumerate(spec.members):
        rows = slice(i * n, (i + 1) * n)
        for role in spec.operands:
            f = member.formats()[role]
            word = out[role][rows].astype(np.uint64)
            for j in range(spec.member_lanes(i)):
                low, w = spec.element(i, role, j)
                e = np.clip(f.bias + rng.integers(-4, 5, n), 1, (1 << f.exp_bits) - 2)
                moderate = (e << f.man_bits) | rng.integers(0, 1 << f.man_bits, n) | \
                    (rng.integers(0, 2, n) << (w - 1) if f.signed else 0)
                code = np.where(rng.integers(0, 2, n) == 1, moderate,
                                rng.integers(0, 1 << w, n)).astype(np.uint64)
                word = (word & ~np.uint64(((1 << w) - 1) << low)) | (code << np.uint64(low))
            out[role][rows] = word.astype(np.uint32)
    return out


@pytest.mark.parametrize("formats", [
    pytest.param("fp16,bf16,fp8e4m3,fp8e5m2", marks=pytest.mark.slow),   # within CVFPU's
    "fp32,fp16,bf16,fp8e4m3,fp8e5m2",                 # CVFPU's set; fmt codes 5..7 unused
    "fp8e4m3,fp8e5m2,fp6e3m2,fp6e2m3,fp4e2m1",        # f8f6f4: four, five and eight lanes
], ids=["16-8", "cvfpu", "f8f6f4"])
def test_simd_width_32_members_every_fmt_code(formats):
    spec = make_spec("mul", formats=formats, simd_width=32)
    check(spec, packed_inputs(spec, 400, np.random.default_rng(42)))


def test_simd_lanes_pipelined_stochastic_switching_format():
    """Two stages, every operation its own fmt and random bits per lane."""
    spec = make_spec("add", formats="fp16,fp8e4m3,fp8e5m2", simd_width=16, stages=2,
                     rounding="stochastic")
    inputs = packed_inputs(spec, 500, np.random.default_rng(43))
    order = np.random.default_rng(44).permutation(len(inputs["fmt"]))
    check(spec, {p: v[order] for p, v in inputs.items()})


def test_lanes_swapped_is_caught():
    inputs = random_inputs(MUL_X4, 2000, np.random.default_rng(41))
    bad = mismatches(faulty_design(MUL_X4, "lanes-swapped"), MUL_X4, inputs)
    assert 0 < bad["y"] <= 2000 and bad["flags"] == 0
