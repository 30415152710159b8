"""The golden model on P3109 formats and saturation modes: against the exact oracle (written
from the report's Project, RoundToPrecision, Saturate and Encode), against gfloat's rounding, and
pinned on the cases the report spells out (P3109 Interim Report v4.0, 4.7.3-4.7.6)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fpforge import golden
from fpforge.rtl.format_names import resolve

from oracles import exact
from oracles.compare import check_candidate
from oracles.vectors import all_codes, binary_vectors, pairs, triples

SLOW = pytest.mark.slow
SATURATIONS = ["none", "finite", "propagate"]
# Small P3109 formats, every pair of codes: signed/unsigned, extended/finite, P = 1..3.
SMALL = ["binary4p2se", "binary4p2sf", "binary4p3ue", "binary5p2uf", "binary5p1ue", "binary3p2se",
         "binary5p1sf"]
EIGHT = ["binary8p4se", "binary8p3se", "binary8p1uf", "binary8p1se", "binary8p3ue", "binary8p5uf"]


def _run(op, operands, fmts, mode, sat, seed, sr_bits=8):
    rng = np.random.default_rng(seed)
    n = operands[0].size
    rm = rng.integers(0, 8, n) if mode == "dynamic" else None
    rbits = rng.integers(0, 1 << 32, n, dtype=np.uint64) if mode.startswith("stochastic") \
        else None
    kw = dict(rounding=mode, saturate=sat, rm=rm, rbits=rbits, sr_bits=sr_bits)
    expected = exact.apply(op, *operands, fmts=fmts, **kw)
    check_candidate("golden", op, operands, fmts, expected,
                    label=f"{op} {'/'.join(fmts)} {mode} saturation {sat}", **kw)


def _cases(formats, ops, default):
    out = []
    for name in formats:
        for op in ops:
            for mode in ("dynamic", "rod", "stochastic", "stochastic_b", "stochastic_c"):
                for sat in SATURATIONS:
                    marks = () if default(name, op, mode, sat) else SLOW
                    out.append(pytest.param(name, op, mode, sat, marks=marks,
                                            id=f"{name}-{op}-{mode}-sat{sat}"))
    return out


@pytest.mark.parametrize("name, op, mode, sat", _cases(
    SMALL, ["mul", "add"],
    default=lambda n, o, m, s: n in ("binary4p2se", "binary4p3ue", "binary5p1ue") and
    (m == "dynamic" or (o == "mul" and s == "none" and m != "stochastic"))))
def test_small_exhaustive(name, op, mode, sat):
    a, b = pairs(all_codes(name))
    _run(op, (a, b), (name,) * 3, mode, sat, seed=1)


@pytest.mark.parametrize("name, op, mode, sat", _cases(
    EIGHT, ["mul", "add", "fma"],
    default=lambda n, o, m, s: n in ("binary8p4se", "binary8p1uf") and m == "dynamic" and
    o != "fma"))
def test_eight_bit_sampled(name, op, mode, sat):
    if op == "fma":
        a, b, c = triples(all_codes(name), 3000, seed=2)
        _run("fma", (a, b, c), (name,) * 4, mode, sat, seed=3)
    else:
        a, b = binary_vectors(name, 1500, seed=4)
        _run(op, (a, b), (name,) * 3, mode, sat, seed=5)


@pytest.mark.parametrize("src, dst, sat", [
    ("bfloat16", "binary8p3ue", "none"), ("bfloat16", "binary8p1uf", "finite"),
    ("float16", "binary8p4se", "propagate"),
    pytest.param("float16", "binary8p3se", "none", marks=SLOW),
    pytest.param("bfloat16", "binary8p1se", "finite", marks=SLOW)])
def test_convert_every_source_code(src, dst, sat):
    _run("convert", (all_codes(src),), (src, dst), "dynamic", sat, seed=6)


def test_saturate_switch_is_finite_on_p3109_only_formats():
    """--saturate on a format only P3109 defines is SatFinite; with no option, SatNone."""
    x = all_codes("bfloat16")
    for fmt in ("binary8p3ue", "binary8p4se"):
        by_switch = golden.convert(x, "bfloat16", fmt, saturate=True)
        by_mode = golden.convert(x, "bfloat16", fmt, saturation="finite")
        default = golden.convert(x, "bfloat16", fmt)
        none = golden.convert(x, "bfloat16", fmt, saturation="none")
        for got, want in ((by_switch, by_mode), (default, none)):
            np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(want[0]))
            np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(want[1]))


# ----- the report's cases ------------------------------------------------------------------------

def _one(value, fmt, rounding="rne", saturation=None):
    x = np.array([value], np.float32).view(np.uint32)
    y, flags = golden.convert(x, "float32", fmt, rounding=rounding, saturation=saturation)
    return int(np.asarray(y)[0]), int(np.asarray(flags)[0])


NX, UF, OF, NV = 1, 2, 4, 16


@pytest.mark.parametrize("value, fmt, rounding, saturation, code, flags", [
    # SatNone: overflow goes to infinity unless rounding points back (4.7.5) ...
    (1e9, "binary8p3se", "rne", "none", 0x7F, OF | NX),
    (1e9, "binary8p3se", "rtz", "none", 0x7E, OF | NX),
    (-1e9, "binary8p3se", "rup", "none", 0xFE, OF | NX),
    (-1e9, "binary8p3se", "rdn", "none", 0xFF, OF | NX),
    (1e9, "binary8p3se", "rod", "none", 0x7F, OF | NX),        # ToOdd: inf when signed ...
    (1e12, "binary8p3ue", "rod", "none", 0xFD, OF | NX),       # ... Mhi when unsigned
    (1e9, "binary8p4sf", "rne", "none", 0x7F, OF | NX),        # finite: +-max, never NaN
    (float("inf"), "binary8p4sf", "rne", "none", 0x7F, OF | NX),
    (float("-inf"), "binary8p3se", "rne", "none", 0xFF, 0),
    # ... below Mlo = 0 in unsigned formats: NaN, unless rounding toward zero or up.
    (-1.0, "binary8p3ue", "rne", "none", 0xFF, NV),
    (-1.0, "binary8p3ue", "rtz", "none", 0x00, NX),
    (-1.0, "binary8p3ue", "rup", "none", 0x00, NX),
    (float("-inf"), "binary8p3ue", "rtz", "none", 0xFF, NV),
    (-1e-30, "binary8p3ue", "rne", "none", 0x00, UF | NX),     # rounds to zero first: no NaN
    # SatFinite: everything to the finite range.
    (float("inf"), "binary8p3se", "rne", "finite", 0x7E, OF | NX),
    (float("-inf"), "binary8p3ue", "rne", "finite", 0x00, NX),
    (-1.0, "binary8p3ue", "rdn", "finite", 0x00, NX),
    # SatPropagate: finite overflow saturates, infinities stay.
    (1e9, "binary8p3se", "rne", "propagate", 0x7E, OF | NX),
    (float("inf"), "binary8p3se", "rne", "propagate", 0x7F, 0),
    (float("-inf"), "binary8p4sf", "rne", "propagate", 0xFF, OF | NX),
    # P = 1 has gradual underflow on {0, 2^emin}; a tie goes to the even code 0 (CodeIsEven).
    (0.6 * 2.0 ** -127, "binary8p1uf", "rne", None, 0x01, UF | NX),
    (0.5 * 2.0 ** -127, "binary8p1uf", "rne", None, 0x00, UF | NX),
    (0.4 * 2.0 ** -127, "binary8p1uf", "rup", None, 0x01, UF | NX),
    # No negative zero: -0 encodes as 0.
    (-0.0, "binary8p4se", "rne", None, 0x00, 0),
    (-1e-30, "binary8p4se", "rne", None, 0x00, UF | NX),
])
def test_report_cases(value, fmt, rounding, saturation, code, flags):
    assert _one(value, fmt, rounding, saturation) == (code, flags)
    # The oracle agrees (its reading of the report is independent of the golden model's).
    assert exact.convert_float(value, fmt, rounding=rounding,
                               saturation=saturation or False) == (code, flags)


def test_fnuz_keeps_its_own_convention_unless_asked():
    """float8_e4m3fnuz is Binary8p4sf code for code, but by default it overflows to NaN
    (ml_dtypes, ONNX); --saturation none gives P3109's +-max."""
    assert _one(1e9, "float8_e4m3fnuz") == (0x80, OF | NX)
    assert _one(1e9, "binary8p4sf", saturation="none") == (0x7F, OF | NX)


