"""Verification engines: each maps a design and input arrays to output arrays.

Every engine offers the same three calls on a :class:`~sim.design.Design` (fpforge's unit or a
user's Verilog with a port map):

- ``simulate(design, inputs) -> outputs``: ``{port: array}`` in, ``{port: array}`` out (the
  shapes of sim/stimulus/: (N,) for one lane, (N, lanes) for a bus);
- ``session(design)``: a built design to run chunk after chunk (sim/stream.py);
- ``verify(design, plan) -> summary``: the plan's stimulus through the one verification loop
  (sim/stream.py) against the golden model, with the one checker (sim/check.py).

Engines (``ENGINES``):

- ``batch``: Icarus Verilog, whole arrays per run (sim/engines/batch.py); builds in a second;
- ``cocotb``: the cocotb bench on Icarus or Verilator (``sim=``), a lane harness with bubbles,
  the clock inside the simulator (sim/engines/cocotb.py);
- ``native``: a Verilator C++ loop fed through pipes, for 2^32-vector runs
  (sim/engines/native.py).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["ENGINES", "engine", "BUILD_ROOT", "SimulationError", "check_inputs", "SIMULATORS"]

BUILD_ROOT = Path(__file__).resolve().parents[2] / "build" / "sim"
SIMULATORS = ("icarus", "verilator")


class SimulationError(RuntimeError):
    """A simulator failed, or produced fewer outputs than inputs."""


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


def engine(name: str, sim: str | None = None):
    """The engine ``name`` (cocotb: on simulator ``sim``)."""
    if name == "batch":
        from .batch import BatchEngine
        return BatchEngine()
    if name == "cocotb":
        from .cocotb import CocotbEngine
        return CocotbEngine(sim)
    if name == "native":
        from .native import NativeEngine
        return NativeEngine()
    raise ValueError(f"unknown engine {name!r}; valid: {', '.join(ENGINES)}")


ENGINES = ("batch", "cocotb", "native")
