"""The cell library a synthesis job maps to: fpforge's own liberty (synth/liberty.py writes it,
with functional cell models; OpenSTA times it) or a user's liberty (area only, in gate
equivalents of its smallest 2-input NAND)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from . import liberty as lib_gen
from .cells import NAND2_AREA

__all__ = ["Library", "own_library", "user_library"]


@dataclass(frozen=True)
class Library:
    """The liberty to map to; fpforge's own also has functional cell models (gate-level
    simulation) and is timed by OpenSTA. A user's liberty gives area only."""

    name: str
    liberty: Path
    cell_models: Path | None = None
    own: bool = True
    nand2_area: float = NAND2_AREA
    sha256: str = ""

    def describe(self) -> str:
        if self.own:
            return (f"{self.name} (fpforge's own, generated from synth/cells.py: NanGate FreePDK45 "
                    f"typ figures with NLDM tables; sha256 {self.sha256}) at {self.liberty}")
        return (f"user liberty {self.liberty} (sha256 {self.sha256}); GE with NAND2 area "
                f"{self.nand2_area:g} um^2; area only, no delay")

    @property
    def timed(self) -> bool:
        return self.own


def own_library(directory: Path) -> Library:
    liberty, models = lib_gen.write_library(directory)
    return Library(lib_gen.LIBRARY_NAME, liberty, models, True, NAND2_AREA,
                   lib_gen.digest(liberty))


def user_library(path: Path) -> Library:
    """A user's liberty: area from it; GE against its smallest 2-input NAND; delay unavailable."""
    path = Path(path).resolve()
    if not path.is_file():
        raise FileNotFoundError(f"liberty file {path} does not exist")
    text = path.read_text(errors="replace")
    areas = lib_gen.parse_liberty_areas(text)
    nands = [a for n, a in areas.items()
             if re.match(r"(?i)^(sky130_fd_sc_\w+__)?nand2(_|b?x?\d|$)", n)]
    nand2 = min(nands) if nands else NAND2_AREA
    return Library(path.stem, path, None, False, nand2, lib_gen.digest(path))
