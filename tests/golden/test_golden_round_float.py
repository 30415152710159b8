"""The narrowing convert's short step 1 (golden/rounding.py ``round_float``, which ``quantize``
and ``convert`` use when no flags are asked for) against the one rounder (``round_raw`` on the
decoded operand), code for code.

Inputs: every bfloat16 and float16 code, and float32 codes made of every 16-bit top half with
low halves that put ties, near-ties and sticky bits under the LSB of every format here (zeros,
float32 subnormals, the top of float32, infinities and NaNs among them). Formats: the catalog's
narrower ones, P3109 extended and unsigned ones, a flushing one and odd biases; every static
rounding mode, the stochastic ones with 8 and 12 random bits, saturation. Two deliberately wrong
short paths (the sticky bit dropped; the fields rebased by one too many) must be caught.
"""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np
import pytest

from fpforge import golden
from fpforge.golden._jax import U32, U64, jax, low_mask
from fpforge.golden.decode import decode
from fpforge.golden.rounding import Mode, cuts_by_field, round_float, round_raw
from fpforge.golden.scalar import as_raw
from fpforge.rtl.formats import CATALOG, FloatFormat
from fpforge.rtl.format_names import resolve
from fpforge.rtl.options import Rounding, UnitOptions

LOWS = [0, 1, 0x0FFF, 0x1000, 0x1001, 0x7FFF, 0x8000, 0x8001, 0xFFFF]
F32 = np.concatenate([(np.arange(1 << 16, dtype=np.uint32) << 16) | low for low in LOWS])
ALL16 = np.arange(1 << 16, dtype=np.uint32)
SOURCES = {"float32": F32, "bfloat16": ALL16, "float16": ALL16}
RBITS = np.random.default_rng(35).integers(0, 1 << 12, F32.size).astype(np.uint32)

STATIC = [r for r in Rounding if r is not Rounding.DYNAMIC]
TARGETS = [f for f in CATALOG if f not in ("float32",)] + [
    "binary8p3se", "binary8p1se", "binary8p3ue", "binary8p1uf", "binary8p4sf", "e5m3",
    "e3m2_ftz", "e6m1_b20", "e2m3fnuz", "e5m6"]
# Every static mode from float32 into these (the others see rne, rup and stochastic C).
EVERY_MODE = {"float8_e4m3fn", "float8_e5m2", "float4_e2m1fn", "float16", "binary8p3ue",
              "binary8p1se", "float8_e8m0fnu"}


@functools.partial(jax.jit, static_argnums=(0, 1, 2, 3, 4))
def _both(src: FloatFormat, fmt: FloatFormat, options: tuple, mode_cls, fast_src, codes, rbits):
    """For each of ``options``: (round_raw's codes, round_float's), one compilation for all.
    round_raw computes in its own width for a convert of src (golden/scalar.py core_dtype)."""
    raw = as_raw(decode(codes, src, U32 if src.precision <= 32 else U64))
    return tuple((round_raw(raw, fmt, o, Mode(o.rounding), rbits)[0],
                  round_float(codes, fast_src, fmt, o, mode_cls(o.rounding), rbits))
                 for o in options)


def mismatches(src: FloatFormat, fmt: FloatFormat, options, *, mode_cls=Mode,
               fast_src: FloatFormat | None = None) -> list[str]:
    """For each of ``options`` where ``round_float`` and ``round_raw`` differ on some input: a
    line with the first few differing inputs, decoded."""
    codes = SOURCES[src.name]
    as_float = {"float32": np.float32, "bfloat16": ml_dtypes.bfloat16, "float16": np.float16}
    values = codes.astype({32: np.uint32, 16: np.uint16}[src.width]).view(as_float[src.name])
    found = []
    for opts, (want, got) in zip(options, _both(src, fmt, tuple(options), mode_cls,
                                               fast_src or src, codes, RBITS[:codes.size])):
        want, got = np.asarray(want), np.asarray(got)
        bad = np.flatnonzero(want != got)
        if bad.size:
            shown = ", ".join(f"{src.name} 0x{int(codes[i]):08x} ({values[i]!r}): round_raw "
                              f"0x{int(want[i]):02x}, round_float 0x{int(got[i]):02x}"
                              for i in bad[:2])
            found.append(f"{bad.size} of {codes.size} differ into {fmt.name} "
                         f"({opts.rounding.value}): {shown}")
    return found


