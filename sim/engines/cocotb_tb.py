"""The cocotb bench: runs inside the simulator (started by sim/engines/cocotb.py) around the lane
harness (harness.py). The run's configuration arrives as JSON in ``FPFORGE_BENCH``.

- :class:`HarnessSession` is this engine's session (sim/stream.py): ``run(inputs)`` lays a chunk
  out as transactions of lanes x steps vectors (packed binary strings built by numpy, garbage in
  the bubbles), and for each one the **driver** writes the wide inputs and ``vmask`` and flips
  ``go``, and the **monitor** waits the transaction's cycles, checks ``done`` and ``count`` (the
  valid results the harness captured in order) and reads the wide outputs.
- :class:`HandshakeSession` runs an elastic design (harness.py): the same transactions without
  a fixed length (the monitor waits for ``done``), bubbles and stalls drawn inside the harness
  from a seed per transaction; a transaction that runs out of cycles ends the run with
  :class:`~sim.stream.NoResult` naming the first vector without a result.
- ``verify`` mode runs the one verification loop (sim/stream.py: stimulus and golden model in a
  thread, the in-order checker with its decoded reports) and ends the test with the verdict;
  ``simulate`` mode maps ``inputs.npz`` to ``outputs.npz``.
"""

from __future__ import annotations

import os

import numpy as np

import cocotb
from cocotb.triggers import RisingEdge, Timer

from fpforge.rtl.format_names import resolve
from fpforge.rtl.kinds import spec_from_dict
from fpforge.rtl.ports import Port

from ..check import raise_on_failure, write_json
from ..design import Design
from ..packing import from_binstr, to_binstr
from ..stream import NoResult, Plan, Session, check_stream, cycle_budget
from .cocotb import ENV_VAR, BenchConfig
from .harness import Harness

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


def _design(cfg: BenchConfig) -> Design:
    """The design as the bench sees it: spec, ports, what is compared, the latency."""
    ports = tuple(Port(n, d, w, n, lanes, None if f is None else resolve(f))
                  for n, d, w, lanes, f in cfg.ports)
    spec = spec_from_dict(cfg.spec) if cfg.spec is not None else None
    return Design(spec=spec, top="", ports=ports, absent=tuple(cfg.absent),
                  latency=cfg.latency, label=cfg.label, nan=cfg.nan, flags_mask=cfg.flags_mask,
                  rm_values=None if cfg.rm_values is None else tuple(cfg.rm_values))


def _threshold(p: float) -> str:
    """A chance as the 16-bit threshold a uniform 16-bit draw falls below."""
    return format(min(round(p * (1 << 16)), (1 << 16) - 1), "016b")


