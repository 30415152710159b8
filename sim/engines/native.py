"""The native engine: a Verilator C++ loop fed from numpy through pipes, for the 2^32 runs.

Why not cocotb here: cocotb reaches a wide signal only through VPI binary strings, one
character per bit each way, plus the Python conversion on both sides. For a 16-bit unit that is
53 characters per vector (a, b, y, flags) through two string layers; measured with the lane
harness (docs/verification.md) that caps a cocotb bench far below the 5 M vectors/s the
exhaustive 16-bit runs need, however cheap the simulated logic is. Here no value is ever a
string: input codes go to the simulator as raw little-endian bytes and come back the same way,
and ``memcpy`` moves a whole row into a Verilator port (a wide port is an array of 32-bit
little-endian words, element 0 lowest, which is exactly a numpy row of codes).

The top module (:class:`NativeTop`, Verilog text) holds L copies of the design, bound through
its port map, every element of every port in a byte-sized container (8, 16 or 32 bits) of its
own. The C++ loop (``native_main.cpp``) evaluates a combinational design once per step, and
clocks a pipelined one once per step, reading its outputs ``latency`` steps later (valid is
held high; bubbles and x bits are the cocotb engine's business: Verilator is 2-state).

An elastic design (a valid/ready handshake, ``Design.elastic``) runs at full speed without
stalls: each lane offers its next vector every cycle (valid_in high while it has one; the
vector stays on its inputs until ready_in takes it), ready_out is held high, and a lane's result
is taken, in order, whenever its valid_out is high. Each block's outputs then start with a
32-bit count: the vectors before the first without a result, all of them unless the design
went ``cycle_budget()`` cycles (sim/stream.py) without a result while it owed one; then the
simulator stops and the session raises :class:`~sim.stream.NoResult`.

An exhaustive run (one range of the input space, nothing held, no rm or rbits, at most 2^32
inputs) sends no input codes at all: ``fast --index`` splits each vector's index into its
inputs itself (``FOR_FIELDS`` in ports.h, the layout of sim/stimulus/base.py), the golden model
splits the same index inside its compiled program (check.expected_index), and only the outputs
come back through the pipe; the checker draws a chunk's inputs only where it has a mismatch, so
reports, classes and dumps are those of a run through the pipe.

Overlap: while the simulator works on one chunk, the verification loop (sim/stream.py) checks
the chunk before and its reference thread evaluates the golden model on the next one.
"""

from __future__ import annotations

import asyncio
import ctypes
import mmap
import fcntl
import hashlib
import os
import queue
import shutil
import subprocess
import threading
from pathlib import Path

import numpy as np

from fpforge.infra import toolchain

from ..check import write_json
from ..design import Design
from ..stimulus.base import IndexChunk, index_layout, space_size
from ..stream import NoResult, Plan, Session, check_stream, cycle_budget
from .base import BUILD_ROOT, VERILATOR_WAIVERS, SimulationError, build_lock, check_inputs
from .cocotb import VERILATED_MK_FIXES, bench_env
from .runtime_cache import runtime_cache, seed_runtime, store_runtime

__all__ = ["NativeTop", "NativeEngine", "container_bytes", "LANES", "keep_heap", "PROTOCOL_H"]

HERE = Path(__file__).resolve().parent
MAIN_CPP = HERE / "native_main.cpp"
PROTOCOL_H = HERE / "pipe_protocol.h"     # the pipe protocol, shared with gates_main.cpp
# 4 copies of a 16-bit unit ran 25-30 % fewer CPU ns per vector than 16 (the bare simulator,
# fp16 mul and add, docs/verification.md): the eval code of 16 copies outgrows the caches.
LANES = 4
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)
PIPE_BYTES = 1 << 20     # Linux's default pipe-max-size


def keep_heap() -> None:
    """Keep freed chunk-sized arrays in this process's heap (glibc's malloc). A run allocates
    and frees arrays of megabytes every chunk (stimulus, golden outputs, comparison); by default
    glibc maps each from the kernel and returns it on free, so every chunk faults its pages in
    again: measured, 4 of the 4.5 CPU ns per vector of the exhaustive stimulus of fp16 mul. The
    heap then holds at most the run's peak (chunks of 2^20 vectors: tens of megabytes)."""
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(M_MMAP_THRESHOLD, 1 << 25)     # glibc's largest: 32 MiB
        libc.mallopt(M_TRIM_THRESHOLD, 1 << 30)
    except (OSError, AttributeError):               # not glibc: its own policy stays
        pass


