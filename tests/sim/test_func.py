"""The function kinds (recip, rsqrt, exp2): the golden model against MPFR (gmpy2) over every
input of 8- and 16-bit formats, the generated Verilog against the golden model over every input
(batch engine), correct and faithful, the kind's fault caught, the options refused."""

from __future__ import annotations

import re
from fractions import Fraction

import gmpy2
import numpy as np
import pytest

from fpforge.golden.model import evaluate
from fpforge.rtl.format_names import resolve
from fpforge.rtl.kinds import make_spec
from fpforge.rtl.options import RM_CODES, Flag, OptionError
from fpforge.sim.design import Design
from fpforge.sim.engines.batch import BatchEngine
from tests.rtl.export_cases import check_batch, export_all
from tests.cli_run import fpforge

UNITS = ("recip", "rsqrt", "exp2")
MPFR_MODES = {"rne": gmpy2.RoundToNearest, "rtz": gmpy2.RoundToZero, "rup": gmpy2.RoundUp,
              "rdn": gmpy2.RoundDown}
_FUNCTIONS = {"recip": lambda x: 1 / x, "rsqrt": gmpy2.rec_sqrt, "exp2": gmpy2.exp2}
WIDE = dict(precision=300, emin=-100000, emax=100000)


def _mpfr(unit, fmt, v: Fraction, rounding: str):
    """MPFR's correctly rounded f(v) in ``fmt``'s precision and exponent range (subnormals by
    MPFR's subnormalize), as (value: Fraction or None past the largest finite, inexact)."""
    p = fmt.precision
    narrow = dict(precision=p, emin=fmt.emin - p + 2, emax=fmt.emax + 1, subnormalize=True)
    with gmpy2.context(**WIDE):
        x = gmpy2.mpfr(gmpy2.mpq(v.numerator, v.denominator))
    if rounding == "rna":
        # Ties: only a power of two halfway below the smallest subnormal can be one here.
        with gmpy2.context(**WIDE) as wide:
            exact = _FUNCTIONS[unit](x)
            tie = not wide.inexact and Fraction(*exact.as_integer_ratio()) == \
                fmt.min_subnormal / 2
        mode = gmpy2.RoundAwayZero if tie else gmpy2.RoundToNearest
    else:
        mode = MPFR_MODES[rounding]
    with gmpy2.context(**narrow, round=mode) as c:
        r = _FUNCTIONS[unit](x)
        inexact = c.inexact
    if gmpy2.is_infinite(r) or abs(Fraction(*r.as_integer_ratio())) > fmt.max_finite:
        return None, True
    return Fraction(*r.as_integer_ratio()), inexact


def _finite_inputs(unit, fmt):
    """The codes whose result MPFR rounds: finite nonzero x (rsqrt: positive)."""
    for code in range(1 << fmt.width):
        cls = fmt.classify(code)
        if cls in ("normal", "subnormal") and not (unit == "rsqrt" and code & fmt.sign_mask):
            yield code


def _check_against_mpfr(unit, name, rounding, accuracy="correct", stride=1):
    """Every ``stride``-th finite input (all of them by default)."""
    fmt = resolve(name)
    spec = make_spec(unit, format=name, rounding=rounding, accuracy=accuracy)
    codes = np.array(list(_finite_inputs(unit, fmt))[::stride])
    out = evaluate(spec, x=codes)
    ys, flags = np.asarray(out["y"]), np.asarray(out["flags"])
    checked = 0
    for code, y, fl in zip(codes, ys, flags):
        v = Fraction(fmt.code_value(int(code)))
        got = fmt.code_value(int(y))
        where = (unit, name, rounding, hex(code), hex(y))
        if accuracy == "faithful":
            down, _ = _mpfr(unit, fmt, v, "rdn")
            up, inexact = _mpfr(unit, fmt, v, "rup")
            if down is None or up is None:
                continue                        # past the largest finite: the rounder's
            assert Fraction(got) in (down, up), where
            assert bool(fl & Flag.NX) == inexact, where
        else:
            want, inexact = _mpfr(unit, fmt, v, rounding)
            if want is None:
                assert fl & Flag.OF, where
                continue
            assert Fraction(got) == want and bool(fl & Flag.NX) == inexact, where
        checked += 1
    assert checked > len(codes) // 2


# 8-bit formats of every family, fp6, and the 16-bit ones.
FORMATS = ["fp8e4m3", "fp8e5m2", "binary8p3se", "fp6e2m3"]


@pytest.mark.parametrize("rounding", ["rne", "rdn"])
@pytest.mark.parametrize("name", FORMATS)
@pytest.mark.parametrize("unit", UNITS)
def test_golden_against_mpfr(unit, name, rounding):
    _check_against_mpfr(unit, name, rounding)


