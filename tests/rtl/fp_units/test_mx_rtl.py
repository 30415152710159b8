"""The MX quantizer and dequantizer RTL (rtl/fp_units/mxq.py, mxdq.py) against the golden model
(golden/mx.py), bit for bit, in Icarus Verilog.

Every generated Amaranth unit goes through Yosys' Verilog backend, which costs ~0.3 s per element
rounder; so the quick tier packs several specs that share the input bus into one simulated
``Bank`` (rtl_check.py: one conversion, one simulation) and uses small blocks, and the full
matrix (every element format x every scale rule at k = 32, bfloat16, stochastic, pipelined) is
marked slow.
"""

from __future__ import annotations

import zlib

import ml_dtypes
import numpy as np
import pytest

from fpforge.rtl.elements import ELEMENT_FORMATS
from fpforge.rtl.mx import SCALE_RULES, MxDequantSpec, MxQuantSpec
from fpforge.rtl.pipeline import Pipeline
from fpforge.sim.stimulus.mx import adversarial_blocks, nonfinite_blocks, random_blocks

from tests.rtl.fp_units.rtl_check import assert_exact, check, design_of

ELEMS = tuple(ELEMENT_FORMATS)


def blocks(elem: str, k: int, seed: int, per_class: int = 4, rows: int = 32) -> np.ndarray:
    """Seeded random blocks, every adversarial class of sim/stimulus/mx.py (amax at / below / above
    a power of two and at max_elem, the even rule's tie, element ties, subnormal elements,
    float32 subnormals, all-zero, a single huge value, near float32's max, scale code 0) and
    inf/NaN."""
    rng = np.random.default_rng(seed)
    adv = adversarial_blocks(elem, rng, k=k, per_class=per_class)
    return np.concatenate([random_blocks(rng, rows, k), nonfinite_blocks(rng, 8, k),
                           *adv.values()])


def quantizer_inputs(spec: MxQuantSpec, x: np.ndarray, rbits=None) -> dict:
    """The float32 blocks ``x`` as the codes of the spec's input format (and ``rbits``)."""
    if spec.in_fmt.name == "bfloat16":
        with np.errstate(invalid="ignore"):          # NaN blocks stay NaN in bfloat16
            codes = x.astype(ml_dtypes.bfloat16).view(np.uint16)
    else:
        codes = x.view(np.uint32)
    inputs = {"x": codes.astype(np.uint32)}
    if spec.has_rbits:
        inputs["rbits"] = np.asarray(rbits, np.uint32)
    return inputs


def assert_quantizers_exact(specs, x, rbits=None):
    assert_exact(specs, quantizer_inputs(specs[0], x, rbits))


# ----- quick tier ---------------------------------------------------------------------------------

K = 6     # the quick tier's block size: the smallest the adversarial classes fit in


def test_fp8e4m3_every_rule():
    specs = [MxQuantSpec("fp8e4m3", block=K, scale_rule=r) for r in SCALE_RULES]
    assert_quantizers_exact(specs, blocks("fp8e4m3", K, 1))


RULE_OF = {"fp8e5m2": "even", "fp6e3m2": "rceil", "fp6e2m3": "ceil", "fp4e2m1": "even",
           "mxint8": "ceil", "int4": "rceil", "fp8e4m3fnuz": "even", "fp8e5m2fnuz": "vllm"}


@pytest.mark.parametrize("elem", [e if e in ("fp4e2m1", "mxint8", "int4") else
                                  pytest.param(e, marks=pytest.mark.slow) for e in RULE_OF])
def test_every_element_format(elem):
    """floor for every element format, and each format's most delicate rule beside it."""
    specs = [MxQuantSpec(elem, block=K, scale_rule="floor"),
             MxQuantSpec(elem, block=K, scale_rule=RULE_OF[elem])]
    x = blocks(elem, K, zlib.crc32(elem.encode()))
    if elem == "mxint8":
        x = np.concatenate([x, mxint8_extremes()])
    assert_quantizers_exact(specs, x)


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
                       rounding="stochastic", pipeline=Pipeline(2))
    x = blocks("fp6e3m2", K, 6)
    rbits = np.random.default_rng(6).integers(0, 256, x.shape)
    assert_quantizers_exact([spec], x, rbits)


