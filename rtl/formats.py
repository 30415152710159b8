"""The number-format catalog: the single description of a floating-point format.

Everything else in fpforge -- the Amaranth generator, the JAX golden model, the cocotb benches and
the synthesis reports -- takes a :class:`FloatFormat` from here. This module is plain Python on
purpose (no Amaranth, no JAX) so that every layer can import it.

Naming the trap: ``man_bits`` counts the *stored* fraction bits only; the hidden (implicit) bit is
not counted. ``precision`` is ``man_bits + 1`` and does count it (HardFloat's ``sigWidth``).

Value of an encoding with sign s, exponent field e and fraction field f::

    normal     (e >= 1, or any e for ``fnu``):   (-1)^s * (2^M + f) * 2^(e - bias - M)
    subnormal  (e == 0, f != 0, subnormals on):   (-1)^s *        f  * 2^(1 - bias - M)

Special-value conventions (``Specials``):

    ieee    infinities at e == all-ones, f == 0; NaN at e == all-ones, f != 0 (quiet when the top
            fraction bit is set, signalling otherwise); +0 and -0.       (float16, float8_e5m2)
    fn      no infinities; NaN only where e and f are both all-ones (either sign).  (OCP E4M3)
    fnuz    no infinities, no negative zero; the sign-only code 1000...0 is the one NaN.
    finite  no infinities, no NaN; every code is a number.             (OCP FP6 / FP4)
    fnu     unsigned and exponent-only: no sign bit, no zero, NaN at all-ones; e == 0 is the
            normal number 2^-bias.                                     (OCP E8M0, the MX scale)
    ext     IEEE P3109 "extended": no negative zero, one NaN and infinities at the top codes --
            signed: NaN is the sign-only code, +-inf the all-ones magnitude (0x7F / 0xFF);
            unsigned: NaN is all ones, +inf the code below it.          (Binary8p3se, ...)

A format is signed unless ``unsigned`` is set: fnu always is, and the P3109 unsigned formats are
``fn`` (NaN at all ones, the P3109 "finite" domain) or ``ext`` with ``unsigned=True``. The P3109
signed finite formats are the ``fnuz`` convention (Binary8p4sf is float8_e4m3fnuz, code for
code). rtl/format_names.py reads the P3109 names ``binary<K>p<P><s|u><e|f>`` (and gfloat's
``p3109_k<K>p<P><s|u><e|f>``) and the other spellings users type; fpforge follows the P3109
Interim Report v4.0, a draft.

Subnormals may be flushed (``subnormals=False``): subnormal encodings then read as zero of the
same sign, and results below the smallest normal become zero. That is an area option of the
hardware; the catalog formats keep subnormals.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from fractions import Fraction

__all__ = [
    "Specials", "FloatFormat", "FormatError", "CATALOG", "AMBIGUOUS_SPELLINGS",
    "catalog_formats", "default_bias", "format_value", "MAX_EXP_BITS", "MAX_MAN_BITS",
    "MAX_WIDTH",
]

# Sizes the units and the golden model support: up to binary32.
MAX_EXP_BITS = 8
MAX_MAN_BITS = 23
MAX_WIDTH = 32


class FormatError(ValueError):
    """An unknown format name or impossible format parameters."""


class Specials(enum.Enum):
    IEEE = "ieee"
    FN = "fn"
    FNUZ = "fnuz"
    FINITE = "finite"
    FNU = "fnu"
    EXT = "ext"


# The trap in ml_dtypes' names: "fn" means "NaN at the all-ones code" in float8_e4m3fn but
# "finite, no NaN" in float6_e3m2fn, float6_e2m3fn and float4_e2m1fn. The generic grammar's fn
# is the former, so e2m1fn (max 4) is not float4_e2m1fn (max 6). Such generic spellings are
# refused unless the bias is spelled out (e2m1fn_b1), and generic names spell it; filled in
# below the catalog: {spelling: catalog format}.
AMBIGUOUS_SPELLINGS: dict[str, "FloatFormat"] = {}


@dataclass(frozen=True)
class FloatFormat:
    """An ExMy binary floating-point format. Immutable, validated, hashable."""

    exp_bits: int
    man_bits: int          # stored fraction bits; the hidden bit is NOT counted
    bias: int
    specials: Specials = Specials.IEEE
    subnormals: bool = True
    unsigned: bool = False   # no sign bit; fnu formats always are

    def __post_init__(self):
        if self.specials is Specials.FNU:
            object.__setattr__(self, "unsigned", True)
        for field, value in (("exp_bits", self.exp_bits), ("man_bits", self.man_bits),
                             ("bias", self.bias)):
            if not isinstance(value, int) or isinstance(value, bool):
                raise FormatError(f"{field} must be an integer, not {value!r}")
        if not isinstance(self.specials, Specials):
            raise FormatError(f"specials must be a Specials member ({_names(Specials)}), "
                              f"not {self.specials!r}")
        if not isinstance(self.subnormals, bool):
            raise FormatError(f"subnormals must be a bool, not {self.subnormals!r}")
        if not isinstance(self.unsigned, bool):
            raise FormatError(f"unsigned must be a bool, not {self.unsigned!r}")
        spelled = self.generic_name
        if self.unsigned and self.specials not in (Specials.FN, Specials.EXT, Specials.FNU):
            raise FormatError(f"format {spelled}: unsigned formats take the fn, ext or fnu "
                              f"convention, not {self.specials.value}")
        if not 1 <= self.exp_bits <= MAX_EXP_BITS:
            raise FormatError(f"format {spelled}: exponent bits must be 1..{MAX_EXP_BITS}, "
                              f"not {self.exp_bits}")
        if not 0 <= self.man_bits <= MAX_MAN_BITS:
            raise FormatError(f"format {spelled}: mantissa bits must be 0..{MAX_MAN_BITS}, "
                              f"not {self.man_bits}")
        if self.width > MAX_WIDTH:
            raise FormatError(f"format {spelled} is {self.width} bits wide; at most {MAX_WIDTH} "
                              "are supported")
        if self.specials is Specials.FNU and self.man_bits != 0:
            raise FormatError(f"format {spelled}: the unsigned exponent-only convention (fnu) "
                              "needs 0 mantissa bits")
        if self.specials is Specials.IEEE and self.man_bits == 0:
            raise FormatError(f"format {spelled}: IEEE-style NaNs need at least 1 mantissa bit "
                              "(use fn, fnuz or fin)")
        if self.emin > self.emax:
            raise FormatError(f"format {spelled} has no normal numbers (emin {self.emin} > "
                              f"emax {self.emax})")
        if self.emax > 1023 or self.emin - self.man_bits < -1074:
            raise FormatError(f"format {spelled}: bias {self.bias} puts values outside "
                              "binary64's range (need emax <= 1023 and min subnormal >= 2^-1074)")

    # ----- names ------------------------------------------------------------------------------
    @property
    def generic_name(self) -> str:
        """Spelling in the generic grammar; resolves back to an equal format."""
        suffix = {Specials.IEEE: "", Specials.FN: "fn", Specials.FNUZ: "fnuz",
                  Specials.FINITE: "fin", Specials.FNU: "fnu", Specials.EXT: "ext"}[self.specials]
        u = "u" if self.unsigned and self.specials is not Specials.FNU else ""
        name = f"{u}e{self.exp_bits}m{self.man_bits}{suffix}"
        if self.bias != default_bias(self.exp_bits, self.specials) or name in AMBIGUOUS_SPELLINGS:
            name += f"_b{self.bias}"
        if not self.subnormals:
            name += "_ftz"
        return name

    @property
    def name(self) -> str:
        """Canonical name: ml_dtypes' name for catalog formats, the P3109 name for the other
        P3109 formats, the generic spelling otherwise."""
        base = _CANONICAL_BY_PARAMS.get(replace(self, subnormals=True)) if self._catalog_ready() \
            else None
        if base is None:
            return self.p3109_name or self.generic_name
        return base if self.subnormals else base + "_ftz"

    @property
    def p3109_only(self) -> bool:
        """A convention only P3109 defines (ext, or unsigned with a zero): its units follow the
        P3109 saturation modes, having no IEEE/OCP convention of their own."""
        return self.specials is Specials.EXT or (self.unsigned and self.specials is not
                                                 Specials.FNU)

    @property
    def p3109_name(self) -> str | None:
        """``Binary<K>p<P><s|u><e|f>`` when this is a P3109 format (code for code), else None."""
        if not self.subnormals or self.bias != 1 << (self.exp_bits - 1):
            return None
        domain = {(False, Specials.FNUZ): "f", (False, Specials.EXT): "e",
                  (True, Specials.FN): "f", (True, Specials.EXT): "e"}.get(
                      (self.unsigned, self.specials))
        if domain is None:
            return None
        return f"Binary{self.width}p{self.precision}{'u' if self.unsigned else 's'}{domain}"

    @staticmethod
    def _catalog_ready() -> bool:
        return "_CANONICAL_BY_PARAMS" in globals()

    @property
    def ident(self) -> str:
        """A Verilog/file-name friendly identifier, e.g. ``e4m3fn`` or ``e5m2``."""
        return self.generic_name.replace("-", "n")

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"FloatFormat({self.name!r})"

    def describe(self) -> str:
        """Resolved semantics on one line, for reports, logs and Verilog headers."""
        inf = "inf" if self.has_inf else "no inf"
        nan = {Specials.IEEE: "NaN: exp all-ones, frac != 0",
               Specials.FN: "NaN: all-ones code only",
               Specials.FNUZ: "NaN: sign-only code, no -0",
               Specials.FINITE: "no NaN",
               Specials.FNU: "NaN: all-ones code, unsigned, no zero",
               Specials.EXT: "NaN: sign-only code, inf: all-ones magnitude, no -0"
               if self.signed else "NaN: all-ones code, +inf below it, unsigned"}[self.specials]
        if self.unsigned and self.specials is Specials.FN:
            nan = "NaN: all-ones code, unsigned"
        sub = "subnormals" if self.has_subnormals and self.man_bits else (
            "gradual underflow to 0 or 2^emin" if self.has_subnormals else
            "subnormals flushed" if self.specials is not Specials.FNU else "no subnormals")
        p3109 = self.p3109_name
        same = f", = P3109 {p3109}" if p3109 and p3109 != self.name else ""
        return (f"{self.name} (E{self.exp_bits}M{self.man_bits}, {self.width} bits, bias "
                f"{self.bias}, max {format_value(self.max_finite)}, min normal "
                f"2^{self.emin}, {inf}, {nan}, {sub}{same})")

    # ----- shape -------------------------------------------------------------------------------
    @property
    def signed(self) -> bool:
        return not self.unsigned

    @property
    def width(self) -> int:
        return int(self.signed) + self.exp_bits + self.man_bits

    @property
    def precision(self) -> int:
        """Significand bits *including* the hidden bit."""
        return self.man_bits + 1

    @property
    def exp_all_ones(self) -> int:
        return (1 << self.exp_bits) - 1

    @property
    def sign_mask(self) -> int:
        return (1 << (self.width - 1)) if self.signed else 0

    @property
    def magnitude_mask(self) -> int:
        return (1 << (self.exp_bits + self.man_bits)) - 1

    # ----- specials ----------------------------------------------------------------------------
    @property
    def has_inf(self) -> bool:
        return self.specials in (Specials.IEEE, Specials.EXT)

    @property
    def has_nan(self) -> bool:
        return self.specials is not Specials.FINITE

    @property
    def has_zero(self) -> bool:
        return self.specials is not Specials.FNU

    @property
    def has_neg_zero(self) -> bool:
        return self.signed and self.specials in (Specials.IEEE, Specials.FN, Specials.FINITE)

    @property
    def has_subnormals(self) -> bool:
        """Whether results below 2^emin round on the 2^(emin - M) grid (gradual underflow) and
        subnormal encodings are read as such; False when flushed, and for fnu (no zero). With
        0 mantissa bits the grid is {0, 2^emin}, as IEEE 754 and P3109 (Binary8p1*) define."""
        return self.subnormals and self.specials is not Specials.FNU

    @property
    def has_snan(self) -> bool:
        """IEEE-style formats with 2+ fraction bits can encode signalling NaNs."""
        return self.specials is Specials.IEEE and self.man_bits >= 2

    @property
    def nan_code(self) -> int | None:
        """The one NaN code fpforge produces (positive, quiet). See docs/numerics.md."""
        return {Specials.IEEE: (self.exp_all_ones << self.man_bits) | (1 << (self.man_bits - 1))
                if self.man_bits else None,
                Specials.FN: self.magnitude_mask,
                Specials.FNUZ: self.sign_mask,
                Specials.FINITE: None,
                Specials.FNU: self.magnitude_mask,
                Specials.EXT: self.sign_mask or self.magnitude_mask}[self.specials]

    @property
    def inf_code(self) -> int | None:
        """Code of +inf (set the sign bit for -inf), or None."""
        if self.specials is Specials.EXT:
            return self.magnitude_mask - self.unsigned
        return (self.exp_all_ones << self.man_bits) if self.has_inf else None

    # ----- range -------------------------------------------------------------------------------
    @property
    def emin(self) -> int:
        """Unbiased exponent of the smallest normal number."""
        return -self.bias if self.specials is Specials.FNU else 1 - self.bias

    @property
    def max_finite_code(self) -> int:
        """Magnitude code (sign clear) of the largest finite number."""
        if self.has_inf:
            return self.inf_code - 1
        if self.specials in (Specials.FN, Specials.FNU):
            return self.magnitude_mask - 1
        return self.magnitude_mask

    @property
    def emax(self) -> int:
        """Unbiased exponent of the largest finite number."""
        return (self.max_finite_code >> self.man_bits) - self.bias

    @property
    def min_normal_code(self) -> int:
        return 0 if self.specials is Specials.FNU else 1 << self.man_bits

    @property
    def max_finite(self) -> Fraction:
        return self.code_value(self.max_finite_code)

    @property
    def min_normal(self) -> Fraction:
        return Fraction(2) ** self.emin

    @property
    def min_subnormal(self) -> Fraction:
        """Smallest positive number (the min normal when there are no subnormals)."""
        return Fraction(2) ** (self.emin - self.man_bits) if self.has_subnormals \
            else self.min_normal

    # ----- reference decoding (plain Python, exact) --------------------------------------------
    def classify(self, code: int) -> str:
        """'zero', 'subnormal', 'normal', 'inf', 'nan' (or 'snan') for one encoding."""
        if not 0 <= code < (1 << self.width):
            raise FormatError(f"code {code:#x} does not fit {self.name} ({self.width} bits)")
        mag = code & self.magnitude_mask
        e = mag >> self.man_bits
        f = mag & ((1 << self.man_bits) - 1)
        sp = self.specials
        if sp is Specials.FNU:
            return "nan" if mag == self.magnitude_mask else "normal"
        if sp is Specials.FNUZ and code == self.sign_mask:
            return "nan"
        if sp is Specials.EXT:
            if code == self.nan_code:
                return "nan"
            if mag == self.inf_code:
                return "inf"
        if sp is Specials.FN and mag == self.magnitude_mask:
            return "nan"
        if sp is Specials.IEEE and e == self.exp_all_ones:
            if f == 0:
                return "inf"
            return "nan" if f >> (self.man_bits - 1) else "snan"
        if e == 0:
            return "zero" if f == 0 or not self.has_subnormals else "subnormal"
        return "normal"

    def code_value(self, code: int) -> Fraction | float:
        """Exact value of an encoding: a Fraction, or float inf/nan (-0.0 for negative zero)."""
        cls = self.classify(code)
        negative = bool(code & self.sign_mask)
        if cls in ("nan", "snan"):
            return float("nan")
        if cls == "inf":
            return float("-inf") if negative else float("inf")
        if cls == "zero":
            return -0.0 if negative else Fraction(0)
        mag = code & self.magnitude_mask
        e = mag >> self.man_bits
        f = mag & ((1 << self.man_bits) - 1)
        if cls == "subnormal":
            value = Fraction(f) * Fraction(2) ** (1 - self.bias - self.man_bits)
        else:
            value = Fraction((1 << self.man_bits) + f) * \
                Fraction(2) ** (e - self.bias - self.man_bits)
        return -value if negative else value

    def with_subnormals(self, keep: bool) -> "FloatFormat":
        return self if self.specials is Specials.FNU else replace(self, subnormals=keep)


def _names(enum_cls) -> str:
    return ", ".join(m.value for m in enum_cls)


def default_bias(exp_bits: int, specials: Specials) -> int:
    """The bias a generic spelling without ``_b<bias>`` means."""
    if exp_bits < 1:
        return 0
    if specials in (Specials.FNUZ, Specials.EXT):
        return 1 << (exp_bits - 1)
    return (1 << (exp_bits - 1)) - 1


def format_value(v: Fraction) -> str:
    """A value for messages: an integer, a power of two as 2^k, else 6 significant digits."""
    if v.denominator == 1 and v < 10**7:
        return str(v.numerator)
    if v.denominator == 1 or v.numerator == 1:
        f = float(v)
        if f != 0 and (f == 2.0 ** round(__import__("math").log2(f))):
            return f"2^{round(__import__('math').log2(f))}"
    return f"{float(v):.6g}"


def _fmt(e, m, bias=None, specials=Specials.IEEE) -> FloatFormat:
    return FloatFormat(e, m, default_bias(e, specials) if bias is None else bias, specials)


# Canonical names are ml_dtypes'. Order is the order of reports.
CATALOG: dict[str, FloatFormat] = {
    "float8_e4m3fn": _fmt(4, 3, specials=Specials.FN),
    "float8_e5m2": _fmt(5, 2),
    "float8_e4m3": _fmt(4, 3),
    "float8_e3m4": _fmt(3, 4),
    "float8_e4m3fnuz": _fmt(4, 3, specials=Specials.FNUZ),
    "float8_e5m2fnuz": _fmt(5, 2, specials=Specials.FNUZ),
    "float8_e4m3b11fnuz": _fmt(4, 3, 11, Specials.FNUZ),
    "float6_e3m2fn": _fmt(3, 2, specials=Specials.FINITE),
    "float6_e2m3fn": _fmt(2, 3, specials=Specials.FINITE),
    "float4_e2m1fn": _fmt(2, 1, specials=Specials.FINITE),
    "float8_e8m0fnu": _fmt(8, 0, specials=Specials.FNU),
    "float16": _fmt(5, 10),
    "bfloat16": _fmt(8, 7),
    "float32": _fmt(8, 23),
}

_CANONICAL_BY_PARAMS: dict[FloatFormat, str] = {f: n for n, f in CATALOG.items()}

# tests/rtl/test_formats.py checks that the generic grammar reads every other catalog tail
# (e4m3fn, e5m2fnuz, e8m0fnu, ...) as its catalog format.
AMBIGUOUS_SPELLINGS.update({name.rpartition("_")[2]: fmt for name, fmt in CATALOG.items()
                            if fmt.specials is Specials.FINITE and name.endswith("fn")})


def catalog_formats(max_width: int = MAX_WIDTH) -> list[FloatFormat]:
    """Catalog formats of at most ``max_width`` bits, in catalog order."""
    return [f for f in CATALOG.values() if f.width <= max_width]
