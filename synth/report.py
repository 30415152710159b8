"""Write synthesis records as JSON files and a Markdown report; show them as a rich table."""

from __future__ import annotations

import json
from pathlib import Path

from .records import SynthRecord

__all__ = ["write_json", "markdown", "write_markdown", "table", "print_table"]


def write_json(records: list[SynthRecord], run_dir: Path) -> list[Path]:
    """One ``<name>.json`` per record plus ``records.json`` holding them all."""
    paths = []
    for r in records:
        path = Path(run_dir) / f"{r.name}.json"
        path.write_text(json.dumps(r.to_json(), indent=2, sort_keys=True) + "\n")
        paths.append(path)
    (Path(run_dir) / "records.json").write_text(
        json.dumps([r.to_json() for r in records], indent=2, sort_keys=True) + "\n")
    return paths


def _f(value, digits=0, suffix="") -> str:
    if value is None:
        return "–"
    return f"{value:,.{digits}f}{suffix}"


def _ratio(value) -> str:
    return "–" if value is None else f"{value:.2f}x"


COLUMNS = ("design", "GE", "µm²", "ps", "ASIC MHz", "depth", "cells", "transistors",
           "iCE40 LUT/carry/FF", "ECP5 LUT/carry/FF", "iCE40 MHz", "ECP5 MHz", "GE / core",
           "ps / core")


def _row(r: SynthRecord) -> tuple[str, ...]:
    def fpga(t):
        f = r.fpga.get(t)
        return "–" if f is None else f"{f.luts}/{f.carries}/{f.registers}"

    def fmax(t):
        f = r.fmax.get(t)
        return "–" if f is None else f"{f.fmax_mhz:.1f}"
    a = r.asic
    return (r.name, _f(a.ge, 1), _f(a.area_um2, 1), _f(a.delay_ps, 1), _f(a.fmax_mhz, 0),
            "–" if r.generic.depth is None else str(r.generic.depth), str(a.cells),
            f"{r.generic.transistors}{'' if r.generic.transistors_exact else '+'}", fpga("ice40"),
            fpga("ecp5"), fmax("ice40"), fmax("ecp5"), _ratio(r.area_vs_core),
            _ratio(r.delay_vs_core))


def markdown(records: list[SynthRecord], *, header: dict) -> str:
    """The run's report: tool versions, library, the figures, then each design's semantics."""
    out = ["# fpforge synthesis report", ""]
    out += [f"- **{k}**: {v}" for k, v in header.items()]
    out += ["",
            "GE = area / NAND2_X1 area. *ps*: worst path timed load-aware by OpenSTA over the "
            "liberty's NLDM tables (see **delay** above for the boundary); for a registered "
            "design, the clock period its worst path group needs (input to register, register "
            "to register, register to output), and *ASIC MHz* its inverse. "
            "Depth: `ltp -noff` in Yosys generic gates; transistors: `stat -tech cmos` (+: some "
            "cell types have no estimate). FPGA: `synth_ice40`, `synth_ecp5 -nodsp` "
            "(LUT4 / carry cells / flip-flops); *MHz* (with PNR=1 only): Fmax from nextpnr "
            "(iCE40 HX8K / ECP5 25F, seed 1, IOs unconstrained) of the unit between input and "
            "output registers. Ratios are against the bare integer core "
            "(significand product + exponent add) of the same operand formats.", "",
            "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    out += ["| " + " | ".join(_row(r)) + " |" for r in records]
    out += ["", "## Designs", ""]
    for r in records:
        out += [f"### `{r.name}`", "", f"- {r.description}"]
        out += [f"- {role}: {desc}" for role, desc in r.formats.items()]
        if r.options:
            out.append(f"- options: {r.options}")
        if r.core:
            out.append(f"- reference core: `{r.core}`")
        cells = ", ".join(f"{t} {n}" for t, n in sorted(r.asic.cells_by_type.items()))
        if r.asic.critical_path:
            out.append(f"- critical path: {r.asic.critical_path}, "
                       f"{r.asic.critical_path_cells} cells")
        for group, path in r.asic.paths.items():
            out.append(f"- {group}: {path['delay_ps']:.1f} ps, {path['startpoint']} -> "
                       f"{path['endpoint']} ({len(path['cells'])} cells)")
        if r.asic.hold_slack_ps is not None:
            out.append(f"- hold: worst slack {r.asic.hold_slack_ps:.1f} ps into a register "
                       f"(OpenSTA min-delay check, inputs at the clock edge)")
        out += [f"- mapped cells: {cells}",
                "- Yosys time (wall / CPU): " + ", ".join(
                    f"{t} {s:.1f} / {r.cpu_seconds.get(t, 0):.1f} s" for t, s in r.seconds.items()),
                f"- files: `{r.directory}`", ""]
    return "\n".join(out)


def write_markdown(records: list[SynthRecord], run_dir: Path, *, header: dict) -> Path:
    path = Path(run_dir) / "report.md"
    path.write_text(markdown(records, header=header))
    return path


def table(records: list[SynthRecord], title: str = "fpforge synthesis"):
    """The headline figures, narrow enough for 80 columns; report.md and the JSON have the rest."""
    from rich import box
    from rich.table import Table
    pnr = any(r.fmax for r in records)
    clocked = any(r.asic.fmax_mhz for r in records)
    names = ("design", "GE", "ps") + (("ASIC MHz",) if clocked else ()) + \
        ("depth", "iCE40", "ECP5", "x core") + (("MHz",) if pnr else ())
    rows = []
    for r in records:
        full = dict(zip(COLUMNS, _row(r)))
        ratio = "–" if r.area_vs_core is None else \
            f"{r.area_vs_core:.1f}/{'–' if r.delay_vs_core is None else f'{r.delay_vs_core:.1f}'}"
        rows.append((r.name, f"{r.asic.ge:.0f}", _f(r.asic.delay_ps).replace(",", ""))
                    + ((full["ASIC MHz"].replace(",", ""),) if clocked else ()) + (
                     full["depth"], full["iCE40 LUT/carry/FF"], full["ECP5 LUT/carry/FF"], ratio)
                    + ((f'{full["iCE40 MHz"]}/{full["ECP5 MHz"]}',) if pnr else ()))
    t = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True,
              caption="ps: OpenSTA worst path (registered: the period it needs); FPGA: "
                      "LUT/carry/FF; x core: GE and ps over the bare integer core"
                      + ("; MHz: nextpnr Fmax iCE40/ECP5" if pnr else ""))
    for i, name in enumerate(names):
        width = max([len(name)] + [len(row[i]) for row in rows])
        t.add_column(name, justify="left" if i == 0 else "right", no_wrap=True,
                     min_width=None if i == 0 else width)
    for r, row in zip(records, rows):
        t.add_row(*row, style="dim" if r.kind == "core" else None)
    return t


def print_table(records: list[SynthRecord], *, header: dict, console=None) -> None:
    from rich.console import Console
    # Piped output (make in CI, a log) has no terminal width: do not squeeze to 80 columns.
    console = console or Console()
    if not console.is_terminal:
        console.width = max(console.width, 120)
    console.print(table(records))
    for k, v in header.items():
        console.print(f"[bold]{k}[/]: {v}", highlight=False)
