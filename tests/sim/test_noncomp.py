"""The non-computational kinds (sgnj, classify, min, max, cmp): the golden model against an
independent oracle (SoftFloat's comparisons for f16 and f32; exact values as Fractions for every
8-bit format, flushed formats and cmp of two formats among them), the generated Verilog against
the golden model over every input of 8-bit formats on the batch engine, a broken unit caught,
and the options each kind refuses."""

from __future__ import annotations

import re
from fractions import Fraction
from functools import cache

import numpy as np
import pytest

from fpforge.golden.model import evaluate
from fpforge.rtl.format_names import resolve
from fpforge.rtl.kinds import make_spec
from fpforge.rtl.noncomp import CLASS_BITS
from fpforge.rtl.options import OptionError
from fpforge.sim.design import Design
from fpforge.sim.faults import faulty_design
from fpforge.sim.verify import verify
from tests.cli_run import fpforge

FORMATS = ["fp8e4m3", "fp8e5m2", "binary8p3se", "fp8e4m3fnuz", "fp6e2m3", "e8m0"]
NV = 1 << 4


# Formats run again flushed (--no-subnormals): with -0, and fnuz without it (classify: P3109
# too).
FLUSHED = ["fp8e5m2", "fp8e4m3fnuz"]
CASES = [(name, True) for name in FORMATS] + [(name, False) for name in FLUSHED]


def _all_pairs(fmt, fmt_b=None):
    a, b = np.meshgrid(np.arange(1 << fmt.width), np.arange(1 << (fmt_b or fmt).width),
                       indexing="ij")
    return a.ravel(), b.ravel()


def _zero_code(fmt, neg):
    """The code of the zero a flushed subnormal is: signed where the format has -0."""
    return fmt.sign_mask if neg and fmt.has_neg_zero else 0


@cache         # the tests read each code of a format thousands of times, as a Fraction
def _value(fmt, code):
    """(class, exact value or None for NaN, negative) of one code, from formats.py's plain-Python
    reading (no golden code)."""
    cls = fmt.classify(code)
    neg = bool(code & fmt.sign_mask)
    if cls in ("nan", "snan"):
        return cls, None, neg
    if cls == "inf":
        return cls, (-1 if neg else 1) * Fraction(10) ** 9, neg
    return cls, Fraction(fmt.code_value(code)), neg


def _order(fmt, code):
    """The value, with -0 just below +0 (min and max order them so)."""
    cls, v, neg = _value(fmt, code)
    return (v, 0 if cls == "zero" and neg else 1)


# cmp of two formats: OCP E4M3 (no inf) x E5M2 (IEEE), P3109 (one NaN, no -0) x OCP E4M3,
# fnuz x an exponent-only format (no zero, no sign), flushed.
CMP_CASES = [(name, name, sub) for name, sub in CASES] + [
    ("fp8e4m3", "fp8e5m2", True), ("binary8p3se", "fp8e4m3", True),
    ("fp8e4m3fnuz", "e8m0", True), ("fp8e5m2", "binary8p4se", False)]


@pytest.mark.parametrize("name, b_name, subnormals", CMP_CASES)
def test_cmp_against_exact_values(name, b_name, subnormals):
    spec = make_spec("cmp", a_format=name, b_format=b_name, subnormals=subnormals)
    fmt, fmt_b = spec.in_fmts
    a, b = _all_pairs(fmt, fmt_b)
    for signaling in (0, 1):
        out = evaluate(spec, a=a, b=b, signaling=np.full(a.shape, signaling))
        y, flags = np.asarray(out["y"]), np.asarray(out["flags"])
        for i in range(0, len(a), 7):
            ca, va, _ = _value(fmt, int(a[i]))
            cb, vb, _ = _value(fmt_b, int(b[i]))
            un = va is None or vb is None
            want = 8 if un else (va == vb) | (va < vb) << 1 | (va <= vb) << 2
            snan = "snan" in (ca, cb)
            assert y[i] == want and bool(flags[i] & NV) == (un if signaling else snan), \
                (spec.default_name, hex(a[i]), hex(b[i]), signaling)


# A format without NaN has one policy (the option is refused there): it runs once; so does a
# flushed format (the policy and the flushing are apart).
MINMAX_CASES = [(name, minmax, sub) for name, sub in CASES
                for minmax in (("number", "ieee") if resolve(name).has_nan and sub else
                               ("number",))]


