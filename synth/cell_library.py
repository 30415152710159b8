"""The cell library a synthesis job maps to, and what the flow reads from it, for every source:
fpforge's own (synth/liberty.py writes it from synth/cells.py), ``sky130hd`` (SkyWater SKY130 HD,
tt 25 C 1.80 V, trimmed: synth/libraries/sky130hd/) and a user's ``--liberty PATH``. Each is
mapped by Yosys / ABC, timed by OpenSTA on its own NLDM tables and simulated with functional
cell models generated from its own functions (synth/liberty_models.py).

Per library (docs/synth/libraries.md): its NAND2 area (1 GE), the stated boundary (inputs driven
with the output transition of its smallest inverter driving four NAND2 inputs, at the middle
input slew of the inverter's table; outputs loaded with four NAND2 input capacitances; in the
liberty's own units), its register overhead (its plain D flip-flop's clock-to-Q into that load
plus setup, both at that slew: what a pipelined unit's clock pays besides logic), its dont_use
cells, supply voltage, and whether it has power tables.
"""

from __future__ import annotations

import gzip
import hashlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from fpforge.rtl.options import OptionError

from . import liberty as lib_gen
from .liberty_file import LibertyCell, Table, cells_of, read_liberty
from .liberty_models import cell_models_text, parse_function, truth_table
from .liberty_trim import DONT_USE as SKY130HD_DONT_USE

__all__ = ["LIBRARIES", "Boundary", "Library", "library_for", "check_library", "own_library", "user_library",
           "sky130hd_library", "SKY130HD_LIBERTY", "boundary_of", "register_overhead_of"]

LIBRARIES = ("fpforge", "sky130hd")
SKY130HD_LIBERTY = (Path(__file__).with_name("libraries") / "sky130hd" /
                    "sky130_fd_sc_hd__tt_025C_1v80.lib.gz")


@dataclass(frozen=True)
class Boundary:
    """What every timed design is driven with and drives, in the liberty's own units."""

    input_transition: float     # time unit (ns)
    output_load: float          # capacitance unit (fF for fpforge's own, pF for sky130hd)
    units: str                  # "ns, fF"
    driver: str                 # the inverter whose output transition drives the inputs
    load_cell: str              # the NAND2 of which four inputs load each output

    @property
    def cap_unit(self) -> str:
        return self.units.split(", ")[1]

    @property
    def ps_per_unit(self) -> float:
        """Picoseconds per time unit of the liberty (OpenSTA reads and reports in it)."""
        return {"ns": 1000.0, "ps": 1.0}[self.units.split(", ")[0]]

    @property
    def text(self) -> str:
        return (f"OpenSTA, NLDM tables; inputs driven with "
                f"{self.input_transition * self.ps_per_unit:.1f} ps slew ({self.driver} driving four {self.load_cell} inputs), outputs loaded with "
                f"{self.output_load:.{2 if self.cap_unit == 'fF' else 5}f} {self.cap_unit} "
                f"(four {self.load_cell} inputs), input/output delays 0, ideal clock")


@dataclass(frozen=True)
class Library:
    """A liberty to map to, its functional cell models and what the flow reads from it."""

    name: str                     # "fpforge", "sky130hd" or the user's liberty file name
    liberty: Path                 # the file Yosys and OpenSTA read (never gzipped)
    cell_models: Path
    nand2_area: float             # um^2: 1 GE
    boundary: Boundary
    register_overhead_ps: float   # D flip-flop clock-to-Q + setup at the boundary
    dff: str                      # the plain D flip-flop dfflibmap maps to
    registers: frozenset          # every sequential cell (flip-flops, latches): register counts
    cells: frozenset              # every cell name: what OpenSTA's path report lists
    dont_use: tuple[str, ...]     # globs for dfflibmap / abc -dont_use
    voltage: float                # V
    has_power: bool               # internal_power and leakage tables (fpforge's own has none)
    sha256: str
    description: str              # the report header's line

    @property
    def own(self) -> bool:
        return self.name == "fpforge"

    @property
    def timed(self) -> bool:
        return True

    def describe(self) -> str:
        return self.description


