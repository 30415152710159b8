"""What a unit must produce and how a result is judged: one reference and one checker for every
engine and every kind.

:func:`expected` runs the golden model on a chunk of inputs (padded to a fixed batch, so JAX
compiles once per spec). :class:`Checker` compares in order with an injected ``compare``
(bit-exact by default, flags included) and keeps the first mismatches as decoded lines: every
code in hex with its value and class in the format its port carries (rtl/ports.py), flags by
name, the rounding mode, e.g.::

    #1234 a=0x3c01 (+1.000977, normal) b=0x1400 (+0.0009766, normal) rm=rne
        expected y=0x3c02 (+1.001953, normal) flags=NX    got y=0x3c01 (+1.000977, normal) flags=NX

Units with packed buses (the block kinds) get one line per differing output port instead,
naming the elements that differ. A multi-format unit's codes are decoded in the formats of the
member its ``fmt`` selects, element by element (a port's bits outside them shown raw first)::

    #17 a=0xc5: 0x05 (+0.3125, subnormal) b=0x22 (+0.5, normal) fmt=2 (float6_e3m2fn) rounding=rne
"""

from __future__ import annotations

import functools
import json
import os
from fractions import Fraction

import numpy as np

from fpforge.rtl.formats import FloatFormat
from fpforge.rtl.multiformat import FMT_PORT, MultiFormatSpec
from fpforge.rtl.options import Flag, rm_name
from fpforge.rtl.ports import Port
from fpforge.rtl.spec import Spec

from .classes import CODE_CLASSES, Classes, code_classes
from .packing import UNDEFINED

__all__ = ["expected", "expected_index", "bit_exact", "nan_mask", "any_nan", "comparison", "NAN_POLICIES", "Checker", "describe_code", "describe_flags",
           "progress_record", "summary_record", "write_json", "raise_on_failure", "UNDEFINED"]

_FLAG_SHORT = [(Flag.NV, "NV"), (Flag.DZ, "DZ"), (Flag.OF, "OF"), (Flag.UF, "UF"), (Flag.NX, "NX")]


def expected(spec: Spec, inputs: dict, batch: int | None = None, *,
             wide: bool = True) -> dict[str, np.ndarray]:
    """The golden model's outputs for ``inputs`` (at most ``batch`` vectors), as uint64 arrays
    (the simulators' codes, with room for UNDEFINED above every 32-bit code), or with
    ``wide=False`` in the golden model's own dtypes (the native engine's: no UNDEFINED there,
    and a 2^32 run's comparison reads a quarter of the bytes).
    Inputs are padded to ``batch``: one array shape per spec, so JAX compiles once per run."""
    from fpforge import golden   # here: only the reference needs JAX
    n = len(next(iter(inputs.values())))
    batch = batch or n
    if n > batch:
        raise ValueError(f"{n} vectors do not fit a golden batch of {batch}")
    args = inputs if n == batch else \
        {k: np.concatenate([v, np.zeros((batch - n,) + v.shape[1:], v.dtype)])
         for k, v in inputs.items()}
    out = golden.evaluate(spec, **args)
    return {p: np.asarray(v)[:n].astype(np.uint64) if wide else np.asarray(v)[:n]
            for p, v in out.items()}


@functools.lru_cache(maxsize=None)
def _index_kernel(spec: Spec, batch: int):
    """The golden model of ``batch`` input tuples from a uint32 index on, compiled with the
    split of the index (sim/stimulus/base.py): no stimulus arrays in or out."""
    import jax
    import jax.numpy as jnp

    from fpforge import golden

    from .stimulus.base import index_fields

    @jax.jit
    def kernel(start):
        idx = start + jnp.arange(batch, dtype=jnp.uint32)
        return golden.evaluate(spec, **index_fields(spec, idx, jnp))
    return kernel


def expected_index(spec: Spec, start: int, n: int, batch: int) -> dict[str, np.ndarray] | None:
    """:func:`expected` (``wide=False``) of the exhaustive input tuples ``start`` ..
    ``start + n - 1`` (at most ``batch``; a space of at most 2^32 inputs, no rm or rbits),
    the index split inside the compiled golden model (half its CPU time for fp16 mul: the
    stimulus arrays are never written, nor copied in). None where the kind's golden model does
    not trace with its inputs unknown (then :func:`expected` on the inputs)."""
    import jax
    if n > batch or start + n > 1 << 32:
        raise ValueError(f"{n} vectors from {start} do not fit a golden batch of {batch} in a "
                         f"32-bit index")
    try:
        out = _index_kernel(spec, batch)(np.uint32(start))
    except (jax.errors.JAXTypeError, jax.errors.ConcretizationTypeError):
        return None
    return {p: np.asarray(v)[:n] for p, v in out.items()}


