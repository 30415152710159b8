"""What every engine shares: where builds go, the simulators, the engines' error and the check
of an input batch against a design's ports."""

from __future__ import annotations

import contextlib
import fcntl
from pathlib import Path

import numpy as np

__all__ = ["BUILD_ROOT", "build_lock", "SimulationError", "check_inputs", "SIMULATORS",
           "systemverilog_only", "VERILATOR_WAIVERS"]

BUILD_ROOT = Path(__file__).resolve().parents[2] / "build" / "sim"
SIMULATORS = ("icarus", "verilator")
# Verilator's warnings off for every build of both Verilator engines. Amaranth's Verilog trips
# width and unused-signal lints that do not matter here, and a user's design is built whatever
# Verilator's lint thinks of its style (-Wno-fatal: warnings go to the build log; what counts is
# what the design computes). -Wno-ENUMVALUE: the binding's wrapper overrides an enum parameter
# with the number --param gives (FPnew's FpFormat=3), which Verilator refuses without it.
VERILATOR_WAIVERS = ["-Wno-fatal", "-Wno-lint", "-Wno-style", "-Wno-MULTIDRIVEN",
                     "-Wno-ENUMVALUE"]


@contextlib.contextmanager
def build_lock(folder: Path):
    """One build of ``folder`` at a time, across processes: two pytest workers (or shards) that
    build the same design would otherwise run one simulator on the file the other is still
    writing ("sim.vvp: syntax error"); the second finds the build up to date. The lock file
    lies beside the folder, which a build may delete and remake."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


class SimulationError(RuntimeError):
    """A simulator failed, or produced fewer outputs than inputs."""


def systemverilog_only(design, what: str) -> str:
    """Why ``what`` (Icarus) does not take ``design``'s SystemVerilog: Icarus's SystemVerilog
    support stops short of what real IP uses (packages with structs, ``parameter type``), so
    SystemVerilog is simulated on Verilator, its default."""
    return (f"{design.label} has SystemVerilog sources, which run on Verilator (the default for "
            f"them: --sim verilator, or --exhaustive); {what} runs Icarus on Verilog-2005 only")


def check_inputs(design, inputs: dict) -> int:
    """The number of vectors in ``inputs``, after checking they are exactly the design's input
    ports, of equal length and of the ports' lane counts."""
    names = [p.name for p in design.inputs]
    missing, extra = sorted(set(names) - set(inputs)), sorted(set(inputs) - set(names))
    if missing or extra:
        raise ValueError(f"inputs must be exactly the ports {names}; missing {missing}, "
                         f"unknown {extra}")
    lengths = {p: len(np.asarray(v)) for p, v in inputs.items()}
    n = lengths[names[0]]
    if len(set(lengths.values())) != 1 or n == 0:
        raise ValueError(f"input arrays must be non-empty and of equal length, not {lengths}")
    for p in design.inputs:
        v = np.asarray(inputs[p.name])
        if v.shape[1:] != ((p.lanes,) if p.lanes > 1 else ()):
            raise ValueError(f"input {p.name} has {p.lanes} lane(s): arrays of shape "
                             f"{(n, p.lanes) if p.lanes > 1 else (n,)}, not {v.shape}")
    return n
