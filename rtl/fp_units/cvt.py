"""fp cvt: x in one format -> y in another. The exact core is the decoded operand itself."""

from __future__ import annotations

from .common import Raw
from .unit import FpUnit

__all__ = ["FpCvt"]


class FpCvt(FpUnit):
    """``y = x`` rounded into the output format (narrowing, widening or sideways)."""

    unit = "cvt"

    def core(self, m, ops):
        (x,) = ops
        return Raw(sign=x.sign, exp=x.exp, off=x.off, sig=x.sig, width=x.width,
                   exp_range=x.exp_range, lz_max=x.lz_max, sticky=0, zero=x.zero, inf=x.inf,
                   nan=x.nan, invalid=x.invalid)
