"""OCP MX (Microscaling) descriptions shared by the RTL and the golden model: element formats,
shared-exponent rules, accumulator contracts and the typed specs of the two MX units.

Plain Python (no Amaranth, no JAX), like rtl/formats.py: the generator (rtl/fp_units/mxq.py,
rtl/fp_units/dot.py), the export and golden/mx.py all read the MX parameters from here, so the
hardware and the model cannot drift apart. docs/mx.md states the semantics.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

from .blockscale import PRESETS, BlockScaling
from .formats import CATALOG, FloatFormat, FormatError, Specials, resolve
from .options import DEFAULT_SR_BITS, OptionError, Rounding, UnitOptions
from .ports import Port, clock_ports, flags_port, rbits_port, result_ports, valid_ports
from .spec import Spec, check_int, check_stages

__all__ = ["ElementFormat", "ELEMENT_FORMATS", "element_format", "SCALE_RULES", "VALUE_RULES",
           "ACCUMULATORS",
           "E8M0_BIAS", "E8M0_NAN", "SCALE_MIN", "SCALE_MAX", "IN_FORMATS", "OCP_FP_ELEMENTS",
           "DOT_N_RANGE", "FRAC_BITS_RANGE", "GROUP_ZERO_EXP", "TWO_STAGE_F2_MAX", "MAX_BLOCK",
           "MxQuantSpec", "MxDequantSpec", "MxDotSpec"]

E8M0_BIAS = 127
E8M0_NAN = 0xFF
SCALE_MIN, SCALE_MAX = -127, 127     # exponents E8M0 holds (0xFF is NaN)
SCALE_RULES = ("floor", "ceil", "rceil", "even", "vllm")    # power-of-two scales: E8M0
# Value scales: a block scale that is a number of its scale format, by a recipe's own
# arithmetic (the block-scaling presets of rtl/blockscale.py; docs/blockscale.md): NVFP4's E4M3
# scale in float32 from a per-tensor amax input, P3109's maximum-magnitude Binary8p1uf scale.
VALUE_RULES = ("nvfp4_te", "nvfp4_modelopt", "nvfp4_torchao", "nvfp4_4over6", "p3109_maxabs")
ACCUMULATORS = ("exact", "fixed")
FRAC_BITS_RANGE = (1, 55)            # fixed accumulator: fraction bits below the largest product
# The grouped accumulator (dot --sum-group): the exponent at which an all-zero group or c = 0
# stands when the largest one is chosen, 2^-139, MMA-Sim's e_zero for Blackwell's
# kind::mxf4nvf4 step (mmasim 2.1.1 nv_ptx/sim.py). A term whose scales sit far below it is
# truncated away.
GROUP_ZERO_EXP = -139
# The two-stage accumulator (dot --frac-bits2): its second stage's F2 at most (the golden model
# sums in int64: (F2 + 1)-bit terms shifted by up to 8 more, with carries).
TWO_STAGE_F2_MAX = 48
IN_FORMATS = ("float32", "bfloat16")  # what the quantizer reads
DOT_N_RANGE = (1, 64)                # vector lengths of the dot unit


@dataclass(frozen=True)
class ElementFormat:
    """An MX element format: the grid the shared rounder rounds to, and how codes are stored.

    ``grid`` is a FloatFormat of the element's values. For the FP formats it is the format
    itself; for MXINT8 it is the sign-magnitude grid e1m6 (bias 1, finite) whose values are
    exactly int8 * 2^-6 for |int8| <= 127, stored as two's complement (``twos_complement``).
    INT4 is the same with e1m2: int4 * 2^-2, |int4| <= 7.
    """

    name: str
    grid: FloatFormat
    twos_complement: bool = False

    @property
    def emax(self) -> int:
        """Exponent of the largest power of two the element holds (emax_elem in OCP MX 6.3)."""
        return self.grid.emax

    @property
    def width(self) -> int:
        return self.grid.width

    @property
    def lsb_min(self) -> int:
        """Weight of the smallest nonzero element's LSB: decoded exponents are >= this."""
        return -self.grid.man_bits if self.twos_complement else \
            self.grid.emin - self.grid.man_bits

    @property
    def sig_bits(self) -> int:
        """Bits of a decoded significand: hidden bit included; an integer element's full width
        (|-128| = 128 needs MXINT8's 8 bits)."""
        return self.width if self.twos_complement else self.grid.precision

    def describe(self) -> str:
        if self.twos_complement:
            w, f = self.width, self.grid.man_bits
            top = (1 << (w - 1)) - 1
            return (f"{self.name} (int{w} two's complement x 2^-{f}, max {top}/{1 << f}, "
                    f"clamp +-{top}, emax {self.emax})")
        return f"{self.name}: {self.grid.describe()}, emax {self.emax}"

    def __str__(self) -> str:
        return self.name