@pytest.mark.parametrize("unit", ["min", "max"])
@pytest.mark.parametrize("name, minmax, subnormals", MINMAX_CASES)
def test_min_max_against_exact_values(unit, minmax, name, subnormals):
    fmt = resolve(name).with_subnormals(subnormals)
    opts = {"minmax": minmax} if fmt.has_nan else {}
    a, b = _all_pairs(fmt)
    out = evaluate(make_spec(unit, format=name, subnormals=subnormals, **opts), a=a, b=b)
    y, flags = np.asarray(out["y"]), np.asarray(out["flags"])
    pick = min if unit == "min" else max
    for i in range(0, len(a), 5):
        ca, cb = int(a[i]), int(b[i])
        na, nb = _value(fmt, ca)[1] is None, _value(fmt, cb)[1] is None
        if na and nb or (na or nb) and minmax == "ieee":
            want = fmt.nan_code
        elif na or nb:
            want = cb if na else ca
        else:
            want = pick((ca, cb), key=lambda c: _order(fmt, c))
        cls, _, neg = _value(fmt, want)
        want = _zero_code(fmt, neg) if cls == "zero" else want     # a flushed one IS zero
        snan = "snan" in (fmt.classify(ca), fmt.classify(cb))
        assert (y[i], bool(flags[i] & NV)) == (want, snan), (unit, name, hex(ca), hex(cb))


@pytest.mark.parametrize("name, subnormals", CASES + [("binary8p3se", False), ("fp16", True),
                                                      ("bf16", True)])
def test_classify_against_formats_reading(name, subnormals):
    fmt = resolve(name).with_subnormals(subnormals)
    x = np.arange(1 << fmt.width)
    y = np.asarray(evaluate(make_spec("classify", format=name, subnormals=subnormals),
                            x=x)["y"])
    for code in range(0, 1 << fmt.width, 1 if fmt.width <= 8 else 13):
        cls, _, neg = _value(fmt, code)
        word = {"nan": "quiet NaN", "snan": "signaling NaN", "inf": "inf"}.get(cls, cls)
        if cls in ("zero",):
            word = "0"
        if cls not in ("nan", "snan"):
            word = ("-" if neg and (cls != "zero" or fmt.has_neg_zero) else "+") + word
        assert y[code] == 1 << CLASS_BITS.index(word), (name, hex(code), cls)


@pytest.mark.parametrize("name", ["fp8e4m3", "fp8e5m2", "binary8p3se", "fp8e4m3fnuz", "fp6e2m3"])
def test_sgnj_against_values(name):
    fmt = resolve(name)
    a, b = _all_pairs(fmt)
    for op in range(4):
        y = np.asarray(evaluate(make_spec("sgnj", format=name), a=a, b=b,
                                op=np.full(a.shape, op))["y"])
        for i in range(0, len(a), 11):
            ca, va, sa = _value(fmt, int(a[i]))
            _, _, sb = _value(fmt, int(b[i]))
            cy, vy, sy = _value(fmt, int(y[i]))
            if ca in ("zero", "nan", "snan") and not fmt.has_neg_zero:
                assert y[i] == a[i]
                continue
            sign = [sb, not sb, sa != sb, sa != sb][op]
            assert sy == sign and cy == ca, (name, op, hex(a[i]), hex(b[i]), hex(y[i]))
            assert va is None or abs(vy) == abs(va)


