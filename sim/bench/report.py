"""Mismatch reports: operands and results decoded, with the rounding mode and the options.

One line per mismatching vector, e.g.::

    #1234 a=0x3c01 (+1.000977, normal) b=0x1400 (+0.0009766, normal) rm=rne
        expected y=0x3c02 (+1.001953, normal) flags=NX    got y=0x3c01 (+1.000977, normal) flags=NX
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from rtl.formats import FloatFormat
from rtl.options import FLAG_ORDER, Flag
from rtl.spec import UnitSpec

__all__ = ["describe_code", "describe_flags", "mismatch_lines", "RM_NAMES", "bit_exact"]

RM_NAMES = {0: "rne", 1: "rtz", 2: "rdn", 3: "rup", 4: "rna", 5: "rne(reserved 5)",
            6: "rne(reserved 6)", 7: "rne(reserved 7)"}
_FLAG_SHORT = [(Flag.NV, "NV"), (Flag.DZ, "DZ"), (Flag.OF, "OF"), (Flag.UF, "UF"),
               (Flag.NX, "NX")]


def bit_exact(exp_y, exp_flags, got_y, got_flags) -> np.ndarray:
    """The benches' compare: codes and flags identical (the golden NaN policy gives exact NaN
    codes, so NaNs compare by code too). Returns the mismatch mask."""
    return (np.asarray(exp_y, np.uint32) != np.asarray(got_y, np.uint32)) | \
        (np.asarray(exp_flags, np.uint32) != np.asarray(got_flags, np.uint32))


def _value(v) -> str:
    if isinstance(v, Fraction):
        if v == 0:
            return "+0"
        f = float(v)
        return f"{f:+.7g}" if f != 0 else f"{'+' if v > 0 else '-'}{abs(v)}"
    if v == 0:   # -0.0
        return "-0"
    return f"{v:+}" if v == v else "NaN"


def describe_code(fmt: FloatFormat, code: int) -> str:
    """``0x3c00 (+1, normal)``."""
    digits = (fmt.width + 3) // 4
    code = int(code)
    if code == 0xFFFFFFFF:
        return "x/z (undefined bits)"
    if not 0 <= code < (1 << fmt.width):
        return f"0x{code:0{digits}x} (out of range for {fmt.name})"
    return f"0x{code:0{digits}x} ({_value(fmt.code_value(code))}, {fmt.classify(code)})"


def describe_flags(flags: int) -> str:
    if int(flags) == 0xFFFFFFFF:
        return "x/z"
    names = [s for f, s in _FLAG_SHORT if int(flags) & f]
    return "|".join(names) if names else "-"


def mismatch_lines(spec: UnitSpec, inputs: dict[str, np.ndarray], exp_y, exp_flags, got_y,
                   got_flags, index, limit: int) -> list[str]:
    """Decoded lines for the first ``limit`` mismatches; ``index`` is each vector's number in
    the run (to rerun or find it)."""
    lines = []
    for i in range(min(limit, len(index))):
        parts = [f"#{int(index[i])}"]
        for op, fmt in zip(spec.operands, spec.in_fmts):
            parts.append(f"{op}={describe_code(fmt, inputs[op][i])}")
        parts.append(f"rm={RM_NAMES[int(inputs['rm'][i])]}" if "rm" in inputs
                     else f"rounding={spec.rounding.value}")
        if "rbits" in inputs:
            parts.append(f"rbits=0x{int(inputs['rbits'][i]):x}")
        lines.append(" ".join(parts))
        lines.append(f"    expected y={describe_code(spec.out_fmt, exp_y[i])} "
                     f"flags={describe_flags(exp_flags[i])}    "
                     f"got y={describe_code(spec.out_fmt, got_y[i])} "
                     f"flags={describe_flags(got_flags[i])}")
    return lines


def header(spec: UnitSpec) -> str:
    return (f"{spec.default_name}: {spec.describe()}\n    formats: " +
            "; ".join(f"{op}: {f.describe()}" for op, f in
                      zip(spec.operands + ("y",), spec.in_fmts + (spec.out_fmt,))) +
            f"\n    flags[4:0] = {{{', '.join(FLAG_ORDER)}}}")
