"""Mismatch classes: the shape of a failure, so that an engineer can act on a verdict.

Every mismatch gets three labels:

- **what differs**: ``value wrong`` (a compared value port differs, under the run's NaN policy)
  or ``flags only`` naming each flag missing or extra (``flags only: UF missing, NX extra``;
  ``flags only: x/z`` for undefined flag bits);
- **the expected result's class** (scalar kinds), the first that applies of RESULT_CLASSES:
  ``NaN``, ``overflow`` (the expected flags hold OF), ``infinity``, ``zero sign`` (+-0 expected,
  the other zero got), ``subnormal/normal boundary`` (the exact result is below the smallest
  normal and rounds to it), ``exact ties`` (the exact result lies halfway between two
  neighbours), then the expected code's own class ``subnormal``, ``normal``, ``zero``. Ties and
  the boundary are the golden model's view of the exact result (golden.scalar.rounding_cases:
  the round and sticky bits at the rounder's own cut), not a guess from the codes;
- **the operands' classes** (scalar kinds): each operand's zero, subnormal, normal, infinity or
  NaN (``a=normal b=subnormal``).

A multi-format unit (rtl/multiformat.py) gets these per member: every class name starts with
the ``fmt`` code of the operation and what it selects (``fmt 1 (float8_e5m2): value wrong,
normal``; ``fmt 3 (no member): ...``), the result and operand classes read in that member's
formats (one-lane units; a multi-lane unit's mismatches are classed by what differs alone).

:class:`Classes` counts every mismatch of a run by (what differs, result class) and by operand
classes, in numpy, chunk by chunk (an exhaustive run may have millions), and keeps the first
few examples of each class as the checker's decoded lines. Its :meth:`Classes.record` goes into
the run's JSON summary; :func:`merge` adds up the records of shards; :func:`summary_lines` is
the verdict's class table.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from fpforge.rtl.formats import FloatFormat, Specials
from fpforge.rtl.multiformat import FMT_PORT, MultiFormatSpec
from fpforge.rtl.options import Flag
from fpforge.rtl.ports import Port
from fpforge.rtl.scalar import ScalarSpec

from .packing import UNDEFINED

__all__ = ["CODE_CLASSES", "RESULT_CLASSES", "code_classes", "Classes", "merge",
           "summary_lines", "EXAMPLES"]

EXAMPLES = 3            # decoded examples kept per class

# The classes of a code, as code_classes numbers them ("out of range": an undefined output).
CODE_CLASSES = ("zero", "subnormal", "normal", "infinity", "NaN", "x/z")
ZERO, SUBNORMAL, NORMAL, INF, NAN, UNDEFINED_CLASS = range(len(CODE_CLASSES))

RESULT_CLASSES = ("NaN", "overflow", "infinity", "zero sign", "subnormal/normal boundary",
                  "exact ties", "subnormal", "normal", "zero")
_R = {name: i for i, name in enumerate(RESULT_CLASSES)}
_FLAGS = [(Flag.NV, "NV"), (Flag.DZ, "DZ"), (Flag.OF, "OF"), (Flag.UF, "UF"), (Flag.NX, "NX")]
_FLAG_MASK = sum(int(f) for f, _ in _FLAGS)
_VALUE, _FLAGS_XZ = 0, 1       # "what differs" numbers; 2 + (missing << 5 | extra) otherwise


def code_classes(fmt: FloatFormat, codes) -> np.ndarray:
    """The CODE_CLASSES number of each of ``codes`` in ``fmt`` (vectorized FloatFormat.classify,
    signalling NaNs as NaN; a code wider than the format is x/z)."""
    c = np.asarray(codes, np.uint64)
    M = np.uint64(fmt.man_bits)
    mag = c & np.uint64(fmt.magnitude_mask)
    e, f = mag >> M, mag & np.uint64((1 << fmt.man_bits) - 1)
    sub = SUBNORMAL if fmt.has_subnormals else ZERO
    out = np.where(e == 0, np.where(f == 0, ZERO, sub), NORMAL).astype(np.int8)
    sp = fmt.specials
    if sp is Specials.IEEE:
        top = e == fmt.exp_all_ones
        out[top] = np.where(f[top] == 0, INF, NAN)
    elif sp is Specials.FN:
        out[mag == fmt.magnitude_mask] = NAN
    elif sp is Specials.FNU:
        out[:] = np.where(mag == fmt.magnitude_mask, NAN, NORMAL)
    elif sp is Specials.FNUZ:
        out[c == fmt.sign_mask] = NAN
    elif sp is Specials.EXT:
        out[mag == fmt.inf_code] = INF
        out[c == fmt.nan_code] = NAN
    out[c >= np.uint64(1) << np.uint64(fmt.width)] = UNDEFINED_CLASS
    return out


def _what_name(what: int) -> str:
    if what == _VALUE:
        return "value wrong"
    if what == _FLAGS_XZ:
        return "flags only: x/z"
    missing, extra = (what - 2) >> 5, (what - 2) & 31
    parts = [f"{s} missing" for f, s in _FLAGS if missing & f] + \
        [f"{s} extra" for f, s in _FLAGS if extra & f]
    return "flags only: " + ", ".join(parts)


class Classes:
    """The classes of a run's mismatches (module docstring). ``spec``: what the unit computes;
    ``inputs`` / ``outputs``: the design's ports (outputs: the compared ones); ``compare``: the
    run's compare, applied to the value ports alone to tell a wrong value from wrong flags."""

    def __init__(self, spec, inputs, outputs, compare, examples: int = EXAMPLES):
        self.spec, self.compare, self.examples = spec, compare, examples
        self.values = [p.name for p in outputs if p.name != "flags"]
        self.has_flags = any(p.name == "flags" for p in outputs)
        scalar = all(p.lanes == 1 for p in list(inputs) + list(outputs))
        y = next((p for p in outputs if p.name == "y"), None)
        self.result_fmt = y.fmt if scalar and y is not None else None
        self.exact_cases = isinstance(spec, ScalarSpec)    # the golden model's rounding case
        self.operands = [p for p in inputs if scalar and p.fmt is not None]
        # A multi-format unit: each member's classes in its own formats (module docstring).
        self.multi = isinstance(spec, MultiFormatSpec)
        self.members = {i: _member_classes(spec, i, inputs, outputs, compare)
                        for i in range(len(spec.members))} if self.multi else {}
        self.counts: Counter = Counter()       # (what, result class or -1[, fmt]) -> count
        self.by_operands: Counter = Counter()  # operand classes [(fmt, classes)] -> count
        self.kept: dict[tuple, list] = {}      # (what, result[, fmt]) -> [vector indices]

    def add(self, bad: np.ndarray, inputs: dict, want: dict, got: dict) -> dict:
        """Count the mismatches ``bad`` (indices into this chunk); returns {class key: indices of
        the chunk's vectors that are new examples of it}."""
        if not bad.size:
            return {}
        what = self._what(bad, want, got)
        if self.multi:
            code, result, ops = self._by_member(bad, inputs, want, got)
        else:
            code = np.zeros(bad.size, np.int64)
            result = self._result(bad, inputs, want, got)
            ops = self._operand_classes(bad, inputs) if self.operands else None
        key = (what.astype(np.int64) * 16 + (result + 1)) * 256 + code
        keys, first, counts = np.unique(key, return_index=True, return_counts=True)
        new = {}
        for k, i0, n in zip(keys.tolist(), first.tolist(), counts.tolist()):
            name = (k // 256 // 16, k // 256 % 16 - 1) + ((k % 256,) if self.multi else ())
            self.counts[name] += n
            room = self.examples - len(self.kept.setdefault(name, []))
            if room > 0:
                idx = bad[np.flatnonzero(key == k)[:room]] if room > 1 else bad[[i0]]
                self.kept[name] += idx.tolist()
                new[name] = idx.tolist()
        if ops is not None:
            ok = ops >= 0
            span = len(CODE_CLASSES) ** 4        # operand classes of up to four operands
            for k, n in zip(*np.unique(code[ok] * span + ops[ok], return_counts=True)):
                k = int(k)
                self.by_operands[divmod(k, span) if self.multi else k] += int(n)
        return new

    def _operand_classes(self, bad, inputs) -> np.ndarray:
        ops = np.zeros(bad.size, np.int64)
        for p in self.operands:
            ops = ops * len(CODE_CLASSES) + code_classes(p.fmt, inputs[p.name][bad])
        return ops

    def _by_member(self, bad, inputs, want, got):
        """fmt code, result class and operand classes of each mismatch of a multi-format unit,
        each in the formats of the member its fmt selects (-1: not classed)."""
        spec = self.spec
        code = np.asarray(inputs[FMT_PORT])[bad].astype(np.int64) if spec.has_fmt else \
            np.zeros(bad.size, np.int64)
        result = np.full(bad.size, -1, np.int64)
        ops = np.full(bad.size, -1, np.int64)
        for c in np.unique(code).tolist():
            sub = self.members.get(c)
            if sub is None:
                continue
            sel = code == c
            views = [_elements(spec, c, d) for d in (inputs, want, got)]
            result[sel] = sub._result(bad[sel], *views)
            if sub.operands:
                ops[sel] = sub._operand_classes(bad[sel], views[0])
        return code, result, ops

    def _what(self, bad, want, got) -> np.ndarray:
        if not self.has_flags:
            return np.full(bad.size, _VALUE, np.int64)
        value_bad = np.zeros(bad.size, bool)
        if self.values:
            pick = lambda d: {p: np.asarray(d[p])[bad] for p in self.values}  # noqa: E731
            value_bad = np.asarray(self.compare(pick(want), pick(got)), bool)
        w = np.asarray(want["flags"])[bad].astype(np.int64)
        g = np.asarray(got["flags"])[bad].astype(np.int64)
        if w.ndim > 1:     # flags of a bus: any lane
            w, g = np.bitwise_or.reduce(w, axis=1), np.bitwise_or.reduce(g, axis=1)
        xz = g > _FLAG_MASK
        flags = 2 + (((w & ~g & _FLAG_MASK) << 5) | (g & ~w & _FLAG_MASK))
        return np.where(value_bad, _VALUE, np.where(xz, _FLAGS_XZ, flags))

    def _result(self, bad, inputs, want, got) -> np.ndarray:
        fmt = self.result_fmt
        if fmt is None:
            return np.full(bad.size, -1, np.int64)
        w = np.asarray(want["y"])[bad].astype(np.uint64)
        g = np.asarray(got["y"])[bad].astype(np.uint64)
        wc = code_classes(fmt, w)
        out = np.select([wc == SUBNORMAL, wc == NORMAL, wc == INF], [_R["subnormal"],
                        _R["normal"], _R["infinity"]], _R["zero"]).astype(np.int64)
        if self.exact_cases:
            from fpforge.golden.rounding import CASE_BELOW_NORMAL, CASE_ROUND_BIT, CASE_STICKY
            case = self._cases(bad, inputs)
            tie = (case & (CASE_ROUND_BIT | CASE_STICKY)) == CASE_ROUND_BIT
            out[tie] = _R["exact ties"]
            min_normal = (w & np.uint64(fmt.magnitude_mask)) == fmt.min_normal_code
            out[((case & CASE_BELOW_NORMAL) != 0) & min_normal & (wc == NORMAL)] = \
                _R["subnormal/normal boundary"]
        out[(wc == ZERO) & (code_classes(fmt, g) == ZERO) & (w != g)] = _R["zero sign"]
        out[wc == INF] = _R["infinity"]
        if "flags" in want:
            wf = np.asarray(want["flags"])[bad].astype(np.int64)
            out[(wf & Flag.OF) != 0] = _R["overflow"]
        out[wc == NAN] = _R["NaN"]
        return out

    def _cases(self, bad, inputs) -> np.ndarray:
        """The golden model's rounding case of each mismatching vector, in batches of powers of
        two (one compiled shape per size, at most ~20 of them)."""
        from fpforge.golden.scalar import rounding_cases
        n = bad.size
        size = max(1024, 1 << (n - 1).bit_length())
        ops = {p: np.resize(np.asarray(inputs[p])[bad].astype(np.uint32), size)
               for p in self.spec.operands}
        return np.asarray(rounding_cases(self.spec, ops))[:n]

    def name(self, key: tuple) -> str:
        what, result = key[:2]
        return self._member_prefix(key) + _what_name(what) + \
            ("" if result < 0 else f", {RESULT_CLASSES[result]}")

    def _member_prefix(self, key: tuple) -> str:
        if not self.multi:
            return ""
        code = key[-1]
        if code >= len(self.spec.members):
            return f"fmt {code} (no member): "
        return f"fmt {code} ({self.spec.members[code].out_fmt.name}): "

    def operand_name(self, key) -> str:
        operands = self.operands
        if self.multi:
            code, key = key
            operands = self.members[code].operands
        parts = []
        for p in reversed(operands):
            key, c = divmod(key, len(CODE_CLASSES))
            parts.append(f"{p.name}={CODE_CLASSES[c]}")
        prefix = self._member_prefix((code,)) if self.multi else ""
        return prefix + " ".join(reversed(parts))

    def record(self, examples: dict) -> dict:
        """The summary's part: ``classes`` {class: count}, ``operand_classes`` {operands:
        count} (both most frequent first), ``class_examples`` {class: decoded lines};
        ``examples``: {class key: [decoded report (list of lines)]}."""
        return {"classes": {self.name(k): n for k, n in self.counts.most_common()},
                "operand_classes": {self.operand_name(k): n
                                    for k, n in self.by_operands.most_common()},
                "class_examples": {self.name(k): [line for r in examples.get(k, []) for line in r]
                                   for k, _ in self.counts.most_common()}}


def _member_classes(spec: MultiFormatSpec, i: int, inputs, outputs, compare):
    """The classes of member ``i`` of a one-lane multi-format unit, its ports of its formats
    (None with lanes, and for a dot: the elements are not one per port)."""
    if spec.max_lanes > 1 or not spec.LANE_AXIS:     # lanes, or a dot's vector elements
        return None
    fmts = spec.members[i].formats()

    def own(ports):
        return [Port(p.name, p.direction, p.lane_width, p.meaning, fmt=fmts.get(p.name))
                for p in ports]
    return Classes(spec.members[i], own(inputs), own(outputs), compare)


def _elements(spec: MultiFormatSpec, i: int, data: dict) -> dict:
    """Member ``i``'s codes of a one-lane unit's ports (its elements, in the low bits; an
    undefined output stays undefined)."""
    fmts = spec.members[i].formats()
    out = dict(data)
    for port, fmt in fmts.items():
        if port in data:
            v = np.asarray(data[port])
            low, w = spec.element(i, port, 0)
            undefined = v.astype(np.uint64) == UNDEFINED
            own = (v.astype(np.uint64) >> np.uint64(low)) & np.uint64((1 << w) - 1)
            out[port] = np.where(undefined, v.astype(np.uint64), own)
    return out


def merge(records: list[dict], examples: int = EXAMPLES) -> dict:
    """The class part of several runs' summaries (shards of one run), added up; examples: the
    first ones of each class, in the order of ``records``."""
    counts, ops, lines = Counter(), Counter(), {}
    for r in records:
        counts.update(r.get("classes", {}))
        ops.update(r.get("operand_classes", {}))
        for name, ls in r.get("class_examples", {}).items():
            lines.setdefault(name, []).append(ls)
    out_lines = {}
    for name, _ in counts.most_common():
        reports = [r for ls in lines.get(name, []) for r in _reports(ls)]
        out_lines[name] = [line for r in reports[:examples] for line in r]
    return {"classes": dict(counts.most_common()), "operand_classes": dict(ops.most_common()),
            "class_examples": out_lines}


def _reports(lines: list[str]) -> list[list[str]]:
    """Decoded reports again from their lines (each starts with ``#index``)."""
    out = []
    for line in lines:
        if line.startswith("#") or not out:
            out.append([line])
        else:
            out[-1].append(line)
    return out


def summary_lines(summary: dict) -> list[str]:
    """The verdict's class table, then the first examples of each class."""
    classes = summary.get("classes") or {}
    if not classes:
        return []
    total = sum(classes.values())
    width = max(len(n) for n in classes)
    lines = [f"mismatch classes (what differs, expected result), {total:,} in all:"]
    lines += [f"  {name:<{width}}  {n:>12,}" for name, n in classes.items()]
    ops = summary.get("operand_classes") or {}
    if ops:
        w = max(len(n) for n in ops)
        lines.append("by operand classes:")
        lines += [f"  {name:<{w}}  {n:>12,}" for name, n in ops.items()]
    for name, ls in (summary.get("class_examples") or {}).items():
        if ls:
            lines.append(f"first of {name}:")
            lines += ["  " + line for line in ls]
    return lines
