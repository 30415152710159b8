"""The batch engine: Icarus Verilog over whole arrays of inputs, no cocotb.

A generated testbench ``$readmemb``'s every input port from a file, applies one vector per step
(one per clock for pipelined designs, collecting the outputs when ``valid_o`` rises, or
``latency`` cycles later without one) and ``$writememb``'s every output. Icarus compiles in
well under a second, so for the quick tests (dozens of specs, 10^4..10^6 vectors each) this is
the cheapest engine; the testbench is compiled once per design (the vector count is a plusarg)
and run once per chunk, each run in a directory of its own (parallel workers never share files).
Undefined (x/z) output bits come back as :data:`sim.check.UNDEFINED` codes, reported as
mismatches.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from fpforge.infra import toolchain

from ..design import Design
from ..errors import DesignError
from ..packing import from_binstr, to_binstr
from ..stream import Plan, Session, check_stream
from .base import BUILD_ROOT, SimulationError, check_inputs, systemverilog_only

__all__ = ["BatchEngine"]

MAX_VECTORS = 1 << 16           # memory depth of the testbench: vectors per run


def _testbench(d: Design) -> str:
    ins, outs = d.inputs, d.outputs
    lines = ["`timescale 1ns/1ps", "module tb;", "  integer n, i, j;"]
    for p in ins:
        lines += [f"  reg [{p.width - 1}:0] mem_{p.name} [0:{MAX_VECTORS - 1}];",
                  f"  reg [{p.width - 1}:0] {p.name};"]
    for p in outs:
        lines += [f"  reg [{p.width - 1}:0] mem_{p.name} [0:{MAX_VECTORS - 1}];",
                  f"  wire [{p.width - 1}:0] {p.name};"]
    conns = [f".{d.outer(p.name)}({p.name})" for p in ins + outs]
    conns += d.control(clock="clk", reset="rst", valid_in="valid_i", valid_out="valid_o")
    piped = d.latency > 0
    if piped:
        lines += ["  reg clk = 0, rst = 1, valid_i = 0;", "  wire valid_o;"]
    lines += [f"  {d.top} dut({', '.join(conns)});", "  initial begin",
              '    if (!$value$plusargs("N=%d", n)) n = 0;']
    lines += [f'    $readmemb("in_{p.name}.mem", mem_{p.name}, 0, n - 1);' for p in ins]
    if not piped:
        lines += ["    for (i = 0; i < n; i = i + 1) begin"]
        lines += [f"      {p.name} = mem_{p.name}[i];" for p in ins]
        lines += ["      #1;"] + [f"      mem_{p.name}[i] = {p.name};" for p in outs]
        lines += ["    end"]
    else:
        # Reset, then one vector per clock; outputs are taken when valid_o is high (or, with no
        # valid_o, latency - 1 cycles after the edge that takes the inputs).
        lines += ["    j = 0;", "    #1 clk = 1; #1 clk = 0; #1 clk = 1; #1 clk = 0; rst = 0;",
                  f"    for (i = 0; i < n + {d.latency}; i = i + 1) begin",
                  "      valid_i = i < n;"]
        lines += [f"      {p.name} = i < n ? mem_{p.name}[i] : 0;" for p in ins]
        lines += ["      #1;", "      clk = 1;", "      #1;", "      clk = 0;"]
        take = "valid_o" if d.valid_out else f"i >= {d.latency - 1} && j < n"
        lines += [f"      if ({take}) begin"]
        lines += [f"        mem_{p.name}[j] = {p.name};" for p in outs]
        lines += ["        j = j + 1;", "      end", "    end",
                  '    if (j != n) $display("ERROR: %0d outputs for %0d inputs", j, n);']
    lines += [f'    $writememb("out_{p.name}.mem", mem_{p.name}, 0, n - 1);' for p in outs]
    lines += ["    $finish;", "  end", "endmodule", ""]
    return "\n".join(lines)


def _run(cmd, cwd: Path) -> str:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SimulationError(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n"
                              f"{proc.stdout}{proc.stderr}")
    return proc.stdout


class BatchSession(Session):
    chunk = MAX_VECTORS

    def __init__(self, design: Design, vvp: Path):
        self.design, self.vvp = design, vvp

    async def run(self, inputs: dict) -> dict:
        return self.simulate(inputs)

    def simulate(self, inputs: dict) -> dict:
        d = self.design
        n = check_inputs(d, inputs)
        out = {}
        for s in range(0, n, MAX_VECTORS):
            part = self._simulate({p: np.asarray(v)[s:s + MAX_VECTORS] for p, v in inputs.items()})
            for p, v in part.items():
                out.setdefault(p, []).append(v)
        return {p: np.concatenate(v) for p, v in out.items()}

    def _simulate(self, inputs: dict) -> dict:
        d = self.design
        n = len(next(iter(inputs.values())))
        work = Path(tempfile.mkdtemp(prefix="run_", dir=self.vvp.parent))
        try:
            for p in d.inputs:
                codes = np.asarray(inputs[p.name]).reshape(n, p.lanes)
                (work / f"in_{p.name}.mem").write_text("\n".join(to_binstr(codes, p.lane_width))
                                                       + "\n")
            log = _run([toolchain.tool("vvp"), "-n", str(self.vvp), f"+N={n}"], work)
            if "ERROR" in log:
                raise SimulationError(log.strip())
            out = {}
            for p in d.outputs:
                words = [w.strip() for w in (work / f"out_{p.name}.mem").read_text().splitlines()
                         if w.strip() and not w.startswith("//")]
                if len(words) < n:
                    raise SimulationError(f"{p.name}: {len(words)} values for {n} vectors")
                codes = from_binstr(words[:n], p.lane_width, p.lanes, undefined="mark")
                out[p.name] = codes[:, 0] if p.lanes == 1 else codes
            return out
        finally:
            shutil.rmtree(work, ignore_errors=True)


class BatchEngine:
    """Icarus Verilog, whole arrays per run (module docstring)."""

    name = "batch"

    def build(self, design: Design) -> Path:
        """Compile the testbench and the design once (cached by the design's key)."""
        if design.systemverilog:
            raise DesignError(systemverilog_only(design, "--engine batch"))
        if design.elastic:
            raise DesignError("the batch engine clocks a fixed latency and drives no "
                              "handshake; a module with --ready-in, --ready-out or a valid "
                              "output and no --latency runs on --engine cocotb")
        d = BUILD_ROOT / "batch" / f"{design.label[:60]}_{design.key()}"
        vvp = d / "sim.vvp"
        if vvp.exists():
            return vvp
        tmp = Path(tempfile.mkdtemp(prefix=".build_", dir=_mkdir(d.parent)))
        try:
            sources = design.source_files
            if design.text is not None:
                (tmp / f"{design.top}.v").write_text(design.text)
                sources.append(f"{design.top}.v")
            (tmp / "tb.v").write_text(_testbench(design))
            _run([toolchain.tool("iverilog"), "-g2005", *design.source_args, "-o", "sim.vvp",
                  "-s", "tb", "tb.v", *sources], tmp)
            try:
                tmp.rename(d)           # atomic: another worker may have built it meanwhile
            except OSError:
                pass
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return vvp

    def session(self, design: Design) -> BatchSession:
        return BatchSession(design, self.build(design))

    def simulate(self, design: Design, inputs: dict) -> dict:
        """``{output port: array}`` of ``design`` for ``{input port: array}``."""
        return self.session(design).simulate(inputs)

    def verify(self, design: Design, plan: Plan, *, report_path: str = "",
               progress_path: str = "", compare=None) -> dict:
        session = self.session(design)
        _, summary = asyncio.run(check_stream(session, design, plan, compare=compare,
                                              report_path=report_path,
                                              progress_path=progress_path, engine=self.name))
        return summary


def _mkdir(path: Path) -> Path:
    os.makedirs(path, exist_ok=True)
    return path
