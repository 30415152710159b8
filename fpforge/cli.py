"""The ``fpforge`` command line: one parser, one set of spec options, one subcommand per job.

    fpforge verilog       one unit as Verilog-2005 (+ .json sidecar, FuseSoC .core)
    fpforge synth         area / timing proxies with Yosys (and --gate-level: the netlist checked)
    fpforge sweep         every catalog format x unit, option variants, block units (make sweep)
    fpforge verify        a unit -- fpforge's own or any Verilog -- against the golden model
    fpforge verify-exhaustive   every input, sharded, on the native Verilator engine
    fpforge verify-equiv  prove every matrix spec's Verilog equivalent to an earlier commit's
    fpforge bench-ppa | bench-golden | bench-mx | bench-gemm     the benchmarks
    fpforge pareto [--quick] [--config FILE] [--out DIR]   cost against quality
    fpforge roofline      tokens/s per configuration from a pareto.json, stated assumptions
    fpforge formats | units                          the format catalog, the unit kinds

The spec options (``--unit --format --in-format ... --stages``) are rtl/kinds.py's
``SPEC_OPTIONS``: one spelling and one meaning in every subcommand; a subcommand turns them into
``Spec`` objects with ``make_spec`` and calls library functions with them. Bad input (an unknown
name, impossible options, a missing tool or file) gives one line on stderr naming what is valid,
exit status 2, and writes nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from fpforge.rtl.formats import CATALOG, SHORT_NAMES, FormatError, resolve
from fpforge.rtl.kinds import BASIC_UNITS, KINDS, SPEC_OPTIONS, UNITS, make_spec, units_phrase
from fpforge.rtl.elements import OCP_FP_ELEMENTS
from fpforge.rtl.mx import SCALE_RULES
from fpforge.rtl.options import OptionError
from fpforge.rtl.toolchain import ToolMissing

__all__ = ["main", "EXIT_USAGE"]

EXIT_USAGE = 2


class _Parser(argparse.ArgumentParser):
    """argparse, but its errors are one line (no usage dump) so scripts can show them as is."""

    def error(self, message):
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


# ----- shared option groups ----------------------------------------------------------------------

def _unit_list(text: str) -> list[str]:
    units = [u.strip() for u in text.split(",") if u.strip()]
    bad = [u for u in units if u not in KINDS]
    if bad or not units:
        raise argparse.ArgumentTypeError(f"invalid unit {(bad or [text])[0]!r} (choose from "
                                         f"{', '.join(map(repr, UNITS))})")
    return units


def _format_list(text: str) -> list[str]:
    names = [f.strip() for f in text.split(",") if f.strip()]
    for n in names:
        try:
            resolve(n)
        except FormatError as err:
            raise argparse.ArgumentTypeError(str(err)) from None
    return names


def _add_spec_options(p, *, units: str = "one", required: bool = True):
    """The spec options. ``units``: "one" (--unit takes one kind), "many" (a comma-separated
    list)."""
    g = p.add_argument_group("unit (the same options in every subcommand)")
    for o in SPEC_OPTIONS:
        if o.dest == "unit":
            if units == "one":
                g.add_argument(o.flag, choices=UNITS, required=required, help=o.help)
            else:
                g.add_argument(o.flag, type=_unit_list, metavar="U[,U...]",
                               help=o.help + " (a comma-separated list)")
        elif o.switch:
            g.add_argument(o.flag, dest=o.dest, action="store_const", const=not o.default,
                           default=None, help=o.help)
        else:
            g.add_argument(o.flag, dest=o.dest, type=o.type if o.type is not str else None,
                           metavar=o.metavar, choices=o.choices, help=o.help)


def _values(args) -> dict:
    return {o.dest: getattr(args, o.dest) for o in SPEC_OPTIONS
            if o.dest != "unit" and getattr(args, o.dest, None) is not None}


def _specs(args, units) -> list:
    """One spec per unit of ``units``; an option goes to the units that take it, and one that
    none of them takes is an error."""
    values = _values(args)
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


def _existing_dir(text: str, what: str) -> Path:
    path = Path(text)
    if not path.is_dir():
        raise OptionError(f"{what} {text!r} does not exist (or is not a folder)")
    if not os.access(path, os.W_OK | os.X_OK):
        raise OptionError(f"{what} {text!r} is not writable")
    return path


def _jobs(p):
    p.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 2, metavar="N",
                   help="parallel jobs (default: one per core)")


def _shard(text: str) -> tuple[int, int]:
    try:
        i, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must look like i/N (e.g. 0/4), not {text!r}")
    if not (n >= 1 and 0 <= i < n):
        raise argparse.ArgumentTypeError(f"{text!r}: need 0 <= i < N")
    return i, n


def _port_map(items) -> dict:
    out = {}
    for item in items or []:
        name, sep, outer = item.partition("=")
        if not sep or not name or not outer:
            raise OptionError(f"--port takes SPEC_PORT=MODULE_PORT (e.g. a=op_a), not {item!r}")
        out[name] = outer
    return out


def _positive(kind):
    def parse(text):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid {kind.__name__} value: {text!r}")
        if v < 0:
            raise argparse.ArgumentTypeError(f"must not be negative, not {text!r}")
        return v
    return parse


# ----- subcommands -------------------------------------------------------------------------------

def _cmd_verilog(args) -> int:
    from fpforge.rtl.emit import check_module_name
    from fpforge.rtl.export import check_output, write_export

    spec = make_spec(args.unit, **_values(args))
    if args.clock_ps is not None:
        spec = _pipelined_for_clock([spec], args)[0]
    name = check_module_name(args.name or spec.default_name)
    if args.output:
        check_output(args.output)
        output = args.output
        if not Path(output).parent.is_dir():
            raise OptionError(f"output folder {str(Path(output).parent)!r} does not exist")
    else:
        output = str(_existing_dir(args.out_dir, "--out-dir") / f"{name}.v")
    result = write_export(spec, output, name=args.name)
    print(f"wrote {output} (module {result.name}, latency {spec.latency}) and its .json/.core")
    return 0


def _cmd_synth(args) -> int:
    from fpforge import synth
    from fpforge.synth.report import print_table

    units = args.unit or list(BASIC_UNITS)
    specs = _specs(args, units)
    out = _existing_dir(args.out, "--out") if args.out else synth.DEFAULT_OUT_DIR
    liberty = args.liberty
    if liberty and not Path(liberty).is_file():
        raise OptionError(f"liberty file {liberty!r} does not exist")
    if args.clock_ps is not None:
        if liberty:
            raise OptionError("--clock-ps times with fpforge's own cells; it cannot use --liberty")
        specs = _pipelined_for_clock(specs, args, out)
    records = synth.run(specs, liberty=liberty, out_dir=out, jobs=args.jobs,
                        fpga=not args.no_fpga, cores=not args.no_core, pnr=args.pnr,
                        delay_target_ps=args.clock_ps)
    first = records[0]
    run_dir = Path(first.directory).parent
    from fpforge.synth.sta import BOUNDARY
    timed = first.asic.delay_ps is not None
    print_table(records, header={"yosys": first.tools["yosys"], "liberty": first.library,
                                 "delay": BOUNDARY if timed else "none (area only)",
                                 "report": str(run_dir / "report.md"),
                                 "records": str(run_dir / "records.json")})
    if not args.gate_level:
        return 0
    return _gate_level(specs, records, args)


def _pipelined_for_clock(specs, args, out=None) -> list:
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
                              jobs=getattr(args, "jobs", None) or synth.DEFAULT_JOBS)
        print("\n".join(choice.report()))
        chosen.append(choice.spec)
    return chosen


def _clock_ps(p):
    p.add_argument("--clock-ps", type=_positive(float), metavar="P",
                   help="pipeline to this clock period (ps): the fewest stages, then "
                        "flip-flops, whose every path meets P on the load-aware timer "
                        "(at the kind's cut points; docs/synth/timing.md)")


def _cmd_clock_table(args) -> int:
    from fpforge import synth
    from fpforge.synth.pipeline import clock_table

    out = _existing_dir(args.out, "--out") if args.out else synth.DEFAULT_OUT_DIR
    text = clock_table(out_dir=out, jobs=args.jobs)
    print(text, end="")
    if args.publish:
        path = _existing_dir(args.publish, "--publish") / "clock.md"
        path.write_text(text)
        print(f"wrote {path}")
    return 0


def _gate_level(specs, records, args) -> int:
    """Simulate each mapped netlist with the cell models against the golden model."""
    from fpforge.sim.design import Design
    from fpforge.sim.verify import verify

    by_name = {r.name: r for r in records}
    status = 0
    for spec in specs:
        record = by_name[spec.default_name]
        asic = Path(record.directory) / "asic"
        netlist = asic / "netlist.v"
        models = sorted((Path(record.directory).parent / "lib").glob("*_cells.v"))
        if not netlist.exists() or not models:
            raise OptionError(f"--gate-level needs fpforge's own cells (no --liberty): no "
                              f"netlist and cell models for {spec.default_name}")
        design = Design.from_files(spec, [models[0], netlist], spec.default_name,
                                   latency=spec.latency, **_own_clocking(spec))
        v = verify(design, engine="batch" if args.sim is None else "cocotb", sim=args.sim)
        print(("gate-level " + v.explain()).replace("\n  log:", "\n  log:"))
        status = max(status, 0 if v.ok else 1)
    return status


def _own_clocking(spec) -> dict:
    if not spec.latency:
        return {}
    return {"clock": "clk", "reset": "rst", "valid_in": "valid_i", "valid_out": "valid_o"}


def _cmd_sweep(args) -> int:
    from fpforge.synth import sweep
    out = _existing_dir(args.out, "--out") if args.out else None
    kw = {"out": out} if out else {}
    with _executor(args) as executor:
        return sweep.run_sweep(formats=args.formats, units=args.unit, max_width=args.max_width,
                               liberty=args.liberty, jobs=args.jobs, fpga=args.fpga,
                               publish=args.publish, executor=executor, resume=args.resume,
                               **kw)


def _executor(args, processes: bool = False):
    """The executor --executor, --scheduler or --cluster names (at most one; local by default:
    --jobs threads, or processes)."""
    from fpforge.executor import executor_from
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


def _store(args, what: str):
    """With --resume, the result store of ``what`` (build/results/<what>), else None."""
    from fpforge.executor import ResultStore
    return ResultStore(Path("build") / "results" / what) if getattr(args, "resume", False) \
        else None


def _executor_options(p, what: str):
    from fpforge.executor import EXECUTOR_HELP
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


def _design(args, spec):
    """The design ``fpforge verify`` checks: fpforge's own unit, or the user's Verilog."""
    from fpforge.sim.design import Design
    if not args.verilog:
        for flag in ("top", "port", "clock", "reset", "valid_in", "valid_out", "latency"):
            if getattr(args, flag) not in (None, []):
                raise OptionError(f"--{flag.replace('_', '-')} describes a module given with "
                                  "--verilog FILE; without --verilog fpforge checks its own unit")
        return Design.of(spec)
    if not args.top:
        raise OptionError("--verilog needs --top NAME (the module to check)")
    latency = args.latency if args.latency is not None else 0
    return Design.from_files(spec, args.verilog, args.top, port_map=_port_map(args.port),
                             latency=latency, clock=args.clock, reset=args.reset,
                             reset_low=args.reset_active_low, valid_in=args.valid_in,
                             valid_out=args.valid_out)


def _cmd_verify(args) -> int:
    from fpforge.sim import verify as vf
    from fpforge.sim.faults import faulty_design
    from fpforge.sim.tiers import full_matrix, verify_formats

    if args.matrix:
        if args.unit or _values(args) or args.verilog:
            raise OptionError("--matrix runs the whole matrix of make verify; it takes "
                              "--formats, --sim, --jobs and --junit, not unit options")
        specs = full_matrix(verify_formats(",".join(args.formats) if args.formats else None))
        with _executor(args, processes=True) as executor:
            verdicts = vf.verify_matrix(specs, sim=args.sim, jobs=args.jobs, seed=args.seed,
                                        junit=args.junit, executor=executor,
                                        store=_store(args, "verify"))
        bad = [v.name for v in verdicts if not v.ok]
        print(f"{len(verdicts) - len(bad)} of {len(verdicts)} matrix cases passed" +
              (f"; failed: {', '.join(bad)}" if bad else ""))
        return 1 if bad else 0
    if args.formats:
        raise OptionError("--formats selects the formats of --matrix")
    if not args.unit:
        raise OptionError(f"fpforge {args.command} needs --unit" +
                          (" (or --matrix)" if args.command == "verify" else ""))
    spec = make_spec(args.unit, **_values(args))
    design = _design(args, spec)
    if args.fault:
        if args.verilog:
            raise OptionError("--fault swaps fpforge's own unit for a wrong one; it does not "
                              "apply to --verilog")
        design = faulty_design(spec, args.fault)
    if args.exhaustive:
        with _executor(args) as executor:
            verdict = vf.verify_exhaustive(design, shards=args.shards, shard=args.shard,
                                           limit=args.limit, seed=args.seed, executor=executor,
                                           store=_store(args, "exhaustive"))
    else:
        if args.shards or args.shard or args.limit:
            raise OptionError("--shards, --shard and --limit go with --exhaustive")
        engine = args.engine or "cocotb"
        verdict = vf.verify(design, engine=engine, sim=args.sim, seed=args.seed,
                            bubbles=args.bubbles)
    print(verdict.explain())
    if args.junit:
        vf.write_junit(args.junit, [verdict])
    return 0 if verdict.ok else 1


def _cmd_verify_exhaustive(args) -> int:
    args.exhaustive = True
    args.matrix, args.formats, args.fault, args.engine, args.bubbles = False, None, None, None, 0
    return _cmd_verify(args)


def _cmd_verify_equiv(args) -> int:
    from fpforge.synth import equiv
    try:
        return equiv.run(args.base, formats=args.formats, units=args.unit, jobs=args.jobs)
    except ValueError as err:      # a base commit that does not exist or cannot export
        raise OptionError(str(err)) from None


def _cmd_bench_executor(args) -> int:
    from fpforge import bench_executor
    return bench_executor.run_bench(jobs=args.jobs)


def _cmd_bench_ppa(args) -> int:
    from fpforge.synth import bench_ppa
    out = _existing_dir(args.out, "--out") if args.out else None
    return bench_ppa.run_bench(jobs=args.jobs, wall=not args.no_wall,
                               **({"out": out} if out else {}))


def _cmd_bench_golden(args) -> int:
    from fpforge.golden import bench
    return bench.run_bench(log2n=args.log2n, repeats=args.repeats)


def _cmd_bench_mx(args) -> int:
    try:
        import torch  # noqa: F401
        import torchao  # noqa: F401
    except ImportError:
        raise ToolMissing("bench-mx needs torch and torchao: .venv/bin/pip install -e "
                          "'.[mxref]'") from None
    from fpforge.golden import mx_bench
    return mx_bench.run_bench(n=args.n, repeat=args.repeat, elems=args.elem, rules=args.rule)


def _cmd_bench_gemm(args) -> int:
    from fpforge.golden import gemm_bench
    if args.size < 32 or args.size % 32:
        raise OptionError(f"--size must be a positive multiple of 32 (the MX block), not "
                          f"{args.size}")
    if args.repeat < 1:
        raise OptionError(f"--repeat must be at least 1, not {args.repeat}")
    return gemm_bench.run_bench(size=args.size, repeat=args.repeat)


def _cmd_pareto(args) -> int:
    from fpforge import pareto
    if args.quick and args.config:
        raise OptionError("--quick runs the quick axes; --config FILE gives others, not both")
    axes = pareto.Axes.from_json(args.config) if args.config else \
        (pareto.QUICK if args.quick else pareto.FULL)
    out = Path(args.out) if args.out else pareto.DEFAULT_OUT
    return pareto.run_pareto(axes=axes, out=out, jobs=args.jobs, machine=_machine(args))


def _machine(args):
    from fpforge.roofline import Machine
    return Machine(args.area_mm2, args.bandwidth_gbs, args.clock_mhz)


def _cmd_roofline(args) -> int:
    from fpforge.roofline import write_roofline
    path = Path(args.pareto)
    try:
        rows = json.loads(path.read_text())["rows"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise OptionError(f"--pareto {path}: not a pareto.json of fpforge pareto ({err})") \
            from None
    machine = _machine(args)
    out = Path(args.out) if args.out else path.parent
    figures = write_roofline(rows, machine, out)
    print(f"{len(figures)} configurations with a cost; report: {out / 'roofline.md'}")
    return 0


def _add_machine_options(p) -> None:
    p.add_argument("--area-mm2", type=float, default=100.0, metavar="MM2",
                   help="roofline: mm² of MAC units (default 100)")
    p.add_argument("--bandwidth-gbs", type=float, default=3350.0, metavar="GBS",
                   help="roofline: memory bandwidth in GB/s (default 3350)")
    p.add_argument("--clock-mhz", type=float, default=None, metavar="MHZ",
                   help="roofline: one clock for every unit (default: each unit's own step "
                        "delay)")


def _cmd_formats(args) -> int:
    short = {}
    for alias, canonical in SHORT_NAMES.items():
        short.setdefault(canonical, []).append(alias)
    for name, fmt in CATALOG.items():
        aliases = ", ".join(short.get(name, [])) or "-"
        print(f"{name:<20} {aliases:<14} {fmt.describe()}")
    return 0


def _cmd_ports(args) -> int:
    spec = make_spec(args.unit, **_values(args))
    print(port_table(spec))
    return 0


def port_table(spec) -> str:
    """A spec's ports as a Markdown table (what the docs' port tables are generated from)."""
    rows = ["| port | dir | width | carries | meaning |", "|---|---|---:|---|---|"]
    for p in spec.ports():
        carries = (p.fmt.name if p.fmt else "-") if p.lanes == 1 else \
            f"{p.lanes} x {p.fmt.name if p.fmt else f'{p.lane_width} bits'}"
        rows.append(f"| `{p.name}` | {p.direction[:-3] if p.is_input else 'out'} | {p.width} "
                    f"| {carries} | {p.meaning} |")
    return "\n".join(rows)


def _cmd_units(args) -> int:
    for name, kind in KINDS.items():
        takes = ", ".join(o.flag for o in SPEC_OPTIONS if o.dest in kind.spec.OPTIONS)
        print(f"{name:<5} {kind.summary}\n      options: --unit {name}, {takes}")
    return 0


# ----- the parser --------------------------------------------------------------------------------

def _parser() -> argparse.ArgumentParser:
    top = _Parser(prog="fpforge", description="Low-precision floating-point RTL generator, "
                                              "verifier and cost model.")
    sub = top.add_subparsers(dest="command", required=True, parser_class=_Parser)

    v = sub.add_parser("verilog", help="export one unit as Verilog-2005 (+ .json, .core)",
                       description="Export one unit as Verilog-2005 with a JSON sidecar and a "
                                   "FuseSoC core file beside it (docs/verilog-export.md).")
    _add_spec_options(v)
    v.add_argument("--name", metavar="TOP", help="module name (default: one that carries the "
                                                 "parameters, e.g. fp_mul_e4m3fn_rne)")
    out = v.add_mutually_exclusive_group(required=True)
    out.add_argument("-o", "--output", metavar="OUT.v",
                     help="Verilog file; OUT.json and OUT.core are written beside it")
    out.add_argument("--out-dir", metavar="DIR",
                     help="write DIR/<module name>.v (and .json, .core) instead of -o")
    _clock_ps(v)
    v.set_defaults(run=_cmd_verilog)

    s = sub.add_parser("synth", help="area / timing proxies with Yosys",
                       description="Synthesise mul, add, fma and cvt (from float32) in the "
                                   "format, or the --unit list, and report area and timing "
                                   "proxies (docs/synth).")
    _add_spec_options(s, units="many", required=False)
    s.add_argument("--liberty", metavar="PATH", help="a liberty file instead of fpforge's cells "
                                                     "(area only)")
    s.add_argument("--out", metavar="DIR", help="where the run folder goes (default build/synth)")
    s.add_argument("--pnr", action="store_true",
                   help="also place and route each unit (nextpnr iCE40 / ECP5) for its Fmax")
    s.add_argument("--no-fpga", action="store_true", help="skip the iCE40 / ECP5 runs")
    s.add_argument("--no-core", action="store_true", help="skip the bare integer cores")
    s.add_argument("--gate-level", action="store_true",
                   help="then simulate each mapped netlist with the cell models against the "
                        "golden model (synthesis preserved the function)")
    s.add_argument("--sim", choices=("icarus", "verilator"),
                   help="--gate-level on the cocotb bench of this simulator (default: Icarus, "
                        "batch)")
    _clock_ps(s)
    _jobs(s)
    s.set_defaults(run=_cmd_synth)

    b = sub.add_parser("bench-executor", help="the Dask path's overhead against the local pool",
                       description="Synthesise one small sweep through the local pool and a "
                                   "Dask LocalCluster, alternately, and report the ratio; "
                                   "estimate make verify's matrix on 100 workers "
                                   "(docs/scale-out.md).")
    _jobs(b)
    b.set_defaults(run=_cmd_bench_executor)

    t = sub.add_parser("clock-table", help="stages and area of fp8e4m3 / bf16 / fp16 mul, add, "
                       "fma pipelined to 2 ... 0.5 GHz",
                       description="Pipeline fp8e4m3, bf16 and fp16 mul, add and fma to 2, 1.5, "
                                   "1, 0.75 and 0.5 GHz (--clock-ps) and print the stages, area "
                                   "and flip-flops of each (docs/synth/clock.md).")
    t.add_argument("--out", metavar="DIR", help="where the run folders go (default build/synth)")
    t.add_argument("--publish", metavar="DIR", help="also write DIR/clock.md")
    _jobs(t)
    t.set_defaults(run=_cmd_clock_table)

    w = sub.add_parser("sweep", help="every format x unit, option variants, block units",
                       description="Synthesise every catalog format of at most --max-width bits "
                                   "x every unit, option variants and the block units; CSV, "
                                   "Markdown and PNG plots.")
    w.add_argument("--formats", type=_format_list, metavar="F[,F...]",
                   help="only these formats (default: the catalog)")
    w.add_argument("--unit", type=_unit_list, metavar="U[,U...]", help="only these units")
    w.add_argument("--max-width", type=int, default=16, metavar="BITS",
                   help="catalog formats of at most this many bits (default 16; 32 adds "
                        "float32)")
    w.add_argument("--liberty", metavar="PATH", help="a liberty file instead of fpforge's cells")
    w.add_argument("--out", metavar="DIR", help="where the run folder goes (default build/synth)")
    w.add_argument("--fpga", action="store_true", help="also the iCE40 / ECP5 LUT counts")
    w.add_argument("--publish", metavar="DIR", help="also copy the report files there")
    _executor_options(w, "Yosys job")
    _jobs(w)
    w.set_defaults(run=_cmd_sweep)

    for name, helptext in (("verify", "check a unit against the golden model, bit for bit"),
                           ("verify-exhaustive", "every input, sharded, on the native engine")):
        c = sub.add_parser(name, help=helptext, description=helptext + " (docs/verification.md)."
                           " Exit status 0: every vector matched; 1: mismatches; 2: bad input.")
        _add_spec_options(c, required=False)
        d = c.add_argument_group("any Verilog (default: fpforge's own unit for the spec)")
        d.add_argument("--verilog", metavar="FILE", action="append",
                       help="a Verilog source (repeat for several)")
        d.add_argument("--top", metavar="NAME", help="the module to check")
        d.add_argument("--port", metavar="SPEC=MODULE", action="append",
                       help="the module's name for a spec port (e.g. a=op_a); repeat")
        d.add_argument("--clock", metavar="NAME", help="its clock (pipelined modules)")
        d.add_argument("--reset", metavar="NAME", help="its synchronous reset (active high)")
        d.add_argument("--reset-active-low", action="store_true", help="the reset is active low")
        d.add_argument("--valid-in", metavar="NAME", help="its input valid, if it has one")
        d.add_argument("--valid-out", metavar="NAME", help="its output valid, if it has one")
        d.add_argument("--latency", type=_positive(int), metavar="N",
                       help="cycles from inputs to outputs (default 0: combinational)")
        r = c.add_argument_group("the run")
        r.add_argument("--seed", type=int, default=1, help="of every random draw (default 1)")
        r.add_argument("--shards", type=_positive(int), default=0, metavar="N",
                       help="--exhaustive: processes (default: one per core)")
        r.add_argument("--shard", type=_shard, metavar="i/N", help="--exhaustive: shard i of N")
        r.add_argument("--limit", type=_positive(int), default=0, metavar="N",
                       help="--exhaustive: only the first N inputs")
        r.add_argument("--junit", metavar="FILE", help="write JUnit XML there")
        _executor_options(r, "case (--matrix) or shard (--exhaustive)")
        if name == "verify":
            r.add_argument("--exhaustive", action="store_true",
                           help="every input on the native Verilator engine")
            r.add_argument("--sim", choices=("icarus", "verilator"),
                           help="the cocotb bench's simulator (default: $SIM or icarus; "
                                "--matrix: the faster one per case)")
            r.add_argument("--engine", choices=("cocotb", "batch"),
                           help="cocotb (default) or batch (Icarus, no cocotb)")
            r.add_argument("--bubbles", type=float, default=0.0, metavar="P",
                           help="chance that a cycle carries no operation (pipelined units)")
            r.add_argument("--fault", metavar="NAME",
                           help="check a deliberately wrong unit instead (self-test): "
                                "force-inexact, force-invalid, rtz-instead, rna-instead, "
                                "stochastic-a-instead, satfinite-instead, "
                                "other-element-format")
            r.add_argument("--matrix", action="store_true",
                           help="the full matrix of make verify, case by case")
            r.add_argument("--formats", type=_format_list, metavar="F[,F...]",
                           help="--matrix: only these formats")
            _jobs(r)
            c.set_defaults(run=_cmd_verify)
        else:
            c.set_defaults(run=_cmd_verify_exhaustive, sim=None)

    e = sub.add_parser("verify-equiv", help="prove the matrix's Verilog equivalent to a commit's",
                       description="Prove (Yosys SAT) that every matrix spec's Verilog, and every "
                                   "block unit of the sweep, computes what --base's did.")
    e.add_argument("--base", required=True, metavar="COMMIT", help="the reference commit")
    e.add_argument("--formats", type=_format_list, metavar="F[,F...]",
                   help="only these formats' part of the matrix")
    e.add_argument("--unit", type=_unit_list, metavar="U[,U...]", help="only these units")
    _jobs(e)
    e.set_defaults(run=_cmd_verify_equiv)

    b = sub.add_parser("bench-ppa", help="area/delay beside CELLS.md's references and targets")
    b.add_argument("--out", metavar="DIR", help="where the run folders go (default build/synth)")
    b.add_argument("--no-wall", action="store_true", help="skip the make synth wall-time run")
    _jobs(b)
    b.set_defaults(run=_cmd_bench_ppa)

    g = sub.add_parser("bench-golden", help="golden-model throughput against ml_dtypes")
    g.add_argument("--log2n", type=int, default=24, help="log2 of the conversion size (24)")
    g.add_argument("--repeats", type=int, default=7, help="timed calls per measurement (7)")
    g.set_defaults(run=_cmd_bench_golden)

    m = sub.add_parser("bench-mx", help="golden MX quantization against torchao (mxref extra)")
    m.add_argument("--n", type=int, default=1 << 22, help="elements (a multiple of 1024)")
    m.add_argument("--repeat", type=int, default=5)
    # torchao's MX elements
    m.add_argument("--elem", nargs="*", default=["fp8e4m3", "fp4e2m1"],
                   choices=OCP_FP_ELEMENTS)
    m.add_argument("--rule", nargs="*", default=["floor", "rceil"], choices=SCALE_RULES)
    m.set_defaults(run=_cmd_bench_mx)

    e = sub.add_parser("bench-gemm", help="the emulated matrix multiply against fake-quantize "
                                          "+ float32 matmul")
    e.add_argument("--size", type=int, default=1024, help="M = K = N (a multiple of 32; 1024)")
    e.add_argument("--repeat", type=int, default=5)
    e.set_defaults(run=_cmd_bench_gemm)

    pa = sub.add_parser("pareto", help="cost (synthesis) against quality (emulated hardware) "
                                       "per number-format configuration (docs/codesign.md)")
    pa.add_argument("--quick", action="store_true",
                    help="the MX elements at k = 32 and per tensor, three accumulators")
    pa.add_argument("--config", metavar="FILE",
                    help="the axes as JSON: elements, scaling, block, scale_rule, rounding, "
                         "accum (lists)")
    pa.add_argument("--out", metavar="DIR", help="where the report goes (build/pareto)")
    _add_machine_options(pa)
    _jobs(pa)
    pa.set_defaults(run=_cmd_pareto)

    ro = sub.add_parser("roofline", help="tokens/s of transformer layers per configuration, "
                                         "from a pareto.json under stated assumptions")
    ro.add_argument("--pareto", metavar="FILE", default="build/pareto/pareto.json",
                    help="fpforge pareto's JSON (default build/pareto/pareto.json)")
    ro.add_argument("--out", metavar="DIR", help="where roofline.md/.json go (beside FILE)")
    _add_machine_options(ro)
    ro.set_defaults(run=_cmd_roofline)

    t = sub.add_parser("ports", help="the port table of a unit (Markdown)",
                       description="The ports of the unit the spec options describe, from its "
                                   "spec: the table the docs' port tables are generated from.")
    _add_spec_options(t)
    t.set_defaults(run=_cmd_ports)

    f = sub.add_parser("formats", help="the format catalog with resolved semantics")
    f.set_defaults(run=_cmd_formats)
    u = sub.add_parser("units", help="the unit kinds and the options each takes")
    u.set_defaults(run=_cmd_units)
    return top


def main(argv=None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:          # --help (0) or an argparse error (2, already printed)
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    try:
        return args.run(args)
    except (FormatError, OptionError, ToolMissing) as err:
        message = str(err).replace("\n", " ")   # one line, whatever raised it
        print(f"fpforge {args.command}: error: {message}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"fpforge {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:          # fpforge formats | head
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    sys.exit(main())
