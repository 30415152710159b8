"""The bench harness: L copies of a unit side by side, each fed S operands per transaction.

Simulator cost is per transaction (one VPI write per input port, one read per output port, one
Python wake-up), so a transaction carries L x S vectors: the Python side writes wide input
values once, pulses ``go``, waits S + latency clock cycles (the clock runs in the simulator's C
code, not in Python) and reads wide output values once. Why both L and S:

- L lanes in parallel amortize the per-cycle cost of the simulator's scheduler; but Verilator
  generates code per *instance*, so its compile time grows with L (1024 fp16 adders: 30 MB of
  C++, minutes to build). S serial steps per transaction cost nothing to compile.
- Each lane reads its own slice of each wide input (``a[(step*L + j)*w +: w]``) and drives its
  own output signal; one procedural concatenation, evaluated once per clock edge, moves the L
  lane outputs into the wide output registers. A wide *net* assembled from L lane drivers would
  be re-evaluated whole whenever one lane changes: O(L^2) per step on Icarus.

Per-step valid bits (``vmask``) make bubbles: a lane 0 ``valid_o`` appends the L results of that
cycle to the outputs at position ``count`` (an in-order capture, whatever the unit's latency);
the bench checks ``count`` against the number of valid steps. ``rm`` and ``rbits`` are per lane
and per step, so a dynamic-rounding unit sees a new mode every cycle.

The clock is generated inside the top module (``always #1``), so stepping costs the simulator
nothing beyond the logic: a cocotb ``Clock`` costs a VPI round trip per edge, which measured
~25x slower than the logic itself on Verilator. The bench writes inputs at even times (clock
falling) and waits with one ``Timer`` per transaction.

Every lane's outputs are registers (the unit's own pipeline, or one output register around a
combinational unit), so nothing changes between clock edges: latency is ``max(stages, 1)``.
"""

from __future__ import annotations

from typing import Callable

from amaranth.back import verilog
from amaranth.hdl import Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from rtl.fp_units import build
from rtl.spec import UnitSpec

__all__ = ["Lane", "Harness", "port_widths", "FLAGS_WIDTH"]

FLAGS_WIDTH = 5


def port_widths(spec: UnitSpec) -> dict[str, int]:
    """Width of each per-lane data port of a unit: operands, rm, rbits, y, flags."""
    widths = {op: f.width for op, f in zip(spec.operands, spec.in_fmts)}
    if spec.has_rm:
        widths["rm"] = 3
    if spec.has_rbits:
        widths["rbits"] = spec.options.sr_bits
    widths["y"] = spec.out_fmt.width
    widths["flags"] = FLAGS_WIDTH
    return widths


class Lane(wiring.Component):
    """One unit whose outputs are registers: the unit itself when it is pipelined, else the
    unit plus one output register (so every lane's outputs move on the clock edge only)."""

    def __init__(self, spec: UnitSpec, make_unit: Callable[[UnitSpec], wiring.Component]):
        self._spec, self._make_unit = spec, make_unit
        w = port_widths(spec)
        members = {p: In(w[p]) for p in w if p not in ("y", "flags")}
        members.update(valid_i=In(1), y=Out(w["y"]), flags=Out(FLAGS_WIDTH), valid_o=Out(1))
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        spec = self._spec
        m.submodules.unit = unit = self._make_unit(spec)
        for p in port_widths(spec):
            if p not in ("y", "flags"):
                m.d.comb += getattr(unit, p).eq(getattr(self, p))
        if spec.stages:
            m.d.comb += [unit.valid_i.eq(self.valid_i), self.y.eq(unit.y),
                         self.flags.eq(unit.flags), self.valid_o.eq(unit.valid_o)]
        else:
            m.d.sync += [self.y.eq(unit.y), self.flags.eq(unit.flags),
                         self.valid_o.eq(self.valid_i)]
        return m