def _codes(a) -> np.ndarray:
    """``a`` as unsigned codes: as it is if already unsigned (numpy compares uint16 with uint64
    exactly), else as uint64."""
    a = np.asarray(a)
    return a if a.dtype.kind == "u" else a.astype(np.uint64)


def bit_exact(want: dict, got: dict) -> np.ndarray:
    """The benches' compare: every compared port's codes identical, flags included (the golden
    NaN policy gives exact NaN codes, so NaNs compare by code too). Returns the mismatch mask."""
    bad = None
    for port, w in want.items():
        bad = _or_rows(bad, _codes(w) != _codes(got[port]))
    return bad


def _or_rows(bad: np.ndarray | None, diff: np.ndarray) -> np.ndarray:
    """``bad`` (None at the first port) or-ed in place with ``diff``, one flag per vector (a
    bus's row: any element; a one-lane port's as it is, no reduction)."""
    if diff.ndim > 1:
        diff = diff.reshape(len(diff), -1).any(axis=1)
    if bad is None:
        return diff
    bad |= diff
    return bad


# How an expected NaN is judged: ``exact`` compares codes (fpforge's units, whose canonical NaN
# is documented); ``any`` accepts any NaN code of the output's format where a NaN is expected,
# as Berkeley TestFloat does unless asked to -checkNaNs. Flags are compared either way.
NAN_POLICIES = ("exact", "any")


def nan_mask(fmt: FloatFormat, codes) -> np.ndarray:
    """Which of ``codes`` (an array) are NaN encodings of ``fmt`` (signalling ones included);
    a code wider than the format (an undefined output) is not."""
    return code_classes(fmt, codes) == CODE_CLASSES.index("NaN")


def any_nan(outputs) -> "callable":
    """The compare of ``--nan any``: as :func:`bit_exact`, but an expected NaN is matched by any
    NaN code of the port's format (lane by lane; flags and non-float ports stay exact)."""
    fmts = {p.name: p.fmt for p in outputs if p.fmt is not None}

    def compare(want: dict, got: dict) -> np.ndarray:
        bad = None
        for port, w in want.items():
            w, g = _codes(w), _codes(got[port])
            diff = w != g
            if port in fmts:     # classes only where the codes differ (rare): 2^32 runs
                flat = diff.reshape(-1)
                i = np.flatnonzero(flat)
                flat[i[nan_mask(fmts[port], w.reshape(-1)[i]) &
                       nan_mask(fmts[port], g.reshape(-1)[i])]] = False
            bad = _or_rows(bad, diff)
        return bad
    return compare


def comparison(nan: str, outputs, flags_mask: int | None = None):
    """The compare a NaN policy (NAN_POLICIES) asks for over ``outputs``; with ``flags_mask``,
    only those flag bits (a module that reports fewer flags), undefined flags kept as such."""
    if nan not in NAN_POLICIES:
        raise ValueError(f"NaN policy must be one of {', '.join(NAN_POLICIES)}, not {nan!r}")
    compare = bit_exact if nan == "exact" else any_nan(outputs)
    if flags_mask is None:
        return compare

    def masked(d: dict) -> dict:
        f = np.asarray(d["flags"], np.uint64)
        return {**d, "flags": np.where(f == UNDEFINED, f, f & np.uint64(flags_mask))}
    return lambda want, got: compare(masked(want), masked(got)) if "flags" in want \
        else compare(want, got)


def _value(v) -> str:
    if isinstance(v, Fraction):
        if v == 0:
            return "+0"
        f = float(v)
        return f"{f:+.7g}" if f != 0 else f"{'+' if v > 0 else '-'}{abs(v)}"
    if v == 0:   # -0.0
        return "-0"
    return f"{v:+}" if v == v else "NaN"


def describe_code(fmt: FloatFormat | None, code: int, width: int = 32) -> str:
    """``0x3c00 (+1, normal)``; hex alone without a format."""
    code = int(code)
    if code == UNDEFINED:
        return "x/z (undefined bits)"
    if fmt is None:
        return f"0x{code:0{(width + 3) // 4}x}"
    digits = (fmt.width + 3) // 4
    if not 0 <= code < (1 << fmt.width):
        return f"0x{code:0{digits}x} (out of range for {fmt.name})"
    return f"0x{code:0{digits}x} ({_value(fmt.code_value(code))}, {fmt.classify(code)})"


