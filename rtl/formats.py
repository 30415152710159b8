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
code). ``resolve`` reads the P3109 names ``binary<K>p<P><s|u><e|f>`` (and gfloat's
``p3109_k<K>p<P><s|u><e|f>``); fpforge follows the P3109 Interim Report v4.0, a draft.

Subnormals may be flushed (``subnormals=False``): subnormal encodings then read as zero of the
same sign, and results below the smallest normal become zero. That is an area option of the
hardware; the catalog formats keep subnormals.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, replace
from fractions import Fraction

__all__ = [
    "Specials", "FloatFormat", "FormatError", "resolve", "CATALOG", "SHORT_NAMES",
    "catalog_formats", "catalog_selection", "MAX_EXP_BITS", "MAX_MAN_BITS", "MAX_WIDTH",
    "p3109", "P3109_SOURCE", "P3109_CONFORMANCE",
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


# Grammar of the generic spelling; kept here so the error message and the parser agree.
GRAMMAR = ("[u]e<E>m<M>[fn|fnuz|fin|fnu|ext][_b<bias>][_ftz]  (e.g. e5m3, e4m3fn, e6m1_b20, "
           "e4m3_ftz, ue5m2ext; default is IEEE-style with bias 2^(E-1)-1, fnuz and ext default "
           "to bias 2^(E-1); u: unsigned, with fn or ext); or the P3109 names "
           "binary<K>p<P><s|u><e|f>, e.g. binary8p3se")
_GENERIC = re.compile(r"^(u)?e(\d+)m(\d+)(fnuz|fnu|fn|fin|ext)?(?:_b(\d+))?(_ftz)?$")
_SUFFIX = {None: Specials.IEEE, "fn": Specials.FN, "fnuz": Specials.FNUZ,
           "fin": Specials.FINITE, "fnu": Specials.FNU, "ext": Specials.EXT}
_P3109 = re.compile(r"^(?:binary|p3109_k)(\d+)p(\d+)([su])([ef])$")
P3109_SOURCE = "IEEE P3109 Interim Report v4.0 (a draft; fpforge follows it, no conformance claim)"
# P3109's minimum conformance set (docs/p3109.md), which the sweep and the benches take beside the
# catalog: Binary8p4se and Binary8p3se against OCP E4M3 / E5M2, Binary4p2sf against E2M1, the
# scale format Binary8p1uf against E8M0 (Binary8p4sf and Binary8p3sf are the catalog's fnuz
# formats).
P3109_CONFORMANCE = ("binary8p4se", "binary8p3se", "binary4p2sf", "binary8p1uf")

# The trap in ml_dtypes' names: "fn" means "NaN at the all-ones code" in float8_e4m3fn but
# "finite, no NaN" in float6_e3m2fn, float6_e2m3fn and float4_e2m1fn. The grammar's fn is the
# former, so e2m1fn (max 4) is not float4_e2m1fn (max 6). Such generic spellings are refused
# unless the bias is spelled out (e2m1fn_b1); filled in below the catalog: {spelling: format}.
_AMBIGUOUS: dict[str, "FloatFormat"] = {}


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
        if self.bias != _default_bias(self.exp_bits, self.specials) or name in _AMBIGUOUS:
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
                f"{self.bias}, max {_fmt_value(self.max_finite)}, min normal "
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


def _default_bias(exp_bits: int, specials: Specials) -> int:
    if exp_bits < 1:
        return 0
    if specials in (Specials.FNUZ, Specials.EXT):
        return 1 << (exp_bits - 1)
    return (1 << (exp_bits - 1)) - 1


def _fmt_value(v: Fraction) -> str:
    if v.denominator == 1 and v < 10**7:
        return str(v.numerator)
    if v.denominator == 1 or v.numerator == 1:
        f = float(v)
        if f != 0 and (f == 2.0 ** round(__import__("math").log2(f))):
            return f"2^{round(__import__('math').log2(f))}"
    return f"{float(v):.6g}"


def _fmt(e, m, bias=None, specials=Specials.IEEE) -> FloatFormat:
    return FloatFormat(e, m, _default_bias(e, specials) if bias is None else bias, specials)


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

# The short names users type. fp8e4m3 is OCP E4M3 (max 448), *not* IEEE-style float8_e4m3.
SHORT_NAMES: dict[str, str] = {
    "fp8e4m3": "float8_e4m3fn",
    "fp8e5m2": "float8_e5m2",
    "fp8e4m3fnuz": "float8_e4m3fnuz",
    "fp8e5m2fnuz": "float8_e5m2fnuz",
    "fp6e3m2": "float6_e3m2fn",
    "fp6e2m3": "float6_e2m3fn",
    "fp4e2m1": "float4_e2m1fn",
    "fp16": "float16",
    "bf16": "bfloat16",
    "fp32": "float32",
    "e8m0": "float8_e8m0fnu",
}

_CANONICAL_BY_PARAMS: dict[FloatFormat, str] = {f: n for n, f in CATALOG.items()}


def _generic(e: int, m: int, suffix: str | None, bias: int | None = None,
             subnormals: bool = True, unsigned: bool = False) -> FloatFormat:
    specials = _SUFFIX[suffix]
    return FloatFormat(e, m, _default_bias(e, specials) if bias is None else bias, specials,
                       subnormals, unsigned)


def p3109(k: int, p: int, signed: bool = True, extended: bool = True) -> FloatFormat:
    """The P3109 format Binary<k>p<p><s|u><e|f>: precision p counts the hidden bit; bias
    2^(k-p-1) signed, 2^(k-p) unsigned; subnormals always; one NaN; no -0."""
    name = f"binary{k}p{p}{'s' if signed else 'u'}{'e' if extended else 'f'}"
    top = k - 1 if signed else k
    if k < 3 or not 1 <= p <= top:
        raise FormatError(f"P3109 format {name}: needs K >= 3 and 1 <= P <= "
                          f"{'K-1 (signed)' if signed else 'K (unsigned)'}")
    e = k - p + (0 if signed else 1)
    if e > MAX_EXP_BITS:
        raise FormatError(f"P3109 format {name} has {e} exponent bits; at most {MAX_EXP_BITS} "
                          "are supported")
    specials = Specials.EXT if extended else (Specials.FNUZ if signed else Specials.FN)
    return FloatFormat(e, p - 1, 1 << (e - 1), specials, unsigned=not signed)


def _catalog_tail_read_generically(name: str) -> FloatFormat | None:
    """The last part of a catalog name (``e2m1fn`` of ``float4_e2m1fn``) as the generic grammar
    reads it, or None when the grammar does not read it."""
    m = _GENERIC.match(name.rpartition("_")[2])
    return _generic(int(m[2]), int(m[3]), m[4]) if m and not m[1] else None


_AMBIGUOUS.update({name.rpartition("_")[2]: fmt for name, fmt in CATALOG.items()
                   if _catalog_tail_read_generically(name) not in (None, fmt)})


def _ambiguous(spelled: str, tail: str, ftz: bool) -> FormatError:
    """Both readings of an ambiguous spelling, and how to spell each."""
    flush = "_ftz" if ftz else ""
    ml = _AMBIGUOUS[tail]
    grammar = _generic(ml.exp_bits, ml.man_bits, "fn", subnormals=not ftz)
    spellings = [ml.name + flush, *(s + flush for s, n in SHORT_NAMES.items() if n == ml.name),
                 ml.with_subnormals(not ftz).generic_name]
    return FormatError(
        f"ambiguous format {spelled!r}: ml_dtypes' {ml.name} is finite (no inf, no NaN, max "
        f"{_fmt_value(ml.max_finite)}: spell it {', '.join(spellings[:-1])} or {spellings[-1]}), "
        f"while the generic grammar's fn has NaN at the all-ones code (max "
        f"{_fmt_value(grammar.max_finite)}: spell it {grammar.generic_name})")


def catalog_formats(max_width: int = MAX_WIDTH) -> list[FloatFormat]:
    """Catalog formats of at most ``max_width`` bits, in catalog order."""
    return [f for f in CATALOG.values() if f.width <= max_width]


def catalog_selection(names, max_width: int, what: str) -> list[FloatFormat]:
    """The catalog formats of at most ``max_width`` bits that ``names`` (a list, or a
    comma-separated string; empty: all of them) name, in catalog order; ``what`` names the
    selection in the error for a format outside it."""
    every = catalog_formats(max_width)
    if isinstance(names, str):
        names = names.split(",")
    names = [n for n in names or [] if n.strip()]
    if not names:
        return every
    wanted = {resolve(n).with_subnormals(True) for n in names}
    unknown = wanted - set(every)
    if unknown:
        raise FormatError(f"{what} covers the catalog formats of <= {max_width} bits "
                          f"({', '.join(f.name for f in every)}), not "
                          f"{', '.join(sorted(f.name for f in unknown))}")
    return [f for f in every if f in wanted]


def valid_forms() -> str:
    return (f"valid: {', '.join(CATALOG)}; short names {', '.join(SHORT_NAMES)}; or {GRAMMAR}")


def resolve(spec: "str | FloatFormat") -> FloatFormat:
    """Turn a name (canonical, short or generic spelling) into a FloatFormat.

    Raises FormatError with a one-line message listing the valid forms.
    """
    if isinstance(spec, FloatFormat):
        return spec
    if not isinstance(spec, str):
        raise FormatError(f"format must be a name or FloatFormat, not {spec!r}; {valid_forms()}")
    key = spec.strip().lower()
    ftz = key.endswith("_ftz") and (key[:-4] in CATALOG or key[:-4] in SHORT_NAMES)
    base = key[:-4] if ftz else key
    base = SHORT_NAMES.get(base, base)
    if base in CATALOG:
        return CATALOG[base].with_subnormals(not ftz)
    m = _P3109.match(key)
    if m is not None:
        try:
            return p3109(int(m[1]), int(m[2]), m[3] == "s", m[4] == "e")
        except FormatError as err:
            raise FormatError(f"impossible format {spec!r}: {err}; {valid_forms()}") from None
    m = _GENERIC.match(key)
    if m is None:
        raise FormatError(f"unknown format {spec!r}; {valid_forms()}")
    u, e, mbits, suffix, bias, flush = m.groups()
    e, mbits = int(e), int(mbits)
    tail = f"e{e}m{mbits}{suffix or ''}"
    if bias is None and tail in _AMBIGUOUS and not u:
        raise _ambiguous(spec, tail, flush is not None)
    try:
        fmt = _generic(e, mbits, suffix, None if bias is None else int(bias), flush is None,
                       unsigned=bool(u))
    except FormatError as err:
        raise FormatError(f"impossible format {spec!r}: {err}; {valid_forms()}") from None
    return fmt
