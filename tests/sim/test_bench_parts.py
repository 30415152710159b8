"""The benches' Python parts without a simulator: packing, stimulus, reports, configs."""

import numpy as np
import pytest

from rtl.formats import resolve
from rtl.spec import UnitSpec
from sim.bench.config import BenchConfig, spec_from_dict, spec_to_dict
from sim.bench.harness import Harness
from sim.bench.packing import UndefinedBits, from_binstr, to_binstr
from sim.bench.report import bit_exact, describe_code, describe_flags, mismatch_lines
from sim.bench.stimulus import (Corner, corner_codes, corners, exhaustive, generate, relations,
                                space_size)
from sim.bench.tiers import case_id, full_matrix, matrix_simulator, stimulus_for


@pytest.mark.parametrize("width", [1, 3, 5, 8, 11, 16, 20, 32])
def test_packing_round_trip_matches_python_ints(width):
    rng = np.random.default_rng(width)
    codes = rng.integers(0, 1 << width, (3, 7), dtype=np.uint64).astype(np.uint32)
    values = to_binstr(codes, width)
    for t in range(3):
        as_int = int(values[t], 2)        # lane i sits at bits [i*w, (i+1)*w)
        lanes = [(as_int >> (i * width)) & ((1 << width) - 1) for i in range(7)]
        assert lanes == [int(c) for c in codes[t]]
    assert (from_binstr(values, width, 7) == codes).all()


def test_undefined_output_bits_are_an_error():
    with pytest.raises(UndefinedBits, match=r"non-binary bits \['x'\]"):
        from_binstr(["01x1"], 2, 2)


def test_exhaustive_enumerates_every_pair_once():
    spec = UnitSpec.create("mul", "fp4e2m1")
    ops = exhaustive(spec, 0, space_size(spec))
    pairs = set(zip(ops["a"].tolist(), ops["b"].tolist()))
    assert len(pairs) == space_size(spec) == 256


def test_corner_classes_of_fp16():
    fp16 = resolve("fp16")
    cc = corner_codes(fp16, np.random.default_rng(0))
    assert cc[Corner.ZERO] == [0x0000, 0x8000]
    assert cc[Corner.MIN_SUBNORMAL] == [0x0001, 0x8001]
    assert cc[Corner.MAX_NORMAL] == [0x7BFF, 0xFBFF]
    assert cc[Corner.INF] == [0x7C00, 0xFC00]
    assert 0x7E00 in cc[Corner.QNAN] and all(fp16.classify(c) == "snan" for c in cc[Corner.SNAN])
    crossed = corners(UnitSpec.create("add", "fp16"), np.random.default_rng(0))
    n = len({c for v in cc.values() for c in v})
    assert len(crossed["a"]) == n * n


def test_relations_hit_ties_and_cancellation():
    """The relational stimulus really contains exact ties and exact cancellations."""
    spec = UnitSpec.create("add", "fp16")
    rel = relations(spec, np.random.default_rng(5), 2048)
    fp16 = spec.out_fmt
    a = np.array([float(fp16.code_value(int(c))) for c in rel["a"]])
    b = np.array([float(fp16.code_value(int(c))) for c in rel["b"]])
    s = a + b                                              # exact in float64 for fp16
    assert (s == 0).sum() > 100                            # massive cancellation, exactly
    s = s[np.isfinite(s) & (np.abs(s) < 65504)]
    y = s.astype(np.float16).astype(np.float64)            # numpy rounds to nearest even
    lower = np.nextafter(y.astype(np.float16), np.float16(-np.inf)).astype(np.float64)
    upper = np.nextafter(y.astype(np.float16), np.float16(np.inf)).astype(np.float64)
    ties = (np.abs(s - y) > 0) & ((s - lower == y - s) | (upper - s == s - y))
    assert ties.sum() > 10


