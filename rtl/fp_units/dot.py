"""dot: the OCP MX dot product. Same contract as golden/dot.py ``dot_unit``, the same steps (the
exact sum in one frame here, in radix-2^32 limbs there).

    a_i, b_i (element codes) -> decode -> exact products (sig_a * sig_b, exponent fields added)
        -> accumulate, one method per step of rtl/accum.py (``MxDot.ACCUMULATE``, its methods in
           rtl/fp_units/dot_accum.py): ``Exact``:
           every product aligned in one fixed-point frame and summed; ``Fixed``: every product
           truncated to 2^(Emax - F), then summed, with c beside them when it is given; its
           ``Grouped`` and ``TwoStage`` variants, a tensor core's step)
        -> X_A * X_B moves the exponent -> the one Rounder -> y, flags

Ports (element i of a packed bus at bits [i*w +: w]):

    a        in   n * width(A)   vector a, element i at a[i*wa +: wa]
    b        in   n * width(B)   vector b
    scale_a  in   G * width(S)   scale of a (``scaled`` only): E8M0 (0xFF is NaN) or a value
                                 format; G = n / sum_group scales when grouped, else one
    scale_b  in   G * width(S)   scale of b (``scaled`` only)
    c        in   width(C)       accumulator input (``c_fmt`` only): y = the sum + c
    y        out  width(out)     the rounded result
    flags    out  5              {NV, DZ, OF, UF, NX}; NX also when ``fixed`` dropped a bit

Pipeline cut points (rtl/dot.py ``MxDotSpec.CUT_POINTS``): ``decode`` after the element
decoders, ``product`` after the exact products (the scales and c registered with them at both),
``sum`` after the accumulator, the specials and the scales (the raw result), ``round`` inside the
rounder; ``stages`` alone fills sum, then round, then output registers.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.utils import bits_for

from ..elements import E8M0_BIAS, E8M0_NAN
from ..options import FLAGS_WIDTH, Flag, Rounding
from .common import Raw
from .decode import Decode
from .dot_accum import DotAccumulation, any_of
from .mul import product
from .mx_unit import decode_element, decode_element_by_fmt, decode_operand
from .rounder import Rounder
from .unit import Unit

__all__ = ["MxDot"]


class MxDot(DotAccumulation, Unit):
    """The MX dot-product unit of an :class:`~rtl.dot.MxDotSpec` (ports: ``spec.ports()``)."""

    unit = "dot"

    def elaborate(self, platform):
        spec = self._spec
        acc = spec.accum
        if type(acc) not in self.ACCUMULATE:
            raise TypeError(f"MxDot.ACCUMULATE has no method for {type(acc).__name__}")
        m = Module()
        n = spec.n
        wa, wb = spec.port("a").lane_width, spec.port("b").lane_width

        # The scale inputs, read by the accumulator and the specials, arrive with the data.
        self._scales = self.delayed(m, {port: getattr(self, port) for port in
                                        ("scale_a", "scale_b") if spec.scaled}, until="sum")
        unused = self._unused_fmt(m)

        # 1. Decode and multiply exactly (the mul unit's product: one integer multiply and one
        #    exponent-field add per element pair).
        prods = []
        for i in range(n):
            pa = self._decode(m, "a", self.a[i * wa:(i + 1) * wa], f"dec_a{i}")
            pb = self._decode(m, "b", self.b[i * wb:(i + 1) * wb], f"dec_b{i}")
            pa = self.cut_operand(m, "decode", f"a{i}", pa)
            pb = self.cut_operand(m, "decode", f"b{i}", pb)
            prods.append(self.cut_operand(m, "product", f"p{i}", product(m, pa, pb)))
        nonzero = [~p.zero for p in prods]
        c = None if spec.c_fmt is None else decode_operand(m, self.c, spec.c_fmt, "dec_c")
        if c is not None:
            c = self.cut_operand(m, "product", "c", self.cut_operand(m, "decode", "c", c))

        # 2. Accumulate: the step's own method (ACCUMULATE, keyed by its class).
        sig, exp_off, sum_w, lost, group_scales = \
            self.ACCUMULATE[type(acc)](self, m, acc, prods, nonzero, c)
        grouped = group_scales is not None
        if grouped:
            lane_signs, group_nan, inf_times_zero = group_scales
        total_neg, mag, exp_sig, exp_lo, exp_hi = sig

        # 3. Specials (docs/numerics.md), then the scales: X_A * X_B only moves the exponent
        #    (with c, the accumulator has moved it already).
        terms = prods if c is None else prods + [c]
        signs = [p.sign for p in terms]
        if grouped:                   # each lane's sign with its group's scale signs
            signs = lane_signs + signs[len(prods):]
        p_inf = [p.inf for p in terms]
        pos_inf = any_of([inf & ~s for inf, s in zip(p_inf, signs)])
        neg_inf = any_of([inf & s for inf, s in zip(p_inf, signs)])
        inf_minus_inf = pos_inf & neg_inf
        scale_nan = Const(0, 1)
        exp = exp_sig
        off = exp_off
        if grouped:
            scale_nan = group_nan
        elif spec.value_scales:
            mag, exp, off, sum_w, (exp_lo, exp_hi), scale_nan, scale_zero, scale_sign = \
                self._value_scales(m, mag, exp_sig, exp_off, sum_w, (exp_lo, exp_hi))
        elif spec.scaled:
            scale_nan = (self._scales["scale_a"] == E8M0_NAN) | \
                (self._scales["scale_b"] == E8M0_NAN)
            if c is None:
                e = Signal(unsigned(bits_for(exp_hi + 2 * E8M0_NAN)), name="exp_scaled")
                m.d.comb += e.eq(exp_sig + self._scales["scale_a"] + self._scales["scale_b"])
                exp, off = e, exp_off - 2 * E8M0_BIAS
                exp_hi += 2 * E8M0_NAN
        is_nan = Signal(name="is_nan")
        is_inf = Signal(name="is_inf")
        invalid = Signal(name="invalid")
        nan_any = any_of([p.nan for p in terms]) | inf_minus_inf | scale_nan
        invalid_any = any_of([p.invalid for p in terms]) | inf_minus_inf
        if spec.value_scales and not grouped:
            inf_times_zero = (pos_inf | neg_inf) & scale_zero      # an infinite sum x 0
        if spec.value_scales or grouped:
            nan_any, invalid_any = nan_any | inf_times_zero, invalid_any | inf_times_zero
        m.d.comb += [is_nan.eq(nan_any), is_inf.eq((pos_inf | neg_inf) & ~is_nan),
                     invalid.eq(invalid_any)]
        # A zero result: -0 only when every product is a negative zero (rdn: unless every one
        # is +0); a sum that cancels to zero is +0 (rdn: -0), which the rounder does itself.
        all_zero = Signal(name="all_zero")
        m.d.comb += all_zero.eq(~any_of(nonzero if c is None else nonzero + [~c.zero]))
        rdn = spec.rounding is Rounding.RDN
        zero_sign = any_of(signs) if rdn else Cat(*signs).all()
        sign = Signal(name="sign")
        sum_sign = Mux(is_inf, neg_inf, Mux(all_zero, zero_sign, total_neg))
        m.d.comb += sign.eq(sum_sign ^ scale_sign if spec.value_scales and not grouped
                            else sum_sign)

        cut1 = {"sign": sign, "exp": exp, "sig": mag, "zero": all_zero, "inf": is_inf,
                "nan": is_nan, "invalid": invalid, "lost": lost, **unused}
        p = self.cut(m, "sum", cut1)
        raw = Raw(sign=p["sign"], exp=p["exp"], off=off, sig=p["sig"], width=sum_w,
                  exp_range=(exp_lo, exp_hi), lz_max=sum_w - 1, sticky=Const(0, 1),
                  zero=p["zero"], inf=p["inf"], nan=p["nan"], invalid=p["invalid"],
                  cancels=True)
        rnd = Rounder(spec.out_fmt, spec.options, raw, register="round" in spec.cut_points)
        m.submodules[rnd.name] = rnd
        late = self.cut(m, "round", {"lost": p["lost"] & ~p["nan"] & ~p["inf"],
                                     **{k: p[k] for k in unused}})
        flags = Signal(FLAGS_WIDTH, name="flags_all")
        m.d.comb += flags.eq(rnd.flags | Mux(late["lost"], int(Flag.NX), 0))
        y = rnd.y
        if unused:                    # a fmt code without a member: y = 0, flags = invalid
            now = late["unused_fmt"] if spec.FMT_REGISTERED else \
                self.fmt >= len(spec.members)          # sim/faults.py fmt-unregistered
            y, flags = Mux(now, 0, y), Mux(now, int(Flag.NV), flags)

        self.outputs(m, {"y": y, "flags": flags})
        return m

    def _decode(self, m, role: str, code, name: str):
        """Element ``code`` of vector ``role``: of its one format, or of the member ``fmt``
        selects (a multi-format dot, rtl/multidot.py), decoded into one common operand."""
        spec = self._spec
        elems = spec.member_elements(role)
        if len(set(elems)) == 1:
            return decode_element(m, code[:elems[0].width], elems[0], name)
        return decode_element_by_fmt(m, code, elems, spec.element_man_bits["ab".index(role)],
                                     self.fmt, name, spec.BIAS_FROM)

    def _unused_fmt(self, m) -> dict:
        """``{"unused_fmt": whether fmt names no member}`` as it arrives at the sum; {} when
        every code names one."""
        spec = self._spec
        if not getattr(spec, "has_fmt", False) or len(spec.members) == 1 << spec.fmt_width:
            return {}
        unused = Signal(name="unused_fmt")
        m.d.comb += unused.eq(self.fmt >= len(spec.members))
        return self.delayed(m, {"unused_fmt": unused}, until="sum")

    def _value_scales(self, m, mag, exp, off, width, exp_range):
        """Value scales (E4M3...): their significands multiply the exact sum, their exponent
        fields add, their signs flip the result's. A zero scale leaves a zero magnitude, which
        the rounder treats as a vanished sum (+0, -0 rounding down)."""
        fmt = self._spec.scale_fmt
        decs = []
        for port in ("scale_a", "scale_b"):
            dec = Decode(fmt)
            m.submodules[f"dec_{port}"] = dec
            m.d.comb += dec.code.eq(self._scales[port])
            decs.append(dec)
        da, db = decs
        k = Signal(2 * fmt.precision, name="scale_sig")
        scaled = Signal(width + len(k), name="mag_scaled")
        lo = exp_range[0] + da.exp_range[0] + db.exp_range[0]
        hi = exp_range[1] + da.exp_range[1] + db.exp_range[1]
        e = Signal(unsigned(bits_for(hi)), name="exp_scaled")
        m.d.comb += [k.eq(da.sig * db.sig), scaled.eq(mag * k), e.eq(exp + da.exp + db.exp)]
        return (scaled, e, off + da.off + db.off, len(scaled), (lo, hi),
                da.is_nan | db.is_nan, da.is_zero | db.is_zero, da.sign ^ db.sign)
