"""The dot unit's accumulation steps, one method per class of rtl/accum.py (the table
``MxDot.ACCUMULATE``): each takes the exact products (and c) and returns the raw sum the unit
frame (rtl/fp_units/dot.py) scales, checks for specials and rounds. The golden model's table is
golden/dot.py ``SUMS``; docs/mx.md states the semantics.

    Exact     every product aligned in one fixed-point frame and summed
    Fixed     every product truncated to 2^(Emax - F), then summed, with c beside them when
              it is given (a tensor core's step)
    Grouped   groups of lanes summed exactly, each at its own scales' exponent, then truncated
    TwoStage  CDNA3's step: the even and odd lanes apart, then c in F2 bits
"""

from __future__ import annotations

from typing import NamedTuple

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed, unsigned
from amaranth.utils import bits_for, ceil_log2

from ..accum import GROUP_ZERO_EXP, Exact, Fixed, Grouped, TwoStage
from ..elements import E8M0_BIAS, E8M0_NAN
from .common import lzc
from .decode import Decode

__all__ = ["DotAccumulation", "any_of"]


def _tree(m: Module, values: list, op, shape, name: str):
    """Balanced reduction of ``values`` with ``op`` (sum or max), every node a named signal."""
    level = 0
    while len(values) > 1:
        nxt = []
        for i in range(0, len(values) - 1, 2):
            s = Signal(shape, name=f"{name}_l{level}_{i // 2}")
            m.d.comb += s.eq(op(values[i], values[i + 1]))
            nxt.append(s)
        if len(values) % 2:
            nxt.append(values[-1])
        values, level = nxt, level + 1
    return values[0]


def any_of(values):
    """Whether any of the 1-bit ``values`` is set."""
    return Cat(*values).any()


class _Sum(NamedTuple):
    """An accumulation step's raw result: ``sig`` (negative, magnitude, exponent signal, its
    range lo, hi) with value magnitude * 2^(exponent + ``off``), ``width`` the magnitude's bits,
    ``lost`` when a truncation dropped a nonzero bit; ``group_scales`` when the step applied
    the scales group by group itself: each lane's sign with its group's scale signs, whether a
    scale is NaN, whether an infinite product meets a zero scale."""
    sig: tuple
    off: int
    width: int
    lost: object
    group_scales: tuple | None = None


class _Scaled(NamedTuple):
    """A group's scaled exact sum as ``_truncated`` reads an operand: its bits and width."""
    sig: Signal
    width: int


