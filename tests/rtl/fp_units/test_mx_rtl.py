"""The MX units' RTL against the golden model (golden/mx.py), bit for bit, in Icarus Verilog.

Every generated Amaranth unit goes through Yosys' Verilog backend, which costs ~0.3 s per element
rounder; so the quick tier packs several specs that share the input bus into one simulated
``Bank`` (one conversion, one simulation) and uses small blocks, and the full matrix (every
element format x every scale rule at k = 32, bfloat16, stochastic, pipelined) is marked slow.
"""

from __future__ import annotations

import zlib

import ml_dtypes
import numpy as np
import pytest
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

import golden
from mx_refs import ELEMS, RULES, adversarial_blocks
from rtl.fp_units.mxdq import MxDequantizer
from rtl.fp_units.mxq import MxQuantizer
from rtl.mx import MxDequantSpec, MxQuantSpec
from rtl.options import UnitOptions
from sim.bench.mx_stimulus import nonfinite_blocks, random_blocks
from sim.vectors import pack, simulate, unpack


class Bank(wiring.Component):
    """Several combinational quantizers on one input bus: one Verilog conversion for all."""

    def __init__(self, specs):
        self.specs = list(specs)
        s0 = self.specs[0]
        assert all((s.block, s.in_fmt, s.has_rbits, s.sr_bits, s.stages) ==
                   (s0.block, s0.in_fmt, s0.has_rbits, s0.sr_bits, 0) for s in self.specs)
        members = {"x": In(s0.block * s0.in_fmt.width)}
        if s0.has_rbits:
            members["rbits"] = In(s0.block * s0.sr_bits)
        for j, s in enumerate(self.specs):
            members |= {f"scale{j}": Out(8), f"y{j}": Out(s.block * s.elem.width),
                        f"flags{j}": Out(5)}
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        for j, s in enumerate(self.specs):
            q = MxQuantizer(s)
            m.submodules[f"q{j}"] = q
            m.d.comb += [q.x.eq(self.x), getattr(self, f"scale{j}").eq(q.scale),
                         getattr(self, f"y{j}").eq(q.y), getattr(self, f"flags{j}").eq(q.flags)]
            if s.has_rbits:
                m.d.comb += q.rbits.eq(self.rbits)
        return m


def test_blocks(elem: str, k: int, seed: int, per_class: int = 4, rows: int = 32):
    """Seeded random blocks, every adversarial class of mx_refs (amax at / below / above a power
    of two and at max_elem, the even rule's tie, element ties, subnormal elements, float32
    subnormals, all-zero, a single huge value, near float32's max, scale code 0) and inf/NaN."""
    rng = np.random.default_rng(seed)
    adv = adversarial_blocks(elem, rng, k=k, per_class=per_class)
    return np.concatenate([random_blocks(rng, rows, k), nonfinite_blocks(rng, 8, k),
                           *adv.values()])


test_blocks.__test__ = False     # a helper, not a test


def check_quantizers(specs, x, rbits=None, *, component=None, latency=0):
    """Simulate ``specs`` (one Bank, or ``component`` for a single pipelined unit) on the float32
    blocks ``x`` and compare scale, elements and the ORed flags with golden.mx_quantize.
    Returns (vectors, mismatching blocks, first few mismatches decoded)."""
    s0 = specs[0]
    bf16 = s0.in_fmt.name == "bfloat16"
    with np.errstate(invalid="ignore"):          # NaN blocks stay NaN in bfloat16
        xin = x.astype(ml_dtypes.bfloat16) if bf16 else x
    codes = xin.view(np.uint16 if bf16 else np.uint32)
    inputs = {"x": [pack(r, s0.in_fmt.width) for r in codes]}
    if s0.has_rbits:
        inputs["rbits"] = [pack(r, s0.sr_bits) for r in rbits]
    dut = component if component is not None else Bank(specs)
    out = simulate(dut, inputs, name=f"bank_{s0.default_name}" if component is None else
                        s0.default_name, latency=latency)
    bad, shown = 0, []
    for j, s in enumerate(specs):
        suffix = "" if component is not None else str(j)
        gs, ge, gf = golden.mx_quantize(xin, s.elem, block=s.block, scale_rule=s.scale_rule,
                                        rounding=s.rounding.value, rbits=rbits,
                                        sr_bits=s.sr_bits, return_flags=True)
        gs, ge = np.asarray(gs)[:, 0], np.asarray(ge)
        gf = np.bitwise_or.reduce(np.asarray(gf), axis=-1)
        for i in range(len(x)):
            got = (out[f"scale{suffix}"][i], unpack(out[f"y{suffix}"][i], s.elem.width, s.block),
                   out[f"flags{suffix}"][i])
            want = (int(gs[i]), [int(c) for c in ge[i]], int(gf[i]))
            if got != want:
                bad += 1
                if len(shown) < 3:
                    shown.append(f"{s.default_name} block {i} {x[i].tolist()}: rtl scale/elems/"
                                 f"flags {got}, golden {want}")
    return len(x) * len(specs), bad, shown


