"""The ``fpforge`` command line: one parser, one set of spec options, one subcommand per job.

    fpforge verilog       one unit as Verilog-2005 (+ .json sidecar, FuseSoC .core)
    fpforge synth         area / timing proxies with Yosys (and --gate-level: the netlist checked)
    fpforge power         energy per operation from switching activity on a data set (sky130hd)
    fpforge sweep         every catalog format x unit, option variants, block units (make sweep)
    fpforge verify        a unit -- fpforge's own or any Verilog -- against the golden model
    fpforge verify-exhaustive   every input, sharded, on the native (Verilator) or gates engine
    fpforge verify-equiv  prove every matrix spec's Verilog equivalent to an earlier commit's
    fpforge bench-ppa | bench-golden | bench-mx | bench-gemm | bench-exhaustive   the benchmarks
    fpforge pareto [--quick] [--config FILE] [--out DIR]   cost against quality
    fpforge roofline      tokens/s per configuration from a pareto.json, stated assumptions
    fpforge formats | units          the format catalog and the P3109 family, the unit kinds

The spec options (``--unit --format --in-format ... --stages``) are rtl/kinds.py's
``SPEC_OPTIONS``: one spelling and one meaning in every subcommand; a subcommand turns them into
``Spec`` objects with ``make_spec`` and calls library functions with them. Bad input (an unknown
name, impossible options, a missing tool or file) gives one line on stderr naming what is valid,
exit status 2, and writes nothing.

Each family of subcommands is a module that declares its arguments beside its handlers: export
(verilog, ports, formats, units), synth (synth, clock-table, sweep), verify (verify,
verify-exhaustive, verify-equiv), codesign (pareto, roofline) and benchmarks (bench-*); common
holds what they share.
"""

from __future__ import annotations

import argparse
import os
import sys

from fpforge.infra.executor import ExecutorError
from fpforge.infra.toolchain import ToolMissing
from fpforge.rtl.formats import FormatError
from fpforge.rtl.options import OptionError

from . import benchmarks, codesign, export, power, synth, verify
from .common import EXIT_USAGE, Parser

__all__ = ["main", "parser", "EXIT_USAGE"]

# The subcommands in the order ``fpforge --help`` lists them; each family module declares its
# subcommands' arguments beside their handlers.
_COMMANDS = (export.add_verilog, synth.add_synth, power.add_power, benchmarks.add_bench_executor,
             synth.add_clock_table, synth.add_sweep, verify.add_verify, verify.add_verify_equiv,
             benchmarks.add_bench_ppa, benchmarks.add_bench_golden, benchmarks.add_bench_mx,
             benchmarks.add_bench_gemm, codesign.add_pareto, codesign.add_roofline,
             export.add_ports, export.add_formats, export.add_units,
             benchmarks.add_bench_exhaustive)


def parser() -> argparse.ArgumentParser:
    """The whole command line's parser: every subcommand with its arguments."""
    top = Parser(prog="fpforge", description="Low-precision floating-point RTL generator, "
                                             "verifier and cost model.")
    sub = top.add_subparsers(dest="command", required=True, parser_class=Parser)
    for add in _COMMANDS:
        add(sub)
    return top


def main(argv=None) -> int:
    try:
        args = parser().parse_args(argv)
    except SystemExit as exit_:          # --help (0) or an argparse error (2, already printed)
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    try:
        return args.run(args)
    except (FormatError, OptionError, ExecutorError, ToolMissing) as err:
        message = str(err).replace("\n", " ")   # one line, whatever raised it
        print(f"fpforge {args.command}: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"fpforge {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:          # fpforge formats | head
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0

