"""The rounder of a multi-format unit: one raw result rounded into the member format ``fmt``
selects, with one shifter, one window and one incrementer for all members (docs/multiformat.md).

The single-format :class:`~.rounder.Rounder`'s steps (normalize, window, encode and increment,
classify, encode the result) with what depends on the format chosen at run time:

- The precision is folded into the denormalizing right shift: a member of precision p_i is
  shifted right by P - p_i more than the widest member (precision P), so the round, guard and
  sticky bits sit at fixed positions of one window of P + G bits for every member, and its
  hidden bit at bit G + M_i.
- emin, the bias, the largest finite code and the smallest normal code are constants selected
  by ``fmt``; the code is ``(exponent field << M_i) + kept bits + increment`` with the shift
  selected by ``fmt`` (the hidden bit's carry walks into the field, as in the Rounder), or,
  after the one-shift path (products), the concatenation of the fraction and the field.
- The result's code, sign and flags (step 5) are each member's own (``Encoder``: its
  special codes, saturation and conventions), selected by ``fmt``: small next to the window.

Every member's result format must have a zero and a hidden bit in its code layout (not fnu,
E8M0), and all must keep or all flush subnormals: ``supports`` says so; a unit with another set
rounds with one Rounder per result format.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Elaboratable, Module, Mux, Signal
from amaranth.utils import bits_for

from ..formats import FloatFormat, Specials
from ..options import FLAGS_WIDTH, Flag, Tininess, UnitOptions
from .common import Mode, Raw, by_fmt, lzc, signed_for
from .rounder import (Encoder, one_shift_window, reaches_normal, registered_window,
                      signed_zero, stochastic_carry, top_window)

__all__ = ["MultiRounder"]


class MultiRounder(Elaboratable):
    """Rounds ``raw`` into ``formats[fmt]`` (``formats``: the members' result formats by fmt
    code; a code with none gives y = 0, flags = NV). Outputs ``y`` (the widest member's width,
    0 above a narrower member's) and ``flags``. ``fmt`` (and ``rm``, ``rbits``) go through
    the register of ``register`` with the window."""

    def __init__(self, formats: tuple[FloatFormat, ...], options: UnitOptions, raw: Raw, fmt, *,
                 rm=None, rbits=None, register: bool = False):
        if not self.supports(formats):
            raise ValueError(f"the multi-format rounder takes no fnu result formats: {formats}")
        self.formats, self.options, self.raw, self.fmt = formats, options, raw, fmt
        self.rm, self.rbits, self.cut = rm, rbits, register
        self.y = Signal(max(f.width for f in formats), name="y")
        self.flags = Signal(FLAGS_WIDTH, name="flags")
        self.before = options.tininess is Tininess.BEFORE
        self.guard = options.rounding.exact_bits(options.sr_bits) or (1 if self.before else 2)

    @staticmethod
    def supports(formats) -> bool:
        return all(f.specials is not Specials.FNU for f in formats) and \
            len({f.has_subnormals for f in formats}) == 1

    @property
    def name(self) -> str:
        return "round_" + "_or_".join(dict.fromkeys(f.ident for f in self.formats)) + \
            f"_{self.options.rounding.value}"

    def _window(self, m, lz, right, extra_max, L):
        """The top L bits of sig shifted left by ``lz``, then right by ``right``, and the
        sticky of the bits below them."""
        win, sticky = top_window(m, self.raw, lz, L)
        R = L + extra_max                               # the largest right shift
        win2, st2 = Signal(L, name="window"), Signal(name="sticky")
        if isinstance(right, int) and right == 0:
            m.d.comb += [win2.eq(win), st2.eq(sticky)]
        else:
            ext = Signal(R + L, name="rshifted")
            m.d.comb += ext.eq(Cat(Const(0, R), win) >> right)
            m.d.comb += [win2.eq(ext[R:]), st2.eq(sticky | (ext[:R] != 0))]

        return win2, st2

    def _one_shift(self, m, t1, t_lo, t_hi, extra, extra_max, L):
        """The window of a sig with at most one leading zero (the Rounder's one-shift path) and
        the exponent field, hidden bit included, max(t + lead, 0); ``t1`` is t - 1, t the top
        bit's weight above emin."""
        raw, sig, W = self.raw, self.raw.sig, self.raw.width
        lead = sig[W - 1] if raw.lz_max else Const(1, 1)
        e1 = Signal(signed_for(t_lo, t_hi + 1), name="exp_lead")
        field_hi = max(t_hi + 1, 0)
        exp_field = Signal(bits_for(field_hi), name="exp_field")
        m.d.comb += [e1.eq(t1 + 1 + lead), exp_field.eq(Mux(e1 < 0, 0, e1))]
        win2, st2 = Signal(L, name="window"), Signal(name="sticky")
        one_shift_window(m, raw, t1, t_lo, lead, L, win2, st2, extra=extra, extra_max=extra_max)
        return win2, st2, exp_field, field_hi

    def elaborate(self, platform):
        m = Module()
        fmts, raw, fmt = self.formats, self.raw, self.fmt
        W, G = raw.width, self.guard
        Ms = [f.man_bits for f in fmts]
        P = max(Ms) + 1
        L = P + G                                       # window: the widest kept bits + guard
        top = raw.off + W - 1
        E_lo = raw.exp_range[0] + top - raw.lz_max
        E_hi = raw.exp_range[1] + top
        sub = fmts[0].has_subnormals
        can_tiny = any(E_lo < f.emin for f in fmts)
        can_ovf = any(E_hi >= f.emax for f in fmts)
        clamp = sub and can_tiny
        one_shift = clamp and raw.lz_max <= 1
        mode = Mode(self.options, self.rm)
        sig = raw.sig
        Z = min(raw.lz_max + 1, W)
        # Measured (mul e4m3/e5m2, docs/multiformat.md) against selecting each member's guard
        # bits and placing the increment at its LSB (no precision shift, no code select): 402 ->
        # 441 GE; against the shift applied to the window after the floor's: 465.
        extra = by_fmt(m, fmt, [P - 1 - M for M in Ms], "precision_shift")
        extra_max = P - 1 - min(Ms)

        # ---- 1. Normalize: left by the leading zeros, clamped at the member's emin --------------
        right = extra
        if clamp:
            t_lo = raw.exp_range[0] + top - max(f.emin for f in fmts)
            t_hi = raw.exp_range[1] + top - min(f.emin for f in fmts)
            one = int(one_shift)             # the one-shift path reads t - 1
            t = Signal(signed_for(t_lo - one, t_hi - one), name="t_minus_1" if one else "t")
            # This constant folded into one operand's exponent instead (mul's t is then the
            # product exponent, no adder) measured larger: mul e4m3/e5m2 402 -> 421 GE.
            m.d.comb += t.eq(raw.exp + by_fmt(m, fmt, [top - f.emin - one for f in fmts],
                                                    "top_above_emin"))
            if one_shift:
                # A product of normalized operands: the Rounder's one right shift (by the top
                # bit's complement, or 1 - t at the floor), and the precision's after it.
                win2, st2, exp_field0, field_hi = self._one_shift(m, t, t_lo, t_hi, extra,
                                                                  extra_max, L)
                field_lo = 0
            else:
                # The Rounder's floor marker: the count of (sig | marker) is min(lz, t).
                t_sat = Signal(bits_for(Z), name="t_sat")
                marker = Signal(Z, name="floor_marker")
                m.d.comb += [t_sat.eq(Mux(t < 0, 0, Mux(t > Z, Z, t))),
                             marker.eq(Const(1 << (Z - 1), Z + 1) >> t_sat)]
                lz, _ = lzc(m, sig[W - Z:] | marker, "lzc")
                rel = Signal(bits_for(max(t_hi, 0)), name="exp_rel")
                m.d.comb += rel.eq(Mux(t < 0, 0, t - lz))
                # emin + bias - 1 is 0 in every format with a zero: the field is rel.
                field_lo, field_hi = 0, max(t_hi, 0)
                exp_field0 = rel
                if t_lo < 0:
                    below = Signal(bits_for(L), name="floor_shift")
                    m.d.comb += below.eq(Mux(t < -L, L, Mux(t < 0, -t, 0)))
                    right = below + extra
        else:
            lz = lzc(m, sig[W - Z:], "lzc")[0] if raw.lz_max > 0 else Const(0, 1)
            consts = [top + f.bias - 1 for f in fmts]
            field_lo = E_lo + min(f.bias for f in fmts) - 1
            field_hi = E_hi + max(f.bias for f in fmts) - 1
            exp_field0 = Signal(signed_for(field_lo, field_hi), name="exp_field0")
            m.d.comb += exp_field0.eq(raw.exp + by_fmt(m, fmt, consts, "field_offset")
                                      - lz)
        is_zero, zero_sign = signed_zero(raw, mode)

        # ---- 2. Window: the top L bits, shifted right by the floor and the precision -----------
        if not one_shift:
            win2, st2 = self._window(m, lz, right, extra_max, L)

        p = registered_window(m, self.cut, raw, rm=self.rm, rbits=self.rbits, zero=is_zero,
                              zero_sign=zero_sign, exp_field0=exp_field0, win=win2, sticky=st2,
                              fmt=fmt)
        if self.rm is not None:
            mode = Mode(self.options, p["rm"])
        fmt = p["fmt"]

        # ---- 3. Encode and increment: (field << M_i) + kept bits + increment -------------------
        sign, win, st, e0 = p["sign"], p["win"], p["sticky"], p["exp_field0"]
        rnd = win[G - 1]
        below = st | (win[:G - 1] != 0) if G > 1 else st
        inexact = Signal(name="inexact")
        m.d.comb += inexact.eq(st | (win[:G] != 0))
        sr_carry = stochastic_carry(self.options, win, st, p["rbits"]) \
            if self.options.rounding.stochastic else 0
        # Parity is the code's LSB: the fraction's, or with M_i = 0 the field's plus the hidden.
        parity = win[G]
        if 0 in Ms:
            no_frac = by_fmt(m, fmt, [int(M == 0) for M in Ms], "no_fraction")
            parity = win[G] ^ (e0[0] & no_frac) if not one_shift else \
                Mux(no_frac, e0[0], win[G])
        inc = mode.increment(sign, parity, rnd, below, sr_carry)
        code_lo = min(field_lo << M for M in Ms)
        code = Signal(signed_for(code_lo, max((field_hi + 3) << M for M in Ms)), name="code")
        code0 = Signal(code.shape(), name="code_truncated")
        # Measured (mul e4m3/e5m2): the one-shift path's concatenation 432 -> 402 GE.
        with m.Switch(fmt):
            for M in dict.fromkeys(Ms):
                with m.Case(*[i for i, x in enumerate(Ms) if x == M]):
                    # One-shift: the field has its hidden bit, the code is a concatenation.
                    m.d.comb += code0.eq(Cat(win[G:G + M], e0) if one_shift else
                                         (e0 << M) + win[G:G + P])
        m.d.comb += code.eq(code0 + inc)
        hidden = Signal(name="hidden")
        with m.Switch(fmt):
            for M in dict.fromkeys(Ms):
                with m.Case(*[i for i, x in enumerate(Ms) if x == M]):
                    m.d.comb += hidden.eq(win[G + M])

        # ---- 4. Classify: tininess and overflow against the member's constants ------------------
        tiny = Const(0, 1)
        if can_tiny:
            tiny = Signal(name="tiny")
            if clamp and self.before:
                m.d.comb += tiny.eq(~hidden)
            elif clamp:
                # Rounding to M_i+1 bits with the exponent unbounded reaches 2^emin only from
                # 2^(emin-1) with M_i+1 ones and an increment (the Rounder's test, per member).
                reaches = Signal(name="reaches")
                with m.Switch(fmt):
                    for M in dict.fromkeys(Ms):
                        with m.Case(*[i for i, x in enumerate(Ms) if x == M]):
                            m.d.comb += reaches.eq(reaches_normal(mode, sign, win, st, G, M))
                m.d.comb += tiny.eq(~hidden & ~reaches)
            elif self.before:
                m.d.comb += tiny.eq(e0 < 0)              # E < emin: the field below 1
            else:
                m.d.comb += tiny.eq(code < by_fmt(m, fmt, [f.min_normal_code
                                                                 for f in fmts], "min_normal"))
        ovf = Const(0, 1)
        if can_ovf:
            ovf = Signal(name="ovf")
            # The Rounder's early test (before the increment) measured larger here: mul
            # e4m3/e5m2 402 -> 437 GE (1509 -> 1362 ps).
            m.d.comb += ovf.eq(code > by_fmt(m, fmt, [f.max_finite_code for f in fmts],
                                             "max_finite"))

        # ---- 5. Each member's code, sign and flags, selected by fmt ----------------------------
        encoders = {f: Encoder(f, self.options, Signal(f.width, name=f"y_{f.ident}"),
                               Signal(FLAGS_WIDTH, name=f"flags_{f.ident}")) for f in fmts}
        for enc in encoders.values():
            enc.encode(m, mode, p, code, inexact, tiny, ovf)
        with m.Switch(fmt):
            for f, enc in encoders.items():
                with m.Case(*[i for i, x in enumerate(fmts) if x == f]):
                    m.d.comb += [self.y.eq(enc.y), self.flags.eq(enc.flags)]
            with m.Default():
                m.d.comb += self.flags.eq(int(Flag.NV))
        return m
