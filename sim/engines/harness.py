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

An *elastic* design (a valid/ready handshake, or a valid output and no fixed latency:
``Design.elastic``) decides itself when it takes an input and when a result comes, so its
transaction has no fixed length. Each lane keeps its own input pointer (advanced on an edge
where its valid_in and ready_in are high; the offered vector stays on the inputs until then,
as AXI requires) and output pointer (a result is stored at that lane's next slot on an edge
where valid_out and ready_out are high). A 32-bit xorshift register, seeded per transaction by
the bench, decides per cycle whether the bench offers nothing (a bubble: ``rnd[31:16] <
bubble_t``) and whether it holds ready_out low (a stall: ``rnd[15:0] < stall_t``); every lane
sees the same draws. ``done`` rises when every lane has delivered its S results, or with
``stuck`` when ``budget`` cycles have passed without a result while one is owed (the bench
writes ``cycle_budget`` of sim/stream.py); ``delivered`` holds each lane's count, so the bench
can name the first vector without a result.
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
        """The design's own text (fpforge's unit, or a user's module's wrapper; a user's
        sources are files of their own) plus the top module. No ``timescale``: the runner sets
        it."""
        top = self._elastic_top() if self.design.elastic else self._top()
        return self.design.own_text + "\n" + top + "\n"

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
            # one output register per lane around a combinational design
            registers = (lambda p, j=j: [] if d.latency else [
                f"  reg [{p.width - 1}:0] {p.name}_{j}_q = 0;",
                f"  always @(posedge clk) {p.name}_{j}_q <= {p.name}_{j};"])
            v += self._lane(j, conns, "slot", registers)
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

    def _lane(self, j: int, conns: list[str], slot: str, after=lambda p: []) -> list[str]:
        """Lane ``j``: its output wires (each followed by ``after(port)``'s lines) and its
        instance, with the control connections ``conns`` and its inputs read at step ``slot``
        of the wide inputs."""
        d, L = self.design, self.lanes
        conns, v = list(conns), []
        for p in d.inputs:
            conns.append(f".{d.outer(p.name)}({p.name}[({slot} * {L} + {j}) * {p.width} +: "
                         f"{p.width}])")
        for p in d.outputs:
            v.append(f"  wire [{p.width - 1}:0] {p.name}_{j};")
            conns.append(f".{d.outer(p.name)}({p.name}_{j})")
            v += after(p)
        v.append(f"  {d.top} lane{j}({', '.join(conns)});")
        return v

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

    def _elastic_top(self) -> str:
        """The harness of an elastic design (module docstring)."""
        d, L, S = self.design, self.lanes, self.steps
        ins, outs = d.inputs, d.outputs
        cw = S.bit_length()
        names = ["rst", "go", "seed", "budget", "stall_t", "bubble_t",
                 *(p.name for p in ins + outs),
                 "delivered", "done", "stuck"]
        v = [f"module {self.name}({', '.join(names)});",
             "  input rst, go;",
             "  reg clk = 0;",
             f"  always #{self.HALF_PERIOD} clk = ~clk;",
             "  input [31:0] seed, budget;",
             "  input [15:0] stall_t, bubble_t;"]
        v += [f"  input [{S * L * p.width - 1}:0] {p.name};" for p in ins]
        v += [f"  output reg [{S * L * p.width - 1}:0] {p.name} = 0;" for p in outs]
        v += [f"  output [{L * cw - 1}:0] delivered;", "  output done, stuck;",
              "  reg go_seen = 0;",
              "  reg [31:0] rnd = 1;",
              "  wire [31:0] rnd1 = rnd ^ (rnd << 13);",
              "  wire [31:0] rnd2 = rnd1 ^ (rnd1 >> 17);",
              "  wire [31:0] rnd_next = rnd2 ^ (rnd2 << 5);",
              "  reg [31:0] idle = 0;       // cycles since the last result",
              "  assign stuck = idle == budget;",
              "  wire bubble = rnd[31:16] < bubble_t;",
              f"  wire ready_o = {'~stuck & ~(rnd[15:0] < stall_t)' if d.ready_out else '1'};"]
        regs, step, took = [], [], []
        for j in range(L):
            v += [f"  reg [{cw - 1}:0] ip{j} = {S}, op{j} = {S};", f"  reg hold{j} = 0;",
                  f"  wire vi{j} = ip{j} != {S} & ~stuck & (hold{j} | ~bubble);",
                  f"  wire [{cw - 1}:0] islot{j} = ip{j} == {S} ? 0 : ip{j};",
                  f"  wire vo{j};"]
            v += [f"  wire ri{j};" if d.ready_in else f"  wire ri{j} = 1;"]
            conns = d.control(clock="clk", reset="rst", valid_in=f"vi{j}", valid_out=f"vo{j}",
                              ready_in=f"ri{j}", ready_out="ready_o")
            v += self._lane(j, conns, f"islot{j}")
            regs += [f"      ip{j} <= 0;", f"      op{j} <= 0;", f"      hold{j} <= 0;"]
            # a result beyond the lane's S (more results than inputs) is taken and dropped
            took.append(f"vo{j} & op{j} != {S}")
            step += [f"      if (vi{j} & ri{j}) ip{j} <= ip{j} + 1;",
                     f"      hold{j} <= vi{j} & ~ri{j};",
                     f"      if (vo{j} & ready_o & op{j} != {S}) begin"]
            step += [f"        {p.name}[(op{j} * {L} + {j}) * {p.width} +: {p.width}] <= "
                     f"{p.name}_{j};" for p in outs]
            step += [f"        op{j} <= op{j} + 1;", "      end"]
        v += [f"  assign delivered = {{{', '.join(f'op{j}' for j in reversed(range(L)))}}};",
              f"  assign done = stuck | ({' & '.join(f'op{j} == {S}' for j in range(L))});",
              "  always @(posedge clk) begin",
              "    if (go != go_seen) begin",
              "      go_seen <= go;", "      idle <= 0;", "      rnd <= seed;", *regs,
              "    end else begin",
              f"      if (ready_o & ({' | '.join(took)})) idle <= 0;",
              "      else if (!done) idle <= idle + 1;",
              "      rnd <= rnd_next;", *step,
              "    end", "  end", "endmodule"]
        return "\n".join(v)
