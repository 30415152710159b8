"""The format catalog against ml_dtypes, the name grammar, and the error messages."""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction

import ml_dtypes
import numpy as np
import pytest

from fpforge.rtl.formats import (AMBIGUOUS_SPELLINGS, CATALOG, FloatFormat, FormatError, Specials,
                                 catalog_formats)
from fpforge.rtl.format_names import GRAMMAR, SHORT_NAMES, resolve, valid_forms

from oracles.references import ML_NAMES, ml_type


def test_every_catalog_entry_is_checked_against_ml_dtypes():
    # float16/float32 are numpy's; every other catalog entry must exist in ml_dtypes 0.6.
    assert ML_NAMES == list(CATALOG)


@pytest.mark.parametrize("name", ML_NAMES)
def test_limits_match_ml_dtypes_finfo(name):
    fmt, fi = CATALOG[name], ml_dtypes.finfo(ml_type(name))
    assert fmt.width == fi.bits
    assert fmt.man_bits == fi.nmant
    assert float(fmt.max_finite) == float(fi.max)
    assert float(fmt.min_normal) == float(fi.smallest_normal)
    assert float(fmt.min_subnormal) == float(fi.smallest_subnormal)
    # eps: the gap above 1.0 (E8M0: 1.0 -> 2.0).
    one = fmt.bias << fmt.man_bits
    assert fmt.code_value(one) == 1
    assert float(fmt.code_value(one + 1) - 1) == float(fi.eps)
    assert fmt.emin == fi.minexp
    assert fmt.emax == fi.maxexp - 1


def _ml_values(name):
    fmt = CATALOG[name]
    codes = np.arange(1 << fmt.width, dtype=np.uint64)
    storage = np.uint8 if fmt.width <= 8 else np.uint16 if fmt.width <= 16 else np.uint32
    with np.errstate(invalid="ignore"):          # signalling NaNs widen to quiet ones
        return codes, codes.astype(storage).view(ml_type(name)).astype(np.float64)


@pytest.mark.parametrize("name", [n for n in ML_NAMES if CATALOG[n].width <= 16])
def test_every_encoding_decodes_like_ml_dtypes(name):
    fmt = CATALOG[name]
    codes, values = _ml_values(name)
    bad = []
    for code, ml in zip(codes.tolist(), values.tolist()):
        ours = fmt.code_value(code)
        cls = fmt.classify(code)
        if math.isnan(ml):
            ok = cls in ("nan", "snan") and isinstance(ours, float) and math.isnan(ours)
        elif math.isinf(ml):
            ok = cls == "inf" and ours == ml
        else:
            ok = cls in ("zero", "subnormal", "normal") and Fraction(ml) == ours and \
                math.copysign(1, ml) == math.copysign(1, float(ours))
        if not ok:
            bad.append(f"{code:#x}: ours {ours} ({cls}), ml_dtypes {ml}")
    assert not bad, f"{len(bad)} encodings differ: {bad[:10]}"


def test_float32_decoding_sampled_against_numpy():
    fmt = CATALOG["float32"]
    rng = np.random.default_rng(5)
    codes = np.concatenate([rng.integers(0, 1 << 32, 20000, dtype=np.uint64),
                            np.array([0, 1, 0x7FFFFF, 0x800000, 0x7F7FFFFF, 0x7F800000,
                                      0x7F800001, 0x7FC00000, 0x80000000, 0xFF800000],
                                     np.uint64)])
    with np.errstate(invalid="ignore"):          # signalling NaNs widen to quiet ones
        values = codes.astype(np.uint32).view(np.float32).astype(np.float64)
    for code, ml in zip(codes.tolist(), values.tolist()):
        ours = fmt.code_value(code)
        if math.isnan(ml):
            assert fmt.classify(code) in ("nan", "snan"), hex(code)
        else:
            assert ours == ml and math.copysign(1, ml) == math.copysign(1, float(ours)), hex(code)