@pytest.mark.parametrize("claimed, built", [
    # element rounding ties away instead of to even: only ties differ
    (MxQuantSpec("fp8e4m3", block=K), MxQuantSpec("fp8e4m3", block=K, rounding="rna")),
    # rceil's scale without its significand compare (floor): only some blocks differ
    (MxQuantSpec("fp8e4m3", block=K, scale_rule="rceil"), MxQuantSpec("fp8e4m3", block=K)),
], ids=["rna-for-rne", "floor-for-rceil"])
def test_broken_variants_are_caught(claimed, built):
    """The comparison can fail: a unit built for a subtly different spec disagrees with the
    claimed spec's golden model on some blocks, not all."""
    [checker] = check([claimed], quantizer_inputs(claimed, blocks("fp8e4m3", K, 1)),
                      design_of([built]))
    assert 0 < checker.mismatches < checker.vectors


# ----- dequantizer --------------------------------------------------------------------------------

def dequantizer_inputs(spec: MxDequantSpec, seed: int = 0) -> dict:
    """Every (scale, element code) pair: for each of the 256 scales, every code once in a random
    order, k codes per vector."""
    w, k = spec.elem.width, spec.block
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.permutation(1 << w) for _ in range(256)])   # row s: every code once
    assert (np.sort(codes, axis=1) == np.arange(1 << w)).all()
    scales = np.repeat(np.arange(256), (1 << w) // k)
    return {"scale": scales.astype(np.uint32), "x": codes.reshape(-1, k).astype(np.uint32)}


@pytest.mark.parametrize("elem", [e if e in ("fp8e5m2", "fp4e2m1", "mxint8", "int4") else
                                  pytest.param(e, marks=pytest.mark.slow) for e in ELEMS])
def test_dequantizer_every_scale_and_code(elem):
    """Each scale paired with every element code, 4 codes per vector: 65,536 values for 8-bit
    elements."""
    spec = MxDequantSpec(elem, block=4)
    inputs = dequantizer_inputs(spec)
    assert inputs["x"].size == 256 << spec.elem.width
    assert_exact([spec], inputs)


@pytest.mark.slow
def test_dequantizer_pipelined():
    spec = MxDequantSpec("fp8e4m3", block=4, pipeline=Pipeline(3))
    assert_exact([spec], dequantizer_inputs(spec, seed=1))


# ----- slow tier ----------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("elem", ELEMS)
def test_every_format_and_rule_block32(elem):
    specs = [MxQuantSpec(elem, scale_rule=r) for r in SCALE_RULES]
    assert_quantizers_exact(specs, blocks(elem, 32, zlib.crc32(f"{elem}32".encode()),
                                          per_class=8, rows=96))


@pytest.mark.slow
@pytest.mark.parametrize("elem", ELEMS)
def test_bfloat16_input(elem):
    specs = [MxQuantSpec(elem, in_fmt="bfloat16", block=8, scale_rule=r) for r in SCALE_RULES]
    assert_quantizers_exact(specs, blocks(elem, 8, zlib.crc32(f"{elem}bf".encode()),
                                          per_class=8))


@pytest.mark.slow
@pytest.mark.parametrize("elem", ELEMS)
def test_stochastic(elem):
    rng = np.random.default_rng(zlib.crc32(f"{elem}sr".encode()))
    x = blocks(elem, 8, 3, per_class=6)
    rbits = rng.integers(0, 256, x.shape)
    assert_quantizers_exact([MxQuantSpec(elem, block=8, scale_rule=r, rounding="stochastic")
                             for r in ("floor", "rceil")], x, rbits)


@pytest.mark.slow
@pytest.mark.parametrize("stages", [1, 2, 3])
def test_pipelined(stages):
    spec = MxQuantSpec("fp6e2m3", block=8, scale_rule="even", pipeline=Pipeline(stages))
    assert_quantizers_exact([spec], blocks("fp6e2m3", 8, 4))