@pytest.mark.parametrize("name", ["fp16", "bf16"])
@pytest.mark.parametrize("unit", UNITS)
def test_golden_16_bit_against_mpfr(unit, name):
    """Every 29th input here; every input in every mode in the slow tier."""
    _check_against_mpfr(unit, name, "rne", stride=29)
    _check_against_mpfr(unit, name, "rup", stride=29)


@pytest.mark.slow
@pytest.mark.parametrize("rounding", ["rne", "rtz", "rup", "rdn", "rna"])
@pytest.mark.parametrize("name", FORMATS + ["fp16", "bf16", "fp8e4m3fnuz", "binary8p4se"])
@pytest.mark.parametrize("unit", UNITS)
def test_golden_every_mode_against_mpfr(unit, name, rounding):
    _check_against_mpfr(unit, name, rounding)


@pytest.mark.parametrize("name", ["fp8e4m3", "binary8p3se", "bf16"])
@pytest.mark.parametrize("unit", UNITS)
def test_faithful_golden_is_a_neighbour(unit, name):
    _check_against_mpfr(unit, name, "rne", "faithful", stride=1 if resolve(name).width <= 8
                        else 29)


@pytest.mark.slow
@pytest.mark.parametrize("rounding", ["rne", "rtz", "rup", "rdn", "rna"])
@pytest.mark.parametrize("name", ["fp16", "bf16"])
@pytest.mark.parametrize("unit", UNITS)
def test_faithful_golden_16_bit_is_a_neighbour(unit, name, rounding):
    _check_against_mpfr(unit, name, rounding, "faithful")


SPECIALS = {
    # (unit, class of x, x negative) -> (result: "nan", "inf", "-inf", "+0", "-0", 1, flags)
    ("recip", "zero", False): ("inf", Flag.DZ), ("recip", "zero", True): ("-inf", Flag.DZ),
    ("recip", "inf", False): ("+0", 0), ("recip", "inf", True): ("-0", 0),
    ("rsqrt", "zero", False): ("inf", Flag.DZ), ("rsqrt", "zero", True): ("-inf", Flag.DZ),
    ("rsqrt", "inf", False): ("+0", 0), ("rsqrt", "inf", True): ("nan", Flag.NV),
    ("rsqrt", "normal", True): ("nan", Flag.NV), ("rsqrt", "subnormal", True): ("nan", Flag.NV),
    ("exp2", "zero", False): (1, 0), ("exp2", "zero", True): (1, 0),
    ("exp2", "inf", False): ("inf", 0), ("exp2", "inf", True): ("+0", 0),
}


@pytest.mark.parametrize("unit", UNITS)
def test_special_values_and_flags(unit):
    """IEEE 754-2019 9.2's special cases in fp16 (NaNs quiet, signaling NaNs invalid)."""
    fmt = resolve("fp16")
    codes = np.arange(1 << 16)
    out = evaluate(make_spec(unit, format="fp16"), x=codes)
    ys, flags = np.asarray(out["y"]), np.asarray(out["flags"])
    seen = set()
    for code in range(1 << 16):
        cls, neg = fmt.classify(code), bool(code >> 15)
        y, fl = int(ys[code]), int(flags[code])
        if cls in ("nan", "snan"):
            assert y == fmt.nan_code and fl == (Flag.NV if cls == "snan" else 0), hex(code)
            continue
        want = SPECIALS.get((unit, cls, neg))
        if want is None:
            assert not fl & (Flag.DZ | Flag.NV), hex(code)
            continue
        seen.add((cls, neg))
        value, want_flags = want
        got = fmt.code_value(y)
        text = {"nan": "nan", "inf": "inf", "-inf": "-inf"}.get(str(got), None)
        if value in ("+0", "-0"):
            assert got == 0 and (y >> 15) == (value == "-0"), hex(code)
        elif value == 1:
            assert got == 1, hex(code)
        else:
            assert text == value, hex(code)
        assert fl == want_flags, (hex(code), fl)
    assert seen == {(c, n) for (u, c, n) in SPECIALS if u == unit}


def test_exp2_exact_only_at_integers():
    fmt = resolve("bf16")
    codes = np.arange(1 << 16)
    flags = np.asarray(evaluate(make_spec("exp2", format="bf16"), x=codes)["flags"])
    for code in range(0, 1 << 16, 3):
        v = fmt.code_value(code)
        if isinstance(v, Fraction) and -100 < v < 100:          # 2^v a normal bf16 value
            assert bool(flags[code] & Flag.NX) == (v.denominator != 1), hex(code)


def _verify(*args):
    r = fpforge("verify", *args, "--engine", "batch")
    assert r.returncode == 0 and ", 0 mismatches" in r.stdout, r.stdout + r.stderr
    return r.stdout


OPTIONS = [("--format", "fp8e4m3", "--rounding", "dynamic"),
           ("--format", "binary8p3se", "--rounding", "rup", "--accuracy", "faithful")]
