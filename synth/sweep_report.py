"""The sweep's report and the whole ``fpforge sweep`` (``make sweep``; :func:`run_sweep`): plan
and synthesise the cases (synth/sweep.py), then write ``sweep.csv`` (one row per case),
``sweep.md`` (tables), ``area.png``, ``delay.png``, ``variants.png`` and ``mx.png`` into the run
directory, and copy them to ``publish``.
"""

from __future__ import annotations

import csv
import os
import shutil
import sys
from dataclasses import fields
from pathlib import Path

from fpforge.rtl.amax import DEFAULT_N as AMAX_N
from fpforge.rtl.kinds import KINDS

from . import DEFAULT_JOBS, DEFAULT_OUT_DIR, SynthError
from .sweep import (CVT_FROM, EXTRA_UNITS, KIND_VARIANTS, MULTI, MX_BLOCK, MX_N, MX_UNITS,
                    SWEEP_UNITS, VARIANT_FORMATS, VARIANT_UNITS, Row, mx_variants, plan, sweep)

__all__ = ["run_sweep", "write_csv", "read_csv", "markdown", "power_markdown", "plot"]

REPORT_FILES = ("sweep.md", "sweep.csv", "area.png", "delay.png", "variants.png", "mx.png")


def write_csv(rows: list, path: Path) -> Path:
    """Dataclass rows (sweep's Row, or another report's) as CSV, None as an empty cell."""
    names = [f.name for f in fields(type(rows[0]) if rows else Row)]
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(names)
        for r in rows:
            w.writerow(["" if getattr(r, n) is None else getattr(r, n) for n in names])
    return Path(path)


def read_csv(path: Path) -> list[Row]:
    """Rows back from a sweep.csv (to redraw the plots without synthesising again)."""
    kinds = {f.name: f.type for f in fields(Row)}

    def value(name, text):
        if text == "":
            return "" if kinds[name] == "str" else None
        if kinds[name] == "int" or kinds[name] == "int | None":
            return int(text)
        if kinds[name] == "float | None":
            return float(text)
        return text
    with open(path, newline="") as fh:
        return [Row(**{k: value(k, v) for k, v in rec.items()}) for rec in csv.DictReader(fh)]


def _cell(r: Row | None) -> str:
    if r is None:
        return "–"
    if r.status != "ok":
        return "skipped"
    ps = "–" if r.delay_ps is None else f"{r.delay_ps:.0f}"
    return f"{r.ge:.0f} / {ps}"


def _pct(new, base) -> str:
    if new is None or base is None or base == 0:
        return "–"
    return f"{100 * (new - base) / base:+.0f} %"


