"""mxq: the OCP MX block quantizer. Same contract as golden/mx.py ``mxq_unit``, the same steps.

    x (k float32 / bfloat16 codes) -> amax (an integer max of the magnitude bits)
        -> shared exponent s (the scale rule) -> E8M0 scale
        -> element i: the decoded x_i with its exponent lowered by s -> the one Rounder
           (saturating) -> element code (MXINT8: sign-magnitude -> two's complement)

Dividing by X = 2^s only subtracts s from each raw exponent, so every element is rounded once,
by the same :class:`~rtl.fp_units.rounder.Rounder` the scalar units use. The ``even`` rule rounds
amax to the element's precision (ties away) with that Rounder too.

Ports (element i of a packed bus at bits [i*w +: w]):

    x       in   k * in_width     the block, element i at x[i*in_width +: in_width]
    rbits   in   k * sr_bits      stochastic rounding only: element i's random bits
    scale   out  8                E8M0 code of X = 2^s (0xFF: the block holds inf or NaN)
    y       out  k * elem_width   element codes, element i at y[i*elem_width +: elem_width]
    flags   out  5                {NV, DZ, OF, UF, NX} ORed over the block's element roundings

Pipeline cut points (rtl/mx.py ``MxQuantSpec.CUT_POINTS``): ``amax`` after the block's largest
magnitude (the decoded elements and random bits registered with it), ``scale`` after the shared
exponent and the scaled elements (the raw values), ``round`` inside each element rounder;
``stages`` alone fills scale, then round, then output registers. The value-scale recipes register
their outputs only.
"""

from __future__ import annotations

import functools
import operator

from amaranth.hdl import Cat, Const, Module, Mux, Signal, signed

from ..blockscale import Arithmetic
from ..formats import FloatFormat, Specials
from ..elements import E8M0_BIAS, E8M0_NAN, SCALE_MAX, SCALE_MIN, ElementFormat
from ..options import FLAGS_WIDTH, Rounding, Saturation, UnitOptions
from .binary32 import F32, Binary32
from .common import Raw, lzc
from .common import max_tree as _max_tree
from .decode import Decode
from .rounder import Rounder
from .unit import Unit
from .value_scale import block_scale, four_over_six, is_nan

__all__ = ["MxQuantizer", "shared_exponent"]

S_SHAPE = signed(11)     # unclamped shared exponents: floor(log2 amax) in [-149, 128], - emax


