"""The gates engine: the design's gate netlist, 256 vectors per gate operation, for 2^32 runs.

Why: the native engine runs Verilator's model of the module one vector (one lane copy) at a
time; for a 16-bit unit that is 28-32 CPU ns per vector on a 2-core AMD EPYC (make
bench-exhaustive), more than the whole golden model and comparison, so a 2^32 run cannot go
faster than about 65 s on 2 cores, whatever the rest does. Here Yosys maps the module to an
and-inverter graph (its own reading of the same Verilog file: ``read_verilog``, ``proc``,
``flatten``, ``techmap``, ``aigmap``; no optimisation beyond Yosys's own clean-ups), and every
signal is a 256-bit word whose bit j is vector j: one AND of two words evaluates that gate for
256 vectors (``model.cpp``, generated; GCC's vector extension, compiled for any x86-64: two SSE2
operations per word, so the binary runs wherever an executor sends a shard).

What it checks: the netlist Yosys reads from the file, two-state like Verilator: every ``x``
(the branch a ``full_case`` chain never takes, a table's unfilled words, anything reachable too)
and every undriven bit is 0, as Verilator's model makes them; an output that could really be
``x`` or ``z`` is the cocotb and batch engines' business (4-state Icarus). Verilog read by
Yosys's reader (fpforge's units and a user's Verilog; SystemVerilog goes to Verilator),
combinational or pipelined with a fixed latency: the flip-flops, on the rising edge of the
design's one clock, are AIGER latches, one bit per lane in a word, clocked as the native loop
clocks Verilator's model (3 cycles of reset, one cycle per step, the outputs read after the
edge). An asynchronous reset, set or load is Yosys's ``async2sync`` model of it: the output
follows it at once, the state takes it at the next edge; the loop reads outputs only after an
edge, where that agrees with Verilator's model (the design's own reset is asserted only before
the first vector). A handshake (lanes would step at their own pace), latches, falling edges, a
second clock, the clock read as data, or an input the netlist needs that is no data or control
port are refused with a message naming the native engine.

Everything else is the native engine's (sim/engines/native.py): the same pipe protocol and
session, the same exhaustive index split inside the simulator (``--index``), the same checker
and verification loop; this module only builds a different binary (``gates_main.cpp`` and
the netlist) behind it, with LANES = 256 vectors per step.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
from pathlib import Path

from fpforge.infra import toolchain

from ..design import Design
from ..errors import DesignError
from ..lint import yosys_reads
from .base import BUILD_ROOT, SimulationError, build_lock
from .native import PROTOCOL_H, NativeEngine, NativeTop

__all__ = ["GatesEngine", "GATES_LANES", "netlist_model"]

HERE = Path(__file__).resolve().parent
MAIN_CPP = HERE / "gates_main.cpp"
GATES_LANES = 256          # bits of one word: vectors per gate operation
# Yosys's reading of the module as an and-inverter graph; ``memory`` turns ROM tables into
# logic. ``opt_expr -mux_undef`` and ``setundef -zero -undriven`` make every x and undriven bit 0
# (two-state, as Verilator; input ports are never undriven): the x proc writes for the branch a
# full_case chain never takes (Amaranth marks its if/elif chains full_case), a table's unfilled
# words. ``opt -fast`` only merges and removes. The AIGER map names no output bit tied to a
# constant, so the ports' bits (constants as "0" or "1") are written too, without the cells and
# the wires they leave unused.
AIG_SCRIPT = ("hierarchy -check -top {top}; proc; flatten; memory; opt_expr -mux_undef; "
              "opt -fast; setundef -zero -undriven; techmap; opt -fast; {checks}"
              "aigmap; opt_clean; write_aiger -ascii -map model.map model.aag; delete t:*; "
              "opt_clean; write_json -noscopeinfo ports.json")
# The state the loop can step (a pipelined design): flip-flops on the rising edge of the design's
# clock, each as one AIGER latch; an asynchronous reset, set or load becomes ``async2sync``'s
# model (the output follows it at once, the state at the next edge: the same after an edge,
# where the loop reads), enables and synchronous resets logic (``dffunmap``). Each check is a
# selection that must be empty; its refusal names the engine that simulates what it found.
NO_LATCHES = "t:$_DLATCH* t:$_SR_* t:$_FF_"
NOT_RISING = "t:$_*FF* t:$_DFF_P_ %d"
OTHER_CLOCK = "t:$_DFF_P_ %ci:+[C] t:$_DFF_P_ %d w:{clock} %d"
STATELESS = f"t:$_*FF* {NO_LATCHES}"


def _checks(design: Design) -> list[tuple[str, str]]:
    """(selection that must be empty, the refusal if it is not) of ``design``."""
    if not design.latency:
        return [(STATELESS, "has flip-flops or latches but no latency: a pipelined module "
                            "needs --latency N and --clock NAME")]
    why = "; the gates engine steps rising-edge flip-flops of one clock: use --engine native"
    return [(NO_LATCHES, "has a latch or a flip-flop without a clock" + why),
            (NOT_RISING, "has flip-flops on a falling clock edge" + why),
            (OTHER_CLOCK.format(clock=design.clock),
             f"has flip-flops on another clock than {design.clock}" + why)]


def _check_script(design: Design) -> str:
    first, *rest = (f"select -assert-none {sel}; " for sel, _ in _checks(design))
    return first + ("async2sync; dffunmap; " + "".join(rest) if rest else "")


CXX_FLAGS = ["-O2", "-std=c++17"]
# Statements per function of model.cpp: GCC's time grows faster than the function (a 124,000-gate
# quantizer took 6 minutes at -O2 in one function); values a later part reads pass through an
# array.
PART = 2000
SCRIPT_WORD = re.compile(r"[A-Za-z0-9_.'+-]*")      # a define's value Yosys's script carries


def netlist_model(aag: str, mapping: str, design: Design, constants: dict | None = None,
                  part: int = PART) -> str:
    """The C++ of the netlist from Yosys's ASCII AIGER ``aag`` and its ``-map`` file, which
    holds the flip-flops' state: ``init_state()`` (every flip-flop bit at its initial value, 0
    where it has none) and ``eval_gates(in, reset, out)``, one clock cycle as Verilator's model
    takes it: the next state from the inputs and the state (the rising edge), then every
    output bit from the inputs and the new state. Every input bit is read from its plane (port
    by port in the design's order, element e's bit k at plane e * width + k), every output bit
    written to its own; a pipelined design's reset reads ``rst`` (its polarity applied) and its
    valid input is 1. ``constants``: {(port, bit): 0 or 1} of the output bits tied to a
    constant (the map leaves them out); ``part``: statements per function. Raises DesignError
    for a netlist the loop cannot run (state in a combinational design, an input that is no
    data or control port, the clock read as data, an output bit it does not drive)."""
    lines = aag.split("\n")
    I, L, O, A = map(int, lines[0].split()[2:6])       # "aag M I L O A"
    if L and not design.latency:
        raise DesignError(f"{design.label}: the gates engine simulates a combinational design "
                          f"without state; Yosys finds {L} flip-flop or latch bits: use "
                          "--engine native")
    planes_in, planes_out = _planes(design, False), _planes(design, True)
    named = {"input": {}, "output": {}}
    for line in mapping.splitlines():
        kind, index, bit, name = line.split()[:4]
        if kind in named:
            named[kind][int(index)] = (name, int(bit))
    control = {design.reset: "~rst" if design.reset_low else "rst", design.valid_in: "ONES",
               design.clock: "ZERO"} if design.latency else {}
    control.pop(None, None)
    inputs, missing, clock_var = [], [], None
    for k in range(I):
        var = int(lines[1 + k]) >> 1
        name, bit = named["input"].get(k, (f"input {k}", 0))
        plane = planes_in.get((name, bit))
        if plane is not None:
            inputs.append((f"n{var}", f"in[{plane}]"))
        elif name in control:
            inputs.append((f"n{var}", control[name]))
            clock_var = var if name == design.clock else clock_var
        else:
            missing.append(f"{name}[{bit}]")
    if missing:
        raise DesignError(f"{design.label}: the netlist reads {', '.join(missing[:8])}"
                          f"{' ...' if len(missing) > 8 else ''}, which no data input drives "
                          "(a control input the design does not name): use --engine native")
    latches = [list(map(int, lines[1 + I + k].split())) for k in range(L)]
    ands = {}
    for k in range(A):
        lhs, r0, r1 = map(int, lines[1 + I + L + O + k].split())
        ands[lhs >> 1] = (r0, r1)
    outputs, undriven = [], dict(planes_out)
    for k in range(O):
        plane = undriven.pop(named["output"].get(k, ("", 0)), None)
        if plane is not None:           # else an output no spec port reads (valid_o)
            outputs.append((plane, int(lines[1 + I + L + k])))
    for key, value in (constants or {}).items():
        if key in undriven:
            outputs.append((undriven.pop(key), 1 if value else 0))   # literals 1, 0
    if undriven:
        raise DesignError(f"{design.label}: the netlist has no output "
                          f"{', '.join(f'{n}[{b}]' for n, b in list(undriven)[:8])}")
    next_cone = _cone([nxt for _, nxt, *_ in latches], ands)
    out_cone = _cone([lit for _, lit in outputs], ands)
    if clock_var is not None and clock_var in next_cone | out_cone:
        raise DesignError(f"{design.label}: the netlist reads the clock {design.clock} as "
                          "data: use --engine native")
    # A gate of the outputs' cone is evaluated again after the edge if it reads the state.
    stateful = {lit >> 1 for lit, *_ in latches}
    for var in sorted(ands):
        if any(r >> 1 in stateful for r in ands[var]):
            stateful.add(var)
    again = {v for v in out_cone if v in stateful or (v in ands and v not in next_cone)}

    def ref(lit: int, after: bool) -> tuple[str, tuple[str, ...]]:
        """The literal as C++, and the name it reads."""
        var, neg = lit >> 1, lit & 1
        if var == 0:
            return ("ONES" if neg else "ZERO"), ()
        name = f"{'m' if after and var in again else 'n'}{var}"
        return (f"~{name}" if neg else name), (name,)

    def gate(prefix: str, var: int, after: bool) -> tuple[str, str, tuple[str, ...]]:
        (a, used_a), (b, used_b) = (ref(r, after) for r in ands[var])
        return f"{prefix}{var}", f"{a} & {b}", used_a + used_b

    # (the name a statement defines, or None; its C++; the names it reads), in order
    steps = [(name, expr, ()) for name, expr in inputs]
    steps += [(f"n{lit >> 1}", f"state[{i}]", ()) for i, (lit, *_) in enumerate(latches)
              if lit >> 1 in next_cone]
    steps += [gate("n", v, False) for v in sorted(ands) if v in next_cone]    # the rising edge
    steps += [(None, f"state[{i}] = {e}", used)
              for i, (_, nxt, *_) in enumerate(latches) for e, used in [ref(nxt, False)]]
    steps += [(f"m{lit >> 1}", f"state[{i}]", ()) for i, (lit, *_) in enumerate(latches)
              if lit >> 1 in out_cone]                                       # after it
    steps += [gate("m", v, True) for v in sorted(ands) if v in again]
    steps += [(None, f"out[{plane}] = {e}", used)
              for plane, lit in outputs for e, used in [ref(lit, True)]]
    head = ["// Generated by fpforge (sim/engines/gates.py) from Yosys's and-inverter graph",
            f"// of {design.label}: {A} AND gates, {I} inputs, {L} flip-flop bits, {O} outputs.",
            "#include <cstdint>",
            "typedef uint64_t V __attribute__((vector_size(32)));",
            f"static V state[{max(L, 1)}];",
            "void init_state() {",
            "  const V ZERO = {0, 0, 0, 0}, ONES = ~ZERO;",
            "  (void)ONES; (void)ZERO;",
            *(f"  state[{i}] = {'ONES' if len(l) > 2 and l[2] == 1 else 'ZERO'};"
              for i, l in enumerate(latches)),
            "}"]
    return "\n".join(head + _eval_functions(steps, part) + [""])


def _eval_functions(steps: list, part: int) -> list[str]:
    """``eval_gates`` as functions of ``part`` statements each, called in turn."""
    parts = [steps[k:k + part] for k in range(0, len(steps), part)] or [[]]
    home = {name: k for k, p in enumerate(parts) for name, _, _ in p if name}
    slot = {}
    for k, p in enumerate(parts):
        for _, _, used in p:
            for name in used:
                if home[name] != k:
                    slot.setdefault(name, len(slot))
    lines = []
    for k, p in enumerate(parts):
        lines += [f"static void part{k}(const V* __restrict in, V* __restrict state, bool reset,",
                  "                  V* __restrict out, V* __restrict w) {",
                  "  const V ZERO = {0, 0, 0, 0}, ONES = ~ZERO, rst = reset ? ONES : ZERO;",
                  "  (void)ONES; (void)ZERO; (void)rst; (void)in; (void)state; (void)out; "
                  "(void)w;"]
        lines += [f"  const V {name} = w[{slot[name]}];" for name in
                  dict.fromkeys(n for _, _, used in p for n in used if home[n] != k)]
        for name, expr, _ in p:
            lines.append(f"  const V {name} = {expr};" if name else f"  {expr};")
            if name in slot:
                lines.append(f"  w[{slot[name]}] = {name};")
        lines.append("}")
    return lines + [f"static V wires[{max(len(slot), 1)}];",
                    "void eval_gates(const V* __restrict in, bool reset, V* __restrict out) {",
                    *(f"  part{k}(in, state, reset, out, wires);" for k in range(len(parts))),
                    "}"]


def _cone(roots: list[int], ands: dict) -> set[int]:
    """The variables (AND gates, inputs, flip-flops) the literals ``roots`` read."""
    seen, todo = set(), [lit >> 1 for lit in roots]
    while todo:
        var = todo.pop()
        if var in seen or var == 0:
            continue
        seen.add(var)
        todo.extend(r >> 1 for r in ands.get(var, ()))
    return seen


def _constant_outputs(ports_json: str, top: str) -> dict:
    """{(port, bit): 0 or 1} of the output bits of module ``top`` Yosys ties to a constant."""
    ports = json.loads(ports_json)["modules"][top]["ports"]
    return {(name, k): int(b) for name, p in ports.items() if p["direction"] == "output"
            for k, b in enumerate(p["bits"]) if b in ("0", "1")}


def _planes(design: Design, outputs: bool) -> dict:
    """{(module port name, bit): plane} of the inputs' (or outputs') bits (NativeTop.first_bits:
    element e's bit k of port p at p's first plane + e * lane width + k)."""
    first = NativeTop(design).first_bits(outputs)
    return {(design.outer(p.name), bit): first[p.name] + bit
            for p in (design.outputs if outputs else design.inputs)
            for bit in range(p.lanes * p.lane_width)}


def _ports_header(top: NativeTop) -> str:
    """ports.h of gates_main.cpp: the native engine's (rows, the exhaustive index's fields), and
    each port's planes (port, container bytes, elements per lane, lane width, first plane)."""
    d = top.design

    def planes(ports, outputs):
        first = top.first_bits(outputs)
        return " ".join(f"X({p.name}, {top.bytes[p.name]}, {p.lanes}, {p.lane_width}, "
                        f"{first[p.name]})" for p in ports)

    count = {k: sum(p.lanes * p.lane_width for p in ports)
             for k, ports in (("IN", d.inputs), ("OUT", d.outputs))}
    return (top.ports_header() + f"#define IN_PLANES {count['IN']}\n"
            f"#define OUT_PLANES {count['OUT']}\n"
            f"#define FOR_INPUT_PLANES(X) {planes(d.inputs, False)}\n"
            f"#define FOR_OUTPUT_PLANES(X) {planes(d.outputs, True)}\n")


