"""The value-scaled block units against the golden model, bit for bit: mxq and mxdq under
--scale-rule nvfp4_te / nvfp4_modelopt / nvfp4_torchao / nvfp4_4over6 / p3109_maxabs, the dot
unit with E4M3 (or Binary8p1uf) scales; and the golden unit functions against the library
quantizer that tests/golden/test_blockscale.py cross-checks with independent references.

Quick tier: every recipe's quantizer (random blocks, blocks with inf or NaN, every adversarial
class, each with tensor amaxes from 2^-4 to 2^12 times the block's and the corner amaxes 0,
the smallest subnormal, FLT_MAX, inf, NaN) and dequantizer (every E4M3 scale code under every
element code) on the batch engine (Icarus), stochastic rounding with TE's recipe, a pipelined
quantizer, and the deliberately wrong clamp of each recipe, which must be reported. Slow tier:
each quantizer again on 96 random and 16 non-finite blocks (the quick tier's 4 and 5), TE's
and torchao's quick quantizers and dequantizers (whose arithmetic make test runs in the other
tests named beside them), TE's wrong clamp and P3109's preset quantizer at their real block
(make test runs them on small blocks: both are per-block arithmetic), and the cocotb engine on
both simulators.
"""

import numpy as np
import pytest

from fpforge.golden.blockscale import block_quantize
from fpforge.golden.mx import mxq_unit
from fpforge.rtl.kinds import make_spec
from fpforge.rtl.mx import VALUE_RULES
from fpforge.rtl.options import OptionError
from fpforge.sim.design import Design
from fpforge.sim.engines.batch import BatchEngine
from fpforge.sim.engines.cocotb import CocotbEngine
from fpforge.sim.faults import faulty_design
from fpforge.sim.stimulus import generate
from fpforge.sim.stream import Plan
from fpforge.sim.tiers import simulators

NVFP4 = ("nvfp4_te", "nvfp4_modelopt", "nvfp4_torchao")
TENSOR_SCALED = [r for r in VALUE_RULES if r.startswith("nvfp4")]
MXQ = [["random", {"count": 96}], ["nonfinite", {"count": 16}], ["adversarial", {"per_class": 3}]]
MXDQ = [["pairs", {}]]
# A fault needs only to show: the corner classes catch each one here (wrong-clamp nvfp4_te: 18
# of their 58 vectors mismatch; rtz-instead p3109_maxabs: 49) at a fraction of the CPU of MXQ,
# whose 96 random blocks cost Icarus about 0.25 s each.
MXQ_CORNERS = MXQ[1:]
# TE's wrong clamp shows in the non-finite blocks alone (7 of 16 mismatch), whose Icarus runs
# cost 0.8 CPU-s where the adversarial classes' cost 4.7.
NONFINITE = MXQ[1:2]
# The unfaulted quantizers in make test: every adversarial class, every NaN pattern (one per
# non-finite block, in turn), every corner tensor amax (one every 7 rows of the adversarial
# blocks) and a few random blocks (about 0.3 Icarus CPU-s each); all of MXQ in the slow tier.
MXQ_QUICK = [["random", {"count": 4}], ["nonfinite", {"count": 5}], MXQ[2]]
TIERS = [pytest.param(MXQ_QUICK, id="quick"),
         pytest.param(MXQ, id="full", marks=pytest.mark.slow)]
# Recipes whose quick quantizer is make test-all's only: torchao's, which make test runs in
# test_pipelined_quantizer[quick] (block 8, two stages); TE's, whose scale arithmetic make test
# runs in test_stochastic_quantizer[quick] and its round-to-nearest element cast in
# test_quantizer[nvfp4_modelopt-quick] (and its RTL, faulted, in test_wrong_clamp_is_caught).
QUICK_IN_SLOW_TIER = ("nvfp4_te", "nvfp4_torchao")


def run(spec, stimulus, engine, *, fault=None, seed=3):
    design = faulty_design(spec, fault) if fault else Design.of(spec)
    result = engine.verify(design, Plan(stimulus, seed=seed))
    vectors = sum(len(next(iter(c.values())))
                  for c in generate(spec, stimulus, np.random.default_rng(seed), 1 << 16))
    return result, vectors


def check(spec, stimulus, engine, **kw):
    result, vectors = run(spec, stimulus, engine, **kw)
    explain = result.explain() if hasattr(result, "explain") else result["first_mismatches"]
    assert result["mismatches"] == 0 and result["vectors"] == vectors > 0, explain


def _quantizer_cases():
    for rule in NVFP4:
        for tier in TIERS:
            slow = tier.id == "full" or rule in QUICK_IN_SLOW_TIER
            yield pytest.param(rule, tier.values[0], id=f"{rule}-{tier.id}",
                               marks=[pytest.mark.slow] if slow else [])