def shared_exponent(m: Module, amax, in_fmt: FloatFormat, elem: ElementFormat, rule: str):
    """Unclamped shared exponent s of a block whose largest magnitude code is ``amax`` (> 0 and
    finite where it matters; the caller overrides the other blocks). Same contract as golden/mx.py
    ``shared_exponent``."""
    M, bias = in_fmt.man_bits, in_fmt.bias
    e_field = amax[M:]
    frac = amax[:M]
    subnormal = Signal(name="amax_subnormal")
    m.d.comb += subnormal.eq(e_field == 0)
    s = Signal(S_SHAPE, name=f"s_{rule}")
    if rule == "vllm":
        # vLLM's 1.75 threshold as its own bit trick: amax + 0.25 * 2^M carries into the
        # exponent field exactly when the significand is >= 1.75 (a subnormal amax reaches
        # 2^-126 from 1.5 * 2^-127); the field is then floor(log2) + bias, 0 clamps to -127.
        bumped = Signal(len(amax) + 1, name="amax_bumped")
        m.d.comb += bumped.eq(amax + (1 << (M - 2)))
        m.d.comb += s.eq(bumped[M:] - (bias + elem.emax))
        return s
    if rule == "even":
        # Round amax to 1 + M_elem bits, ties away, into binary32's exponent range: the one
        # Rounder does it; the rounded exponent field is floor(log2) of the result (+ bias),
        # and a field of 0 (still subnormal) reads as 2^-127, which clamps to s = -127 anyway.
        dec = Decode(in_fmt)
        m.submodules.dec_amax = dec
        m.d.comb += dec.code.eq(amax)
        target = FloatFormat(8, elem.grid.man_bits, 127, Specials.IEEE)
        raw = Raw(sign=Const(0, 1), exp=dec.exp, off=dec.off, sig=dec.sig, width=dec.width,
                  exp_range=dec.exp_range, lz_max=dec.lz_max, sticky=Const(0, 1),
                  zero=dec.is_zero, inf=dec.is_inf, nan=dec.is_nan, invalid=Const(0, 1))
        rnd = Rounder(target, UnitOptions(rounding=Rounding.RNA), raw)
        m.submodules.round_amax = rnd
        r_field = rnd.y[target.man_bits:target.man_bits + 8]
        m.d.comb += s.eq(r_field - (127 + elem.emax))
        return s
    # floor(log2 amax) + bias: the exponent field, or (subnormal) the leading one's position.
    lz, _ = lzc(m, frac, "amax_lzc")
    e_log = Signal(signed(10), name="amax_log2_biased")
    m.d.comb += e_log.eq(Mux(subnormal, (M - lz) - M, e_field))   # subnormal: lead + 1 - M
    base = e_log - (bias + elem.emax)
    if rule == "floor":
        m.d.comb += s.eq(base)
    elif rule == "ceil":
        pow2 = Mux(subnormal, (frac & (frac - 1)) == 0, frac == 0)
        m.d.comb += s.eq(base + ~pow2)
    elif rule == "rceil":
        # ceil(log2(amax / max_elem)) = base + 1 exactly when amax's significand, normalized to
        # [1, 2), exceeds max_elem's: compare the fractions below the leading one.
        g = elem.grid
        max_frac = (g.max_finite_code & ((1 << g.man_bits) - 1)) << (M - g.man_bits)
        norm = Signal(M, name="amax_frac_norm")
        m.d.comb += norm.eq(Mux(subnormal, (frac << (lz + 1))[:M], frac))
        m.d.comb += s.eq(base + (norm > max_frac))
    else:
        raise ValueError(f"unknown scale rule {rule!r}")
    return s


