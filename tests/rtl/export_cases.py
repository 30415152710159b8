"""The export option matrix, a small spec of every kind, and the checks every exported batch goes
through."""

from __future__ import annotations

import itertools
import re
import subprocess
import tempfile
from pathlib import Path

from fpforge.rtl.export import write_export
from fpforge.rtl.formats import catalog_formats
from fpforge.rtl.func import FuncSpec
from fpforge.rtl.kinds import KINDS, make_spec
from fpforge.rtl.multiformat import MultiFormatSpec
from fpforge.rtl.noncomp import SIGN_ONLY
from fpforge.rtl.options import Rounding
from fpforge.rtl.scalar import CvtSpec, ScalarSpec
from fpforge.rtl.spec import Spec
from kind_examples import EXAMPLES
from kind_examples import specs as kind_specs
from fpforge.infra.toolchain import verilator
from fpforge.rtl.lint import WAIVER_FILE
from fpforge.sim.lint import iverilog_read, yosys_read

ROUNDINGS = [r.value for r in Rounding]          # rne rtz rdn rup rna rod stochastic dynamic
SMALL = [f.name for f in catalog_formats(16)]     # every catalog format of at most 16 bits

# The scalar kinds of two or three operands in one format (mul, add, sub, fma): every one in
# KINDS, so a new scalar kind joins the matrix by being registered.
# The function kinds (one operand, tables per format) are covered by their examples.
SAME_FORMAT_UNITS = [k for k, kd in KINDS.items()
                     if issubclass(kd.spec, ScalarSpec) and not issubclass(kd.spec, CvtSpec)
                     and not issubclass(kd.spec, FuncSpec)]

# (unit, output format, operand format): each such unit in each format; cvt from float32 into
# each format and from each format back to float32.
PAIRS = ([(u, f, f) for u in SAME_FORMAT_UNITS for f in SMALL]
         + [("cvt", f, "float32") for f in SMALL] + [("cvt", "float32", f) for f in SMALL])

# Every option combination: rounding x saturate x subnormals x stages.
OPTIONS = [dict(rounding=r, saturate=s, subnormals=n, stages=st) for r, s, n, st in
           itertools.product(ROUNDINGS, (False, True), (True, False), (0, 2))]

# A small spec of every kind, combinational and pipelined (tests/kind_examples.py).
KIND_OPTIONS = EXAMPLES
KIND_SPECS = kind_specs()


def pair_id(pair) -> str:
    unit, out, inp = pair
    return f"{unit}-{out}" if out == inp else f"{unit}-{inp}-to-{out}"


def spec(unit, out, inp=None, **options) -> Spec:
    return make_spec(unit, format=out, in_format=inp, **options)


def unique(specs) -> list[Spec]:
    """One spec per module name: --no-subnormals changes nothing for formats without
    subnormals (E8M0), and such specs share a name."""
    return list({s.default_name: s for s in reversed(specs)}.values())[::-1]


def export_all(specs, folder: Path) -> list[Path]:
    paths = []
    for s in specs:
        path = folder / f"{s.default_name}.v"
        write_export(s, path)
        paths.append(path)
    return paths


# The waiver file's line that turns UNUSEDSIGNAL off (rtl/lint/fpforge.vlt).
UNUSED_WAIVER = "lint_off -rule UNUSEDSIGNAL"


def verilator_check(paths, specs) -> tuple[str, list[str]]:
    """One Verilator run for both Verilator checks of a batch: what ``verilator --lint-only
    -Wall`` with the waiver file reports (warnings and errors), and the input ports of a top
    module found unused (in whole or in part), a unit problem the waiver file must not hide.

    The run takes the waiver file less its UNUSEDSIGNAL rule, with warnings not fatal: every
    other rule reports as the waiver file has it, so the first answer is the verdict of
    ``verilator --lint-only -Wall`` with the waiver file (what docs/verilog-export.md promises);
    the UNUSEDSIGNAL warnings are read for top inputs only.
    Both checks read the same files, and each costs a whole Verilator elaboration."""
    exe, env = verilator()
    waiver = WAIVER_FILE.read_text()
    assert UNUSED_WAIVER in waiver.splitlines(), "the waiver file no longer waives UNUSEDSIGNAL"
    with tempfile.TemporaryDirectory(prefix="fpforge-lint-") as work:
        config = Path(work) / "waivers.vlt"
        config.write_text(waiver.replace(UNUSED_WAIVER + "\n", ""))
        cmd = [exe, "--lint-only", "-Wall", "-Wno-fatal", "-Wno-MULTITOP", str(config),
               *map(str, paths)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    out = proc.stderr
    # A message is its %-line and the indented lines after it.
    messages = re.findall(r"^%.*(?:\n(?!%).*)*", out, re.MULTILINE)
    lint = [m for m in messages if not m.startswith("%Warning-UNUSEDSIGNAL:")]
    if proc.returncode and not lint:
        lint = [f"verilator exited {proc.returncode}:\n{out}"]
    return "\n".join(lint), _unused_top_inputs(out, specs)


def _unused_top_inputs(out: str, specs) -> list[str]:
    """The UNUSEDSIGNAL warnings in Verilator's output ``out`` that name an input of a top
    module, beyond the bits its contract leaves unread."""
    # A port whose meaning says only its sign bit is read (sgnj's b) may leave the rest unused.
    inputs = {s.default_name: {p.name for p in s.ports() if p.is_input and
                               not p.meaning.endswith(SIGN_ONLY)} for s in specs}
    by_name = {s.default_name: s for s in specs}
    found = []
    for m in re.finditer(r"%Warning-UNUSEDSIGNAL: [^\n]*?: (.*?'(\w+)'[^\n]*)\n\s*: \.\.\. note: "
                         r"In instance '([\w.]+)'", out):
        message, signal, instance = m.groups()
        if instance in inputs and signal in inputs[instance] and \
                not _reported_bits(message) <= _unread_bits(by_name[instance], signal):
            found.append(f"{instance}: {message}")
    return found


def _reported_bits(message: str) -> set[int]:
    """The bits a Verilator message names (``'a'[31:28,23:20]``); none: the whole signal."""
    m = re.search(r"'\w+'\[([\d:,]+)\]", message)
    if not m:
        return {-1}
    bits = set()
    for part in m[1].split(","):
        hi, _, lo = part.partition(":")
        bits |= set(range(int(lo or hi), int(hi) + 1))
    return bits


def _unread_bits(spec: Spec, port: str) -> set[int]:
    """Bits of an operand port outside every member's elements (a multi-format unit's packed
    lanes that do not fill the width): ignored by contract (rtl/multiformat.py)."""
    if not isinstance(spec, MultiFormatSpec) or port not in spec.operands:
        return set()
    used = {bit for i in range(len(spec.members)) for j in range(spec.member_lanes(i))
            for bit in range(spec.element(i, port, j)[0], sum(spec.element(i, port, j)))}
    return set(range(spec.port(port).width)) - used


def check_batch(paths, specs):
    """All three tools read every file; Verilator -Wall is clean with the waiver file; every
    input of every top module is used."""
    assert len(paths) == len(specs)
    lint, unused = verilator_check(paths, specs)
    assert lint == "", f"verilator -Wall on {len(paths)} modules:\n{lint[:6000]}"
    for tool in (iverilog_read, yosys_read):
        ok, out = tool(paths)
        assert ok, f"{tool.__name__} on {len(paths)} modules:\n{out[:6000]}"
        assert out == "", f"{tool.__name__} printed:\n{out[:6000]}"
    assert unused == [], "\n".join(unused)