def markdown(rows: list[Row], meta: dict) -> str:
    mx_rows = [r for r in rows if r.unit in MX_UNITS]
    multi_rows = [r for r in rows if r.variant == MULTI]
    rows = [r for r in rows if r.unit not in MX_UNITS and r.variant != MULTI]
    units = list(dict.fromkeys(r.unit for r in rows))
    base = {(r.format, r.unit): r for r in rows if r.variant == "default"}
    fmts = list(dict.fromkeys(r.format for r in rows if r.variant == "default"))
    la, lb = meta["load before"], meta["load after"]
    out = ["# fpforge synthesis sweep", "",
           f"- **yosys**: {meta['yosys']}; **amaranth**: {meta['amaranth']}",
           f"- **cells**: {meta['library'].split(' at ')[0]}",
           f"- **RTL**: {meta['rtl']}",
           f"- **cases**: {meta['cases']} ({meta['designs']} synthesised, {meta['skipped']} "
           f"skipped) plus {meta['cores']} bare integer cores",
           f"- **time**: {meta['wall seconds']:.0f} s wall ({meta['verilog seconds']:.0f} s of it "
           f"Verilog generation), {meta['yosys cpu seconds']:.0f} s Yosys CPU, {meta['jobs']} "
           f"processes at a time; load average {la[0]:.1f} before, {lb[0]:.1f} after (2-core "
           f"machine shared with other work: wall time is inflated)", "",
           "Each cell: **area in GE** (NAND2_X1 = 1) **/ critical path in ps** (OpenSTA, "
           "load-aware over the NanGate45 cells' NLDM tables; boundary in docs/synth/timing.md). "
           "Default options: "
           "round to nearest even, subnormals kept, non-saturating, combinational, exception "
           f"flags computed. mul, add and fma take and give the row's format; cvt converts "
           f"from {CVT_FROM}. *core*: the bare integer core of mul (significand product + "
           "exponent add), the floor any multiplier pays. Treat ps as relative, and "
           "differences below about 10 % as noise: ABC's area mapping is not monotonic (a unit "
           "with less logic can map larger)." + _unit_notes(units), "",
           "![area](area.png)", "", "![delay](delay.png)", ""]
    if units:
        out += ["| format | bits | " + " | ".join(f"{u} GE / ps" for u in units) +
                " | mul core GE |", "|---|---:|" + "---:|" * (len(units) + 1)]
    for f in fmts:
        any_row = base[next((f, u) for u in units if (f, u) in base)]
        core = base.get((f, "mul"))
        core_ge = "–" if core is None or core.core_ge is None else f"{core.core_ge:.0f}"
        name = f if any_row.short == f else f"{f} ({any_row.short})"
        out.append(f"| {name} | {any_row.width} | " +
                   " | ".join(_cell(base.get((f, u))) for u in units) + f" | {core_ge} |")
    var = [r for r in rows if r.variant != "default"]
    if var:
        out += ["", "## What the options cost", "",
                "Against the same unit with default options. *no-subnormals*: subnormal "
                "inputs and results flushed to zero; *saturate*: overflow gives ±max finite; "
                "*dynamic*: "
                "the rounding mode comes from a 3-bit `rm` input (RISC-V frm); *stochastic*: "
                "rounding with an 8-bit random `rbits` input." +
                "".join(_variant_note(v) for v in dict.fromkeys(r.variant for r in var)
                        if v in VARIANT_NOTES), "",
                "![variants](variants.png)", "",
                "| format | unit | variant | GE | ps | ΔGE | Δps |",
                "|---|---|---|---:|---:|---:|---:|"]
        for r in var:
            b = base.get((r.format, r.unit))
            if r.status != "ok":
                out.append(f"| {r.format} | {r.unit} | {r.variant} | skipped | | | |")
                continue
            ps = "–" if r.delay_ps is None else f"{r.delay_ps:.0f}"
            out.append(f"| {r.format} | {r.unit} | {r.variant} | {r.ge:.0f} | {ps} | "
                       f"{_pct(r.ge, b.ge if b else None)} | "
                       f"{_pct(r.delay_ps, b.delay_ps if b else None)} |")
    if multi_rows:
        out += multi_markdown(multi_rows, rows)
    if mx_rows:
        out += mx_markdown(mx_rows, meta)
    if meta.get("power"):
        out += power_markdown(rows + multi_rows + mx_rows, meta["power"])
    skipped = [r for r in rows + multi_rows + mx_rows if r.status != "ok"]
    out += ["", "## Skipped combinations", ""]
    out += [f"- {r.format} {r.unit} ({r.variant}): {r.reason}" for r in skipped] or \
        ["None: the generator accepted every combination."]
    out += ["", "Figures per case, with cells and logic depth: `sweep.csv`. Regenerate with "
            "`make sweep` (`fpforge sweep`); the other scalar kinds (div, sqrt, cmp, ...): "
            "`fpforge sweep --unit extra` (docs/synth/kinds.md).", ""]
    return "\n".join(out)


# What the kinds' own variants (sweep.KIND_VARIANTS) are.
VARIANT_NOTES = {
    "iter": "one recurrence stage reused over cycles (--arch iter, docs/divsqrt.md), its state "
            "registers included; ps is its clock period",
    "faithful": "either neighbour of the exact value (--accuracy faithful, docs/func.md)",
}


