"""The cocotb engine's harness: L copies of a design side by side, each fed S vectors per
transaction, written as Verilog text around the design's module (any module: fpforge's own unit
or a user's, bound through the design's port map).

Simulator cost is per transaction (one VPI write per input port, one read per output port, one
Python wake-up), so a transaction carries L x S vectors: the Python side writes wide input
values once, flips ``go``, waits S + latency clock cycles (the clock runs in the simulator's C
code, not in Python) and reads wide output values once. Why both L and S:

- L lanes in parallel amortize the per-cycle cost of the simulator's scheduler; but Verilator
  generates code per *instance*, so its compile time grows with L. S serial steps per
  transaction cost nothing to compile.
- Each lane reads its own slice of each wide input (``a[(step*L + j)*w +: w]``) and drives its
  own output signal; one procedural concatenation, evaluated once per clock edge, moves the L
  lane outputs into the wide output registers. A wide *net* assembled from L lane drivers would
  be re-evaluated whole whenever one lane changes: O(L^2) per step on Icarus.

Per-step valid bits (``vmask``) make bubbles: a valid output of lane 0 appends the L results of
that cycle to the outputs at position ``count`` (an in-order capture, whatever the latency); the
bench checks ``count`` against the number of valid steps. A design without a valid output has
its valid counted through ``latency`` registers here; a combinational design gets one output
register per lane (so every output moves on the clock edge only: latency ``max(latency, 1)``).
The clock is generated inside the top module (``always #1``): a cocotb ``Clock`` costs a VPI
round trip per edge, measured ~25x slower than the logic itself on Verilator.
"""

from __future__ import annotations

import re

from ..design import Design

__all__ = ["Harness"]


class Harness:
    """``lanes`` x ``steps`` vectors per transaction around ``design`` (module docstring)."""

    HALF_PERIOD = 1   # time units (the runner's timescale: 1 ns); rising edges at odd times

    def __init__(self, design: Design, lanes: int = 1, steps: int = 1):
        for what, v in (("lanes", lanes), ("steps", steps)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{what} must be a positive integer, not {v!r}")
        self.design, self.lanes, self.steps = design, lanes, steps
        # A label may be a pytest-style id (make verify's "add-float4_e2m1fn-rne"): the module
        # name keeps its identifier characters only.
        label = re.sub(r"[^A-Za-z0-9_]", "_", design.label)
        self.name = f"bench_l{lanes}_s{steps}_{label}"[:120]

    @property
    def latency(self) -> int:
        """Cycles from a lane's inputs to its registered outputs."""
        return max(self.design.latency, 1)

    @property
    def vectors(self) -> int:
        """Vectors per transaction."""
        return self.lanes * self.steps

    @property
    def cycles(self) -> int:
        """Clock cycles from the edge that sees ``go`` change to ``done``."""
        return self.steps + self.latency

    def verilog(self) -> str:
        """The design's own text (fpforge's unit; a user's sources are files of their own)
        plus the top module. No ``timescale``: the runner sets it."""
        return self.design.own_text + "\n" + self._top() + "\n"

    def _top(self) -> str:
        d, L, S = self.design, self.lanes, self.steps
        ins, outs = d.inputs, d.outputs
        end = S + self.latency
        cw = max(1, end.bit_length())
        names = ["rst", "go", "vmask", *(p.name for p in ins + outs), "count", "done"]
        v = [f"module {self.name}({', '.join(names)});",
             "  input rst, go;",
             "  // The clock runs inside the simulator: no VPI call, no Python per edge.",
             "  reg clk = 0;",
             f"  always #{self.HALF_PERIOD} clk = ~clk;",
             f"  input [{S - 1}:0] vmask;"]
        v += [f"  input [{S * L * p.width - 1}:0] {p.name};" for p in ins]
        v += [f"  output reg [{S * L * p.width - 1}:0] {p.name} = 0;" for p in outs]
        v += [f"  output reg [{cw - 1}:0] count = 0;", "  output done;",
              "  reg go_seen = 0;",
              f"  reg [{cw - 1}:0] step = {end};",
              f"  wire run = step < {S};",
              f"  wire [{cw - 1}:0] slot = run ? step : 0;",
              "  wire lane_valid_i = run & vmask[slot];",
              "  wire lane_valid_o;",
              f"  assign done = step == {end};"]
        v += self._valid_out()
        for j in range(L):
            conns = d.control(clock="clk", reset="rst", valid_in="lane_valid_i",
                              valid_out="lane_valid_o" if j == 0 else "")
            for p in ins:
                conns.append(f".{d.outer(p.name)}({p.name}[(slot * {L} + {j}) * {p.width} +: "
                             f"{p.width}])")
            for p in outs:
                v.append(f"  wire [{p.width - 1}:0] {p.name}_{j};")
                conns.append(f".{d.outer(p.name)}({p.name}_{j})")
                if not d.latency:
                    # one output register per lane around a combinational design
                    v += [f"  reg [{p.width - 1}:0] {p.name}_{j}_q = 0;",
                          f"  always @(posedge clk) {p.name}_{j}_q <= {p.name}_{j};"]
            v.append(f"  {d.top} lane{j}({', '.join(conns)});")
        v += ["  always @(posedge clk) begin",
              "    if (go != go_seen) begin",
              "      go_seen <= go;", "      step <= 0;", "      count <= 0;",
              "    end else begin",
              f"      if (step != {end}) step <= step + 1;",
              "      if (lane_valid_o) begin"]
        for p in outs:
            q = "" if d.latency else "_q"
            lanes = ", ".join(f"{p.name}_{j}{q}" for j in reversed(range(L)))
            v.append(f"        {p.name}[count * {L * p.width} +: {L * p.width}] <= {{{lanes}}};")
        v += ["        count <= count + 1;", "      end", "    end", "  end", "endmodule"]
        return "\n".join(v)

    def _valid_out(self) -> list[str]:
        """lane_valid_o from the design's valid output, or counted through ``latency``
        registers (reset to 0) when it has none."""
        d = self.design
        if d.latency and d.valid_out:
            return []
        n = self.latency
        regs = [f"  reg valid_d{i} = 0;" for i in range(1, n + 1)]
        body = ["  always @(posedge clk) begin",
                "    if (rst) begin"] + [f"      valid_d{i} <= 0;" for i in range(1, n + 1)] + \
            ["    end else begin", "      valid_d1 <= lane_valid_i;"] + \
            [f"      valid_d{i} <= valid_d{i - 1};" for i in range(2, n + 1)] + \
            ["    end", "  end", f"  assign lane_valid_o = valid_d{n};"]
        return regs + body
