"""The cocotb bench of the MX units (mxq, mxdq, dot): reference, driver, monitor, checker.

Runs inside the simulator (started by :mod:`sim.bench.mx_runner`), with the unit itself as the
top level. The configuration (:class:`~sim.bench.mx_stimulus.MxBenchConfig`) arrives as JSON in
``FPFORGE_BENCH``; a JSON summary is written to its ``report_path`` at the end.

- **Reference**: the seeded stimulus rows and the golden model's outputs for all of them, before
  the simulation starts (an MX run is thousands of vectors: one golden call, one compile).
- **Combinational unit** (0 stages, no clock): per vector, write the inputs, wait 1 ns, read the
  outputs.
- **Pipelined unit**: a clock, reset, then a **Driver** that offers one vector per cycle with
  ``valid_i`` low (and garbage on the data inputs) with probability ``bubbles``, and a
  **Monitor** that keeps the outputs of every cycle with ``valid_o`` high. As many results as
  vectors must come out, in order; the checker pairs them up by position.
- **Checker** (:class:`~sim.bench.mx_reference.MxChecker`): every output port, bit for bit.

Wide values travel as binary strings built by numpy (:mod:`sim.bench.packing`), never a Python
int or a LogicArray per element.
"""

from __future__ import annotations

import os
import time

import numpy as np

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import FallingEdge, Timer

from rtl.fp_units import mx_port_layout
from sim.bench.checking import raise_on_failure, write_json
from sim.bench.config import ENV_VAR
from sim.bench.mx_reference import MxChecker, expected, output_formats
from sim.bench.mx_stimulus import MxBenchConfig, generate
from sim.bench.packing import from_binstr, to_binstr
from sim.bench.tb import read_binstr, write_binstr

PERIOD_NS = 2
RESET_CYCLES = 3
GARBAGE_ROWS = 64      # distinct garbage inputs cycled through in the bubbles


class Driver:
    """Offers the vectors to a pipelined unit, one per cycle, with random bubbles."""

    def __init__(self, dut, rows: dict, layout_in: dict, bubbles: float, rng):
        self.dut, self.rows, self.bubbles, self.rng = dut, rows, bubbles, rng
        self.handles = {p: getattr(dut, p) for p in rows}
        self.garbage = {p: to_binstr(rng.integers(0, 1 << w, (GARBAGE_ROWS, c), np.uint64), w)
                        for p, (c, w) in layout_in.items()}
        self.cycles = 0

    def _write(self, valid: bool, i: int):
        for p, h in self.handles.items():
            write_binstr(h, self.rows[p][i] if valid else self.garbage[p][i % GARBAGE_ROWS])
        self.dut.valid_i.value = int(valid)

    async def reset(self):
        self.dut.rst.value = 1
        self._write(False, 0)
        for _ in range(RESET_CYCLES):
            await FallingEdge(self.dut.clk)
        self.dut.rst.value = 0

    async def run(self):
        n = len(next(iter(self.rows.values())))
        i = 0
        while i < n:
            await FallingEdge(self.dut.clk)
            valid = self.bubbles == 0 or self.rng.random() >= self.bubbles
            self._write(valid, i if valid else self.cycles)
            i += valid
            self.cycles += 1
        await FallingEdge(self.dut.clk)
        self._write(False, self.cycles)


class Monitor:
    """Keeps a pipelined unit's outputs on every cycle with ``valid_o`` high, in order."""

    def __init__(self, dut, outputs):
        self.dut = dut
        self.handles = {p: getattr(dut, p) for p in outputs}
        self.rows = {p: [] for p in outputs}

    async def run(self):
        while True:
            # Outputs come from registers: stable at the falling edge, whatever the driver writes.
            await FallingEdge(self.dut.clk)
            if read_binstr(self.dut.valid_o) == "1":
                for p, h in self.handles.items():
                    self.rows[p].append(read_binstr(h))


async def run_pipelined(dut, rows: dict, layout: tuple, cfg: MxBenchConfig, latency: int):
    Clock(dut.clk, PERIOD_NS, unit="ns").start()
    driver = Driver(dut, rows, layout[0], cfg.bubbles, np.random.default_rng([cfg.seed, 1]))
    monitor = Monitor(dut, layout[1])
    await driver.reset()
    watch = cocotb.start_soon(monitor.run())
    await driver.run()
    for _ in range(latency + 4):              # the last results, and any extra valid_o
        await FallingEdge(dut.clk)
    watch.cancel()
    n = len(next(iter(rows.values())))
    got = len(next(iter(monitor.rows.values())))
    if got != n:
        raise AssertionError(f"pipeline protocol: {got} results with valid_o for {n} vectors "
                             f"with valid_i ({driver.cycles} cycles, latency {latency})")
    return monitor.rows, driver.cycles


async def run_combinational(dut, rows: dict, outputs) -> dict:
    ins = {p: getattr(dut, p) for p in rows}
    outs = {p: getattr(dut, p) for p in outputs}
    got = {p: [] for p in outputs}
    for i in range(len(next(iter(rows.values())))):
        for p, h in ins.items():
            write_binstr(h, rows[p][i])
        await Timer(1, unit="ns")
        for p, h in outs.items():
            got[p].append(read_binstr(h))
    return got


@cocotb.test()
async def mx_bench(dut):
    cfg = MxBenchConfig.from_json(os.environ[ENV_VAR])
    spec = cfg.unit_spec
    layout = mx_port_layout(spec)
    dut._log.info("bench %s\n    %s\n    stimulus %s, seed %d, bubbles %.2f%s",
                  spec.default_name, spec.describe(), cfg.stimulus, cfg.seed, cfg.bubbles,
                  f", FAULT INJECTED: {cfg.fault}" if cfg.fault else "")
    t0 = time.perf_counter()
    inputs = generate(spec, cfg.stimulus, cfg.seed)
    want = expected(spec, inputs)
    golden_s = time.perf_counter() - t0
    rows = {p: to_binstr(inputs[p], w) for p, (_, w) in layout[0].items()}

    ts = time.perf_counter()
    cycles = None
    if spec.stages:
        got, cycles = await run_pipelined(dut, rows, layout, cfg, spec.stages)
    else:
        got = await run_combinational(dut, rows, layout[1])
    sim_s = time.perf_counter() - ts
    # x/z bits become a code no port has (packing.UNDEFINED): reported as mismatches.
    got = {p: from_binstr(got[p], w, c, undefined="mark") for p, (c, w) in layout[1].items()}
    checker = MxChecker(layout, output_formats(spec), max_report=cfg.max_report)
    checker.check(inputs, want, got)

    elapsed = time.perf_counter() - t0
    write_json(cfg.report_path, {
        "spec": spec.default_name, "describe": spec.describe(), "seed": cfg.seed,
        "stimulus": cfg.stimulus, "bubbles": cfg.bubbles, "fault": cfg.fault,
        "vectors": checker.vectors, "mismatches": checker.mismatches,
        "first_mismatches": checker.lines, "cycles": cycles, "elapsed_s": elapsed,
        "golden_s": golden_s, "simulator_s": sim_s,
        "vectors_per_s": checker.vectors / max(sim_s, 1e-9)})
    dut._log.info("%d vectors in %.1f s (golden model %.1f s, simulation %.1f s), %d mismatches",
                  checker.vectors, elapsed, golden_s, sim_s, checker.mismatches)
    raise_on_failure(checker, spec.default_name, cfg.seed)
