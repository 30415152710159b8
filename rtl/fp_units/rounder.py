"""Step 3 and 4 of every unit: the ONE rounder and the encoder (docs/numerics.md sections 3-7).

Same contract as golden/rounding.py, a different algorithm (a window sized per format, with
what the static exponent range rules out left out), cut at the same steps in the same order:
1 normalize (with the sign of a sum that cancels to zero, section 6), 2 window (section 3),
3 encode and increment (section 3), 4 classify: tininess (section 5) and overflow (section 4),
5 the result's code, its sign and the flags (sections 6, 7). Every unit hands it a raw result
(sign, exponent, integer significand, sticky, special-case bits); nothing about rounding lives
anywhere else.

How it works, in hardware terms:

1. *Normalize.* The leading one of ``sig`` moves to the top of the W-bit field by a left shift of
   ``lz`` (a leading-zero count) -- but, when subnormals are kept, never past the exponent emin:
   the shift is clamped (by a marker bit ORed in before the count) so that the top bit weighs at
   least 2^emin, and a value so small that even its top bit lies below 2^emin is shifted *right*
   instead. Either way the top bit of the window is then the hidden bit of the result (1:
   normal, 0: subnormal). A sig with at most one leading zero (a product of normalized
   operands) skips the count: normalizing and denormalizing are then one right shift whose
   amount comes from the exponent and the top bit (at or below the floor: one bit, then -t bits,
   both read off t - 1 without an adder).
2. *Window.* The top M+1 bits are kept, G more bits below them are kept exactly (G = the random
   bits of stochastic rounding, else 2: the round bit and one more for tininess after rounding,
   or 1 with tininess before rounding),
   and everything further down ORs into ``sticky``.
3. *Encode and increment.* ``code = exp_field << M | fraction`` (exp_field already includes the
   hidden bit, so normal and subnormal results share the formula), plus an increment of 0 or 1
   whose carry walks into the exponent field by itself.
4. *Classify.* Overflow is "round first, then compare the code with the largest finite code";
   tininess is after rounding (the code of the value rounded to M+1 bits with an unbounded
   exponent is below the smallest normal), or before rounding (the window's hidden bit is 0)
   when the options say so, always under stochastic rounding.

Static knowledge of the raw exponent's range (``exp_range``, ``lz_max``) lets the rounder drop
what cannot happen: no LZC for a normalized significand, no right shifter when no value can lie
a whole field below emin, no overflow compare when no value can reach emax, and so on.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Elaboratable, Module, Mux, Signal, unsigned
from amaranth.utils import bits_for

from ..formats import FloatFormat, Specials
from ..options import FLAGS_WIDTH, Rounding, Saturation, Tininess, UnitOptions
from .common import Mode, Raw, lzc, register, signed_for

__all__ = ["Rounder", "Encoder", "stochastic_carry", "signed_zero"]


def stochastic_carry(options: UnitOptions, win, st, rbits):
    """The increment of stochastic rounding (docs/numerics.md 3; P3109 4.7.4
    RoundAway(Stochastic[ABC])) from the R random bits and the exact bits below the result's
    LSB: the low ``options.rounding.exact_bits(R)`` bits of ``win``, ``st`` the sticky of the
    rest. The rounder's window and f2i's integer grid both read it."""
    R, r = options.sr_bits, rbits[:options.sr_bits]
    rounding = options.rounding
    if rounding is Rounding.STOCHASTIC:          # A: floor(frac 2^R) + r >= 2^R
        return (win[:R] + r)[R]
    if rounding is Rounding.STOCHASTIC_B:        # B: floor(frac 2^(R+1)) + 2r + 1 >= 2^(R+1)
        return (win[:R + 1] + Cat(Const(1, 1), r))[R + 1]
    # C: RNITE(frac 2^R) + r >= 2^R; the rounded fraction may be 2^R itself.
    q, half = win[1:R + 1], win[0]
    q_rne = q + (half & (st | q[0]))
    return (q_rne + r)[R:].any()


def signed_zero(raw: Raw, mode: Mode):
    """Whether the result is an exact zero, and its sign (section 6): a sum that cancels
    (``raw.cancels``: sig and sticky 0) is one too."""
    if not raw.cancels:
        return raw.zero, raw.sign
    vanished = (raw.sig == 0) & ~raw.sticky
    # An exact zero sum of opposite signs is +0, or -0 when rounding down (IEEE 6.3).
    rdn = Const(int(mode.rdn), 1) if isinstance(mode.rdn, bool) else mode.rdn
    return raw.zero | vanished, Mux(raw.zero, raw.sign, rdn)


class Rounder(Elaboratable):
    """Rounds a :class:`Raw` result into ``fmt`` and encodes it.

    Inputs are the signals of ``raw`` (plus ``rm`` / ``rbits`` when the options need them);
    outputs ``y`` (``fmt.width`` bits) and ``flags`` ({NV, DZ, OF, UF, NX}). With ``register``
    a pipeline register sits between normalization (steps 1-2) and the increment (steps 3-4).
    With ``early_overflow`` (a unit's opt-in: the multipliers) the overflow test of step 4 reads
    the code before the increment where that maps smaller (see ``early_ovf``).
    """

    def __init__(self, fmt: FloatFormat, options: UnitOptions, raw: Raw, *, rm=None, rbits=None,
                 register: bool = False, early_overflow: bool = False):
        self.fmt, self.options, self.raw = fmt, options, raw
        self.rm, self.rbits, self.cut = rm, rbits, register
        self.early_overflow = early_overflow
        self.y = Signal(fmt.width, name="y")
        self.flags = Signal(FLAGS_WIDTH, name="flags")
        self.stochastic = options.rounding.stochastic
        self.before = options.tininess is Tininess.BEFORE
        # Tininess after rounding reads one bit more than the round bit (step 2).
        self.guard = options.rounding.exact_bits(options.sr_bits) or (1 if self.before else 2)

    @property
    def name(self) -> str:
        return f"round_{self.fmt.ident}_{self.options.rounding.value}" + \
            ("_sat" if self.options.saturate else "") + \
            (f"_sat{self.options.saturation.value}" if self.options.saturation else "") + \
            "".join(f"_{p}" for p in self.options.tininess_name_parts())

    def elaborate(self, platform):
        m = Module()
        fmt, raw = self.fmt, self.raw
        M, bias, emin = fmt.man_bits, fmt.bias, fmt.emin
        W, G = raw.width, self.guard
        L = M + 1 + G                                   # window: kept bits + guard bits
        top = raw.off + W - 1                           # weight of sig's top bit is exp + top
        E_lo = raw.exp_range[0] + top - raw.lz_max       # leading-one exponent, nonzero values
        E_hi = raw.exp_range[1] + top
        sub = fmt.has_subnormals
        can_tiny = E_lo < emin
        can_ovf = E_hi >= fmt.emax
        clamp = sub and can_tiny                        # the subnormal floor can bind
        mode = Mode(self.options, self.rm)

        # ---- 1. Normalize (section 3; the sign of a vanished sum, section 6) -------------------
        sig = raw.sig
        if clamp:
            # t: how far the top bit lies above emin (negative: below it).
            t_lo, t_hi = raw.exp_range[0] + top - emin, raw.exp_range[1] + top - emin
            t = Signal(signed_for(t_lo, t_hi), name="t")
            m.d.comb += t.eq(raw.exp + (top - emin))
        # A nonzero sig has its leading one among its top Z = lz_max + 1 bits: only they are
        # counted, and a left shift never exceeds lz_max.
        Z = min(raw.lz_max + 1, W)
        one_shift = clamp and raw.lz_max <= 1
        if one_shift:
            lz = None
        elif raw.lz_max > 0 and clamp:
            # The subnormal floor as a marker bit t places below the top: the leading-zero
            # count of (sig | marker) is min(lz, t), the clamped left shift, with no compare and
            # mux after the count (t < 0: marker on top, no left shift).
            t_sat = Signal(bits_for(Z), name="t_sat")
            marker = Signal(Z, name="floor_marker")
            m.d.comb += [t_sat.eq(Mux(t < 0, 0, Mux(t > Z, Z, t))),
                         marker.eq(Const(1 << (Z - 1), Z + 1) >> t_sat)]
            lz, _ = lzc(m, sig[W - Z:] | marker, "lzc")
        elif raw.lz_max > 0:
            lz, _ = lzc(m, sig[W - Z:], "lzc")
        else:
            lz = Const(0, 1)
        is_zero, zero_sign = signed_zero(raw, mode)

        # exp_field0 + field_add (or + the window's top bit, with the floor clamped late) is the
        # exponent field of the window's top bit, biased, minus one: the hidden bit adds it back,
        # so normal and subnormal codes share one formula.
        win2 = Signal(L, name="window")
        st2 = Signal(name="sticky")
        if one_shift:
            # At most one leading zero: whether the result is subnormal, and by how much, is
            # known from t and the top bit alone, so normalizing and denormalizing are a right
            # shift of sig (with zeros below it) by a = 1 - t, or by the top bit's complement
            # above the floor; the field is max(t + 1 - lz, 0) above the floor's.
            lead = sig[W - 1] if raw.lz_max else Const(1, 1)
            field_lo, field_hi = emin + bias - 1, t_hi + emin + bias
            field_add = 0
            e1 = Signal(signed_for(t_lo, t_hi + 1), name="exp_lead")
            exp_field0 = Signal(signed_for(field_lo, field_hi), name="exp_field0")
            m.d.comb += [e1.eq(t + lead),
                         exp_field0.eq(Mux(e1 < 0, 0, e1) + (emin + bias - 1))]
            pad = max(1, L - W + 1)
            A = L + 1                                    # a shift of A or more: every bit below
            # The sign of t - 1 says the top bit is at or below emin (t <= 0): the sig shifts
            # by one there, else by the top bit's complement. Below emin the complement of
            # t - 1 is -t, the further shift, saturated by ORing its high bits: no subtract and
            # no compare. Measured (own cells, mul, rne, subnormals) against one shifter by
            # Mux(t > 0, lead, min(1 - t, A)): fp8e4m3 306 -> 288 GE (945 -> 1007 ps), e4m3
            # 337 -> 302, e5m2fnuz 324 -> 276; the 12 catalog formats' sum -1.6 %, though e3m4
            # (+2.8 %), fp16 (+1.0 %) and bf16 (+1.4 %) map larger.
            t1 = Signal(signed_for(t_lo - 1, t_hi - 1), name="t_minus_1")
            m.d.comb += t1.eq(raw.exp + (top - emin - 1))
            at_floor = t1[-1]
            shift = [lead | at_floor]
            if t_lo < 0:
                minus_t = ~t1[:-1]
                k = bits_for(A)
                over = minus_t[k:].any() if len(minus_t) > k else Const(0, 1)
                depth = Signal(k, name="denorm_shift")       # min(-t, 2^k - 1) at the floor
                m.d.comb += depth.eq(Mux(at_floor, minus_t[:k] | over.replicate(k), 0))
                shift.append(depth)
                pad = max(pad, (1 << k) - A)     # a shift of up to 2^k loses no nonzero bit
            Wv = W + pad                                 # sig with zeros below it
            ext = Signal(A + Wv, name="rshifted")
            shifted = Cat(Const(0, A + pad), sig)
            for amount in shift:
                shifted = shifted >> amount
            m.d.comb += ext.eq(shifted)
            cut = A + Wv - 1 - L
            m.d.comb += [win2.eq(ext[cut:cut + L]), st2.eq(raw.sticky | (ext[:cut] != 0))]
        else:
            right = Const(0, 1)
            s = lz
            field_add = 1
            if clamp:
                rel = Signal(unsigned(bits_for(max(t_hi, 0))), name="exp_rel")  # top bit vs emin
                m.d.comb += rel.eq(Mux(t < 0, 0, t - s))
                if t_lo < 0:
                    right = Signal(bits_for(L), name="rshift")
                    m.d.comb += right.eq(Mux(t < -L, L, Mux(t < 0, -t, 0)))
                field_lo, field_hi = emin + bias - 1, t_hi + emin + bias - 1
                exp_field0 = Signal(signed_for(field_lo, field_hi), name="exp_field0")
                m.d.comb += exp_field0.eq(rel + (emin + bias - 1))
            else:
                field_lo, field_hi = E_lo + bias - 1, E_hi + bias - 1
                exp_field0 = Signal(signed_for(field_lo, field_hi), name="exp_field0")
                m.d.comb += exp_field0.eq(raw.exp + (top + bias - 1) - s)

            norm = Signal(W, name="norm")
            m.d.comb += norm.eq((sig << s)[:W] if raw.lz_max else sig)

            # ---- 2. Window (section 3) ------------------------------------------------------
            if W >= L:
                win = norm[W - L:]
                sticky = raw.sticky | (norm[:W - L] != 0) if W > L else raw.sticky
            else:
                win = Cat(Const(0, L - W), norm)
                sticky = raw.sticky
            if isinstance(right, Signal):
                ext = Signal(2 * L, name="rshifted")
                m.d.comb += ext.eq(Cat(Const(0, L), win) >> right)
                m.d.comb += [win2.eq(ext[L:]), st2.eq(sticky | (ext[:L] != 0))]
            else:
                m.d.comb += [win2.eq(win), st2.eq(sticky)]

        stage = dict(sign=raw.sign, zero=is_zero, zero_sign=zero_sign, inf=raw.inf, nan=raw.nan,
                     invalid=raw.invalid, exp_field0=exp_field0, win=win2, sticky=st2)
        if self.rm is not None:
            stage["rm"] = self.rm
        if self.rbits is not None:
            stage["rbits"] = self.rbits
        if raw.divzero is not None:
            stage["divzero"] = raw.divzero
        p = register(m, self.cut, "r1", stage)
        if self.rm is not None:
            mode = Mode(self.options, p["rm"])

        # ---- 3. Encode and increment (section 3) --------------------------------------------
        sign, win, st = p["sign"], p["win"], p["sticky"]
        hidden = win[L - 1]
        frac = win[G:G + M]
        rnd = win[G - 1]
        below = st | (win[:G - 1] != 0) if G > 1 else st
        inexact = Signal(name="inexact")
        m.d.comb += inexact.eq(st | (win[:G] != 0))
        sr_carry = 0
        if self.stochastic:
            sr_carry = stochastic_carry(self.options, win, st, p["rbits"])
        exp_field = Signal(signed_for(field_lo, field_hi + 1), name="exp_field")
        late_hidden = clamp and not one_shift
        m.d.comb += exp_field.eq(p["exp_field0"] + (hidden if late_hidden else field_add))
        # Parity is the LSB of the code: of the fraction, or of the exponent when M == 0 (E8M0).
        parity = win[G] if M else exp_field[0]
        inc = mode.increment(sign, parity, rnd, below, sr_carry)
        f_lo, f_hi = field_lo, field_hi + 1
        code_shape = signed_for(f_lo * (1 << M), (f_hi + 1) * (1 << M))
        code = Signal(code_shape, name="code")
        # The multipliers' overflow test on the code before the increment (step 4), and with it
        # the code as one incrementer. Only where measured smaller: the one-shift path with an
        # increment that is not constant and an overflow to infinity or NaN (with rtz, under
        # saturation and in finite formats it maps larger: e4m3 rtz mul 244 -> 265 GE, bf16
        # saturating 947 -> 1076, fp6e3m2 177 -> 211), and in units that opt in (in the
        # dequantizers it maps larger: mxdq binary4p2sf k = 8 maxabs 903 -> 1016 GE).
        early_ovf = self.early_overflow and can_ovf and one_shift and \
            not isinstance(inc, Const) and self._overflow_leaves_finite()
        if clamp and not early_ovf:
            m.d.comb += code.eq((exp_field << M) + frac + inc)
        else:
            # The same value as one incrementer over the concatenation (less generic logic in
            # most units). Measured (own cells) where the floor is not clamped: ftz fp16 add
            # 884 -> 812 GE (below the default's 843), ftz e4m3 fma 861 -> 825, 9 of 12 ftz
            # units smaller (their sum -1.4 %), e8m0 add larger (202 -> 225); where it is
            # clamped it maps larger (e4m3 mul 306 -> 313, fp16 add 843 -> 966), so the clamped
            # paths keep the sum, but for early_ovf: mapped for HardFloat's delay fp16 mul
            # 1639 -> 1559 GE, bf16 974 -> 957; fp8e4m3 equal.
            m.d.comb += code.eq(Cat(frac, exp_field).as_signed() + inc)

        # ---- 4. Classify: tininess (section 5), overflow (section 4) -------------------------
        tiny = Const(0, 1)
        if can_tiny:
            tiny = Signal(name="tiny")
            if clamp and self.before:
                m.d.comb += tiny.eq(~hidden)
            elif clamp:
                # Tiny unless rounding to M+1 bits, exponent unbounded, reaches 2^emin: only a
                # value at 2^(emin-1) with M+1 ones followed by a rounding increment does.
                kept_u = win[G - 1:L - 1]
                rnd_u = win[G - 2]
                below_u = st | (win[:G - 2] != 0) if G > 2 else st
                reaches = (kept_u == (1 << (M + 1)) - 1) & \
                    mode.increment(sign, Const(int(M > 0), 1), rnd_u, below_u)
                m.d.comb += tiny.eq(~hidden & ~reaches)
            elif self.before:
                m.d.comb += tiny.eq(exp_field < emin + bias)     # E < emin
            else:
                m.d.comb += tiny.eq(code < fmt.min_normal_code)
        ovf = Const(0, 1)
        if can_ovf:
            ovf = Signal(name="ovf")
            if early_ovf:
                # code > max read before the increment, which only decides at the largest finite
                # code: the NaN or infinity that gates every output bit is off the increment's
                # carry chain. Measured (own cells, mul, rne): fp8e4m3 288 GE / 1338 ps -> 280 /
                # 1132; mapped for HardFloat's delay fp16 1711 -> 1639 GE, bf16 983 -> 974. The
                # other paths keep the compare after it (there this maps larger: fp16 add 843 ->
                # 971 GE, e4m3 fma 957 -> 1164).
                max_code, code0 = fmt.max_finite_code, (exp_field << M) + frac
                m.d.comb += ovf.eq((code0 > max_code) | ((code0 == max_code) & inc))
            else:
                m.d.comb += ovf.eq(code > fmt.max_finite_code)

        # ---- 5. The result's code, its sign and the flags (sections 6, 7) -------------------
        Encoder(self.fmt, self.options, self.y, self.flags).encode(m, mode, p, code, inexact, tiny,
                                                                   ovf)
        return m

    def _overflow_leaves_finite(self) -> bool:
        """An overflow gives infinity or NaN (not the largest finite code) in some mode."""
        opts = self.options
        return opts.saturation_for(self.fmt) is None and not opts.saturate and \
            self.fmt.specials is not Specials.FINITE

class Encoder:
    """Step 5 for one result format: ``y`` and ``flags`` (signals the caller owns) from the
    rounded code, the classification and the special-case bits; the Rounder's, and each
    member's in the multi-format rounder."""

    def __init__(self, fmt: FloatFormat, options: UnitOptions, y, flags):
        self.fmt, self.options, self.y, self.flags = fmt, options, y, flags

    def encode(self, m, mode, p, code, inexact, tiny, ovf):
        fmt, opts = self.fmt, self.options
        mag_w = fmt.exp_bits + fmt.man_bits
        mag = Signal(mag_w, name="mag")
        neg = Signal(name="neg")
        nan_out = Signal(name="nan_out")
        flags = tuple(Signal(name=n) for n in ("nv", "of", "uf", "nx"))
        sat = opts.saturation_for(fmt)
        if sat is None:
            self._by_convention(m, mode, p, code, inexact, tiny, ovf, mag, neg, nan_out, flags)
        else:
            self._saturate(m, mode, p, code, inexact, tiny, ovf, mag, neg, nan_out, flags, sat)
        nv, of, uf, nx = flags
        nan_code = fmt.nan_code if fmt.has_nan else 0
        y_mag = Mux(nan_out, nan_code & fmt.magnitude_mask, mag)
        if fmt.signed:
            negative = neg & ~nan_out
            if not fmt.has_neg_zero:
                negative = negative & (mag != 0)      # fnuz, ext: no negative zero
            y_sign = Mux(nan_out, nan_code >> (fmt.width - 1), negative)
            m.d.comb += self.y.eq(Cat(y_mag, y_sign))
        else:
            m.d.comb += self.y.eq(y_mag)
        m.d.comb += self.flags.eq(Cat(nx, uf, of, p.get("divzero", Const(0, 1)), nv))

    def _saturate(self, m, mode, p, code, inexact, tiny, ovf, mag, neg, nan_out, flags, sat):
        """P3109 4.7.5 Saturate for any format ("extended": has infinities; Mlo = -max signed,
        0 unsigned); the same as golden/rounding.py's ``_saturate``."""
        fmt = self.fmt
        nv, of, uf, nx = flags
        sign, max_code, ext = p["sign"], fmt.max_finite_code, fmt.has_inf
        stays_inf = ext and sat is not Saturation.FINITE
        with m.If(p["nan"]):
            m.d.comb += [nan_out.eq(1), nv.eq(p["invalid"] if fmt.has_nan else 1)]
        with m.Elif(p["inf"]):
            if fmt.unsigned:
                with m.If(sign):                        # -inf below Mlo = 0
                    if sat is Saturation.NONE:
                        m.d.comb += [nan_out.eq(1), nv.eq(1)]
                    else:
                        m.d.comb += nx.eq(1)
                with m.Else():
                    if stays_inf:
                        m.d.comb += mag.eq(fmt.inf_code)
                    else:
                        m.d.comb += [of.eq(1), nx.eq(1), mag.eq(max_code)]
            elif stays_inf:
                m.d.comb += [mag.eq(fmt.inf_code), neg.eq(sign)]
            else:
                m.d.comb += [of.eq(1), nx.eq(1), mag.eq(max_code), neg.eq(sign)]
        with m.Elif(p["zero"]):
            m.d.comb += neg.eq(p["zero_sign"])
        if not fmt.has_subnormals:
            with m.Elif(tiny):
                m.d.comb += [uf.eq(1), nx.eq(1), neg.eq(sign)]
        if fmt.unsigned:
            with m.Elif(sign & (code != 0)):           # a finite value below Mlo = 0
                if sat is Saturation.NONE:
                    to_zero = mode.toward_zero_or_up()
                    m.d.comb += [nx.eq(to_zero), nan_out.eq(~to_zero), nv.eq(~to_zero)]
                else:
                    m.d.comb += nx.eq(1)
        with m.Elif(ovf):
            m.d.comb += [of.eq(1), nx.eq(1), neg.eq(sign), mag.eq(max_code)]
            if sat is Saturation.NONE and ext:
                with m.If(~mode.keeps_finite(sign, fmt.unsigned)):
                    m.d.comb += mag.eq(fmt.inf_code)
        with m.Else():
            mag_w = fmt.exp_bits + fmt.man_bits
            m.d.comb += [mag.eq(code[:mag_w]), neg.eq(sign), nx.eq(inexact),
                         uf.eq(tiny & inexact)]

    def _by_convention(self, m, mode, p, code, inexact, tiny, ovf, mag, neg, nan_out, flags):
        """Section 4 when no P3109 saturation mode is asked for: IEEE 754 7.4, the OCP 8-bit
        tables (and ONNX's for fnuz)."""
        fmt, opts = self.fmt, self.options
        mag_w = fmt.exp_bits + fmt.man_bits
        sign = p["sign"]
        nv, of, uf, nx = flags
        max_code = fmt.max_finite_code
        # Which overflows go to infinity (or NaN in formats without one) rather than max.
        if opts.saturate or fmt.specials is Specials.FINITE:
            to_big = Const(0, 1)
        else:
            to_big = mode.overflows_to_infinity(sign)

        with m.If(p["nan"]):
            m.d.comb += [nan_out.eq(1), nv.eq(p["invalid"] if fmt.has_nan else 1)]
        if fmt.specials is Specials.FNU:
            # Unsigned and no zero: negative values and zero have no encoding.
            with m.Elif(sign | p["zero"]):
                m.d.comb += [nan_out.eq(1), nv.eq(1)]
        with m.Elif(p["inf"]):
            if fmt.has_inf and not opts.saturate:
                m.d.comb += [mag.eq(fmt.inf_code), neg.eq(sign)]
            else:
                # An exact infinity in a format without one, or under saturation, is an overflow
                # (section 4; OCP: saturating E5M2 gives +-57344, saturating fnuz NaN).
                to_nan = fmt.has_nan and not fmt.has_inf and \
                    (not opts.saturate or fmt.specials is Specials.FNUZ)
                m.d.comb += [of.eq(1), nx.eq(1), mag.eq(max_code), neg.eq(sign)]
                if to_nan:
                    m.d.comb += nan_out.eq(1)
        with m.Elif(p["zero"]):
            m.d.comb += neg.eq(p["zero_sign"])
        with m.Elif(ovf):
            m.d.comb += [of.eq(1), nx.eq(1), neg.eq(sign)]
            with m.If(to_big):
                if fmt.has_inf:
                    m.d.comb += mag.eq(fmt.inf_code)
                else:
                    m.d.comb += [mag.eq(max_code), nan_out.eq(1)]
            with m.Else():
                m.d.comb += mag.eq(max_code)
        if not fmt.has_subnormals:
            with m.Elif(tiny):
                # Flushed (or E8M0's smallest value 2^-127): underflow and inexact.
                m.d.comb += [uf.eq(1), nx.eq(1), neg.eq(sign)]
        with m.Else():
            m.d.comb += [mag.eq(code[:mag_w]), neg.eq(sign), nx.eq(inexact),
                         uf.eq(tiny & inexact)]