# ----- what is read from any liberty -----------------------------------------------------------
def _usable(cells: dict) -> list[LibertyCell]:
    return [c for c in cells.values() if not c.dont_use]


def _smallest(cells, what: str, pick) -> LibertyCell:
    """The least area, then the least input capacitance (sky130hd's inv_1 before clkinv_1)."""
    found = sorted((c for c in cells if pick(c)), key=lambda c: (c.area, _pin_cap(c), c.name))
    if not found:
        raise OptionError(f"the liberty has no {what}: fpforge needs one to state its timing "
                          f"boundary and gate equivalents")
    return found[0]


def _is(cell: LibertyCell, table: tuple[int, ...]) -> bool:
    if len(cell.outputs) != 1 or not cell.combinational or \
            2 ** len(cell.inputs) != len(table):
        return False
    try:
        return truth_table(next(iter(cell.outputs.values())), cell.inputs) == table
    except (ValueError, KeyError):
        return False


def nand2_of(cells) -> LibertyCell:
    return _smallest(cells, "2-input NAND", lambda c: _is(c, (1, 1, 1, 0)))


def inverter_of(cells) -> LibertyCell:
    return _smallest(cells, "inverter", lambda c: _is(c, (1, 0)))


def _plain_dff(c: LibertyCell) -> bool:
    ff = c.ff
    if ff is None or "clear" in ff or "preset" in ff:
        return False
    try:
        nxt, clk = parse_function(ff.get("next_state", "")), parse_function(ff["clocked_on"])
    except (ValueError, KeyError):
        return False
    return nxt[0] == "var" and clk[0] == "var" and ff["state"][0] in c.outputs.values()


def dff_of(cells) -> LibertyCell:
    return _smallest(cells, "plain D flip-flop (ff group, no clear or preset)", _plain_dff)


def _pin_cap(cell: LibertyCell) -> float:
    return max(float(cell.pin(p).attrs.get("capacitance", 0.0)) for p in cell.inputs)


def _templates(lib) -> dict:
    return {g.name: g for g in lib.children if g.kind.endswith("_template")}


def _arc_tables(cell: LibertyCell, pin: str, related: str, kinds: tuple[str, ...], lib) -> list:
    """The ``kinds`` tables (cell_rise, ...) of ``related`` -> ``pin``, each as a function of
    (input slew, load) whatever the template's variable order."""
    templates = _templates(lib)
    out = []
    for t in cell.pin(pin).groups("timing"):
        if t.attrs.get("related_pin") != related:
            continue
        for g in t.children:
            if g.kind in kinds:
                table = Table.of(g, templates)
                var1 = templates[g.name].attrs.get("variable_1", "") if g.name in templates \
                    else ""
                out.append((t.attrs.get("timing_type", ""), table,
                            var1 == "total_output_net_capacitance"))
    return out


def _lookup(entry, slew: float, load: float) -> float:
    _, table, swapped = entry
    return table.lookup(load, slew) if swapped else table.lookup(slew, load)


