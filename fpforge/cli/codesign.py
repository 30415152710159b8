"""The codesign studies: ``fpforge pareto``, ``roofline``."""

from __future__ import annotations

import json
from pathlib import Path

from fpforge.rtl.options import OptionError

from .common import add_jobs

__all__ = ["add_pareto", "add_roofline"]


def add_pareto(sub):
    pa = sub.add_parser("pareto", help="cost (synthesis) against quality (emulated hardware) "
                                       "per number-format configuration (docs/codesign.md)")
    pa.add_argument("--quick", action="store_true",
                    help="the MX elements at k = 32 and per tensor, three accumulators; "
                         "softmax/LayerNorm units in bf16, fp16, fp8e4m3, correct and faithful")
    pa.add_argument("--config", metavar="FILE",
                    help="the axes as JSON: elements, scaling, block, scale_rule, rounding, "
                         "accum, nonlinear ('FORMAT ACCURACY' entries) (lists)")
    pa.add_argument("--out", metavar="DIR", help="where the report goes (build/pareto)")
    pa.add_argument("--power", action="store_true",
                    help="also energy per MAC (pJ/MAC, TFLOPS/W): the units on sky130hd, "
                         "power on gaussian and minilm operands; energy.png; with "
                         "--flexibility, each multi-format unit's energy per operation per "
                         "member (gaussian)")
    pa.add_argument("--vectors", type=int, default=None, metavar="N",
                    help="--power: operand vectors per unit and data set (default 256)")
    pa.add_argument("--flexibility", action="store_true",
                    help="also the cost of flexibility: multi-format units beside their "
                         "single-format members (flexibility.md; docs/multiformat.md)")
    _add_machine_options(pa)
    add_jobs(pa)
    pa.set_defaults(run=_pareto)


def _pareto(args) -> int:
    from fpforge.codesign import pareto, pareto_axes
    if args.quick and args.config:
        raise OptionError("--quick runs the quick axes; --config FILE gives others, not both")
    axes = pareto_axes.Axes.from_json(args.config) if args.config else \
        (pareto_axes.QUICK if args.quick else pareto_axes.FULL)
    out = Path(args.out) if args.out else pareto.DEFAULT_OUT
    if args.vectors is not None and not args.power:
        raise OptionError("--vectors N goes with --power")
    if args.power_w is not None and not args.power:
        raise OptionError("--power-w needs --power: the iso-power array divides by the energy "
                          "per MAC it measures")
    if args.vectors is not None:
        from fpforge.codesign.power_data import check_vectors
        check_vectors(args.vectors)
    status = pareto.run_pareto(axes=axes, out=out, jobs=args.jobs, machine=_machine(args),
                               power=args.power, vectors=args.vectors or pareto.ENERGY_VECTORS)
    if args.flexibility:
        from fpforge.codesign.flexibility import run_flexibility
        run_flexibility(out, args.jobs, energy=args.power,
                        vectors=args.vectors or pareto.ENERGY_VECTORS)
        print(f"report: {out / 'flexibility.md'}")
    return status


def add_roofline(sub):
    ro = sub.add_parser("roofline", help="tokens/s of transformer layers per configuration, "
                                         "from a pareto.json under stated assumptions")
    ro.add_argument("--pareto", metavar="FILE", default="build/pareto/pareto.json",
                    help="fpforge pareto's JSON (default build/pareto/pareto.json)")
    ro.add_argument("--out", metavar="DIR", help="where roofline.md/.json go (beside FILE)")
    _add_machine_options(ro)
    ro.set_defaults(run=_roofline)


def _roofline(args) -> int:
    from fpforge.codesign.roofline import write_roofline
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
    p.add_argument("--power-w", type=float, default=None, metavar="W",
                   help="roofline: an iso-power array instead, W watts of MAC units at their "
                        "sky130hd energy per MAC (needs pareto --power)")
    p.add_argument("--power-data", default="gaussian", metavar="NAME",
                   help="roofline: whose energy per MAC the iso-power array takes: gaussian "
                        "(default) or minilm")


def _machine(args):
    from fpforge.codesign.roofline import Machine
    return Machine(args.area_mm2, args.bandwidth_gbs, args.clock_mhz, args.power_w,
                   args.power_data)
