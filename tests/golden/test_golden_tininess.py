"""--tininess before|after in the golden model (docs/numerics.md 5).

The two rules differ exactly where the exact result is nonzero and below 2^emin but, rounded to
M+1 significant bits with an unbounded exponent, reaches 2^emin: there ``before`` raises
underflow and ``after`` does not (with subnormals; without them ``before`` also flushes). That
set is counted here with Python fractions, exhaustively for the 8-bit multipliers, and the flags
are cross-checked against Berkeley SoftFloat's ``detectTininess`` (softfloatpy) for float16 and
float32.
"""

from __future__ import annotations

import numpy as np
import pytest

from oracles.references import softfloat_apply
from oracles.tininess import boundary_set, exact_products
from oracles.vectors import exhaustive_pairs, random_codes
from fpforge.golden.model import evaluate
from fpforge.rtl.formats import CATALOG
from fpforge.rtl.kinds import make_spec
from fpforge.rtl.options import Flag, OptionError, Tininess, UnitOptions

UF = int(Flag.UF)


def golden(fmt_name, unit, tininess, mode="rne", subnormals=True, **inputs):
    spec = make_spec(unit, format=fmt_name, rounding=mode, tininess=tininess,
                     subnormals=subnormals)
    out = evaluate(spec, **inputs)
    return np.asarray(out["y"]).astype(np.int64), np.asarray(out["flags"]).astype(np.int64)


@pytest.fixture(scope="module", params=["float8_e4m3fn", "float8_e5m2"])
def products(request):
    fmt = CATALOG[request.param]
    a, b = exhaustive_pairs(fmt)
    return fmt, a, b, exact_products(fmt, a, b)


@pytest.mark.parametrize("mode", ["rne", "rup", "rtz"])
def test_rules_differ_exactly_at_the_boundary(products, mode):
    fmt, a, b, exact = products
    expected = boundary_set(fmt, exact, mode)
    y_after, f_after = golden(fmt.name, "mul", "after", mode, a=a, b=b)
    y_before, f_before = golden(fmt.name, "mul", "before", mode, a=a, b=b)
    np.testing.assert_array_equal(y_before, y_after)
    np.testing.assert_array_equal(f_before & ~UF, f_after & ~UF)
    differ = (f_before ^ f_after) != 0
    np.testing.assert_array_equal(differ, expected)
    assert np.all(f_before[differ] & UF) and not np.any(f_after[differ] & UF)
    if mode == "rtz":
        assert not expected.any()         # rounding toward zero never reaches 2^emin from below
    else:
        assert expected.sum() > 0


def test_flushed_formats_flush_by_the_same_test(products):
    """Without subnormals ``before`` flushes the boundary values that ``after`` rounds up to
    2^emin: zero of the same sign, underflow and inexact."""
    fmt, a, b, _ = products
    expected = boundary_set(fmt, exact_products(fmt, a, b, flush=True), "rne")
    y_after, f_after = golden(fmt.name, "mul", "after", subnormals=False, a=a, b=b)
    y_before, f_before = golden(fmt.name, "mul", "before", subnormals=False, a=a, b=b)
    np.testing.assert_array_equal((y_before != y_after) | (f_before != f_after), expected)
    assert np.all(y_before[expected] & ~fmt.sign_mask == 0)
    assert np.all(y_after[expected] & ~fmt.sign_mask == fmt.min_normal_code)
    assert np.all(f_before[expected] == UF | int(Flag.NX))


def test_a_wrong_boundary_is_caught(products):
    """The exact count can fail: the set shifted by one rounding mode disagrees."""
    fmt, a, b, exact = products
    y_after, f_after = golden(fmt.name, "mul", "after", a=a, b=b)
    y_before, f_before = golden(fmt.name, "mul", "before", a=a, b=b)
    assert not np.array_equal((f_before ^ f_after) != 0, boundary_set(fmt, exact, "rtz"))


