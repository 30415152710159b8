"""Quick bit-exact tests of the scalar units (mul, add, sub, fma, cvt) against the golden model.

Every case simulates the Verilog of one unit (the batch Icarus engine) and compares ``y`` *and*
``flags`` with ``golden.evaluate`` vector by vector (rtl_check.py). Tiers:

* exhaustive: every operand pair of 8-bit mul / add / sub, every code of cvt from formats of
  <= 16 bits;
* sampled (fixed seeds): fma, and the 16/32-bit mul / add / sub, with a share of vectors biased
  towards cancellation (c = -round(a*b), b = -a nudged);
* every rounding mode, dynamic ``rm`` (random per vector, reserved codes included) and stochastic
  ``rbits`` (random per vector), saturating and not, flushed subnormals, mixed formats, pipelines;
* a deliberately broken unit (truncating where rne is specified) must be caught.
"""

from __future__ import annotations

import pytest
from amaranth.hdl import Shape
from amaranth.lib.wiring import In, Out

from fpforge.rtl import emit
from fpforge.rtl.formats import catalog_formats
from fpforge.rtl.format_names import resolve
from fpforge.rtl.kinds import KINDS, build, make_spec
from fpforge.rtl.options import RM_WIDTH
from fpforge.sim.check import Checker, expected, raise_on_failure
from fpforge.sim.faults import faulty_design

from tests.rtl.fp_units.rtl_check import ENGINE, check_scalar, every_input, sampled

STATIC = ("rne", "rtz", "rdn", "rup", "rna", "rod")


def spec_id(spec) -> str:
    return spec.default_name + ("_ftz" if not spec.subnormals else "")


# ----- exhaustive 8-bit mul, add and sub --------------------------------------------------------

# mul's static modes other than rne run in make test-all only: add's exhaustive run in each of
# them (below) takes the same rounder through every mode, and
# test_exhaustive_8bit[fp_mul_e4m3fn_dynamic] takes mul's through all of them vector by vector.
MUL_STATIC_SLOW = ("rtz", "rdn", "rup", "rna", "rod")

EXHAUSTIVE_2OP = [
    *[pytest.param(make_spec(u, format="fp8e4m3", rounding=r), marks=pytest.mark.slow)
      if u == "mul" and r in MUL_STATIC_SLOW else make_spec(u, format="fp8e4m3", rounding=r)
      for u in ("mul", "add") for r in STATIC + ("dynamic", "stochastic")],
    make_spec("mul", format="fp8e4m3", saturate=True),
    make_spec("add", format="fp8e4m3", saturate=True, rounding="dynamic"),
    make_spec("mul", format="fp8e5m2"),
    make_spec("add", format="fp8e5m2", rounding="rup", saturate=True),
    make_spec("sub", format="fp8e5m2", rounding="rdn"),
    make_spec("sub", format="fp8e4m3", rounding="dynamic"),
    make_spec("mul", format="float8_e4m3fnuz", rounding="dynamic"),
    make_spec("add", format="float8_e5m2fnuz", rounding="rod"),
    make_spec("mul", format="float8_e3m4", rounding="stochastic"),
    make_spec("mul", format="e8m0", rounding="dynamic"),
    make_spec("add", format="e8m0", rounding="stochastic", saturate=True),
    make_spec("mul", format="fp6e2m3", rounding="dynamic"),
    make_spec("add", format="fp4e2m1", rounding="dynamic"),
    # flushed subnormals
    make_spec("mul", format="fp8e4m3", subnormals=False, rounding="dynamic"),
    make_spec("add", format="fp8e5m2", subnormals=False, rounding="dynamic"),
    make_spec("mul", format="fp8e5m2", subnormals=False, rounding="stochastic"),
    # mixed formats
    make_spec("mul", format="bf16", a_format="fp8e4m3", b_format="fp8e5m2", rounding="dynamic"),
    make_spec("add", format="fp16", a_format="fp8e4m3", b_format="fp8e5m2"),
    make_spec("add", format="fp8e4m3", a_format="fp8e5m2", b_format="fp6e3m2",
              rounding="dynamic"),
    make_spec("sub", format="fp8e4m3", a_format="fp6e2m3", b_format="fp8e5m2",
              rounding="stochastic"),
    make_spec("mul", format="fp4e2m1", a_format="fp8e4m3", b_format="fp8e5m2",
              rounding="dynamic"),
    # pipelined
    make_spec("mul", format="fp8e4m3", stages=2, rounding="dynamic"),
    make_spec("add", format="fp8e5m2", stages=1),
]


@pytest.mark.parametrize("spec", EXHAUSTIVE_2OP, ids=spec_id)
def test_exhaustive_8bit(spec):
    check_scalar(spec, every_input(spec))


# ----- exhaustive cvt from every format of <= 16 bits ------------------------------------------

CVT_SOURCES = [f.name for f in catalog_formats(16)]
CVT = [
    *[make_spec("cvt", format="fp8e4m3", in_format=f, rounding="dynamic") for f in CVT_SOURCES],
    *[make_spec("cvt", format="fp4e2m1", in_format=f, rounding="stochastic")
      for f in CVT_SOURCES],
    *[make_spec("cvt", format="e8m0", in_format=f, rounding="dynamic") for f in CVT_SOURCES],
    *[make_spec("cvt", format="fp32", in_format=f) for f in CVT_SOURCES
      if resolve(f).width <= 8],
    *[make_spec("cvt", format=out, in_format="fp16", rounding=r, saturate=sat)
      for out, r, sat in [("fp8e5m2", "rod", False), ("fp8e5m2", "stochastic", True),
                          ("bf16", "dynamic", False), ("float8_e4m3fnuz", "rna", True)]],
    make_spec("cvt", format="fp16", in_format="bf16", rounding="dynamic"),
    make_spec("cvt", format="fp8e4m3", in_format="fp16", subnormals=False, rounding="dynamic"),
    make_spec("cvt", format="fp8e4m3", in_format="bf16", stages=2, rounding="stochastic"),
]


