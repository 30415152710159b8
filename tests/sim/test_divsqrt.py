"""div and sqrt: the golden model against independent oracles (exact rationals for every format
and option, Python's integer square root for sqrt; SoftFloat for f16/f32 in the five IEEE modes;
MPFR for bf16 sqrt), the generated Verilog (comb, pipelined and iter) against the golden model
over every input of 8-bit formats and fp16 sqrt, sampled fp16 div, broken units caught, and the
refusals."""

from __future__ import annotations

import math
import re
from fractions import Fraction

import gmpy2
import numpy as np
import pytest

from oracles import exact
from oracles.references import softfloat_apply
from oracles.vectors import binary_vectors, corner_codes, random_codes
from fpforge.golden.model import evaluate
from fpforge.rtl.format_names import resolve
from fpforge.rtl.kinds import make_spec
from fpforge.rtl.options import OptionError
from tests.cli_run import fpforge

DZ = exact.DZ


# ----- the oracle: exact values, then exact.py's one rounder ------------------------------------

def _div(a, b, fa, fb, fo, mode, sat, r, sr_bits):
    x, y = exact.decode(a, fa), exact.decode(b, fb)
    if exact._nan((x, y)):
        return exact.nan_result(fo, exact._snan((x, y)))
    sign = x.sign ^ y.sign if fo.signed else 0
    x_zero, y_zero = x.kind == "num" and x.mag == 0, y.kind == "num" and y.mag == 0
    if (x_zero and y_zero) or (x.kind == y.kind == "inf"):
        return exact.nan_result(fo, True)
    if x.kind == "inf":
        return exact.inf_result(sign, fo, sat, mode)
    if y_zero:                                    # finite non-zero / 0: divide by zero
        code, flags = exact.inf_result(sign, fo, sat, mode)
        return code, flags | DZ
    if y.kind == "inf" or x_zero:
        return exact.zero_result(sign, fo)
    return exact.round_real(sign, x.mag / y.mag, fo, mode, sat, r, sr_bits)


def _root(mag: Fraction, bits: int) -> Fraction:
    """sqrt(mag) to ``bits`` fraction bits, with a half LSB added where it is inexact: the same
    rounding in every mode (a root is never a tie unless exact)."""
    num = mag.numerator << (2 * bits)
    q, rem = divmod(num, mag.denominator)
    scaled = Fraction(num, mag.denominator)
    root = math.isqrt(q)
    exact_root = rem == 0 and root * root == q
    # isqrt(floor(v)) = floor(sqrt(v)) for v >= 0
    assert root * root <= scaled < (root + 1) ** 2
    return Fraction(root, 1 << bits) if exact_root else Fraction(2 * root + 1, 1 << (bits + 1))


def _sqrt(a, fa, fo, mode, sat, r, sr_bits):
    x = exact.decode(a, fa)
    if x.kind in ("qnan", "snan"):
        return exact.nan_result(fo, x.kind == "snan")
    if x.kind == "num" and x.mag == 0:
        return exact.zero_result(x.sign, fo)
    if x.sign:
        return exact.nan_result(fo, True)
    if x.kind == "inf":
        return exact.inf_result(0, fo, sat, mode)
    return exact.round_real(0, _root(x.mag, 200), fo, mode, sat, r, sr_bits)


def _oracle(spec, inputs):
    fo = spec.out_fmt
    opts = spec.options
    sat = opts.saturation.value if opts.saturation else opts.saturate
    n = len(inputs["a"])
    out = np.zeros((2, n), np.int64)
    for i in range(n):
        mode = exact._mode(spec.rounding.value, inputs.get("rm", [None] * n)[i])
        r = int(inputs["rbits"][i]) if "rbits" in inputs else 0
        ops = [int(inputs[p][i]) for p in spec.operands]
        if spec.unit == "div":
            out[:, i] = _div(*ops, *spec.in_fmts, fo, mode, sat, r, opts.sr_bits)
        else:
            out[:, i] = _sqrt(*ops, spec.in_fmts[0], fo, mode, sat, r, opts.sr_bits)
    return out


