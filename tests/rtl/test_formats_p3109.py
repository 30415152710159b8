"""The IEEE P3109 formats in the catalog: their names, their encodings, and every code of every
P3109 format the catalog admits against the working group's value tables and against gfloat.

The tables are the P3109 Interim Report v4.0's (``shared/p3109-value-tables`` beside the
repository, or ``FPFORGE_P3109_TABLES``). Without them the table tests skip and say why, except
under ``CI=true``, where they fail: CI must check every code.
"""

from __future__ import annotations

import csv
import os
from fractions import Fraction
from pathlib import Path

import pytest

from fpforge.rtl.formats import CATALOG, FloatFormat, FormatError, Specials
from fpforge.rtl.format_names import p3109, resolve

from oracles import exact

ROOT = Path(__file__).resolve().parents[2]
TABLES = Path(os.environ.get("FPFORGE_P3109_TABLES", ROOT.parent / "shared" / "p3109-value-tables"))
# The formats of the tables that need more than the catalog's 8 exponent bits.
TOO_WIDE = {"Binary10p1se", "Binary10p1sf", "Binary10p1ue", "Binary10p1uf", "Binary10p2ue",
            "Binary10p2uf", "Binary9p1ue", "Binary9p1uf"}


def table_files() -> list[Path]:
    if TABLES.is_dir():
        return sorted(TABLES.glob("Binary*.csv"))
    reason = f"the P3109 value tables are not at {TABLES} (set FPFORGE_P3109_TABLES)"
    if os.environ.get("CI") == "true":
        pytest.fail(reason + "; CI must check every P3109 code", pytrace=False)
    pytest.skip(reason)


def read_table(path: Path) -> list[tuple[int, str, bool]]:
    with path.open(newline="") as f:
        return [(int(r["codepoint"], 16), r["value"].strip(), r["subnormal"].strip() == "*")
                for r in csv.DictReader(f)]


def table_value(text: str):
    """A table value: a Fraction, or 'nan', '+inf', '-inf'."""
    if text == "NaN":
        return "nan"
    if text in ("Inf", "-Inf"):
        return "-inf" if text.startswith("-") else "+inf"
    return Fraction(float.fromhex(text))      # every value is exact in binary64


def catalog_value(fmt: FloatFormat, code: int):
    cls = fmt.classify(code)
    if cls == "nan":
        return "nan"
    if cls == "inf":
        return "-inf" if code & fmt.sign_mask else "+inf"
    return Fraction(fmt.code_value(code))


def test_tables_are_all_there():
    files = table_files()
    names = {p.stem for p in files}
    # Every K from 3 to 10 (signed P = 1..K-1, unsigned P = 1..K; e and f), and four 16-bit.
    expected = {f"Binary{k}p{p}{s}{d}" for k in range(3, 11) for s, top in (("s", k - 1),
                                                                          ("u", k))
                for p in range(1, top + 1) for d in "ef"}
    expected |= {"Binary16p8se", "Binary16p8sf", "Binary16p11se", "Binary16p11sf"}
    assert names == expected


def test_every_code_of_every_table_decodes_as_the_table_says():
    checked = 0
    for path in table_files():
        name = path.stem
        if name in TOO_WIDE:
            with pytest.raises(FormatError, match="exponent bits; at most 8 are supported"):
                resolve(name)
            continue
        fmt = resolve(name)
        rows = read_table(path)
        assert fmt.p3109_name == name and len(rows) == 1 << fmt.width, name
        for code, text, subnormal in rows:
            assert catalog_value(fmt, code) == table_value(text), f"{name} {code:#x}"
            assert (fmt.classify(code) == "subnormal") == subnormal, f"{name} {code:#x}"
            checked += 1
    assert checked > 300_000          # 188 formats, 4 of them 16 bits wide


def test_every_table_value_encodes_to_its_code():
    """Projection of each value into its own format (exact, any rounding) gives its code back:
    the oracle's encoder, written from the report's Encode (4.7.6)."""
    for path in table_files():
        if path.stem in TOO_WIDE or path.stem.startswith("Binary16"):
            continue
        fmt = resolve(path.stem)
        for code, text, _ in read_table(path):
            value = table_value(text)
            if value == "nan":
                assert fmt.nan_code == code
                continue
            x = {"+inf": float("inf"), "-inf": float("-inf")}.get(value, value)
            got, flags = exact.convert_float(float(x), fmt, saturation="none")
            assert (got, flags) == (code, 0), f"{path.stem} {code:#x} {text}"


def test_names_and_equivalences():
    # Equal formats are one format: the catalog's name is printed, the P3109 name described.
    assert resolve("binary8p4sf") is CATALOG["float8_e4m3fnuz"] or \
        resolve("binary8p4sf") == CATALOG["float8_e4m3fnuz"]
    assert resolve("Binary8p3sf") == CATALOG["float8_e5m2fnuz"]
    assert resolve("binary8p4sf").name == "float8_e4m3fnuz"
    assert "= P3109 Binary8p4sf" in resolve("float8_e4m3fnuz").describe()
    # One canonical name for the rest; gfloat's spelling reads the same.
    fmt = resolve("p3109_k8p3se")
    assert fmt == resolve("binary8p3se") == p3109(8, 3, signed=True, extended=True)
    assert str(fmt) == fmt.name == "Binary8p3se" and fmt.generic_name == "e5m2ext"
    assert resolve(fmt.generic_name) == fmt and resolve(fmt.name) == fmt
    assert resolve("binary8p3uf").generic_name == "ue6m2fn_b32"
    assert resolve("ue6m2fn_b32") == resolve("binary8p3uf")
    # Not the OCP formats of the same shape.
    assert resolve("binary4p2sf") != CATALOG["float4_e2m1fn"]
    assert resolve("binary4p2sf").max_finite == 3 and CATALOG["float4_e2m1fn"].max_finite == 6
    scale, e8m0 = resolve("binary8p1uf"), CATALOG["float8_e8m0fnu"]
    assert scale != e8m0 and scale.has_zero and not e8m0.has_zero
    # Binary8p1uf's code k + 1 is E8M0's code k: its codes are shifted by one.
    assert all(scale.code_value(k + 1) == e8m0.code_value(k) for k in range(0, 254))


