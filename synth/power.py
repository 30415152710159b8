"""Energy per operation of a mapped unit: OpenSTA's internal, switching and leakage power with
every cell's activity taken from a gate-level simulation of the netlist (synth/activity.py) on a
named data set.

How the activity reaches OpenSTA. Debian's OpenSTA 2.0.17 has neither ``read_vcd`` nor
``read_saif``, and its ``set_power_activity -pins`` only seeds the roots of its propagation: an
activity set on a gate's output is overwritten by the probabilistic propagation from the inputs
(each gate's inputs taken as independent), which is what a simulation is meant to replace. So
OpenSTA is asked, per cell instance, for its power at two global activities, 0 and 1 transition
per clock period (``set_power_activity -global``, duty 0.5), at the stated clock and boundary
(the library's input transition and output load; its NLDM slews and loads throughout). A
cell's power is affine in its activity: at 0 it is its leakage and its clock pin's internal
power (flip-flops), the slope is its internal and switching energy per output transition. Each
cell's figure is then that intercept plus the slope times the simulated transitions per period
of its output net (the mean of its outputs'). Limits (docs/power.md): the energy per transition
is OpenSTA's at duty 0.5 on every pin (it weighs a cell's ``when`` states by the duties) and an
input pin's own internal energy is scaled by the output's activity; zero-delay activity (no
glitches); no wires, no clock tree, an ideal clock.

Energy per operation = total power x clock period / operations per period (1: every unit takes
one operation per period, a pipelined one at its clock, a combinational one at the period of
``clock_ps``; default its own worst delay rounded up to 10 ps).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from fpforge.rtl.options import OptionError
from fpforge.rtl.ports import CLOCK

from .activity import Activity, simulate_activity
from .liberty_file import cells_of, read_liberty
from .sta import run_script

__all__ = ["PowerFigures", "CellPower", "measure_power", "default_clock_ps", "check_power",
           "netlist_cells", "cell_powers", "power_script", "combine", "OPS_PER_PERIOD"]

OPS_PER_PERIOD = 1
CLOCK_STEP_PS = 10


@dataclass(frozen=True)
class PowerFigures:
    """A unit's power on one data set at one clock: the record's ``power`` object."""

    data: str
    vectors: int
    clock_ps: float
    internal_uw: float
    switching_uw: float
    leakage_uw: float
    energy_pj: float            # per operation

    @property
    def total_uw(self) -> float:
        return self.internal_uw + self.switching_uw + self.leakage_uw

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class CellPower:
    """OpenSTA's figures (W) of one cell instance at global activity 0 (``idle``) and at one
    transition per period (``unit``): (internal, switching, leakage) each."""

    idle: tuple[float, float, float]
    unit: tuple[float, float, float]


def check_power(library) -> None:
    """Raise OptionError unless ``library`` (cell_library.Library) has power tables."""
    if not library.has_power:
        raise OptionError(f"the {library.name} library has no power tables (internal_power, "
                          f"leakage); energy needs --lib sky130hd or a --liberty PATH that has them")


def default_clock_ps(record) -> float:
    """A pipelined unit's clock (the period it was mapped for, else the one it needs); a
    combinational unit's own worst delay, both rounded up to 10 ps."""
    delay = record.asic.delay_ps
    if delay is None:
        raise OptionError(f"{record.name} has no delay figure: energy needs a timed library")
    target = record.delay_target_ps if record.stages and record.delay_target_ps else 0.0
    return float(math.ceil(max(delay, target) / CLOCK_STEP_PS) * CLOCK_STEP_PS)


_INSTANCE = re.compile(r"^\s*([A-Za-z_][\w$]*)\s+([A-Za-z_][\w$]*)\s*\((.*?)\);", re.M | re.S)
_PIN = re.compile(r"\.([A-Za-z_]\w*)\(([^()]*)\)")


def netlist_cells(text: str) -> dict[str, tuple[str, dict]]:
    """instance -> (cell type, {pin: net}) of a mapped netlist (Yosys ``write_verilog``)."""
    body = text.split(");", 1)[1] if ");" in text else text      # past the module header
    return {inst: (cell, {p: n.strip() for p, n in _PIN.findall(conns)})
            for cell, inst, conns in _INSTANCE.findall(body)}


def power_script(library, netlist: Path, top: str, registered: bool, clock_ps: float) -> str:
    """OpenSTA's Tcl: the design at ``clock_ps`` and the library's boundary, every cell's power
    at global activity 0 and 1 per period."""
    b = library.boundary
    period = clock_ps / library.boundary.ps_per_unit
    lines = [f"read_liberty {Path(library.liberty).resolve()}",
             f"read_verilog {Path(netlist).resolve()}", f"link_design {top}"]
    if registered:
        lines += [f"create_clock -name {CLOCK} -period {period:g} [get_ports {CLOCK}]",
                  f"set inputs [lsearch -all -inline -not [all_inputs] [get_ports {CLOCK}]]"]
    else:
        lines += [f"create_clock -name {CLOCK} -period {period:g}", "set inputs [all_inputs]"]
    # Input delays put every path in the clock's domain: OpenSTA reads an activity per period
    # of the clock a pin's paths carry.
    lines += [f"set_input_delay 0 -clock {CLOCK} $inputs",
              f"set_output_delay 0 -clock {CLOCK} [all_outputs]",
              f"set_input_transition {b.input_transition:g} $inputs",
              f"set_load {b.output_load:g} [all_outputs]"]
    for name, activity in (("idle", 0), ("unit", 1)):
        lines += [f"set_power_activity -global -activity {activity} -duty 0.5",
                  f'puts "@@ {name}"',
                  "report_power -instances [get_cells *] -digits 8"]
    return "\n".join(lines) + "\nexit\n"


