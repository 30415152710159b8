"""Regression tests named after the disagreements the cross-validation found (issue 2).

Each compares the golden model with SoftFloat *and* the exact oracle on the reported operands.
"""

from __future__ import annotations

import numpy as np
import pytest

from oracles import exact
from oracles.compare import check_candidate
from oracles.references import softfloat_apply


@pytest.mark.parametrize("reference", ["softfloat", "oracle"])
def test_float32_mul_overflow_just_past_max_is_inf(reference):
    # max-ish * 2.0000002: the exponent overflows by one after the significand carry.
    a = np.array([0x7F7FFFFE, 0xFF7FFFFE, 0x40000001, 0xC0000001, 0x7F7FFFFF, 0x7F000000])
    b = np.array([0x40000001, 0x40000001, 0xFF7FFFFE, 0x7F7FFFFE, 0x3F800001, 0x7F000000])
    fmts = ("float32",) * 3
    for mode in ("rne", "rtz", "rdn", "rup", "rna"):
        expected = softfloat_apply("mul", a, b, fmts=fmts, rounding=mode) \
            if reference == "softfloat" else exact.apply("mul", a, b, fmts=fmts, rounding=mode)
        check_candidate("golden", "mul", (a, b), fmts, expected, rounding=mode,
                        label=f"float32 mul overflow {mode} vs {reference}")


@pytest.mark.parametrize("name", ["float16", "float32"])
@pytest.mark.parametrize("reference", ["softfloat", "oracle"])
def test_fma_with_an_infinite_operand_raises_no_flags(name, reference):
    # A finite product plus an infinite c (or an infinite product plus a finite c) is an exact
    # infinity: no inexact / underflow / overflow from the finite part.
    tiny, big, one = {"float16": (0x0001, 0x7BFF, 0x3C01),
                      "float32": (0x00000001, 0x7F7FFFFF, 0x3F800001)}[name]
    inf = {"float16": 0x7C00, "float32": 0x7F800000}[name]
    sign = 1 << (16 if name == "float16" else 32) - 1
    a = np.array([tiny, big, one, inf, inf | sign, one])
    b = np.array([tiny, big, one, one, tiny, big])
    c = np.array([inf, inf | sign, inf, one, big, inf | sign])
    fmts = (name,) * 4
    expected = softfloat_apply("fma", a, b, c, fmts=fmts) if reference == "softfloat" \
        else exact.apply("fma", a, b, c, fmts=fmts)
    check_candidate("golden", "fma", (a, b, c), fmts, expected,
                    label=f"fma {name} infinite operand vs {reference}", nan="both")
