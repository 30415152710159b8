"""The multi-format dot unit (rtl/multidot.py) against the golden model, bit for bit, on the
batch engine: the f8f6f4 set and OCP FP8 at n = 4 and n = 32 (f8f6f4's n = 32 in make test-all
only), every fmt code (the unused ones give y = 0 and invalid), scales on and off, --accum exact
and fixed, a member pair of different a and b formats, a pipelined unit; each member's rows are
the dot's own stimulus (sim/stimulus/dot.py) with junk in the slot bits above a narrower
member's code. And the deliberately broken decoder (sim/faults.py dot-member-bias), which must
be reported. The spec, its errors and its Verilog: tests/rtl/test_multidot_spec.py."""

import numpy as np
import pytest

from fpforge import golden
from fpforge.rtl.kinds import make_spec
from fpforge.rtl.options import Flag
from fpforge.sim.design import Design
from fpforge.sim.engines.batch import BatchEngine
from fpforge.sim.faults import faulty_design
from fpforge.sim.stimulus.dot import dot_part

F8F6F4 = "fp8e4m3,fp8e5m2,fp6e3m2,fp6e2m3,fp4e2m1"
OCP_FP8 = "fp8e4m3,fp8e5m2"
CASES = {
    "f8f6f4_n4_exact": dict(formats=F8F6F4, n=4),
    "f8f6f4_n32_fixed": dict(formats=F8F6F4, n=32, accum="fixed"),
    "fp8_n4_fixed_noscales": dict(formats=OCP_FP8, n=4, accum="fixed", frac_bits=6,
                                  scales=False),
    "fp8_n32_exact_noscales": dict(formats=OCP_FP8, n=32, scales=False),
    "e4m3_e2m1_nvfp4_scales": dict(formats="fp8e4m3,fp4e2m1", n=16,
                                   scale_format="float8_e4m3fn"),
    "pairs_pipelined": dict(a_formats="fp8e4m3,fp4e2m1,fp8e5m2", b_formats="fp8e4m3,fp6e2m3,"
                            "fp4e2m1", n=4, accum="fixed", c_format="bf16", stages=2),
    "integers_fixed": dict(formats="fp8e4m3,mxint8,int4", n=4, accum="fixed", frac_bits=8),
}


def stimulus(spec, rows: int, seed: int = 5) -> dict:
    """Every member's random and special rows under its fmt code, junk above its elements,
    and rows of every unused code."""
    rng = np.random.default_rng(seed)
    parts = []
    for i, member in enumerate(spec.members):
        for name in ("random", "specials"):
            part = dot_part(member, name, {"count": rows}, rng)
            for role in ("a", "b"):
                w, slot = getattr(member, f"elem_{role}").width, spec.port(role).lane_width
                junk = rng.integers(0, 1 << slot, part[role].shape) >> w << w
                part[role] = part[role].astype(np.uint64) | junk.astype(np.uint64)
            parts.append(part | {"fmt": np.full(len(part["a"]), i)})
    for code in range(len(spec.members), 1 << spec.fmt_width):
        part = dict(parts[0])
        parts.append(part | {"fmt": np.full(len(part["a"]), code)})
    return {p: np.concatenate([np.asarray(q[p]).astype(np.uint64) for q in parts])
            for p in parts[0]}


def mismatches(design, spec, inputs, ref=None) -> int:
    """Vectors whose y or flags differ from ``ref`` (default: the golden model's)."""
    out = BatchEngine().simulate(design, inputs)
    ref = golden.evaluate(spec, **inputs) if ref is None else ref
    bad = (np.asarray(out["y"]) != np.asarray(ref["y"])) | \
        (np.asarray(out["flags"]) != np.asarray(ref["flags"]))
    return int(bad.sum())


# f8f6f4 at n = 32, fixed: in make test-all only; make test has the set in [f8f6f4_n4_exact],
# n = 32 in [fp8_n32_exact_noscales] and the fixed accumulator in [fp8_n4_fixed_noscales].
@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow)
                                  if c == "f8f6f4_n32_fixed" else c for c in CASES])
def test_every_member_and_unused_code_against_golden(case):
    spec = make_spec("dot", **CASES[case])
    inputs = stimulus(spec, 24 if spec.n <= 4 else 12)
    ref = golden.evaluate(spec, **inputs)
    assert mismatches(Design.of(spec), spec, inputs, ref) == 0
    unused = inputs["fmt"] >= len(spec.members)
    assert unused.any() == (len(spec.members) & (len(spec.members) - 1) != 0)
    assert not np.asarray(ref["y"])[unused].any()
    assert (np.asarray(ref["flags"])[unused] == int(Flag.NV)).all()


def test_decoder_with_another_members_bias_is_caught():
    spec = make_spec("dot", **CASES["fp8_n4_fixed_noscales"])
    assert mismatches(faulty_design(spec, "dot-member-bias"), spec, stimulus(spec, 24)) > 0


def test_unused_code_of_the_current_cycle_is_caught():
    """A pipelined unit forcing its unused-code result by the fmt of the current cycle rather
    than the one registered with the data (sim/faults.py fmt-unregistered)."""
    spec = make_spec("dot", **CASES["pairs_pipelined"])
    assert mismatches(faulty_design(spec, "fmt-unregistered"), spec, stimulus(spec, 24)) > 0