@pytest.mark.parametrize("name", [n for n in CATALOG if CATALOG[n].width <= 8])
def test_special_codes_classify(name):
    fmt = CATALOG[name]
    if fmt.nan_code is not None:
        assert fmt.classify(fmt.nan_code) == "nan"          # canonical NaN is quiet
        assert not fmt.nan_code & fmt.sign_mask or fmt.specials is Specials.FNUZ
    if fmt.inf_code is not None:
        assert fmt.classify(fmt.inf_code) == "inf"
        assert fmt.classify(fmt.inf_code | fmt.sign_mask) == "inf"
    assert fmt.classify(fmt.max_finite_code) == "normal"
    assert fmt.code_value(fmt.max_finite_code) == fmt.max_finite
    nans = [c for c in range(1 << fmt.width) if fmt.classify(c) in ("nan", "snan")]
    assert fmt.has_nan == bool(nans)
    # Largest finite really is the largest number.
    finite = [fmt.code_value(c) for c in range(1 << fmt.width)
              if fmt.classify(c) in ("zero", "subnormal", "normal")]
    assert max(finite) == fmt.max_finite
    assert min(v for v in finite if v > 0) == fmt.min_subnormal


def test_signalling_nans_only_with_two_fraction_bits():
    assert CATALOG["float8_e5m2"].classify(0x7D) == "snan"
    assert CATALOG["float8_e5m2"].classify(0x7E) == "nan"
    assert resolve("e3m1").classify(0b0_111_1) == "nan"      # one fraction bit: no sNaN
    assert CATALOG["float16"].classify(0x7C01) == "snan"


# ----- names -------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(CATALOG))
def test_canonical_names_round_trip(name):
    fmt = resolve(name)
    assert fmt == CATALOG[name]
    assert fmt.name == name and str(fmt) == name
    assert resolve(fmt.generic_name) == fmt
    assert resolve(name.upper()) == fmt
    assert resolve(f"  {name} ") == fmt
    assert name in fmt.describe()


@pytest.mark.parametrize("short", list(SHORT_NAMES))
def test_short_names(short):
    assert resolve(short) == CATALOG[SHORT_NAMES[short]]


def test_fp8e4m3_is_ocp_e4m3_not_ieee_style():
    fmt = resolve("fp8e4m3")
    assert fmt.name == "float8_e4m3fn" and fmt.max_finite == 448 and not fmt.has_inf
    assert resolve("e4m3").max_finite == 240 and resolve("e4m3").name == "float8_e4m3"
    assert "max 448" in fmt.describe() and "no inf" in fmt.describe()


@pytest.mark.parametrize("spelling, expected", [
    ("e5m2", ("float8_e5m2", 5, 2, 15, Specials.IEEE, True)),
    ("e4m3fn", ("float8_e4m3fn", 4, 3, 7, Specials.FN, True)),
    ("e4m3fnuz", ("float8_e4m3fnuz", 4, 3, 8, Specials.FNUZ, True)),
    ("e4m3fnuz_b11", ("float8_e4m3b11fnuz", 4, 3, 11, Specials.FNUZ, True)),
    ("e2m1fin", ("float4_e2m1fn", 2, 1, 1, Specials.FINITE, True)),
    ("e8m0fnu", ("float8_e8m0fnu", 8, 0, 127, Specials.FNU, True)),
    ("e8m23", ("float32", 8, 23, 127, Specials.IEEE, True)),
    ("e5m3", ("e5m3", 5, 3, 15, Specials.IEEE, True)),
    ("e6m1_b20", ("e6m1_b20", 6, 1, 20, Specials.IEEE, True)),
    ("e4m3_ftz", ("float8_e4m3_ftz", 4, 3, 7, Specials.IEEE, False)),
    ("fp16_ftz", ("float16_ftz", 5, 10, 15, Specials.IEEE, False)),
    ("e3m2fn_b3_ftz", ("e3m2fn_b3_ftz", 3, 2, 3, Specials.FN, False)),
    ("e2m1fn_b1", ("e2m1fn_b1", 2, 1, 1, Specials.FN, True)),
    ("e2m3fn_b2", ("e2m3fn_b2", 2, 3, 2, Specials.FN, True)),
    ("e3m2fin", ("float6_e3m2fn", 3, 2, 3, Specials.FINITE, True)),
])
def test_generic_grammar(spelling, expected):
    fmt = resolve(spelling)
    assert (fmt.name, fmt.exp_bits, fmt.man_bits, fmt.bias, fmt.specials, fmt.subnormals) == \
        expected
    assert resolve(fmt.generic_name) == fmt
    assert resolve(fmt.name) == fmt


# ----- the fn trap: ml_dtypes' float4_e2m1fn is finite, the grammar's e2m1fn is not -------------

AMBIGUOUS = {"e2m1fn": "float4_e2m1fn", "e3m2fn": "float6_e3m2fn", "e2m3fn": "float6_e2m3fn"}


