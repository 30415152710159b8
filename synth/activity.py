"""Switching activity of a mapped netlist: every net's transitions and time at 1, from a
zero-delay gate-level simulation (Icarus Verilog) of the netlist and its library's cell models
on given operand vectors.

A generated testbench applies one operation per clock period: vector i in cycle i, a registered
unit (``clk``, ``rst``, ``valid_i``: rtl/ports.py) reset first and then fed with ``valid_i``
held high. Once per period, after the inputs and the registers have settled, it writes the value
of every net of the netlist; a net's transitions are the changes between consecutive samples.
The measured window starts once the pipeline is full (``latency`` periods in) and holds one
sample per vector.

Zero delay is the limit: a gate's output settles once per period, so glitches (the spurious
transitions of unequal path delays, a large share of a multiplier's real switching) are not
counted. docs/power.md.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fpforge.infra.toolchain import tool
from fpforge.rtl.ports import CLOCK, RESET, VALID_IN, Port

__all__ = ["Activity", "Net", "netlist_nets", "simulate_activity", "pack_port"]

RESET_PERIODS = 2
_PERIOD = 10          # testbench time units per clock period (zero delay: any value works)


@dataclass(frozen=True)
class Net:
    """One declared wire of a netlist: ``width`` bits from ``msb`` down to ``lsb``."""

    name: str
    msb: int = 0
    lsb: int = 0
    vector: bool = False

    def bits(self) -> list[str]:
        """Each bit as OpenSTA names it: ``a[3]``, or ``_012_`` for a scalar."""
        if not self.vector:
            return [self.name]
        step = -1 if self.msb >= self.lsb else 1
        return [f"{self.name}[{i}]" for i in range(self.msb, self.lsb + step, step)]


_DECL = re.compile(r"^\s*(?:wire|input|output|reg)\s+(?:\[(\d+):(\d+)\]\s+)?([A-Za-z_][\w$]*)\s*;",
                   re.M)


def netlist_nets(text: str) -> list[Net]:
    """Every net a mapped netlist (Yosys ``write_verilog -noattr``) declares, once each."""
    if "\\" in text:
        raise ValueError("the netlist has escaped identifiers; the activity testbench names "
                         "nets by plain identifiers only")
    seen: dict[str, Net] = {}
    for msb, lsb, name in _DECL.findall(text):
        seen.setdefault(name, Net(name, int(msb), int(lsb), True) if msb else Net(name))
    return list(seen.values())


@dataclass(frozen=True)
class Activity:
    """Per net bit: transitions over the window and the fraction of samples at 1."""

    vectors: int                 # operations simulated (samples in the window)
    toggles: dict                # net bit -> transitions between consecutive samples
    duty: dict                   # net bit -> fraction of samples at 1

    @property
    def periods(self) -> int:
        """Clock periods the transitions were counted over."""
        return self.vectors - 1

    def rate(self, net: str) -> float:
        """Transitions per clock period."""
        return self.toggles[net] / self.periods


def pack_port(port: Port, values) -> list[int]:
    """One integer per operation: a port's lanes packed, element i at ``[i*lane_width +:
    lane_width]``. ``values`` is (n,) for one lane, (n, lanes) for more."""
    a = np.asarray(values)
    if port.lanes == 1 and a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2 or a.shape[1] != port.lanes:
        raise ValueError(f"port {port.name}: expected {port.lanes} lane(s) per operation, got an "
                         f"array of shape {np.asarray(values).shape}")
    mask = (1 << port.lane_width) - 1
    out = []
    for row in a.tolist():
        word = 0
        for i, v in enumerate(row):
            word |= (int(v) & mask) << (i * port.lane_width)
        out.append(word)
    return out


def _testbench(top: str, ports: list[Port], nets: list[Net], latency: int, n: int) -> str:
    data = [p for p in ports if p.is_input and not p.is_control]
    registered = any(p.name == CLOCK for p in ports)
    total = sum(p.width for p in data)
    lines = ["`timescale 1ns/1ps", "module fpforge_activity_tb;"]
    for p in ports:
        kind = "reg" if p.is_input else "wire"
        rng = f"[{p.width - 1}:0] " if p.width > 1 else ""
        lines.append(f"  {kind} {rng}{p.name};")
    lines += [f"  reg [{total - 1}:0] fpforge_vec [0:{n - 1}];", "  integer fpforge_i, fpforge_f;",
              f"  {top} dut ({', '.join(f'.{p.name}({p.name})' for p in ports)});"]
    if registered:
        lines.append(f"  initial {CLOCK} = 0;\n  always #{_PERIOD // 2} {CLOCK} = ~{CLOCK};")
    concat = ", ".join(f"dut.{x.name}" for x in nets)
    fill = latency
    operands = "{" + ", ".join(p.name for p in data) + "}"
    lines += ["  initial begin",
              '    $readmemh("vectors.hex", fpforge_vec);',
              '    fpforge_f = $fopen("samples.txt", "w");',
              f"    {operands} = 0;"]
    if registered:
        lines += [f"    {RESET} = 1; {VALID_IN} = 1;",
                  f"    #{RESET_PERIODS * _PERIOD} {RESET} = 0;"]
    # Inputs change half a period before the rising edge that latches them; every net is
    # sampled just before the following edge, when the logic and the registers have settled.
    lines += [f"    for (fpforge_i = 0; fpforge_i < {fill + n}; fpforge_i = fpforge_i + 1) begin",
              f"      {operands} = fpforge_vec[fpforge_i % {n}];",
              f"      #{_PERIOD - 1};",
              f"      if (fpforge_i >= {fill}) $fdisplay(fpforge_f, \"%b\", {{{concat}}});",
              "      #1;",
              "    end",
              "    $fclose(fpforge_f);",
              "    $finish;",
              "  end",
              "endmodule"]
    return "\n".join(lines) + "\n"


def simulate_activity(netlist: Path, cell_models: Path, top: str, ports: list[Port],
                      vectors: dict, directory: Path, *, latency: int = 0) -> Activity:
    """Simulate ``netlist`` (module ``top``, with ``ports``: rtl/ports.py) on ``vectors``
    (data input name -> one value per operation: pack_port) in ``directory`` and count every
    net bit's transitions and time at 1 over the operations, once a ``latency``-deep pipeline
    is full. Raises ValueError on missing or extra operands, a net left unknown (x or z) in the
    window, or a failed simulation (log ``activity.log``)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    data = [p for p in ports if p.is_input and not p.is_control]
    names = {p.name for p in data}
    if set(vectors) != names:
        raise ValueError(f"operand vectors for {sorted(vectors)}, but the data inputs of {top} "
                         f"are {sorted(names)}")
    packed = {p.name: pack_port(p, vectors[p.name]) for p in data}
    n = len(next(iter(packed.values())))
    if n < 2 or any(len(v) != n for v in packed.values()):
        raise ValueError("every data input needs the same number (>= 2) of operations")
    total = sum(p.width for p in data)
    digits = (total + 3) // 4
    rows = []
    for i in range(n):
        word = 0
        for p in data:
            word = (word << p.width) | packed[p.name][i]
        rows.append(f"{word:0{digits}x}")
    (directory / "vectors.hex").write_text("\n".join(rows) + "\n")
    nets = netlist_nets(Path(netlist).read_text())
    (directory / "activity_tb.v").write_text(_testbench(top, ports, nets, latency, n))
    log = directory / "activity.log"
    build = [tool("iverilog"), "-g2005", "-o", "activity.vvp", "-s", "fpforge_activity_tb",
             str(Path(cell_models).resolve()), str(Path(netlist).resolve()), "activity_tb.v"]
    for cmd in (build, [tool("vvp"), "-n", "activity.vvp"]):
        done = subprocess.run(cmd, cwd=directory, capture_output=True, text=True)
        with open(log, "a") as out:
            out.write(f"$ {' '.join(cmd)}\n{done.stdout}{done.stderr}")
        if done.returncode != 0:
            raise ValueError(f"the activity simulation of {top} failed (exit {done.returncode}); "
                             f"see {log}")
    return _count(directory / "samples.txt", nets, n)


def _count(path: Path, nets: list[Net], n: int) -> Activity:
    bits = [b for x in nets for b in x.bits()]
    raw = np.frombuffer(path.read_bytes(), dtype=np.uint8)
    rows = raw.reshape(-1, len(bits) + 1)[:, :-1]          # each line ends in a newline
    if rows.shape[0] != n:
        raise ValueError(f"the activity simulation wrote {rows.shape[0]} samples, not {n}")
    unknown = ~np.isin(rows, np.frombuffer(b"01", dtype=np.uint8)).all(axis=0)
    if unknown.any():
        bad = [b for b, u in zip(bits, unknown) if u]
        raise ValueError(f"{len(bad)} net(s) unknown (x or z) after reset, e.g. "
                         f"{', '.join(bad[:5])}")
    ones = rows == ord("1")
    toggles = (ones[1:] != ones[:-1]).sum(axis=0)
    duty = ones.mean(axis=0)
    return Activity(n, dict(zip(bits, toggles.tolist())), dict(zip(bits, duty.tolist())))