@pytest.mark.parametrize("name, facts", [
    ("binary8p3se", dict(width=8, exp_bits=5, man_bits=2, bias=16, nan_code=0x80, inf_code=0x7F,
                         max_finite=49152, signed=True, has_neg_zero=False)),
    ("binary8p4se", dict(exp_bits=4, man_bits=3, bias=8, max_finite=224, inf_code=0x7F)),
    ("binary8p1ue", dict(exp_bits=8, man_bits=0, bias=128, nan_code=0xFF, inf_code=0xFE,
                         max_finite=Fraction(2) ** 125, signed=False, has_zero=True)),
    ("binary8p3ue", dict(exp_bits=6, man_bits=2, bias=32, nan_code=0xFF, inf_code=0xFE,
                         max_finite_code=0xFD)),
    ("binary8p8uf", dict(exp_bits=1, man_bits=7, bias=1, nan_code=0xFF, has_inf=False,
                         max_finite_code=0xFE)),
    ("binary3p2se", dict(width=3, exp_bits=1, man_bits=1, bias=1, nan_code=0b100,
                         inf_code=0b011, max_finite=1)),
])
def test_encodings(name, facts):
    fmt = resolve(name)
    for key, value in facts.items():
        assert getattr(fmt, key) == value, key


def test_describe_states_the_encodings():
    assert resolve("binary8p3se").describe() == (
        "Binary8p3se (E5M2, 8 bits, bias 16, max 49152, min normal 2^-15, inf, NaN: sign-only "
        "code, inf: all-ones magnitude, no -0, subnormals)")
    assert resolve("binary8p1uf").describe() == (
        "Binary8p1uf (E8M0, 8 bits, bias 128, max 2^126, min normal 2^-127, no inf, NaN: "
        "all-ones code, unsigned, gradual underflow to 0 or 2^emin)")


@pytest.mark.parametrize("spelled, message", [
    ("binary10p1se", "P3109 format binary10p1se has 9 exponent bits; at most 8 are supported"),
    ("binary2p1se", "P3109 format binary2p1se: needs K >= 3 and 1 <= P <= K-1 (signed)"),
    ("binary8p9ue", "P3109 format binary8p9ue: needs K >= 3 and 1 <= P <= K (unsigned)"),
    ("ue4m3fnuz", "format ue4m3fnuz: unsigned formats take the fn, ext or fnu convention, "
                  "not fnuz"),
])
def test_impossible_p3109_spellings(spelled, message):
    with pytest.raises(FormatError) as err:
        resolve(spelled)
    text = str(err.value)
    assert text.startswith(f"impossible format {spelled!r}: {message}; valid: ")
    assert "binary<K>p<P><s|u><e|f>" in text and "\n" not in text


def test_constructor_refuses_a_signless_convention_that_needs_a_sign():
    with pytest.raises(FormatError, match="^format ue4m3: unsigned formats take the fn, ext or "
                                          "fnu convention, not ieee$"):
        FloatFormat(4, 3, 7, Specials.IEEE, unsigned=True)
    with pytest.raises(FormatError, match="^unsigned must be a bool, not 1$"):
        FloatFormat(4, 3, 7, Specials.FN, True, 1)


# ----- gfloat: an independent implementation of the formats ------------------------------------

def _gfloat_info(fmt: FloatFormat):
    gf = pytest.importorskip("gfloat", reason="gfloat (the dev extra) is not installed")
    from gfloat.formats import format_info_p3109
    from gfloat.types import Domain, Signedness
    k, p = fmt.width, fmt.precision
    return gf, format_info_p3109(k, p, Signedness.Signed if fmt.signed else Signedness.Unsigned,
                                 Domain.Extended if fmt.has_inf else Domain.Finite)


P3109_8BIT = [f"binary8p{p}{s}{d}" for s, top in (("s", 7), ("u", 8)) for p in range(1, top + 1)
              for d in "ef"]


@pytest.mark.parametrize("name", P3109_8BIT + ["binary4p2sf", "binary3p2se", "binary6p3ue",
                                               "binary16p11se"])
def test_every_code_against_gfloat(name):
    fmt = resolve(name)
    gf, fi = _gfloat_info(fmt)
    assert float(fmt.max_finite) == fi.max
    assert float(fmt.min_subnormal) == fi.smallest
    for code in range(1 << fmt.width):
        got = gf.decode_float(fi, code).fval
        want = catalog_value(fmt, code)
        if want == "nan":
            assert got != got, f"{name} {code:#x}"
        else:
            want = {"+inf": float("inf"), "-inf": float("-inf")}.get(want, want)
            assert got == float(want), f"{name} {code:#x}"
