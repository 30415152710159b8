"""The bare integer core of a floating-point multiplier, as a synthesis reference point.

For a format with precision P (hidden bit counted) and E exponent bits the core is the P x P
significand product plus the E-bit exponent add -- no decode, no normalisation, no rounding, no
specials. A real multiplier or FMA cannot be smaller, so "unit area / core area" says what the
floating-point part costs on top of the arithmetic every implementation must do.
"""

from __future__ import annotations

from amaranth import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from fpforge.rtl.formats import FloatFormat
from fpforge.rtl.format_names import resolve

__all__ = ["MulCore", "core_name"]


class MulCore(wiring.Component):
    """``p = sig_a * sig_b`` and ``e = exp_a + exp_b``, combinational.

    The operands may be of different formats (``b_fmt``, default ``fmt``): the product is then
    Pa x Pb and the exponent sum one bit wider than the wider exponent.
    """

    def __init__(self, *, fmt: FloatFormat, b_fmt: FloatFormat | None = None):
        self._fmt = resolve(fmt)
        self._b_fmt = self._fmt if b_fmt is None else resolve(b_fmt)
        a, b = self._fmt, self._b_fmt
        super().__init__({
            "sig_a": In(a.precision), "sig_b": In(b.precision),
            "exp_a": In(a.exp_bits), "exp_b": In(b.exp_bits),
            "p": Out(a.precision + b.precision), "e": Out(max(a.exp_bits, b.exp_bits) + 1),
        })

    @property
    def fmt(self) -> FloatFormat:
        return self._fmt

    @property
    def b_fmt(self) -> FloatFormat:
        return self._b_fmt

    def elaborate(self, platform):
        m = Module()
        m.d.comb += [self.p.eq(self.sig_a * self.sig_b),
                     self.e.eq(self.exp_a + self.exp_b)]
        return m


def core_name(fmt: FloatFormat, b_fmt: FloatFormat | None = None) -> str:
    """Module name carrying its parameters: ``mul_core_p4_e4``, or ``mul_core_p4x3_e4x5``."""
    a = resolve(fmt)
    b = a if b_fmt is None else resolve(b_fmt)
    if (a.precision, a.exp_bits) == (b.precision, b.exp_bits):
        return f"mul_core_p{a.precision}_e{a.exp_bits}"
    return f"mul_core_p{a.precision}x{b.precision}_e{a.exp_bits}x{b.exp_bits}"

