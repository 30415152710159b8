"""Quick bit-exact tests of the generated units against the golden model.

Every case simulates the Verilog of one unit (sim/vectors.py, Icarus) and compares ``y`` *and*
``flags`` with ``golden.evaluate`` vector by vector. Tiers:

* exhaustive: every operand pair of 8-bit mul / add, every code of cvt from formats of <= 16
  bits;
* sampled (fixed seeds): fma, and the 16-bit mul / add, with a share of vectors biased towards
  cancellation (c = -round(a*b), b = -a nudged);
* every rounding mode, dynamic ``rm`` (random per vector, reserved codes included) and stochastic
  ``rbits`` (random per vector), saturating and not, flushed subnormals, mixed formats, pipelines;
* a deliberately broken unit (truncating where rne is specified) must be caught.
"""

from __future__ import annotations

import numpy as np
import pytest

import golden
from rtl.formats import catalog_formats, resolve
from rtl.fp_units import FpMul, build
from rtl.spec import UnitSpec
from sim.vectors import simulate, simulate_spec

STATIC = ("rne", "rtz", "rdn", "rup", "rna", "rod")


# ----- vectors ----------------------------------------------------------------------------------

def all_pairs(fa, fb):
    a, b = np.meshgrid(np.arange(1 << resolve(fa).width, dtype=np.uint32),
                       np.arange(1 << resolve(fb).width, dtype=np.uint32), indexing="ij")
    return [a.ravel(), b.ravel()]


def random_codes(rng, fmt, n):
    return rng.integers(0, 1 << resolve(fmt).width, n, dtype=np.uint64).astype(np.uint32)


def sampled(spec: UnitSpec, n: int, seed: int):
    """Uniform random codes, then cancellation-biased vectors in the last third."""
    rng = np.random.default_rng(seed)
    ops = [random_codes(rng, f, n) for f in spec.in_fmts]
    k = n // 3
    if spec.unit == "fma":
        # c = -(a*b) rounded into c's format: the sum cancels to a few bits (or to zero).
        mul = UnitSpec("mul", spec.in_fmts[2], spec.in_fmts[:2])
        p, _ = golden.evaluate(mul, ops[0][-k:], ops[1][-k:])
        p = np.asarray(p).astype(np.uint32)
        cf = spec.in_fmts[2]
        if cf.signed:
            p ^= np.uint32(cf.sign_mask)
        ops[2][-k:] = p ^ rng.integers(0, 4, k, dtype=np.uint32) * (rng.random(k) < 0.5)
    elif spec.unit == "add" and spec.in_fmts[0] == spec.in_fmts[1]:
        f = spec.in_fmts[0]
        flip = 0 if spec.subtract else f.sign_mask
        ops[1][-k:] = (ops[0][-k:] ^ np.uint32(flip)) + rng.integers(-2, 3, k).astype(np.uint32)
        ops[1] &= np.uint32((1 << f.width) - 1)
    return ops


def mode_inputs(spec: UnitSpec, n: int, seed: int):
    rng = np.random.default_rng(seed + 1)
    rm = rng.integers(0, 8, n, dtype=np.uint32) if spec.has_rm else None
    rbits = (rng.integers(0, 1 << spec.options.sr_bits, n, dtype=np.uint64).astype(np.uint32)
             if spec.has_rbits else None)
    return rm, rbits


# ----- comparison -------------------------------------------------------------------------------

def mismatches(spec: UnitSpec, ops, rm, rbits, y, flags):
    """Indices where the unit's (y, flags) differ from the golden model's."""
    gy, gf = golden.evaluate(spec, *ops, rm=rm, rbits=rbits)
    gy, gf = np.asarray(gy).astype(np.uint32), np.asarray(gf).astype(np.uint32)
    bad = np.nonzero((y != gy) | (flags != gf))[0]
    return bad, gy, gf


def describe(spec, ops, rm, rbits, y, flags, gy, gf, bad, limit=8) -> str:
    lines = [f"{spec.describe()}: {len(bad)} of {len(y)} vectors differ"]
    for i in bad[:limit]:
        operands = ", ".join(f"{p}={int(o[i]):#x} ({fmt.code_value(int(o[i]))})"
                             for p, o, fmt in zip(spec.operands, ops, spec.in_fmts))
        extra = (f" rm={int(rm[i])}" if rm is not None else "") + \
            (f" rbits={int(rbits[i]):#x}" if rbits is not None else "")
        lines.append(f"  {operands}{extra}: unit y={int(y[i]):#x} flags={int(flags[i]):05b}, "
                     f"golden y={int(gy[i]):#x} flags={int(gf[i]):05b}")
    return "\n".join(lines)


def check(spec: UnitSpec, ops, seed: int = 0):
    rm, rbits = mode_inputs(spec, len(ops[0]), seed)
    y, flags = simulate_spec(spec, *ops, rm=rm, rbits=rbits)
    bad, gy, gf = mismatches(spec, ops, rm, rbits, y, flags)
    assert len(bad) == 0, describe(spec, ops, rm, rbits, y, flags, gy, gf, bad)


