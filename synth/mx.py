"""``python -m synth.mx``: what the MX options cost, on fpforge's own cell library.

    python -m synth.mx                                  # fp8e4m3, k = 8, N = 8
    python -m synth.mx --elem fp4e2m1 --block 32 --n 32 --out build/synth-mx

Exports the quantizer under each scale rule, the dequantizer, and the dot unit under each
accumulator (exact; fixed with 24 and 8 fraction bits), runs each through the same ASIC job as
``make synth`` (synth.flow: Yosys generic gates, then the liberty; sta for delay) and prints one
Markdown row per unit. The MX units are not yet in ``make synth`` / ``make sweep``, whose
records are built around UnitSpec; this is the stand-alone view until they are.
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from rtl.export import write_export
from rtl.mx import SCALE_RULES, MxDequantSpec, MxDotSpec, MxQuantSpec
from rtl.options import OptionError

from .flow import Job, SynthError, own_library, run_job

DEFAULT_OUT = Path("build") / "synth-mx"


def mx_specs(elem: str, block: int, n: int) -> list:
    return ([MxQuantSpec(elem, block=block, scale_rule=r) for r in SCALE_RULES]
            + [MxDequantSpec(elem, block=block)]
            + [MxDotSpec(elem, n=n), MxDotSpec(elem, n=n, accum="fixed"),
               MxDotSpec(elem, n=n, accum="fixed", frac_bits=8)])


def synthesize(spec, out: Path, library) -> dict:
    folder = out / spec.default_name
    verilog = folder / f"{spec.default_name}.v"
    write_export(spec, verilog)
    result = run_job(Job("asic", folder / "asic", ((spec.default_name, verilog),), library))
    generic, asic = result.figures[spec.default_name]
    return {"module": spec.default_name, "spec": spec.describe(), "ge": round(asic.ge, 1),
            "area_um2": round(asic.area_um2, 1), "cells": asic.cells,
            "delay_ps": asic.delay_ps, "delay_slow_ps": asic.delay_slow_ps,
            "depth": generic.depth, "cpu_s": result.cpu_seconds}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m synth.mx", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--elem", default="fp8e4m3", help="element format (default fp8e4m3)")
    p.add_argument("--block", type=int, default=8, help="quantizer block size k (default 8)")
    p.add_argument("--n", type=int, default=8, help="dot length N (default 8)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT)
    p.add_argument("--jobs", "-j", type=int, default=1)
    args = p.parse_args(argv)
    try:
        specs = mx_specs(args.elem, args.block, args.n)
    except OptionError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    library = own_library(args.out / "lib")
    try:
        with ThreadPoolExecutor(max(1, args.jobs)) as pool:
            rows = list(pool.map(lambda s: synthesize(s, args.out, library), specs))
    except SynthError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    (args.out / "records.json").write_text(json.dumps(rows, indent=2) + "\n")
    print("| module | GE | delay ps (fast / slow edge) | depth | cells |")
    print("|---|---:|---:|---:|---:|")
    def ps(v):
        return "-" if v is None else f"{v:.0f}"
    for r in rows:
        print(f"| {r['module']} | {r['ge']:.0f} | {ps(r['delay_ps'])} / {ps(r['delay_slow_ps'])} "
              f"| {r['depth']} | {r['cells']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
