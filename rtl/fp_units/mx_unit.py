"""What the MX units (mxq, mxdq, dot) share: the decoding of an MX element into an exact
operand, of one format or of several selected at run time (a multi-format dot,
rtl/multidot.py); their frame, pipeline included, is every unit's: unit.py."""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.utils import bits_for

from ..formats import FloatFormat
from ..elements import ElementFormat
from .common import Operand
from .decode import Decode

__all__ = ["decode_element", "decode_element_by_fmt", "decode_operand"]


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


def decode_element_by_fmt(m: Module, code, elems: tuple[ElementFormat, ...], man_bits: int,
                          fmt, name: str, bias_from: dict[int, int] | None = None) -> Operand:
    """Member i's element (``fmt`` = i: ``elems[i]``, its code in the low bits of ``code``) as
    one common operand, so that every member's products, sum and rounding share one datapath
    sized for the widest: the significand shifted up to ``man_bits`` fraction bits, the exponent
    moved by a per-member constant onto one scale. Each distinct format has its own small
    decoder; fmt selects among their outputs, a code without a member reading member 0 (the
    unit forces its result). ``bias_from`` (a deliberately broken variant): member i takes
    member bias_from[i]'s exponent constant."""
    ops = {e: decode_element(m, code[:e.width], e, f"{name}_{e.name}")
           for e in dict.fromkeys(elems)}
    shift = {e: man_bits - e.grid.man_bits for e in ops}
    # value = (sig << shift) * 2^(exp + off - shift) = sig_c * 2^(exp + k + off_c): k moves
    # every member's smallest exponent onto 0 or above.
    off = min(op.exp_range[0] + op.off - shift[e] for e, op in ops.items())
    k = {e: op.off - shift[e] - off for e, op in ops.items()}
    width = man_bits + max(op.width - e.grid.man_bits for e, op in ops.items())
    hi = max(op.exp_range[1] + k[e] for e, op in ops.items())
    exp = Signal(bits_for(hi), name=f"{name}_exp")
    sig = Signal(width, name=f"{name}_sig")
    flags = {f: Signal(name=f"{name}_{f}") for f in ("sign", "zero", "inf", "nan", "invalid")}
    bias_from = bias_from or {}
    cases = {}                           # (format, exponent constant) -> the members reading it
    for i, e in enumerate(elems):
        cases.setdefault((e, k[elems[bias_from.get(i, i)]]), []).append(i)
    with m.Switch(fmt):
        for (e, ke), members in sorted(cases.items(), key=lambda c: 0 in c[1]):
            op = ops[e]
            with m.Case(*members) if 0 not in members else m.Default():
                m.d.comb += [exp.eq(op.exp + ke), sig.eq(Cat(Const(0, shift[e]), op.sig)),
                             *(s.eq(getattr(op, f)) for f, s in flags.items())]
    lz = max(op.lz_max + width - op.width - shift[e] for e, op in ops.items())
    return Operand(exp=exp, off=off, sig=sig, width=width, exp_range=(0, hi), lz_max=lz,
                   sig_cleared=all(op.sig_cleared for op in ops.values()), **flags)
