"""Typed options shared by the units, the golden model and the reports.

The facts every layer shares are defined here once: the rounding modes, the ``rm`` encoding of
dynamic rounding (RISC-V ``frm``: 0 rne, 1 rtz, 2 rdn, 3 rup, 4 rna; the reserved codes 5-7 round
as rne, docs/numerics.md), the saturation modes, when a result is tiny (before or after
rounding) and the flag order (RISC-V ``fflags``).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

__all__ = ["Rounding", "Saturation", "Tininess", "TININESS_MEANING", "Flag", "FLAG_ORDER",
           "FLAGS_WIDTH", "UnitOptions", "OptionError",
           "DEFAULT_SR_BITS", "RM_CODES", "RM_WIDTH", "RM_MAX", "rm_name", "RM_MEANING",
           "FLAGS_MEANING"]


class OptionError(ValueError):
    """Impossible unit options (bad rounding name, negative stages, ...)."""


def _parse(cls, value, what: str):
    """A member of the enum ``cls`` from itself or its value's name, case-insensitive; else one
    line naming the valid values."""
    if isinstance(value, cls):
        return value
    try:
        return cls(str(value).lower())
    except ValueError:
        raise OptionError(f"unknown {what} {value!r}; valid: "
                          f"{', '.join(m.value for m in cls)}") from None


class Rounding(enum.Enum):
    RNE = "rne"               # round to nearest, ties to even
    RTZ = "rtz"               # toward zero
    RDN = "rdn"               # toward -inf
    RUP = "rup"               # toward +inf
    RNA = "rna"               # round to nearest, ties away from zero
    ROD = "rod"               # round to odd (von Neumann jamming; exact double rounding)
    STOCHASTIC = "stochastic"  # random bits on an input (= P3109 StochasticA); numerics.md
    STOCHASTIC_B = "stochastic_b"  # P3109 StochasticB: one more fraction bit, 2r + 1
    STOCHASTIC_C = "stochastic_c"  # P3109 StochasticC: the fraction rounded to R bits first
    DYNAMIC = "dynamic"       # chosen per operation by an rm input (RISC-V encoding)

    @property
    def stochastic(self) -> bool:
        return self in (Rounding.STOCHASTIC, Rounding.STOCHASTIC_B, Rounding.STOCHASTIC_C)

    def exact_bits(self, sr_bits: int) -> int:
        """Bits below the result's LSB a stochastic mode reads exactly: R for StochasticA,
        R + 1 for B and C (C's ties also read the sticky of the rest); 0 for the others."""
        if not self.stochastic:
            return 0
        return sr_bits if self is Rounding.STOCHASTIC else sr_bits + 1

    @property
    def meaning(self) -> str:
        """What the mode does, in a few words (export headers and sidecars)."""
        return _MEANING[self]

    @classmethod
    def parse(cls, value: "str | Rounding") -> "Rounding":
        return _parse(cls, value, "rounding")

    @classmethod
    def parse_static(cls, value: "str | Rounding", who: str) -> "Rounding":
        """A static mode (not dynamic, not stochastic), or an error naming ``who``."""
        rounding = cls.parse(value)
        if rounding is Rounding.DYNAMIC or rounding.stochastic:
            raise OptionError(f"{who} takes a static rounding mode (rne, rtz, rdn, rup, rna, "
                              f"rod), not {rounding.value!r}")
        return rounding


_MEANING = {
    Rounding.RNE: "round to nearest, ties to even",
    Rounding.RTZ: "round toward zero",
    Rounding.RDN: "round down (toward -inf)",
    Rounding.RUP: "round up (toward +inf)",
    Rounding.RNA: "round to nearest, ties away from zero",
    Rounding.ROD: "round to odd",
    Rounding.STOCHASTIC: "away from zero with probability frac / 2^sr_bits, from the rbits input",
    Rounding.STOCHASTIC_B: "P3109 StochasticB: away from zero when frac_(R+1) + 2*rbits + 1 "
                           "carries out of R+1 bits",
    Rounding.STOCHASTIC_C: "P3109 StochasticC: away from zero when the fraction rounded to R bits "
                           "(ties to even) + rbits carries out of R bits",
    Rounding.DYNAMIC: "chosen per operation by the rm input",
}

class Saturation(enum.Enum):
    """The saturation modes of IEEE P3109 (Interim Report v4.0, 4.7.5 Saturate), for any format:
    "extended" reads as "has infinities", Mlo is -max (signed) or 0 (unsigned)."""
    FINITE = "finite"          # SatFinite: overflow and infinities give +-max (unsigned: 0 below)
    PROPAGATE = "propagate"    # SatPropagate: finite overflow gives +-max, infinities stay
    NONE = "none"              # SatNone: as IEEE 754 7.4 where there are infinities, else +-max

    @classmethod
    def parse(cls, value: "str | Saturation | None") -> "Saturation | None":
        return None if value is None else _parse(cls, value, "saturation")

    @property
    def meaning(self) -> str:
        return {Saturation.FINITE: "P3109 SatFinite: overflow and infinities give +-max finite",
                Saturation.PROPAGATE: "P3109 SatPropagate: overflow gives +-max finite, "
                                      "infinities stay infinite",
                Saturation.NONE: "P3109 SatNone: overflow to infinity as the rounding direction "
                                 "says, +-max finite where there is none"}[self]


class Tininess(enum.Enum):
    """When a result is tiny (IEEE 754-2019 7.5 lets an implementation choose; docs/numerics.md
    5). Underflow is raised for a tiny and inexact result either way."""
    AFTER = "after"    # rounded to M+1 bits, exponent unbounded, below 2^emin (RISC-V, x86)
    BEFORE = "before"  # the exact result is nonzero and below 2^emin (Arm)

    @classmethod
    def parse(cls, value: "str | Tininess") -> "Tininess":
        return _parse(cls, value, "tininess")

    @classmethod
    def default_for(cls, rounding: Rounding) -> "Tininess":
        """After rounding, but before under stochastic rounding: the random increment makes
        "rounded with an unbounded exponent" a draw of its own, so only the exact value is
        judged."""
        return cls.BEFORE if rounding.stochastic else cls.AFTER


# What a header says of the non-default rule (the default, after rounding, goes unsaid).
TININESS_MEANING = ("underflow when the exact result is nonzero, below 2^emin and inexact; "
                    "results without subnormals flush by the same test")


# The rm input of dynamic rounding: RISC-V frm codes. Codes above RM_MAX are reserved and round
# as rne.
RM_CODES = {Rounding.RNE: 0, Rounding.RTZ: 1, Rounding.RDN: 2, Rounding.RUP: 3, Rounding.RNA: 4}
RM_WIDTH = 3
RM_MAX = max(RM_CODES.values())
RM_MEANING = ("rounding mode, RISC-V frm encoding: " +
              ", ".join(f"{c} {m.value}" for m, c in RM_CODES.items()) +
              f"; {RM_MAX + 1}-{(1 << RM_WIDTH) - 1} round as rne")


def rm_name(code: int) -> str:
    """``rne`` .. ``rna`` for an rm code; ``rne(reserved 5)`` for the reserved ones."""
    for mode, c in RM_CODES.items():
        if c == code:
            return mode.value
    return f"rne(reserved {code})"


STATIC_MODES = (Rounding.RNE, Rounding.RTZ, Rounding.RDN, Rounding.RUP, Rounding.RNA, Rounding.ROD)
IEEE_MODES = (Rounding.RNE, Rounding.RTZ, Rounding.RDN, Rounding.RUP, Rounding.RNA)


class Flag(enum.IntFlag):
    """Exception flags in RISC-V fflags bit order: flags[4:0] = {NV, DZ, OF, UF, NX}."""
    NX = 1 << 0   # inexact
    UF = 1 << 1   # underflow (tiny, by the options' Tininess, and inexact)
    OF = 1 << 2   # overflow
    DZ = 1 << 3   # divide by zero: raised by div alone (a finite non-zero a over a zero b)
    NV = 1 << 4   # invalid operation


FLAG_ORDER = ("invalid", "divide_by_zero", "overflow", "underflow", "inexact")  # bit 4 .. bit 0
FLAGS_WIDTH = len(FLAG_ORDER)
FLAGS_MEANING = ("exception flags {" + ", ".join(FLAG_ORDER) + "} (bit 4 .. bit 0, RISC-V "
                 "fflags order; divide_by_zero is always 0)")

# Width of the random input of stochastic rounding; see docs/numerics.md for the exact rule.
DEFAULT_SR_BITS = 8


@dataclass(frozen=True)
class UnitOptions:
    """How a unit rounds and reports. Shared by the generator, the golden model and reports."""

    rounding: Rounding = Rounding.RNE
    saturate: bool = False
    sr_bits: int = DEFAULT_SR_BITS
    # A P3109 saturation mode, or None: the format's own convention (docs/numerics.md 4), which
    # ``saturate`` switches to the OCP/ONNX saturating table.
    saturation: Saturation | None = None
    # When results are tiny; None: the rounding's default (Tininess.default_for), which stochastic
    # rounding is the only one to allow.
    tininess: Tininess | None = None

    def __post_init__(self):
        rounding = Rounding.parse(self.rounding)
        object.__setattr__(self, "rounding", rounding)
        object.__setattr__(self, "saturation", Saturation.parse(self.saturation))
        default = Tininess.default_for(rounding)
        tininess = default if self.tininess is None else Tininess.parse(self.tininess)
        if tininess is not default and rounding.stochastic:
            raise OptionError(f"--rounding {rounding.value} detects tininess before rounding; "
                              f"--tininess {tininess.value} does not apply")
        object.__setattr__(self, "tininess", tininess)
        if not isinstance(self.saturate, bool):
            raise OptionError(f"saturate must be a bool, not {self.saturate!r}")
        if self.saturate and self.saturation is not None:
            raise OptionError("--saturate is --saturation finite (with OCP/ONNX's fnuz "
                              "exception); give one of them, not both")
        if not isinstance(self.sr_bits, int) or not 1 <= self.sr_bits <= 32:
            raise OptionError(f"sr_bits must be an integer 1..32, not {self.sr_bits!r}")

    @property
    def tininess_is_default(self) -> bool:
        """Whether names, headers and option lists may leave tininess out."""
        return self.tininess is Tininess.default_for(self.rounding)

    # How a spec records tininess, only when it is not the default (so that every other spec's
    # name, header, sidecar and option list stay as they were).
    def tininess_option(self) -> dict:
        return {} if self.tininess_is_default else {"tininess": self.tininess.value}

    def tininess_name_parts(self) -> list[str]:
        return [] if self.tininess_is_default else [f"tiny{self.tininess.value}"]

    def tininess_lines(self) -> list[str]:
        return [] if self.tininess_is_default else \
            [f"tininess    {self.tininess.value} rounding ({TININESS_MEANING})"]

    def saturation_for(self, fmt) -> Saturation | None:
        """The P3109 saturation mode a result in ``fmt`` follows, or None for the format's own
        (IEEE 754 / OCP / ONNX) convention. Formats only P3109 defines (ext, unsigned with a
        zero) have no convention of their own: SatNone, or SatFinite under ``saturate``."""
        if self.saturation is not None:
            return self.saturation
        if fmt.p3109_only:
            return Saturation.FINITE if self.saturate else Saturation.NONE
        return None

    def describe(self) -> str:
        parts = [f"rounding {self.rounding.value}"]
        if self.rounding.stochastic:
            parts.append(f"{self.sr_bits} random bits")
        if self.saturation is not None:
            parts.append(f"saturation {self.saturation.value}")
        else:
            parts.append("saturating" if self.saturate else "non-saturating")
        if not self.tininess_is_default:
            parts.append(f"tininess {self.tininess.value} rounding")
        return ", ".join(parts)
