"""fpforge's hardware units: Amaranth components generated from a :class:`~rtl.spec.UnitSpec`.

Every unit is decode -> exact core -> the one rounder -> encode (docs/numerics.md). Other
modules (Verilog export, synthesis, benches) call only :func:`build`.
"""

from __future__ import annotations

from amaranth.lib import wiring

from ..mx import MxDequantSpec, MxDotSpec, MxQuantSpec
from ..spec import UnitSpec
from .add import FpAdd
from .cvt import FpCvt
from .fma import FpFma
from .mul import FpMul
from .unit import FpUnit

__all__ = ["build", "FpUnit", "FpMul", "FpAdd", "FpFma", "FpCvt", "UNIT_CLASSES"]

UNIT_CLASSES = {"mul": FpMul, "add": FpAdd, "fma": FpFma, "cvt": FpCvt}


def build(spec: "UnitSpec | MxQuantSpec | MxDotSpec") -> wiring.Component:
    """The unit described by ``spec`` (ports: docs in :class:`FpUnit`, rtl/fp_units/mxq.py,
    mxdq.py and dot.py)."""
    if isinstance(spec, MxQuantSpec):
        from .mxq import MxQuantizer
        return MxQuantizer(spec)
    if isinstance(spec, MxDequantSpec):
        from .mxdq import MxDequantizer
        return MxDequantizer(spec)
    if isinstance(spec, MxDotSpec):
        from .dot import MxDot
        return MxDot(spec)
    if not isinstance(spec, UnitSpec):
        raise TypeError(f"spec must be a UnitSpec, not {spec!r}")   # (or an MX spec)
    return UNIT_CLASSES[spec.unit](spec)
