"""What an emulated matrix multiply computes: the operands' element formats and scaling, and
the accumulator (golden/gemm.py runs it).

``GemmConfig`` names the operands' element formats, where their scales come from (OCP MX blocks,
per channel or per tensor, E8M0 or float32; or a value rule's two levels such as NVFP4's), the
block (the dot units' lanes), the element rounding and the accumulator: an ``Accumulator`` (the
dot units' results summed by a float adder, promoted into float32 every N terms) or a tensor
core's fused step (golden/tensor_core.py's ``FusedAccumulator``). Every combination the hardware
cannot run is refused here, with a one-line error.
"""

from __future__ import annotations

from dataclasses import dataclass

from fpforge.rtl.formats import CATALOG, FloatFormat, FormatError
from fpforge.rtl.format_names import resolve
from fpforge.rtl.dot import MxDotSpec
from fpforge.rtl.elements import element_format
from fpforge.rtl.mx import SCALE_RULES, VALUE_RULES, MxQuantSpec
from fpforge.rtl.options import OptionError, Rounding

from .tensor_core import FUSED_PRESETS, FusedAccumulator

__all__ = ["Accumulator", "ACCUMULATOR_PRESETS", "GemmConfig", "SCALINGS", "FLOAT_SCALINGS"]

F32 = CATALOG["float32"]


@dataclass(frozen=True)
class Accumulator:
    """How the dot units' block results are summed: a running sum in ``fmt`` rounded by
    ``rounding`` after every block (the dot unit rounds into it too), promoted into a float32
    running sum every ``promote_every`` K terms (None: never)."""

    fmt: FloatFormat = F32
    rounding: Rounding = Rounding.RNE
    promote_every: int | None = None

    def __post_init__(self):
        try:
            fmt = resolve(self.fmt)
        except FormatError as err:
            raise OptionError(str(err)) from None
        # Promotion and the result widen the running sum into float32: exact for these.
        if not fmt.has_inf or fmt.unsigned or fmt.precision > F32.precision or \
                fmt.emax > F32.emax or fmt.emin < F32.emin:
            raise OptionError(f"accumulator format must be a signed format with infinities "
                              f"that float32 holds (float32, bfloat16, float16, fp8e5m2...), "
                              f"not {fmt.name}")
        object.__setattr__(self, "fmt", fmt)
        object.__setattr__(self, "rounding",
                           Rounding.parse_static(self.rounding, "the accumulator"))
        if self.promote_every is not None and (not isinstance(self.promote_every, int)
                                               or self.promote_every < 1):
            raise OptionError(f"promote_every must be a positive number of K terms or None, "
                              f"not {self.promote_every!r}")

    def describe(self) -> str:
        promote = f", promoted to float32 every {self.promote_every} terms" \
            if self.promote_every else ""
        return f"{self.fmt.name} running sum, {self.rounding.value}{promote}"


# Named accumulators (docs/codesign.md): a float32 running sum as GPU epilogues keep it; bf16 and
# fp16 running sums; DeepSeek-V3's recipe (a narrow running sum promoted every 128 terms; its
# narrow sum is modelled as bf16 here, Hopper's own fixed-point sum is MMA-Sim's preset).
ACCUMULATOR_PRESETS = {
    "fp32": Accumulator(),
    "bf16": Accumulator("bfloat16"),
    "fp16": Accumulator("float16"),
    "bf16_promote128": Accumulator("bfloat16", promote_every=128),
}


# Where the operands' E8M0 scales come from: one per block of ``block`` elements along K (OCP
# MX), one per row of a and column of b over all of K (per channel), or one per operand (per
# tensor, a power of two); the dot units' blocks share their row's or tensor's scale. The
# ``_f32`` scalings give each channel / tensor a float32 scale amax / max_elem instead (the
# symmetric scale of an INT8, INT4 or FP8 recipe: with mxint8 elements int8 in -127..127, with
# int4 elements int4 in -7..7); the dot units then see unit E8M0 scales and the float32 scales
# multiply the result.
SCALINGS = ("block", "channel", "tensor", "channel_f32", "tensor_f32")
FLOAT_SCALINGS = ("channel_f32", "tensor_f32")