def test_dynamic_and_stochastic_inputs_are_drawn_per_vector():
    spec = UnitSpec.create("add", "fp8e4m3", rounding="dynamic")
    chunk = next(generate(spec, "exhaustive", {}, np.random.default_rng(1), 4096))
    assert set(np.unique(chunk["rm"]).tolist()) == set(range(8))
    spec = UnitSpec.create("mul", "fp8e4m3", rounding="stochastic", sr_bits=6)
    chunk = next(generate(spec, "corners", {}, np.random.default_rng(1), 4096))
    assert chunk["rbits"].max() < 64 and len(np.unique(chunk["rbits"])) > 32


def test_report_decodes_codes_flags_and_modes():
    fp16 = resolve("fp16")
    assert describe_code(fp16, 0x3C00) == "0x3c00 (+1, normal)"
    assert describe_code(fp16, 0x8000) == "0x8000 (-0, zero)"
    assert describe_code(fp16, 0x7D00) == "0x7d00 (NaN, snan)"
    assert describe_code(fp16, 0xFC00) == "0xfc00 (-inf, inf)"
    assert describe_flags(0b10101) == "NV|OF|NX" and describe_flags(0) == "-"
    spec = UnitSpec.create("add", "fp16", rounding="dynamic")
    inputs = {"a": np.array([0x3C00]), "b": np.array([0x1400]), "rm": np.array([4])}
    lines = mismatch_lines(spec, inputs, [0x3C01], [1], [0x3C00], [1], [42], 10)
    assert lines[0] == "#42 a=0x3c00 (+1, normal) b=0x1400 (+0.0009765625, normal) rm=rna"
    assert "expected y=0x3c01" in lines[1] and "got y=0x3c00 (+1, normal)" in lines[1]


def test_compare_is_bit_exact_on_codes_and_flags():
    mask = bit_exact([1, 2, 3], [0, 1, 0], [1, 2, 4], [0, 0, 0])
    assert mask.tolist() == [False, True, True]


def test_config_round_trips_through_json():
    spec = UnitSpec.create("fma", "fp8e4m3", in_fmt="fp8e5m2", rounding="stochastic",
                           sr_bits=5, saturate=True, subnormals=False, stages=2)
    assert spec_from_dict(spec_to_dict(spec)) == spec
    cfg = BenchConfig.create(spec, [["corners", {}]], seed=9)
    assert BenchConfig.from_json(cfg.to_json()) == cfg and cfg.unit_spec == spec


def test_harness_geometry_and_ports():
    spec = UnitSpec.create("add", "fp8e4m3", rounding="dynamic", stages=2)
    h = Harness(spec, lanes=3, steps=5)
    assert (h.vectors, h.latency, h.cycles) == (15, 2, 7)
    top = h._top()
    assert "input [119:0] a;" in top and "input [44:0] rm;" in top      # 3 lanes x 5 steps
    assert "output reg [74:0] flags = 0;" in top
    assert top.count(f"{h.lane_name} lane") == 3
    with pytest.raises(ValueError, match="lanes must be a positive integer, not 0"):
        Harness(spec, lanes=0)


def test_tiers_and_ids():
    assert stimulus_for(UnitSpec.create("mul", "fp8e4m3")) == [["exhaustive", {}]]
    assert stimulus_for(UnitSpec.create("fma", "fp6e2m3")) == [["exhaustive", {}]]
    assert stimulus_for(UnitSpec.create("fma", "fp8e4m3"))[0] == ["corners", {}]
    assert stimulus_for(UnitSpec.create("cvt", "fp8e4m3", in_fmt="fp16")) == \
        [["exhaustive", {}]]
    assert case_id(UnitSpec.create("add", "fp16", rounding="rtz", saturate=True,
                                   subnormals=False, stages=2)) == \
        "add-float16-rtz-sat-ftz-s2"
    specs = full_matrix()
    assert len(specs) == len(set(specs)) == 13 * 4 * 8 * 2 * 2 * 2
    # make verify without SIM: Icarus for cvt and 8-bit mul/add, Verilator for the rest.
    route = {(s.unit, s.out_fmt.width): matrix_simulator(s) for s in specs}
    assert route[("mul", 8)] == route[("add", 8)] == route[("cvt", 16)] == "icarus"
    assert route[("fma", 8)] == route[("mul", 16)] == route[("fma", 6)] == "verilator"