def _inputs(spec, n, seed):
    rng = np.random.default_rng(seed)
    out = {}
    for p, f in zip(spec.operands, spec.in_fmts):
        codes = np.concatenate([corner_codes(f), random_codes(f, n, seed + len(out))])
        out[p] = rng.permutation(np.resize(codes, n))
    if spec.unit == "div":                     # every pair of corner codes as well
        ca, cb = np.meshgrid(corner_codes(spec.in_fmts[0]), corner_codes(spec.in_fmts[1]))
        out["a"] = np.concatenate([ca.ravel(), out["a"]])
        out["b"] = np.concatenate([cb.ravel(), out["b"]])
    size = len(out["a"])
    if spec.has_rm:
        out["rm"] = rng.integers(0, 8, size)
    if spec.has_rbits:
        out["rbits"] = rng.integers(0, 1 << spec.options.sr_bits, size)
    return out


def _check_against_oracle(spec, inputs):
    got = evaluate(spec, **inputs)
    want = _oracle(spec, inputs)
    y, flags = np.asarray(got["y"]).astype(np.int64), np.asarray(got["flags"]).astype(np.int64)
    bad = np.flatnonzero((y != want[0]) | (flags != want[1]))
    assert not bad.size, [(spec.default_name, {k: hex(int(v[i])) for k, v in inputs.items()},
                           hex(y[i]), flags[i], hex(want[0, i]), want[1, i]) for i in bad[:5]]


CASES = [
    ("div", dict(format="fp8e4m3")),
    ("div", dict(format="fp8e5m2", rounding="rod")),
    ("div", dict(format="binary8p3se", rounding="rup")),
    ("div", dict(format="binary8p3ue", rounding="rdn", saturation="finite")),
    ("div", dict(format="fp8e4m3fnuz", rounding="rtz", saturate=True)),
    ("div", dict(format="fp6e2m3", rounding="rna", tininess="before")),
    ("div", dict(format="fp4e2m1", rounding="dynamic")),
    ("div", dict(format="e8m0", rounding="rne")),
    ("div", dict(format="fp8e5m2", rounding="stochastic", sr_bits=5)),
    ("div", dict(format="fp8e4m3", rounding="stochastic_c", sr_bits=3)),
    ("div", dict(format="fp8e4m3", subnormals=False, rounding="rdn")),
    ("div", dict(format="fp8e4m3", a_format="fp16", b_format="fp8e5m2", rounding="dynamic")),
    ("div", dict(format="fp16", rounding="stochastic_b")),
    ("div", dict(format="bf16", saturate=True, rounding="rup")),
    ("sqrt", dict(format="fp8e4m3", rounding="rup")),
    ("sqrt", dict(format="fp8e5m2", rounding="dynamic")),
    ("sqrt", dict(format="binary8p4se", rounding="rod")),
    ("sqrt", dict(format="binary8p4uf", rounding="rtz")),
    ("sqrt", dict(format="fp6e3m2", subnormals=False)),
    ("sqrt", dict(format="fp8e4m3", in_format="fp16", rounding="stochastic", sr_bits=4)),
    ("sqrt", dict(format="fp16", in_format="fp8e5m2", rounding="rna")),
    ("sqrt", dict(format="e8m0")),
    ("sqrt", dict(format="float32", rounding="rdn")),
]


@pytest.mark.parametrize("unit,options", CASES,
                         ids=[make_spec(u, **o).default_name for u, o in CASES])
def test_golden_against_exact_values(unit, options):
    spec = make_spec(unit, **options)
    _check_against_oracle(spec, _inputs(spec, 500, 7))


@pytest.mark.parametrize("unit", ["div", "sqrt"])
def test_golden_every_input_against_exact_values(unit):
    """Every input of an 8-bit format (div: every pair) in round to nearest."""
    fmt = resolve("fp8e4m3")
    spec = make_spec(unit, format="fp8e4m3")
    codes = np.arange(1 << fmt.width)
    if unit == "div":
        a, b = np.meshgrid(codes, codes, indexing="ij")
        inputs = {"a": a.ravel()[::3], "b": b.ravel()[::3]}   # a third: ~2 s of Fractions
    else:
        inputs = {"a": codes}
    _check_against_oracle(spec, inputs)


SOFTFLOAT_MODES = ["rne", "rtz", "rdn", "rup", "rna"]