@dataclass(frozen=True)
class GemmConfig:
    """Element formats, scaling, block size (the dot units' lanes), scale rule and element
    rounding of both operands, and the accumulator."""

    elem_a: str = "fp8e4m3"
    elem_b: str | None = None
    block: int = 32
    scale_rule: str = "floor"
    rounding: str = "rne"
    accum: Accumulator | FusedAccumulator | str = "fp32"
    scaling: str = "block"
    seed: int = 0               # a stochastic rounding's random bits, when none are given

    def __post_init__(self):
        elems = element_format(self.elem_a), element_format(self.elem_b or self.elem_a)
        if self.scaling not in SCALINGS:
            raise OptionError(f"unknown scaling {self.scaling!r}; valid: {', '.join(SCALINGS)}")
        if self.scale_rule not in SCALE_RULES + VALUE_RULES:
            raise OptionError(f"unknown scale rule {self.scale_rule!r}; valid: "
                              f"{', '.join(SCALE_RULES + VALUE_RULES)}")
        if self.value_scaled:
            if self.scaling != "block":
                raise OptionError(f"scale rule {self.scale_rule} gives each block its own "
                                  f"scale: scaling must be block, not {self.scaling}")
            for e in elems:         # the quantizer's one-line errors (NVFP4 rules: E2M1 only)
                self.quant_spec(e.name)
        if isinstance(self.accum, str):
            presets = ACCUMULATOR_PRESETS | FUSED_PRESETS
            if self.accum not in presets:
                raise OptionError(f"unknown accumulator {self.accum!r}; valid: "
                                  f"{', '.join(presets)}")
            object.__setattr__(self, "accum", presets[self.accum])
        if isinstance(self.accum, FusedAccumulator):
            if any(e.twos_complement for e in elems):
                raise OptionError("the tensor-core accumulators take floating-point elements, "
                                  f"not {', '.join(e.name for e in elems if e.twos_complement)}")
            other = {e.name for e in elems} - set(self.accum.elements or {e.name for e in elems})
            if other:
                raise OptionError(f"the {self.accum.source} step takes "
                                  f"{' or '.join(self.accum.elements)} elements, not "
                                  f"{', '.join(sorted(other))}")
            if self.accum.accum.group:      # groups of lanes, each at its own scales
                self._check_grouped_step()
            else:
                if self.block != self.accum.group:
                    raise OptionError(f"the {self.accum.source} step takes {self.accum.group} "
                                      f"products: block must be {self.accum.group}, not "
                                      f"{self.block}")
                if self.value_scaled:
                    raise OptionError(f"the {self.accum.source} step takes E8M0 scales, not "
                                      f"the {self.scale_rule} recipe's")
            if not self.accum.scales_in_group and self.scaling == "block":
                raise OptionError(f"{self.accum.source} applies its scales after the sum: "
                                  f"scaling must be channel or tensor, not block")
        p = self.accum.promote_every
        if p is not None and p % self.block:
            raise OptionError(f"promote_every ({p}) must be a multiple of the block ({self.block})"
                              f": a dot unit's block is never split")

    def _check_grouped_step(self):
        """kind::mxf4nvf4: E2M1 elements, scale blocks of 16 or 32 along its 64 products,
        E8M0 scales (MXFP4) or NVFP4's E4M3."""
        acc = self.accum
        if self.block % acc.accum.group or acc.group % self.block:
            raise OptionError(f"the {acc.source} step's scale blocks are 16 or 32 elements, "
                              f"not {self.block}")
        if self.scaling != "block":
            raise OptionError(f"the {acc.source} step applies block scales: scaling must be "
                              f"block, not {self.scaling}")
        if self.value_scaled and self.scale_fmt != CATALOG["float8_e4m3fn"]:
            raise OptionError(f"the {acc.source} step takes E8M0 or E4M3 (NVFP4) scales, not "
                              f"the {self.scale_rule} recipe's {self.scale_fmt.name}")

    @property
    def value_scaled(self) -> bool:
        """Block scales that are numbers of a scale format (NVFP4's E4M3, P3109's), by a
        recipe's own float32 arithmetic (golden/blockscale.py), not E8M0 powers of two."""
        return self.scale_rule in VALUE_RULES

    def quant_spec(self, elem: str) -> MxQuantSpec:
        """The quantizer of one operand's blocks."""
        return MxQuantSpec(elem, block=self.block, scale_rule=self.scale_rule,
                           rounding=self.rounding)

    @property
    def scale_fmt(self) -> FloatFormat:
        return self.quant_spec(self.elem_a).scale_fmt

    @property
    def dot_spec(self) -> MxDotSpec:
        return MxDotSpec(self.elem_a, self.elem_b, n=self.block, out_fmt=self.accum.fmt,
                         rounding=self.accum.rounding, scale_fmt=self.scale_fmt)
