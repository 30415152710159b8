"""The native Verilator engine (``sim.bench.native``): its top module and, with a simulator,
that it checks a unit exhaustively and catches a broken one."""

import json
import shutil

import pytest

from rtl.spec import UnitSpec
from sim.bench import native
from sim.bench.config import BenchConfig


@pytest.mark.parametrize("width,expected", [(1, 1), (8, 1), (9, 2), (16, 2), (17, 4), (32, 4)])
def test_codes_sit_in_byte_containers(width, expected):
    assert native.container_bytes(width) == expected


def test_wider_ports_are_refused():
    with pytest.raises(ValueError, match="^ports of at most 32 bits, not 33$"):
        native.container_bytes(33)


def test_lanes_are_validated():
    with pytest.raises(ValueError, match="^lanes must be a positive integer, not 0$"):
        native.NativeTop(UnitSpec.create("mul", "fp8e4m3"), 0)


def test_top_puts_each_lane_on_constant_slices():
    # fp6 operands in byte containers; the 5 flag bits zero-extended to a byte.
    top = native.NativeTop(UnitSpec.create("add", "fp6e3m2", rounding="dynamic"), 3)
    text = top._top()
    assert "input [23:0] a;" in text and "input [23:0] rm;" in text
    assert ".a(a[16 +: 6])" in text and ".rm(rm[8 +: 3])" in text
    assert ".clk(" not in text    # combinational: the bare unit, no output register
    assert "assign flags[16 +: 8] = {3'd0, flags_2};" in text
    assert top.ports_header().splitlines() == [
        "#define LANES 3", "#define LATENCY 0",
        "#define FOR_INPUTS(X) X(a, 1) X(b, 1) X(rm, 1)",
        "#define FOR_OUTPUTS(X) X(y, 1) X(flags, 1)"]


def test_pipelined_latency_reaches_the_loop():
    top = native.NativeTop(UnitSpec.create("mul", "fp8e4m3", stages=2), 4)
    assert "#define LATENCY 2" in top.ports_header()
    assert ".clk(clk), .rst(rst), .valid_i(1'b1)" in top._top()


needs_verilator = pytest.mark.skipif(shutil.which("g++") is None, reason="needs a C++ compiler")


def _run(spec, n, **kw):
    cfg = BenchConfig.create(spec, [["exhaustive", {"start": 0, "stop": n}]], lanes=16,
                             batch=1 << 14, **kw)
    return native.run(cfg, native.build(cfg))


@pytest.mark.slow
@needs_verilator
@pytest.mark.parametrize("spec", [UnitSpec.create("mul", "fp8e4m3"),
                                  UnitSpec.create("add", "fp8e5m2", rounding="dynamic",
                                                  stages=2)],
                         ids=lambda s: s.default_name)
def test_native_engine_matches_the_golden_model(spec):
    # 65,536 pairs (not a multiple of the chunk's lanes x steps at the end: padding is checked)
    s = _run(spec, 65536 - 5)
    assert (s["vectors"], s["mismatches"]) == (65536 - 5, 0), s["first_mismatches"]


@pytest.mark.slow
@needs_verilator
def test_native_engine_catches_a_broken_unit():
    s = _run(UnitSpec.create("mul", "fp8e4m3"), 4096, fault="rtz-instead")
    assert s["mismatches"] > 0
    assert "expected y=" in s["first_mismatches"][1] and "rounding=rne" in s["first_mismatches"][0]


@pytest.mark.slow
@needs_verilator
def test_exhaustive_driver_runs_native_shards(capsys):
    from sim import exhaustive
    status = exhaustive.main(["--format", "fp8e4m3", "--unit", "mul", "--shards", "2"])
    out = capsys.readouterr().out
    assert status == 0, out
    merged = json.loads((exhaustive.OUT / "fp_mul_e4m3fn_rne.json").read_text())
    assert (merged["engine"], merged["vectors"], merged["mismatches"]) == ("native", 65536, 0)
    assert merged["complete"] and set(merged["per_shard"]) == {"0", "1"} and merged["cpu_s"] > 0
    assert "M vectors per CPU second" in out
