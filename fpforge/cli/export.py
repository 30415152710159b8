"""Export and catalogs: ``fpforge verilog``, ``ports``, ``formats``, ``units``."""

from __future__ import annotations

from pathlib import Path

from fpforge.rtl.formats import CATALOG
from fpforge.rtl.format_names import P3109_CONFORMANCE, SHORT_NAMES, resolve
from fpforge.rtl.kinds import KINDS, SPEC_OPTIONS, make_spec
from fpforge.rtl.options import OptionError

from .common import add_clock_ps, add_spec_options, existing_dir, pipelined_for_clock, spec_values

__all__ = ["add_verilog", "add_ports", "add_formats", "add_units", "port_table", "p3109_rows"]


def add_verilog(sub):
    v = sub.add_parser("verilog", help="export one unit as Verilog-2005 (+ .json, .core)",
                       description="Export one unit as Verilog-2005 with a JSON sidecar and a "
                                   "FuseSoC core file beside it (docs/verilog-export.md).")
    add_spec_options(v)
    v.add_argument("--name", metavar="TOP", help="module name (default: one that carries the "
                                                 "parameters, e.g. fp_mul_e4m3fn_rne)")
    out = v.add_mutually_exclusive_group(required=True)
    out.add_argument("-o", "--output", metavar="OUT.v",
                     help="Verilog file; OUT.json and OUT.core are written beside it")
    out.add_argument("--out-dir", metavar="DIR",
                     help="write DIR/<module name>.v (and .json, .core) instead of -o")
    add_clock_ps(v)
    v.set_defaults(run=_verilog)


def _verilog(args) -> int:
    from fpforge.rtl.emit import check_module_name
    from fpforge.rtl.export import check_output, write_export

    spec = make_spec(args.unit, **spec_values(args))
    if args.clock_ps is not None:
        spec = pipelined_for_clock([spec], args)[0]
    name = check_module_name(args.name or spec.default_name)
    if args.output:
        check_output(args.output)
        output = args.output
        if not Path(output).parent.is_dir():
            raise OptionError(f"output folder {str(Path(output).parent)!r} does not exist")
    else:
        output = str(existing_dir(args.out_dir, "--out-dir") / f"{name}.v")
    result = write_export(spec, output, name=args.name)
    print(f"wrote {output} (module {result.name}, latency {spec.latency}) and its .json/.core")
    return 0


def add_ports(sub):
    t = sub.add_parser("ports", help="the port table of a unit (Markdown)",
                       description="The ports of the unit the spec options describe, from its "
                                   "spec: the table the docs' port tables are generated from.")
    add_spec_options(t)
    t.set_defaults(run=_ports)


def _ports(args) -> int:
    spec = make_spec(args.unit, **spec_values(args))
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


def add_formats(sub):
    f = sub.add_parser("formats", help="the format catalog with resolved semantics")
    f.set_defaults(run=_formats)


def _formats(args) -> int:
    short = {}
    for alias, canonical in SHORT_NAMES.items():
        short.setdefault(canonical, []).append(alias)
    for name, fmt in CATALOG.items():
        aliases = ", ".join(short.get(name, [])) or "-"
        print(f"{name:<20} {aliases:<14} {fmt.describe()}")
    print("\nP3109 (IEEE P3109 Interim Report v4.0, a draft; docs/p3109.md): every "
          "binary<K>p<P><s|u><e|f> is a --format:\nK bits, precision P (the hidden bit "
          "counted), s|u signed or unsigned, e|f extended (with infinities) or finite.\n"
          "The conformance set, and the P3109 formats that equal a catalog format (= it):")
    for name, equal, fmt in p3109_rows():
        print(f"{name:<20} {'= ' + ', '.join(equal) if equal else '-':<20} {fmt.describe()}")
    return 0


def p3109_rows() -> list[tuple[str, list[str], object]]:
    """(P3109 name, the catalog formats equal to it, its format) for the conformance set and
    every catalog format that is a P3109 format, code for code."""
    names = [*P3109_CONFORMANCE, *(f.p3109_name.lower() for f in CATALOG.values()
                                   if f.p3109_name)]
    rows = []
    for name in dict.fromkeys(names):
        fmt = resolve(name)
        rows.append((name, [c for c, f in CATALOG.items() if f == fmt], fmt))
    return rows


def add_units(sub):
    u = sub.add_parser("units", help="the unit kinds and the options each takes")
    u.set_defaults(run=_units)


def _units(args) -> int:
    for name, kind in KINDS.items():
        takes = ", ".join(o.flag for o in SPEC_OPTIONS if o.dest in kind.spec.OPTIONS)
        points = ", ".join(kind.spec.CUT_POINTS) or "none (stages are output registers)"
        print(f"{name:<5} {kind.summary}\n      shape: {kind.shape}; cut points: {points}"
              f"\n      options: --unit {name}, {takes}")
    return 0
