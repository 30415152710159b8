"""The integer conversions (CVFPU's CONV group, HardFloat's INToRecFN / RecFNToIN): i2f and f2i.

``i2f`` rounds a two's complement (or unsigned) integer of 8, 16 or 32 bits into any format with
the one rounder, so it takes every rounder option of the scalar kinds (rounding incl. dynamic and
stochastic, saturation, subnormals, tininess: an integer can be tiny or subnormal only in a
format whose 2^emin exceeds 1, e.g. ``e2m1_b0``). ``f2i`` rounds a float of any format to an
integer; out of range, infinities and NaN give a saturated integer with invalid, as
``--int-overflow`` says (:data:`INT_OVERFLOW`, docs/intconv.md); its rounding is any mode of the
scalar kinds', stochastic ones included (the bits of |a| below the integer's LSB against
``rbits``, as the rounder reads them below a float's). Plain Python: no Amaranth, no JAX.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from .formats import FloatFormat
from .format_names import resolve
from .options import DEFAULT_SR_BITS, OptionError, Rounding, UnitOptions
from .pipeline import Pipeline
from .ports import Port, clock_ports, flags_port, result_ports, valid_ports
from .scalar import (DEFAULT_FORMAT, RoundingControls, RoundsByOptions, mode_ports, rounder_lines,
                     rounder_name_parts, rounder_options, rounder_parameters, rounder_values)
from .spec import Spec

__all__ = ["IntFormat", "INT_WIDTHS", "INT_OVERFLOW", "I2fSpec", "F2iSpec"]

INT_WIDTHS = (8, 16, 32)
# --int-overflow: what f2i gives where the rounded value has no integer (invalid is raised in
# both): RISC-V fcvt's (NaN the largest integer) or Arm FCVT*'s / a saturating cast's (NaN 0).
# Out of range and infinities saturate to the range's end in both.
INT_OVERFLOW = {"riscv": "NaN gives the largest integer (RISC-V fcvt)",
                "saturate": "NaN gives 0 (Arm FCVT*, saturating casts)"}


@dataclass(frozen=True)
class IntFormat:
    """A two's complement (``signed``) or unsigned integer of ``width`` bits (8, 16 or 32)."""

    width: int = 32
    signed: bool = True

    def __post_init__(self):
        if self.width not in INT_WIDTHS or isinstance(self.width, bool):
            raise OptionError(f"--int-width must be 8, 16 or 32, not {self.width!r}")

    @property
    def name(self) -> str:
        return f"{'' if self.signed else 'u'}int{self.width}"

    @property
    def ident(self) -> str:
        """The module name's word: ``i32``, ``u8``."""
        return f"{'i' if self.signed else 'u'}{self.width}"

    @property
    def lo(self) -> int:
        return -(1 << (self.width - 1)) if self.signed else 0

    @property
    def hi(self) -> int:
        return (1 << (self.width - 1 if self.signed else self.width)) - 1

    def describe(self) -> str:
        kind = "two's complement" if self.signed else "unsigned"
        return f"{self.name} ({kind}, {self.lo}..{self.hi})"

    def port(self, name: str, direction: str, what: str) -> Port:
        return Port(name, direction, self.width, f"{what}, {self.describe()}")


def _int_format(int_width, unsigned) -> IntFormat:
    return IntFormat(32 if int_width is None else int_width, not unsigned)


class _IntConvSpec(Spec):
    """What both conversions share: the integer side (each kind's ``int_fmt`` field) and a
    scalar shape."""

    SHAPE: ClassVar[str] = "scalar"
    PARAMETERS_KEY: ClassVar[str] = "options"
    HEADER_WIDTH_COLUMN: ClassVar[int] = 2

    def check_formats(self, field: str) -> None:
        """The float format (the dataclass field ``field``) resolved, flushed without
        subnormals; the integer format checked."""
        fmt = resolve(getattr(self, field))
        object.__setattr__(self, field, fmt if self.subnormals else fmt.with_subnormals(False))
        if not isinstance(self.int_fmt, IntFormat):
            raise OptionError(f"int_fmt must be an IntFormat, not {self.int_fmt!r}")

    @classmethod
    def matrix_axes(cls, fmt):
        """The integer sides (``int``: option values, one set per case), then the rest; no
        flushing where the format has no subnormals to flush (fnu: the same unit)."""
        axes = super().matrix_axes(fmt)
        if not fmt.with_subnormals(True).has_subnormals:
            axes.pop("subnormals", None)
        return {"int": cls.MATRIX_INTS} | axes

    @classmethod
    def matrix_options(cls, fmt):
        return [{k: v for k, v in case.items() if k != "int"} | case["int"]
                for case in super().matrix_options(fmt)]

    def int_values(self) -> dict:
        return {"int_width": self.int_fmt.width} | ({} if self.int_fmt.signed else
                                                     {"unsigned": True})


