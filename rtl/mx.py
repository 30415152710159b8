"""OCP MX (Microscaling) block quantizer and dequantizer: the shared-exponent and value-scale
rules and the typed specs of the two units.

Plain Python (no Amaranth, no JAX), like rtl/formats.py: the generator (rtl/fp_units/mxq.py,
rtl/fp_units/mxdq.py), the export and golden/mx.py all read the MX parameters from here, so the
hardware and the model cannot drift apart. docs/mx.md states the semantics.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from .blockscale import PRESETS, BlockScaling
from .elements import E8M0, E8M0_BIAS, ElementFormat, elem_port, element_format
from .formats import CATALOG, FloatFormat
from .format_names import resolve
from .options import DEFAULT_SR_BITS, OptionError, Rounding, Tininess, UnitOptions
from .ports import Port, clock_ports, flags_port, rbits_port, valid_ports
from .pipeline import Pipeline
from .spec import Spec, check_int

__all__ = ["SCALE_RULES", "VALUE_RULES", "IN_FORMATS", "MAX_BLOCK", "MxQuantSpec",
           "MxDequantSpec"]

SCALE_RULES = ("floor", "ceil", "rceil", "even", "vllm")    # power-of-two scales: E8M0
# Value scales: a block scale that is a number of its scale format, by a recipe's own
# arithmetic (the block-scaling presets of rtl/blockscale.py; docs/blockscale.md): NVFP4's E4M3
# scale in float32 from a per-tensor amax input, P3109's maximum-magnitude Binary8p1uf scale.
VALUE_RULES = ("nvfp4_te", "nvfp4_modelopt", "nvfp4_torchao", "nvfp4_4over6", "p3109_maxabs")
IN_FORMATS = ("float32", "bfloat16")  # what the quantizer reads

_SHORT_IN = {"float32": "f32", "bfloat16": "bf16"}
MAX_BLOCK = 256
F32 = CATALOG["float32"]


def _sr_bits_applies(rounding: Rounding, sr_bits):
    if sr_bits is not None and not rounding.stochastic:
        raise OptionError(f"--sr-bits sets the width of the rbits input of --rounding "
                          f"stochastic; it does not apply to --rounding {rounding.value}")


def _value_rule(rule, elem: ElementFormat, unit: str) -> str | None:
    """A value-scale rule (VALUE_RULES) checked against the element format, or None for the
    E8M0 rules; one-line errors name what is valid."""
    if rule not in VALUE_RULES:
        return None
    preset = PRESETS[rule]
    if preset.tensor_scale and elem.grid != preset.elem:
        raise OptionError(f"{unit} --scale-rule {rule} quantizes {_default_element(rule)} "
                          f"elements (its constants are E2M1's), not {elem.name}")
    if elem.twos_complement:
        raise OptionError(f"{unit} --scale-rule {rule} takes a floating-point element format, "
                          f"not {elem.name}")
    return rule


def _default_element(rule) -> str:
    """The element format of a scale rule's recipe (fp8e4m3 for the E8M0 rules)."""
    return element_format(PRESETS[rule].elem).name if rule in VALUE_RULES else "fp8e4m3"


def _scaling(rule: str, elem: ElementFormat, block: int) -> BlockScaling:
    """The block-scaling description of a value rule, with this unit's block size."""
    return replace(PRESETS[rule], elem=elem.grid, block=block)


def _tensor_amax_port() -> Port:
    return Port("tensor_amax", "input", 32, "float32 amax of the whole tensor (a calibrated "
                                            "statistic), from which the unit derives the "
                                            "second-level scale in its recipe's order", fmt=F32)


def _block_default(block, rule) -> int:
    """The recipe's block (16 for NVFP4), 32 (OCP MX, P3109's preset) otherwise."""
    return block if block is not None else (PRESETS[rule].block if rule in VALUE_RULES else 32)


