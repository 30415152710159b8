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
  (sim/engines/native.py);
- ``gates``: the native engine's loop on Yosys's gate netlist of a design without a handshake,
  256 vectors per gate operation (sim/engines/gates.py).

What they share (the build folder, ``SimulationError``, the check of an input batch) is
sim/engines/base.py, below them all: this package only chooses among them.
"""

from __future__ import annotations

__all__ = ["ENGINES", "EXHAUSTIVE_ENGINES", "engine"]


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
    if name == "gates":
        from .gates import GatesEngine
        return GatesEngine()
    raise ValueError(f"unknown engine {name!r}; valid: {', '.join(ENGINES)}")


ENGINES = ("batch", "cocotb", "native", "gates")
EXHAUSTIVE_ENGINES = ("native", "gates")     # verify-exhaustive's (one pipe protocol)
