"""The multi-format dot spec (rtl/multidot.py): its members, ports, names, round trip and errors;
its Verilog read clean by Verilator -Wall, Icarus and Yosys. Its hardware against the golden
model: tests/sim/test_multidot_rtl.py."""

import pytest

from fpforge.rtl.kinds import make_spec, spec_argv, spec_from_dict
from fpforge.rtl.multidot import MultiDotSpec
from fpforge.rtl.options import OptionError

from tests.rtl.export_cases import check_batch, export_all

F8F6F4 = "fp8e4m3,fp8e5m2,fp6e3m2,fp6e2m3,fp4e2m1"
OCP_FP8 = "fp8e4m3,fp8e5m2"


def test_members_ports_and_round_trip():
    s = make_spec("dot", formats=F8F6F4, n=4, format="bf16")
    assert isinstance(s, MultiDotSpec) and s.unit == "dot" and s.out_fmt.name == "bfloat16"
    assert [m.elem_a.name for m in s.members] == F8F6F4.split(",")
    assert [(p.name, p.lanes, p.lane_width) for p in s.ports()] == \
        [("a", 4, 8), ("b", 4, 8), ("scale_a", 1, 8), ("scale_b", 1, 8), ("fmt", 1, 3),
         ("y", 1, 16), ("flags", 1, 5)]
    assert s.default_name == "mxdot_fp8e4m3_or_fp8e5m2_or_fp6e3m2_or_fp6e2m3_or_fp4e2m1_n4_" \
        "exact_e8m7_rne"
    assert spec_from_dict(s.to_dict()) == s
    assert spec_argv(s)[:4] == ["--unit", "dot", "--format", "bfloat16"]
    assert s.parameters()["members"][4] == {"fmt": 4, "element_a": "fp4e2m1",
                                            "element_b": "fp4e2m1"}
    assert s.header_lines()[1] == "fmt 1       [a: 4 x fp8e5m2, b: 4 x fp8e5m2] -> y: bfloat16"


def test_members_as_pairs():
    s = make_spec("dot", a_formats="fp8e4m3,fp4e2m1", b_formats="fp8e4m3", n=2, accum="fixed",
                  stages=1)
    assert [(m.elem_a.name, m.elem_b.name) for m in s.members] == \
        [("fp8e4m3", "fp8e4m3"), ("fp4e2m1", "fp8e4m3")]
    assert s.to_dict()["a_formats"] == "fp8e4m3,fp4e2m1" and s.to_dict()["b_formats"] == "fp8e4m3"
    assert spec_from_dict(s.to_dict()) == s
    assert s.element_man_bits == (3, 3)


@pytest.mark.parametrize("values, message", [
    (dict(formats=OCP_FP8, lanes=2), "--lanes applies to units"),
    (dict(formats=OCP_FP8, simd_width=16), "--simd-width applies to units"),
    (dict(formats=OCP_FP8, in_format="fp8e4m3"), "--in-format names one element format"),
    (dict(a_formats=OCP_FP8), "--a-formats and --b-formats need each other or --formats"),
    (dict(formats=OCP_FP8, b_formats="fp4e2m1,fp4e2m1,fp4e2m1"), "--b-formats lists 3"),
    (dict(formats="fp8e4m3,float8_e4m3fn"), "is given twice (fmt 0 and 1)"),
    (dict(formats="fp8e4m3,fp16"), "MX element format must be one of"),
    (dict(formats=""), "--formats takes a comma-separated list of one or more formats"),
])
def test_bad_sets_are_one_line_errors(values, message):
    with pytest.raises(OptionError) as err:
        make_spec("dot", n=4, **values)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_lanes_are_refused_on_direct_construction():
    s = make_spec("dot", formats=OCP_FP8, n=2)
    with pytest.raises(OptionError, match="^--lanes and --simd-width do not apply to dot"):
        MultiDotSpec(s.members, lanes=2)


def test_members_differ_only_in_elements():
    a, b = make_spec("dot", in_format="fp8e4m3", n=4), make_spec("dot", in_format="fp8e5m2", n=8)
    with pytest.raises(OptionError, match="only the element formats differ"):
        MultiDotSpec((a, b))


def test_verilog_is_lint_clean(tmp_path):
    specs = [make_spec("dot", formats=F8F6F4, n=2, accum="fixed", stages=2),
             make_spec("dot", formats=OCP_FP8, n=2, scales=False, cuts="decode,product,sum,round"),
             make_spec("dot", formats="fp8e4m3,fp4e2m1", n=2, scale_format="float8_e4m3fn"),
             make_spec("dot", a_formats="fp8e4m3,fp4e2m1,mxint8", b_formats="fp8e4m3", n=2,
                       accum="fixed", c_format="bf16")]
    check_batch(export_all(specs, tmp_path), specs)
