"""What an MX unit must produce (the golden model, golden/mx.py) and how a result is judged.

Free of cocotb, like :mod:`sim.bench.checking`: :func:`expected` turns stimulus rows (see
:mod:`sim.bench.mx_stimulus`) into ``{output port: (vectors, count) uint32}``, and
:class:`MxChecker` compares the unit's rows with them in order, port by port, bit for bit.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

from rtl.formats import CATALOG
from sim.bench.packing import UNDEFINED
from sim.bench.report import describe_code, describe_flags

__all__ = ["expected", "output_formats", "MxChecker"]


def expected(spec, inputs: dict) -> dict[str, np.ndarray]:
    """The golden model's outputs for ``inputs``, one (vectors, count) uint32 array per port."""
    import golden   # here: only the reference needs JAX
    if spec.unit == "mxq":
        x = inputs["x"]
        x = x.astype(np.uint16).view(ml_dtypes.bfloat16) if spec.in_fmt.name == "bfloat16" \
            else x.view(np.float32)
        scale, y, flags = golden.mx_quantize(
            x, spec.elem, block=spec.block, scale_rule=spec.scale_rule,
            rounding=spec.rounding.value, rbits=inputs.get("rbits"), sr_bits=spec.sr_bits,
            return_flags=True)
        # the unit reports the block's element flags ORed
        flags = np.bitwise_or.reduce(np.asarray(flags), axis=-1)[:, None]
        out = {"scale": scale, "y": y, "flags": flags}
    elif spec.unit == "mxdq":
        y = golden.mx_dequantize(inputs["scale"].astype(np.uint8), inputs["x"].astype(np.uint8),
                                 spec.elem, block=spec.block)
        out = {"y": np.asarray(y).view(np.uint32)}
    else:
        kw = dict(scales_a=inputs["scale_a"][:, 0].astype(np.uint8),
                  scales_b=inputs["scale_b"][:, 0].astype(np.uint8)) if spec.scaled else {}
        y, flags = golden.mx_dot(inputs["a"].astype(np.uint8), inputs["b"].astype(np.uint8),
                                 spec.elem_a, spec.elem_b, accum=spec.accum,
                                 frac_bits=spec.frac_bits, out_fmt=spec.out_fmt.name,
                                 rounding=spec.rounding.value, **kw)
        out = {"y": np.asarray(y)[:, None], "flags": np.asarray(flags)[:, None]}
    return {p: np.asarray(v).astype(np.uint32) for p, v in out.items()}


def output_formats(spec) -> dict:
    """The format each output port's codes decode in (None: flags, or MXINT8's two's
    complement, shown in hex only)."""
    if spec.unit == "mxq":
        elem = None if spec.elem.twos_complement else spec.elem.grid
        return {"scale": CATALOG["float8_e8m0fnu"], "y": elem, "flags": None}
    return {"y": spec.out_fmt} if spec.unit == "mxdq" else {"y": spec.out_fmt, "flags": None}


def _hex_row(row: np.ndarray, width: int) -> str:
    digits = (width + 3) // 4
    codes = [f"0x{int(c):0{digits}x}" for c in row]
    return codes[0] if len(codes) == 1 else "[" + " ".join(codes) + "]"


def _code(port: str, code: int, width: int, fmt) -> str:
    if port == "flags":
        return f"{int(code):#04x} ({describe_flags(code)})"
    if fmt is not None:
        return describe_code(fmt, code)      # hex, value, class (x/z bits said as such)
    return "x/z" if int(code) == UNDEFINED else f"0x{int(code):0{(width + 3) // 4}x}"


class MxChecker:
    """In-order, bit-exact comparison of every output port; keeps the first ``max_report``
    mismatching vectors as lines: index, inputs in hex, then per differing port the expected and
    produced codes, decoded (of the differing elements, for block ports)."""

    MAX_ELEMENTS = 8      # differing elements shown per port

    def __init__(self, layout: tuple[dict, dict], formats: dict, max_report: int = 8):
        self.inputs, self.outputs = layout
        self.formats = formats
        self.max_report = max_report
        self.vectors = 0
        self.mismatches = 0
        self.reports: list[list[str]] = []

    @property
    def lines(self) -> list[str]:
        return [line for r in self.reports for line in r]

    def check(self, inputs: dict, want: dict, got: dict, index0: int = 0):
        n = len(next(iter(want.values())))
        for p, v in got.items():
            if v.shape != want[p].shape:
                raise AssertionError(f"{p}: {v.shape[0]} results for {n} vectors")
        bad = np.zeros(n, bool)
        for p in self.outputs:
            bad |= (want[p] != got[p]).any(axis=1)
        self.vectors += n
        self.mismatches += int(bad.sum())
        for i in np.flatnonzero(bad)[:max(0, self.max_report - len(self.reports))]:
            self.reports.append(self._report(int(i), index0, inputs, want, got))

    def _report(self, i: int, index0: int, inputs, want, got) -> list[str]:
        lines = [f"#{index0 + i} " + " ".join(f"{p}={_hex_row(inputs[p][i], w)}"
                                              for p, (_, w) in self.inputs.items())]
        for p, (count, w) in self.outputs.items():
            fmt = self.formats[p]
            diff = np.flatnonzero(want[p][i] != got[p][i])
            if not diff.size:
                continue
            if count == 1:
                lines.append(f"    {p}: expected {_code(p, want[p][i, 0], w, fmt)}, "
                             f"got {_code(p, got[p][i, 0], w, fmt)}")
                continue
            shown = "; ".join(f"[{j}] expected {_code(p, want[p][i, j], w, fmt)} got "
                              f"{_code(p, got[p][i, j], w, fmt)}"
                              for j in diff[:self.MAX_ELEMENTS])
            more = f"; +{diff.size - self.MAX_ELEMENTS} more" if diff.size > \
                self.MAX_ELEMENTS else ""
            lines.append(f"    {p}: {diff.size} of {count} elements differ: {shown}{more}")
        return lines
