"""The MX units (mxq, mxdq, dot) in the cocotb bench, against the golden model, bit for bit.

Every case on both simulators (``SIM=icarus`` or ``SIM=verilator`` keeps one; make test runs
one unit on Verilator, the others there in the slow tier only), in the same harness and checker as
the scalar kinds (one lane: their ports are wide). Quick tier: mxq fp8e4m3 k=32 (random,
inf/NaN, every adversarial class), mxq fp4e2m1 k=8 rceil through a 2-stage pipeline with
bubbles, mxdq fp8e4m3 k=4 under a slice of the scales, dot fp8e4m3 n=8 exact and fixed, and
deliberately wrong units that must be reported. Slow tier (``-m slow``): every element format x
every scale rule at k=32, bfloat16 input, stochastic rounding, dot every element-format pair at
n=32, mxdq every (scale, code) pair of every element format, pipelines with bubbles (the quick
tier's pipelined and cut fp4e2m1 quantizers at k=32 too).
"""

import itertools
import re

import numpy as np
import pytest

from fpforge.rtl.accum import Fixed, Grouped, TwoStage
from fpforge.rtl.dot import MxDotSpec
from fpforge.rtl.elements import ELEMENT_FORMATS
from fpforge.rtl.kinds import make_spec
from fpforge.rtl.mx import SCALE_RULES, MxDequantSpec, MxQuantSpec
from fpforge.rtl.pipeline import Pipeline
from fpforge.sim.design import Design
from fpforge.sim.engines.cocotb import CocotbEngine
from fpforge.sim.faults import faulty_design
from fpforge.sim.stimulus import generate
from fpforge.sim.stream import Plan
from fpforge.sim.tiers import simulators

ELEMS = tuple(ELEMENT_FORMATS)
MXQ = [["random", {"count": 64}], ["nonfinite", {"count": 16}], ["adversarial", {"per_class": 4}]]
MXQ_SLOW = [["random", {"count": 128}], ["nonfinite", {"count": 32}],
            ["adversarial", {"per_class": 8}]]
DOT = [["random", {"count": 192}], ["specials", {"count": 64}]]
# Scale codes of the quick mxdq slice: float32 subnormal and zero results at the bottom,
# overflow at the top, the NaN scale, and plain ones between.
QUICK_SCALES = [0, 1, 2, 10, 20, 100, 127, 128, 200, 230, 253, 254, 255]


def run(spec, stimulus, sim, *, fault=None, seed=1, bubbles=0.0, max_report=10):
    design = faulty_design(spec, fault) if fault else Design.of(spec)
    result = CocotbEngine(sim).verify(design, Plan(stimulus, seed=seed, bubbles=bubbles,
                                                   max_report=max_report))
    vectors = sum(len(next(iter(c.values())))
                  for c in generate(spec, stimulus, np.random.default_rng(seed), 1 << 16))
    return result, vectors


def check(spec, stimulus, sim, **kw):
    result, vectors = run(spec, stimulus, sim, **kw)
    if not result.ok:
        pytest.fail(result.explain(), pytrace=False)
    assert result["mismatches"] == 0 and result["vectors"] == vectors > 0
    return result


def ident(spec):
    return spec.default_name


# ----- quick tier ---------------------------------------------------------------------------------

# A cold Verilator build of an MX unit takes 10-80 CPU-s (CI builds every one cold): make test
# runs one unit on Verilator (test_block_units_cut_where_asked[mxdq_cut_decode-verilator], the
# cheapest build), the rest on Icarus; make test-all every case on both.
QUICK_SIMS = [pytest.param(s, marks=pytest.mark.slow) if s == "verilator" else s
              for s in simulators()]