@pytest.mark.parametrize("spelling, message", [
    ("e2m1fn", "ambiguous format 'e2m1fn': ml_dtypes' float4_e2m1fn is finite (no inf, no NaN, "
               "max 6: spell it float4_e2m1fn, fp4e2m1 or e2m1fin), while the generic grammar's "
               "fn has NaN at the all-ones code (max 4: spell it e2m1fn_b1)"),
    ("e3m2fn", "ambiguous format 'e3m2fn': ml_dtypes' float6_e3m2fn is finite (no inf, no NaN, "
               "max 28: spell it float6_e3m2fn, fp6e3m2 or e3m2fin), while the generic grammar's "
               "fn has NaN at the all-ones code (max 24: spell it e3m2fn_b3)"),
    ("e2m3fn", "ambiguous format 'e2m3fn': ml_dtypes' float6_e2m3fn is finite (no inf, no NaN, "
               "max 7.5: spell it float6_e2m3fn, fp6e2m3 or e2m3fin), while the generic "
               "grammar's fn has NaN at the all-ones code (max 7: spell it e2m3fn_b1)"),
    ("E2M1FN_ftz", "ambiguous format 'E2M1FN_ftz': ml_dtypes' float4_e2m1fn is finite (no inf, "
                   "no NaN, max 6: spell it float4_e2m1fn_ftz, fp4e2m1_ftz or e2m1fin_ftz), "
                   "while the generic grammar's fn has NaN at the all-ones code (max 4: spell "
                   "it e2m1fn_b1_ftz)"),
    ("e03m2fn_ftz", "ambiguous format 'e03m2fn_ftz': ml_dtypes' float6_e3m2fn is finite (no "
                    "inf, no NaN, max 28: spell it float6_e3m2fn_ftz, fp6e3m2_ftz or "
                    "e3m2fin_ftz), while the generic grammar's fn has NaN at the all-ones code "
                    "(max 24: spell it e3m2fn_b3_ftz)"),
])
def test_ambiguous_fn_spellings_are_refused(spelling, message):
    with pytest.raises(FormatError) as err:
        resolve(spelling)
    assert str(err.value) == message


def test_only_the_fn_spellings_that_ml_dtypes_reads_otherwise_are_refused():
    """float8_e4m3fn's fn is the grammar's fn (NaN at all-ones), so e4m3fn stays; so do the
    other catalog tails the grammar reads alike (e5m2fnuz, e8m0fnu, ...)."""
    assert {tail: fmt.name for tail, fmt in AMBIGUOUS_SPELLINGS.items()} == AMBIGUOUS
    assert resolve("e4m3fn") == CATALOG["float8_e4m3fn"]
    for name, fmt in CATALOG.items():
        tail = name.rpartition("_")[2]
        if tail in AMBIGUOUS:
            continue
        try:
            assert resolve(tail) == fmt, tail
        except FormatError as err:
            assert str(err).startswith("unknown format"), tail      # float16, e4m3b11fnuz


@pytest.mark.parametrize("spelling", list(AMBIGUOUS))
def test_both_readings_resolve_with_their_spellings(spelling):
    ml = CATALOG[AMBIGUOUS[spelling]]
    short = next(s for s, n in SHORT_NAMES.items() if n == ml.name)
    e, m = ml.exp_bits, ml.man_bits
    for ftz in ("", "_ftz"):
        finite = ml.with_subnormals(not ftz)
        assert {resolve(s + ftz) for s in (ml.name, short, f"e{e}m{m}fin")} == {finite}
        assert finite.specials is Specials.FINITE and not finite.has_nan
        grammar = resolve(f"{spelling}_b{ml.bias}{ftz}")
        assert (grammar.exp_bits, grammar.man_bits, grammar.bias, grammar.specials,
                grammar.subnormals) == (e, m, ml.bias, Specials.FN, not ftz)
        assert grammar.classify(grammar.magnitude_mask) == "nan"
        assert grammar.max_finite < finite.max_finite


@pytest.mark.parametrize("specials", list(Specials), ids=lambda s: s.value)
@pytest.mark.parametrize("spelling", list(AMBIGUOUS))
def test_generic_name_round_trips_near_the_trap(spelling, specials):
    """Every format of these E and M (any convention, default bias or not, flushed or not)
    has a generic name and a name that resolve back to it."""
    ml = CATALOG[AMBIGUOUS[spelling]]
    for bias in range(0, 5):
        for subnormals in (True, False):
            try:
                fmt = FloatFormat(ml.exp_bits, ml.man_bits, bias, specials, subnormals)
            except FormatError:
                continue                    # impossible (fnu with a fraction, no normals, ...)
            assert resolve(fmt.generic_name) == fmt, fmt.generic_name
            assert resolve(fmt.name) == fmt, fmt.name
            if specials is Specials.FN:
                assert fmt.generic_name.startswith(f"{spelling}_b{bias}")