class HarnessSession(Session):
    """Chunks of vectors through the harness, transaction by transaction (module docstring)."""

    def __init__(self, dut, design: Design, lanes: int, steps: int, bubbles: float, rng):
        self.dut, self.design = dut, design
        self.h = Harness(design, lanes, steps)
        self.bubbles, self.rng = bubbles, rng
        self.handles = {p.name: getattr(dut, p.name) for p in design.inputs}
        self.handles["vmask"] = dut.vmask
        self.go = 0
        self.steps_run = self.valid_steps = 0
        self.chunk = max(self.h.vectors, (1 << 16) // self.h.vectors * self.h.vectors)

    async def reset(self):
        # The harness's clock rises at odd times: act at even times only (falling edges).
        self.dut.rst.value = 1
        self.dut.go.value = 0
        for h in self.handles.values():     # defined inputs from time 0 (no x into the unit)
            write_binstr(h, "0" * len(h))
        await Timer(3 * PERIOD_NS, unit="ns")
        self.dut.rst.value = 0
        await Timer(PERIOD_NS, unit="ns")

    def _valid_steps(self, rows: int) -> np.ndarray:
        """Step validity: all valid, or each step empty with probability ``bubbles``."""
        S = self.h.steps
        if self.bubbles <= 0:
            return np.array([True] * rows + [False] * (-rows % S))
        # Draw only as many steps as are still surely needed, so the generator's stream is
        # the one a step-by-step draw would use (a re-sum per step was 2/3 of the time).
        valid = np.zeros(0, dtype=bool)
        while (short := rows - int(valid.sum())) > 0:
            valid = np.concatenate([valid, self.rng.random(short) >= self.bubbles])
        return np.concatenate([valid, np.zeros(-len(valid) % S, dtype=bool)])

    async def run(self, inputs: dict) -> dict:
        L, S = self.h.lanes, self.h.steps
        n = len(next(iter(inputs.values())))
        rows = -(-n // L)                                   # valid steps needed
        valid = self._valid_steps(rows)
        steps = len(valid)
        txns = steps // S
        txn_inputs = [dict() for _ in range(txns)]
        for p in self.design.inputs:
            real = np.asarray(inputs[p.name]).reshape(n, p.lanes)
            real = np.concatenate([real, np.repeat(real[:1], rows * L - n, axis=0)])  # pad
            grid = self.rng.integers(0, 1 << p.lane_width, (steps, L, p.lanes), dtype=np.uint64)
            grid = grid.astype(np.uint32)                    # garbage in the bubbles
            grid[valid] = real.reshape(rows, L, p.lanes)
            for t, s in enumerate(to_binstr(grid.reshape(txns, S * L * p.lanes), p.lane_width)):
                txn_inputs[t][p.name] = s
        vm = valid.reshape(txns, S)
        raw = {p.name: [] for p in self.design.outputs}
        for t in range(txns):
            txn_inputs[t]["vmask"] = "".join("1" if b else "0" for b in vm[t][::-1])
            for name, h in self.handles.items():
                write_binstr(h, txn_inputs[t][name])
            self.go ^= 1
            self.dut.go.value = self.go
            # The clock runs in the simulator; one timer covers the whole transaction.
            await Timer(PERIOD_NS * (self.h.cycles + 1), unit="ns")
            self.steps_run += S
            self.valid_steps += int(vm[t].sum())
            done, count = int(self.dut.done.value), int(self.dut.count.value)
            if not done or count != int(vm[t].sum()):
                raise AssertionError(f"harness protocol: done={done}, {count} results captured "
                                     f"for {int(vm[t].sum())} valid steps (lost or extra valid "
                                     "output)")
            for p in self.design.outputs:
                raw[p.name].append(read_binstr(getattr(self.dut, p.name)))
        # Results of valid steps only, in order: count * L vectors at the bottom of each value.
        # x/z bits become a code no format has: reported as mismatches, with their inputs.
        keep = np.concatenate([np.arange(v * L) + t * L * S for t, v in enumerate(vm.sum(axis=1))])
        out = {}
        for p in self.design.outputs:
            codes = from_binstr(raw[p.name], p.lane_width, L * S * p.lanes, undefined="mark")
            codes = codes.reshape(txns * L * S, p.lanes)[keep][:n]
            out[p.name] = codes[:, 0] if p.lanes == 1 else codes
        return out


class HandshakeSession(Session):
    """Chunks of vectors through an elastic design's harness (module docstring): every slot
    of a transaction is a real vector (the last one padded with repeats), and bubbles and
    stalls are the harness's per-cycle draws."""

    def __init__(self, dut, design: Design, lanes: int, steps: int, plan: Plan, rng):
        self.dut, self.design, self.rng = dut, design, rng
        self.h = Harness(design, lanes, steps)
        self.bubbles, self.stalls = plan.bubbles, plan.stalls
        self.budget = cycle_budget(plan.stalls, plan.bubbles)
        self.handles = {p.name: getattr(dut, p.name) for p in design.inputs}
        self.go = 0
        self.offset = 0             # vectors run before this chunk (for "vector K")
        self.steps_run = self.valid_steps = 0
        self.chunk = max(self.h.vectors, (1 << 16) // self.h.vectors * self.h.vectors)

    async def reset(self):
        self.dut.rst.value = 1
        self.dut.go.value = 0
        self.dut.seed.value = 1
        self.dut.budget.value = self.budget
        write_binstr(self.dut.stall_t, _threshold(self.stalls))
        write_binstr(self.dut.bubble_t, _threshold(self.bubbles))
        for h in self.handles.values():
            write_binstr(h, "0" * len(h))
        await Timer(3 * PERIOD_NS, unit="ns")
        self.dut.rst.value = 0
        await Timer(PERIOD_NS, unit="ns")

    async def run(self, inputs: dict) -> dict:
        L, S = self.h.lanes, self.h.steps
        n = len(next(iter(inputs.values())))
        txns = -(-n // (L * S))
        binstrs = {}
        for p in self.design.inputs:
            real = np.asarray(inputs[p.name]).reshape(n, p.lanes)
            grid = np.resize(real, (txns * S * L, p.lanes)).astype(np.uint32)  # pad: repeats
            binstrs[p.name] = to_binstr(grid.reshape(txns, S * L * p.lanes), p.lane_width)
        raw = {p.name: [] for p in self.design.outputs}
        for t in range(txns):
            for name, h in self.handles.items():
                write_binstr(h, binstrs[name][t])
            self.dut.seed.value = int(self.rng.integers(1, 1 << 32))
            self.go ^= 1
            self.dut.go.value = self.go
            await RisingEdge(self.dut.done)
            await Timer(Harness.HALF_PERIOD, unit="ns")     # back on a falling edge
            self.steps_run += S
            self.valid_steps += S
            for p in self.design.outputs:
                raw[p.name].append(read_binstr(getattr(self.dut, p.name)))
            if int(self.dut.stuck.value):
                k = min(n, t * L * S + self._first_missing())
                raise NoResult(self.budget, self.offset + k, self._outputs(raw, k))
        self.offset += n
        return self._outputs(raw, n)

    def _first_missing(self) -> int:
        """The first vector of the transaction without a result: lane j has delivered
        ``op_j`` results, so its next is vector op_j * L + j; every vector before the least of
        those has its result."""
        L, S = self.h.lanes, self.h.steps
        cw = S.bit_length()
        bits = read_binstr(self.dut.delivered)
        done = [int(bits[len(bits) - (j + 1) * cw:len(bits) - j * cw], 2) for j in range(L)]
        return min(op * L + j for j, op in enumerate(done) if op < S)

    def _outputs(self, raw: dict, n: int) -> dict:
        """The first ``n`` results of the transactions read into ``raw``, in order."""
        L, S = self.h.lanes, self.h.steps
        out = {}
        for p in self.design.outputs:
            codes = from_binstr(raw[p.name], p.lane_width, L * S * p.lanes, undefined="mark")
            codes = codes.reshape(len(raw[p.name]) * L * S, p.lanes)[:n]
            out[p.name] = codes[:, 0] if p.lanes == 1 else codes
        return out


@cocotb.test()
async def bench(dut):
    cfg = BenchConfig.from_json(os.environ[ENV_VAR])
    design = _design(cfg)
    plan = Plan(**cfg.plan)
    dut._log.info("bench %s: %s\n    stimulus %s, seed %d, %d lanes x %d steps per transaction, "
                  "bubbles %.2f%s%s", design.label,
                  design.spec.describe() if design.spec else "(no spec)", plan.stimulus,
                  plan.seed, cfg.lanes, cfg.steps, plan.bubbles,
                  f", handshake, stalls {plan.stalls:.2f}" if cfg.handshake else "",
                  f"; not compared: {', '.join(design.absent)}" if design.absent else "")
    rng = np.random.default_rng([plan.seed, 1])
    session = HandshakeSession(dut, design, cfg.lanes, cfg.steps, plan, rng) \
        if cfg.handshake else HarnessSession(dut, design, cfg.lanes, cfg.steps, plan.bubbles, rng)
    await session.reset()
    if cfg.mode == "simulate":
        with np.load(cfg.inputs_path) as f:
            inputs = {p: f[p] for p in f.files}
        np.savez(cfg.outputs_path, **await session.run(inputs))
        write_json(cfg.report_path, {"spec": design.label, "steps": session.steps_run})
        return
    checker, summary = await check_stream(
        session, design, plan, report_path="", progress_path=cfg.progress_path,
        engine="cocotb", lanes=cfg.lanes, steps=cfg.steps, bubbles=plan.bubbles)
    summary |= {"steps": session.steps_run, "valid_steps": session.valid_steps}
    write_json(cfg.report_path, summary)
    dut._log.info("%d vectors in %.1f s (%.0f vectors/s; golden model %.1f s, waited for it "
                  "%.1f s), %d mismatches", checker.vectors, summary["elapsed_s"],
                  summary["vectors_per_s"], summary["golden_s"],
                  summary["waited_for_reference_s"], checker.mismatches)
    if summary.get("failed"):
        raise AssertionError(summary["failed"])
    raise_on_failure(checker, design.label, plan.seed)
