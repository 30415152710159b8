"""Running a candidate (the exact oracle or the golden model) and comparing it with a reference.

One comparison helper serves every test, so the test that proves comparisons can fail
(tests/golden/test_golden_compare_can_fail.py) exercises the same code the real tests use.
"""

from __future__ import annotations

import numpy as np
import pytest

from fpforge.rtl.formats import FloatFormat
from fpforge.rtl.format_names import resolve

from . import exact

FLAG_NAMES = ("NX", "UF", "OF", "DZ", "NV")


def flag_text(flags: int) -> str:
    names = [n for i, n in enumerate(FLAG_NAMES) if flags >> i & 1]
    return "|".join(reversed(names)) or "-"


def code_text(code: int, fmt: FloatFormat) -> str:
    fmt = resolve(fmt)
    digits = (fmt.width + 3) // 4
    try:
        value = fmt.code_value(int(code))
    except Exception as err:                      # a code that does not fit: say so
        return f"{int(code):#0{digits + 2}x} (invalid: {err})"
    cls = fmt.classify(int(code))
    shown = cls if cls in ("nan", "snan") else (
        str(value) if not hasattr(value, "denominator") or value.denominator == 1
        else f"{value} ~ {float(value):.6g}")
    return f"{int(code):#0{digits + 2}x} ({shown})"


def uint_dtype(fmt: FloatFormat):
    w = resolve(fmt).width
    return np.uint8 if w <= 8 else np.uint16 if w <= 16 else np.uint32


def is_nan_code(codes, fmt) -> np.ndarray:
    fmt = resolve(fmt)
    return np.array([fmt.classify(int(c)) in ("nan", "snan") for c in np.ravel(codes)],
                    bool).reshape(np.shape(codes))


def mismatches(expected, got, fmt_out, operands, *, flags=True, nan="exact", extra=None):
    """Describe every element where ``got`` differs from ``expected``.

    expected/got: (codes, flags) pairs (flags may be None when a reference has none).
    operands: list of (name, codes, fmt). nan: "exact" compares NaN codes bit for bit (the golden
    NaN policy: one canonical NaN), "both" accepts any NaN for a NaN (a reference with another
    payload policy). flags: True compares all five bits, an int compares only those bits.
    extra: optional dict name -> array printed with each mismatch (rm, rbits).
    """
    fmt_out = resolve(fmt_out)
    e_codes = np.asarray(expected[0]).astype(np.int64).ravel()
    g_codes = np.asarray(got[0]).astype(np.int64).ravel()
    if e_codes.shape != g_codes.shape:
        return [f"shape mismatch: expected {e_codes.shape}, got {g_codes.shape}"]
    bad = e_codes != g_codes
    if nan == "both":
        both = is_nan_code(e_codes, fmt_out) & is_nan_code(g_codes & ((1 << fmt_out.width) - 1),
                                                            fmt_out)
        bad &= ~both
    mask = 0x1F if flags is True else int(flags or 0)
    if mask and expected[1] is not None:
        e_flags = np.asarray(expected[1]).astype(np.int64).ravel()
        g_flags = np.asarray(got[1]).astype(np.int64).ravel()
        bad |= (e_flags & mask) != (g_flags & mask)
    else:
        e_flags = g_flags = None
    out = []
    for i in np.flatnonzero(bad):
        ops = ", ".join(f"{name}={code_text(np.ravel(c)[i], f)}" for name, c, f in operands)
        if extra:
            ops += "".join(f", {k}={int(np.ravel(v)[i])}" for k, v in extra.items())
        line = f"{ops}: expected {code_text(e_codes[i], fmt_out)}"
        if e_flags is not None:
            line += f" [{flag_text(e_flags[i])}]"
        line += f", got {code_text(g_codes[i], fmt_out)}"
        if g_flags is not None:
            line += f" [{flag_text(g_flags[i])}]"
        out.append(line)
    return out


def assert_match(expected, got, fmt_out, operands, *, label="", flags=True, nan="exact",
                 extra=None, show=25):
    bad = mismatches(expected, got, fmt_out, operands, flags=flags, nan=nan, extra=extra)
    if bad:
        n = np.asarray(expected[0]).size
        pytest.fail(f"{label}: {len(bad)} of {n} results differ (first {min(show, len(bad))}):\n"
                    + "\n".join(bad[:show]), pytrace=False)


# ----- candidates: the same call for the oracle and the golden model -------------------------

def oracle_apply(op, *operands, fmts, rounding="rne", saturate=False, rm=None, rbits=None,
                 sr_bits=8):
    return exact.apply(op, *operands, fmts=fmts, rounding=rounding, saturate=saturate, rm=rm,
                       rbits=rbits, sr_bits=sr_bits)


def golden_module():
    from fpforge import golden
    return golden


def golden_apply(op, *operands, fmts, rounding="rne", saturate=False, rm=None, rbits=None,
                 sr_bits=8):
    golden = golden_module()
    ops = [np.asarray(o).astype(uint_dtype(f)) for o, f in zip(operands, fmts)]
    # ``saturate`` is the bool switch, or the name of a P3109 saturation mode.
    sat = {"saturation": saturate} if isinstance(saturate, str) else {"saturate": saturate}
    kw = dict(rounding=rounding, sr_bits=sr_bits, **sat)
    if rm is not None:
        kw["rm"] = np.broadcast_to(np.asarray(rm, np.uint8), ops[0].shape).copy()
    if rbits is not None:
        kw["rbits"] = np.broadcast_to(np.asarray(rbits, np.uint32), ops[0].shape).copy()
    if op == "convert":
        y, f = golden.convert(ops[0], fmts[0], fmts[1], **kw)
    elif op == "fma":
        y, f = golden.fma(*ops, *fmts, **kw)
    else:
        y, f = getattr(golden, op)(*ops, *fmts, **kw)
    return np.asarray(y).astype(np.int64), np.asarray(f).astype(np.int64)


CANDIDATES = {"oracle": oracle_apply, "golden": golden_apply}


def operand_names(op):
    return {"convert": ("x",), "fma": ("a", "b", "c")}.get(op, ("a", "b"))


def check_candidate(candidate, op, operands, fmts, expected, *, label, flags=True, nan="exact",
                    rounding="rne", saturate=False, rm=None, rbits=None, sr_bits=8):
    """Run one candidate on the operands and compare it with ``expected``."""
    got = CANDIDATES[candidate](op, *operands, fmts=fmts, rounding=rounding, saturate=saturate,
                                rm=rm, rbits=rbits, sr_bits=sr_bits)
    extra = {}
    if rm is not None:
        extra["rm"] = np.broadcast_to(rm, np.shape(operands[0]))
    if rbits is not None:
        extra["rbits"] = np.broadcast_to(rbits, np.shape(operands[0]))
    assert_match(expected, got, fmts[-1],
                 list(zip(operand_names(op), operands, fmts[:len(operands)])),
                 label=f"{candidate} {label}", flags=flags, nan=nan, extra=extra or None)
