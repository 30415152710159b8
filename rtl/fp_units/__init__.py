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

__all__ = ["build", "mx_port_layout", "FpUnit", "FpMul", "FpAdd", "FpFma", "FpCvt",
           "UNIT_CLASSES"]

UNIT_CLASSES = {"mul": FpMul, "add": FpAdd, "fma": FpFma, "cvt": FpCvt}


def build(spec: "UnitSpec | MxQuantSpec | MxDotSpec") -> wiring.Component:
    """The unit described by ``spec`` (ports: docs in :class:`FpUnit`, rtl/fp_units/mxq.py,
    mxdq.py and dot.py)."""
    if isinstance(spec, (MxQuantSpec, MxDequantSpec, MxDotSpec)):
        return _mx_class(spec)(spec)
    if not isinstance(spec, UnitSpec):
        raise TypeError(f"spec must be a UnitSpec, not {spec!r}")   # (or an MX spec)
    return UNIT_CLASSES[spec.unit](spec)


def mx_port_layout(spec) -> tuple[dict, dict]:
    """({input: (count, width)}, {output: (count, width)}) of an MX unit's data ports."""
    return _mx_class(spec).port_layout(spec)


def _mx_class(spec):
    from .dot import MxDot
    from .mxdq import MxDequantizer
    from .mxq import MxQuantizer
    return {MxQuantSpec: MxQuantizer, MxDequantSpec: MxDequantizer, MxDotSpec: MxDot}[type(spec)]
