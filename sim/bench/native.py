"""The native engine: a Verilator C++ loop fed from numpy through pipes, for the 2^32 runs.

Why not cocotb here: cocotb reaches a wide signal only through VPI binary strings, one
character per bit each way, plus the Python conversion on both sides. For a 16-bit unit that is
53 characters per vector (a, b, y, flags) through two string layers; measured with the lane
harness (docs/verification.md) that caps a cocotb bench far below the 5 M vectors/s the
exhaustive 16-bit runs need, however cheap the simulated logic is. Here no value is ever a
string: operand codes go to the simulator as raw little-endian bytes and come back the same way,
and ``memcpy`` moves a whole row of lanes into a Verilator port (a wide port is an array of
32-bit little-endian words, lane 0 lowest, which is exactly a numpy row of codes).

The top module (:class:`NativeTop`) holds L copies of the unit, each on constant slices of the
wide ports, every code in a byte-sized container (8, 16 or 32 bits). A pipelined unit sits in
the same :class:`~sim.bench.harness.Lane` the cocotb harness uses and the C++ loop
(``native_main.cpp``) clocks it once per step; a combinational unit is instantiated bare and
evaluated once per step, without the harness's output register (one ``eval()`` instead of a
clock edge's two: the simulator ran fp16 add about twice as fast, docs/verification.md).
What stays the same as the cocotb bench: the stimulus, the golden model in fixed-size batches
(:func:`~sim.bench.checking.golden_expected`), the in-order :class:`~sim.bench.checking.Checker`
with its decoded reports, the progress file and the JSON summary. What is lost: Verilator is
2-state, so x bits cannot show up here (the cocotb benches on Icarus cover that); and valid_i is
held high, so bubbles are the cocotb benches' business too.

Overlap: a writer thread draws stimulus, evaluates the golden model (XLA releases the GIL) and
writes each chunk to the simulator's stdin while the simulator works on the previous one; the
calling thread reads results in order and checks them.
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import shutil
import subprocess
import threading
import time
from pathlib import Path

import numpy as np

from sim.bench.checking import (Checker, golden_expected, progress_record, summary_record,
                                 write_json)
from sim.bench.config import BenchConfig
from sim.bench.faults import make_unit
from sim.bench.harness import Lane, port_widths
from sim.bench.runner import BUILD_ROOT, VERILATED_MK_FIXES, _verilator_env
from sim.bench.stimulus import generate

__all__ = ["NativeTop", "build", "run", "container_bytes"]

HERE = Path(__file__).resolve().parent
MAIN_CPP = HERE / "native_main.cpp"


def container_bytes(width: int) -> int:
    """Bytes of the numpy dtype that holds a ``width``-bit code: 1, 2 or 4."""
    for b in (1, 2, 4):
        if width <= 8 * b:
            return b
    raise ValueError(f"ports of at most 32 bits, not {width}")


class NativeTop:
    """``lanes`` lanes side by side; port ``p`` is ``lanes`` containers of
    ``container_bytes(width)`` bytes, lane ``j`` at byte ``j * bytes``."""

    def __init__(self, spec, lanes: int, *, fault: str | None = None):
        if not isinstance(lanes, int) or isinstance(lanes, bool) or lanes < 1:
            raise ValueError(f"lanes must be a positive integer, not {lanes!r}")
        self.spec, self.lanes, self.fault = spec, lanes, fault
        self.widths = port_widths(spec)
        self.inputs = [p for p in self.widths if p not in ("y", "flags")]
        self.outputs = ["y", "flags"]
        self.bytes = {p: container_bytes(w) for p, w in self.widths.items()}
        self.latency = spec.stages   # 0: the outputs follow the inputs within one eval()
        self.lane_name = f"native_{spec.default_name}_lane"

    def verilog(self) -> str:
        from amaranth.back import verilog
        unit = make_unit(self.fault)
        lane = Lane(self.spec, unit) if self.latency else unit(self.spec)
        return verilog.convert(lane, name=self.lane_name, emit_src=False) + "\n" + \
            self._top() + "\n"

    def _top(self) -> str:
        L, w, B = self.lanes, self.widths, self.bytes
        v = [f"module fast(clk, rst, {', '.join(self.inputs + self.outputs)});",
             "  input clk, rst;"]
        for p in self.inputs:
            v.append(f"  input [{L * 8 * B[p] - 1}:0] {p};")
        for p in self.outputs:
            v.append(f"  output [{L * 8 * B[p] - 1}:0] {p};")
        for j in range(L):
            conns = [".clk(clk)", ".rst(rst)", ".valid_i(1'b1)", ".valid_o()"] \
                if self.latency else []
            conns += [f".{p}({p}[{j * 8 * B[p]} +: {w[p]}])" for p in self.inputs]
            for p in self.outputs:
                v.append(f"  wire [{w[p] - 1}:0] {p}_{j};")
                pad = 8 * B[p] - w[p]
                value = f"{{{pad}'d0, {p}_{j}}}" if pad else f"{p}_{j}"
                v.append(f"  assign {p}[{j * 8 * B[p]} +: {8 * B[p]}] = {value};")
                conns.append(f".{p}({p}_{j})")
            v.append(f"  {self.lane_name} lane{j}({', '.join(conns)});")
        v.append("endmodule")
        return "\n".join(v)

    def ports_header(self) -> str:
        ports = lambda names: " ".join(f"X({p}, {self.bytes[p]})" for p in names)  # noqa: E731
        return (f"#define LANES {self.lanes}\n#define LATENCY {self.latency}\n"
                f"#define FOR_INPUTS(X) {ports(self.inputs)}\n"
                f"#define FOR_OUTPUTS(X) {ports(self.outputs)}\n")


VERILATOR_ARGS = ["-O3", "--x-assign", "fast", "--x-initial", "fast", "-Wno-fatal", "-Wno-lint",
                  "-Wno-style", "-Wno-MULTIDRIVEN"]


def build(cfg: BenchConfig) -> Path:
    """Build the native simulator of ``cfg``'s design (cached by design); returns the binary."""
    _verilator_env()
    top = NativeTop(cfg.unit_spec, cfg.lanes, fault=cfg.fault)
    key = hashlib.sha1(json.dumps(cfg.spec, sort_keys=True).encode()).hexdigest()[:10]
    d = BUILD_ROOT / "native" / f"{cfg.unit_spec.default_name}_l{cfg.lanes}" \
        f"{'_' + cfg.fault if cfg.fault else ''}_{key}"
    exe = d / "obj" / "fast"
    sources = {"top.v": top.verilog(), "ports.h": top.ports_header(),
               "native_main.cpp": MAIN_CPP.read_text()}
    if exe.exists() and all((d / n).exists() and (d / n).read_text() == t
                            for n, t in sources.items()):
        return exe
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    for n, t in sources.items():
        (d / n).write_text(t)
    # The model's code is optimized; Verilator's run-time library is not (compile time only).
    makeflags = [f"{k}={v}" for k, v in VERILATED_MK_FIXES.items()] + \
        ["OPT_FAST=-O2", "OPT_SLOW=-O0", "OPT_GLOBAL=-O1"]
    cmd = ["verilator", "--cc", "--exe", "--build", "-j", str(os.cpu_count() or 1),
           *VERILATOR_ARGS, "--top-module", "fast", "--prefix", "Vfast", "-Mdir", "obj",
           "-CFLAGS", f"-I{d}", "-o", "fast", "top.v", "native_main.cpp"]
    for f in makeflags:
        cmd += ["-MAKEFLAGS", f]
    with open(d / "build.log", "w") as log:
        r = subprocess.run(cmd, cwd=d, stdout=log, stderr=subprocess.STDOUT)
    if r.returncode or not exe.exists():
        raise RuntimeError(f"native build failed ({r.returncode}); see {d / 'build.log'}")
    return exe


