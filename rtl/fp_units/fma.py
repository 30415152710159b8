"""fp fma and fms: a * b + c and a * b - c with one rounding: the exact product is the first
addend of the sum."""

from __future__ import annotations

from amaranth.hdl import Signal

from .add import aligned_sum
from .common import Operand
from .mul import product
from .unit import FpUnit, registered

__all__ = ["FpFma", "FpFms"]


class FpFma(FpUnit):
    """``y = a * b + c``; 0 x inf is invalid even when c is a quiet NaN."""

    unit = "fma"

    def core(self, m, ops):
        a, b, c = ops
        stage = self.stager(m, "product")
        if stage is not None:
            c = registered(m, "cp_c", c)      # the addend waits with the partial products
        return aligned_sum(m, product(m, a, b, stage=stage), c, self.frame_format,
                           self.spec.options, stage=self.stager(m, "align"))


class FpFms(FpFma):
    """``y = a * b - c``: the fma with c's sign flipped (a NaN c stays NaN)."""

    unit = "fms"

    def core(self, m, ops):
        a, b, c = ops
        c_sign = Signal(name="c_neg")
        m.d.comb += c_sign.eq(~c.sign)
        return super().core(m, [a, b, Operand(**{**c.__dict__, "sign": c_sign})])