_ROW = re.compile(r"^\s*(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s*$", re.M)


def cell_powers(text: str) -> dict[str, CellPower]:
    """Per instance, from the log of :func:`power_script`."""
    runs = {}
    for chunk in text.split("@@ ")[1:]:
        name, _, body = chunk.partition("\n")
        rows = {}
        for m in _ROW.finditer(body):
            try:
                internal, switching, leakage = (float(m.group(i)) for i in (1, 2, 3))
            except ValueError:
                continue                   # the header lines
            rows[m.group(5)] = (internal, switching, leakage)
        runs[name.strip()] = rows
    if set(runs) != {"idle", "unit"} or set(runs["idle"]) != set(runs["unit"]):
        raise ValueError("cannot read OpenSTA's per-instance power reports")
    return {inst: CellPower(runs["idle"][inst], runs["unit"][inst]) for inst in runs["idle"]}


def run_power_sta(directory: Path, library, netlist: Path, top: str, registered: bool,
                  clock_ps: float) -> dict[str, CellPower]:
    """Every cell's power (:func:`cell_powers`), OpenSTA run in ``directory`` (``power.tcl``,
    ``power.log``)."""
    return cell_powers(run_script(directory, "power", power_script(
        library, netlist, top, registered, clock_ps), netlist))


def combine(cells: dict[str, tuple[str, dict]], outputs: dict[str, tuple[str, ...]],
            powers: dict[str, CellPower], activity: Activity) -> tuple[float, float, float]:
    """(internal, switching, leakage) in W: each cell's intercept plus its slope times its
    output nets' mean simulated transitions per period. ``outputs``: cell type -> its output
    pins (from the liberty)."""
    total = [0.0, 0.0, 0.0]
    for inst, (cell, pins) in cells.items():
        p = powers[inst]
        nets = [pins[o] for o in outputs[cell] if o in pins]
        rates = [activity.rate(n) for n in nets if n in activity.toggles]
        rate = sum(rates) / len(rates) if rates else 0.0
        for i in range(3):
            total[i] += p.idle[i] + rate * (p.unit[i] - p.idle[i])
    return total[0], total[1], total[2]


def clock_for(record, clock_ps: float | None) -> float:
    """The clock of ``record``'s energy figure: ``clock_ps``, or default_clock_ps. Raises
    OptionError for a clock shorter than the unit's worst path."""
    default = default_clock_ps(record)
    if clock_ps is None:
        return default
    if clock_ps < record.asic.delay_ps:
        raise OptionError(f"--clock-ps {clock_ps:g} is shorter than {record.name}'s worst path "
                          f"({record.asic.delay_ps:g} ps): give at least that, or none for "
                          f"{default:g} ps")
    return clock_ps


def measure_power(spec, record, library, vectors: dict, data: str,
                  clock_ps: float | None = None, directory: Path | None = None) -> PowerFigures:
    """The energy per operation of the unit of ``spec`` as ``record`` (synth.SynthRecord) mapped
    it to ``library`` (cell_library.Library, with power tables), on ``vectors`` (data input ->
    one value per operation, synth/activity.py) of the data set named ``data``, at ``clock_ps``
    (default: default_clock_ps). Files go to ``directory`` (default: the record's unit folder,
    ``power-<data>``). Raises OptionError for a library without power tables or a clock the unit
    cannot meet."""
    check_power(library)
    clock_ps = clock_for(record, clock_ps)
    unit_dir = Path(record.directory)
    netlist = unit_dir.parent / record.asic.netlist
    directory = Path(directory) if directory is not None else unit_dir / f"power-{data}"
    directory.mkdir(parents=True, exist_ok=True)
    ports = spec.ports()
    activity = simulate_activity(netlist, library.cell_models, record.name, ports, vectors,
                                 directory, latency=spec.latency)
    registered = any(p.name == CLOCK for p in ports)
    powers = run_power_sta(directory, library, netlist, record.name, registered, clock_ps)
    cells = netlist_cells(netlist.read_text())
    lib_cells = cells_of(read_liberty(library.liberty))
    outputs = {c: tuple(lib_cells[c].outputs) for c, _ in cells.values()}
    internal, switching, leakage = combine(cells, outputs, powers, activity)
    total = internal + switching + leakage
    return PowerFigures(data=data, vectors=activity.vectors, clock_ps=float(clock_ps),
                        internal_uw=_sig(internal * 1e6), switching_uw=_sig(switching * 1e6),
                        leakage_uw=_sig(leakage * 1e6),
                        energy_pj=_sig(total * clock_ps / OPS_PER_PERIOD))   # W x ps = pJ


def _sig(x: float) -> float:
    """Six significant digits: leakage is nanowatts beside hundreds of microwatts."""
    return float(f"{x:.6g}")
