"""The multi-format spec (rtl/multiformat.py): its members, ports, names and errors, and its
golden model against each member's own (golden/multiformat.py)."""

import numpy as np
import pytest

from fpforge import golden
from fpforge.rtl.kinds import make_spec, spec_argv, spec_from_dict
from fpforge.rtl.multiformat import MultiFormatSpec
from fpforge.rtl.options import Flag, OptionError


def test_members_ports_and_round_trip():
    s = make_spec("mul", formats="fp8e4m3,fp8e5m2")
    assert isinstance(s, MultiFormatSpec) and s.unit == "mul"
    assert [m.out_fmt.name for m in s.members] == ["float8_e4m3fn", "float8_e5m2"]
    assert [(p.name, p.width) for p in s.ports()] == \
        [("a", 8), ("b", 8), ("fmt", 1), ("y", 8), ("flags", 5)]
    assert s.default_name == "fp_mul_e4m3fn_or_e5m2_rne"
    assert spec_from_dict(s.to_dict()) == s
    assert spec_argv(s) == ["--unit", "mul", "--rounding", "rne", "--stages", "0",
                            "--formats", "float8_e4m3fn,float8_e5m2"]


def test_simd_lanes_follow_the_format():
    s = make_spec("mul", formats="fp32,fp16,bf16,fp8e4m3,fp8e5m2", simd_width=32,
                  rounding="stochastic")
    assert [s.member_lanes(i) for i in range(5)] == [1, 2, 2, 4, 4]
    widths = {p.name: p.width for p in s.ports()}
    assert widths == {"a": 32, "b": 32, "fmt": 3, "rbits": 32, "y": 32, "flags": 20}
    assert spec_from_dict(s.to_dict()) == s


def test_cvt_members_come_from_float32_by_default():
    s = make_spec("cvt", formats="fp8e4m3,fp8e5m2", lanes=4)
    assert all(m.in_fmts[0].name == "float32" for m in s.members)
    assert {p.name: (p.lanes, p.lane_width) for p in s.ports()} == \
        {"x": (4, 32), "fmt": (1, 1), "y": (4, 8), "flags": (4, 5)}


@pytest.mark.parametrize("values, message", [
    (dict(formats=""), "--formats takes a comma-separated list of one or more formats"),
    (dict(formats="fp8e4m3,float8_e4m3fn"), "is given twice (fmt 0 and 1)"),
    (dict(formats="fp8e4m3", format="fp16"), "--format names one format"),
    (dict(a_formats="fp16"), "--a-formats need --formats"),
    (dict(formats="fp8e4m3,fp8e5m2", a_formats="fp16,fp16,fp16"), "lists 3 formats"),
    (dict(formats="fp32,fp16", simd_width=16), "wider than --simd-width 16"),
    (dict(formats="fp16,fp8e4m3", simd_width=32, lanes=3), "--lanes 3 does not divide"),
    (dict(lanes=0), "--lanes must be an integer 1..64"),
])
def test_bad_sets_are_one_line_errors(values, message):
    with pytest.raises(OptionError, match=None) as err:
        make_spec("mul", **values)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_kinds_without_a_shared_datapath_refuse_formats():
    with pytest.raises(OptionError, match="applies to units mul, add, sub, fma, fms, cvt and dot"):
        make_spec("div", formats="fp16,bf16")


def test_golden_is_each_members_and_invalid_for_unused_codes():
    s = make_spec("mul", formats="fp8e4m3,fp8e5m2")
    a = np.repeat(np.arange(256, dtype=np.uint8), 256)
    b = np.tile(np.arange(256, dtype=np.uint8), 256)
    for code in (0, 1):
        out = golden.evaluate(s, a=a, b=b, fmt=np.full(a.shape, code, np.uint8))
        ref = golden.evaluate(s.members[code], a=a, b=b)
        assert np.array_equal(out["y"], ref["y"]) and np.array_equal(out["flags"], ref["flags"])
    # A one-bit selector has no unused code: a three-member set does.
    s3 = make_spec("mul", formats="fp8e4m3,fp8e5m2,fp6e3m2")
    out = golden.evaluate(s3, a=a[:99], b=b[:99], fmt=np.full(99, 3, np.uint8))
    assert not np.asarray(out["y"]).any() and (np.asarray(out["flags"]) == int(Flag.NV)).all()


def test_golden_simd_lanes_are_each_members_elements():
    s = make_spec("mul", formats="fp16,fp8e4m3", simd_width=32, rounding="stochastic")
    rng = np.random.default_rng(7)
    n = 400
    A, B = (rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32) for _ in range(2))
    F = rng.integers(0, 2, n).astype(np.uint8)
    R = rng.integers(0, 256, (n, 4)).astype(np.uint8)
    out = golden.evaluate(s, a=A, b=B, fmt=F, rbits=R)
    y, flags = np.asarray(out["y"]).astype(np.int64), np.asarray(out["flags"])
    for code, member in enumerate(s.members):
        w = member.out_fmt.width
        lanes, rows = 32 // w, F == code
        mask = (1 << w) - 1
        for j in range(4):
            if j >= lanes:
                assert not flags[rows, j].any()
                continue
            ref = golden.evaluate(member, a=(A[rows].astype(np.int64) >> (j * w)) & mask,
                                  b=(B[rows].astype(np.int64) >> (j * w)) & mask,
                                  rbits=R[rows, j])
            assert np.array_equal((y[rows] >> (j * w)) & mask, np.asarray(ref["y"]))
            assert np.array_equal(flags[rows, j], np.asarray(ref["flags"]))
        assert not (y[rows] >> (lanes * w)).any()