MORE_OPTIONS = [("--format", "fp8e5m2"), ("--format", "fp6e3m2", "--rounding", "rdn",
                                          "--stages", "2"),
                ("--format", "fp8e4m3fnuz", "--rounding", "rna", "--saturate"),
                ("--format", "fp8e5m2", "--no-subnormals", "--accuracy", "faithful")]


@pytest.mark.parametrize("unit", UNITS)
@pytest.mark.parametrize("options", OPTIONS + [pytest.param(o, marks=pytest.mark.slow)
                                               for o in MORE_OPTIONS])
def test_verilog_exhaustive_against_golden(unit, options):
    _verify("--unit", unit, *options)


@pytest.mark.parametrize("unit,name", [("recip", "fp16"), ("rsqrt", "bf16")])
def test_verilog_16_bit_every_input(unit, name):
    assert "65,536 vectors, 0 mismatches" in _verify("--unit", unit, "--format", name)


@pytest.mark.slow
@pytest.mark.parametrize("accuracy", ["correct", "faithful"])
@pytest.mark.parametrize("name", ["fp16", "bf16"])
@pytest.mark.parametrize("unit", UNITS)
def test_verilog_16_bit_every_input_slow(unit, name, accuracy):
    assert "65,536 vectors, 0 mismatches" in _verify("--unit", unit, "--format", name,
                                                     "--accuracy", accuracy)


# exp2's wide datapath corrects a few codes found at generation time: every input in every
# static mode (rne, rtz, rdn, rup, rna) through one dynamic-rounding build, 5 x 2^16 vectors.
# The faithful fp16 datapath runs with the slow sweeps (16 CPU-s): the faithful bf16 one and
# the correct fp16 one prove both the accuracy's and the format's corrections in the quick set.
@pytest.mark.parametrize("name, accuracy", [
    ("fp16", "correct"), pytest.param("fp16", "faithful", marks=pytest.mark.slow),
    ("bf16", "correct"), ("bf16", "faithful")])
def test_exp2_wide_every_input_every_mode(name, accuracy):
    spec = make_spec("exp2", format=name, accuracy=accuracy, rounding="dynamic")
    modes = np.array(sorted(RM_CODES.values()), dtype=np.uint32)
    x = np.tile(np.arange(1 << 16, dtype=np.uint32), len(modes))
    rm = np.repeat(modes, 1 << 16)
    got = BatchEngine().simulate(Design.of(spec), {"x": x, "rm": rm})
    want = evaluate(spec, x=x, rm=rm)
    for port in ("y", "flags"):
        bad = np.flatnonzero(np.asarray(got[port]) != np.asarray(want[port]))
        assert not bad.size, f"{port}: {bad.size} mismatches, first x={x[bad[0]]:#06x} " \
            f"rm={rm[bad[0]]}"


def test_exp2_wide_verilog_lint_clean_and_deterministic(tmp_path):
    """The kind examples are 8-bit (the per-code table): the fp16 datapath through the same
    three readers, combinational, pipelined and stochastic, exported twice alike."""
    specs = [make_spec("exp2", format="fp16"),
             make_spec("exp2", format="fp16", accuracy="faithful", stages=2,
                       rounding="stochastic")]
    paths = export_all(specs, tmp_path)
    check_batch(paths, specs)
    (tmp_path / "again").mkdir()
    assert export_all(specs[:1], tmp_path / "again")[0].read_text() == paths[0].read_text()


@pytest.mark.parametrize("unit,fault", [("recip", "func-faithful-as-correct"),
                                        ("rsqrt", "func-faithful-as-correct"),
                                        ("exp2", "func-faithful-as-correct"),
                                        ("rsqrt", "rtz-instead"), ("exp2", "force-inexact")])
def test_fault_caught(unit, fault):
    r = fpforge("verify", "--unit", unit, "--format", "fp8e5m2", "--engine", "batch",
             "--fault", fault)
    assert r.returncode != 0 and re.search(r"\b[1-9][\d,]* mismatches", r.stdout), r.stdout + r.stderr


@pytest.mark.parametrize("unit,options,message", [
    ("recip", dict(format="float32"), "unit recip takes formats of at most 16 bits; "
     "float32 has 32"),
    ("exp2", dict(accuracy="exact"), "--accuracy must be one of correct, faithful, not 'exact'"),
    ("rsqrt", dict(in_format="fp16"), "--in-format applies to units"),
    ("mul", dict(accuracy="faithful"), "--accuracy applies to units recip, rsqrt and exp2 only"),
])
def test_refused(unit, options, message):
    with pytest.raises(OptionError, match=message.replace("(", r"\(").replace(")", r"\)")):
        make_spec(unit, **options)


def test_wide_format_cli_writes_nothing(tmp_path):
    r = fpforge("verilog", "--unit", "exp2", "--format", "float32",
             "--out-dir", str(tmp_path))
    assert r.returncode == 2 and "at most 16 bits" in r.stderr and not list(tmp_path.iterdir())