# ----- gfloat's rounding, independent of both -----------------------------------------------------

GFLOAT_MODES = {"rtz": "TowardZero", "rdn": "TowardNegative", "rup": "TowardPositive",
                "rne": "TiesToEven", "rna": "TiesToAway"}


@pytest.mark.parametrize("name", ["binary8p4se", "binary8p3se", "binary4p2sf", "binary8p1uf",
                                  pytest.param("binary8p3ue", marks=SLOW),
                                  pytest.param("binary6p3se", marks=SLOW),
                                  pytest.param("binary8p1se", marks=SLOW)])
def test_rounding_against_gfloat(name):
    """gfloat 0.5.2's round_float with sat=True is SatFinite; with sat=False it is SatNone in
    extended formats (in finite ones it gives NaN where v4.0 gives +-max: not compared). It
    drops the sign of values into unsigned formats: only values >= 0 go there."""
    gf = pytest.importorskip("gfloat", reason="gfloat (the dev extra) is not installed")
    from gfloat.formats import format_info_p3109
    from gfloat.types import Domain, RoundMode, Signedness
    fmt = resolve(name)
    fi = format_info_p3109(fmt.width, fmt.precision,
                           Signedness.Signed if fmt.signed else Signedness.Unsigned,
                           Domain.Extended if fmt.has_inf else Domain.Finite)
    rng = np.random.default_rng(11)
    top, low = math.log2(float(fmt.max_finite)), math.log2(float(fmt.min_subnormal))
    x = np.concatenate([
        np.exp2(rng.uniform(low - 3, top + 2, 4000)) * rng.choice([-1, 1], 4000),
        rng.standard_normal(1000) * float(fmt.max_finite) / 4,
        [np.inf, -np.inf, 0.0, -0.0]]).astype(np.float32)
    if fmt.unsigned:
        x = np.abs(x)
    for rounding, gmode in GFLOAT_MODES.items():
        for sat in ("finite", "none") if fmt.has_inf else ("finite",):
            y, _ = golden.convert(x.view(np.uint32), "float32", fmt, rounding=rounding,
                                  saturation=sat)
            want = [gf.encode_float(fi, gf.round_float(fi, float(v), RoundMode[gmode],
                                                       sat=sat == "finite")) for v in x]
            np.testing.assert_array_equal(np.asarray(y).astype(np.int64), want,
                                          err_msg=f"{name} {rounding} saturation {sat}")


