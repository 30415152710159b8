"""(f) Properties of rounding float32 into narrow formats, for any input hypothesis finds:
monotonic in the input, sign-symmetric for rne/rtz/rna, exact values round-trip in every mode
with no flags, and rdn(x) <= x <= rup(x). Runs on both candidates; derandomized (fixed seed)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from oracles.compare import CANDIDATES
from fpforge.rtl.format_names import resolve

# The oracle satisfies these by construction; it runs them under -m slow only.
CANDS = ["golden", pytest.param("oracle", marks=pytest.mark.slow)]
SETTINGS = settings(max_examples=25, deadline=None, derandomize=True, database=None)
F32 = st.floats(width=32, allow_nan=False, allow_infinity=True, allow_subnormal=True)


BATCH = 64    # one array shape for every example: the golden model compiles once per shape


def _run_padded(candidate, bits, name, mode, **kw):
    n = len(bits)
    padded = np.zeros(BATCH, np.int64)
    padded[:n] = bits
    kw = {k: (np.resize(v, BATCH) if isinstance(v, np.ndarray) else v) for k, v in kw.items()}
    codes, flags = CANDIDATES[candidate]("convert", padded, fmts=("float32", name),
                                         rounding=mode, **kw)
    return np.asarray(codes)[:n], np.asarray(flags)[:n]


def _convert(candidate, x, name, mode, saturate=False):
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.int64)
    return _run_padded(candidate, bits, name, mode, saturate=saturate)


def _value(code, fmt):
    v = fmt.code_value(int(code))
    return v if isinstance(v, float) else Fraction(v)


MONOTONE = [("float8_e5m2", False), ("float8_e4m3fn", True), ("float4_e2m1fn", False),
            ("e3m2_ftz", False), ("float6_e2m3fn", False)]


@pytest.mark.parametrize("candidate", CANDS)
@pytest.mark.parametrize("mode", ["rne", "rtz", "rdn", "rup", "rna", "rod"])
@pytest.mark.parametrize("name, sat", MONOTONE, ids=[n + ("-sat" if s else "") for n, s in MONOTONE])
@SETTINGS
@given(xs=st.lists(F32, min_size=2, max_size=BATCH))
def test_monotonic(candidate, name, sat, mode, xs):
    fmt = resolve(name)
    x = np.sort(np.array(xs, np.float32))
    codes, _ = _convert(candidate, x, name, mode, sat)
    values = [_value(c, fmt) for c in codes]
    for lo, hi, xl, xh in zip(values, values[1:], x, x[1:]):
        assert lo <= hi, f"{xl!r} -> {lo} but {xh!r} -> {hi} ({name} {mode})"


@pytest.mark.parametrize("candidate", CANDS)
@pytest.mark.parametrize("mode", ["rne", "rtz", "rna"])
@pytest.mark.parametrize("name", ["float8_e5m2", "float8_e4m3fn", "float6_e2m3fn", "e5m3"])
@SETTINGS
@given(xs=st.lists(F32, min_size=1, max_size=BATCH))
def test_sign_symmetric(candidate, name, mode, xs):
    fmt = resolve(name)
    x = np.array(xs, np.float32)
    pos, fp = _convert(candidate, x, name, mode)
    neg, fn = _convert(candidate, -x, name, mode)
    for xi, p, n in zip(x, pos, neg):
        vp, vn = _value(p, fmt), _value(n, fmt)
        if vp != vp:                              # NaN: canonical, unsigned
            assert n == p, (xi, hex(p), hex(n))
        else:
            assert vn == -vp, (xi, vp, vn)
    assert np.array_equal(fp, fn)


@pytest.mark.parametrize("candidate", CANDS)
@pytest.mark.parametrize("name", ["float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "e5m3_ftz",
                                  "float4_e2m1fn", "e6m9"])
@SETTINGS
@given(data=st.data())
def test_exact_values_round_trip_in_every_mode(candidate, name, data):
    fmt = resolve(name)
    codes = data.draw(st.lists(st.integers(0, (1 << fmt.width) - 1), min_size=1, max_size=BATCH))
    codes = [c for c in codes if fmt.classify(c) in ("normal", "subnormal", "zero")]
    if not codes:
        return
    x = np.array([float(fmt.code_value(c)) for c in codes], np.float32)
    for mode in ("rne", "rtz", "rdn", "rup", "rna", "rod", "stochastic"):
        kw = {}
        bits = x.view(np.uint32).astype(np.int64)
        if mode == "stochastic":
            kw["rbits"] = np.full(len(codes), 0xFF)
        got, flags = _run_padded(candidate, bits, name, mode, **kw)
        # Zeros (and, when flushing, subnormal encodings) come back as the signed zero.
        want = [(c & fmt.sign_mask if fmt.has_neg_zero else 0) if fmt.classify(c) == "zero"
                else c for c in codes]
        assert list(np.asarray(got)) == want, mode
        assert not np.any(flags), mode


@pytest.mark.parametrize("candidate", CANDS)
@pytest.mark.parametrize("name", ["float8_e5m2", "float8_e3m4", "float16", "e5m3", "e4m2_ftz"])
@SETTINGS
@given(xs=st.lists(F32, min_size=1, max_size=BATCH))
def test_rdn_below_rup_above(candidate, name, xs):
    fmt = resolve(name)
    x = np.array(xs, np.float32)
    down, _ = _convert(candidate, x, name, "rdn")
    up, _ = _convert(candidate, x, name, "rup")
    for xi, d, u in zip(x, down, up):
        vd, vu = _value(d, fmt), _value(u, fmt)
        exact_x = float(xi) if np.isinf(xi) else Fraction(float(xi))
        if fmt.subnormals:
            assert vd <= exact_x <= vu, (xi, vd, vu)
        else:
            # Flushing: a tiny result becomes zero whatever the direction (numerics.md 5).
            assert vd <= exact_x or vd == 0, (xi, vd)
            assert exact_x <= vu or vu == 0, (xi, vu)