@pytest.mark.parametrize("rule,stimulus", list(_quantizer_cases()))
def test_quantizer(rule, stimulus):
    check(make_spec("mxq", scale_rule=rule), stimulus, BatchEngine())


# torchao's dequantizer is ModelOpt's q * (sf * s2), 4over6's TE's with another global max: both
# in make test-all only, [nvfp4_modelopt] and [nvfp4_te] run the arithmetic in make test.
@pytest.mark.parametrize("rule", [pytest.param(r, marks=pytest.mark.slow)
                                  if r in ("nvfp4_torchao", "nvfp4_4over6") else r
                                  for r in TENSOR_SCALED])
def test_dequantizer_every_scale_and_code(rule):
    check(make_spec("mxdq", scale_rule=rule), MXDQ, BatchEngine())


@pytest.mark.parametrize("stimulus", TIERS)
def test_stochastic_quantizer(stimulus):
    check(make_spec("mxq", scale_rule="nvfp4_te", rounding="stochastic", sr_bits=6), stimulus,
          BatchEngine())


@pytest.mark.parametrize("stimulus", TIERS)
def test_pipelined_quantizer(stimulus):
    check(make_spec("mxq", scale_rule="nvfp4_torchao", block=8, stages=2), stimulus,
          BatchEngine())


# One recipe's fault in make test, on 4-element blocks: the clamp guards each block's scale
# whatever its size (7 of the 16 non-finite blocks mismatch at k=4 as at 16; NVFP4's k=16
# quantizer is built and checked in make test by test_stochastic_quantizer[quick]). The others'
# (about 20 s each) and TE's at k=16 in the slow tier.
@pytest.mark.parametrize("rule,block", [
    pytest.param("nvfp4_te", 4, id="nvfp4_te-k4"),
    *[pytest.param(r, 16, id=r, marks=pytest.mark.slow) for r in NVFP4]])
def test_wrong_clamp_is_caught(rule, block):
    stimulus = NONFINITE if rule == "nvfp4_te" else MXQ
    result, _ = run(make_spec("mxq", scale_rule=rule, block=block), stimulus, BatchEngine(),
                    fault="wrong-clamp")
    assert result["mismatches"] > 0


# 4over6 quantizes every block twice and sums each candidate's error in float32: about 6x the
# logic of TE's quantizer, so its quick case is two-element blocks.
@pytest.mark.parametrize("stimulus", TIERS)
def test_four_over_six_quantizer(stimulus):
    check(make_spec("mxq", scale_rule="nvfp4_4over6", block=2), stimulus, BatchEngine())


@pytest.mark.slow
def test_four_over_six_wrong_clamp_is_caught():
    spec = make_spec("mxq", scale_rule="nvfp4_4over6", block=2)
    result, _ = run(spec, MXQ, BatchEngine(), fault="wrong-clamp")
    assert result["mismatches"] > 0


P3109_QUANTIZERS = [
    dict(scale_rule="p3109_maxabs"),
    dict(scale_rule="p3109_maxabs", format="binary4p2sf", block=8, rounding="stochastic_c",
         sr_bits=6, stages=1),
    dict(scale_rule="p3109_maxabs", format="fp8e4m3", block=4, rounding="rtz"),
]


def _p3109_cases():
    """Each quantizer in both tiers, but the preset's k=32 one in make test on blocks of 8: its
    scale (the amax over the preset's maximum, rounded up) and SatFinite elements are the same
    at any block size; test_mx_benches.py::test_combinational[mxq_fp8e4m3_k32_floor-icarus]
    builds and checks a k=32 quantizer in make test."""
    def case(values, tier, slow):
        return pytest.param(values, tier.values[0],
                            id=f"{tier.id}-{make_spec('mxq', **values).default_name}",
                            marks=[pytest.mark.slow] if slow else [])

    for values in P3109_QUANTIZERS:
        preset_block = "block" not in values
        if preset_block:
            yield case(dict(values, block=8), TIERS[0], slow=False)
        for tier in TIERS:
            yield case(values, tier, slow=preset_block or tier.id == "full")


@pytest.mark.parametrize("values,stimulus", list(_p3109_cases()))
def test_p3109_maxabs_quantizer(values, stimulus):
    check(make_spec("mxq", **values), stimulus, BatchEngine())


def test_p3109_maxabs_dequantizer_and_a_wrong_element_rounding():
    check(make_spec("mxdq", scale_rule="p3109_maxabs", block=8), MXDQ, BatchEngine())
    spec = make_spec("mxq", scale_rule="p3109_maxabs", block=8)
    result, _ = run(spec, MXQ_CORNERS, BatchEngine(), fault="rtz-instead")
    assert result["mismatches"] > 0
    assert [p.name for p in spec.ports()] == ["x", "scale", "y", "flags"]


