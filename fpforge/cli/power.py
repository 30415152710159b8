"""Energy per operation: ``fpforge power`` and ``fpforge synth --power`` (docs/power.md)."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from fpforge.rtl.kinds import BASIC_UNITS
from fpforge.rtl.options import OptionError

from .common import (add_jobs, add_library_options, add_spec_options, existing_dir, library_of,
                     pipelined_for_clock, positive, specs_of)

__all__ = ["add_power", "add_power_options", "check_power_request", "measure_records"]


def add_power_options(p, *, flag: bool):
    """``--data`` and ``--vectors`` (and ``--power`` on synth, ``flag``)."""
    from fpforge.codesign.power_data import DATA_SETS, DEFAULT_DATA, DEFAULT_VECTORS
    if flag:
        p.add_argument("--power", action="store_true",
                       help="also measure each unit's energy per operation (needs a library "
                            "with power tables: --lib sky130hd or --liberty PATH; docs/power.md)")
    p.add_argument("--data", metavar="NAME",
                   help=f"operand data set of the energy figure: {', '.join(DATA_SETS)} "
                        f"(default {DEFAULT_DATA})")
    p.add_argument("--vectors", type=positive(int), default=DEFAULT_VECTORS, metavar="N",
                   help=f"operations simulated for the activity (default {DEFAULT_VECTORS})")


def check_power_request(args, lib: str, liberty) -> str:
    """The data set's name; raises OptionError, before anything is written, for an unknown data
    set or a library without power tables."""
    from fpforge.codesign.power_data import DEFAULT_DATA, check_data, check_vectors
    from fpforge.synth.cell_library import library_for
    from fpforge.synth.power import check_power
    data = args.data or DEFAULT_DATA
    check_data(data)
    check_vectors(args.vectors)
    with tempfile.TemporaryDirectory() as scratch:
        check_power(library_for(lib, liberty, directory=Path(scratch)))
    return data


def measure_records(specs, records, lib: str, liberty, data: str, vectors: int,
                    clock_ps: float | None = None, jobs: int | None = None) -> None:
    """Measure each unit of ``specs`` (its record among ``records``) the sweep's way
    (synth/sweep_power.py), put the figures in its record's ``power`` and write the records
    again."""
    from fpforge import synth
    from fpforge.codesign.power_data import operand_vectors
    from fpforge.synth.report import write_json
    from fpforge.synth.sweep_power import PowerRun, measure_powers

    run_dir = Path(records[0].directory).parent
    by_name = {r.name: r for r in records}
    units = {s.default_name: (s, by_name[s.default_name]) for s in specs}
    powers, _ = measure_powers(units, PowerRun(data, vectors, operand_vectors, clock_ps), lib,
                               liberty, run_dir, jobs or synth.DEFAULT_JOBS)
    for name, power in powers.items():
        by_name[name].power = power
    write_json(records, run_dir)


def print_power(records) -> None:
    rows = [r for r in records if r.power]
    print(f"{'unit':<36} {'um2':>9} {'ps':>7} {'clock ps':>8} {'internal uW':>11} "
          f"{'switch uW':>10} {'leak uW':>9} {'pJ/op':>8}")
    for r in rows:
        p = r.power
        print(f"{r.name:<36} {r.asic.area_um2:>9.1f} {r.asic.delay_ps:>7.0f} "
              f"{p['clock_ps']:>8.0f} {p['internal_uw']:>11.2f} {p['switching_uw']:>10.2f} "
              f"{p['leakage_uw']:>9.4f} {p['energy_pj']:>8.4f}")
    if rows:
        print(f"data {rows[0].power['data']}, {rows[0].power['vectors']} operations; energy = "
              f"total power x clock period (docs/power.md)")


def add_power(sub):
    from fpforge.codesign.power_data import DATA_SETS
    s = sub.add_parser("power", help="energy per operation on sky130hd or a liberty, from "
                                     "switching activity on a data set",
                       description="Synthesise each unit (mul, add, fma, or the --unit list) to "
                                   "a library with power tables, simulate the mapped netlist on "
                                   f"a data set ({', '.join(DATA_SETS)}) and report OpenSTA's "
                                   "internal, switching and leakage power and the energy per "
                                   "operation at the clock (docs/power.md).")
    add_spec_options(s, units="many", required=False)
    add_library_options(s)
    add_power_options(s, flag=False)
    s.add_argument("--clock-ps", type=positive(float), metavar="P",
                   help="the clock period of the energy figure (ps): each unit is pipelined to "
                        "meet it, as synth --clock-ps does (with --stages / --cuts: measured as "
                        "built, and a period shorter than its worst path is an error); default: "
                        "a pipelined unit's clock, a combinational unit's own worst delay "
                        "rounded up to 10 ps")
    s.add_argument("--out", metavar="DIR", help="where the run folder goes (default build/synth)")
    add_jobs(s)
    s.set_defaults(run=_power)


def _power(args) -> int:
    from fpforge import synth

    units = args.unit or [u for u in BASIC_UNITS if u != "cvt"]
    specs = specs_of(args, units)
    out = existing_dir(args.out, "--out") if args.out else synth.DEFAULT_OUT_DIR
    lib, liberty = library_of(args)
    data = check_power_request(args, lib, liberty)
    run_dir = synth.new_run_dir(out, "power")
    try:
        if args.clock_ps is not None and args.stages is None and args.cuts is None:
            # The pipelining search's runs go inside this run's folder: a refusal removes both.
            specs = pipelined_for_clock(specs, args, run_dir / "pipelining")
        records = synth.run(specs, liberty=liberty, out_dir=out, jobs=args.jobs, fpga=False,
                            cores=False, run_dir=run_dir, lib=lib,
                            delay_target_ps=args.clock_ps)
        measure_records(specs, records, lib, liberty, data, args.vectors, args.clock_ps,
                        args.jobs)
    except OptionError:
        shutil.rmtree(run_dir, ignore_errors=True)      # a refused request leaves nothing
        raise
    print_power(records)
    print(f"records: {run_dir / 'records.json'}")
    return 0
