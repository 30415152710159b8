"""What the MX units (mxq, mxdq, dot) share: the decoding of an MX element into an exact
operand (their frame, pipeline included, is every unit's: unit.py)."""

from __future__ import annotations

from amaranth.hdl import Const, Module, Mux, Signal

from ..formats import FloatFormat
from ..elements import ElementFormat
from .common import Operand
from .decode import Decode

__all__ = ["decode_element", "decode_operand"]


def decode_operand(m: Module, code, fmt: FloatFormat, name: str) -> Operand:
    """A code of ``fmt`` as an exact operand, through the shared decoder."""
    dec = Decode(fmt)
    m.submodules[name] = dec
    m.d.comb += dec.code.eq(code)
    return Operand(sign=dec.sign, exp=dec.exp, off=dec.off, sig=dec.sig, width=dec.width,
                   exp_range=dec.exp_range, lz_max=dec.lz_max, zero=dec.is_zero,
                   inf=dec.is_inf, nan=dec.is_nan, invalid=dec.is_snan)


def decode_element(m: Module, code, elem: ElementFormat, name: str) -> Operand:
    """An element as an exact operand: FP formats through the shared decoder; an integer element
    (MXINT8, INT4) as sign-magnitude (|-128| = 128 needs all 8 bits) times 2^lsb_min."""
    if not elem.twos_complement:
        return decode_operand(m, code, elem.grid, name)
    w = elem.width
    mag = Signal(w, name=f"{name}_mag")
    m.d.comb += mag.eq(Mux(code[w - 1], -code, code))
    zero = Signal(name=f"{name}_zero")
    m.d.comb += zero.eq(code == 0)
    return Operand(sign=code[w - 1], exp=Const(0, 1), off=elem.lsb_min, sig=mag, width=w,
                   exp_range=(0, 0), lz_max=w - 1, zero=zero, inf=Const(0, 1), nan=Const(0, 1),
                   invalid=Const(0, 1))
