"""The ``fpforge`` command line.

    fpforge verilog --unit mul|add|fma|cvt --format FMT [--in-format FMT]
                    [--a-format FMT --b-format FMT --c-format FMT]
                    [--rounding rne|rtz|rdn|rup|rna|rod|stochastic|dynamic] [--sr-bits N]
                    [--saturate] [--no-subnormals] [--stages N] [--name TOP]
                    (-o OUT.v | --out-dir DIR)
    fpforge verilog --unit mxq --format ELEM [--in-format float32|bfloat16] [--block K]
                    [--scale-rule floor|ceil|rceil|even] [--rounding R] [--sr-bits N]
                    [--stages N] [--name TOP] (-o OUT.v | --out-dir DIR)
    fpforge verilog --unit mxdq --format float32 --in-format ELEM [--block K] [--stages N]
                    [--name TOP] (-o OUT.v | --out-dir DIR)
    fpforge verilog --unit dot --format OUT (--in-format ELEM | --a-format ELEM --b-format ELEM)
                    [--n 4|8|16|32] [--accum exact|fixed] [--frac-bits F] [--no-scales]
                    [--rounding R] [--stages N] [--name TOP] (-o OUT.v | --out-dir DIR)
    fpforge synth --format FMT [--unit U] [--rounding R] [--stages N] [--saturate]
                  [--no-subnormals] [--liberty PATH] [--out DIR] [--pnr]
    fpforge synth --format ELEM --unit mxq|mxdq|dot [--block K] [--scale-rule R] [--n N]
                  [--accum exact|fixed] [--frac-bits F]        (FMT: the MX element format)
    fpforge formats

Bad parameters give one line on stderr that names what is valid, and exit status 2; no file is
written then. Each subcommand is a ``_cmd_*`` function taking the parsed arguments.
"""

from __future__ import annotations

import argparse
import os
import sys

from .formats import CATALOG, SHORT_NAMES, FormatError, resolve
from .mx import (ACCUMULATORS, DOT_SIZES, MX_OPTIONS, MX_UNITS, SCALE_RULES, MxDequantSpec,
                 MxDotSpec, MxQuantSpec)
from .options import OptionError, Rounding
from .spec import UNITS, UnitSpec

