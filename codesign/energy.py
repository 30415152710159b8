"""Energy per MAC of a pareto configuration (docs/codesign.md, "Energy"): the units that
implement it synthesised to sky130hd, each unit's power measured by OpenSTA on switching
activity from a simulation of its mapped netlist on a named data set (synth/power.py), joined
into one MAC step.

A unit's power figures (a record's ``power`` object) hold internal, switching and leakage
power at the clock it was measured at. Per operation, the dynamic part (internal + switching)
x that period does not depend on the clock (the activity is per operation); leakage does, and
is charged over the step's period: the dot unit and its adder in series (dot + adder delay),
the clock the step runs at. A dot unit of ``lanes`` products does ``lanes`` MACs (2 x lanes
floating-point operations) per step, so

    pJ per MAC = step energy / lanes,    TFLOPS/W = 2 x lanes / step energy (pJ) = 2 / pJ per MAC

(1 FLOP per pJ is 1e12 FLOP/J, one TFLOPS/W).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ENERGY_DATA", "ENERGY_LIBRARY", "ENERGY_VECTORS", "StepEnergy", "unit_energy_pj",
           "step_energy", "tflops_per_w"]

ENERGY_LIBRARY = "sky130hd"
ENERGY_DATA = ("gaussian", "minilm")     # a pareto row's columns: pj_per_mac_<data>
ENERGY_VECTORS = 256

PJ_PER_UW_PS = 1e-6                      # 1 µW for 1 ps is 1e-18 J


def unit_energy_pj(power: dict, step_ps: float) -> tuple[float, float]:
    """(dynamic, leakage) energy in pJ of one operation of a unit whose ``power`` object was
    measured at ``power["clock_ps"]``, run in a step of ``step_ps``."""
    dynamic = (power["internal_uw"] + power["switching_uw"]) * power["clock_ps"]
    return dynamic * PJ_PER_UW_PS, power["leakage_uw"] * step_ps * PJ_PER_UW_PS


@dataclass(frozen=True)
class StepEnergy:
    """One MAC step's energy: every unit's share at the step's clock."""

    dynamic_pj: float
    leakage_pj: float
    lanes: int
    step_ps: float

    @property
    def pj(self) -> float:
        return self.dynamic_pj + self.leakage_pj

    @property
    def pj_per_mac(self) -> float:
        return self.pj / self.lanes

    @property
    def leakage_pj_per_mac(self) -> float:
        return self.leakage_pj / self.lanes

    @property
    def tflops_per_w(self) -> float:
        return tflops_per_w(self.pj_per_mac)


def tflops_per_w(pj_per_mac: float) -> float:
    """2 floating-point operations per MAC: 2 / pJ is 2e12 FLOP/J."""
    return 2.0 / pj_per_mac


def step_energy(units: dict, firings: dict, lanes: int, step_ps: float) -> StepEnergy:
    """The step's energy from ``units`` (role -> power object) each firing ``firings[role]``
    times per step (the promotion adder: block / promote_every)."""
    dynamic = leakage = 0.0
    for role, power in units.items():
        d, leak = unit_energy_pj(power, step_ps)
        dynamic += firings[role] * d
        leakage += leak                   # present, and leaking, whether it fires or not
    return StepEnergy(dynamic, leakage, lanes, step_ps)
