"""The one table of standard-cell figures behind fpforge's own liberty and Verilog cell models.

Every figure below is copied from shared/CELLS.md, which takes them from the NanGate FreePDK45
Open Cell Library, typical corner (1.1 V, 25 degC, NLDM), X1 drive strength, as distributed in
The-OpenROAD-Project/OpenSTA ``examples/nangate45_typ.lib.gz``:

* area (um^2): the cell's ``area`` attribute, exact;
* input cap (fF): the largest ``capacitance`` of the cell's input pins;
* rise / fall (ps): one point of the cell's 7x7 ``cell_rise`` / ``cell_fall`` tables (input slew
  about 41 ps, load about 7.6 fF) on its worst input->output arc. DFF_X1's is CK->Q.

The generated liberty and cell models (synth/liberty.py) apply that one worst-arc delay to every
arc of a cell, independent of load and slew: a fixed-delay model. Treat picoseconds as relative
and quote GE and ratios.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Cell", "CELLS", "CELL_BY_NAME", "NAND2_AREA", "SOURCE", "REFERENCE_POINTS",
           "ge"]

SOURCE = ("NanGate FreePDK45 Open Cell Library, typical corner (1.1 V, 25 C, NLDM), X1 drive, "
          "from The-OpenROAD-Project/OpenSTA examples/nangate45_typ.lib.gz, via shared/CELLS.md; "
          "delay = worst arc at 41 ps input slew, 7.6 fF load, applied to every arc")


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


# Reference points of shared/CELLS.md measured with exactly these cells: design -> (GE, ps).
# The bare-core rows validate the flow (tests/synth/test_reference.py).
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