class MxQuantizer(Unit):
    """The MX block quantizer of an :class:`~rtl.mx.MxQuantSpec` (ports: module docstring)."""

    unit = "mxq"

    def elaborate(self, platform):
        if self._spec.value_scaled:
            return self._value_scaled()
        m = Module()
        spec = self._spec
        k, fin, elem = spec.block, spec.in_fmt, spec.elem
        w_in, w_el = fin.width, elem.width

        # 1. Decode every input; amax is an integer max over the magnitude bits (NaN > inf >
        #    every finite value in that order).
        decs = []
        for i in range(k):
            dec = Decode(fin)
            m.submodules[f"dec_x{i}"] = dec
            m.d.comb += dec.code.eq(self.x[i * w_in:(i + 1) * w_in])
            decs.append(dec)
        mags = [self.x[i * w_in:(i + 1) * w_in - 1] for i in range(k)]
        amax = Signal(w_in - 1, name="amax")
        m.d.comb += amax.eq(_max_tree(m, mags, "amax"))
        # Cut "amax": amax with the decoded elements (and their random bits).
        fields = {"sign": "sign", "exp": "exp", "sig": "sig", "zero": "is_zero", "snan": "is_snan"}
        a = {"amax": amax}
        for i, dec in enumerate(decs):
            a |= {f"{f}{i}": getattr(dec, attr) for f, attr in fields.items()}
            if spec.has_rbits:
                a[f"rbits{i}"] = self.rbits[i * spec.sr_bits:(i + 1) * spec.sr_bits]
        a = self.cut(m, "amax", a)
        amax = a["amax"]
        nonfinite = Signal(name="nonfinite")
        m.d.comb += nonfinite.eq(amax[fin.man_bits:] == fin.exp_all_ones)

        # 2. The shared exponent, clamped to E8M0's range; an all-zero block gets -127.
        s_raw = shared_exponent(m, amax, fin, elem, spec.scale_rule)
        s = Signal(signed(8), name="s")
        m.d.comb += s.eq(Mux(amax == 0, SCALE_MIN,
                             Mux(s_raw < SCALE_MIN, SCALE_MIN,
                                 Mux(s_raw > SCALE_MAX, SCALE_MAX, s_raw))))
        scale = Signal(8, name="scale_code")
        m.d.comb += scale.eq(Mux(nonfinite, E8M0_NAN, s + E8M0_BIAS))

        # 3. V_i / 2^s: the decoded value with its exponent lowered by s. A block holding inf or
        #    NaN gives NaN elements (the format's NaN, or 0 where it has none).
        lo, hi = decs[0].exp_range
        exp_range = (lo - SCALE_MAX, hi - SCALE_MIN)
        cut1 = {"scale": scale}
        for i in range(k):
            e = Signal(signed(11), name=f"exp{i}")
            m.d.comb += e.eq(a[f"exp{i}"] - s)
            cut1.update({f"sign{i}": a[f"sign{i}"], f"exp{i}": e, f"sig{i}": a[f"sig{i}"],
                         f"zero{i}": a[f"zero{i}"], f"invalid{i}": a[f"snan{i}"]})
            if spec.has_rbits:
                cut1[f"rbits{i}"] = a[f"rbits{i}"]
        cut1["nan"] = nonfinite
        p = self.cut(m, "scale", cut1)

        # 4. One Rounder per element; an integer element's sign-magnitude code becomes two's
        #    complement.
        codes, flags = [], []
        scale_q = self.cut(m, "round", {"scale": p["scale"]})["scale"]
        for i, dec in enumerate(decs):
            raw = Raw(sign=p[f"sign{i}"], exp=p[f"exp{i}"], off=dec.off, sig=p[f"sig{i}"],
                      width=dec.width, exp_range=exp_range, lz_max=dec.lz_max,
                      sticky=Const(0, 1), zero=p[f"zero{i}"], inf=Const(0, 1), nan=p["nan"],
                      invalid=p[f"invalid{i}"])
            rnd = Rounder(elem.grid, spec.options, raw, rbits=p.get(f"rbits{i}"),
                          register="round" in spec.cut_points)
            m.submodules[f"round_y{i}"] = rnd
            code = rnd.y
            if elem.twos_complement:
                w = elem.width
                tc = Signal(w, name=f"int{w}_{i}")
                mag = code[:w - 1]
                m.d.comb += tc.eq(Mux(code[w - 1], -mag, mag))
                code = tc
            codes.append(code)
            flags.append(rnd.flags)
        flag_or = Signal(FLAGS_WIDTH, name="flags_or")
        acc = flags[0]
        for f in flags[1:]:
            acc = acc | f
        m.d.comb += flag_or.eq(acc)

        assert len(Cat(*codes)) == k * w_el
        self.outputs(m, {"scale": scale_q, "y": Cat(*codes), "flags": flag_or})
        return m

    def _value_scaled(self):
        """A value-scale recipe. NVFP4: the E4M3 block scale and each element's float32 scaling
        in the recipe's order (value_scale.py), then the element cast; ``stages`` registers the
        outputs."""
        if self._spec.scaling.rule.arithmetic is Arithmetic.P3109:
            return self._p3109()
        m = Module()
        spec = self._spec
        k, s, opts = spec.block, spec.scaling, spec.options
        bamax = _max_tree(m, [self.x[i * 32:(i + 1) * 32 - 1] for i in range(k)], "amax")
        xs = [self.x[i * 32:(i + 1) * 32] for i in range(k)]
        rbits = [self._rbits(i) for i in range(k)]
        if s.rule.four_over_six:
            code, codes, flags = four_over_six(m, s, xs, Cat(bamax, Const(0, 1)),
                                               self.tensor_amax, opts, rbits)
            return self._outputs(m, code, codes, flags)
        code, scale_element = block_scale(m, s, Cat(bamax, Const(0, 1)), self.tensor_amax)
        f = Binary32(m, "el")
        codes, flags = [], []
        for i in range(k):
            y = scale_element(xs[i], i)
            q, fl = f.cast(y, spec.elem.grid, opts, f"q{i}", rbits[i])
            if s.rule.arithmetic is Arithmetic.MODELOPT:
                # ModelOpt's E2M1 cast: NaN gives code 7 (+6), -0 gives 0.
                q = f.named(f"fixed{i}", Mux(is_nan(y), 7, Mux(q == 8, 0, q)), len(q))
            codes.append(q)
            flags.append(fl)
        return self._outputs(m, code, codes, flags)

    def _rbits(self, i: int):
        """Element i's random bits (stochastic roundings), or None."""
        w = self._spec.sr_bits
        return self.rbits[i * w:(i + 1) * w] if self._spec.has_rbits else None

    def _outputs(self, m, scale, codes, flags):
        """scale, y and the elements' ORed flags through ``stages`` output registers."""
        flag_or = Signal(FLAGS_WIDTH, name="flags_or")
        m.d.comb += flag_or.eq(functools.reduce(operator.or_, flags))
        self.outputs(m, {"scale": scale, "y": Cat(*codes), "flags": flag_or})
        return m

    def _p3109(self):
        """P3109 ConvertToBlockMaxAbsFinite: the scale is the largest finite magnitude projected
        into the scale format (round up, SatFinite; NaN when the block has no finite value), a
        power of two for Binary8p1uf's one-bit significand, so x_i / scale only lowers the
        exponent before the element rounding (SatFinite); a zero scale gives zero elements."""
        m = Module()
        spec = self._spec
        k, sfmt, elem = spec.block, spec.scale_fmt, spec.elem.grid
        assert sfmt.precision == 1, "a one-bit scale significand divides by a shift"
        mags = []
        for i in range(k):
            mag = Signal(31, name=f"finite_mag{i}")
            xm = self.x[i * 32:(i + 1) * 32 - 1]
            m.d.comb += mag.eq(Mux(xm < 0x7F80_0000, xm, 0))
            mags.append(mag)
        none = Signal(name="no_finite")
        m.d.comb += none.eq(Cat(*[self.x[i * 32 + 23:(i + 1) * 32 - 1] != 0xFF
                                  for i in range(k)]) == 0)
        S = Mux(none, 0x7FC0_0000, Cat(_max_tree(m, mags, "amax"), Const(0, 1)))
        f = Binary32(m, "bs")
        up = UnitOptions(rounding=Rounding.RUP, saturation=Saturation.FINITE)
        code, _ = f.cast(S, sfmt, up, "code")
        sc = Decode(sfmt)
        m.submodules.dec_scale = sc
        m.d.comb += sc.code.eq(code)
        opts = UnitOptions(rounding=spec.rounding, saturation=Saturation.FINITE,
                           sr_bits=spec.sr_bits, tininess=spec.tininess)
        codes, flags = [], []
        for i in range(k):
            dec = Decode(F32)
            m.submodules[f"dec_x{i}"] = dec
            m.d.comb += dec.code.eq(self.x[i * 32:(i + 1) * 32])
            e = Signal(signed(11), name=f"exp{i}")
            m.d.comb += e.eq(dec.exp - sc.exp)
            (xlo, xhi), (slo, shi) = dec.exp_range, sc.exp_range
            kill = sc.is_zero & ~dec.is_nan           # a zero scale: zero elements
            raw = Raw(sign=dec.sign, exp=e, off=dec.off - sc.off, sig=dec.sig, width=dec.width,
                      exp_range=(xlo - shi, xhi - slo), lz_max=dec.lz_max, sticky=Const(0, 1),
                      zero=dec.is_zero | kill, inf=dec.is_inf & ~sc.is_zero,
                      nan=dec.is_nan | sc.is_nan, invalid=dec.is_snan & ~sc.is_zero)
            rnd = Rounder(elem, opts, raw, rbits=self._rbits(i))
            m.submodules[f"round_y{i}"] = rnd
            codes.append(rnd.y)
            flags.append(rnd.flags)
        return self._outputs(m, code, codes, flags)