class Harness:
    """``lanes`` x ``steps`` vectors per transaction around the unit of ``spec`` (module doc).

    The lane is converted once by Amaranth; the top module is written here as text: Amaranth
    would emit (and convert) one module per instance, L times the work. ``make_unit`` builds one
    unit from the spec; the benches' self-tests pass deliberately wrong units through it.
    """

    def __init__(self, spec: UnitSpec, lanes: int = 1, steps: int = 1, *,
                 make_unit: Callable[[UnitSpec], wiring.Component] = build,
                 name: str | None = None):
        for what, v in (("lanes", lanes), ("steps", steps)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{what} must be a positive integer, not {v!r}")
        self.spec, self.lanes, self.steps, self._make_unit = spec, lanes, steps, make_unit
        self.widths = port_widths(spec)
        self.name = name or f"bench_l{lanes}_s{steps}_{spec.default_name}"
        self.lane_name = f"{self.name}_lane"

    HALF_PERIOD = 1   # time units (the runner's timescale: 1 ns); rising edges at odd times

    @property
    def latency(self) -> int:
        """Cycles from a lane's inputs to its registered outputs."""
        return max(self.spec.stages, 1)

    @property
    def vectors(self) -> int:
        """Vectors per transaction."""
        return self.lanes * self.steps

    @property
    def cycles(self) -> int:
        """Clock cycles from the edge that sees ``go`` change to ``done``."""
        return self.steps + self.latency

    @property
    def inputs(self) -> list[str]:
        return [p for p in self.widths if p not in ("y", "flags")]

    @property
    def outputs(self) -> list[str]:
        return ["y", "flags"]

    def verilog(self) -> str:
        """Lane module (Amaranth) plus the top module. No ``timescale``: the runner sets it."""
        lane = verilog.convert(Lane(self.spec, self._make_unit), name=self.lane_name,
                               emit_src=False)
        return lane + "\n" + self._top() + "\n"

    def _top(self) -> str:
        L, S, w = self.lanes, self.steps, self.widths
        end = S + self.latency
        cw = max(1, end.bit_length())
        ports = ["rst", "go", "vmask", *w, "count", "done"]
        v = [f"module {self.name}({', '.join(ports)});",
             "  input rst, go;",
             "  // The clock runs inside the simulator: no VPI call, no Python per edge.",
             f"  reg clk = 0;",
             f"  always #{self.HALF_PERIOD} clk = ~clk;",
             f"  input [{S - 1}:0] vmask;"]
        for p in self.inputs:
            v.append(f"  input [{S * L * w[p] - 1}:0] {p};")
        for p in self.outputs:
            v.append(f"  output reg [{S * L * w[p] - 1}:0] {p} = 0;")
        v += [f"  output reg [{cw - 1}:0] count = 0;", "  output done;",
              "  reg go_seen = 0;",
              f"  reg [{cw - 1}:0] step = {end};",
              f"  wire run = step < {S};",
              f"  wire [{cw - 1}:0] slot = run ? step : 0;",
              "  wire lane_valid_i = run & vmask[slot];",
              "  wire lane_valid_o;",
              f"  assign done = step == {end};"]
        for j in range(L):
            conns = [".clk(clk)", ".rst(rst)", ".valid_i(lane_valid_i)"]
            for p in self.inputs:
                conns.append(f".{p}({p}[(slot * {L} + {j}) * {w[p]} +: {w[p]}])")
            for p in self.outputs:
                v.append(f"  wire [{w[p] - 1}:0] {p}_{j};")
                conns.append(f".{p}({p}_{j})")
            conns.append(".valid_o(lane_valid_o)" if j == 0 else ".valid_o()")
            v.append(f"  {self.lane_name} lane{j}({', '.join(conns)});")
        v += ["  always @(posedge clk) begin",
              "    if (go != go_seen) begin",
              "      go_seen <= go;", "      step <= 0;", "      count <= 0;",
              "    end else begin",
              f"      if (step != {end}) step <= step + 1;",
              "      if (lane_valid_o) begin"]
        for p in self.outputs:
            lanes = ", ".join(f"{p}_{j}" for j in reversed(range(L)))
            v.append(f"        {p}[count * {L * w[p]} +: {L * w[p]}] <= {{{lanes}}};")
        v += ["        count <= count + 1;", "      end", "    end", "  end", "endmodule"]
        return "\n".join(v)