def assert_exact(specs, x, rbits=None, **kw):
    n, bad, shown = check_quantizers(specs, x, rbits, **kw)
    assert n > 0 and bad == 0, f"{bad} of {n} blocks differ:\n" + "\n".join(shown)


# ----- quick tier ---------------------------------------------------------------------------------

K = 6     # the quick tier's block size: the smallest the adversarial classes fit in


def test_fp8e4m3_every_rule():
    specs = [MxQuantSpec("fp8e4m3", block=K, scale_rule=r) for r in RULES]
    assert_exact(specs, test_blocks("fp8e4m3", K, 1))


RULE_OF = {"fp8e5m2": "even", "fp6e3m2": "rceil", "fp6e2m3": "ceil", "fp4e2m1": "even",
           "mxint8": "ceil"}


@pytest.mark.parametrize("elem", [e if e in ("fp4e2m1", "mxint8") else
                                  pytest.param(e, marks=pytest.mark.slow) for e in RULE_OF])
def test_every_element_format(elem):
    """floor for every element format, and each format's most delicate rule beside it."""
    specs = [MxQuantSpec(elem, block=K, scale_rule="floor"),
             MxQuantSpec(elem, block=K, scale_rule=RULE_OF[elem])]
    x = test_blocks(elem, K, zlib.crc32(elem.encode()))
    if elem == "mxint8":
        x = np.concatenate([x, mxint8_extremes()])
    assert_exact(specs, x)


def mxint8_extremes():
    """Blocks where MXINT8 under ceil reaches E8M0's top (s clamped to 127, elements saturate to
    +-127), and blocks of -amax that must give -127, never -128."""
    rng = np.random.default_rng(8)
    x = random_blocks(rng, 24, K)
    x[:8, 0] = np.float32(np.ldexp(1.75, 127))
    x[8:16, 0] = -np.float32(np.ldexp(1.0, 127)) * np.float32(1.5)
    x[16:, :] = -np.float32(2.0) * np.exp2(rng.integers(-20, 20, (8, 1))).astype(np.float32)
    return x


def test_bfloat16_stochastic_pipelined():
    """One unit through the other paths: bfloat16 input, stochastic rounding, 2 stages."""
    spec = MxQuantSpec("fp6e3m2", in_fmt="bfloat16", block=K, scale_rule="even",
                       rounding="stochastic", stages=2)
    x = test_blocks("fp6e3m2", K, 6)
    rbits = np.random.default_rng(6).integers(0, 256, x.shape)
    assert_exact([spec], x, rbits, component=MxQuantizer(spec), latency=2)


def test_broken_variants_are_caught(monkeypatch):
    """The comparison can fail: element rounding ties away instead of to even (only ties differ)
    and rceil's scale without its significand compare (floor) are both found."""
    x = test_blocks("fp8e4m3", K, 1)
    monkeypatch.setattr(MxQuantSpec, "options",
                        property(lambda s: UnitOptions(rounding="rna", saturate=True)))
    n, bad, _ = check_quantizers([MxQuantSpec("fp8e4m3", block=K)], x)
    assert 0 < bad < n
    monkeypatch.undo()

    import rtl.fp_units.mxq as mxq
    real = mxq.shared_exponent
    monkeypatch.setattr(mxq, "shared_exponent",
                        lambda m, amax, fin, elem, rule: real(m, amax, fin, elem, "floor"))
    n, bad, _ = check_quantizers([MxQuantSpec("fp8e4m3", block=K, scale_rule="rceil")], x)
    assert 0 < bad < n