@pytest.mark.parametrize("sim", QUICK_SIMS)
@pytest.mark.parametrize("spec,stimulus", [
    (MxQuantSpec("fp8e4m3"), MXQ),
    (MxDequantSpec("fp8e4m3", block=4), [["pairs", {"scales": QUICK_SCALES}]]),
    (MxDotSpec("fp8e4m3", n=8), DOT),
    (MxDotSpec("fp8e4m3", n=8, accum=Fixed(8)), DOT),
    # A tensor core's step, d = a.b + c: Hopper's F = 13 into e8m13 unscaled, and Blackwell's
    # F = 25 with the block scales in the step; E5M2 x E2M1 into bfloat16 with a bfloat16 c.
    (MxDotSpec("fp8e4m3", n=8, accum=Fixed(13), out_fmt="e8m13", rounding="rtz",
               c_fmt="float32", scaled=False), DOT),
    (MxDotSpec("fp8e4m3", n=8, accum=Fixed(25), rounding="rtz", c_fmt="float32"),
     DOT),
    (MxDotSpec("fp8e5m2", "fp4e2m1", n=4, accum=Fixed(10), out_fmt="bfloat16",
               c_fmt="bfloat16"), DOT),
    (MxQuantSpec("int4", block=8, scale_rule="rceil"), MXQ),
    (MxDotSpec("int4", n=8), DOT),
    # Blackwell's kind::mxf4nvf4 step (groups of 16 at their own scales, F = 35) with NVFP4's
    # E4M3 scales, and a short grouped E4M3 x E5M2 unit with E8M0 scales
    (MxDotSpec("fp4e2m1", n=64, accum=Grouped(35, 16), rounding="rtz",
               c_fmt="float32", scale_fmt="float8_e4m3fn"), DOT),
    (MxDotSpec("fp8e4m3", "fp8e5m2", n=8, accum=Grouped(12, 2),
               c_fmt="bfloat16"), DOT),
    # AMD CDNA3's two-stage step (F = 24, F2 = 31, rounded to nearest even)
    (MxDotSpec("fp8e5m2fnuz", "fp8e4m3fnuz", n=16, accum=TwoStage(24, 31), c_fmt="float32",
               scaled=False), DOT),
], ids=[
    "mxq_fp8e4m3_k32_floor", "mxdq_fp8e4m3_k4", "mxdot_fp8e4m3_n8_exact",
    "mxdot_fp8e4m3_n8_fixed8", "mxdot_hopper_step", "mxdot_blackwell_step",
    "mxdot_e5m2xe2m1_bf16_c", "mxq_int4_k8_rceil", "mxdot_int4_n8", "mxdot_mxf4nvf4_step",
    "mxdot_e4m3xe5m2_g2", "mxdot_cdna3_step"])
def test_combinational(spec, stimulus, sim):
    check(spec, stimulus, sim, seed=5)


# Bubbles through the stages do not depend on the block size: make test runs blocks of 8, make
# test-all the real 32 too (test_combinational[mxq_fp8e4m3_k32_floor-icarus] builds and checks
# a k=32 quantizer in make test). On Verilator in make test-all: make test runs this RTL on
# Icarus, and Verilator on a cut unit (test_block_units_cut_where_asked[mxdq_cut_decode-...]).
@pytest.mark.parametrize("block", [8, pytest.param(32, marks=pytest.mark.slow)])
@pytest.mark.parametrize("sim", QUICK_SIMS)
def test_pipelined_quantizer_with_bubbles(sim, block):
    spec = MxQuantSpec("fp4e2m1", block=block, scale_rule="rceil", pipeline=Pipeline(2))
    result = check(spec, MXQ, sim, seed=6, bubbles=0.3)
    # valid_i was low on some cycles (garbage on x), and every vector still came out in order
    assert result["steps"] > result["valid_steps"] == result["vectors"]


# The quantizer's cut points are the same at any block size: make test cuts blocks of 8, make
# test-all the real 32 too ([mxq_k32_cuts_amax_round-*]).
CUT_UNITS = [
    (make_spec("mxq", format="fp4e2m1", block=8, scale_rule="rceil", rounding="stochastic",
               cuts="amax,round", stages=3), MXQ),
    (make_spec("mxq", format="fp4e2m1", scale_rule="rceil", rounding="stochastic",
               cuts="amax,round", stages=3), MXQ),
    (make_spec("mxdq", in_format="fp6e3m2", block=4, cuts="decode"),
     [["pairs", {"scales": QUICK_SCALES}]]),
    (make_spec("dot", in_format="fp8e4m3", n=8, accum="fixed", frac_bits=8, c_format="bf16",
               cuts="decode,product,sum,round"), DOT),
]
CUT_IDS = ["mxq_cuts_amax_round", "mxq_k32_cuts_amax_round", "mxdq_cut_decode",
           "dot_every_cut"]


