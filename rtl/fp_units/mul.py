"""fp mul: a * b, rounded once. The exact core is one integer multiply and one exponent add."""

from __future__ import annotations

from amaranth.hdl import Module, Signal

from .common import Operand, Raw, signed_for, unsigned_for
from .unit import FpUnit

__all__ = ["FpMul", "product"]


# Significands of up to this many bits, both with a constant hidden one, multiply as
# fa*fb + (fa << Pb-1) + (fb << Pa-1) + 2^(Pa+Pb-2) rather than as {1, fa} * {1, fb}. Measured
# (mul, default options, own cells), the 10 catalog formats with P <= 5: 6 map 4-13 % smaller
# (fp8e4m3 327 -> 306 GE, fp6e3m2 212 -> 185, e4m3b11fnuz 345 -> 303), e5m2 and e3m4 about 1 %
# smaller, fp4 equal, e5m2fnuz larger (271 -> 324); the sum over the ten -4 %. From P = 8
# Yosys's own multiplier is smaller (bf16 987 vs 1048, fp16 1536 vs 1594).
EXPLICIT_HIDDEN_PRODUCT_MAX_P = 5


def significand_product(a: Operand, b: Operand, hidden_one: bool):
    """a.sig * b.sig; ``hidden_one``: both sigs' top bits are a constant 1 (normalized)."""
    if not hidden_one or max(a.width, b.width) > EXPLICIT_HIDDEN_PRODUCT_MAX_P or \
            min(a.width, b.width) < 2:
        return a.sig * b.sig
    fa, fb = a.sig[:a.width - 1], b.sig[:b.width - 1]
    return fa * fb + (fa << (b.width - 1)) + (fb << (a.width - 1)) + \
        (1 << (a.width + b.width - 2))


def product(m: Module, a: Operand, b: Operand, *, hidden_one: bool = False,
            stage=None) -> Operand:
    """The exact product of two decoded operands (also the first half of fma).
    ``hidden_one``: the operands are normalized (Decode ``normalize``), their top bit is 1.
    ``stage`` (FpUnit.stager, the "product" cut): a pipeline register between two partial
    products (a times the low and the high half of b) and their sum."""
    exp_range = (a.exp_range[0] + b.exp_range[0], a.exp_range[1] + b.exp_range[1])
    sig = Signal(a.width + b.width, name="prod_sig")
    exp = Signal(signed_for(*exp_range) if exp_range[0] < 0 else unsigned_for(exp_range[1]),
                 name="prod_exp")
    invalid_op = (a.inf & b.zero) | (a.zero & b.inf)        # 0 x inf
    nan = a.nan | b.nan | invalid_op
    flags = dict(sign=a.sign ^ b.sign, zero=a.zero | b.zero, inf=(a.inf | b.inf) & ~nan, nan=nan,
                 invalid=invalid_op | a.invalid | b.invalid)
    if stage is None:
        m.d.comb += [sig.eq(significand_product(a, b, hidden_one)), exp.eq(a.exp + b.exp)]
    else:
        half = (b.width + 1) // 2
        r = stage({"pp_lo": a.sig * b.sig[:half], "pp_hi": a.sig * b.sig[half:],
                   "exp": a.exp + b.exp, **flags})
        m.d.comb += [sig.eq(r["pp_lo"] + (r["pp_hi"] << half)), exp.eq(r["exp"])]
        flags = {k: r[k] for k in flags}
    # Leading zeros: 1.x * 1.y < 4 leaves at most one; subnormal factors add theirs.
    lz_max = min(a.lz_max + b.lz_max + 1, a.width + b.width - 1)
    return Operand(exp=exp, off=a.off + b.off, sig=sig, width=a.width + b.width,
                   exp_range=exp_range, lz_max=lz_max,
                   sig_cleared=a.sig_cleared and b.sig_cleared, **flags)


class FpMul(FpUnit):
    """``y = a * b`` with one rounding into the output format."""

    unit = "mul"

    # Operands with their hidden bit set: a constant top bit for the multiplier, zeros handled
    # by is_zero alone, and a product with at most one leading zero (the rounder's one shift).
    normalized_operands = True
    # The overflow test before the rounding increment: off the carry chain of the NaN or infinity
    # that gates every output bit (Rounder ``early_overflow``).
    early_overflow = True

    def core(self, m, ops):
        p = product(m, *ops, hidden_one=self.normalized_operands,
                    stage=self.stager(m, "product"))
        return Raw(sign=p.sign, exp=p.exp, off=p.off, sig=p.sig, width=p.width,
                   exp_range=p.exp_range, lz_max=p.lz_max, sticky=0, zero=p.zero, inf=p.inf,
                   nan=p.nan, invalid=p.invalid)