def _int_grid(width: int) -> FloatFormat:
    """The sign-magnitude grid of a two's complement integer element of ``width`` bits: e1m(w-2)
    with bias 1, whose values are int * 2^-(w-2) and whose largest is (2^(w-1) - 1) * 2^-(w-2)."""
    return FloatFormat(1, width - 2, 1, Specials.FINITE)


ELEMENT_FORMATS: dict[str, ElementFormat] = {
    "fp8e4m3": ElementFormat("fp8e4m3", CATALOG["float8_e4m3fn"]),
    "fp8e5m2": ElementFormat("fp8e5m2", CATALOG["float8_e5m2"]),
    "fp6e3m2": ElementFormat("fp6e3m2", CATALOG["float6_e3m2fn"]),
    "fp6e2m3": ElementFormat("fp6e2m3", CATALOG["float6_e2m3fn"]),
    "fp4e2m1": ElementFormat("fp4e2m1", CATALOG["float4_e2m1fn"]),
    "mxint8": ElementFormat("mxint8", _int_grid(8), twos_complement=True),
    # INT4 with a symmetric scale (a float32 per-channel scale in golden/gemm.py, or E8M0 blocks)
    "int4": ElementFormat("int4", _int_grid(4), twos_complement=True),
    # AMD CDNA3's FP8 (FNUZ: bias 8 / 16, one NaN at 0x80, no -0, no inf), for its tensor core
    "fp8e4m3fnuz": ElementFormat("fp8e4m3fnuz", CATALOG["float8_e4m3fnuz"]),
    "fp8e5m2fnuz": ElementFormat("fp8e5m2fnuz", CATALOG["float8_e5m2fnuz"]),
    # P3109 elements (docs/p3109.md) under the same E8M0 scales: SatFinite, their one NaN.
    "binary8p4se": ElementFormat("binary8p4se", resolve("binary8p4se")),
    "binary8p3se": ElementFormat("binary8p3se", resolve("binary8p3se")),
    "binary4p2sf": ElementFormat("binary4p2sf", resolve("binary4p2sf")),
}
_BY_GRID = {e.grid: e for e in ELEMENT_FORMATS.values() if not e.twos_complement}
OCP_FP_ELEMENTS = ("fp8e4m3", "fp8e5m2", "fp6e3m2", "fp6e2m3", "fp4e2m1")   # OCP MX v1.0's FP


def element_format(spec: "str | FloatFormat | ElementFormat") -> ElementFormat:
    """Resolve an element format: a short name (fp8e4m3, ..., mxint8), a catalog name
    (float8_e4m3fn, ...) or FloatFormat of one of the OCP MX element formats."""
    if isinstance(spec, ElementFormat):
        return spec
    if isinstance(spec, str) and spec.strip().lower() in ("mxint8", "int8"):
        return ELEMENT_FORMATS["mxint8"]
    if isinstance(spec, str) and spec.strip().lower() in ("int4", "mxint4"):
        return ELEMENT_FORMATS["int4"]
    try:
        fmt = resolve(spec)
    except Exception:
        fmt = None
    if fmt is None or fmt not in _BY_GRID:
        raise OptionError(f"MX element format must be one of {', '.join(ELEMENT_FORMATS)} "
                          f"(or their catalog names), not {spec!r}")
    return _BY_GRID[fmt]


