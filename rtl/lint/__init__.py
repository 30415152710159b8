"""The lint waiver file of exported Verilog (``fpforge.vlt``, beside this module) and the rules it
turns off. The export tests read every export with Verilator (tests/rtl/export_cases.py), Icarus
and Yosys (sim/lint.py)."""

from __future__ import annotations

import re
from pathlib import Path

__all__ = ["WAIVER_FILE", "waived_rules"]

WAIVER_FILE = Path(__file__).resolve().parent / "fpforge.vlt"


def waived_rules() -> list[str]:
    """The Verilator warning classes the waiver file turns off, in file order."""
    return re.findall(r"^lint_off\s+-rule\s+(\w+)", WAIVER_FILE.read_text(), re.MULTILINE)