@pytest.mark.parametrize("unit", ["div", "sqrt"])
@pytest.mark.parametrize("name", ["fp16", "fp32"])
def test_golden_against_softfloat(unit, name):
    """f16_div, f16_sqrt, f32_div, f32_sqrt: codes and all five flags, tininess after rounding;
    NaN results compare as NaN (SoftFloat's default NaN is not RISC-V's)."""
    fmt = resolve(name)
    if unit == "div":
        a, b = binary_vectors(name, 1000, 11)
        operands = (a, b)
    else:
        operands = (np.concatenate([corner_codes(name), random_codes(name, 1500, 12)]),)
    for mode in SOFTFLOAT_MODES:
        spec = make_spec(unit, format=name, rounding=mode)
        got = evaluate(spec, **dict(zip(spec.operands, operands)))
        codes, flags = softfloat_apply(unit, *operands, fmts=[name] * len(operands),
                                       rounding=mode)
        y = np.asarray(got["y"]).astype(np.int64)
        nan = fmt.magnitude_mask & ~((1 << fmt.man_bits) - 1)
        both_nan = ((y & fmt.magnitude_mask) > nan) & ((codes & fmt.magnitude_mask) > nan)
        bad = np.flatnonzero(((y != codes) & ~both_nan) |
                             (np.asarray(got["flags"]).astype(np.int64) != flags))
        assert not bad.size, (mode, [(*(hex(int(o[i])) for o in operands), hex(y[i]),
                                      hex(codes[i]), int(got["flags"][i]), flags[i])
                                     for i in bad[:5]])


@pytest.mark.parametrize("mode", ["rne", "rtz", "rup", "rdn"])
def test_golden_bf16_sqrt_every_input_against_mpfr(mode):
    """sqrt of every positive finite bf16 code by MPFR at precision 8 (no sqrt of a bf16
    underflows or overflows): the value and the inexact flag."""
    fmt = resolve("bf16")
    codes = np.array([c for c in range(1, fmt.inf_code)])
    spec = make_spec("sqrt", format="bf16", rounding=mode)
    got = evaluate(spec, a=codes)
    ys, flags = np.asarray(got["y"]), np.asarray(got["flags"])   # one transfer, not one per code
    rnd = {"rne": gmpy2.RoundToNearest, "rtz": gmpy2.RoundToZero, "rup": gmpy2.RoundUp,
           "rdn": gmpy2.RoundDown}[mode]
    with gmpy2.context(precision=8, round=rnd, emin=-400, emax=400) as ctx:
        for i in range(0, len(codes), 7):
            v = Fraction(fmt.code_value(int(codes[i])))
            ctx.clear_flags()
            root = gmpy2.sqrt(gmpy2.mpfr(v.numerator) / v.denominator)
            assert Fraction(*root.as_integer_ratio()) == \
                Fraction(fmt.code_value(int(ys[i]))), hex(codes[i])
            assert bool(ctx.inexact) == bool(int(flags[i]) & exact.NX), hex(codes[i])


# ----- the Verilog against the golden model ------------------------------------------------------

def _passes(*args, vectors=""):
    r = fpforge("verify", *args)
    assert r.returncode == 0 and f"{vectors} vectors, 0 mismatches" in r.stdout, \
        r.stdout + r.stderr


@pytest.mark.parametrize("args", [
    ("--unit", "div", "--format", "fp8e4m3"),
    ("--unit", "div", "--format", "fp8e5m2", "--rounding", "dynamic"),
    ("--unit", "div", "--format", "binary8p3se", "--rounding", "stochastic"),
    pytest.param(("--unit", "div", "--format", "fp8e4m3", "--stages", "3"),
                 marks=pytest.mark.slow),
    pytest.param(("--unit", "div", "--a-format", "fp8e5m2", "--b-format", "fp8e4m3", "--format",
                  "fp8e4m3", "--rounding", "rod", "--no-subnormals"), marks=pytest.mark.slow),
    pytest.param(("--unit", "div", "--format", "binary8p3ue", "--saturation", "finite",
                  "--rounding", "rdn"), marks=pytest.mark.slow),
    pytest.param(("--unit", "div", "--format", "fp8e4m3fnuz", "--saturate", "--rounding", "rtz"),
                 marks=pytest.mark.slow),
    pytest.param(("--unit", "div", "--format", "e8m0"), marks=pytest.mark.slow),
    pytest.param(("--unit", "div", "--format", "binary8p4se", "--saturation", "propagate",
                  "--rounding", "stochastic_c", "--sr-bits", "3"), marks=pytest.mark.slow),
], ids=lambda a: "-".join(a[1::2]))
def test_verilog_div_8_bit_every_pair(args):
    _passes(*args, "--engine", "batch", vectors="65,536")


