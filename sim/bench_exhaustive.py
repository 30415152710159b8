"""``make bench-exhaustive``: an exhaustive run's rate against its ceiling, the simulator alone.

A run of the native engine (sim/engines/native.py) spends its CPU in three places: the
simulator processes (Verilator's model, one per shard), the golden model (JAX, in each shard's
reference thread) and the rest of the Python loop (stimulus, packing, comparison; in an
exhaustive run the simulator draws its inputs from the index, ``fast --index``, and the golden
model splits the index inside its compiled program: no stimulus, no input packing). On a
machine with as many cores as shards, the best a run can do is the simulators' own rate with nothing
else on the cores, so that is the figure it is measured against, in the same run:

1. the stages on one core, chunk by chunk, as the loop runs them (CPU ns per vector);
2. the bare simulators: ``shards`` processes of ``fast --bare`` at once (no pipes, no golden
   model, no comparison);
3. the run: ``verify_exhaustive`` on the first ``vectors`` inputs, ``shards`` shards.

Steps 2 and 3 run on each exhaustive engine in turn, the native engine (Verilator) and the gates
engine (sim/engines/gates.py; designs without a handshake), so the two compare in one run.

It prints the three, the run's rate as a fraction of the bare rate (by wall time, and by CPU time
per vector: on a shared machine the wall-time ratio mostly measures the other processes) and the
time 2^32 inputs (or the whole space, if smaller) would take.
"""

from __future__ import annotations

import os
import time

import numpy as np

from .design import Design

__all__ = ["stage_profile", "bare_rate", "run_bench"]


def stage_profile(design: Design, chunks: int = 8, chunk: int = 1 << 20) -> dict[str, float]:
    """CPU ns per vector of the loop's Python stages on ``chunks`` chunks of the input space, as
    the native engine runs them: where the simulator draws the inputs from the index (``fast
    --index``), the golden model splitting the index itself and no stimulus or input packing;
    else narrow stimulus codes, packed for the pipe. Unpacking: the outputs out of bytes read
    from the pipe."""
    from .check import Checker, comparison, expected, expected_index
    from .engines.cocotb import bench_env
    from .engines.native import NativeEngine, NativeTop, keep_heap
    from .stimulus.base import IndexChunk, exhaustive, space_size
    from .stream import Plan
    os.environ.update(bench_env())
    keep_heap()                     # as the run does
    spec, top = design.spec, NativeTop(design)
    n = min(chunk, space_size(spec))
    index = NativeEngine().index_start(design, Plan([["exhaustive", {"stop": n}]])) is not None \
        and expected_index(spec, 0, n, n) is not None                     # compiled first
    expected(spec, exhaustive(spec, 0, n, narrow=True), n, wide=False)   # compiled first
    checker = Checker(spec, design.inputs, design.outputs,
                      compare=comparison(design.nan, design.outputs, design.flags_mask))
    spent = dict.fromkeys(("stimulus", "golden model", "packing", "comparison"), 0.0)

    def timed(stage, f):
        t0 = time.process_time()
        out = f()
        spent[stage] += time.process_time() - t0
        return out
    for k in range(chunks):
        lo = k * n % space_size(spec)
        if index:
            inputs = IndexChunk(spec, lo, lo + n)
            want = timed("golden model", lambda: expected_index(spec, lo, n, n))
        else:
            inputs = timed("stimulus", lambda: exhaustive(spec, lo, lo + n, narrow=True))
            want = timed("golden model", lambda: expected(spec, inputs, n, wide=False))
        got = timed("packing", lambda: _through_pipe(top, inputs, want, index))
        timed("comparison", lambda: checker.check(inputs, lo, want, got))
    if checker.mismatches:
        raise AssertionError(f"{checker.mismatches} mismatches of the golden model with itself")
    return {stage: s / (chunks * n) * 1e9 for stage, s in spent.items()}


def _through_pipe(top, inputs: dict, want: dict, index: bool) -> dict:
    """What the native session does to a chunk besides simulating it: the inputs into their
    containers (not in an index run), the outputs (here the expected ones) out of bytes read
    from the pipe."""
    for p in () if index else top.design.inputs:
        np.ascontiguousarray(inputs[p.name], f"<u{top.bytes[p.name]}")
    return {p: np.frombuffer(bytearray(np.ascontiguousarray(v, f"<u{top.bytes[p]}")),
                             f"<u{top.bytes[p]}") for p, v in want.items()}