@pytest.mark.parametrize("spec", CVT, ids=spec_id)
def test_cvt_exhaustive(spec):
    check_scalar(spec, every_input(spec))


# ----- sampled: fma, 16/32-bit mul, add and sub ---------------------------------------------------

# Vectors per unit: every rm code (reserved ones included) near a thousand times, a third of the
# vectors cancelling; test_sampled_sweep (make test-all) runs 100,000 of fp8, fp16 and bf16 mul,
# add, sub and fma.
SAMPLED = [
    (make_spec("fma", format="fp8e4m3", rounding="dynamic"), 10000),
    (make_spec("fma", format="fp8e4m3", rounding="stochastic", saturate=True), 7000),
    (make_spec("fma", format="fp8e5m2", rounding="rod"), 7000),
    (make_spec("fma", format="fp8e4m3", subnormals=False, rounding="dynamic"), 7000),
    (make_spec("fma", format="e8m0", rounding="dynamic"), 7000),
    (make_spec("fma", format="bf16", a_format="fp8e4m3", b_format="fp8e5m2", c_format="bf16",
               rounding="dynamic"), 10000),
    (make_spec("fma", format="fp8e4m3", c_format="fp16", rounding="dynamic"), 7000),
    (make_spec("fma", format="bf16", rounding="dynamic"), 10000),
    (make_spec("fma", format="fp16", rounding="dynamic", stages=2), 7000),
    (make_spec("mul", format="fp16", rounding="dynamic"), 10000),
    (make_spec("add", format="bf16", rounding="dynamic"), 10000),
    (make_spec("sub", format="fp16", rounding="stochastic"), 7000),
    # Icarus evaluates the 32-bit datapaths slowly (~10^3 vectors/s): few vectors here, more in
    # the slow sweep.
    (make_spec("mul", format="fp32", rounding="dynamic"), 3000),
    (make_spec("add", format="fp32", rounding="dynamic", stages=3), 3000),
]


@pytest.mark.parametrize("spec,n", [pytest.param(s, n, id=spec_id(s)) for s, n in SAMPLED])
def test_sampled(spec, n):
    check_scalar(spec, sampled(spec, n, seed=len(spec.default_name)), seed=n)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", [f.name for f in catalog_formats(8)])
@pytest.mark.parametrize("unit", ["mul", "add", "sub"])
@pytest.mark.parametrize("rounding", STATIC + ("stochastic",))
def test_exhaustive_8bit_sweep(unit, fmt, rounding):
    spec = make_spec(unit, format=fmt, rounding=rounding)
    check_scalar(spec, every_input(spec))


@pytest.mark.slow
@pytest.mark.parametrize("unit", ["mul", "add", "sub", "fma"])
@pytest.mark.parametrize("fmt", ["fp8e4m3", "fp8e5m2", "fp16", "bf16", "fp32"])
def test_sampled_sweep(unit, fmt):
    spec = make_spec(unit, format=fmt, rounding="dynamic")
    check_scalar(spec, sampled(spec, 100000 if resolve(fmt).width <= 16 else 20000, seed=7),
                 seed=7)


# ----- the comparison catches a broken unit -----------------------------------------------------

def test_truncating_unit_is_caught():
    """A multiplier that truncates (rtz) where rne is specified must fail the same comparison."""
    spec = make_spec("mul", format="fp8e4m3", rounding="rne")
    inputs = every_input(spec)
    got = ENGINE.simulate(faulty_design(spec, "rtz-instead"), inputs)
    checker = Checker(spec, spec.inputs(), spec.outputs())
    checker.check(inputs, 0, expected(spec, inputs), got)
    assert checker.mismatches > 1000
    with pytest.raises(AssertionError, match=r"^\d+ of 65536 vectors mismatch "
                                             r"\(fp_mul_e4m3fn_rne, seed 0\); first ones:\n#"):
        raise_on_failure(checker, spec.default_name, 0)


# ----- ports and structure ----------------------------------------------------------------------

@pytest.mark.parametrize("spec", [
    make_spec("mul", format="fp8e4m3"),
    make_spec("fma", format="bf16", rounding="dynamic", stages=2),
    make_spec("cvt", format="fp8e4m3", in_format="fp32", rounding="stochastic", stages=1),
    make_spec("sub", format="fp16"),
], ids=spec_id)
def test_ports(spec):
    """The component's signature, written out from the spec's fields here (not from
    ``spec.ports()``); a clock exactly when pipelined."""
    unit = build(spec)
    expected_members = {p: In(f.width) for p, f in zip(spec.operands, spec.in_fmts)}
    expected_members |= {"y": Out(spec.out_fmt.width), "flags": Out(5)}
    if spec.has_rm:
        expected_members["rm"] = In(RM_WIDTH)
    if spec.has_rbits:
        expected_members["rbits"] = In(spec.options.sr_bits)
    if spec.stages:
        expected_members |= {"valid_i": In(1), "valid_o": Out(1)}
    shape = lambda members: {k: (m.flow, Shape.cast(m.shape).width)  # noqa: E731
                             for k, m in members.items()}
    assert shape(unit.signature.members) == shape(expected_members)
    assert unit.latency == spec.stages
    text = emit.convert(unit, spec.default_name)
    assert (" clk" in text) == bool(spec.stages)


def test_build_rejects_non_spec():
    classes = ", ".join(kd.spec.__name__ for kd in KINDS.values())
    with pytest.raises(TypeError, match=rf"^spec must be a Spec \({classes}\), not 'mul'$"):
        build("mul")
