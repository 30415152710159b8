"""What every family of subcommands shares: the one-line parser, the spec options
(rtl/kinds.py's ``SPEC_OPTIONS``), folders, jobs, the executor and the clock target."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from fpforge.rtl.formats import FormatError
from fpforge.rtl.format_names import resolve
from fpforge.rtl.kinds import KINDS, SPEC_OPTIONS, UNITS, make_spec, units_phrase
from fpforge.rtl.options import OptionError

__all__ = ["EXIT_USAGE", "Parser", "unit_list", "format_list", "positive", "add_spec_options",
           "spec_values", "specs_of", "existing_dir", "add_jobs", "add_clock_ps",
           "pipelined_for_clock", "add_executor_options", "executor_of", "result_store"]

EXIT_USAGE = 2


class Parser(argparse.ArgumentParser):
    """argparse, but its errors are one line (no usage dump) so scripts can show them as is."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


# ----- argument types ----------------------------------------------------------------------------

def unit_list(text: str) -> list[str]:
    units = [u.strip() for u in text.split(",") if u.strip()]
    bad = [u for u in units if u not in KINDS]
    if bad or not units:
        raise argparse.ArgumentTypeError(f"invalid unit {(bad or [text])[0]!r} (choose from "
                                         f"{', '.join(map(repr, UNITS))})")
    return units


def format_list(text: str) -> list[str]:
    names = [f.strip() for f in text.split(",") if f.strip()]
    for n in names:
        try:
            resolve(n)
        except FormatError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
    return names


def positive(kind):
    def parse(text):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid {kind.__name__} value: {text!r}")
        if v < 0:
            raise argparse.ArgumentTypeError(f"must not be negative, not {text!r}")
        return v
    return parse


# ----- the spec options --------------------------------------------------------------------------

def add_spec_options(p, *, units: str = "one", required: bool = True):
    """The spec options. ``units``: "one" (--unit takes one kind), "many" (a comma-separated
    list)."""
    g = p.add_argument_group("unit (the same options in every subcommand)")
    for o in SPEC_OPTIONS:
        if o.dest == "unit":
            if units == "one":
                g.add_argument(o.flag, choices=UNITS, required=required, help=o.help)
            else:
                g.add_argument(o.flag, type=unit_list, metavar="U[,U...]",
                               help=o.help + " (a comma-separated list)")
        elif o.switch:
            g.add_argument(o.flag, dest=o.dest, action="store_const", const=not o.default,
                           default=None, help=o.help)
        else:
            g.add_argument(o.flag, dest=o.dest, type=o.type if o.type is not str else None,
                           metavar=o.metavar, choices=o.choices, help=o.help)


def spec_values(args) -> dict:
    """The spec options given (all but --unit), as ``make_spec`` keywords."""
    return {o.dest: getattr(args, o.dest) for o in SPEC_OPTIONS
            if o.dest != "unit" and getattr(args, o.dest, None) is not None}


def specs_of(args, units) -> list:
    """One spec per unit of ``units``; an option goes to the units that take it, and one that
    none of them takes is an error."""
    values = spec_values(args)
    if len(units) == 1:
        return [make_spec(units[0], **values)]
    for dest in values:
        if not any(dest in KINDS[u].spec.OPTIONS for u in units):
            flag = next(o.flag for o in SPEC_OPTIONS if o.dest == dest)
            takers = [k for k, kd in KINDS.items() if dest in kd.spec.OPTIONS]
            raise OptionError(f"{flag} applies to {units_phrase(takers)} only, not "
                              f"{','.join(units)}")
    return [make_spec(u, **{k: v for k, v in values.items() if k in KINDS[u].spec.OPTIONS})
            for u in units]


# ----- folders, jobs, the clock ------------------------------------------------------------------

def existing_dir(text: str, what: str) -> Path:
    path = Path(text)
    if not path.is_dir():
        raise OptionError(f"{what} {text!r} does not exist (or is not a folder)")
    if not os.access(path, os.W_OK | os.X_OK):
        raise OptionError(f"{what} {text!r} is not writable")
    return path


def add_jobs(p):
    p.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 2, metavar="N",
                   help="parallel jobs (default: one per core)")


def add_clock_ps(p):
    p.add_argument("--clock-ps", type=positive(float), metavar="P",
                   help="pipeline to this clock period (ps): the fewest stages, then "
                        "flip-flops, whose every path meets P on the load-aware timer "
                        "(at the kind's cut points; docs/synth/timing.md)")


