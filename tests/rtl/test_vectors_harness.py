"""sim/vectors.py: the harness itself (port checks, pipelined collection, both simulators)."""

from __future__ import annotations

import numpy as np
import pytest

from rtl.fp_units import build
from rtl.spec import UnitSpec
from sim.vectors import simulate, simulate_spec


def test_pipelined_matches_combinational():
    comb = UnitSpec.create("add", "fp8e5m2", rounding="dynamic")
    piped = UnitSpec.create("add", "fp8e5m2", rounding="dynamic", stages=3)
    rng = np.random.default_rng(5)
    a, b, rm = (rng.integers(0, 256, 3000, dtype=np.uint32) for _ in range(3))
    rm %= 8
    y0, f0 = simulate_spec(comb, a, b, rm=rm)
    y3, f3 = simulate_spec(piped, a, b, rm=rm)
    assert (y0 == y3).all() and (f0 == f3).all()


def test_inputs_must_match_ports():
    unit = build(UnitSpec.create("mul", "fp8e4m3"))
    with pytest.raises(ValueError, match=r"inputs must be exactly the ports \['a', 'b'\]; "
                                         r"missing \['b'\], unknown \['c'\]"):
        simulate(unit, {"a": np.zeros(4), "c": np.zeros(4)}, name="m")
    with pytest.raises(ValueError, match="input arrays must be non-empty and of equal length"):
        simulate(unit, {"a": np.zeros(4), "b": np.zeros(3)}, name="m")


def test_unknown_backend():
    unit = build(UnitSpec.create("mul", "fp8e4m3"))
    with pytest.raises(ValueError, match="backend must be one of iverilog, verilator, not 'x'"):
        simulate(unit, {"a": np.zeros(1), "b": np.zeros(1)}, name="m", backend="x")


@pytest.mark.slow
def test_verilator_backend_agrees_with_iverilog():
    spec = UnitSpec.create("fma", "fp8e4m3", rounding="stochastic", stages=2)
    rng = np.random.default_rng(9)
    ops = [rng.integers(0, 256, 5000, dtype=np.uint32) for _ in range(3)]
    rbits = rng.integers(0, 256, 5000, dtype=np.uint32)
    yi, fi = simulate_spec(spec, *ops, rbits=rbits)
    yv, fv = simulate_spec(spec, *ops, rbits=rbits, backend="verilator")
    assert (yi == yv).all() and (fi == fv).all()
