"""``python -m synth``: synthesise units and print the figures (what ``make synth`` calls).

    python -m synth --format fp8e4m3                    # mul, add, fma in fp8e4m3; cvt from float32
    python -m synth --format bf16 --units mul --stages 2
    python -m synth --format fp16 --liberty my.lib      # area only: no delay without cell models
    python -m synth --format fp8e4m3 --units mul --pnr  # plus nextpnr Fmax on iCE40 and ECP5
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rtl.formats import FormatError
from rtl.options import OptionError
from rtl.spec import UNITS, UnitSpec

from . import DEFAULT_JOBS, DEFAULT_OUT_DIR, SynthError, run
from .pnr import PnrError, PnrToolMissing
from .report import print_table


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m synth", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--format", "-f", action="append", required=True,
                   help="output (and operand) format; repeat or comma-separate for several")
    p.add_argument("--units", default=",".join(UNITS),
                   help=f"comma-separated units (default: {','.join(UNITS)})")
    p.add_argument("--in-format", default=None,
                   help="operand format (default: the output format; cvt: float32)")
    p.add_argument("--rounding", default="rne")
    p.add_argument("--saturate", action="store_true")
    p.add_argument("--ftz", action="store_true", help="flush subnormals")
    p.add_argument("--stages", type=int, default=0)
    p.add_argument("--liberty", type=Path, default=None,
                   help="map to this liberty instead of fpforge's own cells (no delay figures)")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT_DIR,
                   help=f"parent of the run directory (default: {DEFAULT_OUT_DIR})")
    p.add_argument("--jobs", "-j", type=int, default=DEFAULT_JOBS)
    p.add_argument("--no-fpga", action="store_true", help="skip the iCE40 / ECP5 runs")
    p.add_argument("--no-core", action="store_true", help="skip the bare integer cores")
    p.add_argument("--pnr", action="store_true",
                   help="also place and route each unit (nextpnr iCE40 / ECP5) for its Fmax")
    return p.parse_args(argv)


def specs_from_args(args) -> list[UnitSpec]:
    specs = []
    fmts = [f for group in args.format for f in group.split(",") if f]
    for fmt in fmts:
        for unit in (u for u in args.units.split(",") if u):
            in_fmt = args.in_format if args.in_format or unit != "cvt" else "float32"
            specs.append(UnitSpec.create(unit, fmt, in_fmt=in_fmt, rounding=args.rounding,
                                         saturate=args.saturate, subnormals=not args.ftz,
                                         stages=args.stages))
    return specs


def main(argv=None) -> int:
    args = parse_args(argv)
    try:
        specs = specs_from_args(args)
    except (FormatError, OptionError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if not specs:
        print("error: no unit selected (--units)", file=sys.stderr)
        return 2
    try:
        records = run(specs, liberty=args.liberty, out_dir=args.out, jobs=args.jobs,
                      fpga=not args.no_fpga, cores=not args.no_core, pnr=args.pnr)
    except PnrError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2 if isinstance(err, PnrToolMissing) else 1
    except SynthError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except FileNotFoundError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    first = records[0]
    run_dir = Path(first.directory).parent
    print_table(records, header={"yosys": first.tools["yosys"], "liberty": first.library,
                                 "report": str(run_dir / "report.md"),
                                 "records": str(run_dir / "records.json")})
    return 0


if __name__ == "__main__":
    sys.exit(main())
