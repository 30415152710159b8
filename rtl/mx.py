"""OCP MX (Microscaling) descriptions shared by the RTL and the golden model: element formats,
shared-exponent rules, accumulator contracts and the typed specs of the two MX units.

Plain Python (no Amaranth, no JAX), like rtl/formats.py: the generator (rtl/fp_units/mxq.py,
rtl/fp_units/dot.py), the export and golden/mx.py all read the MX parameters from here, so the
hardware and the model cannot drift apart. docs/mx.md states the semantics.
"""

from __future__ import annotations

from dataclasses import dataclass

from .formats import CATALOG, FloatFormat, FormatError, Specials, resolve
from .options import OptionError, Rounding, UnitOptions

__all__ = ["ElementFormat", "ELEMENT_FORMATS", "element_format", "SCALE_RULES", "ACCUMULATORS",
           "E8M0_BIAS", "E8M0_NAN", "SCALE_MIN", "SCALE_MAX", "MXINT8_FRAC_BITS", "IN_FORMATS",
           "DOT_SIZES", "FRAC_BITS_RANGE", "MX_UNITS", "MX_OPTIONS", "MxQuantSpec", "MxDequantSpec",
           "MxDotSpec"]

E8M0_BIAS = 127
E8M0_NAN = 0xFF
SCALE_MIN, SCALE_MAX = -127, 127     # exponents E8M0 holds (0xFF is NaN)
MX_UNITS = ("mxq", "mxdq", "dot")      # quantizer, dequantizer, dot product
# Command-line options only the MX units take (argparse dest -> the units that take it): the
# command lines (fpforge, python -m synth) accept them for those units only.
MX_OPTIONS = {"block": ("mxq", "mxdq"), "scale_rule": ("mxq",), "n": ("dot",),
              "accum": ("dot",), "frac_bits": ("dot",), "scales": ("dot",)}
SCALE_RULES = ("floor", "ceil", "rceil", "even")
ACCUMULATORS = ("exact", "fixed")
MXINT8_FRAC_BITS = 6                 # MXINT8 value = int8 * 2^-6
FRAC_BITS_RANGE = (1, 55)            # fixed accumulator: fraction bits below the largest product
IN_FORMATS = ("float32", "bfloat16")  # what the quantizer reads
DOT_SIZES = (4, 8, 16, 32)           # vector lengths of the dot unit


@dataclass(frozen=True)
class ElementFormat:
    """An MX element format: the grid the shared rounder rounds to, and how codes are stored.

    ``grid`` is a FloatFormat of the element's values. For the FP formats it is the format
    itself; for MXINT8 it is the sign-magnitude grid e1m6 (bias 1, finite) whose values are
    exactly int8 * 2^-6 for |int8| <= 127, stored as two's complement (``twos_complement``).
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
        return -MXINT8_FRAC_BITS if self.twos_complement else self.grid.emin - self.grid.man_bits

    @property
    def sig_bits(self) -> int:
        """Bits of a decoded significand: hidden bit included, and -128's 8 bits for MXINT8."""
        return 8 if self.twos_complement else self.grid.precision

    def describe(self) -> str:
        if self.twos_complement:
            return (f"{self.name} (int8 two's complement x 2^-6, max 127/64, clamp +-127, "
                    f"emax {self.emax})")
        return f"{self.name}: {self.grid.describe()}, emax {self.emax}"

    def __str__(self) -> str:
        return self.name


_MXINT8_GRID = FloatFormat(1, MXINT8_FRAC_BITS, 1, Specials.FINITE)
ELEMENT_FORMATS: dict[str, ElementFormat] = {
    "fp8e4m3": ElementFormat("fp8e4m3", CATALOG["float8_e4m3fn"]),
    "fp8e5m2": ElementFormat("fp8e5m2", CATALOG["float8_e5m2"]),
    "fp6e3m2": ElementFormat("fp6e3m2", CATALOG["float6_e3m2fn"]),
    "fp6e2m3": ElementFormat("fp6e2m3", CATALOG["float6_e2m3fn"]),
    "fp4e2m1": ElementFormat("fp4e2m1", CATALOG["float4_e2m1fn"]),
    "mxint8": ElementFormat("mxint8", _MXINT8_GRID, twos_complement=True),
}
_BY_GRID = {e.grid: e for e in ELEMENT_FORMATS.values() if not e.twos_complement}


