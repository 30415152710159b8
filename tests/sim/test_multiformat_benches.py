"""The benches on multi-format units (rtl/multiformat.py): every member's stimulus in a mixed
stream against the golden model, a pipelined unit switching format between consecutive
operations under bubbles, the faults that only a multi-format bench catches, and the command
line (fpforge verify, verify-exhaustive --fmt)."""

import pytest

from fpforge.cli import main
from fpforge.rtl.kinds import make_spec
from fpforge.sim.design import Design
from fpforge.sim.engines.batch import BatchEngine
from fpforge.sim.engines.cocotb import CocotbEngine
from fpforge.sim.faults import faulty_design
from fpforge.sim.stream import Plan
from fpforge.sim.tiers import stimulus_for

TRIPLE = "fp8e4m3,fp8e5m2,fp6e3m2"
F8F6F4 = "fp8e4m3,fp8e5m2,fp6e3m2,fp6e2m3,fp4e2m1"
SMALL = "fp4e2m1,fp6e2m3"          # 6-bit ports: 2 x 2^12 inputs


def _plan(random=256, relations=0, unused=64, **kw):
    """Every member's biased random (and relations) in its elements, unused fmt codes."""
    parts = [["relations", {"count": relations}]] if relations else []
    return Plan(parts + [["random", {"count": random}], ["unused", {"count": unused}]],
                seed=5, max_report=5, **kw)


@pytest.mark.parametrize("formats,rounding", [
    (TRIPLE, "rne"),
    pytest.param(F8F6F4, "dynamic", marks=pytest.mark.slow),      # ~100 s at load 12
])
def test_every_member_in_a_mixed_stream(formats, rounding):
    spec = make_spec("fma", formats=formats, rounding=rounding)
    result = BatchEngine().verify(Design.of(spec), _plan(relations=256))
    assert result["mismatches"] == 0 and result["vectors"] > len(spec.members) * 256, \
        result["first_mismatches"]


def test_pipelined_unit_switches_format_under_bubbles():
    """fmt changes between most consecutive operations (sim/stimulus/multiformat.py), with idle
    cycles between some: the result of each is its own member's."""
    spec = make_spec("mul", formats=TRIPLE, rounding="dynamic", stages=2)
    plan = Plan([["corners", {}], ["random", {"count": 512}], ["unused", {"count": 128}]],
                seed=9, bubbles=0.3, max_report=5)
    result = CocotbEngine("icarus").verify(Design.of(spec), plan)
    assert result["mismatches"] == 0 and result["vectors"] > 1000, result["first_mismatches"]


@pytest.mark.parametrize("fault,members", [
    ("other-member", {0, 1, 2, 3, 4, 5}),    # 5 ^ 1 = 4: an unused code computed as fp4
    ("reads-unused-bits", {2, 3, 4}),      # the fp6 and fp4 members leave a's top bits unused
])
def test_faults_are_caught_per_member(fault, members):
    spec = make_spec("mul", formats=F8F6F4)
    result = BatchEngine().verify(faulty_design(spec, fault), _plan())
    assert result["mismatches"] > 0
    caught = {int(name.split()[1]) for name in result["classes"]}
    assert caught == members, result["classes"]
    assert any("fmt=" in line for line in result["first_mismatches"])


def test_command_line(capsys):
    args = ["verify", "--unit", "mul", "--formats", SMALL, "--engine", "batch"]
    assert main(args) == 0
    assert "8,192 vectors, 0 mismatches" in capsys.readouterr().out
    assert main([*args, "--fault", "other-member"]) == 1
    out = capsys.readouterr().out
    assert "fmt 0 (float4_e2m1fn): value wrong" in out and "fmt=1 (float6_e2m3fn)" in out
    assert main(["verify-exhaustive", "--unit", "mul", "--formats", SMALL, "--fmt", "2"]) == 2
    assert capsys.readouterr().err.strip().endswith(
        "--fmt 2 selects no member of fp_mul_e2m1fin_or_e2m3fin_rne; valid: 0: float4_e2m1fn; "
        "1: float6_e2m3fn")


@pytest.mark.slow
def test_verify_exhaustive_holds_each_member(capsys):
    """Every member in turn on the native engine, fmt held; --fmt 1 the second alone."""
    args = ["verify-exhaustive", "--unit", "mul", "--formats", SMALL, "--shards", "1"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert out.count("PASS, 4,096 vectors, 0 mismatches") == 2
    assert main([*args, "--fmt", "1"]) == 0
    assert "fmt held at 1" in capsys.readouterr().out


@pytest.mark.parametrize("lanes,simd", [(2, None), (None, 32)], ids=["lanes2", "simd32"])
def test_lanes_of_every_member(lanes, simd):
    """Each lane its own draws, a stochastic rounder's bits per lane; fp8 in fp16's slots
    (--lanes) or packed four to a word (--simd-width)."""
    spec = make_spec("mul", formats="fp16,fp8e4m3", lanes=lanes, simd_width=simd,
                     rounding="stochastic")
    result = BatchEngine().verify(Design.of(spec), _plan())
    assert result["mismatches"] == 0 and result["vectors"] == 2 * 256, result["first_mismatches"]


def test_unused_slot_bits_read_are_caught():
    spec = make_spec("mul", formats="fp16,fp8e4m3", lanes=2)
    result = BatchEngine().verify(faulty_design(spec, "reads-unused-bits"), _plan())
    assert result["mismatches"] > 0 and \
        all(name.startswith("fmt 1 (float8_e4m3fn): ") for name in result["classes"])
    assert any("elements differ: [0] expected 0x" in line for line in result["first_mismatches"])


def test_multi_format_dot_members_and_faults():
    """A multi-format dot's stimulus is every member's dot parts (each element in the low bits
    of its slot, random bits above it) and unused fmt codes (the tier's parts, sim/tiers.py,
    with fewer rows); its faults are caught."""
    spec = make_spec("dot", formats="fp8e4m3,fp6e3m2,fp4e2m1", n=4)    # fmt 3: no member
    assert [name for name, _ in stimulus_for(spec)] == ["specials", "pairs", "random", "unused"]
    plan = Plan([["specials", {"count": 64}], ["random", {"count": 256}],
                 ["unused", {"count": 64}]], seed=3, max_report=5)
    result = BatchEngine().verify(Design.of(spec), plan)
    assert result["mismatches"] == 0 and result["vectors"] == 3 * (64 + 256) + 64
    for fault in ("dot-member-bias", "other-member"):
        assert BatchEngine().verify(faulty_design(spec, fault), plan)["mismatches"] > 0