def add_library_options(p):
    """``--lib NAME`` / ``--liberty PATH``: the cells a command maps to (docs/synth/libraries.md).
    Checked by library_of (one line, exit 2), not by argparse's choices (a usage block)."""
    from fpforge.synth.cell_library import LIBRARIES
    p.add_argument("--lib", metavar="NAME",
                   help=f"cell library: {' or '.join(LIBRARIES)} (default fpforge: fpforge's own "
                        f"cells; sky130hd: SkyWater SKY130 HD, tt 25 C 1.80 V, areas in um^2)")
    p.add_argument("--liberty", metavar="PATH",
                   help="a liberty file of your own instead of --lib: mapped, timed by OpenSTA "
                        "on its tables, simulated with models from its functions")


def library_of(args) -> tuple[str, str | None]:
    """(lib, liberty) of add_library_options; raises OptionError naming the valid values."""
    from fpforge.synth.cell_library import check_library
    lib = args.lib or "fpforge"
    if args.lib is not None and args.liberty is not None:
        raise OptionError("--lib and --liberty both name the cells: give one of them")
    check_library(lib, args.liberty)
    return lib, args.liberty


def pipelined_for_clock(specs, args, out=None) -> list:
    """Each spec with the pipeline registers that meet --clock-ps (synth/pipeline.py)."""
    from fpforge import synth
    from fpforge.synth.pipeline import check_pipelinable, pipeline_for

    if getattr(args, "stages", None) is not None or getattr(args, "cuts", None) is not None:
        raise OptionError("--clock-ps chooses the stages and the cut points; give it or "
                          "--stages / --cuts, not both")
    for spec in specs:
        check_pipelinable(spec)
    chosen = []
    for spec in specs:
        choice = pipeline_for(spec, args.clock_ps, out_dir=out or synth.DEFAULT_OUT_DIR,
                              jobs=getattr(args, "jobs", None) or synth.DEFAULT_JOBS,
                              lib=getattr(args, "lib", None) or "fpforge",
                              liberty=getattr(args, "liberty", None))
        print("\n".join(choice.report()))
        chosen.append(choice.spec)
    return chosen


# ----- where tasks run ---------------------------------------------------------------------------

def add_executor_options(p, what: str):
    from fpforge.infra.executor import EXECUTOR_HELP
    p.add_argument("--executor", metavar="WHERE", help=EXECUTOR_HELP)
    p.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                   help="run on this Dask scheduler's workers (= --executor dask:tcp://...; "
                        "DASK_SCHEDULER_ADDRESS too)")
    p.add_argument("--cluster", metavar="local:N|FILE",
                   help="run on a Dask cluster fpforge starts: local:N (a LocalCluster of N "
                        "workers) or a JSON file of dask-jobqueue options (docs/scale-out.md)")
    p.add_argument("--resume", action="store_true",
                   help=f"keep each {what}'s result by content key and take those already "
                        "kept: an interrupted run, run again, does only what is missing")


def executor_of(args, processes: bool = False):
    """The executor --executor, --scheduler or --cluster names (at most one; local by default:
    --jobs threads, or processes)."""
    from fpforge.infra.executor import executor_from
    given = [(flag, getattr(args, dest, None)) for flag, dest in
             (("--executor", "executor"), ("--scheduler", "scheduler"), ("--cluster", "cluster"))
             if getattr(args, dest, None)]
    if len(given) > 1:
        raise OptionError(f"{' and '.join(f for f, _ in given)} each say where tasks run; "
                          "give one")
    text = None
    if given:
        flag, value = given[0]
        if flag == "--scheduler":
            if not value.startswith("tcp://"):
                raise OptionError(f"--scheduler takes a Dask scheduler address tcp://HOST:PORT, "
                                  f"not {value!r}")
            text = f"dask:{value}"
        elif flag == "--cluster":
            text = f"dask:{value}" if value.startswith("local:") else f"dask:jobqueue:{value}"
        else:
            text = value
    jobs = getattr(args, "jobs", None) or os.cpu_count() or 2
    return executor_from(text, jobs, Path("build") / "farm", processes)


def result_store(args, what: str):
    """With --resume, the result store of ``what`` (build/results/<what>), else None."""
    from fpforge.infra.executor import ResultStore
    return ResultStore(Path("build") / "results" / what) if getattr(args, "resume", False) \
        else None