@pytest.mark.parametrize("bits", [16, 32])
def test_cmp_against_softfloat(bits):
    sf = pytest.importorskip("softfloatpy")
    rng = np.random.default_rng(bits)
    fmt = resolve(f"fp{bits}")
    # Random codes, with NaNs, infinities, zeros and equal pairs mixed in.
    special = np.array([0, fmt.sign_mask, fmt.inf_code, fmt.inf_code | fmt.sign_mask,
                        fmt.nan_code, fmt.inf_code + 1, 1, fmt.sign_mask | 1])
    a = np.concatenate([rng.integers(0, 1 << bits, 3000), np.repeat(special, 8)])
    b = np.concatenate([rng.integers(0, 1 << bits, 3000), np.tile(special, 8)])
    b[:300] = a[:300]
    kind = getattr(sf, f"Float{bits}")

    def make(code):
        return kind.from_bytes(code.to_bytes(bits // 8, "big"))
    f = f"f{bits}"
    spec = make_spec("cmp", format=f"fp{bits}")
    for signaling in (0, 1):
        out = evaluate(spec, a=a, b=b, signaling=np.full(a.shape, signaling))
        y, flags = np.asarray(out["y"]), np.asarray(out["flags"])
        preds = ((f"{f}_eq", f"{f}_lt_quiet", f"{f}_le_quiet") if not signaling else
                 (f"{f}_eq_signaling", f"{f}_lt", f"{f}_le"))
        for i in range(len(a)):
            x, z = make(int(a[i])), make(int(b[i]))
            got_flags = 0
            want = 0
            for k, p in enumerate(preds):
                sf.set_exception_flags(0)
                want |= int(bool(getattr(sf, p)(x, z))) << k
                got_flags |= int(sf.get_exception_flags())
            assert y[i] & 7 == want, (hex(a[i]), hex(b[i]), signaling)
            assert bool(flags[i] & NV) == bool(got_flags & int(sf.ExceptionFlag.INVALID)), \
                (hex(a[i]), hex(b[i]), signaling)


@pytest.mark.parametrize("unit", ["sgnj", "classify", "min", "max", "cmp"])
@pytest.mark.parametrize("name", ["fp8e4m3", "fp8e5m2", "binary8p3se"])
def test_verilog_exhaustive_against_golden(unit, name):
    r = fpforge("verify", "--unit", unit, "--format", name, "--engine", "batch")
    assert r.returncode == 0 and ", 0 mismatches" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("unit", ["min", "max", "cmp", "classify"])
@pytest.mark.parametrize("name", ["fp8e5m2", "fp8e4m3fnuz"])
def test_flushed_verilog_exhaustive_against_golden(unit, name):
    """--no-subnormals over every input pair (batch engine, in process)."""
    spec = make_spec(unit, format=name, subnormals=False)
    v = verify(Design.of(spec), engine="batch")
    assert v.ok and v.vectors == 1 << sum(p.width for p in spec.inputs()), v.explain()


@pytest.mark.parametrize("a_name, b_name", [("fp8e4m3", "fp8e5m2"), ("binary8p3se", "fp8e4m3")])
def test_two_format_cmp_verilog_exhaustive_against_golden(a_name, b_name):
    v = verify(Design.of(make_spec("cmp", a_format=a_name, b_format=b_name)), engine="batch")
    assert v.ok and v.vectors == 2 << 16, v.explain()


@pytest.mark.parametrize("unit,fault,options", [
    ("cmp", "force-invalid", dict(a_format="fp8e4m3", b_format="fp8e5m2")),
    ("min", "other-minmax", dict(format="fp8e5m2", subnormals=False))])
def test_fault_caught_in_new_options(unit, fault, options):
    v = verify(faulty_design(make_spec(unit, **options), fault), engine="batch")
    assert not v.ok and v.mismatches > 0, v.explain()


@pytest.mark.parametrize("unit,fault", [("min", "other-minmax"),
                                        ("max", "other-minmax"),
                                        ("max", "force-invalid"),
                                        ("cmp", "cmp-zeros-ordered"),
                                        ("cmp", "force-invalid"),
                                        ("sgnj", "sgnj-copy-only"),
                                        ("classify", "classify-no-subnormal")])
def test_fault_caught(unit, fault):
    r = fpforge("verify", "--unit", unit, "--format", "fp8e5m2", "--engine", "batch",
             "--fault", fault)
    assert r.returncode != 0 and re.search(r"\b[1-9][\d,]* mismatches", r.stdout), r.stdout + r.stderr


@pytest.mark.parametrize("unit,options,message", [
    ("classify", dict(rounding="rtz"), "--rounding applies to units"),
    ("cmp", dict(minmax="ieee"), "--minmax applies to units min, max and amax only"),
    ("min", dict(format="fp6e3m2", minmax="ieee"), "has no NaN"),
    ("sgnj", dict(format="e8m0"), "sgnj needs a signed format"),
    ("sgnj", dict(subnormals=False), "--no-subnormals applies to units .* only, not sgnj "
                                     r"\(it moves a sign bit and reads no value\)"),
    ("min", dict(a_format="fp8e5m2"), "--a-format applies to units .*cmp.* only, not min"),
])
def test_refused(unit, options, message):
    with pytest.raises(OptionError, match=message.replace("-", r"\-")):
        make_spec(unit, **options)


@pytest.mark.parametrize("unit", ["min", "cmp", "sgnj"])
def test_pipelined_verilog_exhaustive_against_golden(unit):
    r = fpforge("verify", "--unit", unit, "--format", "fp8e4m3", "--stages", "2", "--engine", "batch")
    assert r.returncode == 0 and ", 0 mismatches" in r.stdout, r.stdout + r.stderr


@pytest.mark.parametrize("unit", ["cmp", "max", "sgnj"])
def test_verilog_16_bit_sampled_against_golden(unit):
    """Corner codes crossed and near pairs (sim/stimulus/scalar.py noncomp_part) for fp16."""
    r = fpforge("verify", "--unit", unit, "--format", "fp16", "--engine", "batch")
    assert r.returncode == 0 and ", 0 mismatches" in r.stdout, r.stdout + r.stderr


def test_classify_16_bit_every_input():
    r = fpforge("verify", "--unit", "classify", "--format", "bf16", "--engine", "batch")
    assert r.returncode == 0 and "65,536 vectors, 0 mismatches" in r.stdout, r.stdout + r.stderr


def test_synthesized(tmp_path):
    """All five through fpforge synth (ASIC only): one record each, the NaN policy in min's."""
    import json
    r = fpforge("synth", "--unit", "min,max,sgnj,classify,cmp", "--format", "fp8e4m3", "--no-fpga",
             "--out", str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
    (records,) = tmp_path.glob("*/records.json")
    got = {rec["unit"]: rec for rec in json.loads(records.read_text())}
    assert sorted(got) == ["classify", "cmp", "max", "min", "sgnj"]
    assert "minmax number" in got["min"]["options"]