def options(src_name: str, target: str, fmt: FloatFormat) -> list[UnitOptions]:
    every = src_name == "float32" and target in EVERY_MODE
    out = [UnitOptions(rounding=r) for r in (STATIC if every else
                                             [Rounding.RNE, Rounding.RUP, Rounding.STOCHASTIC_C])]
    out.append(UnitOptions(saturate=True))
    if every:
        out.append(UnitOptions(rounding=Rounding.STOCHASTIC, sr_bits=12))
    if fmt.p3109_only and src_name == "float32":
        out += [UnitOptions(rounding=Rounding.RUP, saturation=sat)
                for sat in ("finite", "propagate", "none")]
    return out


def cases():
    for target in TARGETS:
        fmt = resolve(target)
        for src_name in SOURCES:
            if cuts_by_field(CATALOG[src_name], fmt):
                yield pytest.param(CATALOG[src_name], fmt, options(src_name, target, fmt),
                                   id=f"{src_name}-{target}")


@pytest.mark.parametrize("src, fmt, opts", list(cases()))
def test_round_float_is_round_raw(src, fmt, opts):
    assert mismatches(src, fmt, opts) == []


def test_which_converts_cut_by_field():
    """Every narrowing convert from float32, bfloat16 or float16 into the catalog's formats
    that keep subnormals takes the short path, and E8M0's from float32 and bfloat16 (2^-127
    one binade below their normals); widening ones and flushing ones do not."""
    f32, bf16, f16 = CATALOG["float32"], CATALOG["bfloat16"], CATALOG["float16"]
    e8m0 = CATALOG["float8_e8m0fnu"]
    assert all(cuts_by_field(f32, f) for f in CATALOG.values())
    assert cuts_by_field(bf16, e8m0) and not cuts_by_field(f16, e8m0)
    assert not cuts_by_field(f16, bf16) and not cuts_by_field(bf16, f32)
    assert not cuts_by_field(f32, resolve("e3m2_ftz"))
    assert not cuts_by_field(CATALOG["float8_e4m3fn"], CATALOG["float8_e5m2"])


def test_quantize_without_flags_is_quantize_with_them():
    """The public path: quantize's codes are the same whether the flags (the general rounder)
    are asked for or not (the short path)."""
    x = F32.view(np.float32)
    for fmt in ("fp8e4m3", "bf16"):
        for rounding in ("rne", "rod"):
            y, _ = golden.quantize(x, fmt, rounding=rounding, return_flags=True)
            assert np.array_equal(np.asarray(golden.quantize(x, fmt, rounding=rounding)),
                                  np.asarray(y)), (fmt, rounding)


class _NoSticky(Mode):
    """A wrong short path: the bits below the round bit are lost."""

    def shift_round(self, X, sh, sign, opts, r=None):
        below_round_bit = low_mask(sh.astype(X.dtype) - 1, X.dtype)
        return super().shift_round(X & ~below_round_bit, sh, sign, opts, r)


def test_a_lost_sticky_bit_is_caught():
    f32, fmt = CATALOG["float32"], CATALOG["float8_e4m3fn"]
    [found] = mismatches(f32, fmt, [UnitOptions(rounding=Rounding.RNE)], mode_cls=_NoSticky)
    assert found.startswith("11968 of 589824 differ into float8_e4m3fn (rne): float32 0x3a810000 "
                            "(np.float32(0.0009841919)): round_raw 0x01, round_float 0x00")


def test_a_field_rebased_off_by_one_is_caught():
    """A wrong short path: the source's fields rebased by one too many (its bias read as
    128), so every result is half what it should be."""
    f32, fmt = CATALOG["float32"], CATALOG["float8_e4m3fn"]
    shifted = FloatFormat(f32.exp_bits, f32.man_bits, f32.bias + 1, f32.specials)
    [found] = mismatches(f32, fmt, [UnitOptions(rounding=Rounding.RTZ)], fast_src=shifted)
    assert " differ into float8_e4m3fn (rtz): " in found