# ----- unit specs --------------------------------------------------------------------------------

_SHORT_IN = {"float32": "f32", "bfloat16": "bf16"}
MAX_BLOCK = 256
E8M0 = CATALOG["float8_e8m0fnu"]
F32 = CATALOG["float32"]


def _elem_port(name: str, direction: str, count: int, elem: ElementFormat, what: str) -> Port:
    """A packed bus of ``count`` element codes (MXINT8 and INT4 carry two's complement
    integers)."""
    w = elem.width
    return Port(name, direction, w, f"{what}, element i at {name}[i*{w} +: {w}]", count,
                None if elem.twos_complement else elem.grid)


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


def _latency_line(spec) -> str:
    return f"latency     {spec.latency} cycle(s)" + (
        " (combinational)" if not spec.latency else
        f", {spec.stages} register stage(s); clk rising edge, rst synchronous")


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
    stages: int = 0

    unit: ClassVar[str] = "mxq"
    OPERATION = ("scale, y = MX quantize(x): X = 2^s by the scale rule, y_i = x_i / X rounded, "
                 "saturating")
    OPTIONS = ("format", "in_format", "block", "scale_rule", "rounding", "sr_bits", "stages")
    OPTION_NOTES = {"saturate": "its elements always saturate"}
    SEMANTICS = "docs/mx.md"

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
        check_stages(self.stages)

    @classmethod
    def from_options(cls, *, format=None, in_format=None, block=None, scale_rule="floor",
                     rounding="rne", sr_bits=None, stages=0) -> "MxQuantSpec":
        """``format`` is the element format (default fp8e4m3; fp4e2m1 under the NVFP4 rules),
        ``in_format`` the input's; ``block`` defaults to 32 (16 under the NVFP4 rules)."""
        _sr_bits_applies(Rounding.parse(rounding), sr_bits)
        if format is None:
            format = _default_element(scale_rule)
        return cls(format, in_fmt="float32" if in_format is None else in_format,
                   block=_block_default(block, scale_rule),
                   scale_rule=scale_rule, rounding=rounding,
                   sr_bits=DEFAULT_SR_BITS if sr_bits is None else sr_bits, stages=stages)

    def option_values(self) -> dict:
        v = {"format": self.elem.name, "in_format": self.in_fmt.name, "block": self.block,
             "scale_rule": self.scale_rule, "rounding": self.rounding.value}
        if self.has_rbits and self.sr_bits != DEFAULT_SR_BITS:
            v["sr_bits"] = self.sr_bits
        return v | {"stages": self.stages}

    @property
    def options(self) -> UnitOptions:
        """The element rounder's options: saturating, in the chosen mode."""
        return UnitOptions(rounding=self.rounding, saturate=True, sr_bits=self.sr_bits)

    @property
    def has_rbits(self) -> bool:
        return self.rounding.stochastic

    @property
    def value_scaled(self) -> bool:
        """A recipe's value scale (VALUE_RULES) rather than an E8M0 power of two."""
        return self.scale_rule in VALUE_RULES

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
        if self.stages:
            parts.append(f"s{self.stages}")
        return "_".join(parts)

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
        out.append(_elem_port("y", "output", k, self.elem, f"{k} {self.elem.name} element codes"))
        out.append(flags_port(", ORed over the block's element roundings"))
        return out + v_out

    def formats(self) -> dict[str, FloatFormat]:
        # MXINT8's record is its value grid e1m6 (its codes are two's complement)
        return {"x": self.in_fmt, "y": self.elem.grid}

    def parameters(self) -> dict:
        v = {"element": self.elem.name, "element_describe": self.elem.describe(),
             "input": self.in_fmt.name, "block": self.block, "scale_rule": self.scale_rule,
             "rounding": self.rounding.value, "rounding_meaning": self.rounding.meaning,
             "sr_bits": self.sr_bits if self.has_rbits else None, "saturate": True}
        if self.value_scaled:
            v |= {"scale_format": self.scale_fmt.name, "scaling": self.scaling.describe(),
                  "scaling_source": self.scaling.source}
        return v

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
        return lines


