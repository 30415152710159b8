"""Synthesis: ``fpforge synth``, ``clock-table``, ``sweep``."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from fpforge.rtl.kinds import BASIC_UNITS
from fpforge.rtl.options import OptionError

from .common import (add_clock_ps, add_executor_options, add_jobs, add_library_options,
                     add_spec_options, executor_of, existing_dir, format_list, library_of,
                     pipelined_for_clock, specs_of)
from .power import add_power_options, check_power_request, measure_records, print_power

__all__ = ["add_synth", "add_clock_table", "add_sweep"]


def add_synth(sub):
    s = sub.add_parser("synth", help="area / timing proxies with Yosys",
                       description="Synthesise mul, add, fma and cvt (from float32) in the "
                                   "format, or the --unit list, and report area and timing "
                                   "proxies (docs/synth).")
    add_spec_options(s, units="many", required=False)
    add_library_options(s)
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
    add_clock_ps(s)
    add_power_options(s, flag=True)
    add_jobs(s)
    s.set_defaults(run=_synth)


def _synth(args) -> int:
    from fpforge import synth
    from fpforge.synth.report import print_table

    units = args.unit or list(BASIC_UNITS)
    specs = specs_of(args, units)
    out = existing_dir(args.out, "--out") if args.out else synth.DEFAULT_OUT_DIR
    lib, liberty = library_of(args)
    if args.data is not None and not args.power:
        raise OptionError("--data names the data set of --power's energy figure: give --power")
    data = check_power_request(args, lib, liberty) if args.power else None
    if args.clock_ps is not None:
        specs = pipelined_for_clock(specs, args, out)
    records = synth.run(specs, liberty=liberty, out_dir=out, jobs=args.jobs,
                        fpga=not args.no_fpga, cores=not args.no_core, pnr=args.pnr,
                        delay_target_ps=args.clock_ps, lib=lib)
    first = records[0]
    run_dir = Path(first.directory).parent
    import json
    header = json.loads((run_dir / "header.json").read_text())
    print_table(records, header={"yosys": first.tools["yosys"], "liberty": header["liberty"],
                                 "delay": header["delay"],
                                 "report": str(run_dir / "report.md"),
                                 "records": str(run_dir / "records.json")})
    if args.power:
        measure_records(specs, records, lib, liberty, data, args.vectors, args.clock_ps,
                        args.jobs)
        print_power(records)
    if not args.gate_level:
        return 0
    return _gate_level(specs, records, args)


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
            raise OptionError(f"--gate-level found no netlist and cell models for "
                              f"{spec.default_name} in {Path(record.directory).parent}")
        design = Design.from_files(spec, [models[0], netlist], spec.default_name,
                                   latency=spec.latency, nan="exact", **_own_clocking(spec))
        design = replace(design, rm_values=None)    # fpforge's own rm: every code, as ever
        v = verify(design, engine="batch" if args.sim is None else "cocotb", sim=args.sim)
        print(("gate-level " + v.explain()).replace("\n  log:", "\n  log:"))
        status = max(status, 0 if v.ok else 1)
    return status


def _own_clocking(spec) -> dict:
    if not spec.latency:
        return {}
    return {"clock": "clk", "reset": "rst", "valid_in": "valid_i", "valid_out": "valid_o"}


def add_clock_table(sub):
    t = sub.add_parser("clock-table", help="stages and area of fp8e4m3 / bf16 / fp16 mul, add, "
                       "fma pipelined to 2 ... 0.5 GHz",
                       description="Pipeline fp8e4m3, bf16 and fp16 mul, add and fma to 2, 1.5, "
                                   "1, 0.75 and 0.5 GHz (--clock-ps) and print the stages, area "
                                   "and flip-flops of each (docs/synth/clock.md).")
    t.add_argument("--out", metavar="DIR", help="where the run folders go (default build/synth)")
    t.add_argument("--publish", metavar="DIR", help="also write DIR/clock.md")
    add_jobs(t)
    t.set_defaults(run=_clock_table)


def _clock_table(args) -> int:
    from fpforge import synth
    from fpforge.synth.pipeline import clock_table

    out = existing_dir(args.out, "--out") if args.out else synth.DEFAULT_OUT_DIR
    text = clock_table(out_dir=out, jobs=args.jobs)
    print(text, end="")
    if args.publish:
        path = existing_dir(args.publish, "--publish") / "clock.md"
        path.write_text(text)
        print(f"wrote {path}")
    return 0


def add_sweep(sub):
    w = sub.add_parser("sweep", help="every format x unit, option variants, block units",
                       description="Synthesise every catalog format of at most --max-width bits "
                                   "x every unit, option variants, the block units and the "
                                   "multi-format mul and add over each format set whose "
                                   "members are all swept (OCP FP8, f8f6f4; CVFPU's with "
                                   "float32), beside their members; CSV, Markdown and PNG "
                                   "plots.")
    w.add_argument("--formats", type=format_list, metavar="F[,F...]",
                   help="only these formats (default: the catalog)")
    w.add_argument("--unit", metavar="U[,U...]",
                   help="only these units, or a group: basic (the default), extra (every other "
                        "scalar kind but sub and fms, docs/synth/kinds.md), all; with --unit "
                        "or --formats, the option variants, block units and multi-format "
                        "rows follow the choice")
    w.add_argument("--max-width", type=int, default=16, metavar="BITS",
                   help="catalog formats of at most this many bits (default 16; 32 adds "
                        "float32)")
    add_library_options(w)
    w.add_argument("--out", metavar="DIR", help="where the run folder goes (default build/synth)")
    w.add_argument("--fpga", action="store_true", help="also the iCE40 / ECP5 LUT counts")
    w.add_argument("--publish", metavar="DIR", help="also copy the report files there")
    add_power_options(w, flag=True)
    add_executor_options(w, "Yosys job")
    add_jobs(w)
    w.set_defaults(run=_sweep)


def _sweep(args) -> int:
    from fpforge.synth import sweep_report
    from fpforge.synth.sweep import selection
    out = existing_dir(args.out, "--out") if args.out else None
    lib, liberty = library_of(args)
    power = _power_run(args, lib, liberty)
    kw = {"out": out} if out else {}
    with executor_of(args) as executor:
        return sweep_report.run_sweep(**selection(args.formats, args.unit),
                                      max_width=args.max_width, liberty=liberty, lib=lib,
                                      jobs=args.jobs, fpga=args.fpga, publish=args.publish,
                                      executor=executor, resume=args.resume, power=power, **kw)


def _power_run(args, lib, liberty):
    """The sweep's PowerRun of --power [--data NAME] [--vectors N], checked before any work."""
    if not args.power:
        if args.data is not None:
            raise OptionError("--data names the data set of --power's energy figure: give "
                              "--power")
        return None
    from fpforge.codesign.power_data import operand_vectors
    from fpforge.synth.sweep_power import PowerRun
    return PowerRun(check_power_request(args, lib, liberty), args.vectors, operand_vectors)