STOCHASTIC_GFLOAT = {"stochastic": "StochasticFastest", "stochastic_b": "StochasticFast",
                     "stochastic_c": "Stochastic"}


@pytest.mark.parametrize("rounding", list(STOCHASTIC_GFLOAT))
@pytest.mark.parametrize("sr_bits", [3, 8])
def test_stochastic_abc_against_gfloat(rounding, sr_bits):
    """gfloat names P3109's StochasticA, B, C StochasticFastest, StochasticFast, Stochastic."""
    gf = pytest.importorskip("gfloat", reason="gfloat (the dev extra) is not installed")
    from gfloat.formats import format_info_p3109
    from gfloat.types import Domain, RoundMode, Signedness
    fmt = resolve("binary8p3se")
    fi = format_info_p3109(8, 3, Signedness.Signed, Domain.Extended)
    rng = np.random.default_rng(12)
    x = (np.exp2(rng.uniform(-19, 16, 3000)) * rng.choice([-1, 1], 3000)).astype(np.float32)
    r = rng.integers(0, 1 << sr_bits, x.size).astype(np.uint32)
    y, _ = golden.convert(x.view(np.uint32), "float32", fmt, rounding=rounding, rbits=r,
                          sr_bits=sr_bits, saturation="finite")
    mode = RoundMode[STOCHASTIC_GFLOAT[rounding]]
    want = [gf.encode_float(fi, gf.round_float(fi, float(v), mode, sat=True, srbits=int(b),
                                               srnumbits=sr_bits)) for v, b in zip(x, r)]
    np.testing.assert_array_equal(np.asarray(y).astype(np.int64), want)


def test_saturation_needs_a_zero():
    from fpforge.rtl.kinds import make_spec
    from fpforge.rtl.options import OptionError
    with pytest.raises(OptionError, match=r"^--saturation needs a result format with a zero "
                                          r"\(P3109's Mlo\); float8_e8m0fnu has none: use "
                                          r"--saturate$"):
        make_spec("mul", format="e8m0", saturation="finite")
    with pytest.raises(OptionError, match=r"^unknown saturation 'max'; valid: finite, "
                                          r"propagate, none$"):
        make_spec("mul", format="binary8p3se", saturation="max")
    with pytest.raises(OptionError, match=r"^--saturate is --saturation finite \(with OCP/ONNX's "
                                          r"fnuz exception\); give one of them, not both$"):
        make_spec("mul", format="binary8p3se", saturation="finite", saturate=True)
