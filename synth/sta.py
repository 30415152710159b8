"""Load-aware static timing of a mapped netlist with OpenSTA (Debian package ``opensta``, ``sta``).

OpenSTA reads the library's liberty (NLDM tables; synth/cell_library.py) and the netlist ABC
mapped, and propagates slews and loads: a select that drives twenty multiplexers is slower than one
that drives one. The boundary is the library's (cell_library.Boundary, docs/synth/libraries.md):
every input is driven with the slew of its smallest inverter driving four NAND2 inputs, every
output drives four NAND2 inputs, input and output delays are 0, the clock is ideal.

A combinational design is timed against a virtual clock: its delay is the worst input-to-output
arrival. A registered design (a ``clk`` port) is timed in four path groups -- input to register,
register to register, register to output, input to output -- each reported as the clock period it
needs (arrival plus setup at a register); the design's delay is the worst of them and its Fmax the
inverse. Every figure is ``period - slack`` of OpenSTA's ``report_checks``, parsed back with its
start and end points and the cells on the path. A registered design also gets a hold (min-delay)
check on every path into a register (from its inputs and from its registers): the worst hold
slack (ps). Inputs arrive at the clock edge itself, so the check is pessimistic by the
neighbouring registers' clock-to-Q.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from fpforge.rtl.ports import CLOCK
from fpforge.infra.toolchain import tool

from .cells import INPUT_SLEW_NS, OUTPUT_LOAD_FF, arcs

__all__ = ["register_overhead_ps", "run_script", "PathTiming", "Timing", "GROUPS", "sta_command", "sta_version",
           "check_sta", "sta_script", "run_sta", "parse_report", "BOUNDARY"]

# The period the constraints are written against; figures are period - slack, so any period
# longer than every path gives the same numbers.
PERIOD_PS = 1e6
# fpforge's own library's boundary (cell_library.own_library states the same text).
BOUNDARY = (f"OpenSTA, NLDM tables; inputs driven with {INPUT_SLEW_NS * 1000:.1f} ps slew (an X1 "
            f"inverter driving four NAND2 inputs), outputs loaded with {OUTPUT_LOAD_FF:.2f} fF "
            f"(four NAND2 inputs), input/output delays 0, ideal clock")

# Path groups of a registered design, by where they start and end.
GROUPS = {
    "in-out": ("[inputs]", "[all_outputs]"),
    "in-reg": ("[inputs]", "[all_registers -data_pins]"),
    "reg-reg": ("[all_registers -clock_pins]", "[all_registers -data_pins]"),
    "reg-out": ("[all_registers -clock_pins]", "[all_outputs]"),
}


def register_overhead_ps() -> float:
    """What a register-to-register path pays besides its logic: DFF_X1's clock-to-Q (driving
    the stated load, clock at the stated slew) plus its setup time. A delay target for ABC,
    which maps only the logic between registers, is the clock period less this."""
    dff = {a.timing_type: a.tables for a in arcs() if a.cell == "DFF_X1"}
    clk_q = max(dff["rising_edge"][t].lookup(INPUT_SLEW_NS, OUTPUT_LOAD_FF)
                for t in ("cell_rise", "cell_fall"))
    setup = max(dff["setup_rising"][t].lookup(INPUT_SLEW_NS, INPUT_SLEW_NS)
                for t in ("rise_constraint", "fall_constraint"))
    return round((clk_q + setup) * 1000, 1)


def sta_command() -> str:
    """OpenSTA's executable; a missing one raises infra.toolchain.ToolMissing naming the package
    (no fallback timer: the delay would silently change meaning)."""
    return tool("sta")


@lru_cache(maxsize=1)
def sta_version() -> str:
    out = subprocess.run([sta_command(), "-version"], capture_output=True, text=True, check=True)
    return f"OpenSTA {out.stdout.strip()}"


def check_sta() -> None:
    """Raise ToolMissing now, before any synthesis runs."""
    sta_command()


@dataclass(frozen=True)
class PathTiming:
    """One path group's worst path: the period it needs (ps), where it starts and ends, and the
    cells along it (cell types, in order)."""

    delay_ps: float
    startpoint: str
    endpoint: str
    cells: tuple[str, ...]


@dataclass(frozen=True)
class Timing:
    """A design's timing: the worst path of each group it has (GROUPS' names)."""

    paths: dict          # group -> PathTiming
    registered: bool
    hold_slack_ps: float | None = None    # registered: worst hold slack into a register

    @property
    def worst(self) -> PathTiming | None:
        return max(self.paths.values(), key=lambda p: p.delay_ps, default=None)

    @property
    def delay_ps(self) -> float | None:
        w = self.worst
        return None if w is None else w.delay_ps

    @property
    def fmax_mhz(self) -> float | None:
        """Registered designs only: the clock every group meets, with 0 input/output delay."""
        if not self.registered or self.delay_ps is None:
            return None
        return round(1e6 / self.delay_ps, 1)


def sta_script(liberty: str, netlist: str, top: str, registered: bool,
               input_transition: float = INPUT_SLEW_NS,
               output_load: float = OUTPUT_LOAD_FF, ps_per_unit: float = 1000.0) -> str:
    """The Tcl OpenSTA runs: read, link, constrain, one ``report_checks`` per path group (and a
    min-delay one for hold, registered), with the boundary and the period in the liberty's
    units (``ps_per_unit`` picoseconds per time unit)."""
    period = PERIOD_PS / ps_per_unit
    lines = [f"read_liberty {liberty}", f"read_verilog {netlist}", f"link_design {top}"]
    if registered:
        lines += [f"create_clock -name {CLOCK} -period {period:g} [get_ports {CLOCK}]",
                  f"set inputs [lsearch -all -inline -not [all_inputs] [get_ports {CLOCK}]]"]
        groups = GROUPS
    else:
        lines += [f"create_clock -name {CLOCK} -period {period:g}", "set inputs [all_inputs]"]
        groups = {"in-out": GROUPS["in-out"]}
    lines += [f"set_input_delay 0 -clock {CLOCK} $inputs",
              f"set_output_delay 0 -clock {CLOCK} [all_outputs]",
              f"set_input_transition {input_transition:g} $inputs",
              f"set_load {output_load:g} [all_outputs]"]
    for name, (start, end) in groups.items():
        start = start.replace("[inputs]", "$inputs")
        lines += [f'puts "@@ group {name}"',
                  f"report_checks -path_delay max -from {start} -to {end} -digits 5"]
    if registered:
        lines += [f'puts "{_HOLD}"',
                  "report_checks -path_delay min -to [all_registers -data_pins] -digits 5"]
    return "\n".join(lines) + "\nexit\n"


def run_sta(directory: Path, library, netlist: Path, top: str, registered: bool) -> Timing:
    """Time ``netlist`` on ``library`` (cell_library.Library: its liberty, boundary and cell
    names) in ``directory`` (script ``sta.tcl``, report ``sta.log``)."""
    directory = Path(directory)
    b = library.boundary
    # paths relative to the folder, which a stored result restores elsewhere (synth/flow.py)
    here = directory.resolve()
    script = sta_script(os.path.relpath(Path(library.liberty).resolve(), here),
                        os.path.relpath(Path(netlist).resolve(), here), top,
                        registered, b.input_transition, b.output_load, b.ps_per_unit)
    return parse_report(run_script(directory, "sta", script, netlist), registered,
                        library.cells, b.ps_per_unit)


def run_script(directory: Path, name: str, script: str, netlist: Path) -> str:
    """Run OpenSTA on ``script`` in ``directory`` (``<name>.tcl``, log ``<name>.log``) and
    return its output; ValueError naming the log if it fails or reports an error."""
    directory = Path(directory)
    (directory / f"{name}.tcl").write_text(script)
    done = subprocess.run([sta_command(), "-no_init", "-no_splash", "-exit", f"{name}.tcl"],
                          cwd=directory, capture_output=True, text=True)
    (directory / f"{name}.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0 or "Error" in done.stdout + done.stderr:
        raise ValueError(f"OpenSTA failed on {netlist} (exit {done.returncode}); see "
                         f"{directory / (name + '.log')}")
    return done.stdout


_HOLD = "@@ hold"
_SLACK = re.compile(r"^\s*(-?[\d.]+)\s+slack \((?:MET|VIOLATED)\)", re.M)
_POINT = re.compile(r"^(Startpoint|Endpoint): (\S+)", re.M)
_CELL_PIN = re.compile(r"^\s*-?[\d.]+\s+-?[\d.]+ [\^v] \S+/\S+ \((\w+)\)$", re.M)


def parse_report(text: str, registered: bool, cells=None, ps_per_unit: float = 1000.0) -> Timing:
    """The groups' worst paths (and the worst hold slack) from the log of :func:`sta_script`;
    ``cells``: the library's cell names (default fpforge's own); ``ps_per_unit``: picoseconds
    per time unit of the report (the liberty's)."""
    if cells is None:
        from .cells import CELL_BY_NAME
        cells = CELL_BY_NAME
    text, _, hold = text.partition(_HOLD)
    paths = {}
    for chunk in text.split("@@ group ")[1:]:
        name, _, body = chunk.partition("\n")
        if "No paths found" in body:
            continue
        slack = _SLACK.search(body)
        points = dict(_POINT.findall(body))
        if slack is None or set(points) != {"Startpoint", "Endpoint"}:
            raise ValueError(f"cannot read OpenSTA's report of path group {name}")
        # The launching register's clock pin is on the path too; only outputs driven count.
        on_path = tuple(c for c in _CELL_PIN.findall(body) if c in cells)
        delay_ps = PERIOD_PS - float(slack.group(1)) * ps_per_unit
        paths[name.strip()] = PathTiming(round(delay_ps, 1), points["Startpoint"],
                                         points["Endpoint"], on_path)
    if not paths and "@@ group" not in text:
        raise ValueError("OpenSTA's log holds no path group report")
    held = _SLACK.search(hold)
    return Timing(paths, registered,
                  round(float(held.group(1)) * ps_per_unit, 1) if held else None)