class GatesEngine(NativeEngine):
    """The native engine's protocol on a bit-parallel gate netlist (module docstring)."""

    name = "gates"
    simulator = "yosys"

    def __init__(self, part: int = PART):
        super().__init__(lanes=GATES_LANES)
        self.part = part            # statements per function of model.cpp

    def build(self, design: Design) -> Path:
        """Build the gate-level simulator of ``design`` (cached by design); returns the
        binary. Raises DesignError for a design it cannot simulate."""
        if design.systemverilog:
            raise DesignError(f"{design.label} has SystemVerilog sources; the gates engine "
                              "reads Verilog with Yosys: use --engine native (Verilator)")
        if design.elastic:
            raise DesignError(f"{design.label} has a handshake; the gates engine steps every "
                              "lane on one clock: use --engine native")
        # the design, the loop, its ports.h, and this module (the script, the C++ it writes)
        key = hashlib.sha1(f"{design.key()}:{MAIN_CPP.read_text()}:{PROTOCOL_H.read_text()}:"
                           f"{_ports_header(NativeTop(design, self.lanes))}:{self.part}:"
                           f"{Path(__file__).read_text()}".encode()).hexdigest()[:10]
        d = BUILD_ROOT / "gates" / f"{design.label[:80]}_{key}"
        with build_lock(d):
            return self._build(design, d)

    def _build(self, design: Design, d: Path) -> Path:
        exe = d / "fast"
        if exe.exists():
            return exe
        shutil.rmtree(d, ignore_errors=True)
        d.mkdir(parents=True)
        reads = self._sources(design, d)
        log = d / "build.log"
        script = "; ".join(reads) + "; " + AIG_SCRIPT.format(top=design.top,
                                                             checks=_check_script(design))
        with open(log, "w") as fh:
            r = subprocess.run(toolchain.yosys() + ["-q", "-p", script], cwd=d, stdout=fh,
                               stderr=subprocess.STDOUT)
        if r.returncode:
            text = log.read_text()
            for selection, refusal in _checks(design):
                if f"selection is not empty: {selection}\n" in text:
                    raise DesignError(f"{design.label} {refusal}")
            tail = [line for line in text.splitlines() if line.strip()][-1:]
            raise SimulationError(f"Yosys could not map {design.label} to gates "
                                  f"({tail[0] if tail else r.returncode}); see {log}")
        top = NativeTop(design, self.lanes)
        (d / "model.cpp").write_text(netlist_model(
            (d / "model.aag").read_text(), (d / "model.map").read_text(), design,
            _constant_outputs((d / "ports.json").read_text(), design.top), self.part))
        (d / "ports.h").write_text(_ports_header(top))
        for source in (MAIN_CPP, PROTOCOL_H):
            shutil.copyfile(source, d / source.name)
        cxx = shutil.which("g++") or shutil.which("c++")
        if cxx is None:
            raise SimulationError("no C++ compiler (g++) for the gates engine")
        with open(log, "a") as fh:
            r = subprocess.run([cxx, *CXX_FLAGS, "-I.", "-o", "fast.tmp", "gates_main.cpp",
                                "model.cpp"], cwd=d, stdout=fh, stderr=subprocess.STDOUT)
        if r.returncode:
            raise SimulationError(f"the gates engine's build failed ({r.returncode}); see {log}")
        (d / "fast.tmp").rename(exe)
        return exe

    @staticmethod
    def _sources(design: Design, d: Path) -> list[str]:
        """Yosys's read commands of the design, its files and include folders copied into the
        build folder (the WebAssembly Yosys sees only its working folder: sim/lint.py)."""
        flags = []
        if design.sources is not None:
            for i, inc in enumerate(design.sources.include_dirs):
                shutil.copytree(inc, d / f"inc{i}", dirs_exist_ok=True)
                flags.append(f"-Iinc{i}")
            for n, v in design.sources.defines:
                if v is not None and not SCRIPT_WORD.fullmatch(v):
                    raise DesignError(f"--define {n}={v}: the gates engine passes defines to "
                                      "Yosys's script, which takes letters, digits and _.'+-:"
                                      " here; use --engine native")
                flags.append(f"-D{n}" if v is None else f"-D{n}={v}")
        paths = list(design.source_files)
        if design.text is not None:
            paths.append(d / f"{design.top}.v")
            paths[-1].write_text(design.text)
        return yosys_reads(d, paths, flags=flags)
