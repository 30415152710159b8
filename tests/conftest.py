"""What every test shares: the golden model compiled without XLA's optimisation passes (tests
marked ``xla_defaults`` excepted) and cached on disk for the run (below), and
``--cpu-durations=N``, the N tests of most CPU seconds and the total, with the part of it the
test processes spent making programs (JAX tracing, lowering and compiling; Amaranth and its Yosys
converting units to Verilog).

Wall time says little on a shared or loaded machine (a test waits for a core); CPU seconds do.
A test's CPU is its process's plus that of the children it waited for (simulators, Yosys, worker
pools), the measure synth/flow.py reports for Yosys. Under pytest-xdist each worker measures and
the controller prints (the figure travels as the teardown report's ``cpu_s`` property)."""

from __future__ import annotations

import functools
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

# XLA compiles the golden model's kernels without its optimisation passes in tests. A test runs
# a kernel over a few hundred elements, so compiling is nearly all of the kernel's cost, and the
# passes are a third to a half of compiling (42 scalar kernels, three interleaved runs: 8.0-8.8
# CPU-s under the defaults, 5.1-6.2 without the passes). Integer arithmetic, most of the golden
# model, gives the same bits either way: the digest test pins outputs computed under XLA's
# defaults. Float arithmetic need not: only the passes contract a * b + c into a fused
# multiply-add. So a claim about the model as users compile it (the digest's first groups; how
# compiled float code rounds) is marked ``xla_defaults`` and runs in a child pytest under the
# defaults (pytest_pyfunc_call below); `make test-all` runs every test under them. Set here,
# before JAX starts, so the simulators' and executors' processes inherit it; a run that sets
# XLA_FLAGS (even empty) keeps its own.
FAST_COMPILE_XLA_FLAGS = ("--xla_backend_optimization_level=0 "
                          "--xla_llvm_disable_expensive_passes=true "
                          "--xla_cpu_use_fusion_emitters=false")
os.environ.setdefault("XLA_FLAGS", FAST_COMPILE_XLA_FLAGS)

# The golden model's compiled kernels, on disk: pytest-xdist's workers run in separate processes,
# and most of the golden tests' CPU is XLA compiling the same kernels (one per spec and shape) in
# each of them. A worker that finds a kernel another compiled loads the executable that XLA
# built, under a key covering the program, the jax/jaxlib version, the backend and XLA_FLAGS, so
# the tests run the same machine code either way. Each run has its own folder under build/,
# made by the process that starts the run (the xdist controller, whose workers inherit its path
# in JAX_CACHE_VARIABLE) and removed when it ends: the cache never grows from run to run, and two
# runs in one checkout do not touch each other's.
BUILD = Path(__file__).resolve().parents[1] / "build"
JAX_CACHE_VARIABLE = "FPFORGE_TESTS_JAX_CACHE"

_START = pytest.StashKey[float]()


def pytest_addoption(parser):
    parser.addoption("--cpu-durations", type=int, default=None, metavar="N",
                     help="show the N tests of most CPU seconds (0: all) and the run's total")


def pytest_configure(config):
    if "JAX_COMPILATION_CACHE_DIR" not in os.environ:       # else the environment's choice
        if JAX_CACHE_VARIABLE not in os.environ:              # the process that starts the run
            BUILD.mkdir(exist_ok=True)
            os.environ[JAX_CACHE_VARIABLE] = tempfile.mkdtemp(prefix="jax-cache-tests-",
                                                              dir=BUILD)
            config.add_cleanup(lambda: shutil.rmtree(os.environ.pop(JAX_CACHE_VARIABLE),
                                                     ignore_errors=True))
        if not _is_xdist_controller(config):                 # the controller runs no tests
            _share_jax_compilations(os.environ[JAX_CACHE_VARIABLE])
    n = config.getoption("cpu_durations")
    if n is not None:
        build = None
        if not _is_xdist_controller(config):
            build = BuildSeconds()
            build.install()
        config.pluginmanager.register(CpuDurations(n, build), "cpu-durations")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """An ``xla_defaults`` test, in a run compiling without XLA's passes: the test alone in a
    child pytest under XLA's defaults, its verdict this test's."""
    if pyfuncitem.get_closest_marker("xla_defaults") is None or \
            os.environ.get("XLA_FLAGS") != FAST_COMPILE_XLA_FLAGS:
        return None
    child = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            "-m", "", pyfuncitem.nodeid], cwd=pyfuncitem.config.rootpath,
                           env=dict(os.environ, XLA_FLAGS=""), capture_output=True, text=True)
    if child.returncode != 0:
        pytest.fail(f"under XLA's defaults (exit {child.returncode}):\n"
                    + "\n".join(child.stdout.splitlines()[-30:]), pytrace=False)
    return True


