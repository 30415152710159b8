"""Step 1 of every unit: split one operand code into sign, exponent, significand and class.

Same contract as golden/decode.py, the same steps. For finite codes the value is
``(-1)^sign * sig * 2^(exp + off)`` where ``exp`` is a small *unsigned* signal (the exponent
field, with subnormals read at field 1) and ``off = -bias - M`` is a Python constant: units add
exponents as raw fields and fold every bias into one constant, so no per-operand bias adder is
built.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Elaboratable, Module, Signal

from ..formats import FloatFormat, Specials
from .common import lzc, signed_for

__all__ = ["Decode"]


class Decode(Elaboratable):
    """Decoder of one operand in ``fmt`` (which already says whether subnormals are flushed).

    Outputs (signals): ``sign``, ``exp`` (unsigned, ``fmt.exp_bits`` wide), ``sig`` (``P`` =
    M+1 bits, hidden bit included, 0 for every zero unless ``sig_cleared`` says otherwise),
    ``is_zero``, ``is_inf``, ``is_nan``, ``is_snan``. Static facts for the units: ``off``
    (weight of sig's LSB is exp + off), ``exp_range`` (values of ``exp`` for finite nonzero
    codes), ``lz_max`` (leading zeros a nonzero ``sig`` can have: M with subnormals, else 0).

    With ``normalize`` (for units that treat zeros by ``is_zero`` alone, like mul) every sig
    has its hidden bit set: a subnormal's significand is shifted up to it and its exponent
    lowered to match (``exp`` is then signed, down to 1 - M; ``lz_max`` 0), and a zero's
    significand and exponent are left undefined. The multiplier then sees a constant top bit,
    and the M-bit leading-zero count per operand is cheaper than counting the leading zeros of
    the product.

    With ``clear_flushed=False`` (for units that gate zeros in a select they have anyway, like
    the adder) a flushed subnormal keeps its fraction in ``sig``: ``is_zero`` alone says zero.
    """

    def __init__(self, fmt: FloatFormat, *, normalize: bool = False, clear_flushed: bool = True):
        if not isinstance(fmt, FloatFormat):
            raise TypeError(f"fmt must be a FloatFormat, not {fmt!r}")
        self.fmt = fmt
        M = fmt.man_bits
        self.normalize = normalize and M > 0 and fmt.specials is not Specials.FNU
        self.code = Signal(fmt.width, name="code")
        self.sign = Signal(name="sign")
        self.sig = Signal(M + 1, name="sig")
        self.is_zero = Signal(name="is_zero")
        self.is_inf = Signal(name="is_inf")
        self.is_nan = Signal(name="is_nan")
        self.is_snan = Signal(name="is_snan")
        self.width = M + 1
        if fmt.specials is Specials.FNU:
            self.off = -fmt.bias
            self.exp_range = (0, fmt.exp_all_ones - 1)
        else:
            self.off = -fmt.bias - M
            self.exp_range = (1, fmt.max_finite_code >> M)
        self.lz_max = M if fmt.has_subnormals else 0
        # Whether sig is 0 for every zero (Operand.sig_cleared): not for a normalized zero, nor
        # for a flushed subnormal when the unit gates zeros itself (``clear_flushed=False``).
        self.clear_flushed = clear_flushed
        self.sig_cleared = not self.normalize and (fmt.has_subnormals or clear_flushed or M == 0)
        if self.normalize and fmt.has_subnormals:
            self.exp_range = (1 - M, self.exp_range[1])
            self.lz_max = 0
            self.exp = Signal(signed_for(*self.exp_range), name="exp")
        else:
            self.exp = Signal(fmt.exp_bits, name="exp")

    def elaborate(self, platform):
        m = Module()
        fmt, M = self.fmt, self.fmt.man_bits
        code = self.code
        mag = code[:fmt.exp_bits + M]
        e = code[M:M + fmt.exp_bits]
        f = code[:M]
        sp = fmt.specials
        if fmt.signed:
            m.d.comb += self.sign.eq(code[-1])

        e_all = e == fmt.exp_all_ones
        if sp is Specials.IEEE:
            m.d.comb += [self.is_nan.eq(e_all & (f != 0)), self.is_inf.eq(e_all & (f == 0))]
        elif sp in (Specials.FN, Specials.FNU):
            m.d.comb += self.is_nan.eq(mag == fmt.magnitude_mask)
        elif sp is Specials.FNUZ:
            m.d.comb += self.is_nan.eq(code == fmt.sign_mask)
        elif sp is Specials.EXT:
            # P3109 extended: one NaN code, the infinities at the top magnitude below it.
            m.d.comb += [self.is_nan.eq(code == fmt.nan_code),
                         self.is_inf.eq(mag == fmt.inf_code)]
        if fmt.has_snan:
            m.d.comb += self.is_snan.eq(self.is_nan & ~f[M - 1])

        if sp is Specials.FNU:
            # Exponent-only: every code but NaN is 2^(e - bias); there is no zero.
            m.d.comb += [self.exp.eq(e), self.sig.eq(1)]
        else:
            normal = e != 0
            if self.normalize and fmt.has_subnormals:
                # The count sees the hidden bit: 0 for normals, 1 + the fraction's leading
                # zeros for subnormals.
                zero = ~normal & (f == 0)
                lz, _ = lzc(m, Cat(f, normal), "sub_lzc")
                m.d.comb += [self.exp.eq((e | ~normal) - lz),
                             self.sig.eq(Cat((Cat(f, normal) << lz)[:M], Const(1, 1)))]
            elif self.normalize:
                zero = ~normal
                m.d.comb += [self.exp.eq(e), self.sig.eq(Cat(f, Const(1, 1)))]
            elif fmt.has_subnormals:
                # A subnormal has the exponent of field 1 and no hidden bit; a zero has sig 0.
                zero = ~normal & (f == 0)
                m.d.comb += [self.exp.eq(e | ~normal), self.sig.eq(f | (normal << M))]
            else:
                # Denormals are zero: the significand is cleared (M AND gates), unless the unit
                # gates zeros in a select it has anyway (the adder's; sig_cleared is then False).
                zero = ~normal
                fm = f & normal.replicate(M) if M and self.clear_flushed else f
                m.d.comb += [self.exp.eq(e), self.sig.eq(fm | (normal << M))]
            # In fnuz the sign-only code is the NaN, not a negative zero.
            m.d.comb += self.is_zero.eq(zero & ~self.is_nan if fmt.signed and
                                        sp in (Specials.FNUZ, Specials.EXT) else zero)
        return m
