"""The gates engine (sim/engines/gates.py): Yosys's gate netlist of a combinational or pipelined
module, 256 vectors per gate operation, behind the native engine's pipe protocol. Every case is a
comparison that can fail: with the golden model over every input, with Icarus (the batch engine)
on the same inputs, and a wrong unit must fail exactly as Icarus finds it failing."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from kind_examples import SMALL, small
from fpforge.cli import main
from fpforge.rtl.kinds import make_spec
from fpforge.sim.design import Design
from fpforge.sim.engines.batch import BatchEngine
from fpforge.sim.engines.gates import GatesEngine, netlist_model
from fpforge.sim.errors import DesignError
from fpforge.sim.faults import faulty_design
from fpforge.sim.frontend import Sources
from fpforge.sim.stream import Plan
from fpforge.sim.verify import verify_exhaustive

from tests.fpforge.test_verify_command import CVT, NARROW, RNE, TIES_AWAY, write

SPEC = make_spec("mul", format="fp8e4m3")
# exp2's table leaves words unfilled (x in Verilog: tied to 0 here), amax has a bus; the other
# kinds in make test-all.
QUICK_KINDS = ("exp2", "amax")


# A register at every cut point of the multiplier: 4 cycles, the outputs after the last one.
PIPELINED = make_spec("mul", format="fp8e4m3", cuts="decode,product,core,round")


# The 4-bit multiplier's 256 inputs in 3 shards are shorter than a step: they start mid-step and
# end padded (the index split into rows, then into words).
FP4 = make_spec("mul", format="fp4e2m1")


@pytest.mark.parametrize("spec, shards", [(SPEC, 1), (SPEC, 3), (PIPELINED, 3), (FP4, 3)],
                         ids=["comb-1", "comb-3", "pipelined-3", "mid-step-3"])
def test_every_input_of_a_small_unit(spec, shards):
    # Whole steps from multiples of 256 (the index's bits written as words): one shard, and
    # three (their edges on multiples of 256); the pipelined unit's outputs are read its latency
    # later, its last inputs held to drain it.
    v = verify_exhaustive(Design.of(spec), shards=shards, progress=False, log=lambda *_: 0,
                          engine="gates")
    assert v.ok, v.explain()
    inputs = 1 << sum(f.width for f in spec.in_fmts)
    assert (v.summary["vectors"], v.summary["engine"], v.summary["lanes"]) == \
        (inputs, "gates", 256)


@pytest.mark.parametrize("unit", [pytest.param(u, marks=() if u in QUICK_KINDS else
                                               pytest.mark.slow) for u in SMALL])
def test_every_input_of_every_kind(unit):
    result = GatesEngine().verify(Design.of(small(unit)), Plan([["exhaustive", {}]], seed=3))
    assert result["mismatches"] == 0 and result["vectors"] > 0, result["first_mismatches"]


def test_a_netlist_in_many_parts_gives_the_same_verdicts():
    """64 statements per function of model.cpp: gates, and the pipeline's old and new state,
    cross the functions through the array; a wrong unit fails exactly as in one part."""
    plan = Plan([["exhaustive", {}]], seed=3)
    for spec in (SPEC, PIPELINED):
        result = GatesEngine(part=64).verify(Design.of(spec), plan)
        assert result["mismatches"] == 0 and result["vectors"] == 1 << 16
    wrong = faulty_design(PIPELINED, "rtz-instead")
    parts, whole = GatesEngine(part=64).verify(wrong, plan), GatesEngine().verify(wrong, plan)
    assert parts["mismatches"] == whole["mismatches"] > 0
    assert parts["first_mismatches"] == whole["first_mismatches"]


@pytest.mark.parametrize("spec", [SPEC, PIPELINED], ids=["comb", "pipelined"])
def test_a_wrong_unit_fails_exactly_as_on_icarus(spec):
    design = faulty_design(spec, "rtz-instead")
    plan = Plan([["exhaustive", {}]])
    gates, icarus = GatesEngine().verify(design, plan), BatchEngine().verify(design, plan)
    assert gates["mismatches"] == icarus["mismatches"] > 0
    assert gates["first_mismatches"] == icarus["first_mismatches"]


@pytest.mark.parametrize("spec", [
    make_spec("add", format="fp16", rounding="dynamic"),              # rm: not an index field
    make_spec("mul", format="fp8e5m2", rounding="stochastic"),        # rbits
    make_spec("mul", format="fp8e4m3", lanes=3),                      # elements per port
    make_spec("dot", format="fp16", in_format="fp8e4m3", n=2),        # 8-bit buses, 16-bit out
    make_spec("add", format="fp16", rounding="dynamic", stages=2),    # pipelined, rm
    # buses through a register: make test-all (make test pipelines the 8-bit multiplier's every
    # input and the adder above)
    pytest.param(make_spec("dot", format="fp16", in_format="fp8e4m3", n=2, stages=1),
                 marks=pytest.mark.slow),
], ids=lambda s: s.default_name)
def test_outputs_equal_icarus_on_the_same_inputs(spec):
    design = Design.of(spec)
    rng = np.random.default_rng(5)
    n = 3000                          # not a multiple of 256: the last step padded
    inputs = {p.name: rng.integers(0, 1 << p.lane_width, (n, p.lanes) if p.lanes > 1 else n,
                                   dtype=np.uint32) for p in design.inputs}
    gates, icarus = GatesEngine().simulate(design, inputs), BatchEngine().simulate(design, inputs)
    assert set(gates) == {p.name for p in design.outputs}
    for port, want in icarus.items():
        assert np.array_equal(gates[port], want), port


def test_what_it_does_not_simulate_is_refused_naming_the_native_engine(tmp_path):
    with pytest.raises(DesignError, match="has a handshake; the gates engine steps every lane on "
                                          "one clock: use --engine native"):
        GatesEngine().build(Design.of(make_spec("div", format="fp6e2m3", arch="iter")))
    sv = tmp_path / "unit.sv"
    sv.write_text("module unit; endmodule\n")
    with pytest.raises(DesignError, match="SystemVerilog sources; .* use --engine native"):
        GatesEngine().build(replace(Design.of(SPEC), sources=Sources(files=(sv,))))


def test_a_netlist_with_state_or_an_undriven_input_is_refused():
    design = Design.of(SPEC)
    latch = "aag 3 1 1 1 1\n2\n4 6\n4\n6 2 4\n"
    with pytest.raises(DesignError, match="combinational design without state; Yosys finds 1 "
                                          "flip-flop or latch bits: use --engine native"):
        netlist_model(latch, "", design)
    stray = "aag 2 2 0 1 0\n2\n4\n2\n"
    with pytest.raises(DesignError, match=r"reads stray\[0\], which no data input drives"):
        netlist_model(stray, "input 0 0 a\ninput 1 0 stray\noutput 0 0 y\n", design)
    one_bit = ("aag 1 1 0 1 0\n2\n2\n", "input 0 0 a\noutput 0 0 y\n", design)
    with pytest.raises(DesignError, match=r"has no output y\[1\], y\[2\]"):
        netlist_model(*one_bit)
    # output bits tied to a constant come from the ports' bits, not from the map
    tied = {("y", k): k % 2 for k in range(1, 8)} | {("flags", k): 0 for k in range(5)}
    model = netlist_model(*one_bit, constants=tied)
    assert "out[0] = n1;" in model and "out[1] = ONES;" in model and "out[2] = ZERO;" in model
    # a pipelined design's clock is no data: y[0] = a[0] & clk
    piped = Design.of(make_spec("mul", format="fp8e4m3", stages=1))
    with pytest.raises(DesignError, match="reads the clock clk as data: use --engine native"):
        netlist_model("aag 3 2 0 1 1\n2\n4\n6\n6 2 4\n",
                      "input 0 0 a\ninput 1 0 clk\noutput 0 0 y\n", piped, constants=tied)


@pytest.mark.parametrize("stages", [[], ["--stages", "2"]], ids=["comb", "pipelined"])
def test_verify_exhaustive_on_the_gates_engine(capsys, stages):
    status = main(["verify-exhaustive", "--unit", "mul", "--format", "fp4e2m1", "--shards", "2",
                   "--engine", "gates", *stages])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "256 of 256 vectors, 0 mismatches" in out and "gates engine" in out


def test_a_users_module_passes_and_its_rounding_bug_fails(tmp_path, capsys):
    """An independent Verilog module (other port names, no flags port) on the gates engine."""
    common = ["verify-exhaustive", "--engine", "gates", *CVT, "--top", "my_narrow",
              "--port", "x=h", "--port", "y=q"]
    status = main([*common, "--verilog", write(tmp_path, RNE)])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "65,536 of 65,536 vectors, 0 mismatches" in out
    status = main([*common, "--verilog", write(tmp_path, TIES_AWAY, "ties.v")])
    out = capsys.readouterr().out
    assert status == 1 and "FAIL" in out


# NARROW (test_verify_command.py: fp16 -> E5M2) between two registers: the first with an
# asynchronous active-low reset and a clock enable the bench holds high; the variants the engine
# must refuse edit the second.
PIPE = """
module my_pipe(input clk, input rst_n, input ce, input [15:0] h, output reg [7:0] q);
  reg [15:0] h1;
  wire [7:0] q1;
  always @(posedge clk or negedge rst_n)
    if (!rst_n) h1 <= 16'd0; else if (ce) h1 <= h;
  my_narrow narrow(.h(h1), .q(q1));
  always @(%s clk) q <= q1;
