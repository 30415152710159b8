"""The one verification loop every engine runs: stimulus -> golden model -> the design -> checker.

An engine provides a *session* on a built design: ``await session.run(inputs) -> outputs`` maps
a chunk of input arrays (``{port: array}``, sim/stimulus/'s shapes) to the design's output
arrays, and may offer ``submit(inputs)`` / ``await collect()`` to keep one chunk in flight while
the next is prepared. :func:`check_stream` draws the stimulus and evaluates the golden model in
a background thread (XLA releases the GIL, so the next chunk's golden evaluation overlaps this
chunk's simulation), feeds the session in order and checks every result.

The loop is a coroutine so that the cocotb engine can run it inside the simulator, where a
session awaits simulator triggers; the other engines run it with ``asyncio.run``.
"""

from __future__ import annotations

import math
import queue
import threading
import time
from dataclasses import asdict, dataclass, field

import numpy as np

from .check import (Checker, comparison, expected, expected_index, progress_record, summary_record,
                    write_json)
from .design import Design
from .stimulus import generate
from .stimulus.base import IndexChunk, space_size
from .vectors import DUMP_MAX, FailingDump

__all__ = ["Plan", "check_stream", "Session", "NoResult", "cycle_budget", "NO_RESULT_CYCLES"]


NO_RESULT_CYCLES = 1000


def cycle_budget(stalls: float = 0.0, bubbles: float = 0.0) -> int:
    """Clock cycles a handshake design may run without delivering a result while it owes one
    before the run stops: NO_RESULT_CYCLES at full speed (an iterative unit of 64 cycles per
    operation delivers 15 times in that), stretched by the chance that a cycle offers an
    operation and takes a result."""
    return math.ceil(NO_RESULT_CYCLES / ((1 - stalls) * (1 - bubbles)))


class NoResult(RuntimeError):
    """A handshake design delivered no result for a vector within its cycle budget: the run
    stops there (``str``: "no result after N cycles for vector K"). ``outputs``: the chunk's
    results before vector K (the session's ``run`` would have returned them), still checked."""

    def __init__(self, cycles: int, vector: int, outputs: dict | None = None):
        super().__init__(f"no result after {cycles} cycles for vector {vector}")
        self.cycles, self.vector, self.outputs = cycles, vector, outputs


@dataclass(frozen=True)
class Plan:
    """What a run checks: ``stimulus`` parts (sim/stimulus/) in order, drawn from ``seed``;
    ``bubbles``: the chance that a cycle carries no operation (pipelined designs, cocotb);
    ``stalls``: the chance that the bench holds a handshake design's output-ready low in a
    cycle (cocotb);
    ``batch``: vectors per golden-model call (one compiled shape); ``max_report``: decoded
    mismatches kept; ``dump``: a file for the failing vectors (sim/vectors.py), at most
    ``dump_max`` lines."""

    stimulus: list
    seed: int = 1
    bubbles: float = 0.0
    batch: int = 1 << 16
    max_report: int = 10
    dump: str = ""
    dump_max: int = DUMP_MAX
    options: dict = field(default_factory=dict)     # engine-specific (lanes, steps, ...)
    stalls: float = 0.0

    def to_dict(self) -> dict:
        return asdict(self)


class Session:
    """What an engine's session offers (the protocol; engines subclass it)."""

    chunk: int = 1 << 16          # vectors per run() the engine prefers

    async def run(self, inputs: dict) -> dict:
        raise NotImplementedError

    def submit(self, inputs: dict) -> None:
        self._pending = inputs

    async def collect(self) -> dict:
        return await self.run(self._pending)


