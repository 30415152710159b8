"""The cocotb bench: driver, monitor, reference and an in-order checker around the harness.

Runs inside the simulator (started by :mod:`sim.bench.runner`). The configuration arrives as
JSON in ``FPFORGE_BENCH``; a JSON summary is written to ``report_path`` at the end.

- **Reference** (a thread): draws stimulus chunks, evaluates the golden model on each chunk in
  one call (a fixed batch size, so JAX compiles once) and lays the chunk out as transactions
  (packed binary strings, bubbles filled with garbage). It runs ahead of the simulation: XLA
  releases the GIL, so the next chunk's golden evaluation overlaps this chunk's simulation.
- **Driver**: writes one transaction's wide inputs and ``vmask``, then flips ``go``.
- **Monitor**: after the transaction's cycles, checks ``done`` and ``count`` (the number of
  valid results the harness captured in order) and reads the wide outputs.
- **Checker**: in order, compares the monitor's results with the reference's with the injected
  ``compare`` (bit-exact by default), counts, and keeps the first mismatches decoded.
"""

from __future__ import annotations

import os
import queue
import threading
import time
from dataclasses import dataclass

import numpy as np

import cocotb
from cocotb.triggers import Timer

from sim.bench.config import ENV_VAR, BenchConfig
from sim.bench.harness import Harness, port_widths
from sim.bench.packing import from_binstr, to_binstr
from sim.bench.checking import (Checker, golden_expected, progress_record, raise_on_failure,
                                 summary_record, write_json)
from sim.bench.report import header
from sim.bench.stimulus import generate

try:    # cocotb's own write path (deferred to ReadWrite where the simulator needs it), minus
    # the per-call validation of a 16k-character string that ``handle.value = str`` does.
    from cocotb.handle import _GPISetAction, _schedule_write

    def write_binstr(handle, value: str) -> None:
        _schedule_write(handle, handle._handle.set_signal_val_binstr, _GPISetAction.DEPOSIT,
                        value)
except ImportError:  # pragma: no cover - other cocotb versions
    def write_binstr(handle, value: str) -> None:
        handle.value = value


def read_binstr(handle) -> str:
    return handle._handle.get_signal_val_binstr()


PERIOD_NS = 2 * Harness.HALF_PERIOD


@dataclass
class Chunk:
    """A run of transactions and what they must produce."""
    index0: int                     # number of the chunk's first vector in the run
    inputs: dict                    # real vectors only: port -> codes (for reports)
    exp_y: np.ndarray
    exp_flags: np.ndarray
    txn_inputs: list                # per transaction: {port: binstr}
    txn_valid_steps: list           # per transaction: number of valid steps
    golden_s: float


