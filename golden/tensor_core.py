"""Tensor-core accumulation: the fused, truncating dot-add of NVIDIA's and AMD's matrix engines.

The bit-accurate model is microsoft/MMA-Sim (arXiv 2511.10909; PyPI ``mmasim`` 2.1.1,
``mmasim/arithmetic/fdpa.py``: ``truncated_fused_sum``, ``t_fdpa``, ``st_fdpa``). One step of
the instruction takes a group of ``group`` products and the accumulator c:

1. Each product keeps its significand s_a * s_b in [1, 4) (not renormalised) at exponent
   e_a + e_b, subnormal inputs at their format's minimum exponent; a zero product or c sits at
   exponent -133. With block scales in the step (Blackwell's kind::mxf8f6f4) the two E8M0
   scales' exponents add to the product's exponent: exact, before alignment.
2. E is the largest exponent of the terms, c included. Every term, c included, is truncated
   toward zero to F fraction bits below 2^E; the truncated terms are summed exactly.
3. The sum is renormalised and rounded toward zero into the result format: e8m13 (13 fraction
   bits, float32's exponent range; Hopper) or float32 (Blackwell), and becomes the next c. An
   overflow is an infinity, even rounding toward zero; a zero result is +0.

Presets (docs/codesign.md): ``hopper_fp8`` (wgmma FP8, F = 13, 32 products per step, e8m13),
``ada_fp8`` (mma FP8: the same step on 16 products, two per instruction) and
``blackwell_mxf8f6f4`` (tcgen05.mma kind::mxf8f6f4, F = 25, 32 products per step with their
block scales, float32). Two presets have two levels (``grouped_fused_matmul``,
``two_stage_matmul``): ``blackwell_mxf4nvf4`` (kind::mxf4nvf4, MMA-Sim's ``gst_fdpa``: groups
of 16 E2M1 products summed exactly at their block scales' exponents, F = 35) and ``cdna3_fp8``
(AMD CDNA3 MFMA FP8, ``gtr_fdpa``: even and odd halves, floors, F2 = 31, round to nearest
even). Special values follow float arithmetic: a NaN operand or 0 x inf gives
NaN, inf - inf NaN, an infinite product an infinity (NaN is float32's 0x7FC00000 here; MMA-Sim
writes 0x7FFFFFFF).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from fpforge.rtl.formats import CATALOG, FloatFormat
from fpforge.rtl.format_names import resolve
from fpforge.rtl.accum import GROUP_ZERO_EXP, Fixed, Grouped, TwoStage
from fpforge.rtl.dot import MxDotSpec
from fpforge.rtl.elements import E8M0
from fpforge.rtl.options import Rounding, UnitOptions

from ._jax import jax, jnp, shr
from .rounding import Mode, raw_from_float64, round_raw

__all__ = ["FusedAccumulator", "DESCRIPTIONS", "FUSED_PRESETS", "fused_matmul",
           "grouped_fused_matmul", "grouped_prescaled_matmul", "grouped_fast_path",
           "two_stage_matmul", "two_stage_dtype",
           "group_sum_dtype", "chained_steps", "exponents",
           "float32_exactly", "nearest_even_float32", "step_dtype"]

F32 = CATALOG["float32"]
E_ZERO = -133


@dataclass(frozen=True)
class FusedAccumulator:
    """A tensor core's step: ``group`` products and c, summed as ``accum`` says (``Fixed``:
    truncated to F bits below the largest exponent; ``Grouped``, ``TwoStage``), rounded
    (``rounding``) into ``result`` (float32's exponent range); ``scales_in_group``: block
    scales join the products' exponents (else, per-channel scales multiply the float32 result
    after the last step, in float32)."""

    accum: Fixed
    group: int
    result: FloatFormat
    scales_in_group: bool
    source: str
    e_zero: int = E_ZERO          # the exponent a zero term (and c = 0) takes
    elements: tuple | None = None  # the element formats the instruction takes (None: any float)
    rounding: Rounding = Rounding.RTZ   # into ``result`` (CDNA3: to nearest even)
    promote_every = None          # never: c is the whole running sum

    def dot_spec(self, elem_a: str, elem_b: str | None = None,
                 scale_fmt: FloatFormat = E8M0) -> MxDotSpec:
        """The RTL dot unit of one step: ``group`` lanes, the fixed accumulator of F fraction
        bits with the float32 accumulator input c, rounded toward zero into the result format
        (block scales on its scale ports when they join the step: ``scale_fmt``, and one pair
        per group of lanes for the grouped step); CDNA3's two stages round to nearest even."""
        return MxDotSpec(elem_a, elem_b, n=self.group, scaled=self.scales_in_group,
                         accum=self.accum, out_fmt=self.result, rounding=self.rounding,
                         c_fmt=F32, scale_fmt=scale_fmt if self.scales_in_group else E8M0)

    def describe(self) -> str:
        return (f"fused dot-add of {self.group} products + c{DESCRIPTIONS[type(self.accum)](self)}"
                f" ({self.source})")


def _describe_fixed(step: FusedAccumulator) -> str:
    where = "in each step" if step.scales_in_group else "after the sum"
    return (f", truncated to {step.accum.frac_bits} fraction bits below the largest exponent, "
            f"rounded toward zero into {step.result.name}; scales {where}")


def _describe_grouped(step: FusedAccumulator) -> str:
    return (f": exact sums of {step.accum.group} at their block scales' exponents, truncated to "
            f"{step.accum.frac_bits} fraction bits below the largest, rounded toward zero into "
            f"{step.result.name}")


def _describe_two_stage(step: FusedAccumulator) -> str:
    return (f": the even and odd products each truncated to {step.accum.frac_bits} bits below "
            f"their largest and summed, floored together, added to c in "
            f"{step.accum.frac_bits2} bits (floored), rounded to nearest even into "
            f"{step.result.name}")


# How a tensor core's step sums, in words (what follows "products + c"), keyed by its
# accumulation class (rtl/accum.py); golden/gemm.py's FUSED_STEPS runs it.
DESCRIPTIONS = {Fixed: _describe_fixed, Grouped: _describe_grouped,
                TwoStage: _describe_two_stage}