endmodule
"""
PIPE_ARGS = ["verify-exhaustive", "--engine", "gates", *CVT, "--top", "my_pipe", "--port", "x=h",
             "--port", "y=q", "--clock", "clk", "--reset", "rst_n", "--reset-active-low",
             "--tie", "ce=1", "--latency", "2"]


def _pipe(tmp_path, inc, edge="posedge", name="pipe.v"):
    path = tmp_path / name
    path.write_text(NARROW % inc + PIPE % edge)
    return str(path)


def test_a_users_pipelined_module_passes_and_its_rounding_bug_fails(tmp_path, capsys):
    assert main([*PIPE_ARGS, "--verilog", _pipe(tmp_path, RNE)]) == 0, capsys.readouterr().out
    assert "65,536 of 65,536 vectors, 0 mismatches" in capsys.readouterr().out
    assert main([*PIPE_ARGS, "--verilog", _pipe(tmp_path, TIES_AWAY, name="ties.v")]) == 1
    assert "FAIL" in capsys.readouterr().out


@pytest.mark.parametrize("edge, edit, says", [
    ("negedge", {}, "has flip-flops on a falling clock edge"),
    ("posedge", {"always @(posedge clk) q": "reg half = 0;\n  always @(posedge clk) half <= "
                                           "~half;\n  always @(posedge half) q"},
     "has flip-flops on another clock than clk"),
    ("posedge", {"always @(posedge clk) q <= q1": "always @* if (q1[0]) q = q1"},
     "has a latch or a flip-flop without a clock"),
], ids=["falling-edge", "two-clocks", "latch"])
def test_state_the_loop_cannot_step_is_refused(tmp_path, capsys, edge, edit, says):
    path = Path(_pipe(tmp_path, RNE, edge))
    text = path.read_text()
    for old, new in edit.items():
        assert old in text
        text = text.replace(old, new)
    path.write_text(text)
    assert main([*PIPE_ARGS, "--verilog", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and "use --engine native" in err


def test_a_module_with_a_latch_and_no_latency_is_refused(tmp_path, capsys):
    path = tmp_path / "latch.v"
    path.write_text("module my_latch(input [15:0] h, output reg [7:0] q);\n"
                    "  always @* if (h[0]) q = h[15:8];\nendmodule\n")
    assert main(["verify-exhaustive", "--engine", "gates", *CVT, "--top", "my_latch", "--port",
                 "x=h", "--port", "y=q", "--verilog", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has flip-flops or latches but no latency: a pipelined " \
        "module needs --latency N and --clock NAME" in err


def test_a_users_includes_and_defines_reach_yosys(tmp_path, capsys):
    """The module's rounding comes from an included file, chosen by a define."""
    inc = tmp_path / "inc"
    inc.mkdir()
    (inc / "round.vh").write_text(f"`ifdef TIES_AWAY\n`define INC {TIES_AWAY}\n`else\n"
                                  f"`define INC {RNE}\n`endif\n")
    src = Path(write(tmp_path, '0;\n`include "round.vh"\n  wire inc2 = `INC', "inc.v"))
    src.write_text(src.read_text().replace("trunc + {7'd0, inc}", "trunc + {7'd0, inc2}"))
    common = ["verify-exhaustive", "--engine", "gates", *CVT, "--top", "my_narrow",
              "--port", "x=h", "--port", "y=q", "--verilog", str(src), "--include", str(inc)]
    assert main(common) == 0, capsys.readouterr().out
    capsys.readouterr()
    assert main([*common, "--define", "TIES_AWAY"]) == 1
    assert "FAIL" in capsys.readouterr().out


def test_a_define_the_script_cannot_carry_is_refused(tmp_path, capsys):
    status = main(["verify-exhaustive", "--engine", "gates", *CVT, "--top", "my_narrow",
                   "--port", "x=h", "--port", "y=q", "--verilog", write(tmp_path, RNE),
                   "--define", "NOTE=a b"])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1
    assert "--define NOTE=a b: the gates engine passes defines" in err and "--engine native" in err
