"""What the MX units (mxq, mxdq, dot) share: the component frame built from their spec, and the
decoding of an MX element into an exact operand."""

from __future__ import annotations

from amaranth.hdl import Const, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from ..mx import MXINT8_FRAC_BITS, ElementFormat
from .common import Operand, valid_chain
from .decode import Decode

__all__ = ["MxUnit", "decode_element"]


class MxUnit(wiring.Component):
    """Base of the MX units: the ports a subclass's ``port_layout`` names, plus ``valid_i`` /
    ``valid_o`` when pipelined (``clk`` and ``rst`` come with the sync domain); the spec
    read-only."""

    spec_class: type = type(None)

    @staticmethod
    def port_layout(spec) -> tuple[dict, dict]:
        """({input: (count, width)}, {output: (count, width)}) of the data ports, in
        documentation order: a port is ``count`` packed codes of ``width`` bits (element i at
        bits [i*width +: width]); every MX unit class defines it."""
        raise TypeError("an MX unit class must define port_layout(spec)")

    @classmethod
    def port_widths(cls, spec) -> tuple[dict, dict]:
        """({input: bits}, {output: bits}) of the data ports."""
        return tuple({p: c * w for p, (c, w) in group.items()} for group in cls.port_layout(spec))

    def __init__(self, spec):
        if not isinstance(spec, self.spec_class):
            raise TypeError(f"spec must be an {self.spec_class.__name__}, not {spec!r}")
        self._spec = spec
        inputs, outputs = self.port_widths(spec)
        members = {name: In(width) for name, width in inputs.items()}
        if spec.stages:
            members["valid_i"] = In(1)
        members |= {name: Out(width) for name, width in outputs.items()}
        if spec.stages:
            members["valid_o"] = Out(1)
        super().__init__(members)

    @property
    def spec(self):
        return self._spec

    @property
    def latency(self) -> int:
        return self._spec.stages

    @property
    def name(self) -> str:
        return self._spec.default_name

    def valid_chain(self, m: Module):
        """valid_o = valid_i delayed by the latency (cleared by reset)."""
        if self._spec.stages:
            valid_chain(m, self.valid_i, self.valid_o, self._spec.stages)


def decode_element(m: Module, code, elem: ElementFormat, name: str) -> Operand:
    """An element as an exact operand: FP formats through the shared decoder; MXINT8 as
    sign-magnitude (|-128| = 128 needs all 8 bits) times 2^-6."""
    if not elem.twos_complement:
        dec = Decode(elem.grid)
        m.submodules[name] = dec
        m.d.comb += dec.code.eq(code)
        return Operand(sign=dec.sign, exp=dec.exp, off=dec.off, sig=dec.sig, width=dec.width,
                       exp_range=dec.exp_range, lz_max=dec.lz_max, zero=dec.is_zero,
                       inf=dec.is_inf, nan=dec.is_nan, invalid=dec.is_snan)
    mag = Signal(8, name=f"{name}_mag")
    m.d.comb += mag.eq(Mux(code[7], -code, code))
    zero = Signal(name=f"{name}_zero")
    m.d.comb += zero.eq(code == 0)
    return Operand(sign=code[7], exp=Const(0, 1), off=-MXINT8_FRAC_BITS, sig=mag, width=8,
                   exp_range=(0, 0), lz_max=7, zero=zero, inf=Const(0, 1), nan=Const(0, 1),
                   invalid=Const(0, 1))
