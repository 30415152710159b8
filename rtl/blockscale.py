"""Block scaling beyond OCP MX: one description of how a tensor is cut into blocks that share a
scale, and the named presets that reproduce shipping recipes bit for bit.

Plain Python (no Amaranth, no JAX), like rtl/formats.py: the golden model (golden/blockscale.py)
and the docs (docs/blockscale.md, which cites the source of every preset) read it.

A scaling is: the element format; the block (``block`` values along the reduction axis, or
``block`` x ``block`` tiles); the scale format; the scale rule; an optional second-level FP32
per-tensor scale; and the element rounding. Two families of scale rule:

* :class:`Pow2Rule` -- a power-of-two scale 2^s (E8M0 or any exponent-only format), s from the
  block's largest magnitude amax: optionally pre-rounded (to the element's precision, or by a
  threshold on amax's significand), then floor or ceil of log2(amax / divisor), the divisor
  2^emax (the element's largest exponent) or its largest value.
* :class:`ValueRule` -- a scale that is a number of the scale format (NVFP4's E4M3, P3109's
  maximum-magnitude scale): amax / (the element's largest value) times the second-level scale,
  computed in float32 in the order a recipe uses (``arithmetic``), with its floor, its clamp and
  its treatment of an all-zero block; 4over6 tries a second candidate that maps amax to 4.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from fractions import Fraction

from .formats import CATALOG, FloatFormat, FormatError
from .format_names import resolve
from .options import OptionError

__all__ = ["Pow2Rule", "ValueRule", "Arithmetic", "BlockScaling", "PRESETS", "preset"]


class Arithmetic(enum.Enum):
    """The float32 operation order of a value scale (docs/blockscale.md has the formulas)."""
    TE = "te"                  # S_enc = 2688/amax; sf = e4m3(bamax * (S_enc * fl(1/6)))
    MODELOPT = "modelopt"      # s2 = amax/2688; sf = e4m3(bamax / (6 * s2)); y = x / (sf * s2)
    TORCHAO = "torchao"        # s2 = amax/2688; sf = e4m3(bamax / 6 / s2); y = x * ((1/s2)/sf)
    P3109 = "p3109"            # s = Project(amax) into the scale format; y = x / s


@dataclass(frozen=True)
class Pow2Rule:
    """s = floor or ceil of log2(pre(amax) / divisor), clamped to the scale format's range.

    ``pre``: "none"; "round" (amax rounded to the element's precision, ties away: torchao's
    EVEN); "threshold" (the exponent goes up when amax's significand is >= ``threshold``: vLLM's
    1.75). ``divisor``: "emax" (2^emax) or "max" (the element's largest value, as float32
    ``amax * fl(1/max)``: TransformerEngine's and cuBLAS's rceil).
    """
    pre: str = "none"
    direction: str = "floor"
    divisor: str = "emax"
    threshold: Fraction | None = None

    def __post_init__(self):
        if self.pre not in ("none", "round", "threshold"):
            raise OptionError(f"pre-rounding must be none, round or threshold, not {self.pre!r}")
        if self.direction not in ("floor", "ceil"):
            raise OptionError(f"direction must be floor or ceil, not {self.direction!r}")
        if self.divisor not in ("emax", "max"):
            raise OptionError(f"divisor must be emax or max, not {self.divisor!r}")
        if (self.pre == "threshold") != (self.threshold is not None) or \
                (self.threshold is not None and not 1 < self.threshold < 2):
            raise OptionError("a threshold (between 1 and 2) goes with pre-rounding threshold")


@dataclass(frozen=True)
class ValueRule:
    """A scale that is a value of the scale format, from float32 arithmetic (``arithmetic``).

    ``scale_floor``: the smallest block scale (torchao clamps to E4M3's 2^-6), or None.
    ``scale_saturates``: the block scale's cast into the scale format saturates (TE's
    satfinite); otherwise a scale beyond its range is NaN (ModelOpt's and torchao's casts).
    ``zero_block_one``: an all-zero block's scale is 1.0 (ModelOpt). ``global_max``: the value
    the tensor's amax maps to in scale units (448; 4over6 uses 256). ``four_over_six``: also try
    the scale that maps the block's amax to 4 and keep the one with the smaller absolute error.
    """
    arithmetic: Arithmetic
    scale_floor: Fraction | None = None
    zero_block_one: bool = False
    global_max: int = 448
    four_over_six: bool = False
    scale_saturates: bool = False


@dataclass(frozen=True)
class BlockScaling:
    """A block-scaling scheme: see the module docstring. Immutable and hashable."""
    name: str
    elem: FloatFormat
    block: int
    scale_fmt: FloatFormat
    rule: Pow2Rule | ValueRule
    tensor_scale: bool = False
    tile: bool = False          # block x block tiles (weights) instead of 1 x block
    source: str = ""            # where the recipe is defined (docs/blockscale.md)

    def __post_init__(self):
        if not isinstance(self.block, int) or self.block < 1:
            raise OptionError(f"block must be a positive integer, not {self.block!r}")
        if isinstance(self.rule, Pow2Rule) and self.scale_fmt != _E8M0 and \
                (self.rule.divisor == "max" or not self.scale_fmt.has_nan or
                 self.scale_fmt.emin - self.scale_fmt.man_bits < -126 or
                 self.scale_fmt.emax > 127):
            raise OptionError(f"{self.name}: a power-of-two rule with {self.scale_fmt.name} "
                              "scales needs a format with a NaN whose powers of two float32 "
                              "holds, and the divisor emax (rceil's float32 form is E8M0's)")
        if isinstance(self.rule, ValueRule) and self.rule.arithmetic is not Arithmetic.P3109 \
                and not self.tensor_scale:
            raise OptionError(f"{self.name}: the {self.rule.arithmetic.value} arithmetic needs "
                              "the per-tensor scale")

    def with_elem(self, elem) -> "BlockScaling":
        return replace(self, elem=resolve(elem))

    def describe(self) -> str:
        tiles = f"{self.block}x{self.block} tiles" if self.tile else f"blocks of {self.block}"
        second = ", FP32 per-tensor scale" if self.tensor_scale else ""
        return (f"{self.name}: {self.elem.name} elements in {tiles}, {self.scale_fmt.name} "
                f"scales{second}")


_E8M0, _E4M3 = CATALOG["float8_e8m0fnu"], CATALOG["float8_e4m3fn"]
_FP4, _FP8 = CATALOG["float4_e2m1fn"], CATALOG["float8_e4m3fn"]

PRESETS: dict[str, BlockScaling] = {p.name: p for p in [
    BlockScaling("mx_floor", _FP8, 32, _E8M0, Pow2Rule(),
                 source="OCP MX v1.0 section 6.3"),
    BlockScaling("mx_ceil", _FP8, 32, _E8M0, Pow2Rule(direction="ceil"),
                 source="torchao ScaleCalculationMode.CEIL"),
    BlockScaling("mx_rceil", _FP8, 32, _E8M0, Pow2Rule(direction="ceil", divisor="max"),
                 source="TransformerEngine float_to_e8m0(amax * max_norm_rcp); cuBLAS; torchao "
                        "RCEIL"),
    BlockScaling("mx_even", _FP8, 32, _E8M0, Pow2Rule(pre="round"),
                 source="torchao ScaleCalculationMode.EVEN; AMD Quark even_round"),
    BlockScaling("mx_vllm", _FP4, 32, _E8M0, Pow2Rule(pre="threshold",
                                                      threshold=Fraction(7, 4)),
                 source="vLLM fused_moe _mxfp4_quantize via Quark qdq_mxfp4"),
    BlockScaling("nvfp4_te", _FP4, 16, _E4M3, ValueRule(Arithmetic.TE, scale_saturates=True),
                 tensor_scale=True,
                 source="TransformerEngine core_nvfp4.cuh"),
    BlockScaling("nvfp4_modelopt", _FP4, 16, _E4M3,
                 ValueRule(Arithmetic.MODELOPT, zero_block_one=True), tensor_scale=True,
                 source="NVIDIA Model Optimizer NVFP4QTensor"),
    BlockScaling("nvfp4_torchao", _FP4, 16, _E4M3,
                 ValueRule(Arithmetic.TORCHAO, scale_floor=Fraction(1, 64)), tensor_scale=True,
                 source="torchao nvfp4_tensor.nvfp4_quantize"),
    BlockScaling("nvfp4_4over6", _FP4, 16, _E4M3,
                 ValueRule(Arithmetic.TE, global_max=256, four_over_six=True,
                           scale_saturates=True),
                 tensor_scale=True,
                 source="TransformerEngine quantize_4over6_nvfp4.cuh (arXiv 2512.02010)"),
    BlockScaling("p3109_maxabs", resolve("binary8p4se"), 32, resolve("binary8p1uf"),
                 ValueRule(Arithmetic.P3109),
                 source="P3109 Interim Report v4.0 5.2.3 ConvertToBlockMaxAbsFinite"),
]}


def preset(name: str, elem=None) -> BlockScaling:
    """A named preset, with its element format replaced when ``elem`` is given."""
    try:
        p = PRESETS[name]
    except KeyError:
        raise OptionError(f"unknown block-scaling preset {name!r}; valid: "
                          f"{', '.join(PRESETS)}") from None
    if elem is None:
        return p
    try:
        return p.with_elem(elem)
    except FormatError as err:
        raise OptionError(str(err)) from None
