"""The benches can fail: deliberately wrong units must produce decoded mismatch reports."""

import re

import pytest

from rtl.spec import UnitSpec
from sim.bench import runner
from sim.bench.tiers import config_for, simulators


def run_fault(spec, fault, stimulus):
    sim = simulators()[0]
    return runner.run(config_for(spec, sim, stimulus=stimulus, fault=fault, max_report=5), sim)


def test_forced_flag_is_reported():
    spec = UnitSpec.create("mul", "fp8e4m3")
    result = run_fault(spec, "force-inexact", [["corners", {}]])
    assert not result.ok
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


def test_wrong_rounding_mode_is_reported():
    spec = UnitSpec.create("add", "fp8e5m2")       # the reference rounds to nearest even
    result = run_fault(spec, "rtz-instead", [["exhaustive", {"start": 0, "stop": 8192}]])
    assert not result.ok
    assert 0 < result["mismatches"] < result["vectors"] == 8192
    assert any("expected y=" in line for line in result["first_mismatches"])


def test_unknown_fault_is_rejected():
    with pytest.raises(ValueError, match="unknown fault 'nope'; valid: force-inexact"):
        run_fault(UnitSpec.create("mul", "fp8e4m3"), "nope", [["corners", {}]])
