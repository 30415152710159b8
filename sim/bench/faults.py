"""Deliberately wrong units, so the benches can show that they fail.

Each entry builds a unit with the right ports for a spec but the wrong behaviour; the runner
puts it in the harness in place of ``rtl.fp_units.build`` while the reference still models the
spec. A bench that reports no mismatch on these is broken.
"""

from __future__ import annotations

from dataclasses import replace

from amaranth.hdl import Module
from amaranth.lib import wiring

from rtl.fp_units import build
from rtl.options import Flag, UnitOptions
from rtl.spec import UnitSpec

__all__ = ["FAULTS", "ForcedFlag", "make_unit"]


class ForcedFlag(wiring.Component):
    """The real unit with one flag bit forced high (inexact by default)."""

    def __init__(self, spec: UnitSpec, flag: Flag = Flag.NX):
        self._unit = build(spec)
        self._flag = flag
        super().__init__(dict(self._unit.signature.members))

    def elaborate(self, platform):
        m = Module()
        m.submodules.unit = unit = self._unit
        for name, member in self.signature.members.items():
            if member.flow is wiring.In:
                m.d.comb += getattr(unit, name).eq(getattr(self, name))
            elif name == "flags":
                m.d.comb += self.flags.eq(unit.flags | int(self._flag))
            else:
                m.d.comb += getattr(self, name).eq(getattr(unit, name))
        return m


def _rtz_instead(spec: UnitSpec):
    """The unit built for round-toward-zero, whatever the spec says (same ports when the spec's
    rounding is static)."""
    o = spec.options
    return build(replace(spec, options=UnitOptions(rounding="rtz", saturate=o.saturate,
                                                   sr_bits=o.sr_bits)))


FAULTS = {
    "force-inexact": lambda spec: ForcedFlag(spec, Flag.NX),
    "force-invalid": lambda spec: ForcedFlag(spec, Flag.NV),
    "rtz-instead": _rtz_instead,
}


def make_unit(fault: str | None):
    if fault is None:
        return build
    try:
        return FAULTS[fault]
    except KeyError:
        raise ValueError(f"unknown fault {fault!r}; valid: {', '.join(FAULTS)}") from None
