"""UnitSpec: one typed, validated description of a generated unit.

The generator (rtl/fp_units), the Verilog export, the golden model's ``golden.evaluate``, the
benches and the synthesis reports all take a UnitSpec, so "which unit with which options" is
written down once. Plain Python: no Amaranth, no JAX.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .formats import FloatFormat, resolve
from .options import OptionError, Rounding, UnitOptions

__all__ = ["UnitSpec", "UNITS", "OPERANDS"]

UNITS = ("mul", "add", "fma", "cvt")
# Operand port names per unit, in order.
OPERANDS = {"mul": ("a", "b"), "add": ("a", "b"), "fma": ("a", "b", "c"), "cvt": ("x",)}


@dataclass(frozen=True)
class UnitSpec:
    """Which unit, in which formats, with which options.

    ``in_fmts`` holds one format per operand (``OPERANDS[unit]``); ``subnormals=False`` flushes
    subnormals of every operand and of the result (an area option).
    """

    unit: str
    out_fmt: FloatFormat
    in_fmts: tuple[FloatFormat, ...]
    options: UnitOptions = field(default_factory=UnitOptions)
    subnormals: bool = True
    stages: int = 0
    subtract: bool = False   # add only: a - b

    def __post_init__(self):
        if self.unit not in UNITS:
            raise OptionError(f"unknown unit {self.unit!r}; valid: {', '.join(UNITS)}")
        n = len(OPERANDS[self.unit])
        if len(self.in_fmts) != n:
            raise OptionError(f"unit {self.unit} takes {n} operand format(s) "
                              f"({', '.join(OPERANDS[self.unit])}), not {len(self.in_fmts)}")
        if not isinstance(self.stages, int) or isinstance(self.stages, bool) or self.stages < 0:
            raise OptionError(f"stages must be a non-negative integer, not {self.stages!r}")
        if self.subtract and self.unit != "add":
            raise OptionError(f"subtract applies to unit add only, not {self.unit}")
        if not isinstance(self.options, UnitOptions):
            raise OptionError(f"options must be UnitOptions, not {self.options!r}")
        # Flushing is a property of the formats the hardware sees: subnormals=False flushes all
        # of them; True leaves each format as given (an ``_ftz`` format stays flushed).
        def fmt(f):
            f = resolve(f)
            return f if self.subnormals else f.with_subnormals(False)
        object.__setattr__(self, "out_fmt", fmt(self.out_fmt))
        object.__setattr__(self, "in_fmts", tuple(fmt(f) for f in self.in_fmts))

    @classmethod
    def create(cls, unit: str, fmt, *, in_fmt=None, a_fmt=None, b_fmt=None, c_fmt=None,
               rounding="rne", saturate=False, subnormals=True, stages=0, sr_bits=None,
               subtract=False) -> "UnitSpec":
        """Build a spec the way the command line does: ``fmt`` is the output format and the
        operand format unless ``in_fmt`` (or per-operand formats) say otherwise."""
        if unit not in UNITS:
            raise OptionError(f"unknown unit {unit!r}; valid: {', '.join(UNITS)}")
        out = resolve(fmt)
        base = resolve(in_fmt) if in_fmt is not None else out
        per_operand = {"a": a_fmt, "b": b_fmt, "c": c_fmt}
        if unit == "cvt" and any(v is not None for v in per_operand.values()):
            raise OptionError("unit cvt takes --in-format, not --a-format/--b-format/--c-format")
        if unit != "fma" and c_fmt is not None:
            raise OptionError(f"--c-format applies to unit fma only, not {unit}")
        fmts = tuple(resolve(per_operand[p]) if per_operand.get(p) is not None else base
                     for p in OPERANDS[unit])
        opts = UnitOptions(rounding=rounding, saturate=saturate) if sr_bits is None else \
            UnitOptions(rounding=rounding, saturate=saturate, sr_bits=sr_bits)
        return cls(unit, out, fmts, opts, subnormals=subnormals, stages=stages, subtract=subtract)

    # ----- derived ---------------------------------------------------------------------------
    @property
    def operands(self) -> tuple[str, ...]:
        return OPERANDS[self.unit]

    @property
    def rounding(self) -> Rounding:
        return self.options.rounding

    @property
    def latency(self) -> int:
        return self.stages

    @property
    def has_rm(self) -> bool:
        return self.rounding is Rounding.DYNAMIC

    @property
    def has_rbits(self) -> bool:
        return self.rounding is Rounding.STOCHASTIC

    @property
    def default_name(self) -> str:
        """Module name that carries its parameters, e.g. ``fp_mul_e4m3fn_rne``."""
        ins = self.in_fmts
        parts = ["fp", self.unit if not self.subtract else "sub"]
        if all(f == self.out_fmt for f in ins):
            parts.append(self.out_fmt.ident)
        else:
            parts.append("_".join(f.ident for f in ins) + "_to_" + self.out_fmt.ident)
        parts.append(self.rounding.value)
        if self.has_rbits and self.options.sr_bits != UnitOptions().sr_bits:
            parts.append(f"sr{self.options.sr_bits}")   # rbits width is part of the interface
        if self.options.saturate:
            parts.append("sat")
        if self.stages:
            parts.append(f"s{self.stages}")
        return "_".join(parts)

    def describe(self) -> str:
        ins = ", ".join(f"{p}: {f.name}" for p, f in zip(self.operands, self.in_fmts))
        return (f"{self.unit}{' (subtract)' if self.subtract else ''} [{ins}] -> y: "
                f"{self.out_fmt.name}; {self.options.describe()}; subnormals "
                f"{'kept' if self.subnormals else 'flushed'}; latency {self.latency}")
