"""Typed options shared by the units, the golden model and the reports.

Rounding-mode encodings follow RISC-V's ``frm`` (0 rne, 1 rtz, 2 rdn, 3 rup, 4 rna); the dynamic
``rm`` port and the golden model's per-element ``rm`` arrays use them. Reserved encodings 5-7 on a
dynamic ``rm`` input round as rne (documented in docs/numerics.md).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["Rounding", "Flag", "FLAG_ORDER", "UnitOptions", "OptionError", "DEFAULT_SR_BITS"]


class OptionError(ValueError):
    """Impossible unit options (bad rounding name, negative stages, ...)."""


class Rounding(enum.Enum):
    RNE = "rne"               # round to nearest, ties to even
    RTZ = "rtz"               # toward zero
    RDN = "rdn"               # toward -inf
    RUP = "rup"               # toward +inf
    RNA = "rna"               # round to nearest, ties away from zero
    ROD = "rod"               # round to odd (von Neumann jamming; exact double rounding)
    STOCHASTIC = "stochastic"  # random bits on an input; see docs/numerics.md
    DYNAMIC = "dynamic"       # chosen per operation by an rm input (RISC-V encoding)

    @property
    def code(self) -> int:
        """Internal mode code: RISC-V frm for 0..4, then rod=5 and stochastic=6."""
        return _CODES[self]

    @classmethod
    def parse(cls, value: "str | Rounding") -> "Rounding":
        if isinstance(value, Rounding):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            raise OptionError(f"unknown rounding {value!r}; valid: "
                              f"{', '.join(m.value for m in cls)}") from None


_CODES = {Rounding.RNE: 0, Rounding.RTZ: 1, Rounding.RDN: 2, Rounding.RUP: 3, Rounding.RNA: 4,
          Rounding.ROD: 5, Rounding.STOCHASTIC: 6}

STATIC_MODES = (Rounding.RNE, Rounding.RTZ, Rounding.RDN, Rounding.RUP, Rounding.RNA, Rounding.ROD)
IEEE_MODES = (Rounding.RNE, Rounding.RTZ, Rounding.RDN, Rounding.RUP, Rounding.RNA)


class Flag(enum.IntFlag):
    """Exception flags in RISC-V fflags bit order: flags[4:0] = {NV, DZ, OF, UF, NX}."""
    NX = 1 << 0   # inexact
    UF = 1 << 1   # underflow (tininess after rounding, and inexact)
    OF = 1 << 2   # overflow
    DZ = 1 << 3   # divide by zero: never raised by these units
    NV = 1 << 4   # invalid operation


FLAG_ORDER = ("invalid", "divide_by_zero", "overflow", "underflow", "inexact")  # bit 4 .. bit 0

# Width of the random input of stochastic rounding; see docs/numerics.md for the exact rule.
DEFAULT_SR_BITS = 8


@dataclass(frozen=True)
class UnitOptions:
    """How a unit rounds and reports. Shared by the generator, the golden model and reports."""

    rounding: Rounding = Rounding.RNE
    saturate: bool = False
    sr_bits: int = DEFAULT_SR_BITS

    def __post_init__(self):
        object.__setattr__(self, "rounding", Rounding.parse(self.rounding))
        if not isinstance(self.saturate, bool):
            raise OptionError(f"saturate must be a bool, not {self.saturate!r}")
        if not isinstance(self.sr_bits, int) or not 1 <= self.sr_bits <= 32:
            raise OptionError(f"sr_bits must be an integer 1..32, not {self.sr_bits!r}")

    def describe(self) -> str:
        parts = [f"rounding {self.rounding.value}"]
        if self.rounding is Rounding.STOCHASTIC:
            parts.append(f"{self.sr_bits} random bits")
        parts.append("saturating" if self.saturate else "non-saturating")
        return ", ".join(parts)