@dataclass(frozen=True)
class I2fSpec(RoundsByOptions, _IntConvSpec):
    """``y = a``: the integer ``a`` rounded into ``out_fmt``."""

    out_fmt: FloatFormat
    int_fmt: IntFormat = IntFormat()
    options: UnitOptions = field(default_factory=UnitOptions)
    subnormals: bool = True
    pipeline: Pipeline = Pipeline()

    unit: ClassVar[str] = "i2f"
    OPERATION = "y = a (an integer, rounded into the format)"
    OPTIONS = ("format", "int_width", "unsigned", "rounding", "sr_bits", "saturate",
               "saturation", "subnormals", "tininess", "stages", "cuts")
    OPTION_NOTES = {"int_overflow": "an integer's conversion overflows as --saturate and "
                                    "--saturation say"}
    # After the integer's magnitude (the raw result), inside the rounder.
    CUT_POINTS = ("core", "round")
    # make verify's integer sides: every int16 (signed) and every uint8 as the operand.
    MATRIX_INTS: ClassVar[tuple] = ({"int_width": 16}, {"int_width": 8, "unsigned": True})
    DEFAULT_CUTS = ("core", "round")

    def __post_init__(self):
        self.check_formats("out_fmt")
        if not isinstance(self.options, UnitOptions):
            raise OptionError(f"options must be UnitOptions, not {self.options!r}")
        if self.options.saturation is not None and not self.out_fmt.has_zero:
            raise OptionError(f"--saturation needs a result format with a zero (P3109's Mlo); "
                              f"{self.out_fmt.name} has none: use --saturate")
        self.place_pipeline()

    @classmethod
    def from_options(cls, *, format=None, int_width=None, unsigned=False, rounding="rne",
                     sr_bits=None, saturate=False, saturation=None, subnormals=True,
                     tininess=None, stages=None, cuts=None) -> "I2fSpec":
        return cls(resolve(DEFAULT_FORMAT if format is None else format),
                   _int_format(int_width, unsigned),
                   rounder_options(rounding, sr_bits, saturate, saturation, tininess),
                   subnormals, cls.pipeline_from_options(stages, cuts))

    def option_values(self) -> dict:
        return {"format": self.out_fmt.name, **self.int_values(),
                **rounder_values(self.options)} | \
            ({} if self.subnormals else {"subnormals": False}) | \
            self.options.tininess_option() | self.pipeline_options()

    # ----- derived (as the scalar kinds name them: faults and reports read them) ---------------
    @property
    def operands(self) -> tuple[str, ...]:
        return ("a",)

    @property
    def in_fmts(self) -> tuple[FloatFormat, ...]:
        """No float operand (the scalar units' frame decodes none)."""
        return ()

    @property
    def default_name(self) -> str:
        return "_".join(["fp_i2f", self.int_fmt.ident, "to", self.out_fmt.ident,
                         *rounder_name_parts(self.options), *self.pipeline.name_parts()])

    def describe(self) -> str:
        return (f"i2f [a: {self.int_fmt.name}] -> y: {self.out_fmt.name}; "
                f"{self.options.describe()}; latency {self.latency}")

    # ----- the contract ------------------------------------------------------------------------
    def ports(self) -> list[Port]:
        controls = mode_ports(self.options)
        v_in, v_out = valid_ports(self.stages, ["a", *(p.name for p in controls)], "y and flags")
        return clock_ports(self.stages) + [self.int_fmt.port("a", "input", "operand a")] + \
            controls + v_in + result_ports(self.out_fmt) + v_out

    def formats(self) -> dict[str, FloatFormat]:
        return {"y": self.out_fmt}

    def parameters(self) -> dict:
        return {"int_format": self.int_fmt.name} | \
            rounder_parameters(self.options, self.subnormals) | self.pipeline_parameters()

    def header_lines(self) -> list[str]:
        return [f"{'a format':<12}{self.int_fmt.describe()}",
                f"{'y format':<12}{self.out_fmt.describe()}",
                *rounder_lines(self.options, self.out_fmt, self.subnormals),
                *self.pipeline_lines()]