class _Simulator:
    """The native binary as a subprocess: ``send`` a block of inputs, ``receive`` its outputs."""

    def __init__(self, exe: Path, top: NativeTop):
        self.top = top
        self.proc = subprocess.Popen([str(exe)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, bufsize=0)

    def send(self, rows: dict[str, np.ndarray]):
        """``rows``: port -> (steps, lanes) codes."""
        steps = len(rows[self.top.inputs[0]])
        self.proc.stdin.write(np.uint32(steps).tobytes())
        for p in self.top.inputs:
            self.proc.stdin.write(rows[p].astype(f"<u{self.top.bytes[p]}").tobytes())

    def receive(self, steps: int) -> dict[str, np.ndarray]:
        out = {}
        for p in self.top.outputs:
            n = steps * self.top.lanes * self.top.bytes[p]
            data = self._read(n)
            out[p] = np.frombuffer(data, f"<u{self.top.bytes[p]}").astype(np.uint32)
        return out

    def _read(self, n: int) -> bytes:
        parts, got = [], 0
        while got < n:
            b = self.proc.stdout.read(n - got)
            if not b:
                self.proc.wait()
                raise RuntimeError(f"native simulator ended early (exit {self.proc.returncode}):"
                                   f" {self.proc.stderr.read().decode(errors='replace')}")
            parts.append(b)
            got += len(b)
        return b"".join(parts)

    def close(self) -> float:
        """End the simulator; returns its CPU seconds (user + system)."""
        try:
            self.proc.stdin.write(np.uint32(0).tobytes())
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        _, status, usage = os.wait4(self.proc.pid, 0)
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        return usage.ru_utime + usage.ru_stime


def run(cfg: BenchConfig, exe: Path) -> dict:
    """One bench run of ``cfg`` on the native binary ``exe``; returns the bench's summary
    (the same fields as the cocotb bench's ``summary.json``)."""
    spec = cfg.unit_spec
    top = NativeTop(spec, cfg.lanes, fault=cfg.fault)
    L = top.lanes
    chunk = max(L, cfg.batch // L * L)
    sim = _Simulator(exe, top)
    pending: queue.Queue = queue.Queue(maxsize=4)
    checker = Checker(spec, max_report=cfg.max_report)
    golden_s = [0.0]
    error: list[BaseException] = []
    rng = np.random.default_rng(cfg.seed)

    def feed():   # the reference: stimulus -> golden model -> simulator stdin
        try:
            index = 0
            for part, params in cfg.stimulus:
                for inputs in generate(spec, part, params, rng, chunk):
                    t = time.perf_counter()
                    exp_y, exp_flags = golden_expected(spec, inputs, chunk)
                    golden_s[0] += time.perf_counter() - t
                    n = len(exp_y)
                    steps = -(-n // L)
                    rows = {p: np.resize(inputs[p], steps * L).reshape(steps, L)
                            for p in top.inputs}   # the last row padded with repeats
                    pending.put((index, inputs, exp_y, exp_flags, steps))
                    sim.send(rows)
                    index += n
        except BaseException as e:   # reported by the caller, not lost in the thread
            error.append(e)
        pending.put(None)

    t0 = last = time.perf_counter()
    writer = threading.Thread(target=feed, name="native-reference", daemon=True)
    writer.start()
    try:
        while (item := pending.get()) is not None:
            index0, inputs, exp_y, exp_flags, steps = item
            got = sim.receive(steps)
            checker.check(inputs, index0, exp_y, exp_flags, got["y"], got["flags"])
            now = time.perf_counter()
            if now - last > 1.0:
                last = now
                write_json(cfg.progress_path, progress_record(checker, now - t0))
    finally:
        sim_cpu_s = sim.close()
    if error:
        raise error[0]
    elapsed = time.perf_counter() - t0
    write_json(cfg.progress_path, progress_record(checker, elapsed, done=True))
    summary = summary_record(checker, cfg, elapsed, golden_s=golden_s[0],
                             simulator_cpu_s=sim_cpu_s, lanes=L, engine="native",
                             log=str(exe.parent))
    write_json(cfg.report_path, summary)
    return summary
