"""A scalar unit over several member formats chosen at run time by ``fmt`` (rtl/multiformat.py,
docs/multiformat.md): one datapath sized for the widest member, shared by all.

Step 1, decode: each operand port's member formats decode into one common :class:`Operand`
(the significand of the widest member, MSB-aligned; the exponent in one frame whose offset is
the smallest member's, so each member adds a constant; the union of the members' static
ranges), selected by ``fmt``: each member's class (zero, inf, NaN), and the exponent and
significand either from one shared decode of the selected fields or from each member's decoder
(``SHARED_DECODE_MIN_FRACTION``). Step 2, the kind's exact core, unchanged: it sees one operand
format. Step 3, the multi-format rounder (rtl/fp_units/multi_rounder.py): one window, shifter
and incrementer for every member; only a set with a result format it cannot encode (fnu) rounds
with one Rounder per member format, selected by ``fmt``. ``fmt`` travels through every pipeline
cut with the data (like ``rm`` and ``rbits``), so consecutive operations may switch format. A
code without a member gives y = 0 and flags = NV; a narrower member's result has 0 above its
width.
"""

from __future__ import annotations

from functools import cache

from amaranth.hdl import Cat, Const, Module, Signal

from ..formats import Specials
from ..multiformat import FMT_PORT, MultiFormatSpec
from ..options import Flag
from .common import Operand, Raw, by_fmt, lzc, register, signed_for, unsigned_for
from .decode import Decode
from .multi_rounder import MultiRounder
from .rounder import Rounder
from .unit import FpUnit

__all__ = ["multi_format_unit", "common_operand"]

# One shared decode of the selected fields (one subnormal normalization) where the widest
# member has at least this many fraction bits, else each member's decoder and a select.
# Measured (mul, rne, own cells): fp16/bf16 1878 -> 1819 GE, fp32/fp16/bf16/e4m3/e5m2 7513 ->
# 7529 GE but 6323 -> 5536 ps; with 3 fraction bits it maps larger (e4m3/e5m2 432 -> 437,
# the f8f6f4 set 627 -> 633, add e4m3/e5m2 585 -> 601).
SHARED_DECODE_MIN_FRACTION = 7


def common_operand(m: Module, name: str, fmt, code, decs: list[tuple[tuple[int, ...], Decode]]) \
        -> Operand:
    """One operand from decoders of several formats: ``decs`` pairs each decoder with the
    ``fmt`` codes that select it. The sig is the widest one's, narrower ones MSB-aligned; the
    exponent field plus a constant per format puts every value on one grid. The classes
    (zero, inf, NaN) are each decoder's; the exponent and significand come from one shared
    decode of the selected fields where the decoders agree on how (``_shared_fields``), else
    from each decoder."""
    P = max(d.width for _, d in decs)
    # A narrower sig shifted up by P - width weighs 2^(exp + off - (P - width)) per LSB.
    offs = [d.off - (P - d.width) for _, d in decs]
    off = min(offs)
    lo = min(d.exp_range[0] + o - off for (_, d), o in zip(decs, offs))
    hi = max(d.exp_range[1] + o - off for (_, d), o in zip(decs, offs))
    exp = Signal(signed_for(lo, hi) if lo < 0 else unsigned_for(hi),
                 name=f"{name}_exp")
    sign, sig = Signal(name=f"{name}_sign"), Signal(P, name=f"{name}_sig")
    zero, inf, nan, invalid = (Signal(name=f"{name}_{k}") for k in ("zero", "inf", "nan",
                                                                     "invalid"))
    shared = P - 1 >= SHARED_DECODE_MIN_FRACTION and _shareable([d for _, d in decs])
    if shared:
        e, s = _shared_fields(m, name, fmt, code, decs, P, [o - off for o in offs])
        m.d.comb += [exp.eq(e), sig.eq(s)]
    with m.Switch(fmt):
        for (codes, d), o in zip(decs, offs):
            with m.Case(*codes):
                m.d.comb += [sign.eq(d.sign), zero.eq(d.is_zero), inf.eq(d.is_inf),
                             nan.eq(d.is_nan), invalid.eq(d.is_snan)]
                if not shared:
                    m.d.comb += [exp.eq(d.exp + (o - off)), sig.eq(d.sig << (P - d.width))]
    return Operand(sign=sign, exp=exp, off=off, sig=sig, width=P, exp_range=(lo, hi),
                   lz_max=max(d.lz_max for _, d in decs), zero=zero, inf=inf, nan=nan,
                   invalid=invalid, sig_cleared=all(d.sig_cleared for _, d in decs),
                   members=tuple(d.fmt for _, d in decs))


def _shareable(decs: list[Decode]) -> bool:
    """Whether one decode of the selected fields gives every decoder's exponent and sig."""
    return all(d.fmt.specials is not Specials.FNU and d.fmt.man_bits > 0 for d in decs) and \
        len({(d.normalize, d.fmt.has_subnormals, d.clear_flushed) for d in decs}) == 1