def _near_min_normal(fmt, n, seed):
    """Operand pairs whose product lies within an ulp or so of 2^emin: a random, b the code
    nearest 2^emin / a or one of its neighbours, either sign."""
    rng = np.random.default_rng(seed)
    uint, flt = {16: (np.uint16, np.float16), 32: (np.uint32, np.float32)}[fmt.width]
    # |a| in [2^(emin/2), 2^(M-1)]: 2^emin / a then lies between 2^(emin/2) and the subnormals.
    e = rng.integers(fmt.bias + fmt.emin // 2, fmt.bias + fmt.man_bits, n)
    a = (e << fmt.man_bits) | rng.integers(0, 1 << fmt.man_bits, n)
    va = a.astype(uint).view(flt).astype(np.float64)
    b = (2.0 ** fmt.emin / va).astype(flt).view(uint).astype(np.int64) + rng.integers(-1, 2, n)
    sign = rng.integers(0, 2, (2, n)) << (fmt.width - 1)
    return (a | sign[0]).astype(np.uint64), (b | sign[1]).astype(np.uint64)


SF_CASES = [("float16", "mul"), ("float16", "add"), ("float16", "fma"), ("float32", "mul")]


@pytest.mark.parametrize("mode", ["rne", "rup"])
@pytest.mark.parametrize("name, op", SF_CASES)
def test_against_softfloat_before_rounding(name, op, mode):
    fmt = CATALOG[name]
    a, b = _near_min_normal(fmt, 800, seed=31)
    ra, rb = random_codes(fmt, 200, seed=32), random_codes(fmt, 200, seed=33)
    a, b = np.concatenate([a, ra]).astype(np.uint64), np.concatenate([b, rb]).astype(np.uint64)
    operands = [a, b]
    if op == "fma":
        rng = np.random.default_rng(34)
        # c: zeros and the smallest subnormals, so that a * b + c stays near 2^emin.
        operands.append((rng.integers(0, 2, a.size) << (fmt.width - 1)) |
                        rng.integers(0, 4, a.size))
    y, flags = golden(name, op, "before", mode, **dict(zip("abc", operands)))
    sf_y, sf_flags = softfloat_apply(op, *operands, fmts=(name,) * (len(operands) + 1),
                                     rounding=mode, tininess="before")
    nan = np.array([fmt.classify(int(c)) == "nan" for c in y])
    sf_nan = np.array([fmt.classify(int(c)) == "nan" for c in sf_y])
    np.testing.assert_array_equal(nan, sf_nan)
    np.testing.assert_array_equal(y[~nan], sf_y[~nan])
    np.testing.assert_array_equal(flags, sf_flags)
    # SoftFloat's own rules differ on these vectors: the comparison above can fail.
    _, sf_after = softfloat_apply(op, *operands, fmts=(name,) * (len(operands) + 1),
                                  rounding=mode, tininess="after")
    if op != "add":                      # a sum below 2^emin is exact: no underflow either way
        assert (sf_after != sf_flags).any()


def test_options():
    assert UnitOptions().tininess is Tininess.AFTER
    assert UnitOptions(rounding="stochastic").tininess is Tininess.BEFORE
    assert UnitOptions(rounding="stochastic", tininess="before") == \
        UnitOptions(rounding="stochastic")
    with pytest.raises(OptionError, match=r"^--rounding stochastic detects tininess before "
                                          r"rounding; --tininess after does not apply$"):
        UnitOptions(rounding="stochastic", tininess="after")
    with pytest.raises(OptionError, match=r"^unknown tininess 'early'; valid: after, before$"):
        UnitOptions(tininess="early")
    with pytest.raises(OptionError, match=r"^--tininess applies to units mul, add, sub, fma, "
                                          r"fms, cvt, mxq, dot, i2f, recip, rsqrt, exp2, div "
                                          r"and sqrt only, not mxdq$"):
        make_spec("mxdq", in_format="fp8e4m3", tininess="before")
    spec = make_spec("mul", tininess="before")
    assert spec.default_name == "fp_mul_e4m3fn_rne_tinybefore"
    assert make_spec("mul", **spec.option_values()) == spec
    assert "tininess" not in make_spec("mul", tininess="after").option_values()
    assert make_spec("mul", tininess="after") == make_spec("mul")
    for unit, values in (("mxq", {}), ("dot", {"in_format": "fp8e4m3"})):
        spec = make_spec(unit, tininess="before", **values)
        assert spec.default_name.endswith("_tinybefore")
        assert make_spec(unit, **spec.option_values()) == spec
        assert make_spec(unit, tininess="after", **values) == make_spec(unit, **values)
    with pytest.raises(OptionError, match=r"^--rounding stochastic detects tininess before "):
        make_spec("mxq", rounding="stochastic", tininess="after")
