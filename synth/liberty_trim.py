"""Trim SKY130 HD's liberty to the cells synthesis maps to (synth/libraries/sky130hd/).

Kept, with every byte of their groups (timing, internal_power and leakage tables intact): the
library header (units, operating conditions, wire loads, templates), and the cells whose
outputs all have a ``function`` (no flip-flop, latch or tri-state) at drive strengths 0, 1 and 2,
buffers and inverters at every drive (fan-out buffering), and the plain D flip-flop
``dfxtp`` at every drive. Dropped: what the open flows mark dont_use (OpenROAD-flow-scripts'
sky130hd DONT_USE_CELLS: the probe cells and every lpflow_* multi-power-domain cell), cells
without a usable function (decap, diode, the spare-cell macro), delay cells (hold fixing, not
logic), tri-state, scan, set/reset and enable flip-flops, latches and clock gates, and the
larger drives of logic cells. The result is gzipped with mtime 0, so it is reproduced byte for
byte.
"""

from __future__ import annotations

import gzip
import re

from .liberty_file import LibertyCell, cells_of, parse

__all__ = ["DONT_USE", "keep_cell", "trim", "gzip_bytes", "HEADER"]

# OpenROAD-flow-scripts flow/platforms/sky130hd/config.mk, DONT_USE_CELLS, as globs.
DONT_USE = ("sky130_fd_sc_hd__probe_p_8", "sky130_fd_sc_hd__probec_p_8",
            "sky130_fd_sc_hd__lpflow_*")
_PREFIX = "sky130_fd_sc_hd__"
_ANY_DRIVE = re.compile(r"(buf|inv|clkbuf|clkinv|dfxtp)_\d+$")
_NOT_LOGIC = re.compile(r"(probe|lpflow_|dly|clkdly|sparecell)")
HEADER = ("/* Trimmed by fpforge synth/liberty_trim.py (synth/libraries/sky130hd/regenerate.py) "
          "from OpenSTA's examples/sky130hd_tt.lib.gz; see synth/libraries/sky130hd/README.md. */\n")


def keep_cell(cell: LibertyCell) -> bool:
    short = cell.name.removeprefix(_PREFIX)
    if _NOT_LOGIC.search(short):
        return False
    if short.startswith("dfxtp_"):
        return True
    tri = any("three_state" in p.attrs for p in cell.group.groups("pin"))
    if not cell.combinational or tri:
        return False
    drive = int(short.rsplit("_", 1)[1])
    return drive <= 2 or bool(_ANY_DRIVE.fullmatch(short))


def trim(text: str) -> str:
    """The trimmed liberty text: the header line, then ``text`` without the dropped cells' groups
    (each cut with the blank space before it, so no blank lines pile up)."""
    lib = parse(text)
    cells = cells_of(lib)
    out, pos = [HEADER], 0
    for g in lib.children:
        if g.kind == "cell" and not keep_cell(cells[g.name]):
            start = g.start
            while start > pos and text[start - 1].isspace():
                start -= 1
            out.append(text[pos:start])
            pos = g.end
    out.append(text[pos:])
    return "".join(out)


def gzip_bytes(text: str) -> bytes:
    """Deterministic gzip: mtime 0, no file name, level 9."""
    return gzip.compress(text.encode(), compresslevel=9, mtime=0)
