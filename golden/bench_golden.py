"""Throughput of the golden model against ml_dtypes: ``make bench-golden`` (``fpforge
bench-golden [--log2n 24] [--repeats 7]``).

Prints elements per second (and the ratio to ml_dtypes) for

- float32 -> fp8e4m3 (float8_e4m3fn) conversion, round to nearest even, 2^log2n elements:
  ``golden.quantize`` against ml_dtypes' ``astype``; the two results are compared code for code;
- the same with stochastic rounding (golden only: ml_dtypes has no stochastic rounding, so its rne
  ``astype`` is the baseline);
- fp8e4m3 ``mul`` with exception flags over all 65,536 operand pairs, against ml_dtypes decoding
  both operands to float32, multiplying and casting back (values only, no flags);
- every catalog cast from float32 (into each narrower catalog format, ml_dtypes' type of the same
  name as the baseline) in every static rounding mode, codes only: ml_dtypes rounds to nearest
  even only, so its ``astype`` is the baseline of every mode;
- the memory floor: one jitted pass that reads the same float32 array and writes a byte per
  element (the top byte of each value), the speed no cast into an 8-bit format can beat on this
  machine, numpy's own pass of the same kind, and the jitted pass writing two bytes (the top
  half), the floor of a cast into float16 or bfloat16; the bytes they move per second are the
  machine's memory bandwidth as a cast sees it.

The last lines judge the targets: the fp8e4m3 rne cast (the headline row) at least
``HEADLINE_TARGET`` times ml_dtypes, every other cast and mode at least ``CAST_TARGET`` times, per
wall and per CPU second; beside the smallest, what the memory floor of its output width allows.

Each measurement is the median of ``--repeats`` timed calls (and of their minor page faults,
the first table's last column) after one untimed warm-up call (which
also compiles the golden kernels). Wall-clock time is what the rates use; CPU time (all threads of
this process) is shown beside it, because XLA spreads one kernel over the cores while numpy runs
ml_dtypes on one, and because on a busy machine wall time mostly measures the other processes.
This is a benchmark, not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import math
import os
import platform
import resource
import statistics
import time
from typing import NamedTuple

import jax
import jax.numpy as jnp
import jaxlib
import ml_dtypes
import numpy as np

from fpforge.rtl.format_names import resolve
from fpforge.rtl.formats import CATALOG
from fpforge.rtl.options import Rounding
from fpforge.rtl.scalar import MulSpec

from . import evaluate, quantize

FMT = "fp8e4m3"
ML_TYPE = ml_dtypes.float8_e4m3fn
# The catalog's narrower formats by their ml_dtypes (numpy for float16) type.
ML_TYPES = {name: np.float16 if name == "float16" else getattr(ml_dtypes, name)
            for name in CATALOG if name != "float32"}
MODES = [r.value for r in Rounding if r is not Rounding.DYNAMIC]


class Timing(NamedTuple):
    """Medians over the timed calls: wall and CPU seconds, and the minor page faults of a call
    (a fresh output buffer's pages, faulted in as the kernel first writes them: whether a call
    pays them is the allocator's choice, and moves a cast's time by up to twice)."""

    wall: float
    cpu: float
    faults: float


def timed(fn, repeats: int) -> Timing:
    """The medians of ``repeats`` calls after one warm-up call."""
    jax.block_until_ready(fn())
    wall, cpu, faults = [], [], []
    for _ in range(repeats):
        f0, w0, c0 = _minor_faults(), time.perf_counter(), time.process_time()
        jax.block_until_ready(fn())
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
        faults.append(_minor_faults() - f0)
    return Timing(statistics.median(wall), statistics.median(cpu), statistics.median(faults))


def _minor_faults() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def same_codes(a, b, nan_codes) -> bool:
    """Equal codes, any two NaN codes counting as equal."""
    a, b = np.asarray(a), np.asarray(b)
    nan_a, nan_b = np.isin(a, nan_codes), np.isin(b, nan_codes)
    return bool(np.all((a == b) | (nan_a & nan_b)))


def run_bench(*, log2n: int = 24, repeats: int = 7) -> int:
    """Print the table (module docstring); returns 0."""
    n = 1 << log2n

    fmt = resolve(FMT)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"machine : {cpu_model()}, {cores} cores available ({os.cpu_count()} online), "
          f"load average {os.getloadavg()[0]:.2f} at start")
    print(f"versions: jax {jax.__version__}, jaxlib {jaxlib.__version__}, ml_dtypes "
          f"{ml_dtypes.__version__}, numpy {np.__version__}, python {platform.python_version()}")
    print(f"format  : {FMT} = {fmt.describe()}")
    print(f"timing  : median of {repeats} calls after one untimed warm-up call (it compiles)"
          "; rates use wall time; cpu = CPU seconds of all this process's threads")
    print()

    rng = np.random.default_rng(2024)
    # Spread over the whole fp8e4m3 range and beyond: normals, subnormals, ties, overflows.
    x = (rng.standard_normal(n) * np.exp2(rng.integers(-12, 10, n))).astype(np.float32)
    xj = jax.device_put(x)
    rbits = jax.device_put(rng.integers(0, 256, n, dtype=np.uint8))
    a = np.repeat(np.arange(256, dtype=np.uint8), 256)
    b = np.tile(np.arange(256, dtype=np.uint8), 256)
    aj, bj = jax.device_put(a), jax.device_put(b)
    mul_spec = MulSpec(fmt, (fmt, fmt))

    def golden_mul():
        return evaluate(mul_spec, a=aj, b=bj)

    def ml_cvt():
        return x.astype(ML_TYPE)

    def ml_mul():
        return (a.view(ML_TYPE).astype(np.float32) * b.view(ML_TYPE).astype(np.float32)
                ).astype(ML_TYPE)

    # Sanity: the timed calls compute the same codes (NaNs aside: ml_dtypes keeps the sign).
    nan = [0x7F, 0xFF]
    with np.errstate(over="ignore", invalid="ignore"):
        checks = {
            "rne": same_codes(quantize(xj, FMT), ml_cvt().view(np.uint8), nan),
            "mul": same_codes(golden_mul()["y"], ml_mul().view(np.uint8), nan),
        }

    top_byte = jax.jit(lambda v: (jax.lax.bitcast_convert_type(v, jnp.uint32) >> 24
                                  ).astype(jnp.uint8))
    top_half = jax.jit(lambda v: (jax.lax.bitcast_convert_type(v, jnp.uint32) >> 16
                                  ).astype(jnp.uint16))
    xu, out8 = x.view(np.uint32), np.empty(n, np.uint8)

    rows = []      # (case, implementation, elements, Timing, the baseline's Timing)
    with np.errstate(over="ignore", invalid="ignore"):
        t_ml = timed(ml_cvt, repeats)
        rows.append(("f32->fp8e4m3 rne", "ml_dtypes astype", n, t_ml, None))
        t_golden = timed(lambda: quantize(xj, FMT), repeats)
        rows.append(("f32->fp8e4m3 rne", "golden quantize", n, t_golden, t_ml))
        rows.append(("f32->fp8e4m3 rne", "golden quantize +flags", n,
                     timed(lambda: quantize(xj, FMT, return_flags=True), repeats), t_ml))
        rows.append(("f32->fp8e4m3 stochastic", "golden quantize (8 rbits)", n,
                     timed(lambda: quantize(xj, FMT, rounding="stochastic", rbits=rbits),
                           repeats), t_ml))
        floors = {8: timed(lambda: top_byte(xj), repeats)}
        rows.append(("memory floor", "jit f32 -> top byte", n, floors[8], t_ml))
        rows.append(("memory floor", "numpy f32 -> top byte", n,
                     timed(lambda: np.right_shift(xu, 24, out=out8, casting="unsafe"), repeats),
                     t_ml))
        # The floor of a cast into a 16-bit format (float16, bfloat16): two bytes written.
        floors[16] = timed(lambda: top_half(xj), repeats)
        rows.append(("memory floor, 16-bit out", "jit f32 -> top half", n, floors[16], t_ml))
        t_mlm = timed(ml_mul, max(repeats, 21))
        rows.append(("fp8e4m3 mul, 65,536 pairs", "ml_dtypes f32 mul+astype", 65536, t_mlm, None))
        rows.append(("fp8e4m3 mul, 65,536 pairs", "golden mul +flags", 65536,
                     timed(golden_mul, max(repeats, 21)), t_mlm))

    head = (f"{'case':27s} {'implementation':27s} {'elements':>10s} {'wall ms':>9s} "
            f"{'G elem/s':>9s} {'vs ml':>7s} {'cpu ms':>9s} {'G/cpu-s':>8s} {'vs ml':>7s} "
            f"{'faults':>7s}")
    print(head)
    print("-" * len(head))
    for case, impl, count, (wall, cpu, faults), base in rows:
        rate, crate = count / wall / 1e9, count / cpu / 1e9 if cpu > 0 else float("nan")
        ratio = f"{base[0] / wall:6.1f}x" if base else f"{'1.0x':>7s}"
        cratio = f"{base[1] / cpu:6.1f}x" if base and cpu > 0 else f"{'1.0x':>7s}"
        print(f"{case:27s} {impl:27s} {count:10d} {wall * 1e3:9.2f} {rate:9.3f} {ratio:>7s} "
              f"{cpu * 1e3:9.2f} {crate:8.3f} {cratio:>7s} {faults:7.0f}")
    print()
    print("stochastic: ml_dtypes has no stochastic rounding; its rne astype is the baseline.")
    print("mul: golden computes codes and exception flags; ml_dtypes only values, rounded once "
          "from the exact float32 product.")
    print("faults: minor page faults of a call (median), a fresh output buffer's pages faulted in "
          f"({n // 4096:,} for {n:,} bytes): the allocator decides whether a call pays them.")
    for case, impl, count, (wall, *_), _ in rows:
        if case.startswith("memory floor") and impl.startswith("jit"):
            moved = count * (4 + (2 if "16-bit" in case else 1))
            print(f"memory bandwidth: {moved / wall / 1e9:.1f} GB/s read + written by '{impl}' "
                  f"({moved / 2**20:.0f} MiB in {wall * 1e3:.2f} ms wall)")
    print("same codes as ml_dtypes (NaNs as equal): "
          + ", ".join(f"{k} {'yes' if v else 'NO'}" for k, v in checks.items()))
    print(f"load average {os.getloadavg()[0]:.2f} at end")
    print()
    ratios, bounds = every_cast(x, xj, rbits, repeats, floors)
    print(f"load average {os.getloadavg()[0]:.2f} at end")
    print()
    print("\n".join(target_lines((t_ml.wall / t_golden.wall, t_ml.cpu / t_golden.cpu), ratios,
                                  bounds)))
    return 0


HEADLINE = ("float8_e4m3fn", "rne")
HEADLINE_TARGET = 20.0      # golden / ml_dtypes, the fp8e4m3 rne cast
CAST_TARGET = 10.0          # every other catalog cast and rounding mode


def target_lines(headline: tuple, ratios: dict, bounds: dict) -> list[str]:
    """The targets' verdicts: ``headline``, the fp8e4m3 rne cast's (wall, cpu) ratio to
    ml_dtypes, against HEADLINE_TARGET; the smallest of the other casts' ratios, by (format,
    mode), against CAST_TARGET, with what its format's memory floor allows (``bounds``, by
    format)."""
    others = {k: v for k, v in ratios.items() if k != HEADLINE}
    rows = [("f32->fp8e4m3 rne", HEADLINE_TARGET, i, headline[i], "") for i in (0, 1)]
    if others:
        for i in (0, 1):
            worst = min(others, key=lambda k: others[k][i])
            rows.append(("every other cast, smallest", CAST_TARGET, i, others[worst][i],
                         f"  ({' '.join(worst)}; its memory floor allows "
                         f"{bounds[worst[0]][i]:.1f}x)"))
    lines = ["targets (golden / ml_dtypes, at least):"]
    for label, target, i, r, which in rows:
        lines.append(f"  {label:28s} {('wall', 'cpu')[i]:4s} {r:6.1f}x  >= {target:g}x  "
                     f"{'met' if r >= target else 'NOT met':7s}{which}")
    return lines


def every_cast(x, xj, rbits, repeats: int, floors: dict) -> tuple[dict, dict]:
    """Print the ratio to ml_dtypes' astype of every float32 -> catalog cast in every static
    rounding mode (codes only), one row per format, and the smallest ratio. Returns the
    (wall, cpu) ratios by (format, mode), and by format the ratio its memory floor allows
    (``floors``: the (wall, cpu) seconds of the pass writing 8 and 16 bits per element)."""
    print(f"every float32 -> catalog cast, codes only, {x.size} elements: golden against "
          "ml_dtypes astype (rne) into the same format, wall / cpu ratios")
    print(f"{'format':20s} {'ml ms':>7s} {'cpu ms':>7s} " + " ".join(f"{m[:12]:>12s}"
                                                                  for m in MODES))
    worst, bounds = {}, {}
    with np.errstate(over="ignore", invalid="ignore"):
        for name, ml_type in ML_TYPES.items():
            ml_wall, ml_cpu, _ = timed(lambda: x.astype(ml_type), repeats)
            floor = floors[8 if resolve(name).width <= 8 else 16]
            bounds[name] = (ml_wall / floor[0], ml_cpu / floor[1] if floor[1] > 0 else math.nan)
            cells = []
            for mode in MODES:
                extra = {"rbits": rbits} if Rounding(mode).stochastic else {}
                wall, cpu, _ = timed(lambda: quantize(xj, name, rounding=mode, **extra),
                                     repeats)
                ratio = (ml_wall / wall, ml_cpu / cpu if cpu > 0 else float("nan"))
                cells.append(f"{ratio[0]:5.1f}/{ratio[1]:5.1f}x")
                worst[(name, mode)] = ratio
            print(f"{name:20s} {ml_wall * 1e3:7.1f} {ml_cpu * 1e3:7.1f} "
                  + " ".join(f"{c:>12s}" for c in cells))
    (wn, wm), (cn, cm) = (min(worst, key=lambda k: worst[k][i]) for i in (0, 1))
    print(f"smallest ratio: wall {worst[wn, wm][0]:.1f}x ({wn} {wm}), cpu {worst[cn, cm][1]:.1f}x "
          f"({cn} {cm})")
    return worst, bounds
