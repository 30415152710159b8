"""(c) Arbitrary ExMy formats, generic spellings and mixed operand formats, in rne and the directed
modes, against MPFR (gmpy2: precision M+1, emin/emax of the format, subnormalize).

MPFR's overflow model (whole top binade finite, inf past it) fits IEEE-style outputs only; for
fn / fnuz / fin outputs the results MPFR rounds past max_finite are left to the exact oracle.
"""

from __future__ import annotations

import numpy as np
import pytest

from oracles.compare import check_candidate
from oracles.references import mpfr_apply
from oracles.vectors import binary_vectors, corner_codes, pairs, random_codes, triples
from fpforge.rtl.format_names import resolve

MODES = ["rne", "rtz", "rup", "rdn"]
CANDIDATES = ["oracle", "golden"]

# (op, operand formats..., output format)
CASES = [
    ("mul", "e5m3", "e5m3", "e5m3"),
    ("add", "e5m3", "e5m3", "e5m3"),
    ("mul", "e4m4", "e4m4", "e4m4"),
    ("add", "e3m2", "e3m2", "e3m2"),
    ("mul", "e6m1_b20", "e6m1_b20", "e6m1_b20"),
    ("add", "e2m4", "e2m4", "e2m4"),
    ("mul", "e3m2fn_b3", "e3m2fn_b3", "e3m2fn_b3"),   # NaN at all-ones (not float6_e3m2fn)
    ("add", "e5m2fnuz", "e5m2fnuz", "e5m2fnuz"),
    ("mul", "e4m3fn", "e5m2", "e5m3"),
    ("add", "e4m3fn", "e5m2", "e6m4"),
    ("mul", "e4m3", "e4m3", "fp16"),
    ("sub", "e5m6", "e5m6", "e5m6"),
    ("fma", "e5m3", "e5m3", "e5m3", "e5m3"),
    ("fma", "e4m3fn", "e4m3fn", "e5m6", "e5m6"),
    ("convert", "fp16", "e5m3"),
    ("convert", "fp32", "e6m5"),
    ("convert", "bf16", "e4m3_b4"),
    ("convert", "e5m6", "e3m2fin"),
]


DEFAULT_CASES = {0, 1, 6, 8, 12, 14, 17}      # the rest run under -m slow


def _id(case):
    return f"{case[0]}-" + "-".join(case[1:-1]) + f"-to-{case[-1]}"


def _operands(case, candidate):
    op, fmts = case[0], case[1:]
    n = 700 if candidate == "oracle" else 3000
    if op == "convert":
        return (np.concatenate([np.array(corner_codes(fmts[0])), random_codes(fmts[0], n, 61)]),)
    if op == "fma":
        corners = np.concatenate([corner_codes(fmts[0]), random_codes(fmts[0], 40, 62)])
        a, b, c = triples(corners, n, 63)
        return a, b, random_codes(fmts[2], n, 64) if fmts[2] != fmts[0] else c
    if fmts[0] == fmts[1]:
        return binary_vectors(fmts[0], n, 65)
    ca, cb = pairs(corner_codes(fmts[0]), corner_codes(fmts[1]))
    return (np.concatenate([ca, random_codes(fmts[0], n, 66)]),
            np.concatenate([cb, random_codes(fmts[1], n, 67)]))


def _finite(codes, fmt):
    fmt = resolve(fmt)
    return np.array([fmt.classify(int(c)) in ("zero", "subnormal", "normal") for c in codes])


@pytest.mark.parametrize("candidate, mode", [
    pytest.param(c, m, id=f"{m}-{c}",
                 marks=pytest.mark.slow if c == "oracle" and m != "rdn" else ())
    for m in MODES for c in CANDIDATES])
@pytest.mark.parametrize("case", [
    pytest.param(c, id=_id(c), marks=() if i in DEFAULT_CASES else pytest.mark.slow)
    for i, c in enumerate(CASES)])
def test_against_mpfr(case, mode, candidate):
    op, fmts = case[0], case[1:]
    operands = _operands(case, candidate)
    keep = np.ones(operands[0].size, bool)
    for o, f in zip(operands, fmts):
        keep &= _finite(o, f)                    # specials: SoftFloat and the oracle cover them
    operands = tuple(o[keep] for o in operands)
    codes, flags, covered = mpfr_apply(op, *operands, fmts=fmts, rounding=mode)
    assert covered.mean() > 0.5, "the sample hardly reaches MPFR's range"
    operands = tuple(o[covered] for o in operands)
    check_candidate(candidate, op, operands, fmts, (codes[covered], flags[covered]),
                    rounding=mode, label=f"{_id(case)} {mode} vs MPFR")
