"""Verilator's run-time library (verilated*.o), compiled once per flag set and shared by every
build of both Verilator engines (cocotb.py, native.py).

The library compiles to the same objects for every design built with the same flags and
compiler, and is most of a small design's build: 32 s of building an 8-bit fma cocotb bench
(the design's own code 5 s), 9 of the 13 CPU-seconds of a native build of an 8-bit mul
(measured). It is kept under BUILD_ROOT in a folder named by a key of everything that goes
into it, and copied into each new build directory, where make finds it up to date.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from importlib import metadata
from pathlib import Path

from .base import BUILD_ROOT

__all__ = ["runtime_cache", "runtime_files", "seed_runtime", "store_runtime"]


def runtime_cache(engine: str, flags: list) -> Path:
    """The cache folder of ``engine``'s run-time objects built with ``flags`` (anything that
    changes the objects) by the current compiler and Verilator."""
    cxx = shutil.which(os.environ.get("CXX", "c++")) or "c++"
    compiler = [str(Path(cxx).resolve()), Path(cxx).resolve().stat().st_mtime_ns] \
        if Path(cxx).exists() else [cxx]
    key = json.dumps([metadata.version("verilator"), flags, compiler])
    return BUILD_ROOT / engine / "_runtime" / hashlib.sha1(key.encode()).hexdigest()[:10]


def runtime_files(directory: Path, design_root: Path | None = None) -> list[Path]:
    """The objects of ``directory`` that no file of a design goes into: each has a dependency
    file, and every dependency in it is an absolute path outside ``design_root`` (the design's
    headers are named relative to the build directory, or lie in ``design_root``). Not a
    main that includes the design's header: another design's copy constructs a model of
    another layout (heap corruption: "double free or corruption" at exit)."""
    objs = [p for p in directory.glob("*.o")
            if p.with_suffix(".d").exists()
            and not _design_dependent(p.with_suffix(".d"), design_root)]
    return objs + [p.with_suffix(".d") for p in objs]


def _design_dependent(depfile: Path, design_root: Path | None) -> bool:
    deps = depfile.read_text().replace("\\\n", " ").split()[1:]     # after "name.o:"
    root = str(design_root.resolve()) + os.sep if design_root else None
    return any(not d.startswith("/") or (root and d.startswith(root))
               for d in deps if d != "\\")


def seed_runtime(build_dir: Path, cache: Path) -> list[Path]:
    """Copy the cached objects into ``build_dir`` (keeping their mtimes); returns the objects
    copied, which the caller touches after verilating (make compares them with the makefile
    verilating rewrites)."""
    seeded = []
    for f in runtime_files(cache) if cache.is_dir() else []:
        if not (build_dir / f.name).exists():
            shutil.copy2(f, build_dir / f.name)
            seeded += [build_dir / f.name] if f.suffix == ".o" else []
    return seeded


def store_runtime(build_dir: Path, cache: Path, design_root: Path | None = None) -> None:
    """Keep ``build_dir``'s run-time objects in ``cache`` unless it exists."""
    files = runtime_files(build_dir, design_root)
    if cache.is_dir() or not files:
        return
    # Built beside the cache and renamed into place: pytest workers may race to store it.
    tmp = cache.with_name(f"{cache.name}.{os.getpid()}")
    tmp.mkdir(parents=True, exist_ok=True)
    for f in files:
        shutil.copy2(f, tmp / f.name)
    try:
        tmp.rename(cache)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)          # another worker stored it first