class _SignRead(Mode):
    """A wrong short path: the directed modes read the sign the wrong way round."""

    def shift_round(self, X, sh, sign, opts, r=None):
        return super().shift_round(X, sh, sign ^ 1, opts, r)


def test_a_directed_mode_reading_the_wrong_sign_is_caught():
    f32, fmt = CATALOG["float32"], CATALOG["float8_e4m3fn"]
    found = mismatches(f32, fmt, [UnitOptions(rounding=r) for r in ("rne", "rup", "rdn")],
                       mode_cls=_SignRead)
    assert [line.split(" (")[1].split(")")[0] for line in found] == ["rup", "rdn"]


class _OverflowToMax(Mode):
    """A wrong short path: overflows give the largest finite code where rounding should carry
    them to infinity (one wrong entry of the constant codes of steps 4 and 5)."""

    def overflows_to_infinity(self, sign):
        return super().overflows_to_infinity(sign) & sign


def test_a_wrong_overflow_code_is_caught():
    f32, fmt = CATALOG["float32"], CATALOG["float8_e5m2"]
    [found] = mismatches(f32, fmt, [UnitOptions(rounding=Rounding.RNE)],
                         mode_cls=_OverflowToMax)
    assert " differ into float8_e5m2 (rne): " in found and "round_raw 0x7c, round_float 0x7b" \
        in found


@pytest.mark.parametrize("target", ["float8_e4m3fn", "float8_e5m2", "binary8p3ue", "float16",
                                    "float8_e8m0fnu"])
def test_per_element_rounding_modes(target):
    """Rounding modes per element (rm, RISC-V codes, the reserved ones too) take the general
    increment and run steps 4 and 5 on the arrays: the same codes as round_raw."""
    f32, fmt = CATALOG["float32"], resolve(target)
    rm = np.random.default_rng(36).integers(0, 8, F32.size).astype(np.uint32)
    for opts in (UnitOptions(rounding="dynamic"), UnitOptions(rounding="dynamic", saturate=True)):
        want, got = _dynamic(f32, fmt, opts, F32, rm)
        assert np.array_equal(np.asarray(want), np.asarray(got)), (target, opts.saturate)


@functools.partial(jax.jit, static_argnums=(0, 1, 2))
def _dynamic(src, fmt, opts, codes, rm):
    mode = Mode(Rounding.DYNAMIC, rm)
    return (round_raw(as_raw(decode(codes, src, U32)), fmt, opts, mode)[0],
            round_float(codes, src, fmt, opts, mode))


class _RandomBitsLow(Mode):
    """A wrong short path: the random bits enter one place too low (half the carries)."""

    def shift_round(self, X, sh, sign, opts, r=None):
        return super().shift_round(X, sh, sign, opts, None if r is None else r >> 1)


def test_random_bits_one_place_low_are_caught():
    f32, fmt = CATALOG["float32"], CATALOG["float8_e4m3fn"]
    found = mismatches(f32, fmt, [UnitOptions(rounding=r) for r in (
        Rounding.STOCHASTIC, Rounding.STOCHASTIC_B, Rounding.STOCHASTIC_C)],
        mode_cls=_RandomBitsLow)
    assert [line.split(" (")[1].split(")")[0] for line in found] == [
        "stochastic", "stochastic_b", "stochastic_c"]


def test_e8m0_wrong_variants_are_caught():
    """E8M0's own cut (field as code, subnormals one bit lower): a lost sticky bit and a
    lost sign are caught there too."""
    f32, e8m0 = CATALOG["float32"], CATALOG["float8_e8m0fnu"]
    [lost] = mismatches(f32, e8m0, [UnitOptions(rounding=Rounding.RNE)], mode_cls=_NoSticky)
    assert " differ into float8_e8m0fnu (rne): " in lost
    signs = mismatches(f32, e8m0, [UnitOptions(rounding=r) for r in (Rounding.RUP,
                                                                     Rounding.RDN)],
                       mode_cls=_SignRead)
    assert len(signs) == 2