# ----- dequantizer --------------------------------------------------------------------------------

def check_dequantizer(spec, *, seed=0):
    """Every (scale, element code) pair, k codes per vector under one scale, against
    golden.mx_dequantize (float32 codes compared bit for bit). Returns (values, mismatches)."""
    w, k = spec.elem.width, spec.block
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.permutation(1 << w) for _ in range(256)])   # row s: every code once
    assert (np.sort(codes, axis=1) == np.arange(1 << w)).all()
    scales = np.repeat(np.arange(256), (1 << w) // k)
    codes = codes.reshape(-1, k)                    # k codes per vector, all under scale s
    out = simulate(MxDequantizer(spec), {"scale": scales.tolist(),
                                              "x": [pack(r, w) for r in codes]},
                        name=spec.default_name, latency=spec.stages)
    want = np.asarray(golden.mx_dequantize(scales[:, None].astype(np.uint8),
                                           codes.astype(np.uint8), spec.elem, block=k))
    want = want.view(np.uint32)
    got = np.array([unpack(v, 32, k) for v in out["y"]], dtype=np.uint32)
    return want.size, int((got != want).sum())


@pytest.mark.parametrize("elem", [e if e in ("fp8e5m2", "fp4e2m1", "mxint8") else
                                  pytest.param(e, marks=pytest.mark.slow) for e in ELEMS])
def test_dequantizer_every_scale_and_code(elem):
    """Each scale paired with every element code, 4 codes per vector: 65,536 values for 8-bit
    elements."""
    n, bad = check_dequantizer(MxDequantSpec(elem, block=4))
    assert n >= 256 << ELEMENT_WIDTH[elem] and bad == 0, f"{bad} of {n} values differ"


@pytest.mark.slow
def test_dequantizer_pipelined():
    n, bad = check_dequantizer(MxDequantSpec("fp8e4m3", block=4, stages=3), seed=1)
    assert bad == 0, f"{bad} of {n} values differ"


ELEMENT_WIDTH = {"fp8e4m3": 8, "fp8e5m2": 8, "fp6e3m2": 6, "fp6e2m3": 6, "fp4e2m1": 4,
                 "mxint8": 8}


# ----- slow tier ----------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("elem", ELEMS)
def test_every_format_and_rule_block32(elem):
    specs = [MxQuantSpec(elem, scale_rule=r) for r in RULES]
    assert_exact(specs, test_blocks(elem, 32, zlib.crc32(f"{elem}32".encode()), per_class=8,
                                    rows=96))


@pytest.mark.slow
@pytest.mark.parametrize("elem", ELEMS)
def test_bfloat16_input(elem):
    specs = [MxQuantSpec(elem, in_fmt="bfloat16", block=8, scale_rule=r) for r in RULES]
    assert_exact(specs, test_blocks(elem, 8, zlib.crc32(f"{elem}bf".encode()), per_class=8))


@pytest.mark.slow
@pytest.mark.parametrize("elem", ELEMS)
def test_stochastic(elem):
    rng = np.random.default_rng(zlib.crc32(f"{elem}sr".encode()))
    x = test_blocks(elem, 8, 3, per_class=6)
    rbits = rng.integers(0, 256, x.shape)
    assert_exact([MxQuantSpec(elem, block=8, scale_rule=r, rounding="stochastic")
                  for r in ("floor", "rceil")], x, rbits)


@pytest.mark.slow
@pytest.mark.parametrize("stages", [1, 2, 3])
def test_pipelined(stages):
    spec = MxQuantSpec("fp6e2m3", block=8, scale_rule="even", stages=stages)
    assert_exact([spec], test_blocks("fp6e2m3", 8, 4), component=MxQuantizer(spec),
                 latency=stages)
