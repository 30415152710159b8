"""How the dot unit sums its products (and c) before its one rounding: a small typed value.

``Exact()``, ``Fixed(frac_bits)``, ``Grouped(frac_bits, group)`` and ``TwoStage(frac_bits,
frac_bits2)`` are frozen and hashable; each validates itself, names itself (``ident``, the
phrases of describe and the header) and gives its command-line option values; ``accumulation``
builds one from those values. The dot spec (rtl/dot.py ``MxDotSpec.accum``) and the tensor
core's step (golden/tensor_core.py ``FusedAccumulator.accum``) compose one, as amaranth's
lib/crc composes an ``Algorithm`` into ``Parameters``. The RTL unit (rtl/fp_units/dot.py) and
the golden model (golden/dot.py) keep one method / function per class, in a table keyed by the
class: a new step is one class here, one RTL method, one golden function and tests.

Plain Python (no Amaranth, no JAX). docs/mx.md states the semantics.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from .options import OptionError
from .spec import Spec, check_int

__all__ = ["Accumulation", "Exact", "Fixed", "Grouped", "TwoStage", "accumulation",
           "ACCUMULATORS", "FRAC_BITS_RANGE", "GROUP_ZERO_EXP", "TWO_STAGE_F2_MAX"]

ACCUMULATORS = ("exact", "fixed")    # the --accum values
FRAC_BITS_RANGE = (1, 55)            # fixed accumulator: fraction bits below the largest product
# The grouped accumulator (dot --sum-group): the exponent at which an all-zero group or c = 0
# stands when the largest one is chosen, 2^-139, MMA-Sim's e_zero for Blackwell's
# kind::mxf4nvf4 step (mmasim 2.1.1 nv_ptx/sim.py). A term whose scales sit far below it is
# truncated away.
GROUP_ZERO_EXP = -139
# The two-stage accumulator (dot --frac-bits2): its second stage's F2 at most (the golden model
# sums in int64: (F2 + 1)-bit terms shifted by up to 8 more, with carries).
TWO_STAGE_F2_MAX = 48

_GROUPED_NEEDS = ("dot --sum-group sums groups of lanes exactly, each at its own scales (a "
                  "tensor core's grouped step): it needs --accum fixed and scale inputs")
_TWO_STAGE_NEEDS = ("dot --frac-bits2 is the second stage of a two-stage sum with c (AMD "
                    "CDNA3's step): it needs --accum fixed and --c-format, without --sum-group "
                    "or scale inputs (--no-scales)")


class Accumulation(ABC):
    """The base of the accumulation steps. ``accum`` is the step's --accum value; ``group``
    the lanes that share one scale pair (None: the whole vector); ``takes_c`` whether the
    accumulator input c joins the sum."""

    accum: ClassVar[str]
    group: ClassVar[int | None] = None
    takes_c: ClassVar[bool] = True
    c_rule: ClassVar[str] = "truncated like a product"     # how c joins, for describe

    # What every step defines (abstract: a step that leaves one out cannot be built).
    @property
    @abstractmethod
    def ident(self) -> str:
        """The step in a module name (``MxDotSpec.default_name``)."""

    @abstractmethod
    def option_values(self) -> dict:
        """The command-line option values that build this step again (``accumulation``)."""

    @abstractmethod
    def describe(self) -> str:
        """The step in ``MxDotSpec.describe()``."""

    @abstractmethod
    def header(self) -> str:
        """The generated file's ``accumulator`` header line."""

    @abstractmethod
    def term_bits(self, spec: Spec) -> int:
        """Bits of one summand's magnitude in ``spec``'s accumulator."""

    def check(self, spec: Spec) -> None:
        """The checks that need the whole dot spec (rtl/dot.py: its n, scales, c, elements).
        ``spec`` is typed by the protocol: rtl/dot.py imports this module, not the reverse."""


@dataclass(frozen=True)
class Exact(Accumulation):
    """The exact sum of the exact products, one rounding at the end."""

    accum: ClassVar[str] = "exact"
    takes_c: ClassVar[bool] = False

    @property
    def ident(self) -> str:
        return "exact"

    def option_values(self) -> dict:
        return {"accum": "exact"}

    def describe(self) -> str:
        return "exact sum, one rounding"

    def header(self) -> str:
        return "exact (exact sum, one rounding)"

    def term_bits(self, spec: Spec) -> int:
        a, b = spec.elem_a, spec.elem_b
        return (a.emax + 1 - a.lsb_min) + (b.emax + 1 - b.lsb_min)


@dataclass(frozen=True)
class Fixed(Accumulation):
    """The fixed-width accumulator: every product (and c) truncated toward zero to
    ``frac_bits`` fraction bits below the largest, summed, one rounding."""

    frac_bits: int = 24

    accum: ClassVar[str] = "fixed"

    def __post_init__(self):
        check_int("frac_bits", self.frac_bits, *FRAC_BITS_RANGE)

    @property
    def ident(self) -> str:
        return f"fixed{self.frac_bits}"

    def option_values(self) -> dict:
        return {"accum": "fixed", "frac_bits": self.frac_bits}

    def describe(self) -> str:
        return f"fixed: products truncated to 2^(Emax - {self.frac_bits}), then one rounding"

    def header(self) -> str:
        return (f"fixed, {self.frac_bits} fraction bits (products truncated to 2^(Emax - "
                f"{self.frac_bits}), docs/mx.md)")

    def term_bits(self, spec: Spec) -> int:
        return self.frac_bits + 3


