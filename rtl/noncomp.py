"""The non-computational kinds (CVFPU's NONCOMP group): sgnj, classify, min, max and cmp.

None of them rounds: each reads the operands' codes in one format (``--format``) and gives a
code of that format (sgnj, min, max), a class mask (classify) or predicate bits (cmp), with the
invalid flag where IEEE 754-2019 and RISC-V raise it. They share one spec shape
(:class:`NoncompSpec`: the format, subnormal flushing and the pipeline's output registers); min
and max add the NaN policy (``--minmax``), cmp a format per operand (``--a-format``,
``--b-format``: the two values compared exactly). Plain Python: no Amaranth, no JAX.

``subnormals=False`` (``--no-subnormals``; min, max, cmp, classify) flushes the operands as
x86's DAZ and the scalar kinds do: a subnormal operand IS a zero of its sign (+0 where the
format has no -0), so it compares equal to zero, classifies as a zero, and min/max give that
zero's code, never the subnormal's. sgnj reads no value (it moves a sign bit) and refuses it.

The class mask of classify is RISC-V ``fclass``'s (:data:`CLASS_BITS`). In formats without
infinities, NaN or negative zero (OCP FP8 E4M3, P3109, FP6/FP4) the bits of what the format
lacks are never set: a P3109 or fnuz zero is +0 (bit 4), its one NaN is quiet (bit 9), and an
unsigned format's values are all positive.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .formats import FloatFormat
from .format_names import resolve
from .options import OptionError
from .pipeline import Pipeline
from .ports import Port, clock_ports, flags_port, valid_ports
from .spec import Spec

__all__ = ["NoncompSpec", "SgnjSpec", "ClassifySpec", "MinSpec", "MaxSpec", "CmpSpec",
           "MINMAX", "SIGN_ONLY", "CLASS_BITS", "SGNJ_OPS", "CMP_BITS", "flushes"]

DEFAULT_FORMAT = "float8_e4m3fn"
# What a port's meaning says when only its top bit is read (sgnj's b): the exported unit leaves
# the other bits unconnected.
SIGN_ONLY = "; only its sign bit is read"

# classify's mask, bit i set when the operand is of class CLASS_BITS[i] (RISC-V fclass).
CLASS_BITS = ("-inf", "-normal", "-subnormal", "-0", "+0", "+subnormal", "+normal", "+inf",
              "signaling NaN", "quiet NaN")
# sgnj's op input: what y's sign is (RISC-V fsgnj, fsgnjn, fsgnjx; 3 reads as 2).
SGNJ_OPS = ("b's sign (copy)", "b's sign inverted (negate)", "a's sign xor b's (xor)")
# cmp's y, bit i: the predicate CMP_BITS[i].
CMP_BITS = ("eq", "lt", "le", "unordered")
# --minmax: IEEE 754-2019 9.6 minimum/maximum (a NaN operand gives NaN) or
# minimumNumber/maximumNumber (a number wins over a NaN; RISC-V's fmin/fmax).
MINMAX = {"ieee": "minimum/maximum: a NaN operand gives NaN",
          "number": "minimumNumber/maximumNumber: a number wins over a NaN (RISC-V)"}
FLUSHED = "flushed (a subnormal operand reads as a zero of its sign)"


def flushes(fmt: FloatFormat) -> bool:
    """``fmt`` has subnormal codes and reads them as zero (an ``_ftz`` format)."""
    return not fmt.has_subnormals and fmt.with_subnormals(True).has_subnormals and \
        fmt.man_bits > 0


@dataclass(frozen=True)
class NoncompSpec(Spec):
    """A non-computational unit on codes of ``fmt``; ``pipeline`` adds output registers;
    ``subnormals=False`` flushes subnormal operands (``fmt`` becomes its ``_ftz`` variant; an
    ``_ftz`` format given flushes alike)."""

    fmt: FloatFormat
    pipeline: Pipeline = Pipeline()
    subnormals: bool = True

    SHAPE: ClassVar[str] = "scalar"
    OPERANDS: ClassVar[tuple[str, ...]] = ("a", "b")
    OPTIONS: ClassVar[tuple[str, ...]] = ("format", "subnormals", "stages")
    OPTION_NOTES: ClassVar[dict[str, str]] = {
        "rounding": "it does not round", "saturate": "it does not round"}
    PARAMETERS_KEY: ClassVar[str] = "options"
    HEADER_WIDTH_COLUMN: ClassVar[int] = 3

    def __post_init__(self):
        if not isinstance(self.subnormals, bool):
            raise OptionError(f"subnormals must be a bool, not {self.subnormals!r}")
        object.__setattr__(self, "fmt", self.flushed(self.fmt))
        self.place_pipeline()
        self.check_format()

    def flushed(self, fmt) -> FloatFormat:
        """``fmt`` resolved, without subnormals unless ``subnormals`` keeps them."""
        fmt = resolve(fmt)
        return fmt if self.subnormals else fmt.with_subnormals(False)

    def check_format(self) -> None:
        """Refuse a format this kind has no meaning for (one line, naming what is valid)."""

    @classmethod
    def from_options(cls, *, format=None, subnormals=True, stages=None,
                     **values) -> "NoncompSpec":
        return cls(resolve(DEFAULT_FORMAT if format is None else format), **values,
                   subnormals=subnormals, pipeline=cls.pipeline_from_options(stages, None))

    @classmethod
    def matrix_axes(cls, fmt):
        """No flushing where ``fmt`` has no subnormals to flush (the same unit)."""
        axes = super().matrix_axes(fmt)
        if not flushes(fmt.with_subnormals(False)):
            axes.pop("subnormals", None)
        return axes

    def option_values(self) -> dict:
        return {"format": self.fmt.name, **({} if self.subnormals else {"subnormals": False}),
                "stages": self.stages}

    @property
    def operands(self) -> tuple[str, ...]:
        return self.OPERANDS

    @property
    def in_fmts(self) -> tuple[FloatFormat, ...]:
        """One format per operand (all ``fmt``), as the scalar kinds have them."""
        return (self.fmt,) * len(self.OPERANDS)

    @property
    def default_name(self) -> str:
        return "_".join(["fp", self.unit, self.fmt.ident, *self.name_parts(),
                         *self.pipeline.name_parts()])

    def name_parts(self) -> list[str]:
        return []

    def describe(self) -> str:
        return (f"{self.unit} [{', '.join(self.operands)}: {self.fmt.name}]; "
                f"latency {self.latency}")

    # ----- the contract ------------------------------------------------------------------------
    def operand_ports(self) -> list[Port]:
        return [Port(p, "input", f.width, f"operand {p}, {f.name} code", fmt=f)
                for p, f in zip(self.operands, self.in_fmts)]

    def control_ports(self) -> list[Port]:
        return []

    def result_ports(self) -> list[Port]:
        raise NotImplementedError(f"{type(self).__name__} defines no result_ports()")

    def ports(self) -> list[Port]:
        ins = self.operand_ports() + self.control_ports()
        v_in, v_out = valid_ports(self.stages, [p.name for p in ins])
        return clock_ports(self.stages) + ins + v_in + self.result_ports() + v_out

    def formats(self) -> dict[str, FloatFormat]:
        """The operands' format, and y's where y is a code (sgnj, min, max)."""
        return {p.name: p.fmt for p in self.ports() if p.fmt is not None}

    def parameters(self) -> dict:
        return {} if self.subnormals else {"subnormals": False}

    def header_lines(self) -> list[str]:
        return [f"{'format':<12}{self.fmt.describe()}"] + self.flush_lines()

    def flush_lines(self) -> list[str]:
        return [] if not any(map(flushes, self.in_fmts)) else [f"subnormals  {FLUSHED}"]

    def y_port(self) -> Port:
        return Port("y", "output", self.fmt.width, f"result, {self.fmt.name} code", fmt=self.fmt)


def _invalid_flags(when: str) -> Port:
    return flags_port(f"; only invalid is raised: {when}")


@dataclass(frozen=True)
class SgnjSpec(NoncompSpec):
    unit: ClassVar[str] = "sgnj"
    OPERATION = "y = a with its sign from b (op: copy, negate, xor)"
    OPTIONS = ("format", "stages")
    OPTION_NOTES = NoncompSpec.OPTION_NOTES | {
        "subnormals": "it moves a sign bit and reads no value"}

    def check_format(self):
        if not self.fmt.signed:
            raise OptionError(f"sgnj needs a signed format; {self.fmt.name} has no sign bit")

    @classmethod
    def matrix_options(cls, fmt):
        return super().matrix_options(fmt) if fmt.signed else []

    def operand_ports(self):
        a, b = super().operand_ports()
        return [a, Port(b.name, b.direction, b.width, b.meaning + SIGN_ONLY, fmt=b.fmt)]

    def control_ports(self):
        return [Port("op", "input", 2, "the sign of y: " + "; ".join(
            f"{i} {w}" for i, w in enumerate(SGNJ_OPS)) + "; 3 as 2")]

    def result_ports(self):
        note = ("" if self.fmt.has_neg_zero else
                "; zero and NaN have no sign in this format and pass unchanged")
        y = self.y_port()
        return [Port(y.name, y.direction, y.width, y.meaning + note, fmt=y.fmt)]


@dataclass(frozen=True)
class ClassifySpec(NoncompSpec):
    unit: ClassVar[str] = "classify"
    OPERANDS = ("x",)
    OPERATION = "y = the class mask of x (RISC-V fclass)"

    def result_ports(self):
        return [Port("y", "output", len(CLASS_BITS), "class mask, one bit set: " + ", ".join(
            f"bit {i} {c}" for i, c in enumerate(CLASS_BITS)))]


@dataclass(frozen=True)
class _MinMaxSpec(NoncompSpec):
    minmax: str = "number"

    OPTIONS = NoncompSpec.OPTIONS + ("minmax",)

    def __post_init__(self):
        if self.minmax not in MINMAX:
            raise OptionError(f"--minmax must be one of {', '.join(MINMAX)}, not "
                              f"{self.minmax!r}")
        super().__post_init__()

    @classmethod
    def from_options(cls, *, format=None, minmax=None, subnormals=True,
                     stages=None) -> "_MinMaxSpec":
        spec = super().from_options(format=format, subnormals=subnormals, stages=stages)
        if minmax is not None and not spec.fmt.has_nan:
            raise OptionError(f"--minmax chooses what a NaN operand gives; {spec.fmt.name} has "
                              f"no NaN: leave it out")
        return cls(spec.fmt, minmax=minmax or "number", subnormals=subnormals,
                   pipeline=spec.pipeline)

    @classmethod
    def matrix_axes(cls, fmt):
        """Both NaN policies where ``fmt`` has a NaN (before the stages)."""
        axes = super().matrix_axes(fmt)
        return ({"minmax": tuple(MINMAX)} if fmt.has_nan else {}) | axes

    def option_values(self):
        v = super().option_values()
        return v | ({"minmax": self.minmax} if self.fmt.has_nan else {})

    def name_parts(self):
        return [self.minmax] if self.fmt.has_nan else []

    def parameters(self):
        return {"minmax": self.minmax} if self.fmt.has_nan else {}

    def header_lines(self):
        lines = super().header_lines()
        if self.fmt.has_nan:
            lines.append(f"{'minmax':<12}{self.minmax} ({MINMAX[self.minmax]})")
        return lines + ["order       -0 < +0" + ("; y is a flushed operand's zero"
                                                if flushes(self.fmt) else "")]

    def result_ports(self):
        return [self.y_port(), _invalid_flags("an operand is a signaling NaN")]


@dataclass(frozen=True)
class MinSpec(_MinMaxSpec):
    unit: ClassVar[str] = "min"
    OPERATION = "y = min(a, b)"


@dataclass(frozen=True)
class MaxSpec(_MinMaxSpec):
    unit: ClassVar[str] = "max"
    OPERATION = "y = max(a, b)"


@dataclass(frozen=True)
class CmpSpec(NoncompSpec):
    """``fmt`` is a's format; ``b_fmt`` b's where it differs (None: ``fmt``). Two formats are
    compared by value, exactly: each operand widened to a common exponent and significand
    range inside the unit."""

    b_fmt: FloatFormat | None = None

    unit: ClassVar[str] = "cmp"
    OPERATION = "y = {unordered, a <= b, a < b, a == b}"
    OPTIONS = ("format", "a_format", "b_format", "subnormals", "stages")

    def __post_init__(self):
        super().__post_init__()
        if self.b_fmt is not None:
            b = self.flushed(self.b_fmt)
            object.__setattr__(self, "b_fmt", None if b == self.fmt else b)

    @classmethod
    def from_options(cls, *, format=None, a_format=None, b_format=None, subnormals=True,
                     stages=None) -> "CmpSpec":
        """``format`` is both operands' format unless ``a_format`` / ``b_format`` say
        otherwise."""
        base = DEFAULT_FORMAT if format is None else format
        return super().from_options(format=a_format or base, b_fmt=resolve(b_format or base),
                                    subnormals=subnormals, stages=stages)

    @property
    def mixed(self) -> bool:
        return self.b_fmt is not None

    @property
    def in_fmts(self):
        return (self.fmt, self.b_fmt or self.fmt)

    def option_values(self):
        v = super().option_values()
        return v if not self.mixed else {"format": v.pop("format"), "b_format": self.b_fmt.name,
                                         **v}

    @property
    def default_name(self):
        if not self.mixed:
            return super().default_name
        return "_".join(["fp_cmp", self.fmt.ident, self.b_fmt.ident,
                         *self.pipeline.name_parts()])

    def describe(self):
        if not self.mixed:
            return super().describe()
        return (f"cmp [a: {self.fmt.name}, b: {self.b_fmt.name}] by value; "
                f"latency {self.latency}")

    def header_lines(self):
        if not self.mixed:
            return super().header_lines()
        return [f"{'a format':<12}{self.fmt.describe()}",
                f"{'b format':<12}{self.b_fmt.describe()}",
                "compare     by value, both widened to a common range"] + self.flush_lines()

    def control_ports(self):
        return [Port("signaling", "input", 1,
                     "0: quiet predicates (invalid on a signaling NaN), 1: signaling ones "
                     "(invalid on any NaN)")]

    def result_ports(self):
        return [Port("y", "output", len(CMP_BITS), "predicates, " + ", ".join(
            f"bit {i} a {c} b" if c != "unordered" else f"bit {i} unordered"
            for i, c in enumerate(CMP_BITS)) + "; -0 == +0, NaN compares unordered"),
            _invalid_flags("a signaling NaN, or any NaN when signaling")]