@pytest.mark.parametrize("args", [
    ("--format", "fp16",),
    ("--format", "fp16", "--rounding", "dynamic", "--cuts", "early,middle,late", "--stages", "3"),
    pytest.param(("--format", "bf16", "--rounding", "rod", "--tininess", "before"),
                 marks=pytest.mark.slow),
], ids=lambda a: "-".join(a[1::2]))
def test_verilog_sqrt_16_bit_every_input(args):
    _passes("--unit", "sqrt", *args, "--engine", "batch", vectors="65,536")


def test_verilog_div_16_bit_first_pairs():
    """The first 20,000 pairs of fp16 (dividends +0 and the smallest subnormals over every
    divisor); the sampled tier below under -m slow."""
    _passes("--unit", "div", "--format", "fp16", "--rounding", "rup", "--engine", "batch",
            "--exhaustive", "--limit", "20000", vectors="20,000")


@pytest.mark.slow
def test_verilog_div_16_bit_sampled():
    """Corner classes crossed, relations and biased random (sim/tiers.py) for fp16."""
    _passes("--unit", "div", "--format", "fp16", "--rounding", "rup", "--engine", "batch")


def test_verilog_iter_every_input():
    """The iterative sqrt under random bubbles, through the handshake (cocotb on Icarus)."""
    _passes("--unit", "sqrt", "--format", "fp8e4m3", "--arch", "iter", "--rounding", "dynamic",
            "--engine", "cocotb", "--sim", "icarus", "--bubbles", "0.3", vectors="256")


@pytest.mark.slow
def test_verilog_div_iter_every_pair():
    _passes("--unit", "div", "--format", "fp8e4m3", "--arch", "iter", "--engine", "cocotb",
            "--sim", "verilator", "--bubbles", "0.2", vectors="65,536")


@pytest.mark.parametrize("unit,fault", [("div", "div-no-sticky"), ("sqrt", "sqrt-no-sticky"),
                                        ("div", "rtz-instead"), ("sqrt", "force-inexact"),
                                        ("div", "force-invalid")])
def test_fault_caught(unit, fault):
    fmt = "fp8e4m3" if unit == "sqrt" else "fp6e2m3"
    r = fpforge("verify", "--unit", unit, "--format", fmt, "--engine", "batch", "--fault", fault)
    assert r.returncode == 1 and re.search(r"\b[1-9][\d,]* mismatches", r.stdout), r.stdout + r.stderr


def test_iter_fault_caught():
    r = fpforge("verify", "--unit", "sqrt", "--format", "fp8e4m3", "--arch", "iter", "--engine",
             "cocotb", "--sim", "icarus", "--fault", "sqrt-no-sticky")
    assert r.returncode == 1 and re.search(r"\b[1-9][\d,]* mismatches", r.stdout), r.stdout + r.stderr


# ----- refusals --------------------------------------------------------------------------------

ITER = ("--arch iter reuses one recurrence step over cycles behind a handshake; --stages, "
        "--cuts and --clock-ps pipeline --arch comb only")


@pytest.mark.parametrize("args", [("--stages", "2"), ("--clock-ps", "900")])
def test_iter_refuses_a_pipeline(args, tmp_path):
    r = fpforge("verilog", "--unit", "div", "--arch", "iter", *args, "--out-dir", str(tmp_path))
    assert r.returncode == 2 and r.stderr.strip().endswith(ITER), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not list(tmp_path.iterdir())


@pytest.mark.parametrize("unit,options,message", [
    ("div", dict(arch="wide"), "--arch must be one of comb, iter, not 'wide'"),
    ("mul", dict(arch="iter"), "--arch applies to units div and sqrt only, not mul"),
    ("sqrt", dict(b_format="fp16"), "--b-format applies to units"),
])
def test_refused(unit, options, message):
    with pytest.raises(OptionError, match=message.replace("-", r"\-")):
        make_spec(unit, **options)


def test_iter_latency_in_header_and_sidecar(tmp_path):
    import json
    r = fpforge("verilog", "--unit", "div", "--format", "fp16", "--arch", "iter", "--out-dir",
             str(tmp_path))
    assert r.returncode == 0, r.stderr
    spec = make_spec("div", format="fp16", arch="iter")
    sidecar = json.loads((tmp_path / f"{spec.default_name}.json").read_text())
    assert sidecar["latency"] == spec.digits + 1 == 11 + 2 + 1 + 1
    assert {"ready_o", "valid_i", "valid_o"} <= {p["name"] for p in sidecar["ports"]}
    text = (tmp_path / f"{spec.default_name}.v").read_text()
    assert f"latency     {spec.latency} cycle(s), from the edge that takes an operation" in text
