"""Simulate the MX units over many vectors in Icarus Verilog, with ports of any width.

sim/vectors.py's batch harness carries every port as uint32; the MX units have packed buses of
k elements (1024 bits for 32 float32 inputs). This is the same flow -- the same generated
testbench (``sim.vectors._testbench``: $readmemh every input, one vector per step or per clock,
$writememh every output) -- with the values as Python ints, so no width limit.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from amaranth.back import verilog

from sim.vectors import BUILD_ROOT, SimulationError, _ports, _run, _testbench, _tool

__all__ = ["simulate_wide", "pack", "unpack"]


def pack(values, width: int) -> int:
    """Element i of ``values`` at bits [i*width +: width]."""
    out, mask = 0, (1 << width) - 1
    for i, v in enumerate(values):
        out |= (int(v) & mask) << (i * width)
    return out


def unpack(word: int, width: int, count: int) -> list[int]:
    mask = (1 << width) - 1
    return [(word >> (i * width)) & mask for i in range(count)]


def simulate_wide(component, inputs: dict[str, list[int]], *, name: str, latency: int = 0,
                  keep: bool = False) -> dict[str, list[int]]:
    """Simulate ``component`` over lists of Python ints (one list per data input port, equal
    lengths); returns one list of ints per output port (``valid_o`` excluded)."""
    ins, outs = _ports(component)
    data_ports = [p for p, _ in ins if p != "valid_i"]
    if set(inputs) != set(data_ports):
        raise ValueError(f"inputs must be exactly the ports {data_ports}, not {sorted(inputs)}")
    n = len(inputs[data_ports[0]])
    if n == 0 or any(len(v) != n for v in inputs.values()):
        raise ValueError("input lists must be non-empty and of equal length")
    rtl = verilog.convert(component, name=name, emit_src=False)
    digest = hashlib.sha1(rtl.encode()).hexdigest()[:10]
    BUILD_ROOT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"{name}_{digest}_{os.getpid()}_", dir=BUILD_ROOT))
    try:
        (work / "dut.v").write_text(rtl)
        (work / "tb.v").write_text(_testbench(name, ins, outs, n, latency))
        widths = dict(ins)
        for p in data_ports:
            digits = max(1, (widths[p] + 3) // 4)
            mask = (1 << widths[p]) - 1
            (work / f"in_{p}.hex").write_text(
                "".join(f"{int(v) & mask:0{digits}x}\n" for v in inputs[p]))
        _run([_tool("iverilog"), "-g2005", "-o", "sim.vvp", "-s", "tb", "tb.v", "dut.v"], work)
        log = _run([_tool("vvp"), "-n", "sim.vvp"], work)
        if "ERROR" in log:
            raise SimulationError(log.strip())
        result = {}
        for p, _ in outs:
            if p == "valid_o":
                continue
            words = [w.strip() for w in (work / f"out_{p}.hex").read_text().splitlines()
                     if w.strip() and not w.lstrip().startswith("//")]
            if len(words) < n:
                raise SimulationError(f"out_{p}.hex: {len(words)} values for {n} vectors")
            if any(c in w.lower() for w in words[:n] for c in "xz"):
                raise SimulationError(f"out_{p}.hex: undefined (x/z) outputs")
            result[p] = [int(w, 16) for w in words[:n]]
        return result
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