def boundary_of(lib, cells) -> Boundary:
    """The stated boundary, from the liberty's own tables: its smallest inverter's output
    transition (worst of rise and fall) at the middle input slew of that table, driving four
    input capacitances of its smallest NAND2; outputs loaded with the same four."""
    usable = _usable(cells)
    inv, nand = inverter_of(usable), nand2_of(usable)
    load = 4 * _pin_cap(nand)
    [a] = inv.inputs
    [y] = inv.outputs
    arcs = _arc_tables(inv, y, a, ("rise_transition", "fall_transition"), lib)
    if not arcs:
        raise OptionError(f"inverter {inv.name} has no transition tables: fpforge cannot state "
                          f"its input slew")
    _, first, swapped = arcs[0]
    slews = first.index_2 if swapped else first.index_1
    mid = slews[len(slews) // 2]
    slew = round(max(_lookup(e, mid, load) for e in arcs), 5)
    return Boundary(slew, load, f"{_time_unit(lib)}, {_cap_unit(lib)}", inv.name, nand.name)


def register_overhead_of(lib, cells, boundary: Boundary) -> float:
    """The plain D flip-flop's clock-to-Q into the boundary load plus its setup time (ps), both
    at the boundary slew."""
    dff = dff_of(_usable(cells))
    clock = parse_function(dff.ff["clocked_on"])[1]
    data = parse_function(dff.ff["next_state"])[1]
    q = next(p for p, f in dff.outputs.items() if f == dff.ff["state"][0])
    slew, load = boundary.input_transition, boundary.output_load
    clk_q = max(_lookup(e, slew, load) for e in
                _arc_tables(dff, q, clock, ("cell_rise", "cell_fall"), lib))
    setup = max(_lookup(e, slew, slew) for e in
                _arc_tables(dff, data, clock, ("rise_constraint", "fall_constraint"), lib)
                if e[0].startswith("setup"))
    return round((clk_q + setup) * _ns(lib) * 1000, 1)


def _time_unit(lib) -> str:
    return lib.attrs.get("time_unit", "1ns").lstrip("1")


def _ns(lib) -> float:
    return {"ns": 1.0, "ps": 1e-3}[_time_unit(lib)]


def _cap_unit(lib) -> str:
    unit = lib.values("capacitive_load_unit")
    if not unit:
        return "pF"
    scale, name = float(unit[0][0]), unit[0][1].lower()
    if scale != 1.0:
        raise OptionError(f"capacitive_load_unit({unit[0][0]}, {unit[0][1]}): fpforge reads "
                          f"liberties whose capacitance unit is 1 ff or 1 pf")
    return {"ff": "fF", "pf": "pF"}[name]


def _voltage(lib) -> float:
    default = lib.attrs.get("default_operating_conditions")
    for oc in lib.groups("operating_conditions"):
        if default in (None, oc.name) and "voltage" in oc.attrs:
            return float(oc.attrs["voltage"])
    return float(lib.attrs.get("nom_voltage", 0.0))


def _has_power(lib) -> bool:
    return any(c.groups("leakage_power") or "cell_leakage_power" in c.attrs or
               any(p.groups("internal_power") for p in c.groups("pin"))
               for c in lib.groups("cell"))


def _digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def _from_liberty(name: str, liberty: Path, directory: Path, describe, dont_use=()) -> Library:
    """A Library read from ``liberty`` (plain text), its cell models written into ``directory``."""
    lib = read_liberty(liberty)
    cells = cells_of(lib)
    boundary = boundary_of(lib, cells)
    nand = nand2_of(_usable(cells))
    directory.mkdir(parents=True, exist_ok=True)
    models = directory / f"{Path(liberty).name.split('.')[0]}_cells.v"
    models.write_text(cell_models_text(cells.values(), Path(liberty).name))
    sha = _digest(liberty)
    own_dont_use = tuple(sorted(c.name for c in cells.values() if c.dont_use))
    return Library(name=name, liberty=Path(liberty), cell_models=models, nand2_area=nand.area,
                   boundary=boundary, register_overhead_ps=register_overhead_of(lib, cells,
                                                                               boundary),
                   dff=dff_of(_usable(cells)).name,
                   registers=frozenset(c.name for c in cells.values() if c.ff or c.latch),
                   cells=frozenset(cells), dont_use=tuple(dont_use) + own_dont_use,
                   voltage=_voltage(lib), has_power=_has_power(lib), sha256=sha,
                   description=describe(nand, sha))


# ----- the three sources --------------------------------------------------------------------------
def own_library(directory: Path) -> Library:
    """fpforge's own cells: its boundary and register overhead are cells.py's (the figures every
    earlier run reported); the general reading above agrees (tests/synth/test_libraries.py)."""
    from .cells import CELL_BY_NAME, INPUT_SLEW_NS, NAND2_AREA, OUTPUT_LOAD_FF, SOURCE
    from .sta import register_overhead_ps
    liberty, models = lib_gen.write_library(directory)
    sha = lib_gen.digest(liberty)
    return Library(
        name="fpforge", liberty=liberty, cell_models=models, nand2_area=NAND2_AREA,
        boundary=Boundary(INPUT_SLEW_NS, OUTPUT_LOAD_FF, "ns, fF", "an X1 inverter", "NAND2"),
        register_overhead_ps=register_overhead_ps(), dff="DFF_X1",
        registers=frozenset(c for c in CELL_BY_NAME if CELL_BY_NAME[c].sequential),
        cells=frozenset(CELL_BY_NAME), dont_use=(), voltage=1.1, has_power=False, sha256=sha,
        description=(f"{lib_gen.LIBRARY_NAME} (fpforge's own, generated from synth/cells.py: "
                     f"NanGate FreePDK45 typ figures with NLDM tables; sha256 {sha}) at "
                     f"{liberty}"))


@lru_cache(maxsize=1)
def _sky130hd_text() -> bytes:
    return gzip.decompress(SKY130HD_LIBERTY.read_bytes())


def sky130hd_library(directory: Path) -> Library:
    """SkyWater SKY130 HD, tt 25 C 1.80 V (trimmed, synth/libraries/sky130hd/), gunzipped into
    ``directory`` for Yosys, ABC and OpenSTA."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    liberty = directory / SKY130HD_LIBERTY.name.removesuffix(".gz")
    liberty.write_bytes(_sky130hd_text())
    return _from_liberty(
        "sky130hd", liberty, directory,
        lambda nand, sha: (f"sky130hd: SkyWater SKY130 sky130_fd_sc_hd, tt 25 C 1.80 V "
                           f"(Apache-2.0; trimmed, synth/libraries/sky130hd; sha256 {sha}); GE "
                           f"with {nand.name} {nand.area:g} um^2"),
        SKY130HD_DONT_USE)


def user_library(path: Path, directory: Path) -> Library:
    """A user's liberty, as it is: mapped, timed by OpenSTA on its tables, simulated with models
    from its functions; GE against its smallest 2-input NAND."""
    path = Path(path).resolve()
    if not path.is_file():
        raise OptionError(f"liberty file {str(path)!r} does not exist")
    directory = Path(directory)
    liberty = path
    if path.suffix == ".gz":        # as OpenSTA's examples ship them; Yosys reads plain text
        directory.mkdir(parents=True, exist_ok=True)
        liberty = directory / path.name.removesuffix(".gz")
        try:
            liberty.write_bytes(gzip.decompress(path.read_bytes()))
        except (OSError, EOFError) as err:
            raise OptionError(f"liberty file {str(path)!r} is not readable gzip ({err})") from None
    try:
        return _from_liberty(
            path.name, liberty, directory,
            lambda nand, sha: (f"user liberty {path} (sha256 {sha}); GE with {nand.name} "
                               f"{nand.area:g} um^2"))
    except (ValueError, KeyError, StopIteration) as err:
        raise OptionError(f"liberty file {str(path)!r} cannot be used: {err}".splitlines()[0]) \
            from None


def check_library(lib: str = "fpforge", liberty: Path | None = None) -> None:
    """Raise OptionError for a library name not in LIBRARIES, both names given, or a missing
    liberty file: before a run writes anything."""
    if lib not in LIBRARIES:
        raise OptionError(f"--lib must be one of {', '.join(LIBRARIES)}, not {lib!r}")
    if liberty is not None:
        if lib != "fpforge":
            raise OptionError("--lib and --liberty both name the cells: give one of them")
        if not Path(liberty).is_file():
            raise OptionError(f"liberty file {str(liberty)!r} does not exist")


def library_for(lib: str = "fpforge", liberty: Path | None = None, *,
                directory: Path) -> Library:
    """The Library of ``--lib`` (one of LIBRARIES) or, given, of ``--liberty``; its generated
    files go to ``directory``. Raises OptionError naming the valid names."""
    check_library(lib, liberty)
    if liberty is not None:
        return user_library(Path(liberty), directory)
    return own_library(directory) if lib == "fpforge" else sky130hd_library(directory)
