"""fpforge's hardware units: Amaranth components, one class per unit kind (rtl/kinds.py names
them). Every unit is decode -> exact core -> the one rounder -> encode (docs/numerics.md); its
signature is its spec's ``ports()`` (unit.py).

Other modules (Verilog export, synthesis, benches) turn a spec into Verilog with
:func:`rtl.emit.verilog`, or into a component with :func:`build`.
"""

from __future__ import annotations

from ..kinds import build
from .unit import FpUnit, Unit

__all__ = ["build", "Unit", "FpUnit"]