def _cut_cases():
    """Every cut unit on each simulator; on Verilator in make test only the dequantizer (the
    others' Verilator runs in make test-all: the same RTL as their Icarus runs here)."""
    for sim in simulators():
        for (spec, stimulus), name in zip(CUT_UNITS, CUT_IDS):
            slow = sim == "verilator" and name != "mxdq_cut_decode" or "k32" in name
            yield pytest.param(spec, stimulus, sim, id=f"{name}-{sim}",
                               marks=[pytest.mark.slow] if slow else [])


@pytest.mark.parametrize("spec, stimulus, sim", list(_cut_cases()))
def test_block_units_cut_where_asked(spec, stimulus, sim):
    """Registers at named cut points, the scales, c and random bits carried with the data:
    bit-exact through bubbles."""
    result = check(spec, stimulus, sim, seed=7, bubbles=0.3)
    assert result["steps"] > result["valid_steps"] == result["vectors"]


# ----- the bench can fail -------------------------------------------------------------------------

def run_fault(spec, stimulus, fault):
    result, vectors = run(spec, stimulus, simulators()[0], seed=7, fault=fault, max_report=4)
    assert not result.ok and result["vectors"] == vectors
    return result


def test_dot_step_with_one_fraction_bit_fewer_is_reported():
    """The tensor-core step built with F - 1: the truncation of products and c differs."""
    spec = MxDotSpec("fp8e4m3", n=8, accum=Fixed(13), out_fmt="e8m13",
                     rounding="rtz", c_fmt="float32", scaled=False)
    result = run_fault(spec, DOT, "frac-bits-fewer")
    assert 0 < result["mismatches"] < result["vectors"]


# Each half truncates to F bits at any length: make test builds CDNA3's step at n=8 (30 of its
# 256 vectors differ; 56 at n=16), make test-all at its real 16 too
# (test_combinational[mxdot_cdna3_step-icarus] builds and checks the n=16 step in make test).
@pytest.mark.parametrize("n", [8, pytest.param(16, marks=pytest.mark.slow)])
def test_two_stage_step_with_one_fraction_bit_fewer_is_reported(n):
    """CDNA3's step built with F = 23 (its halves' truncation)."""
    spec = MxDotSpec("fp8e4m3fnuz", n=n, accum=TwoStage(24, 31),
                     c_fmt="float32", scaled=False)
    result = run_fault(spec, DOT, "frac-bits-fewer")
    assert 0 < result["mismatches"] < result["vectors"]


# Two groups of 16 cancel as four do (1 of the 256 vectors differs at n=32 as at n=64): make
# test builds kind::mxf4nvf4's step at n=32, make test-all at its real 64 too
# (test_combinational[mxdot_mxf4nvf4_step-icarus] builds and checks the n=64 step in make test).
@pytest.mark.parametrize("n", [32, pytest.param(64, marks=pytest.mark.slow)])
def test_grouped_step_with_one_fraction_bit_fewer_is_reported(n):
    """kind::mxf4nvf4's step built with F = 34: cancelling groups and c show it."""
    spec = MxDotSpec("fp4e2m1", n=n, accum=Grouped(35, 16),
                     rounding="rtz", c_fmt="float32", scale_fmt="float8_e4m3fn")
    result = run_fault(spec, DOT, "frac-bits-fewer")
    assert 0 < result["mismatches"] < result["vectors"]


def test_quantizer_rounding_ties_away_is_reported():
    """Elements rounded ties-away where the spec says rne: only ties differ (element_ties)."""
    result = run_fault(MxQuantSpec("fp8e4m3", block=8), MXQ, "rna-instead")
    assert 0 < result["mismatches"] < result["vectors"]
    lines = result["first_mismatches"]
    assert lines[0].startswith("#") and "x=[0x" in lines[0]
    assert any(line.lstrip().startswith("y: ") and "elements differ" in line for line in lines)