@pytest.mark.slow
@pytest.mark.parametrize("sim", simulators())
@pytest.mark.parametrize("unit", ["mxq", "mxdq"])
def test_cocotb(unit, sim):
    stimulus = MXQ if unit == "mxq" else MXDQ
    check(make_spec(unit, scale_rule="nvfp4_modelopt"), stimulus, CocotbEngine(sim))


@pytest.mark.parametrize("rule", TENSOR_SCALED)
def test_unit_golden_is_the_library_quantizer(rule):
    """mxq_unit (one block per row, a tensor amax per row) gives what block_quantize gives for
    a tensor of those blocks under the same amax."""
    # As many rows as the benches' golden batch (sim/check.py pads to it): the model's kernels
    # of this shape are the ones test_quantizer compiled, and the library's mostly too.
    rows = Plan.batch
    rng = np.random.default_rng(7)
    x = (rng.standard_normal((rows, 16)) * np.exp2(rng.integers(-30, 30, (rows, 1)))).astype(
        np.float32)
    amax = np.float32(np.abs(x).max() * 2)
    out = mxq_unit(make_spec("mxq", scale_rule=rule),
                   {"x": x.view(np.uint32), "tensor_amax": np.full(rows, amax).view(np.uint32)})
    q = block_quantize(x, rule, tensor_amax=amax)
    assert np.array_equal(np.asarray(out["scale"]), np.asarray(q.scales).reshape(rows))
    assert np.array_equal(np.asarray(out["y"]), np.asarray(q.elements).reshape(rows, 16))


@pytest.mark.parametrize("values,message", [
    (dict(unit="mxq", scale_rule="nvfp4_te", format="fp8e4m3"), "quantizes fp4e2m1"),
    (dict(unit="mxq", scale_rule="nvfp4_te", in_format="bfloat16"), "reads float32"),
    (dict(unit="mxdq", scale_rule="floor", in_format="fp8e4m3"), "value-scale recipe"),
    (dict(unit="mxdq", scale_rule="nvfp4_torchao", in_format="mxint8"), "quantizes fp4e2m1"),
])
def test_bad_combinations_are_one_line_errors(values, message):
    with pytest.raises(OptionError, match=message) as err:
        make_spec(values.pop("unit"), **values)
    assert "\n" not in str(err.value)


def test_defaults_follow_the_recipe():
    q, d = make_spec("mxq", scale_rule="nvfp4_te"), make_spec("mxdq", scale_rule="nvfp4_te")
    assert (q.elem.name, q.block, q.scale_fmt.name) == ("fp4e2m1", 16, "float8_e4m3fn")
    assert (d.elem.name, d.block, d.default_name) == ("fp4e2m1", 16, "mxdq_fp4e2m1_k16_nvfp4_te")
    assert [p.name for p in q.ports()] == ["x", "tensor_amax", "scale", "y", "flags"]
    assert [p.name for p in d.ports()] == ["scale", "x", "tensor_amax", "y"]


# ----- the dot product with E4M3 (or other value) scales --------------------------------------------

DOT = [["random", {"count": 160}], ["specials", {"count": 64}]]


@pytest.mark.parametrize("values", [
    dict(in_format="fp4e2m1", n=16, scale_format="fp8e4m3"),
    dict(a_format="fp8e5m2", b_format="fp4e2m1", n=8, scale_format="fp8e4m3", rounding="rdn",
         format="bf16"),
    dict(in_format="fp8e4m3", n=8, accum="fixed", frac_bits=12, scale_format="binary8p1uf",
         stages=2),
    dict(in_format="binary8p3se", n=8, scale_format="binary8p1uf"),
], ids=lambda v: make_spec("dot", **v).default_name)
def test_dot_value_scales(values):
    check(make_spec("dot", **values), DOT, BatchEngine())


def test_dot_read_as_e8m0_is_caught():
    spec = make_spec("dot", in_format="fp4e2m1", n=16, scale_format="fp8e4m3")
    result, _ = run(spec, DOT, BatchEngine(), fault="e8m0-scales-instead")
    assert result["mismatches"] > 0


@pytest.mark.parametrize("values,message", [
    (dict(in_format="fp8e5m2", scale_format="fp8e4m3"), "needs 78 bits; at most 64"),
    (dict(in_format="fp4e2m1", scale_format="fp8e5m2"), "no infinities"),
    (dict(in_format="fp4e2m1", scale_format="fp8e4m3", scales=False), "--no-scales"),
])
def test_dot_scale_format_errors(values, message):
    with pytest.raises(OptionError, match=message) as err:
        make_spec("dot", **values)
    assert "\n" not in str(err.value)
