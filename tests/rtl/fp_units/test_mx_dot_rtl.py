"""The MX dot-product RTL (rtl/fp_units/dot.py) against the golden model, bit for bit (y and
flags), in Icarus Verilog.

Specs that read the same vectors are simulated together in one ``Bank`` (rtl_check.py: one
Verilog conversion); the quick tier uses N = 4 and 8, the slow tier every element pair,
N = 4..32, both accumulators and pipelining.
"""

from __future__ import annotations

import numpy as np
import pytest

from fpforge.rtl.accum import Fixed
from fpforge.rtl.dot import MxDotSpec
from fpforge.rtl.elements import ELEMENT_FORMATS
from fpforge.rtl.pipeline import Pipeline
from fpforge.sim.stimulus.dot import mixed_rows, pair_rows

from tests.rtl.fp_units.rtl_check import assert_exact, check, design_of

ELEMS = tuple(ELEMENT_FORMATS)


def dot_inputs(spec: MxDotSpec, rows) -> dict:
    """The rows (a, b, scale_a, scale_b) of sim/stimulus/dot.py as the unit's inputs (no scales for
    an unscaled unit; a vector of one element is a one-lane port, without a lane axis)."""
    a, b, sa, sb = (np.asarray(r, np.uint32) for r in rows)
    if spec.n == 1:
        a, b = a[:, 0], b[:, 0]
    return {"a": a, "b": b} | ({"scale_a": sa, "scale_b": sb} if spec.scaled else {})


def assert_dots_exact(specs, rows):
    assert_exact(specs, dot_inputs(specs[0], rows))


# ----- quick tier ---------------------------------------------------------------------------------

def test_fp8e4m3_exact_and_fixed():
    specs = [MxDotSpec("fp8e4m3", n=4), MxDotSpec("fp8e4m3", n=4, rounding="rdn"),
             MxDotSpec("fp8e4m3", n=4, accum=Fixed(8)),
             MxDotSpec("fp8e4m3", n=4, accum=Fixed(), rounding="rtz")]
    assert_dots_exact(specs, mixed_rows("fp8e4m3", "fp8e4m3", 4, 11, rows=256))


def test_fp8e5m2_two_limb_frame_unscaled():
    """E5M2 x E5M2 needs the widest exact frame (64 bits + growth); no scale ports."""
    specs = [MxDotSpec("fp8e5m2", n=4, scaled=False),
             MxDotSpec("fp8e5m2", n=4, scaled=False, out_fmt="bfloat16", rounding="rup")]
    assert_dots_exact(specs, mixed_rows("fp8e5m2", "fp8e5m2", 4, 12, rows=256))


@pytest.mark.parametrize("ea, eb", [("fp4e2m1", "fp4e2m1"), ("fp6e3m2", "fp6e2m3")])
def test_every_element_pair_n4(ea, eb):
    """Exhaustive over (a_0, b_0) for FP4 x FP4 and FP6 x FP6 (the rest of each vector small
    and random, or zero), with and without the fixed accumulator's truncation."""
    specs = [MxDotSpec(ea, eb, n=4), MxDotSpec(ea, eb, n=4, accum=Fixed(3))]
    assert_dots_exact(specs, pair_rows(ea, eb, 4, 3))


def test_mxint8():
    assert_dots_exact([MxDotSpec("mxint8", n=4)], mixed_rows("mxint8", "mxint8", 4, 13))
    assert_dots_exact([MxDotSpec("mxint8", "fp6e2m3", n=4, accum=Fixed(6))],
                      mixed_rows("mxint8", "fp6e2m3", 4, 14))


def test_fnuz_elements():
    """AMD's FNUZ FP8 (one NaN at 0x80, no -0): E4M3FNUZ x E5M2FNUZ, exact and fixed."""
    assert_dots_exact([MxDotSpec("fp8e4m3fnuz", "fp8e5m2fnuz", n=4),
                       MxDotSpec("fp8e4m3fnuz", "fp8e5m2fnuz", n=4, accum=Fixed(8))],
                      mixed_rows("fp8e4m3fnuz", "fp8e5m2fnuz", 4, 19))


def test_int4():
    """INT4 x INT4 exhaustive over (a_0, b_0), and INT4 x E4M3 through the fixed accumulator."""
    assert_dots_exact([MxDotSpec("int4", n=4), MxDotSpec("int4", n=4, accum=Fixed(3))],
                      pair_rows("int4", "int4", 4, 17))
    assert_dots_exact([MxDotSpec("int4", "fp8e4m3", n=4, accum=Fixed(6))],
                      mixed_rows("int4", "fp8e4m3", 4, 18))


def test_lengths_one_and_sixty_four():
    """The ends of the length range 1..64."""
    assert_dots_exact([MxDotSpec("fp4e2m1", n=1), MxDotSpec("fp4e2m1", n=1, accum=Fixed())],
                      mixed_rows("fp4e2m1", "fp4e2m1", 1, 15))
    assert_dots_exact([MxDotSpec("fp4e2m1", "fp6e3m2", n=64)],
                      mixed_rows("fp4e2m1", "fp6e3m2", 64, 16, rows=48))


@pytest.mark.parametrize("claimed, built", [
    # rounds toward zero instead of to nearest
    (MxDotSpec("fp8e4m3", n=4), MxDotSpec("fp8e4m3", n=4, rounding="rtz")),
    # a fixed accumulator one fraction bit narrower than stated
    (MxDotSpec("fp8e4m3", n=4, accum=Fixed(8)),
     MxDotSpec("fp8e4m3", n=4, accum=Fixed(7))),
], ids=["rtz-for-rne", "frac7-for-frac8"])
def test_broken_variants_are_caught(claimed, built):
    """The comparison can fail: a unit built for a subtly different spec disagrees with the
    claimed spec's golden model on some vectors, not all."""
    rows = mixed_rows("fp8e4m3", "fp8e4m3", 4, 11)
    [checker] = check([claimed], dot_inputs(claimed, rows), design_of([built]))
    assert 0 < checker.mismatches < checker.vectors


# ----- slow tier ----------------------------------------------------------------------------------

SLOW_PAIRS = [(e, e) for e in ELEMS] + [("fp8e5m2", "fp4e2m1"), ("fp8e4m3", "fp6e3m2"),
                                         ("mxint8", "fp8e5m2")]


@pytest.mark.slow
@pytest.mark.parametrize("n", [4, 8, 16, 32])
@pytest.mark.parametrize("ea,eb", SLOW_PAIRS, ids=[f"{a}x{b}" for a, b in SLOW_PAIRS])
def test_every_pair_and_length(ea, eb, n):
    specs = [MxDotSpec(ea, eb, n=n), MxDotSpec(ea, eb, n=n, accum=Fixed()),
             MxDotSpec(ea, eb, n=n, accum=Fixed(4), rounding="rna")]
    assert_dots_exact(specs, mixed_rows(ea, eb, n, n * 31 + len(ea + eb), rows=128))


@pytest.mark.slow
def test_fp8e4m3_every_pair():
    specs = [MxDotSpec("fp8e4m3", n=4), MxDotSpec("fp8e4m3", n=4, accum=Fixed(6))]
    assert_dots_exact(specs, pair_rows("fp8e4m3", "fp8e4m3", 4, 5))


@pytest.mark.slow
@pytest.mark.parametrize("stages", [1, 2, 3])
def test_pipelined(stages):
    spec = MxDotSpec("fp8e4m3", "fp4e2m1", n=8, accum=Fixed(), pipeline=Pipeline(stages))
    assert_dots_exact([spec], mixed_rows("fp8e4m3", "fp4e2m1", 8, 21))
