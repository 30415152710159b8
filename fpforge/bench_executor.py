"""``make bench-executor``: what the Dask path costs against the local pool, and what 100 workers
would make of the long runs.

1. Overhead: one small sweep (fp4e2m1, fp6e3m2, fp8e4m3, fp8e5m2 x mul, add, fma, cvt; ASIC
   only) synthesised alternately through the local thread pool and through a Dask LocalCluster
   of as many workers, twice each, in one run; the ratio of the best wall times (the cluster's
   start-up is reported apart: a long run pays it once). The records must be identical.
2. Per-task times: a sample of ``make verify``'s matrix (every ``SAMPLE_EVERY``-th case, run
   locally), scaled to the full matrix on 100 workers: max(total / 100, longest task) plus the
   measured per-task dispatch cost. (The sweep's own records carry each Yosys job's time:
   docs/scale-out.md scales the committed sweep the same way.)
"""

from __future__ import annotations

import os
import time

from fpforge.infra.executor import DaskExecutor, LocalExecutor
from fpforge.rtl.kinds import BASIC_UNITS

from fpforge.synth import run_designs
from fpforge.synth.flow import yosys_version

__all__ = ["run_bench"]

FORMATS = ("fp4e2m1", "fp6e3m2", "fp8e4m3", "fp8e5m2")
ROUNDS = 2
SAMPLE_EVERY = 256
WORKERS = 100


def _designs():
    from fpforge.synth.sweep import Case, designs_for
    cases = [Case(f, u, values=(("format", f),) if u != "cvt" else
                  (("format", f), ("in_format", "float32"))) for f in FORMATS
             for u in BASIC_UNITS]
    return [d for _, d, _ in designs_for(cases, os.cpu_count() or 2) if d is not None]


def _figures(records):
    return [(r.name, r.asic.ge, r.asic.delay_ps, r.asic.paths) for r in records]


def _timed(designs, executor, out):
    start = time.monotonic()
    records = run_designs(designs, out_dir=out, fpga=False, executor=executor, report=False,
                          cached=False)
    return time.monotonic() - start, records


def _estimate(task_seconds: list[float], total_tasks: int, dispatch: float) -> float:
    mean = sum(task_seconds) / len(task_seconds)
    return max(mean * total_tasks / WORKERS, max(task_seconds)) + dispatch * total_tasks / WORKERS


def run_bench(*, jobs: int = 2, out="build/bench_executor") -> int:
    yosys_version()                       # the first call compiles Yosys: not part of a round
    designs = _designs()
    local_walls, dask_walls, figures = [], [], set()
    t0 = time.monotonic()
    dask = DaskExecutor(workers=jobs)
    startup = time.monotonic() - t0
    try:
        with LocalExecutor(jobs) as local:
            for _ in range(ROUNDS):
                wall, recs = _timed(designs, local, out)
                local_walls.append(wall)
                figures.add(repr(_figures(recs)))
                wall, recs = _timed(designs, dask, out)
                dask_walls.append(wall)
                figures.add(repr(_figures(recs)))
    finally:
        dask.close()
    best_local, best_dask = min(local_walls), min(dask_walls)
    task_seconds = [r.seconds["asic"] for r in recs]
    dispatch = max(0.0, (best_dask - best_local) * jobs / len(designs))
    print(f"small sweep: {len(designs)} designs, {jobs} workers; local pool "
          f"{', '.join(f'{w:.1f}' for w in local_walls)} s, Dask LocalCluster "
          f"{', '.join(f'{w:.1f}' for w in dask_walls)} s (cluster start-up {startup:.1f} s, "
          f"apart); best Dask / best local = {best_dask / best_local:.2f}x (target <= 1.10x); "
          f"records {'identical' if len(figures) == 1 else 'DIFFER'}; load average "
          f"{os.getloadavg()[0]:.1f}")
    print(f"Yosys job times: mean {sum(task_seconds) / len(task_seconds):.1f} s, longest "
          f"{max(task_seconds):.1f} s; dispatch cost {dispatch * 1000:.0f} ms per task")

    from fpforge.sim.tiers import full_matrix, verify_formats
    from fpforge.sim.verify import verify_matrix
    matrix = full_matrix(verify_formats(None))
    sample = matrix[::SAMPLE_EVERY]
    times = []
    for spec in sample:
        start = time.monotonic()
        verify_matrix([spec], jobs=1, log=lambda *_: None)
        times.append(time.monotonic() - start)
    print(f"make verify matrix: {len(matrix)} cases; a sample of {len(sample)} ran in "
          f"{sum(times):.0f} s (mean {sum(times) / len(times):.1f} s, longest {max(times):.1f} s) "
          f"-> about {_estimate(times, len(matrix), dispatch) / 60:.0f} min on {WORKERS} "
          f"workers (today: about {sum(times) / len(times) * len(matrix) / jobs / 3600:.1f} h "
          f"on {jobs})")
    print("make pareto: not built yet (issue 16); its evaluations will be executor tasks too")
    return 0 if len(figures) == 1 else 1