def spec_id(spec: UnitSpec) -> str:
    name = spec.default_name
    return name + ("_ftz" if not spec.subnormals else "")


# ----- exhaustive 8-bit mul and add ---------------------------------------------------------------

EXHAUSTIVE_2OP = [
    *[UnitSpec.create(u, "fp8e4m3", rounding=r) for u in ("mul", "add")
      for r in STATIC + ("dynamic", "stochastic")],
    UnitSpec.create("mul", "fp8e4m3", saturate=True),
    UnitSpec.create("add", "fp8e4m3", saturate=True, rounding="dynamic"),
    UnitSpec.create("mul", "fp8e5m2"),
    UnitSpec.create("add", "fp8e5m2", rounding="rup", saturate=True),
    UnitSpec.create("add", "fp8e5m2", subtract=True, rounding="rdn"),
    UnitSpec.create("mul", "float8_e4m3fnuz", rounding="dynamic"),
    UnitSpec.create("add", "float8_e5m2fnuz", rounding="rod"),
    UnitSpec.create("mul", "float8_e3m4", rounding="stochastic"),
    UnitSpec.create("mul", "e8m0", rounding="dynamic"),
    UnitSpec.create("add", "e8m0", rounding="stochastic", saturate=True),
    UnitSpec.create("mul", "fp6e2m3", rounding="dynamic"),
    UnitSpec.create("add", "fp4e2m1", rounding="dynamic"),
    # flushed subnormals
    UnitSpec.create("mul", "fp8e4m3", subnormals=False, rounding="dynamic"),
    UnitSpec.create("add", "fp8e5m2", subnormals=False, rounding="dynamic"),
    UnitSpec.create("mul", "fp8e5m2", subnormals=False, rounding="stochastic"),
    # mixed formats
    UnitSpec.create("mul", "bf16", a_fmt="fp8e4m3", b_fmt="fp8e5m2", rounding="dynamic"),
    UnitSpec.create("add", "fp16", a_fmt="fp8e4m3", b_fmt="fp8e5m2"),
    UnitSpec.create("add", "fp8e4m3", a_fmt="fp8e5m2", b_fmt="fp6e3m2", rounding="dynamic"),
    UnitSpec.create("mul", "fp4e2m1", a_fmt="fp8e4m3", b_fmt="fp8e5m2", rounding="dynamic"),
    # pipelined
    UnitSpec.create("mul", "fp8e4m3", stages=2, rounding="dynamic"),
    UnitSpec.create("add", "fp8e5m2", stages=1),
]


@pytest.mark.parametrize("spec", EXHAUSTIVE_2OP, ids=spec_id)
def test_exhaustive_8bit(spec):
    check(spec, all_pairs(*spec.in_fmts))


# ----- exhaustive cvt from every format of <= 16 bits ------------------------------------------

CVT_SOURCES = catalog_formats(16)
CVT = [
    *[UnitSpec.create("cvt", "fp8e4m3", in_fmt=f, rounding="dynamic") for f in CVT_SOURCES],
    *[UnitSpec.create("cvt", "fp4e2m1", in_fmt=f, rounding="stochastic") for f in CVT_SOURCES],
    *[UnitSpec.create("cvt", "e8m0", in_fmt=f, rounding="dynamic") for f in CVT_SOURCES],
    *[UnitSpec.create("cvt", "fp32", in_fmt=f) for f in CVT_SOURCES if f.width <= 8],
    *[UnitSpec.create("cvt", out, in_fmt="fp16", rounding=r, saturate=sat)
      for out, r, sat in [("fp8e5m2", "rod", False), ("fp8e5m2", "stochastic", True),
                          ("bf16", "dynamic", False), ("float8_e4m3fnuz", "rna", True)]],
    UnitSpec.create("cvt", "fp16", in_fmt="bf16", rounding="dynamic"),
    UnitSpec.create("cvt", "fp8e4m3", in_fmt="fp16", subnormals=False, rounding="dynamic"),
    UnitSpec.create("cvt", "fp8e4m3", in_fmt="bf16", stages=2, rounding="stochastic"),
]


@pytest.mark.parametrize("spec", CVT, ids=spec_id)
def test_cvt_exhaustive(spec):
    check(spec, [np.arange(1 << spec.in_fmts[0].width, dtype=np.uint32)])


# ----- sampled: fma, 16/32-bit mul and add --------------------------------------------------------

