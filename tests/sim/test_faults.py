"""The benches can fail: deliberately wrong designs (sim/faults.py) must produce decoded
mismatch reports, on every engine that checks."""

import re

import pytest

from fpforge.rtl.kinds import make_spec
from fpforge.sim.design import Design
from fpforge.sim.engines.batch import BatchEngine
from fpforge.sim.engines.cocotb import CocotbEngine
from fpforge.sim.faults import FAULTS, faulty_design
from fpforge.sim.stream import Plan
from fpforge.sim.tiers import simulators


def run_fault(spec, fault, stimulus, engine=None):
    engine = engine or CocotbEngine(simulators()[0])
    return engine.verify(faulty_design(spec, fault), Plan(stimulus, seed=7, max_report=5))


def test_forced_flag_is_reported():
    spec = make_spec("mul", format="fp8e4m3")
    result = run_fault(spec, "force-inexact", [["corners", {}]])
    assert result["mismatches"] > 0
    lines = result["first_mismatches"]
    assert len(lines) == 2 * 5    # operand line + expected/got line per mismatch
    # Operands and results decoded: hex code, value, class; flags by name; the mode.
    assert re.search(r"a=0x[0-9a-f]{2} \([^,]+, (zero|subnormal|normal|nan|snan|inf)\)", lines[0])
    assert "rounding=rne" in lines[0]
    exp, got = lines[1].split("got")
    assert "NX" not in exp.split("flags=")[1] and "NX" in got.split("flags=")[1]
    # Exact products are the ones that differ: every reported expected flag set lacks NX.
    assert result["mismatches"] < result["vectors"]


@pytest.mark.parametrize("engine", [BatchEngine(), None], ids=["batch", "cocotb"])
def test_wrong_rounding_mode_is_reported(engine):
    spec = make_spec("add", format="fp8e5m2")       # the reference rounds to nearest even
    result = run_fault(spec, "rtz-instead", [["exhaustive", {"start": 0, "stop": 8192}]], engine)
    assert 0 < result["mismatches"] < result["vectors"] == 8192
    assert any("expected y=" in line for line in result["first_mismatches"])


def test_every_fault_applies_or_says_why():
    mul, mxdq = make_spec("mul", format="fp8e4m3"), make_spec("mxdq", in_format="fp8e4m3")
    for name in FAULTS:
        for spec in (mul, mxdq):
            try:
                d = faulty_design(spec, name)
            except ValueError as err:
                assert str(err) and "\n" not in str(err)
                continue
            assert isinstance(d, Design) and d.spec == spec and d.top != spec.default_name
    with pytest.raises(ValueError, match="has no flags output to force"):
        faulty_design(mxdq, "force-inexact")


def test_unknown_fault_is_rejected():
    with pytest.raises(ValueError, match="^unknown fault 'nope'; valid: force-inexact, "
                                         "force-invalid, rtz-instead, rna-instead, "
                                         "stochastic-a-instead, satfinite-instead, "
                                         "other-element-format, e8m0-scales-instead, "
                                         "frac-bits-fewer, wrong-clamp, other-minmax, "
                                         "sgnj-copy-only, classify-no-subnormal, "
                                         "cmp-zeros-ordered, amax-signed, i2f-other-signedness, "
                                         "f2i-wraps, func-faithful-as-correct, "
                                         "div-no-sticky, sqrt-no-sticky, other-member, "
                                         "reads-unused-bits, lanes-swapped, fmt-unregistered, "
                                         "dot-member-bias$"):
        faulty_design(make_spec("mul", format="fp8e4m3"), "nope")
