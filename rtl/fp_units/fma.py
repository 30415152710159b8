"""fp fma: a * b + c with one rounding: the exact product is the first addend of the sum."""

from __future__ import annotations

from .add import aligned_sum
from .mul import product
from .unit import FpUnit

__all__ = ["FpFma"]


class FpFma(FpUnit):
    """``y = a * b + c``; 0 x inf is invalid even when c is a quiet NaN."""

    unit = "fma"

    def core(self, m, ops):
        a, b, c = ops
        return aligned_sum(m, product(m, a, b), c, self.spec.out_fmt, self.spec.options)
