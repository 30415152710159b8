"""The ML function kinds: recip (1/x), rsqrt (1/sqrt(x)) and exp2 (2^x), docs/func.md.

Each is a scalar unit of one operand in one format of at most 16 bits, through the shared
rounder: the datapath looks its significand up in a table (recip, rsqrt: indexed by the
operand's fraction, and rsqrt by its exponent's parity; exp2: by the operand's code over the
range where 2^x is neither near 1 nor out of range, or for fp16 a fixed-point datapath) and
hands the rounder the value truncated to enough bits with an exact sticky bit, so every
rounding mode, saturation and subnormal result is the rounder's. ``--accuracy`` chooses how
many bits: ``correct`` keeps the bits the rounder reads (correctly rounded in every mode),
``faithful`` keeps the result's precision only (the value truncated, so the result is one of
the two neighbours of the exact value).
Plain Python: no Amaranth, no JAX.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .options import FLAG_ORDER, FLAGS_WIDTH, OptionError
from .ports import Port
from .scalar import ScalarSpec

__all__ = ["FuncSpec", "RecipSpec", "RsqrtSpec", "Exp2Spec", "ACCURACY", "MAX_FUNC_WIDTH"]

# --accuracy: how close the result is to the exact value.
ACCURACY = {"correct": "correctly rounded in the rounding mode",
            "faithful": "one of the two neighbours of the exact value"}
MAX_FUNC_WIDTH = 16        # the tables are per significand, per code or per 2^-k of x


@dataclass(frozen=True)
class FuncSpec(ScalarSpec):
    """A function of one operand: the scalar spec's options and ``accuracy``."""

    accuracy: str = "correct"

    OPERANDS = (("x", "argument"),)
    OPTIONS = tuple(o for o in ScalarSpec.OPTIONS
                    if o not in ("in_format", "a_format", "b_format")) + ("accuracy",)
    OPTION_NOTES = {"in_format": "its operand and result share --format"}
    SEMANTICS = "docs/func.md"
    # Whether the function raises divide-by-zero (an exact infinity from a zero operand).
    DIVIDES: ClassVar[bool] = False

    def __post_init__(self):
        if self.accuracy not in ACCURACY:
            raise OptionError(f"--accuracy must be one of {', '.join(ACCURACY)}, not "
                              f"{self.accuracy!r}")
        super().__post_init__()
        if self.out_fmt.width > MAX_FUNC_WIDTH or self.in_fmts[0].width > MAX_FUNC_WIDTH:
            wide = max(self.out_fmt, self.in_fmts[0], key=lambda f: f.width)
            raise OptionError(f"unit {self.unit} takes formats of at most {MAX_FUNC_WIDTH} "
                              f"bits; {wide.name} has {wide.width}")
        if self.in_fmts[0] != self.out_fmt:
            raise OptionError(f"unit {self.unit} takes one format for x and y, not "
                              f"{self.in_fmts[0].name} and {self.out_fmt.name}")

    @classmethod
    def matrix_axes(cls, fmt):
        """make verify: both accuracies in every rounding mode, combinational and pipelined;
        saturation and flushing are the rounder's, proven in tests/sim/test_func.py (a 16-bit
        correct table unit builds slowly: the matrix stays at 32 cases per format)."""
        axes = super().matrix_axes(fmt)
        return {"accuracy": tuple(ACCURACY), "rounding": axes["rounding"],
                "stages": axes["stages"]}

    @classmethod
    def from_options(cls, *, accuracy=None, **values) -> "FuncSpec":
        spec = super().from_options(**values)
        return cls(spec.out_fmt, spec.in_fmts, spec.options, subnormals=spec.subnormals,
                   pipeline=spec.pipeline, accuracy=accuracy or "correct")

    @property
    def guard_bits(self) -> int:
        """Bits below the result's precision the datapath keeps: those the rounder reads
        (round and tininess bits, or the stochastic bits) when correct, none when faithful."""
        return 0 if self.accuracy == "faithful" else self.clamp_bits

    @property
    def clamp_bits(self) -> int:
        """The most bits below the subnormal LSB the rounder reads (exp2's clamp, either
        accuracy)."""
        return max(2, self.rounding.exact_bits(self.options.sr_bits))

    def option_values(self) -> dict:
        v = super().option_values()
        stages = {k: v.pop(k) for k in ("stages", "cuts") if k in v}
        return v | {"accuracy": self.accuracy} | stages

    @property
    def default_name(self) -> str:
        name = super().default_name
        return name.replace(f"fp_{self.unit}_", f"fp_{self.unit}_{self.accuracy}_", 1)

    def describe(self) -> str:
        return super().describe() + f"; {self.accuracy}"

    def ports(self) -> list[Port]:
        flags = [p for p in super().ports() if p.name == "flags"][0]
        dz = ("divide_by_zero on a zero x" if self.DIVIDES else "divide_by_zero is always 0")
        meaning = (f"exception flags {{{', '.join(FLAG_ORDER)}}} (bit 4 .. bit 0, RISC-V "
                   f"fflags order; {dz})")
        return [Port("flags", "output", FLAGS_WIDTH, meaning) if p is flags else p
                for p in super().ports()]

    def parameters(self) -> dict:
        return super().parameters() | {"accuracy": self.accuracy}

    def header_lines(self) -> list[str]:
        lines = super().header_lines()
        return lines + [f"accuracy    {self.accuracy} ({ACCURACY[self.accuracy]})"]

    def formats(self):
        return {"x": self.in_fmts[0], "y": self.out_fmt}


@dataclass(frozen=True)
class RecipSpec(FuncSpec):
    unit: ClassVar[str] = "recip"
    OPERATION = "y = 1 / x"
    EXACT = staticmethod(lambda x: 1 / x)
    DIVIDES = True


@dataclass(frozen=True)
class RsqrtSpec(FuncSpec):
    unit: ClassVar[str] = "rsqrt"
    OPERATION = "y = 1 / sqrt(x)"
    EXACT = staticmethod(lambda x: 1 / x ** 0.5)
    DIVIDES = True


@dataclass(frozen=True)
class Exp2Spec(FuncSpec):
    unit: ClassVar[str] = "exp2"
    OPERATION = "y = 2 ^ x"
    EXACT = staticmethod(lambda x: 2.0 ** x)