def element_format(spec: "str | FloatFormat | ElementFormat") -> ElementFormat:
    """Resolve an element format: a short name (fp8e4m3, ..., mxint8), a catalog name
    (float8_e4m3fn, ...) or FloatFormat of one of the OCP MX element formats."""
    if isinstance(spec, ElementFormat):
        return spec
    if isinstance(spec, str) and spec.strip().lower() in ("mxint8", "int8"):
        return ELEMENT_FORMATS["mxint8"]
    try:
        fmt = resolve(spec)
    except Exception:
        fmt = None
    if fmt is None or fmt not in _BY_GRID:
        raise OptionError(f"MX element format must be one of {', '.join(ELEMENT_FORMATS)} "
                          f"(or their catalog names), not {spec!r}")
    return _BY_GRID[fmt]


# ----- unit specs --------------------------------------------------------------------------------

def _check_int(name: str, value, lo: int, hi: int):
    if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
        raise OptionError(f"{name} must be an integer {lo}..{hi}, not {value!r}")


def _check_stages(stages):
    if not isinstance(stages, int) or isinstance(stages, bool) or stages < 0:
        raise OptionError(f"stages must be a non-negative integer, not {stages!r}")


_SHORT_IN = {"float32": "f32", "bfloat16": "bf16"}
MAX_BLOCK = 256


@dataclass(frozen=True)
class MxQuantSpec:
    """The MX block quantizer: ``block`` values in ``in_fmt`` (float32 or bfloat16) -> one E8M0
    scale by ``scale_rule`` + ``block`` elements in ``elem``, rounded by ``rounding`` (rne or any
    static mode; stochastic adds ``rbits``, ``sr_bits`` per element) and saturating."""

    elem: ElementFormat
    in_fmt: FloatFormat = CATALOG["float32"]
    block: int = 32
    scale_rule: str = "floor"
    rounding: Rounding = Rounding.RNE
    sr_bits: int = 8
    stages: int = 0

    unit = "mxq"

    def __post_init__(self):
        object.__setattr__(self, "elem", element_format(self.elem))
        fmt = resolve(self.in_fmt)
        if fmt.name not in IN_FORMATS:
            raise OptionError(f"MX quantizer input format must be one of "
                              f"{', '.join(IN_FORMATS)}, not {self.in_fmt!r}")
        object.__setattr__(self, "in_fmt", fmt)
        _check_int("block", self.block, 1, MAX_BLOCK)
        if self.scale_rule not in SCALE_RULES:
            raise OptionError(f"scale rule must be one of {', '.join(SCALE_RULES)}, "
                              f"not {self.scale_rule!r}")
        rounding = Rounding.parse(self.rounding)
        if rounding is Rounding.DYNAMIC:
            raise OptionError("the MX quantizer takes a static rounding mode or stochastic, "
                              "not 'dynamic'")
        object.__setattr__(self, "rounding", rounding)
        _check_int("sr_bits", self.sr_bits, 1, 32)
        _check_stages(self.stages)

    @property
    def options(self) -> UnitOptions:
        """The element rounder's options: saturating, in the chosen mode."""
        return UnitOptions(rounding=self.rounding, saturate=True, sr_bits=self.sr_bits)

    @property
    def has_rbits(self) -> bool:
        return self.rounding is Rounding.STOCHASTIC

    @property
    def latency(self) -> int:
        return self.stages

    @property
    def default_name(self) -> str:
        """e.g. ``mxq_fp8e4m3_f32_k32_floor_rne``."""
        parts = ["mxq", self.elem.name, _SHORT_IN[self.in_fmt.name], f"k{self.block}",
                 self.scale_rule, self.rounding.value]
        if self.has_rbits and self.sr_bits != 8:
            parts.append(f"sr{self.sr_bits}")
        if self.stages:
            parts.append(f"s{self.stages}")
        return "_".join(parts)

    def describe(self) -> str:
        sr = f" ({self.sr_bits} random bits per element)" if self.has_rbits else ""
        return (f"mxq [x: {self.block} x {self.in_fmt.name}] -> scale: E8M0 ({self.scale_rule}), "
                f"y: {self.block} x {self.elem.name}; rounding {self.rounding.value}{sr}, "
                f"saturating; latency {self.latency}")


