"""``python -m synth``: synthesise units and print the figures (what ``make synth`` calls).

    python -m synth --format fp8e4m3                    # mul, add, fma in fp8e4m3; cvt from float32
    python -m synth --format bf16 --units mul --stages 2
    python -m synth --format fp16 --liberty my.lib      # area only: no delay without cell models
    python -m synth --format fp8e4m3 --units mul --pnr  # plus nextpnr Fmax on iCE40 and ECP5
    python -m synth --format fp4e2m1 --units mxq,mxdq,dot --block 32 --n 32   # MX units

For the block-scaled units, --format is the element format: mxq quantizes blocks of --block
float32 values (--in-format bfloat16 for bfloat16) into it under --scale-rule; mxdq turns a
scale and a block of elements back into float32; dot is the N-element MX dot product into
float32 under --accum.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rtl.formats import FormatError
from rtl.options import OptionError
from rtl.mx import (ACCUMULATORS, MX_OPTIONS, MX_UNITS, SCALE_RULES, MxDequantSpec, MxDotSpec,
                    MxQuantSpec)
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
                   help=f"comma-separated units (default: {','.join(UNITS)}; also "
                        f"{', '.join(MX_UNITS)})")
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
    mx = p.add_argument_group("block-scaled (MX) units")
    mx.add_argument("--block", type=int, default=None, metavar="K",
                    help="mxq, mxdq: values per shared scale (default 32)")
    mx.add_argument("--scale-rule", default=None, choices=SCALE_RULES,
                    help="mxq: shared-exponent rule (default floor, OCP MX v1.0 6.3)")
    mx.add_argument("--n", type=int, default=None, help="dot: vector length (default 32)")
    mx.add_argument("--accum", default=None, choices=ACCUMULATORS,
                    help="dot: accumulation contract (default exact)")
    mx.add_argument("--frac-bits", type=int, default=None,
                    help="dot --accum fixed: fraction bits below the largest product (default 24)")
    return p.parse_args(argv)


def mx_spec(unit: str, elem: str, args):
    """The MX unit ``unit`` with elements in ``elem``, from the MX options of ``args``."""
    # (--no-scales is export-only: synthesis reports the scaled dot unit)
    kw = {dest: getattr(args, dest, None) for dest, units in MX_OPTIONS.items()
          if unit in units and getattr(args, dest, None) is not None}
    if args.saturate or args.ftz:
        raise OptionError(f"--saturate and --ftz do not apply to unit {unit} (mxq elements "
                          f"always saturate; MX results keep subnormals)")
    if unit == "mxq":
        return MxQuantSpec(elem, in_fmt=args.in_format or "float32", rounding=args.rounding,
                           stages=args.stages, **kw)
    if args.in_format:
        raise OptionError(f"--in-format does not apply to unit {unit}: --format is its "
                          f"element format")
    if unit == "mxdq":
        if args.rounding != "rne":
            raise OptionError(f"unit mxdq rounds rne; --rounding {args.rounding} does not apply")
        return MxDequantSpec(elem, stages=args.stages, **kw)
    if kw.get("frac_bits") is not None and kw.get("accum") != "fixed":
        raise OptionError("--frac-bits sets the width of --accum fixed")
    return MxDotSpec(elem, rounding=args.rounding, stages=args.stages, **kw)


def specs_from_args(args) -> list:
    specs = []
    fmts = [f for group in args.format for f in group.split(",") if f]
    units = [u for u in args.units.split(",") if u]
    unknown = [u for u in units if u not in UNITS + MX_UNITS]
    if unknown:
        raise OptionError(f"unknown unit {unknown[0]!r}; valid: {', '.join(UNITS + MX_UNITS)}")
    for dest, applies in MX_OPTIONS.items():
        if getattr(args, dest, None) is not None and not set(applies) & set(units):
            raise OptionError(f"--{dest.replace('_', '-')} applies to units "
                              f"{' and '.join(applies)} only, not {','.join(units)}")
    for fmt in fmts:
        for unit in units:
            if unit in MX_UNITS:
                specs.append(mx_spec(unit, fmt, args))
                continue
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
