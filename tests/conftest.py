"""What every test shares: ``--cpu-durations=N``, the N tests of most CPU seconds and the total.

Wall time says little on a shared or loaded machine (a test waits for a core); CPU seconds do.
A test's CPU is its process's plus that of the children it waited for (simulators, Yosys, worker
pools), the measure synth/flow.py reports for Yosys. Under pytest-xdist each worker measures and
the controller prints (the figure travels as the teardown report's ``cpu_s`` property)."""

from __future__ import annotations

import resource

import pytest

_START = pytest.StashKey[float]()


def pytest_addoption(parser):
    parser.addoption("--cpu-durations", type=int, default=None, metavar="N",
                     help="show the N tests of most CPU seconds (0: all) and the run's total")


def pytest_configure(config):
    n = config.getoption("cpu_durations")
    if n is not None:
        config.pluginmanager.register(CpuDurations(n), "cpu-durations")


def _cpu_seconds() -> float:
    own, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


class CpuDurations:
    def __init__(self, n: int):
        self.n, self.seconds = n, {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        item.stash[_START] = _cpu_seconds()

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        if call.when == "teardown" and _START in item.stash:
            item.user_properties.append(("cpu_s", round(_cpu_seconds() - item.stash[_START], 2)))
        yield

    def pytest_runtest_logreport(self, report):
        if report.when == "teardown":
            self.seconds.update((report.nodeid, v) for k, v in report.user_properties
                                if k == "cpu_s")

    def pytest_terminal_summary(self, terminalreporter):
        rows = sorted(self.seconds.items(), key=lambda kv: -kv[1])
        terminalreporter.write_sep("=", f"CPU seconds: {sum(self.seconds.values()):.1f} in "
                                        f"{len(rows)} tests")
        for nodeid, seconds in rows[:self.n or None]:
            terminalreporter.write_line(f"{seconds:8.2f}s cpu  {nodeid}")
