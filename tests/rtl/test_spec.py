"""The spec protocol (rtl/spec.py), the registry and the one option set (rtl/kinds.py), the
port contract (rtl/ports.py), for every kind."""

import re

import pytest

from fpforge.cli import parser
from fpforge.cli.common import spec_values
from kind_examples import EXAMPLES
from kind_examples import specs as kind_specs
from fpforge.rtl.kinds import (KINDS, SPEC_OPTIONS, UNITS, make_spec, spec_argv, spec_from_dict,
                               units_phrase)
from fpforge.rtl.options import FLAG_ORDER, FLAGS_WIDTH, RM_CODES, OptionError, Rounding, rm_name
from fpforge.rtl.ports import CONTROL, READY_OUT, Port
from fpforge.rtl.spec import Spec

SPECS = [
    make_spec("mul", format="fp8e4m3"),
    make_spec("mul", format="bf16", a_format="fp8e4m3", b_format="fp8e5m2", stages=2),
    make_spec("add", format="fp16", rounding="dynamic", saturate=True),
    make_spec("sub", format="fp6e2m3", rounding="stochastic", sr_bits=5, stages=1),
    make_spec("fma", format="fp8e4m3", c_format="fp16", subnormals=False),
    make_spec("cvt", format="fp4e2m1"),
    make_spec("cvt", format="e5m3", in_format="fp8e4m3", rounding="rod", stages=3),
    make_spec("mxq", format="fp6e3m2", in_format="bfloat16", block=4, scale_rule="even",
              rounding="stochastic", sr_bits=3, stages=2),
    make_spec("mxq", format="mxint8"),
    make_spec("mxdq", in_format="fp4e2m1", block=8, stages=1),
    make_spec("dot", a_format="fp8e4m3", b_format="fp4e2m1", n=5, accum="fixed", frac_bits=9,
              scales=False, format="bf16", rounding="rup"),
    make_spec("dot", in_format="mxint8", n=64, stages=3),
    make_spec("mxq", format="fp4e2m1", block=4, cuts="amax,round"),
    make_spec("mxdq", in_format="fp8e4m3", block=2, cuts="decode", stages=2),
    make_spec("dot", in_format="fp4e2m1", n=4, c_format="bf16", accum="fixed", frac_bits=8,
              cuts="decode,product,sum,round"),
    *kind_specs(),
]
IDS = [s.default_name for s in SPECS]


def test_every_kind_is_covered():
    assert list(EXAMPLES) == list(KINDS) and UNITS == tuple(KINDS)


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_round_trips(spec):
    assert isinstance(spec, Spec) and hash(spec) == hash(spec_from_dict(spec.to_dict()))
    assert make_spec(spec.unit, **spec.option_values()) == spec
    assert spec_from_dict(spec.to_dict()) == spec
    # spec_argv() is the command line's own spelling: parsed by the real parser, it builds the spec
    args = parser().parse_args(["verilog", *spec_argv(spec), "-o", "x.v"])
    assert make_spec(args.unit, **spec_values(args)) == spec


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_the_port_contract(spec):
    ports = spec.ports()
    names = [p.name for p in ports]
    assert len(names) == len(set(names))
    control = [n for n in names if n in CONTROL]
    # ready_o: the handshake units' alone (div, sqrt --arch iter)
    handshake = getattr(spec, "handshake", False)
    clocked = spec.stages or handshake
    assert control == ([] if not clocked else [n for n in CONTROL if n in names])
    assert set(control) == ((set(CONTROL) - ({READY_OUT} if not handshake else set()))
                            if clocked else set())
    assert [p.name for p in spec.inputs()] == [p.name for p in ports if p.is_input and
                                               p.name not in CONTROL]
    assert all(not p.is_input for p in spec.outputs())
    for p in ports:
        assert p.record() == {"name": p.name, "direction": p.direction, "width": p.width,
                              "meaning": p.meaning} and p.width == p.lanes * p.lane_width
        if p.name == "flags":       # 5 bits per lane (a multi-lane unit's lane j at j*5)
            assert p.lane_width == FLAGS_WIDTH and ", ".join(FLAG_ORDER) in p.meaning
    # a handshake unit's latency is its own (its cycles per operation), not a pipeline's
    assert "y" in names and spec.latency == (spec.digits + 1 if handshake else spec.stages)
    # a multi-format unit keys its members' roles role.i (a.0, y.1)
    assert {role.partition(".")[0] for role in spec.formats()} <= set(names) | {"x", "y"}
    assert re.fullmatch(r"[a-z][a-z0-9_]*", spec.default_name) and spec.describe()


def test_ports_are_validated():
    with pytest.raises(ValueError, match="port direction must be input or output, not 'inout'"):
        Port("a", "inout", 8, "")
    with pytest.raises(ValueError, match="port a: lanes must be a positive integer, not 0"):
        Port("a", "input", 8, "", lanes=0)


def test_the_registry_names_real_components_and_golden_functions():
    from fpforge.rtl.fp_units.unit import Unit
    for name, kind in KINDS.items():
        assert kind.name == name == kind.spec.unit
        assert issubclass(kind.component_class(), Unit) and \
            kind.component_class().unit == name
        assert callable(kind.golden_function())
        assert set(kind.spec.OPTIONS) <= {o.dest for o in SPEC_OPTIONS}


def test_options_a_kind_does_not_take_name_the_kinds_that_do():
    with pytest.raises(OptionError, match=r"^--block applies to units mxq and mxdq only, not "
                                          r"mul$"):
        make_spec("mul", block=8)
    takers = units_phrase(k for k, kd in KINDS.items() if "saturate" in kd.spec.OPTIONS)
    with pytest.raises(OptionError, match=rf"^--saturate applies to {takers} only, not dot "
                                          r"\(its result overflows to inf\)$"):
        make_spec("dot", in_format="fp8e4m3", saturate=True)
    assert make_spec("dot", in_format="fp8e4m3", saturate=False) == \
        make_spec("dot", in_format="fp8e4m3")          # a switch at its default is no option
    with pytest.raises(OptionError, match=rf"^unknown unit 'divide'; valid: {', '.join(KINDS)}$"):
        make_spec("divide")
    with pytest.raises(TypeError, match="unknown spec option"):
        make_spec("mul", formatt="fp8e4m3")


def test_defaults_per_kind():
    assert make_spec("mul").out_fmt.name == "float8_e4m3fn"
    assert make_spec("cvt").in_fmts[0].name == "float32"
    assert make_spec("mxdq", in_format="fp4e2m1").out_fmt.name == "float32"
    assert make_spec("dot", in_format="fp4e2m1").out_fmt.name == "float32"
    with pytest.raises(OptionError, match="unit dot needs its element format"):
        make_spec("dot")


def test_rm_codes_are_defined_once():
    assert [rm_name(c) for c in range(8)] == ["rne", "rtz", "rdn", "rup", "rna",
                                              "rne(reserved 5)", "rne(reserved 6)",
                                              "rne(reserved 7)"]
    assert RM_CODES[Rounding.RNA] == 4 and Rounding.ROD not in RM_CODES
    port = make_spec("add", rounding="dynamic").port("rm")
    assert port.meaning == ("rounding mode, RISC-V frm encoding: 0 rne, 1 rtz, 2 rdn, 3 rup, "
                            "4 rna; 5-7 round as rne")