class Reference:
    """Stimulus -> golden model -> transactions, in a background thread."""

    def __init__(self, cfg: BenchConfig, geometry: Harness, depth: int = 3):
        self.cfg, self.spec, self.h = cfg, cfg.unit_spec, geometry
        self.rng = np.random.default_rng(cfg.seed)
        self.chunk = max(geometry.vectors, cfg.batch // geometry.vectors * geometry.vectors)
        self.queue: queue.Queue = queue.Queue(maxsize=depth)
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="reference", daemon=True)

    def start(self):
        self._thread.start()

    def _run(self):
        try:
            index = 0
            for part, params in self.cfg.stimulus:
                for inputs in generate(self.spec, part, params, self.rng, self.chunk):
                    c = self._chunk(index, inputs)
                    index += len(c.exp_y)
                    self.queue.put(c)
        except BaseException as e:   # reported by the bench, not lost in the thread
            self.error = e
        self.queue.put(None)

    def _chunk(self, index0: int, inputs: dict) -> Chunk:
        t0 = time.perf_counter()
        exp_y, exp_flags = golden_expected(self.spec, inputs, self.chunk)
        golden_s = time.perf_counter() - t0
        L, S = self.h.lanes, self.h.steps
        n = len(exp_y)
        rows = -(-n // L)                                   # valid steps needed
        # Step validity: all valid, or each step empty with probability ``bubbles``.
        if self.cfg.bubbles > 0:
            # Draw only as many steps as are still surely needed, so the generator's stream is
            # the one a step-by-step draw would use (a re-sum per step was 2/3 of the time).
            valid = np.zeros(0, dtype=bool)
            while (short := rows - int(valid.sum())) > 0:
                valid = np.concatenate([valid, self.rng.random(short) >= self.cfg.bubbles])
            valid = np.concatenate([valid, np.zeros(-len(valid) % S, dtype=bool)])
        else:
            valid = np.array([True] * rows + [False] * (-rows % S))
        steps = len(valid)
        txns = steps // S
        widths = self.h.widths
        txn_inputs = [dict() for _ in range(txns)]
        for p in self.h.inputs:
            real = inputs[p]
            real = np.concatenate([real, np.repeat(real[:1], rows * L - n)])   # pad last row
            grid = self.rng.integers(0, 1 << widths[p], (steps, L), dtype=np.uint64)
            grid = grid.astype(np.uint32)                    # garbage in the bubbles
            grid[valid] = real.reshape(rows, L)
            for t, s in enumerate(to_binstr(grid.reshape(txns, S * L), widths[p])):
                txn_inputs[t][p] = s
        vm = valid.reshape(txns, S)
        for t in range(txns):
            txn_inputs[t]["vmask"] = "".join("1" if b else "0" for b in vm[t][::-1])
        return Chunk(index0, inputs, exp_y, exp_flags, txn_inputs,
                     [int(x) for x in vm.sum(axis=1)], golden_s)

    def __iter__(self):
        while True:
            item = self.queue.get()
            if item is None:
                if self.error is not None:
                    raise self.error
                return
            yield item


class Driver:
    def __init__(self, dut, h: Harness):
        self.dut, self.h = dut, h
        self.handles = {p: getattr(dut, p) for p in h.inputs + ["vmask"]}
        self.go = 0

    async def reset(self):
        # The harness's clock rises at odd times: act at even times only (falling edges).
        self.dut.rst.value = 1
        self.dut.go.value = 0
        for h in self.handles.values():     # defined inputs from time 0 (no x into the unit)
            write_binstr(h, "0" * len(h))
        await Timer(3 * PERIOD_NS, unit="ns")
        self.dut.rst.value = 0
        await Timer(PERIOD_NS, unit="ns")

    def send(self, txn: dict):
        for p, h in self.handles.items():
            write_binstr(h, txn[p])
        self.go ^= 1
        self.dut.go.value = self.go


class Monitor:
    def __init__(self, dut, h: Harness):
        self.dut, self.h = dut, h
        self.y, self.flags = dut.y, dut.flags

    async def collect(self, valid_steps: int) -> tuple[str, str]:
        # The clock runs in the simulator; one timer covers the whole transaction.
        await Timer(PERIOD_NS * (self.h.cycles + 1), unit="ns")
        done, count = int(self.dut.done.value), int(self.dut.count.value)
        if not done or count != valid_steps:
            raise AssertionError(f"harness protocol: done={done}, {count} results captured for "
                                 f"{valid_steps} valid steps (lost or extra valid_o)")
        return read_binstr(self.y), read_binstr(self.flags)


@cocotb.test()
async def bench(dut):
    cfg = BenchConfig.from_json(os.environ[ENV_VAR])
    spec = cfg.unit_spec
    h = Harness(spec, cfg.lanes, cfg.steps)
    log = dut._log
    log.info("bench %s\n    %s\n    stimulus %s, seed %d, %d lanes x %d steps per transaction, "
             "bubbles %.2f%s", spec.default_name, header(spec), cfg.stimulus, cfg.seed,
             cfg.lanes, cfg.steps, cfg.bubbles,
             f", FAULT INJECTED: {cfg.fault}" if cfg.fault else "")
    widths = port_widths(spec)
    driver, monitor = Driver(dut, h), Monitor(dut, h)
    checker = Checker(spec, max_report=cfg.max_report)
    reference = Reference(cfg, h)
    await driver.reset()
    reference.start()

    t0 = last = time.perf_counter()
    golden_s = wait_s = sim_s = 0.0
    it = iter(reference)
    while True:
        tw = time.perf_counter()
        chunk = next(it, None)
        wait_s += time.perf_counter() - tw
        if chunk is None:
            break
        golden_s += chunk.golden_s
        ys, fs = [], []
        for txn, vsteps in zip(chunk.txn_inputs, chunk.txn_valid_steps):
            ts = time.perf_counter()
            driver.send(txn)
            y, f = await monitor.collect(vsteps)
            sim_s += time.perf_counter() - ts
            ys.append(y)
            fs.append(f)
        # Results of valid steps only, in order: count * L codes at the bottom of each value.
        # x/z bits become a code no format has: reported as mismatches, with their operands.
        got_y = from_binstr(ys, widths["y"], h.vectors, undefined="mark")
        got_f = from_binstr(fs, widths["flags"], h.vectors, undefined="mark")
        keep = np.concatenate([np.arange(v * h.lanes) + t * h.vectors
                               for t, v in enumerate(chunk.txn_valid_steps)])
        checker.check(chunk.inputs, chunk.index0, chunk.exp_y, chunk.exp_flags,
                      got_y.reshape(-1)[keep], got_f.reshape(-1)[keep])
        now = time.perf_counter()
        if now - last > 1.0:
            last = now
            write_json(cfg.progress_path, progress_record(checker, now - t0))
    elapsed = time.perf_counter() - t0
    summary = summary_record(checker, cfg, elapsed, golden_s=golden_s,
                             waited_for_reference_s=wait_s, simulator_s=sim_s,
                             lanes=cfg.lanes, steps=cfg.steps)
    write_json(cfg.progress_path, progress_record(checker, elapsed, done=True))
    write_json(cfg.report_path, summary)
    log.info("%d vectors in %.1f s (%.0f vectors/s; golden model %.1f s, waited for it %.1f s), "
             "%d mismatches", checker.vectors, elapsed, summary["vectors_per_s"], golden_s,
             wait_s, checker.mismatches)
    raise_on_failure(checker, spec.default_name, cfg.seed)
