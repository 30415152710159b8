"""Format names as users type them, resolved to a :class:`~fpforge.rtl.formats.FloatFormat`.

Four spellings reach the same formats: the catalog's (ml_dtypes') names, the short names
(``fp8e4m3``), the generic grammar ``[u]e<E>m<M>[suffix][_b<bias>][_ftz]`` and the P3109 family
``binary<K>p<P><s|u><e|f>``. Every refusal is one line that lists the valid forms. Plain Python,
like rtl/formats.py beneath it.
"""

from __future__ import annotations

import re

from .formats import (AMBIGUOUS_SPELLINGS, CATALOG, MAX_EXP_BITS, FloatFormat, FormatError,
                      Specials, catalog_formats, default_bias, format_value)

__all__ = ["SHORT_NAMES", "GRAMMAR", "P3109_SOURCE", "P3109_CONFORMANCE", "p3109", "resolve",
           "valid_forms", "catalog_selection"]

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

# Grammar of the generic spelling; kept beside the parser so the error message and it agree.
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


def _generic(e: int, m: int, suffix: str | None, bias: int | None = None,
             subnormals: bool = True, unsigned: bool = False) -> FloatFormat:
    specials = _SUFFIX[suffix]
    return FloatFormat(e, m, default_bias(e, specials) if bias is None else bias, specials,
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


def _ambiguous(spelled: str, tail: str, ftz: bool) -> FormatError:
    """Both readings of an ambiguous spelling, and how to spell each."""
    flush = "_ftz" if ftz else ""
    ml = AMBIGUOUS_SPELLINGS[tail]
    grammar = _generic(ml.exp_bits, ml.man_bits, "fn", subnormals=not ftz)
    spellings = [ml.name + flush, *(s + flush for s, n in SHORT_NAMES.items() if n == ml.name),
                 ml.with_subnormals(not ftz).generic_name]
    return FormatError(
        f"ambiguous format {spelled!r}: ml_dtypes' {ml.name} is finite (no inf, no NaN, max "
        f"{format_value(ml.max_finite)}: spell it {', '.join(spellings[:-1])} or {spellings[-1]}), "
        f"while the generic grammar's fn has NaN at the all-ones code (max "
        f"{format_value(grammar.max_finite)}: spell it {grammar.generic_name})")


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
    if bias is None and tail in AMBIGUOUS_SPELLINGS and not u:
        raise _ambiguous(spec, tail, flush is not None)
    try:
        fmt = _generic(e, mbits, suffix, None if bias is None else int(bias), flush is None,
                       unsigned=bool(u))
    except FormatError as err:
        raise FormatError(f"impossible format {spec!r}: {err}; {valid_forms()}") from None
    return fmt