@dataclass(frozen=True)
class MxDequantSpec(Spec):
    """The MX dequantizer: one E8M0 scale + ``block`` elements in ``elem`` -> ``block`` float32
    values X * P_i, each rounded once (rne): exact unless it overflows (inf) or falls below
    float32's subnormals; a NaN scale gives a NaN block."""

    elem: ElementFormat
    block: int = 32
    stages: int = 0
    scale_rule: str | None = None      # a VALUE_RULES recipe; None: an E8M0 scale

    unit: ClassVar[str] = "mxdq"
    out_fmt: ClassVar[FloatFormat] = F32
    OPERATION = "y_i = X * x_i, X = 2^(scale - 127), rounded once into float32"
    OPTIONS = ("format", "in_format", "block", "scale_rule", "rounding", "stages")
    SEMANTICS = "docs/mx.md"

    def __post_init__(self):
        object.__setattr__(self, "elem", element_format(self.elem))
        check_int("block", self.block, 1, MAX_BLOCK)
        if self.scale_rule is not None and self.scale_rule not in VALUE_RULES:
            raise OptionError(f"mxdq reads an E8M0 scale the same way under every "
                              f"power-of-two rule; --scale-rule selects a value-scale recipe: "
                              f"{', '.join(VALUE_RULES)}, not {self.scale_rule!r}")
        _value_rule(self.scale_rule, self.elem, "mxdq")
        check_stages(self.stages)

    @property
    def value_scaled(self) -> bool:
        return self.scale_rule is not None

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
                     rounding="rne", stages=0) -> "MxDequantSpec":
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
        return cls(in_format, block=_block_default(block, scale_rule), stages=stages,
                   scale_rule=scale_rule)

    def option_values(self) -> dict:
        v = {"format": "float32", "in_format": self.elem.name, "block": self.block}
        if self.value_scaled:
            v["scale_rule"] = self.scale_rule
        return v | {"stages": self.stages}

    @property
    def options(self) -> UnitOptions:
        return UnitOptions(rounding=Rounding.RNE)

    @property
    def default_name(self) -> str:
        """e.g. ``mxdq_fp8e4m3_k32``, ``mxdq_fp4e2m1_k16_nvfp4_te``."""
        rule = f"_{self.scale_rule}" if self.value_scaled else ""
        return f"mxdq_{self.elem.name}_k{self.block}{rule}" + \
            (f"_s{self.stages}" if self.stages else "")

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
        out.append(_elem_port("x", "input", k, self.elem, f"{k} {self.elem.name} element codes"))
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
        return v

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
                "or underflows float32"]


