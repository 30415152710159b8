"""The one table of standard-cell figures behind fpforge's own liberty and Verilog cell models.

Every figure comes from the NanGate FreePDK45 Open Cell Library, typical corner (1.1 V, 25 degC,
NLDM), X1 drive strength, as distributed in The-OpenROAD-Project/OpenSTA
``examples/nangate45_typ.lib.gz``, by way of shared/CELLS.md and shared/CELLS-NLDM.md:

* area (um^2): the cell's ``area`` attribute, exact (CELLS.md);
* input cap (fF): the largest ``capacitance`` of the cell's input pins, used for every input pin
  (CELLS.md gives no per-pin figure);
* rise / fall (ps): one point of the worst arc's tables (41 ps slew, 7.6 fF load), kept as a
  summary of the cell for reports (CELLS.md);
* ``ARCS``: the NLDM tables (CELLS-NLDM.md, in ``cells_nldm.csv`` beside this file): per
  input->output arc, 3x3 tables of delay and output transition against input slew and load;
  DFF_X1's clock-to-Q arc and its setup and hold constraints. These are what the liberty carries
  and what OpenSTA (synth/sta.py) times with: slews and loads propagate, so fan-out costs time.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from itertools import product
from pathlib import Path

__all__ = ["Cell", "CELLS", "CELL_BY_NAME", "NAND2_AREA", "SOURCE", "REFERENCE_POINTS",
           "Table", "Arc", "arcs", "timing_sense", "ge", "INPUT_SLEW_NS", "OUTPUT_LOAD_FF"]

SOURCE = ("NanGate FreePDK45 Open Cell Library, typical corner (1.1 V, 25 C, NLDM), X1 drive, "
          "from The-OpenROAD-Project/OpenSTA examples/nangate45_typ.lib.gz, via shared/CELLS.md "
          "(areas, pin capacitances) and shared/CELLS-NLDM.md (3x3 NLDM delay, transition and "
          "constraint tables sub-sampled from the 7x7 originals)")
NLDM_TABLE = Path(__file__).with_name("cells_nldm.csv")


@dataclass(frozen=True)
class Cell:
    name: str
    inputs: tuple[str, ...]
    output: str            # the one output pin (flip-flops: Q; QN is added by the generator)
    function: str          # liberty boolean syntax; "IQ" for the flip-flop
    area: float            # um^2
    input_cap: float       # fF, max over input pins
    rise: float            # ps, worst arc
    fall: float            # ps, worst arc
    source: str            # where the numbers on this row come from

    @property
    def sequential(self) -> bool:
        return self.function == "IQ"

    @property
    def delay(self) -> float:
        """Worst of rise and fall: the figure a fixed-delay STA uses."""
        return max(self.rise, self.fall)

    @property
    def ge(self) -> float:
        return self.area / NAND2_AREA


_NG = "nangate45_typ.lib"
# name, inputs, output, function, area um^2, input cap fF, rise ps, fall ps, source of the numbers
CELLS: tuple[Cell, ...] = (
    Cell("INV_X1", ("A",), "ZN", "!A", 0.532, 1.70023, 43.7, 24.9, f"{_NG} INV_X1"),
    Cell("BUF_X1", ("A",), "Z", "A", 0.798, 0.974659, 44.4, 51.9, f"{_NG} BUF_X1"),
    Cell("NAND2_X1", ("A1", "A2"), "ZN", "!(A1 & A2)",
         0.798, 1.6642, 47.5, 36.4, f"{_NG} NAND2_X1"),
    Cell("NAND3_X1", ("A1", "A2", "A3"), "ZN", "!((A1 & A2) & A3)",
         1.064, 1.65038, 50.5, 47.1, f"{_NG} NAND3_X1"),
    Cell("NAND4_X1", ("A1", "A2", "A3", "A4"), "ZN", "!(((A1 & A2) & A3) & A4)",
         1.33, 1.65991, 53.1, 58.5, f"{_NG} NAND4_X1"),
    Cell("NOR2_X1", ("A1", "A2"), "ZN", "!(A1 | A2)",
         0.798, 1.71447, 49.0, 18.9, f"{_NG} NOR2_X1"),
    Cell("NOR3_X1", ("A1", "A2", "A3"), "ZN", "!((A1 | A2) | A3)",
         1.064, 1.76357, 65.5, 18.7, f"{_NG} NOR3_X1"),
    Cell("NOR4_X1", ("A1", "A2", "A3", "A4"), "ZN", "!(((A1 | A2) | A3) | A4)",
         1.33, 1.7368, 91.5, 19.3, f"{_NG} NOR4_X1"),
    Cell("AND2_X1", ("A1", "A2"), "ZN", "(A1 & A2)",
         1.064, 0.97463, 56.3, 57.0, f"{_NG} AND2_X1"),
    Cell("OR2_X1", ("A1", "A2"), "ZN", "(A1 | A2)",
         1.064, 0.946814, 48.4, 74.4, f"{_NG} OR2_X1"),
    Cell("XOR2_X1", ("A", "B"), "Z", "(A ^ B)",
         1.596, 2.41145, 60.1, 70.4, f"{_NG} XOR2_X1"),
    Cell("XNOR2_X1", ("A", "B"), "ZN", "!(A ^ B)",
         1.596, 2.57361, 52.2, 57.8, f"{_NG} XNOR2_X1"),
    Cell("AOI21_X1", ("A", "B1", "B2"), "ZN", "!(A | (B1 & B2))",
         1.064, 1.67685, 59.9, 25.3, f"{_NG} AOI21_X1"),
    Cell("OAI21_X1", ("A", "B1", "B2"), "ZN", "!(A & (B1 | B2))",
         1.064, 1.67072, 51.9, 29.9, f"{_NG} OAI21_X1"),
    Cell("AOI22_X1", ("A1", "A2", "B1", "B2"), "ZN", "!((A1 & A2) | (B1 & B2))",
         1.33, 1.68975, 66.2, 33.3, f"{_NG} AOI22_X1"),
    Cell("OAI22_X1", ("A1", "A2", "B1", "B2"), "ZN", "!((A1 | A2) & (B1 | B2))",
         1.33, 1.67104, 61.5, 32.7, f"{_NG} OAI22_X1"),
    Cell("MUX2_X1", ("A", "B", "S"), "Z", "((S & B) | (A & !S))",
         1.862, 1.91994, 79.2, 83.9, f"{_NG} MUX2_X1"),
    Cell("DFF_X1", ("D", "CK"), "Q", "IQ",
         4.522, 1.14029, 110.9, 101.9, f"{_NG} DFF_X1 (delay is CK->Q)"),
)

CELL_BY_NAME = {c.name: c for c in CELLS}

# 1 GE = the area of NAND2_X1.
NAND2_AREA = CELL_BY_NAME["NAND2_X1"].area


def ge(area_um2: float, nand2_area: float = NAND2_AREA) -> float:
    """NAND2-equivalent gates of an area."""
    return area_um2 / nand2_area


@dataclass(frozen=True)
class Table:
    """One NLDM table: ``values[i][j]`` at ``index_1[i]`` (input slew, ns) and ``index_2[j]``
    (output load, fF; for a constraint, the clock's slew, ns)."""

    index_1: tuple[float, ...]
    index_2: tuple[float, ...]
    values: tuple[tuple[float, ...], ...]

    def lookup(self, x: float, y: float) -> float:
        """Bilinear interpolation, extrapolating linearly beyond the grid as liberty timers do."""
        def bracket(index, v):
            i = 0 if v <= index[1] else 1
            return i, (v - index[i]) / (index[i + 1] - index[i])
        i, tx = bracket(self.index_1, x)
        j, ty = bracket(self.index_2, y)
        v = self.values
        low = v[i][j] + (v[i][j + 1] - v[i][j]) * ty
        high = v[i + 1][j] + (v[i + 1][j + 1] - v[i + 1][j]) * ty
        return low + (high - low) * tx


@dataclass(frozen=True)
class Arc:
    """The tables of one timing arc of a cell: ``related`` -> ``pin``. ``timing_type`` is ""
    for combinational arcs, else the liberty's (rising_edge, setup_rising, hold_rising)."""

    cell: str
    pin: str
    related: str
    timing_type: str
    sense: str            # liberty timing_sense of a combinational arc, "" for the others
    tables: dict          # table name (cell_rise, fall_transition, rise_constraint, ...) -> Table


@lru_cache(maxsize=1)
def arcs() -> tuple[Arc, ...]:
    """Every arc of ``cells_nldm.csv``, in its order. A pin that is neither positive nor negative
    unate (XOR, XNOR, a MUX select) has two arcs, a positive- and a negative-unate one, as in the
    source library; every other arc's sense is read from the cell's function."""
    found: list[list] = []
    with open(NLDM_TABLE, newline="") as fh:
        rows = csv.DictReader(line for line in fh if not line.startswith("#"))
        for r in rows:
            index_1 = tuple(float(x) for x in r["index_1"].split())
            index_2 = tuple(float(x) for x in r["index_2"].split())
            flat = [float(x) for x in r["values"].split()]
            n = len(index_2)
            values = tuple(tuple(flat[i * n:(i + 1) * n]) for i in range(len(index_1)))
            key = (r["cell"], r["pin"], r["related_pin"], r["timing_type"], r["timing_sense"])
            if not found or found[-1][0] != key or r["table"] in found[-1][1]:
                found.append([key, {}])
            found[-1][1][r["table"]] = Table(index_1, index_2, values)
    unknown = {key[0] for key, _ in found} - {c.name for c in CELLS}
    if unknown:
        raise ValueError(f"{NLDM_TABLE.name} times cells the table does not hold: {unknown}")
    by_name = {c.name: c for c in CELLS}
    return tuple(Arc(cell, pin, related, kind,
                     sense or ("" if kind else timing_sense(by_name[cell], related)), tables)
                 for (cell, pin, related, kind, sense), tables in found)


def timing_sense(cell: Cell, pin: str) -> str:
    """The liberty ``timing_sense`` of ``pin`` -> output, read off the cell's function: whether
    raising the pin can raise the output, lower it, or both."""
    def value(assign):
        expr = cell.function.replace("!", " not ").replace("&", " and ").replace("|", " or ")
        expr = expr.replace("^", " != ")
        return bool(eval(expr, {}, assign))   # noqa: S307 - the cell table's own functions
    ups = downs = False
    others = [p for p in cell.inputs if p != pin]
    for bits in product((False, True), repeat=len(others)):
        env = dict(zip(others, bits))
        low, high = value({**env, pin: False}), value({**env, pin: True})
        ups |= high and not low
        downs |= low and not high
    return {(True, False): "positive_unate", (False, True): "negative_unate"}.get(
        (ups, downs), "non_unate")


# The stated boundary of every timed design (synth/sta.py, docs/synth/timing.md): each input is
# driven with the output slew of an INV_X1 that drives four NAND2_X1 inputs, each output drives
# four NAND2_X1 inputs.
OUTPUT_LOAD_FF = 4 * 1.6642


def _x1_driver_slew() -> float:
    inv = next(a for a in arcs() if a.cell == "INV_X1")
    mid = inv.tables["rise_transition"].index_1[1]
    return max(inv.tables[t].lookup(mid, OUTPUT_LOAD_FF)
               for t in ("rise_transition", "fall_transition"))


INPUT_SLEW_NS = round(_x1_driver_slew(), 5)


# Reference points of shared/CELLS.md measured with exactly these cells: design -> (GE, ps).
# The bare-core rows validate the flow (tests/synth/test_synth_reference.py).
REFERENCE_POINTS = {
    "core_e4m3": (116, 445),     # 4x4 significand product + exponent add
    "core_bf16": (508, 811),     # 8x8 product + exponent add
    "core_fp16": (957, 1064),    # 11x11 product + exponent add
    "hardfloat_fp16_mul": (1751, 2514),
    "hardfloat_bf16_mul": (1193, 2279),
    "hardfloat_fp16_add": (1383, None),
    "e4m3_mul_hand": (453, 1648),
    "e4m3_mul_table": (3722, 1032),
    "e4m3_mul_ftz_sat": (235, 925),
}