@dataclass(frozen=True)
class MxQuantSpec(Spec):
    """The MX block quantizer: ``block`` values in ``in_fmt`` (float32 or bfloat16) -> one E8M0
    scale by ``scale_rule`` + ``block`` elements in ``elem``, rounded by ``rounding`` (rne or any
    static mode; stochastic adds ``rbits``, ``sr_bits`` per element) and saturating."""

    elem: ElementFormat
    in_fmt: FloatFormat = F32
    block: int = 32
    scale_rule: str = "floor"
    rounding: Rounding = Rounding.RNE
    sr_bits: int = DEFAULT_SR_BITS
    tininess: Tininess | None = None       # None: the rounding's default (UnitOptions)
    pipeline: Pipeline = Pipeline()

    unit: ClassVar[str] = "mxq"
    SHAPE: ClassVar[str] = "block"
    OPERATION = ("scale, y = MX quantize(x): X = 2^s by the scale rule, y_i = x_i / X rounded, "
                 "saturating")
    OPTIONS = ("format", "in_format", "block", "scale_rule", "rounding", "sr_bits", "tininess",
               "stages", "cuts")
    IN_MATRIX = False        # block stimulus of its own: its slow benches (docs/verification.md)
    OPTION_NOTES = {"saturate": "its elements always saturate"}
    SEMANTICS = "docs/mx.md"
    # After the block's largest magnitude; after the shared exponent and the scaled elements
    # (the raw values); inside the element rounders. The value-scale recipes have none.
    CUT_POINTS = ("amax", "scale", "round")
    DEFAULT_CUTS = ("scale", "round")

    def __post_init__(self):
        object.__setattr__(self, "elem", element_format(self.elem))
        fmt = resolve(self.in_fmt)
        if fmt.name not in IN_FORMATS:
            raise OptionError(f"MX quantizer input format must be one of "
                              f"{', '.join(IN_FORMATS)}, not {self.in_fmt!r}")
        object.__setattr__(self, "in_fmt", fmt)
        check_int("block", self.block, 1, MAX_BLOCK)
        if self.scale_rule not in SCALE_RULES + VALUE_RULES:
            raise OptionError(f"scale rule must be one of "
                              f"{', '.join(SCALE_RULES + VALUE_RULES)}, not {self.scale_rule!r}")
        if _value_rule(self.scale_rule, self.elem, "mxq") and fmt.name != "float32":
            raise OptionError(f"mxq --scale-rule {self.scale_rule} reads float32 blocks (its "
                              f"recipe's arithmetic), not {fmt.name}")
        rounding = Rounding.parse(self.rounding)
        if rounding is Rounding.DYNAMIC:
            raise OptionError("the MX quantizer takes a static rounding mode or stochastic, "
                              "not 'dynamic'")
        object.__setattr__(self, "rounding", rounding)
        check_int("sr_bits", self.sr_bits, 1, 32)
        object.__setattr__(self, "tininess", self.options.tininess)
        self.place_pipeline()

    @classmethod
    def from_options(cls, *, format=None, in_format=None, block=None, scale_rule="floor",
                     rounding="rne", sr_bits=None, tininess=None, stages=None,
                     cuts=None) -> "MxQuantSpec":
        """``format`` is the element format (default fp8e4m3; fp4e2m1 under the NVFP4 rules),
        ``in_format`` the input's; ``block`` defaults to 32 (16 under the NVFP4 rules)."""
        _sr_bits_applies(Rounding.parse(rounding), sr_bits)
        if format is None:
            format = _default_element(scale_rule)
        return cls(format, in_fmt="float32" if in_format is None else in_format,
                   block=_block_default(block, scale_rule),
                   scale_rule=scale_rule, rounding=rounding,
                   sr_bits=DEFAULT_SR_BITS if sr_bits is None else sr_bits, tininess=tininess,
                   pipeline=cls.pipeline_from_options(stages, cuts))

    def option_values(self) -> dict:
        v = {"format": self.elem.name, "in_format": self.in_fmt.name, "block": self.block,
             "scale_rule": self.scale_rule, "rounding": self.rounding.value}
        if self.has_rbits and self.sr_bits != DEFAULT_SR_BITS:
            v["sr_bits"] = self.sr_bits
        return v | self.options.tininess_option() | self.pipeline_options()

    @property
    def options(self) -> UnitOptions:
        """The element rounder's options: saturating, in the chosen mode."""
        return UnitOptions(rounding=self.rounding, saturate=True, sr_bits=self.sr_bits,
                           tininess=self.tininess)

    @property
    def has_rbits(self) -> bool:
        return self.rounding.stochastic

    @property
    def value_scaled(self) -> bool:
        """A recipe's value scale (VALUE_RULES) rather than an E8M0 power of two."""
        return self.scale_rule in VALUE_RULES

    @property
    def pipeline_points(self) -> tuple[str, ...]:
        return () if self.value_scaled else self.CUT_POINTS

    @property
    def has_tensor_amax(self) -> bool:
        return self.value_scaled and self.scaling.tensor_scale

    @property
    def scaling(self) -> BlockScaling | None:
        """The block-scaling description of a value rule (rtl/blockscale.py), else None."""
        return _scaling(self.scale_rule, self.elem, self.block) if self.value_scaled else None

    @property
    def scale_fmt(self) -> FloatFormat:
        return self.scaling.scale_fmt if self.value_scaled else E8M0

    @property
    def default_name(self) -> str:
        """e.g. ``mxq_fp8e4m3_f32_k32_floor_rne``."""
        parts = ["mxq", self.elem.name, _SHORT_IN[self.in_fmt.name], f"k{self.block}",
                 self.scale_rule, self.rounding.value]
        if self.has_rbits and self.sr_bits != DEFAULT_SR_BITS:
            parts.append(f"sr{self.sr_bits}")
        return "_".join(parts + self.options.tininess_name_parts() + self.pipeline.name_parts())

    def describe(self) -> str:
        sr = f" ({self.sr_bits} random bits per element)" if self.has_rbits else ""
        if self.value_scaled:
            amax = ", tensor_amax: float32" if self.has_tensor_amax else ""
            return (f"mxq [x: {self.block} x float32{amax}] -> scale: "
                    f"{self.scale_fmt.name} ({self.scale_rule}), y: {self.block} x "
                    f"{self.elem.name}; rounding {self.rounding.value}{sr}, saturating; latency "
                    f"{self.latency}")
        return (f"mxq [x: {self.block} x {self.in_fmt.name}] -> scale: E8M0 ({self.scale_rule}), "
                f"y: {self.block} x {self.elem.name}; rounding {self.rounding.value}{sr}, "
                f"saturating; latency {self.latency}")

    def ports(self) -> list[Port]:
        k, w = self.block, self.in_fmt.width
        out = clock_ports(self.stages)
        out.append(Port("x", "input", w, f"the block: {k} {self.in_fmt.name} codes, element i "
                                         f"at x[i*{w} +: {w}]", k, self.in_fmt))
        names = ["x"]
        if self.has_tensor_amax:
            out.append(_tensor_amax_port())
            names.append("tensor_amax")
        if self.has_rbits:
            out.append(rbits_port(self.sr_bits, k))
            names.append("rbits")
        v_in, v_out = valid_ports(self.stages, names)
        out += v_in
        if self.value_scaled:
            out.append(Port("scale", "output", 8, f"block scale, {self.scale_fmt.name} code "
                                                  f"({self.scale_rule}, docs/blockscale.md)",
                            fmt=self.scale_fmt))
        else:
            out.append(Port("scale", "output", 8, f"shared scale X = 2^(scale - {E8M0_BIAS}), "
                                                  "E8M0 code; 0xFF (NaN) when the block holds "
                                                  "inf or NaN", fmt=E8M0))
        out.append(elem_port("y", "output", k, self.elem, f"{k} {self.elem.name} element codes"))
        out.append(flags_port(", ORed over the block's element roundings"))
        return out + v_out

    def formats(self) -> dict[str, FloatFormat]:
        # MXINT8's record is its value grid e1m6 (its codes are two's complement)
        return {"x": self.in_fmt, "y": self.elem.grid}

    def parameters(self) -> dict:
        v = {"element": self.elem.name, "element_describe": self.elem.describe(),
             "input": self.in_fmt.name, "block": self.block, "scale_rule": self.scale_rule,
             "rounding": self.rounding.value, "rounding_meaning": self.rounding.meaning,
             "sr_bits": self.sr_bits if self.has_rbits else None, "saturate": True} | \
            self.options.tininess_option()
        if self.value_scaled:
            v |= {"scale_format": self.scale_fmt.name, "scaling": self.scaling.describe(),
                  "scaling_source": self.scaling.source}
        return v | self.pipeline_parameters()

    def header_lines(self) -> list[str]:
        if self.value_scaled:
            how = "float32 arithmetic in the recipe's order from tensor_amax" if \
                self.has_tensor_amax else "the scale rounded up from the largest finite " \
                "magnitude, elements SatFinite"
            head = [f"block       {self.block} elements, one {self.scale_fmt.name} scale",
                    f"scale rule  {self.scale_rule}: {self.scaling.source}; {how} "
                    "(docs/blockscale.md)"]
        else:
            head = [f"block       {self.block} elements, one E8M0 scale",
                    f"scale rule  {self.scale_rule} (docs/mx.md); s clamped to [-127, 127]; "
                    "all-zero block 2^-127; inf/NaN in the block: scale 0xFF, NaN elements"]
        lines = [f"x format    {self.in_fmt.describe()}",
                 f"element     {self.elem.describe()}", *head,
                 f"rounding    {self.rounding.value} ({self.rounding.meaning}), saturating"]
        if self.has_rbits:
            lines.append(f"sr_bits     {self.sr_bits} per element (width of rbits / {self.block})")
        return lines + self.options.tininess_lines() + self.pipeline_lines()