def _variant_note(variant: str) -> str:
    option = next(o for o, vs in KIND_VARIANTS.items() if variant in vs)
    takers = ", ".join(u for u, k in KINDS.items() if option in k.spec.OPTIONS)
    return f" *{variant}* ({takers}): {VARIANT_NOTES[variant]}."


def _unit_notes(units) -> str:
    """What the rows of the kinds beyond mul, add, fma, cvt compute, from the registry."""
    notes = [f"*{u}*: {KINDS[u].summary}" for u in units if u in EXTRA_UNITS]
    return (f" The other kinds, with their default options (amax: n = {AMAX_N}; i2f, f2i: "
            f"signed 32-bit; docs/synth/kinds.md): {'; '.join(notes)}.") if notes else ""


def multi_markdown(multi: list[Row], rows: list[Row]) -> list[str]:
    """The multi-format units beside their members' default rows of the same sweep (the same
    unit, options and flow): the largest member and the members' sum."""
    base = {(r.format, r.unit): r for r in rows if r.variant == "default" and r.status == "ok"}
    out = ["", "## Multi-format units", "",
           "One unit over a set of formats (synth/format_sets.py), its `fmt` input choosing the "
           "member per operation (`--formats`, docs/multiformat.md), default options, one lane; "
           "GE / ps beside its largest member's and the members' summed GE, from this sweep's "
           "own rows. Below the sum: the datapath is shared, not a multiplexer over the "
           "members; the ratio to the largest member is what serving the other formats costs. "
           "–: a member this sweep did not synthesise.", "",
           "| set | unit | members | multi-format | largest member | members' sum GE | "
           "multi / largest | multi / sum |", "|---|---|---|---:|---:|---:|---:|---:|"]
    for r in multi:
        members = [base.get((f, r.unit)) for f in r.members.split(",")]
        whole = r.status == "ok" and all(members)
        largest = max(members, key=lambda m: m.ge) if whole else None
        total = sum(m.ge for m in members) if whole else None
        out.append(f"| {r.format} | {r.unit} | {r.short.replace('+', ', ')} | {_cell(r)} | " +
                   (f"{largest.short} {_cell(largest)} | {total:.0f} | "
                    f"{r.ge / largest.ge:.2f}x | {r.ge / total:.2f}x |" if whole else
                    "– | – | – | – |"))
    return out


def mx_markdown(rows: list[Row], meta: dict) -> list[str]:
    """The block-scaled units: one row per element format, a column per unit and variant."""
    cols = [(u, v) for u in MX_UNITS for v in mx_variants(u)
            if any(r.unit == u and r.variant == v for r in rows)]
    by = {(r.format, r.unit, r.variant): r for r in rows}
    elems = list(dict.fromkeys(r.format for r in rows))
    block, n = meta.get("mx block", MX_BLOCK), meta.get("mx n", MX_N)
    out = ["", "## Block-scaled (OCP MX) units", "",
           f"Per element format, GE / ps. *mxq*: quantizer of a block of k = {block} float32 "
           "values into one E8M0 scale + k elements (rne, saturating), under each scale rule "
           "(floor: OCP MX v1.0 6.3; ceil; rceil: NVIDIA's 2^ceil(log2(amax / max_elem)); even: "
           "floor after rounding amax to the element's precision; vllm: vLLM's 1.75 threshold, "
           f"docs/mx.md). *mxdq*: dequantizer of k = "
           f"{block} elements to float32. *dot*: N = {n} element products with their two E8M0 "
           "scales into float32, rne; *exact*: exact sum, one rounding; *fixedF*: products "
           "truncated to F fraction bits below the largest, then one rounding (docs/mx.md). "
           "The OCP block is k = 32: the per-block scale logic stays, the per-element logic "
           "grows 4x (`fpforge synth --unit mxq --format ELEM` for k = 32). Value scales "
           "(docs/blockscale.md), on their recipes' elements only: *p3109_maxabs*: P3109's "
           "maximum-magnitude Binary8p1uf scale; *dot e4m3*: the exact dot product with "
           "NVFP4's E4M3 block scales; *mxq nvfp4_te | nvfp4_modelopt | nvfp4_torchao | "
           "nvfp4_4over6*: the NVFP4 quantizers (E4M3 scale, float32 tensor_amax input; every "
           "float32 operation of the recipe in hardware, dividers included), synthesised by the "
           "flow's deep job (ABC without its SAT sweep, which does not finish on dividers; no "
           "generic depth): compare them with *mxq floor_deep*, the MX floor quantizer through "
           "the same job, not with the other columns (docs/blockscale.md).", "",
           "![mx](mx.png)", "",
           "| element | bits | " + " | ".join(f"{u} {v}" if v != "default" else u
                                             for u, v in cols) + " |",
           "|---|---:|" + "---:|" * len(cols)]
    for e in elems:
        width = next(r.width for r in rows if r.format == e)
        out.append(f"| {e} | {width} | " +
                   " | ".join(_cell(by.get((e, u, v))) for u, v in cols) + " |")
    return out