class DotAccumulation:
    """The accumulation methods of :class:`~rtl.fp_units.dot.MxDot`, which mixes them in: they
    read its spec (``_spec``) and its scale inputs as they arrive at the sum (``_scales``)."""

    @staticmethod
    def _signed_sum(m: Module, terms: list, signs: list, width: int, name: str):
        """Sum of +-terms (two's complement, ``width`` bits) -> (negative, |sum|)."""
        sw = width + ceil_log2(len(terms)) + 1
        vals = []
        for i, (t, s) in enumerate(zip(terms, signs)):
            v = Signal(signed(sw), name=f"{name}_term{i}")
            m.d.comb += v.eq(Mux(s, -t, t))
            vals.append(v)
        total = _tree(m, vals, lambda x, y: x + y, signed(sw), f"{name}_sum")
        neg = Signal(name=f"{name}_neg")
        mag = Signal(sw, name=f"{name}_mag")
        m.d.comb += [neg.eq(total[-1]), mag.eq(Mux(total[-1], -total, total))]
        return neg, mag, sw

    # ----- the accumulation steps: (m, acc, prods, nonzero, c) -> _Sum ----------------------

    def _exact_step(self, m, acc: Exact, prods, nonzero, c) -> _Sum:
        return _Sum(*self._exact(m, prods))

    def _fixed_step(self, m, acc: Fixed, prods, nonzero, c) -> _Sum:
        if c is None:
            return _Sum(*self._fixed(m, prods, nonzero, acc.frac_bits))
        return _Sum(*self._fixed_with_c(m, prods, nonzero, c, acc.frac_bits))

    def _exact(self, m, prods, prefix: str = ""):
        """Every product is sig << t in one frame whose LSB is the smallest product LSB (the
        sum of the formats' smallest LSB weights): t = the exponent fields' sum minus its
        smallest value. The frame holds the largest product, so the sum is exact. ``prefix``
        names the signals of one of several sums."""
        p0 = prods[0]
        f_lo, f_hi = p0.exp_range
        T = (f_hi - f_lo) + p0.width
        terms = []
        for i, p in enumerate(prods):
            t = Signal(T, name=f"{prefix}aligned{i}")
            if f_hi > f_lo:
                shift = Signal(bits_for(f_hi - f_lo), name=f"{prefix}align{i}")
                m.d.comb += [shift.eq(p.exp - f_lo), t.eq((p.sig << shift)[:T])]
            else:
                m.d.comb += t.eq(p.sig)
            terms.append(t)
        neg, mag, sw = self._signed_sum(m, terms, [p.sign for p in prods], T, f"{prefix}exact")
        return (neg, mag, Const(0, 1), 0, 0), p0.off + f_lo, sw, Const(0, 1)

    def _fixed(self, m, prods, nonzero, F: int, prefix: str = ""):
        """The fixed-width accumulator of golden/dot.py ``_fixed_sum``. With f_i the exponent
        fields' sum, product i is below 2^(f_i + c + 2), c = off + Ma + Mb; Emax uses the
        largest f over the nonzero products; product i is truncated toward zero to a multiple of
        2^(Emax - F): term_i = sig_i >> (d_i + Ma + Mb - F), d_i = fmax - f_i (a left shift
        where that is negative), below 2^(F + 3). ``prefix`` names the signals of one of
        several sums."""
        spec = self._spec
        p0 = prods[0]
        f_lo, f_hi = p0.exp_range
        Mab = sum(spec.element_man_bits)
        fmax = self._fmax(m, prods, nonzero, prefix)
        K0 = Mab - F + max(0, F - Mab)          # >= 0
        terms, lost = self._truncated(m, prods, [Mab] * len(prods), nonzero,
                                      lambda i: fmax - prods[i].exp + K0, f_hi - f_lo + K0, F,
                                      prefix=prefix)
        neg, mag, sw = self._signed_sum(m, terms, [p.sign for p in prods], F + 3,
                                        f"{prefix}fixed")
        lost_any = Signal(name=f"{prefix}truncated")
        m.d.comb += lost_any.eq(any_of(lost))
        # value = total * 2^(Emax - F) = total * 2^(fmax + c - F)
        return (neg, mag, fmax, 0, f_hi), p0.off + Mab - F, sw, lost_any

    def _fixed_with_c(self, m, prods, nonzero, c, F: int):
        """``_fixed`` with the accumulator input c as one more term (a tensor core's step,
        golden/tensor_core.py): c's leading-bit exponent joins Emax and c is truncated to
        2^(Emax - F) like a product. The scales move the products before the comparison.

        One biased exponent G compares the two: a product's G is fmax + S + Bp (S the two E8M0
        codes' sum), c's its exponent field + Bc, the biases making equal G mean equal leading-
        bit exponents (a product's [1, 4) significand, c's [1, 2))."""
        spec = self._spec
        p0 = prods[0]
        f_lo, f_hi = p0.exp_range
        Mab = sum(spec.element_man_bits)
        Mc = spec.c_fmt.man_bits
        bias2 = 2 * E8M0_BIAS if spec.scaled else 0
        D = (p0.off + Mab - bias2) - (c.off + Mc)
        Bp, Bc = max(D, 0), max(-D, 0)
        s_hi = 2 * E8M0_NAN if spec.scaled else 0
        g_hi = max(f_hi + s_hi + Bp, c.exp_range[1] + Bc)
        gw = bits_for(g_hi)
        S = Signal(bits_for(s_hi), name="scale_sum")
        m.d.comb += S.eq(self._scales["scale_a"] + self._scales["scale_b"] if spec.scaled else 0)
        fmax = self._fmax(m, prods, nonzero)
        g_p, g_c, emax = (Signal(gw, name=n) for n in ("g_prod", "g_c", "emax"))
        m.d.comb += [g_p.eq(fmax + S + Bp), g_c.eq(c.exp + Bc)]
        c_wins = ~c.zero & ~(any_of(nonzero) & (g_p >= g_c))
        m.d.comb += emax.eq(Mux(c_wins, g_c, g_p))
        # Right shifts from emax: a product's emax - (f_i + S + Bp) + K0, c's emax - G_c + Kc.
        K0 = Mab - F + max(0, F - Mab)
        Kc = Mc - F + max(0, F - Mc)
        n = len(prods)
        terms, lost = self._truncated(m, prods + [c], [Mab] * n + [Mc], nonzero + [~c.zero],
                                      lambda i: emax - (prods[i].exp + S + Bp) + K0 if i < n
                                      else emax - g_c + Kc, g_hi + max(K0, Kc), F)
        neg, mag, sw = self._signed_sum(m, terms, [p.sign for p in prods + [c]], F + 3, "fixed")
        lost_any = Signal(name="truncated")
        m.d.comb += lost_any.eq(any_of(lost))
        # value = total * 2^(Emax - F), Emax = emax - Bp + p0.off + Mab - bias2
        return (neg, mag, emax, 0, g_hi), p0.off + Mab - bias2 - Bp - F, sw, lost_any

    def _grouped_step(self, m, acc: Grouped, prods, nonzero, c) -> _Sum:
        """The grouped accumulator (golden/dot.py ``_grouped_sum``, MMA-Sim's gst_fdpa): each
        group of lanes summed exactly (``_exact``), times its scales' significands, standing at
        its scales' exponent (GROUP_ZERO_EXP when its products or a scale are all zero), c at
        its own (GROUP_ZERO_EXP when zero or absent); every term truncated to 2^(Emax - F).

        Exponents compare as one unsigned g = E - E_lo, E_lo the smallest a term can have: a
        group's g is its two scale exponent fields' sum plus a constant, c's its field plus
        another. The sum carries its ``group_scales``."""
        spec = self._spec
        F, G, fs = acc.frac_bits, acc.group, spec.scale_fmt
        w = fs.width
        sums, scales = [], []
        for j in range(spec.groups):
            group = prods[j * G:(j + 1) * G]
            (neg, mag, *_), off, sw, _ = self._exact(m, group, prefix=f"g{j}_")
            decs = []
            for port in ("scale_a", "scale_b"):
                dec = Decode(fs)
                m.submodules[f"dec_{port}{j}"] = dec
                m.d.comb += dec.code.eq(self._scales[port][j * w:(j + 1) * w])
                decs.append(dec)
            sums.append((neg, mag, off, sw))
            scales.append(decs)
        da0 = scales[0][0]
        # Normalised exponents: a scale's is its field - bias (subnormals at field 1), c's too.
        s_lo, s_hi = da0.exp_range
        e_lo = min(2 * (s_lo - fs.bias), GROUP_ZERO_EXP)
        if c is not None:
            e_lo = min(e_lo, c.exp_range[0] - spec.c_fmt.bias)
        k_group = -2 * fs.bias - e_lo
        g_zero = GROUP_ZERO_EXP - e_lo
        g_hi = max(2 * s_hi + k_group, g_zero)
        if c is not None:
            k_c = -spec.c_fmt.bias - e_lo
            g_hi = max(g_hi, c.exp_range[1] + k_c)
        gw = bits_for(g_hi)

        ops, fracs, actives, signs, cands, g_of = [], [], [], [], [], []
        for j, ((neg, mag, off, sw), (da, db)) in enumerate(zip(sums, scales)):
            scaled = Signal(sw + 2 * da.width, name=f"g{j}_scaled")
            g = Signal(gw, name=f"g{j}_exp")
            active = Signal(name=f"g{j}_active")
            m.d.comb += [scaled.eq(mag * (da.sig * db.sig)), g.eq(da.exp + db.exp + k_group),
                         active.eq(any_of(nonzero[j * G:(j + 1) * G]) & ~da.is_zero &
                                   ~db.is_zero)]
            ops.append(_Scaled(scaled, len(scaled)))
            fracs.append(2 * fs.man_bits - off)         # bits below the scales' exponent
            actives.append(active)
            signs.append(neg ^ da.sign ^ db.sign)
            cands.append(Mux(active, g, g_zero))
            g_of.append(g)
        if c is not None:
            g_c = Signal(gw, name="g_c")
            m.d.comb += g_c.eq(c.exp + k_c)
            ops.append(c)
            fracs.append(spec.c_fmt.man_bits)
            actives.append(~c.zero)
            signs.append(c.sign)
            cands.append(Mux(c.zero, g_zero, g_c))
            g_of.append(g_c)
        else:
            cands.append(Const(g_zero, gw))
        emax = _tree(m, cands, lambda x, y: Mux(x > y, x, y), unsigned(gw), "emax")
        over = [max(0, f - F) for f in fracs]
        width = F + max(op.width - f for op, f in zip(ops, fracs))
        terms, lost = self._truncated(m, ops, fracs, actives,
                                      lambda i: emax - g_of[i] + over[i],
                                      g_hi + max(over), F, width)
        neg, mag, sw = self._signed_sum(m, terms, signs, width, "fixed")
        lost_any = Signal(name="truncated")
        m.d.comb += lost_any.eq(any_of(lost))
        lane_signs = [p.sign ^ scales[i // G][0].sign ^ scales[i // G][1].sign
                      for i, p in enumerate(prods)]
        nan = any_of([d.is_nan for decs in scales for d in decs])
        inf_zero = any_of([p.inf & (scales[i // G][0].is_zero | scales[i // G][1].is_zero)
                         for i, p in enumerate(prods)])
        # value = total * 2^(E - F), E = emax + e_lo
        return _Sum((neg, mag, emax, 0, g_hi), e_lo - F, sw, lost_any,
                    (lane_signs, nan, inf_zero))

    def _two_stage_step(self, m, acc: TwoStage, prods, nonzero, c) -> _Sum:
        """The two-stage accumulator (golden/dot.py ``_two_stage_sum``, MMA-Sim's gtr_fdpa): the
        even and the odd lanes through ``_fixed`` apart; their sums floored (arithmetic right
        shifts) to F bits below the larger exponent and added: t; with E the larger of that
        and c's (c's alone when every product is zero), t floored to F2 + 1 bits below 2^E and
        c to F (c dropped below 2^(E - F - 1)); their sum floored to F2 bits below its leading
        bit (at least the output's emin). Exponents compare as one unsigned g, products'
        fmax + Bp and c's field + Bc, as in ``_fixed_with_c``."""
        spec = self._spec
        F, F2 = acc.frac_bits, acc.frac_bits2
        L = F2 + 1 - F
        halves, lost = [], []
        for k, name in ((0, "even"), (1, "odd")):
            (neg, mag, fmax, _, f_hi), off, sw, h_lost = \
                self._fixed(m, prods[k::2], nonzero[k::2], F, prefix=f"{name}_")
            value = Signal(signed(sw + 1), name=f"{name}_sum")
            nz = Signal(name=f"{name}_nonzero")
            m.d.comb += [value.eq(Mux(neg, -mag, mag)), nz.eq(any_of(nonzero[k::2]))]
            halves.append((value, fmax, nz))
            lost.append(h_lost)
        (s0, f0, nz0), (s1, f1, nz1) = halves
        fw = len(f0)
        fd = Signal(fw, name="fmax_dot")
        m.d.comb += fd.eq(Mux(f0 > f1, f0, f1))
        (t0, l0), (t1, l1) = (self._floor_shift(m, s, fd - f, f_hi, f"{n}_floored")
                              for s, f, n in ((s0, f0, "even"), (s1, f1, "odd")))
        t = Signal(signed(len(s0) + 1), name="t")
        m.d.comb += t.eq(t0 + t1)                          # units 2^(E_dot - F)
        # The exponents: a half's E = fmax + Cp, c's = field - bias_c.
        Cp = off + F
        D = Cp + spec.c_fmt.bias
        Bp, Bc = max(D, 0), max(-D, 0)
        g_hi = max(f_hi + Bp, c.exp_range[1] + Bc)
        gw = bits_for(g_hi)
        g_p, g_c, g_big = (Signal(gw, name=n) for n in ("g_prod", "g_c", "g_big"))
        any_p = nz0 | nz1
        m.d.comb += [g_p.eq(fd + Bp), g_c.eq(c.exp + Bc),
                     g_big.eq(Mux(any_p & (g_p >= g_c), g_p, g_c))]
        d_u = Signal(gw, name="shift_u")
        m.d.comb += d_u.eq(Mux(any_p & (g_c > g_p), g_c - g_p, 0))
        t_wide = Signal(signed(len(t) + L), name="t_wide")
        m.d.comb += t_wide.eq(t << L)
        u, lu = self._floor_shift(m, t_wide, d_u, g_hi, "u")    # units 2^(E - F2 - 1)
        # c: c.sig * 2^(c.exp + c.off) floored to 2^(E - F): a right shift by
        # (g_big - g_c) + Mc - F after a left shift of max(0, F - Mc).
        Mc = spec.c_fmt.man_bits
        Lc = max(0, F - Mc)
        c_int = Signal(signed(c.width + Lc + 1), name="c_int")
        m.d.comb += c_int.eq(Mux(c.sign, -(c.sig << Lc), c.sig << Lc))
        dc = Signal(gw, name="shift_c")
        m.d.comb += dc.eq(g_big - g_c)
        v, lv = self._floor_shift(m, c_int, dc + max(0, Mc - F), g_hi + max(0, Mc - F), "v")
        dropped = Signal(name="c_dropped")
        m.d.comb += dropped.eq(dc > F + 1)
        total = Signal(signed(max(len(u), len(v) + L) + 1), name="total")
        m.d.comb += total.eq(u + Mux(dropped, 0, v << L))
        neg = Signal(name="total_neg")
        W = len(total) - 1
        mag = Signal(W, name="total_mag")
        m.d.comb += [neg.eq(total[-1]), mag.eq(Mux(total[-1], -total, total))]
        # The last floor: k = max(P - F2, emin_out - E + 1, 0) low bits, P the leading bit's
        # position; E = g_big + Kb.
        Kb = Cp - Bp
        lz, _ = lzc(m, mag, "total_lzc")
        kw = bits_for(max(W, g_hi, abs(spec.out_fmt.emin) + abs(Kb) + 2)) + 2
        k1, k2, k = (Signal(signed(kw), name=n) for n in ("floor_lead", "floor_emin", "floor"))
        m.d.comb += [k1.eq((W - 1 - F2) - lz), k2.eq((spec.out_fmt.emin + 1 - Kb) - g_big),
                     k.eq(Mux(k1 > k2, k1, k2))]
        kc = Signal(bits_for(W), name="floor_bits")
        m.d.comb += kc.eq(Mux(k <= 0, 0, Mux(k > W, W, k[:len(kc)])))
        kept = Signal(W, name="kept")
        m.d.comb += kept.eq((mag >> kc) << kc)
        lk = Signal(name="floor_lost")
        m.d.comb += lk.eq(kept != mag)
        floored = Signal(W + 1, name="floored")
        m.d.comb += floored.eq(kept + Mux(neg & lk, (Const(1, W + 1) << kc)[:W + 1], 0))
        lost_any = Signal(name="truncated")
        m.d.comb += lost_any.eq(any_of(lost + [l0, l1, lu, Mux(dropped, ~c.zero, lv), lk]))
        # value = floored * 2^(E - F2 - 1), E = g_big + Kb
        return _Sum((neg, floored, g_big, 0, g_hi), Kb - F2 - 1, W + 1, lost_any)

    @staticmethod
    def _floor_shift(m, value, shift, shift_hi: int, name: str):
        """floor(value * 2^-shift) of a signed value (an arithmetic right shift, at most
        ``shift_hi``) and whether it dropped a nonzero bit."""
        W = len(value)
        cap = min(shift_hi, W)
        sh = Signal(bits_for(cap), name=f"{name}_shift")
        m.d.comb += sh.eq(Mux(shift > cap, cap, shift))
        ext = Signal(signed(2 * W), name=f"{name}_ext")
        m.d.comb += ext.eq(Cat(Const(0, W), value).as_signed() >> sh)
        out = Signal(signed(W), name=name)
        lost = Signal(name=f"{name}_lost")
        m.d.comb += [out.eq(ext[W:]), lost.eq(ext[:W] != 0)]
        return out, lost

    def _fmax(self, m, prods, nonzero, prefix: str = ""):
        """The largest exponent-field sum over the nonzero products (0 when none is)."""
        fw = bits_for(prods[0].exp_range[1])
        fz = []
        for i, (p, nz) in enumerate(zip(prods, nonzero)):
            f = Signal(fw, name=f"{prefix}fexp{i}")
            m.d.comb += f.eq(Mux(nz, p.exp, 0))
            fz.append(f)
        return _tree(m, fz, lambda x, y: Mux(x > y, x, y), unsigned(fw), f"{prefix}fmax")

    def _truncated(self, m, ops, fracs, nonzero, shift_of, d_hi, F: int, width=None,
                   prefix=""):
        """Each operand's significand (``fracs``: its fraction bits) truncated toward zero to the
        accumulator's ``width`` bits (F + 3 by default): shifted left by L = max(0, F -
        fraction bits) so that every shift is a right shift (``shift_of(i)``, at most ``d_hi``
        for a nonzero op). Returns the terms and whether each lost a nonzero bit."""
        width = F + 3 if width is None else width
        terms, lost = [], []
        for i, (p, frac) in enumerate(zip(ops, fracs)):
            L = max(0, F - frac)
            W = p.width + L
            cap = min(d_hi, W)
            sh = Signal(bits_for(d_hi), name=f"{prefix}tshift{i}")
            m.d.comb += sh.eq(shift_of(i))
            shc = Signal(bits_for(cap), name=f"{prefix}tshift_c{i}")
            m.d.comb += shc.eq(Mux(sh > cap, cap, sh))
            ext = Signal(2 * W, name=f"{prefix}trunc{i}")
            m.d.comb += ext.eq(Cat(Const(0, W), p.sig << L) >> shc)
            t = Signal(width, name=f"{prefix}term{i}")
            m.d.comb += t.eq(ext[W:])
            terms.append(t)
            lost.append(nonzero[i] & (ext[:W] != 0))
        return terms, lost

    # One method per accumulation step, keyed by its class (rtl/accum.py; the golden model's
    # table is golden/dot.py ``SUMS``).
    ACCUMULATE = {Exact: _exact_step, Fixed: _fixed_step, Grouped: _grouped_step,
                  TwoStage: _two_stage_step}