def test_ftz_variants_are_distinct_and_flush():
    fmt = resolve("fp16_ftz")
    assert fmt != CATALOG["float16"] and fmt.with_subnormals(True) == CATALOG["float16"]
    assert fmt.classify(0x0001) == "zero" and fmt.code_value(0x8001) == 0
    assert str(fmt.code_value(0x8001)) == "-0.0"
    assert fmt.min_subnormal == fmt.min_normal
    assert CATALOG["float8_e8m0fnu"].with_subnormals(False) is CATALOG["float8_e8m0fnu"]


@pytest.mark.parametrize("spelling, message", [
    ("fp8e9m9", "unknown format 'fp8e9m9'; {valid}"),
    ("e0m3", "impossible format 'e0m3': format e0m3: exponent bits must be 1..8, not 0; {valid}"),
    ("e8m24", "impossible format 'e8m24': format e8m24: mantissa bits must be 0..23, not 24; "
              "{valid}"),
    ("e4m0", "impossible format 'e4m0': format e4m0: IEEE-style NaNs need at least 1 mantissa "
             "bit (use fn, fnuz or fin); {valid}"),
    ("e4m1fnu", "impossible format 'e4m1fnu': format e4m1fnu: the unsigned exponent-only "
                "convention (fnu) needs 0 mantissa bits; {valid}"),
    ("e1m1", "impossible format 'e1m1': format e1m1 has no normal numbers (emin 1 > emax 0); "
             "{valid}"),
    ("e8m23_b2000", "impossible format 'e8m23_b2000': format e8m23_b2000: bias 2000 puts values "
                    "outside binary64's range (need emax <= 1023 and min subnormal >= 2^-1074); "
                    "{valid}"),
])
def test_bad_names_say_what_was_given(spelling, message):
    with pytest.raises(FormatError) as err:
        resolve(spelling)
    assert str(err.value) == message.format(valid=valid_forms())
    assert "\n" not in str(err.value)


def test_unusual_but_possible_bias_resolves():
    fmt = resolve("e3m2_b0")                     # emin 1, emax 6: legal
    assert (fmt.bias, fmt.emin, fmt.emax, fmt.max_finite) == (0, 1, 6, 112)


def test_non_string_format_message():
    with pytest.raises(FormatError) as err:
        resolve(8)
    assert str(err.value) == f"format must be a name or FloatFormat, not 8; {valid_forms()}"


def test_constructor_messages():
    with pytest.raises(FormatError, match=r"^exp_bits must be an integer, not '4'$"):
        FloatFormat("4", 3, 7)
    with pytest.raises(FormatError, match=r"^subnormals must be a bool, not 1$"):
        FloatFormat(4, 3, 7, Specials.FN, 1)
    with pytest.raises(FormatError, match=r"^specials must be a Specials member "
                                          r"\(ieee, fn, fnuz, finite, fnu, ext\), not 'fn'$"):
        FloatFormat(4, 3, 7, "fn")


def test_grammar_is_in_the_message():
    assert GRAMMAR in valid_forms()


def test_too_wide_is_unreachable_through_the_size_limits():
    # 1 + MAX_EXP_BITS + MAX_MAN_BITS == MAX_WIDTH: the widest legal format is exactly binary32.
    widest = FloatFormat(8, 23, 127)
    assert widest.width == 32 and widest == CATALOG["float32"]


# ----- immutability and hashing ------------------------------------------------------------------

def test_formats_are_hashable_and_immutable():
    fmt = resolve("fp8e4m3")
    assert {fmt: 1}[resolve("float8_e4m3fn")] == 1
    assert len({resolve(n) for n in CATALOG} | {resolve(s) for s in SHORT_NAMES}) == len(CATALOG)
    assert hash(resolve("e5m3")) == hash(resolve("e5m3_b15"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        fmt.bias = 8
    assert fmt.bias == 7
    assert repr(fmt) == "FloatFormat('float8_e4m3fn')"


def test_catalog_formats_by_width():
    assert [f.name for f in catalog_formats(6)] == \
        ["float6_e3m2fn", "float6_e2m3fn", "float4_e2m1fn"]
    assert len(catalog_formats()) == len(CATALOG)