SAMPLED = [
    (UnitSpec.create("fma", "fp8e4m3", rounding="dynamic"), 30000),
    (UnitSpec.create("fma", "fp8e4m3", rounding="stochastic", saturate=True), 20000),
    (UnitSpec.create("fma", "fp8e5m2", rounding="rod"), 20000),
    (UnitSpec.create("fma", "fp8e4m3", subnormals=False, rounding="dynamic"), 20000),
    (UnitSpec.create("fma", "e8m0", rounding="dynamic"), 20000),
    (UnitSpec.create("fma", "bf16", a_fmt="fp8e4m3", b_fmt="fp8e5m2", c_fmt="bf16",
                     rounding="dynamic"), 30000),
    (UnitSpec.create("fma", "fp8e4m3", c_fmt="fp16", rounding="dynamic"), 20000),
    (UnitSpec.create("fma", "bf16", rounding="dynamic"), 30000),
    (UnitSpec.create("fma", "fp16", rounding="dynamic", stages=2), 20000),
    (UnitSpec.create("mul", "fp16", rounding="dynamic"), 30000),
    (UnitSpec.create("add", "bf16", rounding="dynamic"), 30000),
    (UnitSpec.create("add", "fp16", subtract=True, rounding="stochastic"), 20000),
    # Icarus evaluates the 32-bit datapaths slowly (~10^3 vectors/s): few vectors here, more in
    # the slow sweep.
    (UnitSpec.create("mul", "fp32", rounding="dynamic"), 3000),
    (UnitSpec.create("add", "fp32", rounding="dynamic", stages=3), 3000),
]


@pytest.mark.parametrize("spec,n", [
    pytest.param(s, n, id=spec_id(s)) for s, n in SAMPLED])
def test_sampled(spec, n):
    check(spec, sampled(spec, n, seed=len(spec.default_name)), seed=n)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", [f for f in catalog_formats(8)], ids=str)
@pytest.mark.parametrize("unit", ["mul", "add"])
@pytest.mark.parametrize("rounding", STATIC + ("stochastic",))
def test_exhaustive_8bit_sweep(unit, fmt, rounding):
    spec = UnitSpec.create(unit, fmt, rounding=rounding)
    check(spec, all_pairs(fmt, fmt))


@pytest.mark.slow
@pytest.mark.parametrize("unit", ["mul", "add", "fma"])
@pytest.mark.parametrize("fmt", ["fp8e4m3", "fp8e5m2", "fp16", "bf16", "fp32"])
def test_sampled_sweep(unit, fmt):
    spec = UnitSpec.create(unit, fmt, rounding="dynamic")
    check(spec, sampled(spec, 100000 if resolve(fmt).width <= 16 else 20000, seed=7), seed=7)


# ----- the comparison catches a broken unit -----------------------------------------------------

def test_truncating_unit_is_caught():
    """A multiplier that truncates (rtz) where rne is specified must fail the same comparison."""
    spec = UnitSpec.create("mul", "fp8e4m3", rounding="rne")
    broken = FpMul(UnitSpec.create("mul", "fp8e4m3", rounding="rtz"))
    ops = all_pairs("fp8e4m3", "fp8e4m3")
    out = simulate(broken, dict(zip(spec.operands, ops)), name="fp_mul_e4m3fn_broken")
    bad, gy, gf = mismatches(spec, ops, None, None, out["y"], out["flags"])
    assert len(bad) > 1000
    with pytest.raises(AssertionError, match="vectors differ"):
        assert len(bad) == 0, describe(spec, ops, None, None, out["y"], out["flags"], gy, gf,
                                       bad)


# ----- ports and structure ----------------------------------------------------------------------

@pytest.mark.parametrize("spec", [
    UnitSpec.create("mul", "fp8e4m3"),
    UnitSpec.create("fma", "bf16", rounding="dynamic", stages=2),
    UnitSpec.create("cvt", "fp8e4m3", in_fmt="fp32", rounding="stochastic", stages=1),
    UnitSpec.create("add", "fp16", subtract=True),
], ids=spec_id)
def test_ports(spec):
    from amaranth.back import verilog
    from amaranth.hdl import Shape
    from amaranth.lib.wiring import In, Out

    unit = build(spec)
    members = unit.signature.members
    expected = {p: In(f.width) for p, f in zip(spec.operands, spec.in_fmts)}
    expected |= {"y": Out(spec.out_fmt.width), "flags": Out(5)}
    if spec.has_rm:
        expected["rm"] = In(3)
    if spec.has_rbits:
        expected["rbits"] = In(spec.options.sr_bits)
    if spec.stages:
        expected |= {"valid_i": In(1), "valid_o": Out(1)}
    assert {k: (m.flow, Shape.cast(m.shape).width) for k, m in members.items()} == \
        {k: (m.flow, Shape.cast(m.shape).width) for k, m in expected.items()}
    assert unit.latency == spec.stages
    rtl = verilog.convert(unit, name=spec.default_name, emit_src=False)
    assert (" clk" in rtl) == bool(spec.stages)


def test_build_rejects_non_spec():
    with pytest.raises(TypeError, match="spec must be a UnitSpec, not 'mul'"):
        build("mul")
