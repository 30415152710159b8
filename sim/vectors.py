"""Vector files: TestFloat-style lines of hex codes, written from a run's failing vectors
(``--dump-failing FILE``) and read as a run's stimulus (``--vectors FILE``).

A line is the unit's data inputs (rm and rbits excepted) then, optionally, the expected result
``y`` and the expected flags, each a hex code, space separated, as ``testfloat_gen`` writes
them (``3C01 1400 3C02 01``); a bus port is one column per element, element 0 first. Flags are
two hex digits in TestFloat's bit order, which is fpforge's: 0x10 invalid, 0x08 divide by zero,
0x04 overflow, 0x02 underflow, 0x01 inexact. ``#`` starts a comment. TestFloat runs one
rounding mode per file; a unit with a dynamic rounding mode (an ``rm`` input) reads the mode of
the lines that follow from a directive comment ``# rm=NAME`` (rne, rtz, rdn, rup, rna, or a
code: ``# rm=5`` for a reserved one), which the dump writes before each group of lines of one
mode. A dump holds every failing vector up to
DUMP_MAX lines; its header says how many failed and how many are written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from fpforge.rtl.options import RM_CODES, OptionError, rm_name
from fpforge.rtl.spec import Spec

from .stimulus.base import MODE_PORTS

__all__ = ["DUMP_MAX", "VectorFile", "read_vectors", "file_chunks", "FailingDump",
           "merge_dumps", "file_disagreement", "file_disagreement_lines"]

DUMP_MAX = 1_000_000          # lines of a --dump-failing file
_RM = re.compile(r"#\s*rm\s*=\s*(\w+)")
_MODES = {m.value: code for m, code in RM_CODES.items()}


def _columns(spec: Spec):
    """(input ports, expected ports) of a vector line: data inputs but rm and rbits, then y and
    flags (the flags column only after y)."""
    ins = [p for p in spec.inputs() if p.name not in MODE_PORTS]
    outs = [p for p in spec.outputs() if p.name in ("y", "flags")]
    return ins, outs


def _hex(code: int, width: int) -> str:
    return f"{code:0{(width + 3) // 4}X}"


@dataclass(frozen=True)
class VectorFile:
    """A vector file read against a spec: ``inputs`` (the spec's input ports, rm from the
    directives), ``expected`` (the columns the file gives: y, maybe flags) and ``lines``
    (each vector's line number)."""

    path: str
    inputs: dict
    expected: dict
    lines: np.ndarray


def read_vectors(spec: Spec, path) -> VectorFile:
    """Read and check ``path`` against ``spec``; a bad file is an OptionError naming the file
    and line."""
    ins, outs = _columns(spec)
    names = {p.name for p in spec.inputs()}
    if "rbits" in names:
        raise OptionError(f"--vectors: {spec.default_name} rounds stochastically; its random "
                          "bits are not in a vector file")
    dynamic = "rm" in names
    n_in = sum(p.lanes for p in ins)
    counts = [n_in] + [n_in + sum(p.lanes for p in outs[:k]) for k in range(1, len(outs) + 1)]
    widths = [p.lane_width for p in ins for _ in range(p.lanes)] + \
        [p.lane_width for p in outs for _ in range(p.lanes)]
    labels = [p.name if p.lanes == 1 else f"{p.name}[{e}]" for p in ins + outs
              for e in range(p.lanes)]
    try:
        text = Path(path).read_text()
    except OSError as err:
        raise OptionError(f"--vectors {path}: {err.strerror}") from None
    rows, rms, where, ncols, rm = [], [], [], None, None
    for no, line in enumerate(text.splitlines(), 1):
        body, _, comment = line.partition("#")
        if (m := _RM.match("#" + comment)) and not body.strip():
            if not dynamic:
                raise OptionError(f"{path}:{no}: '# rm=' lines are for a unit with a dynamic "
                                  f"rounding mode; {spec.default_name} has none")
            rm = _rm_code(m.group(1), spec.port("rm").width)
            if rm is None:
                raise OptionError(f"{path}:{no}: unknown rounding mode {m.group(1)!r}; valid: "
                                  f"{', '.join(_MODES)} or a code 0-"
                                  f"{(1 << spec.port('rm').width) - 1}")
        fields = body.split()
        if not fields:
            continue
        if len(fields) not in counts or (ncols is not None and len(fields) != ncols):
            want = f"{ncols}" if ncols is not None else " or ".join(map(str, counts))
            raise OptionError(f"{path}:{no}: {len(fields)} columns; {spec.default_name} lines "
                              f"have {want} ({' '.join(labels[:ncols or counts[-1]])})")
        ncols = len(fields)
        if dynamic and rm is None:
            raise OptionError(f"{path}:{no}: {spec.default_name} rounds by its rm input: give "
                              f"the mode first with a line '# rm=NAME' ({', '.join(_MODES)})")
        row = []
        for text_, width, label in zip(fields, widths, labels):
            try:
                code = int(text_, 16)
            except ValueError:
                raise OptionError(f"{path}:{no}: {label} {text_!r} is not a hex code") from None
            if not 0 <= code < (1 << width):
                raise OptionError(f"{path}:{no}: {label} 0x{code:x} is wider than its "
                                  f"{width} bit(s)")
            row.append(code)
        rows.append(row)
        rms.append(rm)
        where.append(no)
    if not rows:
        raise OptionError(f"--vectors {path}: no vectors in the file")
    table = np.array(rows, np.uint32)
    inputs, expected, col = {}, {}, 0
    for p in ins + outs:
        if col >= ncols:
            break
        v = table[:, col:col + p.lanes]
        col += p.lanes
        (inputs if p.is_input else expected)[p.name] = v[:, 0] if p.lanes == 1 else v
    if dynamic:
        inputs["rm"] = np.array(rms, np.uint32)
    inputs = {p.name: inputs[p.name] for p in spec.inputs() if p.name in inputs}
    return VectorFile(str(path), inputs, expected, np.array(where))


def _rm_code(text: str, width: int) -> int | None:
    """The rm code of a directive: a mode's name, or a code (reserved ones included)."""
    if text in _MODES:
        return _MODES[text]
    return int(text) if text.isdigit() and int(text) < (1 << width) else None


def _rm_directive(code: int) -> str:
    name = rm_name(code)
    return f"# rm={name}" if name in _MODES else f"# rm={code} ({name})"


def file_chunks(spec: Spec, path, chunk: int):
    """The stimulus part ``file``: the file's input vectors, in chunks."""
    vf = read_vectors(spec, path)
    n = len(vf.lines)
    for s in range(0, n, chunk):
        yield {p: v[s:s + chunk] for p, v in vf.inputs.items()}


def file_disagreement(spec: Spec, vf: VectorFile, outputs, first: int = 5) -> dict | None:
    """Where the file's expected columns differ from fpforge's golden model (an expected NaN
    matches any NaN code, as TestFloat): {lines, of, first: [decoded lines]}; None when the
    file gives no expected results."""
    if not vf.expected:
        return None
    from .check import any_nan, describe_code, describe_flags, expected
    want = expected(spec, vf.inputs)
    ports = [p for p in outputs if p.name in vf.expected]
    mine = {p.name: want[p.name] for p in ports}
    theirs = {p.name: vf.expected[p.name] for p in ports}
    bad = np.flatnonzero(any_nan(ports)(theirs, mine))

    def show(d, i):
        return " ".join(f"{p.name}=" + (describe_flags(d[p.name][i]) if p.name == "flags" else
                                        describe_code(p.fmt, d[p.name][i], p.lane_width))
                        for p in ports if p.lanes == 1)
    lines = []
    for i in bad[:first]:
        ops = " ".join(f"{p.name}={describe_code(p.fmt, int(vf.inputs[p.name][i]), p.width)}"
                       for p in spec.inputs() if p.lanes == 1 and p.name in vf.inputs)
        lines.append(f"line {vf.lines[i]}: {ops}: the file expects {show(theirs, i)}, the "
                     f"golden model {show(mine, i)}")
    return {"lines": int(bad.size), "of": len(vf.lines), "first": lines}


def file_disagreement_lines(record: dict) -> list[str]:
    """The verdict's lines for a file_disagreement record."""
    if not record["lines"]:
        return [f"the file's expected results agree with fpforge's golden model on all "
                f"{record['of']:,} lines"]
    return [f"the file's expected result differs from fpforge's golden model on "
            f"{record['lines']:,} of {record['of']:,} lines, first:"] + \
        ["  " + line for line in record["first"]]


class FailingDump:
    """The failing vectors of a run, kept (up to ``cap``) and written as vector lines to
    ``path`` by :meth:`close`: operands, expected y, expected flags."""

    def __init__(self, path, spec: Spec, label: str, cap: int = DUMP_MAX):
        self.path, self.spec, self.label, self.cap = str(path), spec, label, cap
        self.ins, self.outs = _columns(spec)
        self.failing = 0
        self.kept: list[np.ndarray] = []
        self.rms: list[np.ndarray] = []
        self.dynamic = any(p.name == "rm" for p in spec.inputs())

    def add(self, inputs: dict, want: dict, bad: np.ndarray):
        self.failing += int(bad.size)
        room = self.cap - sum(len(k) for k in self.kept)
        bad = bad[:max(room, 0)]
        if not bad.size:
            return
        cols = [np.asarray(d[p.name])[bad].reshape(bad.size, -1)
                for d, ps in ((inputs, self.ins), (want, self.outs)) for p in ps]
        self.kept.append(np.concatenate(cols, axis=1).astype(np.uint32))
        if self.dynamic:
            self.rms.append(np.asarray(inputs["rm"])[bad].astype(np.uint32))

    def close(self) -> dict:
        """Write the file; returns {path, failing, written}."""
        rows = np.concatenate(self.kept) if self.kept else np.zeros((0, 0), np.uint32)
        widths = [p.lane_width for p in self.ins + self.outs for _ in range(p.lanes)]
        body = []
        if self.dynamic and len(rows):
            rm = np.concatenate(self.rms)
            order = np.argsort(rm, kind="stable")     # one group per mode, as TestFloat's runs
            rows, rm = rows[order], rm[order]
        last = None
        for i, row in enumerate(rows.tolist()):
            if self.dynamic and rm[i] != last:
                last = rm[i]
                body.append(_rm_directive(int(last)))
            body.append(" ".join(_hex(c, w) for c, w in zip(row, widths)))
        write_dump(self.path, self.header(len(rows)), body)
        return {"path": self.path, "failing": self.failing, "written": int(len(rows))}

    def header(self, written: int, failing: int | None = None) -> list[str]:
        failing = self.failing if failing is None else failing
        names = [p.name if p.lanes == 1 else f"{p.name}[0..{p.lanes - 1}]"
                 for p in self.ins + self.outs]
        count = "all written" if written == failing else \
            f"the first {written:,} written (at most {self.cap:,})"
        return [f"# fpforge failing vectors: {self.label}, {self.spec.describe()}",
                f"# columns (hex): {' '.join(names)}; flags 10 NV, 08 DZ, 04 OF, 02 UF, 01 NX",
                f"# {failing:,} failing vectors, {count}"]


def write_dump(path, header: list[str], body: list[str]):
    Path(path).write_text("\n".join(header + body) + "\n")


def merge_dumps(path, dump: FailingDump, parts: list[tuple[str, int]]) -> dict:
    """One file from the dumps of shards (``parts``: (path, failing) in order), at most
    ``dump.cap`` vector lines; the parts are removed. Returns {path, failing, written}."""
    body, written = [], 0
    for part, _ in parts:
        for line in Path(part).read_text().splitlines():
            if line.startswith("#"):
                if _RM.match(line):
                    body.append(line)
            elif written < dump.cap:
                body.append(line)
                written += 1
        Path(part).unlink(missing_ok=True)
    failing = sum(n for _, n in parts)
    write_dump(path, dump.header(written, failing), body)
    return {"path": str(path), "failing": failing, "written": written}