def power_markdown(rows: list[Row], power: dict) -> list[str]:
    """The energy per operation of every unit measured (``--power``)."""
    out = ["", "## Energy per operation", "",
           f"OpenSTA report_power on {power['library']}, every net's switching activity from "
           f"a zero-delay simulation of the mapped netlist on {power['vectors']} operand "
           f"vectors of the `{power['data']}` data set (docs/power.md); one operation per "
           f"period of the unit's clock (its worst delay rounded up to 10 ps). Energy per "
           f"operation = total power x period. Power flow: {power['seconds']} s wall.", "",
           "| format | unit | variant | µm² | ps | clock ps | internal µW | switching µW | "
           "leakage µW | pJ/op |", "|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        if r.energy_pj is None:
            continue
        out.append(f"| {r.format} | {r.unit} | {r.variant} | {r.area_um2:.0f} | "
                   f"{r.delay_ps:.0f} | {r.clock_ps:g} | {r.internal_uw:.4g} | "
                   f"{r.switching_uw:.4g} | {r.leakage_uw:.3g} | {r.energy_pj:.4g} |")
    return out


def plot(rows: list[Row], directory: Path) -> list[Path]:
    """area.png, delay.png (grouped bars per format and unit) and variants.png."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    directory = Path(directory)
    mx_rows = [r for r in rows if r.unit in MX_UNITS and r.status == "ok"]
    rows = [r for r in rows if r.unit not in MX_UNITS and r.variant != MULTI]
    paths = [plot_mx(mx_rows, directory)] if mx_rows else []
    base = [r for r in rows if r.variant == "default"]
    if not base:
        return paths
    fmts = list(dict.fromkeys(r.format for r in base))
    units = list(dict.fromkeys(r.unit for r in base))
    by = {(r.format, r.unit): r for r in base}
    colors = dict(zip(SWEEP_UNITS, ("tab:blue", "tab:orange", "tab:green", "tab:purple")))
    for key, title, ylabel in (("ge", "Area by format and unit", "area (GE, log scale)"),
                               ("delay_ps", "Critical path by format and unit",
                                "delay (ps, fixed-delay NanGate45 cells)")):
        fig, ax = plt.subplots(figsize=(12, 5.2), dpi=100)
        width = 0.8 / max(1, len(units))
        for i, u in enumerate(units):
            xs, ys = [], []
            for j, f in enumerate(fmts):
                r = by.get((f, u))
                v = getattr(r, key) if r is not None and r.status == "ok" else None
                if v is not None:
                    xs.append(j + (i - (len(units) - 1) / 2) * width)
                    ys.append(v)
            ax.bar(xs, ys, width, label=u, color=colors.get(u))
        if key == "ge":
            from matplotlib.ticker import FuncFormatter, LogLocator
            ax.set_yscale("log")
            ax.yaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.yaxis.set_minor_formatter(FuncFormatter(lambda v, _: ""))
            mul_x = (units.index("mul") - (len(units) - 1) / 2) * width if "mul" in units else 0
            cores = [(j + mul_x, by[(f, "mul")].core_ge) for j, f in enumerate(fmts)
                     if (f, "mul") in by and by[(f, "mul")].core_ge]
            if cores:
                ax.scatter([x for x, _ in cores], [g for _, g in cores], marker="_",
                           s=220, linewidths=2.5, color="black", zorder=3,
                           label="mul integer core")
        ax.set_xticks(range(len(fmts)))
        first = {f: by[next((f, u) for u in units if (f, u) in by)] for f in fmts}
        ax.set_xticklabels([f"{first[f].short} ({first[f].width} b)" for f in fmts], fontsize=9,
                           rotation=25, ha="right", rotation_mode="anchor")
        ax.set_ylabel(ylabel)
        ax.set_title(title + " (cvt from float32; rne, subnormals, flags)")
        ax.grid(axis="y", which="both", alpha=0.3)
        ax.legend(ncol=len(units) + 1, fontsize=9, loc="upper left")
        fig.tight_layout()
        path = directory / ("area.png" if key == "ge" else "delay.png")
        fig.savefig(path)
        plt.close(fig)
        paths.append(path)

    var = [r for r in rows if r.variant != "default" and r.status == "ok"]
    if var:
        groups = list(dict.fromkeys((r.format, r.unit) for r in var))
        names = ["default"] + list(dict.fromkeys(r.variant for r in var))
        allrows = {(r.format, r.unit, r.variant): r for r in rows if r.status == "ok"}
        fig, axes = plt.subplots(2, 1, figsize=(12, 8), dpi=100)
        width = 0.8 / len(names)
        cmap = plt.get_cmap("tab10")
        for ax, key, ylabel in ((axes[0], "ge", "area (GE)"), (axes[1], "delay_ps", "delay (ps)")):
            for i, v in enumerate(names):
                xs, ys, labels = [], [], []
                for j, (f, u) in enumerate(groups):
                    r = allrows.get((f, u, v))
                    if r is not None and getattr(r, key) is not None:
                        xs.append(j + (i - (len(names) - 1) / 2) * width)
                        ys.append(getattr(r, key))
                        b = allrows.get((f, u, "default"))
                        labels.append("" if v == "default" or b is None
                                      else _pct(getattr(r, key), getattr(b, key)).replace(" ", ""))
                bars = ax.bar(xs, ys, width, label=v, color=cmap(i))
                ax.bar_label(bars, labels=labels, fontsize=6.5, rotation=90, padding=2)
            ax.margins(y=0.12)
            ax.set_xticks(range(len(groups)))
            ax.set_xticklabels([f"{_short_of(rows, f)}\n{u}" for f, u in groups], fontsize=9)
            ax.set_ylabel(ylabel)
            ax.grid(axis="y", alpha=0.3)
        axes[0].set_title("Area of the options")
        axes[1].set_title("Critical path of the options")
        axes[0].legend(fontsize=9, loc="upper left")
        fig.tight_layout()
        path = directory / "variants.png"
        fig.savefig(path)
        plt.close(fig)
        paths.append(path)
    return paths


def plot_mx(rows: list[Row], directory: Path) -> Path:
    """mx.png: area per element format of each MX unit and variant (grouped bars)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cols = [(u, v) for u in MX_UNITS for v in mx_variants(u)
            if any(r.unit == u and r.variant == v for r in rows)]
    elems = list(dict.fromkeys(r.format for r in rows))
    by = {(r.format, r.unit, r.variant): r for r in rows}
    fig, ax = plt.subplots(figsize=(12, 5.2), dpi=100)
    width = 0.8 / max(1, len(cols))
    cmap = plt.get_cmap("tab20")     # up to 20 unit variants keep their own colours
    for i, (u, v) in enumerate(cols):
        xs, ys = [], []
        for j, e in enumerate(elems):
            r = by.get((e, u, v))
            if r is not None and r.ge is not None:
                xs.append(j + (i - (len(cols) - 1) / 2) * width)
                ys.append(r.ge)
        ax.bar(xs, ys, width, label=u if v == "default" else f"{u} {v}", color=cmap(i))
    ax.set_xticks(range(len(elems)))
    ax.set_xticklabels(elems)
    # log: the NVFP4 quantizers (float32 dividers) are some 25x the MX ones
    ax.set_yscale("log")
    ax.set_ylabel("area (GE, log scale)")
    ax.set_title("Block-scaled units by element format (quantizer per scale rule, dot per "
                 "accumulator)")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(ncol=4, fontsize=8, loc="upper left")
    fig.tight_layout()
    path = Path(directory) / "mx.png"
    fig.savefig(path)
    plt.close(fig)
    return path


def _short_of(rows, fmt_name) -> str:
    return next(r.short for r in rows if r.format == fmt_name)


def run_sweep(*, formats=None, units=None, max_width: int = 16,
              variant_formats=VARIANT_FORMATS, variant_units=VARIANT_UNITS, variants=None,
              mx: bool = True, mx_elements=None, mx_units=None, mx_block: int = MX_BLOCK,
              mx_n: int = MX_N, liberty=None, out=DEFAULT_OUT_DIR, jobs: int = DEFAULT_JOBS,
              fpga: bool = False, publish=None, executor=None, resume: bool = False,
              lib: str = "fpforge", power=None) -> int:
    """``make sweep``: plan the cases (:func:`plan`, whose errors are raised before any work),
    synthesise them into a fresh run directory under ``out``, write sweep.csv, sweep.md and
    the plots there (and copy them to ``publish``, if given), print the main table. Returns 0,
    or 1 when a Yosys run failed (its error printed). ``executor`` (fpforge.infra.executor) runs the
    Yosys jobs; ``resume``: keep every job's result by content key under ``out/results`` and
    take the ones already there (an interrupted sweep, run again, does only what is missing);
    ``lib``: the cells (cell_library.LIBRARIES); ``power`` (a PowerRun, synth/sweep_power.py): also
    every unit's energy per operation (sweep.csv's power columns, sweep.md's energy table)."""
    from fpforge.infra.executor import ProgressBar, ResultStore
    todo = plan(formats=formats, units=units, max_width=max_width,
                variant_formats=variant_formats, variant_units=variant_units, variants=variants,
                mx=mx, mx_elements=mx_elements, mx_units=mx_units, mx_block=mx_block, mx_n=mx_n)
    print(f"sweep: {len(todo)} cases, {jobs} processes at a time; load average "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    store = ResultStore(Path(out) / "results") if resume else None
    try:
        with ProgressBar(None, "Yosys jobs done") as bar:
            rows, run_dir, meta = sweep(todo, out_dir=out, jobs=jobs, fpga=fpga,
                                        liberty=liberty, executor=executor, store=store,
                                        progress=bar.on_done, lib=lib, power=power)
    except SynthError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    write_csv(rows, run_dir / "sweep.csv")
    text = markdown(rows, meta)
    (run_dir / "sweep.md").write_text(text)
    plot(rows, run_dir)
    for r in rows:
        if r.status != "ok":
            print(f"skipped {r.format} {r.unit} ({r.variant}): {r.reason}")
    start = text.index("| format |")
    print(text[start:text.index("\n\n", start)])
    print(f"{meta['designs']} units + {meta['cores']} cores in {meta['wall seconds']:.0f} s wall "
          f"(load average {meta['load before'][0]:.1f} -> {meta['load after'][0]:.1f}); "
          f"report: {run_dir / 'sweep.md'}")
    if publish is not None:
        publish = Path(publish)
        publish.mkdir(parents=True, exist_ok=True)
        for name in REPORT_FILES:
            if (run_dir / name).exists():
                shutil.copy2(run_dir / name, publish / name)
        print(f"copied {', '.join(REPORT_FILES)} to {publish}")
    return 0