@dataclass(frozen=True)
class F2iSpec(RoundingControls, _IntConvSpec):
    """``y = a``: the float ``a`` (``in_fmt``) rounded to an integer of ``int_fmt``."""

    in_fmt: FloatFormat
    int_fmt: IntFormat = IntFormat()
    rounding: Rounding = Rounding.RNE
    int_overflow: str = "riscv"
    subnormals: bool = True
    pipeline: Pipeline = Pipeline()
    sr_bits: int = DEFAULT_SR_BITS      # the rbits input's width (stochastic rounding)

    unit: ClassVar[str] = "f2i"
    OPERATION = "y = a (rounded to an integer)"
    OPTIONS = ("format", "int_width", "unsigned", "int_overflow", "rounding", "sr_bits",
               "subnormals", "stages", "cuts")
    OPTION_NOTES = {"saturate": "an integer out of range always saturates; --int-overflow "
                                "chooses NaN's integer",
                    "saturation": "an integer out of range always saturates; --int-overflow "
                                  "chooses NaN's integer",
                    "tininess": "an integer result is never tiny"}
    # After the operand decoder; after the shift to the integer's grid (the raw result).
    CUT_POINTS = ("decode", "core")
    # make verify's integer sides: uint8 (most codes out of range, negatives invalid), int16
    # under the saturate convention (NaN gives 0), int32 (no code out of range in a narrow
    # format).
    MATRIX_INTS: ClassVar[tuple] = ({"int_width": 8, "unsigned": True},
                                    {"int_width": 16, "int_overflow": "saturate"},
                                    {"int_width": 32})
    DEFAULT_CUTS = ("core", "decode")

    def __post_init__(self):
        self.check_formats("in_fmt")
        object.__setattr__(self, "rounding", self.options.rounding)   # validates sr_bits too
        if self.int_overflow not in INT_OVERFLOW:
            raise OptionError(f"--int-overflow must be one of {', '.join(INT_OVERFLOW)}, not "
                              f"{self.int_overflow!r}")
        self.place_pipeline()

    @classmethod
    def from_options(cls, *, format=None, int_width=None, unsigned=False, int_overflow=None,
                     rounding="rne", sr_bits=None, subnormals=True, stages=None,
                     cuts=None) -> "F2iSpec":
        opts = rounder_options(rounding, sr_bits, False, None, None)
        return cls(resolve(DEFAULT_FORMAT if format is None else format),
                   _int_format(int_width, unsigned), opts.rounding, int_overflow or "riscv",
                   subnormals, cls.pipeline_from_options(stages, cuts), opts.sr_bits)

    def option_values(self) -> dict:
        return {"format": self.in_fmt.name, **self.int_values(),
                "int_overflow": self.int_overflow, **rounder_values(self.options)} | \
            ({} if self.subnormals else {"subnormals": False}) | self.pipeline_options()

    @property
    def options(self) -> UnitOptions:
        """The rounding mode and the rbits width, as the rounder's options (what Mode reads)."""
        return UnitOptions(rounding=self.rounding, sr_bits=self.sr_bits)

    @property
    def operands(self) -> tuple[str, ...]:
        return ("a",)

    @property
    def default_name(self) -> str:
        return "_".join(["fp_f2i", self.in_fmt.ident, "to", self.int_fmt.ident,
                         *rounder_name_parts(self.options),
                         *(["satnan0"] if self.int_overflow == "saturate" else []),
                         *self.pipeline.name_parts()])

    def describe(self) -> str:
        bits = f", {self.sr_bits} random bits" if self.has_rbits else ""
        return (f"f2i [a: {self.in_fmt.name}] -> y: {self.int_fmt.name}; rounding "
                f"{self.rounding.value}{bits}, int-overflow {self.int_overflow}; "
                f"latency {self.latency}")

    def ports(self) -> list[Port]:
        controls = mode_ports(self.options)
        v_in, v_out = valid_ports(self.stages, ["a", *(p.name for p in controls)], "y and flags")
        a = Port("a", "input", self.in_fmt.width, f"operand a, {self.in_fmt.name} code",
                 fmt=self.in_fmt)
        nan = "the largest integer" if self.int_overflow == "riscv" else "0"
        flags = flags_port(f"; only invalid (out of range, infinity, NaN; y saturated, NaN "
                           f"gives {nan}) and inexact are raised, never both")
        return clock_ports(self.stages) + [a] + controls + v_in + \
            [self.int_fmt.port("y", "output", "result"), flags] + v_out

    def formats(self) -> dict[str, FloatFormat]:
        return {"a": self.in_fmt}

    def parameters(self) -> dict:
        return {"int_format": self.int_fmt.name, "int_overflow": self.int_overflow,
                "rounding": self.rounding.value, "rounding_meaning": self.rounding.meaning,
                "subnormals": self.subnormals} | \
            ({"sr_bits": self.sr_bits} if self.has_rbits else {}) | self.pipeline_parameters()

    def header_lines(self) -> list[str]:
        return [f"{'a format':<12}{self.in_fmt.describe()}",
                f"{'y format':<12}{self.int_fmt.describe()}",
                f"rounding    {self.rounding.value} ({self.rounding.meaning})",
                *([f"sr_bits     {self.sr_bits} (width of rbits)"] if self.has_rbits else []),
                f"overflow    {self.int_overflow}: out of range and infinities give the "
                f"range's end, {INT_OVERFLOW[self.int_overflow]}; invalid raised",
                "subnormals  " + ("kept" if self.subnormals else "flushed (read as zero)"),
                *self.pipeline_lines()]
