"""The MX dot-product RTL against golden.mx_dot, bit for bit (y and flags), in Icarus Verilog.

Specs that read the same vectors are simulated together in one ``DotBank`` (one Verilog
conversion); the quick tier uses N = 4 and 8, the slow tier every element pair, N = 4..32,
both accumulators and pipelining.
"""

from __future__ import annotations

import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

import golden
from mx_refs import ELEMS
from rtl.fp_units.dot import MxDot
from rtl.mx import MxDotSpec
from rtl.options import UnitOptions
# The row generators live with the cocotb bench's stimulus (sim/ must not import tests/).
from sim.bench.mx_stimulus import mixed_rows, pair_rows
from sim.vectors import pack, simulate


class DotBank(wiring.Component):
    """Several combinational dot units on the same a, b (and scale) inputs."""

    def __init__(self, specs):
        self.specs = list(specs)
        s0 = self.specs[0]
        assert all((s.elem_a, s.elem_b, s.n, s.scaled, s.stages) ==
                   (s0.elem_a, s0.elem_b, s0.n, s0.scaled, 0) for s in self.specs)
        members = {"a": In(s0.n * s0.elem_a.width), "b": In(s0.n * s0.elem_b.width)}
        if s0.scaled:
            members |= {"scale_a": In(8), "scale_b": In(8)}
        for j, s in enumerate(self.specs):
            members |= {f"y{j}": Out(s.out_fmt.width), f"flags{j}": Out(5)}
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        for j, s in enumerate(self.specs):
            d = MxDot(s)
            m.submodules[f"dot{j}"] = d
            m.d.comb += [d.a.eq(self.a), d.b.eq(self.b), getattr(self, f"y{j}").eq(d.y),
                         getattr(self, f"flags{j}").eq(d.flags)]
            if s.scaled:
                m.d.comb += [d.scale_a.eq(self.scale_a), d.scale_b.eq(self.scale_b)]
        return m


def check_dots(specs, a, b, sa, sb, *, component=None, latency=0):
    """Simulate and compare with golden.mx_dot; returns (vectors, mismatches, first few)."""
    s0 = specs[0]
    inputs = {"a": [pack(r, s0.elem_a.width) for r in a],
              "b": [pack(r, s0.elem_b.width) for r in b]}
    if s0.scaled:
        inputs |= {"scale_a": [int(v) for v in sa], "scale_b": [int(v) for v in sb]}
    dut = component if component is not None else DotBank(specs)
    out = simulate(dut, inputs, name=s0.default_name if component is not None else
                        f"bank_{s0.default_name}", latency=latency)
    bad, shown = 0, []
    for j, s in enumerate(specs):
        sfx = "" if component is not None else str(j)
        kw = dict(scales_a=sa, scales_b=sb) if s.scaled else {}
        gy, gf = golden.mx_dot(a, b, s.elem_a, s.elem_b, accum=s.accum, frac_bits=s.frac_bits,
                               out_fmt=s.out_fmt.name, rounding=s.rounding.value, **kw)
        gy, gf = np.asarray(gy), np.asarray(gf)
        for i in range(len(a)):
            got = (out[f"y{sfx}"][i], out[f"flags{sfx}"][i])
            want = (int(gy[i]), int(gf[i]))
            if got != want:
                bad += 1
                if len(shown) < 3:
                    shown.append(f"{s.default_name} a {a[i].tolist()} b {b[i].tolist()} scales "
                                 f"{int(sa[i])} {int(sb[i])}: rtl (y, flags) "
                                 f"({got[0]:#x}, {got[1]:#04b}), golden ({want[0]:#x}, "
                                 f"{want[1]:#04b})")
    return len(a) * len(specs), bad, shown


def assert_exact(specs, rows, **kw):
    n, bad, shown = check_dots(specs, *rows, **kw)
    assert n > 0 and bad == 0, f"{bad} of {n} dot products differ:\n" + "\n".join(shown)


# ----- quick tier ---------------------------------------------------------------------------------

def test_fp8e4m3_exact_and_fixed():
    specs = [MxDotSpec("fp8e4m3", n=4), MxDotSpec("fp8e4m3", n=4, rounding="rdn"),
             MxDotSpec("fp8e4m3", n=4, accum="fixed", frac_bits=8),
             MxDotSpec("fp8e4m3", n=4, accum="fixed", rounding="rtz")]
    assert_exact(specs, mixed_rows("fp8e4m3", "fp8e4m3", 4, 11, rows=256))


