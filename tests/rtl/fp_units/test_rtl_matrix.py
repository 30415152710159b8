"""The quick bit-exact check over the whole generation matrix (slow tier: ``make test-all``).

Every scalar unit x every catalog format of at most 16 bits x every rounding mode, plus the
converters from float32 into each format and from each format back to float32 — the same
pairs as the export lint matrix (tests/rtl/export_cases.py) — simulated (Icarus) and compared
with ``golden.evaluate`` on ``y`` and ``flags``:

* mul / add / sub with operands of at most 8 bits: every operand pair;
* fma with operands of at most 6 bits: every operand triple; wider: seeded samples biased
  towards cancellation;
* cvt from a format of at most 16 bits: every code;
* cvt from float32: seeded float32 values around the target's grid (its codes, midpoints between
  neighbours, a few float32 ulps either side: ties, near-ties, the overflow threshold and the
  subnormal range), plus uniform random float32 codes;
* dynamic rounding draws ``rm`` per vector (the reserved codes 5..7 included), stochastic
  rounding draws ``rbits`` per vector.

The default tier (test_fp_units.py) runs a representative slice of the same comparison.
"""

from __future__ import annotations

import numpy as np
import pytest

from fpforge import golden
from fpforge.rtl.format_names import resolve
from fpforge.rtl.kinds import make_spec

from tests.rtl.export_cases import PAIRS, ROUNDINGS, pair_id
from tests.rtl.fp_units.rtl_check import check_scalar, every_input, sampled

SAMPLES = 6000


def near_grid_f32(fmt, n: int, seed: int) -> np.ndarray:
    """float32 codes on, between and next to the codes of ``fmt`` (see the module doc)."""
    fmt = resolve(fmt)
    rng = np.random.default_rng(seed)
    codes = rng.integers(0, 1 << fmt.width, n, dtype=np.uint64).astype(np.uint32)
    to_f32 = make_spec("cvt", format="float32", in_format=fmt.name)
    bits = np.asarray(golden.evaluate(to_f32, x=codes)["y"]).astype(np.int64)
    half_ulp = 1 << max(0, 22 - fmt.man_bits)        # half of fmt's ulp in float32's fraction
    nudge = rng.choice([0, half_ulp, -half_ulp], n) + rng.integers(-2, 3, n)
    finite = (bits & 0x7F800000) != 0x7F800000
    bits = np.where(finite, bits + nudge, bits) & 0xFFFFFFFF
    uniform = rng.random(n) < 0.25
    bits = np.where(uniform, rng.integers(0, 1 << 32, n, dtype=np.int64), bits)
    return bits.astype(np.uint32)


def vectors(spec, seed: int) -> dict:
    widths = [f.width for f in spec.in_fmts]
    if spec.unit == "cvt" and widths[0] > 16:
        return {"x": near_grid_f32(spec.out_fmt, SAMPLES, seed)}
    if spec.unit == "cvt" or (spec.unit in ("mul", "add", "sub") and max(widths) <= 8) or \
            (spec.unit == "fma" and max(widths) <= 6):
        return every_input(spec)
    return sampled(spec, SAMPLES, seed)


@pytest.mark.slow
@pytest.mark.parametrize("rounding", ROUNDINGS)
@pytest.mark.parametrize("pair", PAIRS, ids=pair_id)
def test_every_unit_format_and_rounding_mode(pair, rounding):
    unit, out, inp = pair
    spec = make_spec(unit, format=out, in_format=inp, rounding=rounding)
    seed = len(spec.default_name) * 131 + ROUNDINGS.index(rounding)
    check_scalar(spec, vectors(spec, seed), seed=seed)


def test_near_grid_samples_hit_ties_and_both_neighbours():
    """The float32 samples for a converter include exact midpoints of the target's grid (where
    rne and rna differ) — the matrix would miss tie bugs otherwise."""
    x = near_grid_f32("fp8e4m3", 4000, seed=3)
    rne = make_spec("cvt", format="fp8e4m3", in_format="float32", rounding="rne")
    rna = make_spec("cvt", format="fp8e4m3", in_format="float32", rounding="rna")
    y_rne, y_rna = (np.asarray(golden.evaluate(s, x=x)["y"]) for s in (rne, rna))
    assert (y_rne != y_rna).sum() > 100