__all__ = ["main"]

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """argparse, but its errors are one line (no usage dump) so scripts can show them as is."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _spec_arguments(p: argparse.ArgumentParser, *, unit_required: bool, units=UNITS):
    p.add_argument("--unit", choices=units, required=unit_required,
                   help="mul, add, fma (a*b+c, one rounding) or cvt (format conversion)" + (
                       "; mxq (MX block quantizer: --format is the element format), mxdq (MX "
                       "dequantizer: --in-format is the element format) or dot (MX dot product: "
                       "--format is the output)" if units != UNITS else ""))
    p.add_argument("--format", required=True, metavar="FMT",
                   help="output format; also the operand format unless --in-format says otherwise")
    p.add_argument("--in-format", metavar="FMT", help="operand format(s) (cvt: the source)")
    p.add_argument("--rounding", default="rne", choices=[r.value for r in Rounding],
                   help="rounding mode (default rne); dynamic adds an rm input, stochastic an "
                        "rbits input")
    p.add_argument("--saturate", action="store_true",
                   help="overflow gives +-max finite instead of inf/NaN")
    p.add_argument("--no-subnormals", dest="subnormals", action="store_false",
                   help="flush subnormal inputs and results to zero (area option)")
    p.add_argument("--stages", type=int, default=0, metavar="N",
                   help="pipeline register stages = latency in cycles (default 0: combinational)")


def _parser() -> argparse.ArgumentParser:
    top = _Parser(prog="fpforge", description="Low-precision floating-point RTL generator.")
    sub = top.add_subparsers(dest="command", required=True, metavar="{verilog,synth,formats}",
                             parser_class=_Parser)

    v = sub.add_parser("verilog", help="export one unit as Verilog-2005 (+ .json, .core)",
                       description="Export one unit as Verilog-2005 with a JSON sidecar and a "
                                   "FuseSoC core file beside it (docs/verilog-export.md).")
    _spec_arguments(v, unit_required=True, units=UNITS + MX_UNITS)
    for port, units in (("a", "mul, add, fma, dot"), ("b", "mul, add, fma, dot"), ("c", "fma")):
        v.add_argument(f"--{port}-format", metavar="FMT",
                       help=f"format of operand {port} ({units}); overrides --in-format")
    v.add_argument("--block", type=int, metavar="K",
                   help="mxq, mxdq: values per block sharing one scale (default 32)")
    v.add_argument("--scale-rule", choices=SCALE_RULES,
                   help="mxq: shared-exponent rule (default floor, OCP MX v1.0 6.3)")
    v.add_argument("--n", type=int, metavar="N",
                   help=f"dot: vector length, one of {', '.join(map(str, DOT_SIZES))} "
                        "(default 32)")
    v.add_argument("--accum", choices=ACCUMULATORS,
                   help="dot: accumulation contract (default exact: one rounding)")
    v.add_argument("--frac-bits", type=int, metavar="F",
                   help="dot --accum fixed: fraction bits below the largest product (default 24)")
    v.add_argument("--no-scales", dest="scales", action="store_false", default=None,
                   help="dot: no scale_a / scale_b inputs (unscaled element vectors)")
    v.add_argument("--sr-bits", type=int, metavar="N",
                   help="width of the rbits input (--rounding stochastic only; default 8)")
    v.add_argument("--name", metavar="TOP", help="module name (default: one that carries the "
                                                 "parameters, e.g. fp_mul_e4m3fn_rne)")
    out = v.add_mutually_exclusive_group(required=True)
    out.add_argument("-o", "--output", metavar="OUT.v",
                     help="Verilog file; OUT.json and OUT.core are written beside it")
    out.add_argument("--out-dir", metavar="DIR",
                     help="write DIR/<module name>.v (and .json, .core) instead of -o")
    v.set_defaults(run=_cmd_verilog)

    s = sub.add_parser("synth", help="area / timing proxies with Yosys",
                       description="Synthesise mul, add, fma and cvt (from float32) in FMT, or "
                                   "one --unit, and report area and timing proxies. For the MX "
                                   "units (mxq, mxdq, dot) FMT is the element format.")
    _spec_arguments(s, unit_required=False, units=UNITS + MX_UNITS)
    s.add_argument("--block", type=int, metavar="K", help="mxq, mxdq: block size (default 32)")
    s.add_argument("--scale-rule", choices=SCALE_RULES, help="mxq: shared-exponent rule")
    s.add_argument("--n", type=int, metavar="N", help="dot: vector length (default 32)")
    s.add_argument("--accum", choices=ACCUMULATORS, help="dot: accumulation contract")
    s.add_argument("--frac-bits", type=int, metavar="F", help="dot --accum fixed: fraction bits")
    s.add_argument("--liberty", metavar="PATH", help="a liberty file instead of fpforge's cells")
    s.add_argument("--out", metavar="DIR", help="where the run folder goes (default build/synth)")
    s.add_argument("--pnr", action="store_true",
                   help="also place and route each unit (nextpnr iCE40 / ECP5) for its Fmax")
    s.set_defaults(run=_cmd_synth)

    f = sub.add_parser("formats", help="list the format catalog with resolved semantics")
    f.set_defaults(run=_cmd_formats)
    return top


def _spec(args, unit: str, *, in_fmt=None, **operand_formats) -> UnitSpec:
    return UnitSpec.create(unit, args.format, in_fmt=in_fmt, rounding=args.rounding,
                           saturate=args.saturate, subnormals=args.subnormals,
                           stages=args.stages, **operand_formats)


def _option_name(dest: str) -> str:
    return "--no-scales" if dest == "scales" else "--" + dest.replace("_", "-")


def _units(names) -> str:
    return f"unit {names[0]}" if len(names) == 1 else f"units {' and '.join(names)}"


def _mx_spec(args):
    """MxQuantSpec / MxDotSpec from the command line; options of other units are errors."""
    unit = args.unit
    for dest, applies in MX_OPTIONS.items():
        if getattr(args, dest) is not None and unit not in applies:
            raise OptionError(f"{_option_name(dest)} applies to {_units(applies)} only, "
                              f"not {unit}")
    if args.saturate:
        raise OptionError(f"--saturate does not apply to unit {unit}" + (
            " (its elements always saturate)" if unit == "mxq" else
            " (its result overflows to inf)"))
    if not args.subnormals:
        raise OptionError(f"--no-subnormals does not apply to unit {unit}")
    if args.c_format is not None:
        raise OptionError(f"--c-format applies to unit fma only, not {unit}")
    if unit == "mxq":
        if args.a_format is not None or args.b_format is not None:
            raise OptionError("unit mxq takes --in-format (float32 or bfloat16), not "
                              "--a-format/--b-format")
        kw = {k: v for k, v in (("block", args.block), ("scale_rule", args.scale_rule),
                                ("sr_bits", args.sr_bits)) if v is not None}
        return MxQuantSpec(args.format, in_fmt=args.in_format or "float32",
                           rounding=args.rounding, stages=args.stages, **kw)
    if unit == "mxdq":
        if args.a_format is not None or args.b_format is not None:
            raise OptionError("unit mxdq takes --in-format (the element format), not "
                              "--a-format/--b-format")
        if resolve(args.format).name != "float32":
            raise OptionError(f"unit mxdq writes float32; --format must be float32, not "
                              f"{args.format!r}")
        if args.in_format is None:
            raise OptionError("unit mxdq needs its element format: --in-format ELEM")
        if args.rounding != Rounding.RNE.value:
            raise OptionError(f"unit mxdq rounds rne (exact unless float32 overflows or "
                              f"underflows); --rounding {args.rounding} does not apply")
        kw = {"block": args.block} if args.block is not None else {}
        return MxDequantSpec(args.in_format, stages=args.stages, **kw)
    a = args.a_format or args.in_format
    b = args.b_format or args.in_format
    if a is None or b is None:
        raise OptionError("unit dot needs its element format(s): --in-format ELEM (both "
                          "vectors) or --a-format ELEM and --b-format ELEM")
    if args.frac_bits is not None and args.accum != "fixed":
        raise OptionError("--frac-bits sets the width of --accum fixed; it does not apply to "
                          f"--accum {args.accum or 'exact'}")
    kw = {k: v for k, v in (("n", args.n), ("accum", args.accum), ("frac_bits", args.frac_bits),
                            ("scaled", args.scales)) if v is not None}
    return MxDotSpec(a, b, out_fmt=args.format, rounding=args.rounding, stages=args.stages, **kw)


def _cmd_verilog(args) -> int:
    from .export import write_export   # Amaranth loads only for the commands that need it

    if args.sr_bits is not None and args.rounding != Rounding.STOCHASTIC.value:
        raise OptionError(f"--sr-bits sets the width of the rbits input of --rounding "
                          f"stochastic; it does not apply to --rounding {args.rounding}")
    if args.unit in MX_UNITS:
        spec = _mx_spec(args)
    else:
        for dest, applies in MX_OPTIONS.items():
            if getattr(args, dest) is not None:
                raise OptionError(f"{_option_name(dest)} applies to {_units(applies)} only, "
                                  f"not {args.unit}")
        spec = _spec(args, args.unit, in_fmt=args.in_format, a_fmt=args.a_format,
                     b_fmt=args.b_format, c_fmt=args.c_format, sr_bits=args.sr_bits)
    output = args.output or os.path.join(args.out_dir, f"{args.name or spec.default_name}.v")
    result = write_export(spec, output, name=args.name)
    print(f"wrote {output} (module {result.name}, latency {spec.latency}) and its .json/.core")
    return 0


def _cmd_synth(args) -> int:
    """Hands over to the synthesis flow's own command line (``python -m synth``), imported only
    here: it reports errors and prints the figures itself."""
    from synth.__main__ import main as synth_main

    argv = ["--format", args.format, "--units", args.unit or ",".join(UNITS),
            "--rounding", args.rounding, "--stages", str(args.stages)]
    argv += ["--in-format", args.in_format] if args.in_format else []
    argv += ["--saturate"] if args.saturate else []
    argv += [] if args.subnormals else ["--ftz"]
    argv += ["--liberty", args.liberty] if args.liberty else []
    argv += ["--out", args.out] if args.out else []
    argv += ["--pnr"] if args.pnr else []
    for dest in ("block", "scale_rule", "n", "accum", "frac_bits"):
        if getattr(args, dest) is not None:
            argv += ["--" + dest.replace("_", "-"), str(getattr(args, dest))]
    return synth_main(argv)


def _cmd_formats(args) -> int:
    short = {}
    for alias, canonical in SHORT_NAMES.items():
        short.setdefault(canonical, []).append(alias)
    for name, fmt in CATALOG.items():
        aliases = ", ".join(short.get(name, [])) or "-"
        print(f"{name:<20} {aliases:<14} {fmt.describe()}")
    return 0


def main(argv=None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:          # --help (0) or an argparse error (2, already printed)
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    try:
        return args.run(args)
    except (FormatError, OptionError) as err:
        message = str(err).replace("\n", " ")   # one line, whatever raised it
        print(f"fpforge {args.command}: error: {message}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