def test_fp8e5m2_two_limb_frame_unscaled():
    """E5M2 x E5M2 needs the widest exact frame (64 bits + growth); no scale ports."""
    specs = [MxDotSpec("fp8e5m2", n=4, scaled=False),
             MxDotSpec("fp8e5m2", n=4, scaled=False, out_fmt="bfloat16", rounding="rup")]
    rows = mixed_rows("fp8e5m2", "fp8e5m2", 4, 12, rows=256)
    assert_exact(specs, rows)


def test_every_element_pair_n4():
    """Exhaustive over (a_0, b_0) for FP4 x FP4 and FP6 x FP6 (the rest of each vector small
    and random, or zero), with and without the fixed accumulator's truncation."""
    for ea, eb in (("fp4e2m1", "fp4e2m1"), ("fp6e3m2", "fp6e2m3")):
        specs = [MxDotSpec(ea, eb, n=4), MxDotSpec(ea, eb, n=4, accum="fixed", frac_bits=3)]
        assert_exact(specs, pair_rows(ea, eb, 4, 3))


def test_mxint8():
    specs = [MxDotSpec("mxint8", n=4), MxDotSpec("mxint8", "fp6e2m3", n=4, accum="fixed",
                                                 frac_bits=6)]
    assert_exact(specs[:1], mixed_rows("mxint8", "mxint8", 4, 13))
    assert_exact(specs[1:], mixed_rows("mxint8", "fp6e2m3", 4, 14))


def test_broken_variants_are_caught(monkeypatch):
    """The comparison can fail: a unit that rounds toward zero instead of to nearest, and a
    fixed accumulator one fraction bit narrower than stated, both disagree on some vectors."""
    rows = mixed_rows("fp8e4m3", "fp8e4m3", 4, 11)
    monkeypatch.setattr(MxDotSpec, "options", property(lambda s: UnitOptions(rounding="rtz")))
    n, bad, _ = check_dots([MxDotSpec("fp8e4m3", n=4)], *rows)
    assert 0 < bad < n
    monkeypatch.undo()

    spec = MxDotSpec("fp8e4m3", n=4, accum="fixed", frac_bits=8)

    class Narrow(MxDot):                 # claims F = 8, built with F = 7
        def elaborate(self, platform):
            self._spec = MxDotSpec("fp8e4m3", n=4, accum="fixed", frac_bits=7)
            try:
                return super().elaborate(platform)
            finally:
                self._spec = spec

    n, bad, _ = check_dots([spec], *rows, component=Narrow(spec))
    assert 0 < bad < n


# ----- slow tier ----------------------------------------------------------------------------------

SLOW_PAIRS = [(e, e) for e in ELEMS] + [("fp8e5m2", "fp4e2m1"), ("fp8e4m3", "fp6e3m2"),
                                         ("mxint8", "fp8e5m2")]


@pytest.mark.slow
@pytest.mark.parametrize("n", [4, 8, 16, 32])
@pytest.mark.parametrize("ea,eb", SLOW_PAIRS, ids=[f"{a}x{b}" for a, b in SLOW_PAIRS])
def test_every_pair_and_length(ea, eb, n):
    specs = [MxDotSpec(ea, eb, n=n), MxDotSpec(ea, eb, n=n, accum="fixed"),
             MxDotSpec(ea, eb, n=n, accum="fixed", frac_bits=4, rounding="rna")]
    assert_exact(specs, mixed_rows(ea, eb, n, n * 31 + len(ea + eb), rows=128))


@pytest.mark.slow
def test_fp8e4m3_every_pair():
    specs = [MxDotSpec("fp8e4m3", n=4), MxDotSpec("fp8e4m3", n=4, accum="fixed", frac_bits=6)]
    assert_exact(specs, pair_rows("fp8e4m3", "fp8e4m3", 4, 5))


@pytest.mark.slow
@pytest.mark.parametrize("stages", [1, 2, 3])
def test_pipelined(stages):
    spec = MxDotSpec("fp8e4m3", "fp4e2m1", n=8, accum="fixed", stages=stages)
    assert_exact([spec], mixed_rows("fp8e4m3", "fp4e2m1", 8, 21), component=MxDot(spec),
                 latency=stages)
