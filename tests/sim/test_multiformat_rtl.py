"""The multi-format scalar units' hardware (rtl/fp_units/multiformat.py) against the golden
model on the batch engine: every fmt code (members and unused codes) times every input pair of
8-bit sets, sampled vectors for wider members and for every rounding option, pipelined units
switching format between consecutive operations, and a fault that only a switching stream
shows."""

from __future__ import annotations

import numpy as np
import pytest

from fpforge.golden.model import evaluate
from fpforge.rtl.kinds import make_spec
from fpforge.sim.design import Design
from fpforge.sim.engines.batch import BatchEngine

FP8 = "fp8e4m3,fp8e5m2"


def _mismatches(design: Design, spec, inputs: dict) -> list[str]:
    """Where the design's y or flags differ from the golden model's, described."""
    got = BatchEngine().simulate(design, inputs)
    want = evaluate(spec, **inputs)
    out = []
    for port in ("y", "flags"):
        g, w = np.asarray(got[port]), np.asarray(want[port])
        for i in np.flatnonzero(g != w)[:3]:
            ins = " ".join(f"{k}={int(v[i]):#x}" for k, v in inputs.items())
            out.append(f"{port}: {ins}: got {int(g[i]):#x}, want {int(w[i]):#x}")
    return out


def _every_pair(spec) -> dict:
    """Every fmt code times every pair of 8-bit a, b codes."""
    codes = 1 << spec.fmt_width
    n = 1 << 16
    pairs = np.arange(n, dtype=np.uint32)
    return {"a": np.tile(pairs >> 8, codes), "b": np.tile(pairs & 0xFF, codes),
            "fmt": np.repeat(np.arange(codes, dtype=np.uint32), n)}


@pytest.mark.parametrize("unit", ["mul", "add"])
def test_fp8_every_fmt_every_pair(unit):
    spec = make_spec(unit, formats=FP8)
    assert _mismatches(Design.of(spec), spec, _every_pair(spec)) == []


def _sampled(spec, n: int, seed: int) -> dict:
    """``n`` random vectors: every input bit random (a narrower member's ignored bits too),
    fmt over every code including those without a member, rm over all eight codes."""
    rng = np.random.default_rng(seed)
    out = {}
    for p in spec.inputs():
        out[p.name] = rng.integers(0, 1 << p.width, n, dtype=np.uint64).astype(np.uint32)
    return out


# (kind, option values): each option through the shared datapath, sampled; the second list
# (make test-all) repeats options the first covers in other kinds and sets.
SAMPLED = [
    ("sub", dict(formats="fp8e4m3,fp8e5m2,float8_e4m3fnuz", rounding="dynamic")),
    ("mul", dict(formats=FP8, rounding="stochastic_b", sr_bits=3)),
    ("add", dict(formats="fp8e5m2,binary8p4se,binary8p3ue", saturation="none",
                 rounding="dynamic")),
    ("mul", dict(formats=FP8, saturate=True, subnormals=False, rounding="dynamic")),
    ("add", dict(formats=FP8, subnormals=False, tininess="before")),
    ("mul", dict(formats="fp8e4m3,float8_e8m0fnu")),       # fnu: one rounder per member
    ("fma", dict(formats=FP8, c_formats="bf16", rounding="dynamic")),
    ("cvt", dict(formats=FP8, in_formats="float32", rounding="dynamic")),
    ("cvt", dict(formats="fp8e4m3,fp6e3m2,fp4e2m1", in_formats="bf16")),
    ("mul", dict(formats="fp16,bf16", rounding="dynamic")),
]
SAMPLED_SLOW = [
    ("mul", dict(formats="fp8e4m3,fp8e5m2,float8_e4m3fnuz", rounding="rod")),
    ("add", dict(formats=FP8, rounding="stochastic_c")),
    ("mul", dict(formats="fp8e5m2,binary8p4se", saturation="propagate")),
    ("mul", dict(formats=FP8, tininess="before", rounding="rup")),
    ("fms", dict(formats="fp8e4m3,fp8e5m2,fp6e3m2")),
    ("cvt", dict(formats="fp16,fp16", in_formats="fp32,bf16", saturation="finite")),
    ("add", dict(formats="fp16,bf16")),
]


def _case_id(unit, options):
    return f"{unit}-{'-'.join(f'{k}={v}' for k, v in options.items())}"


@pytest.mark.parametrize("unit, options", [
    *(pytest.param(u, o, id=_case_id(u, o)) for u, o in SAMPLED),
    *(pytest.param(u, o, id=_case_id(u, o), marks=pytest.mark.slow) for u, o in SAMPLED_SLOW)])
def test_sampled_against_golden(unit, options):
    spec = make_spec(unit, **options)
    inputs = _sampled(spec, 4000, seed=len(spec.default_name))
    assert _mismatches(Design.of(spec), spec, inputs) == []


# Pipelined units with fmt random per vector: every cut carries fmt with the data.
PIPELINED = [
    ("mul", dict(formats=FP8, stages=2)),
    ("add", dict(formats="fp8e4m3,fp8e5m2,fp6e2m3", cuts="decode,align,round",
                 rounding="stochastic")),
    ("fma", dict(formats=FP8, cuts="product,core", rounding="dynamic")),
]


@pytest.mark.parametrize("unit, options", PIPELINED, ids=[u for u, _ in PIPELINED])
def test_pipelined_switching_formats(unit, options):
    spec = make_spec(unit, **options)
    assert spec.stages > 0
    inputs = _sampled(spec, 4000, seed=3)
    assert _mismatches(Design.of(spec), spec, inputs) == []


def test_fmt_unregistered_fault_is_caught():
    """The rounder reading the current cycle's fmt: a combinational unit cannot tell, a
    pipelined one fed alternating formats mismatches."""
    from fpforge.sim.faults import faulty_design

    spec = make_spec("mul", formats=FP8, stages=2)
    inputs = _sampled(spec, 2000, seed=5)
    inputs["fmt"] = np.arange(2000, dtype=np.uint32) % 2
    assert len(_mismatches(faulty_design(spec, "fmt-unregistered"), spec, inputs)) > 0
    with pytest.raises(ValueError, match="needs a pipelined unit of several --formats"):
        faulty_design(make_spec("mul", formats=FP8), "fmt-unregistered")


def test_unused_fmt_code_and_high_bits():
    """A 3-member set: code 3 gives y = 0 and NV alone; fp6 results have 0 above 6 bits."""
    spec = make_spec("mul", formats="fp8e4m3,fp8e5m2,fp6e3m2")
    inputs = _sampled(spec, 2000, seed=9)
    got = BatchEngine().simulate(Design.of(spec), inputs)
    y, flags, fmt = (np.asarray(v) for v in (got["y"], got["flags"], inputs["fmt"]))
    assert (fmt == 3).any() and (y[fmt == 3] == 0).all() and (flags[fmt == 3] == 0b10000).all()
    assert (fmt == 2).any() and (y[fmt == 2] >> 6 == 0).all()