def _shared_fields(m: Module, name: str, fmt, code, decs, P: int, deltas: list[int]):
    """Decode's exponent and sig steps once, on the exponent and fraction fields of the format
    ``fmt`` selects (the fraction MSB-aligned in P - 1 bits): one subnormal normalization for
    every member. The exponent is the selected decoder's plus its ``deltas`` entry, added to
    the member's own field (a constant add on a few bits) before the selection."""
    d0, M = decs[0][1], P - 1
    lo = min(dl for dl in deltas)
    hi = max((1 << d.fmt.exp_bits) - 1 + dl for (_, d), dl in zip(decs, deltas))
    e = Signal(signed_for(lo, hi) if lo < 0 else unsigned_for(hi), name=f"{name}_exp_field")
    f = Signal(M, name=f"{name}_frac_field")
    normal = Signal(name=f"{name}_normal")
    sub = d0.fmt.has_subnormals
    with m.Switch(fmt):
        for (codes, d), dl in zip(decs, deltas):
            Mi, ei = d.fmt.man_bits, code[d.fmt.man_bits:d.fmt.man_bits + d.fmt.exp_bits]
            with m.Case(*codes):
                # A subnormal reads its exponent at field 1 (Decode's e | ~normal).
                m.d.comb += [e.eq((ei | (ei == 0) if sub else ei) + dl), normal.eq(ei != 0),
                             f.eq(code[:Mi] << (M - Mi))]
    if d0.normalize and sub:
        lz, _ = lzc(m, Cat(f, normal), f"{name}_sub_lzc")
        return e - lz, Cat((Cat(f, normal) << lz)[:M], Const(1, 1))
    if d0.normalize:
        return e, Cat(f, Const(1, 1))
    if sub:
        return e, f | (normal << M)
    fm = f & normal.replicate(M) if d0.clear_flushed else f
    return e, fm | (normal << M)


def _by_format(formats) -> dict:
    """{format: the fmt codes of the members that have it}, in member order."""
    codes: dict = {}
    for i, f in enumerate(formats):
        codes.setdefault(f, []).append(i)
    return codes


class MultiFormatUnit(FpUnit):
    """The frame of a multi-format scalar unit; mixed before the kind's class, whose core it
    keeps (:func:`multi_format_unit`)."""

    def __init__(self, spec: MultiFormatSpec):
        if not isinstance(spec, MultiFormatSpec) or spec.max_lanes != 1:
            raise TypeError(f"{type(self).__name__} implements one lane of a multi-format "
                            f"spec, not {spec!r}")
        super().__init__(spec)

    @property
    def _fmt(self):
        return getattr(self, FMT_PORT) if self._spec.has_fmt else 0

    def controls(self) -> dict:
        return {"fmt": self._fmt, **super().controls()}

    @property
    def frame_format(self):
        # aligned_sum's frame holds the most fraction bits any member rounds to.
        return max((s.out_fmt for s in self._spec.members), key=lambda f: f.man_bits)

    def decoded_operands(self, m: Module) -> list[Operand]:
        spec, ops = self._spec, []
        for j, port in enumerate(spec.operands):
            decs = []
            for f, codes in _by_format(s.in_fmts[j] for s in spec.members).items():
                dec = Decode(f, normalize=self.normalized_operands,
                             clear_flushed=self.decoders_clear_flushed)
                m.submodules[f"dec_{port}_{f.ident}"] = dec
                m.d.comb += dec.code.eq(getattr(self, port)[:f.width])
                decs.append((tuple(codes), dec))
            ops.append(common_operand(m, port, self._fmt, getattr(self, port), decs))
        return ops

    def rounded(self, m: Module, raw: Raw, controls: dict) -> dict:
        spec = self._spec
        cut = "round" in spec.cut_points
        outs = tuple(s.out_fmt for s in spec.members)
        if not spec.FMT_REGISTERED:
            controls = {**controls, "fmt": self._fmt}
        if MultiRounder.supports(outs):
            rounder = MultiRounder(outs, spec.options, raw, controls["fmt"], rm=controls.get("rm"),
                                   rbits=controls.get("rbits"), register=cut)
            m.submodules[rounder.name] = rounder
            return {"y": rounder.y, "flags": rounder.flags}
        y = Signal(spec.port("y").width, name="y_sel")
        flags = Signal(spec.port("flags").width, name="flags_sel")
        # The format the rounders' register holds with their data.
        fmt = register(m, cut, "r1", {"fmt": controls["fmt"]})["fmt"]
        with m.Switch(fmt):
            for f, codes in _by_format(s.out_fmt for s in spec.members).items():
                rounder = Rounder(f, spec.options, raw, rm=controls.get("rm"),
                                  rbits=controls.get("rbits"), register=cut,
                                  early_overflow=self.early_overflow and not cut)
                m.submodules[rounder.name] = rounder
                with m.Case(*codes):
                    m.d.comb += [y.eq(rounder.y), flags.eq(rounder.flags)]
            with m.Default():
                m.d.comb += flags.eq(int(Flag.NV))
        return {"y": y, "flags": flags}


@cache
def _unit_class(base: type) -> type:
    return type(f"MultiFormat{base.__name__}", (MultiFormatUnit, base), {})


def multi_format_unit(base: type, spec: MultiFormatSpec) -> FpUnit:
    """The component of one lane of ``spec``: the kind's unit class ``base`` (FpMul, ...) with
    the multi-format decoders and rounders."""
    return _unit_class(base)(spec)
