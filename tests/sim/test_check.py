"""sim/check.py and sim/packing.py: the one checker, its decoded reports, the wire format."""

import numpy as np
import pytest

from fpforge.rtl.format_names import resolve
from fpforge.rtl.kinds import make_spec
from fpforge.sim.check import UNDEFINED, Checker, bit_exact, describe_code, describe_flags, expected
from fpforge.sim.packing import UndefinedBits, from_binstr, to_binstr


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


def test_undefined_output_bits():
    with pytest.raises(UndefinedBits, match=r"non-binary bits \['x'\]"):
        from_binstr(["01x1"], 2, 2)
    marked = from_binstr(["01x1"], 2, 2, undefined="mark")
    assert marked.tolist() == [[UNDEFINED, 1]]          # lane 0 is the low bits: "x1"


def test_a_32_bit_all_ones_code_is_not_undefined():
    """float32's NaN 0xffffffff (or int32's -1) is a value; x bits on a 32-bit port are not it,
    so an x output where the golden model expects all ones is a mismatch."""
    ones, xs = from_binstr(["1" * 32, "x" * 32], 32, 1, undefined="mark")[:, 0]
    assert int(ones) == 0xFFFFFFFF and xs == UNDEFINED and ones != xs
    want = {"y": np.array([0xFFFFFFFF], np.uint32)}
    assert bit_exact(want, {"y": np.array([xs])}).tolist() == [True]
    assert bit_exact(want, {"y": np.array([ones])}).tolist() == [False]
    assert describe_code(resolve("float32"), ones) == "0xffffffff (NaN, nan)"


def test_report_decodes_codes_and_flags():
    fp16 = resolve("fp16")
    assert describe_code(fp16, 0x3C00) == "0x3c00 (+1, normal)"
    assert describe_code(fp16, 0x8000) == "0x8000 (-0, zero)"
    assert describe_code(fp16, 0x7D00) == "0x7d00 (NaN, snan)"
    assert describe_code(fp16, 0xFC00) == "0xfc00 (-inf, inf)"
    assert describe_code(None, 0x2A, 8) == "0x2a"
    assert describe_code(fp16, UNDEFINED) == "x/z (undefined bits)"
    assert describe_flags(0b10101) == "NV|OF|NX" and describe_flags(0) == "-"


def test_scalar_mismatch_is_two_decoded_lines():
    spec = make_spec("add", format="fp16", rounding="dynamic")
    c = Checker(spec, spec.inputs(), spec.outputs())
    inputs = {"a": np.array([0x3C00, 0]), "b": np.array([0x1400, 0]), "rm": np.array([4, 0])}
    c.check(inputs, 40, {"y": np.array([0x3C01, 0]), "flags": np.array([1, 0])},
            {"y": np.array([0x3C00, 0]), "flags": np.array([1, 0])})
    assert (c.vectors, c.mismatches) == (2, 1)
    assert c.lines[0] == "#40 a=0x3c00 (+1, normal) b=0x1400 (+0.0009765625, normal) rm=rna"
    assert c.lines[1] == ("    expected y=0x3c01 (+1.000977, normal) flags=NX    got y=0x3c00 "
                          "(+1, normal) flags=NX")


def test_bus_mismatch_names_the_differing_elements():
    spec = make_spec("mxq", format="fp8e4m3", block=4)
    c = Checker(spec, spec.inputs(), spec.outputs())
    want = {"scale": np.array([127]), "y": np.array([[0x38, 0, 0, 0x40]]),
            "flags": np.array([0])}
    got = {"scale": np.array([127]), "y": np.array([[0x38, 0, 1, 0x41]]), "flags": np.array([1])}
    c.check({"x": np.array([[0x3F800000, 0, 0, 0x40000000]])}, 0, want, got)
    assert c.lines[0] == "#0 x=[0x3f800000 0x00000000 0x00000000 0x40000000] rounding=rne"
    assert c.lines[1].startswith("    y: 2 of 4 elements differ: [2] expected 0x00 (+0, zero) "
                                 "got 0x01 (+0.001953125, subnormal); [3] expected 0x40")
    assert c.lines[2] == "    flags: expected -, got NX"


def test_compare_is_bit_exact_on_every_compared_port():
    mask = bit_exact({"y": [1, 2, 3], "flags": [0, 1, 0]}, {"y": [1, 2, 4], "flags": [0, 0, 0]})
    assert mask.tolist() == [False, True, True]
    bus = bit_exact({"y": np.array([[1, 2], [3, 4]])}, {"y": np.array([[1, 2], [3, 5]])})
    assert bus.tolist() == [False, True]


def test_checker_takes_an_injected_compare_and_keeps_max_report():
    spec = make_spec("mul", format="fp8e4m3")
    never = Checker(spec, spec.inputs(), spec.outputs(), compare=lambda w, g: np.zeros(3, bool))
    ones = {"y": np.ones(3), "flags": np.ones(3)}
    never.check({"a": np.zeros(3), "b": np.zeros(3)}, 0, ones, {"y": np.zeros(3),
                                                                "flags": np.zeros(3)})
    assert never.mismatches == 0
    strict = Checker(spec, spec.inputs(), spec.outputs(), max_report=2)
    strict.check({"a": np.zeros(3), "b": np.zeros(3)}, 0, ones, {"y": np.zeros(3),
                                                                 "flags": np.ones(3)})
    assert strict.mismatches == 3 and len(strict.reports) == 2


def test_absent_outputs_are_not_compared():
    spec = make_spec("mul", format="fp8e4m3")
    c = Checker(spec, spec.inputs(), [spec.port("y")], absent=("flags",))
    c.check({"a": np.zeros(1), "b": np.zeros(1)}, 0, {"y": [0], "flags": [1]},
            {"y": [0], "flags": [0]})
    assert c.mismatches == 0 and c.absent == ("flags",)


def test_expected_pads_to_one_batch_shape():
    spec = make_spec("mul", format="fp8e4m3")
    out = expected(spec, {"a": np.array([0x38], np.uint32), "b": np.array([0x40], np.uint32)},
                   batch=64)
    assert out["y"].tolist() == [0x40] and out["flags"].tolist() == [0]     # 1 x 2 = 2
    with pytest.raises(ValueError, match="65 vectors do not fit a golden batch of 64"):
        expected(spec, {"a": np.zeros(65, np.uint32), "b": np.zeros(65, np.uint32)}, batch=64)