def bare_rate(design: Design, vectors: int, shards: int, exe=None, engine: str = "native") -> dict:
    """``shards`` bare simulators of ``engine`` at once on ``vectors`` vectors in all: their wall
    time (the slowest), CPU seconds and rate."""
    from .engines import engine as get_engine
    eng = get_engine(engine)
    t0 = time.perf_counter()
    procs = [eng.bare(design, vectors // shards, exe=exe) for _ in range(shards)]
    cpu = 0.0
    for p in procs:
        p.stdout.read()
        _, status, usage = os.wait4(p.pid, 0)
        if os.waitstatus_to_exitcode(status):
            raise RuntimeError(f"the bare simulator failed (exit {status})")
        cpu += usage.ru_utime + usage.ru_stime
    wall = time.perf_counter() - t0
    done = shards * -(-(vectors // shards) // eng.lanes) * eng.lanes
    return {"vectors": done, "wall_s": wall, "cpu_s": cpu, "vectors_per_s": done / wall,
            "vectors_per_cpu_s": done / cpu}


def run_bench(design: Design, *, vectors: int = 1 << 28, shards: int = 0, log=print) -> int:
    """Both exhaustive engines on ``design`` in one run (the gates engine where it takes the
    design), each against its own bare simulators; 0 if every run passed."""
    from .engines import EXHAUSTIVE_ENGINES, engine as get_engine
    from .errors import DesignError
    from .stimulus.base import space_size
    shards = shards or os.cpu_count() or 1
    total = space_size(design.spec)
    vectors = min(vectors, total)
    exes = {}
    for name in EXHAUSTIVE_ENGINES:
        try:
            exes[name] = get_engine(name).build(design)
        except DesignError as e:
            log(f"  ({name} engine: {e})")
    log(f"bench-exhaustive {design.label}: {vectors:,} of {total:,} inputs, {shards} shard(s), "
        f"{os.cpu_count()} cores, load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    stages = stage_profile(design)
    log("  Python stages, one core (CPU ns per vector): " +
        ", ".join(f"{k} {v:.1f}" for k, v in stages.items()) +
        f"; {sum(stages.values()):.1f} in all")
    space = min(total, 1 << 32)
    ok, idle = True, {}
    for name, exe in exes.items():
        ok &= _bench_engine(design, name, exe, vectors, shards, space, idle, log)
    if len(idle) > 1:
        log(f"  {space:,} inputs on {shards} idle cores: " + ", ".join(
            f"{name} {t:.0f} s" for name, t in idle.items()) +
            f"; gates {idle['native'] / idle['gates']:.2f}x faster than native")
    return 0 if ok else 1


def _bench_engine(design, name, exe, vectors, shards, space, idle, log) -> bool:
    """One engine's bare simulators and run (``idle``: its 2^32 projection, filled in)."""
    from .verify import verify_exhaustive
    bare = bare_rate(design, vectors, shards, exe, engine=name)
    log(f"  {name} engine, bare simulators ({shards} at once): {bare['wall_s']:.2f} s, "
        f"{bare['vectors_per_s'] / 1e6:.1f} M vectors/s, {bare['cpu_s']:.2f} CPU s "
        f"({1e9 / bare['vectors_per_cpu_s']:.1f} CPU ns per vector)")
    v = verify_exhaustive(design, shards=shards, limit=vectors, progress=False,
                          log=lambda *_: 0, engine=name)
    s = v.summary
    sims = sum(r.get("simulator_cpu_s") or 0 for r in s["per_shard"].values())
    golden = sum(r.get("golden_s") or 0 for r in s["per_shard"].values())
    rate = s["vectors_per_s"]
    log(f"  {name} engine, run: {'PASS' if v.ok else 'FAIL'}, {s['vectors']:,} vectors, "
        f"{s['mismatches']} mismatches, {s['wall_s']:.2f} s, {rate / 1e6:.1f} M vectors/s; "
        f"{s['cpu_s']:.1f} CPU s: simulators {sims:.1f} ({sims / s['vectors'] * 1e9:.1f} ns "
        f"per vector), Python {s['cpu_s'] - sims:.1f} (golden model threads {golden:.1f} s "
        f"wall)")
    run_ns, bare_ns = s["cpu_s"] / s["vectors"] * 1e9, 1e9 / bare["vectors_per_cpu_s"]
    log(f"    run / bare simulators: {rate / bare['vectors_per_s']:.2f} by wall time; "
        f"{bare_ns / run_ns:.2f} by CPU time ({run_ns:.1f} against {bare_ns:.1f} CPU ns per "
        f"vector: what an idle machine would show)")
    idle[name] = space * run_ns / 1e9 / shards
    log(f"    {space:,} inputs: {space / rate:.0f} s at the run's rate, {idle[name]:.0f} s on "
        f"{shards} idle cores at its CPU time per vector, {space * bare_ns / 1e9 / shards:.0f} "
        f"s at the bare simulators' (load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())})")
    return v.ok
