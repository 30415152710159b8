"""Valid/ready handshakes (``--ready-in``, ``--ready-out``, ``--stalls``, ``--bubbles``): an
elastic shell written here around fpforge's own E4M3 multiplier (a capture stage that waits a
cycle more when a's lowest bit is set, a 2-entry result FIFO, a tag carried along) passes under
random back-pressure and bubbles on the cocotb engine and every input on the native one; shells
broken in one way each fail the way they should: a result dropped when the FIFO is full (the run
stops: "no result after N cycles for vector K"), results reordered after a stall and operands
recaptured while not ready (mismatches), and a shell that never says a result is valid."""

from string import Template

import pytest

from fpforge.cli import main
from fpforge.rtl import emit
from fpforge.rtl.kinds import make_spec
from fpforge.sim.stream import cycle_budget

SPEC = make_spec("mul", format="fp8e4m3")
MUL = ["--unit", "mul", "--format", "fp8e4m3"]

# $leave: when the capture stage hands its operation on; $capture: when it loads operands;
# $head: which FIFO entry is shown; $valid: out_valid.
SHELL = Template("""
module hs_mul(clk, rst, in_valid, in_ready, a, b, out_valid, out_ready, y, flags, tag_o);
  input clk, rst, in_valid, out_ready;
  output in_ready, out_valid;
  input [7:0] a, b;
  output [7:0] y;
  output [4:0] flags;
  output [3:0] tag_o;
  reg s1_v = 0, s1_wait = 0, stalled = 0, head = 0, tail = 0;
  reg [7:0] s1_a = 0, s1_b = 0;
  reg [3:0] s1_tag = 0, tag = 0;
  reg [1:0] count = 0;
  reg [16:0] mem0 = 0, mem1 = 0;                 // {tag, flags, y}
  wire [7:0] m_y;
  wire [4:0] m_flags;
  fp_mul_core core(.a(s1_a), .b(s1_b), .y(m_y), .flags(m_flags));
  wire pop = out_valid & out_ready;
  wire space = count != 2 | pop;
  wire push = s1_v & ~s1_wait & space;
  wire leave = s1_v & ~s1_wait & ($leave);
  assign in_ready = ~s1_v | leave;
  wire take = in_valid & in_ready;
  always @(posedge clk) begin
    if (rst) begin
      s1_v <= 0; s1_wait <= 0; count <= 0; head <= 0; tail <= 0; tag <= 0; stalled <= 0;
    end else begin
      if ($capture) begin s1_a <= a; s1_b <= b; end
      if (take) begin
        s1_v <= 1; s1_wait <= a[0]; s1_tag <= tag; tag <= tag + 1;
      end else begin
        if (leave) s1_v <= 0;
        s1_wait <= 0;
      end
      if (push) begin
        if (tail) mem1 <= {s1_tag, m_flags, m_y}; else mem0 <= {s1_tag, m_flags, m_y};
        tail <= ~tail;
      end
      if (pop) head <= ~head;
      count <= count + push - pop;
      stalled <= out_valid & ~out_ready;
    end
  end
  assign out_valid = $valid;
  assign {tag_o, flags, y} = ($head) ? mem1 : mem0;
endmodule
""")
GOOD = {"leave": "space", "capture": "take", "head": "head", "valid": "count != 0"}
BROKEN = {
    "drops": {"leave": "1'b1"},                         # hands on even when the FIFO is full
    "reorders": {"head": "head ^ (count == 2 & stalled)"},   # the newer entry after a stall
    "recaptures": {"capture": "in_valid"},             # loads operands while not ready
    "silent": {"valid": "1'b0"},                        # never says a result is valid
}
HANDSHAKE = ["--top", "hs_mul", "--clock", "clk", "--reset", "rst", "--valid-in", "in_valid",
             "--ready-in", "in_ready", "--valid-out", "out_valid", "--ready-out", "out_ready"]


@pytest.fixture(scope="module")
def shells(tmp_path_factory):
    """The shell and its broken variants, each a file with the multiplier's Verilog."""
    d = tmp_path_factory.mktemp("handshake")
    core = emit.verilog(SPEC, "fp_mul_core")
    paths = {}
    for name, change in {"good": {}, **BROKEN}.items():
        paths[name] = d / f"hs_{name}.v"
        paths[name].write_text(core + SHELL.substitute({**GOOD, **change}))
    return paths


def verify(capsys, *args):
    status = main(["verify", *MUL, *args])
    out = capsys.readouterr()
    return status, out.out + out.err


def test_the_shell_passes_under_stalls_and_bubbles(shells, capsys):
    status, out = verify(capsys, "--verilog", str(shells["good"]), *HANDSHAKE,
                         "--stalls", "0.3", "--bubbles", "0.3")
    assert status == 0, out
    assert "PASS, 65,536 vectors, 0 mismatches" in out