M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3         # glibc's malloc.h


def container_bytes(width: int) -> int:
    """Bytes of the numpy dtype that holds a ``width``-bit code: 1, 2 or 4."""
    for b in (1, 2, 4):
        if width <= 8 * b:
            return b
    raise ValueError(f"elements of at most 32 bits, not {width}")


class NativeTop:
    """``lanes`` copies of ``design`` side by side; port ``p`` is ``lanes * p.lanes``
    containers of ``container_bytes(p.lane_width)`` bytes, lane ``j`` element ``e`` at
    container ``j * p.lanes + e``."""

    def __init__(self, design: Design, lanes: int = LANES):
        if not isinstance(lanes, int) or isinstance(lanes, bool) or lanes < 1:
            raise ValueError(f"lanes must be a positive integer, not {lanes!r}")
        self.design, self.lanes = design, lanes
        self.bytes = {p.name: container_bytes(p.lane_width) for p in design.ports}

    def row_bytes(self, port) -> int:
        return self.lanes * port.lanes * self.bytes[port.name]

    def verilog(self) -> str:
        return self.design.own_text + "\n" + self._top() + "\n"

    def _top(self) -> str:
        d, L = self.design, self.lanes
        ins, outs = d.inputs, d.outputs
        hs = ["hs_vin", "hs_rin", "hs_vout"] if d.elastic else []
        v = [f"module fast(clk, rst, {', '.join([*hs, *(p.name for p in ins + outs)])});",
             "  input clk, rst;"]
        if d.elastic:       # per lane: valid in, ready in, valid out (module docstring)
            v += [f"  input [{L - 1}:0] hs_vin;", f"  output [{L - 1}:0] hs_rin, hs_vout;"]
        for p in ins:
            v.append(f"  input [{self.row_bytes(p) * 8 - 1}:0] {p.name};")
        for p in outs:
            v.append(f"  output [{self.row_bytes(p) * 8 - 1}:0] {p.name};")
        for j in range(L):
            if d.elastic:
                conns = d.control(clock="clk", reset="rst", valid_in=f"hs_vin[{j}]",
                                  valid_out=f"hs_vout[{j}]", ready_in=f"hs_rin[{j}]",
                                  ready_out="1'b1")
                if not d.ready_in:
                    v.append(f"  assign hs_rin[{j}] = 1'b1;")
            else:
                conns = d.control(clock="clk", reset="rst", valid_in="1'b1", valid_out="")
            for p in ins:
                c = 8 * self.bytes[p.name]
                elems = [f"{p.name}[{(j * p.lanes + e) * c} +: {p.lane_width}]"
                         for e in reversed(range(p.lanes))]
                conns.append(f".{d.outer(p.name)}({{{', '.join(elems)}}})")
            for p in outs:
                c = 8 * self.bytes[p.name]
                v.append(f"  wire [{p.width - 1}:0] {p.name}_{j};")
                for e in range(p.lanes):
                    pad = c - p.lane_width
                    elem = f"{p.name}_{j}[{e * p.lane_width} +: {p.lane_width}]"
                    v.append(f"  assign {p.name}[{(j * p.lanes + e) * c} +: {c}] = " +
                             (f"{{{pad}'d0, {elem}}};" if pad else f"{elem};"))
                conns.append(f".{d.outer(p.name)}({p.name}_{j})")
            v.append(f"  {d.top} lane{j}({', '.join(conns)});")
        v.append("endmodule")
        return "\n".join(v)

    def index_fields(self) -> list[tuple[str, int, int]] | None:
        """(port, element, shift) of every input element in the exhaustive index
        (sim/stimulus/base.py's layout: the last port's last element in the low bits), or None
        where an input is no field of it (rm, rbits: drawn per vector)."""
        fields, shift = {}, 0
        for name, lanes, w in reversed(index_layout(self.design.spec)):
            for e in reversed(range(lanes)):
                fields[name, e] = shift
                shift += w
        if any((p.name, 0) not in fields for p in self.design.inputs):
            return None
        return [(p.name, e, fields[p.name, e]) for p in self.design.inputs
                for e in range(p.lanes)]

    def first_bits(self, outputs: bool = False) -> dict[str, int]:
        """{port: its first bit} when the inputs' (or the outputs') bits are numbered port
        after port in the design's order, element e's bit k at first + e * lane width + k."""
        first, at = {}, 0
        for p in self.design.outputs if outputs else self.design.inputs:
            first[p.name], at = at, at + p.lanes * p.lane_width
        return first

    def ports_header(self) -> str:
        ports = lambda group: " ".join(f"X({p.name}, {self.row_bytes(p)})"  # noqa: E731
                                       for p in group)
        hs = f"#define HANDSHAKE 1\n#define BUDGET {cycle_budget()}\n" \
            if self.design.elastic else ""
        fields, bits = self.index_fields(), self.first_bits()
        by_name = {p.name: p for p in self.design.inputs}
        index = "" if fields is None else "#define FOR_FIELDS(X) " + " ".join(
            f"X({n}, {self.row_bytes(by_name[n])}, {self.bytes[n]}, {by_name[n].lanes}, {e}, "
            f"{shift}, {by_name[n].lane_width}, {bits[n]})" for n, e, shift in fields) + "\n"
        return (hs + index + f"#define LANES {self.lanes}\n#define LATENCY "
                f"{self.design.latency}\n"
                f"#define FOR_INPUTS(X) {ports(self.design.inputs)}\n"
                f"#define FOR_OUTPUTS(X) {ports(self.design.outputs)}\n")