def describe_flags(flags: int) -> str:
    if int(flags) == UNDEFINED:
        return "x/z"
    names = [s for f, s in _FLAG_SHORT if int(flags) & f]
    return "|".join(names) if names else "-"


def _show(port: Port, code) -> str:
    """One code of a port, decoded as its port says."""
    if port.name == "flags":
        return describe_flags(code)
    if port.name == "rm":
        return rm_name(int(code)) if int(code) != UNDEFINED else "x/z"
    return describe_code(port.fmt, code, port.lane_width)


def _row(port: Port, row) -> str:
    row = np.atleast_1d(row)
    if port.lanes == 1:
        return _show(port, row[0])
    return "[" + " ".join(describe_code(None, c, port.lane_width) for c in row) + "]"


def _member_code(spec: MultiFormatSpec, word: int, port: Port, lane: int, i: int) -> str:
    """Member ``i``'s element ``lane`` of ``port`` in ``word`` (the port's lane ``lane``, or
    its one packed word), decoded in the member's format."""
    low, w = spec.element(i, port.name, lane)
    shift = 0 if port.lanes > 1 else low
    return describe_code(spec.members[i].formats()[port.name], (word >> shift) & ((1 << w) - 1))


def _member_row(spec: MultiFormatSpec, i: int, port: Port, row) -> str:
    """A port's codes in member ``i``'s formats: its elements; the raw bits first where the
    port holds bits outside them."""
    row = [int(c) for c in np.atleast_1d(row)]
    if any(c == UNDEFINED for c in row):
        return _row(port, row)
    n = spec.member_lanes(i)
    elems = [_member_code(spec, row[j] if port.lanes > 1 else row[0], port, j, i)
             for j in range(n)]
    used = 0
    for j in range(n):
        low, w = spec.element(i, port.name, j)
        used |= ((1 << w) - 1) << (0 if port.lanes > 1 else low)
    text = elems[0] if n == 1 else "[" + " ".join(elems) + "]"
    if port.lanes == 1 and row[0] & ~used:
        return f"{describe_code(None, row[0], port.lane_width)}: {text}"
    if port.lanes > 1 and any(row[j] & ~used for j in range(n)) or any(row[n:]):
        return f"{_row(port, row)}: {text}"
    return text