FUSED_PRESETS = {
    "hopper_fp8": FusedAccumulator(Fixed(13), 32, resolve("e8m13"), False,
                                   "MMA-Sim: Hopper wgmma FP8, F = 13, e8m13"),
    # Ada's mma m16n8k32 FP8 is two chained steps of 16 products (MMA-Sim's split-k).
    "ada_fp8": FusedAccumulator(Fixed(13), 16, resolve("e8m13"), False,
                                "MMA-Sim: Ada mma FP8, two steps of 16, F = 13, e8m13"),
    "blackwell_mxf8f6f4": FusedAccumulator(Fixed(25), 32, F32, True,
                                           "MMA-Sim: Blackwell tcgen05 kind::mxf8f6f4, F = 25"),
    # k = 64 per instruction; FP4 elements with E8M0 scales per 32 (MXFP4) or E4M3 per 16
    # (NVFP4)
    # kind::mxf4nvf4: the step's products are summed exactly in groups of 16, and a group's
    # term sits at its two scales' exponent alone (MMA-Sim's gst_fdpa)
    "blackwell_mxf4nvf4": FusedAccumulator(Grouped(35, 16), 64, F32, True,
                                           "MMA-Sim: Blackwell tcgen05 kind::mxf4nvf4, groups of "
                                           "16, F = 35", e_zero=GROUP_ZERO_EXP,
                                           elements=("fp4e2m1",)),
    # MI300's v_mfma_f32_*_fp8/bf8: 16 products per step (MMA-Sim's L_max), FNUZ elements;
    # MMA-Sim's gtr_fdpa: the even and odd products' sums are combined and added to c in a
    # second stage of F2 bits, floored, then rounded to nearest even
    "cdna3_fp8": FusedAccumulator(TwoStage(24, 31), 16, F32, False,
                                  "MMA-Sim: AMD CDNA3 MFMA FP8/BF8, halves F = 24, F2 = 31",
                                  elements=("fp8e4m3fnuz", "fp8e5m2fnuz"),
                                  rounding=Rounding.RNE),
}