@dataclass(frozen=True)
class Grouped(Fixed):
    """The grouped accumulator (MMA-Sim's gst_fdpa, Blackwell's kind::mxf4nvf4): ``group``
    lanes summed exactly, each group times its own scales at the scales' exponent, c beside
    them, all truncated to ``frac_bits`` bits below the largest (docs/mx.md). Its group's
    range (1..n) is the spec's to check."""

    group: int = 16

    @property
    def ident(self) -> str:
        return f"fixed{self.frac_bits}g{self.group}"

    def option_values(self) -> dict:
        return super().option_values() | {"sum_group": self.group}

    def describe(self) -> str:
        return (f"grouped: exact sums of {self.group} at their scales' exponent, "
                f"truncated to 2^(Emax - {self.frac_bits}), then one rounding")

    def header(self) -> str:
        return (f"grouped, {self.frac_bits} fraction bits (groups of {self.group} summed "
                f"exactly, each times its scales at their exponent; terms truncated to "
                f"2^(Emax - {self.frac_bits}), docs/mx.md)")

    def check(self, spec: Spec) -> None:
        """The golden model holds a group's scaled sum in 64 bits and the truncated terms' sum
        in int64: both are checked here."""
        g = self.group
        check_int("sum_group", g, 1, spec.n)
        if not spec.scaled:
            raise OptionError(_GROUPED_NEEDS)
        if spec.n % g:
            raise OptionError(f"dot --sum-group {g} must divide the vector length n = {spec.n}")
        a, b, fs = spec.elem_a, spec.elem_b, spec.scale_fmt
        # A group's exact sum: the exact frame plus carries; above the scales' exponent, its
        # frame's LSB is 2^(lsb_a + lsb_b) and the scales' significand product has 2 * M
        # fraction bits.
        group_bits = Exact().term_bits(spec) + (g - 1).bit_length() + 1
        int_bits = group_bits + 2 * fs.precision + a.lsb_min + b.lsb_min - 2 * fs.man_bits
        bits = group_bits + 2 * fs.precision
        total = self.frac_bits + int_bits + (spec.n // g).bit_length() + 1
        if bits > 64 or total > 62:
            raise OptionError(f"dot --sum-group {g}: a scaled group of {a.name} x "
                              f"{b.name} needs {bits} bits and the truncated sum "
                              f"{total}; at most 64 and 62 are supported (fewer --frac-bits, "
                              f"a smaller group or narrower elements)")


@dataclass(frozen=True)
class TwoStage(Fixed):
    """The two-stage accumulator (MMA-Sim's gtr_fdpa, AMD CDNA3): the even and the odd lanes'
    products each truncated to F bits below their own largest and summed, the two sums floored
    to F bits below the larger, added to c in F2 + 1 bits (c floored to F), floored to F2 bits
    below the result's leading bit, rounded once (docs/mx.md)."""

    frac_bits2: int = 31

    c_rule: ClassVar[str] = "floored to 2^(E - F)"

    def __post_init__(self):
        super().__post_init__()
        check_int("frac_bits2", self.frac_bits2, self.frac_bits, TWO_STAGE_F2_MAX)

    @property
    def ident(self) -> str:
        return f"fixed{self.frac_bits}x{self.frac_bits2}"

    def option_values(self) -> dict:
        return super().option_values() | {"frac_bits2": self.frac_bits2}

    def describe(self) -> str:
        return (f"two-stage: even and odd products truncated to {self.frac_bits} bits, "
                f"floored together, added to c in {self.frac_bits2 + 1} bits, floored to "
                f"{self.frac_bits2}, then one rounding")

    def header(self) -> str:
        return (f"two-stage, {self.frac_bits} and {self.frac_bits2} fraction bits (even and "
                f"odd products truncated apart, floored together, added to c and floored, "
                f"docs/mx.md)")

    def check(self, spec: Spec) -> None:
        if spec.c_fmt is None or spec.scaled:
            raise OptionError(_TWO_STAGE_NEEDS)
        if spec.n % 2:
            raise OptionError(f"dot --frac-bits2 sums the even and the odd lanes apart: n must "
                              f"be even, not {spec.n}")


def accumulation(accum: str = "exact", frac_bits: int | None = None,
                 sum_group: int | None = None, frac_bits2: int | None = None) -> Accumulation:
    """The step the command line's options name: ``--accum`` with ``--frac-bits`` (24 by
    default), ``--sum-group`` and ``--frac-bits2`` (fixed only)."""
    if frac_bits is not None and accum != "fixed":
        raise OptionError("--frac-bits sets the width of --accum fixed; it does not apply to "
                          f"--accum {accum}")
    if accum not in ACCUMULATORS:
        raise OptionError(f"accumulator must be one of {', '.join(ACCUMULATORS)}, "
                          f"not {accum!r}")
    if sum_group is not None and accum != "fixed":
        raise OptionError(_GROUPED_NEEDS)
    if frac_bits2 is not None and (accum != "fixed" or sum_group is not None):
        raise OptionError(_TWO_STAGE_NEEDS)
    if accum == "exact":
        return Exact()
    F = 24 if frac_bits is None else frac_bits
    if sum_group is not None:
        return Grouped(F, sum_group)
    if frac_bits2 is not None:
        return TwoStage(F, frac_bits2)
    return Fixed(F)