@pytest.fixture(autouse=True)
def _xla_flags_left_as_found():
    """A test that leaves XLA_FLAGS changed fails: the hook above reads them to send each
    ``xla_defaults`` test to a child, and a worker whose flags a test changed would run the
    later ones in process, compiled without XLA's passes, and pass them untested (the native
    engine's bench environment once did this)."""
    before = os.environ.get("XLA_FLAGS")
    yield
    if os.environ.get("XLA_FLAGS") != before:
        pytest.fail(f"the test left XLA_FLAGS changed: {before!r} -> "
                    f"{os.environ.get('XLA_FLAGS')!r}", pytrace=False)


def _is_xdist_controller(config) -> bool:
    return bool(getattr(config.option, "numprocesses", None)) and \
        "PYTEST_XDIST_WORKER" not in os.environ


def _share_jax_compilations(folder: str):
    """Every compilation (the golden model's are small: no time or size threshold) goes to the
    run's cache. No size limit: JAX's limit rescans the whole folder on every write."""
    import jax
    jax.config.update("jax_compilation_cache_dir", folder)
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", -1)


def _cpu_seconds() -> float:
    own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


class BuildSeconds:
    """Seconds this process spends making programs: JAX tracing, lowering and compiling (its
    own compile events, which time each step of a jitted function's first call; wall time, in
    a worker that does nothing else meanwhile), and rtl/emit.py ``convert`` (Amaranth and its
    Yosys writing a unit's Verilog; this process's CPU time). Children (simulators and their
    benches, Yosys, the C++ compiler, spawned Python workers) are in the test's CPU seconds but
    not here, whatever they compile."""

    KINDS = ("jax_s", "verilog_s")

    def __init__(self):
        self.total = dict.fromkeys(self.KINDS, 0.0)

    def install(self):
        """Count from now on, in this process (:meth:`uninstall` stops)."""
        import jax.monitoring

        from fpforge.rtl import emit
        jax.monitoring.register_event_duration_secs_listener(self._jax_event)
        self._emit, self._convert = emit, emit.convert

        @functools.wraps(self._convert)
        def timed_convert(*args, **kwargs):
            start = time.process_time()
            try:
                return self._convert(*args, **kwargs)
            finally:
                self.total["verilog_s"] += time.process_time() - start
        emit.convert = timed_convert

    def uninstall(self):
        import jax.monitoring
        jax.monitoring.unregister_event_duration_listener(self._jax_event)
        self._emit.convert = self._convert

    def _jax_event(self, event: str, seconds: float, **_):
        if event.startswith("/jax/core/compile/"):     # trace, lower to MLIR, XLA compile
            self.total["jax_s"] += seconds


class CpuDurations:
    def __init__(self, n: int, build: BuildSeconds | None):
        self.n, self.seconds, self.build = n, {}, build
        self.built = dict.fromkeys(BuildSeconds.KINDS, 0.0)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        item.stash[_START] = _cpu_seconds(), dict(self.build.total) if self.build else {}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        if call.when == "teardown" and _START in item.stash:
            cpu, built = item.stash[_START]
            item.user_properties.append(("cpu_s", round(_cpu_seconds() - cpu, 2)))
            item.user_properties += [(k, round(self.build.total[k] - built[k], 3))
                                     for k in built]
        yield

    def pytest_runtest_logreport(self, report):
        if report.when == "teardown":
            for k, v in report.user_properties:
                if k == "cpu_s":
                    self.seconds[report.nodeid] = v
                elif k in self.built:
                    self.built[k] += v

    def pytest_terminal_summary(self, terminalreporter):
        rows = sorted(self.seconds.items(), key=lambda kv: -kv[1])
        terminalreporter.write_sep("=", f"CPU seconds: {sum(self.seconds.values()):.1f} in "
                                        f"{len(rows)} tests")
        terminalreporter.write_line(
            f"of which the test processes made programs: JAX tracing, lowering and compiling "
            f"{self.built['jax_s']:.1f} s, Verilog conversion {self.built['verilog_s']:.1f} s")
        for nodeid, seconds in rows[:self.n or None]:
            terminalreporter.write_line(f"{seconds:8.2f}s cpu  {nodeid}")