class _Reference:
    """Stimulus -> golden outputs, chunk by chunk, ahead of the simulation in a thread."""

    def __init__(self, design: Design, plan: Plan, chunk: int, depth: int = 3,
                 narrow: bool = False, index: bool = False):
        self.design, self.plan, self.chunk, self.narrow = design, plan, chunk, narrow
        self.index = index
        self.queue: queue.Queue = queue.Queue(maxsize=depth)
        self.error: BaseException | None = None
        self.golden_s = 0.0
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="reference", daemon=True)
        self._thread.start()

    def _run(self):
        spec, plan = self.design.spec, self.plan
        try:
            rng = np.random.default_rng(plan.seed)
            index = 0
            batch = max(self.chunk, plan.batch)
            for inputs in self._index_chunks(batch) if self.index else \
                    generate(spec, plan.stimulus, rng, self.chunk, self.design.rm_values,
                             narrow=self.narrow):
                if self._stop:
                    break
                t0 = time.perf_counter()
                want = None
                if isinstance(inputs, IndexChunk):
                    want = expected_index(spec, inputs.start, inputs.vectors, batch)
                if want is None:
                    want = expected(spec, inputs, batch, wide=not self.narrow)
                self.golden_s += time.perf_counter() - t0
                n = len(next(iter(want.values())))
                self.queue.put((index, inputs, want))
                index += n
        except BaseException as e:   # reported by the loop, not lost in the thread
            self.error = e
        self.queue.put(None)

    def _index_chunks(self, batch: int):
        """The plan's one exhaustive part as index ranges (:class:`IndexChunk`): the golden model
        splits the index itself (check.expected_index), the inputs are drawn only if read."""
        params = self.plan.stimulus[0][1]
        start = int(params.get("start", 0))
        stop = int(params.get("stop", space_size(self.design.spec)))
        chunk = min(self.chunk, batch)
        for s in range(start, stop, chunk):
            yield IndexChunk(self.design.spec, s, min(stop, s + chunk))

    def __iter__(self):
        while (item := self.queue.get()) is not None:
            yield item
        if self.error is not None:
            raise self.error

    def stop(self):
        self._stop = True
        while self._thread.is_alive():      # unblock a full queue
            try:
                self.queue.get_nowait()
            except queue.Empty:
                time.sleep(0.01)


async def check_stream(session: Session, design: Design, plan: Plan, *, compare=None,
                       progress_path: str = "", report_path: str = "", engine: str = "",
                       pipelined: bool = False, narrow: bool = False, index: bool = False,
                       **extra) -> tuple[Checker, dict]:
    """Run ``plan`` through ``session``; returns the checker and the run's summary (also
    written to ``report_path``). ``pipelined``: keep one chunk in flight (submit / collect).
    ``narrow``: exhaustive stimulus codes and golden outputs in their narrowest dtypes (half the
    golden model's time for 16-bit operands), for a session that takes any unsigned dtype and
    whose outputs never hold UNDEFINED (the native engine).
    ``index``: the plan is one exhaustive part of at most 2^32 inputs, nothing held, no rm or
    rbits, and the session draws the inputs itself (the native engine's ``fast --index``): the
    golden model then splits the index too, and the inputs are drawn here only for a chunk with
    a mismatch (its report, classes and dump are the same).
    A session that raises :class:`NoResult` ends the run: the summary's ``failed`` says why."""
    spec = design.spec
    dump = FailingDump(plan.dump, spec, design.label, plan.dump_max) if plan.dump else None
    checker = Checker(spec, design.inputs, design.outputs, max_report=plan.max_report,
                      absent=design.absent, dump=dump,
                      compare=compare or comparison(design.nan, design.outputs,
                                                    design.flags_mask))
    ref = _Reference(design, plan, session.chunk, narrow=narrow, index=index)
    t0 = last = time.perf_counter()
    sim_s = wait_s = 0.0
    failed = {}
    try:
        items = iter(ref)
        pending = None
        while True:
            tw = time.perf_counter()
            item = next(items, None)
            wait_s += time.perf_counter() - tw
            ts = time.perf_counter()
            if pipelined:
                if item is not None:
                    session.submit(item[1])
                if pending is not None:
                    index0, inputs, want = pending
                    checker.check(inputs, index0, want, await session.collect())
                pending = item
                if item is None:
                    break
            else:
                if item is None:
                    break
                index0, inputs, want = item
                checker.check(inputs, index0, want, await session.run(inputs))
            sim_s += time.perf_counter() - ts
            now = time.perf_counter()
            if now - last > 1.0:
                last = now
                write_json(progress_path, progress_record(checker, now - t0))
    except NoResult as err:
        failed = {"failed": str(err)}
        n = len(next(iter(err.outputs.values()))) if err.outputs else 0
        if n:                   # the chunk's results before the first missing one
            checker.check(inputs, index0, {p: v[:n] for p, v in want.items()}, err.outputs)
    finally:
        ref.stop()
    elapsed = time.perf_counter() - t0
    write_json(progress_path, progress_record(checker, elapsed, done=True))
    summary = summary_record(checker, name=design.label, seed=plan.seed,
                             stimulus=plan.stimulus, elapsed_s=elapsed, golden_s=ref.golden_s,
                             waited_for_reference_s=wait_s, simulator_s=sim_s, engine=engine,
                             nan=design.nan, **failed, **extra)
    if dump is not None:
        summary["dump"] = dump.close()
    write_json(report_path, summary)
    return checker, summary