class Checker:
    """In-order comparison of ``outputs`` (the compared output ports) with an injected
    ``compare(want, got) -> mismatch mask``; ``inputs`` are the input ports (for reports)."""

    MAX_ELEMENTS = 8      # differing elements shown per bus port

    def __init__(self, spec: Spec, inputs: list[Port], outputs: list[Port], *,
                 compare=bit_exact, max_report: int = 10, absent=(), dump=None):
        self.spec, self.inputs, self.outputs = spec, list(inputs), list(outputs)
        self.compare, self.max_report, self.absent = compare, max_report, tuple(absent)
        self.vectors = 0
        self.mismatches = 0
        self.reports: list[list[str]] = []
        # Every mismatch classed (sim/classes.py), the first few of each class decoded; the
        # failing vectors to ``dump`` (sim/vectors.py FailingDump) if given.
        self.classes = Classes(spec, self.inputs, self.outputs, compare)
        self.class_reports: dict[tuple, list[list[str]]] = {}
        self.dump = dump

    @property
    def lines(self) -> list[str]:
        return [line for r in self.reports for line in r]

    def check(self, inputs: dict, index0: int, want: dict, got: dict):
        ports = [p.name for p in self.outputs]
        want = {p: np.asarray(want[p]) for p in ports}
        n = len(want[ports[0]])
        got = {p: np.asarray(got[p])[:n] for p in ports}
        for p in ports:
            if got[p].shape != want[p].shape:
                raise AssertionError(f"{p}: results of shape {got[p].shape} for expected "
                                     f"{want[p].shape}")
        bad = np.flatnonzero(self.compare(want, got))
        self.vectors += n
        self.mismatches += int(bad.size)
        if bad.size:        # reports and classes see every engine's codes alike: uint64
            want, got = ({p: _codes(d[p]).astype(np.uint64) for p in ports} for d in (want, got))
        for i in bad[:max(0, self.max_report - len(self.reports))]:
            self.reports.append(self._report(int(i), index0, inputs, want, got))
        for key, idx in self.classes.add(bad, inputs, want, got).items():
            self.class_reports.setdefault(key, []).extend(
                self._report(i, index0, inputs, want, got) for i in idx)
        if self.dump is not None:
            self.dump.add(inputs, want, bad)

    def _member(self, inputs, i: int) -> int | None:
        """The member vector ``i`` of a multi-format unit selects (None: no member, or no
        multi-format unit)."""
        spec = self.spec
        if not isinstance(spec, MultiFormatSpec):
            return None
        code = int(np.asarray(inputs[FMT_PORT])[i]) if spec.has_fmt else 0
        return code if code < len(spec.members) else None

    def _row(self, port: Port, row, member: int | None) -> str:
        if port.name == FMT_PORT and isinstance(self.spec, MultiFormatSpec):
            what = self.spec.members[member].out_fmt.name if member is not None else "no member"
            return f"{int(np.atleast_1d(row)[0])} ({what})"
        if member is not None and port.name in self.spec.members[member].formats():
            return _member_row(self.spec, member, port, row)
        return _row(port, row)

    def _show(self, port: Port, code, lane: int, member: int | None) -> str:
        """Element ``lane`` of a bus port."""
        if member is not None and port.name in self.spec.members[member].formats() and \
                int(code) != UNDEFINED and lane < self.spec.member_lanes(member):
            return _member_code(self.spec, int(code), port, lane, member)
        return _show(port, code)

    def _report(self, i: int, index0: int, inputs, want, got) -> list[str]:
        member = self._member(inputs, i)
        parts = [f"#{index0 + i}"] + [f"{p.name}={self._row(p, inputs[p.name][i], member)}"
                                      for p in self.inputs if p.name in inputs]
        rounding = getattr(self.spec, "rounding", None)
        if "rm" not in inputs and rounding is not None:
            parts.append(f"rounding={rounding.value}")
        lines = [" ".join(parts)]
        if all(p.lanes == 1 for p in self.outputs):
            show = lambda d: " ".join(  # noqa: E731
                f"{p.name}={self._row(p, d[p.name][i], member)}" for p in self.outputs)
            return lines + [f"    expected {show(want)}    got {show(got)}"]
        for p in self.outputs:
            w, g = np.atleast_1d(want[p.name][i]), np.atleast_1d(got[p.name][i])
            diff = np.flatnonzero(w != g)
            if not diff.size:
                continue
            if p.lanes == 1:
                lines.append(f"    {p.name}: expected {_show(p, w[0])}, got {_show(p, g[0])}")
                continue
            shown = "; ".join(f"[{j}] expected {self._show(p, w[j], j, member)} got "
                              f"{self._show(p, g[j], j, member)}"
                              for j in diff[:self.MAX_ELEMENTS])
            more = f"; +{diff.size - self.MAX_ELEMENTS} more" if \
                diff.size > self.MAX_ELEMENTS else ""
            lines.append(f"    {p.name}: {diff.size} of {p.lanes} elements differ: {shown}{more}")
        return lines


def raise_on_failure(checker: Checker, name: str, seed: int):
    """End a bench: fail with the decoded first mismatches, or when nothing was checked."""
    if checker.mismatches:
        raise AssertionError(f"{checker.mismatches} of {checker.vectors} vectors mismatch "
                             f"({name}, seed {seed}); first ones:\n" + "\n".join(checker.lines))
    if checker.vectors == 0:
        raise AssertionError("the stimulus produced no vectors")


def progress_record(checker: Checker, elapsed_s: float, done: bool = False) -> dict:
    """What a progress file holds (progress bars read it)."""
    record = {"vectors": checker.vectors, "mismatches": checker.mismatches,
              "elapsed_s": elapsed_s}
    return {**record, "done": True} if done else record


def summary_record(checker: Checker, *, name: str, seed: int, stimulus, elapsed_s: float,
                   **extra) -> dict:
    """A bench run's JSON summary: what ran, what was found, how fast; ``extra`` per engine."""
    spec = checker.spec
    return {"spec": name, "describe": spec.describe() if spec else name, "seed": seed,
            "stimulus": stimulus, "vectors": checker.vectors, "mismatches": checker.mismatches,
            "first_mismatches": checker.lines, "compared": [p.name for p in checker.outputs],
            "not_compared": list(checker.absent), "elapsed_s": elapsed_s,
            "vectors_per_s": checker.vectors / max(elapsed_s, 1e-9),
            **checker.classes.record(checker.class_reports), **extra}


def write_json(path, data: dict):
    """Write ``data`` to ``path`` (nothing when empty) atomically: progress bars read these
    files while benches write them."""
    if not path:
        return
    tmp = f"{path}.tmp"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=1)
    os.replace(tmp, path)