@dataclass(frozen=True)
class MxDequantSpec:
    """The MX dequantizer: one E8M0 scale + ``block`` elements in ``elem`` -> ``block`` float32
    values X * P_i, each rounded once (rne): exact unless it overflows (inf) or falls below
    float32's subnormals; a NaN scale gives a NaN block."""

    elem: ElementFormat
    block: int = 32
    stages: int = 0

    unit = "mxdq"
    out_fmt = CATALOG["float32"]

    def __post_init__(self):
        object.__setattr__(self, "elem", element_format(self.elem))
        _check_int("block", self.block, 1, MAX_BLOCK)
        _check_stages(self.stages)

    @property
    def options(self) -> UnitOptions:
        return UnitOptions(rounding=Rounding.RNE)

    @property
    def latency(self) -> int:
        return self.stages

    @property
    def default_name(self) -> str:
        """e.g. ``mxdq_fp8e4m3_k32``."""
        return f"mxdq_{self.elem.name}_k{self.block}" + (f"_s{self.stages}" if self.stages else "")

    def describe(self) -> str:
        return (f"mxdq [scale: E8M0, x: {self.block} x {self.elem.name}] -> y: {self.block} x "
                f"float32 = X * x_i, rounding rne; latency {self.latency}")


@dataclass(frozen=True)
class MxDotSpec:
    """The MX dot-product unit: ``n`` elements of ``elem_a`` times ``n`` of ``elem_b``, summed,
    optionally times the E8M0 scales ``scale_a * scale_b`` (``scaled``), rounded once into
    ``out_fmt`` (non-saturating, a static rounding mode) under the ``accum`` contract."""

    elem_a: ElementFormat
    elem_b: ElementFormat | None = None
    n: int = 32
    scaled: bool = True
    accum: str = "exact"
    frac_bits: int = 24
    out_fmt: FloatFormat = CATALOG["float32"]
    rounding: Rounding = Rounding.RNE
    stages: int = 0

    unit = "dot"

    def __post_init__(self):
        a = element_format(self.elem_a)
        object.__setattr__(self, "elem_a", a)
        object.__setattr__(self, "elem_b", a if self.elem_b is None else
                           element_format(self.elem_b))
        if self.n not in DOT_SIZES:
            raise OptionError(f"dot length n must be one of {', '.join(map(str, DOT_SIZES))}, "
                              f"not {self.n!r}")
        if not isinstance(self.scaled, bool):
            raise OptionError(f"scaled must be a bool, not {self.scaled!r}")
        if self.accum not in ACCUMULATORS:
            raise OptionError(f"accumulator must be one of {', '.join(ACCUMULATORS)}, "
                              f"not {self.accum!r}")
        _check_int("frac_bits", self.frac_bits, *FRAC_BITS_RANGE)
        try:
            out = resolve(self.out_fmt)
        except FormatError as err:
            raise OptionError(str(err)) from None
        if out.specials is Specials.FNU:
            raise OptionError(f"dot output format must hold signed values, not {out.name}")
        object.__setattr__(self, "out_fmt", out)
        rounding = Rounding.parse(self.rounding)
        if rounding in (Rounding.DYNAMIC, Rounding.STOCHASTIC):
            raise OptionError(f"the dot unit takes a static rounding mode (rne, rtz, rdn, rup, "
                              f"rna, rod), not {rounding.value!r}")
        object.__setattr__(self, "rounding", rounding)
        _check_stages(self.stages)

    @property
    def options(self) -> UnitOptions:
        return UnitOptions(rounding=self.rounding)

    @property
    def latency(self) -> int:
        return self.stages

    @property
    def default_name(self) -> str:
        """e.g. ``mxdot_fp8e4m3_n32_exact_f32_rne`` (``_ns``: no scale ports)."""
        el = self.elem_a.name if self.elem_a == self.elem_b else \
            f"{self.elem_a.name}_{self.elem_b.name}"
        acc = "exact" if self.accum == "exact" else f"fixed{self.frac_bits}"
        parts = ["mxdot", el, f"n{self.n}", acc, self.out_fmt.ident, self.rounding.value]
        if not self.scaled:
            parts.append("ns")
        if self.stages:
            parts.append(f"s{self.stages}")
        return "_".join(parts)

    def describe(self) -> str:
        acc = "exact sum, one rounding" if self.accum == "exact" else \
            f"fixed: products truncated to 2^(Emax - {self.frac_bits}), then one rounding"
        sc = "scale_a * scale_b (E8M0) * " if self.scaled else ""
        return (f"dot [a: {self.n} x {self.elem_a.name}, b: {self.n} x {self.elem_b.name}] -> y: "
                f"{self.out_fmt.name} = {sc}sum a_i b_i; accumulator {acc}; rounding "
                f"{self.rounding.value}; latency {self.latency}")