@dataclass(frozen=True)
class MxDequantSpec(Spec):
    """The MX dequantizer: one E8M0 scale + ``block`` elements in ``elem`` -> ``block`` float32
    values X * P_i, each rounded once (rne): exact unless it overflows (inf) or falls below
    float32's subnormals; a NaN scale gives a NaN block."""

    elem: ElementFormat
    block: int = 32
    scale_rule: str | None = None      # a VALUE_RULES recipe; None: an E8M0 scale
    pipeline: Pipeline = Pipeline()

    unit: ClassVar[str] = "mxdq"
    SHAPE: ClassVar[str] = "block"
    IN_MATRIX = False        # block stimulus of its own: its slow benches (docs/verification.md)
    out_fmt: ClassVar[FloatFormat] = F32
    OPERATION = "y_i = X * x_i, X = 2^(scale - 127), rounded once into float32"
    OPTIONS = ("format", "in_format", "block", "scale_rule", "rounding", "stages", "cuts")
    SEMANTICS = "docs/mx.md"
    # After the element decoders; after the scale's exponent is added (the raw values); inside
    # the rounders into float32. The value-scale recipes have none.
    CUT_POINTS = ("decode", "scale", "round")
    DEFAULT_CUTS = ("scale", "round")

    def __post_init__(self):
        object.__setattr__(self, "elem", element_format(self.elem))
        check_int("block", self.block, 1, MAX_BLOCK)
        if self.scale_rule is not None and self.scale_rule not in VALUE_RULES:
            raise OptionError(f"mxdq reads an E8M0 scale the same way under every "
                              f"power-of-two rule; --scale-rule selects a value-scale recipe: "
                              f"{', '.join(VALUE_RULES)}, not {self.scale_rule!r}")
        _value_rule(self.scale_rule, self.elem, "mxdq")
        self.place_pipeline()

    @property
    def value_scaled(self) -> bool:
        return self.scale_rule is not None

    @property
    def pipeline_points(self) -> tuple[str, ...]:
        return () if self.value_scaled else self.CUT_POINTS

    @property
    def scaling(self) -> BlockScaling | None:
        return _scaling(self.scale_rule, self.elem, self.block) if self.value_scaled else None

    @property
    def has_tensor_amax(self) -> bool:
        return self.value_scaled and self.scaling.tensor_scale

    @property
    def scale_fmt(self) -> FloatFormat:
        return self.scaling.scale_fmt if self.value_scaled else E8M0

    @classmethod
    def from_options(cls, *, format=None, in_format=None, block=None, scale_rule=None,
                     rounding="rne", stages=None, cuts=None) -> "MxDequantSpec":
        """``format`` is the output (float32, the default), ``in_format`` the element format
        (fp4e2m1 by default under an NVFP4 rule)."""
        if format is not None and resolve(format).name != "float32":
            raise OptionError(f"unit mxdq writes float32; --format must be float32, not "
                              f"{format!r}")
        if in_format is None and scale_rule in VALUE_RULES:
            in_format = _default_element(scale_rule)
        if in_format is None:
            raise OptionError("unit mxdq needs its element format: --in-format ELEM")
        if Rounding.parse(rounding) is not Rounding.RNE:
            raise OptionError(f"unit mxdq rounds rne (exact unless float32 overflows or "
                              f"underflows); --rounding {rounding} does not apply")
        return cls(in_format, block=_block_default(block, scale_rule), scale_rule=scale_rule,
                   pipeline=cls.pipeline_from_options(stages, cuts))

    def option_values(self) -> dict:
        v = {"format": "float32", "in_format": self.elem.name, "block": self.block}
        if self.value_scaled:
            v["scale_rule"] = self.scale_rule
        return v | self.pipeline_options()

    @property
    def options(self) -> UnitOptions:
        return UnitOptions(rounding=Rounding.RNE)

    @property
    def default_name(self) -> str:
        """e.g. ``mxdq_fp8e4m3_k32``, ``mxdq_fp4e2m1_k16_nvfp4_te``."""
        rule = f"_{self.scale_rule}" if self.value_scaled else ""
        return "_".join([f"mxdq_{self.elem.name}_k{self.block}{rule}",
                         *self.pipeline.name_parts()])

    def describe(self) -> str:
        if self.value_scaled:
            amax = ", tensor_amax: float32" if self.has_tensor_amax else ""
            return (f"mxdq [scale: {self.scale_fmt.name}, x: {self.block} x {self.elem.name}"
                    f"{amax}] -> y: {self.block} x float32 ({self.scale_rule}); "
                    f"latency {self.latency}")
        return (f"mxdq [scale: E8M0, x: {self.block} x {self.elem.name}] -> y: {self.block} x "
                f"float32 = X * x_i, rounding rne; latency {self.latency}")

    def ports(self) -> list[Port]:
        k = self.block
        out = clock_ports(self.stages)
        names = ["scale", "x"]
        if self.value_scaled:
            out.append(Port("scale", "input", 8, f"block scale, {self.scale_fmt.name} code",
                            fmt=self.scale_fmt))
        else:
            out.append(Port("scale", "input", 8, f"E8M0 shared scale X = 2^(scale - "
                                                 f"{E8M0_BIAS}); 0xFF (NaN) makes every output "
                                                 "NaN", fmt=E8M0))
        out.append(elem_port("x", "input", k, self.elem, f"{k} {self.elem.name} element codes"))
        if self.has_tensor_amax:
            out.append(_tensor_amax_port())
            names.append("tensor_amax")
        v_in, v_out = valid_ports(self.stages, names)
        out += v_in
        out.append(Port("y", "output", 32, f"{k} float32 codes X * x_i (rne), element i at "
                                           "y[i*32 +: 32]", k, F32))
        return out + v_out

    def formats(self) -> dict[str, FloatFormat]:
        return {"x": self.elem.grid, "y": self.out_fmt}

    def parameters(self) -> dict:
        v = {"element": self.elem.name, "element_describe": self.elem.describe(),
             "output": "float32", "block": self.block, "rounding": "rne",
             "rounding_meaning": Rounding.RNE.meaning, "saturate": False}
        if self.value_scaled:
            v |= {"scale_rule": self.scale_rule, "scale_format": self.scale_fmt.name,
                  "scaling": self.scaling.describe(), "scaling_source": self.scaling.source}
        return v | self.pipeline_parameters()

    def header_lines(self) -> list[str]:
        if self.value_scaled:
            return [f"element     {self.elem.describe()}",
                    f"block       {self.block} elements, one {self.scale_fmt.name} scale",
                    f"scale rule  {self.scale_rule}: {self.scaling.source}; float32 "
                    "arithmetic in the recipe's order" +
                    (" from tensor_amax" if self.has_tensor_amax else "") +
                    " (docs/blockscale.md)",
                    f"y format    {self.out_fmt.describe()}"]
        return [f"element     {self.elem.describe()}",
                f"block       {self.block} elements, one E8M0 scale",
                f"y format    {self.out_fmt.describe()}",
                f"rounding    rne ({Rounding.RNE.meaning}): exact unless X * x_i overflows (inf) "
                "or underflows float32", *self.pipeline_lines()]