@dataclass(frozen=True)
class MxDotSpec(Spec):
    """The MX dot-product unit: ``n`` elements of ``elem_a`` times ``n`` of ``elem_b``, summed,
    optionally times the E8M0 scales ``scale_a * scale_b`` (``scaled``), rounded once into
    ``out_fmt`` (non-saturating, a static rounding mode) under the ``accum`` contract."""

    elem_a: ElementFormat
    elem_b: ElementFormat | None = None
    n: int = 32
    scaled: bool = True
    accum: str = "exact"
    frac_bits: int = 24
    out_fmt: FloatFormat = F32
    rounding: Rounding = Rounding.RNE
    stages: int = 0
    scale_fmt: FloatFormat = E8M0
    c_fmt: FloatFormat | None = None
    sum_group: int | None = None
    frac_bits2: int | None = None

    unit: ClassVar[str] = "dot"
    OPERATION = "y = X_A * X_B * sum_i a_i * b_i, rounded once (OCP MX Dot)"
    OPTIONS = ("format", "in_format", "a_format", "b_format", "c_format", "n", "accum",
               "frac_bits", "sum_group", "frac_bits2", "scales", "scale_format", "rounding",
               "stages")
    OPTION_NOTES = {"saturate": "its result overflows to inf"}
    SEMANTICS = "docs/mx.md"

    def __post_init__(self):
        a = element_format(self.elem_a)
        object.__setattr__(self, "elem_a", a)
        object.__setattr__(self, "elem_b", a if self.elem_b is None else
                           element_format(self.elem_b))
        check_int("dot length n", self.n, *DOT_N_RANGE)
        if not isinstance(self.scaled, bool):
            raise OptionError(f"scaled must be a bool, not {self.scaled!r}")
        if self.accum not in ACCUMULATORS:
            raise OptionError(f"accumulator must be one of {', '.join(ACCUMULATORS)}, "
                              f"not {self.accum!r}")
        check_int("frac_bits", self.frac_bits, *FRAC_BITS_RANGE)
        try:
            out = resolve(self.out_fmt)
        except FormatError as err:
            raise OptionError(str(err)) from None
        if out.specials is Specials.FNU:
            raise OptionError(f"dot output format must hold signed values, not {out.name}")
        object.__setattr__(self, "out_fmt", out)
        object.__setattr__(self, "rounding", Rounding.parse_static(self.rounding, "the dot unit"))
        check_stages(self.stages)
        object.__setattr__(self, "scale_fmt", self._checked_scale_format())
        if self.c_fmt is not None:
            object.__setattr__(self, "c_fmt", self._checked_c_format())
        if self.sum_group is not None:
            self._check_groups()
        if self.frac_bits2 is not None:
            self._check_two_stage()

    def _checked_c_format(self) -> FloatFormat:
        """The accumulator input c of one tensor-core step (d = a.b + c): aligned and truncated
        like the products, so only the fixed accumulator takes it."""
        if self.accum != "fixed":
            raise OptionError("dot --c-format adds the accumulator input c to --accum fixed (c "
                              "truncated like the products, a tensor core's step); --accum "
                              f"{self.accum} takes no c")
        if self.value_scales and self.sum_group is None:
            raise OptionError("dot --c-format works with E8M0 scales, --no-scales or "
                              f"--sum-group, not --scale-format {self.scale_fmt.name} alone")
        try:
            fmt = resolve(self.c_fmt)
        except FormatError as err:
            raise OptionError(str(err)) from None
        if not fmt.signed or fmt.specials is Specials.FNU:
            raise OptionError(f"dot --c-format must be a signed float format (float32, "
                              f"bfloat16, e8m13...), not {fmt.name}")
        return fmt

    def _checked_scale_format(self) -> FloatFormat:
        try:
            fmt = resolve(self.scale_fmt)
        except FormatError as err:
            raise OptionError(str(err)) from None
        if fmt == E8M0:
            return fmt
        if not self.scaled:
            raise OptionError("--scale-format sets the format of scale_a and scale_b; it does "
                              "not apply with --no-scales")
        if fmt.width > 8 or fmt.has_inf or not fmt.has_zero:
            raise OptionError(f"dot scale format must be float8_e8m0fnu or a format of at most "
                              f"8 bits with a zero and no infinities (float8_e4m3fn: NVFP4's "
                              f"scale, binary8p1uf, ue5m3fn...), not {fmt.name}")
        # The golden model multiplies its 64-bit window of the sum by the scales' significands:
        # exact while the product fits (a one-bit significand, a power of two, always does).
        # Grouped sums are checked group by group (_check_groups).
        bits = self.sum_bits + 2 * fmt.precision
        if fmt.precision > 1 and bits > 64 and self.sum_group is None:
            raise OptionError(f"dot --scale-format {fmt.name}: the scaled exact sum of "
                              f"{self.elem_a.name} x {self.elem_b.name} (n = {self.n}) needs "
                              f"{bits} bits; at most 64 are supported (a shorter n, narrower "
                              f"elements or --accum fixed with fewer --frac-bits)")
        return fmt

    def _check_groups(self):
        """The grouped accumulator (MMA-Sim's gst_fdpa): ``sum_group`` lanes summed exactly, each
        group times its own scales at the scales' exponent, c beside them, all truncated to F
        bits below the largest (docs/mx.md). The golden model holds a group's scaled sum in 64
        bits and the truncated terms' sum in int64: both are checked here."""
        g = self.sum_group
        check_int("sum_group", g, 1, self.n)
        if self.accum != "fixed" or not self.scaled:
            raise OptionError("dot --sum-group sums groups of lanes exactly, each at its own "
                              "scales (a tensor core's grouped step): it needs --accum fixed "
                              "and scale inputs")
        if self.n % g:
            raise OptionError(f"dot --sum-group {g} must divide the vector length n = {self.n}")
        bits = self.group_bits + 2 * self.scale_fmt.precision
        total = self.frac_bits + self.group_int_bits + self.groups.bit_length() + 1
        if bits > 64 or total > 62:
            raise OptionError(f"dot --sum-group {g}: a scaled group of {self.elem_a.name} x "
                              f"{self.elem_b.name} needs {bits} bits and the truncated sum "
                              f"{total}; at most 64 and 62 are supported (fewer --frac-bits, "
                              f"a smaller group or narrower elements)")

    def _check_two_stage(self):
        """The two-stage accumulator (MMA-Sim's gtr_fdpa, AMD CDNA3): the even and the odd
        lanes' products each truncated to F bits below their own largest and summed, the two
        sums floored to F bits below the larger, added to c in F2 + 1 bits (c floored to F),
        floored to F2 bits below the result's leading bit, rounded once (docs/mx.md)."""
        if self.accum != "fixed" or self.c_fmt is None or self.sum_group is not None or \
                self.scaled:
            raise OptionError("dot --frac-bits2 is the second stage of a two-stage sum with c "
                              "(AMD CDNA3's step): it needs --accum fixed and --c-format, "
                              "without --sum-group or scale inputs (--no-scales)")
        if self.n % 2:
            raise OptionError(f"dot --frac-bits2 sums the even and the odd lanes apart: n must "
                              f"be even, not {self.n}")
        check_int("frac_bits2", self.frac_bits2, self.frac_bits, TWO_STAGE_F2_MAX)

    @property
    def groups(self) -> int:
        """Scale pairs per vector: n / sum_group (1 without groups)."""
        return 1 if self.sum_group is None else self.n // self.sum_group

    @property
    def group_bits(self) -> int:
        """Bits of a group's exact sum (its magnitude; the exact frame plus carries)."""
        a, b = self.elem_a, self.elem_b
        frame = (a.emax + 1 - a.lsb_min) + (b.emax + 1 - b.lsb_min)
        return frame + (self.sum_group - 1).bit_length() + 1

    @property
    def group_int_bits(self) -> int:
        """Bits of a scaled group sum above its scales' exponent: the exact frame's LSB is
        2^(lsb_a + lsb_b), the scales' significand product has 2 * M fraction bits."""
        fs = self.scale_fmt
        lsb = self.elem_a.lsb_min + self.elem_b.lsb_min - 2 * fs.man_bits
        return self.group_bits + 2 * fs.precision + lsb

    @property
    def sum_bits(self) -> int:
        """Bits of the accumulator's magnitude (as rtl/fp_units/dot.py sums): the exact frame
        or the fixed terms, plus the carries of n summands and a sign."""
        a, b = self.elem_a, self.elem_b
        term = (a.emax + 1 - a.lsb_min) + (b.emax + 1 - b.lsb_min) if self.accum == "exact" \
            else self.frac_bits + 3
        return term + (self.n - (self.c_fmt is None)).bit_length() + 1

    @property
    def value_scales(self) -> bool:
        """Scales that are numbers of a format (E4M3...) rather than E8M0 powers of two."""
        return self.scaled and self.scale_fmt != E8M0

    @classmethod
    def from_options(cls, *, format=None, in_format=None, a_format=None, b_format=None,
                     c_format=None, n=32, accum="exact", frac_bits=None, sum_group=None,
                     frac_bits2=None, scales=True, scale_format=None, rounding="rne",
                     stages=0) -> "MxDotSpec":
        """``format`` is the output (default float32); ``in_format`` the element format of both
        vectors, ``a_format`` / ``b_format`` each vector's; ``c_format`` the accumulator
        input's (none by default)."""
        a, b = a_format or in_format, b_format or in_format
        if a is None or b is None:
            raise OptionError("unit dot needs its element format(s): --in-format ELEM (both "
                              "vectors) or --a-format ELEM and --b-format ELEM")
        if frac_bits is not None and accum != "fixed":
            raise OptionError("--frac-bits sets the width of --accum fixed; it does not apply to "
                              f"--accum {accum}")
        return cls(a, b, n=n, scaled=scales, accum=accum,
                   frac_bits=24 if frac_bits is None else frac_bits,
                   out_fmt="float32" if format is None else format, rounding=rounding,
                   stages=stages, scale_fmt=E8M0 if scale_format is None else scale_format,
                   c_fmt=c_format, sum_group=sum_group, frac_bits2=frac_bits2)

    def option_values(self) -> dict:
        v = {"format": self.out_fmt.name}
        if self.elem_a == self.elem_b:
            v["in_format"] = self.elem_a.name
        else:
            v |= {"a_format": self.elem_a.name, "b_format": self.elem_b.name}
        if self.c_fmt is not None:
            v["c_format"] = self.c_fmt.name
        v |= {"n": self.n, "accum": self.accum}
        if self.accum == "fixed":
            v["frac_bits"] = self.frac_bits
        if self.sum_group is not None:
            v["sum_group"] = self.sum_group
        if self.frac_bits2 is not None:
            v["frac_bits2"] = self.frac_bits2
        if not self.scaled:
            v["scales"] = False
        if self.value_scales:
            v["scale_format"] = self.scale_fmt.name
        return v | {"rounding": self.rounding.value, "stages": self.stages}

    @property
    def options(self) -> UnitOptions:
        return UnitOptions(rounding=self.rounding)

    @property
    def default_name(self) -> str:
        """e.g. ``mxdot_fp8e4m3_n32_exact_e8m23_rne`` (``_ns``: no scale ports)."""
        el = self.elem_a.name if self.elem_a == self.elem_b else \
            f"{self.elem_a.name}_{self.elem_b.name}"
        acc = "exact" if self.accum == "exact" else f"fixed{self.frac_bits}"
        if self.sum_group is not None:
            acc += f"g{self.sum_group}"
        if self.frac_bits2 is not None:
            acc += f"x{self.frac_bits2}"
        parts = ["mxdot", el, f"n{self.n}", acc, self.out_fmt.ident, self.rounding.value]
        if not self.scaled:
            parts.append("ns")
        if self.value_scales:
            parts.append(f"sc{self.scale_fmt.ident}")
        if self.c_fmt is not None:
            parts.append(f"c{self.c_fmt.ident}")
        if self.stages:
            parts.append(f"s{self.stages}")
        return "_".join(parts)

    def describe(self) -> str:
        acc = "exact sum, one rounding" if self.accum == "exact" else \
            f"fixed: products truncated to 2^(Emax - {self.frac_bits}), then one rounding"
        if self.sum_group is not None:
            acc = (f"grouped: exact sums of {self.sum_group} at their scales' exponent, "
                   f"truncated to 2^(Emax - {self.frac_bits}), then one rounding")
        if self.frac_bits2 is not None:
            acc = (f"two-stage: even and odd products truncated to {self.frac_bits} bits, "
                   f"floored together, added to c in {self.frac_bits2 + 1} bits, floored to "
                   f"{self.frac_bits2}, then one rounding")
        sc = f"scale_a * scale_b ({self._scale_name}) * " if self.scaled else ""
        if self.sum_group is not None:
            sc = f"per group of {self.sum_group}: scale_a * scale_b ({self._scale_name}) * "
        c = "" if self.c_fmt is None else f" + c ({self.c_fmt.name}, {self._c_rule})"
        return (f"dot [a: {self.n} x {self.elem_a.name}, b: {self.n} x {self.elem_b.name}] -> y: "
                f"{self.out_fmt.name} = {sc}sum a_i b_i{c}; accumulator {acc}; rounding "
                f"{self.rounding.value}; latency {self.latency}")

    def ports(self) -> list[Port]:
        n = self.n
        out = clock_ports(self.stages)
        names = []
        for port, elem in (("a", self.elem_a), ("b", self.elem_b)):
            out.append(_elem_port(port, "input", n, elem,
                                  f"vector {port}: {n} {elem.name} element codes"))
            names.append(port)
        g = self.groups
        per = "" if self.sum_group is None else \
            f", one per group of {self.sum_group} lanes (group j at [j*w +: w])"
        if self.value_scales:
            for port in ("scale_a", "scale_b"):
                out.append(Port(port, "input", self.scale_fmt.width,
                                f"{self._scale_name} block scale of vector {port[-1]}{per}",
                                g, fmt=self.scale_fmt))
                names.append(port)
        elif self.scaled:
            for port in ("scale_a", "scale_b"):
                out.append(Port(port, "input", 8, f"E8M0 block scale of vector {port[-1]}: "
                                                  f"2^({port} - {E8M0_BIAS}); 0xFF is NaN{per}",
                                g, fmt=E8M0))
                names.append(port)
        if self.c_fmt is not None:
            out.append(Port("c", "input", self.c_fmt.width, f"accumulator input, "
                            f"{self.c_fmt.name} code: y = the products' sum + c", fmt=self.c_fmt))
            names.append("c")
        v_in, v_out = valid_ports(self.stages, names)
        out += v_in
        return out + result_ports(self.out_fmt) + v_out

    @property
    def _c_rule(self) -> str:
        return "floored to 2^(E - F)" if self.frac_bits2 else "truncated like a product"

    @property
    def _scale_name(self) -> str:
        return self.scale_fmt.name if self.value_scales else "E8M0"

    def formats(self) -> dict[str, FloatFormat]:
        fmts = {"a": self.elem_a.grid, "b": self.elem_b.grid, "y": self.out_fmt}
        return fmts if self.c_fmt is None else fmts | {"c": self.c_fmt}

    def parameters(self) -> dict:
        v = {"element_a": self.elem_a.name, "element_b": self.elem_b.name, "n": self.n,
             "scaled": self.scaled, "accumulator": self.accum,
             "frac_bits": self.frac_bits if self.accum == "fixed" else None,
             "output": self.out_fmt.name, "rounding": self.rounding.value,
             "rounding_meaning": self.rounding.meaning, "saturate": False}
        if self.value_scales:
            v["scale_format"] = self.scale_fmt.name
        if self.c_fmt is not None:
            v["c_format"] = self.c_fmt.name
        if self.sum_group is not None:
            v["sum_group"] = self.sum_group
        if self.frac_bits2 is not None:
            v["frac_bits2"] = self.frac_bits2
        return v

    def header_lines(self) -> list[str]:
        acc = "exact (exact sum, one rounding)" if self.accum == "exact" else \
            f"fixed, {self.frac_bits} fraction bits (products truncated to 2^(Emax - " \
            f"{self.frac_bits}), docs/mx.md)"
        if self.sum_group is not None:
            acc = (f"grouped, {self.frac_bits} fraction bits (groups of {self.sum_group} "
                   f"summed exactly, each times its scales at their exponent; terms truncated to "
                   f"2^(Emax - {self.frac_bits}), docs/mx.md)")
        if self.frac_bits2 is not None:
            acc = (f"two-stage, {self.frac_bits} and {self.frac_bits2} fraction bits (even and "
                   f"odd products truncated apart, floored together, added to c and floored, "
                   f"docs/mx.md)")
        return [f"a element   {self.elem_a.describe()}",
                f"b element   {self.elem_b.describe()}",
                f"n           {self.n}; block scales "
                f"{'on scale_a, scale_b' if self.scaled else 'none'}"
                f"{f', one per {self.sum_group} lanes' if self.sum_group else ''}"
                f"{f' ({self._scale_name})' if self.value_scales else ''}",
                f"accumulator {acc}",
                *([] if self.c_fmt is None else
                  [f"c format    {self.c_fmt.describe()}; c is {self._c_rule}"]),
                f"y format    {self.out_fmt.describe()}",
                f"rounding    {self.rounding.value} ({self.rounding.meaning}), non-saturating"]
