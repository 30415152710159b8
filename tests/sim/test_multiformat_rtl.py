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