VERILATOR_ARGS = ["-O3", "--x-assign", "fast", "--x-initial", "fast", *VERILATOR_WAIVERS]
NATIVE_OPT_FLAGS = ["OPT_FAST=-O2", "OPT_SLOW=-O0", "OPT_GLOBAL=-O1"]


class NativeSession(Session):
    """The native binary as a subprocess: ``submit`` a chunk's inputs, ``collect`` its outputs.
    A writer thread feeds stdin, so the next chunk can wait in the pipe while this one's outputs
    are read (written from the caller's thread, a full stdout pipe would deadlock both).
    ``index``: the chunks are the exhaustive input tuples from ``index`` on, in order (the
    next chunk's first); the
    simulator then splits the index into its inputs itself (``fast --index``) and only a
    block's first tuple and size go through the pipe, no input codes."""

    def __init__(self, exe: Path, top: NativeTop, chunk: int = 1 << 20,
                 index: int | None = None):
        self.top, self.chunk, self.index = top, chunk, index
        args = ["--index"] if index is not None else []
        # the outputs in shared memory: two slots of a chunk's outputs (native_main.cpp)
        self._slot = -(-chunk // top.lanes) * sum(top.row_bytes(p) for p in top.design.outputs)
        self._shm, fds = None, ()
        if hasattr(os, "memfd_create"):
            fd = os.memfd_create("fpforge-native-outputs")
            os.ftruncate(fd, 2 * self._slot)
            self._shm = mmap.mmap(fd, 2 * self._slot)
            fds = (fd,)
            args += ["--shm", str(fd), str(self._slot)]
        self.proc = subprocess.Popen([str(exe), *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0,
                                     pass_fds=fds)
        for fd in fds:
            os.close(fd)                # the mapping and the simulator keep it
        for pipe in (self.proc.stdin, self.proc.stdout):   # fewer wake-ups per chunk
            try:
                fcntl.fcntl(pipe, F_SETPIPE_SZ, PIPE_BYTES)
            except OSError:         # above /proc/sys/fs/pipe-max-size: the default 64 KiB
                pass
        self._sent: list[int] = []
        self._collected = 0             # vectors before the next block (for "vector K")
        self._blocks = 0                # blocks collected (the shared memory slot: % 2)
        self._buffers: dict = {}        # reused output buffers (collect)
        self._blobs: queue.Queue = queue.Queue(maxsize=2)
        self._writer = threading.Thread(target=self._write, name="native-stdin", daemon=True)
        self._writer.start()

    def _write(self):
        alive = True
        while (blob := self._blobs.get()) is not None:
            try:
                for part in blob if alive else ():
                    self.proc.stdin.write(memoryview(part).cast("B"))
            except BrokenPipeError:      # the simulator stopped: collect() reports it,
                alive = False            # and close() still gets its blobs through

    def submit(self, inputs: dict) -> None:
        d, L = self.top.design, self.top.lanes
        n = inputs.vectors if isinstance(inputs, IndexChunk) else len(next(iter(inputs.values())))
        if n > self.chunk:
            raise ValueError(f"a chunk of {n} vectors for a session of {self.chunk}")
        steps = -(-n // L)
        parts = [np.uint32(steps).tobytes()]
        if self.index is not None:
            self._blobs.put(parts + [np.array([self.index, n], "<u8").tobytes()])
            self.index += n
            self._sent.append(n)
            return
        for p in d.inputs:
            codes = np.asarray(inputs[p.name]).reshape(n, p.lanes)
            if n != steps * L:
                codes = np.resize(codes, (steps * L, p.lanes))  # the last row padded with repeats
            # one conversion into the containers; the writer sends the array's own buffer
            parts.append(np.ascontiguousarray(codes, f"<u{self.top.bytes[p.name]}"))
        self._blobs.put(parts)
        self._sent.append(n)

    async def collect(self) -> dict:
        """The outputs of the oldest chunk submitted, in their containers' dtypes (uint8, uint16
        or uint32: the checker compares them with the golden model's codes as they are), valid
        until the chunk after the next is submitted (their shared memory, or buffers, are
        reused: the verification loop checks a chunk before it submits the one after the
        next)."""
        d, L = self.top.design, self.top.lanes
        n = self._sent.pop(0)
        steps = -(-n // L)
        first = int(np.frombuffer(self._read("", 4), "<u4")[0]) \
            if d.elastic or self._shm is not None else n
        at = self._blocks % 2 * self._slot
        self._blocks += 1
        out = {}
        for p in d.outputs:
            size = steps * self.top.row_bytes(p)
            if self._shm is not None:
                data, at = memoryview(self._shm)[at:at + size], at + size
            else:
                data = self._read(p.name, size)
            codes = np.frombuffer(data, f"<u{self.top.bytes[p.name]}")
            codes = codes.reshape(steps * L, p.lanes)[:min(n, first)]
            out[p.name] = codes[:, 0] if p.lanes == 1 else codes
        if first < n:
            raise NoResult(cycle_budget(), self._collected + first, out)
        self._collected += n
        return out

    async def run(self, inputs: dict) -> dict:
        self.submit(inputs)
        return await self.collect()

    def _read(self, port: str, n: int) -> memoryview:
        """``n`` bytes of the port's outputs, into its buffer (one per port, reused: a fresh
        buffer per chunk costs its page faults again)."""
        if len(self._buffers.get(port, b"")) < n:
            self._buffers[port] = bytearray(n)
        view, got = memoryview(self._buffers[port])[:n], 0
        while got < n:
            k = self.proc.stdout.readinto(view[got:])
            if not k:
                self.proc.wait()
                raise SimulationError(f"native simulator ended early (exit "
                                      f"{self.proc.returncode}): "
                                      f"{self.proc.stderr.read().decode(errors='replace')}")
            got += k
        return view

    def close(self) -> float:
        """End the simulator; returns its CPU seconds (user + system)."""
        self._blobs.put([np.uint32(0).tobytes()])
        self._blobs.put(None)
        self._writer.join()
        try:
            self.proc.stdin.close()
        except BrokenPipeError:
            pass
        _, status, usage = os.wait4(self.proc.pid, 0)
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self.proc.stdout.close()
        self.proc.stderr.close()
        return usage.ru_utime + usage.ru_stime


class NativeEngine:
    """Verilator, C++ loop, raw bytes through pipes (module docstring)."""

    name = "native"
    simulator = "verilator"         # the summaries' "sim"

    def __init__(self, lanes: int = LANES):
        self.lanes = lanes

    def build(self, design: Design) -> Path:
        """Build the native simulator of ``design`` (cached by design); returns the binary."""
        key = hashlib.sha1(f"{design.key()}:{self.lanes}".encode()).hexdigest()[:10]
        d = BUILD_ROOT / "native" / f"{design.label[:80]}_l{self.lanes}_{key}"
        with build_lock(d):
            return self._build(design, d)

    def _build(self, design: Design, d: Path) -> Path:
        exe_name, env = toolchain.verilator(check_pin=True)
        top = NativeTop(design, self.lanes)
        exe = d / "obj" / "fast"
        sources = {"top.v": top.verilog(), "ports.h": top.ports_header(),
                   "native_main.cpp": MAIN_CPP.read_text(),
                   PROTOCOL_H.name: PROTOCOL_H.read_text(),
                   "sources.txt": "\n".join(design.source_args + design.source_files)}
        if exe.exists() and all((d / n).exists() and (d / n).read_text() == t
                                for n, t in sources.items()):
            return exe
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        for n, t in sources.items():
            (d / n).write_text(t)
        # The model's code is optimized; Verilator's run-time library is not (compile time only),
        # and is compiled once per flag set (runtime_cache.py): verilate, seed the kept objects
        # (touched: newer than the makefile verilating wrote), then make.
        makeflags = [f"{k}={v}" for k, v in VERILATED_MK_FIXES.items()] + NATIVE_OPT_FLAGS
        cache = runtime_cache("native", [VERILATOR_ARGS, makeflags])
        verilate = [exe_name, "--cc", "--exe", *VERILATOR_ARGS, "--top-module", "fast",
                    "--prefix", "Vfast", "-Mdir", "obj", "-CFLAGS", f"-I{d}", "-o", "fast",
                    *design.source_args, *design.source_files, "top.v", "native_main.cpp"]
        with open(d / "build.log", "w") as log:
            r = subprocess.run(verilate, cwd=d, stdout=log, stderr=subprocess.STDOUT, env=env)
            if not r.returncode:
                seeded = seed_runtime(d / "obj", cache)
                for f in seeded:
                    os.utime(f)
                r = subprocess.run(["make", "-j", str(os.cpu_count() or 1), "-C", "obj",
                                    "-f", "Vfast.mk", *makeflags], cwd=d, stdout=log,
                                   stderr=subprocess.STDOUT, env=env)
        if not r.returncode:
            store_runtime(d / "obj", cache, design_root=d)
        if r.returncode or not exe.exists():
            raise SimulationError(f"native build failed ({r.returncode}); see {d / 'build.log'}")
        return exe

    def bare(self, design: Design, vectors: int, *, exe: Path | None = None) -> subprocess.Popen:
        """Start the simulator alone on ``vectors`` vectors (``fast --bare``: no pipes, no golden
        model, no comparison; the ceiling of a run's rate). Its stdout's one line is
        "steps seconds"."""
        if design.elastic:
            raise ValueError("the bare simulator rate is measured on designs without handshake")
        steps = -(-vectors // self.lanes)
        return subprocess.Popen([str(exe or self.build(design)), "--bare", str(steps)],
                                stdout=subprocess.PIPE, text=True)

    def session(self, design: Design, *, exe: Path | None = None, chunk: int = 1 << 20,
                index: int | None = None) -> NativeSession:
        return NativeSession(exe or self.build(design), NativeTop(design, self.lanes), chunk,
                             index)

    def index_start(self, design: Design, plan: Plan) -> int | None:
        """The first input tuple of a plan the simulator can draw itself (one exhaustive part,
        nothing held, every input a field of the index), else None (inputs through the pipe)."""
        if len(plan.stimulus) != 1 or plan.stimulus[0][0] != "exhaustive":
            return None
        part = plan.stimulus[0][1] if len(plan.stimulus[0]) > 1 else {}
        if part.get("held") or NativeTop(design, self.lanes).index_fields() is None or \
                int(part.get("stop", space_size(design.spec))) > 1 << 32:
            return None
        return int(part.get("start", 0))

    def simulate(self, design: Design, inputs: dict) -> dict:
        check_inputs(design, inputs)
        n = len(next(iter(inputs.values())))
        session = self.session(design, chunk=max(self.lanes, n))
        try:
            out = asyncio.run(session.run(inputs))
        finally:
            session.close()
        return {p: v.astype(np.uint32) for p, v in out.items()}   # the engines' own dtype

    def verify(self, design: Design, plan: Plan, *, exe: Path | None = None,
               report_path: str = "", progress_path: str = "") -> dict:
        """Run ``plan`` on the native binary (built unless ``exe`` is given)."""
        with toolchain.environment(bench_env()):   # before the golden model starts JAX
            keep_heap()
            session = self.session(design, exe=exe, chunk=max(self.lanes, plan.batch),
                                   index=self.index_start(design, plan))
            try:
                _, summary = asyncio.run(check_stream(
                    session, design, plan, report_path=report_path,
                    progress_path=progress_path, engine=self.name, pipelined=True, narrow=True,
                    lanes=self.lanes, index=session.index is not None))
            finally:
                cpu = session.close()
        summary["simulator_cpu_s"] = cpu
        write_json(report_path, summary)
        return summary