def chained_steps(acc: FusedAccumulator, ea, sa, eb, sb, step) -> np.ndarray:
    """A tensor core's GEMM as its chain of steps on a dot unit, outside the emulation: (M, K)
    and (N, K) element codes with their (M, K/block) and (N, K/block) scales (block = the
    step's group, or for the grouped step a multiple of its ``accum.group``); ``step`` runs
    ``acc.dot_spec``'s unit (the golden model or a simulator) on input arrays and returns its y
    codes. Each (row of a, row of b) pair is one vector, i-major; each step's y is the next c.
    Per-channel scales then multiply the float32 result, rounded to nearest even (numpy's
    float64 -> float32 conversion is IEEE's, subnormals included). Returns the M * N float32
    bit patterns."""
    ea, eb, sa, sb = (np.asarray(x) for x in (ea, eb, sa, sb))
    m, n, k = ea.shape[0], eb.shape[0], acc.group
    if acc.accum.group:           # one scale per group of lanes: (rows, K / group)
        per = ea.shape[1] // sa.shape[1] // acc.accum.group
        sa, sb = np.repeat(sa, per, axis=1), np.repeat(sb, per, axis=1)
    groups = k // (acc.accum.group or k)

    def pairs(x, y):
        return np.repeat(x, n, axis=0), np.tile(y, (m,) + (1,) * (y.ndim - 1))
    c = np.zeros(m * n, np.uint32)
    for j in range(ea.shape[1] // k):
        a, b = pairs(ea[:, j * k:(j + 1) * k], eb[:, j * k:(j + 1) * k])
        inputs = {"a": a, "b": b, "c": c}
        if acc.scales_in_group:
            cols = slice(j * groups, (j + 1) * groups) if acc.accum.group else j
            inputs["scale_a"], inputs["scale_b"] = pairs(sa[:, cols], sb[:, cols])
        c = np.asarray(step(inputs)).astype(np.uint32) << (F32.man_bits - acc.result.man_bits)
    if acc.scales_in_group:
        return c
    s_a, s_b = pairs(sa[:, 0], sb[:, 0])
    scale = np.ldexp(1.0, s_a.astype(np.int32) + s_b.astype(np.int32) - 2 * 127)
    return (c.view(np.float32).astype(np.float64) * scale).astype(np.float32).view(np.uint32)


def exponents(u, man_bits: int):
    """Exponent of each decoded element's leading significand bit, as MMA-Sim's
    frexp_and_normalize takes it: the unbiased exponent, the minimum one for subnormals
    (value = sig * 2^exp with ``man_bits`` fraction bits), E_ZERO for zeros."""
    return jnp.where(u.is_zero, E_ZERO, u.exp + man_bits)


def step_dtype(acc: FusedAccumulator, fmt_a: FloatFormat, fmt_b: FloatFormat):
    """The float dtype ``fused_matmul`` can take the element values in: float32 where the
    proof below holds (every FP8, FP6 and FP4 preset), else float64, where every product,
    block scale and truncated sum is exact.

    With float32 element values: each product has at most p_a + p_b <= 24 significant bits and
    lies in [2^(lsb_a + lsb_b), 2^(emax_a + emax_b + 2)), inside float32's normal range, so it is
    exact. Block scales in the step are not multiplied into it: they join the power of two,
    2^(F - E + s_a + s_b) (E counts them), so the term stays exact or falls below 2^-126 < 1,
    where truncation gives 0 (flushed or not). Each truncated term is an integer below
    2^(F + 2) (a product's significand is below 4 at an exponent <= E) and c's below
    2^(F + 1). Where (4 * group + 2) * 2^F <= 2^24, all of them, in any order, sum exactly in
    float32 (Hopper's and Ada's F = 13); else (Blackwell's F = 25) each term, below 2^31, is
    truncated by the conversion to int32 and the terms summed in int32 modulo 2^32, beside
    their float32 sum, which is within 2^31 of the exact one and picks the multiple of 2^32
    (``_wide_sum``). Nonzero products sit at or above 2^(F - 127) and at most 2^(126 - F)
    below 2^E, so clamping the power of two to float32's normal ones changes no term."""
    F = acc.accum.frac_bits
    exact = (((4 * acc.group + 2) << F <= 1 << 24 or F + 2 <= 31)
             and fmt_a.grid.man_bits + fmt_b.grid.man_bits + 2 <= 24
             and fmt_a.lsb_min + fmt_b.lsb_min >= max(F - 127, -126)
             and fmt_a.emax + fmt_b.emax + 2 <= min(128, 126 + F))
    return jnp.float32 if exact else jnp.float64


# Columns of b per tile: a step's rows of b and their exponents, read for every row of a, stay
# in the cache (untiled, a 1024-column GEMM runs at half the speed).
TILE = 128


def _column_tiles(*b_args: int):
    """Runs a GEMM of steps (arguments: (blocks, M, k) values of a first; those at positions
    ``b_args`` b's (blocks, N, ...) arrays or None; ``c`` float32 (M, N) bit patterns, default
    +0) on tiles of TILE columns of b and c, each tile the same computation (vmap)."""
    def wrap(fn):
        @functools.wraps(fn)
        def tiled(*args, c=None):
            m, n = args[0].shape[1], args[b_args[0]].shape[1]
            c = jnp.zeros((m, n), jnp.uint32) if c is None else jnp.asarray(c, jnp.uint32)
            if n % TILE or n == TILE:
                return fn(*args, c=c)
            t = n // TILE

            def split(x):
                return None if x is None else x.reshape(x.shape[:1] + (t, TILE) + x.shape[2:])

            def one(bs, c):
                full = list(args)
                for i, x in zip(b_args, bs):
                    full[i] = x
                return fn(*full, c=c)
            out = jax.vmap(one, in_axes=(1, 1), out_axes=1)(
                tuple(split(args[i]) for i in b_args), c.reshape(m, t, TILE))
            return out.reshape(m, n)
        return tiled
    return wrap


@_column_tiles(3, 4, 5)
def fused_matmul(va, xa, sa, vb, xb, sb, acc: FusedAccumulator, c=None):
    """(blocks, M, k) and (blocks, N, k) element values (exact: float64, or float32 where
    ``step_dtype`` allows: float32 products, the truncated terms summed in float32 or in int32
    beside a float32 sum) with
    their exponents ``xa``/``xb`` (int32; E_ZERO for zeros) and E8M0 scale codes (blocks, M) /
    (blocks, N): the step-by-step fused accumulation over the blocks, from ``c`` (float32
    (M, N) bit patterns; default +0), float32 (M, N) out."""
    blocks, m, k = va.shape
    n = vb.shape[1]
    f32 = va.dtype == jnp.float32
    F = acc.accum.frac_bits
    wide = f32 and (4 * k + 2) << F > 1 << 24
    if acc.scales_in_group:
        ea = (sa.astype(jnp.int32) - 127)
        eb = (sb.astype(jnp.int32) - 127)
        if not f32:         # in float64 the scales multiply the values (exact)
            va = va * jnp.ldexp(jnp.ones_like(va), ea[..., None]) * \
                jnp.where(sa == 255, jnp.nan, 1.0)[..., None]
            vb = vb * jnp.ldexp(jnp.ones_like(vb), eb[..., None]) * \
                jnp.where(sb == 255, jnp.nan, 1.0)[..., None]
        xa = jnp.where(xa == E_ZERO, E_ZERO, xa + ea[..., None])
        xb = jnp.where(xb == E_ZERO, E_ZERO, xb + eb[..., None])
    scaled = f32 and acc.scales_in_group        # the scales join the terms' power of two
    if not scaled:
        ea, eb = jnp.zeros((blocks, m), jnp.int32), jnp.zeros((blocks, n), jnp.int32)
        sa, sb = jnp.zeros((blocks, m), jnp.uint8), jnp.zeros((blocks, n), jnp.uint8)

    def step(c, block):
        a, b, x, y, s_a, s_b, e_a, e_b = block      # (k, M), (k, N): values, exponents
        big = jnp.maximum(_largest_product_exponent(x, y).astype(jnp.int32),
                          float32_exactly(c)[1])            # E
        # every term in units of 2^(E - F), exact (step_dtype)
        shift = F - big
        if scaled:
            shift = jnp.clip(shift + e_a[:, None] + e_b[None, :], -126, 127)
        if wide:
            total = _wide_sum(a, b, shift, _truncated_c(c, F - big, jnp.float64))
        else:
            total = _truncated_product_sum(a, b, shift) + _truncated_c(c, F - big, a.dtype)
        if scaled:                                          # a NaN scale: NaN terms
            total = jnp.where((s_a == 255)[:, None] | (s_b == 255)[None, :], jnp.nan, total)
        return _round_toward_zero(total, big - F, acc.result), None

    def k_major(x):                 # (blocks, R, k) -> (blocks, k, R): each product a row
        return jnp.swapaxes(x, 1, 2)
    c0 = jnp.zeros((m, n), jnp.uint32) if c is None else jnp.asarray(c, jnp.uint32)
    c, _ = jax.lax.scan(step, c0, (k_major(va), k_major(vb), k_major(_below_any(xa)),
                                   k_major(_below_any(xb)), sa, sb, ea, eb))
    return jax.lax.bitcast_convert_type(c, jnp.float32)


def _wide_sum(a, b, shift, c_term):
    """The exact sum of the truncated terms (``_truncated_product_sum``) and ``c_term``
    (float64, exact, or NaN / an infinity) as float64, for float32 values whose terms fit int32
    but whose sum may not (``step_dtype``): the int32 sum modulo 2^32 and the float32 sum of
    the untruncated terms, within 2^31 of the exact sum, which picks the multiple of 2^32.
    NaN and infinities as the float32 sum has them."""
    scale = _pow2(shift, jnp.float32)
    wrapped, near = jnp.zeros(shift.shape, jnp.int32), jnp.zeros(shift.shape, jnp.float32)
    for i in range(a.shape[0]):
        p = a[i][:, None] * b[i][None, :] * scale
        wrapped, near = wrapped + p.astype(jnp.int32), near + p
    low = wrapped.astype(jnp.float64) + c_term
    near = near.astype(jnp.float64) + c_term
    exact = low + jnp.round((near - low) * 2.0 ** -32) * 2.0 ** 32
    return jnp.where(jnp.isfinite(near), exact, near)


def _below_any(x):
    """Exponents as int16 (twice int32's lanes in the (M, N) loop; with block scales they stay
    within +-2^10), E_ZERO moved down to -2^13: a sum with any exponent stays below E_ZERO (and
    above int16's -2^15), so a product with a zero never sets E above c's, E_ZERO or more."""
    return jnp.where(x == E_ZERO, -(1 << 13), x).astype(jnp.int16)


def _largest_product_exponent(x, y):
    """(k, M) and (k, N) exponents -> (M, N): the largest sum over k. One (M, N) loop over the
    k rows, not a (M, N, k) array: XLA vectorises it along N."""
    big = x[0][:, None] + y[0][None, :]
    for i in range(1, x.shape[0]):
        big = jnp.maximum(big, x[i][:, None] + y[i][None, :])
    return big


def _truncated_c(c, shift, dtype):
    """trunc(c * 2^shift) in ``dtype``, exactly, for float32 bit patterns c and int32 ``shift``
    <= F - (c's exponent) with F <= 21 for float32 (so below 2^(F + 1)); NaN and infinities as
    they are. On c's significand in integers: float32 arithmetic would flush a subnormal c, and
    staying in the dtype's width keeps XLA's fused loop at its vector width."""
    ints = jnp.int64 if dtype == jnp.float64 else jnp.int32
    up = 32 if ints == jnp.int64 else 0         # room for a left shift by F - 23 <= 32
    field = ((c >> 23) & 0xFF).astype(jnp.int32)
    sig = ((c & 0x7F_FFFF) | jnp.where(field == 0, 0, 0x80_0000)).astype(ints)
    # c = sig * 2^(max(field, 1) - 150); a shift outside the width (c = 0 only) gives 0
    magnitude = shr(sig << up, 150 + up - jnp.maximum(field, 1) - shift).astype(dtype)
    finite = jnp.where((c >> 31) == 1, -magnitude, magnitude)
    as_float = jax.lax.bitcast_convert_type(c, jnp.float32).astype(dtype)   # NaN, +-inf
    return jnp.where(field == 0xFF, as_float, finite)


def _truncated_product_sum(a, b, shift, ints=None):
    """(k, M) and (k, N) element values, (M, N) int32 ``shift``: the sum over k of each product
    times 2^shift, truncated toward zero, in the values' dtype (``step_dtype``: exact), or in
    the integer dtype ``ints``, each term truncated by the conversion. One (M, N) loop, as
    ``_largest_product_exponent``."""
    # a finite scale: the clamp acts only where every product is zero (step_dtype)
    scale = _pow2(jnp.minimum(shift, jnp.finfo(a.dtype).maxexp - 1), a.dtype)
    term = (lambda p: jnp.trunc(p)) if ints is None else (lambda p: p.astype(ints))
    total = term(a[0][:, None] * b[0][None, :] * scale)
    for i in range(1, a.shape[0]):
        total = total + term(a[i][:, None] * b[i][None, :] * scale)
    return total


@_column_tiles(2, 3)
def grouped_fused_matmul(va, fa, vb, fb, acc: FusedAccumulator, scale_emin: int, c=None):
    """kind::mxf4nvf4's steps (MMA-Sim's gst_fdpa): (blocks, M, k) and (blocks, N, k) element
    values (exact; float64, or float32 where ``group_sum_dtype`` allows: the group sums are
    then float32 matrix multiplies and the terms float32) with their blocks' scale values
    (blocks, M) / (blocks, N) (float64; NaN for a NaN scale; ``scale_emin`` the scale format's
    smallest normal exponent), ``acc.group`` products per step from ``c`` (float32 (M, N) bit
    patterns; default +0), float32 (M, N) out. Per step: each group of ``acc.accum.group``
    products is summed exactly (float32 does it exactly for E2M1); its term is that sum times
    the product of its two scales, at the exponent of the scales alone (each scale normalised
    to [1, 2) x 2^e, subnormals at 2^scale_emin), or at ``acc.e_zero`` when all its products or
    its scale are zero; c sits at its own exponent (e_zero when zero). E is the largest; every
    term is truncated to F fraction bits below 2^E, summed exactly, rounded toward zero."""
    blocks, m, k = va.shape
    n, g = vb.shape[1], acc.accum.group
    per_step = acc.group // k
    steps = blocks // per_step
    sig_a, exp_a = _normalized_scale(fa, scale_emin)
    sig_b, exp_b = _normalized_scale(fb, scale_emin)

    def by_step(x):                 # (blocks, R, ...) -> (steps, R, per_step * ...)
        x = x.reshape((steps, per_step) + x.shape[1:])
        return jnp.moveaxis(x, 1, 2).reshape((steps, x.shape[2], -1))

    # groups along the step: element values (steps, R, groups, g); scales (steps, R, groups)
    xa = by_step(va).reshape(steps, m, -1, g)
    xb = by_step(vb).reshape(steps, n, -1, g)
    rep = k // g                    # groups per scale block
    sa_sig, sa_exp = (jnp.repeat(by_step(x[..., None]), rep, axis=-1)
                      for x in (sig_a, exp_a))
    sb_sig, sb_exp = (jnp.repeat(by_step(x[..., None]), rep, axis=-1)
                      for x in (sig_b, exp_b))
    F = acc.accum.frac_bits
    hi = jax.lax.Precision.HIGHEST

    def step(c, x):
        a, b, a_nz, b_nz, a_sig, a_exp, b_sig, b_exp = x
        c64, e_c = float32_exactly(c)
        big = jnp.where(c64 == 0, acc.e_zero, e_c)
        terms = []
        for q in range(a.shape[1]):     # one (M, N) array per group, its sum one matmul
            p = jnp.dot(a[:, q], b[:, q].T, precision=hi)                # exact
            nonzero = (a_nz[q][:, None] & b_nz[q][None, :]) != 0     # a nonzero product
            s_scale = a_sig[q][:, None].astype(p.dtype) * b_sig[q][None, :].astype(p.dtype)
            e_scale = a_exp[q][:, None] + b_exp[q][None, :]
            terms.append((p * s_scale, e_scale))
            big = jnp.maximum(big, jnp.where(nonzero & (s_scale != 0), e_scale, acc.e_zero))
        scale = _pow2(F - big)
        if a.dtype == jnp.float32:      # each term's integer part in float32 (group_sum_dtype)
            total = sum(jnp.trunc(v * _pow2(jnp.clip(e + F - big, -126, 127), jnp.float32))
                        .astype(jnp.float64) for v, e in terms)
        else:
            total = sum(jnp.trunc(v * _pow2(e) * scale) for v, e in terms)
        total = total + jnp.trunc(c64 * scale)
        return _round_toward_zero(total, big - F, acc.result), None

    c0 = jnp.zeros((m, n), jnp.uint32) if c is None else jnp.asarray(c, jnp.uint32)
    def group_major(x):             # (steps, R, groups) -> (steps, groups, R): rows contiguous
        return jnp.swapaxes(x, 1, 2)
    c, _ = jax.lax.scan(step, c0, (xa, xb) + tuple(
        group_major(x) for x in (_nonzero_mask(xa), _nonzero_mask(xb), sa_sig, sa_exp, sb_sig,
                                 sb_exp)))
    return jax.lax.bitcast_convert_type(c, jnp.float32)


def grouped_prescaled_matmul(va, fa, vb, fb, acc: FusedAccumulator, fmt_a: FloatFormat,
                             fmt_b: FloatFormat, scale_fmt: FloatFormat, c=None):
    """``grouped_fused_matmul``'s steps where no truncation acts, arguments as its (element
    values in float32, of formats ``fmt_a``/``fmt_b``; ``scale_fmt`` the scales'): each step
    one float32 matrix multiply of the elements times their scales, plus c in float64,
    rounded toward zero. Returns (float32 (M, N), where the result is provably the steps'
    (bool (M, N))); ``grouped_fast_path`` says when to call it at all.

    Per step, lo and hi bound its scale exponents (the sums e_a + e_b, each scale s * 2^e,
    s in (0, 2) a multiple of 2^-ms): every product is a multiple of 2^(lo + low) below
    2^(hi + top - log2 k), the step's k products and every partial sum below 2^(hi + top).

    1. Each element times its scale is exact in float32 (a few bits, inside the normal range:
       checked per row), and so is the matrix multiply's sum, in any order, when hi - lo +
       top - low <= 24 and both ends lie in float32's normal range.
    2. No term is truncated when each group's term (a multiple of 2^(lo + low)) and c (of
       2^(e_c - 23), or zero) are multiples of 2^(E - F): E <= U = max(hi, e_c) (hi alone for
       c = 0) bounds the step's largest exponent, so U <= lo + low + F and U <= e_c - 23 + F
       suffice. Then the truncated sum is the exact sum S + c, and it is below 2^(E + top + 1)
       in units of 2^(E - F): exact in float64 (``grouped_fast_path``: F + top + 1 <= 53).
    3. Rounded toward zero as the steps round it: the same value, the same bits. A NaN scale,
       a subnormal, infinite or NaN c, or a failed bound marks the element; its later steps
       are then not trusted (each element's chain is its own)."""
    blocks, m, k = va.shape
    n = vb.shape[1]
    per_step = acc.group // k
    steps = blocks // per_step
    F, ms = acc.accum.frac_bits, scale_fmt.man_bits
    low, top = _grouped_bounds(acc, fmt_a, fmt_b, scale_fmt)

    def operand(v, s, fmt):
        s = jnp.asarray(s, jnp.float64)
        _, e = _normalized_scale(s, scale_fmt.emin)
        ok = ~jnp.isnan(s) & (e + fmt.lsb_min - ms >= -126) & (e + fmt.emax + 2 <= 128)
        x = (jnp.asarray(v, jnp.float64) * s[..., None]).astype(jnp.float32)
        x = x.reshape((steps, per_step) + x.shape[1:])
        x = jnp.moveaxis(x, 1, 2).reshape(steps, x.shape[2], per_step * k)   # (steps, R, step)
        e, ok = (t.reshape((steps, per_step) + t.shape[1:]) for t in (e, ok))
        return x, e.min(axis=1), e.max(axis=1), ok.all(axis=1)

    hi_prec = jax.lax.Precision.HIGHEST

    def step(carry, x):
        c, exact = carry
        a, a_lo, a_hi, a_ok, b, b_lo, b_hi, b_ok = x
        s = jnp.dot(a, b.T, precision=hi_prec)
        lo, hi = a_lo[:, None] + b_lo[None, :], a_hi[:, None] + b_hi[None, :]
        field = ((c >> 23) & 0xFF).astype(jnp.int32)
        zero = (c & 0x7FFF_FFFF) == 0
        u = jnp.where(zero, hi, jnp.maximum(hi, field - 127))
        ok = (a_ok[:, None] & b_ok[None, :] & (hi - lo <= 24 - top + low)
              & (lo + low >= -126) & (hi + top <= 128) & (u <= lo + low + F)
              & (zero | ((field > 0) & (field < 255) & (u <= field - 127 - 23 + F))))
        total = s.astype(jnp.float64) + \
            jax.lax.bitcast_convert_type(c, jnp.float32).astype(jnp.float64)
        return (_round_toward_zero(total, jnp.int32(0), acc.result), exact & ok), None

    c0 = jnp.zeros((m, n), jnp.uint32) if c is None else jnp.asarray(c, jnp.uint32)
    (c, exact), _ = jax.lax.scan(step, (c0, jnp.ones((m, n), bool)),
                                 operand(va, fa, fmt_a) + operand(vb, fb, fmt_b))
    return jax.lax.bitcast_convert_type(c, jnp.float32), exact


def _grouped_bounds(acc: FusedAccumulator, fmt_a: FloatFormat, fmt_b: FloatFormat,
                    scale_fmt: FloatFormat):
    """(low, top) of ``grouped_prescaled_matmul``: a step's products are multiples of
    2^(lo + low), its sums below 2^(hi + top) (elements below 2^(emax + 1), scales below 2)."""
    low = fmt_a.lsb_min + fmt_b.lsb_min - 2 * scale_fmt.man_bits
    top = fmt_a.emax + fmt_b.emax + 4 + (acc.group - 1).bit_length()
    return low, top


def grouped_fast_path(acc: FusedAccumulator, fmt_a: FloatFormat, fmt_b: FloatFormat,
                      scale_fmt: FloatFormat) -> bool:
    """Whether ``grouped_prescaled_matmul`` can hold a step's exact sum at all: in float32 with
    equal scale exponents, and S + c in float64 (F + top + 1 <= 53)."""
    low, top = _grouped_bounds(acc, fmt_a, fmt_b, scale_fmt)
    return top - low <= 24 and acc.accum.frac_bits + top + 1 <= 53


def _nonzero_mask(x):
    """(..., g) values -> (...) masks with bit i set where x[..., i] is nonzero: a group has a
    nonzero product where the masks of its a and b rows share a bit."""
    if x.shape[-1] > 64:
        raise ValueError(f"groups of at most 64 products, not {x.shape[-1]}")
    ints = jnp.uint32 if x.shape[-1] <= 32 else jnp.uint64
    bits = jnp.left_shift(jnp.ones((), ints), jnp.arange(x.shape[-1], dtype=ints))
    return jnp.sum(jnp.where(x != 0, bits, 0).astype(ints), axis=-1, dtype=ints)


def group_sum_dtype(acc: FusedAccumulator, fmt_a: FloatFormat, fmt_b: FloatFormat,
                    scale_fmt: FloatFormat):
    """The float dtype ``grouped_fused_matmul`` can take the element values in: float32 where
    (1) a group's products and every partial sum of them, in any order (a matrix multiply's),
    are multiples of 2^(lsb_a + lsb_b) within ``span`` bits of it inside float32's normal range,
    and (2) times the two scales' significands (``scale_fmt``'s precision each) they keep at
    most 24 significant bits, so each term times its power of two is exact in float32 or below
    2^-126 < 1 (truncated to 0 either way), and its integer part too (E2M1 with E4M3 scales:
    20 bits); else float64 (any element format of 8 bits or fewer). Nonzero terms sit at most
    F below 2^E, so clamping the power of two to float32's normal ones changes none."""
    span = (fmt_a.emax + 1 - fmt_a.lsb_min) + (fmt_b.emax + 1 - fmt_b.lsb_min) + \
        (acc.accum.group - 1).bit_length()
    exact = (span + 2 * scale_fmt.precision <= 24 and fmt_a.lsb_min + fmt_b.lsb_min >= -126
             and fmt_a.emax + fmt_b.emax + 2 + (acc.accum.group - 1).bit_length() <= 127
             and acc.accum.frac_bits <= 127)
    return jnp.float32 if exact else jnp.float64


def two_stage_dtype(acc: FusedAccumulator, fmt_a: FloatFormat, fmt_b: FloatFormat):
    """The float dtype ``two_stage_matmul`` can take the element values in: float32 where its
    first stage provably runs in float32 products and int32 sums (below), else float64 (the
    (M, N, k) products in float64).

    Each product has at most p_a + p_b <= 24 significant bits inside float32's normal range:
    exact. Times 2^(F - E_h), E_h its half's largest exponent, it lies below 2^(F + 2), exact
    or below 2^-126 < 1 (flushed or not, its truncation is 0); float32 -> int32 conversion
    truncates toward zero, so each term is exact, and a half's k/2 terms sum in int32 below
    (k/2) * 2^(F + 2) <= 2^30, the two halves' t below 2^31; the later stages' integers, below
    2^(F2 - F + 33), fit float64's 53 bits. No infinities: NaN elements make a NaN product
    whatever their partner, so a NaN in a row of a or b is the whole half's NaN (an infinity's
    result depends on the signs and zeros it meets). Nonzero products' exponents lie within
    F +- 126, so clamping 2^(F - E_h) to float32's normal powers changes only halves of
    zeros."""
    exact = ((acc.group // 2) << (acc.accum.frac_bits + 2) <= 1 << 30
             and acc.accum.frac_bits2 - acc.accum.frac_bits <= 20
             and not (fmt_a.grid.has_inf or fmt_b.grid.has_inf)
             and fmt_a.grid.man_bits + fmt_b.grid.man_bits + 2 <= 24
             and fmt_a.lsb_min + fmt_b.lsb_min >= max(-126, acc.accum.frac_bits - 127)
             and fmt_a.emax + fmt_b.emax + 2 <= min(128, acc.accum.frac_bits + 126))
    return jnp.float32 if exact else jnp.float64


@_column_tiles(3, 4, 5)
def two_stage_matmul(va, xa, sa, vb, xb, sb, acc: FusedAccumulator, c=None):
    """AMD CDNA3's FP8 steps (MMA-Sim's gtr_fdpa), arguments as ``fused_matmul``'s (no scales
    in the step; element values in float64, or float32 where ``two_stage_dtype`` allows: the
    first stage then runs per product in float32 and int32). Per step of ``acc.group``
    products and c:

    1. the even-indexed and the odd-indexed products are each truncated toward zero to F
       fraction bits below their own largest exponent and summed (zeros never set it);
    2. both sums are floored (toward minus infinity) to F bits below the larger of the two;
    3. with E the larger of that and c's exponent (c normalised, subnormals at -126), the
       products' sum is floored to F2 + 1 bits below 2^E and c to F bits (dropped below
       2^(E - F - 1)); their sum is floored to F2 fraction bits below its own leading bit
       (at least 2^-126's) and rounded to nearest even into float32."""
    m, n = va.shape[1], vb.shape[1]
    if va.dtype == jnp.float32:     # each product a row of (k, R) arrays, as fused_matmul's
        steps = _two_stage_step
        va, vb = jnp.swapaxes(va, 1, 2), jnp.swapaxes(vb, 1, 2)
        xa, xb = (jnp.swapaxes(_below_any(x), 1, 2) for x in (xa, xb))
    else:
        steps = _two_stage_step_f64

    def step(c, block):
        return steps(c, block, acc), None

    c0 = jnp.zeros((m, n), jnp.uint32) if c is None else jnp.asarray(c, jnp.uint32)
    c, _ = jax.lax.scan(step, c0, (va, vb, xa, xb))
    return jax.lax.bitcast_convert_type(c, jnp.float32)


NO_PRODUCT = -999       # a half's exponent when none of its products is nonzero


def _two_stage_step_f64(c, block, acc: FusedAccumulator):
    """One step on the (M, N, k) products in float64, where every value is exact."""
    a, b, x, y = block
    F, F2 = acc.accum.frac_bits, acc.accum.frac_bits2
    one = lambda e: jnp.ldexp(jnp.ones(e.shape, jnp.float64), e)

    def half(p, e):
        """(sum of the truncated products in units of 2^(E - F), E)."""
        big = jnp.max(e, axis=-1)
        return jnp.sum(jnp.trunc(p * one(F - big)[..., None]), axis=-1), big

    p = a[:, None, :] * b[None, :, :]                               # (M, N, k): exact
    zero = (x[:, None, :] == E_ZERO) | (y[None, :, :] == E_ZERO)
    e = jnp.where(zero, NO_PRODUCT, x[:, None, :] + y[None, :, :])
    s_even, e_even = half(p[..., ::2], e[..., ::2])
    s_odd, e_odd = half(p[..., 1::2], e[..., 1::2])
    e_dot = jnp.maximum(e_even, e_odd)
    t = jnp.floor(s_even * one(e_even - e_dot)) + jnp.floor(s_odd * one(e_odd - e_dot))
    c64, e_c = float32_exactly(c)
    e_c = jnp.where(c64 == 0, -126, e_c)
    big = jnp.maximum(e_dot, e_c)
    u = jnp.floor(t * one(e_dot - big + F2 + 1 - F))               # units of 2^(E - F2 - 1)
    v = jnp.where(e_c < big - F - 1, 0.0, jnp.floor(c64 * one(F - big)))   # 2^(E - F)
    total = jnp.ldexp(u + v * 2.0 ** (F2 + 1 - F), big - F2 - 1)
    lead = jnp.maximum(jnp.frexp(total)[1] - 1, -126)
    total = jnp.floor(total * one(F2 - lead)) * one(lead - F2)
    y_bits, _ = round_raw(raw_from_float64(total), F32, UnitOptions(), Mode(acc.rounding))
    return y_bits.astype(jnp.uint32)


def _two_stage_step(c, block, acc: FusedAccumulator):
    """One step as ``_two_stage_step_f64`` computes it, from float32 values
    (``two_stage_dtype``): the halves in one (M, N) loop each (``_two_stage_halves``), the
    rest on the same integers in units of powers of two: c's significand and the floors in
    int32 shifts, their sum exact in float64 (below 2^41)."""
    F, F2 = acc.accum.frac_bits, acc.accum.frac_bits2
    (s_even, e_even), (s_odd, e_odd), nan = _two_stage_halves(*block, F)
    e_dot = jnp.maximum(e_even, e_odd)
    # step 2: floor is the arithmetic shift; |s| < 2^31, so 31 places leave 0 or -1
    t = (s_even >> jnp.minimum(e_dot - e_even, 31)) + (s_odd >> jnp.minimum(e_dot - e_odd, 31))
    # step 3: c = sig * 2^(e_c - 23) from its bits (e_c = -126 for zeros and subnormals)
    field = ((c >> 23) & 0xFF).astype(jnp.int32)
    sig = ((c & 0x7F_FFFF) | jnp.where(field == 0, 0, 0x80_0000)).astype(jnp.int32)
    sig = jnp.where((c >> 31) == 1, -sig, sig)
    e_c = jnp.maximum(field, 1) - 127
    big = jnp.maximum(e_dot, e_c)
    # t (units 2^(e_dot - F)) floored to units 2^(E - F2 - 1): right in int32 (|t| < 2^30,
    # so 31 places leave 0 or -1, as for t = 0 where no product is), left in float64
    du = big - e_dot - (F2 + 1 - F)
    u = (t >> jnp.clip(du, 0, 31)).astype(jnp.float64) * _pow2(jnp.clip(-du, 0, 64))
    # c floored to units 2^(E - F), dropped below 2^(E - F - 1)
    sh = big - e_c + 23 - F
    v = jnp.where(sh < 0, sig << jnp.clip(-sh, 0, 31), sig >> jnp.clip(sh, 0, 31))
    v = jnp.where(big - e_c > F + 1, 0, v)
    total = u + v.astype(jnp.float64) * 2.0 ** (F2 + 1 - F)   # an integer, units 2^(E - F2 - 1)
    # floored to F2 bits below its leading bit on the float64's bits: a nonzero integer's
    # leading bit is the hidden one, so cut the significand's low 52 - F2 bits, and where a
    # negative total lost any, add one unit of the kept last place (a carry moves the exponent).
    # The floor's last place is at least 2^(-126 - F2); that changes nothing here: products lie
    # at or above 2^-126 (two_stage_dtype), so E = -126 means e_dot = E and total is a multiple
    # of 2^(F2 + 1 - F), and for E > -126 the units are 2^(-126 - F2) or more.
    bits = jax.lax.bitcast_convert_type(total, jnp.uint64)
    low = bits & ((1 << (52 - F2)) - 1)
    up = ((bits >> 63) == 1) & (low != 0)
    value = jax.lax.bitcast_convert_type((bits ^ low) + (up.astype(jnp.uint64) << (52 - F2)),
                                         jnp.float64) * _pow2(big - F2 - 1)
    special = jax.lax.bitcast_convert_type(c, jnp.float32).astype(jnp.float64)   # inf, NaN
    value = jnp.where(nan, jnp.nan, jnp.where(field == 0xFF, special, value))
    return nearest_even_float32(value) if acc.rounding is Rounding.RNE else \
        round_raw(raw_from_float64(value), F32, UnitOptions(), Mode(acc.rounding))[0].astype(
            jnp.uint32)


def nearest_even_float32(value):
    """float64 values rounded to nearest even into float32 bit patterns, as the shared rounder
    rounds them: XLA's conversion (IEEE's rounding, infinities beyond the range) where the
    result is normal; below 2^-126 (XLA flushes subnormal results) |value| + 1.5 * 2^-97 in
    float64, whose last place is 2^-149, rounds it, and its low 24 bits are the float32's
    (2^23: the smallest normal); NaN 0x7FC00000."""
    bits = jax.lax.bitcast_convert_type(value.astype(jnp.float32), jnp.uint32)
    tiny = (jax.lax.bitcast_convert_type(jnp.abs(value) + 1.5 * 2.0 ** -97, jnp.uint64)
            & 0xFF_FFFF).astype(jnp.uint32)
    tiny = jnp.where(value < 0, tiny | 0x8000_0000, tiny)
    bits = jnp.where(jnp.abs(value) < 2.0 ** -126, tiny, bits)
    return jnp.where(jnp.isnan(value), jnp.uint32(0x7FC0_0000), bits)


def _two_stage_halves(a, b, x, y, F: int):
    """Step 1 from float32 values (``two_stage_dtype``; (k, M) and (k, N) values and
    ``_below_any`` exponents): for the even and the odd products,
    (the sum of their truncated products in units of 2^(E_h - F), int32; E_h), each in one
    (M, N) loop over its products, float32 products truncated by the conversion to int32;
    and where a NaN element in the row of a or b makes the step NaN."""
    out = []
    for h in (0, 1):
        big = _largest_product_exponent(x[h::2], y[h::2]).astype(jnp.int32)
        out.append((_truncated_product_sum(a[h::2], b[h::2], jnp.clip(F - big, -126, 127),
                                           jnp.int32),
                    jnp.where(big < -(1 << 12), NO_PRODUCT, big)))
    nan = jnp.isnan(a).any(axis=0)[:, None] | jnp.isnan(b).any(axis=0)[None, :]
    return out[0], out[1], nan


def _normalized_scale(v, emin: int):
    """A scale value as MMA-Sim's frexp_and_normalize takes it: (s, e) with v = s * 2^e,
    1 <= s < 2, or a subnormal's s < 1 at e = emin (E4M3's -6; E8M0 has none); NaN stays in
    s."""
    _, ex = jnp.frexp(v)                          # v = mant * 2^ex, 0.5 <= |mant| < 1
    e = jnp.maximum(ex - 1, emin)
    return v * jnp.ldexp(jnp.ones(e.shape, jnp.float64), -e), e


def float32_exactly(bits):
    """float32 bit patterns as exact float64 values (XLA's own conversion would flush
    subnormals) and MMA-Sim's exponent of each (E_ZERO for zeros)."""
    field = ((bits >> 23) & 0xFF).astype(jnp.int32)
    mantissa = (bits & 0x7F_FFFF).astype(jnp.int32).astype(jnp.float64)   # int32: vectorised
    sign = jnp.where((bits >> 31) == 1, -1.0, 1.0)
    finite = jnp.where(field == 0, mantissa, mantissa + 2.0 ** 23) * \
        _pow2(jnp.where(field == 0, -149, field - 150)) * sign
    special = jnp.where((bits & 0x7F_FFFF) == 0, sign * jnp.inf, jnp.nan)
    value = jnp.where(field == 0xFF, special, finite)
    zero = (bits & 0x7FFF_FFFF) == 0
    return value, jnp.where(zero, E_ZERO, jnp.where(field == 0, -126, field - 127))


def _pow2(e, dtype=jnp.float64):
    """2^e, e an integer array inside ``dtype``'s normal exponents, built from the exponent
    field alone (``jnp.ldexp`` handles every edge case, at many times the cost)."""
    info = jnp.finfo(dtype)
    unsigned = jnp.uint64 if info.bits == 64 else jnp.uint32
    field = (e + (info.maxexp - 1)).astype(unsigned) << info.nmant
    return jax.lax.bitcast_convert_type(field, dtype)


def _round_toward_zero(total, exp_offset, fmt: FloatFormat):
    """total * 2^exp_offset (``total`` an integer-valued float32 or float64, exact; int32
    offsets) rounded toward zero into ``fmt`` (float32's exponent range, at most its fraction
    bits), as float32 bit patterns; beyond it an infinity; zero is +0; NaN is 0x7FC00000. On
    total's bits: the significand moved to float32's place (further right for a subnormal) and
    cut to the format's fraction bits."""
    info = jnp.finfo(total.dtype)
    unsigned = jnp.uint64 if info.bits == 64 else jnp.uint32
    bits = jax.lax.bitcast_convert_type(total, unsigned)
    exp = ((bits >> info.nmant) & (2 * info.maxexp - 1)).astype(jnp.int32) - \
        (info.maxexp - 1) + exp_offset
    sig = (bits & ((1 << info.nmant) - 1)) | (1 << info.nmant)   # 2^nmant <= sig < 2^(nmant+1)
    # a normal's leading one lands on bit 23 and carries into the field of exp + 126
    magnitude = shr(sig, info.nmant - 23 + jnp.maximum(-126 - exp, 0)) + \
        (jnp.maximum(exp + 126, 0).astype(unsigned) << 23)
    magnitude = (magnitude & ~((1 << (F32.man_bits - fmt.man_bits)) - 1)).astype(jnp.uint32)
    sign = (bits >> (info.bits - 1)).astype(jnp.uint32) << 31
    codes = jnp.where((magnitude == 0) | (total == 0), 0, sign | magnitude)     # -0 -> +0
    codes = jnp.where((exp >= 128) | jnp.isinf(total), sign | 0x7F80_0000, codes)
    return jnp.where(jnp.isnan(total), 0x7FC0_0000, codes).astype(jnp.uint32)
