"""Every input of a unit through the RTL, sharded over processes: ``make verify-exhaustive``.

    python -m sim.exhaustive --format fp16 --unit add [--shards N | --shard i/N]

The input space (all operand codes; 2^32 pairs for a 16-bit add) is cut into N contiguous
shards; each runs in its own simulator process on one shared build. The default engine is the
native Verilator loop (:mod:`sim.bench.native`: operands and results as raw bytes through pipes,
more than 10x the cocotb bench's rate on a 16-bit unit); ``--engine cocotb`` runs the cocotb bench
instead (Verilator or Icarus; the only engine that can see x bits). A progress bar follows the
shards' progress files; at the end each shard's vectors and mismatches are listed, merged, and
the figures of merit printed: vectors per second over the whole run, and per CPU second (what
an idle machine would see per core; on a shared one wall time mostly measures the others). The
merged summary is written to ``build/sim/exhaustive/<unit name>.json``. Exit status 1 when any
vector mismatched.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rtl.spec import UnitSpec
from sim.bench import native, runner
from sim.bench.config import BenchConfig
from sim.bench.stimulus import space_size

OUT = runner.BUILD_ROOT / "exhaustive"
NATIVE_LANES = 16   # measured faster per vector than 64 (docs/verification.md), and builds faster


def parse_shard(text: str) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"SHARD must look like i/N (e.g. 0/4), not {text!r}")
    if not (n >= 1 and 0 <= i < n):
        raise argparse.ArgumentTypeError(f"SHARD {text!r}: need 0 <= i < N")
    return i, n


def shard_range(total: int, i: int, n: int) -> tuple[int, int]:
    return total * i // n, total * (i + 1) // n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--format", required=True)
    ap.add_argument("--unit", required=True)
    ap.add_argument("--in-format")
    ap.add_argument("--rounding", default="rne")
    ap.add_argument("--saturate", action="store_true")
    ap.add_argument("--no-subnormals", action="store_true")
    ap.add_argument("--stages", type=int, default=0)
    ap.add_argument("--shards", type=int, default=0, help="processes (default: one per core)")
    ap.add_argument("--shard", type=parse_shard, help="run only shard i of N (i/N)")
    ap.add_argument("--sim", default=os.environ.get("SIM") or "verilator")
    ap.add_argument("--engine", choices=("native", "cocotb"),
                    help="native (Verilator only; the default there) or cocotb")
    ap.add_argument("--lanes", type=int, help="default: 64 native, 16 cocotb")
    ap.add_argument("--steps", type=int, default=1024, help="cocotb: steps per transaction")
    ap.add_argument("--seed", type=int, default=1, help="for rm / rbits when the unit has them")
    ap.add_argument("--limit", type=int, default=0, help="check only the first N inputs")
    args = ap.parse_args(argv)
    engine = args.engine or ("native" if args.sim == "verilator" else "cocotb")
    if engine == "native" and args.sim != "verilator":
        ap.error(f"the native engine is Verilator only, not --sim {args.sim}")
    args.lanes = args.lanes or (NATIVE_LANES if engine == "native" else 16)

    spec = UnitSpec.create(args.unit, args.format, in_fmt=args.in_format,
                           rounding=args.rounding, saturate=args.saturate,
                           subnormals=not args.no_subnormals, stages=args.stages)
    total = space_size(spec)
    if args.limit:
        total = min(total, args.limit)
    nshards = args.shard[1] if args.shard else (args.shards or os.cpu_count() or 1)
    mine = [args.shard[0]] if args.shard else list(range(nshards))
    print(f"exhaustive {spec.default_name}: {spec.describe()}\n  {total:,} inputs, "
          f"{nshards} shard(s), running {', '.join(map(str, mine))}; {args.sim} ({engine} engine), "
          f"{args.lanes} lanes{'' if engine == 'native' else f' x {args.steps} steps'}, "
          f"seed {args.seed}",
          flush=True)

    # Golden batches: the native engine's big ones run the golden model at ~50 M/s (measured).
    base = dict(lanes=args.lanes, steps=args.steps, seed=args.seed,
                batch=1 << (20 if engine == "native" else 18),
                max_report=20)
    cfg0 = BenchConfig.create(spec, [["exhaustive", {"start": 0, "stop": 1}]], **base)
    t_build = time.perf_counter()
    if engine == "native":
        os.environ.update(runner._bench_env())    # before the golden model imports JAX
        build_dir = native.build(cfg0)
        run_shard = lambda i: native.run(cfgs[i], build_dir)   # noqa: E731
    else:
        build_dir = runner.build(cfg0, args.sim)
        run_shard = lambda i: runner.run(cfgs[i], args.sim, build_dir=build_dir,  # noqa: E731
                                         name=f"shard{i}of{nshards}")
    print(f"  built in {time.perf_counter() - t_build:.1f} s: {build_dir}", flush=True)

    OUT.mkdir(parents=True, exist_ok=True)
    cfgs = {}
    for i in mine:
        lo, hi = shard_range(total, i, nshards)
        progress = OUT / f"{spec.default_name}.shard{i}of{nshards}.progress.json"
        progress.unlink(missing_ok=True)
        cfgs[i] = BenchConfig.create(spec, [["exhaustive", {"start": lo, "stop": hi}]],
                                     progress_path=str(progress), **base)
    want = sum(shard_range(total, i, nshards)[1] - shard_range(total, i, nshards)[0]
               for i in mine)

    t0, cpu0 = time.perf_counter(), _cpu_seconds()
    with ThreadPoolExecutor(len(mine)) as pool:
        futures = {i: pool.submit(run_shard, i) for i in mine}
        _progress(futures, cfgs, want, t0)
        results = {i: f.result() for i, f in futures.items()}
    wall = time.perf_counter() - t0
    # CPU seconds per vector predict the rate on an idle machine; wall time on a shared one
    # mostly measures the other processes.
    cpu = _cpu_seconds() - cpu0

    vectors = sum(r.get("vectors", 0) for r in results.values())
    mismatches = sum(r.get("mismatches", 0) for r in results.values())
    for i, r in results.items():
        lo, hi = shard_range(total, i, nshards)
        print(f"  shard {i}/{nshards} [{lo:#x}, {hi:#x}): {r.get('vectors', 0):,} vectors, "
              f"{r.get('mismatches', '?')} mismatches, {r.get('vectors_per_s', 0):,.0f} "
              f"vectors/s (golden model {r.get('golden_s', 0):.0f} s)  {r['log']}")
        for line in r.get("first_mismatches", []):
            print("    " + line)
        if r.get("failed"):
            print("    " + r["failed"])
    complete = vectors == want and all(not r.get("failed") for r in results.values())
    merged = {"spec": spec.default_name, "describe": spec.describe(), "inputs": total,
              "shards": nshards, "ran": mine, "vectors": vectors, "mismatches": mismatches,
              "complete": complete, "wall_s": wall, "vectors_per_s": vectors / wall,
              "sim": args.sim, "engine": engine, "lanes": args.lanes, "steps": args.steps,
              "load_average": os.getloadavg(), "cpu_s": cpu,
              "per_shard": {str(i): {k: r.get(k) for k in ("vectors", "mismatches",
                                                             "vectors_per_s", "golden_s",
                                                             "first_mismatches", "log")}
                            for i, r in results.items()}}
    name = spec.default_name + (f".shard{mine[0]}of{nshards}" if args.shard else "")
    (OUT / f"{name}.json").write_text(json.dumps(merged, indent=1))
    print(f"{spec.default_name}: {vectors:,} of {want:,} vectors, {mismatches} mismatches, "
          f"{wall:.1f} s, {vectors / wall:,.0f} vectors/s ({cpu:.1f} CPU s: "
          f"{vectors / max(cpu, 1e-9) / 1e6:.2f} M vectors per CPU second), load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} -> {OUT / (name + '.json')}")
    return 0 if complete and mismatches == 0 else 1


def _cpu_seconds() -> float:
    """CPU time of this process and of its finished simulator processes."""
    me, kids = (resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _progress(futures, cfgs, want, t0):
    """A progress bar over all shards, fed by their progress files."""
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)
    cols = [TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), TimeRemainingColumn()]
    with Progress(*cols, refresh_per_second=2) as bar:
        task = bar.add_task("vectors", total=want, rate="")
        while not all(f.done() for f in futures.values()):
            done = bad = 0
            for i in futures:
                try:
                    p = json.loads(Path(cfgs[i].progress_path).read_text())
                except (OSError, ValueError):
                    continue
                done += p.get("vectors", 0)
                bad += p.get("mismatches", 0)
            rate = done / max(time.perf_counter() - t0, 1e-9)
            bar.update(task, completed=done,
                       rate=f"{rate / 1e6:.2f} M/s, {bad} mismatches")
            time.sleep(0.5)


if __name__ == "__main__":
    sys.exit(main())