def test_a_result_dropped_under_back_pressure_stops_the_run(shells, capsys):
    status, out = verify(capsys, "--verilog", str(shells["drops"]), *HANDSHAKE,
                         "--stalls", "0.3")
    assert status == 1, out
    assert f"no result after {cycle_budget(0.3)} cycles for vector " in out


@pytest.mark.parametrize("variant", ["reorders", "recaptures"])
def test_results_out_of_order_or_misread_operands_mismatch(variant, shells, capsys):
    status, out = verify(capsys, "--verilog", str(shells[variant]), *HANDSHAKE,
                         "--stalls", "0.3", "--bubbles", "0.3")
    assert status == 1, out
    assert "FAIL" in out and " 0 mismatches" not in out and "no result" not in out


def test_the_reordering_shell_is_caught_only_by_back_pressure(shells, capsys):
    """Its bug needs a stall with two results waiting: the bench's stalls are real."""
    status, out = verify(capsys, "--verilog", str(shells["reorders"]), *HANDSHAKE)
    assert status == 0, out


def test_a_shell_that_never_delivers_stops_at_vector_0(shells, capsys):
    status, out = verify(capsys, "--verilog", str(shells["silent"]), *HANDSHAKE)
    assert status == 1, out
    assert f"no result after {cycle_budget()} cycles for vector 0" in out


# Never says a result is valid, and never needs the multiplier: a quick native build.
SILENT = """
module hs_silent(clk, rst, in_valid, in_ready, a, b, out_valid, out_ready, y, flags);
  input clk, rst, in_valid, out_ready;
  input [7:0] a, b;
  output in_ready, out_valid;
  output [7:0] y;
  output [4:0] flags;
  reg [7:0] last = 0;
  always @(posedge clk) if (in_valid) last <= a ^ b;
  assign in_ready = 1'b1;
  assign out_valid = 1'b0;
  assign y = last;
  assign flags = 5'd0;
endmodule
"""


def test_every_input_through_the_handshake_on_the_native_engine(shells, capsys):
    status = main(["verify-exhaustive", *MUL, "--verilog", str(shells["good"]), *HANDSHAKE,
                   "--shards", "1"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "hs_mul: PASS, 65,536 vectors, 0 mismatches" in out


@pytest.mark.slow      # a second native build (~20 s)
def test_the_native_engine_stops_a_design_that_never_delivers(tmp_path, capsys):
    path = tmp_path / "silent.v"
    path.write_text(SILENT)
    status = main(["verify-exhaustive", *MUL, "--verilog", str(path),
                   *HANDSHAKE[2:], "--top", "hs_silent", "--shards", "1"])
    out = capsys.readouterr().out
    assert status == 1, out
    assert f"shard 0: no result after {cycle_budget()} cycles for vector 0" in out


@pytest.mark.parametrize("args,message", [
    (["--ready-in", "in_valid"], "--ready-in in_valid: module hs_mul port in_valid is an input "
                                 "of 1 bit(s); --ready-in names a 1-bit output of the module"),
    (["--ready-out", "a"], "--ready-out a: module hs_mul port a is an input of 8 bit(s); "
                           "--ready-out names a 1-bit input of the module"),
    (["--ready-in", "nope"], "--ready-in nope: module hs_mul has no such port; its ports: a, b, "
                             "clk, flags, in_ready, in_valid, out_ready, out_valid, rst, tag_o, "
                             "y"),
    (["--valid-out", None], "--ready-out needs --valid-out NAME (the output valid it answers)"),
    (["--valid-in", None], "--ready-in needs --valid-in NAME (the input valid it answers)"),
    (["--ready-in", None, "--ready-out", None, "--valid-out", None],
     "--valid-in without --valid-out needs --latency N (N >= 1)"),
    (["--ready-in", None, "--valid-in", None, "--ready-out", None],
     "a handshake design needs --valid-in NAME (it says when the bench offers an operation)"),
    (["--ready-out", None, "--stalls", "0.5"],
     "--stalls holds the module's output-ready low: it needs --ready-out NAME"),
    (["--engine", "batch"], "the batch engine clocks a fixed latency and drives no handshake; a "
                            "module with --ready-in, --ready-out or a valid output and no "
                            "--latency runs on --engine cocotb"),
    (["--stalls", "1"], "argument --stalls: must be 0 <= P < 1, not '1'"),
    (["--exhaustive", "", "--bubbles", "0.1"], "--stalls and --bubbles go with the cocotb "
                                               "engine; --exhaustive offers an operation every "
                                               "cycle and takes every result"),
])
def test_bad_handshake_options_are_one_line_and_exit_2(args, message, shells, capsys):
    """A None after an option drops that option from the shell's full handshake."""
    given = dict(zip(HANDSHAKE[::2], HANDSHAKE[1::2]))
    for flag, value in zip(args[::2], args[1::2]):
        if value is None:
            given.pop(flag)
        else:
            given[flag] = value
    status, out = verify(capsys, "--verilog", str(shells["good"]),
                         *[x for item in given.items() for x in item if x])
    assert status == 2
    assert out.strip().splitlines()[-1].endswith(message)