def test_dot_forced_inexact_is_reported():
    result = run_fault(MxDotSpec("fp8e4m3", n=8), DOT, "force-inexact")
    # exact results are the ones that differ; inexact ones already carry NX
    assert 0 < result["mismatches"] < result["vectors"]
    # y and flags are one lane each: one expected/got line per mismatch, flags by name
    got = [x.split("got")[1] for x in result["first_mismatches"] if "expected y=" in x]
    assert got and all("flags=" in x and "NX" in x.split("flags=")[1] for x in got)


def test_dequantizer_format_mix_up_is_reported():
    """The fp8e5m2 dequantizer where the spec says fp8e4m3: NaN-scale blocks agree (all NaN)."""
    spec = MxDequantSpec("fp8e4m3", block=4)
    result = run_fault(spec, [["pairs", {"scales": [127, 255]}]], "other-element-format")
    assert 0 < result["mismatches"] < result["vectors"]
    # float32 results decoded: hex code, value, class
    assert re.match(r"    y: [1-4] of 4 elements differ: \[[0-3]\] expected 0x[0-9a-f]{8} "
                    r"\([^)]+, (zero|subnormal|normal|inf|nan)\) got 0x[0-9a-f]{8} \(",
                    result["first_mismatches"][1])



# ----- slow tier ----------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("sim", simulators())
@pytest.mark.parametrize("rule", SCALE_RULES)
@pytest.mark.parametrize("elem", ELEMS)
def test_every_format_and_rule(elem, rule, sim):
    check(MxQuantSpec(elem, scale_rule=rule), MXQ_SLOW, sim, seed=11)


@pytest.mark.slow
@pytest.mark.parametrize("sim", simulators())
@pytest.mark.parametrize("elem,rule", list(zip(ELEMS, itertools.cycle(SCALE_RULES))))
def test_bfloat16_input(elem, rule, sim):
    check(MxQuantSpec(elem, in_fmt="bfloat16", scale_rule=rule), MXQ_SLOW, sim, seed=12)


@pytest.mark.slow
@pytest.mark.parametrize("sim", simulators())
@pytest.mark.parametrize("elem", ELEMS)
def test_stochastic(elem, sim):
    check(MxQuantSpec(elem, scale_rule="rceil", rounding="stochastic"), MXQ_SLOW, sim, seed=13)


@pytest.mark.slow
@pytest.mark.parametrize("sim", simulators())
def test_stochastic_pipelined_bfloat16(sim):
    spec = MxQuantSpec("fp6e3m2", in_fmt="bfloat16", scale_rule="even", rounding="stochastic",
                       sr_bits=4, pipeline=Pipeline(3))
    check(spec, MXQ_SLOW, sim, seed=14, bubbles=0.4)


DOT_PAIRS = list(itertools.product(ELEMS, ELEMS))


@pytest.mark.slow
@pytest.mark.parametrize("sim", simulators())
@pytest.mark.parametrize("ea,eb", DOT_PAIRS, ids=[f"{a}x{b}" for a, b in DOT_PAIRS])
def test_dot_every_pair_n32(ea, eb, sim):
    check(MxDotSpec(ea, eb, n=32), [["random", {"count": 256}], ["specials", {"count": 128}]],
          sim, seed=15)


@pytest.mark.slow
@pytest.mark.parametrize("sim", simulators())
def test_dot_every_code_pair_pipelined(sim):
    """Every (a_0, b_0) code pair of fp4 x fp6, fixed accumulator, 2 stages with bubbles."""
    spec = MxDotSpec("fp4e2m1", "fp6e2m3", n=8, accum=Fixed(4), pipeline=Pipeline(2))
    result = check(spec, [["pairs", {}]], sim, seed=16, bubbles=0.25)
    assert result["vectors"] == 16 * 64


@pytest.mark.slow
@pytest.mark.parametrize("sim", simulators())
@pytest.mark.parametrize("elem", ELEMS)
def test_dequantizer_every_scale_and_code(elem, sim):
    result = check(MxDequantSpec(elem, block=4), [["pairs", {}]], sim, seed=17)
    assert result["vectors"] * 4 == 256 << ELEMENT_FORMATS[elem].width


@pytest.mark.slow
@pytest.mark.parametrize("sim", simulators())
def test_dequantizer_pipelined(sim):
    check(MxDequantSpec("fp4e2m1", block=32, pipeline=Pipeline(3)), [["pairs", {}]], sim,
          seed=18, bubbles=0.3)
